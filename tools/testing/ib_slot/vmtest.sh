#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Run guest tests, each in a fresh VM (vm/run.sh), and print one line per
# test:
#   PASS vm/<name> (<secs>s)
#   FAIL vm/<name> (<secs>s) see <log>
# then "vmtest: N passed, N failed".  The exit status is 1 if any failed.
#
# usage: vmtest.sh [name...]
#   name: a guest/<name>.sh test; default: all of them, rxe-up rping nfs-rdma
#   srp first, then the others in alphabetical order.  Tests named ulp-*
#   first get a "build/ulp" step that builds the example ULP they load.
# env: LOGDIR     where <name>.log (console) and <name>.out/ (the guest's
#                 /run/out) go; default: a new directory under ${TMPDIR:-/tmp}
#      VM_TIMEOUT per-test limit in seconds (default 300)
#      VM_ARGS    more kernel arguments for every VM, space separated
#                 (e.g. IB_SLOT_ALLOW_SPLAT=1)
set -u
. "$(dirname "$0")/lib.sh"

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

passed=0 failed=0
# The ulp-* tests load the example ULP (ulp/): build it first, counted as a
# test that fails on any warning (W=1) or checkpatch complaint.
for n in "${names[@]}"; do
	case $n in ulp-*) ;; *) continue ;; esac
	t0=$(now)
	o=$(build_ext tools/testing/ib_slot/ulp 2>&1 >/dev/null)
	rc=$?
	grep -q 'warning:' <<<"$o" && rc=1
	o+=$("$SRC/scripts/checkpatch.pl" --strict -q -f "$TOOLS"/ulp/*.c 2>&1) || rc=1
	secs=$(printf '%.0f' "$(echo "$(now) - $t0" | bc)")
	if [ $rc = 0 ]; then
		echo "PASS build/ulp (${secs}s)"
		passed=$((passed + 1))
	else
		echo "FAIL build/ulp (${secs}s)"
		echo "$o" | tail -20
		failed=$((failed + 1))
	fi
	break
done
for n in "${names[@]}"; do
	n=${n%.sh}
	log=$LOGDIR/$n.log
	rm -rf "$LOGDIR/$n.out"
	t0=$(now)
	"$TOOLS/vm/run.sh" -t "${VM_TIMEOUT:-300}" -o "$LOGDIR/$n.out" ${kargs[@]+"${kargs[@]}"} \
		"$GUEST/$n.sh" > "$log" 2>&1 < /dev/null
	rc=$?
	secs=$(printf '%.0f' "$(echo "$(now) - $t0" | bc)")
	if [ $rc = 0 ] && tr -d '\r' < "$log" | grep -q -x "RESULT $n PASS"; then
		echo "PASS vm/$n (${secs}s)"
		passed=$((passed + 1))
	else
		echo "FAIL vm/$n (${secs}s) see $log"
		failed=$((failed + 1))
	fi
done
echo "vmtest: $passed passed, $failed failed"
[ $failed = 0 ]
