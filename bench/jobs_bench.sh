#!/usr/bin/env bash
# Sweep benchmark: `kplab eval --manifest` over every predictions file of the shared
# data, serial (--jobs 1) against --jobs 2 (and more when asked), whole process.
#
#   bench/jobs_bench.sh
#
# The sweep: every predictions/*/<dataset>/*.txt of the shared data (Inspec 500, Krapivin 400, SemEval 100
# and KP20k 20,000 documents; several systems and seeds; 22 files), each scored against
# kpg_testsets_meng2017/<dataset>, written as a manifest into a mktemp directory (removed at exit), run as
#   kplab eval --manifest M --db FRESH.db --metrics METRICS --output csv --jobs J
# under /usr/bin/time -f "%e %M %U %S". Wall seconds, CPU seconds (user + sys) and peak RSS are the
# medians of KPLAB_BENCH_RUNS fresh processes, each writing a fresh store. The machine's load average is
# printed at the end: on a shared machine wall time depends on it.
#
# Check (exit 1 on a mismatch): every --jobs J store holds the runs of the --jobs 1 store, run for run
# (`runs export ID` and `runs show ID --output json` without created_at / elapsed_seconds), and the
# printed rows are the same.
#
# Environment: KPLAB_BUILD_DIR (default build; must hold host/kplab), KPLAB_SHARED_DATA (default
# /work/shared/data), KPLAB_BENCH_RUNS (default 3), KPLAB_JOBS_LIST (default "1 2"; 1 must be first),
# KPLAB_JOBS_METRICS (default exact,rank,rprec,prmu), KPLAB_JOBS_EVAL_ARGS (extra eval options, e.g.
# "--threads 1"), KPLAB_JOBS_DATASETS (default "inspec krapivin semeval kp20k": the datasets swept).
set -euo pipefail
trap 'echo "jobs_bench.sh:$LINENO: command failed (exit $?): $BASH_COMMAND" >&2' ERR
cd "$(dirname "$0")/.."

BUILD="${KPLAB_BUILD_DIR:-build}"
DATA="${KPLAB_SHARED_DATA:-/work/shared/data}"
RUNS="${KPLAB_BENCH_RUNS:-3}"
JOBS_LIST="${KPLAB_JOBS_LIST:-1 2}"
METRICS="${KPLAB_JOBS_METRICS:-exact,rank,rprec,prmu}"
DATASETS="${KPLAB_JOBS_DATASETS:-inspec krapivin semeval kp20k}"
read -r -a EXTRA <<<"${KPLAB_JOBS_EVAL_ARGS:-}"
TIME=/usr/bin/time
KPLAB="$BUILD/host/kplab"
PY=/usr/bin/python3

for f in "$TIME" "$KPLAB" "$PY"; do
  [ -x "$f" ] || { echo "jobs_bench.sh:$LINENO: $f is required (build kplab: cmake --build $BUILD --target kplab)" >&2; exit 1; }
done
[ -d "$DATA/predictions" ] || { echo "jobs_bench.sh:$LINENO: no shared data at $DATA (set KPLAB_SHARED_DATA)" >&2; exit 1; }
case "$JOBS_LIST" in 1\ *|1) ;; *) echo "jobs_bench.sh:$LINENO: KPLAB_JOBS_LIST must start with 1 (the reference)" >&2; exit 1 ;; esac

TMP="$(mktemp -d "${TMPDIR:-/tmp}/kplab-jobs-bench.XXXXXX")"
trap 'rm -rf "$TMP"' EXIT

# The manifest: one entry per predictions file, sorted by path.
"$PY" - "$DATA" "$DATASETS" >"$TMP/sweep.json" <<'EOF'
import glob, json, os, sys
data, datasets = sys.argv[1], sys.argv[2].split()
runs = []
for f in sorted(glob.glob(os.path.join(data, "predictions", "*", "*", "*.txt"))):
    ds = os.path.basename(os.path.dirname(f))
    if ds not in datasets:
        continue
    runs.append({"predictions": f, "dataset": os.path.join(data, "kpg_testsets_meng2017", ds)})
json.dump({"runs": runs}, sys.stdout)
EOF
N_FILES="$("$PY" -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["runs"]))' "$TMP/sweep.json")"

median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

# stored DB N: every run of DB without its creation time and elapsed seconds.
stored() {
  local db="$1" n="$2" id
  for id in $(seq 1 "$n"); do
    KPLAB_DB="$db" "$KPLAB" runs show "$id" --output json | sed -E 's/"(created_at|elapsed_seconds)": ("[^"]*"|[0-9.e+-]+)/"\1": _/g'
    KPLAB_DB="$db" "$KPLAB" runs export "$id" --output csv
  done
}

echo "sweep: $N_FILES files of $DATASETS, metrics $METRICS, $RUNS runs per setting, $(nproc) cores" >&2
printf '%-8s %10s %10s %12s %8s\n' "jobs" "wall s" "cpu s" "peak RSS MB" "speedup"
base_wall=""
for jobs in $JOBS_LIST; do
  : >"$TMP/times.$jobs"
  for r in $(seq 1 "$RUNS"); do
    db="$TMP/j$jobs.r$r.db"
    "$TIME" -f "%e %M %U %S" -o "$TMP/time.one" \
      "$KPLAB" eval --manifest "$TMP/sweep.json" --db "$db" --metrics "$METRICS" --output csv --jobs "$jobs" \
      ${EXTRA[@]+"${EXTRA[@]}"} >"$TMP/out.$jobs.$r" 2>"$TMP/err.$jobs.$r" || {
      echo "jobs_bench.sh:$LINENO: kplab eval --jobs $jobs failed:" >&2; tail -n 5 "$TMP/err.$jobs.$r" >&2; exit 1; }
    tail -n 1 "$TMP/time.one" >>"$TMP/times.$jobs"
  done
  wall="$(awk '{print $1}' "$TMP/times.$jobs" | median)"
  cpu="$(awk '{print $3 + $4}' "$TMP/times.$jobs" | median)"
  rss="$(awk '{print $2 / 1024}' "$TMP/times.$jobs" | median)"
  [ -z "$base_wall" ] && base_wall="$wall"
  printf '%-8s %10.2f %10.2f %12.0f %8.2f\n' "$jobs" "$wall" "$cpu" "$rss" "$(awk -v a="$base_wall" -v b="$wall" 'BEGIN {print a / b}')"
  # Same rows, same stored runs as the serial sweep.
  if [ "$jobs" != 1 ]; then
    cmp -s "$TMP/out.1.1" "$TMP/out.$jobs.1" || { echo "jobs_bench.sh: --jobs $jobs printed other rows than --jobs 1" >&2; exit 1; }
    stored "$TMP/j1.r1.db" "$N_FILES" >"$TMP/stored.1"
    stored "$TMP/j$jobs.r1.db" "$N_FILES" >"$TMP/stored.$jobs"
    cmp -s "$TMP/stored.1" "$TMP/stored.$jobs" || { echo "jobs_bench.sh: --jobs $jobs stored other runs than --jobs 1" >&2; exit 1; }
  fi
done
echo "check: every --jobs setting printed and stored the serial sweep's $N_FILES runs, number for number" >&2
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
