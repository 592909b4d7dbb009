#!/usr/bin/env bash
# Transformer encoder throughput against PyTorch (issue 19): phrases/s of a base-size model (12
# layers, 768 hidden, 12 heads, 3072 intermediate) with random weights, kplab against Debian's
# PyTorch running the same weights in the same run, at the same thread count. Target: >= 1.0x.
#
#   bench/transformer_bench.sh            (needs Debian's python3-torch: scripts/setup.sh --extra torch)
#
# 1. `kplab cache phrases` prints the 85,650 strings KPEval's semantic matching embeds for KP20k gold
#    + catSeqTG-2RF1 seed 1234 (profile kpeval); every k-th is kept so that KPLAB_BENCH_PHRASES of
#    them remain with the corpus's length mix (a base model does ~170 MFLOP a token, so all 85,650
#    would take tens of minutes a side on two cores);
# 2. tests/data/transformer/gen_fixtures.py --base writes a random-weight snapshot (MPNet by default,
#    KPLAB_BENCH_ARCH=bert for BERT) with the vocabulary of the Model2Vec fixtures' WordPiece
#    tokenizer (29,528 tokens, from ../shared/models, read at run time); kplab imports it
#    (`kplab model import --backend transformer`) and writes the token ids it feeds the network
#    (`kplab model tokenize`), which PyTorch is given, so both run the same sequences;
# 3. timed in the same run, alternating, KPLAB_BENCH_RUNS times each (median reported):
#      kplab model embed NAME PHRASES --threads T              (tokenization + network + pooling)
#      python3 bench/transformer_torch.py SNAPSHOT IDS --threads T   (network + pooling only,
#             sentence-transformers' way: longest first, padded batches of 32, inference mode)
#    each program's own timer of its embedding work (loading the weights is not timed on either
#    side); kplab's whole process is reported too (/usr/bin/time: wall, peak RSS).
# Check (exit 1 on failure): kplab's vectors equal PyTorch's (float32 both) on every row to 1e-4 of the
# row's largest value (the fixtures test the same network to 1e-5 against a float64 reference).
#
# Environment: KPLAB_BUILD_DIR (default build), KPLAB_SHARED_DATA (default /work/shared/data),
# KPLAB_SHARED_MODELS (default /work/shared/models), KPLAB_BENCH_RUNS (default 3),
# KPLAB_BENCH_PHRASES (default 1000), KPLAB_BENCH_THREADS (default: the number of cores),
# KPLAB_BENCH_ARCH (mpnet | bert). Temporary files go to a mktemp directory removed at exit.
set -euo pipefail
trap 'echo "transformer_bench.sh:$LINENO: command failed (exit $?): $BASH_COMMAND" >&2' ERR
cd "$(dirname "$0")/.."

BUILD="${KPLAB_BUILD_DIR:-build}"
DATA="${KPLAB_SHARED_DATA:-/work/shared/data}"
MODELS_SRC="${KPLAB_SHARED_MODELS:-/work/shared/models}"
RUNS="${KPLAB_BENCH_RUNS:-3}"
N="${KPLAB_BENCH_PHRASES:-1000}"
THREADS="${KPLAB_BENCH_THREADS:-$(nproc)}"
ARCH="${KPLAB_BENCH_ARCH:-mpnet}"
PY=/usr/bin/python3
TIME=/usr/bin/time
KPLAB="$(cd "$BUILD" 2>/dev/null && pwd)/host/kplab"
DS="$DATA/kpg_testsets_meng2017/kp20k"
PRED="$DATA/predictions/catSeqTG-2RF1/kp20k/seed1234.txt"
VOCAB="$MODELS_SRC/model2vec-fixtures/test-model-float32/tokenizer.json"

for f in "$PY" "$TIME" "$KPLAB"; do
  [ -x "$f" ] || { echo "transformer_bench.sh:$LINENO: $f is required (build kplab: cmake --build $BUILD --target kplab)" >&2; exit 1; }
done
"$PY" -c 'import torch, numpy' 2>/dev/null ||
  { echo "transformer_bench.sh:$LINENO: $PY lacks torch (scripts/setup.sh --extra torch)" >&2; exit 1; }
for f in "$DS/word_kp20k_testing_allkeywords.txt" "$PRED" "$VOCAB"; do
  [ -f "$f" ] || { echo "transformer_bench.sh:$LINENO: $f not found (set KPLAB_SHARED_DATA / KPLAB_SHARED_MODELS)" >&2; exit 1; }
done
for v in RUNS N THREADS; do
  [ "${!v}" -ge 1 ] 2>/dev/null || { echo "transformer_bench.sh:$LINENO: $v must be >= 1 (got '${!v}')" >&2; exit 1; }
done
case "$ARCH" in mpnet|bert) ;; *) echo "transformer_bench.sh: KPLAB_BENCH_ARCH must be mpnet or bert (got '$ARCH')" >&2; exit 1 ;; esac

TMP="$(mktemp -d "${TMPDIR:-/tmp}/kplab-tfbench.XXXXXX")"
trap 'rm -rf "$TMP"' EXIT
cut -d' ' -f1-3 /proc/loadavg >"$TMP/load.start"
must() {  # must LINE CMD...: run CMD, on failure show its stderr and name this script's line
  local line="$1"; shift
  if ! "$@" 2>"$TMP/err"; then
    echo "transformer_bench.sh:$line: failed: $*" >&2
    cat "$TMP/err" >&2
    exit 1
  fi
}

echo "[1/4] phrases" >&2
must $LINENO "$KPLAB" cache phrases --dataset "$DS" --predictions "$PRED" --profile kpeval --metrics semantic >"$TMP/all.txt"
TOTAL=$(wc -l <"$TMP/all.txt")
STEP=$(( TOTAL / N )); [ "$STEP" -ge 1 ] || STEP=1
awk -v s="$STEP" -v n="$N" '(NR - 1) % s == 0 && c < n { print; c++ }' "$TMP/all.txt" >"$TMP/phrases.txt"

echo "[2/4] base-size $ARCH snapshot with random weights" >&2
must $LINENO "$PY" tests/data/transformer/gen_fixtures.py --base "$TMP/snap" --arch "$ARCH" --vocab-from "$VOCAB"
export KPLAB_MODELS="$TMP/models"
mkdir -p "$KPLAB_MODELS"
must $LINENO "$KPLAB" model import bench "$TMP/snap" --backend transformer
must $LINENO "$KPLAB" model tokenize bench "$TMP/phrases.txt" >"$TMP/ids.txt"

echo "[3/4] timing: kplab model embed and transformer_torch.py, $RUNS runs each, alternating, $THREADS threads" >&2
: >"$TMP/kplab.time"; : >"$TMP/kplab.embed"; : >"$TMP/torch.json"
for _ in $(seq "$RUNS"); do
  must $LINENO "$TIME" -f "%e %M %U %S" -o "$TMP/one" "$KPLAB" model embed bench "$TMP/phrases.txt" --threads "$THREADS" \
    --output "$TMP/kplab.npy"
  tail -n 1 "$TMP/one" >>"$TMP/kplab.time"
  grep -o 'embed [0-9.]* s' "$TMP/err" | awk '{print $2}' >>"$TMP/kplab.embed"
  must $LINENO "$PY" bench/transformer_torch.py "$TMP/snap" "$TMP/ids.txt" --threads "$THREADS" --dump "$TMP/torch.npy" \
    >>"$TMP/torch.json"
done
cut -d' ' -f1-3 /proc/loadavg >"$TMP/load.end"

echo "[4/4] checks" >&2
"$PY" - "$TMP" "$ARCH" "$THREADS" <<'EOF' || exit 1
import json, statistics, sys
import numpy as np
tmp, arch, threads = sys.argv[1], sys.argv[2], int(sys.argv[3])
n = sum(1 for _ in open(tmp + "/phrases.txt"))
tokens = sum(len(l.split()) for l in open(tmp + "/ids.txt"))
k_embed = statistics.median(float(l) for l in open(tmp + "/kplab.embed") if l.strip())
k_wall = statistics.median(float(l.split()[0]) for l in open(tmp + "/kplab.time") if l.strip())
k_rss = statistics.median(float(l.split()[1]) for l in open(tmp + "/kplab.time") if l.strip())
t = [json.loads(l) for l in open(tmp + "/torch.json") if l.strip()]
t_s = statistics.median(r["seconds"] for r in t)
a, b = np.load(tmp + "/kplab.npy"), np.load(tmp + "/torch.npy")
# Per row: the largest difference relative to the row's largest value (a float32 network of 12 layers
# on both sides, in different summation orders).
err = float(np.max(np.abs(a - b).max(axis=1) / np.abs(b).max(axis=1)))
print("Transformer encoder throughput (issue 19): base-size %s (12 layers, 768 hidden), random weights, %d threads" % (arch, threads))
print("  %d KP20k phrases (every k-th of the %d distinct strings of profile kpeval), %d tokens with the specials" %
      (n, sum(1 for _ in open(tmp + "/all.txt")), tokens))
print("  kplab model embed:     %7.2f s  %8.1f phrases/s   (whole process %.2f s, peak RSS %.0f MB)" %
      (k_embed, n / k_embed, k_wall, k_rss / 1024))
print("  PyTorch %s:  %7.2f s  %8.1f phrases/s   (forward + pooling only)" % (t[0]["torch"], t_s, n / t_s))
print("  ratio kplab / PyTorch phrases/s: %.2fx   (target >= 1.0x)" % (t_s / k_embed))
print("  largest difference of the vectors: %.2e of a row's largest value" % err)
print("  load average: %s -> %s" % (open(tmp + "/load.start").read().strip(), open(tmp + "/load.end").read().strip()))
if err > 1e-4:
    sys.exit("kplab's vectors differ from PyTorch's by %.2e (expected <= 1e-4)" % err)
EOF
