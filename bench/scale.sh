#!/usr/bin/env bash
# Scale benchmark (the million-document target): `kplab eval` on 20k, 200k and 1M synthetic documents,
# whole process.
#
#   bench/scale.sh
#
# Target: "1M documents (synthetic copies of KP20k with a copy tag on every keyphrase, generator
# committed): <= 5 s on 2 cores, <= 1.2 KB per document of peak RSS above a 0-document baseline, time
# linear in documents (20k, 200k, 1M reported)."
#
# Data: bench/gen_copies.py writes copy c = 0, 1, ... of KP20k's gold keyphrases and the aligned
# catSeqTG-2RF1 seed-1234 predictions, " c<c>" appended to every keyphrase of copy c, into a mktemp
# directory that is removed at exit. The baseline is 1 document, not 0: kplab refuses a dataset without
# documents ("F: no documents (expected a dataset with at least one document)", docs/formats.md).
#
# Each size is run with the default metrics (exact,rank,rprec) and with --metrics exact:
#   kplab eval --dataset D --predictions P --no-store --output csv [--metrics exact]
# under /usr/bin/time -f "%e %M %U %S"; seconds (wall), CPU seconds (user + sys: on a shared machine the
# wall time depends on the other load, printed at the end) and peak RSS are the medians of
# KPLAB_BENCH_RUNS fresh processes (the first run of a size also reads the generated files into the page cache: the files
# are written just before, so they are there already). KB/doc = (RSS - baseline RSS) / documents, in
# the KiB that /usr/bin/time reports.
#
# Checks (exit 1 on a mismatch; a missed target is reported, not fatal): with --metrics exact every
# size gives the aggregates of the untagged original KP20k (to 1e-9: the tag keeps stem-key equality,
# and the copies repeat the same documents); with the default metrics every size gives the aggregates
# of the tagged 20k set (containment-based metrics differ from the untagged original, see
# bench/README.md "Scale").
#
# Environment: KPLAB_BUILD_DIR (default build; must hold host/kplab), KPLAB_SHARED_DATA (default
# /work/shared/data), KPLAB_BENCH_RUNS (default 3), KPLAB_SCALE_SIZES (default "20000 200000 1000000";
# 20000 must be among them for the checks), KPLAB_SCALE_EVAL_ARGS (extra `kplab eval` options for
# every timed run, e.g. "--memory-limit 1024"; default none: the measurement is of kplab's defaults),
# KPLAB_BENCH_ROWS (append the table rows here: scripts/bench_table.sh).
# The machine's load is recorded at the start and the end; the time target gets no verdict on a loaded
# machine (bench/benchlib.py). Peak RSS does not depend on the load: its verdict is always given.
set -euo pipefail
trap 'echo "scale.sh:$LINENO: command failed (exit $?): $BASH_COMMAND" >&2' ERR
cd "$(dirname "$0")/.."

BUILD="${KPLAB_BUILD_DIR:-build}"
DATA="${KPLAB_SHARED_DATA:-/work/shared/data}"
RUNS="${KPLAB_BENCH_RUNS:-3}"
SIZES="${KPLAB_SCALE_SIZES:-20000 200000 1000000}"
read -r -a EXTRA <<<"${KPLAB_SCALE_EVAL_ARGS:-}"
PY=/usr/bin/python3
TIME=/usr/bin/time
KPLAB="$BUILD/host/kplab"
GOLD="$DATA/kpg_testsets_meng2017/kp20k/word_kp20k_testing_allkeywords.txt"
PRED="$DATA/predictions/catSeqTG-2RF1/kp20k/seed1234.txt"

for f in "$PY" "$TIME" "$KPLAB"; do
  [ -x "$f" ] || { echo "scale.sh:$LINENO: $f is required (build kplab: cmake --build $BUILD --target kplab)" >&2; exit 1; }
done
for f in "$GOLD" "$PRED"; do
  [ -f "$f" ] || { echo "scale.sh:$LINENO: $f not found (set KPLAB_SHARED_DATA)" >&2; exit 1; }
done
case " $SIZES " in *" 20000 "*) ;; *) echo "scale.sh:$LINENO: KPLAB_SCALE_SIZES must include 20000" >&2; exit 1 ;; esac
[ "$RUNS" -ge 1 ] 2>/dev/null || { echo "scale.sh:$LINENO: KPLAB_BENCH_RUNS must be >= 1 (got '$RUNS')" >&2; exit 1; }

TMP="$(mktemp -d "${TMPDIR:-/tmp}/kplab-scale.XXXXXX")"
trap 'rm -rf "$TMP"' EXIT

# The machine's load and speed (bench/benchlib.py): no verdict when it is loaded; the least-work
# program's time on KP20k states the machine's speed (if it is built: --target kplab_least_work).
"$PY" bench/benchlib.py snapshot $$ >"$TMP/machine.start"
LW="$BUILD/bench/kplab_least_work"
if [ -x "$LW" ]; then "$PY" bench/benchlib.py yardstick "$LW" "$DATA" >"$TMP/yardstick"; else echo '{}' >"$TMP/yardstick"; fi
echo "scale: kplab $KPLAB on $(nproc) cores, $RUNS runs per cell, sizes 1 (baseline) $SIZES${EXTRA[*]:+, extra options: ${EXTRA[*]}}" >&2

# eval_runs N LABEL METRICS...: RUNS timed fresh processes on the N-document set; "N LABEL s kb" to
# $TMP/results, the aggregates (csv of the last run) to $TMP/agg.N.LABEL.
# A run that fails (kplab's exit status) is recorded as FAILED with its message and the size's other
# runs are skipped; the summary reports it and the script exits 1 at the end.
eval_runs() {
  local n="$1" label="$2"; shift 2
  : >"$TMP/time.$n.$label"
  for _ in $(seq "$RUNS"); do
    if ! "$TIME" -f "%e %M %U %S" -o "$TMP/time.one" "$KPLAB" eval --dataset "$TMP/d$n" --predictions "$TMP/p$n.txt" \
        --no-store --db "$TMP/unused.db" --output csv "$@" "${EXTRA[@]}" >"$TMP/agg.$n.$label" 2>"$TMP/err"; then
      echo "  kplab eval on $n documents ($label) failed: $(head -n 1 "$TMP/err")" >&2
      echo "$n $label FAILED $(head -n 1 "$TMP/err")" >>"$TMP/results"
      return 0
    fi
    tail -n 1 "$TMP/time.one" >>"$TMP/time.$n.$label"
  done
  "$PY" - "$n" "$label" "$TMP/time.$n.$label" >>"$TMP/results" <<'EOF'
import statistics, sys
n, label, path = sys.argv[1:4]
rows = [l.split() for l in open(path) if l.strip()]
print(n, label, statistics.median(float(r[0]) for r in rows), statistics.median(int(r[1]) for r in rows),
      statistics.median(float(r[2]) + float(r[3]) for r in rows))
EOF
}

generate() {  # generate N [--no-tags]
  local n="$1"; shift
  rm -rf "$TMP/d$n" "$TMP/p$n.txt"
  "$PY" bench/gen_copies.py --gold "$GOLD" --predictions "$PRED" --docs "$n" \
    --out-dataset "$TMP/d$n" --out-predictions "$TMP/p$n.txt" "$@"
}

: >"$TMP/results"
# The untagged original (the check's yardstick; not timed).
generate 20000 --no-tags
mv "$TMP/d20000" "$TMP/dorig"; mv "$TMP/p20000.txt" "$TMP/porig.txt"
for label in exact default; do
  metrics=(); [ "$label" = exact ] && metrics=(--metrics exact)
  if ! "$KPLAB" eval --dataset "$TMP/dorig" --predictions "$TMP/porig.txt" --no-store --db "$TMP/unused.db" \
      --output csv "${metrics[@]}" "${EXTRA[@]}" >"$TMP/agg.orig.$label" 2>"$TMP/err"; then
    echo "scale.sh:$LINENO: kplab eval on the untagged original ($label) failed:" >&2
    cat "$TMP/err" >&2
    exit 1
  fi
done
rm -rf "$TMP/dorig" "$TMP/porig.txt"

for n in 1 $SIZES; do
  echo "  $n documents" >&2
  generate "$n"
  eval_runs "$n" default
  eval_runs "$n" exact --metrics exact
  rm -rf "$TMP/d$n" "$TMP/p$n.txt"
done
"$PY" bench/benchlib.py snapshot $$ >"$TMP/machine.end"

"$PY" - "$TMP" "$SIZES" "${KPLAB_BENCH_ROWS:-}" <<'EOF' || exit 1
import csv, json, sys
sys.path.insert(0, "bench")
import benchlib
tmp, sizes, rows_file = sys.argv[1], [int(s) for s in sys.argv[2].split()], sys.argv[3]
machine = benchlib.Machine.from_files(tmp + "/machine.start", tmp + "/machine.end")
ys = json.load(open(tmp + "/yardstick"))
yard = ("yardstick %.4f s wall %.4f s CPU" % (ys["wall"], ys["cpu"])) if ys else "no yardstick (kplab_least_work not built)"
cell = "load %.2f -> %.2f, others %.2f cores; %s" % (machine.start["load"][0], machine.end["load"][0],
                                                    machine.other_cores(), yard)
res, failed = {}, {}
for l in open(tmp + "/results"):
    n, label, s, rest = l.rstrip("\n").split(" ", 3)
    if s == "FAILED":
        failed[(int(n), label)] = rest
    else:
        kb, cpu = rest.split()
        res[(int(n), label)] = (float(s), int(kb), float(cpu))

def aggregates(name):
    rows = list(csv.reader(open("%s/agg.%s" % (tmp, name))))
    # --output csv: a header line, then one row per aggregate (metric, value) or one wide row.
    if rows and len(rows[0]) == 2 and all(len(r) == 2 for r in rows):
        return {r[0]: float(r[1]) for r in rows[1:]}
    head, vals = rows[0], rows[1]
    out = {}
    for h, v in zip(head, vals):
        try:
            out[h] = float(v)
        except ValueError:
            pass
    return out

def compare(a, b):
    if set(a) != set(b) or not a:
        return "MISMATCH (names differ: %s)" % sorted(set(a) ^ set(b))[:5]
    worst = max(abs(a[k] - b[k]) for k in a)
    return ("OK" if worst <= 1e-9 else "MISMATCH") + " (%d aggregates, max |diff| %.2g)" % (len(a), worst)

print("scale: kplab eval, KP20k copies with a copy tag, whole process, median of runs")
print("%-10s %-8s %9s %9s %9s %12s %22s" % ("documents", "metrics", "seconds", "us/doc", "CPU s", "peak RSS MB",
                                           "KB/doc above baseline"))
for label in ("default", "exact"):
    for n in [1] + sizes:
        if (n, label) in failed:
            print("%-10d %-8s FAILED: %s" % (n, label, failed[(n, label)]))
            continue
        s, kb, cpu = res[(n, label)]
        above = "-" if n == 1 or (1, label) not in res else "%.3f" % ((kb - res[(1, label)][1]) / n)
        per_doc = "-" if n == 1 else "%.2f" % (s / n * 1e6)
        print("%-10d %-8s %9.3f %9s %9.2f %12.1f %22s" % (n, label, s, per_doc, cpu, kb / 1024, above))
big = max(sizes)
bad = bool(failed)
# The target's lines for the default metrics, as the header quotes it; then the same for --metrics exact.
name = "1M" if big == 1000000 else "%dk" % (big // 1000) if big % 1000 == 0 else str(big)
for label, lead in (("default", ""), ("exact", "with --metrics exact: ")):
    if any(k in failed for k in ((big, label), (1, label), (20000, label))):
        print("%s%s: FAILED (target <= 5 s: NO)" % (lead, name))
        continue
    s, kb, cpu = res[(big, label)]
    per = (kb - res[(1, label)][1]) / big
    lin = (s / big) / (res[(20000, label)][0] / 20000)
    print("%s%s: %.2f s (target <= 5 s: %s)" % (lead, name, s, machine.verdict(s <= 5)))
    print("%sKB/doc above baseline: %.3f (target <= 1.2: %s)" % (lead, per, "yes" if per <= 1.2 else "NO"))
    what = "kplab eval, %s documents, %s" % (name, "default metrics" if label == "default" else "--metrics exact")
    benchlib.append_row(rows_file, [what, "%.2f" % s, "%.2f" % cpu, "-", "-", "-", "-", "wall <= 5 s",
                                    machine.verdict(s <= 5), cell])
    benchlib.append_row(rows_file, [what + ", peak RSS a document above 1 document's", "%.3f KB" % per, "-", "-",
                                    "-", "-", "-", "<= 1.2 KB", "yes" if per <= 1.2 else "NO", cell])
    print("%slinearity: us/doc at %s / us/doc at 20k = %.2f" % (lead, name, lin))
    print("%sCPU (user + sys) at %s: %.2f s" % (lead, name, cpu))
print("checks:")
orig_exact, orig_default = aggregates("orig.exact"), aggregates("orig.default")
for n in sizes:
    if (n, "exact") in failed or (n, "default") in failed or (20000, "default") in failed:
        print("  %7d docs: not checked (a run failed)" % n)
        continue
    r1 = compare(aggregates("%d.exact" % n), orig_exact)
    r2 = compare(aggregates("%d.default" % n), aggregates("20000.default"))
    print("  %7d docs, --metrics exact vs untagged original: %s" % (n, r1))
    print("  %7d docs, default metrics vs tagged 20k:         %s" % (n, r2))
    bad |= not r1.startswith("OK") or not r2.startswith("OK")
t, o = ({}, {}) if (20000, "default") in failed else (aggregates("20000.default"), orig_default)
moved = sorted((abs(t[k] - o[k]), k) for k in t if k in o and abs(t[k] - o[k]) > 1e-9)
print("  tagged vs untagged 20k, default metrics: %d of %d aggregates differ (containment metrics)%s"
      % (len(moved), len(t), "; largest: " + ", ".join("%s %+.4f" % (k, t[k] - o[k]) for _, k in moved[::-1][:4]) if moved else ""))
print(yard + " (bench/least_work.cc on KP20k: the machine's speed)")
for line in machine.lines():
    print(line)
sys.exit(1 if bad else 0)
EOF
