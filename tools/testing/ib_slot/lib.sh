# SPDX-License-Identifier: GPL-2.0
# Common settings for the ib_slot build and test scripts.  Sourced, not run.
#
# IB_SLOT_CACHE  where the prepared tree, build directories and ccache live
# KSRC           use this 6.12+ tree instead of Debian's linux-source-6.12
# DEBUG=1        use the debug flavour (KASAN, kmemleak) instead of the default
# STOCK=1        the unpatched base tree (no overlay, no series) with the same
#                config fragments, in its own tree and build directories; the
#                stock kernel that "make bench" compares against
# BENCH=1        the bench flavour (no lock debugging) that runs the
#                microbenchmark of "make bench"
# KCSAN=1        the KCSAN flavour (data race detector) for the core's
#                concurrency suites

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
TOOLS=$TOP/tools/testing/ib_slot
CACHE=${IB_SLOT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ib-slot}
DEB_TARBALL=/usr/src/linux-source-6.12.tar.xz

if [ -n "${KSRC:-}" ]; then
	BASE_ID=ksrc-$(readlink -f "$KSRC" | sha1sum | cut -c1-12)
else
	BASE_ID=deb-$(dpkg-query -W -f='${Version}' linux-source-6.12 2>/dev/null || echo none)
fi
if [ "${STOCK:-0}" = 1 ]; then BASE_ID+=-stock; fi
BASE_DIR=$CACHE/$BASE_ID
SRC=$BASE_DIR/linux
PRISTINE=$BASE_DIR/pristine
if [ "${DEBUG:-0}" = 1 ]; then FLAVOUR=debug
elif [ "${KCSAN:-0}" = 1 ]; then FLAVOUR=kcsan
elif [ "${BENCH:-0}" = 1 ]; then FLAVOUR=bench
else FLAVOUR=default
fi
BUILD=$BASE_DIR/build-$FLAVOUR
MOD=$BASE_DIR/mod-$FLAVOUR
KERNEL=$BUILD/arch/x86/boot/bzImage

export CCACHE_DIR=$CACHE/ccache
export CCACHE_BASEDIR=$BASE_DIR
export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-4G}
export KBUILD_BUILD_TIMESTAMP='2025-01-01' KBUILD_BUILD_USER=ib-slot KBUILD_BUILD_HOST=ib-slot
JOBS=${JOBS:-$(nproc)}
# One make at a time per build directory, one prepare at a time per tree:
# several scripts may share them.
LOCK=$BUILD.lock
TREE_LOCK=$BASE_DIR/.tree.lock
KMAKE=(flock "$LOCK" make -C "$SRC" O="$BUILD" ARCH=x86_64 CC="ccache gcc" -j"$JOBS")

say() { printf '==> %s\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# guest_visible [path...]: stop unless the test guests can see each path
# (by default the clone and the build cache).  They see the host's /
# through 9p, except where they mount a filesystem of their own: a clone
# or cache there would build for half an hour and then fail every guest.
guest_visible() {
	local v
	[ $# -gt 0 ] || set -- "$TOP" "$CACHE"
	for v in "$@"; do
		[ -n "$v" ] || continue
		v=$(readlink -m "$v")
		case $v/ in /tmp/*|/run/*|/var/tmp/*|/dev/*|/proc/*|/sys/*)
			die "$v is hidden from the test guests (they mount their own /tmp, /run, /var/tmp, /dev, /proc and /sys): clone (or set IB_SLOT_CACHE) elsewhere, e.g. under \$HOME" ;;
		esac
	done
}
now() { date +%s.%N; }
since() { printf '%.1f' "$(echo "$(now) - $1" | bc)"; }

# verdict <status> <test> [detail]: print one PASS (status 0) or FAIL line
# and count it in PASSED or FAILED.
PASSED=${PASSED:-0} FAILED=${FAILED:-0}
verdict() {
	if [ "$1" = 0 ]; then
		echo "PASS $2${3:+ ($3)}"
		PASSED=$((PASSED + 1))
	else
		echo "FAIL $2${3:+ ($3)}"
		FAILED=$((FAILED + 1))
	fi
}

# The quilt series, in order, without comments.
series() { sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$TOP/patches/series"; }

# New files (overlay) introduced by patch $1, from patches/overlay.
overlay_of() { awk -v p="$1" '$1 == p { for (i = 2; i <= NF; i++) print $i }' "$TOP/patches/overlay"; }

# All overlay files, in series order.
overlay_all() { local p; for p in $(series); do overlay_of "$p"; done; }

# Unpack the base tree (KSRC, or Debian's tarball) into the empty dir $1.
unpack_base() {
	if [ -n "${KSRC:-}" ]; then
		say "copying base tree from $KSRC"
		tar -C "$KSRC" --exclude=.git -cf - . | tar -C "$1" -xf -
	else
		[ -f "$DEB_TARBALL" ] || die "$DEB_TARBALL missing (apt-get install linux-source-6.12)"
		say "unpacking $DEB_TARBALL"
		tar -C "$1" --strip-components=1 -xJf "$DEB_TARBALL"
	fi
}

# build_ext <dir>: build the external module(s) whose sources (*.c, *.h,
# Kbuild) are in $TOP/<dir> against the test kernel in $BUILD, W=1.  Kbuild
# writes its objects next to the sources, so they are copied (mtimes kept, so
# an unchanged module is not rebuilt) to $BASE_DIR/ext-$FLAVOUR/<name>, which
# is printed; the VM can insmod the .ko files from there.
build_ext() {
	local src=$TOP/$1 out
	out=$BASE_DIR/ext-$FLAVOUR/$(basename "$1")
	[ -f "$src/Kbuild" ] || die "no Kbuild in $src"
	mkdir -p "$out" || die "cannot create $out"
	cp -p "$src"/Kbuild "$src"/*.c "$out"/ || die "cannot copy $src"
	cp -p "$src"/*.h "$out"/ 2>/dev/null
	"${KMAKE[@]}" -s W=1 M="$out" modules >&2 || return 1
	echo "$out"
}

# check_ext <dir>: build_ext <dir> as a test: no compiler warning, and
# checkpatch --strict clean on its C files.  What went wrong is printed.
check_ext() {
	local o rc
	o=$(build_ext "$1" 2>&1 >/dev/null)
	rc=$?
	grep -q 'warning:' <<<"$o" && rc=1
	o+=$("$SRC/scripts/checkpatch.pl" --strict -q -f "$TOP/$1"/*.c 2>&1) || rc=1
	[ $rc = 0 ] || echo "$o" | tail -20
	return $rc
}
