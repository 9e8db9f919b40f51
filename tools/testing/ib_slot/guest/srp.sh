#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Guest test: SRP over RDMA/CM on rxe0.  Target: LIO ib_srpt set up through
# raw configfs, one LUN on a memory-backed null_blk (iblock backstore).
# Initiator: ib_srp, logging in with dest=<ip>:<port>.  On the SCSI disk:
# random data written with O_DIRECT, read back and compared, then a short fio
# 4k randrw run (QD16) with crc32c verification; then everything is torn
# down again (logout, target, modules, rxe0).
. "${0%/*}/lib.sh"
SIZE_MB=${SRP_SIZE_MB:-8}
FIO_RT=${FIO_RT:-5}

step "rxe0 on $NETDEV"
rxe_setup || fail "rxe setup"

step "ib_srpt target (raw configfs)"
srp_target_up

step "ib_srp initiator"
srp_login
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
srp_down
timed "rxe teardown" rxe_teardown || bad+=" rxe-teardown"

[ -z "$bad" ] || fail "${bad# }"
pass
