// Bootstrap CIs and paired tests of corpus-level metrics (`kplab eval --ci`, `kplab runs compare`;
// docs/store.md, "Confidence intervals for every aggregate"), on the hand-made fixtures of tests/data/ci:
//   - ECE (calibration, Eq. 9) over 4 documents: every keyphrase alone in its bin, so by hand
//     ECE(A) = 2.37 / 6 = 0.395 and ECE(B) = 1.06 / 6; the CI of A (documents resampled) and the paired
//     CI and p of B - A equal tests/data/ci/expected.json, which tests/reference/gen_ci.py computes
//     with numpy from the hand specification, replaying kplab's documented draws;
//   - Hooper CP (homogeneity) over the 3 pairs mined from 4 documents: CP(A) = (1/3 + 0 + 0) / 3 = 1/9,
//     CP(B) = (1 + 1/3 + 1/3) / 3 = 5/9; the pairs, not the documents, are resampled (a document
//     bootstrap would draw 4 rows), checked against the same reference;
//   - exact properties: a metric constant under resampling has a point CI; a run compared with itself
//     has B - A = 0, CI [0, 0] and p = 1;
//   - every refusal with its exact text.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cli_harness.h"

namespace fs = std::filesystem;
using kplab::test::Output;

namespace {

const std::string kCiData = "tests/data/ci";
const std::string kCalib = "eval --dataset " + kCiData + "/calib_dataset.jsonl --metrics calibration";
const std::string kHom = "eval --dataset " + kCiData + "/hom --metrics homogeneity";

class Ci : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kplab_ci_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    expected_ = kplab::test::Slurp(fs::path(KPLAB_SOURCE_DIR) / kCiData / "expected.json");
    ASSERT_FALSE(expected_.empty());
  }
  void TearDown() override { fs::remove_all(dir_); }

  Output Run(const std::string& args) {
    return kplab::test::RunKplab(dir_, "KPLAB_DB=" + P("runs.db") + " KPLAB_MODELS=" + P("models"), args);
  }
  std::string P(const std::string& name) const { return (dir_ / name).string(); }

  // The number after `"key": ` (the n-th number of a list when index > 0) in expected.json, within the
  // object named `within` when given.
  double Expected(const std::string& within, const std::string& key, int index = 0) const {
    std::size_t at = within.empty() ? 0 : expected_.find("\"" + within + "\": {");
    EXPECT_NE(at, std::string::npos) << within;
    at = expected_.find("\"" + key + "\": ", at);
    EXPECT_NE(at, std::string::npos) << key;
    at += key.size() + 4;
    if (expected_[at] == '[') ++at;
    for (int i = 0; i < index; ++i) at = expected_.find(',', at) + 1;
    return std::strtod(expected_.c_str() + at, nullptr);  // skips the leading white space
  }

  // The CSV row of `metric` split on commas (empty when absent).
  static std::vector<std::string> Row(const std::string& csv, const std::string& metric) {
    const auto at = csv.find("\n" + metric + ",");
    if (at == std::string::npos) return {};
    const std::string line = csv.substr(at + 1, csv.find('\n', at + 1) - at - 1);
    std::vector<std::string> out;
    std::size_t from = 0;
    for (;;) {
      const auto comma = line.find(',', from);
      out.push_back(line.substr(from, comma == std::string::npos ? std::string::npos : comma - from));
      if (comma == std::string::npos) break;
      from = comma + 1;
    }
    return out;
  }
  static double D(const std::string& s) { return std::strtod(s.c_str(), nullptr); }

  void ExpectRefused(const std::string& args, int code, const std::string& error) {
    Output o = Run(args);
    EXPECT_EQ(o.code, code) << o.err;
    EXPECT_EQ(o.out, "");
    EXPECT_EQ(o.err, "kplab: " + error + "\n");
  }

  fs::path dir_;
  std::string expected_;
};

constexpr double kCiTol = 1e-12;

TEST_F(Ci, ReferenceParserReadsTheCommittedValues) {
  EXPECT_NEAR(Expected("", "ece_a"), 0.395, 1e-15);
  EXPECT_NEAR(Expected("", "cp_a"), 1.0 / 9, 1e-15);
  EXPECT_LT(Expected("", "ece_a_ci", 0), Expected("", "ece_a_ci", 1));
  EXPECT_NEAR(Expected("ece_compare", "diff"), 1.06 / 6 - 0.395, 1e-15);
  EXPECT_GT(Expected("ece_compare", "p"), 0);
}

// ECE is a corpus-level value (sums over every keyphrase of the corpus, then Eq. 9): its CI comes from
// re-running the aggregation over resampled documents, and equals the numpy replay.
TEST_F(Ci, EceCiResamplesDocumentsAsTheReference) {
  Output o = Run(kCalib + " --predictions " + kCiData +
                 "/calib_a.jsonl --ci --ci-resamples 200 --ci-seed 7 "
                 "--output csv");
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(o.out.substr(0, o.out.find('\n')), "metric,value,ci_low,ci_high");
  auto ece = Row(o.out, "all.ece");
  ASSERT_EQ(ece.size(), 4u) << o.out;
  EXPECT_NEAR(D(ece[1]), 2.37 / 6, kCiTol);  // by hand, as the header says
  EXPECT_NEAR(D(ece[2]), Expected("", "ece_a_ci", 0), kCiTol);
  EXPECT_NEAR(D(ece[3]), Expected("", "ece_a_ci", 1), kCiTol);
  EXPECT_LT(D(ece[2]), D(ece[3]));
  // Stored with the run: `runs show` prints the same interval, and the run records how it was drawn.
  Output show = Run("runs show 1 --output json");
  ASSERT_EQ(show.code, 0) << show.err;
  EXPECT_NE(show.out.find("\"all.ece\": [" + ece[2] + ", " + ece[3] + "]"), std::string::npos) << show.out;
  // The same seed gives the same interval; another seed another one (the draws depend on it).
  Output again = Run(kCalib + " --predictions " + kCiData +
                     "/calib_a.jsonl --ci --ci-resamples 200 --ci-seed 7 "
                     "--output csv --no-store");
  EXPECT_EQ(Row(again.out, "all.ece"), ece);
  Output other = Run(kCalib + " --predictions " + kCiData +
                     "/calib_a.jsonl --ci --ci-resamples 200 --ci-seed 8 "
                     "--output csv --no-store");
  EXPECT_NE(Row(other.out, "all.ece"), ece);
  // Without --ci: no CI columns, and nothing of the interval.
  Output plain = Run(kCalib + " --predictions " + kCiData + "/calib_a.jsonl --output csv --no-store");
  EXPECT_EQ(plain.out.substr(0, plain.out.find('\n')), "metric,value");
  // The table shows "value [low, high]".
  Output table = Run(kCalib + " --predictions " + kCiData +
                     "/calib_a.jsonl --ci --ci-resamples 200 --ci-seed 7 "
                     "--no-store");
  char cell[64];
  std::snprintf(cell, sizeof cell, "0.3950 [%.4f, %.4f]", D(ece[2]), D(ece[3]));
  EXPECT_NE(table.out.find(cell), std::string::npos) << table.out;
}

// runs compare on ECE: the difference of the aggregates, the paired bootstrap CI (the same documents
// resampled for both runs) and the randomization p (documents' slots swapped between the runs) equal
// the reference; a run against itself gives exactly 0, [0, 0] and p = 1.
TEST_F(Ci, CompareEceIsPairedOverResampledDocuments) {
  for (const char* f : {"calib_a.jsonl", "calib_b.jsonl"}) {
    Output o = Run(kCalib + " --predictions " + kCiData + "/" + f + " --ci --ci-resamples 200");
    ASSERT_EQ(o.code, 0) << o.err;
  }
  Output o = Run("runs compare 1 2 --metrics all.ece --seed 7 --ci-resamples 200 --resamples 1000 --output csv");
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(o.out.substr(0, o.out.find('\n')), "metric,run1,run2,diff,n,ci_low,ci_high,p,p_holm,same_as,test");
  auto r = Row(o.out, "all.ece");
  ASSERT_EQ(r.size(), 11u) << o.out;
  EXPECT_NEAR(D(r[1]), 2.37 / 6, kCiTol);
  EXPECT_NEAR(D(r[2]), 1.06 / 6, kCiTol);
  EXPECT_NEAR(D(r[3]), Expected("ece_compare", "diff"), kCiTol);
  EXPECT_EQ(r[4], "4");  // documents resampled
  EXPECT_NEAR(D(r[5]), Expected("ece_compare", "ci", 0), kCiTol);
  EXPECT_NEAR(D(r[6]), Expected("ece_compare", "ci", 1), kCiTol);
  EXPECT_NEAR(D(r[7]), Expected("ece_compare", "p"), kCiTol);
  EXPECT_NEAR(D(r[8]), D(r[7]), kCiTol);  // a family of one
  EXPECT_EQ(r[10], "resampled");
  Output self = Run("runs compare 1 1 --metrics all.ece,all.accuracy.micro --output csv");
  ASSERT_EQ(self.code, 0) << self.err;
  for (const char* m : {"all.ece", "all.accuracy.micro"}) {
    auto s = Row(self.out, m);
    ASSERT_EQ(s.size(), 11u) << self.out;
    EXPECT_EQ(s[3], "0");
    EXPECT_EQ(s[5], "0");
    EXPECT_EQ(s[6], "0");
    EXPECT_EQ(s[7], "1");
    EXPECT_EQ(s[10], "resampled");
  }
  // JSON says which test each row had.
  Output json = Run("runs compare 1 2 --metrics all.ece --output json");
  EXPECT_NE(json.out.find("\"test\": \"resampled\", \"unit\": \"documents\""), std::string::npos) << json.out;
}

// An aggregate that counts the run rather than its units (homogeneity's identical-gold pairs, left out
// before any pair is scored) is declared `fixed`: not checked against the units, no CI; the others keep
// theirs. Hostile: a fixed name that is no declared aggregate, an unknown option.
TEST_F(Ci, FixedAggregatesAreNotResampled) {
  fs::create_directories(dir_ / "pl");
  auto plugin = [&](const std::string& name, const std::string& units) {
    std::ofstream(dir_ / "pl" / (name + ".lua")) << "-- kplab-api: 2\nreturn kp.metric {\n  name = \"" << name
        << "\", version = \"1\",\n  columns = function(c)\n    local s = { n = c:hidden(\"n\"), d = c:hidden(\"d\") }\n"
           "    c:sum(\"all.n\", s.n)\n    c:sum(\"all.d\", s.d)\n    " << units << "\n    return s\n  end,\n"
           "  score = function(doc, _, ctx, out)\n    out[ctx.slots.n], out[ctx.slots.d] = 2, 1\n"
           "    ctx.unit(1, { [ctx.slots.n] = 1 })\n    ctx.unit(2, { [ctx.slots.n] = 1 })\n  end,\n}\n";
  };
  plugin("fixedcount", "c:units(\"items\", { fixed = { \"all.d\" } })");
  plugin("nofixed", "c:units(\"items\")");
  plugin("badfixed", "c:units(\"items\", { fixed = { \"all.nope\" } })");
  plugin("badkey", "c:units(\"items\", { fix = { \"all.d\" } })");
  const std::string base = "eval --dataset " + kCiData + "/hom --predictions " + kCiData + "/hom_a.txt --plugins " +
                           P("pl") + " --no-store --ci --output csv --metrics ";
  Output ok = Run(base + "fixedcount");
  ASSERT_EQ(ok.code, 0) << ok.err;
  // 4 documents, each 2 units of 1: every resample of the 8 units sums to 8.
  EXPECT_EQ(Row(ok.out, "all.n"), (std::vector<std::string>{"all.n", "8", "8", "8"})) << ok.out;
  EXPECT_EQ(Row(ok.out, "all.d"), (std::vector<std::string>{"all.d", "4", "", ""})) << ok.out;
  // runs compare leaves the fixed count untested with its reason, and tests the other.
  const std::string stored = "eval --dataset " + kCiData + "/hom --predictions " + kCiData + "/hom_a.txt --plugins " +
                             P("pl") + " --ci --output csv --metrics fixedcount";
  ASSERT_EQ(Run(stored).code, 0);
  ASSERT_EQ(Run(stored).code, 0);
  Output cmp = Run("runs compare 1 2 --output json");
  ASSERT_EQ(cmp.code, 0) << cmp.err;
  EXPECT_NE(cmp.out.find("a count of the run, not of its items: not resampled (c:units fixed)"), std::string::npos)
      << cmp.out;
  EXPECT_NE(cmp.out.find("\"test\": \"resampled\", \"unit\": \"items\""), std::string::npos) << cmp.out;
  // Without the declaration the count does not add up over the units, and the run says so.
  Output no = Run(base + "nofixed");
  EXPECT_EQ(no.code, 3) << no.err;
  EXPECT_NE(no.err.find("aggregate 'all.d' is 4 over the documents but 0 over the 8 items"), std::string::npos) << no.err;
  Output bad = Run(base + "badfixed");
  EXPECT_NE(bad.code, 0);
  EXPECT_NE(bad.err.find("units option 'fixed': 'all.nope' is not an aggregate declared before c:units"),
            std::string::npos) << bad.err;
  Output key = Run(base + "badkey");
  EXPECT_NE(key.code, 0);
  EXPECT_NE(key.err.find("units options: unknown key (expected only 'fixed', a list of aggregate names)"),
            std::string::npos) << key.err;
}

// A mean that overflows (two documents of 1e308 sum to inf) has an infinite value and infinite
// bounds, not "-nan" (interpolating inf - inf); a document-level mean that stays finite keeps its CI.
TEST_F(Ci, OverflowingAggregateHasInfiniteBoundsNotNaN) {
  fs::create_directories(dir_ / "pl");
  std::ofstream(dir_ / "pl" / "big.lua") << R"(-- kplab-api: 2
return kp.metric {
  name = "big", version = "1",
  columns = function(c)
    return { v = c:column("all.v", "mean"), w = c:column("all.w", "mean") }
  end,
  score = function(doc, _, ctx, out)
    out[ctx.slots.v] = 1e308
    out[ctx.slots.w] = 0.5
  end,
}
)";
  Output o = Run("eval --dataset " + kCiData + "/hom --predictions " + kCiData + "/hom_a.txt --plugins " + P("pl") +
                 " --no-store --ci --output csv --metrics big");
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(Row(o.out, "all.v"), (std::vector<std::string>{"all.v", "inf", "inf", "inf"})) << o.out;
  EXPECT_EQ(Row(o.out, "all.w"), (std::vector<std::string>{"all.w", "0.5", "0.5", "0.5"})) << o.out;
}

// Homogeneity's unit is the pair (c:units("pairs")): its CI resamples the 3 mined pairs (1/9 with
// values 1/3, 0, 0), and the paired test matches pairs between the runs.
TEST_F(Ci, HomogeneityResamplesPairs) {
  Output a = Run(kHom + " --predictions " + kCiData + "/hom_a.txt --ci --ci-resamples 200 --ci-seed 7 --output csv");
  ASSERT_EQ(a.code, 0) << a.err;
  auto cp = Row(a.out, "all.cp_hooper");
  ASSERT_EQ(cp.size(), 4u) << a.out;
  EXPECT_NEAR(D(cp[1]), 1.0 / 9, kCiTol);
  EXPECT_NEAR(D(cp[2]), Expected("", "cp_a_ci", 0), kCiTol);
  EXPECT_NEAR(D(cp[3]), Expected("", "cp_a_ci", 1), kCiTol);
  // Every resample has 3 pairs: the count's CI is a point.
  EXPECT_EQ(Row(a.out, "all.cp_pairs"), (std::vector<std::string>{"all.cp_pairs", "3", "3", "3"}));
  Output b = Run(kHom + " --predictions " + kCiData + "/hom_b.txt --ci");
  ASSERT_EQ(b.code, 0) << b.err;
  Output o = Run("runs compare 1 2 --seed 7 --ci-resamples 200 --resamples 1000 --output csv");
  ASSERT_EQ(o.code, 0) << o.err;
  auto r = Row(o.out, "all.cp_hooper");
  ASSERT_EQ(r.size(), 11u) << o.out;
  EXPECT_NEAR(D(r[3]), 4.0 / 9, kCiTol);
  EXPECT_NEAR(D(r[3]), Expected("cp_compare", "diff"), kCiTol);
  EXPECT_EQ(r[4], "3");  // pairs, not the 4 documents
  EXPECT_NEAR(D(r[5]), Expected("cp_compare", "ci", 0), kCiTol);
  EXPECT_NEAR(D(r[6]), Expected("cp_compare", "ci", 1), kCiTol);
  EXPECT_NEAR(D(r[7]), Expected("cp_compare", "p"), kCiTol);
  EXPECT_EQ(r[10], "resampled");
  auto pairs = Row(o.out, "all.cp_pairs");
  ASSERT_EQ(pairs.size(), 11u) << o.out;
  EXPECT_EQ(pairs[3], "0");
  EXPECT_EQ(pairs[5], "0");
  EXPECT_EQ(pairs[6], "0");
  EXPECT_EQ(pairs[7], "1");
  Output json = Run("runs compare 1 2 --metrics all.cp_hooper --output json");
  EXPECT_NE(json.out.find("\"unit\": \"pairs\""), std::string::npos) << json.out;
  // Lanes report their units in document order: the same CI with 3 scoring threads (all of them used:
  // KPLAB_LANES=max, as this input is too small for more than one lane by its cost).
  Output lanes =
      kplab::test::RunKplab(dir_, "KPLAB_LANES=max KPLAB_DB=" + P("runs.db") + " KPLAB_MODELS=" + P("models"),
                            kHom + " --predictions " + kCiData +
                                "/hom_a.txt --ci --ci-resamples 200 --ci-seed 7 --output csv "
                                "--no-store --threads 3");
  ASSERT_EQ(lanes.code, 0) << lanes.err;
  EXPECT_EQ(Row(lanes.out, "all.cp_hooper"), cp);
}

// A micro average every resample gives the same value (each document: 1 hit in 2 predictions) has a
// point CI, and so has its macro twin.
TEST_F(Ci, ConstantUnderResamplingIsAPoint) {
  std::ofstream(dir_ / "half.txt") << "apple;plum\napple;plum\napple;plum\nxray;plum\n";
  Output o = Run("eval --dataset " + kCiData + "/hom --metrics exact --predictions " + P("half.txt") +
                 " --ci --output csv --no-store");
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(Row(o.out, "all.p@M.micro"), (std::vector<std::string>{"all.p@M.micro", "0.5", "0.5", "0.5"})) << o.out;
  EXPECT_EQ(Row(o.out, "all.p@M.macro"), (std::vector<std::string>{"all.p@M.macro", "0.5", "0.5", "0.5"})) << o.out;
}

// Usage errors of the command line end with a pointer to the help.
TEST_F(Ci, RefusesBadOptions) {
  const std::string base = kCalib + " --predictions " + kCiData + "/calib_a.jsonl --no-store";
  for (const char* bad : {"0", "99", "1000001", "ten", "-5", "1e3", ""}) {
    ExpectRefused(base + " --ci --ci-resamples '" + bad + "'", 1,
                  std::string("--ci-resamples must be an integer from 100 to 1000000 (got '") + bad + "') (see 'kplab help')");
  }
  ExpectRefused(base + " --ci --ci-seed x", 1,
                "--ci-seed must be an integer from 0 to 9223372036854775807 (got 'x') (see 'kplab help')");
  ExpectRefused(base + " --ci-resamples 500", 1,
                "--ci-resamples sets up --ci, which is not given (expected --ci --ci-resamples VALUE) (see 'kplab help')");
  ExpectRefused(base + " --ci-seed 3", 1, "--ci-seed sets up --ci, which is not given (expected --ci --ci-seed VALUE) (see 'kplab help')");
  ExpectRefused(kCalib + " --predictions " + kCiData + "/calib_a.jsonl --ci --shard 0/2", 1,
                "--ci resamples the whole run: it cannot be combined with --shard (merge the shards with `kplab runs "
                "merge`, then compare runs with `kplab runs compare`) (see 'kplab help')");
}

// A plugin whose aggregation cannot be re-run is refused before anything is scored; so is one whose
// units do not add up to its documents (resampling them would estimate something else).
TEST_F(Ci, RefusesWhatCannotBeResampled) {
  fs::create_directories(dir_ / "pl");
  std::ofstream(dir_ / "pl" / "old.lua") << R"(-- kplab-api: 1
return kp.metric { name = "old", version = "1", score = function(doc) return { ["all.m"] = #doc.preds } end }
)";
  std::ofstream(dir_ / "pl" / "nbr.lua") << R"(-- kplab-api: 2
return kp.metric {
  name = "nbr", version = "1", unmergeable = "its value ranks documents over the whole corpus",
  columns = { "all.n" },
  score = function(doc, _, _, out) out["all.n"] = #doc.preds end,
}
)";
  std::ofstream(dir_ / "pl" / "halves.lua") << R"(-- kplab-api: 2
return kp.metric {
  name = "halves", version = "1",
  columns = function(c)
    local s = { n = c:hidden("n") }
    c:sum("all.n", s.n)
    c:units("items")
    return s
  end,
  score = function(doc, _, ctx, out)
    out[ctx.slots.n] = 2
    ctx.unit(1, { [ctx.slots.n] = 1 })
  end,
}
)";
  std::ofstream(dir_ / "pl" / "stray.lua") << R"(-- kplab-api: 2
return kp.metric {
  name = "stray", version = "1",
  columns = function(c)
    local s = { n = c:hidden("n") }
    c:sum("all.n", s.n)
    c:units("items")
    return s
  end,
  score = function(doc, _, ctx, out)
    out[ctx.slots.n] = 1
    ctx.unit(1, { nope = 1 })
  end,
}
)";
  const std::string base = "eval --dataset " + kCiData + "/hom --predictions " + kCiData + "/hom_a.txt --plugins " +
                           P("pl") + " --no-store --ci --metrics ";
  ExpectRefused(base + "exact,old", 1,
                "metric 'old' has no bootstrap CI (--ci): " + P("pl") +
                    "/old.lua is plugin API 1, whose aggregate(cols) cannot be re-run over resampled documents "
                    "(plugin API 2 declares its aggregation in columns(c, params))");
  ExpectRefused(base + "nbr", 1,
                "metric 'nbr' has no bootstrap CI (--ci): " + P("pl") +
                    "/nbr.lua declares unmergeable = \"its value ranks documents over the whole corpus\"");
  Output halves = Run(base + "halves");
  EXPECT_EQ(halves.code, 3) << halves.err;
  EXPECT_NE(halves.err.find(P("pl") + "/halves.lua: its items (ctx.unit) do not add up to its documents: aggregate "
                                      "'all.n' is 8 over the documents but 4 over the 4 items (a document's slots "
                                      "must be the sums of its units') (while resampling for --ci)"),
            std::string::npos)
      << halves.err;
  EXPECT_EQ(halves.out, "");
  Output stray = Run(base + "stray");
  EXPECT_EQ(stray.code, 3) << stray.err;
  EXPECT_NE(stray.err.find("ctx.unit: key nope of the values is not a declared column (expected a slot from c:column "
                           "/ c:hidden or a declared name)"),
            std::string::npos)
      << stray.err;
  // A native kernel reports no units: declaring them with one is refused, not left without a CI.
  std::ofstream(dir_ / "pl" / "kunits.lua") << R"(-- kplab-api: 2
return kp.metric {
  name = "kunits", version = "1", subsets = { "all" },
  params = { ks = kp.cutoffs { default = "5" } },
  columns = function(c, p)
    local s = { p = c:column("p@5", "mean") }
    c:units("items")
    return s
  end,
  score = kp.kernel.exact,
}
)";
  Output kunits = Run(base + "kunits");
  EXPECT_EQ(kunits.code, 3) << kunits.err;
  EXPECT_NE(kunits.err.find(P("pl") + "/kunits.lua: c:units(\"items\") needs a Lua score function that reports "
                                      "them with ctx.unit (score = kp.kernel.exact reports none)"),
            std::string::npos)
      << kunits.err;
  // A unit's key identifies it across runs: NaN cannot.
  std::ofstream(dir_ / "pl" / "nankey.lua") << R"(-- kplab-api: 2
return kp.metric {
  name = "nankey", version = "1",
  columns = function(c)
    local s = { n = c:hidden("n") }
    c:sum("all.n", s.n)
    c:units("items")
    return s
  end,
  score = function(doc, _, ctx, out)
    out[ctx.slots.n] = 1
    ctx.unit(0 / 0, { [ctx.slots.n] = 1 })
  end,
}
)";
  Output nankey = Run(base + "nankey");
  EXPECT_EQ(nankey.code, 3) << nankey.err;
  EXPECT_NE(nankey.err.find("ctx.unit: the key must be a finite number (got NaN)"), std::string::npos) << nankey.err;
  // Without --ci, the units are checked as well (a plugin's mistake is not silent).
  Output stray_plain = Run("eval --dataset " + kCiData + "/hom --predictions " + kCiData + "/hom_a.txt --plugins " +
                           P("pl") + " --no-store --metrics stray");
  EXPECT_EQ(stray_plain.code, 3) << stray_plain.err;
}

// Every stored run keeps its slots (older kplab kept them only with --ci), so runs stored without --ci
// have their ECE tested too. A run stored by an older kplab has none (emulated by deleting its run_slots
// rows and taking the file back to schema version 5, before the slots' digest, which the next open
// migrates): runs compare still tests per-document means, and says why a corpus-level metric has no
// test.
TEST_F(Ci, CompareWithoutSlotsSaysWhy) {
  for (const char* f : {"calib_a.jsonl", "calib_b.jsonl"}) {
    ASSERT_EQ(Run(kCalib + " --predictions " + kCiData + "/" + f).code, 0);
  }
  auto ece = Row(Run("runs compare 1 2 --metrics all.ece --output csv").out, "all.ece");
  ASSERT_EQ(ece.size(), 11u);
  EXPECT_EQ(ece[10], "resampled");
  ASSERT_EQ(std::system(("/usr/bin/python3 -c \"import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute("
                         "'DELETE FROM run_slots WHERE run_id = 1'); c.execute('ALTER TABLE runs DROP COLUMN "
                         "slots_digest'); c.execute("
                         "\\\"UPDATE meta SET value = '5' WHERE key = 'schema_version'\\\"); c.commit()\" " +
                         P("runs.db"))
                            .c_str()),
            0);
  Output o = Run("runs compare 1 2 --metrics 'all.ece,all.kpp.macro'");
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.out.find("no test for 1 corpus-level metric(s) (all.ece): run 1 stored no slots to resample (a plugin "
                       "of API 1 declares none; a run stored by an older kplab kept them only with `kplab eval "
                       "--ci`: score it again)\n"),
            std::string::npos)
      << o.out;
  auto macro = Row(Run("runs compare 1 2 --metrics all.kpp.macro --output csv").out, "all.kpp.macro");
  ASSERT_EQ(macro.size(), 11u);
  EXPECT_EQ(macro[10], "per_document");
  // A plugin file changed since the runs: its corpus-level metric is not tested, and says why; the
  // per-document metrics of the same plugin still are.
  fs::create_directories(dir_ / "pl");
  const std::string cnt = R"(-- kplab-api: 2
return kp.metric {
  name = "cnt", version = "1",
  columns = function(c)
    local s = { n = c:column("all.n", "mean"), h = c:hidden("h") }
    c:ratio("all.r", s.h, s.n)
    return s
  end,
  score = function(doc, _, ctx, out) out[ctx.slots.n], out[ctx.slots.h] = #doc.preds, 1 end,
}
)";
  std::ofstream(dir_ / "pl" / "cnt.lua") << cnt;
  for (const char* f : {"hom_a.txt", "hom_b.txt"}) {
    ASSERT_EQ(Run("eval --dataset " + kCiData + "/hom --predictions " + kCiData + "/" + f + " --plugins " + P("pl") +
                  " --metrics cnt --ci --db " + P("cnt.db"))
                  .code,
              0);
  }
  std::ofstream(dir_ / "pl" / "cnt.lua") << cnt << "-- edited\n";
  Output edited = Run("runs compare 1 2 --db " + P("cnt.db") + " --plugins " + P("pl") + " --output csv");
  ASSERT_EQ(edited.code, 0) << edited.err;
  EXPECT_EQ(Row(edited.out, "all.n").back(), "per_document") << edited.out;
  Output why = Run("runs compare 1 2 --db " + P("cnt.db") + " --plugins " + P("pl"));
  EXPECT_NE(why.out.find("no test for 1 corpus-level metric(s) (all.r): cannot re-aggregate: plugin 'cnt' as run 1 "
                         "ran it (sha256 "),
            std::string::npos)
      << why.out;
  // Slots from different parameters cannot be swapped between runs: no test, and the reason.
  ASSERT_EQ(Run(kCalib + " --predictions " + kCiData + "/calib_a.jsonl --ci").code, 0);                             // 3
  ASSERT_EQ(Run(kCalib + " --predictions " + kCiData + "/calib_b.jsonl --ci --param calibration.bins=5").code, 0);  // 4
  Output differ = Run("runs compare 3 4 --metrics all.accuracy.micro");
  ASSERT_EQ(differ.code, 0) << differ.err;
  EXPECT_NE(differ.out.find("no test for 1 corpus-level metric(s) (all.accuracy.micro): the runs ran plugin "
                            "'calibration' with different parameters\n"),
            std::string::npos)
      << differ.out;
}

}  // namespace
