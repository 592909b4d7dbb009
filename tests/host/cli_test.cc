// End-to-end tests of the kplab executable: exact output, exit codes, stored runs. Expected numbers
// are worked out by hand in the comments from examples/tiny.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cmath>
#include <cstdio>
#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "cli_harness.h"

namespace {

namespace fs = std::filesystem;

using kplab::test::Output;
using kplab::test::Slurp;

class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("kplab_cli_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    db_ = (dir_ / "runs.db").string();
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Runs kplab with args (a shell fragment), stdin from `input`.
  Output Run(const std::string& args, const std::string& input = "") {
    return kplab::test::RunKplab(dir_, "KPLAB_DB=" + db_, args, input);
  }

  fs::path dir_;
  std::string db_;
};

constexpr const char* kCliTiny =
    "eval --dataset examples/tiny --predictions examples/tiny/predictions.txt --system example";

// Per-document values from `runs export` as doc_id -> metric -> value text.
std::map<std::string, std::map<std::string, double>> ParseCsv(const std::string& csv) {
  std::map<std::string, std::map<std::string, double>> out;
  std::istringstream in(csv);
  std::string line;
  std::getline(in, line);
  std::vector<std::string> header;
  {
    std::istringstream h(line);
    std::string f;
    while (std::getline(h, f, ',')) header.push_back(f);
  }
  while (std::getline(in, line)) {
    std::istringstream r(line);
    std::string f, id;
    std::getline(r, id, ',');
    for (std::size_t c = 1; std::getline(r, f, ','); ++c) {
      if (!f.empty()) out[id][header[c]] = std::stod(f);
    }
  }
  return out;
}

TEST_F(Cli, EvalTinyExampleMatchesHandCalculation) {
  Output o = Run(std::string(kCliTiny) + " --output json");
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(o.out.rfind("{\"run_id\": 1, \"dataset\": \"tiny\", \"system\": \"example\", \"profile\": \"kplab\", "
                        "\"n_docs\": 5, \"n_docs_by_subset\": {\"absent\": 5, \"all\": 5, \"present\": 5}, "
                        "\"aggregates\": {",
                        0),
            0u)
      << o.out;
  Output e = Run("runs export 1");
  ASSERT_EQ(e.code, 0) << e.err;
  auto docs = ParseCsv(e.out);
  // Document 1. References (kplab profile, nltk Porter): scheduling -> "schedul" (present: the source
  // has "scheduler" -> "schedul"), batch jobs, interactive queries (present); preemption -> "preemption"
  // (absent: step 4 needs m > 1 to drop -ion, and the source's "preempts" -> "preempt"), cluster
  // computing (absent). Predictions after dropping <peos>: scheduler (hit: same
  // stem key as "scheduling"), batch jobs (hit), interactive queries (hit), cluster, job length,
  // cluster computing (hit), resource management: flags 1 1 1 0 0 1 0, n = 7, R = 5.
  auto& d1 = docs["1"];
  EXPECT_DOUBLE_EQ(d1["all.p@5"], 3.0 / 5);
  EXPECT_DOUBLE_EQ(d1["all.r@5"], 3.0 / 5);
  EXPECT_DOUBLE_EQ(d1["all.p@10"], 4.0 / 10);
  EXPECT_DOUBLE_EQ(d1["all.r@10"], 4.0 / 5);
  EXPECT_DOUBLE_EQ(d1["all.p@M"], 4.0 / 7);
  EXPECT_DOUBLE_EQ(d1["all.f1@M"], 2 * (4.0 / 7) * (4.0 / 5) / (4.0 / 7 + 4.0 / 5));
  // Present: predictions scheduler, batch jobs, interactive queries, cluster, job length (3 hits);
  // 3 present references. Absent: cluster computing (hit), resource management; 2 absent references.
  EXPECT_DOUBLE_EQ(d1["present.p@5"], 3.0 / 5);
  EXPECT_DOUBLE_EQ(d1["present.r@5"], 1.0);
  EXPECT_DOUBLE_EQ(d1["absent.p@5"], 1.0 / 5);
  EXPECT_DOUBLE_EQ(d1["absent.r@5"], 1.0 / 2);
  EXPECT_DOUBLE_EQ(d1["absent.p@M"], 1.0 / 2);
  // AP@M: hits at ranks 1, 2, 3, 6 -> (1/1 + 2/2 + 3/3 + 4/6) / min(R=5, M=7).
  EXPECT_DOUBLE_EQ(d1["all.ap@M"], (1 + 1 + 1 + 4.0 / 6) / 5);
  EXPECT_DOUBLE_EQ(d1["all.mrr"], 1.0);
  // NDCG@5: hits at 1, 2, 3 -> DCG = 1 + 1/log2(3) + 1/2; ideal = 5 hits at the top (5 references).
  const double dcg = 1 + 1 / std::log2(3.0) + 0.5;
  const double ideal = 1 + 1 / std::log2(3.0) + 0.5 + 1 / std::log2(5.0) + 1 / std::log2(6.0);
  EXPECT_DOUBLE_EQ(d1["all.ndcg@5"], dcg / ideal);
  // Document 2: references readability, patient leaflets, readability formulas, health literacy (all
  // present). Predictions: patient information leaflets, readability formulas (hit), sentence length,
  // readability (hit), health literacy (hit), medical communication: flags 0 1 0 1 1 0.
  auto& d2 = docs["2"];
  EXPECT_DOUBLE_EQ(d2["all.p@5"], 3.0 / 5);
  EXPECT_DOUBLE_EQ(d2["all.r@5"], 3.0 / 4);
  EXPECT_DOUBLE_EQ(d2["all.mrr"], 1.0 / 2);
  // R-precision, R = 4: the first 4 predictions. substr: "patient inform leaflet" is no substring of
  // a reference's stems nor contains one ("patient leaflet" is not contiguous in it); hits: readabl
  // formula, readabl -> 2/4 (sentenc length matches nothing).
  EXPECT_DOUBLE_EQ(d2["all.rprec_substr"], 2.0 / 4);
  EXPECT_DOUBLE_EQ(d2["all.rprec_zg"], 2.0 / 4);
}

TEST_F(Cli, PrmuPluginOnTinyExample) {
  Output o = Run(std::string(kCliTiny) + " --metrics prmu --output json");
  ASSERT_EQ(o.code, 0) << o.err;
  auto docs = ParseCsv(Run("runs export 1").out);
  // Document 1's references against its source: scheduling, batch jobs, interactive queries occur
  // (Present); "preemption" (stem preemption) does not, and no other word of it (Unseen); "cluster
  // computing": "cluster" occurs, "computing" does not (Mixed). So P 3/5, R 0, M 1/5, U 1/5.
  auto& d1 = docs["1"];
  EXPECT_DOUBLE_EQ(d1["refs.prmu_P"], 3.0 / 5);
  EXPECT_DOUBLE_EQ(d1["refs.prmu_R"], 0.0);
  EXPECT_DOUBLE_EQ(d1["refs.prmu_M"], 1.0 / 5);
  EXPECT_DOUBLE_EQ(d1["refs.prmu_U"], 1.0 / 5);
}

// The plugin shown in README.md ("Writing a metric") works as shown.
TEST_F(Cli, ReadmePluginSnippetRuns) {
  const std::string readme = Slurp(fs::path(KPLAB_SOURCE_DIR) / "README.md");
  const auto section = readme.find("## Writing a metric");
  ASSERT_NE(section, std::string::npos);
  const auto begin = readme.find("```lua\n", section);
  const auto end = readme.find("```", begin + 7);
  ASSERT_NE(begin, std::string::npos);
  fs::create_directories(dir_ / "mydir");
  std::ofstream(dir_ / "mydir" / "hits3.lua") << readme.substr(begin + 7, end - begin - 7);
  Output o = Run(std::string(kCliTiny) + " --plugins " + (dir_ / "mydir").string() + " --metrics hits3 --output csv");
  ASSERT_EQ(o.code, 0) << o.err;
  // Hits in the first 3 predictions (hand count, see EvalTinyExampleMatchesHandCalculation and
  // examples/tiny): doc 1: 3; doc 2: readability formulas -> 1; doc 3: graph neural network,
  // traffic speed, road network vs references graph neural networks, traffic speed prediction ... -> 1;
  // doc 4: soil moisture, low cost radar, scattering model -> 2; doc 5: code review, review comments,
  // open source projects -> 2. Mean (3 + 1 + 1 + 2 + 2) / 5.
  EXPECT_EQ(o.out, "metric,value\nall.hits@3,1.8\n");
}

// The same predictions as JSONL ranked lists with scores, keyed by document id in reverse order, give
// the same numbers as the line file (alignment by id).
TEST_F(Cli, JsonlPredictionsAlignById) {
  const std::string base = "eval --dataset examples/tiny --no-store --output json --system x --predictions ";
  Output a = Run(base + "examples/tiny/predictions.txt");
  Output b = Run(base + "tests/data/cli/tiny_ranked_reversed.jsonl");
  ASSERT_EQ(a.code, 0) << a.err;
  ASSERT_EQ(b.code, 0) << b.err;
  EXPECT_EQ(a.out, b.out);
}

// Hostile plugins and options found in review: each gives a clear error and a documented exit code.
TEST_F(Cli, HostileInputsFailCleanly) {
  const std::string plugins = " --plugins tests/data/cli/hostile --no-store";
  Output o = Run(std::string(kCliTiny) + plugins + " --metrics hog --memory-limit 1 --threads 2");
  EXPECT_EQ(o.code, 3) << o.err;
  EXPECT_NE(o.err.find("tests/data/cli/hostile/hog.lua: memory limit of 1 MiB exceeded"), std::string::npos) << o.err;
  o = Run(std::string(kCliTiny) + plugins + " --metrics bigdcg");
  EXPECT_EQ(o.code, 3) << o.err;
  EXPECT_NE(o.err.find("n_relevant must be <= 16777216"), std::string::npos) << o.err;
  // Huge numbers in names sort; infinities are null in JSON; the aggregate's metatable never runs
  // (its value is not a number: null).
  o = Run(std::string(kCliTiny) + plugins + " --metrics oddnames --output json");
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.out.find("\"aggregates\": {\"all.inf\": null, \"all.meta\": null, \"all.x@5\": 2}"),
            std::string::npos)
      << o.out;
  o = Run(std::string(kCliTiny) + " --threads abc");
  EXPECT_EQ(o.code, 1);
  EXPECT_EQ(o.err, "kplab: --threads must be an integer from 1 to 64 (got 'abc') (see 'kplab help')\n");
  o = Run(std::string(kCliTiny) + " --memory-limit -5");
  EXPECT_EQ(o.code, 1);
  EXPECT_EQ(o.err, "kplab: --memory-limit must be an integer from 0 to 1048576 (got '-5') (see 'kplab help')\n");
  o = Run(std::string(kCliTiny) + " --metrics exact,exact");
  EXPECT_EQ(o.code, 1);
  EXPECT_EQ(o.err, "kplab: metric 'exact' is listed twice\n");
  o = Run("runs show 99999999999999999999");
  EXPECT_EQ(o.code, 1);
}

TEST_F(Cli, TableOutputAndRunsList) {
  Output o = Run(kCliTiny);
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(o.out.rfind("run 1  dataset tiny (5 docs)  system example  profile kplab\n", 0), 0u) << o.out;
  EXPECT_NE(o.out.find("\nmetric"), std::string::npos);
  Output l = Run("runs list");
  ASSERT_EQ(l.code, 0) << l.err;
  EXPECT_NE(l.out.find("ok      tiny              example               kplab"), std::string::npos) << l.out;
  Output rm = Run("runs rm 1");
  EXPECT_EQ(rm.code, 0);
  EXPECT_EQ(rm.out, "removed run 1\n");
  Output show = Run("runs show 1");
  EXPECT_EQ(show.code, 4);
}

// A profile with knobs and a long system name are wider than the list's usual columns: every column
// still starts at the same place in the header and in each row (the "docs" column is found by its
// header's end and each row's "5" under it).
TEST_F(Cli, RunsListColumnsFitTheLongestName) {
  ASSERT_EQ(Run(std::string(kCliTiny) + " --metrics exact").code, 0);
  Output o =
      Run("eval --dataset examples/tiny --predictions examples/tiny/predictions.txt --metrics exact --system "
          "a-system-name-longer-than-twenty --profile kenchan --knob max_pieces=50 --knob one_word_preds=first");
  ASSERT_EQ(o.code, 0) << o.err;
  Output l = Run("runs list");
  ASSERT_EQ(l.code, 0) << l.err;
  std::vector<std::string> lines;
  for (std::size_t at = 0, nl; (nl = l.out.find('\n', at)) != std::string::npos; at = nl + 1) {
    lines.push_back(l.out.substr(at, nl - at));
  }
  ASSERT_EQ(lines.size(), 3u) << l.out;
  const std::size_t docs_end = lines[0].find("docs") + 4;
  for (const std::string& row : {lines[1], lines[2]}) {
    ASSERT_GE(row.size(), docs_end) << l.out;
    EXPECT_EQ(row.substr(docs_end - 1, 1), "5") << l.out;  // 5 documents, right-aligned under "docs"
    EXPECT_EQ(row.find("kenchan+max_pieces=50+one_word_preds=first") == std::string::npos ? row.find("kplab ")
                                                                                          : row.find("kenchan+"),
              lines[0].find("profile"))
        << l.out;
  }
}

TEST_F(Cli, ScriptErrorReportsFileLineAndStoresFailedRun) {
  Output o = Run(std::string(kCliTiny) + " --plugins tests/data/cli/failing --metrics boom");
  EXPECT_EQ(o.code, 3);
  // The message names the document the plugin failed on.
  EXPECT_NE(o.err.find("kplab: tests/data/cli/failing/boom.lua:4: no luck with document 3 (while scoring document "
                       "'3')\n"),
            std::string::npos)
      << o.err;
  EXPECT_NE(o.err.find("stack traceback:"), std::string::npos) << o.err;
  Output l = Run("runs list --output json");
  EXPECT_NE(l.out.find("\"status\": \"failed\""), std::string::npos) << l.out;
}

TEST_F(Cli, UserPluginOverridesShippedOne) {
  Output o = Run(std::string(kCliTiny) + " --plugins tests/data/cli/failing --metrics exact --output csv");
  ASSERT_EQ(o.code, 0) << o.err;
  // Mean number of deduplicated references over the 5 documents: (5 + 4 + 4 + 4 + 4) / 5.
  EXPECT_EQ(o.out, "metric,value\nall.n_refs,4.2\n");
}

TEST_F(Cli, UsageErrors) {
  Output o = Run("eval --dataset examples/tiny");
  EXPECT_EQ(o.code, 1);
  EXPECT_EQ(o.err, "kplab: missing required option --predictions (see 'kplab help')\n");
  o = Run(std::string(kCliTiny) + " --profile nope");
  EXPECT_EQ(o.code, 1);
  EXPECT_EQ(o.err, "kplab: unknown profile 'nope' (expected one of: kplab, kpeval, kenchan, exhird, semrp-standalone, kenchan+one2set)\n");
  o = Run(std::string(kCliTiny) + " --metrics nope");
  EXPECT_EQ(o.code, 1);  // a misspelt metric is a usage error
  EXPECT_EQ(o.err.rfind("kplab: unknown metric 'nope' (expected one of: ", 0), 0u) << o.err;
  o = Run("frobnicate");
  EXPECT_EQ(o.code, 1);
  EXPECT_EQ(o.err, "kplab: unknown command 'frobnicate' (see 'kplab help')\n");
}

TEST_F(Cli, MisalignedPredictionsAreRejectedAndNothingIsStored) {
  const fs::path bad = dir_ / "four_lines.txt";
  std::ofstream(bad) << "a\nb\nc\nd\n";
  Output o = Run("eval --dataset examples/tiny --predictions " + bad.string());
  EXPECT_EQ(o.code, 2);
  EXPECT_EQ(o.err.rfind("kplab: " + bad.string() + ":", 0), 0u) << o.err;
  EXPECT_FALSE(fs::exists(db_));
}

TEST_F(Cli, StemReadsStdin) {
  // nltk 3.8: PorterStemmer().stem: running -> run, skies -> sky (irregular form), dying -> die;
  // ORIGINAL_ALGORITHM: skies -> ski.
  Output o = Run("stem", "running\nskies dying\n");
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(o.out, "run\nsky die\n");
  o = Run("stem --mode original", "skies\n");
  EXPECT_EQ(o.out, "ski\n");
}

TEST_F(Cli, ProfilesDiff) {
  Output o = Run("profiles diff kenchan kenchan+one2set");
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.out.find("empty_line_is_none"), std::string::npos) << o.out;
  EXPECT_EQ(o.out.find("max_pieces"), std::string::npos) << o.out;  // both cut at 200
  Output l = Run("profiles");
  EXPECT_NE(l.out.find("kplab "), std::string::npos);
  EXPECT_NE(l.out.find("kenchan+one2set"), std::string::npos);
}

TEST_F(Cli, RunScript) {
  const fs::path script = dir_ / "count.lua";
  std::ofstream(script) << "local c = kp.load{dataset = 'examples/tiny', predictions = 'examples/tiny/predictions.txt'}\n"
                           "print(#c, #c:doc(1).refs, arg[1])\n"
                           "print(c:doc(1).refs:get(1).key)\n";
  Output o = Run("run " + script.string() + " hello");
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(o.out, "5\t5\thello\nschedul\n");
  std::ofstream(script) << "local x = 1\nreturn undefined_thing + x\n";
  o = Run("run " + script.string());
  EXPECT_EQ(o.code, 3);
  EXPECT_NE(o.err.find(script.string() + ":2: undefined global 'undefined_thing'"), std::string::npos) << o.err;
}

}  // namespace
