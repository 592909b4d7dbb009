#!/usr/bin/env bash
# The benchmark suite, one command:   scripts/bench.sh
#
# Builds kplab and kplab_bench, then measures kplab against its nltk-based Python peers in the same run:
#   (i)  stemming every token of the shared test sets (peer: bench/peer_stem.py, nltk PorterStemmer, no memo);
#   (ii) `kplab eval` of all metrics on KP20k x catSeqTG-2RF1 seed 1234, whole process, cold start
#        (peer: bench/peer_eval.sh, the reference tests/reference/kpref.py, profile kplab),
# checks that the numbers are identical, and prints a table: task, peer, kplab, ratio, target, met?
# Then kplab's own numbers where no peer can run here: the embedding layer (iii) and the semantic
# metrics (iv: SemR-p over KP20k with a warm phrase cache, target < 1 s). Then kplab against a least-work
# program doing only the P/R/F1 part of the KP20k job (vi, the speed yardstick), and the other speed
# targets, one script each: a million documents (vii, bench/scale.sh), a million-phrase cache (viii,
# bench/cache_bench.sh), SemR-p against its authors' loop (ix, bench/semrp_bench.sh); and what checking
# determinism costs, with and without --verify-docs (x, bench/verify_bench.sh).
# Whole-process times come from /usr/bin/time; in-process rates from the programs' own timing loops.
# What is measured and how: bench/README.md.
#
# Environment (all optional):
#   KPLAB_BUILD_DIR     build tree (default: build; configured as Release if it does not exist)
#   KPLAB_SHARED_DATA   the shared data directory (default: /work/shared/data)
#   KPLAB_BENCH_RUNS    fresh-process runs of `kplab eval` (median reported; default 5)
#   KPLAB_BENCH_PEER_RUNS  runs of the peers (median reported; default 3)
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD="${KPLAB_BUILD_DIR:-build}"
DATA="${KPLAB_SHARED_DATA:-/work/shared/data}"
RUNS="${KPLAB_BENCH_RUNS:-5}"
PEER_RUNS="${KPLAB_BENCH_PEER_RUNS:-3}"
PY=/usr/bin/python3          # Debian's python3 with python3-nltk 3.8 (the peers need nltk)
TIME=/usr/bin/time

for f in "$PY" "$TIME"; do
  [ -x "$f" ] || { echo "bench.sh: $f is required" >&2; exit 1; }
done
"$PY" -c 'import nltk' 2>/dev/null || { echo "bench.sh: $PY lacks nltk (apt-get install python3-nltk)" >&2; exit 1; }
[ -d "$DATA/kpg_testsets_meng2017" ] || { echo "bench.sh: no shared data at $DATA (set KPLAB_SHARED_DATA)" >&2; exit 1; }

TMP="$(mktemp -d "${TMPDIR:-/tmp}/kplab-bench.XXXXXX")"
trap 'rm -rf "$TMP"' EXIT

# ---- build -------------------------------------------------------------------------------------------
if [ ! -f "$BUILD/CMakeCache.txt" ]; then
  cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
if ! cmake --build "$BUILD" -j"$(nproc)" --target kplab kplab_bench kplab_embed_bench >"$TMP/build.log" 2>&1; then
  tail -n 30 "$TMP/build.log" >&2
  echo "bench.sh: build failed (is add_subdirectory(bench) in CMakeLists.txt and KPLAB_BUILD_BENCHMARKS on?)" >&2
  exit 1
fi
KPLAB="$BUILD/host/kplab"
KPLAB_BENCH="$BUILD/bench/kplab_bench"

# timed OUTFILE CMD...: runs CMD under /usr/bin/time, appends "elapsed_s max_rss_kb" to OUTFILE.
timed() {
  local out="$1"; shift
  "$TIME" -f "%e %M" -o "$TMP/time.one" "$@"
  tail -n 1 "$TMP/time.one" >> "$out"
}

echo "kplab benchmarks on $(nproc) cores; data $DATA; build $BUILD" >&2
cut -d' ' -f1-3 /proc/loadavg >"$TMP/load.start"

# ---- (i) stemming ------------------------------------------------------------------------------------
echo "[1/4] token stream" >&2
"$PY" bench/peer_stem.py --data "$DATA" --write-tokens "$TMP/tokens.txt" 2>"$TMP/tokens.log"

echo "[2/4] stemming: peer (nltk, $PEER_RUNS runs), kplab stem, kplab_bench" >&2
: >"$TMP/peer_stem.time"; : >"$TMP/peer_stem.loop"
for _ in $(seq "$PEER_RUNS"); do
  timed "$TMP/peer_stem.time" "$PY" bench/peer_stem.py --tokens "$TMP/tokens.txt" --stems "$TMP/peer_stems.txt" \
    2>>"$TMP/peer_stem.loop"
done
# `kplab stem` takes well under a second: each timed sample is a batch of 5 fresh processes (the
# mean per process is used), to get past /usr/bin/time's 10 ms resolution.
"$KPLAB" stem <"$TMP/tokens.txt" >"$TMP/kplab_stems.txt"
: >"$TMP/kplab_stem.time"
for _ in $(seq "$RUNS"); do
  timed "$TMP/kplab_stem.time" sh -c 'for i in 1 2 3 4 5; do "$1" stem <"$2" >/dev/null; done' sh \
    "$KPLAB" "$TMP/tokens.txt"
done
if cmp -s "$TMP/peer_stems.txt" "$TMP/kplab_stems.txt"; then echo OK >"$TMP/stems.check"; else echo MISMATCH >"$TMP/stems.check"; fi
"$KPLAB_BENCH" --tokens "$TMP/tokens.txt" >"$TMP/kplab_bench.out"

# ---- (ii) kplab eval on KP20k ------------------------------------------------------------------------
KP20K_ARGS=(eval --dataset "$DATA/kpg_testsets_meng2017/kp20k" --source "$DATA/kp20k_test_first1000/test_src.txt"
  --predictions "$DATA/predictions/catSeqTG-2RF1/kp20k/seed1234.txt" --no-store --output json)
echo "[3/4] kplab eval KP20k: 1 untimed warm-up + $RUNS timed fresh processes" >&2
"$KPLAB" "${KP20K_ARGS[@]}" >"$TMP/kplab_eval.json"
: >"$TMP/kplab_eval.time"
for _ in $(seq "$RUNS"); do
  timed "$TMP/kplab_eval.time" "$KPLAB" "${KP20K_ARGS[@]}" >/dev/null
done

echo "[4/4] peer eval (kpref.py, two commands): $PEER_RUNS timed runs" >&2
: >"$TMP/peer_eval.time"
for _ in $(seq "$PEER_RUNS"); do
  timed "$TMP/peer_eval.time" bench/peer_eval.sh "$DATA" "$TMP"
done

cut -d' ' -f1-3 /proc/loadavg >"$TMP/load.end"

# ---- report ------------------------------------------------------------------------------------------
set +e
"$PY" - "$TMP" <<'EOF'
import json, os, re, statistics, sys
tmp = sys.argv[1]

def times(name, per=1):
    rows = [l.split() for l in open(os.path.join(tmp, name)) if l.strip()]
    return statistics.median(float(r[0]) / per for r in rows), max(int(r[1]) for r in rows), len(rows)

def fields(line):
    return dict(kv.split("=", 1) for kv in line.split()[1:])

ntok = sum(1 for _ in open(os.path.join(tmp, "tokens.txt"), encoding="utf-8"))
peer_loop = statistics.median(float(fields(l)["tokens_per_s"])
                              for l in open(os.path.join(tmp, "peer_stem.loop")) if l.startswith("peer_stem "))
peer_stem_s, peer_stem_rss, _ = times("peer_stem.time")
kpl_stem_s, kpl_stem_rss, _ = times("kplab_stem.time", per=5)
bench = {l.split()[0]: fields(l) for l in open(os.path.join(tmp, "kplab_bench.out")) if l.strip()}
cold, warm = float(bench["stem_cold"]["tokens_per_s"]), float(bench["stem_warm"]["tokens_per_s"])
peer_eval_s, peer_eval_rss, n_peer = times("peer_eval.time")
kpl_eval_s, kpl_eval_rss, n_kpl = times("kplab_eval.time")

# identical numbers
kpl = json.load(open(os.path.join(tmp, "kplab_eval.json")))["aggregates"]
ref_all = json.load(open(os.path.join(tmp, "ref_20k_all.json")))["aggregates"]
ref_txt = json.load(open(os.path.join(tmp, "ref_1000_text.json")))["aggregates"]
checks = []
for group, ref in (("all", ref_all), ("present", ref_txt), ("absent", ref_txt)):
    names = sorted(n for n in ref if n.startswith(group + "."))
    mine = sorted(n for n in kpl if n.startswith(group + "."))
    missing = sorted(set(names) - set(mine)); extra = sorted(set(mine) - set(names))
    diff = max((abs(kpl[n] - ref[n]) for n in names if n in kpl), default=float("inf"))
    ok = names and not missing and not extra and diff <= 1e-9
    src = "ref --no-text (20000 docs)" if group == "all" else "ref --max-docs 1000 with text"
    detail = "%d metrics, max |diff| %.3g vs %s" % (len(names), diff, src)
    if missing: detail += "; missing in kplab: " + ",".join(missing[:5])
    if extra: detail += "; not in ref: " + ",".join(extra[:5])
    checks.append(("eval %s.*" % group, "OK" if ok else "MISMATCH", detail))
stems_ok = open(os.path.join(tmp, "stems.check")).read().strip()
checks.insert(0, ("stems (%d tokens)" % ntok, stems_ok, "kplab stem output == nltk PorterStemmer().stem, byte for byte"))

def rate(x): return "%.3gM tok/s" % (x / 1e6) if x >= 1e6 else "%.3gk tok/s" % (x / 1e3)
def yes(b): return "yes" if b else "NO"
rows = [
    ("stem, whole process (`kplab stem` vs peer_stem.py)", rate(ntok / peer_stem_s), rate(ntok / kpl_stem_s),
     "%.1fx" % (peer_stem_s / kpl_stem_s), "-", "-"),
    ("stem, in-process cold (PorterStemmer::Stem vs nltk loop)", rate(peer_loop), rate(cold),
     "%.1fx" % (cold / peer_loop), "-", "-"),
    ("stem, in-process warm (StemCache vs nltk loop)", rate(peer_loop), rate(warm),
     "%.0fx" % (warm / peer_loop), ">= 50M tok/s", yes(warm >= 50e6)),
    ("eval KP20k all metrics, whole process, cold start", "%.2f s" % peer_eval_s, "%.3f s" % kpl_eval_s,
     "%.1fx" % (peer_eval_s / kpl_eval_s), ">= 100x", yes(peer_eval_s / kpl_eval_s >= 100)),
    ("eval KP20k, kplab wall time", "-", "%.3f s" % kpl_eval_s, "-", "< 0.5 s", yes(kpl_eval_s < 0.5)),
]
head = ("task", "peer", "kplab", "ratio", "target", "met?")
w = [max(len(str(r[i])) for r in rows + [head]) for i in range(6)]
line = lambda r: "| " + " | ".join(str(c).ljust(w[i]) for i, c in enumerate(r)) + " |"
print(line(head))
print("|" + "|".join("-" * (x + 2) for x in w) + "|")
for r in rows: print(line(r))
print()
print("identical numbers:")
for name, st, detail in checks:
    print("  %-22s %-8s %s" % (name, st, detail))
print()
print("details: %d tokens, %s distinct; medians of %d kplab eval runs and %d peer runs (fresh processes);"
      % (ntok, bench["stem_warm"].get("distinct", "?"), n_kpl, n_peer))
print("  max RSS: kplab eval %.0f MB, peer eval %.0f MB, kplab stem %.0f MB, peer stem %.0f MB"
      % (kpl_eval_rss / 1024, peer_eval_rss / 1024, kpl_stem_rss / 1024, peer_stem_rss / 1024))
print("  in-process best pass: cold %s, warm %s (the table uses the median pass)"
      % (rate(float(bench["stem_cold"]["best_tokens_per_s"])), rate(float(bench["stem_warm"]["best_tokens_per_s"]))))
print("  load average (1/5/15 min) at start %s, at end %s on %d cores -- other work on the machine slows both sides"
      % (open(os.path.join(tmp, "load.start")).read().strip(), open(os.path.join(tmp, "load.end")).read().strip(),
         os.cpu_count()))
print("  peer stem whole process %.2f s (nltk loop alone %.2f s); kplab stem %.3f s per process"
      % (peer_stem_s, ntok / peer_loop, kpl_stem_s))
bad = [c for c in checks if c[1] != "OK"]
sys.exit(1 if bad else 0)
EOF
status=$?
set -e

# ---- (iii) embeddings ---------------------------------------------------------------------------------
# Needs the default model (scripts/setup.sh installs it). No peer can run here: KPEval embeds with
# sentence-transformers (PyTorch and a Hugging Face download), so these are kplab's own numbers.
echo "[embeddings] backends, phrase cache, HNSW (kplab_embed_bench)" >&2
KP20K_SETS=(--dataset "$DATA/kpg_testsets_meng2017/kp20k")
for s in 1234 5678 9527; do KP20K_SETS+=(--predictions "$DATA/predictions/catSeqTG-2RF1/kp20k/seed$s.txt"); done
"$BUILD/bench/kplab_embed_bench" "${KP20K_SETS[@]}" --db "$TMP/embed.db" \
  --model2vec "$DATA/../models/model2vec-fixtures/test-model-float32" >"$TMP/embed.out"
# Whole processes: `kplab cache add` of KP20k gold + catSeqTG-2RF1 seed 1234 on an empty database, then
# again from a new process (every phrase found in the cache).
CACHE_ARGS=(cache add "$DATA/kpg_testsets_meng2017/kp20k" "$DATA/predictions/catSeqTG-2RF1/kp20k/seed1234.txt"
  --db "$TMP/cache.db")
: >"$TMP/cache_cold.time"; : >"$TMP/cache_warm.time"
for _ in $(seq "$RUNS"); do
  rm -rf "$TMP/cache.db" "$TMP/cache.db-wal" "$TMP/cache.db-shm"
  timed "$TMP/cache_cold.time" "$KPLAB" "${CACHE_ARGS[@]}" >"$TMP/cache_cold.out"
  timed "$TMP/cache_warm.time" "$KPLAB" "${CACHE_ARGS[@]}" >"$TMP/cache_warm.out"
done
"$PY" - "$TMP" <<'EOF'
import os, statistics, sys
tmp = sys.argv[1]
def med(name):
    return statistics.median(float(l.split()[0]) for l in open(os.path.join(tmp, name)) if l.strip())
rows = {}
for l in open(os.path.join(tmp, "embed.out")):
    k, *kv = l.split()
    rows.setdefault(k, []).append(dict(x.split("=", 1) for x in kv))
print()
print("embeddings (GloVe 6B 100d unless said):")
print("  distinct phrases of KP20k gold + catSeqTG-2RF1 seeds 1234/5678/9527: %s" % rows["phrases"][0]["distinct"])
print("  model load (mmap + checksum): %s ms median (target < 100 ms: %s)"
      % (rows["load"][0]["ms"], "yes" if float(rows["load"][0]["ms"]) < 100 else "NO"))
for r in rows["embed"]:
    print("  embed %-12s %10.0f phrases/s (one thread)" % (r["backend"], float(r["phrases_per_s"])))
c, w = rows["cache_cold"][0], rows["cache_warm"][0]
print("  phrase cache in-process: cold %.3f s (embed %s s + store %s s), warm %.3f s -> %.1fx"
      % (float(c["seconds"]), c["embed_s"], c["store_s"], float(w["seconds"]), float(c["seconds"]) / float(w["seconds"])))
cold, warm = med("cache_cold.time"), med("cache_warm.time")
print("  `kplab cache add` KP20k + seed 1234, whole process: cold %.2f s, warm (new process) %.2f s" % (cold, warm))
print("    " + open(os.path.join(tmp, "cache_warm.out")).read().strip())
b, q = rows["hnsw_build"][0], rows["hnsw_query"][0]
print("  HNSW build %s vectors in %s s; load %s s; recall@10 %s vs exact search (target >= 0.99: %s); %s queries/s (ef_search %s)"
      % (b["vectors"], b["seconds"], rows["hnsw_load"][0]["seconds"], q["recall_at_10"],
         "yes" if float(q["recall_at_10"]) >= 0.99 else "NO", q["queries_per_s"], q["ef_search"]))
EOF

# ---- (iv) semantic metrics ------------------------------------------------------------------------------
# SemR-p over all 20,000 KP20k documents (catSeqTG-2RF1 seed 1234, GloVe) with a warm phrase cache (the
# database filled by the cache runs above), whole process. No peer can run here (the SemR-p code needs
# sentence-transformers and PyTorch).
echo "[semantic] kplab eval --metrics semrp on KP20k, warm cache: $RUNS timed fresh processes" >&2
SEM_ARGS=(eval --dataset "$DATA/kpg_testsets_meng2017/kp20k" --predictions "$DATA/predictions/catSeqTG-2RF1/kp20k/seed1234.txt"
  --db "$TMP/cache.db" --no-store --output json --metrics)
"$KPLAB" "${SEM_ARGS[@]}" semrp >"$TMP/semrp.json" 2>"$TMP/semrp.err"
: >"$TMP/semrp.time"; : >"$TMP/semall.time"
for _ in $(seq "$RUNS"); do
  timed "$TMP/semrp.time" "$KPLAB" "${SEM_ARGS[@]}" semrp >/dev/null 2>&1
  timed "$TMP/semall.time" "$KPLAB" "${SEM_ARGS[@]}" semrp,semantic,diversity >/dev/null 2>&1
done
"$PY" - "$TMP" <<'EOF'
import json, os, statistics, sys
tmp = sys.argv[1]
def med(name):
    return statistics.median(float(l.split()[0]) for l in open(os.path.join(tmp, name)) if l.strip())
s, a = med("semrp.time"), med("semall.time")
agg = json.load(open(os.path.join(tmp, "semrp.json")))["aggregates"]
print()
print("semantic metrics (KP20k, 20,000 documents, catSeqTG-2RF1 seed 1234, GloVe, warm cache, whole process):")
print("  --metrics semrp: %.3f s median (target < 1 s: %s); all.semrp = %.4f" % (s, "yes" if s < 1 else "NO", agg["all.semrp"]))
print("  --metrics semrp,semantic,diversity: %.3f s median" % a)
print("  " + open(os.path.join(tmp, "semrp.err")).read().strip().splitlines()[0])
EOF
# ---- (v) homogeneity pair mining --------------------------------------------------------------------------
# The exact set-similarity join against the naive all-pairs loop on KP20k's 20,000 gold sets, in the
# same process (kplab_pairs_bench exits 1 when their pairs differ). Target: >= 100x.
echo "[pairs] kplab_pairs_bench: naive loop vs exact join on KP20k gold" >&2
if cmake --build "$BUILD" -j"$(nproc)" --target kplab_pairs_bench >"$TMP/build_pairs.log" 2>&1; then
  if "$BUILD/bench/kplab_pairs_bench" --dataset "$DATA/kpg_testsets_meng2017/kp20k" >"$TMP/pairs.out"; then
    "$PY" - "$TMP" <<'EOF'
import os, sys
r = dict(x.split("=", 1) for x in open(os.path.join(sys.argv[1], "pairs.out")).read().split()[1:])
ratio = float(r["ratio"])
print()
print("homogeneity pair mining (KP20k gold, %s sets, Jaccard >= %s, %s pairs; same pairs: %s):"
      % (r["sets"], r["theta"], r["pairs"], r["same"]))
print("  naive all-pairs loop %.3f s (%s pairs verified); exact join %.4f s (%s candidates): %.0fx (target >= 100x: %s)"
      % (float(r["naive_s"]), r["naive_candidates"], float(r["join_s"]), r["join_candidates"], ratio,
         "yes" if ratio >= 100 else "NO"))
EOF
  else
    echo "bench.sh: kplab_pairs_bench: the join and the naive loop disagree" >&2
    status=1
  fi
else
  tail -n 30 "$TMP/build_pairs.log" >&2
  status=1
fi
# ---- (vi) kplab against the least work --------------------------------------------------------------
# bench/least_work.cc does only the P/R/F1 @5/@M part of the KP20k job (map two files, tokenize, stem
# through a memo, count, sum; one thread). bench/least_work_ratio.py checks that its 12 numbers are
# kplab's, digit for digit, then times it, its --intern mode (every key also given a corpus-wide id: the
# ratios to it have no target), `kplab eval --metrics exact` (targets: wall <= 2x, CPU <= 3x) and the
# default metrics (wall <= 3x, CPU <= 4x) interleaved, fresh processes, medians; no verdict on a loaded
# machine. scripts/bench_table.sh prints the same with every other target as one table.
echo "[least-work] kplab eval vs bench/least_work.cc on KP20k: $RUNS timed fresh processes each" >&2
if cmake --build "$BUILD" -j"$(nproc)" --target kplab_least_work >"$TMP/build_lw.log" 2>&1; then
  echo
  "$PY" bench/least_work_ratio.py --least-work "$BUILD/bench/kplab_least_work" --kplab "$KPLAB" --data "$DATA" \
    --runs "$RUNS" || status=1
else
  tail -n 30 "$TMP/build_lw.log" >&2
  status=1
fi
# ---- (vii)-(x) the other speed targets: scale, phrase cache, SemR-p against its authors' loop; verification --
# Each is its own script (bench/README.md says what it measures and checks); each prints its ratios or
# numbers beside the targets and exits 1 only when a number check fails.
for script in scale.sh cache_bench.sh semrp_bench.sh verify_bench.sh; do
  echo "[${script%.sh}] bench/$script" >&2
  echo
  if ! KPLAB_BUILD_DIR="$BUILD" KPLAB_SHARED_DATA="$DATA" bash "bench/$script"; then
    echo "bench.sh: bench/$script failed" >&2
    status=1
  fi
done
exit "$status"
