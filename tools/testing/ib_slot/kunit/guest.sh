#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Guest side of kunit.sh: load the test modules as its plan says.  Every
# program started costs a good fraction of a second under TCG, so the plan
# shares one modprobe among modules where it can, and the kernel log is
# neither cleared nor saved per module: init.sh saves it once, as dmesg.txt.
# Plan lines: <panic_on_warn> <filter_glob> <module>...
# usage: guest.sh <plan file>, as the guest sees it (under /run/out)
out=/run/out
pow=/proc/sys/kernel/panic_on_warn
rc=0
[ -r "$1" ] || { echo "kunit: cannot read $1"; exit 1; }
# Fail-nth sweeps fail GFP_KERNEL allocations too, quietly; nothing else
# fails (probability stays 0).
fs=/sys/kernel/debug/failslab
if [ -d $fs ]; then
	echo N > $fs/ignore-gfp-wait
	echo 0 > $fs/verbose
fi
# KCSAN kernels: sbitmap's search reads its words plainly while puts clear
# bits atomically (lib/sbitmap.c, not ib_slot); a report of that pair says
# nothing about ib_slot, so its frame is filtered.  Any other race is
# reported and fails the run.
if [ -w /sys/kernel/debug/kcsan ]; then
	echo '!sbitmap_find_bit' > /sys/kernel/debug/kcsan
fi
while read -r warn glob mods; do
	case $warn in ''|'#'*) continue ;; esac
	for m in $mods; do
		# Loaded before with other suites selected.
		[ -d "/sys/module/$m" ] && rmmod "$m"
	done
	echo "$warn" > $pow
	echo -n "$glob" > /sys/module/kunit/parameters/filter_glob
	# shellcheck disable=SC2086 # one word per module
	if ! modprobe -a $mods; then
		echo "kunit: modprobe $mods failed"
		rc=1
	fi
	echo 1 > $pow
	echo "kunit: $mods done"
done < "$1"
# Debug kernels: ask kmemleak for what the suites left behind.
if [ -w /sys/kernel/debug/kmemleak ]; then
	echo scan > /sys/kernel/debug/kmemleak
	sleep 5
	echo scan > /sys/kernel/debug/kmemleak
	cat /sys/kernel/debug/kmemleak > "$out/kmemleak.txt"
	echo "kunit: kmemleak scanned"
fi
exit $rc
