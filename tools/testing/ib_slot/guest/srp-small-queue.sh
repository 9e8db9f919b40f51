#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Guest test: the initiator's side of the constrained scenario.  ib_srp
# logs in with queue_size=16 (16 command slots per channel) and fio keeps
# 64 commands outstanding, 4 KiB and 256 KiB, crc32c verified: the SCSI
# mid-layer holds back what the host cannot take, and no command may
# time out, be aborted or reconnect.  Each rkey is fenced by a LOCAL_INV;
# with remote_invalidate=1 ib_srp asks ib_srpt to invalidate it with the
# response instead, and then no LOCAL_INV is needed for a direct
# descriptor.  Then the same with a global rkey (register_always=N:
# one-entry lists go unregistered, so ib_srp does not ask the target to
# invalidate rkeys even with remote_invalidate=1), and with no
# registration at all (never_register=1: slots without MRs, whose fence
# only waits for the Send).
# Checks: fio, no SCSI error or timeout, no SRP abort, no reconnect, and
# ib_srp's pools: idle, no misuse, never exhausted (a no-exhaust pool
# takes the blk-mq tag's slot), high water within the 16 tags (the 2
# reserved slots serve task management and responses to the target,
# which do not occur here).
. "${0%/*}/lib.sh"
QS=16

step "$SRP_TRANSPORT on $NETDEV"
rdma_link_setup || fail "$SRP_TRANSPORT setup"

step "ib_srpt target (raw configfs)"
srp_target_up

bad=
for reg in register_always=Y "register_always=Y remote_invalidate=1" \
	   "register_always=N remote_invalidate=1" never_register=1; do
	step "ib_srp $reg, queue_size=$QS, fio queue depth 64"
	[ -z "$SRP_HOST" ] || { srp_logout "$SRP_HOST" && unload ib_srp; } || fail "logout"
	# shellcheck disable=SC2086 # one or two module parameters
	modprobe ib_srp $reg || fail "modprobe ib_srp"
	srp_login "queue_size=$QS"
	log "can_queue $(cat "/sys/class/scsi_host/$SRP_HOST/can_queue")"
	for bs in 4k 256k; do
		j=qd64-$(echo "$reg" | tr ' =' '_-')-$bs
		fio_run "$j" --name="$j" --filename="$DISK" --size=64m \
			--bs=$bs --rw=randrw --direct=1 --ioengine=libaio --iodepth=64 \
			--verify=crc32c --verify_fatal=1 --runtime=5 --time_based ||
			bad+=" fio-$j"
	done
	srp_scsi_errs_check "$DISK"
	srp_pools_check
	for d in $(srp_pools); do
		hw=$(slot_stat "$d" high_water)
		ex=$(slot_stat "$d" exhausted)
		log "${d##*/}: high water $hw, exhausted $ex," \
			"remote_inv $(slot_stat "$d" remote_inv), local_inv $(slot_stat "$d" local_inv)"
		[ "$hw" -le "$QS" ] || bad+=" ${d##*/}-high_water=$hw"
		# The target invalidates rkeys only for an initiator that asks.
		ri=$(slot_stat "$d" remote_inv)
		case $reg in
		"register_always=Y remote_invalidate=1")
			[ "$ri" -gt 0 ] || bad+=" ${d##*/}-no-remote_inv" ;;
		*)	[ "$ri" = 0 ] || bad+=" ${d##*/}-remote_inv=$ri-unasked" ;;
		esac
		[ "$ex" = 0 ] || bad+=" ${d##*/}-exhausted=$ex"
	done
done
n=$(srp_reconnects)
[ "$n" = 0 ] || bad+=" $n-reconnects"
srp_finish "$DISK"
