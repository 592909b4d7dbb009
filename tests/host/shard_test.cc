// `kplab eval --shard I/N` and `kplab runs merge` end to end (docs/store.md, "Shards and runs merge"):
// the merged run equals the single-process run on every aggregate and every per-document value, bit for
// bit (compared as the shortest round-trip decimal text of each double, which is the double), for the
// default metrics and every shipped plugin, 1 to 4 shards, shards in several stores given out of order;
// and every refusal with its exact text.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
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

const std::string kShared = KPLAB_SHARED_DATA;
const std::string kInspec = kShared + "/kpg_testsets_meng2017/inspec";
const std::string kInspecPreds = kShared + "/predictions/catSeq/inspec/predictions.txt";

class Shard : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kplab_shard_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  Output Run(const std::string& args) {
    return kplab::test::RunKplab(dir_, "KPLAB_DB=" + P("default.db") + " KPLAB_MODELS=" + P("models"), args);
  }
  std::string P(const std::string& name) const { return (dir_ / name).string(); }

  // `runs show ID --output json` without its run id: dataset, system, profile, documents and aggregates.
  std::string Show(const std::string& db, const std::string& id) {
    Output o = Run("runs show " + id + " --db " + db + " --output json");
    EXPECT_EQ(o.code, 0) << o.err;
    const auto at = o.out.find(", \"dataset\"");
    return at == std::string::npos ? o.out : o.out.substr(at);
  }
  // Every per-document value, as shortest round-trip decimals (NaN as null).
  std::string Export(const std::string& db, const std::string& id) {
    Output o = Run("runs export " + id + " --db " + db + " --output jsonl");
    EXPECT_EQ(o.code, 0) << o.err;
    return o.out;
  }
  static std::string RunId(const Output& o) {
    const auto at = o.out.find("\"run_id\": ");
    if (at == std::string::npos) return "";
    return o.out.substr(at + 10, o.out.find_first_of(",}", at) - at - 10);
  }
  // The whole run in whole.db; returns its id.
  std::string Whole(const std::string& args) {
    Output o = Run(args + " --db " + P("whole.db") + " --output json");
    EXPECT_EQ(o.code, 0) << o.err;
    return RunId(o);
  }
  // Shards 0..n-1 of `args`, shard i into shards_<tag>_<i % stores>.db; returns the store paths.
  std::vector<std::string> Shards(const std::string& args, int n, int stores, const std::string& tag) {
    std::vector<std::string> dbs;
    for (int s = 0; s < stores; ++s) dbs.push_back(P("shards_" + tag + "_" + std::to_string(s) + ".db"));
    for (int i = n - 1; i >= 0; --i) {  // written last shard first
      Output o = Run(args + " --shard " + std::to_string(i) + "/" + std::to_string(n) + " --db " +
                     dbs[static_cast<std::size_t>(i % stores)] + " --output json");
      EXPECT_EQ(o.code, 0) << o.err;
      EXPECT_NE(o.out.find("\"shard\": {\"index\": " + std::to_string(i) + ", \"count\": " + std::to_string(n)),
                std::string::npos)
          << o.out;
    }
    return dbs;
  }
  // runs merge --from each store (last first) into out; returns the merged run's id.
  std::string Merge(const std::vector<std::string>& dbs, const std::string& out, const std::string& extra = "") {
    std::string args = "runs merge";
    for (auto it = dbs.rbegin(); it != dbs.rend(); ++it) args += " --from " + *it;
    Output o = Run(args + " --db " + out + extra);
    EXPECT_EQ(o.code, 0) << o.err;
    EXPECT_FALSE(o.out.empty());
    return o.out.empty() ? "" : o.out.substr(0, o.out.size() - 1);
  }
  void ExpectSame(const std::string& whole_id, const std::string& out, const std::string& merged_id) {
    const std::string a = Show(P("whole.db"), whole_id), b = Show(out, merged_id);
    EXPECT_NE(a.find("\"aggregates\": {\""), std::string::npos) << a;
    EXPECT_EQ(a, b);
    EXPECT_EQ(Export(P("whole.db"), whole_id), Export(out, merged_id));
  }
  // A merge that must fail with `error`.
  void ExpectRefused(const std::string& args, const std::string& error) {
    Output o = Run(args);
    EXPECT_EQ(o.code, 1) << o.err;
    EXPECT_EQ(o.out, "");
    EXPECT_EQ(o.err, "kplab: " + error + "\n");
  }
  fs::path dir_;
};

// The shortest round-trip decimal of v, as the CSV outputs print it.
std::string Csv(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  for (int p = 1; p <= 17; ++p) {
    char shorter[64];
    std::snprintf(shorter, sizeof shorter, "%.*g", p, v);
    if (std::strtod(shorter, nullptr) == v) return shorter;
  }
  return buf;
}

bool HaveInspec() { return fs::exists(kInspec) && fs::exists(kInspecPreds); }

// Inspec (500 documents), the default metrics: 1, 2, 3 and 4 shards, in 1, 2, 2 and 3 stores, written
// last shard first and merged with the stores given last first.
TEST_F(Shard, InspecDefaultMetricsOneToFourShards) {
  if (!HaveInspec()) GTEST_SKIP() << "no ../shared/data";
  const std::string eval = "eval --dataset " + kInspec + " --predictions " + kInspecPreds;
  const std::string whole = Whole(eval);
  for (int n = 1; n <= 4; ++n) {
    const auto dbs = Shards(eval, n, n == 1 ? 1 : n == 4 ? 3 : 2, std::to_string(n));
    const std::string out = P("merged_" + std::to_string(n) + ".db");
    ExpectSame(whole, out, Merge(dbs, out));
  }
}

// Every shipped plugin but calibration (below; it needs token probabilities), all of them mergeable,
// with a model2vec model, 3 shards in 3 stores. Homogeneity's pairs span the shards: each shard mines
// the whole gold and scores the pairs its documents open.
TEST_F(Shard, InspecEveryShippedPluginThreeShards) {
  if (!HaveInspec()) GTEST_SKIP() << "no ../shared/data";
  const std::string model = std::string(KPLAB_SHARED_MODELS) + "/model2vec-fixtures/test-model-float32";
  if (!fs::exists(model)) GTEST_SKIP() << "no ../shared/models";
  Output imported = Run("model import m2v " + model + " --backend model2vec");
  ASSERT_EQ(imported.code, 0) << imported.err;
  const std::string eval =
      "eval --dataset " + kInspec + " --predictions " + kInspecPreds +
      " --model m2v --metrics exact,rank,rprec,prmu,diversity,semantic,semrp,homogeneity,homogeneity_sem,"
      "homogeneity_vocab --param homogeneity.theta=0.25 --param homogeneity_sem.theta=0.25 "
      "--param homogeneity_vocab.theta=0.25";
  const std::string whole = Whole(eval);
  // Pairs exist, so the homogeneity sums are not trivially empty.
  EXPECT_EQ(Show(P("whole.db"), whole).find("\"all.cp_pairs\": 0,"), std::string::npos);
  const auto dbs = Shards(eval, 3, 3, "all");
  ExpectSame(whole, P("merged.db"), Merge(dbs, P("merged.db")));
}

// bertscore with idf (prepare over the whole corpus in every shard) on the random-weight BERT, 3 shards
// of 5 documents in 2 stores; rescaled too. (calibration and bertscore need their own inputs, so they are
// not in the run above.)
TEST_F(Shard, BertscoreIdfThreeShards) {
  Output imported = Run("model import bert-tiny tests/data/transformer/bert-tiny --backend transformer");
  ASSERT_EQ(imported.code, 0) << imported.err;
  const std::string eval =
      "eval --dataset tests/data/bertscore/idfpairs --predictions tests/data/bertscore/idfpairs/predictions.txt "
      "--model bert-tiny --metrics bertscore --param bertscore.layer=1 --param bertscore.idf=true "
      "--param bertscore.baseline=tests/data/transformer/baseline.tsv";
  const std::string whole = Whole(eval);
  const auto dbs = Shards(eval, 3, 2, "bertscore");
  ExpectSame(whole, P("merged.db"), Merge(dbs, P("merged.db")));
}

// calibration (ECE and its bins: sums of hidden per-bin slots) on its two-document fixture, 2 shards.
TEST_F(Shard, CalibrationTwoShards) {
  const std::string eval =
      "eval --dataset tests/data/calib/dataset.jsonl --predictions tests/data/calib/tokens.jsonl "
      "--metrics exact,calibration --param calibration.bins=4";
  const std::string whole = Whole(eval);
  EXPECT_NE(Show(P("whole.db"), whole).find("\"all.ece\": "), std::string::npos);
  const auto dbs = Shards(eval, 2, 2, "calib");
  ExpectSame(whole, P("merged.db"), Merge(dbs, P("merged.db")));
}

// KP20k (20,000 documents, source text for none: present/absent stay empty in every shard), default
// metrics and homogeneity, 4 shards in 2 stores.
TEST_F(Shard, Kp20kFourShards) {
  const std::string ds = kShared + "/kpg_testsets_meng2017/kp20k";
  const std::string pred = kShared + "/predictions/catSeqTG-2RF1/kp20k/seed1234.txt";
  if (!fs::exists(ds) || !fs::exists(pred)) GTEST_SKIP() << "no ../shared/data";
  const std::string eval =
      "eval --dataset " + ds + " --predictions " + pred + " --metrics exact,rank,rprec,homogeneity";
  const std::string whole = Whole(eval);
  const auto dbs = Shards(eval, 4, 2, "kp20k");
  ExpectSame(whole, P("merged.db"), Merge(dbs, P("merged.db")));
  // Each pair is counted once, by the shard of the document that opens it: the shards' own pair counts
  // add up to the run's, and more than one shard has pairs (documents whose partners are elsewhere).
  auto pairs = [&](const std::string& db, const std::string& id) {
    const std::string show = Show(db, id);
    const auto at = show.find("\"all.cp_pairs\": ");
    return at == std::string::npos ? -1.0 : std::stod(show.substr(at + 16));
  };
  double sum = 0;
  int with_pairs = 0;
  for (const auto& db : dbs) {
    for (const char* id : {"1", "2"}) {
      const double n = pairs(db, id);
      ASSERT_GE(n, 0);
      sum += n;
      with_pairs += n > 0;
    }
  }
  EXPECT_EQ(sum, pairs(P("whole.db"), whole));
  EXPECT_GE(with_pairs, 2);
}

const std::string kShardTiny =
    "eval --dataset examples/tiny --predictions examples/tiny/predictions.txt --metrics exact";

// --shard values, each refused before anything is read or stored.
TEST_F(Shard, BadShardValues) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"4/4", "--shard 4/4: I must be from 0 to 3 (shards are numbered from 0)"},
      {"1/0", "--shard 1/0: N must be at least 1"},
      {"2", "--shard must be I/N, shard I (from 0) of N (got '2')"},
      {"-1/2", "--shard must be I/N, shard I (from 0) of N (got '-1/2')"},
      {"a/b", "--shard must be I/N, shard I (from 0) of N (got 'a/b')"},
      {"1/2/3", "--shard must be I/N, shard I (from 0) of N (got '1/2/3')"},
  };
  for (const auto& [value, error] : cases) {
    Output o = Run(kShardTiny + " --shard " + value + " --db " + P("s.db"));
    EXPECT_EQ(o.code, 1) << value;
    EXPECT_EQ(o.err, "kplab: " + error + " (see 'kplab help')\n") << value;
  }
  Output many = Run(kShardTiny + " --shard 0/6 --db " + P("s.db"));
  EXPECT_EQ(many.code, 1);
  EXPECT_EQ(many.err, "kplab: shard 0/6: 6 shards for 5 documents (expected at most one shard per document)\n");
  Output no_store = Run(kShardTiny + " --shard 0/2 --no-store");
  EXPECT_EQ(no_store.err,
            "kplab: --shard writes a partial run for `kplab runs merge`: it cannot be combined with "
            "--no-store (see 'kplab help')\n");
  EXPECT_FALSE(fs::exists(P("s.db")));
}

// A metric that cannot be merged is refused at `eval --shard`, before any document is scored: one that
// says so, and any plugin API 1 file. Without --shard both run.
TEST_F(Shard, UnmergeableMetricRefusedAtEvalShard) {
  fs::create_directories(dir_ / "pl");
  std::ofstream(dir_ / "pl" / "nbr.lua") << R"(-- kplab-api: 2
return kp.metric {
  name = "nbr", version = "1", unmergeable = "its value ranks every document's neighbours over the whole corpus",
  columns = { "all.n" },
  score = function(doc, _, _, out) out["all.n"] = #doc.preds end,
}
)";
  std::ofstream(dir_ / "pl" / "old.lua") << R"(-- kplab-api: 1
return kp.metric { name = "old", version = "1", score = function(doc) return { ["all.m"] = #doc.preds } end }
)";
  const std::string base = "eval --dataset examples/tiny --predictions examples/tiny/predictions.txt --plugins " +
                           P("pl") + " --db " + P("s.db");
  Output o = Run(base + " --metrics exact,nbr --shard 0/2");
  EXPECT_EQ(o.code, 1);
  EXPECT_EQ(o.err, "kplab: metric 'nbr' cannot be sharded: " + P("pl") +
                       "/nbr.lua declares unmergeable = \"its value ranks every document's neighbours over the whole "
                       "corpus\"\n");
  Output old = Run(base + " --metrics old --shard 1/2");
  EXPECT_EQ(old.code, 1);
  EXPECT_EQ(old.err, "kplab: metric 'old' cannot be sharded: " + P("pl") +
                         "/old.lua is plugin API 1, whose aggregate(cols) `kplab runs merge` cannot re-run (plugin "
                         "API 2 declares its aggregation in columns(c, params))\n");
  EXPECT_FALSE(fs::exists(P("s.db")));  // nothing stored
  EXPECT_EQ(Run(base + " --metrics exact,nbr,old").code, 0);
  std::ofstream(dir_ / "pl" / "bad.lua") << "-- kplab-api: 2\nreturn kp.metric { name = \"bad\", version = \"1\", "
                                            "unmergeable = \"\", columns = {\"x\"}, score = function() end }\n";
  Output bad = Run(base + " --metrics bad");
  EXPECT_EQ(bad.code, 3);
  EXPECT_EQ(bad.err,
            "kplab: " + P("pl") +
                "/bad.lua: field 'unmergeable' must be a non-empty string saying why shards of a run cannot be "
                "merged\n");
}

// A shard's values are over its own documents: `runs table` leaves shards out (the newer shard would
// otherwise stand for the system) and refuses one named with --runs. Hand calculation (tiny, exact):
// the whole run's all.f1@5.micro = 2 * 12 / (25 + 21) = 24/46 (tests/c_api/c_api_test.c); shard 0/2
// (documents 1-2: 3 + 3 hits of 10 predictions, 5 + 4 references) = 2 * 6 / (10 + 9) = 12/19.
TEST_F(Shard, TableLeavesShardsOut) {
  ASSERT_EQ(Run(kShardTiny + " --db " + P("a.db")).code, 0);
  ASSERT_EQ(Run(kShardTiny + " --db " + P("a.db") + " --shard 0/2").code, 0);
  Output shard = Run("runs show 2 --db " + P("a.db") + " --output csv");
  EXPECT_NE(shard.out.find("\nall.f1@5.micro," + Csv(12.0 / 19) + "\n"), std::string::npos) << shard.out;
  Output table = Run("runs table --db " + P("a.db") + " --metrics all.f1@5.micro --output csv");
  EXPECT_EQ(table.code, 0) << table.err;
  EXPECT_NE(table.out.find("\nexamples,tiny,all.f1@5.micro,,F1@5 (micro)," + Csv(24.0 / 46) + ",0,1,"), std::string::npos)
      << table.out;
  Output named = Run("runs table --db " + P("a.db") + " --metrics all.f1@5.micro --runs 2");
  EXPECT_EQ(named.code, 1);
  EXPECT_EQ(named.err,
            "kplab: run 2 is shard 0/2 of a run, with values over its own documents only (merge the "
            "shards with `kplab runs merge` and tabulate the merged run)\n");
}

// The help says how to shard and merge.
TEST_F(Shard, Help) {
  Output eval = Run("help eval");
  EXPECT_NE(eval.out.find("  --shard I/N             score only shard I (from 0) of N contiguous document ranges"),
            std::string::npos)
      << eval.out;
  Output runs = Run("help runs");
  EXPECT_NE(runs.out.find("kplab runs merge [RUN...] --from STORE [--from STORE...] [--db OUT]"), std::string::npos)
      << runs.out;
  Output unknown = Run("runs mrege");
  EXPECT_EQ(unknown.err,
            "kplab: unknown runs subcommand 'mrege' (expected list, show, compare, table, doc, docs, "
            "export, merge, rm) (see 'kplab help')\n");
  Output no_from = Run("runs merge --db " + P("out.db"));
  EXPECT_EQ(no_from.err,
            "kplab: runs merge needs --from STORE (repeatable): the stores the shards are in (see 'kplab help')\n");
  EXPECT_FALSE(fs::exists(P("out.db")));
}

class ShardRefusal : public Shard {
 protected:
  // Shard I/N of tiny (metrics exact) into `db` with extra options.
  void Part(const std::string& shard, const std::string& db, const std::string& extra = "",
            const std::string& eval = kShardTiny) {
    Output o = Run(eval + " --shard " + shard + " --db " + P(db) + " " + extra);
    ASSERT_EQ(o.code, 0) << o.err;
  }
  std::string MergeArgs(const std::vector<std::string>& dbs) {
    std::string args = "runs merge";
    for (const auto& db : dbs) args += " --from " + P(db);
    return args + " --db " + P("out.db");
  }
  // The first 12 hex digits after "sha256 " on the line of `runs show 1 --db DB` starting with `line`.
  std::string Sha(const std::string& db, const std::string& line) {
    const std::string out = Run("runs show 1 --db " + P(db)).out;
    const auto at = out.find(line);
    const auto sha = out.find("sha256 ", at);
    return at == std::string::npos || sha == std::string::npos ? "" : out.substr(sha + 7, 12);
  }
  std::string Label(const std::string& db, const std::string& shard, int id = 1) {
    return "run " + std::to_string(id) + " in " + P(db) + " (shard " + shard + ")";
  }
};

TEST_F(ShardRefusal, DifferentDataset) {
  Part("0/2", "a.db");
  Part("1/2", "b.db", "",
       "eval --dataset tests/data/semrp --predictions tests/data/semrp/predictions.txt --metrics exact");
  const std::string tiny = Sha("a.db", "dataset"), semrp = Sha("b.db", "dataset");
  ExpectRefused(MergeArgs({"a.db", "b.db"}),
                "shards of different datasets: " + Label("b.db", "1/2") + " is on 'semrp' (sha256 " + semrp +
                    ", 7 documents) but " + Label("a.db", "0/2") + " is on 'tiny' (sha256 " + tiny + ", 5 documents)");
}

TEST_F(ShardRefusal, DifferentProfile) {
  Part("0/2", "a.db");
  Part("1/2", "b.db", "--profile kpeval");
  ExpectRefused(MergeArgs({"a.db", "b.db"}), "shards of different profiles: " + Label("b.db", "1/2") +
                                                 " used profile 'kpeval' but " + Label("a.db", "0/2") +
                                                 " used 'kplab'");
}

TEST_F(ShardRefusal, DifferentParameter) {
  Part("0/2", "a.db");
  Part("1/2", "b.db", "--param exact.ks=5");
  ExpectRefused(MergeArgs({"a.db", "b.db"}), "shards with different parameters: exact.ks is '5' in " +
                                                 Label("b.db", "1/2") + " but '5,10,M,O' in " + Label("a.db", "0/2"));
}

// The same plugin name and version, one byte more in the file: a different plugin to the merge.
TEST_F(ShardRefusal, DifferentPluginHash) {
  fs::create_directories(dir_ / "pl");
  fs::copy_file(fs::path(KPLAB_SOURCE_DIR) / "plugins" / "exact.lua", dir_ / "pl" / "exact.lua");
  std::ofstream(dir_ / "pl" / "exact.lua", std::ios::app) << "-- edited\n";
  Part("0/2", "a.db");
  Part("1/2", "b.db", "--plugins " + P("pl"));
  const std::string shipped = Sha("a.db", "plugin   exact"), edited = Sha("b.db", "plugin   exact");
  ASSERT_NE(shipped, edited);
  ExpectRefused(MergeArgs({"a.db", "b.db"}), "shards of different plugin files: plugin 'exact' is 2.0.0 (sha256 " +
                                                 edited + ") in " + Label("b.db", "1/2") + " but 2.0.0 (sha256 " +
                                                 shipped + ") in " + Label("a.db", "0/2"));
}

TEST_F(ShardRefusal, MissingShard) {
  Part("2/3", "a.db");
  Part("0/3", "b.db");
  // tiny's 5 documents: 0/3 = [0, 1), 1/3 = [1, 3), 2/3 = [3, 5); ids are their line numbers.
  ExpectRefused(MergeArgs({"a.db", "b.db"}),
                "missing shard: documents 2-3 ('2' to '3') are in no shard given (shard 1/3)");
  Part("1/3", "b.db");
  Part("0/3", "c.db");
  ExpectRefused(MergeArgs({"a.db", "c.db"}),
                "missing shard: documents 2-3 ('2' to '3') are in no shard given (shard 1/3)");
  ExpectRefused(MergeArgs({"b.db"}), "missing shard: documents 4-5 ('4' to '5') are in no shard given (shard 2/3)");
}

TEST_F(ShardRefusal, OverlappingShards) {
  Part("0/2", "a.db");
  Part("1/2", "a.db");
  Part("0/3", "b.db");
  ExpectRefused(MergeArgs({"a.db", "b.db"}), "shards overlap: " + Label("b.db", "0/3") +
                                                 " has documents 1-1 ('1' to '1') and " + Label("a.db", "0/2") +
                                                 " has documents 1-2 ('1' to '2')");
}

TEST_F(ShardRefusal, DuplicateShard) {
  Part("0/2", "a.db");
  Part("1/2", "a.db");
  Part("1/2", "b.db");
  ExpectRefused(MergeArgs({"a.db", "b.db"}),
                "shard 1/2 is given twice: " + Label("a.db", "1/2", 2) + " and " + Label("b.db", "1/2"));
  // Naming the runs picks one of the two.
  Output o = Run("runs merge " + P("a.db") + ":1 " + P("b.db") + ":1 --from " + P("a.db") + " --from " + P("b.db") +
                 " --db " + P("out.db"));
  EXPECT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(o.out, "1\n");
  ExpectRefused("runs merge 1 --from " + P("a.db") + " --from " + P("b.db"),
                "run 1 is in " + P("a.db") + " and " + P("b.db") + " (name it FILE:ID)");
}

TEST_F(ShardRefusal, WholeRunIsNotAShard) {
  ASSERT_EQ(Run(kShardTiny + " --db " + P("a.db")).code, 0);
  ExpectRefused("runs merge 1 --from " + P("a.db"),
                "run 1 in " + P("a.db") +
                    " is not a shard (a whole run; shards are written by `kplab eval "
                    "--shard I/N`)");
  ExpectRefused("runs merge --from " + P("a.db"),
                "no shards in " + P("a.db") + " (expected runs of `kplab eval --shard I/N`)");
}

// A merge that fails leaves an existing OUT byte for byte as it was: refused shards, and a plugin file
// changed between the shards and the merge (found only after every check of the shards passed).
TEST_F(ShardRefusal, FailedMergeLeavesOutUnchanged) {
  ASSERT_EQ(Run(kShardTiny + " --db " + P("out.db")).code, 0);
  auto snapshot = [&] {
    std::string bytes;
    for (const char* suffix : {"", "-wal"}) {
      if (fs::exists(P("out.db") + suffix)) bytes += kplab::test::Slurp(P("out.db") + suffix) + "|";
    }
    return std::hash<std::string>()(bytes);  // a failure prints two numbers, not the file
  };
  const std::size_t before = snapshot();
  Part("0/2", "a.db");
  ExpectRefused(MergeArgs({"a.db"}), "missing shard: documents 3-5 ('3' to '5') are in no shard given (shard 1/2)");
  EXPECT_EQ(snapshot(), before);
  fs::create_directories(dir_ / "pl");
  fs::copy_file(fs::path(KPLAB_SOURCE_DIR) / "plugins" / "exact.lua", dir_ / "pl" / "exact.lua");
  std::ofstream(dir_ / "pl" / "exact.lua", std::ios::app) << "-- a user's copy\n";  // not the shipped file
  Part("1/2", "b.db", "--plugins " + P("pl"));
  Part("0/2", "b.db", "--plugins " + P("pl"));
  const std::string sha = Sha("b.db", "plugin   exact");
  std::ofstream(dir_ / "pl" / "exact.lua", std::ios::app) << "-- changed after the shards ran\n";
  Output o = Run(MergeArgs({"b.db"}));
  EXPECT_EQ(o.code, 1);
  EXPECT_EQ(o.err.rfind("kplab: plugin 'exact' as the shards ran it (sha256 " + sha + ") is not found: " + P("pl") +
                            "/exact.lua has sha256 ",
                        0),
            0u)
      << o.err;
  EXPECT_EQ(snapshot(), before);
  Output runs = Run("runs list --db " + P("out.db") + " --output csv");
  EXPECT_EQ(std::count(runs.out.begin(), runs.out.end(), '\n'), 2) << runs.out;  // header + the one run
  // With the file as the shards ran it (here under another directory, given with --plugins), the merge
  // succeeds and adds one run beside the old one.
  fs::create_directories(dir_ / "pl2");
  fs::copy_file(fs::path(KPLAB_SOURCE_DIR) / "plugins" / "exact.lua", dir_ / "pl2" / "exact.lua");
  std::ofstream(dir_ / "pl2" / "exact.lua", std::ios::app) << "-- a user's copy\n";
  Output ok = Run(MergeArgs({"b.db"}) + " --plugins " + P("pl2"));
  EXPECT_EQ(ok.code, 0) << ok.err;
  EXPECT_EQ(ok.out, "2\n");
  runs = Run("runs list --db " + P("out.db") + " --output csv");
  EXPECT_EQ(std::count(runs.out.begin(), runs.out.end(), '\n'), 3) << runs.out;
}

}  // namespace
