#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Guest test: the NFS client's connections broken under verified I/O.
# NFSv3 and NFSv4.2 hard mounts, fio on each (4 KiB random reads and writes
# at queue depth 32, crc32c verified as it goes, and 1 MiB random writes
# read back at queue depth 4).  Phase 1: the client QP of every connection
# forced to the error state (the pool's qp_error knob), twice.  Phase 2: a
# reader of 1 MiB blocks killed with SIGKILL five times while its RPCs are
# out (their slots are fenced and put by xprt_rdma_free()).  Phase 3:
# "rpc.nfsd 0" then "rpc.nfsd 4", three times.  Phase 4: "rdma link delete"
# of the device under I/O while ib_slot can create no MR (debugfs fail_mr):
# the delete returns and every client pool goes within 30 s; then the
# device added again, still refusing MRs for 3 s.  Checks: I/O moves on both mounts again after
# every fault; each connection reconnected for each QP error; fio ends
# without an error (a hard mount retries what a fault cut off); the client's
# pools end with every slot back and no misuse; after the unmount no pool
# is left, rpcrdma unloads and (on a kernel with kmemleak) a scan finds no
# leak.  pass() fails the test on any kernel warning.
. "${0%/*}/lib.sh"
MNT=/tmp/mnt
export FIO_WAIT_MAX=60

# io_resumes <label>: RPCs complete again on both mounts within 60 s.
io_resumes() {
	local n t v
	t=$(now)
	for v in 3 4.2; do
		n=$(nfs_ops $MNT-v$v)
		if ! wait_for 60 nfs_ops_moving $MNT-v$v $((n + 20)); then
			bad+=" $1:v$v-no-io"
			pools_show xprtrdma
			echo w > /proc/sysrq-trigger
		fi
	done
	log "$1: I/O again on both mounts $(since "$t") s later"
}

# connects: the connect counts of both mounts, summed.
connects() { echo $(( $(rdma_xprt_stat $MNT-v3 3) + $(rdma_xprt_stat $MNT-v4.2 3) )); }

bad=
link_up
nfsd_up
jobs=()
for v in 3 4.2; do
	mnt=$MNT-v$v
	nfs_mount $v "$mnt"
	jobs+=(--name="small-v$v" --filename="$mnt/small-v$v" --size=16m --bs=4k
	       --rw=randrw --iodepth=32 --verify_backlog=256
	       --name="large-v$v" --filename="$mnt/large-v$v" --size=32m --bs=1m
	       --rw=randwrite --iodepth=4 --verify_backlog=8)
done
dd if=/dev/urandom of=$NFS_EXPORT/big bs=1M count=32 status=none
fio_start f --direct=1 --ioengine=libaio --verify=crc32c --verify_fatal=1 \
	--serialize_overlap=1 --runtime=600 --time_based "${jobs[@]}"
io_resumes "fio start"

step "phase 1: the client QPs forced to the error state, twice"
for i in 1 2; do
	c=$(connects)
	for d in $(xprtrdma_pools); do
		case ${d##*/} in xprtrdma-bc-*) continue ;; esac
		qp=$(pool_qp "$d")
		log "p1: $i: QP $qp of ${d##*/} to error, $(slot_stat "$d" in_use) slot(s) in use"
		echo "$qp" > "$d/qp_error" || bad+=" p1-qp_error-$i"
	done
	io_resumes "p1-$i"
	log "p1: $i: connects $c -> $(connects)"
	[ "$(connects)" -ge $((c + 2)) ] || bad+=" p1-$i:no-reconnect"
done

step "phase 2: a 1 MiB reader killed with SIGKILL five times"
zaps=0
for i in 1 2 3 4 5; do
	dd if=$MNT-v3/big of=/dev/null bs=1M iflag=direct status=none &
	p=$!
	sleep 0.$((RANDOM % 5 + 3))
	kill -KILL $p 2>/dev/null && zaps=$((zaps + 1))
	wait $p 2>/dev/null
done
log "p2: $zaps reader(s) killed while reading"
io_resumes "p2"

step "phase 3: rpc.nfsd 0, rpc.nfsd 4, three times"
for i in 1 2 3; do
	t=$(now)
	timeout 30 rpc.nfsd 0 || bad+=" p3-nfsd-stop-$i"
	sleep 2
	timeout 30 rpc.nfsd 4 || bad+=" p3-nfsd-start-$i"
	grep -q rdma /proc/fs/nfsd/portlist ||
		echo "rdma 20049" > /proc/fs/nfsd/portlist || bad+=" p3-no-rdma-listener-$i"
	log "p3: $i: nfsd restarted in $(since "$t") s"
	io_resumes "p3-$i"
done

step "phase 4: rdma link delete $IBDEV under I/O, MRs refused, then added again"
# From here the device creates no MR for ib_slot: the fences the
# disconnect flushes must not wait for one, nor the pools' destroy.
fail_mr_arm
link_delete
if wait_for 30 no_xprtrdma_pool; then
	log "p4: the client's pools gone $(since "$LINK_DEL_T") s after the delete started"
else
	bad+=" p4-xprtrdma-pools-stay"
	pools_show xprtrdma
fi
sleep 2
link_readd || bad+=" p4-no-$IBDEV"
# Reconnects fail while MRs are refused, and succeed once they are not.
sleep 3
log "p4: $(fail_mr_disarm) MR allocation(s) refused"
io_resumes "p4"

step "checks"
fio_running f || bad+=" fio-ended-early"
fio_wait f stop || bad+=" fio"
for v in 3 4.2; do
	awk -v m="$MNT-v$v" '$1 == "device" { on = ($5 == m) }
		on && $1 == "xprt:" { print m ": " $0 }' /proc/self/mountstats
done
xprtrdma_pools_check

step teardown
for v in 3 4.2; do
	timed "umount v$v" umount "$MNT-v$v" || bad+=" v$v:umount"
done
wait_for 10 no_xprtrdma_pool || bad+=" xprtrdma-pools-left"
nfsd_down
# After rpcrdma is gone: whatever it leaked is unreferenced now.
if [ -e /sys/kernel/debug/kmemleak ]; then
	echo scan > /sys/kernel/debug/kmemleak
	n=$(grep -c '^unreferenced object' /sys/kernel/debug/kmemleak)
	log "kmemleak: $n unreferenced object(s)"
	[ "$n" = 0 ] || { head -n 40 /sys/kernel/debug/kmemleak; bad+=" kmemleak-$n"; }
fi
timed "$SRP_TRANSPORT teardown" rdma_link_teardown || bad+=" $SRP_TRANSPORT-teardown"

[ -z "$bad" ] || fail "${bad# }"
pass
