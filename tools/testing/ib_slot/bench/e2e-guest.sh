#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Guest side of the end-to-end benchmark, identical on the stock and the
# patched kernel: fio 4 KiB random read/write with crc32c verification over
# SRP (ib_srpt + ib_srp) and over NFSv3/RDMA on rxe0, once per queue depth.
# Each fio run leaves <srp|nfs>-qd<N>.json in /run/out; the kernel's and the
# ULPs' own error counters go to stats.txt, their log lines to ulp-log.txt.
#
# usage (through vm/run.sh): e2e-guest.sh MODE,RUNTIME,SIZE_MB,QD[:QD...]
#   MODE  normal, or constrained: the smallest Send Queue and MR budgets the
#         ULPs accept (srpt srp_sq_size=16, ib_srp queue_size=16; nfsd 4
#         credits and 1 outbound RDMA READ; with CONFIG_SUNRPC_DEBUG also
#         the NFS client's 4 RPC slots and 1 KiB inline thresholds, so that
#         every 4 KiB payload goes through an MR; where ib_srpt pools its
#         Send Queue room, a pool of 8 command slots)
. "${0%/*}/../guest/lib.sh"
MODE=${1:-normal} FIO_RT=${2:-10} SIZE_MB=${3:-16}
IFS=: read -r -a QDS <<< "${4:-1:16}"
MNT=/tmp/mnt
STATS=/tmp/stats.txt

case $MODE in
normal) srp_attr=() srp_opts= srpt_slots= ;;
constrained) srp_attr=(srp_sq_size=16) srp_opts=queue_size=16 srpt_slots=8 ;;
*) fail "unknown mode $MODE" ;;
esac

record() { echo "$1=$2" >> $STATS; }

# fio_job <name> <file> <iodepth>: one verified 4 KiB random read/write
# run; its JSON goes to /run/out/<name>.json.
fio_job() {
	local t r
	t=$(now)
	fio --name="$1" --filename="$2" --size="${SIZE_MB}m" --bs=4k --rw=randrw \
		--direct=1 --ioengine=libaio --iodepth="$3" --runtime="$FIO_RT" \
		--time_based --verify=crc32c --verify_fatal=1 \
		--output-format=json --output="/tmp/$1.json" > "/tmp/$1.err" 2>&1
	r=$?
	log "fio $1: status $r, $(since "$t") s"
	save "/tmp/$1.json"
	record "$1.status" $r
	[ $r = 0 ] || { tail -n 20 "/tmp/$1.err"; bad+=" $1"; }
}

: > $STATS
record mode "$MODE"
record kernel "$(uname -r)"
bad=

step "rxe0 on $NETDEV"
rxe_setup || fail "rxe setup"
# The series' ib_core has it, the stock one does not.
if grep -q ' ib_slot_get' /proc/kallsyms; then record ib_slot yes; else record ib_slot no; fi

step "SRP ($MODE)"
# Only the series' ib_srpt has the parameter.
if [ -n "$srpt_slots" ] && modinfo -p ib_srpt | grep -q '^srpt_slots:'; then
	modprobe ib_srpt srpt_slots=$srpt_slots || fail "modprobe ib_srpt"
	record srpt.slots "$srpt_slots"
fi
srp_target_up "${srp_attr[@]}"
srp_login "$srp_opts"
for qd in "${QDS[@]}"; do
	fio_job "srp-qd$qd" "$DISK" "$qd"
done
# The series' ib_srpt: did its command pool apply back-pressure?
[ -n "$(mount_of /sys/kernel/debug)" ] || mount -t debugfs debugfs /sys/kernel/debug
for d in "$SLOT_DEBUGFS"/srpt-[0-9]*; do
	[ -d "$d" ] || continue
	for k in waits resumed exhausted misuse; do
		record "srpt.$k" "$(slot_stat "$d" $k)"
	done
done
dev=/sys/block/${DISK#/dev/}/device
record srp.ioerr_cnt $(( $(cat "$dev/ioerr_cnt") ))
record srp.iotmo_cnt $(( $(cat "$dev/iotmo_cnt") ))
# Times the initiator ran out of target credits (only SRP hosts have it).
record srp.zero_req_lim "$(cat /sys/class/scsi_host/host*/zero_req_lim 2>/dev/null |
	awk '{ n += $1 } END { print n + 0 }')"
srp_down

step "NFSv3 over RDMA ($MODE)"
nfsd_up
if [ "$MODE" = constrained ]; then
	{ echo 4 > /proc/sys/sunrpc/svc_rdma/max_requests &&
		echo 1 > /proc/sys/sunrpc/svc_rdma/max_outbound_read_requests; } ||
		fail "nfsd budgets"
	# The client's knobs exist only with CONFIG_SUNRPC_DEBUG.
	c=/proc/sys/sunrpc
	if [ -e $c/rdma_slot_table_entries ]; then
		{ echo 4 > $c/rdma_slot_table_entries && echo 1024 > $c/rdma_max_inline_read &&
			echo 1024 > $c/rdma_max_inline_write; } || fail "NFS client budgets"
		record nfs.client_budgets set
	else
		record nfs.client_budgets "n/a"
	fi
fi
mkdir -p $MNT
timed "mount" mount -t nfs -o vers=3,rdma,port=20049,nolock "$IP:$NFS_EXPORT" $MNT ||
	fail "mount"
case $(mount_of $MNT) in *proto=rdma*) ;; *) fail "mount is not over RDMA" ;; esac
for qd in "${QDS[@]}"; do
	fio_job "nfs-qd$qd" "$MNT/fio.bin" "$qd"
done
# xprt: rdma 0 bind_count connect_count connect_time idle_time sends recvs
# bad_xids req_u bklog_u read_chunks write_chunks reply_chunks
# total_rdma_req total_rdma_rep pullup fixup hardway failed_marshal
# bad_reply nomsg_calls mrs_recycled mrs_orphaned mrs_allocated local_invs
# empty_sendctx 0
read -r -a x < <(grep -m 1 'xprt:[[:space:]]*rdma' /proc/self/mountstats)
echo "${x[*]}"
if [ ${#x[@]} -ge 28 ]; then
	record nfs.reconnects $(( x[4] - 1 ))
	record nfs.bad_xids "${x[9]}"
	record nfs.failed_marshal "${x[20]}"
	record nfs.bad_reply "${x[21]}"
	record nfs.mrs_recycled "${x[23]}"
	record nfs.mrs_orphaned "${x[24]}"
	record nfs.mrs_allocated "${x[25]}"
	record nfs.empty_sendctx "${x[27]}"
fi
record nfs.retrans "$(awk '$1 == "READ:" || $1 == "WRITE:" { n += $3 - $2 } END { print n + 0 }' /proc/self/mountstats)"
record nfs.timeouts "$(awk '$1 == "READ:" || $1 == "WRITE:" { n += $4 } END { print n + 0 }' /proc/self/mountstats)"
for s in sq_starve rq_starve; do
	record "nfsd.$s" "$(cat /proc/sys/sunrpc/svc_rdma/rdma_stat_$s)"
done
# The series' svcrdma: did its connection's pool apply back-pressure?
if [ -n "$(svcrdma_pools)" ]; then
	for k in waits resumed exhausted misuse; do
		record "svcrdma.$k" "$(svcrdma_sum $k)"
	done
fi
rm -f $MNT/fio.bin
timed "umount" umount $MNT || bad+=" umount"
nfsd_down

step teardown
timed "rxe teardown" rxe_teardown || bad+=" rxe-teardown"

# What the ULPs said about trouble: errors, reconnects, full queues.
dmesg | grep -iE 'srp|rpcrdma|svcrdma|nfs|rxe' |
	grep -iE 'error|fail|reconnect|full|timeout|abort|reset|drop|lost|exhaust' > /tmp/ulp-log.txt
record log.ulp_lines "$(wc -l < /tmp/ulp-log.txt)"
record log.srpt_sq_full "$(grep -c 'send queue full' /tmp/ulp-log.txt)"
record log.reconnects "$(grep -ciE 'reconnect' /tmp/ulp-log.txt)"
record log.splats "$(dmesg | grep -cE "$SPLAT_RE")"
cat $STATS
save $STATS /tmp/ulp-log.txt
[ -z "$bad" ] || fail "${bad# }"
pass
