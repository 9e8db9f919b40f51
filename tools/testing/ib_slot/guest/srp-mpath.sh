#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Guest test: dm-multipath over two SRP logins to the same LUN, with one
# path at a time logged out and back in under verified I/O.  The second
# login goes to a second address of the target ($SRP_ADDR2 on $NETDEV;
# ib_srpt's RDMA/CM listener takes every address, and names its ACLs by
# them, so that one has an ACL too), with an initiator_ext of its own
# (ib_srp refuses a second login with the same id_ext, ioc_guid and
# initiator_ext, whatever the destination).  The multipath device is a plain
# device-mapper "multipath" table (queue_if_no_path, one round-robin group
# of both paths), reloaded with the new SCSI disk whenever a path comes
# back; no multipathd.  Phases: fio (crc32c verified) on the multipath
# device with the paths' I/O scheduler mq-deadline (3 path cycles), none
# (2), then kyber (2), and fio (O_DIRECT) on files of an ext4 file system
# on it (3 path cycles).  A path cycle: logout, I/O on the other path
# alone, login, table reload.  Checks: fio saw no error, e2fsck finds the
# file system clean, both paths active after each cycle, the surviving
# paths' SCSI error counters, no SRP abort, and ib_srp's ib_slot pools
# idle.
. "${0%/*}/lib.sh"
# 6.12's block layer models queue entry as a lock: removing a path's sd
# disk (sd_remove) while dm-multipath allocates a request on it makes a
# report of q_usage_counter against the writeback work, not of ib_srp.
KNOWN_LOCKDEP='q_usage_counter\(queue\)'
CYCLES=3
# I/O schedulers of the paths for block I/O, with the number of path
# cycles under each.
SCHEDS="mq-deadline:3 none:2 kyber:2"
MP=mpath
MNT=/tmp/mp
# No udev in the guest: libdevmapper makes the /dev/mapper nodes itself.
export DM_DISABLE_UDEV=1
declare -A PATH_ADDR=() PATH_OPT=([a]=initiator_ext=a [b]=initiator_ext=b)
declare -A PATH_HOST=() PATH_DISK=()

# login <a|b>: log path <a|b> in; its disk gets the current scheduler.
login() {
	srp_add_target "${PATH_ADDR[$1]}" "${PATH_OPT[$1]}" || return 1
	PATH_HOST[$1]=$SRP_HOST
	PATH_DISK[$1]=$DISK
	echo "$SCHED" > "/sys/block/${DISK#/dev/}/queue/scheduler" || return 1
	log "path $1: $SRP_HOST, $DISK via ${PATH_ADDR[$1]}"
}

# table: the multipath table of the current paths.
table() {
	local p mm paths=
	for p in a b; do
		read -r mm < "/sys/block/${PATH_DISK[$p]#/dev/}/dev"
		paths+=" $mm 1"
	done
	echo "0 $SECTORS multipath 1 queue_if_no_path 0 1 1 round-robin 0 2 1$paths"
}

# active_paths: how many paths of the multipath device are active (state
# A after a path's major:minor in its status).
active_paths() {
	local w p='' n=0
	for w in $(dmsetup status "$MP"); do
		[[ $p == *:* && $w == A ]] && n=$((n + 1))
		p=$w
	done
	echo $n
}

# shellcheck disable=SC2317 # called through wait_for
all_paths_active() { [ "$(active_paths)" = 2 ]; }

# cycle <a|b> <fio label>: log path <a|b> out, let the I/O run on the other
# one alone, log it back in and reload the table with its new disk; then
# check the other path's SCSI error counters.
cycle() {
	local t o=a
	[ "$1" = a ] && o=b
	t=$(now)
	srp_logout "${PATH_HOST[$1]}" || { bad+=" logout-$1"; return 1; }
	log "path $1 (${PATH_DISK[$1]}) logged out; $(dmsetup status "$MP" | cut -d' ' -f4-)"
	sleep 1
	fio_running "$2" || bad+=" $2-ended-early"
	login "$1" || { bad+=" login-$1"; return 1; }
	{ dmsetup reload "$MP" --table "$(table)" && dmsetup resume "$MP"; } ||
		{ bad+=" reload"; return 1; }
	wait_for 10 all_paths_active || bad+=" paths-$(active_paths)-active"
	log "path $1 back in $(since "$t") s: $(dmsetup table "$MP")"
	sleep 1
	srp_scsi_errs_check "${PATH_DISK[$o]}"
}

# cycles <fio label> <n>: <n> cycles, alternating the path.
cycles() {
	local i v
	for ((i = 0; i < $2; i++)); do
		v=a
		((i % 2)) && v=b
		cycle $v "$1" || return 1
	done
}

step "$SRP_TRANSPORT on $NETDEV, second target address $SRP_ADDR2"
rdma_link_setup || fail "$SRP_TRANSPORT setup"
nodad=
[[ $SRP_ADDR2 == *:* ]] && nodad=nodad
ip addr add "$SRP_ADDR2/$SRP_PREFIX" dev "$NETDEV" $nodad || fail "address $SRP_ADDR2"
PATH_ADDR=([a]=$SRP_ADDR [b]=$SRP_ADDR2)
# RoCE needs the address's GID in the GID table (made in the background).
if [ "$SRP_TRANSPORT" = rxe ]; then
	# shellcheck disable=SC2086 # split into the address's four bytes
	gid2=$(printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' ${SRP_ADDR2//./ })
	wait_for 10 grep -q -x "$gid2" "/sys/class/infiniband/$IBDEV/ports/1/gids/"* ||
		fail "no GID for $SRP_ADDR2"
fi

step "ib_srpt target (raw configfs), ACLs for both addresses"
srp_target_up
srp_acl_add "$SRP_ADDR2" || fail "ACL for $SRP_ADDR2"

step "two SRP logins to the LUN, multipath device"
modprobe -a dm_multipath dm_round_robin ext4 || fail "modprobe dm_multipath dm_round_robin ext4"
modprobe ib_srp || fail "modprobe ib_srp"
SCHED=${SCHEDS%%:*}
login a || fail "login a"
login b || fail "login b"
bad=
# Both paths lead to the same LUN: what one wrote, the other reads.
dd_verify "${PATH_DISK[a]}" 512 4 || bad+=" data-a"
dd_same "${PATH_DISK[b]}" 512 /tmp/dd.bin || fail "the paths lead to different data"
read -r SECTORS < "/sys/block/${PATH_DISK[a]#/dev/}/size"
dmsetup create "$MP" --table "$(table)" || fail "dmsetup create"
wait_for 10 test -b "/dev/mapper/$MP" || fail "no /dev/mapper/$MP"
dmsetup table "$MP"
dmsetup status "$MP"
dd_verify "/dev/mapper/$MP" 512 4 || bad+=" data-mpath"

for sc in $SCHEDS; do
	SCHED=${sc%:*}
	grep -q -w "$SCHED" "/sys/block/${PATH_DISK[a]#/dev/}/queue/scheduler" ||
		{ log "no I/O scheduler $SCHED"; continue; }
	step "block I/O on /dev/mapper/$MP, scheduler $SCHED, ${sc#*:} path cycles"
	for p in a b; do
		echo "$SCHED" > "/sys/block/${PATH_DISK[$p]#/dev/}/queue/scheduler" ||
			bad+=" scheduler-$SCHED"
	done
	fio_start "mp-$SCHED" --name="mp-$SCHED" --filename="/dev/mapper/$MP" --size=64m \
		"${FIO_VERIFY[@]}" --runtime=600 --time_based
	sleep 2
	cycles "mp-$SCHED" "${sc#*:}"
	fio_wait "mp-$SCHED" stop || bad+=" fio-$SCHED"
done

SCHED=${SCHEDS%%:*}
step "ext4 on /dev/mapper/$MP, O_DIRECT file I/O, scheduler $SCHED, $CYCLES path cycles"
for p in a b; do
	echo "$SCHED" > "/sys/block/${PATH_DISK[$p]#/dev/}/queue/scheduler"
done
timed mkfs.ext4 mkfs.ext4 -q -F -E nodiscard,lazy_itable_init=1 "/dev/mapper/$MP" 256M ||
	fail "mkfs.ext4"
mkdir -p $MNT
mount -t ext4 "/dev/mapper/$MP" $MNT || fail "mount"
# The files are written with O_DIRECT, before fio (which would lay them
# out through the page cache) and by fio: the file system's writeback of
# file data through request-based dm-multipath, with a path's SCSI disk
# going away, makes lockdep report a circular dependency between
# ext4_writepages(), the request allocation on the path's queue
# (q_usage_counter) and del_gendisk() flushing the path's writeback work
# (the block layer's annotation of 6.12; SRP plays no part in it).
files=
for i in 0 1 2 3; do
	dd if=/dev/zero of=$MNT/f$i bs=1M count=8 oflag=direct status=none || fail "file f$i"
	files+=${files:+:}$MNT/f$i
done
fio_start mp-fs --name=mp-fs --filename="$files" --size=32m "${FIO_VERIFY[@]}" \
	--runtime=600 --time_based
sleep 2
cycles mp-fs $CYCLES
fio_wait mp-fs stop || bad+=" fio-fs"
umount $MNT || bad+=" umount"
timed e2fsck e2fsck -f -n "/dev/mapper/$MP" || bad+=" e2fsck"

step "checks"
srp_scsi_errs_check "${PATH_DISK[a]}" "${PATH_DISK[b]}"
srp_no_abort_check
srp_pools_check

step teardown
dmsetup remove "$MP" || bad+=" dmsetup-remove"
srp_down
unload dm_round_robin dm_multipath || bad+=" dm-unload"
timed "$SRP_TRANSPORT teardown" rdma_link_teardown || bad+=" $SRP_TRANSPORT-teardown"

[ -z "$bad" ] || fail "${bad# }"
pass
