#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Guest test: ib_srpt receives through a small SRQ (use_srq=1,
# srpt_srq_size=16) and ib_srp logs in with two channels whose credits
# exceed it, so that commands meet RNR NAKs when the SRQ runs out of
# buffers.  ib_srp chains a REG_MR before each command's Send: a retry
# after an RNR NAK must not run that REG_MR again (on 6.12, rxe did, the
# REG_MR failed and the channel died: "failed SEND status WR flushed", a
# reconnect, and the same again).  Runs on the stock kernel as well.
# Checks: fio (4 KiB and 64 KiB random writes and reads at queue depth
# 64, crc32c verified), no failed WR, no reconnect, no SCSI error or
# timeout, no SRP abort, ib_srp's and ib_srpt's pools idle (with ib_slot).
. "${0%/*}/lib.sh"

step "$SRP_TRANSPORT on $NETDEV"
rdma_link_setup || fail "$SRP_TRANSPORT setup"

step "ib_srpt with an SRQ of 16 buffers, ib_srp with two channels"
modprobe ib_srpt srpt_srq_size=16 || fail "modprobe ib_srpt"
srp_target_up use_srq=1
srp_login ch_count=2
bad=

for bs in 4k 64k; do
	step "fio $bs random writes and reads, queue depth 64"
	fio_run "srq-$bs" --name="srq-$bs" --filename="$DISK" --size=64m \
		--bs=$bs --rw=randrw --direct=1 --ioengine=libaio --iodepth=64 \
		--verify=crc32c --verify_fatal=1 --runtime=5 --time_based ||
		bad+=" fio-$bs"
done

step "checks"
n=$(dmesg_count 'ib_srp: failed (SEND|RECV|REG_MR|LOCAL_INV) status')
r=$(srp_reconnects)
log "$n failed WR(s), $r reconnect(s); RNR NAKs received by $IBDEV:" \
	"$(cat "/sys/class/infiniband/$IBDEV/ports/1/hw_counters/rcvd_rnr_err" 2>/dev/null)"
[ "$n" = 0 ] || bad+=" $n-failed-WRs"
[ "$r" = 0 ] || bad+=" $r-reconnects"
[ -n "$(mount_of /sys/kernel/debug)" ] || mount -t debugfs debugfs /sys/kernel/debug
# The stock kernel has no ib_slot pools to check.
if [ -d "$SLOT_DEBUGFS" ]; then
	srpt_pools_check
	srp_finish "$DISK"
else
	srp_scsi_errs_check "$DISK"
	srp_no_abort_check
	srp_end
fi
