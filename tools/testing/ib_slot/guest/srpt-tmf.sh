#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Guest test: task management reaches the commands ib_srpt parks for
# slots.  The LUN completes every I/O after 1.5 s (null_blk irqmode=2),
# ib_srpt has two command slots (srpt_slots=2) and the disk's SCSI timeout
# is 4 s, so that under fio (4 KiB random writes, queue depth 16, crc32c
# verified) most commands wait at the target for a slot longer than the
# initiator waits for them: the SCSI layer aborts them (ABORT TASK), then
# escalates to a LUN reset, while they are parked.  A parked command the
# task management function does not find would run later with its stale
# tag: its response completes a command the initiator reused the tag for,
# or arrives for none ("Null scmnd for RSP" in ib_srp's log), and its
# RDMA reaches memory the initiator handed back.
# fio runs under those timeouts; the error handler's ABORT TASKs and the
# LUN resets it escalates to meet commands parked at the target.
# One channel (ch_count=1): with several, LIO answers the commands that a
# LUN reset from one channel aborts on the others (other I_T nexuses)
# with TASK ABORTED, which ib_srp, whose error handler ended them, logs as
# responses for tags it no longer has, on stock 6.12 as well.
# Checks: aborts happened (the scenario was reached; the LUN resets, which
# depend on the error handler's timing, are counted); no response for a
# tag the initiator no longer has; fio ends; a dd pattern written before
# reads back intact; ib_srpt's pools end idle (no slot held, no waiter, no
# misuse), and so do ib_srp's.  Reconnects are logged, not failed: an
# ABORT TASK for a command the backend holds waits for it, a channel's
# task management has two slots, and the error handler may run out of
# time and escalate to a host reset.
. "${0%/*}/lib.sh"
SLOTS=2

# stale [race]: the responses ib_srp received for a tag it no longer had,
# but those that crossed the abort of their command: the target completed
# it as the initiator sent ABORT TASK, and the response came within 0.5 s
# of it (before the task management response, which does not show in the
# log).  With "race", those instead.
stale() {
	dmesg | awk -v want="${1:-late}" '
	function t() { return substr($0, 2, index($0, "]") - 2) + 0 }
	function tag(s) { sub(/^0x0*/, "", s); return tolower(s) }
	{ sub(/\r$/, "") }
	/Sending SRP abort for tag/ { sent[tag($NF)] = t() }
	/Null scmnd for RSP/ {
		split($0, w, "w/tag "); split(w[2], v, " "); g = tag(v[1])
		race = (g in sent) && t() - sent[g] < 0.5
		n += (want == "race") == race
	}
	END { print n + 0 }'
}

# shellcheck disable=SC2317 # called through wait_for
srpt_idle() { [ "$(srpt_pools_sum in_use)" = 0 ]; }

step "$SRP_TRANSPORT on $NETDEV"
rdma_link_setup || fail "$SRP_TRANSPORT setup"

step "a LUN whose I/O takes 1.5 s; ib_srpt srpt_slots=$SLOTS"
# srp_target_up's modprobe of null_blk finds it loaded with these.
modprobe null_blk nr_devices=1 gb=1 memory_backed=1 irqmode=2 \
	completion_nsec=1500000000 || fail "modprobe null_blk (slow)"
modprobe ib_srpt srpt_slots=$SLOTS || fail "modprobe ib_srpt srpt_slots=$SLOTS"
srp_target_up
[ -n "$(mount_of /sys/kernel/debug)" ] || mount -t debugfs debugfs /sys/kernel/debug
srp_login ch_count=1
RPORT=$(srp_host_rport "$SRP_HOST") || fail "no remote port of $SRP_HOST"
bad=
# Before the short timeout: nothing waits long enough to be aborted yet.
dd_verify "$DISK" 512 256k /tmp/before.bin || bad+=" data-before"
echo 4 > "/sys/block/${DISK#/dev/}/device/timeout" || fail "SCSI timeout 4 s"
rc0=$(srp_reconnects)
ab0=$(dmesg_count 'SRP abort called')

step "fio queue depth 16 against $SLOTS slots of 1.5 s"
fio_run tmo --name=tmo --filename="$DISK" --direct=1 --ioengine=libaio --iodepth=16 \
	--rw=randwrite --bs=4k --size=8m --verify=crc32c --verify_fatal=1 \
	--runtime=10 --time_based || bad+=" fio-tmo"
wait_for 60 srp_rport_running "$RPORT" || bad+=" rport-$(cat "$RPORT/state")"

step "checks"
# The scenario is over: the data check below must not time out and
# abort as fio did.
echo 30 > "/sys/block/${DISK#/dev/}/device/timeout" || fail "SCSI timeout 30 s"
# Whatever the target still held is answered once it holds no slot.
wait_for 30 srpt_idle || bad+=" target-busy"
n=$(stale)
a=$(($(dmesg_count 'SRP abort called') - ab0))
r=$(($(srp_reconnects) - rc0))
log "in all: $a aborts, $(dmesg_count 'SRP reset_device called') LUN resets," \
	"$n responses for tags no longer outstanding ($(stale race) more crossed" \
	"their abort), $r reconnects"
[ "$a" -ge 1 ] || bad+=" no-abort"
[ "$n" = 0 ] || { dmesg | grep 'Null scmnd for RSP' | head -5; bad+=" $n-stale-responses"; }
dd_same "$DISK" 512 /tmp/before.bin || bad+=" data-after"
srpt_pools_check
for p in $(srpt_pools); do
	log "${p##*/}: waits $(slot_stat "$p" waits) resumed $(slot_stat "$p" resumed)" \
		"exhausted $(slot_stat "$p" exhausted)"
done
srp_pools_check
srp_end
