#!/usr/bin/env bash
# scripts/format_check.sh on a made-up history (docs/testing.md, "Format"): a commit adding a badly
# formatted line fails naming FILE:LINE; a commit whose changed lines are clean passes even when the
# file has old unformatted lines; a root commit and a deletion-only commit check nothing.
# Usage: format_check_test.sh SOURCE_DIR. Exit 77 (skipped) without clang-format (scripts/test.sh).
set -euo pipefail
src=$(cd "$1" && pwd)
command -v clang-format >/dev/null || { echo "skipped: clang-format not installed"; exit 77; }
fail() { echo "$src/tests/layout/format_check_test.sh:${BASH_LINENO[0]}: $*" >&2; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kplab-format-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
git init -q . && mkdir scripts
cp "$src/.clang-format" . && cp "$src/scripts/format_check.sh" scripts/
g() { git -c user.email=t@example.org -c user.name=t "$@"; }
printf 'int   Old( int x ){return x;}\n\nint Good(int x) { return x; }\n' > a.cc
g add -A && g commit -qm root
out=$(bash scripts/format_check.sh HEAD^ 2>&1) || fail "root commit: expected exit 0, got: $out"
printf '\nint Fine(int y) { return y + 1; }\n' >> a.cc
g commit -qam clean-lines
out=$(bash scripts/format_check.sh HEAD^ 2>&1) || fail "clean changed lines beside an old unformatted one must pass: $out"
printf 'int   Bad( int z ){return z;}\n' >> a.cc
g commit -qam bad-line
if out=$(bash scripts/format_check.sh HEAD^ 2>&1); then fail "an unformatted new line passed: $out"; fi
[[ $out == *"a.cc:6:"* ]] || fail "expected the finding at a.cc:6, got: $out"
[[ $out != *"a.cc:1:"* ]] || fail "an unchanged old line was reported: $out"
sed -i '$d' a.cc
g commit -qam deletion-only
out=$(bash scripts/format_check.sh HEAD^ 2>&1) || fail "a deletion-only commit must pass: $out"
echo "format_check.sh: root, clean, unformatted and deletion-only commits as expected"
