#!/usr/bin/env bash
# ROUGE, METEOR, Self-BLEU and self edit distance on KP20k (20,000 documents) against KPEval's own metric
# classes, measured in the same run:
#
#   bench/kpeval_text_bench.sh
#
# Reference: tests/reference/kpeval_text_peers.py --only kp20k --seeds 1234, which runs uclanlp/KPEval's
# RougeMetric (over pltrdy/rouge 1.0.1), MeteorMetric (over evaluate 0.4.0's meteor, nltk 3.8) and
# DiversityMetric (nltk's sentence_bleu, rapidfuzz 3.1.1's pure-Python fuzz.ratio) from the peers'
# folder (KPLAB_PEERS, default /work/peers; how to fetch them: that script's header). It reports each
# metric's CPU seconds (time.process_time around metric.evaluate: its own string preparation included,
# Python's start-up and imports not) and is run once (it takes a few minutes).
# kplab: `kplab eval --profile kpeval --metrics M` for M = rouge, meteor, diversity (with
# --param diversity.embeddings=false: Self-BLEU, edit distance and the ratios, no model), whole
# process under /usr/bin/time (import, corpus build, scoring; --no-store), KPLAB_BENCH_RUNS times each
# (median), and the same under --profile kplab. The reference measures the metric alone and kplab the
# whole process, so the ratio is in the reference's favour.
# Check (exit 1 on failure): every `all.*` mean of kplab's kpeval run equals the reference's to 1e-9.
# Prints a table: metric, reference CPU s, kplab wall s, kplab CPU s (user + sys), ratio (reference /
# kplab CPU), peak RSS.
#
# Environment: KPLAB_BUILD_DIR (default build), KPLAB_SHARED_DATA (default /work/shared/data),
# KPLAB_PEERS (default /work/peers), KPLAB_BENCH_RUNS (default 3). Temporary files go to a mktemp
# directory that is removed at exit.
set -euo pipefail
trap 'echo "kpeval_text_bench.sh:$LINENO: command failed (exit $?): $BASH_COMMAND" >&2' ERR
cd "$(dirname "$0")/.."

BUILD="${KPLAB_BUILD_DIR:-build}"
DATA="${KPLAB_SHARED_DATA:-/work/shared/data}"
PEERS="${KPLAB_PEERS:-/work/peers}"
RUNS="${KPLAB_BENCH_RUNS:-3}"
PY=/usr/bin/python3
TIME=/usr/bin/time
KPLAB="$(cd "$BUILD" 2>/dev/null && pwd)/host/kplab"
DS="$DATA/kpg_testsets_meng2017/kp20k"
PRED="$DATA/predictions/catSeqTG-2RF1/kp20k/seed1234.txt"

for f in "$PY" "$TIME" "$KPLAB"; do
  [ -x "$f" ] || { echo "kpeval_text_bench.sh:$LINENO: $f is required (build kplab: cmake --build $BUILD --target kplab)" >&2; exit 1; }
done
for d in "$PEERS/KPEval" "$PEERS/kpeval-text/rouge-1.0.1" "$PEERS/kpeval-text/evaluate-0.4.0" "$PEERS/kpeval-text/rapidfuzz-3.1.1"; do
  [ -d "$d" ] || { echo "kpeval_text_bench.sh:$LINENO: $d not found (the peers: see tests/reference/kpeval_text_peers.py; KPLAB_PEERS=DIR)" >&2; exit 1; }
done
[ -f "$DS/word_kp20k_testing_allkeywords.txt" ] && [ -f "$PRED" ] ||
  { echo "kpeval_text_bench.sh:$LINENO: KP20k not found under $DATA (set KPLAB_SHARED_DATA)" >&2; exit 1; }
[ -f /usr/share/wordnet/index.noun ] ||
  { echo "kpeval_text_bench.sh:$LINENO: WordNet is missing (scripts/setup.sh --extra wordnet)" >&2; exit 1; }
[ "$RUNS" -ge 1 ] 2>/dev/null || { echo "kpeval_text_bench.sh:$LINENO: KPLAB_BENCH_RUNS must be >= 1 (got '$RUNS')" >&2; exit 1; }

TMP="$(mktemp -d "${TMPDIR:-/tmp}/kplab-kpeval-text.XXXXXX")"
trap 'rm -rf "$TMP"' EXIT
cut -d' ' -f1-3 /proc/loadavg >"$TMP/load.start"

echo "[1/3] the reference: KPEval's metric classes on KP20k (a few minutes)" >&2
"$TIME" -f "%e %M %U %S" -o "$TMP/ref.time" "$PY" tests/reference/kpeval_text_peers.py --peers "$PEERS" \
  --shared "$DATA" --only kp20k --seeds 1234 --jobs 1 --out "$TMP/ref" >"$TMP/ref.log" 2>&1 ||
  { echo "kpeval_text_bench.sh:$LINENO: the reference failed:" >&2; tail -20 "$TMP/ref.log" >&2; exit 1; }

echo "[2/3] kplab, $RUNS runs per metric and profile" >&2
run_kplab() {  # run_kplab PROFILE METRIC: appends "wall rss user sys" to $TMP/PROFILE.METRIC.time
  local extra=()
  [ "$2" = diversity ] && extra=(--param diversity.embeddings=false)
  "$TIME" -f "%e %M %U %S" -a -o "$TMP/$1.$2.time" "$KPLAB" eval --dataset "$DS" --predictions "$PRED" \
    --profile "$1" --metrics "$2" "${extra[@]}" --no-store --output json >"$TMP/$1.$2.json" 2>"$TMP/err" ||
    { echo "kpeval_text_bench.sh:$LINENO: kplab eval --profile $1 --metrics $2 failed:" >&2; cat "$TMP/err" >&2; exit 1; }
}
for ((i = 0; i < RUNS; i++)); do
  for m in rouge meteor diversity; do
    run_kplab kpeval "$m"
    run_kplab kplab "$m"
  done
done

echo "[3/3] check and report" >&2
cut -d' ' -f1-3 /proc/loadavg >"$TMP/load.end"
"$PY" - "$TMP" <<'EOF'
import json, math, statistics, sys
tmp = sys.argv[1]
ref = json.load(open(tmp + "/ref/kp20k__seed1234.json"))
bad = 0
got = {m: json.load(open("%s/kpeval.%s.json" % (tmp, m)))["aggregates"]
       for m in ("rouge", "meteor", "diversity")}
for col, values in ref["columns"].items():
    if not col.startswith("all."):
        continue  # KP20k has no text: `all` only
    m = "rouge" if ".rouge" in col else "meteor" if ".meteor" in col else "diversity"
    want = math.fsum(values) / len(values)
    if not abs(got[m].get(col, float("nan")) - want) <= 1e-9:
        print("MISMATCH %s: kplab %r, KPEval %r" % (col, got[m].get(col), want))
        bad += 1


def median_times(path):
    rows = [list(map(float, line.split())) for line in open(path) if line.strip()]
    wall = statistics.median(r[0] for r in rows)
    cpu = statistics.median(r[2] + r[3] for r in rows)
    rss = max(r[1] for r in rows) / 1024
    return wall, cpu, rss


print("KP20k, 20,000 documents, catSeqTG-2RF1 seed 1234 (load %s -> %s)" % (
    open(tmp + "/load.start").read().strip(), open(tmp + "/load.end").read().strip()))
print("%-10s %-7s %14s %12s %12s %9s %9s" % ("metric", "profile", "reference CPU", "kplab wall", "kplab CPU",
                                               "ratio", "RSS MiB"))
for m in ("rouge", "meteor", "diversity"):
    for profile in ("kpeval", "kplab"):
        wall, cpu, rss = median_times("%s/%s.%s.time" % (tmp, profile, m))
        r = ref["seconds"][m]
        print("%-10s %-7s %14.2f %12.3f %12.3f %8.0fx %9.0f" % (m, profile, r, wall, cpu, r / cpu, rss))
print("reference whole process: %s s wall (three metrics, one process)" % open(tmp + "/ref.time").read().split()[0])
print("check: kplab kpeval = KPEval on every all.* mean to 1e-9: %s" % ("OK" if bad == 0 else "FAILED (%d)" % bad))
sys.exit(1 if bad else 0)
EOF
