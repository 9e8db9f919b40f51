#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Run guest tests, each in a fresh VM (vm/run.sh), and print one line per
# test:
#   PASS vm/<name> (<secs> s; log <log>)
#   FAIL vm/<name> (<secs> s; log <log>)
# then "vmtest: N passed, N failed".  The exit status is 1 if any failed.
#
# usage: vmtest.sh [name...]
#   name: a guest/<name>.sh test; default: all of them, rxe-up rping nfs-rdma
#   srp first, then the others in alphabetical order.  Tests named ulp-*
#   first get a "build/ulp" step that builds the example ULP they load.
# env: LOGDIR     where <name>.log (console) and <name>.out/ (the guest's
#                 /run/out) go; default: a new directory under ${TMPDIR:-/tmp}
#      VM_TIMEOUT per-test limit in seconds (default 300; 1800 for DEBUG=1,
#                 whose KASAN guests run about three times slower)
#      VM_ARGS    more kernel arguments for every VM, space separated
#                 (e.g. IB_SLOT_ALLOW_SPLAT=1)
#      JOBS       VMs run side by side (default: the host's CPUs); the
#                 lines still come in the order of the tests
# A VM shares nothing with another: its RDMA devices and addresses live on
# its own dummy netdev, its root is the host's, read-only, and it writes
# only its own output folder.
set -u
. "$(dirname "$0")/lib.sh"
guest_visible

GUEST=$TOOLS/guest
FIRST=(rxe-up rping nfs-rdma srp)

if [ $# -gt 0 ]; then
	names=("$@")
else
	names=()
	for n in "${FIRST[@]}"; do
		[ -f "$GUEST/$n.sh" ] && names+=("$n")
	done
	for f in "$GUEST"/*.sh; do
		n=$(basename "$f" .sh)
		[ "$n" = lib ] && continue
		case " ${FIRST[*]} " in *" $n "*) continue ;; esac
		names+=("$n")
	done
fi
for n in "${names[@]}"; do
	n=${n%.sh}
	if [ "$n" = lib ] || [ ! -f "$GUEST/$n.sh" ]; then die "no guest test $GUEST/$n.sh"; fi
done

[ -f "$KERNEL" ] || die "no kernel at $KERNEL (run build.sh)"
if [ -n "${LOGDIR:-}" ]; then
	mkdir -p "$LOGDIR" || die "cannot create $LOGDIR"
	LOGDIR=$(cd "$LOGDIR" && pwd)
else
	LOGDIR=$(mktemp -d "${TMPDIR:-/tmp}/ib-slot-vmtest.XXXXXX")
fi
say "logs in $LOGDIR"

kargs=()
for a in ${VM_ARGS:-}; do kargs+=(-a "$a"); done

# The ulp-* tests load the example ULP (ulp/): build it first, counted as a
# test.
for n in "${names[@]}"; do
	case $n in ulp-*) ;; *) continue ;; esac
	t0=$(now)
	check_ext tools/testing/ib_slot/ulp
	verdict $? build/ulp "$(since "$t0") s"
	break
done
vm_timeout=${VM_TIMEOUT:-$([ "$FLAVOUR" = debug ] && echo 1800 || echo 300)}
# run_one <name>: one test in a fresh VM; leaves "<status> <seconds>" in
# <name>.rc for the loop below.
run_one() {
	local n=$1 t0 rc try
	t0=$(now)
	for try in 1 2; do
		rm -rf "$LOGDIR/$n.out"
		"$TOOLS/vm/run.sh" -t "$vm_timeout" -o "$LOGDIR/$n.out" ${kargs[@]+"${kargs[@]}"} \
			"$GUEST/$n.sh" > "$LOGDIR/$n.log" 2>&1 < /dev/null
		rc=$?
		# The guest hung before its script started: nothing was
		# tested, so boot it once more; the hung console is kept.
		[ $rc = 75 ] && [ $try = 1 ] || break
		mv "$LOGDIR/$n.log" "$LOGDIR/$n.boot-hang.log"
	done
	[ $rc = 0 ] && tr -d '\r' < "$LOGDIR/$n.log" | grep -q -x "RESULT $n PASS"
	echo "$? $(since "$t0")" > "$LOGDIR/$n.rc"
}

# Start up to JOBS tests; as each ends, report every test, in order, whose
# result is in.
jobs=${JOBS:-$(nproc)}
[ "$jobs" -ge 1 ] 2>/dev/null || jobs=1
next=0 shown=0 running=0
for n in "${names[@]}"; do rm -f "$LOGDIR/${n%.sh}.rc"; done
while [ $shown -lt ${#names[@]} ]; do
	while [ $running -lt "$jobs" ] && [ $next -lt ${#names[@]} ]; do
		run_one "${names[$next]%.sh}" &
		next=$((next + 1)) running=$((running + 1))
	done
	wait -n
	running=$((running - 1))
	while [ $shown -lt ${#names[@]} ]; do
		n=${names[$shown]%.sh}
		# Nothing runs and no result: its runner died.
		[ $running -gt 0 ] || [ $shown -ge $next ] || [ -f "$LOGDIR/$n.rc" ] ||
			echo "1 0" > "$LOGDIR/$n.rc"
		[ -f "$LOGDIR/$n.rc" ] || break
		read -r rc secs < "$LOGDIR/$n.rc"
		verdict "$rc" "vm/$n" "$secs s; log $LOGDIR/$n.log"
		shown=$((shown + 1))
	done
done
echo "vmtest: $PASSED passed, $FAILED failed"
[ $FAILED = 0 ]
