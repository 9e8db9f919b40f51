#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Guest test: ib_srp recovers from a QP error and from failed slot gets
# under verified I/O.  Phase 1: with the remote port's reconnect_delay at
# 1 s and fio (crc32c verified) running, the QP of one of ib_srp's ib_slot
# pools (one per RDMA channel) is moved to the error state through the
# pool's debugfs qp_error: ib_srp must reconnect ("reconnect succeeded",
# with new pools) and fio must see no error (the commands are retried).
# Phase 2: fault injection on get (debugfs fail_get: 10% of gets fail, as
# if the pool were exhausted) on every pool of ib_srp during a fio run,
# then off again: fio sees no error, the pools count exhausted gets and
# nothing hangs or reconnects.  Checks: fio, the data of a dd written
# before and read after, the remote port back to running, the SCSI error
# counters, no SRP abort, ib_srp's ib_slot pools idle.
. "${0%/*}/lib.sh"
FIO_RT=${FIO_RT:-8}

# shellcheck disable=SC2317 # called through wait_for
reconnected() { [ "$(srp_reconnects)" -gt "$1" ]; }

# pool_qps <pool dir>...: the numbers of the QPs attached to the pools.
pool_qps() {
	local p k n rest
	for p in "$@"; do
		while read -r k n rest; do
			[ "$k" = qp ] && echo "${n%:}"
		done < "$p/stats"
	done
}

# fail_get <percent>: fault injection on get at that probability on every
# pool of ib_srp (0: off).
fail_get() {
	local p f
	for p in $(srp_pools); do
		f=$p/fail_get
		{ echo 0 > "$f/verbose" && echo 1 > "$f/interval" && echo -1 > "$f/times" &&
			echo "$1" > "$f/probability"; } || return 1
	done
}

step "$SRP_TRANSPORT on $NETDEV"
rdma_link_setup || fail "$SRP_TRANSPORT setup"

step "ib_srpt target (raw configfs)"
srp_target_up

step "ib_srp initiator, reconnect_delay 1"
srp_login
RPORT=$(srp_host_rport "$SRP_HOST") || fail "no remote port of $SRP_HOST"
echo 1 > "$RPORT/reconnect_delay" || fail "reconnect_delay"
log "${RPORT##*/}: reconnect_delay $(cat "$RPORT/reconnect_delay")," \
	"fast_io_fail_tmo $(cat "$RPORT/fast_io_fail_tmo"), dev_loss_tmo $(cat "$RPORT/dev_loss_tmo")"
bad=
dd_verify "$DISK" 512 8 /tmp/before.bin || bad+=" data-before"
[ -n "$(mount_of /sys/kernel/debug)" ] || mount -t debugfs debugfs /sys/kernel/debug
mapfile -t pools < <(srp_pools)
[ ${#pools[@]} -gt 0 ] || fail "no ib_slot pool of ib_srp in $SLOT_DEBUGFS"
log "ib_srp's pools: ${pools[*]##*/}"

step "QP error under fio"
pool=${pools[0]}
qpn=$(pool_qps "$pool" | head -n 1)
[ -n "$qpn" ] || fail "no QP attached to ${pool##*/}"
qps0=$(pool_qps "${pools[@]}" | tr '\n' ' ')
ino0=" $(stat -c %i "${pools[@]}" | tr '\n' ' ')"
rc0=$(srp_reconnects)
e0=$(scsi_ioerr "$DISK")
fio_start qp-error --name=qp-error --filename="$DISK" --size=64m "${FIO_VERIFY[@]}" \
	--runtime=600 --time_based
sleep 3
t=$(now)
echo "$qpn" > "$pool/qp_error" || fail "cannot write $qpn to ${pool##*/}/qp_error"
log "QP $qpn of ${pool##*/} in the error state"
wait_for 30 reconnected "$rc0" || bad+=" no-reconnect"
wait_for 30 srp_rport_running "$RPORT" || bad+=" rport-$(cat "$RPORT/state")"
log "reconnected and running after $(since "$t") s: $(($(srp_reconnects) - rc0)) reconnect(s)"
sleep 3
fio_running qp-error || bad+=" fio-ended-early"
fio_wait qp-error stop || bad+=" fio-qp-error"
log "ioerr_cnt +$(($(scsi_ioerr "$DISK") - e0)) in this phase"
srp_reconnect_errs_allow "$DISK" "$e0" $(($(srp_reconnects) - rc0))
# The reconnect made new QPs, attached to new pools.  Pool ids and QP
# numbers may come again; debugfs inode numbers do not.
mapfile -t pools < <(srp_pools)
log "QPs of ib_srp's pools before the QP error: $qps0; after:" \
	"$(pool_qps "${pools[@]}" | tr '\n' ' ')(pools ${pools[*]##*/})"
for p in "${pools[@]}"; do
	[[ $ino0 == *" $(stat -c %i "$p") "* ]] && bad+=" pool-${p##*/}-kept-over-the-reconnect"
done
dd_same "$DISK" 512 /tmp/before.bin || bad+=" data-after-qp-error"

step "fault injection on get: 10% of the gets fail"
rc1=$(srp_reconnects)
e0=$(scsi_ioerr "$DISK")
[ ${#pools[@]} -gt 0 ] || fail "no ib_slot pool of ib_srp after the reconnect"
fail_get 10 || fail "cannot set fail_get of ib_srp's pools"
fio_start fail-get --name=fail-get --filename="$DISK" --size=64m "${FIO_VERIFY[@]}" \
	--runtime="$FIO_RT" --time_based
wait_for $((FIO_RT + 60)) fio_done fail-get || {
	echo w > /proc/sysrq-trigger
	fail "fio with fail_get still running $((FIO_RT + 60)) s later"
}
fail_get 0 || bad+=" fail_get-off"
fio_wait fail-get || bad+=" fio-fail-get"
ex=0
for p in $(srp_pools); do
	ex=$((ex + $(slot_stat "$p" exhausted)))
done
log "exhausted gets: $ex; reconnects meanwhile: $(($(srp_reconnects) - rc1));" \
	"ioerr_cnt +$(($(scsi_ioerr "$DISK") - e0))"
[ "$ex" -gt 0 ] || bad+=" no-exhausted-get"
[ "$(srp_reconnects)" = "$rc1" ] || bad+=" reconnect-under-fail_get"
fio_run after --name=after --filename="$DISK" --size=64m "${FIO_VERIFY[@]}" \
	--runtime=3 --time_based || bad+=" fio-after"
dd_same "$DISK" 512 /tmp/before.bin || bad+=" data-end"

step "checks"
srp_finish "$DISK"
