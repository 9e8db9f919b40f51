#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Guest test: with SRQ, the commands ib_srpt parks for slots keep receive
# buffers that every channel of the HCA shares.  The LUN completes every
# I/O after 1.5 s (null_blk irqmode=2), ib_srpt has two command slots
# (srpt_slots=2) and an SRQ of 16 buffers (srpt_srq_size=16, use_srq=1),
# and ib_srp logs in with two channels, whose credits (16 each) exceed the
# SRQ: under fio at queue depth 32, parked commands could hold every
# buffer, and a LUN reset (or any request) would find none; ib_srpt
# answers the commands past half of the SRQ BUSY instead.
# Checks: at most 8 commands wait for slots at any time; the LUN reset
# sent during the I/O is answered within ib_srp's task management timeout
# (5 s); fio ends and verifies its data (4 KiB
# random writes, crc32c); a pattern written before reads back intact;
# at most one reconnect, which the LUN reset may cost; ib_srpt's and
# ib_srp's pools end idle, with no misuse.
. "${0%/*}/lib.sh"

step "$SRP_TRANSPORT on $NETDEV"
rdma_link_setup || fail "$SRP_TRANSPORT setup"

step "a LUN whose I/O takes 1.5 s; ib_srpt srpt_slots=2, srpt_srq_size=16"
modprobe null_blk nr_devices=1 gb=1 memory_backed=1 irqmode=2 \
	completion_nsec=1500000000 || fail "modprobe null_blk (slow)"
modprobe ib_srpt srpt_slots=2 srpt_srq_size=16 || fail "modprobe ib_srpt"
srp_target_up use_srq=1
[ -n "$(mount_of /sys/kernel/debug)" ] || mount -t debugfs debugfs /sys/kernel/debug
srp_login ch_count=2
bad=
dd_verify "$DISK" 512 256k /tmp/before.bin || bad+=" data-before"
rc0=$(srp_reconnects)

step "fio queue depth 32 on two channels; a LUN reset after 3 s"
fio_start srq --name=srq --filename="$DISK" --direct=1 --ioengine=libaio \
	--iodepth=32 --rw=randwrite --bs=4k --size=8m --verify=crc32c \
	--verify_fatal=1 --runtime=8 --time_based
# The bound itself: once commands wait for slots, sampled from ib_srpt's
# pool for 3 s, they never hold more than half of the SRQ.
# shellcheck disable=SC2317 # called through wait_for
some_wait() { [ "$(srpt_pools_sum waiters)" -ge 1 ]; }
wait_for 30 some_wait || bad+=" no-command-waited"
max=0
for _ in $(seq 15); do
	sleep 0.2
	w=$(srpt_pools_sum waiters)
	[ "$w" -le "$max" ] || max=$w
done
log "at most $max commands waited for slots (SRQ of 16 buffers)"
[ "$max" -le 8 ] || bad+=" $max-commands-waited"
t=$(now)
sg_reset --device "$DISK" || bad+=" lun-reset-failed"
d=$(since "$t")
log "LUN reset answered in $d s"
[ "${d%.*}" -lt 5 ] || bad+=" lun-reset-took-${d}s"
fio_wait srq || bad+=" fio-srq"

step "checks"
r=$(($(srp_reconnects) - rc0))
log "$r reconnects"
# At most the one a LUN reset may cost (see srp-reset.sh).
[ "$r" -le 1 ] || bad+=" $r-reconnects"
dd_same "$DISK" 512 /tmp/before.bin || bad+=" data-after"
srpt_pools_check
srp_pools_check
srp_end
