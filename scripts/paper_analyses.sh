#!/usr/bin/env bash
# The SemR-p paper's analyses (seed 002, sections 5.1-5.5) on the real systems in ../shared/data:
# scores every system on SemEval, Inspec and Krapivin with the lexical, ranking and semantic metrics
# (default embedding model), stores the runs in one database, then runs the analysis scripts and
# writes a report (Markdown + SVG) to OUT.
#   bash scripts/paper_analyses.sh [--profile P] [--semrp-profile Q] [OUT (default paper-report)] [DB (default OUT/runs.db)]
#   (paths relative to the current directory; a DB you give must not exist yet: it is never deleted)
# --profile P scores the baselines (F1@M, NDCG, AP, R-precision, SemP/R/F1, ...) under profile P
# (the paper took them from KPEval: --profile kpeval); --semrp-profile Q scores SemR-p under Q (both
# default kplab). When P and Q differ each system and dataset gets two runs, which the analysis
# scripts join (--join: one run per system and dataset, columns side by side).
# Each analysis is one command on any set of runs; see scripts/analysis/*.lua --help.
# Exit status 1 for bad arguments (an unknown profile is refused before anything is scored).
set -euo pipefail
CALLER=$PWD  # OUT and DB are paths as the caller gave them, relative to where it stands
cd "$(dirname "$0")/.."
PROFILE=kplab
SEMRP_PROFILE=kplab
ARGS=()
while [ $# -gt 0 ]; do
  case "$1" in
    --profile|--semrp-profile)
      if [ $# -lt 2 ]; then echo "paper_analyses.sh: $1 needs a value (a profile: kplab, kpeval, ...)" >&2; exit 1; fi
      if [ "$1" = --profile ]; then PROFILE=$2; else SEMRP_PROFILE=$2; fi
      shift 2 ;;
    --*) echo "paper_analyses.sh: unknown option $1 (expected --profile P, --semrp-profile Q, OUT, DB)" >&2; exit 1 ;;
    *) ARGS+=("$1"); shift ;;
  esac
done
if [ ${#ARGS[@]} -gt 2 ]; then echo "paper_analyses.sh: too many arguments (expected [OUT [DB]])" >&2; exit 1; fi
OUT_ARG=${ARGS[0]:-paper-report}
case "$OUT_ARG" in /*) OUT=$OUT_ARG ;; *) OUT=$CALLER/$OUT_ARG ;; esac
if [ ${#ARGS[@]} -ge 2 ]; then
  case "${ARGS[1]}" in /*) DB=${ARGS[1]} ;; *) DB=$CALLER/${ARGS[1]} ;; esac
  # A store given by the caller is never deleted: the runs are scored into a fresh one.
  if [ -e "$DB" ]; then
    echo "paper_analyses.sh: $DB exists (expected a new path: the runs are scored into a fresh store, and a store you give is never deleted)" >&2
    exit 1
  fi
else
  DB=$OUT/runs.db  # the script's own, replaced on every run
fi
KPLAB=${KPLAB:-build/host/kplab}
DATA=${KPLAB_SHARED_DATA:-../shared/data}
for p in "$PROFILE" "$SEMRP_PROFILE"; do
  if ! "$KPLAB" profiles show "$p" >/dev/null 2>&1; then
    echo "paper_analyses.sh: unknown profile '$p' (see: $KPLAB profiles list)" >&2
    exit 1
  fi
done
mkdir -p "$OUT"
if [ "$DB" = "$OUT/runs.db" ]; then
  rm -f "$DB" "$DB-wal" "$DB-shm"
  rm -rf "$DB.hnsw"
fi
BASELINES=exact,rank,rprec,semantic,diversity

evaluate() {  # system dataset predictions
  if [ "$PROFILE" = "$SEMRP_PROFILE" ]; then
    "$KPLAB" eval --dataset "$DATA/kpg_testsets_meng2017/$2" --predictions "$3" --system "$1" \
      --metrics "$BASELINES,semrp" --param semrp.ks=1,2,3 --profile "$PROFILE" --db "$DB" --output json >/dev/null
  else
    "$KPLAB" eval --dataset "$DATA/kpg_testsets_meng2017/$2" --predictions "$3" --system "$1" \
      --metrics "$BASELINES" --profile "$PROFILE" --db "$DB" --output json >/dev/null
    "$KPLAB" eval --dataset "$DATA/kpg_testsets_meng2017/$2" --predictions "$3" --system "$1" \
      --metrics semrp --param semrp.ks=1,2,3 --profile "$SEMRP_PROFILE" --db "$DB" --output json >/dev/null
  fi
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
# Contrast cases of the first and third catSeqTG-2RF1 seeds on SemEval (runs 1 and 3, or with two runs
# per system the baselines' runs 1 and 5, joined with their SemR-p runs).
CONTRAST=1,3
if [ "$PROFILE" != "$SEMRP_PROFILE" ]; then CONTRAST=1,5; fi

# Scripts reach only granted directories (docs/scripts.md): the report, the store and the data it scored.
run() {
  "$KPLAB" run --instruction-limit 0 --time-limit 3600 --allow-write "$OUT" --allow-read "$DB" --allow-read "$DATA" "scripts/analysis/$1.lua" \
    --db "$DB" --out "$OUT" --join "${@:2}" >/dev/null
  echo "ran $*"
}
run k_ablation
run anova
run anova --pool-k 1,2,3
run ranking_agreement
run factor_analysis
run contrast_cases --runs "$CONTRAST" --top 2

{
  echo "# The SemR-p paper's analyses on the shared real systems"
  echo
  echo "Made by \`bash scripts/paper_analyses.sh --profile $PROFILE --semrp-profile $SEMRP_PROFILE $OUT_ARG\` with kplab $("$KPLAB" version) and the embedding model"
  echo "\`${KPLAB_MODEL:-glove-6b-100d}\` (the paper used uclanlp/keyphrase-mpnet-v1; see docs/embeddings.md for using it)."
  echo "Systems: catSeqTG-2RF1 (three training seeds), catSeq, catSeq-RL, catSeq-GAN, a second catSeq run;"
  echo "datasets: SemEval-2010 (100), Inspec (500), Krapivin (400) test splits of Meng et al. (2017)."
  echo
  echo "Profiles: the baselines (F1@M, NDCG, AP, R-precision, SemP/R/F1...) under \`$PROFILE\`, SemR-p under \`$SEMRP_PROFILE\`."
  echo
  echo "- [k_ablation](k_ablation.md): SemR-p for k = 1, 2, 3 and the paper's Fig. 2, the change of its per-system"
  echo "  correlations with the baselines from k = 1 to k = 3 (section 5.1)"
  echo "- [anova](anova.md): two-way ANOVA system x dataset with eta^2 (section 5.2)"
  echo "- [anova_pooled_k](anova_pooled_k.md): the same with k = 1, 2, 3 pooled, as the paper's N = 48,000 implies"
  echo "  (8 models x 2 datasets x 1,000 documents x 3 values of k; residual df 47,984 = N - 16 cells): here"
  echo "  N = 3 x the documents of anova.md"
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
