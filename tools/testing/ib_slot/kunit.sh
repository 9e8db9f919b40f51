#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Run the KUnit suites of the series in the test kernel under QEMU and parse
# their KTAP output with the kernel's own tools/testing/kunit/kunit.py.
# Prints one line per suite and, last, "kunit: N passed, N failed" counting
# test cases (and the check of expected warnings).
# usage: kunit.sh [suite...]   (default: every suite in kunit/suites)
set -u
. "$(dirname "$0")/lib.sh"

out=${LOGDIR:-$(mktemp -d "${TMPDIR:-/tmp}/ib-slot-kunit.XXXXXX")}
mkdir -p "$out"
list=$out/suites
if [ $# -gt 0 ]; then
	for s in "$@"; do
		grep -E "^[^#]\S*\s+$s\s" "$TOOLS/kunit/suites" ||
			die "unknown suite $s"
	done > "$list"
else
	cp "$TOOLS/kunit/suites" "$list"
fi

t0=$(now)
"$TOOLS/vm/run.sh" -t 300 -o "$out" -a panic_on_warn=1 -a panic=-1 \
	"$TOOLS/kunit/guest.sh" /run/out/suites > "$out/console.log" 2>&1
vmrc=$?
say "kunit VM finished in $(since "$t0") s (exit $vmrc), logs in $out"

pass=0 fail=0
while read -r mod suite pow; do
	case $mod in ''|'#'*) continue ;; esac
	log=$out/$suite.log
	res=$out/$suite.parsed
	if [ ! -s "$log" ]; then
		echo "FAIL kunit/$suite (no output; see $out/console.log)"
		fail=$((fail + 1))
		continue
	fi
	python3 "$SRC/tools/testing/kunit/kunit.py" parse < "$log" > "$res" 2>&1
	prc=$?
	sum=$(grep -a 'Testing complete' "$res" | tail -1)
	p=$(sed -n 's/.*passed: \([0-9]*\).*/\1/p' <<<"$sum"); p=${p:-0}
	f=$(sed -n 's/.*failed: \([0-9]*\).*/\1/p' <<<"$sum"); f=${f:-0}
	c=$(sed -n 's/.*crashed: \([0-9]*\).*/\1/p' <<<"$sum"); c=${c:-0}
	s=$(sed -n 's/.*skipped: \([0-9]*\).*/\1/p' <<<"$sum"); s=${s:-0}
	if [ $prc != 0 ] || [ "$p" = 0 ] || [ $((f + c)) != 0 ]; then
		echo "FAIL kunit/$suite ($sum; see $res)"
		grep -a -E 'FAILED|CRASHED|Expected|ASSERT' "$res" | head -20
		fail=$((fail + f + c + (f + c == 0)))
		pass=$((pass + p))
	else
		echo "PASS kunit/$suite ($p cases passed, $s skipped)"
		pass=$((pass + p))
	fi
	if [ "$pow" = 0 ]; then
		# Warnings were expected: every one must come from ib_slot.
		nw=$(grep -ac 'WARNING: CPU' "$log")
		ns=$(grep -a 'WARNING: CPU' "$log" | grep -c 'drivers/infiniband/core/slot.c')
		if [ "$nw" -gt 0 ] && [ "$nw" = "$ns" ]; then
			echo "PASS kunit/$suite-warnings ($nw expected warnings, all from slot.c)"
			pass=$((pass + 1))
		else
			echo "FAIL kunit/$suite-warnings ($ns of $nw warnings from slot.c)"
			fail=$((fail + 1))
		fi
	fi
done < "$list"

# A KASAN, lockdep or other kernel report fails the run, whatever KUnit said.
bad=$(grep -alE 'BUG: |KASAN|possible (recursive|circular) locking|inconsistent lock state|Kernel panic' \
	"$out"/*.log "$out/console.log" 2>/dev/null)
if [ -z "$bad" ]; then
	echo "PASS kunit/kernel-reports (no KASAN, lockdep or BUG report)"
	pass=$((pass + 1))
else
	echo "FAIL kunit/kernel-reports (see $bad)"
	fail=$((fail + 1))
fi
if [ -f "$out/kmemleak.txt" ]; then
	n=$(grep -c 'unreferenced object' "$out/kmemleak.txt")
	ours=$(awk '/unreferenced object/ { if (hit) c++; hit = 0 }
		    /ib_slot|ib_core|ib_alloc|ib_dereg/ { hit = 1 }
		    END { if (hit) c++; print c + 0 }' "$out/kmemleak.txt")
	if [ "$ours" = 0 ]; then
		echo "PASS kunit/kmemleak ($n reports, none from ib_core or the suites)"
		pass=$((pass + 1))
	else
		echo "FAIL kunit/kmemleak ($ours of $n reports from ib_core or the suites; see $out/kmemleak.txt)"
		fail=$((fail + 1))
	fi
fi
echo "kunit: $pass passed, $fail failed"
[ $fail = 0 ]
