#!/usr/bin/env bash
# MoverScore against KPEval's own MoverScoreMetric, measured in the same run (issue 31):
#
#   bench/mover_bench.sh [DATASET [NDOCS]]      # default: semeval 100 (all of SemEval)
#
# Reference: tests/data/mover/run_reference.py, which runs uclanlp/KPEval's MoverScoreMetric over
# AIPHES/emnlp19-moverscore's moverscore.py (version 1, KPEval's configuration: unigrams, subwords kept,
# batch size 128) with Debian's torch (one thread) and pyemd, from the peers' folder
# ($KPLAB_MOVER_PEERS, default /work/peers/mover; how to fetch them: that script's header). Its time is
# the whole Python process under /usr/bin/time (torch's import included, ~2 s of it).
# kplab: `kplab eval --profile kpeval --metrics mover --model bert-mnli-tiny --no-store`, whole process
# (model load, corpus build, scoring), KPLAB_BENCH_RUNS times (median).
# Both run on the random-weight BERT of tests/data/mover/bert-mnli-tiny (hidden 16, 6 layers): the only
# model both can load here (no checkpoint can be fetched). The network is then a small part of either
# side's time, so the ratio measures everything around it (tokenizing, idf, pooling, distance matrices,
# the EMD, the interpreter); with BERT-base both would spend most of their time in the network.
# Check (exit 1 on failure): kplab's three means equal the reference's to 1e-6.
# Prints: reference wall/CPU s, kplab wall/CPU s (median), ratio of CPU seconds, peak RSS.
#
# Environment: KPLAB_BUILD_DIR (default build), KPLAB_SHARED_DATA (default /work/shared/data),
# KPLAB_MOVER_PEERS, KPLAB_BENCH_RUNS (default 3). Temporary files go to a mktemp directory removed at exit.
set -euo pipefail
trap 'echo "mover_bench.sh:$LINENO: command failed (exit $?): $BASH_COMMAND" >&2' ERR
cd "$(dirname "$0")/.."

BUILD="${KPLAB_BUILD_DIR:-build}"
DATA="${KPLAB_SHARED_DATA:-/work/shared/data}"
RUNS="${KPLAB_BENCH_RUNS:-3}"
DSNAME="${1:-semeval}"
NDOCS="${2:-100}"
PY=/usr/bin/python3
TIME=/usr/bin/time
KPLAB="$(cd "$BUILD" 2>/dev/null && pwd)/host/kplab"
MODEL=tests/data/mover/bert-mnli-tiny

for f in "$PY" "$TIME" "$KPLAB"; do
  [ -x "$f" ] || { echo "mover_bench.sh:$LINENO: $f is required (build kplab: cmake --build $BUILD --target kplab)" >&2; exit 1; }
done
case "$DSNAME" in inspec | krapivin | semeval) ;; *)
  echo "mover_bench.sh:$LINENO: dataset must be inspec, krapivin or semeval (got '$DSNAME')" >&2; exit 1 ;;
esac
[ "$NDOCS" -ge 1 ] 2>/dev/null || { echo "mover_bench.sh:$LINENO: NDOCS must be >= 1 (got '$NDOCS')" >&2; exit 1; }
[ "$RUNS" -ge 1 ] 2>/dev/null || { echo "mover_bench.sh:$LINENO: KPLAB_BENCH_RUNS must be >= 1 (got '$RUNS')" >&2; exit 1; }
MENG="$DATA/kpg_testsets_meng2017/$DSNAME/word_${DSNAME}_testing_"
PRED="$DATA/predictions/catSeqTG-2RF1/$DSNAME/seed1234.txt"
[ -f "${MENG}allkeywords.txt" ] && [ -f "$PRED" ] ||
  { echo "mover_bench.sh:$LINENO: $DSNAME not found under $DATA (set KPLAB_SHARED_DATA)" >&2; exit 1; }

TMP="$(mktemp -d "${TMPDIR:-/tmp}/kplab-mover-bench.XXXXXX")"
trap 'rm -rf "$TMP"' EXIT
cut -d' ' -f1-3 /proc/loadavg >"$TMP/load.start"
# The first NDOCS documents, as the reference reads them.
mkdir -p "$TMP/ds"
head -n "$NDOCS" "$PRED" >"$TMP/ds/predictions.txt"
for part in context allkeywords; do head -n "$NDOCS" "${MENG}$part.txt" >"$TMP/ds/word_${DSNAME}_testing_$part.txt"; done

echo "[1/3] the reference: KPEval's MoverScoreMetric, version 1, $DSNAME, $NDOCS documents" >&2
"$TIME" -f "%e %M %U %S" -o "$TMP/ref.time" "$PY" tests/data/mover/run_reference.py 1 "$MODEL" "$DSNAME" 1234 \
  "$NDOCS" "$TMP/ref.json" >"$TMP/ref.log" 2>&1 ||
  { echo "mover_bench.sh:$LINENO: the reference failed:" >&2; tail -20 "$TMP/ref.log" >&2; exit 1; }

echo "[2/3] kplab, $RUNS runs" >&2
export KPLAB_MODELS="$TMP/models"
"$KPLAB" model import bert-mnli-tiny "$MODEL" --backend transformer >/dev/null 2>"$TMP/err" ||
  { echo "mover_bench.sh:$LINENO: kplab model import failed:" >&2; cat "$TMP/err" >&2; exit 1; }
for ((i = 0; i < RUNS; i++)); do
  "$TIME" -f "%e %M %U %S" -a -o "$TMP/kplab.time" "$KPLAB" eval --profile kpeval --dataset "$TMP/ds" \
    --predictions "$TMP/ds/predictions.txt" --metrics mover --model bert-mnli-tiny --param mover.version=1 \
    --no-store --output json >"$TMP/kplab.json" 2>"$TMP/err" ||
    { echo "mover_bench.sh:$LINENO: kplab eval failed:" >&2; cat "$TMP/err" >&2; exit 1; }
done

echo "[3/3] check and report" >&2
cut -d' ' -f1-3 /proc/loadavg >"$TMP/load.end"
"$PY" - "$TMP" "$DSNAME" "$NDOCS" <<'EOF'
import json, statistics, sys
tmp, ds, n = sys.argv[1:4]
ref = json.load(open(tmp + "/ref.json"))["aggregate"]
got = json.load(open(tmp + "/kplab.json"))["aggregates"]
bad = 0
for s in ("all", "present", "absent"):
    want, have = ref["mover_score_" + s], got.get(s + ".moverscore", float("nan"))
    if not abs(have - want) <= 1e-6:
        print("MISMATCH %s.moverscore: kplab %r, KPEval %r" % (s, have, want))
        bad += 1
rows = [list(map(float, line.split())) for line in open(tmp + "/kplab.time") if line.strip()]
wall = statistics.median(r[0] for r in rows)
cpu = statistics.median(r[2] + r[3] for r in rows)
rss = max(r[1] for r in rows) / 1024
rw, rrss, ru, rs = map(float, open(tmp + "/ref.time").read().split()[:4])
print("MoverScore v1 (tiny random-weight BERT), %s, %s documents, catSeqTG-2RF1 seed 1234 (load %s -> %s)" % (
    ds, n, open(tmp + "/load.start").read().strip(), open(tmp + "/load.end").read().strip()))
print("%-10s %10s %10s %10s" % ("", "wall s", "CPU s", "RSS MiB"))
print("%-10s %10.2f %10.2f %10.0f" % ("KPEval", rw, ru + rs, rrss / 1024))
print("%-10s %10.3f %10.3f %10.0f   (median of %d)" % ("kplab", wall, cpu, rss, len(rows)))
print("ratio (KPEval CPU / kplab CPU): %.0fx" % ((ru + rs) / cpu))
print("check: kplab kpeval = KPEval on the three means to 1e-6: %s" % ("OK" if bad == 0 else "FAILED (%d)" % bad))
sys.exit(1 if bad else 0)
EOF
