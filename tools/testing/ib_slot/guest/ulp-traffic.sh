#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Guest test: the example ULP (ib_slot_example.ko) moves verified data over
# rxe0 with a server pool large enough for the offered load: every request
# verified, no waiter, every slot and credit back, one done() per post, and
# the RDMA READ sink on the direct-SGE path (rxe is not iWARP).
. "${0%/*}/lib.sh"
. "${0%/*}/../ulp/guest.sh"
CONNS=4 DEPTH=8 REQS=150

step "rxe0 on $NETDEV"
rxe_setup || fail "rxe setup"

# A slot for every command the server can hold (4 * depth a connection).
SLOTS=$((CONNS * 4 * DEPTH))

step "example ULP: $CONNS connections x $DEPTH in flight, server pool of $SLOTS slots"
ulp_run 40 addr="$IP" nr_conns=$CONNS depth=$DEPTH pool_size=$SLOTS nr_reqs=$REQS
rdma statistic show link "$IBDEV/1"

step "checks"
check_eq "requests verified" "$(ex_stat client_verified)" $((CONNS * REQS))
check_eq "bad or aborted" $(($(ex_stat client_bad) + $(ex_stat client_aborted) + $(ex_stat server_bad))) 0
check_eq "server waits (pool never short)" "$(ex_stat server_waits)" 0
check_eq "READ sinks through an MR on rxe" "$(ex_stat server_read_mr)" 0
[ "$(ex_stat server_read_sge)" -gt 0 ] || fail "no RDMA READ took the direct-SGE path"
log "READ sink: $(ex_stat server_read_sge) direct SGE, $(ex_stat server_read_mr) MR"
check_eq "rkeys invalidated by the server's SEND_WITH_INV" "$(sum_pools client remote_inv)" $((CONNS * REQS))
ulp_check_balances

step teardown
timed "rmmod ib_slot_example" ulp_unload || fail "rmmod"
timed "rxe teardown" rxe_teardown || fail "rxe teardown"
pass
