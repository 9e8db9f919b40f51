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

# The ulp-* tests load the example ULP (ulp/): build it first, counted as a
# test.
for n in "${names[@]}"; do
	case $n in ulp-*) ;; *) continue ;; esac
	t0=$(now)
	check_ext tools/testing/ib_slot/ulp
	verdict $? build/ulp "$(since "$t0") s"
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
	[ $rc = 0 ] && tr -d '\r' < "$log" | grep -q -x "RESULT $n PASS"
	verdict $? "vm/$n" "$(since "$t0") s; log $log"
done
echo "vmtest: $PASSED passed, $FAILED failed"
[ $FAILED = 0 ]
