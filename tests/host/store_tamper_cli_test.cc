// The CLI on stores changed behind kplab's back (docs/store.md, "Reading a store back"). Every reading
// command refuses a run that does not read back, with the read-back's message and exit 4 (`runs show`
// printed such a run's aggregates without the documents behind them). A slot changed is refused by the
// digest stored with the slots (schema version 6). Then `kplab runs merge`: what no single shard shows
// is checked across them and against each shard's own aggregates; each change below keeps one shard
// consistent in itself (what the read-back checks alone, its slots' digest recomputed: Redigest), as a
// careful forger or a half-finished copy would, and the merge refuses it with its exact message (exit
// 4), writing nothing. The
// shards are examples/tiny's 5 documents, 0/2 = documents 1-2, 1/2 = documents 3-5.
#include <SQLiteCpp/SQLiteCpp.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "cli_harness.h"

namespace fs = std::filesystem;
using kplab::test::Output;

namespace {

class StoreTamperCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kplab_store_tamper_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    for (int i : {0, 1}) {
      Output o = Run("eval --dataset examples/tiny --predictions examples/tiny/predictions.txt --metrics exact --shard " +
                     std::to_string(i) + "/2 --db " + S(i));
      ASSERT_EQ(o.code, 0) << o.err;
    }
  }
  void TearDown() override { fs::remove_all(dir_); }
  Output Run(const std::string& args) { return kplab::test::RunKplab(dir_, "KPLAB_MODELS=" + P("models"), args); }
  std::string P(const std::string& name) const { return (dir_ / name).string(); }
  std::string S(int i) const { return P("s" + std::to_string(i) + ".db"); }
  void Sql(int shard, const std::string& sql) {
    SQLite::Database db(S(shard), SQLite::OPEN_READWRITE);
    db.exec(sql);
  }
  // Score columns renumbered 0..k-1 after some were deleted (what a forger would do to keep them in order).
  void Renumber(int shard) {
    Sql(shard, "UPDATE scores SET idx = idx + 100000");
    Sql(shard, "UPDATE scores SET idx = (SELECT count(*) FROM scores s WHERE s.run_id = scores.run_id AND s.idx < "
               "scores.idx)");
  }
  // The slots' digest recomputed from the rows as they now are, as a forger who read docs/store.md would:
  // here by taking the file back to version 5, whose migration to 6 computes it (`runs list` migrates).
  void Redigest(int shard) {
    Sql(shard, "ALTER TABLE runs DROP COLUMN slots_digest; UPDATE meta SET value = '5' WHERE key = 'schema_version'");
    Output o = Run("runs list --db " + S(shard));
    ASSERT_EQ(o.code, 0) << o.err;
  }
  Output Merge() { return Run("runs merge --from " + S(0) + " --from " + S(1) + " --db " + P("out.db")); }
  std::string Label(int i) const { return "run 1 in " + S(i) + " (shard " + std::to_string(i) + "/2)"; }

  fs::path dir_;
};

// A whole run's column of 3 values where the run has 5 documents (the export case), through
// every reading command.
TEST_F(StoreTamperCli, EveryReadingCommandRefusesARunThatDoesNotReadBack) {
  const std::string db = P("whole.db");
  for (const char* system : {"a", "b"}) {
    Output o = Run("eval --dataset examples/tiny --predictions examples/tiny/predictions.txt --metrics exact --system " +
                   std::string(system) + " --db " + db);
    ASSERT_EQ(o.code, 0) << o.err;
  }
  {
    SQLite::Database d(db, SQLite::OPEN_READWRITE);
    d.exec("UPDATE scores SET n = 3, values_f64le = substr(values_f64le, 1, 24) WHERE run_id = 1 AND idx = 0");
  }
  const std::string want = "kplab: " + db + ": run 1: scores of 'all.p@5' hold 3 values, the run has 5 documents\n";
  for (const std::string cmd :
       {"runs show 1", "runs show 1 --output json", "runs export 1", "runs compare 1 2", "runs compare 2 1",
        "runs docs 1 --sort all.p@5", "runs table --metrics all.p@5.macro --baseline a"}) {
    Output o = Run(cmd + " --db " + db);
    EXPECT_EQ(o.code, 4) << cmd;
    EXPECT_EQ(o.err, want) << cmd;
  }
  // The other run, and the list, still read (they do not read run 1's columns).
  EXPECT_EQ(Run("runs show 2 --db " + db).code, 0);
  EXPECT_EQ(Run("runs list --db " + db).code, 0);
}

TEST_F(StoreTamperCli, UntouchedShardsMerge) {
  Output o = Merge();
  EXPECT_EQ(o.code, 0) << o.err;
  EXPECT_TRUE(fs::exists(P("out.db")));
}

// The case: shard 1's rows of subset 'present' deleted. Merged, all.p@5.micro was 0.60 where the
// run has 0.48 (12 hits in 25 predictions, tests/c_api/c_api_test.c); now the shard is refused alone.
TEST_F(StoreTamperCli, DeletedSlotsOfOneShard) {
  Sql(1, "DELETE FROM run_slots WHERE subset = 'present'");
  Output o = Merge();
  EXPECT_EQ(o.code, 4);
  EXPECT_EQ(o.err, "kplab: " + S(1) + ": run 1: score column 'present.p@5' is no slot the run stores (its slots "
                                      "were changed or deleted)\n");
  EXPECT_FALSE(fs::exists(P("out.db")));
}

// The same with the shard's present.* columns deleted too and the rest renumbered: consistent alone, and
// refused because the other shard stores that subset.
TEST_F(StoreTamperCli, ASubsetOneShardStoresAndTheOtherDoesNot) {
  Sql(1, "DELETE FROM run_slots WHERE subset = 'present'");
  Sql(1, "DELETE FROM scores WHERE metric LIKE 'present.%'");
  Renumber(1);
  Redigest(1);
  Output check = Run("runs export 1 --db " + S(1));
  ASSERT_EQ(check.code, 0) << check.err;  // the shard alone reads back
  Output o = Merge();
  EXPECT_EQ(o.code, 4);
  EXPECT_EQ(o.err, "kplab: " + Label(0) + " stored the slots of plugin 'exact' in subset 'present' but " + Label(1) +
                       " did not (every shard of a run stores the same subsets: slots were deleted)\n");
  EXPECT_FALSE(fs::exists(P("out.db")));
}

// Every shard without subset 'all' (every run stores it).
TEST_F(StoreTamperCli, TheSubsetEveryRunStoresIsMissing) {
  for (int i : {0, 1}) {
    Sql(i, "DELETE FROM run_slots WHERE subset = 'all'");
    Sql(i, "DELETE FROM scores WHERE metric LIKE 'all.%'");
    Renumber(i);
    Redigest(i);
  }
  Output o = Merge();
  EXPECT_EQ(o.code, 4);
  EXPECT_EQ(o.err, "kplab: " + Label(0) +
                       " stored no slots of plugin 'exact' in subset 'all', which every run stores (its slots were "
                       "deleted)\n");
}

// A subset renamed in slots and columns alike: a subset the plugin does not have.
TEST_F(StoreTamperCli, ASubsetThePluginDoesNotHave) {
  Sql(1, "UPDATE run_slots SET subset = 'absentee' WHERE subset = 'absent'");
  Sql(1, "UPDATE scores SET metric = replace(metric, 'absent.', 'absentee.') WHERE metric LIKE 'absent.%'");
  Redigest(1);
  Output o = Merge();
  EXPECT_EQ(o.code, 4);
  EXPECT_EQ(o.err, "kplab: " + Label(1) + " stored slots of plugin 'exact' in subset 'absentee', which the plugin "
                                          "does not have\n");
}

// A hidden slot changed (no score column mirrors it): the shard's own aggregates no longer follow from
// its slots. Shard 1 has 2 + 2 + 2 = 6 hits in its top 5s of 15 predictions (c_api_test.c's hand
// count), so its all.p@5.micro is 6/15 = 0.4; with the hits zeroed its slots give 0.
// Changed alone, the digest refuses the shard; with the digest recomputed, the merge does.
TEST_F(StoreTamperCli, AHiddenSlotChanged) {
  Sql(1, "UPDATE run_slots SET values_f64le = zeroblob(24) WHERE subset = 'all' AND name = 'hits@5'");
  Output alone = Merge();
  EXPECT_EQ(alone.code, 4);
  EXPECT_EQ(alone.err, "kplab: " + S(1) +
                           ": run 1: its slots are not the ones stored with it (run_slots differs "
                           "from runs.slots_digest: a slot row was changed, added or deleted)\n");
  EXPECT_FALSE(fs::exists(P("out.db")));
  Redigest(1);
  Output o = Merge();
  EXPECT_EQ(o.code, 4);
  EXPECT_EQ(o.err, "kplab: " + Label(1) + " stored aggregate 'all.p@5.micro' = 0.4, but its slots give 0 "
                                          "(its slots or aggregates were changed)\n");
}

// An aggregate a shard stored that none of its plugins gives (added), or one deleted.
TEST_F(StoreTamperCli, AggregatesAddedOrDeleted) {
  Sql(1, "INSERT INTO aggregates(run_id, idx, metric, value) SELECT 1, max(idx) + 1, 'all.extra', 1 FROM aggregates");
  Output o = Merge();
  EXPECT_EQ(o.code, 4);
  EXPECT_EQ(o.err, "kplab: " + Label(1) + " stored aggregate 'all.extra', which none of its plugins gives (its "
                                          "aggregates were changed)\n");
  Sql(1, "DELETE FROM aggregates WHERE metric = 'all.extra' OR metric = 'all.p@5.micro'");
  Renumber(1);  // scores are untouched; aggregates keep their numbers but one is gone
  Sql(1, "UPDATE aggregates SET idx = idx + 100000");
  Sql(1, "UPDATE aggregates SET idx = (SELECT count(*) FROM aggregates a WHERE a.run_id = aggregates.run_id AND "
         "a.idx < aggregates.idx)");
  o = Merge();
  EXPECT_EQ(o.code, 4);
  EXPECT_EQ(o.err, "kplab: " + Label(1) + " stored no aggregate 'all.p@5.micro', which its slots of plugin 'exact' "
                                          "give (its aggregates were changed or deleted)\n");
}

}  // namespace
