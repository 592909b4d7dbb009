#!/usr/bin/env bash
# How `kplab eval --metrics exact` scales with documents (target: 1M documents in <= 5 s on 2 cores,
# <= 1.2 KB of peak RSS a document, time linear in documents). Makes COPIES copies of KP20k's gold and
# catSeqTG predictions in a temporary directory (copy c appends the token " cC" to every keyphrase but
# the <peos> marker, so no copy shares a phrase with another), runs kplab on it with each thread count
# and the least-work program on it, and prints wall and CPU seconds, peak RSS and bytes a document,
# and kplab's phases (KPLAB_TIMING). The input is deleted at exit: it is never to be committed.
# Usage: bench/corpus_scale.sh [COPIES (default 50)] [THREADS... (default 1 2)]
#        (KPLAB_BUILD_DIR, KPLAB_SHARED_DATA)
set -euo pipefail
cd "$(dirname "$0")/.."
COPIES="${1:-50}"
shift || true
THREADS=("$@")
[ ${#THREADS[@]} -gt 0 ] || THREADS=(1 2)
B="${KPLAB_BUILD_DIR:-build}"
D="${KPLAB_SHARED_DATA:-../shared/data}"
GOLD="$D/kpg_testsets_meng2017/kp20k/word_kp20k_testing_allkeywords.txt"
PRED="$D/predictions/catSeqTG-2RF1/kp20k/seed1234.txt"
for f in "$B/host/kplab" "$B/bench/kplab_least_work" "$GOLD" "$PRED"; do
  [ -e "$f" ] || { echo "corpus_scale.sh:$LINENO: $f is missing (build kplab and kplab_least_work)" >&2; exit 1; }
done
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
copies() {  # $1: input file; prints COPIES tagged copies of it
  awk -v N="$COPIES" 'BEGIN { FS = ";" } { line[NR] = $0 }
    END { for (c = 0; c < N; c++) for (i = 1; i <= NR; i++) {
      n = split(line[i], p, ";"); s = ""
      for (j = 1; j <= n; j++) { q = p[j]; if (q != "<peos>" && q != "") q = q " c" c; s = s (j > 1 ? ";" : "") q }
      print s } }' "$1"
}
mkdir -p "$TMP/data"
copies "$GOLD" >"$TMP/data/word_kpscale_testing_allkeywords.txt"
copies "$PRED" >"$TMP/pred.txt"
DOCS=$(wc -l <"$TMP/pred.txt")
echo "documents: $DOCS ($COPIES copies of KP20k)"
per_doc() { awk -v kb="$1" -v n="$DOCS" 'BEGIN { printf "%.2f KB/doc", kb / n }'; }
for t in "${THREADS[@]}"; do
  KPLAB_TIMING=1 /usr/bin/time -f "%e %U %S %M" -o "$TMP/time" "$B/host/kplab" eval --dataset "$TMP/data" \
    --predictions "$TMP/pred.txt" --no-store --output csv --metrics exact --threads "$t" >"$TMP/out_$t.csv" 2>"$TMP/err"
  read -r wall user sys kb <"$TMP/time"
  echo "kplab --threads $t: $wall s wall, $user s user + $sys s sys, peak $kb KB, $(per_doc "$kb")"
  sed 's/^/  /' "$TMP/err"
done
for t in "${THREADS[@]}"; do
  cmp -s "$TMP/out_${THREADS[0]}.csv" "$TMP/out_$t.csv" || { echo "corpus_scale.sh:$LINENO: --threads $t gives other numbers" >&2; exit 1; }
done
/usr/bin/time -f "%e %U %S %M" -o "$TMP/time" "$B/bench/kplab_least_work" "$TMP/data/word_kpscale_testing_allkeywords.txt" \
  "$TMP/pred.txt" >/dev/null 2>&1
read -r wall user sys kb <"$TMP/time"
echo "least work: $wall s wall, $user s user + $sys s sys, peak $kb KB, $(per_doc "$kb")"
