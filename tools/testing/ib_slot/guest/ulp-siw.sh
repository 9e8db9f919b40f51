#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Guest test: the example ULP's data round trip on soft-iWARP (siw0).
# iWARP needs the sink of an RDMA READ registered for remote write, so the
# server's READs go through the slot's MR (its next registration
# invalidates it first), where on rxe (ulp-traffic) they take the
# direct-SGE path.
. "${0%/*}/lib.sh"
. "${0%/*}/../ulp/guest.sh"
CONNS=2 DEPTH=8 SLOTS=4 REQS=200

step "siw0 on $SIW_NETDEV"
modprobe ib_core && siw_setup || fail "siw setup"
rdma link show

step "example ULP on $SIWDEV: $CONNS connections x $DEPTH in flight, $SLOTS server slots"
ulp_run 50 addr="$SIW_IP" nr_conns=$CONNS depth=$DEPTH pool_size=$SLOTS nr_reqs=$REQS

step "checks"
check_eq "device" "$(ex_stat device)" $SIWDEV
check_eq "requests verified" "$(ex_stat client_verified)" $((CONNS * REQS))
check_eq "bad or aborted" $(($(ex_stat client_bad) + $(ex_stat client_aborted) + $(ex_stat server_bad))) 0
check_eq "READ sinks on the direct-SGE path on iWARP" "$(ex_stat server_read_sge)" 0
[ "$(ex_stat server_read_mr)" -gt 0 ] || fail "no RDMA READ took the MR path"
# A sink stays registered after its READ: each later registration of
# it, all but the first of each slot's, invalidates it first.
inv=$(ex_stat local_inv "$(pool_files server)")
mr=$(ex_stat server_read_mr)
[ "$inv" -ge $((mr - SLOTS)) ] && [ "$inv" -lt "$mr" ] ||
	fail "server LOCAL_INV $inv for $mr READ sinks on $SLOTS slots"
log "READ sink: $(ex_stat server_read_mr) MR, $(ex_stat server_read_sge) direct SGE;" \
	"server LOCAL_INV $(ex_stat local_inv "$(pool_files server)")"
ulp_check_balances

step teardown
timed "rmmod ib_slot_example" ulp_unload || fail "rmmod"
timed "siw teardown" siw_teardown || fail "siw teardown"
unload rdma_cm iw_cm ib_cm ib_uverbs ib_core || fail "unload"
pass
