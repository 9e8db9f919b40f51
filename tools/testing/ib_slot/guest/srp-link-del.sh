#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Guest test: hot-unplug of the RDMA device under SRP I/O.  Data is written
# and verified first; then, with fio running on the SRP disk, "rdma link
# delete" removes the device.  Checks: the delete returns (bounded), the
# login's SCSI host, remote port and disk go away, fio ends (with errors:
# its disk vanished), ib_srp's ib_slot pools are gone, no SRP abort, and
# ib_srp, ib_srpt and the RDMA stack unload.
. "${0%/*}/lib.sh"

# shellcheck disable=SC2317 # called through wait_for
srp_gone() {
	[ -z "$(srp_hosts)" ] && [ ! -e "/sys/class/scsi_host/$SRP_HOST" ] && srp_no_lio_disk
}

# shellcheck disable=SC2317 # called through wait_for
link_deleted() { ! kill -0 "$DEL_PID" 2>/dev/null; }

srp_up
bad=
dd_verify "$DISK" 128 8 || bad+=" data-before-delete"
# ib_srp has its pools (idle: no I/O now), which the delete must take away.
srp_pools_check

step "rdma link delete $IBDEV under fio"
fio_start linkdel --name=linkdel --filename="$DISK" --size=64m "${FIO_VERIFY[@]}" \
	--runtime=600 --time_based
sleep 3
fio_running linkdel || bad+=" fio-ended-early"
t=$(now)
rdma link delete "$IBDEV" &
DEL_PID=$!
if wait_for 60 link_deleted; then
	wait "$DEL_PID" || bad+=" rdma-link-delete-failed"
	log "rdma link delete $IBDEV: $(since "$t") s"
else
	echo w > /proc/sysrq-trigger
	fail "rdma link delete $IBDEV still running after 60 s"
fi
wait_for 30 srp_gone || bad+=" srp-login-stays"
log "SRP login gone $(since "$t") s after the delete; remote ports left:" \
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
