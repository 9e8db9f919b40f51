#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Guest test: rping over RDMA/CM, server and client on rxe0, 10 verified
# round trips.
. "${0%/*}/lib.sh"
COUNT=10

step "rxe0 on $NETDEV"
rxe_setup || fail "rxe setup"

step "rping -C $COUNT -V"
timeout 60 rping -s -a "$IP" -C $COUNT -V -v > /tmp/rping-s.log 2>&1 &
srv=$!
wait_for 10 rdma_cm_listening || { cat /tmp/rping-s.log; fail "rping server is not listening"; }
t=$(now)
timeout 60 rping -c -a "$IP" -C $COUNT -V -v > /tmp/rping-c.log 2>&1
crc=$?
wait $srv
src=$?
log "rping: $(since "$t") s, client status $crc, server status $src"
head -n 2 /tmp/rping-c.log; echo ...; tail -n 1 /tmp/rping-c.log
save /tmp/rping-s.log /tmp/rping-c.log
n=$(grep -c 'ping data:' /tmp/rping-c.log)
[ $crc = 0 ] || { cat /tmp/rping-s.log; fail "rping client exit status $crc"; }
[ $src = 0 ] || { cat /tmp/rping-s.log; fail "rping server exit status $src"; }
[ "$n" = $COUNT ] || fail "client saw $n of $COUNT pings"

step teardown
timed "rxe teardown" rxe_teardown || fail "rxe teardown"
pass
