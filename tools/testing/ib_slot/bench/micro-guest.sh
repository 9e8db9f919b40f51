#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Guest side of the ib_slot microbenchmark: load ib_core, insmod
# ib_slot_bench.ko (it runs at init and refuses to stay loaded), and save
# its result lines to /run/out/micro.txt for the host.
# usage (through vm/run.sh): micro-guest.sh KO,ITERS,THREADS,LOCKDEP
. "${0%/*}/../guest/lib.sh"
KO=$1 ITERS=${2:-1000000} THREADS=${3:-1} LOCKDEP=${4:-0}

[ -f "$KO" ] || fail "no module $KO"
modprobe ib_core || fail "modprobe ib_core"
t=$(now)
insmod "$KO" iters="$ITERS" threads="$THREADS" lockdep="$LOCKDEP"
rc=$?
log "insmod status $rc (the module always refuses to load), $(since "$t") s"
dmesg | grep -o 'ib_slot_bench: .*' > /tmp/micro.txt
# Lock and list debugging tax the locked baselines only: say if they are on.
dbg=$(zcat /proc/config.gz | grep -oE '^CONFIG_(PROVE_LOCKING|DEBUG_SPINLOCK|DEBUG_LIST)=y')
echo "ib_slot_bench: kernel ${dbg//$'\n'/ }" >> /tmp/micro.txt
cat /tmp/micro.txt
save /tmp/micro.txt
grep -q 'ib_slot_bench: done' /tmp/micro.txt || fail "benchmark did not finish"
pass
