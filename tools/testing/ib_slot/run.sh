#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# "make run": boot the patched kernel under QEMU and show ib_slot at work.
# The example ULP (tools/testing/ib_slot/ulp) moves verified data over
# soft-RoCE and soft-iWARP, then NFS/RDMA (svcrdma, xprtrdma) and SRP
# (ib_srpt, ib_srp) move verified data over soft-RoCE, first with their
# pools at the usual sizes and then with the server's and the target's
# squeezed, while demo/guest.sh prints the pools' statistics from debugfs;
# out/run/ gets the samples (slots.csv), a plot of the slots in use over
# time (slots.svg, slots.png) and the VM's console log.
set -u
. "$(dirname "$0")/lib.sh"
guest_visible
out=$TOP/out/run
rm -rf "$out"
mkdir -p "$out" || die "cannot create $out"
t0=$(now)
say "building the example ULP"
build_ext tools/testing/ib_slot/ulp > /dev/null || die "cannot build the example ULP"
say "booting $KERNEL under QEMU (TCG); output below, logs in $out"
# Line-buffered: the samples show as the guest prints them.
"$TOOLS/vm/run.sh" -t 300 -o "$out" "$TOOLS/demo/guest.sh" |
	grep --line-buffered -vE '^\[ *[0-9]+\.[0-9]+\] ' | grep --line-buffered -v '^$'
rc=${PIPESTATUS[0]}

if [ -s "$out/slots.csv" ]; then
	# The example ULP's phases (rxe, siw) in the top row; the converted
	# ULPs' (ulps, exhaust), if the guest got that far, in a second one.
	# Their columns in slots.csv: in_use, size, waiters, waits, exhausted
	# for srp (9-13), srpt (14-18), svcrdma (19-23) and xprtrdma (24-28).
	rows=1 height=480
	grep -q '^exhaust,' "$out/slots.csv" && rows=2 height=960
	cat > "$out/plot.gp" <<-EOF
	set datafile separator ","
	set key below
	set termoption noenhanced
	set xlabel "seconds since the ULP started"
	set ylabel "slots"
	set yrange [0:*]
	set multiplot layout $rows,2 title "ib_slot: slots in use and requests waiting over time"
	do for [p in "rxe siw"] {
		set title "example ULP over ".p
		plot "$out/slots.csv" using 2:(strcol(1) eq p ? \$4 : 1/0) with lines dt 2 lc "gray" title "server pool size", \\
		     "" using 2:(strcol(1) eq p ? \$3 : 1/0) with steps lw 2 title "server slots in use", \\
		     "" using 2:(strcol(1) eq p ? \$5 : 1/0) with steps title "commands waiting", \\
		     "" using 2:(strcol(1) eq p ? \$6 : 1/0) with steps title "client slots in use"
	}
	EOF
	[ $rows = 2 ] && cat >> "$out/plot.gp" <<-EOF
	at(p, c) = strcol(1) eq p ? column(c) : 1/0
	set xlabel "seconds since fio started"
	set key below horizontal Left reverse samplen 2 maxcols 2
	set bmargin 9
	set title "NFS/RDMA and SRP over rxe, the pools at their usual sizes"
	plot "$out/slots.csv" using 2:(at("ulps", 9)) with steps lw 2 lc rgb "#1f77b4" title "srp slots in use", \\
	     "" using 2:(at("ulps", 14)) with steps lw 2 lc rgb "#ff7f0e" title "srpt slots in use", \\
	     "" using 2:(at("ulps", 19)) with steps lw 2 lc rgb "#2ca02c" title "svcrdma slots in use", \\
	     "" using 2:(at("ulps", 24)) with steps lw 2 lc rgb "#d62728" title "xprtrdma slots in use", \\
	     "" using 2:(at("ulps", 16)) with steps dt 2 lc rgb "#ff7f0e" title "srpt commands waiting", \\
	     "" using 2:(at("ulps", 21)) with steps dt 2 lc rgb "#2ca02c" title "svcrdma replies waiting"
	set title "exhaust: ib_srpt's and svcrdma's pools squeezed"
	plot "$out/slots.csv" using 2:(at("exhaust", 9)) with steps lw 2 lc rgb "#1f77b4" title "srp slots in use", \\
	     "" using 2:(at("exhaust", 14)) with steps lw 2 lc rgb "#ff7f0e" title "srpt slots in use", \\
	     "" using 2:(at("exhaust", 19)) with steps lw 2 lc rgb "#2ca02c" title "svcrdma slots in use", \\
	     "" using 2:(at("exhaust", 24)) with steps lw 2 lc rgb "#d62728" title "xprtrdma slots in use", \\
	     "" using 2:(at("exhaust", 16)) with steps dt 2 lc rgb "#ff7f0e" title "srpt commands waiting", \\
	     "" using 2:(at("exhaust", 21)) with steps dt 2 lc rgb "#2ca02c" title "svcrdma replies waiting", \\
	     "" using 2:(at("exhaust", 15)) with lines dt 3 lc rgb "#ff7f0e" title "srpt pool size", \\
	     "" using 2:(at("exhaust", 20)) with lines dt 3 lc rgb "#2ca02c" title "svcrdma pool size"
	EOF
	echo "unset multiplot" >> "$out/plot.gp"
	if gnuplot -e "set terminal svg size 1000,$height dynamic font 'sans,11'" \
		   -e "set output '$out/slots.svg'" "$out/plot.gp" &&
	   gnuplot -e "set terminal pngcairo size 1000,$height font 'sans,10'" \
		   -e "set output '$out/slots.png'" "$out/plot.gp"; then
		say "plot of slots in use over time: $out/slots.svg (and .png)"
	else
		say "gnuplot failed; the samples are in $out/slots.csv"
	fi
fi
say "make run: guest exit status $rc, $(since "$t0") s"
exit "$rc"
