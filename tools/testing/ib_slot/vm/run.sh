#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Boot the test kernel ($KERNEL, modules from $MOD, see ../lib.sh) under
# QEMU/TCG with the host's / as the guest's read-only root, and run one guest
# script in it (vm/init.sh is PID 1).  The console goes to stdout.
#
# usage: run.sh [-t TIMEOUT_S] [-o OUTDIR] [-a KERNEL_ARG]... [guest-script [arg,arg,...]]
#   -t  stop QEMU after TIMEOUT_S seconds (0: no limit; default 300, or 0
#       for the interactive shell)
#   -o  host directory the guest can write, mounted at /run/out in the guest
#       (default: a new directory under ${TMPDIR:-/tmp}); the console log is
#       saved there too as console.log, and init leaves dmesg.txt
#   -a  one more kernel command line argument (repeatable)
# Without a script: an interactive shell on the console (Ctrl-A X quits QEMU).
# The exit status is the guest script's, from its IB_SLOT_EXIT= line; 124
# when the time ran out, 125 when the VM stopped without that line, 75 when
# the guest had not started its script BOOT_TIMEOUT s after QEMU did.
# env: QEMU_ICOUNT=1 adds -icount shift=0 (deterministic instruction timing),
#      SMP (2), MEM (2048 MiB), QEMU_EXTRA (more QEMU arguments, split on spaces),
#      BOOT_TIMEOUT (120)
set -u
. "$(dirname "$0")/../lib.sh"

usage() { sed -n 's/^# \{0,1\}usage: //p' "$0" >&2; exit 2; }

timeout_s='' outdir='' kargs=()
while getopts t:o:a:h opt; do
	case $opt in
	t) timeout_s=$OPTARG ;;
	o) outdir=$OPTARG ;;
	a) kargs+=("$OPTARG") ;;
	*) usage ;;
	esac
done
shift $((OPTIND - 1))
[ $# -le 2 ] || usage
script=${1:-} sargs=${2:-}
[ -n "$script" ] && : "${timeout_s:=300}"
: "${timeout_s:=0}"
case $timeout_s in *[!0-9]*) die "-t wants seconds, not '$timeout_s'" ;; esac

[ -f "$KERNEL" ] || die "no kernel at $KERNEL (run build.sh)"
release=$(cat "$BUILD/include/config/kernel.release" 2>/dev/null) || die "no kernel.release in $BUILD"
[ -d "$MOD/lib/modules/$release" ] || die "no modules in $MOD/lib/modules/$release (run build.sh)"
if [ -n "$script" ]; then
	[ -f "$script" ] || die "no guest script $script"
	script=$(readlink -f "$script")
fi
guest_visible "$script" "$MOD" "$TOOLS"
if [ -n "$outdir" ]; then
	mkdir -p "$outdir" || die "cannot create $outdir"
else
	outdir=$(mktemp -d "${TMPDIR:-/tmp}/ib-slot-vm.XXXXXX")
fi
outdir=$(readlink -f "$outdir")
init=$(readlink -f "$TOOLS/vm/init.sh")
moddir=$(readlink -f "$MOD")
# The kernel splits its command line on spaces.
for v in "$script" "$sargs" "$init" "$moddir" "$outdir"; do
	case $v in *[[:space:]]*) die "no white space allowed in '$v'" ;; esac
done

append="console=ttyS0 loglevel=4 panic=-1 oops=panic reboot=k i8042.noaux=1 i8042.nokbd=1"
append+=" root=/dev/root rootfstype=9p rootflags=trans=virtio,version=9p2000.L,cache=loose,msize=262144 ro"
append+=" init=$init IB_SLOT_MODDIR=$moddir"
[ -n "$script" ] && append+=" IB_SLOT_SCRIPT=$script"
[ -n "$sargs" ] && append+=" IB_SLOT_ARGS=$sargs"
# Under TCG the guest's TSC is the host's: give the guest its rate, which
# it fails to calibrate when the host is loaded (vm/tsc-khz.c), and keep
# the clocksource watchdog from judging it by jiffies, which lose ticks
# then (the guest has no HPET or ACPI PM timer to judge it by).  Under
# -icount the TSC counts instructions, and calibrating it is exact.
if [ "${QEMU_ICOUNT:-0}" != 1 ]; then
	tsc=$CACHE/tsc-khz
	if [ ! -x "$tsc" ] || [ "$TOOLS/vm/tsc-khz.c" -nt "$tsc" ]; then
		# VMs start side by side: each builds its own and renames it.
		if ! gcc -O2 -o "$tsc.$$" "$TOOLS/vm/tsc-khz.c" || ! mv -f "$tsc.$$" "$tsc"; then
			die "cannot build $tsc"
		fi
	fi
	append+=" tsc_early_khz=$("$tsc") tsc=reliable"
fi
[ ${#kargs[@]} -gt 0 ] && append+=" ${kargs[*]}"

# shellcheck disable=SC2054 # commas inside QEMU option values
qemu=(qemu-system-x86_64 -nodefaults -no-user-config -machine pc -accel tcg
	-cpu qemu64 -smp "${SMP:-2}" -m "${MEM:-2048}"
	-bios /usr/share/qemu/qboot.rom -kernel "$KERNEL" -append "$append"
	-fsdev local,id=root,path=/,security_model=none,readonly=on,multidevs=remap
	-device virtio-9p-pci,fsdev=root,mount_tag=/dev/root
	-fsdev "local,id=out,path=$outdir,security_model=none,multidevs=remap"
	-device virtio-9p-pci,fsdev=out,mount_tag=out
	-device virtio-rng-pci -no-reboot)
[ "${QEMU_ICOUNT:-0}" = 1 ] && qemu+=(-icount shift=0)
# shellcheck disable=SC2206 # split on purpose
[ -n "${QEMU_EXTRA:-}" ] && qemu+=(${QEMU_EXTRA})

t0=$(now)
if [ -z "$script" ]; then
	# Interactive: the console (and QEMU's monitor, Ctrl-A C) on this terminal.
	to=()
	[ "$timeout_s" != 0 ] && to=(timeout --foreground -k 5 "$timeout_s")
	"${to[@]}" "${qemu[@]}" -nographic -serial mon:stdio
	rc=$?
	say "qemu exit status $rc after $(since "$t0") s; guest output in $outdir"
	exit $rc
fi

# Scripted: the console goes to console.log, and from there to stdout.
log=$outdir/console.log
to=()
[ "$timeout_s" != 0 ] && to=(timeout -k 5 "$timeout_s")
"${to[@]}" "${qemu[@]}" -display none -chardev stdio,id=con,signal=off -serial chardev:con \
	< /dev/null > "$log" 2>&1 &
qpid=$!
: >> "$log"
# tail checks for QEMU's exit once per -s interval (default 1 s).
tail -n +1 -f -s 0.1 --pid="$qpid" "$log" &
tpid=$!
# A guest that hung in its kernel's boot (seen once in some 600 boots
# under TCG: a vCPU whose timer never fired, RCU stall reports and
# nothing else) is stopped early and reported as such, so that the
# caller can tell it from a test that failed.
boot_s=${BOOT_TIMEOUT:-120}
rm -f "$outdir/.boot-hang"
(
	for ((i = 0; i < boot_s; i++)); do
		sleep 1
		kill -0 "$qpid" 2>/dev/null || exit 0
		grep -q -a 'init done' "$log" && exit 0
	done
	: > "$outdir/.boot-hang"
	kill "$qpid" 2>/dev/null
) &
wpid=$!
stopped=
trap 'stopped=1; kill "$qpid" 2>/dev/null' INT TERM HUP
while :; do
	wait "$qpid"
	qrc=$?
	kill -0 "$qpid" 2>/dev/null || break
done
wait "$tpid"
kill "$wpid" 2>/dev/null
wait "$wpid" 2>/dev/null
trap - INT TERM HUP

line=$(tr -d '\r' < "$log" | grep -a -E '^IB_SLOT_EXIT=[0-9]+$' | tail -n 1)
if [ -n "$stopped" ]; then
	say "interrupted"
	rc=130
elif [ -f "$outdir/.boot-hang" ]; then
	say "boot hang: the guest had not started its script after $boot_s s"
	rc=75
elif [ -n "$line" ]; then
	rc=${line#IB_SLOT_EXIT=}
elif [ "$qrc" = 124 ] || [ "$qrc" = 137 ]; then
	say "timeout: the VM did not finish within $timeout_s s"
	rc=124
else
	say "the VM stopped (qemu status $qrc) without reporting the script's exit status"
	rc=125
fi
say "guest exit status $rc, $(since "$t0") s wall; guest output in $outdir"
exit "$rc"
