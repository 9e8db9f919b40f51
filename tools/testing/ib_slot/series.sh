#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Turn the quilt series into a mailable git series.
#
# A scratch git repository (under ${TMPDIR:-/tmp}) gets the pristine base tree
# (Debian's linux-source-6.12, or KSRC=...) as commit "base".  Each patch of
# patches/series then becomes one commit: its overlay files (patches/overlay)
# are copied in, the patch is applied with "git apply --index", and the commit
# takes author, date, subject and body (with the Signed-off-by lines) from the
# patch's mail header.  "git format-patch --cover-letter --base" writes the
# series to OUTDIR; the cover letter's subject and blurb come from
# patches/cover-letter (first line: subject, the rest: blurb) when it exists.
# Finally a second checkout of the base applies OUTDIR/0*.patch (without the
# cover letter) with "git am" and must end at the same tree.
#
# usage: series.sh [OUTDIR [format-patch option...]]
#   OUTDIR defaults to $TOP/out/series; its old *.patch files are removed.
#   Extra options go to git format-patch, e.g. -v2 --subject-prefix="PATCH rdma-next".
# env: KEEP=1 keeps the scratch repository (its path is printed).
set -eu
. "$(dirname "$0")/lib.sh"

OUT=${1:-$TOP/out/series}
[ $# -gt 0 ] && shift
FP_ARGS=("$@")
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)

# Fixed identity and dates for the base commit, so that its id (the
# base-commit: line of the cover letter) only depends on the base tree.
BASE_DATE='2025-01-01T00:00:00Z'
export GIT_CONFIG_NOSYSTEM=1
git_id=(-c user.name="$(git -C "$TOP" config user.name || echo ib_slot)"
	-c user.email="$(git -C "$TOP" config user.email || echo ib_slot@localhost)"
	-c core.autocrlf=false -c gc.auto=0 -c advice.detachedHead=false)
g() { git "${git_id[@]}" "$@"; }

mapfile -t patches < <(series)
rm -f "$OUT"/*.patch
if [ ${#patches[@]} = 0 ]; then
	say "patches/series is empty: no patches written to $OUT"
	echo "series: 0 patches, nothing to verify"
	exit 0
fi

t0=$(now)
scratch=$(mktemp -d "${TMPDIR:-/tmp}/ib-slot-series.XXXXXX")
if [ "${KEEP:-0}" = 1 ]; then
	say "keeping scratch repository $scratch"
else
	trap 'rm -rf "$scratch"' EXIT
fi
repo=$scratch/linux
mkdir -p "$repo"

unpack_base "$repo"
cd "$repo"
g init -q
# -f: the base is the tree exactly as shipped, .gitignore notwithstanding.
g add -A -f .
GIT_AUTHOR_DATE=$BASE_DATE GIT_COMMITTER_DATE=$BASE_DATE \
	g commit -q --no-verify -m "base: $(make -s kernelversion 2>/dev/null || echo unknown)"
g tag base
base=$(g rev-parse HEAD)
say "base commit $base ($(since "$t0") s)"

# One commit per quilt patch.
hdr() { printf '%s\n' "$info" | sed -n "s/^$1: //p" | head -n 1; }
for p in "${patches[@]}"; do
	pf=$TOP/patches/$p
	[ -f "$pf" ] || die "patches/series names $p, which does not exist"
	for f in $(overlay_of "$p"); do
		[ -e "$TOP/$f" ] || die "patches/overlay names $f, which does not exist"
		[ -e "$f" ] && die "overlay file $f of $p already exists in the tree"
		mkdir -p "$(dirname "$f")"
		cp -p "$TOP/$f" "$f"
	done
	g apply --index "$pf" || die "$p does not apply (git apply --index)"
	for f in $(overlay_of "$p"); do g add -f -- "$f"; done

	info=$(g mailinfo "$scratch/msg" "$scratch/diff" < "$pf") || die "$p: cannot parse the mail header"
	name=$(hdr Author) email=$(hdr Email) subject=$(hdr Subject) date=$(hdr Date)
	[ -n "$email" ] || die "$p has no From: header"
	[ -n "$subject" ] || die "$p has no Subject: header"
	# Without a Date: header the patch file's mtime is used, so reruns
	# give the same output as long as the patch does not change.
	[ -n "$date" ] || date=$(date -R -r "$pf")
	grep -q '^Signed-off-by: ' "$scratch/msg" || say "warning: $p has no Signed-off-by"
	{ printf '%s\n' "$subject"
	  if [ -s "$scratch/msg" ]; then printf '\n'; cat "$scratch/msg"; fi
	} > "$scratch/commit-msg"
	g diff --cached --quiet && die "$p changes nothing"
	GIT_AUTHOR_NAME=$name GIT_AUTHOR_EMAIL=$email GIT_AUTHOR_DATE=$date GIT_COMMITTER_DATE=$date \
		g commit -q --no-verify --cleanup=whitespace -F "$scratch/commit-msg"
	say "committed $p: $subject"
done
head=$(g rev-parse HEAD)

g format-patch -q --cover-letter --base="$base" -o "$OUT" ${FP_ARGS[@]+"${FP_ARGS[@]}"} base..HEAD
cover=$(find "$OUT" -maxdepth 1 -name '*0000-cover-letter.patch' | head -n 1)
[ -n "$cover" ] || die "format-patch wrote no cover letter"

# Subject and blurb of the cover letter.
if [ -f "$TOP/patches/cover-letter" ]; then
	subj=$(head -n 1 "$TOP/patches/cover-letter")
	tail -n +2 "$TOP/patches/cover-letter" | sed '/./,$!d' > "$scratch/blurb"
	SUBJ=$subj BLURB=$scratch/blurb awk '
		!done_s && (i = index($0, "*** SUBJECT HERE ***")) {
			$0 = substr($0, 1, i - 1) ENVIRON["SUBJ"] substr($0, i + 20); done_s = 1
		}
		!done_b && $0 == "*** BLURB HERE ***" {
			while ((getline l < ENVIRON["BLURB"]) > 0) print l
			done_b = 1; next
		}
		{ print }' "$cover" > "$scratch/cover" && cat "$scratch/cover" > "$cover"
else
	say "no patches/cover-letter: the cover letter keeps its placeholders"
fi

# The mailed patches, applied to a fresh checkout of the base, must give the
# same tree.
mapfile -t mails < <(find "$OUT" -maxdepth 1 -name '*.patch' ! -name '*0000-cover-letter.patch' | sort)
g worktree add -q --detach "$scratch/verify" "$base"
if g -C "$scratch/verify" am -q "${mails[@]}" >"$scratch/am.log" 2>&1; then
	if [ "$(g -C "$scratch/verify" rev-parse 'HEAD^{tree}')" = "$(g rev-parse "$head^{tree}")" ]; then
		verdict="OK: git am of ${#mails[@]} patch(es) applies cleanly to base and gives the same tree"
		rc=0
	else
		verdict="FAIL: git am applies, but the resulting tree differs from the series"
		rc=1
	fi
else
	cat "$scratch/am.log" >&2
	verdict="FAIL: git am does not apply cleanly to base"
	rc=1
fi
g worktree remove --force "$scratch/verify" 2>/dev/null || true

ls -1 "$OUT"/*.patch
echo "series: ${#patches[@]} patch(es) + cover letter in $OUT (base $base), $(since "$t0") s"
echo "series: $verdict"
exit $rc
