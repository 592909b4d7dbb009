#!/usr/bin/env bash
# Phrase-cache bulk benchmark:   bench/cache_bench.sh
#
# Writes >= 1M distinct phrases (bench/gen_copies.py, the scale benchmark's generator: copies of KP20k
# gold + catSeqTG-2RF1 seed 1234, each copy's keyphrases tagged "copy<c>") to a temporary directory, then times whole `kplab cache add`
# processes under /usr/bin/time with the default embedding model ($KPLAB_MODEL or glove-6b-100d,
# installed by scripts/setup.sh):
#   cold: a new, empty database (every phrase embedded and stored);
#   warm: a new process on the filled database (every phrase found in the cache).
# Prints the phrase count, the median cold and warm seconds against the targets (cold <= 6 s,
# warm <= 1.5 s, on 2 cores), kplab's own split of the time, and the machine's load at the start and
# the end: no verdict is given on a loaded machine (bench/benchlib.py), and the least-work program's
# time on KP20k states the machine's speed.
# What is measured and the results: bench/README.md, "Phrase cache at a million phrases".
#
# Environment (all optional):
#   KPLAB_BUILD_DIR      build tree (default: build; configured as Release if it does not exist);
#                        only the `kplab` target is built
#   KPLAB_SHARED_DATA    the shared data directory (default: /work/shared/data)
#   KPLAB_BENCH_RUNS     cold and warm runs each (median reported; default 3)
#   KPLAB_CACHE_COPIES   copies of the KP20k phrases (default 12: 1,027,789 distinct phrases)
#   KPLAB_BENCH_ROWS     append the table rows here (scripts/bench_table.sh)
set -euo pipefail
trap 'echo "cache_bench.sh:$LINENO: command failed: $BASH_COMMAND" >&2' ERR
cd "$(dirname "$0")/.."

BUILD="${KPLAB_BUILD_DIR:-build}"
DATA="${KPLAB_SHARED_DATA:-/work/shared/data}"
RUNS="${KPLAB_BENCH_RUNS:-3}"
COPIES="${KPLAB_CACHE_COPIES:-12}"
PY=/usr/bin/python3
TIME=/usr/bin/time
GOLD="$DATA/kpg_testsets_meng2017/kp20k/word_kp20k_testing_allkeywords.txt"
PRED="$DATA/predictions/catSeqTG-2RF1/kp20k/seed1234.txt"

for f in "$PY" "$TIME"; do
  [ -x "$f" ] || { echo "cache_bench.sh:$LINENO: $f is required" >&2; exit 1; }
done
for f in "$GOLD" "$PRED"; do
  [ -f "$f" ] || { echo "cache_bench.sh:$LINENO: $f is missing (set KPLAB_SHARED_DATA)" >&2; exit 1; }
done
case "$RUNS" in ''|*[!0-9]*|0) echo "cache_bench.sh:$LINENO: KPLAB_BENCH_RUNS must be a positive integer (got '$RUNS')" >&2; exit 1;; esac

TMP="$(mktemp -d "${TMPDIR:-/tmp}/kplab-cache-bench.XXXXXX")"
trap 'rm -rf "$TMP"' EXIT

if [ ! -f "$BUILD/CMakeCache.txt" ]; then
  cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
if ! cmake --build "$BUILD" -j"$(nproc)" --target kplab >"$TMP/build.log" 2>&1; then
  tail -n 30 "$TMP/build.log" >&2
  echo "cache_bench.sh:$LINENO: build of kplab in $BUILD failed" >&2
  exit 1
fi
KPLAB="$BUILD/host/kplab"

# The machine's load and speed (bench/benchlib.py): no verdict when it is loaded; the least-work
# program's time on KP20k states the machine's speed.
"$PY" bench/benchlib.py snapshot $$ >"$TMP/machine.start"
if cmake --build "$BUILD" -j"$(nproc)" --target kplab_least_work >"$TMP/build_lw.log" 2>&1; then
  "$PY" bench/benchlib.py yardstick "$BUILD/bench/kplab_least_work" "$DATA" >"$TMP/yardstick"
else
  echo '{}' >"$TMP/yardstick"
fi
echo "[cache] generating $COPIES copies of KP20k gold + catSeqTG-2RF1 seed 1234 in $TMP" >&2
"$PY" bench/gen_copies.py --gold "$GOLD" --predictions "$PRED" --docs "$((COPIES * $(wc -l <"$GOLD")))" \
  --out-dataset "$TMP/in/data" --out-predictions "$TMP/in/predictions.txt"
ARGS=(cache add "$TMP/in/data" "$TMP/in/predictions.txt" --db "$TMP/cache.db")

# timed OUTFILE CMD...: runs CMD under /usr/bin/time, appends "elapsed_s user_s sys_s max_rss_kb".
timed() {
  local out="$1"; shift
  "$TIME" -f "%e %U %S %M" -o "$TMP/time.one" "$@"
  tail -n 1 "$TMP/time.one" >>"$out"
}

: >"$TMP/cold.time"; : >"$TMP/warm.time"
for r in $(seq "$RUNS"); do
  echo "[cache] run $r of $RUNS: cold, then warm" >&2
  rm -rf "$TMP/cache.db" "$TMP/cache.db-wal" "$TMP/cache.db-shm" "$TMP/cache.db.hnsw"
  timed "$TMP/cold.time" "$KPLAB" "${ARGS[@]}" >"$TMP/cold.out"
  timed "$TMP/warm.time" "$KPLAB" "${ARGS[@]}" >"$TMP/warm.out"
done
"$PY" bench/benchlib.py snapshot $$ >"$TMP/machine.end"

"$PY" - "$TMP" "$(nproc)" "$(du -k "$TMP/cache.db" | cut -f1)" "${KPLAB_BENCH_ROWS:-}" <<'EOF'
import json, os, re, statistics, sys
sys.path.insert(0, "bench")
import benchlib
tmp, cores, db_kb, rows_file = sys.argv[1:5]
machine = benchlib.Machine.from_files(os.path.join(tmp, "machine.start"), os.path.join(tmp, "machine.end"))
ys = json.load(open(os.path.join(tmp, "yardstick")))
yard = ("yardstick %.4f s wall %.4f s CPU" % (ys["wall"], ys["cpu"])) if ys else "no yardstick (kplab_least_work not built)"
def times(name):
    rows = [l.split() for l in open(os.path.join(tmp, name)) if l.strip()]
    return [tuple(float(x) for x in r) for r in rows]
def med(rows, k):
    return statistics.median(r[k] for r in rows)
def split(name):
    text = open(os.path.join(tmp, name)).read().strip()
    m = re.match(r"(\d+) distinct phrases: (\d+) cached already, (\d+) embedded now", text)
    if not m:
        sys.exit("cache_bench.sh: unexpected output of kplab cache add in %s: %r" % (name, text))
    return [int(x) for x in m.groups()], text
(cold_n, cold_hits, cold_new), cold_text = split("cold.out")
(warm_n, warm_hits, warm_new), warm_text = split("warm.out")
if cold_hits != 0 or warm_hits != warm_n or cold_n != warm_n:
    sys.exit("cache_bench.sh: the cold run found %d phrases cached, the warm run %d of %d: not a cold/warm pair"
             % (cold_hits, warm_hits, warm_n))
cold, warm = times("cold.time"), times("warm.time")
c, w = med(cold, 0), med(warm, 0)
print()
print("phrase cache, `kplab cache add` whole process (%d runs each, median; %s cores):" % (len(cold), cores))
print("  phrases: %d distinct%s" % (cold_n, "" if cold_n >= 1000000 else " (fewer than the 1M the targets are for)"))
print("  cold: %.2f s (target <= 6 s: %s); cpu user %.2f s + sys %.2f s; max RSS %.0f MB"
      % (c, machine.verdict(c <= 6), med(cold, 1), med(cold, 2), med(cold, 3) / 1024))
print("  warm: %.2f s (target <= 1.5 s: %s); cpu user %.2f s + sys %.2f s; max RSS %.0f MB"
      % (w, machine.verdict(w <= 1.5), med(warm, 1), med(warm, 2), med(warm, 3) / 1024))
print("  database: %.0f MB" % (int(db_kb) / 1024))
print("  last cold: " + cold_text)
print("  last warm: " + warm_text)
print("  " + yard + " (bench/least_work.cc on KP20k: the machine's speed)")
for line in machine.lines():
    print("  " + line)
cell = "load %.2f -> %.2f, others %.2f cores; %s" % (machine.start["load"][0], machine.end["load"][0],
                                                    machine.other_cores(), yard)
for label, t, rows, target, ok in (("cold", c, cold, "<= 6 s", c <= 6), ("warm", w, warm, "<= 1.5 s", w <= 1.5)):
    benchlib.append_row(rows_file, ["kplab cache add, %s, %d phrases" % (label, cold_n), "%.2f" % t,
                                    "%.2f" % (med(rows, 1) + med(rows, 2)), "-", "-", "-", "-", target,
                                    machine.verdict(ok), cell])
EOF
