#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Install the Debian packages the build and the tests need (idempotent).
set -e
PKGS=(linux-source-6.12 build-essential bc bison flex libelf-dev libssl-dev
      dwarves cpio kmod ccache quilt git python3 qemu-system-x86 qemu-utils
      rdma-core ibverbs-utils rdmacm-utils perftest fio iproute2
      nfs-kernel-server nfs-common nfs4-acl-tools rpcbind targetcli-fb sg3-utils
      gnuplot-nox xz-utils lz4 python3-ply python3-git bash-builtins
      dmsetup e2fsprogs)
missing=()
for p in "${PKGS[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
		missing+=("$p")
done
[ ${#missing[@]} = 0 ] && exit 0
echo "==> installing: ${missing[*]}" >&2
[ "$(id -u)" = 0 ] || { echo "error: run as root or install: ${missing[*]}" >&2; exit 1; }
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
