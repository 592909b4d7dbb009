// Uses the installed kplab::core, kplab::host and kplab::plot: Porter stemming, loading and normalizing a
// dataset with its predictions, exact matching, a full evaluation with the shipped plugins, and a chart.
// Usage: consumer DATASET_DIR (examples/tiny). Exits 1 if a hand-checked value differs.
// Built with KPLAB_CONSUMER_CORE_ONLY by tests/consumer_subdir (kplab added with add_subdirectory).
//
// Hand calculation (examples/tiny): hits in the top 5 predictions per document 3, 3, 2, 2, 2 (listed in
// tests/lua_module/api.lua), so all.p@5.micro = 12 / 25 = 0.48.
#include <cmath>
#include <cstdio>
#include <string>

#include <kplab/corpus.h>
#ifndef KPLAB_CONSUMER_CORE_ONLY
#include <kplab/host/evaluate.h>
#include <kplab/svg.h>
#endif
#include <kplab/io.h>
#include <kplab/match.h>
#include <kplab/profile.h>
#include <kplab/stem.h>

namespace {

int failures = 0;

void Check(bool ok, const std::string& what) {
  if (!ok) {
    std::fprintf(stderr, "FAIL: %s\n", what.c_str());
    ++failures;
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: consumer DATASET_DIR\n");
    return 2;
  }
  const std::string dir = argv[1];

  // Porter (nltk): "scheduling" loses -ing, "scheduler" loses -er (m = 2): both "schedul".
  const kplab::PorterStemmer stemmer;
  Check(stemmer.Stem("scheduling") == "schedul" && stemmer.Stem("scheduler") == "schedul", "stemming");

  auto dataset = kplab::ImportDataset(dir);
  if (!dataset) return std::fprintf(stderr, "%s\n", dataset.error().message.c_str()), 1;
  auto preds = kplab::ImportPredictions(dir + "/predictions.txt");
  if (!preds) return std::fprintf(stderr, "%s\n", preds.error().message.c_str()), 1;
  auto aligned = kplab::AlignPredictions(*dataset, std::move(*preds));
  if (!aligned) return std::fprintf(stderr, "%s\n", aligned.error().message.c_str()), 1;
  auto corpus = kplab::BuildCorpus(*dataset, &*aligned, *kplab::FindProfile("kplab"));
  if (!corpus) return std::fprintf(stderr, "%s\n", corpus.error().message.c_str()), 1;
  const int expected[] = {3, 3, 2, 2, 2};
  Check(corpus->docs.size() == 5, "5 documents");
  for (std::size_t i = 0; i < corpus->docs.size() && i < 5; ++i) {
    const kplab::Document& d = corpus->docs[i];
    const auto flags = kplab::ExactMatch(d.pred_view(0), d.ref_view(0));
    const int hits = kplab::HitsAt(flags, 5);
    std::printf("doc %s: hits@5 %d\n", d.id.c_str(), hits);
    Check(hits == expected[i], "hits@5 of document " + d.id);
  }

#ifndef KPLAB_CONSUMER_CORE_ONLY
  kplab::host::EvalRequest req;
  req.dataset_path = dir;
  req.predictions_path = dir + "/predictions.txt";
  req.metrics = {"exact"};
  auto res = kplab::host::Evaluate(req);
  if (!res) return std::fprintf(stderr, "%s\n", res.error().message.c_str()), 1;
  Check(res->errors.empty(), "no script errors");
  bool found = false;
  for (const auto& a : res->aggregates) {
    if (a.metric == "all.p@5.micro") {
      found = true;
      std::printf("all.p@5.micro %.17g\n", a.value);
      Check(std::fabs(a.value - 0.48) < 1e-12, "all.p@5.micro = 12/25");
    }
  }
  Check(found, "all.p@5.micro computed");
  std::printf("plugins from %s\n", kplab::host::ShippedPluginDir().c_str());

  // kplab::plot: the median of {1, 2, 4} is 2, written with one decimal beside the box.
  kplab::svg::BoxplotSpec box;
  box.groups = {{"g", {1, 2, 4}, ""}};
  box.mark_median = true;
  box.digits = 1;
  auto chart = kplab::svg::Boxplot(box);
  if (!chart) return std::fprintf(stderr, "%s\n", chart.error().message.c_str()), 1;
  const std::size_t medians = chart->find("class=\"median-values\"");
  Check(chart->starts_with("<svg") && medians != std::string::npos &&
            chart->find(">2.0</text>", medians) != std::string::npos,
        "box plot with its median");
#endif
  if (failures != 0) return 1;
  std::printf("ok\n");
  return 0;
}
