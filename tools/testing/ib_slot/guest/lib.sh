# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
# Functions for the guest tests, sourced by each guest/<name>.sh.  Sourced, not
# run.
#
# A test ends with exactly one line
#   RESULT <name> PASS
#   RESULT <name> FAIL <reason>
# printed by pass or fail; a test that exits any other way gets a FAIL line
# from the EXIT trap.  pass also fails the test when the kernel log shows a
# warning, BUG, lockdep report or similar (unless IB_SLOT_ALLOW_SPLAT=1,
# which run.sh -a IB_SLOT_ALLOW_SPLAT=1 sets).
#
# Network: one soft-RoCE device rxe0 on dummy0 (CONFIG_DUMMY=y creates it at
# boot), address $IP; servers and clients of a test loop back through it.

TEST=${TEST:-$(basename "$0" .sh)}
IP=192.168.78.1
NETDEV=dummy0
IBDEV=rxe0
MTU=${IB_SLOT_MTU:-1500}	# of $NETDEV; 9000 gives RoCE MTU 4096
OUT=/run/out		# written files end up on the host (run.sh -o)

# Time stamps in microseconds, from bash itself: starting programs is slow
# under TCG, so the functions here avoid it where they can.
now() { echo "${EPOCHREALTIME/./}"; }
since() { local d=$(( ${EPOCHREALTIME/./} - $1 )); printf '%d.%d' $((d / 1000000)) $((d / 100000 % 10)); }
T_START=$(now)
log() { local t _; read -r t _ < /proc/uptime; echo "[$TEST +${t}s] $*"; }
step() { echo; log "=== $* ==="; }

# timed <label> <command...>: run a command and log how long it took.
timed() {
	local label=$1 t rc
	shift
	t=$(now)
	"$@"
	rc=$?
	log "$label: $(since "$t") s (status $rc)"
	return $rc
}

# wait_for <seconds> <command...>: poll (every 0.2 s) until the command succeeds.
wait_for() {
	local end=$(( $(date +%s) + $1 ))
	shift
	until "$@"; do
		[ "$(date +%s)" -lt $end ] || return 1
		sleep 0.2
	done
}

_result=
_result() {
	[ -z "$_result" ] || return 0
	_result=$1
	log "total $(since "$T_START") s"
	echo "RESULT $TEST $*"
}
_on_exit() {
	local rc=$?
	[ -n "$_result" ] || _result "FAIL exited with status $rc before a result"
}
trap _on_exit EXIT

# Kernel log lines that make any test fail.
SPLAT_RE='WARNING:|BUG:|Oops|general protection fault|UBSAN:|suspected memory leak|possible (circular|recursive) locking|inconsistent lock state|suspicious RCU usage|blocked for more than|Call Trace:'

fail() {
	_result "FAIL ${*:-unspecified}"
	exit 1
}

pass() {
	local s
	if [ "${IB_SLOT_ALLOW_SPLAT:-0}" != 1 ]; then
		s=$(dmesg | grep -E -m 1 "$SPLAT_RE")
		if [ -n "$s" ]; then
			dmesg | grep -E -B 5 -A 30 -m 1 "$SPLAT_RE"
			fail "kernel log: ${s#\[*\] }"
		fi
	fi
	_result PASS
	exit 0
}

# rxe_setup: load the RDMA stack, put $IP on $NETDEV and rxe0 on top of it,
# and wait until its port is active.
rxe_setup() {
	local t
	t=$(now)
	modprobe rdma_rxe && modprobe ib_uverbs && modprobe rdma_ucm || return 1
	ip addr add "$IP/24" dev "$NETDEV" && ip link set "$NETDEV" mtu "$MTU" up || return 1
	rdma link add "$IBDEV" type rxe netdev "$NETDEV" || return 1
	wait_for 10 port_active || { ibv_devinfo -d "$IBDEV"; return 1; }
	log "rxe: $IBDEV on $NETDEV ($IP) active after $(since "$t") s"
}

port_active() {
	local s
	read -r s < "/sys/class/infiniband/$IBDEV/ports/1/state" 2>/dev/null && [ "$s" = "4: ACTIVE" ]
}

# rxe_teardown: remove rxe0 and unload the RDMA stack.  Leaked objects make
# this hang or fail, so the time limits are generous but finite.
rxe_teardown() {
	timeout 60 rdma link delete "$IBDEV" || { echo "rdma link delete $IBDEV failed"; return 1; }
	unload rdma_ucm rdma_rxe ib_uverbs rdma_cm iw_cm ib_cm ib_core
}

# unload <module>...: remove those of the modules that are loaded, in the
# order given (users first), with one rmmod.
unload() {
	local m mods=()
	for m in "$@"; do
		[ -e "/sys/module/$m/initstate" ] && mods+=("$m")
	done
	[ ${#mods[@]} = 0 ] && return 0
	timeout 60 rmmod "${mods[@]}" || { lsmod; echo "cannot unload all of: ${mods[*]}"; return 1; }
}

# rdma_cm_listening: some RDMA/CM id is listening (rdma_cm is loaded).
rdma_cm_listening() {
	rdma resource show cm_id 2>/dev/null | grep -q 'state LISTEN'
}

# mount_of <dir>: the /proc/mounts line of the file system mounted on <dir>.
mount_of() {
	local dev dir rest line=
	while read -r dev dir rest; do
		[ "$dir" = "$1" ] && line="$dev $dir $rest"
	done < /proc/mounts
	[ -n "$line" ] && echo "$line"
}

# Save a file for the host (run.sh -o directory).
save() { [ -d "$OUT" ] && cp "$@" "$OUT"/ 2>/dev/null; }
