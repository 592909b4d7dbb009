// The utility metric (plugins/utility.lua over kp.retrieval): KPEval's own retrieval classes' numbers on
// KP20k's first 1000 documents (tests/data/utility/peer, printed by tests/reference/utility_peer.py),
// the tie rules worked out by hand, and hostile inputs.
#include <gtest/gtest.h>
#include <simdjson.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <lua.hpp>

#include "bindings.h"
#include "cli_harness.h"
#include "evaluate.h"
#include "kplab/corpus.h"
#include "kplab/file_gate.h"
#include "kplab/io.h"
#include "kplab/profile.h"
#include "kplab/registry.h"
#include "kplab/transformer.h"
#include "sandbox.h"

namespace kplab::host {
namespace {

namespace fs = std::filesystem;

const std::string kUtilityShared = KPLAB_SHARED_DATA;
const std::string kUtilityPeer = std::string(KPLAB_SOURCE_DIR) + "/tests/data/utility/peer";
const std::string kModels = std::string(KPLAB_SOURCE_DIR) + "/tests/data/utility";

std::string SlurpUtility(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class Utility : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kplab_utility_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Write(const std::string& name, const std::string& text) {
    const fs::path p = dir_ / name;
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << text;
    return p.string();
  }

  // The distractors KPEval's runs used: the Meng-2017 inspec, krapivin and semeval test documents with
  // their references, in that order, as one Meng-format dataset.
  std::string Distractors() {
    std::string ctx, kws;
    for (const std::string ds : {"inspec", "krapivin", "semeval"}) {
      const std::string d = kUtilityShared + "/kpg_testsets_meng2017/" + ds + "/word_" + ds + "_testing_";
      ctx += SlurpUtility(d + "context.txt");
      kws += SlurpUtility(d + "allkeywords.txt");
    }
    Write("distractors/word_distractors_testing_context.txt", ctx);
    Write("distractors/word_distractors_testing_allkeywords.txt", kws);
    return (dir_ / "distractors").string();
  }

  // KP20k test documents 1..1000 with catSeqTG-2RF1's predictions of `seed` (the first 1000 lines).
  static std::shared_ptr<const Corpus> Kp20k(int seed, const std::string& profile) {
    DatasetOptions opt;
    auto ds = ImportDataset(kUtilityShared + "/kp20k_test_first1000", opt);
    EXPECT_TRUE(ds.ok()) << ds.error().message;
    auto preds =
        ImportPredictions(kUtilityShared + "/predictions/catSeqTG-2RF1/kp20k/seed" + std::to_string(seed) + ".txt");
    EXPECT_TRUE(preds.ok()) << preds.error().message;
    preds->docs.resize(ds->docs.size());
    auto aligned = AlignPredictions(*ds, std::move(*preds));
    EXPECT_TRUE(aligned.ok()) << aligned.error().message;
    auto corpus = BuildCorpus(*ds, &*aligned, *FindProfile(profile));
    EXPECT_TRUE(corpus.ok()) << corpus.error().message;
    return std::make_shared<const Corpus>(std::move(*corpus));
  }

  EvalResult Evaluate(std::shared_ptr<const Corpus> corpus, std::map<std::string, std::string> params,
                      const std::string& model = "") {
    EvalRequest req;
    req.metrics = {"utility"};
    req.params["utility"] = std::move(params);
    req.threads = 1;
    req.model = model;
    req.cache_db = (dir_ / "cache.db").string();
    req.limits.seconds = 0;
    req.limits.instructions = 0;
    auto res = EvaluateCorpus(std::move(corpus), req);
    EXPECT_TRUE(res.ok()) << res.error().message;
    return *std::move(res);
  }

  static std::vector<double> Column(const EvalResult& r, const std::string& name) {
    for (std::size_t c = 0; c < r.scores.metrics.size(); ++c) {
      if (r.scores.metrics[c] == name) return r.scores.columns[c];
    }
    ADD_FAILURE() << "no column " << name;
    return {};
  }
  static double Aggregate(const EvalResult& r, const std::string& name) {
    for (const auto& a : r.aggregates) {
      if (a.metric == name) return a.value;
    }
    ADD_FAILURE() << "no aggregate " << name;
    return NAN;
  }
  static std::string Errors(const EvalResult& r) {
    std::string s;
    for (const auto& e : r.errors) s += e.message + "\n";
    return s;
  }

  fs::path dir_;
};

// ---- KPEval's own numbers ----------------------------------------------------------------------------

struct PeerRun {
  std::string file, cls, queries, bi_encoder, cross_encoder;
  int seed = 0, rerank = 0;
  bool distractors = false;
  std::map<std::string, double> aggregated;
  std::map<std::string, std::vector<double>> per_doc;
};

std::vector<PeerRun> PeerRuns() {
  std::vector<PeerRun> runs;
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(kUtilityPeer)) {
    if (e.path().extension() == ".json") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  simdjson::dom::parser parser;
  for (const fs::path& f : files) {
    PeerRun r;
    r.file = f.filename().string();
    simdjson::dom::element doc = parser.load(f.string());
    simdjson::dom::object in = doc["inputs"];
    r.cls = std::string(std::string_view(in["class"]));
    r.queries = std::string(std::string_view(in["queries"]));
    r.seed = static_cast<int>(int64_t(in["seed"]));
    r.distractors = bool(in["distractors"]);
    if (in["bi_encoder"].is_string()) r.bi_encoder = std::string(std::string_view(in["bi_encoder"]));
    if (in["cross_encoder"].is_string()) {
      r.cross_encoder = std::string(std::string_view(in["cross_encoder"]));
      r.rerank = static_cast<int>(int64_t(in["rerank"]));
    }
    for (auto [k, v] : simdjson::dom::object(doc["aggregated"])) r.aggregated[std::string(k)] = double(v);
    for (auto [k, v] : simdjson::dom::object(doc["per_doc"])) {
      for (auto x : simdjson::dom::array(v)) r.per_doc[std::string(k)].push_back(double(x));
    }
    runs.push_back(std::move(r));
  }
  return runs;
}

// KPEval's names (sparse_recall_at_1, dense+rerank_mrr_at_5) -> kplab's columns (sparse_recall@1,
// rerank_mrr@5).
std::string KplabName(std::string name) {
  if (name.rfind("dense+rerank_", 0) == 0) name = "rerank_" + name.substr(13);
  const auto at = name.rfind("_at_");
  return name.substr(0, at) + "@" + name.substr(at + 4);
}

// Sparse retrieval (BM25) reproduces KPEval's RetrievalMetric and RetrievalMetricV2 exactly: every
// per-document value and aggregate of each peer run `take` accepts (*checked: how many were).
class UtilitySparse : public Utility {
 protected:
  void ExpectRunsMatchKpeval(const std::function<bool(const PeerRun&)>& take, int* checked) {
    *checked = 0;
    for (const PeerRun& r : PeerRuns()) {
      if (!r.bi_encoder.empty() || !take(r)) continue;
      SCOPED_TRACE(r.file);
      std::map<std::string, std::string> params{
          {"queries", kUtilityShared + "/kpeval_adhoc_queries/" + r.queries}, {"version", r.cls}, {"mode", "sparse"}};
      if (r.distractors) params["corpus"] = Distractors();
      const EvalResult res = Evaluate(Kp20k(r.seed, "kpeval"), params);
      ASSERT_TRUE(res.errors.empty()) << Errors(res);
      // Known and explained (docs/metrics.md, Utility, "Not reproduced"): with seed 5678 document 738
      // predicts "random number;...;random numbers;random numbers", and the corpus's repeat view
      // (preds_with_duplicates) carries the first surface of a stem-duplicate group, so kplab expands the
      // document with "random number" three times where KPEval has "random numbers" twice; its BM25
      // tokens, and through the collection's statistics document 136's placement, differ.
      const std::set<std::size_t> explained =
          r.file == "v2_q1_seed5678_distractors.json" ? std::set<std::size_t>{136, 738} : std::set<std::size_t>{};
      for (const auto& [name, values] : r.per_doc) {
        const std::string k = KplabName(name);
        const std::vector<double> got = Column(res, k);
        ASSERT_EQ(got.size(), values.size()) << k;
        for (std::size_t i = 0; i < got.size(); ++i) {
          if (explained.count(i + 1) == 0) {
            EXPECT_NEAR(got[i], values[i], 1e-12) << k << " document " << i + 1;
          }
        }
        if (explained.empty()) {
          EXPECT_NEAR(Aggregate(res, k), r.aggregated.at(name), 1e-12) << k;
        }
      }
      // KPEval orders tied documents as numpy's argpartition returns them, kplab by position
      // (docs/metrics.md, Utility, quirk 2): the agreement above is exact because no document ties with
      // another inside the top 5 on these runs, which this checks.
      const std::vector<double> better = Column(res, "sparse_better"), ties = Column(res, "sparse_ties");
      for (std::size_t i = 0; i < better.size(); ++i) {
        EXPECT_FALSE(ties[i] > 0 && better[i] < 5) << "document " << i + 1 << " ties inside the top 5";
      }
      ++*checked;
    }
  }
};

// Every sparse peer run: both classes, with and without distractors, the three query files and three
// systems (seeds). Slow tier (~6 s); the quick tier has the case below.
TEST_F(UtilitySparse, MatchesKpevalsOwnClassesOnEveryRun) {
  int checked = 0;
  ExpectRunsMatchKpeval([](const PeerRun&) { return true; }, &checked);
  EXPECT_EQ(checked, 14);
}

// One run of each class: RetrievalMetric without distractors, RetrievalMetricV2 with them.
TEST_F(UtilitySparse, MatchesKpevalsOwnClassesOnTwoRuns) {
  int checked = 0;
  ExpectRunsMatchKpeval(
      [](const PeerRun& r) { return r.file == "v1_q1_seed1234.json" || r.file == "v2_q1_seed1234_distractors.json"; },
      &checked);
  EXPECT_EQ(checked, 2);
}

// Dense retrieval and cross-encoder re-ranking against KPEval's, with random-weight models of the right
// kinds (tests/data/utility/gen_models.py: no checkpoint can be fetched here). kplab's transformer
// backend and the peer's torch compute the same networks to ~1e-6, and KPEval compares float32 cosines
// where kplab compares doubles; the fixture bi-encoder's document vectors are nearly parallel (its
// vocabulary spells most words letter by letter, mean-pooled over 512 tokens), so neighbours' cosines
// are within that rounding of each other and a few placements swap (docs/metrics.md, Utility: 9 of
// 1000 documents' MRR@5 on the committed run). The test holds every value to the peer's except at
// most kSwapped documents a column (and each aggregate to what those documents can move).
TEST_F(Utility, DenseAndRerankMatchKpevalsOwnClasses) {
  auto model = TransformerModel::Load(kModels + "/bi-encoder");
  ASSERT_TRUE(model.ok()) << model.error().message;
  ModelInfo info;
  info.name = "utility-bi";
  info.backend = "transformer";
  info.fingerprint = (*model)->fingerprint();
  info.dims = (*model)->dims();
  UnregisterRuntimeModel(info.name);
  ASSERT_TRUE(RegisterRuntimeModel(info, std::shared_ptr<const Embedder>(std::move(*model))).ok());
  int checked = 0;
  for (const PeerRun& r : PeerRuns()) {
    if (r.bi_encoder.empty()) continue;
    SCOPED_TRACE(r.file);
    std::map<std::string, std::string> params{{"queries", kUtilityShared + "/kpeval_adhoc_queries/" + r.queries},
                                              {"version", r.cls},
                                              {"mode", r.per_doc.count("sparse_recall_at_1") ? "both" : "dense"}};
    if (r.distractors) params["corpus"] = Distractors();
    if (!r.cross_encoder.empty()) {
      params["cross_encoder"] = kModels + "/" + r.cross_encoder;
      params["rerank"] = std::to_string(r.rerank);
    }
    const std::size_t docs = r.per_doc.begin()->second.size();
    auto corpus = Kp20k(r.seed, "kpeval");
    if (docs < corpus->docs.size()) {
      // A peer run over the first N documents: the same documents and queries here.
      std::istringstream in(SlurpUtility(kUtilityShared + "/kpeval_adhoc_queries/" + r.queries));
      std::string cut;
      std::string line;
      for (std::size_t n = 0; n < docs && std::getline(in, line); ++n) cut += line + "\n";
      params["queries"] = Write("q_first.txt", cut);
    }
    const EvalResult res = Evaluate(corpus, params, "utility-bi");
    ASSERT_TRUE(res.errors.empty()) << Errors(res);
    constexpr int kSwapped = 10;
    for (const auto& [name, values] : r.per_doc) {
      const std::string k = KplabName(name);
      const std::vector<double> got = Column(res, k);
      ASSERT_GE(got.size(), values.size()) << k;
      int differ = 0;
      for (std::size_t i = 0; i < values.size(); ++i) differ += std::abs(got[i] - values[i]) > 1e-12;
      EXPECT_LE(differ, kSwapped) << k;
      // The run's value moves by no more than the swapped documents can move it.
      EXPECT_NEAR(Aggregate(res, k), r.aggregated.at(name), differ / static_cast<double>(values.size()) + 1e-12) << k;
    }
    ++checked;
  }
  UnregisterRuntimeModel("utility-bi");
  EXPECT_GE(checked, 1);
}

// The bi-encoder's token limit (utility.max_seq_length, KPEval's 512) reaches the network through every
// wrapper the registry puts around an installed model (the manifest's Deferred, the fingerprinted
// loader): a limit of 3 keeps [CLS], one token and [SEP], so a long text gets the vector of its first
// token, which the model's own limit (512) does not give.
TEST_F(Utility, TokenLimitReachesTheModelThroughTheRegistry) {
  auto info = ImportTransformer((dir_ / "models").string(), "bi", kModels + "/bi-encoder", {});
  ASSERT_TRUE(info.ok()) << info.error().message;
  auto loaded = LoadEmbedder(*info);
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  auto direct = TransformerModel::Load(kModels + "/bi-encoder");
  ASSERT_TRUE(direct.ok());
  const std::vector<std::string_view> long_text{"graph neural network keyphrase extraction"}, first{"graph"};
  for (const std::shared_ptr<const Embedder>& e : {*loaded, DeferredEmbedder(*info)}) {
    const int d = e->dims();
    std::vector<float> cut(d), whole(d), one(d);
    std::vector<std::uint8_t> has(1);
    ASSERT_TRUE(e->EmbedLimited(long_text, 3, cut.data(), has.data()).ok());
    ASSERT_TRUE(e->Embed(long_text, whole.data(), has.data()).ok());
    ASSERT_TRUE((*direct)->Embed(first, one.data(), has.data()).ok());
    double same = 0, differ = 0;  // within 1e-6 (design note 35: batches may round differently)
    for (int k = 0; k < d; ++k) {
      same = std::max(same, std::abs(static_cast<double>(cut[k]) - one[k]));
      differ = std::max(differ, std::abs(static_cast<double>(cut[k]) - whole[k]));
    }
    EXPECT_LT(same, 1e-6);
    EXPECT_GT(differ, 1e-3);
  }
}

// ---- The tie rules, worked out by hand ----------------------------------------------------------------

// Three evaluated documents (empty predictions) and four distractors, so that every idf of the query
// words is positive (N = 7: "alpha", in two documents, has idf ln(5.5 / 2.5) > 0):
//   d1 = alpha beta, d2 = alpha beta (the same words), d3 = gamma gamma;
//   distractors: epsilon, zeta, eta, theta, each with the reference "omega".
// Queries: 1 "alpha", 2 "alpha", 3 "delta" (in no document: every document scores 0).
//   q1: d1 and d2 tie at the top: b = 0, t = 1, d1 first (t- = 0).  q2: the same, d2 second (t- = 1).
//   q3: all 7 tie at 0: b = 0, t = 6, d3 third (t- = 2).
// kpeval rule, position p = b + t- + 1: q1 p = 1: every value 1. q2 p = 2: recall@1 = 1 (a tie at the
//   top counts), MRR@1 = 1, recall@3 = recall@5 = 1, MRR@3 = MRR@5 = 1/2. q3 p = 3: recall@1 = MRR@1 = 1
//   (KPEval counts an all-zero tie as found at k = 1), recall@3 = 5 = 1, MRR@3 = MRR@5 = 1/3.
// kplab rule, rank uniform on b + 1 .. b + t + 1: q1, q2 (2 tied): recall@1 = MRR@1 = 1/2, recall@3 =
//   recall@5 = 1, MRR@3 = MRR@5 = (1 + 1/2) / 2 = 3/4. q3 (7 tied): recall@1 = MRR@1 = 1/7, recall@3 =
//   3/7, recall@5 = 5/7, MRR@3 = (1 + 1/2 + 1/3) / 7 = 11/42, MRR@5 = (1 + 1/2 + 1/3 + 1/4 + 1/5) / 7 =
//   137/420.
class UtilityTies : public Utility {
 protected:
  std::shared_ptr<const Corpus> Tiny(const std::string& profile, int queries_for = 3) {
    Write("ds/word_ds_testing_context.txt", "alpha <eos> beta\nalpha <eos> beta\ngamma <eos> gamma\n");
    Write("ds/word_ds_testing_allkeywords.txt", "a\nb\nc\n");
    Write("preds.txt", "\n\n\n");
    Write("extra/word_extra_testing_context.txt", "epsilon <eos> epsilon\nzeta <eos> zeta\neta <eos> eta\ntheta <eos> theta\n");
    Write("extra/word_extra_testing_allkeywords.txt", "omega\nomega\nomega\nomega\n");
    std::string q = "alpha\nalpha\ndelta\n";
    if (queries_for == 2) q = "alpha\nalpha\n";
    Write("q.txt", q);
    auto ds = ImportDataset((dir_ / "ds").string());
    EXPECT_TRUE(ds.ok()) << ds.error().message;
    auto preds = ImportPredictions((dir_ / "preds.txt").string());
    EXPECT_TRUE(preds.ok()) << preds.error().message;
    auto aligned = AlignPredictions(*ds, std::move(*preds));
    EXPECT_TRUE(aligned.ok()) << aligned.error().message;
    auto corpus = BuildCorpus(*ds, &*aligned, *FindProfile(profile));
    EXPECT_TRUE(corpus.ok()) << corpus.error().message;
    return std::make_shared<const Corpus>(std::move(*corpus));
  }
  // The files Tiny writes (whichever of the two a call expression evaluates first).
  std::map<std::string, std::string> Params() {
    return {{"queries", (dir_ / "q.txt").string()}, {"corpus", (dir_ / "extra").string()}};
  }
};

void ExpectColumn(const std::vector<double>& got, const std::vector<double>& want, const std::string& name) {
  ASSERT_EQ(got.size(), want.size()) << name;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << name << " document " << i + 1 << " = " << got[i];
    } else {
      EXPECT_NEAR(got[i], want[i], 1e-15) << name << " document " << i + 1;
    }
  }
}

TEST_F(UtilityTies, KpevalRuleByHand) {
  const EvalResult r = Evaluate(Tiny("kpeval"), Params());
  ASSERT_TRUE(r.errors.empty()) << Errors(r);
  ExpectColumn(Column(r, "sparse_recall@1"), {1, 1, 1}, "recall@1");
  ExpectColumn(Column(r, "sparse_mrr@1"), {1, 1, 1}, "mrr@1");
  ExpectColumn(Column(r, "sparse_recall@3"), {1, 1, 1}, "recall@3");
  ExpectColumn(Column(r, "sparse_mrr@3"), {1, 0.5, 1.0 / 3}, "mrr@3");
  ExpectColumn(Column(r, "sparse_recall@5"), {1, 1, 1}, "recall@5");
  ExpectColumn(Column(r, "sparse_mrr@5"), {1, 0.5, 1.0 / 3}, "mrr@5");
  EXPECT_NEAR(Aggregate(r, "sparse_mrr@3"), (1 + 0.5 + 1.0 / 3) / 3, 1e-15);
}

TEST_F(UtilityTies, KplabRuleByHand) {
  const EvalResult r = Evaluate(Tiny("kplab"), Params());
  ASSERT_TRUE(r.errors.empty()) << Errors(r);
  ExpectColumn(Column(r, "sparse_recall@1"), {0.5, 0.5, 1.0 / 7}, "recall@1");
  ExpectColumn(Column(r, "sparse_mrr@1"), {0.5, 0.5, 1.0 / 7}, "mrr@1");
  ExpectColumn(Column(r, "sparse_recall@3"), {1, 1, 3.0 / 7}, "recall@3");
  ExpectColumn(Column(r, "sparse_mrr@3"), {0.75, 0.75, 11.0 / 42}, "mrr@3");
  ExpectColumn(Column(r, "sparse_recall@5"), {1, 1, 5.0 / 7}, "recall@5");
  ExpectColumn(Column(r, "sparse_mrr@5"), {0.75, 0.75, 137.0 / 420}, "mrr@5");
  // The parameter overrides the profile.
  auto p = Params();
  p["semantics"] = "kpeval";
  const EvalResult k = Evaluate(Tiny("kplab"), p);
  ASSERT_TRUE(k.errors.empty()) << Errors(k);
  ExpectColumn(Column(k, "sparse_mrr@5"), {1, 0.5, 1.0 / 3}, "mrr@5 (semantics=kpeval)");
}

// A query file shorter than the corpus: the documents after the last query get no value and are not in
// the means. Under kplab they stay in the collection (d3 is a distractor), under kpeval they do not
// (KPEval truncates its inputs to the queries).
TEST_F(UtilityTies, DocumentsWithoutAQueryAreNotScored) {
  for (const std::string profile : {"kplab", "kpeval"}) {
    SCOPED_TRACE(profile);
    auto corpus = Tiny(profile, 2);
    const EvalResult r = Evaluate(corpus, Params());
    ASSERT_TRUE(r.errors.empty()) << Errors(r);
    const std::vector<double> got = Column(r, "sparse_recall@3");
    ASSERT_EQ(got.size(), 3u);
    EXPECT_TRUE(std::isnan(got[2]));
    EXPECT_EQ(got[0], 1.0);
    EXPECT_EQ(Aggregate(r, "sparse_recall@3"), 1.0);  // over the two documents with a query
  }
}

// ---- Hostile inputs ------------------------------------------------------------------------------------

class UtilityHostile : public UtilityTies {
 protected:
  std::string FailureOf(const std::string& queries) {
    auto corpus = Tiny("kplab");
    auto p = Params();
    p["queries"] = queries;
    const EvalResult r = Evaluate(corpus, p);
    return r.errors.empty() ? std::string("(no error)") : r.errors.front().message;
  }
};

TEST_F(UtilityHostile, QueryFiles) {
  const std::string more = Write("more.txt", "a\nb\nc\nd\n");
  EXPECT_NE(FailureOf(more).find(more + ": 4 queries for 3 documents (expected at most one query per document"),
            std::string::npos)
      << FailureOf(more);
  const std::string bad = Write("bad.txt", "alpha\nbe\xFFta\n");
  EXPECT_NE(FailureOf(bad).find(bad + ":2: invalid UTF-8 (expected one query a line, UTF-8 text)"), std::string::npos)
      << FailureOf(bad);
  const std::string empty = Write("empty.txt", "");
  EXPECT_NE(FailureOf(empty).find(empty + ": empty file (expected one query a line)"), std::string::npos)
      << FailureOf(empty);
  const std::string missing = (dir_ / "missing.txt").string();
  EXPECT_NE(FailureOf(missing).find(missing + ": no such file"), std::string::npos) << FailureOf(missing);
  EXPECT_NE(FailureOf(dir_.string()).find(dir_.string() + ": a directory, not a regular file"), std::string::npos)
      << FailureOf(dir_.string());
  const std::string fifo = (dir_ / "fifo.txt").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_NE(FailureOf(fifo).find(fifo + ": a FIFO, not a regular file"), std::string::npos) << FailureOf(fifo);
  // Empty lines are queries without words: every document ties (here 7 at 0).
  const std::string blank = Write("blank.txt", "\n  \ndelta\n");
  auto p = Params();
  p["queries"] = blank;
  const EvalResult r = Evaluate(Tiny("kplab"), p);
  ASSERT_TRUE(r.errors.empty()) << Errors(r);
  ExpectColumn(Column(r, "sparse_recall@1"), {1.0 / 7, 1.0 / 7, 1.0 / 7}, "recall@1");
}

TEST_F(UtilityHostile, MissingQueryParameterIsAUsageError) {
  EvalRequest req;
  req.metrics = {"utility"};
  req.threads = 1;
  auto res = EvaluateCorpus(Tiny("kplab"), req);
  ASSERT_FALSE(res.ok());
  EXPECT_EQ(res.error().kind, ErrorKind::kUsage);
  EXPECT_EQ(res.error().message, "plugin 'utility': set the query file: --param utility.queries=FILE");
}

TEST_F(UtilityHostile, ExtraCorpusErrorsNameTheFile) {
  Write("badextra/word_b_testing_context.txt", "ok <eos> fine\nbroken \xFF <eos> x\n");
  Write("badextra/word_b_testing_allkeywords.txt", "a\nb\n");
  auto p = Params();
  p["corpus"] = (dir_ / "badextra").string();
  const EvalResult r = Evaluate(Tiny("kplab"), p);
  ASSERT_FALSE(r.errors.empty());
  EXPECT_NE(r.errors.front().message.find("word_b_testing_context.txt:2: invalid UTF-8"), std::string::npos)
      << r.errors.front().message;
}

// A corpus parameter naming a huge tree (say "/") is walked under the plugin's limits: the sizing walk is
// metered per entry (64 steps) and stops at the instruction budget with a limit error, not after the
// whole file system. 3,000 empty files at 64 steps are 192,000 steps, over a budget of 100,000.
TEST_F(UtilityHostile, AHugeCorpusTreeIsWalkedUnderTheLimits) {
  const fs::path tree = dir_ / "tree";
  for (int d = 0; d < 30; ++d) {
    fs::create_directories(tree / std::to_string(d));
    for (int f = 0; f < 100; ++f) std::ofstream(tree / std::to_string(d) / (std::to_string(f) + ".txt"));
  }
  EvalRequest req;
  req.metrics = {"utility"};
  req.params["utility"] = Params();
  req.params["utility"]["corpus"] = tree.string();
  req.threads = 1;
  req.limits.seconds = 0;
  req.limits.instructions = 100'000;
  // The control: the same budget is enough for the run without the tree.
  EvalRequest control = req;
  control.params["utility"].erase("corpus");
  auto fine = EvaluateCorpus(Tiny("kplab"), control);
  ASSERT_TRUE(fine.ok()) << fine.error().message;
  ASSERT_TRUE(fine->errors.empty()) << fine->errors.front().message;
  auto res = EvaluateCorpus(Tiny("kplab"), req);
  const std::string why = !res.ok() ? res.error().message : res->errors.empty() ? "" : res->errors.front().message;
  EXPECT_NE(why.find("instruction budget of 100000 exceeded"), std::string::npos) << why;
}

// Paths reach kp.retrieval only as parameters the user set, while prepare runs.
TEST_F(UtilityHostile, ReadsOnlyGrantedPaths) {
  LuaVm vm;
  InstallAll(vm);
  const std::string q = Write("q.txt", "alpha\n");
  lua_State* L = vm.state();
  vm.PushSandboxEnv("t");
  auto err = vm.RunChunk("return kp.retrieval.read_queries('" + q + "')", "t.lua", 1);
  ASSERT_TRUE(err);
  const std::string refused =
      ": not a file a plugin may read (only the value of one of its string parameters set for the run, e.g. "
      "--param METRIC.NAME=PATH, read while its prepare runs)";
  EXPECT_EQ(err->message, "t.lua:1: kp.retrieval.read_queries: " + q + refused);
  // As the runner grants a plugin the files its string parameters name while prepare runs.
  vm.SetFileGrants(std::make_shared<const FileGrants>(FileGrants::Plugin({*ResolvePath(q)})));
  vm.PushSandboxEnv("t");
  err = vm.RunChunk("return #kp.retrieval.read_queries('" + q + "')", "t.lua", 1);
  EXPECT_FALSE(err) << err->Format();
  EXPECT_EQ(lua_tointeger(L, -1), 1);
  lua_pop(L, 1);
  vm.PushSandboxEnv("t");
  err = vm.RunChunk("local c = kp.retrieval.collection() c:add_dataset('" + (dir_ / "ds").string() + "')", "t.lua", 0);
  ASSERT_TRUE(err);
  EXPECT_NE(err->message.find("kp.retrieval (col:add_dataset): " + (dir_ / "ds").string() + refused), std::string::npos)
      << err->message;
  vm.SetFileGrants(std::make_shared<const FileGrants>(FileGrants::Plugin()));
}

// col:add checks its strings as every binding does (lua_util.h, CheckUtf8Arg), numbering the arguments
// as the script counts them (the collection is the method's self).
TEST_F(UtilityHostile, CollectionTextIsCheckedUtf8) {
  LuaVm vm;
  InstallAll(vm);
  for (const auto& [call, want] : std::vector<std::pair<std::string, std::string>>{
           {"c:add('a b', 'text \xff')", "t.lua:1: col:add: argument #2 is not valid UTF-8"},
           {"c:add('a \xc3', 'text')", "t.lua:1: col:add: argument #1 is not valid UTF-8"},
           {"c:add('a', {})", "t.lua:1: bad argument #2 to 'add' (string expected, got table)"},
       }) {
    vm.PushSandboxEnv("t");
    const auto err = vm.RunChunk("local c = kp.retrieval.collection() " + call, "t.lua", 0);
    ASSERT_TRUE(err) << call;
    EXPECT_EQ(err->message, want) << call;
  }
  vm.PushSandboxEnv("t");
  const auto ok =
      vm.RunChunk("local c = kp.retrieval.collection() return c:add('caf\xc3\xa9', 'na\xc3\xafve')", "t.lua", 1);
  ASSERT_FALSE(ok) << ok->Format();
  EXPECT_EQ(lua_tointeger(vm.state(), -1), 1);
  lua_pop(vm.state(), 1);
}

// A confined script (kplab run) cannot have a plugin read outside its grants by naming the path in a
// parameter.
TEST_F(UtilityHostile, ScriptParametersStayInsideTheScriptsGrants) {
  Tiny("kplab");
  const std::string secret = Write("secret/q.txt", "alpha\nalpha\ndelta\n");
  const std::string granted = (dir_ / "q.txt").string();
  const std::string script = Write("ds/run.lua",
      "local c = kp.load{dataset = '" + (dir_ / "ds").string() + "', predictions = '" + (dir_ / "preds.txt").string() +
      "'}\n"
      // A path named on the command line is the script's to read (and to hand on); one written into the
      // script is not.
      "local q = arg[1] == 'secret' and '" + secret + "' or arg[1]\n"
      "local r = kp.evaluate(c, {'utility'}, {utility = {queries = q}}, {threads = 1})\n"
      "print(r.aggregates['sparse_recall@5'])\n");
  // Run from a directory of its own: the current directory is one of a script's grants.
  std::filesystem::create_directories(dir_ / "cwd");
  auto run = [&](const std::string& q) {
    return test::RunKplab(dir_ / "cwd", "", "run --allow-read " + (dir_ / "ds").string() + " --allow-read " +
                                        (dir_ / "preds.txt").string() + " --allow-read " + granted + " " + script +
                                        " " + q);
  };
  const test::Output ok = run(granted);
  EXPECT_EQ(ok.code, 0) << ok.err;
  EXPECT_EQ(ok.out, "1.0\n");
  const test::Output refused = run("secret");
  EXPECT_NE(refused.code, 0);
  // The script could not read it, so its parameter grants the plugin nothing (kplab/file_gate.h).
  EXPECT_NE(refused.err.find("kp.retrieval.read_queries: " + secret +
                             ": not a file a plugin may read (only the value of one of its string parameters set "
                             "for the run, e.g. --param METRIC.NAME=PATH, read while its prepare runs)"),
            std::string::npos)
      << refused.err;
}

// 100,000 distractor documents: the run finishes, and the documents with unique words are still first.
TEST_F(UtilityHostile, HundredThousandDistractors) {
  auto corpus = Tiny("kplab");
  std::string ctx, kws;
  ctx.reserve(100000 * 32);
  for (int i = 0; i < 100000; ++i) {
    ctx += "word" + std::to_string(i % 977) + " <eos> other" + std::to_string(i) + "\n";
    kws += "kp" + std::to_string(i % 13) + "\n";
  }
  Write("big/word_big_testing_context.txt", ctx);
  Write("big/word_big_testing_allkeywords.txt", kws);
  auto p = Params();
  p["corpus"] = (dir_ / "big").string();
  p["queries"] = Write("qb.txt", "alpha\nalpha\ngamma\n");
  const EvalResult r = Evaluate(corpus, p);
  ASSERT_TRUE(r.errors.empty()) << Errors(r);
  ExpectColumn(Column(r, "sparse_recall@1"), {0.5, 0.5, 1}, "recall@1");
}

}  // namespace
}  // namespace kplab::host
