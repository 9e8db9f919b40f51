#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Tables and plot data of "make bench" (see bench.sh).

usage: report.py micro DIR   DIR/micro/<run>/micro.txt -> table, DIR/micro.dat
       report.py e2e DIR     DIR/e2e/<kernel>-<n>/*.json, stats.txt -> tables,
                             DIR/e2e.dat
"""
import glob
import json
import os
import re
import statistics
import sys

OPS = [
    ("mr_pool", "ib_mr_pool_get + ib_mr_pool_put"),
    ("mr_pool_credit", "  + one atomic credit charge/refund"),
    ("sbitmap_queue", "sbitmap_queue_get + sbitmap_queue_clear"),
    ("device_stub", "ib_post_send + completion (fake device only)"),
    ("getput_indexed", "ib_slot get + put, indexed (no post)"),
    ("getput_backpressure", "ib_slot get + put, back-pressure (no post)"),
    ("slot_indexed", "ib_slot cycle, no-exhaust indexed"),
    ("slot_no_exhaust", "ib_slot cycle, no-exhaust (allocator)"),
    ("slot_backpressure", "ib_slot cycle, back-pressure"),
]
BASE = "mr_pool"
GOAL = "mr_pool_credit"
LINE = re.compile(r"op=(\S+) threads=(\d+) iters=(\d+) ns=(\d+) ns_per_op=([\d.]+)")


def read_micro(path):
    """{op: ns per op} of one run, {} if it left no result."""
    res = {}
    try:
        with open(path) as f:
            for line in f:
                m = LINE.search(line)
                if m:
                    res[m.group(1)] = float(m.group(5))
    except OSError:
        pass
    return res


def kernel_debug(path):
    """The debug options a run's kernel had ("" if none), None if unknown."""
    try:
        with open(path) as f:
            for line in f:
                if "ib_slot_bench: kernel" in line:
                    return " ".join(re.findall(r"CONFIG_(\w+)=y", line))
    except OSError:
        pass
    return None


def fmt(v, spec="{:8.1f}"):
    return spec.format(v) if v is not None else " " * (len(spec.format(0.0)) - 1) + "-"


def ratio(res, op):
    if op in res and res.get(BASE):
        return res[op] / res[BASE]
    return None


def micro(top):
    runs = sorted(glob.glob(os.path.join(top, "micro", "icount-*")))
    icount = [read_micro(os.path.join(r, "micro.txt")) for r in runs]
    tcg = read_micro(os.path.join(top, "micro", "tcg", "micro.txt"))
    smp2 = read_micro(os.path.join(top, "micro", "smp2", "micro.txt"))
    width = max(len(label) for _, label in OPS)

    print("ib_slot fast path: guest ns per operation (under -icount shift=0 the")
    print("guest clock advances 1 ns per instruction), ratio to ib_mr_pool get/put")
    debug = kernel_debug(os.path.join(runs[0], "micro.txt")) if runs else None
    if debug:
        print("kernel with {}: lock and list debugging".format(debug))
        print("tax the locked baselines, not ib_slot; see the bench flavour (BENCH=1)")
    elif debug is not None:
        print("kernel without lock or list debugging")
    print()
    head = "{:<{w}}".format("operation", w=width)
    for i in range(len(icount)):
        head += "  icount#{}".format(i + 1)
    print(head + "  spread   median  ratio")
    med = {}
    spreads = []
    for op, label in OPS:
        vals = [r[op] for r in icount if op in r]
        row = "{:<{w}}".format(label, w=width)
        for r in icount:
            row += "  " + fmt(r.get(op), "{:8.1f}")
        if len(vals) == len(icount) and vals:
            med[op] = statistics.median(vals)
            spread = (max(vals) - min(vals)) / min(vals) * 100
            spreads.append(spread)
            row += "  {:5.2f}%  {:7.1f}".format(spread, med[op])
        else:
            row += "       -        -"
        row += "  " + fmt(ratio(med, op), "{:5.2f}")
        print(row)
    print()
    if spreads and len(spreads) == len(OPS):
        worst = max(spreads)
        print("reproducibility: {} icount runs, largest spread {:.2f}% ({} 1%)".format(
            len(icount), worst, "within" if worst < 1 else "NOT within"))
    else:
        print("reproducibility: incomplete icount runs")
    # The goal as stated, then the two halves of it: the pool and its
    # credits (get + put), and the cycle against a ULP that also posts and
    # completes through the same fake device.
    stub = med.get("device_stub")
    goals = [(op, GOAL, med.get(GOAL), "mr_pool get/put + atomic credit pair")
             for op in ("slot_indexed", "slot_backpressure")]
    goals += [(op, GOAL, med.get(GOAL), "mr_pool get/put + atomic credit pair")
              for op in ("getput_indexed", "getput_backpressure")]
    if stub is not None and GOAL in med:
        goals += [(op, GOAL, med[GOAL] + stub,
                   "mr_pool get/put + credit pair + post/completion")
                  for op in ("slot_indexed", "slot_backpressure")]
    for op, _, ref, what in goals:
        if op in med and ref is not None:
            print("goal: {} {:.1f} ns vs {} {:.1f} ns: {}{}".format(
                op, med[op], what, ref,
                "met" if med[op] <= ref else "NOT met ({:.2f}x)".format(med[op] / ref),
                " (lock debugging on)" if debug else ""))
    # Where a cycle goes: what is left after its get + put and the device
    # is what ib_slot_post() and the completion add per request.
    for cyc, gp in (("slot_indexed", "getput_indexed"),
                    ("slot_backpressure", "getput_backpressure")):
        if stub is not None and cyc in med and gp in med:
            print("cycle: {} {:.1f} = get+put {:.1f} + device {:.1f} + "
                  "post/completion bookkeeping {:.1f}".format(
                      cyc, med[cyc], med[gp], stub, med[cyc] - med[gp] - stub))

    print()
    print("indicative (plain TCG wall clock; 2 vCPUs: two threads on one pool,")
    print("ns per operation and thread)")
    print("{:<{w}}  {:>8}  {:>5}  {:>8}  {:>5}".format(
        "operation", "TCG", "ratio", "2 vCPU", "ratio", w=width))
    for op, label in OPS:
        print("{:<{w}}  {}  {}  {}  {}".format(
            label, fmt(tcg.get(op)), fmt(ratio(tcg, op), "{:5.2f}"),
            fmt(smp2.get(op)), fmt(ratio(smp2, op), "{:5.2f}"), w=width))

    with open(os.path.join(top, "micro.dat"), "w") as f:
        f.write("# op icount_ratio icount_min icount_max tcg_ratio smp2_ratio\n")
        for op, _ in OPS:
            rs = [ratio(r, op) for r in icount]
            rs = [r for r in rs if r is not None]
            vals = [ratio(med, op), min(rs) if rs else None, max(rs) if rs else None,
                    ratio(tcg, op), ratio(smp2, op)]
            f.write(op + " " + " ".join("NaN" if v is None else "{:.4f}".format(v)
                                        for v in vals) + "\n")


def read_fio(path):
    """(IOPS read + write, fio's error) of one fio JSON output, or None."""
    try:
        with open(path) as f:
            text = f.read()
        job = json.loads(text[text.index("{"):])["jobs"][0]
    except (OSError, ValueError, KeyError, IndexError):
        return None
    return job["read"]["iops"] + job["write"]["iops"], job.get("error", 0)


def read_stats(path):
    stats = {}
    try:
        with open(path) as f:
            for line in f:
                k, _, v = line.strip().partition("=")
                if k:
                    stats[k] = v
    except OSError:
        pass
    return stats


def e2e(top):
    base = os.path.join(top, "e2e")
    jobs = sorted({os.path.basename(p)[:-5]
                   for p in glob.glob(os.path.join(base, "*-[0-9]*", "*.json"))},
                  key=lambda j: (j.split("-")[0], int(j.split("qd")[1])))
    rounds = sorted({int(p.rsplit("-", 1)[1])
                     for p in glob.glob(os.path.join(base, "stock-[0-9]*"))})
    print("end to end: fio 4 KiB randrw with crc32c verify on rxe, IOPS (read +")
    if os.environ.get("BENCH_E2E_ICOUNT", "1") == "1":
        print("write) per guest second under -icount shift=0, i.e. per 10^9 guest")
        print("instructions: the ratio compares the CPU cost of an I/O in each kernel")
    else:
        print("write) on the wall clock of plain TCG (noisy on a shared host)")
    print("patched / stock per round (runs alternate between the kernels)")
    print()
    print("{:<10} {:>6} {:>12} {:>12}  {:>6} {:>6} {:>6}  {}".format(
        "job", "rounds", "stock IOPS", "patched IOPS", "min", "median", "max", "failed runs"))
    dat = []
    for job in jobs:
        ratios, iops = [], {"stock": [], "patched": []}
        failed = 0
        for r in rounds:
            got = {}
            for k in ("stock", "patched"):
                v = read_fio(os.path.join(base, "{}-{}".format(k, r), job + ".json"))
                if v is None or v[1]:
                    failed += 1
                    continue
                got[k] = v[0]
                iops[k].append(v[0])
            if len(got) == 2 and got["stock"] > 0:
                ratios.append(got["patched"] / got["stock"])
        if ratios:
            lo, mid, hi = min(ratios), statistics.median(ratios), max(ratios)
            dat.append((job, lo, mid, hi))
            print("{:<10} {:>6} {:>12.0f} {:>12.0f}  {:6.3f} {:6.3f} {:6.3f}  {}".format(
                job, len(ratios), statistics.median(iops["stock"]),
                statistics.median(iops["patched"]), lo, mid, hi, failed))
        else:
            print("{:<10} {:>6}  no complete round  {}".format(job, 0, failed))
    # Each boot says whether its ib_core has ib_slot: proof of which kernel ran.
    wrong = []
    for r in rounds:
        for k, want in (("stock", "no"), ("patched", "yes")):
            got = read_stats(os.path.join(base, "{}-{}".format(k, r), "stats.txt")).get("ib_slot")
            if got != want:
                wrong.append("{}-{} ({})".format(k, r, got or "no stats"))
    print()
    print("kernel check: " + ("every boot ran the intended kernel" if not wrong
                              else "unexpected kernel or no stats: " + ", ".join(wrong)))
    with open(os.path.join(top, "e2e.dat"), "w") as f:
        f.write("# job min median max (patched / stock IOPS)\n")
        for job, lo, mid, hi in dat:
            f.write("{} {:.4f} {:.4f} {:.4f}\n".format(job, lo, mid, hi))

    print()
    print("constrained: tiny Send Queue and MR budgets, high queue depth")
    stats = {k: read_stats(os.path.join(base, "constrained-" + k, "stats.txt"))
             for k in ("stock", "patched")}
    perf = {}
    for k in ("stock", "patched"):
        for p in sorted(glob.glob(os.path.join(base, "constrained-" + k, "*.json"))):
            v = read_fio(p)
            name = os.path.basename(p)[:-5]
            perf.setdefault(name, {})[k] = v
    keys = sorted(set(stats["stock"]) | set(stats["patched"]))
    print("{:<26} {:>14} {:>14}".format("", "stock", "patched"))
    for name in sorted(perf):
        row = []
        for k in ("stock", "patched"):
            v = perf[name].get(k)
            row.append("-" if v is None else "{:.0f} IOPS{}".format(
                v[0], "" if not v[1] else " err " + str(v[1])))
        print("{:<26} {:>14} {:>14}".format(name, *row))
    for key in keys:
        if key in ("mode", "kernel"):
            continue
        print("{:<26} {:>14} {:>14}".format(
            key, stats["stock"].get(key, "-"), stats["patched"].get(key, "-")))


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("micro", "e2e"):
        sys.exit(__doc__)
    {"micro": micro, "e2e": e2e}[sys.argv[1]](sys.argv[2])


if __name__ == "__main__":
    main()
