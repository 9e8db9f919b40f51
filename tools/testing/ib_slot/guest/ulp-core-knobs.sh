#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Guest test: the pool's own test hooks in debugfs, which ULP tests use.
# 1. fail_get (fault injection) on the server's back-pressure pool: gets
#    fail as if it were exhausted although it never is; the commands take
#    the waiting path, every request is verified, nothing is misused.
# 2. qp_error: a server QP named by its number goes to the error state
#    mid-run; its client is cut short, the others finish verified, every
#    slot and credit comes back.
. "${0%/*}/lib.sh"
. "${0%/*}/../ulp/guest.sh"
CONNS=4 DEPTH=8 REQS=400

# server_pool_dir: the debugfs directory of the server's pool.
server_pool_dir() { local f; f=$(pool_files server); echo "${f%/stats}"; }

step "rxe0 on $NETDEV"
rxe_setup || fail "rxe setup"

step "fail_get: 1 in 4 server gets fails, $((CONNS * DEPTH)) slots for $((CONNS * DEPTH)) requests"
ulp_load addr="$IP" nr_conns=$CONNS depth=$DEPTH pool_size=$((CONNS * DEPTH)) nr_reqs=$REQS ||
	fail "insmod"
fi=$(server_pool_dir)/fail_get
[ -d "$fi" ] || fail "no $fi"
echo 0 > "$fi/verbose"
echo -1 > "$fi/times"
echo 25 > "$fi/probability"
ulp_run_done 100 || fail "the run did not finish"
echo 0 > "$fi/probability"
sp=$(pool_files server)
cat "$EX/stats"
show_pools
check_eq "requests verified" "$(ex_stat client_verified)" $((CONNS * REQS))
check_eq "bad, aborted or failed posts" $(($(ex_stat client_bad) + $(ex_stat client_aborted) + \
	$(ex_stat server_bad) + $(ex_stat client_done_errors) + $(ex_stat server_done_errors))) 0
injected=$(ex_stat exhausted "$sp")
[ "$injected" -gt 0 ] || fail "no get was failed by fail_get"
log "server gets failed by injection: $injected of $(ex_stat server_cmds) commands," \
	"waits $(ex_stat server_waits)"
ulp_check_balances
timed "rmmod ib_slot_example" ulp_unload || fail "rmmod"

step "qp_error: one server QP moved to error by its number"
ulp_load addr="$IP" nr_conns=$CONNS depth=$DEPTH pool_size=4 nr_reqs=$REQS || fail "insmod"
ulp_traffic 100
sp=$(pool_files server)
victim=
while read -r k n rest; do
	[ "$k" = qp ] && { victim=${n%:}; break; }
done < "$sp"
[ -n "$victim" ] || fail "no QP in $sp"
echo 999999 > "$(server_pool_dir)/qp_error" 2>/dev/null && fail "qp_error took an unknown QP"
echo "$victim" > "$(server_pool_dir)/qp_error" || fail "cannot write qp_error"
log "server QP $victim in error after $(ex_stat client_verified) verified requests"
ulp_run_done 50 || fail "the run did not finish"
cat "$EX/stats"
show_pools
check_eq "bad requests" $(($(ex_stat client_bad) + $(ex_stat server_bad))) 0
check_one_cut_short $REQS
ulp_check_balances

step teardown
timed "rmmod ib_slot_example" ulp_unload || fail "rmmod"
timed "rxe teardown" rxe_teardown || fail "rxe teardown"
pass
