#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Guest side of kunit.sh: load each KUnit suite on its own, with the
# panic_on_warn setting the suite list asks for, and save its kernel log.
# usage: guest.sh <suites file>, as the guest sees it (under /run/out)
out=/run/out
rc=0
[ -r "$1" ] || { echo "kunit: cannot read $1"; exit 1; }
while read -r mod suite pow; do
	case $mod in ''|'#'*) continue ;; esac
	echo "$pow" > /proc/sys/kernel/panic_on_warn
	echo -n "$suite.*" > /sys/module/kunit/parameters/filter_glob
	dmesg -C
	if ! modprobe "$mod"; then
		echo "kunit: modprobe $mod failed"
		rc=1
	fi
	dmesg > "$out/$suite.log"
	rmmod "$mod" 2>/dev/null
	echo 1 > /proc/sys/kernel/panic_on_warn
	echo "kunit: $suite done"
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
