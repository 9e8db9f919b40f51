#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Guest test: the NFS client with far more RPCs outstanding than slots.  The
# client's slot table at its minimum (sunrpc.rdma_slot_table_entries 4, so
# each connection's pool has four slots) and its inline thresholds at their
# minimum (rdma_max_inline_read/write 1024: a Call over 1 KiB goes out with
# a Read list, a Reply over 1 KiB comes back in a Write or Reply chunk);
# NFSv3 and NFSv4.2 hard mounts, each with fio at queue depth 64 (4 KiB
# random reads and writes, and 64 KiB random writes at queue depth 16,
# crc32c verified as it goes) while a 2000-entry directory is listed and an
# NFSv4 ACL of 100 users is set and read back, over and over.  Checks: fio
# ends without an error; the listings and ACLs come back whole; each mount
# connected once, retransmitted and timed out nothing and failed no
# marshal; RPCs waited for a slot (the backlog); Read lists, Write chunks
# and Reply chunks were all used; each Calls pool has four slots and never
# had more in use; the pools end idle with no misuse and go with the
# unmount.  pass() fails the test on any kernel warning.
. "${0%/*}/lib.sh"
SLOTS=4
INLINE=1024
RT=${FIO_RT:-20}
ENTRIES=2000
USERS=100
MNT=/tmp/mnt
export FIO_WAIT_MAX=180

# listing_loop <mount point> <dir>: list the directory until fio is done;
# a listing that misses a name leaves /tmp/bad-list.
listing_loop() {
	local n f
	while fio_running f; do
		n=0
		for f in "$1/$2"/entry-*; do
			[ -e "$f" ] && n=$((n + 1))
		done
		[ "$n" = $ENTRIES ] || echo "$1: $n names" >> /tmp/bad-list
	done
}

# acl_loop <file>: set and read back an ACL of $USERS users until fio is
# done; a failure leaves /tmp/bad-acl.
acl_loop() {
	local n
	{
		echo 'A::OWNER@:rwatTcCy'
		seq 1000001 $((1000000 + USERS)) | sed 's/.*/A::&:rwa/'
		echo 'A::EVERYONE@:rtcy'
	} > /tmp/acl.in
	while fio_running f; do
		nfs4_setfacl -S /tmp/acl.in "$1" || { echo setfacl >> /tmp/bad-acl; break; }
		n=$(nfs4_getfacl "$1" | grep -c '^A::10')
		[ "$n" = $USERS ] || echo "getfacl: $n users" >> /tmp/bad-acl
	done
}

bad=
link_up
nfsd_up
echo $SLOTS > /proc/sys/sunrpc/rdma_slot_table_entries || fail "no rdma_slot_table_entries sysctl"
echo $INLINE > /proc/sys/sunrpc/rdma_max_inline_read || fail "no rdma_max_inline_read sysctl"
echo $INLINE > /proc/sys/sunrpc/rdma_max_inline_write || fail "no rdma_max_inline_write sysctl"

step "NFSv3 and NFSv4.2 with $SLOTS slots, $INLINE-byte inline thresholds"
mkdir -p $NFS_EXPORT/dir
(cd $NFS_EXPORT/dir && seq -f 'entry-%05g' $ENTRIES | xargs touch)
touch $NFS_EXPORT/acl
# fio's files laid out on the server: through four slots a lay-out pass
# takes longer than the run on a debug kernel.
for v in 3 4.2; do
	dd if=/dev/zero of=$NFS_EXPORT/small-v$v bs=1M count=16 status=none
	dd if=/dev/zero of=$NFS_EXPORT/large-v$v bs=1M count=32 status=none
done
jobs=()
for v in 3 4.2; do
	mnt=$MNT-v$v
	nfs_mount $v "$mnt"
	jobs+=(--name="small-v$v" --filename="$mnt/small-v$v" --size=16m --bs=4k
	       --rw=randrw --iodepth=64 --verify_backlog=256
	       --name="large-v$v" --filename="$mnt/large-v$v" --size=32m --bs=64k
	       --rw=randwrite --iodepth=16 --verify_backlog=16)
done
for d in $(xprtrdma_pools); do
	case ${d##*/} in xprtrdma-bc-*) continue ;; esac
	n=$(slot_stat "$d" size)
	log "${d##*/}: $n slots"
	[ "$n" = $SLOTS ] || bad+=" ${d##*/}:size-$n"
done

rm -f /tmp/bad-list /tmp/bad-acl
fio_start f --direct=1 --ioengine=libaio --verify=crc32c --verify_fatal=1 \
	--serialize_overlap=1 --runtime="$RT" --time_based "${jobs[@]}"
wait_for 60 nfs_ops_moving $MNT-v3 0 || bad+=" fio-no-io"
listing_loop $MNT-v3 dir &
l3=$!
listing_loop $MNT-v4.2 dir &
l4=$!
acl_loop $MNT-v4.2/acl &
a4=$!
fio_wait f || bad+=" fio"
wait $l3 $l4 $a4
[ ! -e /tmp/bad-list ] || { cat /tmp/bad-list; bad+=" listing"; }
[ ! -e /tmp/bad-acl ] || { cat /tmp/bad-acl; bad+=" acl"; }

step "checks"
for v in 3 4.2; do
	mnt=$MNT-v$v
	awk -v m="$mnt" '$1 == "device" { on = ($5 == m) }
		on && $1 == "xprt:" { print m ": " $0 }' /proc/self/mountstats
	log "v$v: backlog $(rdma_xprt_stat $mnt 10), Read chunks $(rdma_xprt_stat $mnt 11)," \
		"Write chunks $(rdma_xprt_stat $mnt 12), Reply chunks $(rdma_xprt_stat $mnt 13)," \
		"failed marshals $(rdma_xprt_stat $mnt 19)"
	mount_rpc_check $mnt
	[ "$(rdma_xprt_stat $mnt 10)" -gt 0 ] || bad+=" v$v:no-backlog"
	[ "$(rdma_xprt_stat $mnt 11)" -gt 0 ] || bad+=" v$v:no-read-chunk"
	[ "$(rdma_xprt_stat $mnt 12)" -gt 0 ] || bad+=" v$v:no-write-chunk"
	[ "$(rdma_xprt_stat $mnt 13)" -gt 0 ] || bad+=" v$v:no-reply-chunk"
	[ "$(rdma_xprt_stat $mnt 19)" = 0 ] || bad+=" v$v:failed-marshal"
done
for d in $(xprtrdma_pools); do
	case ${d##*/} in xprtrdma-bc-*) continue ;; esac
	n=$(slot_stat "$d" high_water)
	[ "$n" -le $SLOTS ] || bad+=" ${d##*/}:high_water-$n"
done
xprtrdma_pools_check

nfs_down $MNT-v3 $MNT-v4.2

[ -z "$bad" ] || fail "${bad# }"
pass
