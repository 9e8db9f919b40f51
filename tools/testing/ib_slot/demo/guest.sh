#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Guest side of "make run": bring up soft-RoCE, show the device, move data
# over RDMA/CM and RC verbs, and show ib_core with ib_slot loaded.
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

step "ibv_rc_pingpong: 100 RC SEND/RECV round trips of 4 KiB"
gid=$(for i in /sys/class/infiniband/$IBDEV/ports/1/gids/*; do
	case $(cat "$i") in 0000:0000:0000:0000:0000:ffff:*) basename "$i"; break ;; esac
      done)
timeout 60 ibv_rc_pingpong -d "$IBDEV" -g "${gid:-1}" -n 100 -s 4096 > /tmp/pp-s.log 2>&1 &
srv=$!
sleep 1
timeout 60 ibv_rc_pingpong -d "$IBDEV" -g "${gid:-1}" -n 100 -s 4096 localhost 2>&1 |
	grep -E 'bytes in|iters in' | sed 's/^/  /'
wait $srv || fail "ibv_rc_pingpong server failed"

step "ib_slot in ib_core"
grep -E ' ib_slot_(pool_create|get|put|post)[[:space:]]' /proc/kallsyms |
	awk '{ print "  " $3 " " $4 }'
ls /sys/kernel/debug/ib_slot/ 2>/dev/null && echo "  (one file per pool: none until a ULP creates one)"
rdma resource show | sed 's/^/  /'

step teardown
rxe_teardown || fail "rxe teardown"
pass
