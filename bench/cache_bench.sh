#!/usr/bin/env bash
# Phrase-cache bulk benchmark (issue 16 item 4):   bench/cache_bench.sh
#
# Writes >= 1M distinct phrases (bench/gen_copies.py, the scale benchmark's generator: copies of KP20k
# gold + catSeqTG-2RF1 seed 1234, each copy's keyphrases tagged "copy<c>") to a temporary directory, then times whole `kplab cache add`
# processes under /usr/bin/time with the default embedding model ($KPLAB_MODEL or glove-6b-100d,
# installed by scripts/setup.sh):
#   cold: a new, empty database (every phrase embedded and stored);
#   warm: a new process on the filled database (every phrase found in the cache).
# Prints the phrase count, the median cold and warm seconds against the targets (cold <= 6 s,
# warm <= 1.5 s, on 2 cores), kplab's own split of the time, and the machine load (/proc/loadavg) at
# the start and the end: on a shared machine a load above the core count slows every number.
# What is measured and the results: bench/README.md, "Phrase cache at a million phrases".
#
# Environment (all optional):
#   KPLAB_BUILD_DIR      build tree (default: build; configured as Release if it does not exist);
#                        only the `kplab` target is built
#   KPLAB_SHARED_DATA    the shared data directory (default: /work/shared/data)
#   KPLAB_BENCH_RUNS     cold and warm runs each (median reported; default 3)
#   KPLAB_CACHE_COPIES   copies of the KP20k phrases (default 12: 1,027,789 distinct phrases)
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

LOAD_START="$(cut -d' ' -f1-3 /proc/loadavg)"
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
LOAD_END="$(cut -d' ' -f1-3 /proc/loadavg)"

"$PY" - "$TMP" "$(nproc)" "$LOAD_START" "$LOAD_END" "$(du -k "$TMP/cache.db" | cut -f1)" <<'EOF'
import os, re, statistics, sys
tmp, cores, load_start, load_end, db_kb = sys.argv[1:6]
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
      % (c, "yes" if c <= 6 else "NO", med(cold, 1), med(cold, 2), med(cold, 3) / 1024))
print("  warm: %.2f s (target <= 1.5 s: %s); cpu user %.2f s + sys %.2f s; max RSS %.0f MB"
      % (w, "yes" if w <= 1.5 else "NO", med(warm, 1), med(warm, 2), med(warm, 3) / 1024))
print("  database: %.0f MB" % (int(db_kb) / 1024))
print("  last cold: " + cold_text)
print("  last warm: " + warm_text)
print("  machine load (1/5/15 min): %s at the start, %s at the end" % (load_start, load_end))
EOF
