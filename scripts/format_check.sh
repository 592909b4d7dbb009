#!/usr/bin/env bash
# clang-format --dry-run -Werror (the repository's .clang-format) on the lines of C/C++ files that
# changed between BASE and HEAD; .ci/run calls it with BASE = HEAD^ (docs/testing.md, "Format").
# Only the changed lines (--lines per hunk): most files predate the format check and are not
# clang-format clean as a whole, so checking whole files would fail any commit that touches one.
# Usage: scripts/format_check.sh [BASE]   (default HEAD^; a root commit has nothing to compare: exit 0)
# Exit 1 on a formatting difference, printed as clang-format's FILE:LINE:COL warnings.
set -euo pipefail
cd "$(dirname "$0")/.."
base=${1:-HEAD^}
if ! git rev-parse -q --verify "$base^{commit}" >/dev/null; then
  echo "format_check.sh: no commit '$base' to compare with; nothing checked"
  exit 0
fi
command -v clang-format >/dev/null ||
  { echo "scripts/format_check.sh:$LINENO: clang-format not found (scripts/test.sh installs it)" >&2; exit 2; }

status=0
checked=0
while IFS= read -r file; do
  [ -f "$file" ] || continue
  # New-side hunk ranges "+START[,COUNT]" of the zero-context diff; COUNT 0 is a pure deletion.
  lines=()
  while IFS= read -r range; do
    start=${range%%,*}
    count=1
    [[ $range == *,* ]] && count=${range#*,}
    [ "$count" -gt 0 ] && lines+=("--lines=$start:$((start + count - 1))")
  done < <(git diff -U0 "$base" HEAD -- "$file" | sed -n 's/^@@ -[0-9,]* +\([0-9,]*\) @@.*/\1/p')
  [ "${#lines[@]}" -gt 0 ] || continue
  checked=$((checked + 1))
  clang-format --dry-run -Werror "${lines[@]}" "$file" || status=1
done < <(git diff --name-only --diff-filter=ACMR "$base" HEAD -- '*.cc' '*.h' '*.c')
echo "format_check.sh: $checked changed C/C++ file(s) against $base: $([ $status = 0 ] && echo clean || echo 'NOT clean')"
exit $status
