#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Guest test: the RDMA device under NFS/RDMA hard mounts deleted and added
# again under verified I/O.  NFSv3 and NFSv4.2 mounts of one export, fio on
# each (O_DIRECT 4 KiB random reads and writes at queue depth 16, crc32c
# verified as it goes); "rdma link delete" of the device, "rdma link add"
# two seconds later, FLAPS times (default 3).  Checks: every delete returns
# within 60 s; I/O moves on both mounts again after each re-add; fio ends
# without an error (the application sees no EIO and no EINVAL, every byte
# read back verifies); the server's and the client's pools end with every
# slot back and no misuse.
# pass() fails the test on any kernel warning.
. "${0%/*}/lib.sh"
FLAPS=${FLAPS:-3}
MNT=/tmp/mnt
export FIO_WAIT_MAX=60

bad=
link_up

step "nfsd over RDMA, NFSv3 and NFSv4.2 hard mounts"
nfsd_up
jobs=()
for v in 3 4.2; do
	nfs_mount $v $MNT-v$v
	jobs+=(--name="v$v" --filename="$MNT-v$v/flap-v$v")
done
fio_start f --direct=1 --ioengine=libaio --verify=crc32c --verify_fatal=1 \
	--serialize_overlap=1 --runtime=600 --time_based --size=32m --bs=4k \
	--rw=randrw --iodepth=16 --verify_backlog=256 "${jobs[@]}"

for i in $(seq "$FLAPS"); do
	for v in 3 4.2; do
		n=$(nfs_ops "$MNT-v$v")
		wait_for 60 nfs_ops_moving "$MNT-v$v" $((n + 20)) || bad+=" $i:v$v-no-io"
	done
	fio_running f || break
	step "flap $i of $FLAPS"
	link_delete
	sleep 2
	link_readd || bad+=" $i:no-$IBDEV"
	log "$IBDEV back $(since "$LINK_DEL_T") s after the delete started"
done
for v in 3 4.2; do
	n=$(nfs_ops "$MNT-v$v")
	wait_for 60 nfs_ops_moving "$MNT-v$v" $((n + 20)) || bad+=" end:v$v-no-io"
done

step "checks"
fio_running f || bad+=" fio-ended-early"
fio_wait f stop || bad+=" fio"
svcrdma_pools_check
xprtrdma_pools_check

nfs_down $MNT-v3 $MNT-v4.2

[ -z "$bad" ] || fail "${bad# }"
pass
