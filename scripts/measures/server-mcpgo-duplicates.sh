#!/bin/sh
# Lists the blocks of six or more lines that the given folders (default:
# server and mcpgo) share across folders in their non-test Go files (the same
# lines, or lines of the same shape with other names) and prints their count
# last. The server middleware and the mcp-go adapter should share one guard
# core instead of copies of it. Needs the `duplicates` tool. Run from the
# repository root: scripts/measures/server-mcpgo-duplicates.sh [folder...]
set -eu
[ $# -gt 0 ] || set -- server mcpgo
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
for p in "$@"; do
	[ -d "$p" ] || continue
	find "$p" -name '*.go' ! -name '*_test.go' | while read -r f; do
		mkdir -p "$dir/tree/$(dirname "$f")"
		cp "$f" "$dir/tree/$f"
	done
done
duplicates --repo "$dir/tree" --min-lines 6 --most 200 --seconds 60 |
	sed "s|$dir/tree/||g" >"$dir/out"
# Keep the rows whose two sides lie in different top folders.
awk '/^D[0-9]+ / { split($2, a, "/"); split($4, b, "/"); if (a[1] != b[1]) print }' \
	"$dir/out" >"$dir/pairs"
grep -E '^(incomplete|left out):' "$dir/out" || true
cat "$dir/pairs"
echo "$(grep -c . "$dir/pairs" || true) blocks of six or more lines shared across $* ($(grep -vc shape "$dir/pairs" || true) identical to the letter)"
