#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Run the KUnit suites of the series in the test kernel under QEMU and parse
# their KTAP output with the kernel's own tools/testing/kunit/kunit.py.
# Prints one line per suite and, last, "kunit: N passed, N failed" counting
# test cases (and the check of expected warnings).
# usage: kunit.sh [suite...]   (default: every suite in kunit/suites)
set -u
. "$(dirname "$0")/lib.sh"
guest_visible

out=${LOGDIR:-$(mktemp -d "${TMPDIR:-/tmp}/ib-slot-kunit.XXXXXX")}
mkdir -p "$out"
list=$out/suites
if [ $# -gt 0 ]; then
	for s in "$@"; do
		grep -E "^[^#]\S*\s+$s\s" "$TOOLS/kunit/suites" ||
			die "unknown suite $s"
	done > "$list"
else
	grep -E '^[^#]' "$TOOLS/kunit/suites" > "$list"
fi

# The guest's plan, one module load per line: "<panic_on_warn> <glob>
# <module>...".  A module whose suites were all asked for loads once and
# runs them all, with panic_on_warn=0 if one of them warns on purpose;
# modules that load with panic_on_warn=1 share one modprobe.  Of a module
# only partly asked for, each suite loads on its own, by filter_glob.
declare -A asked all warn
mods=()
while read -r mod suite pow; do
	[ -n "${asked[$mod]+x}" ] || mods+=("$mod")
	asked[$mod]+=" $suite"
	[ "$pow" = 0 ] && warn[$mod]=0
done < "$list"
while read -r mod suite _; do
	case $mod in ''|'#'*) continue ;; esac
	all[$mod]+=" $suite"
done < "$TOOLS/kunit/suites"
shared=
for mod in "${mods[@]}"; do
	if [ "${asked[$mod]}" != "${all[$mod]}" ]; then
		for s in ${asked[$mod]}; do
			echo "$(awk -v s="$s" '$2 == s { print $3 }' "$list") $s $mod"
		done
	elif [ "${warn[$mod]:-1}" = 0 ]; then
		echo "0 * $mod"
	else
		shared+=" $mod"
	fi
done > "$out/plan"
[ -n "$shared" ] && echo "1 *$shared" >> "$out/plan"

t0=$(now)
# KCSAN samples one access in skip_watch: ten times as many watchpoints
# as its default, since these suites are short.
sample=()
[ "$FLAVOUR" = kcsan ] && sample=(-a kcsan.skip_watch=400)
"$TOOLS/vm/run.sh" -t 300 -o "$out" -a panic_on_warn=1 -a panic=-1 "${sample[@]}" \
	"$TOOLS/kunit/guest.sh" /run/out/plan > "$out/console.log" 2>&1
vmrc=$?
say "kunit VM finished in $(since "$t0") s (exit $vmrc), logs in $out"

# One line per suite from kunit/results.py, which has kunit.py parse the
# log: "<suite> <passed> <failed> <skipped> <crashed> <warnings> <from
# the core>", then "unexpected <warnings>".
args=()
while read -r _ suite pow; do args+=("$suite:$pow"); done < "$list"
touch "$out/dmesg.txt"
while read -r suite p f s c nw ns; do
	if [ "$suite" = unexpected ]; then
		[ "$p" = 0 ]
		verdict $? kunit/warnings "$p unexpected; see $out/dmesg.txt"
	elif [ "$p" = missing ]; then
		verdict 1 "kunit/$suite" "no results; see $out/console.log"
	elif [ "$p" = 0 ] || [ $((f + c)) != 0 ]; then
		echo "FAIL kunit/$suite ($p passed, $f failed, $c crashed, $s skipped; see $out/ktap-*.txt)"
		grep -a -h -E 'FAILED|CRASHED|Expected|ASSERT' "$out"/ktap-*.txt | head -20
		PASSED=$((PASSED + p))
		FAILED=$((FAILED + f + c + (f + c == 0)))
	else
		echo "PASS kunit/$suite ($p cases passed, $s skipped)"
		PASSED=$((PASSED + p))
	fi
	# Warnings were expected: every one must come from ib_slot.
	if awk -v s="$suite" '$2 == s && $3 == 0 { ok = 1 } END { exit !ok }' "$list"; then
		[ "${nw:-0}" -gt 0 ] && [ "$nw" = "$ns" ]
		verdict $? "kunit/$suite-warnings" "$ns of ${nw:-0} warnings from the core's slot*.c"
	fi
done < <(python3 "$TOOLS/kunit/results.py" "$SRC/tools/testing/kunit/kunit.py" \
	     "$out/dmesg.txt" "$out" "${args[@]}")

# A KASAN, KCSAN ("BUG: KCSAN: data-race"), lockdep or other kernel report
# fails the run, whatever KUnit said.
bad=$(grep -alE 'BUG: |KASAN|possible (recursive|circular) locking|inconsistent lock state|Kernel panic' \
	"$out/dmesg.txt" "$out/console.log" 2>/dev/null)
[ -z "$bad" ]
verdict $? kunit/kernel-reports "KASAN, KCSAN, lockdep or BUG reports in: ${bad:-none}"
if [ -f "$out/kmemleak.txt" ]; then
	n=$(grep -c 'unreferenced object' "$out/kmemleak.txt")
	ours=$(awk '/unreferenced object/ { if (hit) c++; hit = 0 }
		    /ib_slot|ib_core|ib_alloc|ib_dereg/ { hit = 1 }
		    END { if (hit) c++; print c + 0 }' "$out/kmemleak.txt")
	[ "$ours" = 0 ]
	verdict $? kunit/kmemleak "$ours of $n reports from ib_core or the suites"
fi
echo "kunit: $PASSED passed, $FAILED failed"
[ $FAILED = 0 ]
