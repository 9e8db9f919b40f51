#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Guest test: a reconnect storm of the NFS client.  NFSv3 and NFSv4.2 hard
# mounts with nconnect=$NCONN each (every transport allocates all the MRs
# it may use when it connects), fio on each (4 KiB random reads and writes
# at queue depth 16, crc32c verified as it goes); the RDMA device deleted
# and added again STORMS times (default 2), so that every transport
# reconnects at once.  Measures how long after each re-add I/O moves on
# both mounts again and how many MRs the transports allocated.  Checks:
# I/O moves again within 60 s of each re-add; fio ends without an error;
# the client's pools end with every slot back and no misuse and go with
# the unmount.  pass() fails the test on any kernel warning.
. "${0%/*}/lib.sh"
NCONN=${NCONN:-8}
STORMS=${STORMS:-2}
MNT=/tmp/mnt
export FIO_WAIT_MAX=60

# xprts_sum <mount point> <field>: a field of every "xprt: rdma" line of
# the mount (one per transport), summed; fields as rdma_xprt_stat's.
xprts_sum() {
	awk -v m="$1" -v f="$2" '
		$1 == "device" { on = ($5 == m) }
		on && $1 == "xprt:" && $2 == "rdma" { n += $(f + 2); x++ }
		END { print n + 0, x + 0 }' /proc/self/mountstats
}

bad=
link_up
nfsd_up
jobs=()
for v in 3 4.2; do
	nfs_mount $v $MNT-v$v nconnect=$NCONN
	jobs+=(--name="v$v" --filename="$MNT-v$v/storm-v$v")
done
fio_start f --direct=1 --ioengine=libaio --verify=crc32c --verify_fatal=1 \
	--serialize_overlap=1 --runtime=600 --time_based --size=16m --bs=4k \
	--rw=randrw --iodepth=16 --numjobs=2 --verify_backlog=256 "${jobs[@]}"
for v in 3 4.2; do
	wait_for 60 nfs_ops_moving "$MNT-v$v" 20 || bad+=" start:v$v-no-io"
	read -r mrs x <<< "$(xprts_sum $MNT-v$v 24)"
	log "v$v: $x transport(s), $mrs MRs allocated"
done
log "$(xprtrdma_pools | wc -l) client pools"

worst=0
for i in $(seq "$STORMS"); do
	step "storm $i of $STORMS"
	link_delete
	sleep 1
	link_readd || bad+=" $i:no-$IBDEV"
	t=$(now)
	for v in 3 4.2; do
		n=$(nfs_ops "$MNT-v$v")
		wait_for 60 nfs_ops_moving "$MNT-v$v" $((n + 20)) || bad+=" $i:v$v-no-io"
	done
	d=$(since "$t")
	log "storm $i: I/O moves on both mounts $d s after the re-add"
	[ "${d%.*}" -lt "$worst" ] || worst=${d%.*}
done

step "checks"
fio_running f || bad+=" fio-ended-early"
fio_wait f stop || bad+=" fio"
for v in 3 4.2; do
	read -r mrs x <<< "$(xprts_sum $MNT-v$v 24)"
	read -r conn _ <<< "$(xprts_sum $MNT-v$v 3)"
	log "v$v: $x transport(s), $conn connects, $mrs MRs allocated"
done
log "slowest recovery: about $worst s"
xprtrdma_pools_check

nfs_down $MNT-v3 $MNT-v4.2

[ -z "$bad" ] || fail "${bad# }"
pass
