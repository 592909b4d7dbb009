#!/usr/bin/env bash
# Transformer encoder throughput against PyTorch: a base-size model (12 layers, 768
# hidden, 12 heads, 3072 intermediate) with random weights, kplab against Debian's PyTorch running the
# same weights on the same token ids in the same run, with the same number of cores. Target: PyTorch's
# best wall time / kplab's >= 1.0x.
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
# 3. timed in the same run, alternating, KPLAB_BENCH_RUNS times each (medians reported):
#      kplab model embed NAME PHRASES --threads T       (tokenization + network + pooling, unpadded)
#      python3 bench/transformer_torch.py SNAPSHOT IDS --threads T               (network + pooling)
#      python3 bench/transformer_torch.py SNAPSHOT IDS --threads 1 --procs T     (only when T > 1)
#    PyTorch with its CPU best practice (transformer_torch.py says why each): sentence-transformers'
#    batching (longest first, so a batch of 32 pads little; inference_mode), OMP_WAIT_POLICY=PASSIVE
#    (Debian's torch: idle libgomp threads otherwise spin on the core OpenBLAS' threads need), and at
#    T > 1 also T single-threaded processes on interleaved batches (sentence-transformers'
#    multi-process pool); the faster configuration is PyTorch's best. Each program's own timers of its
#    embedding work (loading the weights is timed on neither side): wall, and CPU = user + system of
#    every thread that embedded.
# Reported per configuration: wall and CPU seconds, phrases/s, real tokens/s (the ids' tokens, specials
# included) and the tokens the network ran (PyTorch's padding included); the wall and CPU ratios of
# PyTorch's best to kplab; the machine's load (bench/benchlib.py: no verdict on a loaded machine).
# Check (exit 1 on failure): kplab's vectors equal every PyTorch configuration's (float32 both) on
# every row to 1e-4 of the row's largest value (the fixtures test the same network to 1e-5 against a
# float64 reference).
#
# Environment: KPLAB_BUILD_DIR (default build), KPLAB_SHARED_DATA (default /work/shared/data),
# KPLAB_SHARED_MODELS (default /work/shared/models), KPLAB_BENCH_RUNS (default 3),
# KPLAB_BENCH_PHRASES (default 1000), KPLAB_BENCH_THREADS (default: the number of cores),
# KPLAB_BENCH_ARCH (mpnet | bert), KPLAB_BENCH_ROWS (append the table row here: scripts/bench_table.sh).
# Temporary files go to a mktemp directory removed at exit.
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
KPLAB="$(cd "$BUILD" 2>/dev/null && pwd)/host/kplab"
DS="$DATA/kpg_testsets_meng2017/kp20k"
PRED="$DATA/predictions/catSeqTG-2RF1/kp20k/seed1234.txt"
VOCAB="$MODELS_SRC/model2vec-fixtures/test-model-float32/tokenizer.json"

for f in "$PY" "$KPLAB"; do
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
# The machine's load and speed (bench/benchlib.py): no verdict when it is loaded; the least-work
# program's time on KP20k states the machine's speed (built with `--target kplab_least_work`).
"$PY" bench/benchlib.py snapshot $$ >"$TMP/machine.start"
LW="$(cd "$BUILD" && pwd)/bench/kplab_least_work"
if [ -x "$LW" ]; then "$PY" bench/benchlib.py yardstick "$LW" "$DATA" >"$TMP/yardstick"; else echo '{}' >"$TMP/yardstick"; fi
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
: >"$TMP/kplab.embed"; : >"$TMP/torch.json"
for _ in $(seq "$RUNS"); do
  must $LINENO "$KPLAB" model embed bench "$TMP/phrases.txt" --threads "$THREADS" --output "$TMP/kplab.npy"
  # "embed W s on T threads (R lines/s; CPU C s)" -> "W C"
  sed -n 's/.*embed \([0-9.]*\) s on .*CPU \([0-9.]*\) s).*/\1 \2/p' "$TMP/err" >>"$TMP/kplab.embed"
  must $LINENO env OMP_WAIT_POLICY=PASSIVE "$PY" bench/transformer_torch.py "$TMP/snap" "$TMP/ids.txt" \
    --threads "$THREADS" --dump "$TMP/torch.npy" >>"$TMP/torch.json"
  if [ "$THREADS" -gt 1 ]; then
    must $LINENO env OMP_WAIT_POLICY=PASSIVE "$PY" bench/transformer_torch.py "$TMP/snap" "$TMP/ids.txt" \
      --threads 1 --procs "$THREADS" --dump "$TMP/torch_procs.npy" >>"$TMP/torch.json"
  fi
done
[ -s "$TMP/kplab.embed" ] || { echo "transformer_bench.sh:$LINENO: no 'embed ... CPU ... s' line from kplab model embed" >&2; exit 1; }
"$PY" bench/benchlib.py snapshot $$ >"$TMP/machine.end"

echo "[4/4] checks" >&2
"$PY" - "$TMP" "$ARCH" "$THREADS" "${KPLAB_BENCH_ROWS:-}" <<'EOF' || exit 1
import json, os, statistics, sys
import numpy as np
sys.path.insert(0, "bench")
import benchlib
tmp, arch, threads, rows_file = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
machine = benchlib.Machine.from_files(tmp + "/machine.start", tmp + "/machine.end")
ys = json.load(open(tmp + "/yardstick"))
n = sum(1 for _ in open(tmp + "/phrases.txt"))
tokens = sum(len(l.split()) for l in open(tmp + "/ids.txt"))
plural = "s" if threads > 1 else ""
k = [tuple(map(float, l.split())) for l in open(tmp + "/kplab.embed") if l.strip()]
sides = {"kplab, %d thread%s (unpadded)" % (threads, plural):
         {"wall": statistics.median(x[0] for x in k), "cpu": statistics.median(x[1] for x in k), "run": tokens}}
t = [json.loads(l) for l in open(tmp + "/torch.json") if l.strip()]
for procs in sorted({r["procs"] for r in t}):
    rs = [r for r in t if r["procs"] == procs]
    name = ("PyTorch, %d thread%s" % (threads, plural) if procs == 1 else
            "PyTorch, %d processes x 1 thread" % procs)
    sides[name] = {"wall": statistics.median(r["seconds"] for r in rs),
                   "cpu": statistics.median(r["cpu_seconds"] for r in rs), "run": rs[0]["padded_tokens"]}
names = list(sides)
best = min(names[1:], key=lambda s: sides[s]["wall"])
errs = []
for dump in ("torch.npy", "torch_procs.npy"):
    if os.path.exists(tmp + "/" + dump):
        a, b = np.load(tmp + "/kplab.npy"), np.load(tmp + "/" + dump)
        # Per row: the largest difference relative to the row's largest value (a float32 network of 12
        # layers on both sides, in different summation orders).
        errs.append(float(np.max(np.abs(a - b).max(axis=1) / np.abs(b).max(axis=1))))
err = max(errs)
print("Transformer encoder throughput: base-size %s (12 layers, 768 hidden), random weights, %d thread%s"
      % (arch, threads, plural))
print("  %d KP20k phrases (every k-th of the %d distinct strings of profile kpeval), %d real tokens with the specials"
      % (n, sum(1 for _ in open(tmp + "/all.txt")), tokens))
print("  PyTorch %s: sentence-transformers' batching (longest first, batches of %d, inference_mode), OMP_WAIT_POLICY=%s"
      % (t[0]["torch"], t[0]["batch_size"], t[0]["omp_wait_policy"]))
print("  %-36s %7s %7s %10s %13s  %s" % ("embedding work, median of %d" % len(k), "wall s", "CPU s", "phrases/s",
                                         "real tokens/s", "tokens the network ran"))
for s in names:
    v = sides[s]
    print("  %-36s %7.2f %7.2f %10.1f %13.0f  %d (%.2fx the real ones)" % (
        s, v["wall"], v["cpu"], n / v["wall"], tokens / v["wall"], v["run"], v["run"] / tokens))
kw, kc, bw, bc = sides[names[0]]["wall"], sides[names[0]]["cpu"], sides[best]["wall"], sides[best]["cpu"]
ratio, cpu_ratio = bw / kw, bc / kc
print("  PyTorch's best (%s) / kplab: wall %.2fx (target >= 1.0x: %s), CPU %.2fx"
      % (best, ratio, machine.verdict(ratio >= 1.0), cpu_ratio))
print("  per token the network ran (PyTorch's padding counted as work): PyTorch %.0f tokens/s, kplab %.0f (%.2fx)"
      % (sides[best]["run"] / bw, tokens / kw, (tokens / kw) / (sides[best]["run"] / bw)))
print("  largest difference of the vectors: %.2e of a row's largest value" % err)
yard = ("yardstick %.4f s wall %.4f s CPU" % (ys["wall"], ys["cpu"])) if ys else "no yardstick (build kplab_least_work)"
print("  " + yard + " (bench/least_work.cc on KP20k: the machine's speed)")
for line in machine.lines():
    print("  " + line)
benchlib.append_row(rows_file, [
    "transformer (%s, %d phrases, %d thread%s) vs PyTorch's best (%s)" % (arch, n, threads, plural, best[9:]),
    "%.2f" % kw, "%.2f" % kc, "%.2f" % bw, "%.2f" % bc, "%.2fx" % ratio, "%.2fx" % cpu_ratio,
    "PyTorch / kplab: wall >= 1.0x", machine.verdict(ratio >= 1.0),
    "load %.2f -> %.2f, others %.2f cores; %s" % (machine.start["load"][0], machine.end["load"][0],
                                                 machine.other_cores(), yard)])
if err > 1e-4:
    sys.exit("kplab's vectors differ from PyTorch's by %.2e (expected <= 1e-4)" % err)
EOF
