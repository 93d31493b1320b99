#!/bin/sh
# fetch.sh downloads the npm tarballs that the harness-template e2e tests
# install from a fake registry (package e2e/npmreg), because those tests run
# with no route to registry.npmjs.org. CI runs it once, with internet, before
# the tests.
#
# specs/HARNESS.list names each harness's tarballs, one a line: the npm
# spec, the file `npm pack` writes, and its sha512 (a lockfile: a changed
# upstream tarball fails here, not as an odd install later). A harness with
# dependencies lists its whole installed tree (only the linux-x64 platform
# packages: npm skips the other platforms' optional dependencies, which the
# fake registry lacks). A tarball that is already present is only
# re-verified, so the script is idempotent.
#
#   fetch.sh            fetch every list
#   fetch.sh NAME...    fetch specs/NAME.list only
set -eu

here=$(cd "$(dirname "$0")" && pwd)
packs=$here/packs
mkdir -p "$packs"

tmp=$(mktemp -d "$packs/.fetch.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# verify FILE WANT [HINT]: FILE's sha512 must equal WANT.
verify() {
	got=$(sha512sum <"$1" | cut -d' ' -f1)
	if [ "$got" != "$2" ]; then
		echo "fetch.sh: $1: sha512 $got, want $2${3:-}" >&2
		return 1
	fi
}

if [ $# -eq 0 ]; then
	set -- "$here"/specs/*.list
else
	for n in "$@"; do
		shift
		set -- "$@" "$here/specs/$n.list"
	done
fi

# What is missing, once each (lists share packages): spec, file, sum.
want=$tmp/want
: >"$tmp/missing"
for list in "$@"; do
	grep -v '^#' "$list" | while read -r spec file sum; do
		[ -n "$spec" ] || continue
		if [ -z "$sum" ]; then
			echo "fetch.sh: $list: $spec has no sha512" >&2
			exit 1
		fi
		if [ -f "$packs/$file" ]; then
			verify "$packs/$file" "$sum" " (delete it to download it again)"
			continue
		fi
		echo "$spec $file $sum" >>"$tmp/missing"
	done
done
sort -u -k2,2 "$tmp/missing" >"$want"

# npm pack takes many specs at once: batches of 40, four at a time, spare
# the ~1 s each npm process costs to start (the trees hold hundreds).
cut -d' ' -f1 "$want" | xargs -r -n 40 -P 4 sh -c 'npm pack "$@" --pack-destination "$0" --silent >/dev/null' "$tmp"

# Verify before moving in, so a bad download never sits in packs/.
while read -r spec file sum; do
	if [ ! -f "$tmp/$file" ]; then
		echo "fetch.sh: npm pack $spec wrote no $file" >&2
		exit 1
	fi
	verify "$tmp/$file" "$sum"
	mv "$tmp/$file" "$packs/$file"
	echo "fetch.sh: $file"
done <"$want"
