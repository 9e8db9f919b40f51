#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Guest test: ib_srpt's channels closed under verified I/O, then its
# device removed.  Phase 1, default srpt_slots: with the remote port's
# reconnect_delay at 1 s and fio (4 KiB random reads and writes, queue
# depth 16, crc32c verified as it goes: verify_backlog) running on the
# SRP disk, the target port is disabled ("enable" 0: ib_srpt closes its
# channels), left so for 2 s and enabled again, 3 times; each time ib_srp
# must reconnect and its remote port be running again.  Phase 2, the same
# with ib_srpt reloaded with srpt_slots=8 (target port srp_sq_size=16)
# and a login with max_sect=16384, under two fio jobs, 4 MiB writes (4
# slots each) at queue depth 8 and 4 KiB at queue depth 64: commands wait
# for slots, the port is disabled while some do, and closing a channel
# drops them.  Phase 3: "rdma link delete" of the device under both jobs,
# while commands wait for slots, as srp-link-del does.
# Checks, phases 1 and 2: fio (no error: the commands that a reconnect
# cut off are retried), data written by dd before and read after the
# cycles, a reconnect in every cycle, no SCSI timeout and no SCSI error
# beyond the commands a reconnect ended, no SRP abort, no "send queue
# full" and no command too large for a channel; ib_srpt's command and
# task management pools: all slots back (in_use 0), no waiter, no
# misuse; the channels each disable closed released (their QPs off the
# pools) within 20 s of the reconnect; in phase 2 the command pool made
# commands wait, and some were waiting at each disable.  A closed channel
# kept, or slots held after a phase, ends the test there (the sessions
# would hold up the teardown for good).  Phase 3: the delete returns,
# the login and its disk go, fio ends, the pools of the removed device
# are gone (those of the devices left stay); then ib_srpt unloads and no
# pool of it is left.  pass() fails the test on any kernel warning.
. "${0%/*}/lib.sh"
CYCLES=3
SLOTS=8
MAX_SECT=16384		# sectors: 8 MiB

# shellcheck disable=SC2317 # called through wait_for
reconnected() { [ "$(srp_reconnects)" -gt "$1" ]; }

# srpt_figures: what ib_srpt's command pools counted so far.
srpt_figures() {
	echo "waits $(srpt_pools_sum waits), resumed $(srpt_pools_sum resumed)," \
		"exhausted $(srpt_pools_sum exhausted), in_use $(srpt_pools_sum in_use)," \
		"waiters $(srpt_pools_sum waiters), high_water" \
		"$(for d in $(srpt_pools); do slot_stat "$d" high_water; done | tr '\n' ' ')"
}

# login <option,...>: log in, set the remote port's reconnect_delay to 1 s;
# sets RPORT.
login() {
	srp_login "$1"
	RPORT=$(srp_host_rport "$SRP_HOST") || fail "no remote port of $SRP_HOST"
	echo 1 > "$RPORT/reconnect_delay" || fail "reconnect_delay"
	# The SCSI layer's own 30 s, scaled as the waits are: under KASAN a
	# 4 MiB write queued behind seven others at eight slots takes longer.
	echo $((30 * WAIT_SCALE)) > "/sys/block/${DISK#/dev/}/device/timeout" ||
		fail "SCSI timeout"
	log "${RPORT##*/}: reconnect_delay $(cat "$RPORT/reconnect_delay")," \
		"fast_io_fail_tmo $(cat "$RPORT/fast_io_fail_tmo"), dev_loss_tmo $(cat "$RPORT/dev_loss_tmo")"
}

# shellcheck disable=SC2317 # called through wait_for
srpt_waiting() { [ "$(srpt_pools_sum waiters)" -gt 0 ]; }

# srpt_channels: the QPs attached to ib_srpt's command pools: its channels.
srpt_channels() {
	local d
	for d in $(srpt_pools); do
		grep '^qp ' "$d/stats"
	done
}

# closed_released: ib_srpt has no more channels than the login has: those
# the disable closed were released, and took their QPs off the pools.
# shellcheck disable=SC2317 # called through wait_for
closed_released() {
	[ "$(srpt_channels | wc -l)" -le "$(cat "/sys/class/scsi_host/$SRP_HOST/ch_count")" ]
}

# cycles <label> [parked]: with I/O running, CYCLES times: disable the
# target port (with "parked": at a time commands wait for slots), 2 s
# later enable it again, and wait until ib_srp has reconnected and its
# remote port runs.
cycles() {
	local label=$1 i rc0 io0 t p
	for ((i = 1; i <= CYCLES; i++)); do
		io0=$(disk_ios "$DISK")
		wait_for 30 disk_moving "$DISK" $((io0 + 100)) || bad+=" $label-no-io-before-cycle-$i"
		if [ "${2:-}" = parked ] && ! wait_for 20 srpt_waiting; then
			bad+=" $label-no-waiter-before-cycle-$i"
		fi
		rc0=$(srp_reconnects)
		t=$(now)
		log "$label: cycle $i: disable with $(srpt_pools_sum waiters) command(s) waiting for slots"
		echo 0 > "$SRP_TPG/enable" || bad+=" $label-disable-$i"
		sleep 2
		log "$label: cycle $i: port disabled for 2 s; remote port $(cat "$RPORT/state");" \
			"ib_srpt's command pools: $(srpt_figures)"
		echo 1 > "$SRP_TPG/enable" || bad+=" $label-enable-$i"
		if wait_for 60 reconnected "$rc0" && wait_for 30 srp_rport_running "$RPORT"; then
			log "$label: cycle $i: $(($(srp_reconnects) - rc0)) reconnect(s), remote port" \
				"running $(since "$t") s after the disable"
		else
			log "$label: cycle $i: no reconnect, or remote port $(cat "$RPORT/state")"
			srp_diag
			bad+=" $label-cycle-$i-no-reconnect"
		fi
		if ! wait_for 20 closed_released; then
			# Their sessions would hold up everything after
			# (the teardown for good): stop here.
			log "$label: cycle $i: channels closed by the disable not released 20 s later;" \
				"ib_srpt's channels: $(srpt_channels | tr '\n' ';')"
			for p in $(srpt_pools) $(srpt_pools tmr); do
				echo "--- $p/stats"
				cat "$p/stats"
			done
			rdma resource show cm_id
			rdma resource show qp
			echo w > /proc/sysrq-trigger
			fail "${bad:+${bad# } }$label-cycle-$i-closed-channels-kept (stopped there)"
		fi
	done
	# The I/O goes on after the last reconnect.
	io0=$(disk_ios "$DISK")
	wait_for 30 disk_moving "$DISK" $((io0 + 100)) || bad+=" $label-no-io-after-cycles"
}

# checks <label> <disk offset MiB of the data written before>
# <reconnects before> <ioerr_cnt before>: after the fio jobs ended: the
# data, the error counters, ib_srpt's and ib_srp's pools.
checks() {
	local label=$1 nr
	step "$label: checks"
	dd_same "$DISK" "$2" /tmp/before.bin || bad+=" $label-data-after-cycles"
	dd_verify "$DISK" $(($2 + 16)) 8 || bad+=" $label-data-end"
	nr=$(($(srp_reconnects) - $3))
	log "$label: $nr reconnects for $CYCLES port cycles; ioerr_cnt +$(($(scsi_ioerr "$DISK") - $4))"
	[ "$nr" -ge $CYCLES ] || bad+=" $label-$nr-reconnects"
	srp_reconnect_errs_allow "$DISK" "$4" "$nr"
	srp_scsi_errs_check "$DISK"
	srp_no_abort_check
	srpt_no_sq_full_check
	srpt_pools_check
	log "$label: ib_srpt's command pools: $(srpt_figures)"
	srp_pools_check
	# Sessions that keep slots would hold up the teardown (and the device
	# removal of phase 3) for good: stop here.
	if [ "$(srpt_pools_sum in_use)" != 0 ] || ! closed_released; then
		fail "${bad# } (stopped: ib_srpt keeps slots or closed channels)"
	fi
}

bad=
link_up

# ---- phase 1: default srpt_slots ----
step "phase 1: ib_srpt target, default srpt_slots"
srp_target_up
log "srpt_slots $(cat /sys/module/ib_srpt/parameters/srpt_slots)"
step "phase 1: ib_srp initiator"
login ""
dd_verify "$DISK" 512 8 /tmp/before.bin || bad+=" p1-data-before"
rc0=$(srp_reconnects)
e0=$(scsi_ioerr "$DISK")
w0=$(srpt_pools_sum waits)

step "phase 1: target port disabled and enabled $CYCLES times under fio"
fio_start p1 --name=p1 --filename="$DISK" --size=64m "${FIO_VERIFY[@]}" --verify_backlog=256 \
	--runtime=600 --time_based
cycles p1
fio_running p1 || bad+=" p1-fio-ended-early"
fio_wait p1 stop || bad+=" fio-p1"
log "phase 1: ib_srpt's command pools waited $(($(srpt_pools_sum waits) - w0)) times"
checks "phase 1" 512 "$rc0" "$e0"

step "phase 1: teardown, ib_srpt unloaded"
srp_down
left=$(srpt_pools; srpt_pools tmr)
[ -z "$left" ] || { log "pools left: ${left//$'\n'/ }"; bad+=" p1-srpt-pools-left"; }

# ---- phase 2: srpt_slots=8, commands waiting for slots ----
step "phase 2: ib_srpt srpt_slots=$SLOTS, target port srp_sq_size=16"
modprobe ib_srpt srpt_slots=$SLOTS || fail "modprobe ib_srpt srpt_slots=$SLOTS"
srp_target_up srp_sq_size=16
for p in $(srpt_pools); do
	[ "$(slot_stat "$p" size)" = $SLOTS ] || fail "${p##*/} has $(slot_stat "$p" size) slots"
done
step "phase 2: ib_srp cmd_sg_entries=255, login with max_sect=$MAX_SECT"
modprobe ib_srp cmd_sg_entries=255 || fail "modprobe ib_srp cmd_sg_entries=255"
login "max_sect=$MAX_SECT"
d=/sys/block/${DISK#/dev/}/queue
cat "$d/max_hw_sectors_kb" > "$d/max_sectors_kb"
log "$DISK: max_sectors_kb $(cat "$d/max_sectors_kb")"
dd_verify "$DISK" 512 8 /tmp/before.bin || bad+=" p2-data-before"
rc0=$(srp_reconnects)
e0=$(scsi_ioerr "$DISK")
w0=$(srpt_pools_sum waits)
r0=$(srpt_pools_sum resumed)

# fio_io <label>: two fio jobs on separate parts of the disk, each one
# moving data before the next starts: <label>l, 4 MiB random writes (4
# slots each) at queue depth 8, then <label>s, 4 KiB random reads and
# writes at queue depth 64; both crc32c verified as they go.
fio_io() {
	local io0
	io0=$(disk_ios "$DISK")
	fio_start "$1l" --name="$1l" --filename="$DISK" --offset=256m --size=64m --bs=4m \
		--rw=randwrite --direct=1 --ioengine=libaio --iodepth=8 --verify=crc32c \
		--verify_fatal=1 --verify_backlog=16 --serialize_overlap=1 --runtime=600 --time_based
	wait_for 30 disk_moving "$DISK" $((io0 + 8)) || bad+=" $1l-no-io"
	io0=$(disk_ios "$DISK")
	fio_start "$1s" --name="$1s" --filename="$DISK" --size=64m "${FIO_VERIFY[@]}" \
		--iodepth=64 --verify_backlog=256 --runtime=600 --time_based
	wait_for 30 disk_moving "$DISK" $((io0 + 100)) || bad+=" $1s-no-io"
}

step "phase 2: target port disabled and enabled $CYCLES times under fio"
fio_io p2
cycles p2 parked
for j in p2s p2l; do
	fio_running $j || bad+=" $j-fio-ended-early"
	fio_wait $j stop || bad+=" fio-$j"
done
w=$(($(srpt_pools_sum waits) - w0))
log "phase 2: ib_srpt's command pools: $w waits, $(($(srpt_pools_sum resumed) - r0)) resumed" \
	"(the others dropped when their channel closed)"
[ "$w" -gt 0 ] || bad+=" p2-no-waits"
checks "phase 2" 512 "$rc0" "$e0"

# ---- phase 3: the device removed under I/O ----
step "phase 3: rdma link delete $IBDEV under fio"
# The pools of the device the login uses: those with QPs attached.
active=()
for p in $(srpt_pools) $(srpt_pools tmr); do
	grep -q '^qp ' "$p/stats" && active+=("$p")
done
log "ib_srpt's pools of $IBDEV: ${active[*]##*/}"
ncmd=$(srpt_pools | wc -l)
ntmr=$(srpt_pools tmr | wc -l)
[ ${#active[@]} = 2 ] || bad+=" p3-${#active[@]}-pools-with-qps"
fio_io p3
wait_for 20 srpt_waiting || bad+=" p3-no-waiter"
log "delete with $(srpt_pools_sum waiters) command(s) waiting for slots"
srp_link_delete
log "SRP login gone $(since "$LINK_DEL_T") s after the delete"
for j in p3s p3l; do
	if wait_for 60 fio_done $j; then
		# fio's errors are expected: its disk vanished under it.
		fio_wait $j && log "fio $j ended without an error"
	else
		bad+=" fio-$j-hangs"
		kill -9 "${FIO_PID[$j]}"
	fi
done
for p in "${active[@]}"; do
	[ -d "$p" ] && bad+=" pool-${p##*/}-left"
done
# The pools of the other devices ib_srpt serves stay (rxe: none; siw:
# none either, ib_srpt cannot use siwlo).
log "ib_srpt's pools left: $(srpt_pools | wc -l) command, $(srpt_pools tmr | wc -l)" \
	"task management (of $ncmd and $ntmr before the delete)"
if [ "$(srpt_pools | wc -l)" != $((ncmd - 1)) ] ||
   [ "$(srpt_pools tmr | wc -l)" != $((ntmr - 1)) ]; then
	bad+=" p3-other-devices-pools"
fi
srp_no_abort_check
srpt_no_sq_full_check

step teardown
srpt_down_check
timed "$SRP_TRANSPORT teardown" rdma_link_teardown || bad+=" $SRP_TRANSPORT-teardown"

[ -z "$bad" ] || fail "${bad# }"
pass
