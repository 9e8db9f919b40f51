#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Guest test: SCSI resets of the SRP disk under verified I/O.  For each of
# sg_reset --device, --target, --bus and --host (with the SCSI layer's
# escalation: ib_srp has LUN reset and host reset handlers only, so target
# and bus resets end up as host resets, which reconnect every channel):
# fio (crc32c verified) runs on the disk, the reset is issued, the remote
# port must be back to "running" and fio must end without an error (the
# commands the reset cut off are retried).  Checks: fio, the data of a
# dd written before and read after the resets, a reconnect for every host
# reset (and at most one for a LUN reset), the SCSI error counters (which
# count the one command that each unit attention "power-on or device reset
# occurred" of the target ends), no SRP abort, ib_srp's ib_slot pools idle.
. "${0%/*}/lib.sh"

srp_up
RPORT=$(srp_host_rport "$SRP_HOST") || fail "no remote port of $SRP_HOST"
bad=
dd_verify "$DISK" 512 8 /tmp/before.bin || bad+=" data-before"

for r in device target bus host; do
	step "sg_reset --$r $DISK under fio"
	e0=$(scsi_ioerr "$DISK")
	dev0=$(dmesg_count 'SRP reset_device called')
	host0=$(dmesg_count 'SRP reset_host called')
	rc0=$(srp_reconnects)
	io0=$(disk_ios "$DISK")
	fio_start "reset-$r" --name="reset-$r" --filename="$DISK" --size=64m "${FIO_VERIFY[@]}" \
		--runtime=600 --time_based
	# Reset under I/O, not while fio still opens the disk.
	wait_for 30 disk_moving "$DISK" $((io0 + 100)) || bad+=" no-io-before-$r-reset"
	timed "sg_reset --$r" timeout 120 sg_reset --"$r" "$DISK" || bad+=" sg_reset-$r"
	wait_for 30 srp_rport_running "$RPORT" || bad+=" rport-$(cat "$RPORT/state")-after-$r-reset"
	sleep 2
	fio_running "reset-$r" || bad+=" fio-ended-early-$r"
	fio_wait "reset-$r" stop || bad+=" fio-$r"
	log "--$r: $(($(dmesg_count 'SRP reset_device called') - dev0)) LUN reset(s)," \
		"$(($(dmesg_count 'SRP reset_host called') - host0)) host reset(s)," \
		"$(($(srp_reconnects) - rc0)) reconnect(s); remote port $(cat "$RPORT/state");" \
		"ioerr_cnt +$(($(scsi_ioerr "$DISK") - e0))"
	# A LUN reset ends the commands the target still held, as a reconnect
	# does, and the SCSI layer retries them just the same.
	srp_reconnect_errs_allow "$DISK" "$e0" \
		$(($(srp_reconnects) - rc0 + $(dmesg_count 'SRP reset_device called') - dev0))
done

step "checks"
dd_same "$DISK" 512 /tmp/before.bin || bad+=" data-after-resets"
dd_verify "$DISK" 0 8 || bad+=" data-end"
nd=$(dmesg_count 'SRP reset_device called')
nh=$(dmesg_count 'SRP reset_host called')
nr=$(srp_reconnects)
log "in all: $nd LUN resets, $nh host resets, $nr reconnects"
[ "$nd" -ge 1 ] || bad+=" no-lun-reset"
[ "$nh" -ge 1 ] || bad+=" no-host-reset"
# A LUN reset may cost a reconnect: ib_srp ends every command of the LUN
# once the target answers the reset, also one that the target received on
# another channel only after the reset, and it fences that command's rkeys;
# when the target then transfers the command's data, the RDMA fails and
# the channel reconnects (6.12 ends those commands the same way, without
# waiting for their rkeys to be invalidated).  A host reset always reconnects.
[ "$nr" -ge "$nh" ] && [ "$nr" -le $((nh + nd)) ] ||
	bad+=" $nr-reconnects-for-$nh-host-and-$nd-LUN-resets"
# LIO reports a LUN reset to the initiator that asked for it too, as a unit
# attention (POWER ON, RESET, OR BUS DEVICE RESET OCCURRED): it ends one
# command in CHECK CONDITION (the SCSI layer retries it), and that only.
srp_scsi_errs_allow "$DISK" "$(scsi_ua_reports "$DISK" "Power-on or device reset occurred")" \
	"unit attentions: power-on or device reset"
srp_finish "$DISK"
