// A streamed run (design note 72): `kplab eval` of metrics that compare keys only within a document
// scores each range of documents as it is built and keeps no corpus. Its promise: the run is the one the
// built corpus gives (EvaluateCorpus on LoadCorpus, the path of every other run and of the library
// front-ends), value for value and bit for bit — aggregates and their CIs, per-document columns, slots,
// ids, warnings, the run record — on every dataset kind, profile, thread count and range size, sharded,
// resampled, stored or not; and a request it refuses is refused with the same error.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "../../core/src/eval/on_threads.h"
#include "evaluate.h"
#include "kplab/corpus.h"

namespace {

namespace fs = std::filesystem;
using kplab::host::EvalRequest;
using kplab::host::EvalResult;

bool StreamSameBits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

bool StreamSameBits(const std::optional<double>& a, const std::optional<double>& b) {
  return a.has_value() == b.has_value() && (!a || StreamSameBits(*a, *b));
}

// The first difference between two runs, or "" when they are the same (elapsed time and creation time
// aside).
std::string StreamDifference(const EvalResult& a, const EvalResult& b) {
  const kplab::RunRecord &x = a.run, &y = b.run;
  if (x.dataset_name != y.dataset_name || x.dataset_path != y.dataset_path || x.dataset_hash != y.dataset_hash ||
      x.dataset_format != y.dataset_format || x.predictions_path != y.predictions_path ||
      x.predictions_hash != y.predictions_hash || x.system != y.system || x.seed != y.seed || x.profile != y.profile ||
      x.params_json != y.params_json || x.status != y.status || x.error != y.error) {
    return "run record: " + x.params_json + " / " + y.params_json;
  }
  if (x.shard.has_value() != y.shard.has_value() ||
      (x.shard && (x.shard->index != y.shard->index || x.shard->count != y.shard->count ||
                   x.shard->begin != y.shard->begin || x.shard->end != y.shard->end))) {
    return "shard";
  }
  if (x.plugins.size() != y.plugins.size()) return "plugins";
  if (x.doc_ids.ToVector() != y.doc_ids.ToVector()) return "document ids";
  if (a.warnings != b.warnings) return "warnings";
  if (a.subset_docs != b.subset_docs) return "subset document counts";
  if (!a.errors.empty() || !b.errors.empty())
    return "errors: " + std::to_string(a.errors.size()) + " / " + std::to_string(b.errors.size());
  if (a.aggregates.size() != b.aggregates.size()) return "aggregate count";
  for (std::size_t i = 0; i < a.aggregates.size(); ++i) {
    const auto &p = a.aggregates[i], &q = b.aggregates[i];
    if (p.metric != q.metric || !StreamSameBits(p.value, q.value) || !StreamSameBits(p.ci_low, q.ci_low) ||
        !StreamSameBits(p.ci_high, q.ci_high)) {
      return "aggregate " + p.metric;
    }
  }
  if (a.scores.metrics != b.scores.metrics || a.scores.columns.size() != b.scores.columns.size()) return "columns";
  for (std::size_t c = 0; c < a.scores.columns.size(); ++c) {
    const auto &p = a.scores.columns[c], &q = b.scores.columns[c];
    if (p.size() != q.size()) return "column " + a.scores.metrics[c] + " size";
    for (std::size_t d = 0; d < p.size(); ++d) {
      if (!StreamSameBits(p[d], q[d])) return "column " + a.scores.metrics[c] + ", document " + std::to_string(d);
    }
  }
  if (a.slots.size() != b.slots.size()) return "slot count";
  for (std::size_t s = 0; s < a.slots.size(); ++s) {
    const auto &p = a.slots[s], &q = b.slots[s];
    if (p.plugin != q.plugin || p.subset != q.subset || p.slot != q.slot || p.name != q.name || p.hidden != q.hidden ||
        p.values.size() != q.values.size()) {
      return "slot " + p.subset + "." + p.name;
    }
    for (std::size_t d = 0; d < p.values.size(); ++d) {
      if (!StreamSameBits(p.values[d], q.values[d]))
        return "slot " + p.subset + "." + p.name + ", document " + std::to_string(d);
    }
  }
  return "";
}

// Evaluate(req) with KPLAB_TIMING's lines captured.
kplab::Result<EvalResult> StreamEvaluate(const EvalRequest& req, std::string& timing) {
  ::setenv("KPLAB_TIMING", "1", 1);
  ::testing::internal::CaptureStderr();
  auto r = kplab::host::Evaluate(req);
  timing = ::testing::internal::GetCapturedStderr();
  ::unsetenv("KPLAB_TIMING");
  return r;
}

// The run of the corpus built whole: what Evaluate did before streaming, and what Python, the C ABI and
// kp.evaluate do with a corpus they hold.
kplab::Result<EvalResult> BuiltEvaluate(const EvalRequest& req) {
  auto corpus = kplab::host::LoadCorpus(req);
  if (!corpus) return corpus.error();
  return kplab::host::EvaluateCorpus(std::make_shared<const kplab::Corpus>(std::move(*corpus)), req);
}

struct StreamedCase {
  std::string dataset, predictions, profile;
  kplab::DatasetOptions options;
};

std::vector<StreamedCase> StreamedCases() {
  const std::string shared = std::string(KPLAB_SHARED_DATA) + "/";
  const std::string meng = shared + "kpg_testsets_meng2017/";
  const std::string preds = shared + "predictions/catSeqTG-2RF1/";
  std::vector<StreamedCase> out = {
      {meng + "inspec", preds + "inspec/seed1234.txt", "kplab", {}},      // lines with a text file
      {meng + "inspec", preds + "inspec/seed1234.txt", "exhird", {}},     // re-cut pieces
      {meng + "inspec", preds + "inspec/seed1234.txt", "kpeval", {}},     // cleanup, dedup_join
      {meng + "semeval", preds + "semeval/seed1234.txt", "kenchan", {}},  // gold as given, a warning
      {meng + "krapivin", preds + "krapivin/seed1234.txt", "kplab", {}},
  };
  // An import (SemEval-2010's files: raw text), read whole and given up to the build.
  out.push_back({shared + "semeval2010/test", preds + "semeval/seed1234.txt", "kplab", {}});
  out.push_back({shared + "semeval2010/test", preds + "semeval/seed1234.txt", "kpeval", {}});
  return out;
}

// What a streamed run is asked besides its files: metrics and parameters, stored or not, a shard, --ci,
// the verification.
struct StreamedOptions {
  std::string name;
  std::vector<std::string> metrics;
  std::map<std::string, std::map<std::string, std::string>> params;
  bool keep_columns = true;
  std::optional<EvalRequest::Shard> shard;
  std::optional<kplab::host::CiOptions> ci;
  int verify_docs = kplab::host::kDefaultVerifyDocs;
};

std::vector<StreamedOptions> StreamedOptionSets() {
  return {
      {"default metrics, stored", {}, {}, true, std::nullopt, std::nullopt, kplab::host::kDefaultVerifyDocs},
      {"exact, not stored", {"exact"}, {}, false, std::nullopt, std::nullopt, kplab::host::kDefaultVerifyDocs},
      {"exact with ks, shard 1/3",
       {"exact"},
       {{"exact", {{"ks", "1,3,M"}}}},
       true,
       EvalRequest::Shard{1, 3},
       std::nullopt,
       kplab::host::kDefaultVerifyDocs},
      {"rank and rprec, --ci, no verification",
       {"rank", "rprec"},
       {},
       true,
       std::nullopt,
       kplab::host::CiOptions{40, 0.9, 7},
       0},
  };
}

// Case c with options o in ranges of `per` documents (0: kplab eval's) on `threads` threads, streamed,
// against the run of its corpus built whole.
void ExpectStreamedRunAsBuilt(const StreamedCase& c, const StreamedOptions& o, std::size_t per, int threads) {
  if (per == 0) per = kplab::eval_internal::DocsPerRange();
  const kplab::eval_internal::ScopedDocsPerRange ranges(per);
  const std::string what = c.dataset + " " + c.profile + ", " + o.name + ", ranges of " + std::to_string(per) + ", " +
                           std::to_string(threads) + " threads";
  EvalRequest req;
  req.dataset_path = c.dataset;
  req.dataset_options = c.options;
  req.predictions_path = c.predictions;
  req.profile = c.profile;
  req.metrics = o.metrics;
  req.params = o.params;
  req.keep_columns = o.keep_columns;
  req.shard = o.shard;
  req.ci = o.ci;
  req.verify_docs = o.verify_docs;
  req.threads = threads;
  std::string timing;
  auto streamed = StreamEvaluate(req, timing);
  ASSERT_TRUE(streamed.ok()) << what << ": " << streamed.error().message;
  EXPECT_NE(timing.find("streamed:"), std::string::npos) << what << ": not streamed\n" << timing;
  auto built = BuiltEvaluate(req);
  ASSERT_TRUE(built.ok()) << what << ": " << built.error().message;
  EXPECT_FALSE(streamed->aggregates.empty()) << what;
  EXPECT_EQ(StreamDifference(*streamed, *built), "") << what;
}

// Quick: Inspec's lines (with text) under kplab's profile and SemEval-2010's import (raw text) under
// KPEval's, each option set once, on 1 to 3 threads and in ranges of 37 documents or kplab eval's.
TEST(Streamed, RunsAreTheBuiltCorpusRunsValueForValue) {
  if (!fs::exists(std::string(KPLAB_SHARED_DATA) + "/kpg_testsets_meng2017/inspec"))
    GTEST_SKIP() << "no ../shared/data";
  const std::vector<StreamedCase> cases = StreamedCases();
  const std::vector<StreamedOptions> options = StreamedOptionSets();
  for (std::size_t k = 0; k < options.size(); ++k) {
    ExpectStreamedRunAsBuilt(cases[0], options[k], k % 2 == 0 ? 37 : 0, 1 + static_cast<int>(k % 3));
    ExpectStreamedRunAsBuilt(cases.back(), options[k], k % 2 == 1 ? 37 : 0, 3 - static_cast<int>(k % 3));
  }
}

// Slow: every case with every option set, on 1, 2 and 3 threads, in ranges of 37 and kplab eval's.
TEST(Streamed, EveryCaseAndOptionIsTheBuiltCorpusRun) {
  if (!fs::exists(std::string(KPLAB_SHARED_DATA) + "/kpg_testsets_meng2017/inspec"))
    GTEST_SKIP() << "no ../shared/data";
  for (const StreamedCase& c : StreamedCases()) {
    for (const StreamedOptions& o : StreamedOptionSets()) {
      for (std::size_t per : {std::size_t{0}, std::size_t{37}}) {
        for (int threads : {1, 2, 3}) ExpectStreamedRunAsBuilt(c, o, per, threads);
      }
    }
  }
}

// A plugin's run clock (--run-time-limit) does not run while the corpus is built: a limit shorter than
// the build, which the built path's run keeps to, passes streamed too, with the same numbers (it failed
// in the aggregation once the build had spent the clock).
TEST(Streamed, TheBuildIsNotAPluginsRunTime) {
  const std::string shared = std::string(KPLAB_SHARED_DATA) + "/";
  if (!fs::exists(shared + "semeval2010/test")) GTEST_SKIP() << "no ../shared/data";
  EvalRequest req;
  req.dataset_path = shared + "semeval2010/test";  // raw text: the build takes a while
  req.predictions_path = shared + "predictions/catSeqTG-2RF1/semeval/seed1234.txt";
  req.limits.run_seconds = 0.1;
  std::string timing;
  auto streamed = StreamEvaluate(req, timing);
  ASSERT_TRUE(streamed.ok()) << streamed.error().message;
  EXPECT_NE(timing.find("streamed:"), std::string::npos) << timing;
  const std::size_t at = timing.find("[timing] corpus ");
  ASSERT_NE(at, std::string::npos) << timing;
  EXPECT_GT(std::stod(timing.substr(at + 16)), 100.0) << "the build must outlast the limit to show anything:\n"
                                                      << timing;
  auto built = BuiltEvaluate(req);
  ASSERT_TRUE(built.ok()) << built.error().message;
  EXPECT_EQ(built->run.status, "ok") << built->run.error;
  EXPECT_EQ(StreamDifference(*streamed, *built), "") << streamed->run.error;
}

TEST(Streamed, ARefusedRequestIsRefusedAsForTheBuiltCorpus) {
  EvalRequest base;
  base.dataset_path = std::string(KPLAB_SOURCE_DIR) + "/examples/tiny";
  base.predictions_path = std::string(KPLAB_SOURCE_DIR) + "/examples/tiny/predictions.txt";
  base.metrics = {"exact"};
  struct Case {
    std::string name;
    std::function<void(EvalRequest&)> change;
  };
  const std::vector<Case> cases = {
      {"shard index past the count",
       [](EvalRequest& r) {
         r.shard = EvalRequest::Shard{3, 2};
       }},
      {"more shards than documents",
       [](EvalRequest& r) {
         r.shard = EvalRequest::Shard{0, 1000};
       }},
      {"--ci with --shard",
       [](EvalRequest& r) {
         r.shard = EvalRequest::Shard{0, 2};
         r.ci = kplab::host::CiOptions{};
       }},
      {"--ci-resamples 0",
       [](EvalRequest& r) {
         r.ci = kplab::host::CiOptions{0, 0.95, 1};
       }},
      {"--verify-docs past the most", [](EvalRequest& r) { r.verify_docs = kplab::host::kMaxVerifyDocs + 1; }},
      {"a system name with a control character", [](EvalRequest& r) { r.system = "a\x1b[2Jb"; }},
      {"a bad parameter",
       [](EvalRequest& r) {
         r.params = {{"exact", {{"ks", "0"}}}};
       }},
      {"a missing predictions file", [](EvalRequest& r) { r.predictions_path += ".missing"; }},
  };
  for (const Case& c : cases) {
    EvalRequest req = base;
    c.change(req);
    std::string timing;
    auto streamed = StreamEvaluate(req, timing);
    auto built = BuiltEvaluate(req);
    ASSERT_FALSE(streamed.ok()) << c.name;
    ASSERT_FALSE(built.ok()) << c.name;
    EXPECT_EQ(streamed.error().kind, built.error().kind) << c.name;
    EXPECT_EQ(streamed.error().message, built.error().message) << c.name;
  }
}

}  // namespace

namespace {

// SubsetDocCounts (the documents behind each subset in a report) by hand: the most defined values of
// any column of the subset, whatever its length; a column after one as long as it is defined is
// skipped, but not a longer one; names without a subset prefix, or of another, count nowhere.
TEST(SubsetDocCounts, TheMostDefinedValuesOfAnyColumnOfTheSubset) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  kplab::ScoreColumns scores;
  auto add = [&](const std::string& name, std::vector<double> column) {
    scores.metrics.push_back(name);
    scores.columns.push_back(std::move(column));
  };
  add("all.a", {1, 2, 3});
  add("all.b", {nan, nan, nan});
  add("present.a", {1, nan, nan});
  add("present.b", {1, 2, nan});
  add("absent.a", {nan, nan, nan});
  add("absent.b", {1});
  add("absent.c", {1, 2, nan, 4});  // longer than the one before it: counted (3)
  add("mrr", {1, 2, 3, 4, 5, 6});
  add("other.x", {1, 2, 3, 4, 5, 6});
  const std::map<std::string, std::size_t> expected = {{"absent", 3}, {"all", 3}, {"present", 2}};
  EXPECT_EQ(kplab::host::SubsetDocCounts(scores), expected);
}

}  // namespace
