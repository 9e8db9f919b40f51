#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Guest test: NFSv3 and NFSv4.2 over RPC/RDMA (port 20049), nfsd and the
# client in the same guest on rxe0.  For each version: random data written
# with O_DIRECT, read back and compared (on the client and on the export);
# then a short fio run with crc32c verification on both mounts at once.
. "${0%/*}/lib.sh"
SIZE_MB=${NFS_SIZE_MB:-8}
FIO_RT=${FIO_RT:-5}
MNT=/tmp/mnt

step "rxe0 on $NETDEV"
rxe_setup || fail "rxe setup"

step "nfsd over RDMA"
nfsd_up

dd if=/dev/urandom of=/tmp/src.bin bs=1M count="$SIZE_MB" status=none
bad='' fio_jobs=()
for v in 3 4.2; do
	step "NFSv$v over RDMA"
	mnt=$MNT-v$v f=f-v$v.bin
	mkdir -p "$mnt"
	case $v in
	3) opts=vers=3,rdma,port=20049,nolock rpath=$NFS_EXPORT ;;
	*) opts=vers=$v,rdma,port=20049 rpath=/ ;;
	esac
	timed "mount v$v" mount -t nfs -o "$opts" "$IP:$rpath" "$mnt" || { bad+=" v$v:mount"; continue; }
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
	rm -f "$MNT-v$v/f-v$v.bin"
	timed "umount v$v" umount "$MNT-v$v" || bad+=" v$v:umount"
done

step teardown
rdma resource show
nfsd_down
timed "rxe teardown" rxe_teardown || bad+=" rxe-teardown"

[ -z "$bad" ] || fail "${bad# }"
pass
