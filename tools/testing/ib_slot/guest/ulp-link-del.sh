#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Guest test: "rdma link delete rxe0" while the example ULP runs with
# commands waiting for slots.  The ULP's ib_client tears down on removal:
# the delete returns, every post completed once, every slot came back
# (the module's counters; the pools are gone with the device), and the
# module and the RDMA stack unload.
. "${0%/*}/lib.sh"
. "${0%/*}/../ulp/guest.sh"

step "rxe0 on $NETDEV"
rxe_setup || fail "rxe setup"

step "example ULP, then rdma link delete $IBDEV under load"
ulp_load addr="$IP" nr_conns=4 depth=8 pool_size=4 nr_reqs=0 duration_ms=120000 || fail "insmod"
ulp_traffic 100
log "$(ex_stat client_verified) verified, $(ex_stat waiters "$(pool_files server)") waiters queued"
timed "rdma link delete $IBDEV" timeout 30 rdma link delete "$IBDEV" || fail "rdma link delete"
cat "$EX/stats"

step "checks"
check_eq "state" "$(ex_stat state)" removed
check_eq "pools left in debugfs" "$(ls "$POOLS" | grep -c '^ex-')" 0
check_eq "bad requests" $(($(ex_stat client_bad) + $(ex_stat server_bad))) 0
log "verified $(ex_stat client_verified), aborted $(ex_stat client_aborted)," \
	"server posts flushed $(ex_stat server_done_errors), waiters cancelled $(ex_stat server_cancelled)"
ulp_check_balances
[ -e "/sys/class/infiniband/$IBDEV" ] && fail "$IBDEV still registered"

step teardown
timed "rmmod ib_slot_example" ulp_unload || fail "rmmod"
timed "unload the RDMA stack" unload rdma_ucm rdma_rxe ib_uverbs rdma_cm iw_cm ib_cm ib_core ||
	fail "unload"
pass
