#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Everything "make check" runs: static checks, the per-patch build
# (bisectability, W=1), the test kernel, KUnit under QEMU and the VM
# integration tests.  Each check prints PASS or FAIL; the last line is
# "N passed, N failed".
# env: SKIP_BISECT=1, SKIP_VM=1 to leave those parts out.
set -u
. "$(dirname "$0")/lib.sh"
guest_visible

# Add the "name: N passed, N failed" totals of a sub-runner.
tally() {
	local line p f
	line=$(grep -aE '^[a-z]+: [0-9]+ passed, [0-9]+ failed' "$1" | tail -1)
	p=$(sed -E 's/.*: ([0-9]+) passed.*/\1/' <<<"$line")
	f=$(sed -E 's/.* ([0-9]+) failed.*/\1/' <<<"$line")
	if [ -z "$line" ]; then
		verdict 1 "$2" "no summary"
	else
		PASSED=$((PASSED + p)); FAILED=$((FAILED + f))
	fi
}
LOG=${LOGDIR:-$(mktemp -d "${TMPDIR:-/tmp}/ib-slot-check.XXXXXX")}
export LOGDIR
T0=$(now)

# phase <name> <start>: note the seconds a phase took since <start>, for
# the table at the end (phases).
: > "$LOG/phases"
phase() { echo "$(since "$2") $1" >> "$LOG/phases"; }

# phases: every phase and VM test with its seconds, the slowest first.
phases() {
	sed -nE 's#^(PASS|FAIL) (vm/[^ ]+) \(([0-9.]+) s.*#\3 \2#p' \
		"$LOG/vmtest.out" 2>/dev/null >> "$LOG/phases"
	echo "phase                                     seconds"
	sort -rn "$LOG/phases" |
		awk '{ t = $1; $1 = ""; printf "%-40s %8.1f\n", substr($0, 2), t }'
	printf '%-40s %8.1f\n' total "$(since "$T0")"
}

t=$(now)
"$TOOLS/deps.sh" || die "could not install the build dependencies"
phase deps "$t"
# Again: on a fresh machine the base tree's version, and with it every path,
# is known only once deps.sh has installed linux-source-6.12.
. "$TOOLS/lib.sh"
t=$(now)
"$TOOLS/prepare.sh" || die "could not prepare the kernel tree"
phase prepare "$t"

say "static checks: checkpatch --strict, kernel-doc -Wall"
t=$(now)
cd "$SRC" || die "no tree at $SRC"
# Without git history checkpatch cannot look a Fixes: commit up and calls
# every one unknown.
cp_opts=(--strict -q)
[ -d .git ] || cp_opts+=(--ignore UNKNOWN_COMMIT_ID)
for p in $(series); do
	o=$(scripts/checkpatch.pl "${cp_opts[@]}" "patches/$p" 2>&1)
	verdict $? "checkpatch/$p" "$(grep -cE '^(ERROR|WARNING|CHECK)' <<<"$o") issues"
	[ -z "$o" ] || echo "$o" | head -20
done
for f in $(overlay_all); do
	case $f in *.c|*.h) ;; *) continue ;; esac
	o=$(scripts/checkpatch.pl --strict -q -f "$f" 2>&1)
	verdict $? "checkpatch/$f"
	[ -z "$o" ] || echo "$o" | head -20
	o=$(scripts/kernel-doc -none -Wall "$f" 2>&1)
	[ -z "$o" ]; verdict $? "kernel-doc/$f"
	[ -z "$o" ] || echo "$o" | head -20
done
cd "$TOP" || die "no $TOP"
phase "static checks" "$t"

# The bisect step builds patch N only if the first N patches (with the
# new files they bring), the config fragments, the compiler or the base
# changed since patch N last built clean on this machine: the key chains
# the hash of each patch onto the key of the patches below it.
BISECT_OK=$BASE_DIR/bisect-ok-$FLAVOUR
bisect_keys() {
	local key p f
	key=$({ echo "$BASE_ID"; gcc --version | head -1
		cat "$TOOLS"/configs/*.config; } | sha1sum | cut -c1-40)
	for p in $(series); do
		key=$({ echo "$key"; cat "$TOP/patches/$p"
			for f in $(overlay_of "$p"); do cat "$TOP/$f"; done; } |
			sha1sum | cut -c1-40)
		echo "$key"
	done
}

if [ "${SKIP_BISECT:-0}" != 1 ]; then
	say "bisect: every patch builds on its own, W=1 clean"
	t=$(now)
	mapfile -t keys < <(bisect_keys)
	touch "$BISECT_OK"
	n=0
	built=0
	for p in $(series); do
		n=$((n + 1))
		if grep -qx "${keys[$((n - 1))]}" "$BISECT_OK"; then
			verdict 0 "bisect/$p" "skipped: built clean before, nothing below it changed"
			continue
		fi
		if [ $built = 0 ]; then
			"$TOOLS/build.sh" --configure-only >/dev/null || die "configure failed"
			built=1
		fi
		"$TOOLS/prepare.sh" $n >/dev/null 2>&1
		objs=$( (sed -n 's#^+++ b/\(.*\.c\)$#\1#p' "$TOP/patches/$p"
			 overlay_of "$p" | grep '\.c$') | sed 's/\.c$/.o/' | sort -u)
		if [ -z "$objs" ]; then
			verdict 0 "bisect/$p" "no C file"
			echo "${keys[$((n - 1))]}" >> "$BISECT_OK"
			continue
		fi
		o=$("${KMAKE[@]}" -s W=1 $objs 2>&1)
		rc=$?
		[ $rc = 0 ] && grep -qE 'warning:|error:' <<<"$o" && rc=1
		verdict $rc "bisect/$p" "$(echo $objs)"
		if [ $rc = 0 ]; then
			echo "${keys[$((n - 1))]}" >> "$BISECT_OK"
		else
			echo "$o" | tail -20
		fi
	done
	if [ $built = 1 ]; then
		"$TOOLS/prepare.sh" >/dev/null 2>&1
		rm -f "$BUILD/.ib-slot-config"	# the per-patch builds changed .config
	fi
	phase bisect "$t"
fi

t=$(now)
if "$TOOLS/build.sh" > "$LOG/build.log" 2>&1; then
	verdict 0 "build/$FLAVOUR" "$(since "$t") s"
	phase "kernel build" "$t"
else
	verdict 1 "build/$FLAVOUR" "see $LOG/build.log"
	tail -30 "$LOG/build.log"
	echo "$PASSED passed, $FAILED failed"
	exit 1
fi

# The benchmark module (make bench) is not run here, only built.
t=$(now)
check_ext tools/testing/ib_slot/bench
verdict $? build/bench
phase "bench module build" "$t"

t=$(now)
"$TOOLS/kunit.sh" 2>&1 | tee "$LOG/kunit.out"
tally "$LOG/kunit.out" kunit
phase kunit "$t"
if [ "${SKIP_VM:-0}" != 1 ]; then
	"$TOOLS/vmtest.sh" 2>&1 | tee "$LOG/vmtest.out"
	tally "$LOG/vmtest.out" vmtest
fi

say "check finished in $(since "$T0") s, logs in $LOG"
phases
echo "$PASSED passed, $FAILED failed"
[ $FAILED = 0 ]
