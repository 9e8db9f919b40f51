#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Guest test: one server QP is forced to the error state in mid-flight
# (debugfs qp_error) while commands wait for slots.  Its commands flush or
# are cancelled, its client's requests abort, the other connections finish
# their requests verified, every slot and credit comes back and every post
# gets exactly one done().
. "${0%/*}/lib.sh"
. "${0%/*}/../ulp/guest.sh"
CONNS=4 DEPTH=8 SLOTS=4 REQS=500 VICTIM=1

step "rxe0 on $NETDEV"
rxe_setup || fail "rxe setup"

step "example ULP: $CONNS connections, server QP $VICTIM goes to error"
ulp_load addr="$IP" nr_conns=$CONNS depth=$DEPTH pool_size=$SLOTS nr_reqs=$REQS || fail "insmod"
ulp_traffic 100
echo $VICTIM > "$EX/qp_error" || fail "cannot write qp_error"
log "server QP $VICTIM in error after $(ex_stat client_verified) verified requests," \
	"$(ex_stat waiters "$(pool_files server)") waiters queued"
ulp_run_done 50 || fail "the run did not finish"
cat "$EX/stats"
show_pools

step "checks"
check_eq "forced QP errors" "$(ex_stat qp_errors_forced)" 1
check_eq "bad requests" $(($(ex_stat client_bad) + $(ex_stat server_bad))) 0
check_one_cut_short $REQS
[ "$(ex_stat client_aborted)" -gt 0 ] || [ "$(ex_stat server_done_errors)" -gt 0 ] ||
	fail "the error reached no request"
log "client aborted $(ex_stat client_aborted), server flushed posts $(ex_stat server_done_errors)," \
	"waiters cancelled $(ex_stat server_cancelled), Receives flushed $(ex_stat recv_flushed)"
ulp_check_balances

step teardown
timed "rmmod ib_slot_example" ulp_unload || fail "rmmod"
timed "rxe teardown" rxe_teardown || fail "rxe teardown"
pass
