#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# "make bench": ib_slot's fast path against the primitives ULPs combine
# today, and the patched stack against stock 6.12.  Absolute times under
# QEMU TCG on a shared machine mean little, so every figure printed is a
# ratio of runs made side by side in this one invocation.
#
#  micro  bench/ib_slot_bench.ko on a fake device, in the bench flavour of
#         the patched kernel (BENCH=1: no lock or list debugging), built here:
#         BENCH_RUNS runs with "-icount shift=0" and one vCPU (the guest
#         clock counts instructions, so the runs must agree; their spread
#         is printed), then one plain TCG run and one run of two threads on
#         two vCPUs sharing each pool (both indicative).
#  e2e    the stock kernel (STOCK=1, same config fragments) is built too;
#         fio over SRP and NFSv3/RDMA on rxe (bench/e2e-guest.sh), the same
#         jobs in both kernels, BENCH_RUNS boots of each, alternating; then
#         one constrained boot of each (tiny Send Queue and MR budgets, high
#         queue depth) with the ULPs' error counters side by side.  Target,
#         initiator and backing store all live in the guest's memory, so
#         under "-icount shift=0" (the default) a guest second is 10^9
#         instructions and the IOPS ratio compares what each kernel spends
#         per I/O, free of the host's load.
#
# Expects the patched kernel built ("make bench" builds it first).  Tables
# go to stdout and to <out>/micro.txt and <out>/e2e.txt, plots to
# <out>/micro.svg and <out>/e2e.svg; each VM's console log and output are
# kept below <out>.
#
# usage: bench.sh [micro] [e2e]   (default: both)
# env: BENCH_OUT    output directory (default: out/bench in the repository)
#      BENCH_RUNS   icount runs, and e2e boots per kernel (default 3)
#      BENCH_ITERS  operations per microbenchmark and thread (default 1000000)
#      BENCH_FIO_RT guest seconds of each fio job (default 5)
#      BENCH_E2E_ICOUNT  0: run e2e on the wall clock of plain TCG (default 1)
set -u
. "$(dirname "$0")/lib.sh"

OUT=${BENCH_OUT:-$TOP/out/bench}
RUNS=${BENCH_RUNS:-3}
ITERS=${BENCH_ITERS:-1000000}
FIO_RT=${BENCH_FIO_RT:-5}
E2E_ICOUNT=${BENCH_E2E_ICOUNT:-1}
BDIR=$TOOLS/bench
parts=("$@")
[ $# -gt 0 ] || parts=(micro e2e)
for p in "${parts[@]}"; do
	case $p in micro|e2e) ;; *) die "unknown part '$p' (micro, e2e)" ;; esac
done
case $RUNS in ''|*[!0-9]*|0) die "BENCH_RUNS wants a positive number" ;; esac
mkdir -p "$OUT" || die "cannot create $OUT"
OUT=$(cd "$OUT" && pwd)
T0=$(now)

# vm <outdir> <timeout_s> <guest script> <args>: boot the kernel that the
# environment selects (STOCK, QEMU_ICOUNT, SMP) and run one guest script;
# its console log stays in <outdir>/console.log.
vm() {
	local out=$1 t0 rc
	shift
	rm -rf "$out"
	t0=$(now)
	"$TOOLS/vm/run.sh" -o "$out" -t "$@" > /dev/null 2>&1 < /dev/null
	rc=$?
	say "$(basename "$(dirname "$out")")/$(basename "$out"): exit $rc, $(since "$t0") s"
	[ $rc = 0 ] || say "see $out/console.log"
	return $rc
}

# plot <name>: <name>.svg from <name>.dat with bench/<name>.gp.
plot() {
	gnuplot -e "dat='$OUT/$1.dat'; out='$OUT/$1.svg'" "$BDIR/$1.gp" ||
		say "plot $1.svg failed"
}

micro() {
	local dir ko i
	say "microbenchmark: building the bench flavour and bench/ib_slot_bench.ko"
	# Another flavour (lock and list debugging) would measure another
	# kernel than the one the goals are set in: fail instead.
	if ! BENCH=1 "$TOOLS/build.sh" > "$OUT/build-bench.log" 2>&1; then
		say "the bench kernel did not build: $(grep -m1 -E '^(error|config):' \
			"$OUT/build-bench.log")"
		say "see $OUT/build-bench.log"
		return 1
	fi
	dir=$(export BENCH=1; . "$TOOLS/lib.sh" && build_ext "${BDIR#"$TOP"/}") ||
		{ say "the benchmark module did not build"; return 1; }
	ko=$dir/ib_slot_bench.ko
	rm -rf "$OUT/micro"
	for i in $(seq "$RUNS"); do
		BENCH=1 QEMU_ICOUNT=1 SMP=1 vm "$OUT/micro/icount-$i" 1800 \
			"$BDIR/micro-guest.sh" "$ko,$ITERS,1,0"
	done
	BENCH=1 SMP=1 vm "$OUT/micro/tcg" 900 "$BDIR/micro-guest.sh" "$ko,$ITERS,1,0"
	BENCH=1 SMP=2 vm "$OUT/micro/smp2" 900 "$BDIR/micro-guest.sh" "$ko,$ITERS,2,0"
	python3 "$BDIR/report.py" micro "$OUT" | tee "$OUT/micro.txt"
	plot micro
}

e2e() {
	local r k order args="normal,$FIO_RT,16,1:16"
	say "stock kernel: preparing and building the base tree (STOCK=1)"
	{ STOCK=1 "$TOOLS/prepare.sh" && STOCK=1 "$TOOLS/build.sh"; } > "$OUT/build-stock.log" 2>&1 ||
		{ say "the stock kernel did not build; see $OUT/build-stock.log"; return 1; }
	rm -rf "$OUT/e2e"
	for r in $(seq "$RUNS"); do
		# Alternate which kernel goes first, so that a drift of the
		# machine's speed does not favour one of them.
		if [ $((r % 2)) = 1 ]; then order="stock patched"; else order="patched stock"; fi
		for k in $order; do
			STOCK=$([ "$k" = stock ] && echo 1 || echo 0) QEMU_ICOUNT=$E2E_ICOUNT \
				vm "$OUT/e2e/$k-$r" 1200 "$BDIR/e2e-guest.sh" "$args"
		done
	done
	for k in stock patched; do
		STOCK=$([ "$k" = stock ] && echo 1 || echo 0) QEMU_ICOUNT=$E2E_ICOUNT \
			vm "$OUT/e2e/constrained-$k" 1200 "$BDIR/e2e-guest.sh" \
			"constrained,$FIO_RT,16,64"
	done
	BENCH_E2E_ICOUNT=$E2E_ICOUNT python3 "$BDIR/report.py" e2e "$OUT" |
		tee "$OUT/e2e.txt"
	plot e2e
}

rc=0
for p in "${parts[@]}"; do
	"$p" || rc=1
	echo
done
say "bench finished in $(since "$T0") s; tables and plots in $OUT"
exit $rc
