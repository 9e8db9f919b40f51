#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Guest test: NFSv3 and NFSv4.2 over RPC/RDMA (port 20049), nfsd and the
# client in the same guest on rxe0.  For each version: random data written
# with O_DIRECT, read back and compared (on the client and on the export);
# a directory of 10 000 entries listed (READDIR replies come back in Reply
# chunks) and, on NFSv4.2, an ACL of 400 entries set (the call goes out as
# a Read list) and read back (a Reply chunk), the chunks seen in the
# mount's counters; then a short fio run with crc32c verification on both
# mounts at once.  The client's pools end with every slot back and no
# misuse, and go with the unmount.
. "${0%/*}/lib.sh"
SIZE_MB=${NFS_SIZE_MB:-8}
FIO_RT=${FIO_RT:-5}
DIR_ENTRIES=10000
ACL_USERS=400
MNT=/tmp/mnt

# big_dir_check <mount point> <label>: a directory of $DIR_ENTRIES files
# made on the export and listed through the mount: every name once, in
# Reply chunks.  What is wrong adds a word to $bad.
big_dir_check() {
	local d=dir-$2 rp t
	mkdir "$NFS_EXPORT/$d" || { bad+=" $2:mkdir"; return; }
	(cd "$NFS_EXPORT/$d" && seq -f 'entry-%05g' $DIR_ENTRIES | xargs touch)
	rp=$(rdma_xprt_stat "$1" 13)
	t=$(now)
	ls -f "$1/$d" | grep '^entry-' | LC_ALL=C sort > /tmp/names
	log "$2: $(wc -l < /tmp/names) names listed in $(since "$t") s," \
		"$(( $(rdma_xprt_stat "$1" 13) - rp )) Reply chunk(s)"
	seq -f 'entry-%05g' $DIR_ENTRIES | cmp -s - /tmp/names || bad+=" $2:dir-listing"
	[ "$(rdma_xprt_stat "$1" 13)" -gt "$rp" ] || bad+=" $2:dir-no-reply-chunk"
	rm -rf "${NFS_EXPORT:?}/$d"
}

# big_acl_check <file> <mount point> <label>: an NFSv4 ACL granting
# $ACL_USERS users access set on the file (a Read list carries the call)
# and read back (a Reply chunk): each user's ACE is there.  What is wrong
# adds a word to $bad.
big_acl_check() {
	local rd rp
	{
		echo 'A::OWNER@:rwatTcCy'
		seq 1000001 $((1000000 + ACL_USERS)) | sed 's/.*/A::&:rwa/'
		echo 'A::EVERYONE@:rtcy'
	} > /tmp/acl.in
	rd=$(rdma_xprt_stat "$2" 11)
	rp=$(rdma_xprt_stat "$2" 13)
	nfs4_setfacl -S /tmp/acl.in "$1" || { bad+=" $3:setfacl"; return; }
	nfs4_getfacl "$1" > /tmp/acl.out || { bad+=" $3:getfacl"; return; }
	sed -n 's/^A::\(10[0-9]\{5\}\):.*/\1/p' /tmp/acl.out | sort -u > /tmp/acl.users
	log "$3: ACL of $(wc -l < /tmp/acl.in) ACEs set, $(wc -l < /tmp/acl.users) users read" \
		"back; $(( $(rdma_xprt_stat "$2" 11) - rd )) Read and" \
		"$(( $(rdma_xprt_stat "$2" 13) - rp )) Reply chunk(s)"
	seq 1000001 $((1000000 + ACL_USERS)) | cmp -s - /tmp/acl.users || bad+=" $3:acl-readback"
	[ "$(rdma_xprt_stat "$2" 11)" -gt "$rd" ] || bad+=" $3:acl-no-read-chunk"
	[ "$(rdma_xprt_stat "$2" 13)" -gt "$rp" ] || bad+=" $3:acl-no-reply-chunk"
	save /tmp/acl.out
}

step "$SRP_TRANSPORT on $NETDEV"
rdma_link_setup || fail "$SRP_TRANSPORT setup"

step "nfsd over RDMA"
nfsd_up

dd if=/dev/urandom of=/tmp/src.bin bs=1M count="$SIZE_MB" status=none
bad='' fio_jobs=()
for v in 3 4.2; do
	step "NFSv$v over RDMA"
	mnt=$MNT-v$v f=f-v$v.bin
	mkdir -p "$mnt"
	case $v in
	3) opts=vers=3,proto=$(nfs_netid),port=20049,nolock rpath=$NFS_EXPORT ;;
	*) opts=vers=$v,proto=$(nfs_netid),port=20049 rpath=/ ;;
	esac
	timed "mount v$v" mount -t nfs -o "$opts" "$(nfs_server):$rpath" "$mnt" || { bad+=" v$v:mount"; continue; }
	m=$(mount_of "$mnt")
	echo "$m"
	case $m in *proto=rdma*) ;; *) bad+=" v$v:not-rdma" ;; esac

	timed "v$v write ${SIZE_MB} MiB O_DIRECT" \
		dd if=/tmp/src.bin of="$mnt/$f" bs=1M oflag=direct status=none || bad+=" v$v:write"
	timed "v$v read ${SIZE_MB} MiB O_DIRECT" \
		dd if="$mnt/$f" of=/tmp/back.bin bs=1M iflag=direct status=none || bad+=" v$v:read"
	if cmp /tmp/src.bin /tmp/back.bin && cmp /tmp/src.bin "$NFS_EXPORT/$f"; then
		log "v$v: data verified"
	else
		bad+=" v$v:data-mismatch"
	fi
	rm -f /tmp/back.bin
	big_dir_check "$mnt" "v$v"
	[ "$v" = 3 ] || big_acl_check "$mnt/$f" "$mnt" "v$v"
	fio_jobs+=(--name="nfs-v$v" --filename="$mnt/$f")
done

# One fio run with a job per mount: fio takes long to start under TCG.
# The jobs reuse the files written above, so there is no lay-out pass.
if [ ${#fio_jobs[@]} -gt 0 ]; then
	step "fio on $(( ${#fio_jobs[@]} / 2 )) mount(s)"
	t=$(now)
	fio --size="${SIZE_MB}m" --bs=64k --rw=randrw --direct=1 --ioengine=libaio --iodepth=8 \
		--runtime="$FIO_RT" --time_based --verify=crc32c --verify_fatal=1 \
		"${fio_jobs[@]}" > /tmp/fio.log 2>&1
	r=$?
	grep -E '^nfs-|READ:|WRITE:|IOPS' /tmp/fio.log
	log "fio status $r, $(since "$t") s"
	save /tmp/fio.log
	[ $r = 0 ] || { tail -n 20 /tmp/fio.log; bad+=" fio"; }
	n=$(grep -c 'err= 0' /tmp/fio.log)
	[ "$n" = $(( ${#fio_jobs[@]} / 2 )) ] || bad+=" fio-errors"
fi
for v in 3 4.2; do
	mount_of "$MNT-v$v" > /dev/null || continue
	awk -v m="$MNT-v$v" '$1 == "device" { on = ($5 == m) }
		on && $1 == "xprt:" { print m ": " $0 }' /proc/self/mountstats
done
xprtrdma_pools_check
for v in 3 4.2; do
	mount_of "$MNT-v$v" > /dev/null || continue
	rm -f "$MNT-v$v/f-v$v.bin"
	timed "umount v$v" umount "$MNT-v$v" || bad+=" v$v:umount"
done
wait_for 10 no_xprtrdma_pool || bad+=" xprtrdma-pools-left"

step teardown
rdma resource show
nfsd_down
timed "$SRP_TRANSPORT teardown" rdma_link_teardown || bad+=" $SRP_TRANSPORT-teardown"

[ -z "$bad" ] || fail "${bad# }"
pass
