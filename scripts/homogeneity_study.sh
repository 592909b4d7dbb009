#!/usr/bin/env bash
# The homogeneity study (Houbre, Boudin & Daille; docs/homogeneity.md) on the real data in
# ../shared/data: mines the KP20k test gold (20,000 documents) for pairs with Jaccard >= THETA, then
# evaluates every system that has KP20k predictions there (predictions/<system>/kp20k/*.txt, one row
# per file) and prints the paper's tables (Markdown). Source texts for % absent / PRMU come from
# kp20k_test_first1000 (the only KP20k documents with text in the shared data).
#   bash scripts/homogeneity_study.sh [THETA (default 0.5)] [extra options for homogeneity.lua...]
# e.g. `... 0.5 --top-k 5` caps every system to its first 5 predictions (the paper's setting for its
# extractive systems), `--top-k "NAME=5"` one system (NAME as in the table: "sys (run)"), and
# `--keep-identical` keeps the pairs with identical gold sets (their number is reported either way).
# Environment: KPLAB (default build/host/kplab), KPLAB_SHARED_DATA (default ../shared/data).
set -euo pipefail
cd "$(dirname "$0")/.."
KPLAB=${KPLAB:-build/host/kplab}
DATA=${KPLAB_SHARED_DATA:-../shared/data}
THETA=0.5
if [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; then  # a first argument that is not an option is THETA
  THETA=$1
  shift
fi
[ -d "$DATA/kpg_testsets_meng2017/kp20k" ] || { echo "homogeneity_study.sh: no KP20k gold under $DATA" >&2; exit 1; }
args=()
for f in "$DATA"/predictions/*/kp20k/*.txt; do
  [ -f "$f" ] || continue
  sys=$(basename "$(dirname "$(dirname "$f")")")
  run=$(basename "$f" .txt)
  if [ "$run" = predictions ]; then name=$sys; else name="$sys ($run)"; fi
  args+=(--system "$name=$f")
done
[ ${#args[@]} -gt 0 ] || { echo "homogeneity_study.sh: no KP20k predictions under $DATA/predictions" >&2; exit 1; }
source_args=()
if [ -f "$DATA/kp20k_test_first1000/test_src.txt" ]; then
  source_args=(--source "$DATA/kp20k_test_first1000/test_src.txt")
fi
# The data is outside the working directory: granted to the script for reading (docs/scripts.md); an
# --out outside it needs --allow-write DIR among the arguments.
exec "$KPLAB" run --instruction-limit 0 --time-limit 3600 --allow-read "$DATA" scripts/analysis/homogeneity.lua --dataset "$DATA/kpg_testsets_meng2017/kp20k" \
  "${source_args[@]}" --theta "$THETA" "${args[@]}" "$@"
