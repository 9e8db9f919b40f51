#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Guest test: the NFS/RDMA server's Send Queue slots exhausted on purpose.
# svcrdma's max_slots sysctl set to 2 (every connection has one slot for
# each credit otherwise), 16 nfsd threads, NFSv3 and NFSv4.2 mounts over
# rxe; on each, fio with crc32c verification as it goes: 4 KiB random
# reads and writes at queue depth 32 and 1 MiB random writes read back at
# queue depth 4 (Read lists and Write chunks of the full payload), all at
# once; then 64 MiB written sequentially in 1 MiB writes at queue depth 4
# on each mount, and read back.  SVCRDMA_SLOTS=0 on the kernel command line leaves max_slots
# alone (one slot per credit: then nothing waits).  Checks: fio ends without an error; on the
# client, each mount kept its one connection (mountstats connect_count 1)
# and no RPC was retransmitted or timed out; on the server, the
# connections' pools made requests wait (waits > 0), resumed every one
# (resumed == waits), ended with every slot back (in_use 0) and no
# misuse, and rdma_stat_sq_starve counted at least the waits; after the
# unmounts and nfsd's shutdown no pool is left.  pass() fails the test on
# any kernel warning.
. "${0%/*}/lib.sh"
SLOTS=${SVCRDMA_SLOTS:-2}
THREADS=16
MNT=/tmp/mnt
FIO_RT=${FIO_RT:-10}

sq_starve() { cat /proc/sys/sunrpc/svc_rdma/rdma_stat_sq_starve; }

bad=
link_up

svcrdma_up "$SLOTS" $THREADS
s0=$(sq_starve)

jobs=() seq_jobs=()
for v in 3 4.2; do
	mnt=$MNT-v$v
	mkdir -p "$mnt"
	case $v in
	3) opts=vers=3,proto=$(nfs_netid),port=20049,nolock rpath=$NFS_EXPORT ;;
	*) opts=vers=$v,proto=$(nfs_netid),port=20049 rpath=/ ;;
	esac
	timed "mount v$v" mount -t nfs -o "$opts" "$(nfs_server):$rpath" "$mnt" || fail "mount v$v"
	case $(mount_of "$mnt") in *proto=rdma*) ;; *) fail "v$v: not over RDMA" ;; esac
	# Both mounts show the same export: each job has a file of its own.
	jobs+=(--name="v$v-4k" --filename="$mnt/small-v$v" --size=32m --bs=4k --rw=randrw
	       --iodepth=32 --verify_backlog=256
	       --name="v$v-1m" --filename="$mnt/large-v$v" --size=64m --bs=1m --rw=randwrite
	       --iodepth=4 --verify_backlog=8)
	seq_jobs+=(--name="v$v-seq" --filename="$mnt/seq-v$v")
done
for d in $(svcrdma_pools); do
	log "${d##*/}: size $(slot_stat "$d" size), $(grep '^cost' "$d/stats")"
	[ "$SLOTS" = 0 ] || [ "$(slot_stat "$d" size)" = "$SLOTS" ] || bad+=" ${d##*/}-size-$(slot_stat "$d" size)"
done
[ "$(svcrdma_pools | wc -l)" -ge 2 ] || bad+=" $(svcrdma_pools | wc -l)-svcrdma-pools"

step "fio on both mounts, ${FIO_RT} s"
t=$(now)
fio --direct=1 --ioengine=libaio --verify=crc32c --verify_fatal=1 --serialize_overlap=1 \
	--runtime="$FIO_RT" --time_based "${jobs[@]}" > /tmp/fio.log 2>&1
r=$?
grep -E '^v[0-9.]+-|READ:|WRITE:' /tmp/fio.log
log "fio status $r, $(since "$t") s"
save /tmp/fio.log
[ $r = 0 ] || { tail -n 20 /tmp/fio.log; bad+=" fio"; }
n=$(grep -c 'err= 0' /tmp/fio.log)
[ "$n" = 4 ] || bad+=" fio-errors"

step "1 MiB sequential writes on both mounts, then read back"
t=$(now)
fio --direct=1 --ioengine=libaio --verify=crc32c --verify_fatal=1 --size=64m --bs=1m \
	--rw=write --iodepth=4 "${seq_jobs[@]}" > /tmp/fio-seq.log 2>&1
r=$?
grep -E '^v[0-9.]+-|READ:|WRITE:' /tmp/fio-seq.log
log "fio status $r, $(since "$t") s"
save /tmp/fio-seq.log
[ $r = 0 ] || { tail -n 20 /tmp/fio-seq.log; bad+=" fio-seq"; }
[ "$(grep -c 'err= 0' /tmp/fio-seq.log)" = 2 ] || bad+=" fio-seq-errors"

step "checks"
svcrdma_pools_check
w=$(svcrdma_sum waits)
rs=$(svcrdma_sum resumed)
st=$(($(sq_starve) - s0))
log "rdma_stat_sq_starve +$st"
[ "$w" -gt 0 ] || bad+=" no-waits"
[ "$rs" = "$w" ] || bad+=" resumed-$rs-of-$w"
[ "$st" -ge "$w" ] || bad+=" sq_starve-$st-below-waits-$w"
for v in 3 4.2; do
	mount_rpc_check "$MNT-v$v"
done

step teardown
for v in 3 4.2; do
	timed "umount v$v" umount "$MNT-v$v" || bad+=" v$v:umount"
done
nfsd_down
wait_for 10 no_svcrdma_pool || bad+=" svcrdma-pools-left"
timed "$SRP_TRANSPORT teardown" rdma_link_teardown || bad+=" $SRP_TRANSPORT-teardown"

[ -z "$bad" ] || fail "${bad# }"
pass
