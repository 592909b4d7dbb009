#!/usr/bin/env bash
# The table of bench/README.md ("The targets, measured"), regenerated in one command:
#
#   scripts/bench_table.sh
#
# Runs every benchmark that has a target, one after the other, each printing its own report (what it
# measures and checks: bench/README.md), and then the table's rows, one per target: the task, kplab's
# wall and CPU seconds, the reference's (the least-work program, the SemR-p authors' loop, PyTorch),
# the wall and the CPU ratio side by side, the target, the verdict, and the machine: its load at the
# start and the end of that benchmark, and its speed by a fixed yardstick, the least-work program's
# own time on KP20k (bench/least_work.cc; absolute times differ 2x between machines of the same kind).
# A benchmark gives no verdict on a loaded machine: its row says "loaded" (bench/benchlib.py).
#
#   1. bench/least_work_ratio.py on KP20k (--metrics exact: wall <= 2x, CPU <= 3x; default metrics:
#      wall <= 3x, CPU <= 4x), KPLAB_RATIO_RUNS interleaved runs (default 21);
#   2. the same at 1M documents (bench/gen_copies.py's tagged copies), KPLAB_SCALE_RATIO_RUNS runs
#      (default 3);
#   3. bench/scale.sh (1M documents <= 5 s on 2 cores, <= 1.2 KB of peak RSS a document);
#   4. bench/semrp_bench.sh (SemR-p >= 20x the authors' loop);
#   5. bench/cache_bench.sh (1.03M phrases: cold <= 6 s, warm <= 1.5 s);
#   6. bench/transformer_bench.sh at 2 threads and at 1 (wall: PyTorch at its best settings / kplab >= 1.0x), if /usr/bin/python3
#      has torch (scripts/setup.sh --extra torch).
# KPLAB_TABLE_ONLY="ratio scale1m scale semrp cache transformer" runs a subset (space-separated names).
#
# Environment: KPLAB_BUILD_DIR (default build; configured as Release if it does not exist),
# KPLAB_SHARED_DATA (default /work/shared/data), KPLAB_BENCH_RUNS (passed to the scripts: their own
# defaults otherwise), KPLAB_SETTLE_SECONDS (how long to wait before each benchmark for the load left by
# the previous one to fall to 0.9; default 180). The whole run takes some 15-20 minutes on the 2-core machine. Exit 1 if a
# benchmark's number check failed; a missed target is reported, not fatal.
set -uo pipefail
cd "$(dirname "$0")/.."

BUILD="${KPLAB_BUILD_DIR:-build}"
DATA="${KPLAB_SHARED_DATA:-/work/shared/data}"
ONLY="${KPLAB_TABLE_ONLY:-ratio scale1m scale semrp cache transformer}"
PY=/usr/bin/python3
[ -x "$PY" ] || { echo "bench_table.sh:$LINENO: $PY is required" >&2; exit 1; }
[ -d "$DATA/kpg_testsets_meng2017" ] || { echo "bench_table.sh:$LINENO: no shared data at $DATA (set KPLAB_SHARED_DATA)" >&2; exit 1; }

TMP="$(mktemp -d "${TMPDIR:-/tmp}/kplab-table.XXXXXX")"
trap 'rm -rf "$TMP"' EXIT

if [ ! -f "$BUILD/CMakeCache.txt" ]; then
  cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null || exit 1
fi
# scripts/test.sh's quick tier configures the same build/ without the benchmarks: turned on again here.
cmake -S . -B "$BUILD" -DKPLAB_BUILD_BENCHMARKS=ON >/dev/null || exit 1
if ! cmake --build "$BUILD" -j"$(nproc)" --target kplab kplab_least_work >"$TMP/build.log" 2>&1; then
  tail -n 30 "$TMP/build.log" >&2
  echo "bench_table.sh:$LINENO: build of kplab and kplab_least_work in $BUILD failed" >&2
  exit 1
fi
KPLAB="$BUILD/host/kplab"
LW="$BUILD/bench/kplab_least_work"
ROWS="$TMP/rows.tsv"
: >"$ROWS"
status=0
wanted() { case " $ONLY " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
# settle: the 1-minute load average still counts the previous benchmark's processes for a minute or
# two after they end, and a benchmark gives no verdict above 1.0 (bench/benchlib.py). So before each one
# wait, up to KPLAB_SETTLE_SECONDS (default 180), for the load to fall to 0.9; a machine that stays busy
# (other users) is then measured anyway, and its rows say "loaded".
settle() {
  local waited=0 limit="${KPLAB_SETTLE_SECONDS:-180}" load
  while :; do
    read -r load _ </proc/loadavg
    awk -v l="$load" 'BEGIN { exit !(l <= 0.9) }' && return 0
    if [ "$waited" -ge "$limit" ]; then
      echo "bench_table.sh: load $load after ${waited} s of waiting; measuring anyway" >&2
      return 0
    fi
    [ "$waited" -eq 0 ] && echo "bench_table.sh: waiting for the load ($load) to fall to 0.9" >&2
    sleep 5
    waited=$((waited + 5))
  done
}
run() {  # run NAME CMD...: one benchmark; its report goes to the terminal, a failure is remembered
  local name="$1"; shift
  settle
  echo "== $name: $*" >&2
  if ! "$@"; then
    echo "bench_table.sh: $name failed" >&2
    status=1
  fi
  echo
}

"$PY" bench/benchlib.py yardstick "$LW" "$DATA" >"$TMP/yardstick.start"
if wanted ratio; then
  run "kplab vs least work, KP20k" "$PY" bench/least_work_ratio.py --least-work "$LW" --kplab "$KPLAB" --data "$DATA" \
    --runs "${KPLAB_RATIO_RUNS:-21}" --rows "$ROWS"
fi
if wanted scale1m; then
  run "kplab vs least work, 1M documents" "$PY" bench/least_work_ratio.py --least-work "$LW" --kplab "$KPLAB" \
    --data "$DATA" --docs 1000000 --runs "${KPLAB_SCALE_RATIO_RUNS:-3}" --rows "$ROWS"
fi
export KPLAB_BUILD_DIR="$BUILD" KPLAB_SHARED_DATA="$DATA" KPLAB_BENCH_ROWS="$ROWS"
if wanted scale; then run "scale" bash bench/scale.sh; fi
if wanted semrp; then run "SemR-p" bash bench/semrp_bench.sh; fi
if wanted cache; then run "phrase cache" bash bench/cache_bench.sh; fi
if wanted transformer; then
  if "$PY" -c 'import torch' 2>/dev/null; then
    run "transformer, 2 threads" env KPLAB_BENCH_THREADS=2 bash bench/transformer_bench.sh
    run "transformer, 1 thread" env KPLAB_BENCH_THREADS=1 bash bench/transformer_bench.sh
  else
    echo "== transformer: skipped ($PY has no torch: scripts/setup.sh --extra torch)" >&2
  fi
fi
"$PY" bench/benchlib.py yardstick "$LW" "$DATA" >"$TMP/yardstick.end"

"$PY" - "$ROWS" "$TMP/yardstick.start" "$TMP/yardstick.end" "$(git rev-parse --short HEAD 2>/dev/null || echo '?')" <<'EOF'
import json, os, sys
rows_file, start, end, commit = sys.argv[1:5]
ys, ye = json.load(open(start)), json.load(open(end))
print("The targets, measured (scripts/bench_table.sh, kplab at %s, %d cores). The machine's speed by the"
      " yardstick (bench/least_work.cc on KP20k, median of 5): %.4f s wall, %.4f s CPU at the start; %.4f s wall,"
      " %.4f s CPU at the end." % (commit, os.cpu_count(), ys["wall"], ys["cpu"], ye["wall"], ye["cpu"]))
print()
head = ["task", "kplab wall s", "kplab CPU s", "reference wall s", "reference CPU s", "wall ratio", "CPU ratio",
        "target", "met?", "machine (load, yardstick)"]
print("| " + " | ".join(head) + " |")
print("|" + "|".join("---" for _ in head) + "|")
for line in open(rows_file):
    cells = line.rstrip("\n").split("\t")
    cells += [""] * (len(head) - len(cells))
    cells[8] = "**%s**" % cells[8] if cells[8] in ("NO", "loaded") else cells[8]
    print("| " + " | ".join(cells[:len(head)]) + " |")
EOF
exit "$status"
