#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Guest test: a back-pressure pool much smaller than the offered load.  Four
# clients keep 16 requests each in flight against 4 server slots: commands
# wait in the pool's FIFO and resume in order, nothing fails, every request
# is verified, every slot and credit comes back.
. "${0%/*}/lib.sh"
. "${0%/*}/../ulp/guest.sh"
CONNS=4 DEPTH=16 SLOTS=4 REQS=100

step "rxe0 on $NETDEV"
rxe_setup || fail "rxe setup"

step "example ULP: $((CONNS * DEPTH)) requests offered to $SLOTS server slots"
ulp_run 50 addr="$IP" nr_conns=$CONNS depth=$DEPTH pool_size=$SLOTS nr_reqs=$REQS

step "checks"
sp=$(pool_files server)
check_eq "requests verified" "$(ex_stat client_verified)" $((CONNS * REQS))
check_eq "bad, aborted or failed posts" $(($(ex_stat client_bad) + $(ex_stat client_aborted) + \
	$(ex_stat server_bad) + $(ex_stat client_done_errors) + $(ex_stat server_done_errors))) 0
check_eq "server pool high-water mark" "$(ex_stat high_water "$sp")" $SLOTS
w=$(ex_stat server_waits)
[ "$w" -gt 0 ] || fail "no command waited"
[ "$(ex_stat exhausted "$sp")" -gt 0 ] || fail "the pool never ran out"
check_eq "waiters resumed" "$(ex_stat server_resumed)" "$w"
log "waits $w of $(ex_stat server_cmds) commands, exhausted $(ex_stat exhausted "$sp")"
ulp_check_balances

step teardown
timed "rmmod ib_slot_example" ulp_unload || fail "rmmod"
timed "rxe teardown" rxe_teardown || fail "rxe teardown"
pass
