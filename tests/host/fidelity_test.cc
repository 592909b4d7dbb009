// The fidelity holes kplab closed, end to end through the kplab executable: <peos> in line files,
// references released stemmed, any k (O for rank metrics), runs compare that cannot mislead, checked
// output options, the documents behind each subset column, and the document's parts in plugins. Every
// expected number is worked out by hand in the comments (or comes from the peers' own scripts, see
// tests/conformance/peers).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "cli_harness.h"

namespace {

namespace fs = std::filesystem;
using kplab::test::Output;

class Fidelity : public kplab::test::KplabDirTest {
 protected:
  Fidelity() : KplabDirTest("fidelity") {}
  int RunCount() {
    if (!fs::exists(db_)) return 0;  // reading commands refuse a store that does not exist
    Output o = Run("runs list --output csv");
    return static_cast<int>(std::count(o.out.begin(), o.out.end(), '\n')) - 1;
  }
};

constexpr const char* kFidelityTiny = "eval --dataset examples/tiny --predictions examples/tiny/predictions.txt";

// A Meng-2017 style document whose predictions carry a <peos> marker: two predictions, both correct.
TEST_F(Fidelity, PeosIsAMarkerInLineFilesButAListItemInJsonl) {
  Write("m/x_context.txt", "neural networks . <eos> we study neural networks and graph models\n");
  Write("m/x_allkeywords.txt", "neural networks;graph models\n");
  Write("p.txt", "neural networks;<peos>;graph models\n");
  Write("p.jsonl", "{\"predictions\": [\"neural networks\", \"<peos>\", \"graph models\"]}\n");
  const std::string base = "eval --dataset " + P("m") + " --metrics exact --output csv --no-store";
  // Line file: <peos> dropped under kplab, kpeval, semrp-standalone and kenchan: 2 of 2 correct.
  for (const char* profile : {"kplab", "kpeval", "semrp-standalone", "kenchan"}) {
    Output o = Run(base + " --predictions " + P("p.txt") + " --profile " + profile);
    ASSERT_EQ(o.code, 0) << o.err;
    EXPECT_DOUBLE_EQ(Agg(o.out, "all.p@M.macro"), 1.0) << profile;
  }
  // ExHiRD reads line files itself and keeps it: 2 of 3.
  Output e = Run(base + " --predictions " + P("p.txt") + " --profile exhird");
  ASSERT_EQ(e.code, 0) << e.err;
  EXPECT_DOUBLE_EQ(Agg(e.out, "all.p@M.macro"), 2.0 / 3);
  // A JSONL list is the user's data: kept verbatim under kpeval (2 of 3), dropped by kplab's profile.
  Output j = Run(base + " --predictions " + P("p.jsonl") + " --profile kpeval");
  ASSERT_EQ(j.code, 0) << j.err;
  EXPECT_DOUBLE_EQ(Agg(j.out, "all.p@M.macro"), 2.0 / 3);
  Output k = Run(base + " --predictions " + P("p.jsonl") + " --profile kplab");
  ASSERT_EQ(k.code, 0) << k.err;
  EXPECT_DOUBLE_EQ(Agg(k.out, "all.p@M.macro"), 1.0);
}

// nltk stems "database" to "databas" and "databas" again to "databa": a reference released stemmed
// must be matched as given.
TEST_F(Fidelity, RefsStemmedMatchesReleasedStemmedReferencesAsGiven) {
  Write("semeval/word_semeval_testing_context.txt", "a database . <eos> we build a database\n");
  Write("semeval/word_semeval_testing_allkeywords.txt", "databas\n");
  Write("p.txt", "database\n");
  const std::string base = "eval --dataset " + P("semeval") + " --predictions " + P("p.txt") +
                           " --metrics exact --output csv";
  Output plain = Run(base + " --profile kenchan");
  ASSERT_EQ(plain.code, 0) << plain.err;
  EXPECT_DOUBLE_EQ(Agg(plain.out, "all.p@M.macro"), 0.0);
  // One word is too little evidence to judge the gold by (tests/host/gold_test.cc has the warning).
  EXPECT_EQ(plain.err, "");
  for (const char* profile : {"kplab", "kpeval", "kenchan", "semrp-standalone"}) {
    Output given = Run(base + " --refs-stemmed --profile " + profile);
    ASSERT_EQ(given.code, 0) << given.err;
    EXPECT_EQ(given.err, "") << profile;
    EXPECT_DOUBLE_EQ(Agg(given.out, "all.p@M.macro"), 1.0) << profile;
    EXPECT_DOUBLE_EQ(Agg(given.out, "present.r@M.macro"), 1.0) << profile;  // "databas" is in the source
  }
  // The run records that its references were matched as given.
  Output show = Run("runs show 2");
  EXPECT_NE(show.out.find("\"_dataset\": {\"refs_stemmed\": true}"), std::string::npos) << show.out;
  // ExHiRD's own rule (the keywords path names semeval) needs no flag.
  Output ex = Run(base + " --profile exhird");
  EXPECT_DOUBLE_EQ(Agg(ex.out, "all.p@M.macro"), 1.0);
  EXPECT_EQ(ex.err, "");
}

TEST_F(Fidelity, SemEvalImporterKnowsItsStemmedAnswersAndRefusesTheFlag) {
  Write("se/test/C-1.txt.final", "A database\nWe build a database.\n");
  Write("se/test_answer/test.combined.stem.final", "C-1 : databas\n");
  Write("p.txt", "database\n");
  const std::string base = "eval --dataset " + P("se/test") + " --predictions " + P("p.txt") +
                           " --metrics exact --output csv";
  Output o = Run(base);
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_DOUBLE_EQ(Agg(o.out, "all.p@M.macro"), 1.0);
  const int before = RunCount();
  Output bad = Run(base + " --refs-stemmed");
  EXPECT_EQ(bad.code, 2);
  EXPECT_EQ(bad.err, "kplab: " + P("se/test") +
                         ": --refs-stemmed given for format \"semeval\", which reads it from the answer file's name "
                         "(*.stem.final answers are stemmed) (expected --refs-stemmed only with meng, one2set, kpeval, "
                         "hulth or kptimes)\n");
  EXPECT_EQ(RunCount(), before);
}

// examples/tiny, kplab profile. P@1: the first prediction hits in documents 1 (scheduler ~ scheduling),
// 3 (graph neural network ~ graph neural networks), 4 and 5, not in 2: all.p@1.macro = 4/5. R@1: hit /
// #refs = (1/5 + 0 + 1/4 + 1/4 + 1/4) / 5 = 0.19. AP@O of document 1: 5 references; its first 5 kept
// predictions scheduler, batch jobs, interactive queries, cluster, job length hit at ranks 1, 2, 3:
// (1/1 + 2/2 + 3/3) / min(5, 5) = 0.6.
TEST_F(Fidelity, AnyCutoffAndOForRankMetrics) {
  Output o = Run(std::string(kFidelityTiny) + " --param exact.ks=1,3,M --param rank.ks=1,O --output csv");
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_DOUBLE_EQ(Agg(o.out, "all.p@1.macro"), 0.8);
  EXPECT_DOUBLE_EQ(Agg(o.out, "all.p@1.micro"), 0.8);
  EXPECT_NEAR(Agg(o.out, "all.r@1.macro"), 0.19, 1e-12);
  EXPECT_TRUE(std::isnan(Agg(o.out, "all.p@5.macro")));  // only the cut-offs asked for
  EXPECT_FALSE(std::isnan(Agg(o.out, "all.map@O")));
  EXPECT_FALSE(std::isnan(Agg(o.out, "absent.alpha_ndcg@O")));
  Output ex = Run("runs export 1 --output csv");
  ASSERT_EQ(ex.code, 0) << ex.err;
  std::istringstream in(ex.out);
  std::string header, row1;
  std::getline(in, header);
  std::getline(in, row1);
  std::size_t col = 0;
  for (std::size_t at = 0, i = 0;; ++i) {
    const auto next = header.find(',', at);
    if (header.substr(at, next - at) == "all.ap@O") col = i;
    if (next == std::string::npos) break;
    at = next + 1;
  }
  ASSERT_GT(col, 0u) << header;
  std::istringstream r(row1);
  std::string field;
  for (std::size_t i = 0; i <= col; ++i) std::getline(r, field, ',');
  EXPECT_DOUBLE_EQ(std::stod(field), 0.6);
}

TEST_F(Fidelity, BadCutoffsAreUsageErrorsAndNothingIsStored) {
  const std::string expected = " (expected integers from 1 to 100000, M or O, comma-separated, e.g. 1,3,5,10,M,O)\n";
  const std::map<std::string, std::string> cases = {
      {"exact.ks=0", "kplab: plugin 'exact': parameter 'ks': '0' is not a cut-off" + expected},
      {"exact.ks=-3", "kplab: plugin 'exact': parameter 'ks': '-3' is not a cut-off" + expected},
      {"exact.ks=abc", "kplab: plugin 'exact': parameter 'ks': 'abc' is not a cut-off" + expected},
      {"exact.ks=5,,M", "kplab: plugin 'exact': parameter 'ks': '' is not a cut-off" + expected},
      {"exact.ks=5,05", "kplab: plugin 'exact': parameter 'ks': '5' is listed twice" + expected},
      {"rank.ks=1000001", "kplab: plugin 'rank': parameter 'ks': '1000001' is not a cut-off" + expected},
      {"rank.ks=", "kplab: plugin 'rank': parameter 'ks': no cut-off in ''" + expected},
      // Hostile: a number past every integer type, a float, a lower-case m, a NUL-free control char.
      {"exact.ks=99999999999999999999", "kplab: plugin 'exact': parameter 'ks': '99999999999999999999' is not a "
                                        "cut-off" + expected},
      {"exact.ks=5.0", "kplab: plugin 'exact': parameter 'ks': '5.0' is not a cut-off" + expected},
      {"exact.ks=m", "kplab: plugin 'exact': parameter 'ks': 'm' is not a cut-off" + expected},
  };
  for (const auto& [param, message] : cases) {
    Output o = Run(std::string(kFidelityTiny) + " --param " + param);
    EXPECT_EQ(o.code, 1) << param;
    EXPECT_EQ(o.err, message) << param;
  }
  EXPECT_EQ(RunCount(), 0);
  // Hostile: 100,000 distinct cut-offs parse (the duplicate check stays linear); one repeat at the end
  // is found.
  std::ofstream(dir_ / "many.lua") << "local t = {} for i = 1, 100000 do t[i] = i end\n"
                                      "print(#kp.cutoffs(table.concat(t, ',')))\n"
                                      "t[100001] = 7 print(select(2, kp.cutoffs(table.concat(t, ','))))\n";
  Output many = Run("run --allow-read " + dir_.string() + " " + P("many.lua"));
  EXPECT_EQ(many.code, 0) << many.err;
  EXPECT_EQ(many.out, "100000\n'7' is listed twice" + expected) << many.err;
}

TEST_F(Fidelity, RunsCompareRefusesDifferentDatasetsAndSelectsMetrics) {
  Write("m/x_context.txt", "neural networks . <eos> we study neural networks and graph models\n");
  Write("m/x_allkeywords.txt", "neural networks;graph models\n");
  Write("p.txt", "neural networks;graph models\n");
  ASSERT_EQ(Run(std::string(kFidelityTiny) + " --system tiny-a").code, 0);                  // run 1
  ASSERT_EQ(Run("eval --dataset " + P("m") + " --predictions " + P("p.txt")).code, 0);      // run 2
  ASSERT_EQ(Run(std::string(kFidelityTiny) + " --system tiny-b --profile kpeval").code, 0);  // run 3
  Output o = Run("runs compare 1 2");
  EXPECT_EQ(o.code, 1);
  EXPECT_EQ(o.out, "");
  EXPECT_NE(o.err.find("kplab: runs 1 and 2 are on different datasets (tiny sha256 "), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("(expected two runs of one dataset; --force pairs documents by id anyway)\n"),
            std::string::npos)
      << o.err;
  // --force pairs by id: tiny's ids 1..5 and m's id 1 share one document.
  Output forced = Run("runs compare 1 2 --force --output json");
  EXPECT_EQ(forced.code, 0) << forced.err;
  EXPECT_NE(forced.out.find("\"shared_docs\": 1,"), std::string::npos) << forced.out;
  // Different profiles: compared, with one warning line; the header names both runs.
  Output w = Run("runs compare 1 3 --metrics 'all.f1@5.*,all.p@M.macro'");
  ASSERT_EQ(w.code, 0) << w.err;
  EXPECT_EQ(w.err,
            "kplab: warning: run 1 is scored under profile 'kplab' and run 3 under 'kpeval': a difference may come "
            "from the conventions, not the systems\n");
  EXPECT_EQ(w.out.rfind("A: run 1  system tiny-a  dataset tiny (5 docs)  profile kplab\n"
                        "B: run 3  system tiny-b  dataset tiny (5 docs)  profile kpeval\n",
                        0),
            0u)
      << w.out;
  // Exactly the selected metrics: f1@5 micro, macro_hm, macro_doc and p@M.macro.
  Output j = Run("runs compare 1 3 --metrics 'all.f1@5.*,all.p@M.macro' --output json");
  ASSERT_EQ(j.code, 0);
  EXPECT_EQ(std::count(j.out.begin(), j.out.end(), '{') - 3, 4) << j.out;  // 3 = outer + runs a, b
  // All four are tested: macro_doc and p@M.macro as per-document means, micro and macro_hm re-computed.
  EXPECT_NE(j.out.find("\"family\": 4,"), std::string::npos) << j.out;
  Output none = Run("runs compare 1 3 --metrics 'nosuch*'");
  EXPECT_EQ(none.code, 1);
  EXPECT_EQ(none.err,
            "kplab: --metrics pattern 'nosuch*' matches no metric both runs have (expected a glob over the aggregate "
            "names, e.g. 'all.f1@*.macro_hm')\n");
}

TEST_F(Fidelity, RunsCompareRefusesAFailedRun) {
  ASSERT_EQ(Run(std::string(kFidelityTiny)).code, 0);
  Output f = Run(std::string(kFidelityTiny) + " --plugins tests/data/cli/failing --metrics boom");
  ASSERT_EQ(f.code, 3);
  Output o = Run("runs compare 1 2");
  EXPECT_EQ(o.code, 4);
  EXPECT_EQ(o.out, "");
  EXPECT_EQ(o.err.rfind("kplab: run 2 failed (tests/data/cli/failing/boom.lua:4: no luck with document 3", 0), 0u)
      << o.err;
}

// Two real KP20k systems 0.06 apart in F1@5: catSeqTG-2RF1 (seed 1234) and the same outputs without their
// first prediction. With the default resamples, Holm over every metric shown must reach p < 0.05.
TEST_F(Fidelity, RunsCompareReachesHolmSignificanceOnKp20k) {
  const std::string shared = KPLAB_SHARED_DATA;
  const std::string pred = shared + "/predictions/catSeqTG-2RF1/kp20k/seed1234.txt";
  if (!fs::exists(pred)) GTEST_SKIP() << "shared data not found";
  {
    std::ifstream in(pred);
    std::ofstream out(dir_ / "drop1.txt");
    for (std::string line; std::getline(in, line);) {
      const auto semi = line.find(';');
      out << (semi == std::string::npos ? "" : line.substr(semi + 1)) << "\n";
    }
  }
  const std::string ds = shared + "/kpg_testsets_meng2017/kp20k";
  ASSERT_EQ(Run("eval --dataset " + ds + " --predictions " + pred).code, 0);
  ASSERT_EQ(Run("eval --dataset " + ds + " --predictions " + P("drop1.txt") + " --system drop1").code, 0);
  Output o = Run("runs compare 1 2 --output csv");
  ASSERT_EQ(o.code, 0) << o.err;
  const auto at = o.out.find("\nall.f1@5.macro_doc,");
  ASSERT_NE(at, std::string::npos) << o.out;
  std::istringstream row(o.out.substr(at + 1, o.out.find('\n', at + 1) - at - 1));
  std::vector<std::string> f;
  for (std::string x; std::getline(row, x, ',');) f.push_back(x);
  ASSERT_GE(f.size(), 9u);
  EXPECT_LT(std::stod(f[3]), -0.05);  // B - A
  EXPECT_LT(std::stod(f[8]), 0.05);   // p Holm
}

TEST_F(Fidelity, EveryOutputOptionIsChecked) {
  ASSERT_EQ(Run(std::string(kFidelityTiny)).code, 0);
  for (const char* cmd : {"runs list", "runs show 1", "runs compare 1 1"}) {
    Output o = Run(std::string(cmd) + " --output bogus");
    EXPECT_EQ(o.code, 1) << cmd;
    EXPECT_EQ(o.out, "") << cmd;
    EXPECT_EQ(o.err, "kplab: --output must be one of table, json, csv, tsv (got 'bogus') (see 'kplab help')\n") << cmd;
  }
  Output e = Run("runs export 1 --output table");
  EXPECT_EQ(e.code, 1);
  EXPECT_EQ(e.err, "kplab: --output must be one of csv, tsv, json, jsonl (got 'table') (see 'kplab help')\n");
  Output rm = Run("runs rm 1 --output json");
  EXPECT_EQ(rm.code, 1);
  EXPECT_EQ(rm.err, "kplab: runs rm takes no --output (see 'kplab help')\n");
  Output csv = Run("runs list --output csv");
  ASSERT_EQ(csv.code, 0);
  EXPECT_EQ(csv.out.rfind("id,created_at,status,dataset,system,profile,n_docs,seed\n1,", 0), 0u) << csv.out;
  EXPECT_NE(csv.out.find(",ok,tiny,examples,kplab,5,\n"), std::string::npos) << csv.out;
  Output tsv = Run("runs list --output tsv");
  EXPECT_EQ(tsv.out.rfind("id\tcreated_at\tstatus\tdataset\tsystem\tprofile\tn_docs\tseed\n", 0), 0u) << tsv.out;
  Output unknown = Run("eval --datset examples/tiny --predictions examples/tiny/predictions.txt");
  EXPECT_EQ(unknown.code, 1);
  EXPECT_EQ(unknown.err, "kplab: unknown option --datset (did you mean --dataset?) (see 'kplab help')\n");
  Output twice = Run(std::string(kFidelityTiny) + " --profile kplab --profile kpeval");
  EXPECT_EQ(twice.code, 1);
  EXPECT_EQ(twice.err, "kplab: option --profile is repeated (see 'kplab help')\n");
  Output flag = Run(std::string(kFidelityTiny) + " --no-store --no-store");
  EXPECT_EQ(flag.code, 1);
  EXPECT_EQ(flag.err, "kplab: option --no-store is repeated (see 'kplab help')\n");
  Output metric = Run(std::string(kFidelityTiny) + " --metrics exact,nope");
  EXPECT_EQ(metric.code, 1);
  EXPECT_EQ(metric.err.rfind("kplab: unknown metric 'nope' (expected one of: ", 0), 0u) << metric.err;
}

// KP20k's 20,000 references with source text for the first 1,000 documents only: present/absent
// average over 1,000 documents, all over 20,000, and the table and the JSON say so.
TEST_F(Fidelity, PartialSourceShowsTheDocumentsBehindEachColumn) {
  const std::string shared = KPLAB_SHARED_DATA;
  const std::string src = shared + "/kp20k_test_first1000/test_src.txt";
  if (!fs::exists(src)) GTEST_SKIP() << "shared data not found";
  const std::string args = "eval --dataset " + shared + "/kpg_testsets_meng2017/kp20k --predictions " + shared +
                           "/predictions/catSeqTG-2RF1/kp20k/seed1234.txt --source " + src + " --metrics exact";
  Output t = Run(args);
  ASSERT_EQ(t.code, 0) << t.err;
  EXPECT_NE(t.out.find("\n(documents)         20000      1000      1000\n"), std::string::npos) << t.out;
  Output j = Run("runs show 1 --output json");
  EXPECT_NE(j.out.find("\"n_docs\": 20000, \"n_docs_by_subset\": {\"absent\": 1000, \"all\": 20000, \"present\": 1000}"),
            std::string::npos)
      << j.out.substr(0, 300);
}

// A three-line plugin that counts the predictions found in the title. Hand count on examples/tiny
// (stems): doc 1 "schedul" in the title (batch job is not: the title has "batch and"): 1; doc 2: 0;
// doc 3 "graph neural network", "traffic speed": 2; doc 4 "soil moistur", "low cost radar": 2; doc 5
// "code review", "review comment": 2. Mean 7/5. Title lengths 10, 7, 8, 8, 8: mean 8.2.
TEST_F(Fidelity, PluginsSeeTheDocumentsParts) {
  Write("pl/in_title.lua", R"(-- kplab-api: 1
return kp.metric { name = "in_title", version = "1", score = function(doc, _, _, out)
  local title, n = " " .. table.concat(doc.title_stems, " ") .. " ", 0
  for i = 1, #doc.preds do
    if title:find(" " .. table.concat(doc.preds[i].stems, " ") .. " ", 1, true) then n = n + 1 end
  end
  out["all.in_title"], out["all.title_len"] = n, #doc.title
  out["all.parts"] = (#doc.title + #doc.body == #doc.source and doc.body[1] == doc.source[#doc.title + 1]) and 1 or 0
  return out
end }
)");
  Output o = Run(std::string(kFidelityTiny) + " --plugins " + P("pl") + " --metrics in_title --output csv");
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_DOUBLE_EQ(Agg(o.out, "all.in_title"), 1.4);
  EXPECT_DOUBLE_EQ(Agg(o.out, "all.title_len"), 8.2);
  EXPECT_DOUBLE_EQ(Agg(o.out, "all.parts"), 1.0);
}

TEST_F(Fidelity, AScoreOfTheWrongTypeNamesTheMetric) {
  Write("pl/typo.lua", R"(-- kplab-api: 1
return kp.metric { name = "typo", version = "1", score = function(doc, _, _, out)
  out["all.ok"] = 1
  if doc.id == "4" then out["all.bad"] = "high" end
  return out
end }
)");
  Output o = Run(std::string(kFidelityTiny) + " --plugins " + P("pl") + " --metrics typo");
  EXPECT_EQ(o.code, 3);
  EXPECT_NE(o.err.find(": score result for document '4': metric 'all.bad' is a string (expected a number)\n"),
            std::string::npos)
      << o.err;
}

}  // namespace
