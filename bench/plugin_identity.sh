#!/usr/bin/env bash
# Do the shipped plugins give the same numbers as those of an earlier commit? (issue 14: plugin API 2
# "gives the same numbers as before, name the commit".) Runs nine evaluations (examples/tiny with custom
# cut-offs, Inspec under kpeval/kenchan/exhird, SemEval under semrp-standalone, KP20k with the three
# homogeneity plugins, calibration twice) once with `--plugins <OLD's plugins/>` and once with the
# shipped ones, same binary, and compares every aggregate and every per-document export bit for bit.
# Usage: bench/plugin_identity.sh [OLD_COMMIT (default 9cda64c)]   (KPLAB_BUILD_DIR, KPLAB_SHARED_DATA)
set -euo pipefail
cd "$(dirname "$0")/.."
OLD="${1:-9cda64c}"
K="${KPLAB_BUILD_DIR:-build}/host/kplab"
D="${KPLAB_SHARED_DATA:-../shared/data}"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
mkdir -p "$TMP/old"
git archive "$OLD" plugins | tar -x -C "$TMP/old"
runs() {  # $1: output dir, $2...: extra eval options
  local o=$1; shift
  mkdir -p "$o"
  ev() { local name=$1; shift; "$K" eval "$@" "${EXTRA[@]}" --db "$o/runs.db" --output json >"$o/$name.json" 2>/dev/null; }
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
runs "$TMP/a" --plugins "$TMP/old/plugins"
runs "$TMP/b"
python3 - "$TMP/a" "$TMP/b" "$OLD" <<'EOF'
import glob, json, math, os, sys
a, b, old = sys.argv[1:4]
n = bad = 0
for f in sorted(glob.glob(a + "/*.json")):
    x = json.load(open(f))["aggregates"]
    y = json.load(open(os.path.join(b, os.path.basename(f))))["aggregates"]
    same = lambda u, v: u == v or (isinstance(u, float) and isinstance(v, float) and math.isnan(u) and math.isnan(v))
    diff = sorted(set(x) ^ set(y)) + [k for k in x if k in y and not same(x[k], y[k])]
    n += len(x)
    bad += len(diff)
    print(f"{os.path.basename(f)}: {len(x)} aggregates, {len(diff)} different {diff[:3]}")
exports = sorted(glob.glob(a + "/export_*.csv"))
ediff = [e for e in exports if open(e).read() != open(os.path.join(b, os.path.basename(e))).read()]
print(f"{n} aggregates, {bad} different; {len(exports)} per-document exports, {len(ediff)} different "
      f"(plugins of {old} vs the shipped ones)")
sys.exit(1 if bad or ediff else 0)
EOF
