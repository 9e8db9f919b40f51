# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
# Guest functions for the example ULP, ib_slot_example.ko: sourced after
# guest/lib.sh by the guest/ulp-*.sh tests and by demo/guest.sh.  Sourced,
# not run.
#
# vmtest.sh and run.sh build the module with build_ext (../lib.sh) into
# <base>/ext-<flavour>/ulp, next to the kernel's modules in
# <base>/mod-<flavour>, which run.sh passes to the guest as IB_SLOT_MODDIR.
#
# Every figure comes from debugfs: the module's counters in $EX/stats and
# each pool's stats in $POOLS/<pool>/stats (ex-server-<id>, ex-client-<id>).

ULP_KO=${IB_SLOT_MODDIR%/mod-*}/ext-${IB_SLOT_MODDIR##*/mod-}/ulp/ib_slot_example.ko
EX=/sys/kernel/debug/ib_slot_example
POOLS=/sys/kernel/debug/ib_slot
SIW_NETDEV=dummy1
SIW_IP=192.168.79.1
SIWDEV=siw0

# ulp_load <param=value>...: load the example ULP; it connects at once.
ulp_load() {
	[ -f "$ULP_KO" ] || { echo "no $ULP_KO: build it with build_ext"; return 1; }
	modprobe rdma_cm && insmod "$ULP_KO" "$@"
}

ulp_unload() { timeout 60 rmmod ib_slot_example; }

# ex_stat <name> [file]: the value of the "<name>: <value>" line of the
# module's stats, or of a pool's file.
ex_stat() { stat_field "${2:-$EX/stats}" "$1"; }

ex_state_is() { [ "$(ex_stat state)" = "$1" ]; }

# pool_files <server|client>: the debugfs stats files of the ULP's pools.
pool_files() {
	local f
	for f in "$POOLS"/ex-"$1"-*/stats; do
		[ -e "$f" ] && echo "$f"
	done
}

# pools_idle: every pool of the ULP has all its slots and credits back and
# no waiter.
pools_idle() {
	local f k rest
	for f in $(pool_files server) $(pool_files client); do
		while read -r k rest; do
			case "$k $rest" in
			"in_use: 0"|"waiters: 0"|"misuse: 0") ;;
			in_use:*|waiters:*|misuse:*) return 1 ;;
			qp\ *) [[ $rest == *": slots 0 credits_out 0/"* ]] || return 1 ;;
			esac
		done < "$f"
	done
}

# ulp_run_done <secs>: wait until every client finished its requests and
# every slot is back.
ulp_run_done() {
	wait_for "$1" ex_state_is "done" || { cat "$EX/stats"; ulp_diag; return 1; }
	wait_for 10 pools_idle || { cat "$EX/stats"; show_pools; ulp_diag; return 1; }
}

# ulp_run <secs> <param=value>...: load the ULP, wait (at most <secs>) until
# its clients are done and every slot is back, and show what it counted.
ulp_run() {
	local secs=$1 t
	shift
	t=$(now)
	ulp_load "$@" || fail "insmod ib_slot_example $*"
	ulp_run_done "$secs" || fail "the run did not finish"
	log "run done in $(since "$t") s"
	cat "$EX/stats"
	show_pools
}

verified_over() { [ "$(ex_stat client_verified)" -ge "$1" ]; }

# ulp_traffic <n>: wait until <n> requests were verified (the run is on).
ulp_traffic() {
	wait_for 30 verified_over "$1" || { cat "$EX/stats"; fail "no traffic"; }
}

# ulp_diag: the kernel's and the devices' view of a failed run.
ulp_diag() {
	dmesg | grep ib_slot_example
	rdma statistic show 2>/dev/null
}

show_pools() {
	local f
	for f in $(pool_files server) $(pool_files client); do
		echo "--- $f"
		cat "$f"
	done
}

# sum_pools <client|server> <name>: a field summed over those pools.
sum_pools() {
	local f v n=0
	for f in $(pool_files "$1"); do
		v=$(ex_stat "$2" "$f") && n=$((n + v))
	done
	echo $n
}

# check_eq <what> <a> <b>: log "what: a = b", fail the test otherwise.
check_eq() {
	if [ "$2" = "$3" ]; then
		log "$1: $2 = $3"
	else
		cat "$EX/stats"
		fail "$1: $2 != $3"
	fi
}

# ulp_check_balances: what was taken came back and every post completed
# once, from the module's counters, and the pools agree with them.  Run it
# while the pools still exist.
ulp_check_balances() {
	local s=$EX/stats sp
	check_eq "client slots got/put" "$(ex_stat client_gets)" "$(ex_stat client_puts)"
	check_eq "client posts/done() calls" "$(ex_stat client_posts)" "$(ex_stat client_dones)"
	check_eq "client fences/fenced() calls" "$(ex_stat client_fences)" "$(ex_stat client_fenced)"
	check_eq "client puts = verified + bad + aborted" "$(ex_stat client_puts)" \
		$(($(ex_stat client_verified) + $(ex_stat client_bad) + $(ex_stat client_aborted)))
	check_eq "server slots (got at once + resumed)/put" \
		$(($(ex_stat server_gets) + $(ex_stat server_resumed))) "$(ex_stat server_puts)"
	check_eq "server posts/done() calls" "$(ex_stat server_posts)" "$(ex_stat server_dones)"
	check_eq "server waits = resumed + cancelled + shut down" "$(ex_stat server_waits)" \
		$(($(ex_stat server_resumed) + $(ex_stat server_cancelled) + $(ex_stat server_shutdown)))
	check_eq "FIFO inversions" "$(ex_stat server_fifo_inversions)" 0
	if [ -n "$(pool_files server)" ]; then
		sp=$(pool_files server)
		check_eq "server pool waits (debugfs) / module waits" "$(ex_stat waits "$sp")" "$(ex_stat server_waits)"
		check_eq "server pool misuse" "$(ex_stat misuse "$sp")" 0
		check_eq "client pools misuse" "$(sum_pools client misuse)" 0
		pools_idle || { show_pools; fail "a pool still has slots, credits or waiters out"; }
		log "pools idle: in_use 0, waiters 0, every QP's credits_out 0"
	fi
	[ -f "$s" ]
}

# check_one_cut_short <reqs>: after one QP's error, every client but one
# verified all its <reqs> requests.
check_one_cut_short() {
	local side idx v full=0 short=0
	while read -r side idx _ _ _ _ _ _ _ v; do
		[ "$side" = client ] || continue
		if [ "$v" = "$1" ]; then full=$((full + 1)); else short=$((short + 1)); fi
	done < "$EX/stats"
	check_eq "clients with every request verified" $full $((CONNS - 1))
	check_eq "clients cut short" $short 1
}

# siw_setup: soft-iWARP siw0 on its own dummy netdev, so that RDMA/CM maps
# $SIW_IP to siw0 and $IP to rxe0.
siw_setup() {
	modprobe siw || return 1
	# The TCP connections to our own address go through lo.
	ip -force -batch - <<-EOF 2>/dev/null
	link set lo up
	link add $SIW_NETDEV type dummy
	EOF
	ip -batch - <<-EOF || return 1
	addr add $SIW_IP/24 dev $SIW_NETDEV
	link set $SIW_NETDEV up
	EOF
	rdma link add "$SIWDEV" type siw netdev "$SIW_NETDEV" || return 1
	wait_for 10 siw_active || { rdma link show; return 1; }
	log "siw: $SIWDEV on $SIW_NETDEV ($SIW_IP) active"
}

siw_active() {
	local s
	read -r s < "/sys/class/infiniband/$SIWDEV/ports/1/state" 2>/dev/null && [ "$s" = "4: ACTIVE" ]
}

siw_teardown() {
	timeout 60 rdma link delete "$SIWDEV" || return 1
	unload siw
}
