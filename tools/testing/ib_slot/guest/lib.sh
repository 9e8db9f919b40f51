# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
# Functions for the guest tests, sourced by each guest/<name>.sh.  Sourced, not
# run.
#
# A test ends with exactly one line
#   RESULT <name> PASS
#   RESULT <name> FAIL <reason>
# printed by pass or fail; a test that exits any other way gets a FAIL line
# from the EXIT trap.  pass also fails the test when the kernel log shows a
# warning, BUG, lockdep report or similar (unless IB_SLOT_ALLOW_SPLAT=1,
# which run.sh -a IB_SLOT_ALLOW_SPLAT=1 sets).
#
# Network: one soft-RoCE device rxe0 on dummy0 (CONFIG_DUMMY=y creates it at
# boot), address $IP; servers and clients of a test loop back through it.

TEST=${TEST:-${0##*/}}
TEST=${TEST%.sh}
IP=192.168.78.1
NETDEV=dummy0
IBDEV=rxe0
MTU=${IB_SLOT_MTU:-1500}	# of $NETDEV; 9000 gives RoCE MTU 4096
OUT=/run/out		# written files end up on the host (run.sh -o)

# Starting a program costs a good fraction of a second under TCG, so the
# functions here avoid it where they can: time stamps come from bash itself,
# and sleep, mkdir and ln are bash's loadable builtins where the
# bash-builtins package provides them (init.sh sets BASH_LOADABLES_PATH).
for b in sleep mkdir ln; do enable -f "$b" "$b" 2>/dev/null; done
now() { echo "${EPOCHREALTIME/./}"; }
since() { local d=$(( ${EPOCHREALTIME/./} - $1 )); printf '%d.%d' $((d / 1000000)) $((d / 100000 % 10)); }
T_START=$(now)
log() { local t _; read -r t _ < /proc/uptime; echo "[$TEST +${t}s] $*"; }
step() { echo; log "=== $* ==="; }

# timed <label> <command...>: run a command and log how long it took.
timed() {
	local label=$1 t rc
	shift
	t=$(now)
	"$@"
	rc=$?
	log "$label: $(since "$t") s (status $rc)"
	return $rc
}

# wait_for <seconds> <command...>: poll (every 0.2 s) until the command succeeds.
wait_for() {
	local end=$((EPOCHSECONDS + $1))
	shift
	until "$@"; do
		[ "$EPOCHSECONDS" -lt $end ] || return 1
		sleep 0.2
	done
}

_result=
_result() {
	[ -z "$_result" ] || return 0
	_result=$1
	log "total $(since "$T_START") s"
	echo "RESULT $TEST $*"
}
_on_exit() {
	local rc=$?
	[ -n "$_result" ] || _result "FAIL exited with status $rc before a result"
}
trap _on_exit EXIT

# Kernel log lines that make any test fail.
SPLAT_RE='WARNING:|BUG:|Oops|general protection fault|UBSAN:|suspected memory leak|possible (circular|recursive) locking|inconsistent lock state|suspicious RCU usage|blocked for more than|Call Trace:'

fail() {
	_result "FAIL ${*:-unspecified}"
	exit 1
}

pass() {
	local s
	if [ "${IB_SLOT_ALLOW_SPLAT:-0}" != 1 ]; then
		s=$(dmesg | grep -E -m 1 "$SPLAT_RE")
		if [ -n "$s" ]; then
			dmesg | grep -E -B 5 -A 30 -m 1 "$SPLAT_RE"
			fail "kernel log: ${s#\[*\] }"
		fi
	fi
	_result PASS
	exit 0
}

# rxe_setup: load the RDMA stack, put $IP on $NETDEV and rxe0 on top of it,
# and wait until its port is active.
rxe_setup() {
	local t
	t=$(now)
	modprobe -a rdma_rxe ib_uverbs rdma_ucm || return 1
	ip -batch - <<-EOF || return 1
	link set lo up
	addr add $IP/24 dev $NETDEV
	link set $NETDEV mtu $MTU up
	EOF
	rdma link add "$IBDEV" type rxe netdev "$NETDEV" || return 1
	wait_for 10 port_active || { ibv_devinfo -d "$IBDEV"; return 1; }
	log "rxe: $IBDEV on $NETDEV ($IP) active after $(since "$t") s"
}

port_active() {
	local s
	read -r s < "/sys/class/infiniband/$IBDEV/ports/1/state" 2>/dev/null && [ "$s" = "4: ACTIVE" ]
}

# rxe_teardown: remove rxe0 and unload the RDMA stack.  Leaked objects make
# this hang or fail, so the time limits are generous but finite.
rxe_teardown() {
	timeout 60 rdma link delete "$IBDEV" || { echo "rdma link delete $IBDEV failed"; return 1; }
	unload rdma_ucm rdma_rxe ib_uverbs rdma_cm iw_cm ib_cm ib_core
}

# unload <module>...: remove those of the modules that are loaded, in the
# order given (users first), with one rmmod.
unload() {
	local m mods=()
	for m in "$@"; do
		[ -e "/sys/module/$m/initstate" ] && mods+=("$m")
	done
	[ ${#mods[@]} = 0 ] && return 0
	timeout 60 rmmod "${mods[@]}" || { lsmod; echo "cannot unload all of: ${mods[*]}"; return 1; }
}

# rdma_cm_listening: some RDMA/CM id is listening (rdma_cm is loaded).
rdma_cm_listening() {
	rdma resource show cm_id 2>/dev/null | grep -q 'state LISTEN'
}

# mount_of <dir>: the /proc/mounts line of the file system mounted on <dir>.
mount_of() {
	local dev dir rest line=
	while read -r dev dir rest; do
		[ "$dir" = "$1" ] && line="$dev $dir $rest"
	done < /proc/mounts
	[ -n "$line" ] && echo "$line"
}

# Save a file for the host (run.sh -o directory).
save() { [ -d "$OUT" ] && cp "$@" "$OUT"/ 2>/dev/null; }

# ---- SRP: LIO ib_srpt target and ib_srp initiator over RDMA/CM ----
SRP_PORT=5555
CFS=/sys/kernel/config/target
SRP_BS=$CFS/core/iblock_0/nullb0
SRP_TPG=
DISK=

# srp_target_up [attr=value]...: an ib_srpt target on $IBDEV set up through
# raw configfs, one LUN on a memory-backed null_blk (iblock backstore).  The
# arguments set attributes of the target port (attrib/<attr>, e.g.
# srp_sq_size=16) before it is enabled.  Sets SRP_TPG; fails the test on
# error.
srp_target_up() {
	local t m a gid0 wwn
	t=$(now)
	modprobe null_blk nr_devices=1 gb=1 memory_backed=1 || fail "modprobe null_blk"
	for m in target_core_mod target_core_iblock ib_srpt; do
		modprobe $m || fail "modprobe $m"
	done
	{ mkdir -p $SRP_BS && echo udev_path=/dev/nullb0 > $SRP_BS/control &&
		echo 1 > $SRP_BS/enable; } || fail "iblock backstore"
	{ mkdir -p $CFS/srpt && echo $SRP_PORT > $CFS/srpt/discovery_auth/rdma_cm_port; } ||
		fail "ib_srpt RDMA/CM port"
	# Target port in ib_srpt's "guid_name" form: the low 64 bits of GID 0.
	# With this form RDMA/CM logins are matched against ACLs named by
	# initiator IP.
	gid0=$(cat "/sys/class/infiniband/$IBDEV/ports/1/gids/0")
	wwn=${gid0#fe80:0000:0000:0000:}
	SRP_TPG=$CFS/srpt/$wwn/$wwn
	mkdir -p "$SRP_TPG" || fail "srpt port $wwn"
	{ mkdir "$SRP_TPG/lun/lun_0" && ln -s $SRP_BS "$SRP_TPG/lun/lun_0/"; } || fail "LUN 0"
	{ mkdir -p "$SRP_TPG/acls/$IP/lun_0" &&
		ln -s "$SRP_TPG/lun/lun_0" "$SRP_TPG/acls/$IP/lun_0/"; } || fail "ACL for $IP"
	for a in "$@"; do
		echo "${a#*=}" > "$SRP_TPG/attrib/${a%%=*}" || fail "target port attribute $a"
	done
	echo 1 > "$SRP_TPG/enable" || fail "enable the target port"
	log "target port $wwn ready in $(since "$t") s"
}

# srp_login [option,...]: load ib_srp and log in to the target of
# srp_target_up (more add_target options, e.g. queue_size=4, may follow);
# sets DISK to the SCSI disk of its LUN.  Fails the test on error.
srp_login() {
	local t g login
	t=$(now)
	modprobe ib_srp || fail "modprobe ib_srp"
	g=$(cat /sys/module/ib_srpt/parameters/srpt_service_guid)
	g=${g#0x}
	login="id_ext=$g,ioc_guid=$g,dest=$IP:$SRP_PORT${1:+,$1}"
	echo "$login" > "/sys/class/infiniband_srp/srp-$IBDEV-1/add_target" ||
		fail "login $login"
	wait_for 20 srp_lio_disk || fail "no SCSI disk after the SRP login"
	log "login and SCSI scan: $(since "$t") s, disk $DISK ($(( $(cat "/sys/block/${DISK#/dev/}/size") / 2048 )) MiB)"
}

# srp_lio_disk: a SCSI disk of the LIO target is up; sets DISK.
srp_lio_disk() {
	local b
	for b in /sys/block/sd*; do
		[ -e "$b/device/vendor" ] && grep -q LIO "$b/device/vendor" &&
			[ "$(cat "$b/size")" -gt 0 ] && { DISK=/dev/${b##*/}; return 0; }
	done
	return 1
}

# shellcheck disable=SC2317 # called through wait_for
srp_no_lio_disk() { ! srp_lio_disk; }

# srp_down: log out, remove the target and unload SRP and LIO; each step
# that fails adds a word to $bad.
srp_down() {
	local t p
	t=$(now)
	for p in /sys/class/srp_remote_ports/*; do
		[ -e "$p/delete" ] && echo 1 > "$p/delete"
	done
	wait_for 20 srp_no_lio_disk || bad+=" logout"
	unload ib_srp scsi_transport_srp || bad+=" ib_srp-unload"
	echo 0 > "$SRP_TPG/enable"
	rm -f "$SRP_TPG/acls/$IP/lun_0/lun_0"
	rmdir "$SRP_TPG/acls/$IP/lun_0" "$SRP_TPG/acls/$IP"
	rm -f "$SRP_TPG/lun/lun_0/nullb0"
	rmdir "$SRP_TPG/lun/lun_0" "$SRP_TPG" "${SRP_TPG%/*}" $CFS/srpt $SRP_BS \
		$CFS/core/iblock_0 || bad+=" configfs-teardown"
	unload ib_srpt target_core_iblock target_core_file target_core_mod null_blk ||
		bad+=" target-unload"
	log "logout and target teardown: $(since "$t") s"
}

# ---- NFS over RPC/RDMA: nfsd and the client in the same guest ----
NFS_EXPORT=/tmp/export
NFS_PIDS=()

# nfsd_up: rpcrdma, rpcbind, rpc.mountd and nfsd with an RDMA listener on
# port 20049, exporting a tmpfs at $NFS_EXPORT.  Fails the test on error.
nfsd_up() {
	local t
	t=$(now)
	modprobe rpcrdma || fail "modprobe rpcrdma"
	mkdir -p $NFS_EXPORT
	mount -t tmpfs -o size=512m tmpfs $NFS_EXPORT || fail "tmpfs for the export"
	mountpoint -q /proc/fs/nfsd || mount -t nfsd nfsd /proc/fs/nfsd || fail "mount nfsd"
	mount -t rpc_pipefs sunrpc /var/lib/nfs/rpc_pipefs || fail "mount rpc_pipefs"
	mkdir -p /run/rpcbind
	rpcbind -w -f &
	NFS_PIDS+=($!)
	wait_for 10 rpcinfo -p 127.0.0.1 > /dev/null || fail "rpcbind"
	# fsid=0: the export is the NFSv4 pseudo-root (the guest's / is 9p,
	# which nfsd cannot export, so it cannot build a pseudo-root above
	# the export).
	exportfs -o rw,no_root_squash,insecure,no_subtree_check,fsid=0 "*:$NFS_EXPORT" ||
		fail "exportfs"
	rpc.mountd -F &
	NFS_PIDS+=($!)
	wait_for 10 nfs_mountd_up || fail "rpc.mountd"
	# Short lease and grace time, or NFSv4 OPENs wait out a 90 s grace
	# period.
	echo 10 > /proc/fs/nfsd/nfsv4leasetime
	echo 10 > /proc/fs/nfsd/nfsv4gracetime
	rpc.nfsd 4 || fail "rpc.nfsd"
	echo "rdma 20049" > /proc/fs/nfsd/portlist || fail "no RDMA listener for nfsd"
	log "nfsd up in $(since "$t") s, listeners: $(tr '\n' ' ' < /proc/fs/nfsd/portlist)"
}

# shellcheck disable=SC2317 # called through wait_for
nfs_mountd_up() { rpcinfo -p 127.0.0.1 2>/dev/null | grep -q mountd; }

# nfsd_down: stop nfsd and its daemons and unload rpcrdma (every NFS mount
# must be gone); each step that fails adds a word to $bad.
nfsd_down() {
	rpc.nfsd 0
	exportfs -ua
	kill "${NFS_PIDS[@]}"
	wait "${NFS_PIDS[@]}"
	NFS_PIDS=()
	umount /var/lib/nfs/rpc_pipefs
	timed "unload rpcrdma" unload rpcrdma || bad+=" rpcrdma-unload"
}
