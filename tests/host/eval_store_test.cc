// The evaluate-and-store seam (host/engine/eval_store.h) and the kind table (exit_code.h) on their own;
// tests/seam/seam_test.py sends the same requests through all five front-ends.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "eval_store.h"
#include "exit_code.h"
#include "kplab/store.h"

namespace fs = std::filesystem;

namespace kplab::host {
namespace {

EvalRequest TinyStoreRequest() {
  EvalRequest req;
  req.dataset_path = std::string(KPLAB_SOURCE_DIR) + "/examples/tiny";
  req.predictions_path = req.dataset_path + "/predictions.txt";
  req.metrics = {"exact"};
  req.threads = 1;
  return req;
}

class EvalStore : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("kplab_eval_store_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST(ParamRules, OneParserOneRule) {
  ParamMap p;
  EXPECT_TRUE(ParseParam("exact.ks=5,M", p).ok());
  EXPECT_EQ(p["exact"]["ks"], "5,M");
  EXPECT_TRUE(ParseParam("rank.alpha=", p).ok());  // an empty value is a value (the plugin's check decides)
  EXPECT_EQ(p["rank"]["alpha"], "");
  EXPECT_TRUE(ParseParam("x.path=a=b.c", p).ok());  // the first '=' splits; the value keeps the rest
  EXPECT_EQ(p["x"]["path"], "a=b.c");
  // Given twice, whatever the values: refused, with the same message whichever way it came.
  Status twice = ParseParam("exact.ks=10", p);
  EXPECT_EQ(twice.kind(), ErrorKind::kUsage);
  EXPECT_EQ(twice.message(), "parameter exact.ks is given twice (expected one value per parameter)");
  EXPECT_EQ(AddDottedParam(p, "exact.ks", "5,M").message(), twice.message());
  EXPECT_EQ(AddParam(p, "exact", "ks", "1").message(), twice.message());
  EXPECT_EQ(p["exact"]["ks"], "5,M");  // the first value stands
  for (const char* bad : {"exactks=5", "exact.ks", "=5", ".ks=5", "exact.=5", "ex=act.ks", ""}) {
    Status st = ParseParam(bad, p);
    EXPECT_EQ(st.kind(), ErrorKind::kUsage) << bad;
    EXPECT_EQ(st.message(), "parameter must be METRIC.NAME=VALUE (got '" + std::string(bad) + "')") << bad;
  }
  for (const char* bad : {"semrp", ".k", "semrp.", ""}) {
    Status st = AddDottedParam(p, bad, "1");
    EXPECT_EQ(st.kind(), ErrorKind::kUsage) << bad;
    EXPECT_EQ(st.message(), "parameter key '" + std::string(bad) + "' (expected METRIC.NAME, e.g. 'semrp.k')");
  }
}

// The table written out as docs/python.md and docs/library.md state it; every kind has one row.
TEST(ErrorForms, EveryKindHasItsForm) {
  const struct {
    ErrorKind kind;
    int exit;
    std::string cls;
  } expected[] = {{ErrorKind::kUsage, 1, "UsageError"},  {ErrorKind::kInput, 2, "InputError"},
                  {ErrorKind::kScript, 3, "ScriptError"}, {ErrorKind::kLimit, 3, "LimitError"},
                  {ErrorKind::kStore, 4, "StoreError"},   {ErrorKind::kInternal, 5, "InternalError"}};
  std::set<int> kinds;
  for (const ErrorForm& f : kErrorForms) kinds.insert(static_cast<int>(f.kind));
  EXPECT_EQ(kinds.size(), std::size(kErrorForms)) << "a kind listed twice";
  EXPECT_EQ(std::size(kErrorForms), std::size(expected));
  for (const auto& e : expected) {
    EXPECT_EQ(FormFor(e.kind).exit_code, e.exit) << ErrorKindName(e.kind);
    EXPECT_EQ(ExitCodeFor(e.kind), e.exit) << ErrorKindName(e.kind);
    EXPECT_EQ(FormFor(e.kind).python_class, e.cls) << ErrorKindName(e.kind);
  }
}

// Every front-end reaches the store through EvaluateAndStore: no other file of theirs saves a run or
// scores one itself (the seam is the one place the rule "a failed run is recorded" lives).
TEST(ErrorForms, FrontEndsCallTheSeam) {
  const std::string src = KPLAB_SOURCE_DIR;
  for (const char* file : {"/host/cli/cli.cc", "/host/capi/c_api.cc", "/host/python/kplab_py.cc",
                           "/host/engine/lua_script.cc"}) {
    std::ifstream in(src + file);
    std::stringstream text;
    text << in.rdbuf();
    const std::string s = text.str();
    ASSERT_FALSE(s.empty()) << file;
    EXPECT_NE(s.find("EvaluateAndStore("), std::string::npos) << file;
    EXPECT_EQ(s.find("EvaluateCorpus("), std::string::npos) << file << " scores without the seam";
    EXPECT_EQ(s.find("Evaluate(req"), std::string::npos) << file << " scores without the seam";
    // The only SaveRun calls left are merges' (not an evaluation) and a RunSink's, forwarding the seam's.
    for (std::size_t at = 0; (at = s.find("SaveRun(", at)) != std::string::npos; ++at) {
      const std::string line = s.substr(s.rfind('\n', at), s.find('\n', at) - s.rfind('\n', at));
      EXPECT_TRUE(line.find("SaveRun(merged->run") != std::string::npos ||
                  line.find("SaveRun(run, scores, aggregates, slots)") != std::string::npos)
          << file << ": a run saved outside the seam:" << line;
    }
  }
}

TEST_F(EvalStore, StoresAGoodRunWithItsSlots) {
  PathSink sink((dir_ / "runs.db").string());
  auto stored = EvaluateAndStore(TinyStoreRequest(), nullptr, &sink);
  ASSERT_TRUE(stored.ok()) << stored.error().message;
  EXPECT_EQ(stored->run_id, 1);
  EXPECT_EQ(stored->result.run.id, 1);
  EXPECT_FALSE(stored->result.slots.empty());
  auto store = RunStore::Open((dir_ / "runs.db").string());
  ASSERT_TRUE(store.ok());
  auto run = store->GetRun(1);
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->status, "ok");
  EXPECT_EQ(run->dataset_path, fs::weakly_canonical(std::string(KPLAB_SOURCE_DIR) + "/examples/tiny").string());
  // The run (the default metrics: streamed, design note 72) keeps its documents' ids, not its corpus,
  // and stores them as the documents' ids: the Meng files' line numbers, 1 to 5.
  EXPECT_TRUE(stored->result.run.doc_ids.owned());
  EXPECT_EQ(run->doc_ids, (DocIds{"1", "2", "3", "4", "5"}));
  EXPECT_EQ(stored->result.run.doc_ids, run->doc_ids);
  // A run of a corpus the caller holds (the library front-ends) views that corpus's ids instead of copying
  // them (design note 68), and stores the same.
  auto corpus = LoadCorpus(TinyStoreRequest());
  ASSERT_TRUE(corpus.ok()) << corpus.error().message;
  auto held = EvaluateAndStore(TinyStoreRequest(), std::make_shared<const Corpus>(std::move(*corpus)), &sink);
  ASSERT_TRUE(held.ok()) << held.error().message;
  EXPECT_FALSE(held->result.run.doc_ids.owned());
  EXPECT_EQ(held->result.run.doc_ids, run->doc_ids);
}

TEST_F(EvalStore, RecordsAFailedRunAndSaysSo) {
  EvalRequest req = TinyStoreRequest();
  req.plugin_dirs = {std::string(KPLAB_SOURCE_DIR) + "/tests/seam/plugins"};
  req.metrics = {"fails"};
  const std::string db = (dir_ / "runs.db").string();
  PathSink sink(db);
  bool scored = false;
  SeamHooks hooks;
  hooks.scored = [&](const EvalResult& r) { scored = !r.errors.empty(); };
  auto stored = EvaluateAndStore(req, nullptr, &sink, hooks);
  ASSERT_FALSE(stored.ok());
  EXPECT_TRUE(scored) << "the hook sees the failed run before it is stored";
  EXPECT_EQ(stored.error().kind, ErrorKind::kScript);
  const std::string& m = stored.error().message;
  EXPECT_EQ(m.find(req.plugin_dirs[0] + "/fails.lua:5: kaput 7 (while scoring document '1')"), 0u) << m;
  EXPECT_NE(m.find("\nstack traceback:\n"), std::string::npos) << m;
  EXPECT_TRUE(m.ends_with("\nrun 1 recorded as failed in " + db)) << m;
  auto store = RunStore::Open(db);
  ASSERT_TRUE(store.ok());
  auto run = store->GetRun(1);
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->status, "failed");
  EXPECT_EQ(run->error.find(req.plugin_dirs[0] + "/fails.lua:5: kaput 7"), 0u) << run->error;
  EXPECT_TRUE(store->GetAggregates(1)->empty());
  // Without a sink: the same message without the record.
  auto unstored = EvaluateAndStore(req, nullptr, nullptr);
  ASSERT_FALSE(unstored.ok());
  EXPECT_EQ(unstored.error().message + "\nrun 1 recorded as failed in " + db, m);
}

TEST_F(EvalStore, RequestErrorsStoreNothing) {
  const std::string db = (dir_ / "runs.db").string();
  for (auto tweak : {+[](EvalRequest& r) { r.metrics = {"nosuch"}; }, +[](EvalRequest& r) { r.profile = "nope"; },
                     +[](EvalRequest& r) { r.params["exact"]["nosuch"] = "1"; },
                     +[](EvalRequest& r) { r.predictions_path += ".missing"; }}) {
    EvalRequest req = TinyStoreRequest();
    tweak(req);
    PathSink sink(db);
    auto stored = EvaluateAndStore(req, nullptr, &sink);
    ASSERT_FALSE(stored.ok());
    EXPECT_FALSE(fs::exists(db)) << stored.error().message << ": the store is opened only to save";
  }
}

TEST_F(EvalStore, AStoreThatCannotBeOpenedIsAStoreError) {
  fs::create_directories(dir_ / "a-directory.db");
  PathSink sink((dir_ / "a-directory.db").string());
  auto stored = EvaluateAndStore(TinyStoreRequest(), nullptr, &sink);
  ASSERT_FALSE(stored.ok());
  EXPECT_EQ(stored.error().kind, ErrorKind::kStore) << stored.error().message;
  EXPECT_EQ(ExitCodeFor(stored.error().kind), 4);
}

}  // namespace
}  // namespace kplab::host
