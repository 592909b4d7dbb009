#!/usr/bin/env bash
# What checking determinism costs (docs/plugins.md, "What a plugin may keep"): `kplab eval` of KP20k with
# the default --verify-docs 16 against --verify-docs 0 (no re-scoring), whole processes.
#
#   bench/verify_bench.sh [METRICS]      (default: the default metrics, exact,rank,rprec)
#
# The run: kpg_testsets_meng2017/kp20k (20,000 documents) with predictions/catSeqTG-2RF1/kp20k/seed1234.txt
# and --source kp20k_test_first1000/test_src.txt (so present/absent subsets exist), --no-store --output
# json, under /usr/bin/time -f "%e %U %S". The two settings run interleaved (16, 0, 16, 0, ...) after one
# untimed warm-up each, so a change of the machine's load moves both; wall and CPU seconds are the medians
# of KPLAB_BENCH_RUNS pairs, and the ratio is with / without. The load average is printed: on a shared
# machine wall time depends on it more than on anything measured here.
#
# Whole processes on a shared machine move by more than the check costs, so the script also measures it
# in-process: KPLAB_BENCH_RUNS more runs with KPLAB_TIMING=1, whose "[timing]" lines give each phase's
# milliseconds and each plugin's re-scoring ("of which re-scoring ..."); printed as the median share of
# the re-scoring in the run's phases.
#
# Check (exit 1 on a mismatch): both settings print the same aggregates, bit for bit.
#
# Environment: KPLAB_BUILD_DIR (default build; must hold host/kplab), KPLAB_SHARED_DATA (default
# /work/shared/data), KPLAB_BENCH_RUNS (default 9), KPLAB_VERIFY_EVAL_ARGS (extra eval options, e.g.
# "--threads 2").
set -euo pipefail
trap 'echo "verify_bench.sh:$LINENO: command failed (exit $?): $BASH_COMMAND" >&2' ERR
cd "$(dirname "$0")/.."

BUILD="${KPLAB_BUILD_DIR:-build}"
DATA="${KPLAB_SHARED_DATA:-/work/shared/data}"
RUNS="${KPLAB_BENCH_RUNS:-9}"
METRICS="${1:-exact,rank,rprec}"
read -r -a EXTRA <<<"${KPLAB_VERIFY_EVAL_ARGS:-}"
TIME=/usr/bin/time
KPLAB="$BUILD/host/kplab"
PY=/usr/bin/python3

for f in "$TIME" "$KPLAB" "$PY"; do
  [ -x "$f" ] || { echo "verify_bench.sh:$LINENO: $f is required (build kplab: cmake --build $BUILD --target kplab)" >&2; exit 1; }
done
DATASET="$DATA/kpg_testsets_meng2017/kp20k"
PREDS="$DATA/predictions/catSeqTG-2RF1/kp20k/seed1234.txt"
SOURCE="$DATA/kp20k_test_first1000/test_src.txt"
for f in "$DATASET" "$PREDS" "$SOURCE"; do
  [ -e "$f" ] || { echo "verify_bench.sh:$LINENO: $f not found (set KPLAB_SHARED_DATA)" >&2; exit 1; }
done

TMP="$(mktemp -d "${TMPDIR:-/tmp}/kplab-verify-bench.XXXXXX")"
trap 'rm -rf "$TMP"' EXIT

# run N OUT: one timed process with --verify-docs N; appends "wall cpu" to $TMP/times_N.
run() {
  local n=$1 out=$2
  "$TIME" -f "%e %U %S" -o "$TMP/t" "$KPLAB" eval --dataset "$DATASET" --predictions "$PREDS" --source "$SOURCE" \
    --metrics "$METRICS" --verify-docs "$n" --no-store --output json "${EXTRA[@]}" >"$out" 2>"$TMP/err" ||
    { echo "verify_bench.sh:$LINENO: kplab eval --verify-docs $n failed:" >&2; cat "$TMP/err" >&2; exit 1; }
  awk '{ printf "%s %.3f\n", $1, $2 + $3 }' "$TMP/t" >>"$TMP/times_$n"
}

run 16 "$TMP/with.json"  # warm-up: page cache, and the outputs that are compared
run 0 "$TMP/without.json"
: >"$TMP/times_16"
: >"$TMP/times_0"
for ((i = 0; i < RUNS; ++i)); do
  run 16 /dev/null
  run 0 /dev/null
done

# In-process: the phases and the re-scoring of each run, one file per run.
for ((i = 0; i < RUNS; ++i)); do
  KPLAB_TIMING=1 "$KPLAB" eval --dataset "$DATASET" --predictions "$PREDS" --source "$SOURCE" --metrics "$METRICS" \
    --verify-docs 16 --no-store --output json "${EXTRA[@]}" >/dev/null 2>"$TMP/timing_$i" ||
    { echo "verify_bench.sh:$LINENO: kplab eval with KPLAB_TIMING failed:" >&2; cat "$TMP/timing_$i" >&2; exit 1; }
done

"$PY" - "$TMP" "$METRICS" "$RUNS" "$(cut -d' ' -f1-3 /proc/loadavg)" <<'EOF'
import json, statistics, sys
tmp, metrics, runs, load = sys.argv[1:5]
a = json.load(open(tmp + "/with.json"))["aggregates"]
b = json.load(open(tmp + "/without.json"))["aggregates"]
if a != b:
    diff = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
    print(f"verify_bench.sh: the aggregates differ with and without --verify-docs: {diff[:5]}", file=sys.stderr)
    sys.exit(1)
def med(n, col):
    return statistics.median(float(l.split()[col]) for l in open(f"{tmp}/times_{n}"))
w16, w0, c16, c0 = med(16, 0), med(0, 0), med(16, 1), med(0, 1)
print(f"kplab eval KP20k --metrics {metrics}: medians of {runs} interleaved pairs, load average {load}")
print(f"| --verify-docs | wall s | CPU s |")
print(f"|---|---|---|")
print(f"| 16 (default) | {w16:.3f} | {c16:.3f} |")
print(f"| 0 (off) | {w0:.3f} | {c0:.3f} |")
print(f"| ratio | {w16 / w0:.4f} | {c16 / c0:.4f} |")
print(f"same aggregates: {len(a)} of {len(a)}")
import re
shares, verify_ms, total_ms = [], [], []
for i in range(int(runs)):
    phases = verify = 0.0
    for line in open(f"{tmp}/timing_{i}"):
        m = re.match(r"\[timing\] (\S+)\s+([0-9.]+) ms", line)
        if m:
            phases += float(m.group(2))
        m = re.match(r"\[timing\]   of which re-scoring \S+ \(--verify-docs\): ([0-9.]+) ms", line)
        if m:
            verify += float(m.group(1))
    shares.append(verify / phases)
    verify_ms.append(verify)
    total_ms.append(phases)
print(f"in-process (KPLAB_TIMING, medians of {runs} runs): re-scoring {statistics.median(verify_ms):.2f} ms of "
      f"{statistics.median(total_ms):.1f} ms, {100 * statistics.median(shares):.2f}% of the run")
EOF
