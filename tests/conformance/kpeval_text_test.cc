// KPEval's ROUGE, METEOR and diversity (Self-BLEU, self edit distance) as its own metric classes print
// them, over pltrdy/rouge 1.0.1, evaluate 0.4.0's meteor (nltk 3.8) and rapidfuzz 3.1.1, on the shared
// catSeqTG-2RF1 outputs: kplab's kpeval profile must give the same numbers. The peers' numbers were made
// by tests/reference/kpeval_text_peers.py --commit (nothing of the peers is committed): every run's
// aggregates and a sample of per-document values (every 20th document, every 200th of KP20k).
// With KPLAB_KPEVAL_TEXT_FULL=DIR (the script's --out DIR), every per-document value of every run is
// compared instead of the sample.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <simdjson.h>

#include "evaluate.h"
#include "kplab/corpus.h"
#include "kplab/io.h"
#include "kplab/profile.h"

namespace kplab::host {
namespace {

namespace fs = std::filesystem;

// KPEval's strings reach kplab's numbers through the same double operations, so the values agree to the
// last bits or nearly; 1e-9 leaves room for summation order (numpy's pairwise mean, nltk's fsum).
constexpr double kTol = 1e-9;

struct TextRun {
  std::string dataset, dataset_path, format, predictions, options;
  int seed = 0;
  std::map<std::string, double> aggregates;
};

using DocumentValues = std::map<std::string, std::map<int, double>>;  // column -> doc index -> value

void PrintTo(const TextRun& r, std::ostream* os) { *os << r.dataset << " seed " << r.seed; }

std::vector<std::string> Tabs(const std::string& line) {
  std::vector<std::string> out;
  std::string field;
  std::istringstream in(line);
  while (std::getline(in, field, '\t')) out.push_back(field);
  return out;
}

std::string PeersDir() { return std::string(KPLAB_SOURCE_DIR) + "/tests/conformance/peers/"; }

std::vector<TextRun> ReadTextRuns() {
  std::map<std::string, TextRun> runs;
  std::vector<std::string> order;
  std::ifstream agg(PeersDir() + "kpeval_text_aggregates.tsv");
  std::string line;
  std::getline(agg, line);
  while (std::getline(agg, line)) {
    const auto f = Tabs(line);
    if (f.size() != 9) continue;
    const std::size_t at = f[4].find("seed");
    const int seed = std::stoi(f[4].substr(at + 4));
    const std::string key = f[1] + "|" + std::to_string(seed);
    auto [it, fresh] = runs.try_emplace(key, TextRun{f[1], f[2], f[3], f[4], f[5], seed, {}});
    if (fresh) order.push_back(key);
    it->second.aggregates[f[6]] = std::stod(f[7]);
  }
  std::vector<TextRun> out;
  for (const auto& k : order) out.push_back(runs[k]);
  return out;
}

// The run's per-document values in the committed excerpt. Read by the run's own test, not when the
// cases are listed: every test process lists every case, and most of them never need these.
DocumentValues ReadTextDocuments(const TextRun& run) {
  // dataset, seed, doc (0-based), then one column per metric; an empty cell is not compared.
  DocumentValues out;
  std::ifstream docs(PeersDir() + "kpeval_text_documents.tsv");
  std::string line;
  std::getline(docs, line);
  const auto header = Tabs(line);
  while (std::getline(docs, line)) {
    const auto f = Tabs(line);
    if (f.size() < 3 || f[0] != run.dataset || f[1] != std::to_string(run.seed)) continue;
    for (std::size_t c = 3; c < f.size() && c < header.size(); ++c) {
      if (!f[c].empty()) out[header[c]][std::stoi(f[2])] = std::stod(f[c]);
    }
  }
  return out;
}

// Every per-document value the script wrote with --out (one JSON per run: {"columns": {name: [...]}}).
DocumentValues FullDocuments(const std::string& dir, const TextRun& run) {
  DocumentValues out;
  simdjson::dom::parser parser;
  simdjson::dom::element doc = parser.load(dir + "/" + run.dataset + "__seed" + std::to_string(run.seed) + ".json");
  for (auto [name, values] : doc["columns"].get_object()) {
    const std::string col(name);
    if (run.options.find("no-text") != std::string::npos && !col.starts_with("all.")) continue;
    int i = 0;
    for (double v : values.get_array()) out[col][i++] = v;
  }
  return out;
}

class KpevalTextPeers : public ::testing::TestWithParam<TextRun> {};

TEST_P(KpevalTextPeers, MatchKpevalsOwnMetricClasses) {
  const TextRun& run = GetParam();
  const std::string shared = KPLAB_SHARED_DATA;
  if (!fs::exists(shared + "/" + run.dataset_path)) GTEST_SKIP() << "shared data not found at " << shared;
  DatasetOptions opt;
  opt.format = run.format;
  auto ds = ImportDataset(shared + "/" + run.dataset_path, opt);
  ASSERT_TRUE(ds.ok()) << ds.error().message;
  auto preds = ImportPredictions(shared + "/" + run.predictions);
  ASSERT_TRUE(preds.ok()) << preds.error().message;
  if (run.options.starts_with("max_docs=")) {
    const std::size_t n = std::stoul(run.options.substr(9));
    ds->docs.resize(n);
    preds->docs.resize(n);
  }
  auto aligned = AlignPredictions(*ds, std::move(*preds));
  ASSERT_TRUE(aligned.ok()) << aligned.error().message;
  auto corpus = BuildCorpus(*ds, &*aligned, *FindProfile("kpeval"));
  ASSERT_TRUE(corpus.ok()) << corpus.error().message;
  EvalRequest req;
  req.profile = "kpeval";
  req.metrics = {"rouge", "meteor", "diversity"};
  req.params["diversity"]["embeddings"] = "false";  // the embedding columns are not this comparison's
  auto res = EvaluateCorpus(std::make_shared<const Corpus>(std::move(*corpus)), req);
  ASSERT_TRUE(res.ok()) << res.error().message;
  ASSERT_TRUE(res->errors.empty()) << res->errors[0].Format();

  std::map<std::string, double> got;
  for (const auto& a : res->aggregates) got[a.metric] = a.value;
  int mismatches = 0;
  for (const auto& [name, want] : run.aggregates) {
    auto it = got.find(name);
    if (it == got.end()) {
      ADD_FAILURE() << "kplab has no aggregate " << name;
    } else if (!(std::abs(it->second - want) <= kTol) && ++mismatches <= 10) {
      ADD_FAILURE() << name << ": kplab " << it->second << ", KPEval " << want;
    }
  }
  const char* full = std::getenv("KPLAB_KPEVAL_TEXT_FULL");
  const auto documents = full != nullptr ? FullDocuments(full, run) : ReadTextDocuments(run);
  std::size_t compared = 0;
  for (const auto& [name, values] : documents) {
    std::size_t c = 0;
    while (c < res->scores.metrics.size() && res->scores.metrics[c] != name) ++c;
    if (c == res->scores.metrics.size()) {
      ADD_FAILURE() << "kplab has no column " << name;
      continue;
    }
    const std::vector<double>& col = res->scores.columns[c];
    for (const auto& [i, want] : values) {
      ++compared;
      ASSERT_LT(static_cast<std::size_t>(i), col.size());
      if (!(std::abs(col[i] - want) <= kTol) && ++mismatches <= 20) {
        ADD_FAILURE() << name << " document " << i << " (line " << i + 1 << "): kplab " << col[i] << ", KPEval "
                      << want;
      }
    }
  }
  EXPECT_GT(compared, 0u);
  EXPECT_EQ(mismatches, 0) << "of " << compared << " per-document values";
}

INSTANTIATE_TEST_SUITE_P(Peers, KpevalTextPeers, ::testing::ValuesIn(ReadTextRuns()),
                         [](const ::testing::TestParamInfo<TextRun>& info) {
                           return info.param.dataset + "_seed" + std::to_string(info.param.seed);
                         });

}  // namespace
}  // namespace kplab::host
