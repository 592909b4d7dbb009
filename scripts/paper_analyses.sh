#!/usr/bin/env bash
# The SemR-p paper's analyses (seed 002, sections 5.1-5.5) on the real systems in ../shared/data:
# scores every system on SemEval, Inspec and Krapivin with the lexical, ranking and semantic metrics
# (default embedding model), stores the runs in one database, then runs the five analysis scripts
# and writes a report (Markdown + SVG) to OUT.
#   bash scripts/paper_analyses.sh [OUT (default paper-report)] [DB (default OUT/runs.db)]
# Each analysis is one command on any set of runs; see scripts/analysis/*.lua --help.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-paper-report}
DB=${2:-$OUT/runs.db}
KPLAB=${KPLAB:-build/host/kplab}
DATA=${KPLAB_SHARED_DATA:-../shared/data}
mkdir -p "$OUT"
rm -f "$DB" "$DB-wal" "$DB-shm"
rm -rf "$DB.hnsw"
METRICS=exact,rank,rprec,semrp,semantic,diversity

evaluate() {  # system dataset predictions
  "$KPLAB" eval --dataset "$DATA/kpg_testsets_meng2017/$2" --predictions "$3" --system "$1" \
    --metrics "$METRICS" --param semrp.ks=1,2,3 --db "$DB" --output json >/dev/null
  echo "scored $1 on $2"
}
for ds in semeval inspec krapivin; do
  for seed in 1234 5678 9527; do
    evaluate "catSeqTG-2RF1-s$seed" "$ds" "$DATA/predictions/catSeqTG-2RF1/$ds/seed$seed.txt"
  done
  for sys in catSeq catSeq-RL catSeq-GAN catSeq-run2; do
    f="$DATA/predictions/$sys/$ds/predictions.txt"
    if [ -f "$f" ]; then evaluate "$sys" "$ds" "$f"; fi
  done
done

# Scripts reach only granted directories (docs/scripts.md): the report, the store and the data it scored.
run() {
  "$KPLAB" run --instruction-limit 0 --time-limit 3600 --allow-write "$OUT" --allow-read "$DB" --allow-read "$DATA" "scripts/analysis/$1.lua" \
    --db "$DB" --out "$OUT" "${@:2}" >/dev/null
  echo "wrote $OUT/$1.md"
}
run k_ablation
run anova
run ranking_agreement
run factor_analysis
run contrast_cases --runs 1,3 --top 2

{
  echo "# The SemR-p paper's analyses on the shared real systems"
  echo
  echo "Made by \`bash scripts/paper_analyses.sh $OUT\` with kplab $("$KPLAB" version) and the embedding model"
  echo "\`${KPLAB_MODEL:-glove-6b-100d}\` (the paper used uclanlp/keyphrase-mpnet-v1; see docs/embeddings.md for using it)."
  echo "Systems: catSeqTG-2RF1 (three training seeds), catSeq, catSeq-RL, catSeq-GAN, a second catSeq run;"
  echo "datasets: SemEval-2010 (100), Inspec (500), Krapivin (400) test splits of Meng et al. (2017)."
  echo
  echo "- [k_ablation](k_ablation.md): SemR-p for k = 1, 2, 3 (section 5.1)"
  echo "- [anova](anova.md): two-way ANOVA system x dataset with eta^2 (section 5.2)"
  echo "- [ranking_agreement](ranking_agreement.md): Spearman of system rankings across metrics (section 5.3)"
  echo "- [factor_analysis](factor_analysis.md): parallel analysis, minres + varimax loadings (section 5.4)"
  echo "- [contrast_cases](contrast_cases.md): documents where SemR-p and F1@M disagree most (section 5.5)"
  echo
  echo "Read with care: the SemEval gold of Meng et al. is Porter-stemmed as released, so its references are"
  echo "embedded as stems (GloVe knows few of them) and SemR-p there leans on exact matches; the three"
  echo "catSeqTG-2RF1 seeds are one system trained three times; there is no KPTimes and no BERTScore here,"
  echo "so the paper's news-vs-science contrast and its BERTScore factor cannot appear."
} >"$OUT/README.md"
echo "report: $OUT/README.md"
