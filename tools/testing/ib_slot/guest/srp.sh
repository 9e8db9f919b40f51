#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Guest test: SRP over RDMA/CM on rxe0.  Target: LIO ib_srpt set up through
# raw configfs, one LUN on a memory-backed null_blk (iblock backstore).
# Initiator: ib_srp, logging in with dest=<ip>:<port>.  On the SCSI disk:
# random data written with O_DIRECT, read back and compared, then a short fio
# 4k randrw run (QD16) with crc32c verification; then everything is torn
# down again (logout, target, modules, rxe0).
. "$(dirname "$0")/lib.sh"
SIZE_MB=${SRP_SIZE_MB:-8}
FIO_RT=${FIO_RT:-5}
PORT=5555
CFS=/sys/kernel/config/target

step "rxe0 on $NETDEV"
rxe_setup || fail "rxe setup"

step "ib_srpt target (raw configfs)"
t=$(now)
modprobe null_blk nr_devices=1 gb=1 memory_backed=1 || fail "modprobe null_blk"
for m in target_core_mod target_core_iblock ib_srpt; do
	modprobe $m || fail "modprobe $m"
done
BS=$CFS/core/iblock_0/nullb0
{ mkdir -p $BS && echo udev_path=/dev/nullb0 > $BS/control && echo 1 > $BS/enable; } ||
	fail "iblock backstore"
{ mkdir -p $CFS/srpt && echo $PORT > $CFS/srpt/discovery_auth/rdma_cm_port; } ||
	fail "ib_srpt RDMA/CM port"
# Target port in ib_srpt's "guid_name" form: the low 64 bits of GID 0.  With
# this form RDMA/CM logins are matched against ACLs named by initiator IP.
gid0=$(cat "/sys/class/infiniband/$IBDEV/ports/1/gids/0")
WWN=${gid0#fe80:0000:0000:0000:}
TPG=$CFS/srpt/$WWN/$WWN
mkdir -p "$TPG" || fail "srpt port $WWN"
{ mkdir "$TPG/lun/lun_0" && ln -s $BS "$TPG/lun/lun_0/"; } || fail "LUN 0"
{ mkdir -p "$TPG/acls/$IP/lun_0" && ln -s "$TPG/lun/lun_0" "$TPG/acls/$IP/lun_0/"; } ||
	fail "ACL for $IP"
echo 1 > "$TPG/enable" || fail "enable the target port"
log "target port $WWN ready in $(since "$t") s"

step "ib_srp initiator"
t=$(now)
modprobe ib_srp || fail "modprobe ib_srp"
G=$(cat /sys/module/ib_srpt/parameters/srpt_service_guid)
G=${G#0x}
login="id_ext=$G,ioc_guid=$G,dest=$IP:$PORT"
echo "$login" > "/sys/class/infiniband_srp/srp-$IBDEV-1/add_target" ||
	fail "login $login"
# shellcheck disable=SC2317 # called through wait_for
lio_disk() {
	local b
	for b in /sys/block/sd*; do
		[ -e "$b/device/vendor" ] && grep -q LIO "$b/device/vendor" &&
			[ "$(cat "$b/size")" -gt 0 ] && { DISK=/dev/${b##*/}; return 0; }
	done
	return 1
}
# shellcheck disable=SC2317
no_lio_disk() { ! lio_disk; }
DISK=
wait_for 20 lio_disk || fail "no SCSI disk after the SRP login"
log "login and SCSI scan: $(since "$t") s, disk $DISK ($(( $(cat "/sys/block/${DISK#/dev/}/size") / 2048 )) MiB)"
ls /sys/class/srp_remote_ports/

step "I/O on $DISK"
bad=
dd if=/dev/urandom of=/tmp/src.bin bs=1M count="$SIZE_MB" status=none
timed "write ${SIZE_MB} MiB O_DIRECT" \
	dd if=/tmp/src.bin of="$DISK" bs=1M oflag=direct status=none || bad+=" write"
timed "read ${SIZE_MB} MiB O_DIRECT" \
	dd if="$DISK" of=/tmp/back.bin bs=1M count="$SIZE_MB" iflag=direct status=none || bad+=" read"
if cmp /tmp/src.bin /tmp/back.bin; then log "data verified"; else bad+=" data-mismatch"; fi
rm -f /tmp/back.bin
t=$(now)
fio --name=srp --filename="$DISK" --size=64m --bs=4k --rw=randrw --direct=1 --ioengine=libaio \
	--iodepth=16 --runtime="$FIO_RT" --time_based --verify=crc32c --verify_fatal=1 \
	--group_reporting > /tmp/fio.log 2>&1
r=$?
grep -E 'READ:|WRITE:|err=|verify|IOPS' /tmp/fio.log
log "fio status $r, $(since "$t") s"
save /tmp/fio.log
[ $r = 0 ] || { tail -n 20 /tmp/fio.log; bad+=" fio"; }

step teardown
t=$(now)
for p in /sys/class/srp_remote_ports/*; do
	[ -e "$p/delete" ] && echo 1 > "$p/delete"
done
wait_for 20 no_lio_disk || bad+=" logout"
unload ib_srp scsi_transport_srp || bad+=" ib_srp-unload"
echo 0 > "$TPG/enable"
rm -f "$TPG/acls/$IP/lun_0/lun_0"
rmdir "$TPG/acls/$IP/lun_0" "$TPG/acls/$IP"
rm -f "$TPG/lun/lun_0/nullb0"
rmdir "$TPG/lun/lun_0" "$TPG" "$CFS/srpt/$WWN" $CFS/srpt $BS $CFS/core/iblock_0 ||
	bad+=" configfs-teardown"
unload ib_srpt target_core_iblock target_core_file target_core_mod null_blk || bad+=" target-unload"
log "logout and target teardown: $(since "$t") s"
timed "rxe teardown" rxe_teardown || bad+=" rxe-teardown"

[ -z "$bad" ] || fail "${bad# }"
pass
