#!/usr/bin/env bash
# Peer for benchmark (ii): the independent Python reference (tests/reference/kpref.py, profile kplab)
# doing the work of one `kplab eval` on KP20k x catSeqTG-2RF1 seed 1234. The reference cannot attach
# source text to only the first 1000 of the 20,000 documents, so it takes two commands:
#   1. all 20,000 gold sets without text (--no-text): the `all.*` aggregates;
#   2. the first 1000 documents with their text (--max-docs 1000 --context test_src.txt): the
#      `present.*` / `absent.*` aggregates (it also recomputes `all` on those 1000 documents).
# scripts/bench.sh times this script as a whole, i.e. both commands together.
#
#   bench/peer_eval.sh DATA_DIR OUT_DIR    -> OUT_DIR/ref_20k_all.json, OUT_DIR/ref_1000_text.json
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
data="$1"
out="$2"
py=/usr/bin/python3   # Debian's python3 with python3-nltk 3.8
kpref="$here/../tests/reference/kpref.py"
kw="$data/kpg_testsets_meng2017/kp20k/word_kp20k_testing_allkeywords.txt"
pred="$data/predictions/catSeqTG-2RF1/kp20k/seed1234.txt"

"$py" "$kpref" --profile kplab --dataset-format meng --no-text \
  --keywords "$kw" --predictions "$pred" > "$out/ref_20k_all.json"
"$py" "$kpref" --profile kplab --dataset-format meng --max-docs 1000 \
  --context "$data/kp20k_test_first1000/test_src.txt" \
  --keywords "$kw" --predictions "$pred" > "$out/ref_1000_text.json"
