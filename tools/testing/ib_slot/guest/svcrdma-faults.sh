#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Guest test: the NFS/RDMA server's transports closed under verified I/O
# while requests wait for Send Queue slots.  svcrdma's max_slots sysctl at
# 2 (so that nfsd threads wait for slots), 16 nfsd threads, an NFSv3 hard
# mount over rxe with fio running on it (4 KiB random reads and writes at
# queue depth 32 and 1 MiB random writes read back at queue depth 4, crc32c
# verified as it goes).  Phase 1: the server QP forced to the error state
# (the pool's qp_error knob) twice.  Phase 2: "rpc.nfsd 0" then
# "rpc.nfsd 16", three times.  Phase 3: "rdma link delete" of the device
# (every connection and its pool must go within 30 s), then the device
# added again.  Checks: each fault is followed by I/O
# again (a reconnect); every "rpc.nfsd" returns within 30 s; fio ends
# without an error (a hard mount retries what a fault cut off); the pools
# of the connections left have every slot back and no misuse; after the
# unmount and nfsd's shutdown no pool is left.  pass() fails the test on
# any kernel warning.  On the kernel command line, SVCRDMA_SLOTS=0 leaves
# max_slots alone and SKIP_QP_ERROR=1 skips phase 1 (both: the test runs
# on a stock kernel too).
. "${0%/*}/lib.sh"
SLOTS=${SVCRDMA_SLOTS:-2}
THREADS=16
MNT=/tmp/mnt-v3
FIO_RT=600
export FIO_WAIT_MAX=60

# io_resumes <label>: RPCs complete again within 60 s.
io_resumes() {
	local n t
	n=$(nfs_ops $MNT)
	t=$(now)
	if wait_for 60 nfs_ops_moving $MNT $((n + 20)); then
		log "$1: I/O again $(since "$t") s later"
	else
		bad+=" $1-no-io"
		rdma resource show cm_id
		pools_show svcrdma
		echo w > /proc/sysrq-trigger
	fi
}

bad=
link_up

svcrdma_up "$SLOTS" $THREADS
nfs_mount 3 $MNT

fio_start f --direct=1 --ioengine=libaio --verify=crc32c --verify_fatal=1 \
	--serialize_overlap=1 --runtime=$FIO_RT --time_based \
	--name=small --filename=$MNT/small --size=32m --bs=4k --rw=randrw --iodepth=32 \
	--verify_backlog=256 \
	--name=large --filename=$MNT/large --size=64m --bs=1m --rw=randwrite --iodepth=4 \
	--verify_backlog=8
io_resumes "fio start"

step "phase 1: the server QP forced to the error state, twice"
for i in 1 2; do
	[ "${SKIP_QP_ERROR:-0}" = 1 ] && break
	p=$(svcrdma_pools | head -n 1)
	[ -n "$p" ] || { bad+=" p1-no-pool-$i"; break; }
	qp=$(pool_qp "$p")
	log "p1: $i: QP $qp of ${p##*/} to error, $(svcrdma_sum waiters) waiting"
	echo "$qp" > "$p/qp_error" || bad+=" p1-qp_error-$i"
	io_resumes "p1-$i"
done

step "phase 2: rpc.nfsd 0, rpc.nfsd $THREADS, three times"
for i in 1 2 3; do
	t=$(now)
	timeout 30 rpc.nfsd 0 || bad+=" p2-nfsd-stop-$i"
	log "p2: $i: rpc.nfsd 0 took $(since "$t") s"
	sleep 2
	t=$(now)
	timeout 30 rpc.nfsd $THREADS || bad+=" p2-nfsd-start-$i"
	# The RDMA listener goes with the last thread.
	grep -q rdma /proc/fs/nfsd/portlist ||
		echo "rdma 20049" > /proc/fs/nfsd/portlist || bad+=" p2-no-rdma-listener-$i"
	log "p2: $i: rpc.nfsd $THREADS took $(since "$t") s; listeners:" \
		"$(tr '\n' ' ' < /proc/fs/nfsd/portlist)"
	io_resumes "p2-$i"
done

step "phase 3: rdma link delete $IBDEV under I/O, then added again"
log "p3: $(svcrdma_sum waiters) waiting for slots"
link_delete
if wait_for 30 no_svcrdma_pool; then
	log "p3: svcrdma's pools gone $(since "$LINK_DEL_T") s after the delete started"
else
	bad+=" p3-svcrdma-pools-stay"
fi
sleep 2
link_readd || bad+=" p3-no-$IBDEV"
io_resumes "p3"

step "checks"
fio_running f || bad+=" fio-ended-early"
fio_wait f stop || bad+=" fio"
svcrdma_pools_check

step teardown
timed "umount" umount $MNT || bad+=" umount"
nfsd_down
wait_for 10 no_svcrdma_pool || bad+=" svcrdma-pools-left"
timed "$SRP_TRANSPORT teardown" rdma_link_teardown || bad+=" $SRP_TRANSPORT-teardown"

[ -z "$bad" ] || fail "${bad# }"
pass
