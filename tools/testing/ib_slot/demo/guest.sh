#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Guest side of "make run", in three parts:
#  - the example ULP (tools/testing/ib_slot/ulp) moves verified data over
#    soft-RoCE (rxe) and then soft-iWARP (siw), with more requests in
#    flight than its server pool has slots;
#  - the converted ULPs over rxe: an NFSv3 mount over RPC/RDMA (nfsd in
#    this guest: svcrdma and xprtrdma) and an SRP LUN (ib_srpt target,
#    ib_srp initiator) with verified fio I/O on both, first with the
#    pools' usual sizes, then with the server and target pools squeezed
#    (svcrdma's max_slots sysctl, ib_srpt's srpt_slots) so that they push
#    back while the clients see no error;
#  - a closing balance of every pool: every slot back, no misuse.
# Meanwhile this script samples the pools' statistics from debugfs four
# times a second.  The samples go to /run/out/slots.csv for the host to
# plot.
TEST=demo
. "${0%/*}/../guest/lib.sh"
. "${0%/*}/../ulp/guest.sh"
CONNS=4 DEPTH=8 SLOTS=8 SECS=3
FIO_SECS=3		# each fio job of the converted ULPs' phases
SRPT_SLOTS=4		# ib_srpt's command pool when squeezed (4096 otherwise)
SVC_SLOTS=2		# each svcrdma connection's pool when squeezed
NFS_THREADS=16		# more nfsd threads than squeezed slots
MNT=/tmp/mnt
CSV=$OUT/slots.csv
# The ULPs keep both vCPUs busy: the sampler goes first.
renice -n -20 $$ > /dev/null
BAR='################################################################'
# The converted ULPs, in the order of the samples' columns.
ULPS=(srp srpt svcrdma xprtrdma)
FIELDS=(in_use size waiters waits exhausted)

# read_pool <file> <array>: the "key: value" lines of a debugfs file.
read_pool() {
	local -n a=$2
	local k v
	a=()
	while IFS=: read -r k v; do
		[ -n "$k" ] && a["$k"]=${v# }
	done < "$1"
}

# elapsed <start>: seconds since then, to a tenth, in T.
elapsed() {
	local d=$(( ${EPOCHREALTIME/./} - $1 ))
	printf -v T '%d.%d' $((d / 1000000)) $((d / 100000 % 10))
}

# tick: a pause until a quarter second after the last tick (the sample
# itself takes a good part of that under TCG), without starting sleep.
TICK_AT=0
tick() {
	local n=${EPOCHREALTIME/./} d
	if [ "$TICK_AT" -gt $((n - 250000)) ]; then
		TICK_AT=$((TICK_AT + 250000))
	else
		TICK_AT=$((n + 250000))
	fi
	d=$((TICK_AT - n))
	[ $d -gt 0 ] || return 0
	printf -v d '0.%06d' $d
	read -r -t "$d" -u "$TICK"
}

# sample <phase> <start>: print one line of statistics and add it to $CSV;
# STATE is the ULP's state.
# Builtins only: every program started costs a good part of the interval
# under TCG.
sample() {
	local -A s c m
	local f use=0 size=0
	for f in "$POOLS"/ex-server-*/stats; do
		read_pool "$f" s 2>/dev/null || return 1
	done
	for f in "$POOLS"/ex-client-*/stats; do
		[ -e "$f" ] || continue
		read_pool "$f" c
		use=$((use + c[in_use])) size=$((size + c[size]))
	done
	read_pool "$EX/stats" m
	STATE=${m[state]}
	elapsed "$2"
	printf '  %s %5ss  server slots %-*s %2d/%d  waiting %3d  waits %5d  exhausted %5d | client slots %2d/%d | verified %5d\n' \
		"$1" "$T" "${s[size]}" "${BAR:0:${s[in_use]}}" "${s[in_use]}" "${s[size]}" \
		"${s[waiters]}" "${s[waits]}" "${s[exhausted]}" "$use" "$size" "${m[client_verified]}"
	echo "$1,$T,${s[in_use]},${s[size]},${s[waiters]},$use,$size,${m[client_verified]}" >> "$CSV"
}

# run_ulp <phase> <addr>: load the ULP, sample until its clients are done,
# show what it did and check the balances, unload it.
run_ulp() {
	local t
	step "$1: $CONNS clients x $DEPTH requests in flight, a server pool of $SLOTS slots, ${SECS} s"
	echo "  Each client has a no-exhaust pool of $DEPTH slots (one rkey MR each);"
	echo "  the server's back-pressure pool is shared by its $CONNS QPs, so of the"
	echo "  $((CONNS * DEPTH)) requests offered, $SLOTS run and the rest wait in its FIFO."
	t=$(now)
	ulp_load addr="$2" nr_conns=$CONNS depth=$DEPTH pool_size=$SLOTS \
		nr_reqs=0 duration_ms=$((SECS * 1000)) || fail "insmod on $1"
	while sample "$1" "$t" && [ "$STATE" != "done" ]; do
		[ $((${EPOCHREALTIME/./} - t)) -lt $(((SECS + 30) * 1000000)) ] ||
			fail "$1: the run did not end"
		tick
	done
	wait_for 10 pools_idle
	sample "$1" "$t"
	echo
	echo "  data: $(ex_stat client_verified) requests of 16 KiB verified," \
		"$(ex_stat client_bad) bad, $(ex_stat client_aborted) aborted"
	echo "  back-pressure: $(ex_stat server_waits) of $(ex_stat server_cmds) commands waited," \
		"all resumed in FIFO order ($(ex_stat server_fifo_inversions) inversions)"
	echo "  RDMA READ sink: $(ex_stat server_read_mr) through the slot's lkey MR," \
		"$(ex_stat server_read_sge) as direct SGEs"
	echo "  rkeys invalidated by the server's SEND_WITH_INV: $(sum_pools client remote_inv)," \
		"by a LOCAL_INV: $(sum_pools client local_inv)"
	echo "  --- $(pool_files server)"
	sed 's/^/  /' "$(pool_files server)"
	ulp_check_balances
	ulp_unload || fail "rmmod"
	log "$1 done in $(since "$t") s"
}

# ulp_of <pool>: the converted ULP whose I/O goes through the pool (one of
# $ULPS), in U; returns 1 for other pools.  ib_srpt's task management pools and
# xprtrdma's backchannel pools carry none here: the closing balance shows
# them, the samples do not.
ulp_of() {
	case $1 in
	srp-[0-9]*) U=srp ;;
	srpt-[0-9]*) U=srpt ;;
	svcrdma-*) U=svcrdma ;;
	xprtrdma-[0-9]*) U=xprtrdma ;;
	*) return 1 ;;
	esac
}

# ulps_header: the column heads of sample_ulps.
ulps_header() {
	printf '  %-13s | %-9s | %-27s | %-27s | %s\n' "" "srp" "srpt" "svcrdma" "xprtrdma"
	printf '  %-7s %5s | %9s | %9s %4s %6s %5s | %9s %4s %6s %5s | %9s\n' "" "" \
		slots slots wait waits exh slots wait waits exh slots
}

# sample_ulps <phase> <start>: one line of the converted ULPs' pools,
# summed per ULP: slots in use/size, and for the target's and the server's
# back-pressure pools the requests waiting now, and how many waited and
# found the pool empty so far (the initiators' no-exhaust pools never
# wait); printed and added to $CSV.  Until a slot is first seen in use
# (fio takes seconds to start under TCG) the lines are left out: IDLE
# stays 1.  Builtins only, as sample.
IDLE=1
sample_ulps() {
	local -A p=() n=()
	local f g k csv='' busy=0
	for f in "$POOLS"/*/stats; do
		g=${f%/stats}
		ulp_of "${g##*/}" || continue
		# The pool may go between the glob and the read.
		read_pool "$f" p 2>/dev/null || continue
		for k in "${FIELDS[@]}"; do
			n[$U.$k]=$(( ${n[$U.$k]:-0} + ${p[$k]:-0} ))
		done
		busy=$((busy + ${p[in_use]:-0} + ${p[waiters]:-0}))
	done
	[ $IDLE = 1 ] && [ $busy = 0 ] && return 0
	IDLE=0
	for g in "${ULPS[@]}"; do
		for k in "${FIELDS[@]}"; do
			n[$g.$k]=${n[$g.$k]:-0}
			csv+=,${n[$g.$k]}
		done
	done
	elapsed "$2"
	printf '  %-7s %4ss | %9s | %9s %4d %6d %5d | %9s %4d %6d %5d | %9s\n' "$1" "$T" \
		"${n[srp.in_use]}/${n[srp.size]}" \
		"${n[srpt.in_use]}/${n[srpt.size]}" "${n[srpt.waiters]}" "${n[srpt.waits]}" \
		"${n[srpt.exhausted]}" \
		"${n[svcrdma.in_use]}/${n[svcrdma.size]}" "${n[svcrdma.waiters]}" \
		"${n[svcrdma.waits]}" "${n[svcrdma.exhausted]}" \
		"${n[xprtrdma.in_use]}/${n[xprtrdma.size]}"
	# The example ULP's columns stay empty.
	echo "$1,$T,,,,,,$csv" >> "$CSV"
	WAITS_SRPT=${n[srpt.waits]} WAITS_SVC=${n[svcrdma.waits]}
}

# ulps_idle: every pool of the converted ULPs has all its slots back and
# no waiter.
# shellcheck disable=SC2317 # called through wait_for
ulps_idle() {
	local -A p
	local f
	for f in "$POOLS"/*/stats; do
		read_pool "$f" p 2>/dev/null || continue
		[ "${p[in_use]}" = 0 ] || return 1
		[ "${p[waiters]}" = 0 ] || return 1
	done
}

# ulps_fio <phase> <queue depth>: fio on a file of the NFS mount and on
# the SRP disk at once, 4 KiB random reads and writes with O_DIRECT,
# crc32c verified, $FIO_SECS s; sampled until they end.  One fio runs both
# jobs: it takes seconds to start under TCG (it links some 60 libraries).
# FIO_RC gets its status for each job, FIO_ERR the job's own error (its
# "err=": 0, or the errno of the first one, verification included) and
# FIO_ON what the job ran on.
declare -A FIO_RC=() FIO_ERR=() FIO_ON=()
FIO_JOBS=()
ulps_fio() {
	local t j k e r
	t=$(now) IDLE=1
	# --nice: the jobs yield to the sampler (fio adds it to the -20 they
	# inherit from this script).
	fio_start "$1" --nice=19 "${FIO_VERIFY[@]}" --iodepth="$2" --runtime="$FIO_SECS" \
		--time_based --name="$1-nfs" --filename="$MNT/$1.bin" --size=16m \
		--name="$1-srp" --filename="$DISK" --size=64m
	FIO_JOBS+=("$1-nfs" "$1-srp")
	FIO_ON[$1-nfs]="$MNT/$1.bin, queue depth $2"
	FIO_ON[$1-srp]="$DISK, queue depth $2"
	ulps_header
	while sample_ulps "$1" "$t" && fio_running "$1"; do
		[ $((${EPOCHREALTIME/./} - t)) -lt $(((FIO_SECS + 60) * 1000000)) ] ||
			fail "$1: fio did not end"
		tick
	done
	wait_for 10 ulps_idle
	sample_ulps "$1" "$t"
	echo
	fio_wait "$1"
	r=$?
	[ $r = 0 ] || bad+=" fio-$1"
	# "<job>: (groupid=0, jobs=1): err= 0: pid=...", "err=84" if two digits
	while read -r j k; do
		[[ $j == "$1"-*: && $k == *"): err="* ]] || continue
		e=${k#*): err=}
		e=${e%%[:(]*}
		FIO_ERR[${j%:}]=${e// /}
	done < "/tmp/$1.fio"
	for j in "$1-nfs" "$1-srp"; do
		FIO_RC[$j]=$r
		[ "${FIO_ERR[$j]:-none}" = 0 ] || bad+=" fio-$j-err=${FIO_ERR[$j]:-none}"
	done
}

# balance <phase>: once the I/O stopped, every pool's figures go to BAL
# for the closing table; a pool with slots out, waiters, misuse or a wait
# that did not resume adds a word to $bad.
BAL=()
balance() {
	local -A p
	local f g row
	wait_for 10 ulps_idle || log "$1: pools not idle after 10 s"
	for f in "$POOLS"/*/stats; do
		g=${f%/stats}
		g=${g##*/}
		read_pool "$f" p || { bad+=" $1:$g-vanished"; continue; }
		printf -v row '  %-8s %-14s %5d %6d %10d %7d %6d %7d %9d %6d' "$1" "$g" \
			"${p[size]}" "${p[in_use]}" "${p[high_water]}" "${p[waiters]}" \
			"${p[waits]}" "${p[resumed]}" "${p[exhausted]}" "${p[misuse]}"
		BAL+=("$row")
		[ "${p[in_use]}" = 0 ] || bad+=" $1:$g-in_use=${p[in_use]}"
		[ "${p[waiters]}" = 0 ] || bad+=" $1:$g-waiters=${p[waiters]}"
		[ "${p[misuse]}" = 0 ] || bad+=" $1:$g-misuse=${p[misuse]}"
		[ "${p[resumed]}" = "${p[waits]}" ] || bad+=" $1:$g-resumed=${p[resumed]}-of-${p[waits]}"
	done
}

# clients_check: what the clients saw: the SCSI disk no error or timeout,
# the mount no retransmission or timeout and one connection, ib_srp no
# abort.  What is wrong adds a word to $bad.
clients_check() {
	srp_scsi_errs_check "$DISK"
	srp_no_abort_check
	mount_rpc_check $MNT
}

# srp_ready: the ib_srpt target on rxe0 with its defaults and one ib_srp
# login; sets DISK.
# shellcheck disable=SC2119 # no target port attributes
srp_ready() { srp_target_up; srp_login; }

# nfs_mount: NFSv3 over RPC/RDMA of the export, at $MNT, with a sparse
# file for each fio job (no lay-out pass).
nfs_mount() {
	timed "mount" mount -t nfs -o "vers=3,proto=$(nfs_netid),port=20049,nolock" \
		"$(nfs_server):$NFS_EXPORT" $MNT || fail "NFS mount"
	case $(mount_of $MNT) in *proto=rdma*) ;; *) fail "the mount is not over RDMA" ;; esac
	truncate -s 16m "$NFS_EXPORT/ulps.bin" "$NFS_EXPORT/exhaust.bin"
}

step "soft-RoCE and soft-iWARP on two dummy netdevs"
rxe_setup || fail "rxe setup"
siw_setup || fail "siw setup"
rdma link show | sed 's/^/  /'
{
	printf 'phase,t,server_in_use,server_size,waiters,client_in_use,client_size,verified'
	for g in "${ULPS[@]}"; do
		for k in "${FIELDS[@]}"; do
			printf ',%s_%s' "$g" "$k"
		done
	done
	echo
} > "$CSV"
mkfifo /tmp/tick && exec {TICK}<> /tmp/tick	# never written: read -t times out

run_ulp rxe "$IP"
run_ulp siw "$SIW_IP"
siw_teardown || fail "siw teardown"

# ---- the converted ULPs over rxe ----
bad=
# rpcbind refuses rpcinfo's first calls while it starts: no news.
svcrdma_up 0 $NFS_THREADS 2> >(grep -v -F 'Connection refused' >&2)
step "NFSv3 over RDMA (xprtrdma, svcrdma) and an SRP LUN (ib_srp, ib_srpt) on rxe0"
mkdir -p $MNT
nfs_mount
srp_ready

step "ulps: fio on the NFS mount and on the SRP disk, queue depth 16, ${FIO_SECS} s"
echo "  Every pool at its usual size: ib_srpt's command pool holds 4096 commands,"
echo "  svcrdma's one per credit of the connection.  Per ULP, summed over its pools"
echo "  (one per SRP channel, per NFS connection; ib_srpt's task management and"
echo "  xprtrdma's backchannel pools show in the closing balance): slots in use/size,"
echo "  requests waiting now, how many waited and found the pool empty so far."
ulps_fio ulps 16
log "ulps: waits in ib_srpt's pool $WAITS_SRPT, in svcrdma's $WAITS_SVC"
clients_check
balance ulps

step "exhaust: svcrdma max_slots $SVC_SLOTS, ib_srpt srpt_slots $SRPT_SLOTS"
# The sysctl sizes the pools of new connections: mount again.  srpt_slots
# is read when ib_srpt adds the device: load it again.
timed "umount" umount $MNT || fail "umount"
wait_for 10 no_svcrdma_pool || log "svcrdma's pool of the old connection is still there"
echo $SVC_SLOTS > /proc/sys/sunrpc/svc_rdma/max_slots || fail "no max_slots sysctl"
# The disk may go while srp_down looks at it.
srp_down 2> >(grep -v -F 'No such file or directory' >&2)
modprobe ib_srpt srpt_slots=$SRPT_SLOTS || fail "modprobe ib_srpt srpt_slots=$SRPT_SLOTS"
nfs_mount
srp_ready
echo "  fio at queue depth 32 against $SRPT_SLOTS target and $SVC_SLOTS server slots:"
echo "  the rest waits in the pools' FIFOs, the clients see no error."
ulps_fio exhaust 32
clients_check
balance exhaust
[ "$WAITS_SRPT" -gt 0 ] || bad+=" exhaust:srpt-no-waits"
[ "$WAITS_SVC" -gt 0 ] || bad+=" exhaust:svcrdma-no-waits"

step "closing balance: every pool once the I/O stopped"
printf '  %-8s %-14s %5s %6s %10s %7s %6s %7s %9s %6s\n' phase pool size in_use \
	high_water waiting waits resumed exhausted misuse
printf '%s\n' "${BAL[@]}"
echo
printf '  %-12s %6s %4s  %s\n' "fio job" status err on
for j in "${FIO_JOBS[@]}"; do
	printf '  %-12s %6s %4s  %s\n' "$j" "${FIO_RC[$j]}" "${FIO_ERR[$j]:-none}" "${FIO_ON[$j]}"
done
[ -z "$bad" ] || fail "${bad# }"
log "every slot back, no misuse, every wait resumed, every fio job verified its data"
# No teardown: the VM stops here, and the tests of "make check" unload
# all of it (guest/nfs-rdma.sh, srp.sh, ...).
pass
