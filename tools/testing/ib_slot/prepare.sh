#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Prepare the patched kernel tree in the cache:
#   1. unpack the base tree once (Debian's linux-source-6.12, or KSRC=...);
#   2. link the overlay (the new files of this repository) into it;
#   3. apply the quilt series from patches/.
# Idempotent and incremental: patches that did not change since the last run
# stay applied, so the build directory only recompiles what they touch.
#
# usage: prepare.sh [N]   apply only the first N patches (bisect checks)
# With STOCK=1 (see lib.sh) the tree is the base as it is: N is 0.
set -e
. "$(dirname "$0")/lib.sh"

upto=${1:-}
if [ "${STOCK:-0}" = 1 ]; then upto=0; fi
mapfile -t want < <(series)
[ -n "$upto" ] || upto=${#want[@]}
want=("${want[@]:0:$upto}")

mkdir -p "$BASE_DIR"
exec 9> "$TREE_LOCK"
flock 9
if [ ! -f "$SRC/.ib-slot-base" ]; then
	rm -rf "$SRC" "$SRC.tmp"
	mkdir -p "$SRC.tmp"
	unpack_base "$SRC.tmp"
	make -s -C "$SRC.tmp" kernelversion > "$SRC.tmp/.ib-slot-base"
	mv "$SRC.tmp" "$SRC"
fi

cd "$SRC"
# quilt reads the series from a private file that lists what is applied
# (and what is being pushed), so that patches renamed or dropped in the
# repository can still be popped from their backups in .pc.
export QUILT_PATCHES=patches QUILT_PC=.pc QUILT_QUIET=1
export QUILT_SERIES=$SRC/.ib-slot-series
ln -sfn "$TOP/patches" patches

# Each applied patch is recorded with the hash of its text; pop back to the
# first one that changed (or is no longer wanted), keep the rest.
stamp=.ib-slot-applied
touch "$stamp"
mapfile -t have < "$stamp"
keep=0
while [ $keep -lt ${#have[@]} ] && [ $keep -lt ${#want[@]} ]; do
	h=$(sha1sum "patches/${want[$keep]}" | cut -c1-40)
	[ "${have[$keep]}" = "${want[$keep]} $h" ] || break
	keep=$((keep + 1))
done
nr_applied() { cat .pc/applied-patches 2>/dev/null | wc -l; }
if [ -d .pc ]; then
	cp .pc/applied-patches "$QUILT_SERIES" 2>/dev/null || : > "$QUILT_SERIES"
	echo "$QUILT_SERIES" > .pc/.quilt_series
fi
if [ "$(nr_applied)" -gt "$keep" ]; then
	say "popping $(( $(nr_applied) - keep )) changed patch(es)"
	while [ "$(nr_applied)" -gt "$keep" ]; do
		quilt pop -f >/dev/null || die "quilt pop failed in $SRC"
	done
fi

# Overlay: replace the links of the last run by the ones wanted now.
if [ -f .ib-slot-links ]; then
	while read -r f; do [ -L "$f" ] && rm -f "$f"; done < .ib-slot-links
fi
: > .ib-slot-links
for p in "${want[@]}"; do
	for f in $(overlay_of "$p"); do
		[ -e "$TOP/$f" ] || die "patches/overlay names $f, which does not exist"
		[ -e "$f" ] && [ ! -L "$f" ] && die "overlay file $f exists in the base tree"
		mkdir -p "$(dirname "$f")"
		ln -sfn "$TOP/$f" "$f"
		echo "$f" >> .ib-slot-links
	done
done

# Push the rest, recording each patch as it lands.  No fuzz: "git am" of
# the mailed series takes none, so a patch quilt applies only with fuzz
# would not apply for a reviewer (refresh it).  Offsets are fine.
printf '%s\n' "${want[@]}" > "$QUILT_SERIES"
head -n "$keep" "$stamp" > "$stamp.new" || true
mv "$stamp.new" "$stamp"
i=$keep
while [ $i -lt ${#want[@]} ]; do
	p=${want[$i]}
	quilt push -q --fuzz=0 "$p" >/dev/null ||
		die "patch $p does not apply without fuzz (quilt refresh it)"
	echo "$p $(sha1sum "patches/$p" | cut -c1-40)" >> "$stamp"
	i=$((i + 1))
done
[ $keep -lt ${#want[@]} ] && say "applied $(( ${#want[@]} - keep )) patch(es)"
say "tree ready: $(cat .ib-slot-base), $(quilt applied 2>/dev/null | wc -l) patch(es), $(wc -l < .ib-slot-links) overlay file(s)"
