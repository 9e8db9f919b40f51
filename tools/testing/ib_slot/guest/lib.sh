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

# A KASAN kernel (make check DEBUG=1) runs about three times slower than
# the default one: what a test waits for gets three times the time.
WAIT_SCALE=1
zgrep -qx 'CONFIG_KASAN=y' /proc/config.gz 2>/dev/null && WAIT_SCALE=3

# wait_for <seconds> <command...>: poll (every 0.2 s) until the command
# succeeds, for up to <seconds> (times WAIT_SCALE).
wait_for() {
	local end=$((EPOCHSECONDS + $1 * WAIT_SCALE))
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

# KNOWN_LOCKDEP: set by a test, a regex naming a lockdep report of code
# outside the series that the test's scenario provokes; such a report is
# shown and logged, not held against the test.  (Lockdep stops after its
# first report; any other kind of report still fails the test.)
pass() {
	local s re=$SPLAT_RE skip='^$'
	if [ "${IB_SLOT_ALLOW_SPLAT:-0}" != 1 ]; then
		if [ -n "${KNOWN_LOCKDEP:-}" ] && dmesg | grep -q -E "$KNOWN_LOCKDEP"; then
			dmesg | grep -E -A 40 -m 1 'possible circular locking'
			log "a known lockdep report outside the series: $KNOWN_LOCKDEP"
			re=${re/|Call Trace:/}
			skip='possible (circular|recursive) locking'
		fi
		s=$(dmesg | grep -E "$re" | grep -v -E "$skip" | head -n 1)
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
	# Target port in ib_srpt's "guid_name" form: the low 64 bits of GID 0
	# (on siw the MAC sits in the high bits: zeros).  With this form
	# RDMA/CM logins are matched against ACLs named by an address (see
	# srp_acl_of).
	gid0=$(cat "/sys/class/infiniband/$IBDEV/ports/1/gids/0")
	wwn=${gid0#*:*:*:*:}
	SRP_TPG=$CFS/srpt/$wwn/$wwn
	mkdir -p "$SRP_TPG" || fail "srpt port $wwn"
	{ mkdir "$SRP_TPG/lun/lun_0" && ln -s $SRP_BS "$SRP_TPG/lun/lun_0/"; } || fail "LUN 0"
	srp_acl_add "$SRP_ADDR" || fail "ACL for logins to $SRP_ADDR"
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
	local t
	t=$(now)
	modprobe ib_srp || fail "modprobe ib_srp"
	srp_add_target "$SRP_ADDR" "$1" || { srp_login_diag; fail "SRP login to $SRP_ADDR"; }
	log "login and SCSI scan: $(since "$t") s, disk $DISK ($(( $(cat "/sys/block/${DISK#/dev/}/size") / 2048 )) MiB)"
}

# srp_login_diag: what a failed login or SCSI scan leaves to see: the
# logins, the RDMA QPs, ib_srpt's and ib_srp's ib_slot pools, the end of
# the kernel log.
srp_login_diag() {
	local d
	srp_diag
	rdma resource show qp
	[ -n "$(mount_of /sys/kernel/debug)" ] || mount -t debugfs debugfs /sys/kernel/debug
	for d in "$SLOT_DEBUGFS"/srp*; do
		[ -e "$d/stats" ] && { echo "--- $d/stats"; cat "$d/stats"; }
	done
	dmesg | tail -n 30
}

# srp_add_target <address> [option,...]: one more login (ib_srp loaded) to
# the target, at that address of it; sets SRP_HOST to the new SCSI host
# (hostN) and DISK to the disk of its LUN 0.  Returns 1 on error.
SRP_HOST=
srp_add_target() {
	local g h n login
	local -A old=()
	g=$(cat /sys/module/ib_srpt/parameters/srpt_service_guid)
	g=${g#0x}
	login="id_ext=$g,ioc_guid=$g,dest=$(srp_dest "$1"):$SRP_PORT${2:+,$2}"
	for h in $(srp_hosts); do old[$h]=1; done
	n=$(dmesg | wc -l)
	echo "$login" > "/sys/class/infiniband_srp/srp-$IBDEV-1/add_target" ||
		{ echo "login $login failed"; return 1; }
	SRP_HOST=
	for h in $(srp_hosts); do [ -n "${old[$h]}" ] || SRP_HOST=$h; done
	[ -n "$SRP_HOST" ] || { echo "no new SRP remote port after login $login"; return 1; }
	wait_for 20 _srp_host_disk_up "$SRP_HOST" ||
		{ echo "no SCSI disk on $SRP_HOST after login $login"; return 1; }
	wait_for 20 scsi_disk_attached "$DISK" "$n" ||
		{ echo "the probe of $DISK does not end"; return 1; }
	srp_scsi_errs_mark "$DISK"
}

# shellcheck disable=SC2317 # called through wait_for
_srp_host_disk_up() { DISK=$(srp_host_disk "$1"); }

# scsi_disk_attached <disk> <n>: the kernel log has "[sdX] Attached SCSI
# disk" after its first <n> lines: the disk's probe is over.  (The probe
# reads the disk's parameters a second time for the partition scan, after
# the disk shows in sysfs.)
# shellcheck disable=SC2317 # called through wait_for
scsi_disk_attached() {
	dmesg | tail -n +$(($2 + 1)) | grep -q -F "[${1#/dev/}] Attached SCSI disk"
}

# srp_hosts: the SCSI hosts (hostN) of the SRP logins, one a line.
srp_hosts() {
	local p n
	for p in /sys/class/srp_remote_ports/port-*; do
		[ -e "$p" ] || continue
		n=${p##*/port-}
		echo "host${n%%:*}"
	done
}

# srp_host_disk <hostN> [lun]: the SCSI disk (/dev/sdX) of LUN <lun>
# (default 0) of that SRP login, once it has a size.
srp_host_disk() {
	local b s
	for b in /sys/class/scsi_host/"$1"/device/target*/*:"${2:-0}"/block/*; do
		[ -e "$b/size" ] && read -r s < "$b/size" && [ "$s" -gt 0 ] &&
			{ echo "/dev/${b##*/}"; return 0; }
	done
	return 1
}

# srp_host_rport <hostN>: the /sys/class/srp_remote_ports entry of that login.
srp_host_rport() {
	local p
	for p in /sys/class/srp_remote_ports/port-"${1#host}":*; do
		[ -e "$p" ] && { echo "$p"; return 0; }
	done
	return 1
}

# srp_rport_running <remote port>: its state (srp_host_rport) is "running".
# shellcheck disable=SC2317 # called through wait_for
srp_rport_running() {
	local s
	read -r s < "$1/state" && [ "$s" = running ]
}

# srp_logout <hostN>: delete that login's remote port and wait until its
# SCSI host is gone.  Returns 1 if it stays.
srp_logout() {
	local p
	p=$(srp_host_rport "$1") || return 1
	echo 1 > "$p/delete" || return 1
	wait_for 20 _srp_host_gone "$1"
}

# shellcheck disable=SC2317 # called through wait_for
_srp_host_gone() { [ ! -e "/sys/class/scsi_host/$1" ]; }

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

# shellcheck disable=SC2317 # called through wait_for
srp_gone() {
	[ -z "$(srp_hosts)" ] && [ ! -e "/sys/class/scsi_host/$SRP_HOST" ] && srp_no_lio_disk
}

# shellcheck disable=SC2317 # called through wait_for
_pid_gone() { ! kill -0 "$1" 2>/dev/null; }

# link_up: rdma_link_setup as a step of its own, with debugfs mounted;
# fails the test if the device does not come up.
link_up() {
	step "$SRP_TRANSPORT on $NETDEV"
	rdma_link_setup || fail "$SRP_TRANSPORT setup"
	[ -n "$(mount_of /sys/kernel/debug)" ] || mount -t debugfs debugfs /sys/kernel/debug
}

# link_delete: "rdma link delete $IBDEV", which must return within 60 s
# (otherwise the blocked tasks go to the kernel log and the test fails
# there) and succeed; if it fails, a word goes to $bad.  Sets LINK_DEL_T to
# the time the delete started.
link_delete() {
	local pid
	LINK_DEL_T=$(now)
	rdma link delete "$IBDEV" &
	pid=$!
	if wait_for 60 _pid_gone "$pid"; then
		wait "$pid" || bad+=" rdma-link-delete-failed"
		log "rdma link delete $IBDEV: $(since "$LINK_DEL_T") s"
	else
		echo w > /proc/sysrq-trigger
		fail "rdma link delete $IBDEV still running after 60 s"
	fi
}

# link_readd: $IBDEV added again after link_delete, active within 10 s.
link_readd() {
	rdma link add "$IBDEV" type "$SRP_TRANSPORT" netdev "$NETDEV" &&
		wait_for 10 dev_active "$IBDEV"
}

# srp_link_delete: link_delete under the SRP login, which must be gone
# with its disk 30 s later; if not, a word goes to $bad.
srp_link_delete() {
	link_delete
	wait_for 30 srp_gone || bad+=" srp-login-stays"
}

# srp_down: log out, remove the target and unload SRP and LIO; each step
# that fails adds a word to $bad.  LUNs and ACLs that a test added (see
# srp_lun_add, srp_acl_add) go too.
srp_down() {
	local t p d
	t=$(now)
	for p in /sys/class/srp_remote_ports/*; do
		[ -e "$p/delete" ] && echo 1 > "$p/delete"
	done
	wait_for 20 srp_no_lio_disk || bad+=" logout"
	unload ib_srp scsi_transport_srp || bad+=" ib_srp-unload"
	echo 0 > "$SRP_TPG/enable"
	for d in "$SRP_TPG"/acls/*/lun_* "$SRP_TPG"/lun/lun_*; do
		[ -d "$d" ] && _srp_unlink "$d" && rmdir "$d"
	done
	for d in "$SRP_TPG"/acls/* "$SRP_TPG" "${SRP_TPG%/*}" "$CFS/srpt" "$CFS"/core/iblock_0/*/ \
		$CFS/core/iblock_0; do
		[ -d "$d" ] && { rmdir "$d" || bad+=" configfs-teardown"; }
	done
	for d in /sys/kernel/config/nullb/nullb*; do
		[ -d "$d" ] && { echo 0 > "$d/power"; rmdir "$d"; }
	done
	unload ib_srpt target_core_iblock target_core_file target_core_mod null_blk ||
		bad+=" target-unload"
	log "logout and target teardown: $(since "$t") s"
}

# _srp_unlink <configfs dir>: remove the symbolic links in it.
_srp_unlink() {
	local f
	for f in "$1"/*; do
		[ -L "$f" ] && { rm "$f" || return 1; }
	done
	return 0
}

# srp_acl_add <address>: the ACL of the logins to that address of the
# target, with every LUN of the target port mapped.
srp_acl_add() {
	local l a
	a=$SRP_TPG/acls/$(srp_acl_of "$1")
	mkdir -p "$a" || return 1
	for l in "$SRP_TPG"/lun/lun_*; do
		[ -d "$l" ] || continue
		{ mkdir -p "$a/${l##*/}" && ln -s "$l" "$a/${l##*/}/"; } || return 1
	done
}

# srp_acl_of <address>: the name of the ACL of the logins to that address
# of the target.  ib_srpt names a login over RDMA/CM after the source
# address of its own end of the connection (it calls it the initiator's):
# the target's address the initiator logged in to, as %pIS prints it
# (IPv6 with all eight groups of four digits).
srp_acl_of() {
	local h t g n i out=()
	case $1 in
	*:*) ;;
	*) echo "$1"; return ;;
	esac
	IFS=: read -r -a h <<< "${1%%::*}"
	t=()
	[[ $1 == *::* ]] && IFS=: read -r -a t <<< "${1#*::}"
	n=$((8 - ${#h[@]} - ${#t[@]}))
	for g in "${h[@]}"; do out+=("$(printf %04x $((16#$g)))"); done
	for ((i = 0; i < n; i++)); do out+=(0000); done
	for g in "${t[@]}"; do out+=("$(printf %04x $((16#$g)))"); done
	(IFS=:; echo "${out[*]}")
}

# srp_dest <address>: the address as add_target's dest= takes it.
srp_dest() {
	case $1 in
	*:*) echo "[$1]" ;;
	*) echo "$1" ;;
	esac
}

# srp_lun_add <n> <block device>: LUN <n> of the target port on an iblock
# backstore of the block device, mapped in every ACL.
srp_lun_add() {
	local bs=$CFS/core/iblock_0/${2##*/} a
	{ mkdir -p "$bs" && echo "udev_path=$2" > "$bs/control" && echo 1 > "$bs/enable"; } ||
		return 1
	{ mkdir "$SRP_TPG/lun/lun_$1" && ln -s "$bs" "$SRP_TPG/lun/lun_$1/"; } || return 1
	for a in "$SRP_TPG"/acls/*; do
		[ -d "$a" ] || continue
		{ mkdir "$a/lun_$1" && ln -s "$SRP_TPG/lun/lun_$1" "$a/lun_$1/"; } || return 1
	done
}

# srp_lun_del <n>: remove LUN <n> from the ACLs and the target port, and
# its backstore.
srp_lun_del() {
	local a bs
	for a in "$SRP_TPG"/acls/*/lun_"$1"; do
		[ -d "$a" ] || continue
		{ _srp_unlink "$a" && rmdir "$a"; } || return 1
	done
	for bs in "$SRP_TPG/lun/lun_$1"/*; do
		[ -L "$bs" ] && bs=$(readlink -f "$bs") && break
	done
	{ _srp_unlink "$SRP_TPG/lun/lun_$1" && rmdir "$SRP_TPG/lun/lun_$1"; } || return 1
	[ -d "$bs" ] && rmdir "$bs"
}

# ---- the RDMA devices of the SRP tests: soft-RoCE or soft-iWARP ----
# SRP_TRANSPORT (rxe, siw) is an environment variable of the guest: a kernel
# argument, e.g. vmtest.sh with VM_ARGS=SRP_TRANSPORT=siw; the NFS tests
# take it too.  Either way the target and the initiator use one device,
# $IBDEV on $NETDEV, and the initiator logs in to an address of its own,
# $SRP_ADDR (the NFS client mounts from it, see nfs_server).
#   rxe (default): rxe0, IPv4.
#   siw: siw0, and siwlo on lo: siw binds a listener on the wildcard
#       address (ib_srpt's RDMA/CM listener) to its netdev, and a TCP
#       connection to an address of the same host comes in through lo.
#       siwlo's listener takes it, and RDMA/CM then finds the device of
#       the connection's local address, siw0.  The addresses are IPv6:
#       ib_srpt listens on the IPv6 wildcard address, and over iWARP the
#       IPv4-mapped local address of an IPv4 connection to that matches
#       no device.  (A network namespace of its own for the initiator
#       does not do: siw opens the TCP connection of a reconnect in the
#       namespace of the task that asks for it, a kernel worker's.)
SRP_TRANSPORT=${SRP_TRANSPORT:-rxe}
SRP_ADDR=$IP		# the target's address the initiator logs in to
# shellcheck disable=SC2034 # used by the tests
SRP_ADDR2=192.168.78.2	# another one, for a second path (not set up)
SRP_PREFIX=24		# of those addresses
SIW_LO=siwlo

# rdma_link_setup: as rxe_setup, with the device SRP_TRANSPORT asks for;
# sets IBDEV, SRP_ADDR, SRP_ADDR2 and SRP_PREFIX.
rdma_link_setup() {
	local t
	t=$(now)
	case $SRP_TRANSPORT in
	rxe) rxe_setup; return ;;
	siw) ;;
	*) echo "SRP_TRANSPORT=$SRP_TRANSPORT: want rxe or siw"; return 1 ;;
	esac
	# shellcheck disable=SC2034 # used by the tests
	IBDEV=siw0 SRP_ADDR=fd00:78::1 SRP_ADDR2=fd00:78::2 SRP_PREFIX=64
	modprobe -a siw ib_uverbs rdma_ucm || return 1
	ip -batch - <<-EOF || return 1
	link set lo up
	addr add $SRP_ADDR/$SRP_PREFIX dev $NETDEV nodad
	link set $NETDEV mtu $MTU up
	EOF
	# siw0 first: ib_srpt names its ports after the low half of their GID
	# 0, all zeros on siw, and configfs takes the first one of that name.
	rdma link add "$IBDEV" type siw netdev "$NETDEV" || return 1
	rdma link add $SIW_LO type siw netdev lo || return 1
	if ! { wait_for 10 dev_active "$IBDEV" && wait_for 10 dev_active $SIW_LO; }; then
		rdma link show
		return 1
	fi
	log "siw: $IBDEV on $NETDEV ($SRP_ADDR), $SIW_LO on lo, active after $(since "$t") s"
}

# shellcheck disable=SC2317 # called through wait_for
dev_active() {
	local s
	read -r s < "/sys/class/infiniband/$1/ports/1/state" 2>/dev/null && [ "$s" = "4: ACTIVE" ]
}

# rdma_link_teardown: remove the devices of rdma_link_setup that are still
# there and unload the RDMA stack.
rdma_link_teardown() {
	local d
	for d in "$IBDEV" $SIW_LO; do
		[ -e "/sys/class/infiniband/$d" ] || continue
		timeout 60 rdma link delete "$d" || { echo "rdma link delete $d failed"; return 1; }
	done
	unload rdma_ucm rdma_rxe siw ib_uverbs rdma_cm iw_cm ib_cm ib_core
}

# ---- checks of the SRP tests ----
SLOT_DEBUGFS=/sys/kernel/debug/ib_slot

# slot_pools <name>: the debugfs directories of the ib_slot pools named
# <name>-<id>, one a line.
slot_pools() {
	local d
	for d in "$SLOT_DEBUGFS/$1"-*; do
		[ -d "$d" ] && echo "$d"
	done
}

# srp_pools: ib_srp's pools (one per RDMA channel; a reconnect makes new
# ones).
srp_pools() { slot_pools srp; }

# stat_field <file> <field>: the value of the "<field>: <value>" line of a
# debugfs stats file.
stat_field() {
	local k v
	while IFS=: read -r k v; do
		[ "$k" = "$2" ] && { echo "${v# }"; return 0; }
	done < "$1"
	return 1
}

# slot_stat <pool dir> <field>: that field of the pool's stats.
slot_stat() { stat_field "$1/stats" "$2"; }

# shellcheck disable=SC2317 # called through wait_for
srp_pools_idle() {
	local d
	for d in $(srp_pools); do
		[ "$(slot_stat "$d" in_use)" = 0 ] || return 1
	done
}

# srp_pools_check: after the I/O stopped, while logged in: ib_srp has at
# least one ib_slot pool, and within 10 s every one has all its slots back
# (in_use 0) and saw no misuse.  Shows each pool's stats; what is wrong adds
# a word to $bad.
srp_pools_check() {
	local d u m n=0
	[ -n "$(mount_of /sys/kernel/debug)" ] || mount -t debugfs debugfs /sys/kernel/debug
	if [ -z "$(srp_pools)" ]; then
		log "no ib_slot pool of ib_srp in $SLOT_DEBUGFS"
		bad+=" no-srp-ib_slot-pool"
		return 1
	fi
	wait_for 10 srp_pools_idle || log "ib_srp's pools not idle after 10 s"
	for d in $(srp_pools); do
		echo "--- $d/stats"
		cat "$d/stats" || { bad+=" pool-${d##*/}-vanished"; continue; }
		u=$(slot_stat "$d" in_use)
		m=$(slot_stat "$d" misuse)
		[ "$u" = 0 ] || bad+=" pool-${d##*/}-in_use=$u"
		[ "$m" = 0 ] || bad+=" pool-${d##*/}-misuse=$m"
		n=$((n + 1))
	done
	log "ib_slot pools of ib_srp: $n checked (in_use 0, misuse 0 expected)"
}

# srpt_pools [tmr]: the debugfs directories of ib_srpt's ib_slot pools, one
# a line.  ib_srpt has two per RDMA device, shared by all the channels of
# the device: the command pool (srpt-<id>, srpt_slots slots) and, with
# "tmr", the task management pool (srpt-tmr-<id>).
srpt_pools() {
	local d
	if [ "${1:-}" = tmr ]; then
		for d in "$SLOT_DEBUGFS"/srpt-tmr-*; do
			[ -d "$d" ] && echo "$d"
		done
	else
		for d in "$SLOT_DEBUGFS"/srpt-[0-9]*; do
			[ -d "$d" ] && echo "$d"
		done
	fi
}

# srpt_pools_sum <field> [tmr]: that field of ib_srpt's command (or task
# management) pools, summed over the devices.
# shellcheck disable=SC2046 # one pool directory per word
srpt_pools_sum() { stat_sum "$1" $(srpt_pools "${2:-}"); }

# shellcheck disable=SC2317 # called through wait_for
srpt_pools_idle() {
	local d
	for d in $(srpt_pools) $(srpt_pools tmr); do
		[ "$(slot_stat "$d" in_use)" = 0 ] || return 1
		[ "$(slot_stat "$d" waiters)" = 0 ] || return 1
	done
}

# srpt_pools_check: after the I/O stopped: ib_srpt has its command and task
# management pools, and within 10 s every one has all its slots back
# (in_use 0) and no waiter; none saw misuse, and none had more slots out
# than it has (high_water <= size).  Shows each pool's stats; what is
# wrong adds a word to $bad.
srpt_pools_check() {
	local d u w m hw sz
	[ -n "$(mount_of /sys/kernel/debug)" ] || mount -t debugfs debugfs /sys/kernel/debug
	if [ -z "$(srpt_pools)" ] || [ -z "$(srpt_pools tmr)" ]; then
		log "no ib_slot command or task management pool of ib_srpt in $SLOT_DEBUGFS"
		bad+=" no-srpt-ib_slot-pool"
		return 1
	fi
	wait_for 10 srpt_pools_idle || log "ib_srpt's pools not idle after 10 s"
	for d in $(srpt_pools) $(srpt_pools tmr); do
		echo "--- $d/stats"
		cat "$d/stats" || { bad+=" pool-${d##*/}-vanished"; continue; }
		u=$(slot_stat "$d" in_use)
		w=$(slot_stat "$d" waiters)
		m=$(slot_stat "$d" misuse)
		hw=$(slot_stat "$d" high_water)
		sz=$(slot_stat "$d" size)
		[ "$u" = 0 ] || bad+=" pool-${d##*/}-in_use=$u"
		[ "$w" = 0 ] || bad+=" pool-${d##*/}-waiters=$w"
		[ "$m" = 0 ] || bad+=" pool-${d##*/}-misuse=$m"
		[ "$hw" -le "$sz" ] || bad+=" pool-${d##*/}-high_water=$hw-of-$sz"
	done
	log "ib_slot pools of ib_srpt: $(srpt_pools | wc -l) command and" \
		"$(srpt_pools tmr | wc -l) task management pools checked" \
		"(in_use 0, waiters 0, misuse 0 expected)"
}

# srpt_down_check: srp_down, then no pool of ib_srpt may be left (it
# unloaded); otherwise adds a word to $bad.
srpt_down_check() {
	local left
	srp_down
	left=$(srpt_pools; srpt_pools tmr)
	[ -z "$left" ] || { log "pools left: ${left//$'\n'/ }"; bad+=" srpt-pools-left"; }
}

# srpt_no_sq_full_check: ib_srpt never found its Send Queue full (stock
# ib_srpt then dropped the response: "IB send queue full") nor a command
# larger than a channel's slots; otherwise adds a word to $bad.
srpt_no_sq_full_check() {
	local n
	n=$(dmesg | grep -c -i 'send queue full')
	[ "$n" = 0 ] || { log "\"send queue full\" $n times"; bad+=" send-queue-full-$n-times"; }
	n=$(dmesg_count 'needs [0-9]+ slots, the channel holds')
	[ "$n" = 0 ] || { log "commands too large for a channel: $n"; bad+=" $n-commands-over-channel-slots"; }
}

# srp_scsi_errs_mark <disk>...: take the SCSI error counters of those
# disks as they are now as the base of srp_scsi_errs_check (the scan after
# a login may end commands in CHECK CONDITION: LIO rejects MODE SENSE pages
# it lacks).  srp_add_target does it for the disk it found.
declare -A SCSI_ERRS0=()
srp_scsi_errs_mark() {
	local d e o s
	for d in "$@"; do
		s=/sys/block/${d#/dev/}/device
		read -r e < "$s/ioerr_cnt" && read -r o < "$s/iotmo_cnt" &&
			SCSI_ERRS0[${d#/dev/}]="$((e)) $((o))"
	done
}

# srp_scsi_errs_check <disk>...: the SCSI error counters of those disks
# (ioerr_cnt: commands completed with an error, retried ones too; iotmo_cnt:
# timeouts) did not move since srp_scsi_errs_mark, beyond what
# srp_scsi_errs_allow allowed; each one that did adds a word to $bad.
srp_scsi_errs_check() {
	local d n s e o r c e0 o0
	for d in "$@"; do
		n=${d#/dev/}
		s=/sys/block/$n/device
		if ! { read -r e < "$s/ioerr_cnt" && read -r o < "$s/iotmo_cnt" &&
			read -r r < "$s/iorequest_cnt" && read -r c < "$s/iodone_cnt"; }; then
			bad+=" no-counters-$n"
			continue
		fi
		read -r e0 o0 <<< "${SCSI_ERRS0[$n]:-0 0}"
		log "$n: iorequest_cnt $((r)) iodone_cnt $((c)) ioerr_cnt $((e)) iotmo_cnt $((o))" \
			"(expected: ioerr_cnt $e0 iotmo_cnt $o0)"
		[ $((e)) -le "$e0" ] || bad+=" $n-ioerr_cnt+$((e - e0))"
		[ $((o)) = "$o0" ] || bad+=" $n-iotmo_cnt+$((o - o0))"
	done
}

# srp_up [option,...]: rxe or siw, an ib_srpt target and one ib_srp login
# with those options; fails the test on error.
srp_up() {
	step "$SRP_TRANSPORT on $NETDEV"
	rdma_link_setup || fail "$SRP_TRANSPORT setup"
	step "ib_srpt target (raw configfs)"
	srp_target_up
	step "ib_srp initiator"
	srp_login "$@"
}

# srp_finish <disk>...: what every SRP test ends with, still logged in:
# the disks' SCSI error counters, no SRP abort, ib_srp's pools idle; then
# the teardown, and the verdict on $bad.
srp_finish() {
	srp_scsi_errs_check "$@"
	srp_no_abort_check
	srp_pools_check
	srp_end
}

# srp_end: the teardown of srp_up, and the verdict on $bad.
srp_end() {
	step teardown
	srp_down
	timed "$SRP_TRANSPORT teardown" rdma_link_teardown || bad+=" $SRP_TRANSPORT-teardown"
	[ -z "$bad" ] || fail "${bad# }"
	pass
}

# scsi_ua_reports <disk> <message>: how many unit attentions with that
# message (e.g. "Power-on or device reset occurred") the SCSI layer logged
# for the disk's device.
scsi_ua_reports() {
	local h
	h=$(readlink -f "/sys/block/${1#/dev/}/device")
	dmesg | grep -c -F "${h##*/}: $2"
}

# srp_scsi_errs_allow <disk> <n> <why>: <n> more commands of the disk may
# end in an error (CHECK CONDITION for a unit attention of the target,
# which the SCSI layer retries) for srp_scsi_errs_check; logs why.
srp_scsi_errs_allow() {
	local n=${1#/dev/} e0 o0
	read -r e0 o0 <<< "${SCSI_ERRS0[$n]:-0 0}"
	SCSI_ERRS0[$n]="$((e0 + $2)) $o0"
	log "$n: $2 more command(s) may end in CHECK CONDITION: $3"
}

# srp_reconnect_errs_allow <disk> <ioerr_cnt before> <reconnects>: a
# reconnect ends the commands it finds outstanding with DID_RESET, which
# the SCSI layer retries and counts in ioerr_cnt (stock ib_srp does the
# same); allow what the disk counted since then, if there was a reconnect.
# Timeouts stay counted, and fio verifies the data.
srp_reconnect_errs_allow() {
	local n=$(( $(scsi_ioerr "$1") - $2 ))
	[ "$3" -gt 0 ] && [ $n -gt 0 ] &&
		srp_scsi_errs_allow "$1" $n "outstanding commands a reconnect ended with DID_RESET"
	return 0
}

# scsi_ioerr <disk>: the disk's ioerr_cnt, in decimal.
scsi_ioerr() {
	local e
	read -r e < "/sys/block/${1#/dev/}/device/ioerr_cnt" && echo $((e))
}

# dmesg_count <regex>: how many kernel log lines match.
dmesg_count() { dmesg | grep -c -E "$1"; }

# srp_no_abort_check: ib_srp aborted no command (SCSI error handling after
# a timeout); otherwise adds a word to $bad.
srp_no_abort_check() {
	local n
	n=$(dmesg_count 'SRP abort called')
	[ "$n" = 0 ] || { log "SRP abort called $n times"; bad+=" srp-abort-called-$n-times"; }
}

# srp_reconnects: how many times ib_srp reconnected ("reconnect succeeded").
srp_reconnects() { dmesg_count 'ib_srp: reconnect succeeded'; }

# srp_diag: the state of the SRP logins and of their disks' queues.
srp_diag() {
	local h p b f
	for h in $(srp_hosts); do
		p=/sys/class/scsi_host/$h
		echo "$h: state $(cat "$p/state"), host_busy $(cat "$p/host_busy")," \
			"req_lim $(cat "$p/req_lim" 2>/dev/null), zero_req_lim" \
			"$(cat "$p/zero_req_lim" 2>/dev/null), rport $(cat "$(srp_host_rport "$h")/state")"
		for b in "$p"/device/target*/*/block/*; do
			[ -e "$b" ] || continue
			echo "${b##*/}: device state $(cat "$b/device/state"), inflight $(cat "$b/inflight")"
			for f in /sys/kernel/debug/block/"${b##*/}"/hctx*/{busy,dispatch,state}; do
				[ -s "$f" ] && { echo "$f:"; cat "$f"; }
			done
		done
	done
}

# ---- data moved and verified ----
# The fio options of the SRP tests' verified I/O: 4k random reads and
# writes, O_DIRECT, queue depth 16, every read of written data checked.
# shellcheck disable=SC2034 # used by the tests
FIO_VERIFY=(--bs=4k --rw=randrw --direct=1 --ioengine=libaio --iodepth=16
	--verify=crc32c --verify_fatal=1)

# dd_verify <disk> <offset MiB> <size> [file]: fresh random data (kept in
# the file, default /tmp/dd.bin) written there with O_DIRECT, read back
# and compared; logs the result.  Returns 1 on an error or a difference.
# <size> is in MiB, or in KiB with a "k" (on a slow LUN, where each
# command takes seconds); either goes in one write and one read, which the
# block layer splits into commands that run side by side.
dd_verify() {
	local f=${4:-/tmp/dd.bin} t size
	case $3 in
	*k) size=$((${3%k} << 10)) ;;
	*) size=$(($3 << 20)) ;;
	esac
	t=$(now)
	dd if=/dev/urandom of="$f" bs="$size" count=1 status=none
	if dd if="$f" of="$1" bs="$size" seek=$(($2 << 20)) oflag=direct,seek_bytes \
		status=none && dd_same "$1" "$2" "$f"; then
		log "$1: $((size >> 10)) KiB at $2 MiB written, read back and verified in $(since "$t") s"
		return 0
	fi
	log "$1: $((size >> 10)) KiB at $2 MiB: write, read or comparison FAILED"
	return 1
}

# dd_same <disk> <offset MiB> <file>: the disk holds the file there (read
# with O_DIRECT).
dd_same() {
	local size
	size=$(stat -c %s "$3")
	dd if="$1" of=/tmp/dd-back.bin bs="$size" count=1 skip=$(($2 << 20)) \
		iflag=direct,skip_bytes status=none &&
		cmp -s "$3" /tmp/dd-back.bin
}

# fio_start <label> <fio argument>...: fio in the background, its output
# in /tmp/<label>.fio.  The arguments name the job(s) (--name).  Several
# may run at once, told apart by their labels.
declare -A FIO_PID=() FIO_T0=()
fio_start() {
	local label=$1
	shift
	FIO_T0[$label]=$(now)
	fio "$@" > "/tmp/$label.fio" 2>&1 &
	FIO_PID[$label]=$!
}

# disk_moving <disk> <I/Os before>: the disk completed more reads and
# writes than that (from /sys/block/<disk>/stat); disk_ios gives the count.
disk_ios() {
	local r w
	read -r r _ _ _ w _ < "/sys/block/${1#/dev/}/stat" && echo $((r + w))
}
# shellcheck disable=SC2317 # called through wait_for
disk_moving() { [ "$(disk_ios "$1")" -gt "$2" ]; }

# fio_running <label>: that fio has not ended yet; fio_done: it has.
fio_running() { kill -0 "${FIO_PID[$1]}" 2>/dev/null; }
# shellcheck disable=SC2317 # called through wait_for
fio_done() { ! fio_running "$1"; }

# fio_wait <label> [stop]: wait for that fio (with "stop": stop it first
# with SIGINT; fio then exits with status 128), show its summary and save
# its output.  Returns 0 if it reported no error, verification errors
# included.  Fails the test, with the blocked tasks in the kernel log, if
# fio does not end within FIO_WAIT_MAX (120) s.
fio_wait() {
	local r f=/tmp/$1.fio
	[ "${2:-}" = stop ] && kill -INT "${FIO_PID[$1]}" 2>/dev/null
	if ! wait_for "${FIO_WAIT_MAX:-120}" fio_done "$1"; then
		log "fio $1 still running ${FIO_WAIT_MAX:-120} s later; blocked tasks:"
		echo w > /proc/sysrq-trigger
		tail -n 20 "$f"
		srp_diag
		fail "fio $1 does not end"
	fi
	wait "${FIO_PID[$1]}"
	r=$?
	grep -E 'err=|READ:|WRITE:|verify|error|IOPS' "$f"
	log "fio $1: status $r, $(since "${FIO_T0[$1]}") s"
	save "$f"
	[ "${2:-}" = stop ] && [ $r = 128 ] && r=0
	if [ $r != 0 ] || grep -q -E 'err= *[1-9-]|verify.*(fail|bad)|io_u error' "$f"; then
		tail -n 20 "$f"
		return 1
	fi
}

# fio_run <label> <fio argument>...: fio in the foreground, as fio_start
# and fio_wait.
fio_run() { fio_start "$@"; fio_wait "$1"; }

# ---- NFS over RPC/RDMA: nfsd and the client in the same guest ----
NFS_EXPORT=/tmp/export
NFS_PIDS=()

# svcrdma_up <max_slots> <threads>: nfsd_up with svcrdma's max_slots sysctl
# set first (0: left alone) and that many nfsd threads; fails the test on
# error.
svcrdma_up() {
	step "nfsd over RDMA, svcrdma max_slots $1, $2 threads"
	modprobe rpcrdma || fail "modprobe rpcrdma"
	[ "$1" = 0 ] || echo "$1" > /proc/sys/sunrpc/svc_rdma/max_slots ||
		fail "no max_slots sysctl"
	nfsd_up
	rpc.nfsd "$2" || fail "rpc.nfsd $2"
}

# nfs_server: the server part of an NFS mount's device, $SRP_ADDR.
# nfs_netid: the mount's "proto=" for that address.
nfs_server() {
	case $SRP_ADDR in
	*:*) echo "[$SRP_ADDR]" ;;
	*) echo "$SRP_ADDR" ;;
	esac
}

nfs_netid() {
	case $SRP_ADDR in
	*:*) echo rdma6 ;;
	*) echo rdma ;;
	esac
}

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

# svcrdma_pools: svcrdma's pools, one per connection.
svcrdma_pools() { slot_pools svcrdma; }

# pools_sum <name> <field>: that field of the pools named <name>-<id>,
# summed.
# shellcheck disable=SC2046 # one pool directory per word
pools_sum() { stat_sum "$2" $(slot_pools "$1"); }

# stat_sum <field> <pool dir>...: the sum of that stats field over the pools.
stat_sum() {
	local f=$1 d n=0 v
	shift
	for d in "$@"; do
		v=$(slot_stat "$d" "$f") && n=$((n + v))
	done
	echo $n
}

# pool_qp <pool dir>: the number of the first QP attached to the pool (its
# "qp <n>:" stats line), which the pool's qp_error knob takes.
pool_qp() {
	local qp
	qp=$(grep -m 1 '^qp ' "$1/stats" | awk '{ print $2 }')
	echo "${qp%:}"
}

# pools_show <name>: the stats of the pools named <name>-<id>.
pools_show() {
	local d
	for d in $(slot_pools "$1"); do
		echo "--- $d/stats"
		cat "$d/stats"
	done
}

# svcrdma_sum <field>: that field of svcrdma's pools, summed.
svcrdma_sum() { pools_sum svcrdma "$1"; }

# shellcheck disable=SC2317 # called through wait_for
svcrdma_idle() {
	[ "$(svcrdma_sum in_use)" = 0 ] && [ "$(svcrdma_sum waiters)" = 0 ]
}

# shellcheck disable=SC2317 # called through wait_for
no_svcrdma_pool() { [ -z "$(svcrdma_pools)" ]; }

# svcrdma_pools_check: svcrdma's pools have every slot back, nobody
# waiting and no misuse; shows their stats, what is wrong adds a word to
# $bad.
svcrdma_pools_check() {
	wait_for 10 svcrdma_idle || log "svcrdma's pools not idle after 10 s"
	pools_show svcrdma
	log "svcrdma's pools: waits $(svcrdma_sum waits), resumed $(svcrdma_sum resumed)," \
		"exhausted $(svcrdma_sum exhausted), in_use $(svcrdma_sum in_use)," \
		"misuse $(svcrdma_sum misuse)"
	[ "$(svcrdma_sum in_use)" = 0 ] || bad+=" in_use-$(svcrdma_sum in_use)"
	[ "$(svcrdma_sum waiters)" = 0 ] || bad+=" waiters-$(svcrdma_sum waiters)"
	[ "$(svcrdma_sum misuse)" = 0 ] || bad+=" misuse-$(svcrdma_sum misuse)"
}

# nfs_mount <version> <mount point> [option,...]: a hard NFS mount of the
# export over RDMA (NFSv3 without NLM; NFSv4 of the pseudo-root, which is
# the export); fails the test on error.
nfs_mount() {
	local opts rpath=/
	opts=vers=$1,proto=$(nfs_netid),port=20049,hard
	[ "$1" = 3 ] && opts+=,nolock rpath=$NFS_EXPORT
	mkdir -p "$2"
	timed "mount v$1${3:+ $3}" mount -t nfs -o "$opts${3:+,$3}" "$(nfs_server):$rpath" "$2" ||
		fail "mount v$1"
}

# nfs_down <mount point>...: unmount, check that the client's pools go
# with the mounts, stop nfsd and remove the RDMA device; each step that
# fails adds a word to $bad.
nfs_down() {
	local m
	step teardown
	for m in "$@"; do
		timed "umount $m" umount "$m" || bad+=" ${m##*/}:umount"
	done
	wait_for 10 no_xprtrdma_pool || bad+=" xprtrdma-pools-left"
	nfsd_down
	timed "$SRP_TRANSPORT teardown" rdma_link_teardown || bad+=" $SRP_TRANSPORT-teardown"
}

# xprtrdma_pools: the NFS client's pools, two per connection (Calls, and
# backchannel replies: xprtrdma-bc-<id>).
xprtrdma_pools() { slot_pools xprtrdma; }
xprtrdma_sum() { pools_sum xprtrdma "$1"; }

# shellcheck disable=SC2317 # called through wait_for
xprtrdma_idle() { [ "$(xprtrdma_sum in_use)" = 0 ]; }

# shellcheck disable=SC2317 # called through wait_for
no_xprtrdma_pool() { [ -z "$(xprtrdma_pools)" ]; }

# fail_mr_arm: every MR an ib_slot pool allocates from now on is refused
# (a device that can no longer create MRs); fail_mr_disarm ends it and
# prints how many were refused.  Nothing on a kernel without ib_slot.
FAIL_MR=$SLOT_DEBUGFS/fail_mr
FAIL_MR_TIMES=1000000
fail_mr_arm() {
	[ -d $FAIL_MR ] || return 0
	echo 0 > $FAIL_MR/verbose
	echo 100 > $FAIL_MR/probability
	echo $FAIL_MR_TIMES > $FAIL_MR/times
}
fail_mr_disarm() {
	[ -d $FAIL_MR ] || { echo 0; return; }
	echo $((FAIL_MR_TIMES - $(cat $FAIL_MR/times)))
	echo 0 > $FAIL_MR/probability
}

# xprtrdma_pools_check: while mounted and idle, the NFS client's pools have
# every slot back and no misuse (and exist, on a kernel with ib_slot);
# shows their stats, what is wrong adds a word to $bad.
xprtrdma_pools_check() {
	wait_for 10 xprtrdma_idle || log "xprtrdma's pools not idle after 10 s"
	pools_show xprtrdma
	log "xprtrdma's pools: $(xprtrdma_pools | wc -l), in_use $(xprtrdma_sum in_use)," \
		"misuse $(xprtrdma_sum misuse), local_inv $(xprtrdma_sum local_inv)," \
		"remote_inv $(xprtrdma_sum remote_inv), recycled $(xprtrdma_sum recycled)"
	[ ! -d $SLOT_DEBUGFS ] || [ -n "$(xprtrdma_pools)" ] || bad+=" no-xprtrdma-pool"
	[ "$(xprtrdma_sum in_use)" = 0 ] || bad+=" xprtrdma-in_use-$(xprtrdma_sum in_use)"
	[ "$(xprtrdma_sum misuse)" = 0 ] || bad+=" xprtrdma-misuse-$(xprtrdma_sum misuse)"
}

# nfs_ops <mount point>: the READs and WRITEs it completed so far.
nfs_ops() {
	awk -v m="$1" '
		$1 == "device" { on = ($5 == m) }
		on && ($1 == "READ:" || $1 == "WRITE:") { n += $2 }
		END { print n + 0 }' /proc/self/mountstats
}

# shellcheck disable=SC2317 # called through wait_for
nfs_ops_moving() { [ "$(nfs_ops "$1")" -gt "$2" ]; }

# rdma_xprt_stat <mount point> <field>: a field of its "xprt: rdma"
# mountstats line, counted from 1 after "rdma": 3 connect_count,
# 10 bklog_u, 11 read chunks, 12 write chunks, 13 reply chunks, 19 failed
# marshals, 22 MRs recycled, 24 MRs allocated, 25 local invalidations,
# 26 empty send contexts.
rdma_xprt_stat() {
	awk -v m="$1" -v f="$2" '
		$1 == "device" { on = ($5 == m) }
		on && $1 == "xprt:" && $2 == "rdma" { print $(f + 2); exit }' /proc/self/mountstats
}

# mount_rpc_check <mount point>: its RDMA transport connected once, and no
# RPC was retransmitted or timed out (mountstats); otherwise adds words to
# $bad.
mount_rpc_check() {
	local st conn retrans tmo
	st=$(awk -v m="$1" '
		$1 == "device" { on = ($5 == m) }
		on && $1 == "xprt:" && $2 == "rdma" { conn = $5 }
		on && /^[ \t]+[A-Z_0-9]+:/ && NF >= 4 && $2 ~ /^[0-9]+$/ {
			retrans += $3 - $2; tmo += $4
		}
		END { print conn + 0, retrans + 0, tmo + 0 }' /proc/self/mountstats)
	read -r conn retrans tmo <<< "$st"
	log "$1: connect_count $conn, retransmissions $retrans, timeouts $tmo"
	[ "$conn" = 1 ] || bad+=" ${1##*/}:connect_count=$conn"
	[ "$retrans" = 0 ] || bad+=" ${1##*/}:retrans=$retrans"
	[ "$tmo" = 0 ] || bad+=" ${1##*/}:timeouts=$tmo"
}
