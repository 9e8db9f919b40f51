# SPDX-License-Identifier: GPL-2.0
# Plot of the end-to-end benchmark (bench.sh): patched / stock fio IOPS per
# job, median with min-max bars, from report.py's e2e.dat.
# usage: gnuplot -e "dat='e2e.dat'; out='e2e.svg'" e2e.gp
set terminal svg size 720,440 dynamic font "sans,11"
set output out
set termoption noenhanced
set title "fio 4 KiB randrw with verify on rxe: patched / stock IOPS"
set ylabel "patched / stock"
set xrange [-0.5:*]
set offsets 0, 0.5, 0.05, 0.05
set xtics scale 0
set grid ytics
set key top left
set arrow from graph 0, first 1 to graph 1, first 1 nohead dashtype 2
plot dat using 0:3:2:4:xtic(1) with yerrorbars pointtype 7 pointsize 1.2 \
     title "median, min-max over rounds"
