#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# PID 1 of the ib_slot test VM.  The host's / is the guest's read-only root
# (9p); /etc, /var and /root get a tmpfs upper layer, so guest writes there
# are discarded when the VM stops.  run.sh passes, on the kernel command line
# (the kernel hands unknown KEY=VAL parameters to init as environment):
#   IB_SLOT_SCRIPT=<abs path>  guest script to run; absent: interactive shell
#   IB_SLOT_ARGS=<a,b,...>     comma-separated arguments of the script
#   IB_SLOT_MODDIR=<abs path>  INSTALL_MOD_PATH of the kernel's modules
# The 9p export tagged "out" (writable, on the host) is mounted at /run/out.
# After the script "IB_SLOT_EXIT=<status>" is printed and the VM is reset
# (QEMU runs with -no-reboot, so it exits).
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root TERM=${TERM:-linux} LANG=C.UTF-8
umask 022

up() { local t _; read -r t _ < /proc/uptime; echo "[ib_slot +${t}s] $*"; }

stop_vm() {
	sync
	echo b > /proc/sysrq-trigger
	while :; do sleep 10; done	# PID 1 must not exit
}

# The mounts, with as few programs started as possible: every exec costs a
# good fraction of a second under TCG.  For the same reason ln, mkdir, sleep
# and sync are bash's loadable builtins where the bash-builtins package is
# installed (guest/lib.sh loads them for the tests too).
export BASH_LOADABLES_PATH=/usr/lib/bash
for b in ln mkdir sleep sync; do enable -f "$b" "$b" 2>/dev/null; done
mount -a -T "${0%/*}/fstab" || echo "init: some early mounts failed"
ln -sf /proc/self/fd /dev/fd
ln -sf /proc/self/fd/0 /dev/stdin
ln -sf /proc/self/fd/1 /dev/stdout
ln -sf /proc/self/fd/2 /dev/stderr

# Writable, throw-away views of some host directories (tmpfs upper layers),
# the module directory and the share with the host.
read -r KVER < /proc/sys/kernel/osrelease
ovl=(/etc /var /root)
moddir=
if [ -n "${IB_SLOT_MODDIR:-}" ] && [ -d "$IB_SLOT_MODDIR/lib/modules/$KVER" ]; then
	moddir=$IB_SLOT_MODDIR/lib/modules/$KVER
	# The host may have no /lib/modules to mount over: then /usr/lib gets
	# an overlay.
	[ -d /usr/lib/modules ] || ovl+=(/usr/lib)
else
	echo "init: no modules for $KVER in ${IB_SLOT_MODDIR:-(IB_SLOT_MODDIR unset)}"
fi
out=
for tag in /sys/bus/virtio/drivers/9pnet_virtio/*/mount_tag; do
	read -r -d '' t < "$tag"
	[ "$t" = out ] && out=1
done
dirs=(/run/out /run/lock)
{
	for d in "${ovl[@]}"; do
		n=/run/ovl/${d//\//_}
		dirs+=("$n/u" "$n/w")
		echo "ib-slot-ovl $d overlay lowerdir=$d,upperdir=$n/u,workdir=$n/w 0 0"
	done
	echo "tmpfs /var/tmp tmpfs mode=1777 0 0"
	[ -n "$moddir" ] && [ -d /usr/lib/modules ] &&
		echo "ib-slot-modules /usr/lib/modules tmpfs mode=0755 0 0"
	[ -n "$out" ] && echo "out /run/out 9p trans=virtio,version=9p2000.L,msize=262144 0 0"
} > /run/fstab
mkdir -p "${dirs[@]}"
mount -a -T /run/fstab || echo "init: some mounts failed"
# Directories the tests' daemons expect (in the /etc and /var overlays).
mkdir -p /var/lib/nfs/rpc_pipefs /var/lib/nfs/v4recovery /etc/target ${moddir:+/usr/lib/modules}
[ -n "$moddir" ] && ln -s "$moddir" "/usr/lib/modules/$KVER"
[ -L /etc/mtab ] || ln -sf /proc/self/mounts /etc/mtab

echo ib-slot > /proc/sys/kernel/hostname
echo 1 > /proc/sys/kernel/sysrq

read -r cpus < /sys/devices/system/cpu/online
read -r _ mem _ < /proc/meminfo
up "init done: kernel $KVER, cpus $cpus, $((mem / 1024)) MiB"

if [ -n "${IB_SLOT_SCRIPT:-}" ]; then
	IFS=, read -r -a args <<< "${IB_SLOT_ARGS:-}"
	up "running $IB_SLOT_SCRIPT ${args[*]}"
	(cd /tmp && exec bash "$IB_SLOT_SCRIPT" "${args[@]}" < /dev/null)
	rc=$?
	up "script exit status $rc"
	dmesg > /run/out/dmesg.txt 2>/dev/null
	sync
	echo "IB_SLOT_EXIT=$rc"
	# The reset would drop what the serial port has not sent yet.
	sleep 1
else
	up "shell ready (leave the shell to stop the VM)"
	setsid -c bash -l < /dev/ttyS0 > /dev/ttyS0 2>&1
fi
stop_vm
