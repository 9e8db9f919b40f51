#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Guest test: the target's side of the constrained scenario.  ib_srpt is
# loaded with srpt_slots=8: the RDMA device has one command pool of 8
# slots, shared by all channels, a slot being the Send Queue room of 256
# pages of RDMA READ/WRITE and the response; a larger command takes
# several slots (an 8 MiB one all 8 on rxe), all or nothing, and a
# command that finds too few waits for them in FIFO order.  The target
# port's srp_sq_size=16 no longer holds a channel below what the largest
# command needs (srpt_slots does, here).  Without and then with an SRQ
# (the target port's use_srq), ib_srp (cmd_sg_entries=255) logs in with
# max_sect=16384 (8 MiB), the disk takes requests that large
# (max_sectors_kb), and fio, queue depth 64, O_DIRECT, crc32c verified,
# writes 4 MiB and then 8 MiB blocks sequentially and reads them back,
# then runs 4 KiB random reads and writes.
# Checks, in each round: fio, no SCSI error or timeout, no SRP abort, no
# reconnect, no "send queue full" and no command too large for a channel
# in the kernel log; ib_srpt's command pool: 8 slots, waits in every fio
# job (the back-pressure did happen), each wait resumed (resumed ==
# waits), no waiter and no slot held once idle, no misuse, high water
# within the 8 slots; its task management pool idle and without misuse;
# ib_srp's pools idle; after the logout, no QP attached to ib_srpt's
# pools (over siw, once the target port is disabled: ib_srpt keeps a
# channel closed by the initiator until then).  At the end ib_srpt
# unloads and its pools are gone.
. "${0%/*}/lib.sh"
SLOTS=8
MAX_SECT=16384			# sectors: 8 MiB
BIG_MB=${SRPT_BP_MB:-32}	# written and read back by a large-block job

# figures: the command pools' waits, resumed, exhausted and high water.
figures() {
	local d s=
	for d in $(srpt_pools); do
		s+="${d##*/}: waits $(slot_stat "$d" waits) resumed $(slot_stat "$d" resumed)"
		s+=" exhausted $(slot_stat "$d" exhausted) high_water $(slot_stat "$d" high_water); "
	done
	echo "${s%; }"
}

# qps_attached: the QP lines of ib_srpt's pools (while logged in: its
# channels, with the slots they hold and their Send Queue credits).
qps_attached() {
	local d
	for d in $(srpt_pools) $(srpt_pools tmr); do
		grep '^qp ' "$d/stats" | sed "s/^/${d##*/}: /"
	done
}

# shellcheck disable=SC2317 # called through wait_for
no_qp_attached() { [ -z "$(qps_attached)" ]; }

# job <label> <fio argument>...: a fio job on the disk, queue depth 64,
# O_DIRECT, crc32c verified; logs what ib_srpt's command pools counted in
# it and the mean request sizes.  The pools must have made commands wait.
job() {
	local j=$1 w0 r0 e0 w r e rd0 rs0 wr0 ws0 rd rs wr ws
	shift
	w0=$(srpt_pools_sum waits) r0=$(srpt_pools_sum resumed) e0=$(srpt_pools_sum exhausted)
	read -r rd0 _ rs0 _ wr0 _ ws0 _ < "$STAT"
	fio_run "$j" --name="$j" --filename="$DISK" --direct=1 --ioengine=libaio --iodepth=64 \
		--verify=crc32c --verify_fatal=1 "$@" || bad+=" fio-$j"
	w=$(srpt_pools_sum waits) r=$(srpt_pools_sum resumed) e=$(srpt_pools_sum exhausted)
	read -r rd _ rs _ wr _ ws _ < "$STAT"
	log "$j: ib_srpt's command pool: waits +$((w - w0)), resumed +$((r - r0))," \
		"exhausted +$((e - e0)); $((wr - wr0)) writes of" \
		"$(( (ws - ws0) / 2 / (wr > wr0 ? wr - wr0 : 1) )) KiB and $((rd - rd0)) reads of" \
		"$(( (rs - rs0) / 2 / (rd > rd0 ? rd - rd0 : 1) )) KiB on average"
	[ $((w - w0)) -gt 0 ] || bad+=" $j-no-waits"
}

# round <use_srq>: set use_srq, log in, run the jobs, check, log out.
round() {
	local srq=$1 d hw mx rc0 w0 w r s p tmo
	step "use_srq=$srq: ib_srp login with max_sect=$MAX_SECT, fio queue depth 64"
	echo "$srq" > "$SRP_TPG/attrib/use_srq" || fail "use_srq=$srq"
	[ "$(cat "$SRP_TPG/attrib/use_srq")" = "$srq" ] || fail "use_srq is not $srq"
	srp_login "max_sect=$MAX_SECT"
	d=/sys/block/${DISK#/dev/}
	STAT=$d/stat
	read -r hw < "$d/queue/max_hw_sectors_kb"
	echo "$hw" > "$d/queue/max_sectors_kb"
	read -r mx < "$d/queue/max_sectors_kb"
	log "$DISK: max_hw_sectors_kb $hw, max_sectors_kb $mx, max_segments" \
		"$(cat "$d/queue/max_segments"); host $SRP_HOST: can_queue" \
		"$(cat "/sys/class/scsi_host/$SRP_HOST/can_queue"), sg_tablesize" \
		"$(cat "/sys/class/scsi_host/$SRP_HOST/sg_tablesize")"
	[ "$mx" = $((MAX_SECT / 2)) ] || bad+=" srq$srq-max_sectors_kb=$mx"
	log "ib_srpt's channels: $(qps_attached | tr '\n' ';')"
	rc0=$(srp_reconnects)
	w0=$(srpt_pools_sum waits)

	for bs in 4 8; do
		job "srq$srq-seq-${bs}M" --bs=${bs}M --rw=write --size="${BIG_MB}m"
	done
	job "srq$srq-randrw-4k" --bs=4k --rw=randrw --size=64m --runtime=5 --time_based

	step "use_srq=$srq: checks"
	srp_scsi_errs_check "$DISK"
	srp_no_abort_check
	srpt_no_sq_full_check
	s=$(($(srp_reconnects) - rc0))
	[ "$s" = 0 ] || bad+=" srq$srq-$s-reconnects"
	srpt_pools_check
	w=$(srpt_pools_sum waits)
	log "use_srq=$srq: ib_srpt's command pool(s) $(figures); waits in this round: $((w - w0))"
	[ $((w - w0)) -gt 0 ] || bad+=" srq$srq-no-waits"
	for p in $(srpt_pools); do
		w=$(slot_stat "$p" waits)
		r=$(slot_stat "$p" resumed)
		[ "$r" = "$w" ] || bad+=" srq$srq-${p##*/}-resumed=$r-of-$w-waits"
	done
	srp_pools_check

	step "use_srq=$srq: logout"
	srp_logout "$SRP_HOST" || bad+=" srq$srq-logout"
	SRP_HOST=
	tmo=20
	[ "$SRP_TRANSPORT" = siw ] && tmo=3
	wait_for $tmo no_qp_attached && return
	log "QPs attached $tmo s after the logout: $(qps_attached | tr '\n' ';')"
	if [ "$SRP_TRANSPORT" != siw ]; then
		bad+=" srq$srq-qps-left-attached"
		return
	fi
	# Over iWARP ib_srpt (stock too) keeps a channel that the initiator
	# closed until the target port is disabled: it waits for a
	# TIMEWAIT_EXIT event, which RDMA/CM reports on InfiniBand only.
	# Closing it then must take its QPs off the pools.
	echo 0 > "$SRP_TPG/enable"
	wait_for 20 no_qp_attached ||
		{ log "QPs left: $(qps_attached | tr '\n' ';')"; bad+=" srq$srq-qps-left-attached"; }
	echo 1 > "$SRP_TPG/enable"
}

step "$SRP_TRANSPORT on $NETDEV"
rdma_link_setup || fail "$SRP_TRANSPORT setup"

step "ib_srpt srpt_slots=$SLOTS, target port srp_sq_size=16"
modprobe ib_srpt srpt_slots=$SLOTS || fail "modprobe ib_srpt srpt_slots=$SLOTS"
[ "$(cat /sys/module/ib_srpt/parameters/srpt_slots)" = $SLOTS ] || fail "srpt_slots is not $SLOTS"
srp_target_up srp_sq_size=16
[ -n "$(mount_of /sys/kernel/debug)" ] || mount -t debugfs debugfs /sys/kernel/debug
[ -n "$(srpt_pools)" ] || fail "no ib_slot pool of ib_srpt in $SLOT_DEBUGFS"
for p in $(srpt_pools); do
	s=$(slot_stat "$p" size)
	log "${p##*/}: policy $(slot_stat "$p" policy), size $s, cost $(slot_stat "$p" cost)"
	[ "$s" = $SLOTS ] || fail "${p##*/} has $s slots, not $SLOTS"
done
modprobe ib_srp cmd_sg_entries=255 || fail "modprobe ib_srp cmd_sg_entries=255"

bad=
round 0
round 1

step teardown
srpt_down_check
timed "$SRP_TRANSPORT teardown" rdma_link_teardown || bad+=" $SRP_TRANSPORT-teardown"

[ -z "$bad" ] || fail "${bad# }"
pass
