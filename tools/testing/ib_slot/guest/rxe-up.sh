#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Guest test: rxe0 comes up on dummy0, its port is active, it has a RoCE v2
# GID for its IPv4 address, and it goes away cleanly again.
. "${0%/*}/lib.sh"

step "rxe0 on $NETDEV"
rxe_setup || fail "rxe setup"
rdma link show
ibv_devices
ibv_devinfo -d "$IBDEV" | tee /tmp/devinfo.txt
grep -q 'state:[[:space:]]*PORT_ACTIVE' /tmp/devinfo.txt || fail "port not PORT_ACTIVE"
grep -q 'link_layer:[[:space:]]*Ethernet' /tmp/devinfo.txt || fail "link layer is not Ethernet"
rdma link show "$IBDEV/1" | grep -q 'state ACTIVE' || fail "rdma link shows the port not ACTIVE"

# RoCE v2 GID of the IPv4 address (::ffff:192.168.78.1)
IFS=. read -r a b c d <<< "$IP"
gid=$(printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' "$a" "$b" "$c" "$d")
found=
port=/sys/class/infiniband/$IBDEV/ports/1
for i in $(seq 0 15); do	# builtins only: the table has 1024 entries
	read -r g < "$port/gids/$i" 2>/dev/null || continue
	[ "$g" = "$gid" ] || continue
	read -r type < "$port/gid_attrs/types/$i" 2>/dev/null || continue
	[ "$type" = "RoCE v2" ] && { found=$i; break; }
done
[ -n "$found" ] || fail "no RoCE v2 GID $gid"
log "RoCE v2 GID $gid at index $found"

step teardown
timed "rxe teardown" rxe_teardown || fail "rxe teardown"
[ -e "/sys/class/infiniband/$IBDEV" ] && fail "$IBDEV still registered after teardown"
pass
