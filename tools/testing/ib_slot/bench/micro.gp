# SPDX-License-Identifier: GPL-2.0
# Plot of the ib_slot microbenchmark (bench.sh): cost of each operation
# relative to ib_mr_pool_get + ib_mr_pool_put, from report.py's micro.dat.
# usage: gnuplot -e "dat='micro.dat'; out='micro.svg'" micro.gp
set terminal svg size 960,520 dynamic font "sans,11"
set output out
set termoption noenhanced
set title "ib_slot fast path on a fake device: cost per operation"
set ylabel "ratio to ib_mr_pool get + put"
set style data histogram
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set boxwidth 0.9
set yrange [0:*]
set xtics rotate by -25 scale 0
set grid ytics
set key top left
set arrow from graph 0, first 1 to graph 1, first 1 nohead dashtype 2
# The indicative runs may be missing: plot only the series that have data.
stats dat using 5 nooutput
have_tcg = exists("STATS_records") ? STATS_records : 0
stats dat using 6 nooutput
have_smp2 = exists("STATS_records") ? STATS_records : 0
cmd = "plot dat using 2:xtic(1) title 'icount, median of runs'"
if (have_tcg > 0) cmd = cmd . ", '' using 5 title 'plain TCG (indicative)'"
if (have_smp2 > 0) cmd = cmd . ", '' using 6 title '2 vCPUs, 2 threads (indicative)'"
eval cmd
