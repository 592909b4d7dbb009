// Many runs in one command (kplab eval with a pattern or a manifest), the system and seed a path names,
// and runs list's filters. Truth from outside the batch code: each batch run equals the same file
// evaluated alone, and the path rules are hand-written cases.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "cli_harness.h"
#include "evaluate.h"

namespace {

namespace fs = std::filesystem;
using kplab::host::SystemAndSeedFromPath;

TEST(SystemAndSeed, FromPredictionsPaths) {
  struct Case {
    const char* path;
    const char* dataset;
    const char* system;
    std::optional<std::int64_t> seed;
  };
  const Case cases[] = {
      {"predictions/catSeqTG-2RF1/semeval/seed1234.txt", "semeval", "catSeqTG-2RF1", 1234},
      {"predictions/catSeq/inspec/predictions.txt", "inspec", "catSeq", std::nullopt},
      {"outputs/mymodel.txt", "inspec", "mymodel", std::nullopt},
      {"out/catSeq_seed42.txt", "kp20k", "catSeq", 42},
      {"runs/one2set/seed-7/krapivin/preds.jsonl", "krapivin", "one2set", 7},
      {"exp/T5/Test/predictions.txt", "inspec_hulth2003/Test", "T5", std::nullopt},
      {"seed3.txt", "semeval", "seed3", 3},  // nothing else to name the system by
      {"sys/kp20k/myseed5.txt", "kp20k", "myseed5", std::nullopt},  // "seed" inside a word is no seed
  };
  for (const Case& c : cases) {
    const auto got = SystemAndSeedFromPath(c.path, c.dataset);
    EXPECT_EQ(got.system, c.system) << c.path;
    EXPECT_EQ(got.seed, c.seed) << c.path;
  }
}

class Batch : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kplab_batch_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  kplab::test::Output Run(const std::string& args) {
    return kplab::test::RunKplab(dir_, "KPLAB_DB=" + (dir_ / "db").string(), args);
  }
  fs::path dir_;
};

const std::string kBatchShared = "../shared/data";
const std::string kSemeval = kBatchShared + "/kpg_testsets_meng2017/semeval";

TEST_F(Batch, PatternStoresOneRunPerFileEqualToSingleRuns) {
  auto o = Run("eval --dataset " + kSemeval + " --refs-stemmed --predictions '" + kBatchShared +
               "/predictions/catSeqTG-2RF1/semeval/seed*.txt' --output csv");
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.out.find("\n1,ok,catSeqTG-2RF1,1234,semeval,kplab,"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("\n2,ok,catSeqTG-2RF1,5678,semeval,kplab,"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("\n3,ok,catSeqTG-2RF1,9527,semeval,kplab,"), std::string::npos) << o.out;
  int id = 1;
  for (const char* seed : {"1234", "5678", "9527"}) {
    auto alone = Run("eval --no-store --output json --dataset " + kSemeval + " --refs-stemmed --predictions " +
                     kBatchShared + "/predictions/catSeqTG-2RF1/semeval/seed" + seed + ".txt");
    ASSERT_EQ(alone.code, 0) << alone.err;
    auto stored = Run("runs show " + std::to_string(id++) + " --output json");
    ASSERT_EQ(stored.code, 0) << stored.err;
    const auto agg = [](const std::string& s) { return s.substr(s.find("\"aggregates\"")); };
    EXPECT_EQ(agg(stored.out).substr(0, 4000), agg(alone.out).substr(0, 4000)) << seed;
  }
  auto list = Run("runs list --output csv --system 'catSeq*' --metrics all.f1@5.macro_hm");
  ASSERT_EQ(list.code, 0) << list.err;
  EXPECT_NE(list.out.find(",n_docs,seed,all.f1@5.macro_hm\n"), std::string::npos) << list.out;
  EXPECT_NE(list.out.find(",catSeqTG-2RF1,kplab,100,5678,"), std::string::npos) << list.out;
  auto none = Run("runs list --output csv --dataset inspec");
  EXPECT_EQ(none.out, "id,created_at,status,dataset,system,profile,n_docs,seed\n");
}

TEST_F(Batch, ManifestNamesSystemsSeedsAndDatasetsRelativeToItself) {
  fs::create_directories(dir_ / "m");
  std::ofstream(dir_ / "m" / "runs.json") << R"({"runs": [
    {"system": "A", "seed": 1, "dataset": "../../../work/main/examples/tiny", "predictions": "PRED"},
    {"system": "B", "dataset": "TINY", "predictions": "PRED", "profile": "kpeval"}
  ]})";
  // Paths: the first relative to the manifest (checked by resolving it), the second absolute.
  std::string text;
  {
    std::ifstream in(dir_ / "m" / "runs.json");
    text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  const fs::path tiny = fs::path(KPLAB_SOURCE_DIR) / "examples" / "tiny";
  const std::string rel = fs::relative(tiny, dir_ / "m").string();
  text.replace(text.find("../../../work/main/examples/tiny"), 32, rel);
  text.replace(text.find("PRED"), 4, (fs::relative(tiny, dir_ / "m") / "predictions.txt").string());
  text.replace(text.find("TINY"), 4, tiny.string());
  text.replace(text.find("PRED"), 4, (tiny / "predictions.txt").string());
  std::ofstream(dir_ / "m" / "runs.json") << text;
  auto o = Run("eval --manifest " + (dir_ / "m" / "runs.json").string() + " --output csv");
  ASSERT_EQ(o.code, 0) << o.err << text;
  EXPECT_NE(o.out.find("\n1,ok,A,1,tiny,kplab,"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("\n2,ok,B,,tiny,kpeval,"), std::string::npos) << o.out;
  // all.p@5.micro of examples/tiny is 12 / 25 under kplab (hand count, tests/lua_module/api.lua).
  auto show = Run("runs show 1 --output csv");
  EXPECT_NE(show.out.find("all.p@5.micro,0.48\n"), std::string::npos) << show.out;
}

TEST_F(Batch, BadManifestsAndPatternsAreClearErrors) {
  const std::string m = (dir_ / "m.json").string();
  struct Case {
    std::string json, message;
  };
  const std::vector<Case> cases = {
      {"[]", m + ": no runs (expected {\"runs\": [{\"predictions\": PATH, \"dataset\": PATH, \"system\"?: NAME, "
             "\"seed\"?: INTEGER, \"profile\"?: NAME, \"split\"?: NAME, \"references\"?: PATH, \"refs_stemmed\"?: BOOLEAN, "
             "\"source\"?: PATH, \"dataset_format\"?, \"predictions_format\"?, \"hulth_keys\"?, "
             "\"semeval_answers\"?: NAME}, ...]} or the list alone)"},
      {"[{\"predictions\": \"p\"}]", m + ": runs[0]: missing field 'dataset'"},
      {"[{\"predictions\": \"p\", \"dataset\": \"d\", \"seed\": \"1\"}]",
       m + ": runs[0]: field 'seed' must be an integer (got a string)"},
      {"[{\"predictions\": \"p\", \"dataset\": \"d\", \"sytem\": \"x\"}]",
       m + ": runs[0]: unknown field 'sytem' (did you mean 'system'? expected one of: predictions, dataset, "
           "system, seed, profile, split, references, refs_stemmed, source, dataset_format, predictions_format, "
           "hulth_keys, semeval_answers)"},
      {"[{\"predictions\": \"p\", \"dataset\": \"d\"}, {\"predictions\": \"p\", \"dataset\": \"d\"}]",
       m + ": runs[1]: the same predictions, dataset, system, seed, profile and dataset options as an "
           "earlier entry (" + (dir_ / "p").string() +
           ")"},
      {"[{\"predictions\": \"p\", \"dataset\": \"d\", \"predictions\": \"q\"}]",
       m + ": runs[0]: field 'predictions' is given twice"},
      {"[{\"predictions\": \"p\", \"dataset\": \"d\", \"seed\": -7}]",
       m + ": runs[0]: field 'seed' is -7 (expected an integer >= 0)"},
      {"{\"runs\": 3}", m + ": field 'runs' must be a list (expected {\"runs\": [{\"predictions\": PATH, \"dataset\": "
                            "PATH, \"system\"?: NAME, \"seed\"?: INTEGER, \"profile\"?: NAME, \"split\"?: NAME, \"references\"?: PATH, \"refs_stemmed\"?: BOOLEAN, "
             "\"source\"?: PATH, \"dataset_format\"?, \"predictions_format\"?, \"hulth_keys\"?, "
             "\"semeval_answers\"?: NAME}, ...]} or the list alone)"},
  };
  for (const Case& c : cases) {
    std::ofstream(m) << c.json;
    auto o = Run("eval --manifest " + m);
    EXPECT_EQ(o.code, 2) << c.json;  // an input error
    EXPECT_EQ(o.err, "kplab: " + c.message + "\n") << c.json;
  }
  auto both = Run("eval --manifest " + m + " --dataset examples/tiny");
  EXPECT_EQ(both.code, 1);
  EXPECT_NE(both.err.find("--dataset and --manifest exclude each other"), std::string::npos) << both.err;
  auto nothing = Run("eval --dataset examples/tiny --predictions 'examples/tiny/nothing*.txt'");
  EXPECT_EQ(nothing.code, 1);
  EXPECT_NE(nothing.err.find("--predictions 'examples/tiny/nothing*.txt' matches no file"), std::string::npos)
      << nothing.err;
  auto seed = Run("eval --dataset examples/tiny --predictions 'examples/tiny/pred*.txt' --seed 3");
  EXPECT_EQ(seed.code, 1);
  EXPECT_FALSE(fs::exists(dir_ / "db"));
}

TEST_F(Batch, AFailingFileDoesNotStopTheOthers) {
  fs::create_directories(dir_ / "out" / "good");
  fs::create_directories(dir_ / "out" / "short");
  fs::copy_file(fs::path(KPLAB_SOURCE_DIR) / "examples/tiny/predictions.txt", dir_ / "out/good/seed1.txt");
  std::ofstream(dir_ / "out/short/seed1.txt") << "a;b\n";  // 1 line for 5 documents
  auto o = Run("eval --dataset examples/tiny --predictions '" + (dir_ / "out").string() + "/*/seed1.txt' --output csv");
  EXPECT_EQ(o.code, 2) << o.err;  // an input error: the first failure's kind
  EXPECT_NE(o.out.find("\n1,ok,good,1,tiny,kplab,"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("\n0,error,,,"), std::string::npos) << o.out;
  EXPECT_NE(o.err.find("short/seed1.txt"), std::string::npos) << o.err;
}

// A file whose name holds a wildcard character is itself ("catSeq[v2].txt"), not a pattern; a parameter
// given twice is an error, not the last one silently.
TEST_F(Batch, LiteralNamesAndRepeatedParameters) {
  fs::copy_file(fs::path(KPLAB_SOURCE_DIR) / "examples/tiny/predictions.txt", dir_ / "catSeq[v2].txt");
  auto o = Run("eval --no-store --output csv --dataset examples/tiny --predictions '" + (dir_ / "catSeq[v2].txt").string() +
               "' --system v2");
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.out.find("all.p@5.micro,0.48\n"), std::string::npos) << o.out;
  auto twice = Run("eval --no-store --dataset examples/tiny --predictions examples/tiny/predictions.txt "
                   "--param exact.ks=5 --param exact.ks=10");
  EXPECT_EQ(twice.code, 1);
  EXPECT_NE(twice.err.find("parameter exact.ks is given twice"), std::string::npos) << twice.err;
}

}  // namespace
