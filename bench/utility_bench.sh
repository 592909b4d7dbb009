#!/usr/bin/env bash
# The utility metric against KPEval's own retrieval classes; the target:
#   "BM25 over 1000 documents and 1000 queries should take milliseconds, not the seconds rank_bm25 takes".
#
#   bench/utility_bench.sh
#
# On KP20k test documents 1-1000 with catSeqTG-2RF1 seed 1234's predictions and KPEval's first query
# file, timed in the same run, alternating, KPLAB_BENCH_RUNS times each (median reported):
#   sparse  kplab eval --profile kpeval --metrics utility (BM25), whole process and the plugin alone
#           (KPLAB_TIMING's "utility" phase: prepare + scoring)
#           tests/reference/utility_peer.py --class v2 (KPEval's RetrievalMetricV2 over rank_bm25 0.2.2):
#           whole process and KPEval's evaluate() alone (the script prints it)
#   dense   the same with utility.mode=dense and the random-weight bi-encoder of tests/data/utility
#           (imported into a temporary $KPLAB_MODELS) against KPEval's dense path over
#           sentence-transformers 2.2.2 (its peer copy, tests/data/utility/gen_models.py --peer-out)
# under /usr/bin/time -f "%e %M": wall seconds and peak RSS. Checks (exit 1 on failure): kplab's six
# sparse aggregates equal KPEval's. The peers must be checked out under $PEERS (default
# /work/peers/utility, as tests/reference/utility_peer.py says); without the models' peer copy the dense
# rows are skipped.
#
# Environment: KPLAB_BUILD_DIR (default build), KPLAB_SHARED_DATA (default /work/shared/data),
# KPLAB_BENCH_RUNS (default 3), KPLAB_BENCH_DENSE (default 1; 0 skips the dense rows, whose KPEval side
# takes tens of minutes: its slow Python tokenizer spells the fixture's out-of-vocabulary words letter by
# letter), PEERS. Temporary files go to a mktemp directory removed at exit.
set -euo pipefail
trap 'echo "utility_bench.sh:$LINENO: command failed (exit $?): $BASH_COMMAND" >&2' ERR
cd "$(dirname "$0")/.."

BUILD="${KPLAB_BUILD_DIR:-build}"
DATA="${KPLAB_SHARED_DATA:-/work/shared/data}"
RUNS="${KPLAB_BENCH_RUNS:-3}"
PEERS="${PEERS:-/work/peers/utility}"
PY=/usr/bin/python3
TIME=/usr/bin/time
KPLAB="$(cd "$BUILD" 2>/dev/null && pwd)/host/kplab"
Q="$DATA/kpeval_adhoc_queries/kp20k_test_0_to_1000_labelled_query1.txt"
DS="$DATA/kp20k_test_first1000"

for f in "$PY" "$TIME" "$KPLAB"; do
  [ -x "$f" ] || { echo "utility_bench.sh:$LINENO: $f is required (build kplab: cmake --build $BUILD --target kplab)" >&2; exit 1; }
done
for d in "$PEERS/KPEval" "$PEERS/rank_bm25" "$PEERS/st-src" "$PEERS/tf-src"; do
  [ -d "$d" ] || { echo "utility_bench.sh:$LINENO: $d not found (check the peers out as tests/reference/utility_peer.py says)" >&2; exit 1; }
done
[ -f "$Q" ] || { echo "utility_bench.sh:$LINENO: $Q not found (set KPLAB_SHARED_DATA)" >&2; exit 1; }
[ "$RUNS" -ge 1 ] 2>/dev/null || { echo "utility_bench.sh:$LINENO: KPLAB_BENCH_RUNS must be >= 1 (got '$RUNS')" >&2; exit 1; }

TMP="$(mktemp -d "${TMPDIR:-/tmp}/kplab-utility.XXXXXX")"
trap 'rm -rf "$TMP"' EXIT
cut -d' ' -f1-3 /proc/loadavg >"$TMP/load.start"
head -n 1000 "$DATA/predictions/catSeqTG-2RF1/kp20k/seed1234.txt" >"$TMP/pred1000.txt"
export KPLAB_MODELS="$TMP/models"

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# kplab MODE EXTRA...: one timed kplab run; appends "wall rss user sys plugin_ms plugin_cpu_ms" to
# $TMP/kplab.MODE
kplab_run() {
  local mode="$1"; shift
  KPLAB_TIMING=1 "$TIME" -f "%e %M %U %S" -o "$TMP/time" "$KPLAB" eval --profile kpeval --dataset "$DS" \
    --predictions "$TMP/pred1000.txt" --metrics utility --param "utility.queries=$Q" \
    --param "utility.mode=$mode" --no-store --output json --threads 1 --time-limit 0 --instruction-limit 0 \
    --db "$TMP/kplab.db" "$@" >"$TMP/kplab.$mode.json" 2>"$TMP/kplab.err" ||
    { cat "$TMP/kplab.err" >&2; echo "utility_bench.sh:$LINENO: kplab eval failed" >&2; exit 1; }
  local ms cpu
  ms="$(awk '$1 == "[timing]" && $2 == "utility" {print $3}' "$TMP/kplab.err")"
  cpu="$(awk '$1 == "[timing]" && $2 == "utility" {print $6}' "$TMP/kplab.err")"
  echo "$(cat "$TMP/time") ${ms:-nan} ${cpu:-nan}" >>"$TMP/kplab.$mode"
}

# peer MODE EXTRA...: one timed KPEval run; appends "wall rss user sys evaluate_s" to $TMP/peer.MODE
peer_run() {
  local mode="$1"; shift
  PEERS="$PEERS" KPLAB_SHARED_DATA="$DATA" "$TIME" -f "%e %M %U %S" -o "$TMP/time" "$PY" tests/reference/utility_peer.py \
    --class v2 --queries "$Q" --out "$TMP/peer.$mode.json" "$@" 2>"$TMP/peer.err" >/dev/null ||
    { tail -5 "$TMP/peer.err" >&2; echo "utility_bench.sh:$LINENO: the KPEval run failed" >&2; exit 1; }
  local s
  s="$(tail -1 "$TMP/peer.err" | sed -n 's/.*(\([0-9.]*\) s)$/\1/p')"
  echo "$(cat "$TMP/time") ${s:-nan}" >>"$TMP/peer.$mode"
}

DENSE=0
if [ "${KPLAB_BENCH_DENSE:-1}" = 1 ] && [ -d "$PEERS/models/bi-encoder" ]; then
  "$KPLAB" model import utility-bi --backend transformer tests/data/utility/bi-encoder >/dev/null
  DENSE=1
fi
for _ in $(seq "$RUNS"); do
  kplab_run sparse
  peer_run sparse
  if [ "$DENSE" = 1 ]; then
    kplab_run dense --model utility-bi
    peer_run dense --no-sparse --bi-encoder "$PEERS/models/bi-encoder"
  fi
done

# The sparse numbers agree (aggregates of the last runs).
"$PY" - "$TMP/kplab.sparse.json" "$TMP/peer.sparse.json" <<'EOF'
import json, sys
k = json.load(open(sys.argv[1]))
p = json.load(open(sys.argv[2]))["aggregated"]
vals = k["aggregates"]
bad = []
for name, v in p.items():
    kn = name.replace("_at_", "@")
    got = vals.get(kn)
    if got is None or abs(got - v) > 1e-12:
        bad.append((name, v, got))
if bad:
    sys.exit("utility_bench.sh: kplab and KPEval disagree: %r" % bad)
print("sparse aggregates equal KPEval's (%d values)" % len(p))
EOF

row() {  # row LABEL FILE FIELD
  awk -v f="$3" '{print $f}' "$2" | median
}
echo
echo "load at start: $(cat "$TMP/load.start"); at end: $(cut -d' ' -f1-3 /proc/loadavg); runs: $RUNS (medians)"
printf '%-40s %10s %10s %12s %12s %9s\n' "" "wall (s)" "CPU (s)" "metric (s)" "metric CPU" "RSS (MB)"
for mode in sparse dense; do
  [ -f "$TMP/kplab.$mode" ] || continue
  kw="$(row x "$TMP/kplab.$mode" 1)"; kr="$(row x "$TMP/kplab.$mode" 2)"
  kc="$(awk '{print $3 + $4}' "$TMP/kplab.$mode" | median)"
  km="$(row x "$TMP/kplab.$mode" 5)"; kmc="$(row x "$TMP/kplab.$mode" 6)"
  pw="$(row x "$TMP/peer.$mode" 1)"; pr="$(row x "$TMP/peer.$mode" 2)"
  pc="$(awk '{print $3 + $4}' "$TMP/peer.$mode" | median)"; ps="$(row x "$TMP/peer.$mode" 5)"
  printf '%-40s %10s %10s %12.4f %12.4f %9.1f\n' "kplab utility ($mode)" "$kw" "$kc" \
    "$(awk -v m="$km" 'BEGIN{print m/1000}')" "$(awk -v m="$kmc" 'BEGIN{print m/1000}')" "$(awk -v r="$kr" 'BEGIN{print r/1024}')"
  printf '%-40s %10s %10s %12s %12s %9.1f\n' "KPEval RetrievalMetricV2 ($mode)" "$pw" "$pc" "$ps" "-" \
    "$(awk -v r="$pr" 'BEGIN{print r/1024}')"
  printf '%-40s %10.1f %10.1f %12.1f\n' "ratio KPEval / kplab" "$(awk -v a="$pw" -v b="$kw" 'BEGIN{print a/b}')" \
    "$(awk -v a="$pc" -v b="$kc" 'BEGIN{print a/b}')" "$(awk -v a="$ps" -v b="$km" 'BEGIN{print a/(b/1000)}')"
done
