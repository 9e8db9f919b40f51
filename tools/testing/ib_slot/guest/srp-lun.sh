#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Guest test: a LUN added and removed on the target while the initiator is
# logged in and LUN 0 is busy.  With fio (verified) on LUN 0: a second
# null_blk device (null_blk configfs) becomes LUN 1 of the target port and
# of its ACL, the SCSI host is rescanned, both LUNs take distinct data
# (written, read back, compared) and LUN 1 a verified fio run; then LUN 1
# goes from the target and its SCSI disk is deleted on the initiator.
# Afterwards another verified fio run on LUN 0.  Checks: the data, fio's
# errors, LUN 0's SCSI error counters (moved only by the unit attentions
# that report the LUN change), no SRP abort, ib_srp's ib_slot pools idle.
. "${0%/*}/lib.sh"
FIO_RT=${FIO_RT:-5}
NULLB=/sys/kernel/config/nullb/nullb1

# shellcheck disable=SC2317 # called through wait_for
_lun1_up() { DISK1=$(srp_host_disk "$HOST" 1); }

step "$SRP_TRANSPORT on $NETDEV"
rdma_link_setup || fail "$SRP_TRANSPORT setup"

step "ib_srpt target (raw configfs), LUN 0"
srp_target_up

step "ib_srp initiator"
srp_login
DISK0=$DISK
HOST=$SRP_HOST
bad=

step "fio on LUN 0 ($DISK0) in the background"
fio_start lun0-busy --name=lun0-busy --filename="$DISK0" --size=64m "${FIO_VERIFY[@]}" \
	--runtime=600 --time_based

step "LUN 1 added on the target, $HOST rescanned"
t=$(now)
{ mkdir "$NULLB" && echo 256 > "$NULLB/size" && echo 1 > "$NULLB/memory_backed" &&
	echo 1 > "$NULLB/power"; } || fail "null_blk device nullb1 (configfs)"
wait_for 10 test -b /dev/nullb1 || fail "no /dev/nullb1"
srp_lun_add 1 /dev/nullb1 || fail "LUN 1 on the target"
n=$(dmesg | wc -l)
echo '- - -' > "/sys/class/scsi_host/$HOST/scan" || fail "rescan of $HOST"
wait_for 20 _lun1_up || fail "no SCSI disk for LUN 1 after the rescan"
wait_for 20 scsi_disk_attached "$DISK1" "$n" || fail "the probe of $DISK1 does not end"
srp_scsi_errs_mark "$DISK1"
log "LUN 1: $DISK1 ($(( $(cat "/sys/block/${DISK1#/dev/}/size") / 2048 )) MiB) in $(since "$t") s"
fio_running lun0-busy || bad+=" lun0-fio-ended-early"

step "I/O on both LUNs"
# Distinct data at the same offset of each LUN, then LUN 0's read again:
# the two LUNs are distinct devices.
dd_verify "$DISK0" 128 4 /tmp/lun0.bin || bad+=" lun0-data"
dd_verify "$DISK1" 0 4 /tmp/lun1.bin || bad+=" lun1-data"
dd_verify "$DISK1" 128 4 /tmp/lun1.bin || bad+=" lun1-data"
dd_same "$DISK0" 128 /tmp/lun0.bin || bad+=" lun0-data-after-lun1"
fio_run lun1 --name=lun1 --filename="$DISK1" --size=64m "${FIO_VERIFY[@]}" \
	--runtime="$FIO_RT" --time_based || bad+=" lun1-fio"
srp_scsi_errs_check "$DISK1"

step "LUN 1 removed on the target, $DISK1 deleted"
t=$(now)
srp_lun_del 1 || bad+=" lun1-target-removal"
{ echo 0 > "$NULLB/power" && rmdir "$NULLB"; } || bad+=" nullb1-removal"
echo 1 > "/sys/block/${DISK1#/dev/}/device/delete" || bad+=" lun1-delete"
wait_for 20 test ! -e "/sys/block/${DISK1#/dev/}" || bad+=" lun1-disk-stays"
srp_host_disk "$HOST" 1 && bad+=" lun1-still-on-$HOST"
log "LUN 1 gone in $(since "$t") s"
fio_running lun0-busy || bad+=" lun0-fio-ended-early"
dd_same "$DISK0" 128 /tmp/lun0.bin || bad+=" lun0-data-after-removal"

step "LUN 0 after the LUN changes"
fio_wait lun0-busy stop || bad+=" lun0-fio-during-lun-changes"
fio_run lun0 --name=lun0 --filename="$DISK0" --size=64m "${FIO_VERIFY[@]}" \
	--runtime="$FIO_RT" --time_based || bad+=" lun0-fio"
dd_verify "$DISK0" 128 4 || bad+=" lun0-data-end"

step "checks"
# The target reports each LUN change to LUN 0's initiator as a unit
# attention (REPORTED LUNS DATA HAS CHANGED): each ends one command in
# CHECK CONDITION (the SCSI layer retries it), and that only.
srp_scsi_errs_allow "$DISK0" \
	"$(scsi_ua_reports "$DISK0" "LUN assignments on this target have changed")" \
	"unit attentions: LUN assignments changed"
srp_finish "$DISK0"
