#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Configure (when the fragments or the series changed) and build the test
# kernel and its modules out of tree, then install the modules where the VM
# finds them.
# usage: build.sh [--configure-only] [extra make arguments]
set -e
. "$(dirname "$0")/lib.sh"

frags=("$TOOLS/configs/ib-slot.config")
[ "$FLAVOUR" = debug ] && frags+=("$TOOLS/configs/debug.config")
case $FLAVOUR in bench|kcsan) frags+=("$TOOLS/configs/core-only.config") ;; esac
[ "$FLAVOUR" = bench ] && frags+=("$TOOLS/bench/bench.config")
[ "$FLAVOUR" = kcsan ] && frags+=("$TOOLS/configs/kcsan.config")

configure() {
	say "configuring $FLAVOUR kernel in $BUILD"
	mkdir -p "$BUILD"
	"${KMAKE[@]}" -s tinyconfig
	(cd "$SRC" && ARCH=x86_64 scripts/kconfig/merge_config.sh -m -O "$BUILD" \
		"$BUILD/.config" "${frags[@]}" >/dev/null)
	"${KMAKE[@]}" -s olddefconfig
	local bad=0 k v got
	while IFS='=' read -r k v; do
		got=$(grep -E "^$k=" "$BUILD/.config" | cut -d= -f2)
		[ "$got" = "$v" ] && continue
		# The stock tree lacks the symbols the series adds.
		if [ "${STOCK:-0}" = 1 ] && ! grep -rqE --include='Kconfig*' \
			"^(menu)?config ${k#CONFIG_}\$" "$SRC"; then
			continue
		fi
		echo "config: $k wanted ${v:-unset}, got ${got:-unset}" >&2
		bad=1
	done < <(cat "${frags[@]}" | sed -E 's/^# (CONFIG_[A-Za-z0-9_]+) is not set/\1=/' |
		 grep -E '^CONFIG_' | tac | awk -F= '!seen[$1]++')
	[ $bad = 0 ] || die "config fragment did not apply"
}

key=$(cat "${frags[@]}" "$SRC/.ib-slot-applied" | sha1sum | cut -c1-40)
if [ "$(cat "$BUILD/.ib-slot-config" 2>/dev/null)" != "$key" ]; then
	configure
	echo "$key" > "$BUILD/.ib-slot-config"
fi
[ "${1:-}" = --configure-only ] && exit 0

t0=$(now)
say "building $FLAVOUR kernel (make -j$JOBS, ccache in $CCACHE_DIR)"
"${KMAKE[@]}" -s bzImage modules "$@"
rm -rf "$MOD.new"
"${KMAKE[@]}" -s INSTALL_MOD_PATH="$MOD.new" INSTALL_MOD_STRIP=1 modules_install
rm -rf "$MOD" && mv "$MOD.new" "$MOD"
say "kernel built in $(since "$t0") s: $(make -s -C "$SRC" O="$BUILD" kernelrelease)"
