// scripts/analysis/meta_eval.lua end to end: five systems scored on the fixture of tests/data/meta_eval,
// human judgments from CSV (scores) and JSONL (labels), every statistic compared with
// tests/data/meta_eval/expected.txt (scipy / numpy, tests/reference/gen_meta_eval.py, metric values from
// the independent tests/reference/kpref.py); hostile judgment files and run selections with their exact
// errors; kp.stats.williams and kp.stats.draw_indices through the sandbox.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "../core/stats_fixture.h"
#include "cli_harness.h"

namespace {

namespace fs = std::filesystem;
using kplab::stats::test::CasesOf;
using kplab::stats::test::FixtureCase;
using kplab::stats::test::LoadFixture;
using kplab::test::Output;
using kplab::test::Slurp;

const std::vector<FixtureCase>& Expected() {
  static const std::vector<FixtureCase> cases = LoadFixture("../meta_eval/expected.txt");
  return cases;
}

const char kMetrics[] = "all.f1@M,all.p@5,all.ndcg@M,all.mrr";
const char kSystems[][5] = {"sysA", "sysB", "sysC", "sysD", "sysE"};

void ExpectClose(double got, double want, const std::string& what) {
  if (std::isnan(want)) {
    EXPECT_TRUE(std::isnan(got)) << what << ": got " << got << ", expected nan";
    return;
  }
  EXPECT_NEAR(got, want, 1e-9 * std::max(1.0, std::fabs(want))) << what;
}

class MetaEval : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("kplab_meta_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    env_ = "KPLAB_DB=" + (dir_ / "runs.db").string();
  }
  void TearDown() override { fs::remove_all(dir_); }
  Output Run(const std::string& args) { return kplab::test::RunKplab(dir_, env_, args); }
  fs::path Write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name, std::ios::binary) << text;
    return dir_ / name;
  }
  // Runs 1..5: sysA..sysE on the fixture dataset.
  void Evaluate() {
    for (const char* s : kSystems) {
      const Output o = Run(std::string("eval --dataset tests/data/meta_eval --predictions tests/data/meta_eval/") + s +
                           ".txt --metrics exact,rank --system " + s);
      ASSERT_EQ(o.code, 0) << o.err;
    }
  }
  Output Meta(const std::string& args, const std::string& out = "out") {
    return Run("run --allow-write " + dir_.string() + " scripts/analysis/meta_eval.lua --metrics " + kMetrics +
               " --n 300 --seed 7 --confidence 0.9 --out " + (dir_ / out).string() + " " + args);
  }
  // level|metric|versus|statistic -> value, from meta_eval.tsv.
  std::map<std::string, double> Table(const std::string& out = "out") {
    std::map<std::string, double> t;
    std::istringstream in(Slurp(dir_ / out / "meta_eval.tsv"));
    std::string line;
    std::getline(in, line);
    EXPECT_EQ(line, "level\tmetric\tversus\tstatistic\tvalue");
    while (std::getline(in, line)) {
      std::vector<std::string> f;
      std::istringstream ls(line);
      for (std::string x; std::getline(ls, x, '\t');) f.push_back(x);
      if (f.size() != 5) {
        ADD_FAILURE() << "bad line " << line;
        continue;
      }
      t[f[0] + "|" + f[1] + "|" + f[2] + "|" + f[3]] = std::strtod(f[4].c_str(), nullptr);
    }
    return t;
  }
  fs::path dir_;
  std::string env_;
};

double Get(const std::map<std::string, double>& t, const std::string& key) {
  const auto it = t.find(key);
  if (it == t.end()) {
    ADD_FAILURE() << "no row " << key;
    return std::nan("");
  }
  return it->second;
}

TEST_F(MetaEval, EveryStatisticMatchesScipy) {
  Evaluate();
  const Output o = Meta("--judgments tests/data/meta_eval/judgments.csv");
  ASSERT_EQ(o.code, 0) << o.err;
  const auto t = Table();
  int checked = 0;
  for (const FixtureCase& c : CasesOf(Expected(), "meta_level")) {
    EXPECT_EQ(Get(t, c.name + "|||n"), c.num("n")) << c.name;
  }
  for (const FixtureCase& c : CasesOf(Expected(), "meta_metric")) {
    const std::string level = c.name.substr(0, c.name.find(':'));
    const std::string metric = c.name.substr(c.name.find(':') + 1);
    for (const auto& [key, vals] : c.values) {
      ExpectClose(Get(t, level + "|" + metric + "||" + key), c.num(key), c.name + " " + key);
      ++checked;
    }
  }
  for (const FixtureCase& c : CasesOf(Expected(), "meta_williams")) {
    const std::size_t a = c.name.find(':'), b = c.name.find(':', a + 1);
    const std::string prefix = c.name.substr(0, a) + "|" + c.name.substr(a + 1, b - a - 1) + "|" + c.name.substr(b + 1) + "|";
    for (const auto& [key, vals] : c.values) {
      ExpectClose(Get(t, prefix + key), c.num(key), c.name + " " + key);
      ++checked;
    }
  }
  // 2 levels x 4 metrics x 3 coefficients x 5 statistics + 2 levels x 6 pairs x (8 Williams numbers
  // + 3 coefficients x 4 numbers of the bootstrapped difference).
  EXPECT_EQ(checked, 2 * 4 * 15 + 2 * 6 * (8 + 12));
  // The observations: human means and metric values as kpref.py computes them, in the file's order.
  std::istringstream items(Slurp(dir_ / "out" / "meta_eval_items.tsv"));
  std::string line;
  std::getline(items, line);
  EXPECT_EQ(line, "doc_id\tsystem\thuman\tall.f1@M\tall.p@5\tall.ndcg@M\tall.mrr");
  for (const FixtureCase& c : CasesOf(Expected(), "meta_item")) {
    ASSERT_TRUE(std::getline(items, line)) << c.name;
    std::istringstream ls(line);
    std::string doc, sys;
    std::getline(ls, doc, '\t');
    std::getline(ls, sys, '\t');
    EXPECT_EQ(doc + ":" + sys, c.name);
    double v;
    ls >> v;
    ExpectClose(v, c.num("human"), c.name + " human");
    for (double want : c.nums("values")) {
      ls >> v;
      ExpectClose(v, want, c.name + " metric");
    }
  }
  EXPECT_FALSE(std::getline(items, line)) << "extra item " << line;
  // By hand from judgments.csv: document 1, sysA was scored 3 and 4 by a1 and a2.
  EXPECT_NE(Slurp(dir_ / "out" / "meta_eval_items.tsv").find("\n1\tsysA\t3.5\t"), std::string::npos);
  // 37 judged pairs of 8 documents x 5 systems (three pairs were not judged); 5 systems.
  EXPECT_EQ(Get(t, "document|||n"), 37);
  EXPECT_EQ(Get(t, "system|||n"), 5);
  // The report names the variant of tau.
  EXPECT_NE(o.out.find("| metric | τ-b | CI | p |"), std::string::npos) << o.out;
}

TEST_F(MetaEval, LabelsInJsonlGiveTheSameNumbersAsScoresInCsv) {
  Evaluate();
  ASSERT_EQ(Meta("--judgments tests/data/meta_eval/judgments.csv", "csv").code, 0);
  const Output o = Meta("--judgments tests/data/meta_eval/judgments.jsonl --labels poor=1,weak=2,fair=3,good=4,excellent=5",
                        "jsonl");
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(Slurp(dir_ / "jsonl" / "meta_eval.tsv"), Slurp(dir_ / "csv" / "meta_eval.tsv"));
  EXPECT_EQ(Slurp(dir_ / "jsonl" / "meta_eval_items.tsv"), Slurp(dir_ / "csv" / "meta_eval_items.tsv"));
}

TEST_F(MetaEval, ByteOrderMarkAndCrlfReadAsPlainCsv) {
  Evaluate();
  ASSERT_EQ(Meta("--judgments tests/data/meta_eval/judgments.csv", "plain").code, 0);
  std::string text = Slurp(fs::path(KPLAB_SOURCE_DIR) / "tests/data/meta_eval/judgments.csv");
  std::string crlf = "\xEF\xBB\xBF";
  for (char c : text) crlf += c == '\n' ? std::string("\r\n") : std::string(1, c);
  const fs::path f = Write("excel.csv", crlf);
  const Output o = Meta("--judgments " + f.string(), "excel");
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(Slurp(dir_ / "excel" / "meta_eval.tsv"), Slurp(dir_ / "plain" / "meta_eval.tsv"));
}

TEST_F(MetaEval, KeyphraseJudgmentsAreAveragedPerDocumentAndSystem) {
  Evaluate();
  // Quoted keyphrases with a comma and a doubled quote; document 2 of sysA: (1 + 0 + 0.5) / 3 = 0.5.
  const fs::path f = Write("kp.csv",
      "doc_id,system,keyphrase,score\n"
      "1,sysA,\"neural machine translation\",1\n"
      "1,sysA,\"attention, mechanism\",0\n"
      "2,sysA,keyphrase extraction,1\n"
      "2,sysA,\"the \"\"word\"\" graph\",0\n"
      "2,sysA,candidate ranking,0.5\n"
      "1,sysB,translation,0.25\n"
      "2,sysB,phrases,0\n"
      "1,sysC,attention,0\n"
      "2,sysC,word graph,1\n"
      "1,sysD,translation,0\n"
      "2,sysD,graph,0.75\n"
      "1,sysE,we translate,0\n"
      "\n"
      " 2\t, sysE , we rank ,  0 \n");  // spaces and tabs around fields are trimmed; blank lines ignored
  const Output o = Meta("--judgments " + f.string());
  ASSERT_EQ(o.code, 0) << o.err;
  const std::string items = Slurp(dir_ / "out" / "meta_eval_items.tsv");
  EXPECT_NE(items.find("\n1\tsysA\t0.5\t"), std::string::npos) << items;
  EXPECT_NE(items.find("\n2\tsysA\t0.5\t"), std::string::npos) << items;
  EXPECT_NE(items.find("\n1\tsysB\t0.25\t"), std::string::npos) << items;
  const auto t = Table();
  EXPECT_EQ(Get(t, "document|||n"), 10);
  EXPECT_EQ(Get(t, "system|||n"), 5);
}

TEST_F(MetaEval, JsonlIntegerIdsEscapesAndFormatOverride) {
  Evaluate();
  // doc_id and annotator as JSON integers; \u escapes (a surrogate pair too) in a keyphrase; a .txt
  // file read as JSONL by --format. Document 1 of sysA: (1 + 0) / 2; of sysB: 0.5.
  const fs::path f = Write("judgments.txt",
      "{\"doc_id\": 1, \"system\": \"sysA\", \"annotator\": 7, \"keyphrase\": \"caf\\u00e9 \\ud83d\\ude00\", \"score\": 1}\n"
      "{\"doc_id\": 1, \"system\": \"sysA\", \"annotator\": 8, \"keyphrase\": \"caf\\u00e9 \\ud83d\\ude00\", \"score\": 0}\n"
      "{\"doc_id\": 1, \"system\": \"sysB\", \"annotator\": 7, \"keyphrase\": \"x\", \"score\": 0.5}\n"
      "{\"doc_id\": 2, \"system\": \"sysB\", \"annotator\": 7, \"keyphrase\": \"x\", \"score\": 1e0}\n"
      "{\"doc_id\": 2, \"system\": \"sysC\", \"annotator\": 7, \"keyphrase\": \"x\", \"score\": -0.25}\n");
  const Output o = Meta("--judgments " + f.string() + " --format jsonl");
  ASSERT_EQ(o.code, 0) << o.err;
  const std::string items = Slurp(dir_ / "out" / "meta_eval_items.tsv");
  EXPECT_NE(items.find("\n1\tsysA\t0.5\t"), std::string::npos) << items;
  EXPECT_NE(items.find("\n2\tsysB\t1\t"), std::string::npos) << items;
  EXPECT_NE(items.find("\n2\tsysC\t-0.25\t"), std::string::npos) << items;
  // The same annotator twice on one keyphrase is a duplicate, found through the escapes.
  const fs::path g = Write("dup.jsonl",
      "{\"doc_id\": 1, \"system\": \"sysA\", \"annotator\": 7, \"keyphrase\": \"caf\\u00e9\", \"score\": 1}\n"
      "{\"doc_id\": \"1\", \"system\": \"sysA\", \"annotator\": \"7\", \"keyphrase\": \"caf\xC3\xA9\", \"score\": 1}\n");
  const Output d = Meta("--judgments " + g.string(), "dup");
  EXPECT_EQ(d.code, 3);
  EXPECT_NE(d.err.find(g.string() + ":2: duplicate judgment of document '1', system 'sysA', keyphrase 'caf\u00e9', "
                       "annotator '7' (first on line 1)"), std::string::npos) << d.err;
}

// A metric undefined (NaN) on some documents: those (document, system) pairs leave every correlation,
// and the report says which.
TEST_F(MetaEval, PairsWithAnUndefinedMetricAreLeftOutForAll) {
  fs::create_directories(dir_ / "plugins");
  Write("plugins/gap.lua",
        "-- kplab-api: 2\n"
        "return kp.metric {\n"
        "  name = 'gap', version = '1.0.0', doc = 'the number of predictions, undefined for exactly four',\n"
        "  subsets = { 'all' },\n"
        "  columns = function(c) local s = { n = c:column('n') } c:mean('n.macro', s.n) return s end,\n"
        "  score = function(preds, refs, doc, p, ctx, out) out[ctx.slots.n] = #preds == 4 and 0 / 0 or #preds end,\n"
        "}\n");
  for (const char* s : kSystems) {
    const Output o = Run(std::string("eval --dataset tests/data/meta_eval --predictions tests/data/meta_eval/") + s +
                         ".txt --metrics exact,gap --plugins " + (dir_ / "plugins").string() + " --system " + s);
    ASSERT_EQ(o.code, 0) << o.err;
  }
  const Output o = Run("run --allow-write " + dir_.string() + " scripts/analysis/meta_eval.lua --metrics all.p@5,all.n "
                       "--n 50 --judgments tests/data/meta_eval/judgments.csv --out " + (dir_ / "out").string());
  ASSERT_EQ(o.code, 0) << o.err;
  // sysA predicts four keyphrases for documents 1-4: its four judged pairs there are left out.
  EXPECT_NE(o.out.find("4 pairs left out because a metric is undefined there: 1/sysA, 2/sysA, 3/sysA, 4/sysA"),
            std::string::npos) << o.out;
  const auto t = Table();
  EXPECT_EQ(Get(t, "document|||n"), 37 - 4);
  EXPECT_EQ(Get(t, "system|||n"), 5);
  const std::string items = Slurp(dir_ / "out" / "meta_eval_items.tsv");
  EXPECT_EQ(items.find("\n1\tsysA\t"), std::string::npos) << items;
  EXPECT_NE(items.find("\n5\tsysA\t"), std::string::npos) << items;
}

// Each bad file: exit 3, the exact error naming file and line, and no report written.
TEST_F(MetaEval, HostileJudgmentFilesAreRefusedWithFileAndLine) {
  Evaluate();
  struct Bad {
    std::string name, text, error, extra;
  };
  const std::vector<Bad> cases = {
      {"empty.csv", "", "empty.csv: empty file (expected a header line: doc_id,system[,keyphrase][,annotator],score|label)", ""},
      {"blank.csv", "\n\r\n", "blank.csv: empty file (expected a header line: doc_id,system[,keyphrase][,annotator],score|label)", ""},
      {"header.csv", "doc_id,system,score\n", "header.csv: no judgments after the header (expected at least one row)", ""},
      {"nosys.csv", "doc_id,score\n1,3\n", "nosys.csv:1: no column 'system' (the header needs doc_id, system and score or label)", ""},
      {"typo.csv", "doc_id,system,scroe\n1,sysA,3\n",
       "typo.csv:1: unknown column 'scroe' (expected columns among doc_id, system, keyphrase, annotator, score, label)", ""},
      {"both.csv", "doc_id,system,score,label\n1,sysA,3,good\n", "both.csv:1: both a score and a label column (expected one of them)", ""},
      {"twice.csv", "doc_id,system,system,score\n1,sysA,sysA,3\n", "twice.csv:1: column 'system' appears twice", ""},
      {"nan.csv", "doc_id,system,score\n1,sysA,3\n2,sysA,n/a\n",
       "nan.csv:3: score 'n/a' is not a number (expected a finite decimal number)", ""},
      {"inf.csv", "doc_id,system,score\n1,sysA,1e999\n", "inf.csv:2: score '1e999' is not a number (expected a finite decimal number)", ""},
      {"nanscore.csv", "doc_id,system,score\n1,sysA,nan\n", "nanscore.csv:2: score 'nan' is not a number (expected a finite decimal number)", ""},
      {"infscore.csv", "doc_id,system,score\n1,sysA,-inf\n", "infscore.csv:2: score '-inf' is not a number (expected a finite decimal number)", ""},
      // Finite but so large that two of them average to inf (it failed inside kp.stats.kendall).
      {"huge.csv", "doc_id,system,annotator,score\n1,sysA,a,1e308\n1,sysA,b,1e308\n",
       "huge.csv:2: score '1e308' is too large (expected |score| <= 1e300, so that means of judgments stay finite)", ""},
      {"huge.jsonl", "{\"doc_id\": \"1\", \"system\": \"sysA\", \"score\": -2e301}\n",
       "huge.jsonl:1: score '-2e301' is too large (expected |score| <= 1e300, so that means of judgments stay finite)", ""},
      {"noscore.csv", "doc_id,system,annotator\n1,sysA,x\n", "noscore.csv:1: no column 'score' or 'label' (expected one of them)", ""},
      {"bothrow.jsonl", "{\"doc_id\": \"1\", \"system\": \"sysA\", \"score\": 1, \"label\": \"good\"}\n",
       "bothrow.jsonl:1: both score and label (expected one of them)", "--labels good=1"},
      {"hex.csv", "doc_id,system,score\n1,sysA,0x3\n", "hex.csv:2: score '0x3' is not a number (expected a finite decimal number)", ""},
      {"short.csv", "doc_id,system,score\n1,sysA\n", "short.csv:2: 2 fields, expected 3 (doc_id,system,score)", ""},
      {"emptyid.csv", "doc_id,system,score\n ,sysA,3\n", "emptyid.csv:2: empty doc_id (expected a non-empty doc_id)", ""},
      {"dup.csv", "doc_id,system,annotator,score\n1,sysA,x,3\n2,sysA,x,3\n1,sysA,x,4\n",
       "dup.csv:4: duplicate judgment of document '1', system 'sysA', annotator 'x' (first on line 2)", ""},
      {"cr.csv", "doc_id,system,score\r1,sysA,3\r", "cr.csv:1: carriage return not followed by a line feed (expected LF or CRLF line ends)", ""},
      {"quote.csv", "doc_id,system,keyphrase,score\n1,sysA,\"open,3\n2,sysA,x,3\n",
       "quote.csv:2: a quoted field is not closed (expected a closing \")", ""},
      {"multiline.csv", "doc_id,system,keyphrase,score\n1,sysA,\"two\nlines\",1\n\n1,sysB,x,oops\n",
       "multiline.csv:5: score 'oops' is not a number (expected a finite decimal number)", ""},
      {"midquote.csv", "doc_id,system,keyphrase,score\n1,sysA,the \"word\" graph,3\n",
       "midquote.csv:2: a double quote inside an unquoted field (expected the field in quotes with \"\" for a quote)", ""},
      {"utf16.csv", std::string("\xFF\xFE" "d\0o\0", 6), "utf16.csv: UTF-16 text (byte order mark FF FE or FE FF); expected UTF-8", ""},
      {"latin1.csv", "doc_id,system,keyphrase,score\n1,sysA,caf\xE9,3\n",
       "latin1.csv:2: invalid UTF-8 at byte 41 (expected UTF-8 text)", ""},
      {"label.csv", "doc_id,system,label\n1,sysA,good\n2,sysA,meh\n",
       "label.csv:3: unknown label 'meh' (expected one of: bad, good)", "--labels good=1,bad=0"},
      {"noscale.csv", "doc_id,system,label\n1,sysA,good\n",
       "noscale.csv:2: label 'good' but no label scale (give one, e.g. --labels bad=0,good=1)", ""},
      {"mixed.jsonl", "{\"doc_id\": \"1\", \"system\": \"sysA\", \"score\": 3}\n"
                      "{\"doc_id\": \"2\", \"system\": \"sysA\", \"keyphrase\": \"x\", \"score\": 3}\n",
       "mixed.jsonl:2: a keyphrase, no annotator, a score (expected the fields of line 1: no keyphrase, no annotator, a score)", ""},
      {"str.jsonl", "{\"doc_id\": \"1\", \"system\": \"sysA\", \"score\": \"3\"}\n",
       "str.jsonl:1: score must be a number (got the string \"3\")", ""},
      {"comma.jsonl", "{\"doc_id\": \"1\", \"system\": \"sysA\", \"score\": 3}\n{\"doc_id\": \"2\", \"system\": \"sysA\", \"score\": 3,}\n",
       "comma.jsonl:2: expected a string key at column 46 (expected one JSON object per line)", ""},
      {"key.jsonl", "{\"doc_id\": \"1\", \"sys\": \"sysA\", \"score\": 3}\n",
       "key.jsonl:1: unknown key 'sys' (expected keys among doc_id, system, keyphrase, annotator, score, label)", ""},
      {"array.jsonl", "[1, 2]\n", "array.jsonl:1: expected a JSON object {\"doc_id\": ..., \"system\": ..., ...}", ""},
      {"nothing.jsonl", "\n \n", "nothing.jsonl: empty file (expected one JSON object per line)", ""},
      {"dupkey.jsonl", "{\"doc_id\": \"1\", \"doc_id\": \"2\", \"system\": \"sysA\", \"score\": 3}\n",
       "dupkey.jsonl:1: key 'doc_id' given twice at column 17 (expected one JSON object per line)", ""},
      {"judgments.txt", "doc_id,system,score\n1,sysA,3\n",
       "judgments.txt: cannot tell the format from the name (expected a .csv or .jsonl file, or --format csv|jsonl)", ""},
      {"nosysrun.csv", "doc_id,system,score\n1,sysA,3\n2,sysZ,3\n",
       "nosysrun.csv:3: system 'sysZ' has no run among the selected runs (expected one of: sysA, sysB, sysC, sysD, sysE)", ""},
      {"nodoc.csv", "doc_id,system,score\n1,sysA,3\n99,sysA,3\n",
       "nodoc.csv:3: document '99' is not in run 1 (system 'sysA', dataset meta_eval)", ""},
      {"badlabels.csv", "doc_id,system,label\n1,sysA,good\n", "--labels: label 'good' needs a number (got 'yes')", "--labels good=yes"},
  };
  for (const Bad& b : cases) {
    const fs::path f = Write(b.name, b.text);
    const Output o = Meta("--judgments " + f.string() + " " + b.extra, "out_" + b.name);
    EXPECT_EQ(o.code, 3) << b.name << ": " << o.err;
    const std::string want = b.error.find(':') == b.name.size() ? f.string() + b.error.substr(b.name.size()) : b.error;
    EXPECT_NE(o.err.find(want), std::string::npos) << b.name << "\nwanted: " << want << "\ngot: " << o.err;
    EXPECT_FALSE(fs::exists(dir_ / ("out_" + b.name))) << b.name << ": a report was written";
  }
}

TEST_F(MetaEval, RunSelectionMustGiveOneRunPerSystem) {
  Evaluate();
  ASSERT_EQ(Run("eval --dataset tests/data/meta_eval --predictions tests/data/meta_eval/sysB.txt --metrics exact,rank "
                "--system sysA").code, 0);
  Output o = Meta("--judgments tests/data/meta_eval/judgments.csv");
  EXPECT_EQ(o.code, 3);
  EXPECT_NE(o.err.find("runs 1 and 6 are both system 'sysA' (choose one run per system with --runs)"), std::string::npos)
      << o.err;
  o = Meta("--judgments tests/data/meta_eval/judgments.csv --runs 1-5 --metrics all.f1@M,all.nope");
  EXPECT_EQ(o.code, 3);
  EXPECT_NE(o.err.find("metric all.nope is not in every selected run"), std::string::npos) << o.err;
  o = Meta("--judgments tests/data/meta_eval/judgments.csv --runs 1-5 --pairs all.mrr:all.mrr");
  EXPECT_EQ(o.code, 3);
  EXPECT_NE(o.err.find("--pairs: 'all.mrr:all.mrr' is not two different metrics A:B"), std::string::npos) << o.err;
  for (const char* n : {"0", "1e9", "2000000"}) {
    o = Meta(std::string("--judgments tests/data/meta_eval/judgments.csv --runs 1-5 --n ") + n);
    EXPECT_EQ(o.code, 3);
    EXPECT_NE(o.err.find(std::string("--n: expected a positive integer of at most 1000000 (got '") + n + "')"),
              std::string::npos) << o.err;
  }
  // A run named twice is said to be named twice (it read "runs 1 and 1 are both system 'sysA'").
  o = Meta("--judgments tests/data/meta_eval/judgments.csv --runs 1,1,2");
  EXPECT_EQ(o.code, 3);
  EXPECT_NE(o.err.find("--runs: run 1 is given twice (expected one run per system)"), std::string::npos) << o.err;
  o = Meta("--judgments tests/data/meta_eval/judgments.csv --runs 1-5 --confidence 1");
  EXPECT_EQ(o.code, 3);
  EXPECT_NE(o.err.find("--confidence: expected a number in (0, 1) (got '1')"), std::string::npos) << o.err;
  o = Meta("--judgments tests/data/meta_eval/judgments.csv --runs 1-5 --seed -1");
  EXPECT_EQ(o.code, 3);
  EXPECT_NE(o.err.find("--seed: expected an integer >= 0 (got '-1')"), std::string::npos) << o.err;
  const fs::path two = Write("two.csv", "doc_id,system,score\n1,sysA,3\n2,sysA,4\n");
  o = Meta("--judgments " + two.string() + " --runs 1-5");
  EXPECT_EQ(o.code, 3);
  EXPECT_NE(o.err.find("only 2 judged (document, system) pairs with every metric defined (expected at least 3)"),
            std::string::npos) << o.err;
  // Two systems: a document level, but no system-level correlation.
  const fs::path pair = Write("pair.csv", "doc_id,system,score\n1,sysA,3\n2,sysA,4\n1,sysB,2\n2,sysB,5\n");
  o = Meta("--judgments " + pair.string() + " --runs 1-5", "pair");
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.out.find("## System level (n = 2)\n\nFewer than 3 observations: no correlation."), std::string::npos)
      << o.out;
  EXPECT_NE(o.out.find("## Document level (n = 4)"), std::string::npos) << o.out;
  // The chosen pairs only.
  o = Meta("--judgments tests/data/meta_eval/judgments.csv --runs 1-5 --pairs all.mrr:all.p@5");
  ASSERT_EQ(o.code, 0) << o.err;
  const auto t = Table();
  EXPECT_EQ(t.count("document|all.mrr|all.p@5|williams_r_t"), 1u);
  EXPECT_EQ(t.count("document|all.f1@M|all.p@5|williams_r_t"), 0u);
}

TEST_F(MetaEval, WilliamsAndDrawIndicesThroughTheSandbox) {
  std::string script = "local out = {}\n";
  for (const FixtureCase& c : CasesOf(Expected(), "williams")) {
    char buf[400];
    std::snprintf(buf, sizeof buf,
                  "do local t, p, df = kp.stats.williams(%.17g, %.17g, %.17g, %.17g)\n"
                  "out[#out + 1] = string.format('%%s %%.17g %%.17g %%.17g', '%s', t, p, df) end\n",
                  c.num("r12"), c.num("r13"), c.num("r23"), c.num("n"), c.name.c_str());
    script += buf;
  }
  script += "print(table.concat(out, '\\n'))\n";
  const FixtureCase d = CasesOf(Expected(), "draws")[0];
  script += "print(table.concat(kp.stats.draw_indices(8, " + std::to_string(d.nums("values").size()) +
            ", {seed = 7}), ' '))\n";
  const fs::path f = Write("w.lua", script);
  const Output o = Run("run --allow-write " + dir_.string() + " " + f.string());
  ASSERT_EQ(o.code, 0) << o.err;
  std::istringstream in(o.out);
  for (const FixtureCase& c : CasesOf(Expected(), "williams")) {
    std::string name, ts, ps, dfs;
    in >> name >> ts >> ps >> dfs;
    EXPECT_EQ(name, c.name);
    ExpectClose(std::strtod(ts.c_str(), nullptr), c.num("t"), c.name + " t");
    ExpectClose(std::strtod(ps.c_str(), nullptr), c.num("p"), c.name + " p");
    ExpectClose(std::strtod(dfs.c_str(), nullptr), c.num("df"), c.name + " df");
  }
  for (double want : d.nums("values")) {
    double got = 0;
    in >> got;
    EXPECT_EQ(got, want);
  }
  const struct {
    std::string call, error;
  } errors[] = {
      {"kp.stats.williams(0.5, 0.4, 0.3, 3)", "kp.stats.williams: needs n >= 4 observations (got 3)"},
      {"kp.stats.williams(1.5, 0.4, 0.3, 10)", "kp.stats.williams: r12 must be a correlation in [-1, 1] (got 1.5)"},
      {"kp.stats.williams(0.5, 0/0, 0.3, 10)", "kp.stats.williams: r13 must be a correlation in [-1, 1] (got NaN)"},
      {"kp.stats.williams(0.5, 0.4, '0.3', 10)", "kp.stats.williams: argument 'r23' must be a number (got string)"},
      {"kp.stats.draw_indices(0, 3)", "kp.stats.draw_indices: argument 'n' must be between 1 and 4294967295 (got 0)"},
      {"kp.stats.draw_indices(3, -1)", "kp.stats.draw_indices: argument 'count' must be between 0 and 100000000 (got -1)"},
      {"kp.stats.draw_indices(3, 2, {sed = 1})", "kp.stats.draw_indices: unknown option 'sed' (expected seed)"},
  };
  for (const auto& e : errors) {
    const fs::path g = Write("e.lua", e.call + "\n");
    const Output r = Run("run --allow-write " + dir_.string() + " " + g.string());
    EXPECT_EQ(r.code, 3) << e.call;
    EXPECT_NE(r.err.find("e.lua:1: " + e.error), std::string::npos) << e.call << "\n" << r.err;
  }
}

}  // namespace
