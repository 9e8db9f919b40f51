#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Guest test: large transfers over SRP.  ib_srp logs in with
# max_sect=131072 (64 MiB per SCSI command: 34 MRs of 512 pages on rxe;
# 65536 on siw, whose MRs take 256 pages, as a slot bundles at most 64
# MRs) and cmd_sg_entries=255, then, after a logout and
# reload, with cmd_sg_entries=1 and the default max_sect (1024), as
# blktests' srp/007 and 008 do: with one descriptor in the SRP_CMD, a
# request that needs two MRs fails (stock ib_srp too: "Could not fit S/G
# list into SRP_CMD"), and allow_ext_sg does not help, as ib_srpt does
# not fetch external descriptor tables.  Each time, on the LUN's disk: dd of random data in
# 4 MiB and 8 MiB blocks, with O_DIRECT and through the page cache, read
# back and compared; then O_DIRECT pwritev/preadv from and to discontiguous
# user buffers (non-adjacent pages of one mapping, pages of several
# mappings, sub-page pieces), compared.  Checks: the disk's
# max_hw_sectors_kb is that of max_sect, the data, the SCSI error
# counters, no SRP abort, and ib_srp's ib_slot pools idle afterwards.
. "${0%/*}/lib.sh"
MAX_SECT=
BLK_MB=${SRP_LARGE_MB:-8}	# written per dd

# dd_check <label> <bs> <write flags> <read flags> <offset MiB>: write
# $BLK_MB MiB of fresh random data at the offset, read it back, compare; also
# read it back with O_DIRECT when the read went through the page cache.
# Logs the mean request size of the disk's writes and reads.
dd_check() {
	local label=$1 bs=$2 wf=$3 rf=$4 off=$5 n=$((BLK_MB / $2)) w0 r0
	dd if=/dev/urandom of=/tmp/src.bin bs=1M count="$BLK_MB" status=none
	read -r r0 _ _ _ w0 _ < "$STAT"
	timed "$label: write $BLK_MB MiB, bs ${bs}M" dd if=/tmp/src.bin of="$DISK" bs="${bs}M" \
		seek=$((off / bs)) ${wf:+"$wf"} status=none || bad+=" $label-write"
	blockdev --flushbufs "$DISK"
	timed "$label: read back, bs ${bs}M" dd if="$DISK" of=/tmp/back.bin bs="${bs}M" \
		skip=$((off / bs)) count=$n ${rf:+"$rf"} status=none || bad+=" $label-read"
	cmp -s /tmp/src.bin /tmp/back.bin || bad+=" $label-data"
	if [ "$rf" != iflag=direct ]; then
		dd if="$DISK" of=/tmp/back.bin bs="${bs}M" skip=$((off / bs)) count=$n \
			iflag=direct status=none && cmp -s /tmp/src.bin /tmp/back.bin ||
			bad+=" $label-data-on-disk"
	fi
	req_sizes "$label" "$r0" "$w0"
	rm -f /tmp/back.bin
}

# req_sizes <label> <reads before> <writes before>: log the disk's request
# count and mean request size since then.
req_sizes() {
	local r rs w ws
	read -r r _ rs _ w _ ws _ < "$STAT"
	log "$1: $((w - $3)) write requests of $(( (ws - W_SECT) / 2 / (w - $3 ? w - $3 : 1) )) KiB," \
		"$((r - $2)) read requests of $(( (rs - R_SECT) / 2 / (r - $2 ? r - $2 : 1) )) KiB on average"
	R_SECT=$rs W_SECT=$ws
}

# shellcheck disable=SC2317 # called through timed
# sg_check <offset MiB> <seed>: pwritev/preadv with O_DIRECT through
# scattered buffers, compared.
sg_check() {
	python3 - "$DISK" "$1" "$2" <<-'EOF'
	import mmap, os, random, sys

	dev, off, rnd = sys.argv[1], int(sys.argv[2]) << 20, random.Random(int(sys.argv[3]))
	PG = mmap.PAGESIZE

	def pages(m, idx):
	    mv = memoryview(m)
	    return [mv[i * PG:(i + 1) * PG] for i in idx]

	def run(name, wiov, riov):
	    total = sum(len(b) for b in wiov)
	    assert total == sum(len(b) for b in riov), name
	    for b in wiov:
	        b[:] = rnd.randbytes(len(b))
	    fd = os.open(dev, os.O_RDWR | os.O_DIRECT)
	    try:
	        n = os.pwritev(fd, wiov, off)
	        assert n == total, f"{name}: pwritev {n} of {total}"
	        n = os.preadv(fd, riov, off)
	        assert n == total, f"{name}: preadv {n} of {total}"
	        # And once more in one aligned buffer.
	        flat = mmap.mmap(-1, total)
	        n = os.preadv(fd, [flat], off)
	        assert n == total, f"{name}: preadv {n} of {total}"
	    finally:
	        os.close(fd)
	    want = b"".join(wiov)
	    if b"".join(riov) != want or flat[:] != want:
	        print(f"{name}: DATA MISMATCH")
	        return False
	    print(f"{name}: {len(wiov)} write and {len(riov)} read buffers, {total >> 10} KiB verified")
	    return True

	ok = True
	# 256 non-adjacent pages of one mapping, read back into pages of
	# another one in reverse address order.
	a, b = mmap.mmap(-1, 512 * PG), mmap.mmap(-1, 512 * PG)
	ok &= run("every other page", pages(a, range(0, 512, 2)), pages(b, range(511, 0, -2)))
	# Runs of 1..16 pages from separate mappings, read back into single
	# pages of one mapping.
	maps = [mmap.mmap(-1, n * PG) for n in (1, 3, 16, 2, 7, 1, 12, 4)]
	c = mmap.mmap(-1, 2 * 46 * PG)
	ok &= run("separate mappings", [memoryview(m) for m in maps], pages(c, range(1, 92, 2)))
	# Sub-page pieces (512-byte aligned) at page offsets, and whole pages.
	d, e = mmap.mmap(-1, 64 * PG), mmap.mmap(-1, 64 * PG)
	dv, ev = memoryview(d), memoryview(e)
	w = [dv[512:PG], dv[2 * PG:3 * PG], dv[4 * PG:4 * PG + 1024], dv[6 * PG + 2048:8 * PG],
	     dv[10 * PG:10 * PG + 512], dv[12 * PG + 3584:14 * PG]]
	total = sum(len(x) for x in w)
	h = total // 1024 * 512
	r = [ev[PG:PG + h], ev[8 * PG + 512:8 * PG + 512 + total - h]]
	ok &= run("sub-page pieces", w, r)
	sys.exit(0 if ok else 1)
	EOF
}

# phase <cmd_sg_entries> <max_sect>: load ib_srp with it, log in with
# max_sect, run the transfers, check, log out.
phase() {
	local sg=$1 d k hw mx r0 w0
	MAX_SECT=$2
	step "ib_srp cmd_sg_entries=$sg, login with max_sect=$MAX_SECT"
	modprobe ib_srp cmd_sg_entries="$sg" || fail "modprobe ib_srp cmd_sg_entries=$sg"
	srp_login "max_sect=$MAX_SECT"
	d=/sys/block/${DISK#/dev/}
	STAT=$d/stat
	read -r _ _ R_SECT _ _ _ W_SECT _ < "$STAT"
	read -r k < /sys/module/ib_srp/parameters/cmd_sg_entries
	read -r hw < "$d/queue/max_hw_sectors_kb"
	read -r mx < "$d/queue/max_sectors_kb"
	log "cmd_sg_entries $k (host $SRP_HOST: sg_tablesize $(cat "/sys/class/scsi_host/$SRP_HOST/sg_tablesize")," \
		"cmd_sg_entries $(cat "/sys/class/scsi_host/$SRP_HOST/cmd_sg_entries"));" \
		"$DISK: max_hw_sectors_kb $hw max_sectors_kb $mx max_segments $(cat "$d/queue/max_segments")" \
		"max_segment_size $(cat "$d/queue/max_segment_size")"
	[ "$k" = "$sg" ] || bad+=" cmd_sg_entries=$k"
	[ "$hw" = $((MAX_SECT / 2)) ] || bad+=" max_hw_sectors_kb=$hw"
	# Let the block layer send requests as large as the disk takes (the
	# default caps them at 1280 KiB, the LUN's block limits VPD at its
	# backing device's limit), and read ahead as much.
	echo "$hw" > "$d/queue/max_sectors_kb"
	read -r mx < "$d/queue/max_sectors_kb"
	echo 16384 > "$d/queue/read_ahead_kb"
	log "max_sectors_kb $mx (asked for $hw)," \
		"read_ahead_kb $(cat "$d/queue/read_ahead_kb")"
	[ "$mx" -ge $((MAX_SECT / 2 < 8192 ? MAX_SECT / 2 : 8192)) ] ||
		bad+=" max_sectors_kb=$mx"

	dd_check "sg$sg-direct-4M" 4 oflag=direct iflag=direct 0
	dd_check "sg$sg-direct-8M" 8 oflag=direct iflag=direct 16
	dd_check "sg$sg-buffered-4M" 4 conv=fsync "" 32
	dd_check "sg$sg-buffered-8M" 8 conv=fsync "" 48
	read -r r0 _ _ _ w0 _ < "$STAT"
	timed "scattered user buffers" sg_check 64 "$sg" || bad+=" sg$sg-scattered"
	req_sizes "sg$sg-scattered" "$r0" "$w0"

	srp_scsi_errs_check "$DISK"
	srp_no_abort_check
	srp_pools_check
	step "logout, unload ib_srp"
	srp_logout "$SRP_HOST" || bad+=" logout"
	unload ib_srp || bad+=" ib_srp-unload"
}

step "$SRP_TRANSPORT on $NETDEV"
rdma_link_setup || fail "$SRP_TRANSPORT setup"

step "ib_srpt target (raw configfs)"
srp_target_up

bad=
phase 255 $([ "$SRP_TRANSPORT" = siw ] && echo 65536 || echo 131072)
phase 1 1024

step teardown
srp_down
timed "$SRP_TRANSPORT teardown" rdma_link_teardown || bad+=" $SRP_TRANSPORT-teardown"

[ -z "$bad" ] || fail "${bad# }"
pass
