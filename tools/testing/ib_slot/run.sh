#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# "make run": boot the patched kernel under QEMU with soft-RoCE and show
# RDMA at work through the stack.
set -u
. "$(dirname "$0")/lib.sh"
out=$(mktemp -d "${TMPDIR:-/tmp}/ib-slot-run.XXXXXX")
say "booting $KERNEL under QEMU (TCG); output below, logs in $out"
"$TOOLS/vm/run.sh" -t 300 -o "$out" "$TOOLS/demo/guest.sh" |
	grep -vE '^\[ *[0-9]+\.[0-9]+\] ' | grep -v '^$'
