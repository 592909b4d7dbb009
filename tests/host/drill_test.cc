// Drill-down into a stored run: runs doc shows a document's references and predictions with their
// present/match flags and scores; runs docs orders documents by a metric. Hand check on examples/tiny
// document 1: predictions "scheduler; batch jobs; interactive queries; cluster; job length; <peos>;
// cluster computing; resource management" against the references "scheduling; batch jobs; interactive
// queries; preemption; cluster computing": scheduler (stem schedul = scheduling's), batch jobs,
// interactive queries and cluster computing match; cluster, job length and resource management do not;
// <peos> is a marker, not a prediction (kplab profile).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "cli_harness.h"

namespace {

namespace fs = std::filesystem;

class Drill : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kplab_drill_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    fs::copy(fs::path(KPLAB_SOURCE_DIR) / "examples" / "tiny", dir_ / "tiny");
    auto o = Run("eval --dataset " + (dir_ / "tiny").string() + " --predictions " +
                 (dir_ / "tiny" / "predictions.txt").string() + " --output csv");
    ASSERT_EQ(o.code, 0) << o.err;
  }
  void TearDown() override { fs::remove_all(dir_); }
  kplab::test::Output Run(const std::string& args) {
    return kplab::test::RunKplab(dir_, "KPLAB_DB=" + (dir_ / "db").string(), args);
  }
  fs::path dir_;
};

TEST_F(Drill, DocumentShowsMatchesAndScores) {
  auto o = Run("runs doc 1 1 --output json");
  ASSERT_EQ(o.code, 0) << o.err;
  const std::string preds =
      "\"predictions\": [{\"surface\": \"scheduler\", \"present\": true, \"matched\": true}, "
      "{\"surface\": \"batch jobs\", \"present\": true, \"matched\": true}, "
      "{\"surface\": \"interactive queries\", \"present\": true, \"matched\": true}, "
      "{\"surface\": \"cluster\", \"present\": true, \"matched\": false}, "
      "{\"surface\": \"job length\", \"present\": true, \"matched\": false}, "
      "{\"surface\": \"cluster computing\", ";
  EXPECT_NE(o.out.find(preds), std::string::npos) << o.out;
  // Porter keeps "preemption" whole (step 4 drops -ion only when m > 1, and "preempt" has m = 1), so it is
  // not the text's "preempts" (stem "preempt"): absent.
  EXPECT_NE(o.out.find("{\"surface\": \"preemption\", \"present\": false, \"matched\": false}"), std::string::npos)
      << o.out;
  EXPECT_NE(o.out.find("\"all.p@5\": 0.6"), std::string::npos) << o.out;  // 3 hits in the top 5
  auto text = Run("runs doc 1 1");
  EXPECT_NE(text.out.find("    1  present  match    scheduler\n"), std::string::npos) << text.out;
}

TEST_F(Drill, DocsAreOrderedByAMetric) {
  // P@5 per document: 3/5, 3/5, 2/5, 2/5, 2/5; worst first keeps document order among ties.
  auto o = Run("runs docs 1 --sort all.p@5 --output csv");
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(o.out, "rank,doc_id,all.p@5\n1,3,0.4\n2,4,0.4\n3,5,0.4\n4,1,0.6\n5,2,0.6\n");
  auto best = Run("runs docs 1 --sort all.p@5 --best --limit 1 --output csv");
  EXPECT_EQ(best.out, "rank,doc_id,all.p@5\n1,1,0.6\n");
}

TEST_F(Drill, ClearErrors) {
  auto doc = Run("runs doc 1 99");
  EXPECT_EQ(doc.code, 1);
  EXPECT_EQ(doc.err, "kplab: run 1 has no document '99' (it has 5, e.g. '1')\n");
  auto metric = Run("runs docs 1 --sort all.nothing");
  EXPECT_EQ(metric.code, 1);
  EXPECT_NE(metric.err.find("run 1 has no per-document column 'all.nothing' (it has "), std::string::npos) << metric.err;
  auto nosort = Run("runs docs 1");
  EXPECT_EQ(nosort.code, 1);
  // The predictions changed after the run: the document shown would not be the one scored.
  std::ofstream(dir_ / "tiny" / "predictions.txt", std::ios::app) << "";
  {
    std::ofstream f(dir_ / "tiny" / "predictions.txt");
    f << "a\nb\nc\nd\ne\n";
  }
  auto changed = Run("runs doc 1 1");
  EXPECT_EQ(changed.code, 2);
  EXPECT_NE(changed.err.find("predictions.txt changed since the run"), std::string::npos) << changed.err;
}

}  // namespace

namespace {

// A run on a file of two splits (--split) and one with pke references (--references) are shown again
// with the same options: the run records how its dataset was read.
TEST(DrillOptions, SplitAndReferencesAreReadAgain) {
  const fs::path dir = fs::temp_directory_path() / ("kplab_drill_opts_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string env = "KPLAB_DB=" + (dir / "db").string();
  const std::string f = "tests/data/formats/";
  auto a = kplab::test::RunKplab(dir, env, "eval --output csv --dataset " + f + "midas/tiny_splits.jsonl --split test "
                                           "--predictions " + f + "hf_predictions.jsonl");
  ASSERT_EQ(a.code, 0) << a.err;
  auto b = kplab::test::RunKplab(dir, env, "eval --output csv --dataset " + f + "pke/Test --references " + f +
                                           "pke/tiny.uncontr.json --predictions examples/tiny/predictions.txt");
  ASSERT_EQ(b.code, 0) << b.err;
  // The other split of the same file is another dataset to the store (its identity mixes in the split):
  // stored beside the first, not refused for "other document ids".
  std::ofstream(dir / "train_preds.txt") << "a;b\nc\n";
  auto c = kplab::test::RunKplab(dir, env, "eval --output csv --dataset " + f + "midas/tiny_splits.jsonl --split train "
                                           "--predictions " + (dir / "train_preds.txt").string());
  EXPECT_EQ(c.code, 0) << c.err;
  for (const char* run : {"1", "2"}) {
    auto docs = kplab::test::RunKplab(dir, env, std::string("runs docs ") + run + " --sort all.p@5 --limit 1 --output csv");
    ASSERT_EQ(docs.code, 0) << docs.err;
    const std::string first = docs.out.substr(docs.out.find('\n') + 1);
    const std::string id = first.substr(first.find(',') + 1, first.find(',', first.find(',') + 1) - first.find(',') - 1);
    auto o = kplab::test::RunKplab(dir, env, std::string("runs doc ") + run + " " + id + " --output json");
    EXPECT_EQ(o.code, 0) << run << ": " << o.err;
    EXPECT_NE(o.out.find("\"references\": [{"), std::string::npos) << o.out;
  }
  fs::remove_all(dir);
}

// Runs store absolute paths, so a document can be shown from any directory (the run was made from a
// relative path in another one).
TEST(DrillPaths, ShownFromAnotherDirectory) {
  const fs::path dir = fs::temp_directory_path() / ("kplab_drill_paths_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "elsewhere");
  const std::string env = "KPLAB_DB=" + (dir / "db").string();
  auto a = kplab::test::RunKplab(dir, env, "eval --output csv --dataset examples/tiny --predictions "
                                           "examples/tiny/predictions.txt");
  ASSERT_EQ(a.code, 0) << a.err;
  const std::string cmd = std::string("cd ") + (dir / "elsewhere").string() + " && " + env + " " + KPLAB_BINARY +
                          " runs doc 1 1 >" + (dir / "out").string() + " 2>&1";
  EXPECT_EQ(std::system(cmd.c_str()), 0);
  std::ifstream in(dir / "out");
  const std::string out((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(out.find("references (5):"), std::string::npos) << out;
  fs::remove_all(dir);
}

}  // namespace
