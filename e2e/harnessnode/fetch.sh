#!/bin/sh
# fetch.sh downloads the npm tarballs that the harness-template e2e tests
# install from a fake registry (package e2e/npmreg), because those tests run
# with no route to registry.npmjs.org. CI runs it once, with internet, before
# the tests.
#
# Every tarball must match its sha512 in packs.sha512 (a lockfile: a changed
# upstream tarball fails here, not as an odd install later). A tarball that is
# already present is only re-verified, so the script is idempotent.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
packs=$here/packs
sums=$here/packs.sha512
mkdir -p "$packs"

tmp=$(mktemp -d "$packs/.fetch.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# verify FILE NAME [HINT]: FILE's sha512 must equal NAME's line in
# packs.sha512.
verify() {
	want=$(awk -v f="$2" '$2 == f { print $1 }' "$sums")
	if [ -z "$want" ]; then
		echo "fetch.sh: $2 has no line in $sums" >&2
		return 1
	fi
	got=$(sha512sum <"$1" | cut -d' ' -f1)
	if [ "$got" != "$want" ]; then
		echo "fetch.sh: $1: sha512 $got, want $want${3:-}" >&2
		return 1
	fi
}

# Only the linux-x64 platform packages: npm skips the other platforms'
# optional dependencies, which the fake registry lacks (claude-code's are
# packages it answers 404 for; codex's are versions missing from
# @openai/codex's packument).
# spec                                       file npm pack writes
while read -r spec file; do
	if [ -f "$packs/$file" ]; then
		verify "$packs/$file" "$file" " (delete it to download it again)"
		continue
	fi
	npm pack "$spec" --pack-destination "$tmp" --silent >/dev/null
	# Verify before moving in, so a bad download never sits in packs/.
	verify "$tmp/$file" "$file"
	mv "$tmp/$file" "$packs/$file"
	echo "fetch.sh: $file"
done <<'SPECS'
@openai/codex@0.169.0                        openai-codex-0.169.0.tgz
@openai/codex@0.169.0-linux-x64              openai-codex-0.169.0-linux-x64.tgz
@anthropic-ai/claude-code@2.1.328            anthropic-ai-claude-code-2.1.328.tgz
@anthropic-ai/claude-code-linux-x64@2.1.328  anthropic-ai-claude-code-linux-x64-2.1.328.tgz
SPECS
