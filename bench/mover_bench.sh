#!/usr/bin/env bash
# MoverScore against KPEval's own MoverScoreMetric, measured in the same run:
#
#   bench/mover_bench.sh [DATASET [NDOCS]]      # default: kp20k 1000 (the KP20k documents with text)
#
# MoverScore needs each document's text (KPEval splits present from absent by the source), so KP20k is
# scored on its first 1000 test documents (../shared/data/kp20k_test_first1000); inspec, krapivin and
# semeval read the Meng-2017 files. Both versions run (KPLAB_MOVER_VERSIONS, default "1 2"):
#   version 1: moverscore.py, BERT in the MNLI checkpoint's layout, KPEval's batch size 128;
#   version 2: moverscore_v2.py, DistilBERT, KPEval's batch size 128.
# Reference: tests/data/mover/run_reference.py, which runs uclanlp/KPEval's MoverScoreMetric over
# AIPHES/emnlp19-moverscore with Debian's torch (one thread) and pyemd, from the peers' folder
# ($KPLAB_MOVER_PEERS, default /work/peers/mover; how to fetch them: that script's header). Its time is
# the whole Python process under /usr/bin/time (torch's import included, ~2 s of it), one run.
# kplab: `kplab eval --profile kpeval --metrics mover --param mover.version=V --model M --no-store
# --threads 1`, whole process (model load, corpus build, scoring), KPLAB_BENCH_RUNS times (median).
# One thread on both sides: the comparison is of the work, not of the parallelism. --time-limit 0: a
# base-size network on a loaded machine took over the default 10 s for one document's call.
#
# Models (no checkpoint can be fetched here, so both sides load the same random-weight snapshot):
#   KPLAB_MOVER_SIZE=tiny (default): tests/data/mover/{bert-mnli-tiny,distilbert-tiny} (hidden 16). The
#     network is then a small part of either side's time, so the ratio measures everything around it
#     (tokenizing, idf, pooling, distance matrices, the EMD, the interpreter).
#   KPLAB_MOVER_SIZE=base: BERT-base (768, 12 layers) and DistilBERT-base (768, 6 layers) with the full
#     vocabulary, written by tests/data/mover/gen_mover_fixtures.py --base into the temporary directory
#     (deterministic; ~1 GB of disk while it runs). Most of either side's time is then the network.
# Check (exit 1 on failure): kplab's three means equal the reference's to 1e-5 (1e-6 apart from the
# float32-distance noise of version 2 that tests/data/mover/README.md explains; the per-document
# agreement is the test MoverRuns' job, not this benchmark's).
# Prints per version: reference wall/CPU s, kplab wall/CPU s (median), the CPU and wall ratios, peak RSS,
# and the load average before and after (bench/benchlib.py's rule: above 1.0 the figures are "loaded").
#
# Environment: KPLAB_BUILD_DIR (default build), KPLAB_SHARED_DATA (default /work/shared/data),
# KPLAB_MOVER_PEERS, KPLAB_MOVER_VERSIONS, KPLAB_MOVER_SIZE, KPLAB_BENCH_RUNS (default 3). Temporary
# files go to a mktemp directory removed at exit.
set -euo pipefail
trap 'echo "mover_bench.sh:$LINENO: command failed (exit $?): $BASH_COMMAND" >&2' ERR
cd "$(dirname "$0")/.."

BUILD="${KPLAB_BUILD_DIR:-build}"
DATA="${KPLAB_SHARED_DATA:-/work/shared/data}"
RUNS="${KPLAB_BENCH_RUNS:-3}"
VERSIONS="${KPLAB_MOVER_VERSIONS:-1 2}"
SIZE="${KPLAB_MOVER_SIZE:-tiny}"
DSNAME="${1:-kp20k}"
NDOCS="${2:-1000}"
PY=/usr/bin/python3
TIME=/usr/bin/time
KPLAB="$(cd "$BUILD" 2>/dev/null && pwd)/host/kplab"

for f in "$PY" "$TIME" "$KPLAB"; do
  [ -x "$f" ] || { echo "mover_bench.sh:$LINENO: $f is required (build kplab: cmake --build $BUILD --target kplab)" >&2; exit 1; }
done
case "$DSNAME" in inspec | krapivin | semeval | kp20k) ;; *)
  echo "mover_bench.sh:$LINENO: dataset must be kp20k, inspec, krapivin or semeval (got '$DSNAME')" >&2; exit 1 ;;
esac
for v in $VERSIONS; do
  case "$v" in 1 | 2) ;; *) echo "mover_bench.sh:$LINENO: KPLAB_MOVER_VERSIONS holds 1 and/or 2 (got '$v')" >&2; exit 1 ;; esac
done
case "$SIZE" in tiny | base) ;; *)
  echo "mover_bench.sh:$LINENO: KPLAB_MOVER_SIZE must be tiny or base (got '$SIZE')" >&2; exit 1 ;;
esac
[ "$NDOCS" -ge 1 ] 2>/dev/null || { echo "mover_bench.sh:$LINENO: NDOCS must be >= 1 (got '$NDOCS')" >&2; exit 1; }
[ "$RUNS" -ge 1 ] 2>/dev/null || { echo "mover_bench.sh:$LINENO: KPLAB_BENCH_RUNS must be >= 1 (got '$RUNS')" >&2; exit 1; }
if [ "$DSNAME" = kp20k ]; then
  SRC="$DATA/kp20k_test_first1000/test_src.txt" TRG="$DATA/kp20k_test_first1000/test_trg.txt"
  [ "$NDOCS" -le 1000 ] || { echo "mover_bench.sh:$LINENO: KP20k has text for its first 1000 documents only (got $NDOCS)" >&2; exit 1; }
else
  SRC="$DATA/kpg_testsets_meng2017/$DSNAME/word_${DSNAME}_testing_context.txt"
  TRG="$DATA/kpg_testsets_meng2017/$DSNAME/word_${DSNAME}_testing_allkeywords.txt"
fi
PRED="$DATA/predictions/catSeqTG-2RF1/$DSNAME/seed1234.txt"
for f in "$SRC" "$TRG" "$PRED"; do
  [ -f "$f" ] || { echo "mover_bench.sh:$LINENO: $f not found (set KPLAB_SHARED_DATA)" >&2; exit 1; }
done

TMP="$(mktemp -d "${TMPDIR:-/tmp}/kplab-mover-bench.XXXXXX")"
trap 'rm -rf "$TMP"' EXIT
# The first NDOCS documents, as the reference reads them, in the layout kplab reads (Meng-2017's file
# names, or test_src/test_trg for KP20k's text).
mkdir -p "$TMP/ds"
head -n "$NDOCS" "$PRED" >"$TMP/ds/predictions.txt"
if [ "$DSNAME" = kp20k ]; then
  head -n "$NDOCS" "$SRC" >"$TMP/ds/test_src.txt"
  head -n "$NDOCS" "$TRG" >"$TMP/ds/test_trg.txt"
else
  head -n "$NDOCS" "$SRC" >"$TMP/ds/word_${DSNAME}_testing_context.txt"
  head -n "$NDOCS" "$TRG" >"$TMP/ds/word_${DSNAME}_testing_allkeywords.txt"
fi

if [ "$SIZE" = base ]; then
  echo "writing the base-size random-weight models" >&2
  "$PY" tests/data/mover/gen_mover_fixtures.py --base "$TMP/base" >"$TMP/gen.log" 2>&1 ||
    { echo "mover_bench.sh:$LINENO: gen_mover_fixtures.py --base failed:" >&2; tail -20 "$TMP/gen.log" >&2; exit 1; }
  MODEL1="$TMP/base/bert-mnli-base" MODEL2="$TMP/base/distilbert-base-uncased"
else
  MODEL1=tests/data/mover/bert-mnli-tiny MODEL2=tests/data/mover/distilbert-tiny
fi
export KPLAB_MODELS="$TMP/models"
"$KPLAB" model import mover-v1 "$MODEL1" --backend transformer >/dev/null 2>"$TMP/err" &&
  "$KPLAB" model import mover-v2 "$MODEL2" --backend transformer >/dev/null 2>>"$TMP/err" ||
  { echo "mover_bench.sh:$LINENO: kplab model import failed:" >&2; cat "$TMP/err" >&2; exit 1; }

status=0
for v in $VERSIONS; do
  model=MODEL$v
  cut -d' ' -f1-3 /proc/loadavg >"$TMP/load.start"
  echo "[v$v 1/2] the reference: KPEval's MoverScoreMetric, version $v, $DSNAME, $NDOCS documents" >&2
  rm -f "$TMP/ref.time" "$TMP/kplab.time"
  "$TIME" -f "%e %M %U %S" -o "$TMP/ref.time" "$PY" tests/data/mover/run_reference.py "$v" "${!model}" "$DSNAME" 1234 \
    "$NDOCS" "$TMP/ref.json" >"$TMP/ref.log" 2>&1 ||
    { echo "mover_bench.sh:$LINENO: the reference failed:" >&2; tail -20 "$TMP/ref.log" >&2; exit 1; }
  echo "[v$v 2/2] kplab, $RUNS runs" >&2
  for ((i = 0; i < RUNS; i++)); do
    "$TIME" -f "%e %M %U %S" -a -o "$TMP/kplab.time" "$KPLAB" eval --profile kpeval --dataset "$TMP/ds" \
      --predictions "$TMP/ds/predictions.txt" --metrics mover --model "mover-v$v" --param "mover.version=$v" \
      --threads 1 --time-limit 0 --no-store --output json >"$TMP/kplab.json" 2>"$TMP/err" ||
      { echo "mover_bench.sh:$LINENO: kplab eval failed:" >&2; cat "$TMP/err" >&2; exit 1; }
  done
  cut -d' ' -f1-3 /proc/loadavg >"$TMP/load.end"
  "$PY" - "$TMP" "$DSNAME" "$NDOCS" "$v" "$SIZE" <<'PYEOF' || status=1
import json, statistics, sys
tmp, ds, n, v, size = sys.argv[1:6]
ref = json.load(open(tmp + "/ref.json"))["aggregate"]
got = json.load(open(tmp + "/kplab.json"))["aggregates"]
bad = 0
for s in ("all", "present", "absent"):
    want, have = ref["mover_score_" + s], got.get(s + ".moverscore", float("nan"))
    if not abs(have - want) <= 1e-5:
        print("MISMATCH %s.moverscore: kplab %r, KPEval %r" % (s, have, want))
        bad += 1
rows = [list(map(float, line.split())) for line in open(tmp + "/kplab.time") if line.strip()]
wall = statistics.median(r[0] for r in rows)
cpu = statistics.median(r[2] + r[3] for r in rows)
rss = max(r[1] for r in rows) / 1024
rw, rrss, ru, rs = map(float, open(tmp + "/ref.time").read().split()[:4])
start, end = open(tmp + "/load.start").read().split(), open(tmp + "/load.end").read().split()
loaded = max(float(start[0]), float(end[0])) > 1.0
print("MoverScore v%s (%s random-weight %s), %s, %s documents, catSeqTG-2RF1 seed 1234 (load %s -> %s%s)" % (
    v, size, "BERT" if v == "1" else "DistilBERT", ds, n, " ".join(start), " ".join(end),
    ": loaded, figures only" if loaded else ""))
print("%-10s %10s %10s %10s" % ("", "wall s", "CPU s", "RSS MiB"))
print("%-10s %10.2f %10.2f %10.0f" % ("KPEval", rw, ru + rs, rrss / 1024))
print("%-10s %10.3f %10.3f %10.0f   (median of %d)" % ("kplab", wall, cpu, rss, len(rows)))
print("ratio KPEval / kplab: %.1fx CPU, %.1fx wall" % ((ru + rs) / cpu, rw / wall))
print("check: kplab kpeval = KPEval on the three means to 1e-5: %s" % ("OK" if bad == 0 else "FAILED (%d)" % bad))
sys.exit(1 if bad else 0)
PYEOF
done
exit $status
