#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Guest side of "make run": the example ULP (tools/testing/ib_slot/ulp)
# moves verified data over soft-RoCE (rxe) and then soft-iWARP (siw), with
# more requests in flight than its server pool has slots, while this
# script samples the pools' statistics from debugfs four times a second.
# The samples go to /run/out/slots.csv for the host to plot.
TEST=demo
. "${0%/*}/../guest/lib.sh"
. "${0%/*}/../ulp/guest.sh"
CONNS=4 DEPTH=8 SLOTS=8 SECS=5
CSV=$OUT/slots.csv
# The ULP keeps both vCPUs busy: the sampler goes first.
renice -n -20 $$ > /dev/null
BAR='################################################################'

# read_pool <file> <array>: the "key: value" lines of a debugfs file.
read_pool() {
	local -n a=$2
	local k v
	a=()
	while IFS=: read -r k v; do
		[ -n "$k" ] && a["$k"]=${v# }
	done < "$1"
}

# sample <phase> <start>: print one line of statistics and add it to $CSV;
# STATE is the ULP's state.
# Builtins only: every program started costs a good part of the interval
# under TCG.
sample() {
	local -A s c m
	local f d t use=0 size=0
	for f in "$POOLS"/ex-server-*/stats; do
		read_pool "$f" s 2>/dev/null || return 1
	done
	for f in "$POOLS"/ex-client-*/stats; do
		[ -e "$f" ] || continue
		read_pool "$f" c
		use=$((use + c[in_use])) size=$((size + c[size]))
	done
	read_pool "$EX/stats" m
	STATE=${m[state]}
	d=$(( ${EPOCHREALTIME/./} - $2 ))
	printf -v t '%d.%d' $((d / 1000000)) $((d / 100000 % 10))
	printf '  %s %5ss  server slots %-*s %2d/%d  waiting %3d  waits %5d  exhausted %5d | client slots %2d/%d | verified %5d\n' \
		"$1" "$t" "${s[size]}" "${BAR:0:${s[in_use]}}" "${s[in_use]}" "${s[size]}" \
		"${s[waiters]}" "${s[waits]}" "${s[exhausted]}" "$use" "$size" "${m[client_verified]}"
	echo "$1,$t,${s[in_use]},${s[size]},${s[waiters]},$use,$size,${m[client_verified]}" >> "$CSV"
}

# run_ulp <phase> <addr>: load the ULP, sample until its clients are done,
# show what it did and check the balances, unload it.
run_ulp() {
	local t
	step "$1: $CONNS clients x $DEPTH requests in flight, a server pool of $SLOTS slots, ${SECS} s"
	echo "  Each client has a no-exhaust pool of $DEPTH slots (one rkey MR each);"
	echo "  the server's back-pressure pool is shared by its $CONNS QPs, so of the"
	echo "  $((CONNS * DEPTH)) requests offered, $SLOTS run and the rest wait in its FIFO."
	t=$(now)
	ulp_load addr="$2" nr_conns=$CONNS depth=$DEPTH pool_size=$SLOTS \
		nr_reqs=0 duration_ms=$((SECS * 1000)) || fail "insmod on $1"
	while sample "$1" "$t" && [ "$STATE" != done ]; do
		[ $((${EPOCHREALTIME/./} - t)) -lt $(((SECS + 30) * 1000000)) ] ||
			fail "$1: the run did not end"
		read -r -t 0.25 -u "$TICK"	# a pause without starting sleep
	done
	wait_for 10 pools_idle
	sample "$1" "$t"
	echo
	echo "  data: $(ex_stat client_verified) requests of 16 KiB verified," \
		"$(ex_stat client_bad) bad, $(ex_stat client_aborted) aborted"
	echo "  back-pressure: $(ex_stat server_waits) of $(ex_stat server_cmds) commands waited," \
		"all resumed in FIFO order ($(ex_stat server_fifo_inversions) inversions)"
	echo "  RDMA READ sink: $(ex_stat server_read_mr) through the slot's lkey MR," \
		"$(ex_stat server_read_sge) as direct SGEs"
	echo "  rkeys invalidated by the server's SEND_WITH_INV: $(sum_pools client remote_inv)," \
		"by a LOCAL_INV: $(sum_pools client local_inv)"
	echo "  --- $(pool_files server)"
	sed 's/^/  /' "$(pool_files server)"
	ulp_check_balances
	ulp_unload || fail "rmmod"
	log "$1 done in $(since "$t") s"
}

step "soft-RoCE and soft-iWARP on two dummy netdevs"
rxe_setup || fail "rxe setup"
siw_setup || fail "siw setup"
rdma link show | sed 's/^/  /'
echo "phase,t,server_in_use,server_size,waiters,client_in_use,client_size,verified" > "$CSV"
mkfifo /tmp/tick && exec {TICK}<> /tmp/tick	# never written: read -t times out

run_ulp rxe "$IP"
run_ulp siw "$SIW_IP"

step teardown
siw_teardown || fail "siw teardown"
rxe_teardown || fail "rxe teardown"
pass
