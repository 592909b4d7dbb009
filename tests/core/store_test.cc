#include "kplab/store.h"
#include "kplab/sha256.h"
#include "temp_dir.h"

#include <SQLiteCpp/SQLiteCpp.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace kplab {
namespace {

namespace fs = std::filesystem;

constexpr double kStoreNaN = std::numeric_limits<double>::quiet_NaN();

using test::TempDir;

RunRecord MakeStoreRun(const std::string& system = "one2set", const std::string& created_at = "") {
  RunRecord run;
  run.dataset_name = "inspec";
  run.dataset_path = "data/inspec";
  run.dataset_format = "hulth";
  run.dataset_hash = "abc123";
  run.doc_ids = {"d1", "d2", "d3"};
  run.system = system;
  run.predictions_path = "preds/" + system + ".txt";
  run.predictions_hash = "def456";
  run.profile = "kplab";
  run.params_json = R"({"k":[5,10],"stemmer":"nltk"})";
  run.plugins = {{"f1", "1.0.0", "aa11", "plugins/f1.lua"}, {"semrp", "1.2.0", "bb22", "plugins/semrp.lua"}};
  run.embedder_fingerprint = "glove-6b-100d:0123";
  run.kplab_version = "0.1.0";
  run.created_at = created_at;
  run.elapsed_seconds = 0.25;
  return run;
}

ScoreColumns MakeScores() {
  ScoreColumns s;
  s.metrics = {"f1@5", "semrp"};
  s.columns = {{0.5, 0.0, 1.0}, {kStoreNaN, 0.125, -0.0}};
  return s;
}

std::vector<AggregateValue> MakeAggregates() {
  return {{"f1@5", 0.5, 0.25, 0.75}, {"semrp", 0.0625, std::nullopt, std::nullopt}, {"undefined", kStoreNaN, {}, {}}};
}

int64_t Count(SQLite::Database& db, const std::string& table) {
  return db.execAndGet("SELECT count(*) FROM " + table).getInt64();
}

void ExpectAllEmpty(const std::string& path) {
  SQLite::Database db(path, SQLite::OPEN_READONLY);
  for (const char* table :
       {"datasets", "documents", "systems", "runs", "run_plugins", "scores", "aggregates"}) {
    EXPECT_EQ(Count(db, table), 0) << table;
  }
}

void ExpectSameBits(const std::vector<double>& a, const std::vector<double>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(std::bit_cast<uint64_t>(a[i]), std::bit_cast<uint64_t>(b[i])) << i;
  }
}

// A run's document ids as a view of the records that hold them (DocIds::Of, what kplab eval gives a
// run): read like the strings themselves, the records kept alive by the view alone, equal to a copy, and
// a copy of its own from the first change on.
struct IdHolder {
  int before = 0;
  std::string id;
  double after = 0;
};

TEST(DocIdsTest, AViewReadsItsRecordsAndKeepsThemAlive) {
  DocIds ids;
  std::weak_ptr<const std::vector<IdHolder>> watch;
  {
    auto records = std::make_shared<const std::vector<IdHolder>>(std::vector<IdHolder>{
        {1, "doc-1", 0.5}, {2, "a much longer document id, past the short-string buffer", 1}, {3, "", 2}});
    watch = records;
    ids = DocIds::Of(records, std::span<const IdHolder>(*records), &IdHolder::id);
  }
  ASSERT_FALSE(watch.expired());  // held by the view alone
  EXPECT_FALSE(ids.owned());
  ASSERT_EQ(ids.size(), 3u);
  EXPECT_EQ(ids[0], "doc-1");
  EXPECT_EQ(ids[1], "a much longer document id, past the short-string buffer");
  EXPECT_EQ(ids.back(), "");
  EXPECT_EQ(std::find(ids.begin(), ids.end(), "doc-1") - ids.begin(), 0);
  EXPECT_EQ(ids.ToVector(),
            (std::vector<std::string>{"doc-1", "a much longer document id, past the short-string buffer", ""}));
  const DocIds copy = ids.ToVector();
  EXPECT_TRUE(copy.owned());
  EXPECT_EQ(ids, copy);
  EXPECT_FALSE(ids == DocIds({"doc-1", "x", ""}));
  // The first change copies the strings and lets the records go.
  ids.push_back("doc-4");
  EXPECT_TRUE(ids.owned());
  EXPECT_TRUE(watch.expired());
  EXPECT_EQ(ids.size(), 4u);
  EXPECT_EQ(ids[1], "a much longer document id, past the short-string buffer");
  // A view of no records is empty.
  auto none = std::make_shared<const std::vector<IdHolder>>();
  EXPECT_TRUE(DocIds::Of(none, std::span<const IdHolder>(*none), &IdHolder::id).empty());
}

// A line dataset's ids, the numbers 1 to n, by hand; made only when read, once, whichever thread is first.
TEST(DocIdsTest, NumberedIdsAreTheNumbersMadeWhenFirstRead) {
  const DocIds ids = DocIds::Numbered(12);
  EXPECT_TRUE(ids.owned());  // keeps no corpus alive
  ASSERT_EQ(ids.size(), 12u);
  EXPECT_EQ(ids.front(), "1");
  EXPECT_EQ(ids[8], "9");
  EXPECT_EQ(ids[9], "10");
  EXPECT_EQ(ids.back(), "12");
  EXPECT_EQ(ids, DocIds({"1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12"}));
  EXPECT_FALSE(ids == DocIds::Numbered(11));
  EXPECT_TRUE(DocIds::Numbered(0).empty());
  EXPECT_EQ(DocIds::Numbered(0), DocIds());
  // A copy reads the same numbers; a change makes a copy of its own and leaves the original as it was.
  DocIds copy = ids;
  copy.push_back("d13");
  EXPECT_EQ(copy.size(), 13u);
  EXPECT_EQ(copy[11], "12");
  EXPECT_EQ(copy.back(), "d13");
  EXPECT_EQ(ids.size(), 12u);
  // Not one string is made before an id is read: the count of a trillion documents is only a count
  // (made up front, their strings would not fit in memory).
  const DocIds huge = DocIds::Numbered(std::size_t{1} << 40);
  EXPECT_EQ(huge.size(), std::size_t{1} << 40);
  EXPECT_FALSE(huge.empty());
  // Many threads reading first at once each read the numbers (the strings are made once).
  const DocIds shared = DocIds::Numbered(100000);
  std::vector<std::string> seen(8);
  {
    std::vector<std::jthread> readers;
    for (std::size_t t = 0; t < seen.size(); ++t) {
      readers.emplace_back([&, t] { seen[t] = shared[t * 12345] + "/" + shared[99999 - t]; });
    }
  }
  for (std::size_t t = 0; t < seen.size(); ++t) {
    EXPECT_EQ(seen[t], std::to_string(t * 12345 + 1) + "/" + std::to_string(100000 - t));
  }
  EXPECT_EQ(&shared[7], &shared[7]);  // one string, not one made per read
}

// A run made from a view is stored with the same ids as one made from a copy.
TEST(DocIdsTest, AViewIsStoredAsItsIds) {
  auto records =
      std::make_shared<const std::vector<IdHolder>>(std::vector<IdHolder>{{0, "d1", 0}, {0, "d2", 0}, {0, "d3", 0}});
  RunRecord in = MakeStoreRun();
  in.doc_ids = DocIds::Of(records, std::span<const IdHolder>(*records), &IdHolder::id);
  auto store = RunStore::Open(":memory:");
  ASSERT_TRUE(store.ok());
  auto id = store->SaveRun(in, MakeScores(), MakeAggregates());
  ASSERT_TRUE(id.ok()) << id.error().message;
  auto out = store->GetRun(*id);
  ASSERT_TRUE(out.ok());
  EXPECT_TRUE(out->doc_ids.owned());
  EXPECT_EQ(out->doc_ids, MakeStoreRun().doc_ids);
  // Numbered ids are stored as their numbers.
  auto other = RunStore::Open(":memory:");
  ASSERT_TRUE(other.ok());
  in.doc_ids = DocIds::Numbered(3);
  auto numbered = other->SaveRun(in, MakeScores(), MakeAggregates());
  ASSERT_TRUE(numbered.ok()) << numbered.error().message;
  auto back = other->GetRun(*numbered);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->doc_ids, (DocIds{"1", "2", "3"}));
}

TEST(RunStoreTest, OpenMemory) {
  auto store = RunStore::Open(":memory:");
  ASSERT_TRUE(store.ok()) << store.error().message;
  EXPECT_EQ(store->schema_version(), RunStore::CurrentSchemaVersion());
  EXPECT_EQ(RunStore::CurrentSchemaVersion(), 6);
  auto runs = store->ListRuns();
  ASSERT_TRUE(runs.ok());
  EXPECT_TRUE(runs->empty());
}

TEST(RunStoreTest, RoundTripsEveryField) {
  auto store = RunStore::Open(":memory:");
  ASSERT_TRUE(store.ok()) << store.error().message;
  RunRecord in = MakeStoreRun("one2set", "2024-05-01T10:00:00Z");
  auto id = store->SaveRun(in, MakeScores(), MakeAggregates());
  ASSERT_TRUE(id.ok()) << id.error().message;
  EXPECT_GT(*id, 0);

  auto out = store->GetRun(*id);
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_EQ(out->id, *id);
  EXPECT_EQ(out->status, "ok");
  EXPECT_EQ(out->error, "");
  EXPECT_EQ(out->dataset_name, in.dataset_name);
  EXPECT_EQ(out->dataset_path, in.dataset_path);
  EXPECT_EQ(out->dataset_format, in.dataset_format);
  EXPECT_EQ(out->dataset_hash, in.dataset_hash);
  EXPECT_EQ(out->doc_ids, in.doc_ids);
  EXPECT_EQ(out->system, in.system);
  EXPECT_EQ(out->predictions_path, in.predictions_path);
  EXPECT_EQ(out->predictions_hash, in.predictions_hash);
  EXPECT_EQ(out->profile, in.profile);
  EXPECT_EQ(out->params_json, in.params_json);
  ASSERT_EQ(out->plugins.size(), 2u);
  EXPECT_EQ(out->plugins[1].name, "semrp");
  EXPECT_EQ(out->plugins[1].version, "1.2.0");
  EXPECT_EQ(out->plugins[1].sha256, "bb22");
  EXPECT_EQ(out->plugins[1].file, "plugins/semrp.lua");
  EXPECT_EQ(out->plugins[0].name, "f1");
  EXPECT_EQ(out->embedder_fingerprint, in.embedder_fingerprint);
  EXPECT_EQ(out->kplab_version, in.kplab_version);
  EXPECT_EQ(out->created_at, "2024-05-01T10:00:00Z");
  EXPECT_EQ(out->elapsed_seconds, 0.25);

  auto scores = store->GetScores(*id);
  ASSERT_TRUE(scores.ok()) << scores.error().message;
  ScoreColumns expected = MakeScores();
  EXPECT_EQ(scores->metrics, expected.metrics);
  ASSERT_EQ(scores->columns.size(), 2u);
  ExpectSameBits(scores->columns[0], expected.columns[0]);
  ExpectSameBits(scores->columns[1], expected.columns[1]);  // NaN and -0.0 bit for bit
  EXPECT_TRUE(std::isnan(scores->columns[1][0]));

  auto aggs = store->GetAggregates(*id);
  ASSERT_TRUE(aggs.ok()) << aggs.error().message;
  ASSERT_EQ(aggs->size(), 3u);
  EXPECT_EQ((*aggs)[0].metric, "f1@5");
  EXPECT_EQ((*aggs)[0].value, 0.5);
  EXPECT_EQ((*aggs)[0].ci_low, 0.25);
  EXPECT_EQ((*aggs)[0].ci_high, 0.75);
  EXPECT_EQ((*aggs)[1].metric, "semrp");
  EXPECT_EQ((*aggs)[1].value, 0.0625);
  EXPECT_FALSE((*aggs)[1].ci_low.has_value());
  EXPECT_FALSE((*aggs)[1].ci_high.has_value());
  EXPECT_EQ((*aggs)[2].metric, "undefined");
  EXPECT_TRUE(std::isnan((*aggs)[2].value));
}

TEST(RunStoreTest, FillsCreatedAt) {
  auto store = RunStore::Open(":memory:");
  ASSERT_TRUE(store.ok());
  auto id = store->SaveRun(MakeStoreRun(), {}, {});
  ASSERT_TRUE(id.ok()) << id.error().message;
  auto run = store->GetRun(*id);
  ASSERT_TRUE(run.ok());
  ASSERT_EQ(run->created_at.size(), 20u) << run->created_at;
  EXPECT_EQ(run->created_at[10], 'T');
  EXPECT_EQ(run->created_at.back(), 'Z');
}

TEST(RunStoreTest, ListRunsNewestFirst) {
  auto store = RunStore::Open(":memory:");
  ASSERT_TRUE(store.ok());
  auto a = store->SaveRun(MakeStoreRun("a", "2024-05-01T10:00:00Z"), MakeScores(), {});
  auto b = store->SaveRun(MakeStoreRun("b", "2024-06-01T10:00:00Z"), MakeScores(), {});
  auto c = store->SaveRun(MakeStoreRun("c", "2024-03-01T10:00:00Z"), MakeScores(), {});
  auto d = store->SaveRun(MakeStoreRun("d", "2024-06-01T10:00:00Z"), MakeScores(), {});  // same time as b
  ASSERT_TRUE(a.ok() && b.ok() && c.ok() && d.ok());
  auto runs = store->ListRuns();
  ASSERT_TRUE(runs.ok()) << runs.error().message;
  ASSERT_EQ(runs->size(), 4u);
  EXPECT_EQ((*runs)[0].id, *d);  // ties: later id first
  EXPECT_EQ((*runs)[1].id, *b);
  EXPECT_EQ((*runs)[2].id, *a);
  EXPECT_EQ((*runs)[3].id, *c);
  EXPECT_EQ((*runs)[0].system, "d");
  EXPECT_EQ((*runs)[0].created_at, "2024-06-01T10:00:00Z");
  EXPECT_EQ((*runs)[0].status, "ok");
  EXPECT_EQ((*runs)[0].dataset_name, "inspec");
  EXPECT_EQ((*runs)[0].profile, "kplab");
  EXPECT_EQ((*runs)[0].n_docs, 3);
}

TEST(RunStoreTest, FailedRunHasErrorAndNoScores) {
  auto store = RunStore::Open(":memory:");
  ASSERT_TRUE(store.ok());
  RunRecord run = MakeStoreRun();
  run.status = "failed";
  run.error = "plugins/semrp.lua:12: attempt to index a nil value\nstack traceback: ...";
  auto id = store->SaveRun(run, {}, {});
  ASSERT_TRUE(id.ok()) << id.error().message;
  auto out = store->GetRun(*id);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->status, "failed");
  EXPECT_EQ(out->error, run.error);
  EXPECT_TRUE(store->GetScores(*id)->metrics.empty());
  EXPECT_TRUE(store->GetAggregates(*id)->empty());

  auto with_scores = store->SaveRun(run, MakeScores(), {});
  ASSERT_FALSE(with_scores.ok());
  EXPECT_EQ(with_scores.error().message, "cannot save run: a failed run has no scores or aggregates");
  run.error.clear();
  auto no_error = store->SaveRun(run, {}, {});
  ASSERT_FALSE(no_error.ok());
  EXPECT_EQ(no_error.error().message, "cannot save run: a failed run needs an error message");
}

TEST(RunStoreTest, RejectsBadInputWithExactMessages) {
  auto store = RunStore::Open(":memory:");
  ASSERT_TRUE(store.ok());
  auto expect_error = [&](const RunRecord& run, const ScoreColumns& scores,
                          const std::vector<AggregateValue>& aggs, const std::string& message) {
    auto id = store->SaveRun(run, scores, aggs);
    ASSERT_FALSE(id.ok());
    EXPECT_EQ(id.error().message, message);
  };
  RunRecord run = MakeStoreRun();
  ScoreColumns scores = MakeScores();
  scores.columns[1].pop_back();
  expect_error(run, scores, {},
               "cannot save run: score column 'semrp' has 2 values (expected 3, one per document)");
  scores = MakeScores();
  scores.metrics.pop_back();
  expect_error(run, scores, {}, "cannot save run: scores have 1 metric names but 2 columns");
  scores = MakeScores();
  scores.metrics[1] = "f1@5";
  expect_error(run, scores, {}, "cannot save run: metric 'f1@5' appears twice in scores");
  expect_error(run, {}, {{"p", 1, {}, {}}, {"p", 2, {}, {}}},
               "cannot save run: metric 'p' appears twice in aggregates");
  RunRecord bad = run;
  bad.status = "done";
  expect_error(bad, {}, {}, "cannot save run: status 'done' is not 'ok' or 'failed'");
  bad = run;
  bad.created_at = "2024-05-01 10:00";
  expect_error(
      bad, {}, {},
      "cannot save run: created_at '2024-05-01 10:00' is not ISO 8601 UTC (expected YYYY-MM-DDTHH:MM:SSZ)");
  bad = run;
  bad.params_json = "[1, 2]";
  expect_error(bad, {}, {}, "cannot save run: params_json is not a JSON object");
  bad.params_json = "{";
  expect_error(bad, {}, {}, "cannot save run: params_json is not a JSON object");

  auto runs = store->ListRuns();
  ASSERT_TRUE(runs.ok());
  EXPECT_TRUE(runs->empty());
}

TEST(RunStoreTest, BadColumnLengthLeavesNoRows) {
  TempDir dir;
  const std::string path = dir.File("kplab.db");
  {
    auto store = RunStore::Open(path);
    ASSERT_TRUE(store.ok()) << store.error().message;
    ScoreColumns scores = MakeScores();
    scores.columns[0].push_back(1.0);
    auto id = store->SaveRun(MakeStoreRun(), scores, MakeAggregates());
    ASSERT_FALSE(id.ok());
    EXPECT_EQ(id.error().message,
              "cannot save run: score column 'f1@5' has 4 values (expected 3, one per document)");
  }
  ExpectAllEmpty(path);
}

TEST(RunStoreTest, FailureAfterPartialInsertsRollsBack) {
  TempDir dir;
  const std::string path = dir.File("kplab.db");
  auto store = RunStore::Open(path);
  ASSERT_TRUE(store.ok()) << store.error().message;
  {
    // The aggregates are written last: by then dataset, documents, system, run, plugins and scores exist.
    SQLite::Database db(path, SQLite::OPEN_READWRITE);
    db.exec(
        "CREATE TRIGGER fail_aggregates BEFORE INSERT ON aggregates BEGIN SELECT RAISE(ABORT, 'forced'); "
        "END");
  }
  auto id = store->SaveRun(MakeStoreRun(), MakeScores(), MakeAggregates());
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.error().message, path + ": cannot save run (forced)");
  ExpectAllEmpty(path);

  {
    SQLite::Database db(path, SQLite::OPEN_READWRITE);
    db.exec("DROP TRIGGER fail_aggregates");
  }
  id = store->SaveRun(MakeStoreRun(), MakeScores(), MakeAggregates());
  ASSERT_TRUE(id.ok()) << id.error().message;
  EXPECT_EQ(store->GetAggregates(*id)->size(), 3u);
}

TEST(RunStoreTest, DatasetIsSharedAndChecked) {
  auto store = RunStore::Open(":memory:");
  ASSERT_TRUE(store.ok());
  ASSERT_TRUE(store->SaveRun(MakeStoreRun("a"), MakeScores(), {}).ok());
  ASSERT_TRUE(store->SaveRun(MakeStoreRun("b"), MakeScores(), {}).ok());

  RunRecord other = MakeStoreRun("c");
  other.doc_ids = {"d1", "d2"};
  auto id = store->SaveRun(other, {}, {});
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(
      id.error().message,
      "cannot save run: dataset data/inspec (hash abc123) is stored with 3 documents but this run has 2");
  other.doc_ids = {"d1", "dX", "d3"};
  id = store->SaveRun(other, {}, {});
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(
      id.error().message,
      "cannot save run: dataset data/inspec (hash abc123) is stored with other document ids (document 2 is "
      "'d2', this run has 'dX')");
}

TEST(RunStoreTest, DeleteRunCascades) {
  TempDir dir;
  const std::string path = dir.File("kplab.db");
  auto store = RunStore::Open(path);
  ASSERT_TRUE(store.ok()) << store.error().message;
  auto a = store->SaveRun(MakeStoreRun("a"), MakeScores(), MakeAggregates());
  auto b = store->SaveRun(MakeStoreRun("b"), MakeScores(), MakeAggregates());
  ASSERT_TRUE(a.ok() && b.ok());

  ASSERT_TRUE(store->DeleteRun(*a).ok());
  {
    SQLite::Database db(path, SQLite::OPEN_READONLY);
    EXPECT_EQ(Count(db, "runs"), 1);
    EXPECT_EQ(Count(db, "run_plugins"), 2);
    EXPECT_EQ(Count(db, "scores"), 2);
    EXPECT_EQ(Count(db, "aggregates"), 3);
    EXPECT_EQ(Count(db, "systems"), 1);   // "a" is gone, "b" is in use
    EXPECT_EQ(Count(db, "datasets"), 1);  // still used by run b
    EXPECT_EQ(Count(db, "documents"), 3);
  }
  auto gone = store->GetRun(*a);
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(gone.error().message, "run " + std::to_string(*a) + " not found");
  EXPECT_EQ(store->GetScores(*a).error().message, "run " + std::to_string(*a) + " not found");
  EXPECT_EQ(store->GetAggregates(*a).error().message, "run " + std::to_string(*a) + " not found");
  Status again = store->DeleteRun(*a);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.message(), "run " + std::to_string(*a) + " not found");

  ASSERT_TRUE(store->DeleteRun(*b).ok());
  ExpectAllEmpty(path);

  // Ids are never reused, so "run 2" keeps meaning the deleted run.
  auto c = store->SaveRun(MakeStoreRun("c"), {}, {});
  ASSERT_TRUE(c.ok());
  EXPECT_GT(*c, *b);
}

TEST(RunStoreTest, ReopenPreservesRuns) {
  TempDir dir;
  const std::string path = dir.File("kplab.db");
  int64_t id = 0;
  {
    auto store = RunStore::Open(path);
    ASSERT_TRUE(store.ok()) << store.error().message;
    auto saved = store->SaveRun(MakeStoreRun("one2set", "2024-05-01T10:00:00Z"), MakeScores(), MakeAggregates());
    ASSERT_TRUE(saved.ok()) << saved.error().message;
    id = *saved;
  }
  {
    SQLite::Database db(path, SQLite::OPEN_READONLY);
    EXPECT_EQ(db.execAndGet("PRAGMA journal_mode").getString(), "wal");
    EXPECT_EQ(db.execAndGet("SELECT value FROM meta WHERE key = 'schema_version'").getString(), "6");
  }
  auto store = RunStore::Open(path);
  ASSERT_TRUE(store.ok()) << store.error().message;
  EXPECT_EQ(store->schema_version(), 6);
  auto runs = store->ListRuns();
  ASSERT_TRUE(runs.ok());
  ASSERT_EQ(runs->size(), 1u);
  EXPECT_EQ((*runs)[0].id, id);
  auto run = store->GetRun(id);
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->doc_ids, MakeStoreRun().doc_ids);
  EXPECT_EQ(run->plugins.size(), 2u);
  auto scores = store->GetScores(id);
  ASSERT_TRUE(scores.ok());
  ExpectSameBits(scores->columns[1], MakeScores().columns[1]);
  EXPECT_EQ((*store->GetAggregates(id))[0].ci_high, 0.75);
}

TEST(RunStoreTest, MigratesEmptyFile) {
  TempDir dir;
  const std::string path = dir.File("empty.db");
  std::ofstream(path).close();  // zero bytes: SQLite treats it as an empty database (version 0)
  auto store = RunStore::Open(path);
  ASSERT_TRUE(store.ok()) << store.error().message;
  EXPECT_EQ(store->schema_version(), RunStore::CurrentSchemaVersion());
  EXPECT_TRUE(store->SaveRun(MakeStoreRun(), MakeScores(), MakeAggregates()).ok());
}

TEST(RunStoreTest, MigratesVersionZeroDatabase) {
  TempDir dir;
  const std::string path = dir.File("v0.db");
  {
    // A valid SQLite file without any table, as another tool may have created it.
    SQLite::Database db(path, SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
    db.exec("PRAGMA user_version = 0; VACUUM");
  }
  ASSERT_GT(fs::file_size(path), 0u);
  auto store = RunStore::Open(path);
  ASSERT_TRUE(store.ok()) << store.error().message;
  EXPECT_EQ(store->schema_version(), 6);
}

TEST(RunStoreTest, MigratesVersionOneToTwoKeepingRuns) {
  TempDir dir;
  const std::string path = dir.File("v1.db");
  int64_t id = 0;
  {
    auto store = RunStore::Open(path);
    ASSERT_TRUE(store.ok()) << store.error().message;
    id = *store->SaveRun(MakeStoreRun(), MakeScores(), MakeAggregates());
  }
  {
    // Turn it back into a version-1 file: version 2 only added the phrase-cache tables, version 3 the
    // runs' seed column, version 5 the shard columns and run_slots.
    SQLite::Database db(path, SQLite::OPEN_READWRITE);
    db.exec(
        "ALTER TABLE runs DROP COLUMN slots_digest; DROP TABLE run_slots; ALTER TABLE runs DROP COLUMN shard_index; "
        "ALTER TABLE runs DROP COLUMN shard_count; "
        "ALTER TABLE runs DROP COLUMN doc_begin; ALTER TABLE runs DROP COLUMN doc_end; DROP TABLE phrase_vectors; DROP "
        "TABLE embed_models; ALTER TABLE runs DROP COLUMN seed; "
        "UPDATE meta SET value = '1' WHERE key = 'schema_version'");
  }
  auto store = RunStore::Open(path);
  ASSERT_TRUE(store.ok()) << store.error().message;
  EXPECT_EQ(store->schema_version(), 6);
  EXPECT_TRUE(store->GetRun(id).ok());
  SQLite::Database db(path, SQLite::OPEN_READONLY);
  EXPECT_EQ(db.execAndGet("SELECT count(*) FROM sqlite_master WHERE name = 'phrase_vectors'").getInt(), 1);
}

// Version 6 (docs/store.md): the digest of each run's slots. The migration from version 5 computes it
// from the rows already stored, as SaveRun computes it from what it writes (the same digest, so the
// encoding has one definition in effect); a version-5 file read without migrating has none to check.
TEST(RunStoreTest, MigratesVersionFiveComputingTheDigestOfEachRunsSlots) {
  TempDir dir;
  const std::string path = dir.File("v5.db");
  int64_t shard = 0, whole = 0;
  std::string shard_digest, whole_digest;
  {
    auto store = RunStore::Open(path);
    ASSERT_TRUE(store.ok()) << store.error().message;
    RunRecord run = MakeStoreRun("sys");
    run.shard = ShardInfo{1, 2, 1, 3};
    // Slots given out of key order: the digest is of the rows in key order.
    auto s = store->SaveRun(run, {{"all.f1@5"}, {{0.25, kStoreNaN}}}, {{"all.f1@5", 0.25, {}, {}}},
                            {{1, "", 1, "x", true, {0.5, 1e-300}},
                             {0, "all", 1, "f1@5", false, {0.25, kStoreNaN}},
                             {0, "all", 2, "hits@5", true, {3, 0}}});
    ASSERT_TRUE(s.ok()) << s.error().message;
    shard = *s;
    auto w = store->SaveRun(MakeStoreRun("w"), MakeScores(), MakeAggregates());
    ASSERT_TRUE(w.ok()) << w.error().message;
    whole = *w;
  }
  {
    SQLite::Database db(path, SQLite::OPEN_READWRITE);
    shard_digest = db.execAndGet("SELECT slots_digest FROM runs WHERE id = " + std::to_string(shard)).getString();
    whole_digest = db.execAndGet("SELECT slots_digest FROM runs WHERE id = " + std::to_string(whole)).getString();
    db.exec("ALTER TABLE runs DROP COLUMN slots_digest; UPDATE meta SET value = '5' WHERE key = 'schema_version'");
  }
  // No slots: the SHA-256 of no bytes (FIPS 180-4's example, as `sha256sum < /dev/null` prints it).
  EXPECT_EQ(whole_digest, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(shard_digest.size(), 64u);
  {
    auto ro = RunStore::Open(path, RunStore::Mode::kReadOnly);
    ASSERT_TRUE(ro.ok()) << ro.error().message;
    EXPECT_EQ(ro->schema_version(), 5);
    EXPECT_EQ(ro->GetSlots(shard)->size(), 3u);
  }
  auto rw = RunStore::Open(path);
  ASSERT_TRUE(rw.ok()) << rw.error().message;
  EXPECT_EQ(rw->schema_version(), 6);
  {
    SQLite::Database db(path, SQLite::OPEN_READWRITE);
    EXPECT_EQ(db.execAndGet("SELECT slots_digest FROM runs WHERE id = " + std::to_string(shard)).getString(),
              shard_digest);
    EXPECT_EQ(db.execAndGet("SELECT slots_digest FROM runs WHERE id = " + std::to_string(whole)).getString(),
              whole_digest);
    // The hidden hits 3, 0 made 3, 1: nothing else in the shard holds them.
    db.exec("UPDATE run_slots SET values_f64le = x'0000000000000840000000000000f03f' WHERE slot = 2");
  }
  EXPECT_EQ(rw->GetSlots(shard).error().message,
            fmt::format("{}: run {}: its slots are not the ones stored with it (run_slots differs from "
                        "runs.slots_digest: a slot row was changed, added or deleted)",
                        path, shard));
}

// The digest's bytes, written out by hand for one slot row (store_internal.h, SlotsDigest): each value its
// type's letter, then 8 little-endian bytes (an integer) or a length of 8 bytes and the bytes (text, blob).
TEST(RunStoreTest, TheSlotsDigestIsSha256OfTheRowsAsDocumented) {
  TempDir dir;
  const std::string path = dir.File("d.db");
  auto store = RunStore::Open(path);
  ASSERT_TRUE(store.ok()) << store.error().message;
  RunRecord run = MakeStoreRun("sys");
  run.shard = ShardInfo{2, 3, 2, 3};
  auto saved = store->SaveRun(run, {}, {}, {{0, "", 1, "h", true, {2.0}}, {1, "", 1, "h", true, {2.0}}});
  ASSERT_TRUE(saved.ok()) << saved.error().message;
  const int64_t id = *saved;
  std::string bytes;
  auto le = [&](uint64_t v) {
    for (int b = 0; b < 8; ++b) bytes += static_cast<char>(v >> (8 * b));
  };
  auto integer = [&](uint64_t v) {
    bytes += 'i';
    le(v);
  };
  auto sized = [&](char type, const std::string& b) {
    bytes += type;
    le(b.size());
    bytes += b;
  };
  for (uint64_t plugin : {0, 1}) {                     // the two rows, each of seven values
    integer(plugin);                                   // plugin_idx
    sized('t', "");                                    // subset ''
    integer(1);                                        // slot 1
    sized('t', "h");                                   // name 'h'
    integer(1);                                        // hidden
    integer(1);                                        // n = 1 value
    sized('b', std::string("\0\0\0\0\0\0\0\x40", 8));  // values_f64le: 2.0 (0x4000000000000000, little-endian)
  }
  SQLite::Database db(path, SQLite::OPEN_READONLY);
  EXPECT_EQ(db.execAndGet("SELECT slots_digest FROM runs WHERE id = " + std::to_string(id)).getString(),
            Sha256Hex(bytes));
}

TEST(RunStoreTest, NewerSchemaIsAnError) {
  TempDir dir;
  const std::string path = dir.File("kplab.db");
  ASSERT_TRUE(RunStore::Open(path).ok());
  {
    SQLite::Database db(path, SQLite::OPEN_READWRITE);
    db.exec("UPDATE meta SET value = '99' WHERE key = 'schema_version'");
  }
  auto store = RunStore::Open(path);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.error().message, path + ": schema version 99 is newer than this kplab supports (expected <= 6)");
}

TEST(RunStoreTest, NotADatabase) {
  TempDir dir;
  const std::string path = dir.File("notes.txt");
  std::ofstream(path) << "these are not the pages you are looking for, not even close to a SQLite header\n";
  auto store = RunStore::Open(path);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.error().message, path + ": not a kplab database (file is not a database)");
}

TEST(RunStoreTest, ForeignDatabaseIsLeftAlone) {
  TempDir dir;
  const std::string path = dir.File("other.db");
  {
    SQLite::Database db(path, SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
    db.exec("CREATE TABLE notes(x)");
  }
  auto store = RunStore::Open(path);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.error().message, path + ": not a kplab database (it has tables but no meta table)");
  SQLite::Database db(path, SQLite::OPEN_READONLY);
  EXPECT_EQ(db.execAndGet("SELECT count(*) FROM sqlite_master").getInt(), 1);
}

// A directory is refused before SQLite sees it (docs/store.md, "Store paths"; more in store_paths_test.cc).
TEST(RunStoreTest, CannotOpenDirectory) {
  TempDir dir;
  const std::string path = dir.File("");
  auto store = RunStore::Open(path);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.error().message, path + ": a directory, not a regular file (expected a kplab database)");
  // A path SQLite cannot create still says so.
  const std::string missing = dir.File("no/such/dir/x.db");
  EXPECT_EQ(RunStore::Open(missing).error().message, missing + ": cannot open database (unable to open database file)");
}

TEST(RunStoreTest, DefaultPath) {
  const char* old = std::getenv("KPLAB_DB");
  const std::string saved = old != nullptr ? old : "";
  ::unsetenv("KPLAB_DB");
  EXPECT_EQ(RunStore::DefaultPath(), "kplab.db");
  ::setenv("KPLAB_DB", "", 1);
  EXPECT_EQ(RunStore::DefaultPath(), "kplab.db");
  ::setenv("KPLAB_DB", "/tmp/runs.db", 1);
  EXPECT_EQ(RunStore::DefaultPath(), "/tmp/runs.db");
  if (old != nullptr) {
    ::setenv("KPLAB_DB", saved.c_str(), 1);
  } else {
    ::unsetenv("KPLAB_DB");
  }
}

TEST(RunStoreTest, MoveKeepsTheConnection) {
  auto opened = RunStore::Open(":memory:");
  ASSERT_TRUE(opened.ok());
  RunStore store = std::move(opened).value();
  auto id = store.SaveRun(MakeStoreRun(), MakeScores(), {});
  ASSERT_TRUE(id.ok());
  RunStore other = std::move(store);
  EXPECT_TRUE(other.GetRun(*id).ok());
}



// Version 3 stores a run's training seed; a version-2 file keeps its runs (seed unknown) whether it is
// migrated or read without migrating.
TEST(RunStoreTest, SeedRoundTripsAndOlderFilesHaveNone) {
  TempDir dir;
  const std::string path = dir.File("seed.db");
  int64_t with = 0, without = 0;
  {
    auto store = RunStore::Open(path);
    ASSERT_TRUE(store.ok()) << store.error().message;
    RunRecord run = MakeStoreRun("a", "2024-05-01T10:00:00Z");
    run.seed = 1234;
    with = *store->SaveRun(run, MakeScores(), MakeAggregates());
    without = *store->SaveRun(MakeStoreRun("b", "2024-05-01T10:00:01Z"), MakeScores(), MakeAggregates());
    EXPECT_EQ(store->GetRun(with)->seed, std::optional<int64_t>(1234));
    EXPECT_EQ(store->GetRun(without)->seed, std::nullopt);
    auto runs = store->ListRuns();
    ASSERT_TRUE(runs.ok());
    ASSERT_EQ(runs->size(), 2u);
    EXPECT_EQ((*runs)[1].seed, std::optional<int64_t>(1234));  // newest first
    EXPECT_EQ((*runs)[0].seed, std::nullopt);
  }
  {
    SQLite::Database db(path, SQLite::OPEN_READWRITE);
    // Version 5's shard columns away, version 4's phrase cache back to the version-2 layout, then version
    // 3's seed column away.
    db.exec(
        "ALTER TABLE runs DROP COLUMN slots_digest; DROP TABLE run_slots; ALTER TABLE runs DROP COLUMN shard_index; "
        "ALTER TABLE runs DROP COLUMN "
        "shard_count; ALTER TABLE runs DROP COLUMN doc_begin; ALTER TABLE runs DROP COLUMN doc_end; "
        "DROP TABLE phrase_vectors; ALTER TABLE embed_models DROP COLUMN next_label; "
        "CREATE TABLE phrase_vectors(id INTEGER PRIMARY KEY, model_id INTEGER NOT NULL REFERENCES "
        "embed_models(id), phrase TEXT NOT NULL, vec BLOB, UNIQUE(model_id, phrase)); "
        "ALTER TABLE runs DROP COLUMN seed; UPDATE meta SET value = '2' WHERE key = 'schema_version'");
  }
  {
    auto ro = RunStore::Open(path, RunStore::Mode::kReadOnly);
    ASSERT_TRUE(ro.ok()) << ro.error().message;
    EXPECT_EQ(ro->schema_version(), 2);
    EXPECT_EQ(ro->GetRun(with)->seed, std::nullopt);
    EXPECT_EQ(ro->ListRuns()->size(), 2u);
  }
  auto rw = RunStore::Open(path);
  ASSERT_TRUE(rw.ok()) << rw.error().message;
  EXPECT_EQ(rw->schema_version(), 6);
  EXPECT_EQ(rw->GetRun(with)->seed, std::nullopt);
  RunRecord again = MakeStoreRun("a", "2024-05-01T10:00:02Z");
  again.seed = -7;  // any integer
  const int64_t id = *rw->SaveRun(again, MakeScores(), MakeAggregates());
  EXPECT_EQ(rw->GetRun(id)->seed, std::optional<int64_t>(-7));
}

// A shard (docs/store.md, Shards): its columns and slots hold its own documents; GetScores pads the
// columns to every document with NaN; GetSlots gives the slots back bit for bit; bad shapes are refused
// before anything is written.
TEST(RunStoreTest, ShardColumnsAndSlots) {
  TempDir dir;
  auto store = RunStore::Open(dir.File("s.db"));
  ASSERT_TRUE(store.ok()) << store.error().message;
  RunRecord run = MakeStoreRun("sys");  // 3 documents
  run.shard = ShardInfo{1, 2, 1, 3};
  // The public slot all.f1@5 is the score column of that name (the read-back holds them equal).
  ScoreColumns scores{{"all.f1@5"}, {{0.25, std::nan("")}}};
  std::vector<SlotColumn> slots = {{0, "all", 1, "f1@5", false, {0.25, std::nan("")}},
                                   {0, "all", 2, "hits@5", true, {3, 0}},
                                   {1, "", 1, "x", true, {0.5, 1e-300}}};
  auto id = store->SaveRun(run, scores, {{"all.f1@5", 0.25, {}, {}}}, slots);
  ASSERT_TRUE(id.ok()) << id.error().message;
  auto back = store->GetRun(*id);
  ASSERT_TRUE(back.ok());
  ASSERT_TRUE(back->shard.has_value());
  EXPECT_EQ(back->shard->index, 1);
  EXPECT_EQ(back->shard->count, 2);
  EXPECT_EQ(back->shard->begin, 1);
  EXPECT_EQ(back->shard->end, 3);
  auto cols = store->GetScores(*id);
  ASSERT_TRUE(cols.ok());
  ASSERT_EQ(cols->columns[0].size(), 3u);
  EXPECT_TRUE(std::isnan(cols->columns[0][0]));
  EXPECT_EQ(cols->columns[0][1], 0.25);
  EXPECT_TRUE(std::isnan(cols->columns[0][2]));
  auto got = store->GetSlots(*id);
  ASSERT_TRUE(got.ok());
  ASSERT_EQ(got->size(), 3u);
  EXPECT_EQ((*got)[1].subset, "all");
  EXPECT_EQ((*got)[1].slot, 2);
  EXPECT_TRUE((*got)[1].hidden);
  EXPECT_EQ((*got)[1].values, (std::vector<double>{3, 0}));
  EXPECT_EQ((*got)[2].plugin, 1);
  EXPECT_EQ((*got)[2].values, (std::vector<double>{0.5, 1e-300}));
  EXPECT_EQ((*store->ListRuns())[0].shard->count, 2);
  // A whole run has no slots and no shard.
  auto whole = store->SaveRun(MakeStoreRun("w"), MakeScores(), MakeAggregates());
  ASSERT_TRUE(whole.ok());
  EXPECT_FALSE(store->GetRun(*whole)->shard.has_value());
  EXPECT_TRUE(store->GetSlots(*whole)->empty());
  // Refusals, nothing written.
  const auto before = store->ListRuns()->size();
  // A whole run's slots (`kplab eval --ci`) have one value per document of the run, not of a shard.
  auto e1 = store->SaveRun(MakeStoreRun("w"), MakeScores(), MakeAggregates(), slots);
  EXPECT_EQ(e1.error().message,
            "cannot save run: slot 'f1@5' has 2 values (expected 3, one per document of the run)");
  RunRecord bad = run;
  bad.shard = ShardInfo{2, 2, 1, 3};
  EXPECT_EQ(store->SaveRun(bad, scores, {}, slots).error().message,
            "cannot save run: shard 2/2 of documents [1, 3) does not fit 3 documents");
  ScoreColumns full{{"all.f1@5"}, {{0.25, 0.5, 0.75}}};
  EXPECT_EQ(store->SaveRun(run, full, {}, slots).error().message,
            "cannot save run: score column 'all.f1@5' has 3 values (expected 2, one per document of the shard)");
  std::vector<SlotColumn> short_slot = {{0, "all", 1, "p@5", false, {1}}};
  EXPECT_EQ(store->SaveRun(run, scores, {}, short_slot).error().message,
            "cannot save run: slot 'p@5' has 1 values (expected 2, one per document of the shard)");
  std::vector<SlotColumn> orphan = {{5, "all", 1, "p@5", false, {1, 2}}};
  EXPECT_EQ(store->SaveRun(run, scores, {}, orphan).error().message,
            "cannot save run: slot 'p@5' belongs to plugin 5 of 2");
  EXPECT_EQ(store->ListRuns()->size(), before);
  // A whole run's slots: its public ones are its score columns.
  std::vector<SlotColumn> whole_slots = {{0, "", 1, "f1@5", false, {0.5, 0.0, 1.0}},
                                         {0, "", 2, "hits@5", true, {3, 0, 1}},
                                         {1, "", 1, "semrp", false, {kStoreNaN, 0.125, -0.0}}};
  auto kept = store->SaveRun(MakeStoreRun("w"), MakeScores(), MakeAggregates(), whole_slots);
  ASSERT_TRUE(kept.ok()) << kept.error().message;
  EXPECT_EQ((*store->GetSlots(*kept))[1].values, (std::vector<double>{3, 0, 1}));
}

}  // namespace
}  // namespace kplab
