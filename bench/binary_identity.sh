#!/usr/bin/env bash
# Does this build give the same numbers as another kplab binary (an earlier commit's build)? Runs
# bench/plugin_identity.sh's nine evaluations with both binaries on the same shipped plugins (this
# checkout's) and compares every aggregate and every per-document export bit for bit: the check for
# changes below the plugins (corpus building, importers, bindings) that must not move a number.
# Usage: bench/binary_identity.sh OLD_KPLAB_BINARY [OLD_PLUGINS_DIR]   (KPLAB_BUILD_DIR, KPLAB_SHARED_DATA)
# OLD_PLUGINS_DIR: the plugins the old binary runs (default: this checkout's). An old binary that
# predates kp.kernel cannot load today's exact/rank/rprec/semrp: give it its own commit's plugins/ (e.g.
# `git archive 752047f plugins | tar -x -C /tmp/old`), so the comparison covers the kernels too.
set -euo pipefail
cd "$(dirname "$0")/.."
OLD_K="$(realpath "${1:?usage: bench/binary_identity.sh OLD_KPLAB_BINARY}")"
NEW_K="${KPLAB_BUILD_DIR:-build}/host/kplab"
D="${KPLAB_SHARED_DATA:-../shared/data}"
NEW_PLUGINS="$PWD/plugins"
OLD_PLUGINS="$(realpath "${2:-$NEW_PLUGINS}")"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
runs() {  # $1: output dir, $2: binary, $3: its shipped plugins
  local o=$1 K=$2 P=$3; shift 3
  mkdir -p "$o"
  ev() { local name=$1; shift; KPLAB_SHIPPED_PLUGINS="$P" "$K" eval "$@" "${EXTRA[@]}" --db "$o/runs.db" --output json >"$o/$name.json" 2>/dev/null; }
  EXTRA=("$@")
  ev tiny --dataset examples/tiny --predictions examples/tiny/predictions.txt --system ex --metrics exact,rank,rprec,prmu,semrp,semantic,diversity
  ev tiny_ks --dataset examples/tiny --predictions examples/tiny/predictions.txt --system ex --metrics exact,rank,semrp --param exact.ks=1,3,M --param rank.ks=2,O --param semrp.ks=1,2 --param rank.alpha=0.7
  ev inspec_kpeval --dataset "$D/kpg_testsets_meng2017/inspec" --predictions "$D/predictions/catSeqTG-2RF1/inspec/seed1234.txt" --profile kpeval --metrics exact,rank,rprec,prmu,semrp,semantic,diversity
  ev inspec_kenchan --dataset "$D/kpg_testsets_meng2017/inspec" --predictions "$D/predictions/catSeqTG-2RF1/inspec/seed1234.txt" --profile kenchan --metrics exact,rank,rprec
  ev inspec_exhird --dataset "$D/kpg_testsets_meng2017/inspec" --predictions "$D/predictions/catSeqTG-2RF1/inspec/seed1234.txt" --profile exhird --metrics exact,rank,rprec
  ev semrp_sa --dataset "$D/kpg_testsets_meng2017/semeval" --predictions "$D/predictions/catSeqTG-2RF1/semeval/seed1234.txt" --profile semrp-standalone --metrics semrp,rprec
  ev kp20k --dataset "$D/kpg_testsets_meng2017/kp20k" --predictions "$D/predictions/catSeqTG-2RF1/kp20k/seed1234.txt" --metrics exact,rank,rprec,homogeneity,homogeneity_sem,homogeneity_vocab --param homogeneity.stem=false --param homogeneity.denominator=max
  ev calib --dataset tests/data/calib/dataset.jsonl --predictions tests/data/calib/tokens.jsonl --predictions-format tokens --metrics calibration,exact --param calibration.bins=7
  ev calib_tok --dataset tests/data/calib/dataset.jsonl --predictions tests/data/calib/tokens.jsonl --predictions-format tokens --metrics calibration --param calibration.kpp=tokens
  for id in $("$K" runs list --db "$o/runs.db" --output csv | tail -n +2 | cut -d, -f1); do
    "$K" runs export "$id" --db "$o/runs.db" --output csv >"$o/export_$id.csv"
  done
}
runs "$TMP/a" "$OLD_K" "$OLD_PLUGINS"
runs "$TMP/b" "$NEW_K" "$NEW_PLUGINS"
python3 - "$TMP/a" "$TMP/b" "$OLD_K on $OLD_PLUGINS" <<'EOF'
import csv, glob, json, math, os, sys
a, b, old = sys.argv[1:4]
n = bad = added = 0
for f in sorted(glob.glob(a + "/*.json")):
    x = json.load(open(f))["aggregates"]
    y = json.load(open(os.path.join(b, os.path.basename(f))))["aggregates"]
    same = lambda u, v: u == v or (isinstance(u, float) and isinstance(v, float) and math.isnan(u) and math.isnan(v))
    # A value the old build gave must be given the same (or it is gone: also different); a metric the
    # new build adds is counted apart, as new.
    diff = sorted(k for k in x if k not in y or not same(x[k], y[k]))
    new = sorted(set(y) - set(x))
    n += len(x)
    bad += len(diff)
    added += len(new)
    print(f"{os.path.basename(f)}: {len(x)} aggregates, {len(diff)} different {diff[:3]}, {len(new)} new {new[:3]}")
def columns(path):  # per-document export as {column: [values]}
    rows = list(csv.reader(open(path)))
    return {h: [r[i] for r in rows[1:]] for i, h in enumerate(rows[0])} if rows else {}
exports = sorted(glob.glob(a + "/export_*.csv"))
ediff = []
for e in exports:
    x, y = columns(e), columns(os.path.join(b, os.path.basename(e)))
    if any(k not in y or x[k] != y[k] for k in x):
        ediff.append(e)
print(f"{n} aggregates, {bad} different, {added} new; {len(exports)} per-document exports, {len(ediff)} with a "
      f"column that differs ({old} vs this build)")
sys.exit(1 if bad or ediff else 0)
EOF
