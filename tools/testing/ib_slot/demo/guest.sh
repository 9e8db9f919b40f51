#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Guest side of "make run": bring up soft-RoCE, show the device, move data
# over RDMA/CM and RDMA WRITE, and show ib_core with ib_slot loaded.
TEST=demo
. "$(dirname "$0")/../guest/lib.sh"

step "soft-RoCE: rdma link add rxe0 type rxe netdev $NETDEV"
rxe_setup || fail "rxe setup"
rdma link show
ibv_devinfo -d "$IBDEV" | grep -E 'hca_id|transport|state|active_mtu|link_layer'

step "rping over RDMA/CM: 5 verified round trips"
timeout 60 rping -s -a "$IP" -C 5 -V > /tmp/rping-s.log 2>&1 &
srv=$!
wait_for 10 rdma_cm_listening || fail "rping server is not listening"
timeout 60 rping -c -a "$IP" -C 5 -V -v | sed 's/^/  /'
wait $srv || fail "rping server failed"

step "RDMA WRITE bandwidth (ib_write_bw, 64 KiB, 2 s, over RDMA/CM)"
timeout 60 ib_write_bw -d "$IBDEV" -R -s 65536 -D 2 > /tmp/bw-s.log 2>&1 &
srv=$!
sleep 1
timeout 60 ib_write_bw -d "$IBDEV" -R -s 65536 -D 2 "$IP" 2>&1 | grep -A1 -E '#bytes' | sed 's/^/  /'
wait $srv

step "ib_slot in ib_core"
grep -E ' ib_slot_(pool_create|get|put|post)$' /proc/kallsyms | sed 's/^/  /'
ls /sys/kernel/debug/ib_slot/ 2>/dev/null && echo "  (one file per pool: none until a ULP creates one)"
rdma resource show | sed 's/^/  /'

step teardown
rxe_teardown || fail "rxe teardown"
pass
