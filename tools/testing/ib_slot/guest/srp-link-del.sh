#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Guest test: hot-unplug of the RDMA device under SRP I/O.  Data is written
# and verified first; then, with fio running on the SRP disk, "rdma link
# delete" removes the device.  Checks: the delete returns (bounded), the
# login's SCSI host, remote port and disk go away, fio ends (with errors:
# its disk vanished), ib_srp's ib_slot pools are gone, no SRP abort, and
# ib_srp, ib_srpt and the RDMA stack unload.
. "${0%/*}/lib.sh"

srp_up
bad=
dd_verify "$DISK" 128 8 || bad+=" data-before-delete"
# ib_srp has its pools (idle: no I/O now), which the delete must take away.
srp_pools_check

step "rdma link delete $IBDEV under fio"
io0=$(disk_ios "$DISK")
fio_start linkdel --name=linkdel --filename="$DISK" --size=64m "${FIO_VERIFY[@]}" \
	--runtime=600 --time_based
# Only once fio has the disk open: fio starting late, after the disk
# node went, would lay out and write a regular file of that name.
wait_for 60 disk_moving "$DISK" $((io0 + 100)) || bad+=" no-io-before-delete"
fio_running linkdel || bad+=" fio-ended-early"
srp_link_delete
log "SRP login gone $(since "$LINK_DEL_T") s after the delete; remote ports left:" \
	"$(srp_hosts | wc -l), SCSI disks of LIO left: $(srp_lio_disk && echo "$DISK" || echo none)"
[ -e "/sys/class/infiniband/$IBDEV" ] && bad+=" $IBDEV-still-registered"
if wait_for 60 fio_done linkdel; then
	# fio's errors are expected: its disk vanished under it.
	fio_wait linkdel && log "fio ended without an error"
else
	bad+=" fio-hangs"
	kill -9 "${FIO_PID[linkdel]}"
fi

step "checks"
[ -n "$(mount_of /sys/kernel/debug)" ] || mount -t debugfs debugfs /sys/kernel/debug
left=$(srp_pools)
[ -z "$left" ] || { log "pools left: ${left//$'\n'/ }"; bad+=" srp-pools-left"; }
srp_no_abort_check

step teardown
srp_down
# Over siw, siwlo is still there.
timed "$SRP_TRANSPORT teardown" rdma_link_teardown || bad+=" $SRP_TRANSPORT-teardown"

[ -z "$bad" ] || fail "${bad# }"
pass
