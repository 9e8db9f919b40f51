#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# "make run": boot the patched kernel under QEMU and show ib_slot at work.
# The example ULP (tools/testing/ib_slot/ulp) moves verified data over
# soft-RoCE and soft-iWARP while demo/guest.sh prints the pools' statistics
# from debugfs; out/run/ gets the samples (slots.csv), a plot of the slots
# in use over time (slots.svg) and the VM's console log.
set -u
. "$(dirname "$0")/lib.sh"
out=$TOP/out/run
rm -rf "$out"
mkdir -p "$out" || die "cannot create $out"
t0=$(now)
say "building the example ULP"
build_ext tools/testing/ib_slot/ulp > /dev/null || die "cannot build the example ULP"
say "booting $KERNEL under QEMU (TCG); output below, logs in $out"
"$TOOLS/vm/run.sh" -t 300 -o "$out" "$TOOLS/demo/guest.sh" |
	grep -vE '^\[ *[0-9]+\.[0-9]+\] ' | grep -v '^$'
rc=${PIPESTATUS[0]}

if [ -s "$out/slots.csv" ]; then
	cat > "$out/plot.gp" <<-EOF
	set datafile separator ","
	set key below
	set termoption noenhanced
	set xlabel "seconds since the ULP started"
	set ylabel "slots"
	set yrange [0:*]
	set multiplot layout 1,2 title "ib_slot: a back-pressure server pool under more load than it has slots"
	do for [p in "rxe siw"] {
		set title p
		plot "$out/slots.csv" using 2:(strcol(1) eq p ? \$4 : 1/0) with lines dt 2 lc "gray" title "server pool size", \\
		     "" using 2:(strcol(1) eq p ? \$3 : 1/0) with steps lw 2 title "server slots in use", \\
		     "" using 2:(strcol(1) eq p ? \$5 : 1/0) with steps title "commands waiting", \\
		     "" using 2:(strcol(1) eq p ? \$6 : 1/0) with steps title "client slots in use"
	}
	unset multiplot
	EOF
	if gnuplot -e 'set terminal svg size 1000,480 dynamic font "sans,11"' \
		   -e "set output '$out/slots.svg'" "$out/plot.gp" &&
	   gnuplot -e 'set terminal pngcairo size 1000,480 font "sans,10"' \
		   -e "set output '$out/slots.png'" "$out/plot.gp"; then
		say "plot of slots in use over time: $out/slots.svg (and .png)"
	else
		say "gnuplot failed; the samples are in $out/slots.csv"
	fi
fi
say "make run: guest exit status $rc, $(since "$t0") s"
exit "$rc"
