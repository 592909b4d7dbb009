// Reading a store back (docs/store.md, "Reading a store back"): every value is checked against its run
// before RunStore returns it. Hostile: files written by SaveRun and then changed behind kplab's back
// with SQL, one change a test, each refused by name with its exact message; the untouched store reads
// back whole. tests/host/store_mutation_test.cc changes real stores systematically and runs every
// reading command on them.
#include <SQLiteCpp/SQLiteCpp.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "kplab/store.h"
#include "temp_dir.h"

namespace kplab {
namespace {

using test::TempDir;
constexpr double kReadbackNaN = std::numeric_limits<double>::quiet_NaN();

RunRecord MakeRun(const std::string& system, std::vector<std::string> docs) {
  RunRecord r;
  r.dataset_name = "five";
  r.dataset_path = "data/five";
  r.dataset_format = "meng";
  r.dataset_hash = "h" + std::to_string(docs.size());
  r.doc_ids = std::move(docs);
  r.system = system;
  r.predictions_path = "p.txt";
  r.predictions_hash = "ph";
  r.profile = "kplab";
  r.params_json = R"({"exact": {"k": 5}})";
  r.plugins = {{"exact", "2.0.0", "aa", "plugins/exact.lua"}};
  r.kplab_version = "test";
  r.created_at = "2026-11-29T10:00:00Z";
  return r;
}

// Three stores' worth of runs in one file: run 1 whole (3 documents, no slots), run 2 shard 1/2 of 5
// documents (slots and columns of documents 3-5), run 3 a whole --ci run of the 5 documents with slots
// and units. Each as the engine writes it: the public slots are the score columns.
class Readback : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_ / "s.db";
    auto store = RunStore::Open(path_);
    ASSERT_TRUE(store.ok()) << store.error().message;
    auto whole = store->SaveRun(MakeRun("a", {"d1", "d2", "d3"}),
                                {{"all.p@5", "all.r@5"}, {{0.5, 0, 1}, {0.25, kReadbackNaN, 1}}},
                                {{"all.p@5", 0.5, {}, {}}, {"all.r@5", 0.625, {}, {}}});
    ASSERT_TRUE(whole.ok()) << whole.error().message;
    const std::vector<std::string> five = {"e1", "e2", "e3", "e4", "e5"};
    RunRecord shard = MakeRun("b", five);
    shard.shard = ShardRange(5, 1, 2);
    auto sh = store->SaveRun(shard, {{"all.p@5"}, {{0.2, 0.4, 0.6}}}, {{"all.p@5", 0.4, {}, {}}},
                             {{0, "all", 1, "p@5", false, {0.2, 0.4, 0.6}},
                              {0, "all", 2, "hits", true, {1, 2, 3}},
                              {0, "present", 1, "p@5", false, {kReadbackNaN, kReadbackNaN, kReadbackNaN}},
                              {0, "present", 2, "hits", true, {0, 0, 0}}});
    ASSERT_TRUE(sh.ok()) << sh.error().message;
    RunRecord ci = MakeRun("c", five);
    ci.params_json = R"({"exact": {"k": 5}, "_ci": {"resamples": 100, "seed": 1, "confidence": 0.95}})";
    auto c = store->SaveRun(ci, {{"all.p@5"}, {{1, 0, 1, 0, 1}}}, {{"all.p@5", 0.6, 0.2, 1.0}},
                            {{0, "all", 1, "p@5", false, {1, 0, 1, 0, 1}},
                             {0, "all", 2, "hits", true, {2, 0, 2, 0, 2}},
                             {0, "#:units", 1, "doc", true, {0, 0, 2, 4}},
                             {0, "#:units", 2, "key", true, {1, 2, 1, 1}},
                             {0, "#:units", 3, "subset", true, {0, 0, 0, 0}},
                             {0, "#all", 2, "hits", true, {1, 1, 2, 2}}});
    ASSERT_TRUE(c.ok()) << c.error().message;
  }

  // Runs SQL on the file behind kplab's back. `loosen`: NOT NULL and CHECK constraints out of the
  // schema first, so that NULLs and any status can be stored.
  void Tamper(const std::string& sql, bool loosen = false) {
    if (loosen) {
      SQLite::Database db(path_, SQLite::OPEN_READWRITE);
      db.exec("PRAGMA writable_schema = ON");
      db.exec(
          "UPDATE sqlite_master SET sql = replace(replace(sql, 'NOT NULL', ''), "
          "'CHECK(status IN (''ok'', ''failed''))', '') WHERE type = 'table'");
      const int v = db.execAndGet("PRAGMA schema_version").getInt();
      db.exec("PRAGMA schema_version = " + std::to_string(v + 1));
    }
    SQLite::Database db(path_, SQLite::OPEN_READWRITE);
    db.exec(sql);
  }
  std::string P(const std::string& rest) const { return path_ + ": " + rest; }
  RunStore Open() {
    auto s = RunStore::Open(path_, RunStore::Mode::kReadOnly);
    EXPECT_TRUE(s.ok()) << s.error().message;
    return std::move(*s);
  }

  TempDir dir_;
  std::string path_;
};

TEST_F(Readback, AnUntouchedStoreReadsBackWhole) {
  RunStore s = Open();
  ASSERT_EQ(s.ListRuns()->size(), 3u);
  for (int64_t id : {1, 2, 3}) {
    EXPECT_TRUE(s.GetRun(id).ok()) << s.GetRun(id).error().message;
    EXPECT_TRUE(s.GetScores(id).ok()) << s.GetScores(id).error().message;
    EXPECT_TRUE(s.GetAggregates(id).ok()) << s.GetAggregates(id).error().message;
    EXPECT_TRUE(s.GetSlots(id).ok()) << s.GetSlots(id).error().message;
  }
  EXPECT_EQ(s.GetScores(2)->columns[0].size(), 5u);  // padded to every document
  EXPECT_EQ(s.GetSlots(3)->size(), 6u);
  EXPECT_TRUE(*s.HasRun(3));
  EXPECT_FALSE(*s.HasRun(4));
}

// The issue's case: a column whose count disagrees with the run's documents (its blob agreeing with the
// count) was exported as if sound, other metrics' values appearing as documents.
TEST_F(Readback, ScoreCountThatDisagreesWithTheDocuments) {
  Tamper("UPDATE scores SET n = 2, values_f64le = substr(values_f64le, 1, 16) WHERE run_id = 1 AND idx = 0");
  RunStore s = Open();
  EXPECT_EQ(s.GetScores(1).error().message, P("run 1: scores of 'all.p@5' hold 2 values, the run has 3 documents"));
  Tamper("UPDATE scores SET n = 5, values_f64le = zeroblob(40) WHERE run_id = 2");
  EXPECT_EQ(s.GetScores(2).error().message, P("run 2: scores of 'all.p@5' hold 5 values, the shard has 3 documents"));
}

// A count near 2^61 with an empty blob: 8 * n wraps to 0 in 64 bits; refused before anything is sized.
TEST_F(Readback, ScoreCountThatOverflowsItsByteLength) {
  Tamper("UPDATE scores SET n = 2305843009213693952, values_f64le = x'' WHERE run_id = 1 AND idx = 1");
  EXPECT_EQ(Open().GetScores(1).error().message,
            P("run 1: scores of 'all.r@5' hold 2305843009213693952 values, the run has 3 documents"));
}

TEST_F(Readback, ScoreBlobOfTheWrongLengthOrType) {
  Tamper("UPDATE scores SET values_f64le = substr(values_f64le, 1, 20) WHERE run_id = 1 AND idx = 0");
  RunStore s = Open();
  EXPECT_EQ(s.GetScores(1).error().message,
            P("run 1: scores of 'all.p@5' are 20 bytes for 3 values (expected 8 bytes a value)"));
  Tamper("UPDATE scores SET values_f64le = CAST(values_f64le AS TEXT) WHERE run_id = 1 AND idx = 1");
  Tamper("UPDATE scores SET values_f64le = zeroblob(24) WHERE run_id = 1 AND idx = 0");
  EXPECT_EQ(s.GetScores(1).error().message, P("run 1: scores of 'all.r@5': values_f64le is text (expected a blob)"));
  Tamper("UPDATE scores SET n = '3' || 'x' WHERE run_id = 1 AND idx = 1");
  EXPECT_EQ(s.GetScores(1).error().message, P("run 1: scores of 'all.r@5': n is text (expected an integer)"));
}

TEST_F(Readback, ScoreColumnsNumberedAndNamedOnce) {
  Tamper("UPDATE scores SET idx = 7 WHERE run_id = 1 AND idx = 1");
  RunStore s = Open();
  EXPECT_EQ(s.GetScores(1).error().message,
            P("run 1: its score columns are not numbered from 0 (scores.idx 7 at position 1)"));
  Tamper("UPDATE scores SET idx = 1, metric = '' WHERE run_id = 1 AND idx = 7");
  EXPECT_EQ(s.GetScores(1).error().message, P("run 1: a score column has an empty name (scores.metric)"));
  Tamper("UPDATE scores SET metric = NULL WHERE run_id = 1 AND idx = 1", true);
  EXPECT_EQ(s.GetScores(1).error().message, P("run 1: scores.metric is NULL (expected text)"));
}

// The dataset's document count, and the numbering of its documents, against what is stored.
TEST_F(Readback, DocumentsAgainstTheDatasetCount) {
  Tamper("DELETE FROM documents WHERE doc_id = 'd2'");
  RunStore s = Open();
  const std::string msg = P("run 1: its dataset records 3 documents (datasets.n_docs) but stores 2 document ids");
  EXPECT_EQ(s.GetRun(1).error().message, msg);
  EXPECT_EQ(s.GetScores(1).error().message, msg);
  EXPECT_EQ(s.GetAggregates(1).error().message, msg);
  EXPECT_EQ(s.ListRuns().error().message, msg);
  Tamper("UPDATE datasets SET n_docs = 2 WHERE n_docs = 3");
  EXPECT_EQ(s.GetRun(1).error().message, P("run 1: its document ids are not numbered 0 to 1 (documents.idx)"));
  EXPECT_EQ(s.ListRuns().error().message, P("run 1: its document ids are not numbered 0 to 1 (documents.idx)"));
  Tamper("UPDATE datasets SET n_docs = -1 WHERE n_docs = 2");
  EXPECT_EQ(s.GetRun(1).error().message, P("run 1: datasets.n_docs is -1 (expected a count of documents)"));
}

TEST_F(Readback, DocumentIdNullOrABlob) {
  Tamper("UPDATE documents SET doc_id = x'0001' WHERE doc_id = 'd2'");
  EXPECT_EQ(Open().GetRun(1).error().message, P("run 1: documents.doc_id is a blob (expected text)"));
}

TEST_F(Readback, StatusEnumTextAndNull) {
  Tamper("UPDATE runs SET status = 'maybe' WHERE id = 1", true);
  RunStore s = Open();
  EXPECT_EQ(s.GetRun(1).error().message, P("run 1: runs.status is 'maybe' (expected 'ok' or 'failed')"));
  EXPECT_EQ(s.ListRuns().error().message, P("run 1: runs.status is 'maybe' (expected 'ok' or 'failed')"));
  Tamper("UPDATE runs SET status = NULL WHERE id = 1");
  EXPECT_EQ(s.GetRun(1).error().message, P("run 1: runs.status is NULL (expected text)"));
  // A stored text is shown escaped: a tampered file may hold terminal controls.
  Tamper("UPDATE runs SET status = char(27) || '[2J' WHERE id = 1");
  EXPECT_EQ(s.GetRun(1).error().message, P("run 1: runs.status is '\\x1b[2J' (expected 'ok' or 'failed')"));
  // Escaped as every text for a terminal is (TerminalText): valid UTF-8 and backslashes as they are, an
  // invalid byte and a bidirectional override (U+202E) as escapes; at most 60 bytes, cut at a character:
  // 59 bytes of 'a', then 'é' (bytes 60-61) across the cut, left out whole.
  Tamper("UPDATE runs SET status = 'caf' || char(233) || '\\' || X'FF' || char(8238) WHERE id = 1");
  EXPECT_EQ(s.GetRun(1).error().message,
            P("run 1: runs.status is 'caf\xc3\xa9\\\\xff\\u202e' (expected 'ok' or 'failed')"));
  Tamper("UPDATE runs SET status = '" + std::string(59, 'a') + "' || char(233) || 'zz' WHERE id = 1");
  EXPECT_EQ(s.GetRun(1).error().message,
            P("run 1: runs.status is '" + std::string(59, 'a') + "...' (expected 'ok' or 'failed')"));
}

TEST_F(Readback, AFailedRunWithValuesOrWithoutItsError) {
  Tamper("UPDATE runs SET status = 'failed', error = 'x' WHERE id = 1");
  RunStore s = Open();
  EXPECT_EQ(s.GetScores(1).error().message, P("run 1: a failed run stores score columns (a failed run has none)"));
  EXPECT_EQ(s.GetAggregates(1).error().message, P("run 1: a failed run stores aggregates (a failed run has none)"));
  Tamper("UPDATE runs SET error = '' WHERE id = 1");
  EXPECT_EQ(s.GetRun(1).error().message, P("run 1: a failed run without an error message (runs.error is '')"));
}

TEST_F(Readback, RunFieldsOfTheWrongShape) {
  RunStore s = Open();
  Tamper("UPDATE runs SET created_at = 'yesterday' WHERE id = 1");
  EXPECT_EQ(s.ListRuns().error().message,
            P("run 1: runs.created_at 'yesterday' is not ISO 8601 UTC (expected YYYY-MM-DDTHH:MM:SSZ)"));
  Tamper("UPDATE runs SET created_at = '2026-11-29T10:00:00Z', seed = 'x' WHERE id = 1");
  EXPECT_EQ(s.ListRuns().error().message, P("run 1: runs.seed is text (expected an integer or NULL)"));
  Tamper("UPDATE runs SET seed = NULL, elapsed_seconds = 'abc' WHERE id = 1");
  EXPECT_EQ(s.GetRun(1).error().message, P("run 1: runs.elapsed_seconds is text (expected a number)"));
  Tamper("UPDATE runs SET elapsed_seconds = 9e999 WHERE id = 1");
  EXPECT_EQ(s.GetRun(1).error().message, P("run 1: runs.elapsed_seconds is inf (expected a finite number)"));
  Tamper("UPDATE runs SET elapsed_seconds = 1, profile = NULL WHERE id = 1", true);
  EXPECT_EQ(s.GetRun(1).error().message, P("run 1: runs.profile is NULL (expected text)"));
}

TEST_F(Readback, DanglingDatasetOrSystem) {
  Tamper("PRAGMA foreign_keys = OFF; UPDATE runs SET dataset_id = 99 WHERE id = 1");
  RunStore s = Open();
  EXPECT_EQ(s.GetRun(1).error().message, P("run 1: its dataset (datasets.id 99) is missing"));
  EXPECT_EQ(s.ListRuns().error().message, P("run 1: its dataset (datasets.id 99) is missing"));
  Tamper("UPDATE runs SET dataset_id = (SELECT min(id) FROM datasets), system_id = 42 WHERE id = 1");
  EXPECT_EQ(s.GetRun(1).error().message, P("run 1: its system (systems.id 42) is missing"));
}

// JSON fields: params_json must be an object (SQLite's JSON reader, whose nesting is bounded, says so).
TEST_F(Readback, ParamsThatAreNotAJsonObject) {
  RunStore s = Open();
  // The last: 5,000 arrays deep (SQLite's JSON reader stops at 2,000).
  for (const std::string& bad : {std::string("'nope'"), std::string("'[1, 2]'"),
                                 std::string("'{\"_x\": ' || replace(hex(zeroblob(5000)), '00', '[') || "
                                             "replace(hex(zeroblob(5000)), '00', ']') || '}'")}) {
    Tamper("UPDATE runs SET params_json = " + bad + " WHERE id = 1");
    EXPECT_EQ(s.GetRun(1).error().message, P("run 1: runs.params_json is not a JSON object")) << bad;
  }
  Tamper("UPDATE runs SET params_json = '' WHERE id = 1");
  EXPECT_TRUE(s.GetRun(1).ok());  // a run without parameters
}

TEST_F(Readback, PluginsNumberedFromZero) {
  Tamper("UPDATE run_plugins SET idx = 3 WHERE run_id = 1");
  EXPECT_EQ(Open().GetRun(1).error().message,
            P("run 1: its plugins are not numbered from 0 (run_plugins.idx 3 at position 0)"));
}

TEST_F(Readback, AggregatesOfTheWrongType) {
  RunStore s = Open();
  Tamper("UPDATE aggregates SET value = 'abc' WHERE run_id = 1 AND idx = 0");
  EXPECT_EQ(s.GetAggregates(1).error().message,
            P("run 1: aggregate 'all.p@5': value is text (expected a number or NULL)"));
  Tamper("UPDATE aggregates SET value = 0.5, ci_low = x'00' WHERE run_id = 1 AND idx = 0");
  EXPECT_EQ(s.GetAggregates(1).error().message,
            P("run 1: aggregate 'all.p@5': ci_low is a blob (expected a number or NULL)"));
  Tamper("UPDATE aggregates SET ci_low = NULL, idx = 5 WHERE run_id = 1 AND idx = 0");
  EXPECT_EQ(s.GetAggregates(1).error().message,
            P("run 1: its aggregates are not numbered from 0 (aggregates.idx 1 at position 0)"));
  Tamper("UPDATE aggregates SET idx = 0, metric = '' WHERE run_id = 1 AND idx = 5");
  EXPECT_EQ(s.GetAggregates(1).error().message, P("run 1: an aggregate has an empty name (aggregates.metric)"));
  // NULL is NaN, as SaveRun writes it.
  Tamper("UPDATE aggregates SET metric = 'all.p@5', value = NULL WHERE run_id = 1 AND idx = 0");
  EXPECT_TRUE(std::isnan((*s.GetAggregates(1))[0].value));
}

// Shards: the four columns all set or all NULL, I/N in range, at most one shard per document, and the
// range the one I/N gives — computed without overflow (the products need more than 64 bits).
TEST_F(Readback, ShardRangesWithOverflowSafeArithmetic) {
  RunStore s = Open();
  // 2^61 - 1 of 2^61 over 5 documents: in 64 bits 5 * index / count wraps to -3, and a range [-3, -3)
  // passed the check that compared against it.
  Tamper(
      "UPDATE runs SET shard_index = 2305843009213693951, shard_count = 2305843009213693952, doc_begin = -3, "
      "doc_end = -3 WHERE id = 2");
  EXPECT_EQ(s.GetRun(2).error().message,
            P("run 2: shard 2305843009213693951/2305843009213693952 of 5 documents (expected at most one shard per "
              "document)"));
  Tamper("UPDATE runs SET shard_index = 1, shard_count = 2, doc_begin = -2, doc_end = 1 WHERE id = 2");
  EXPECT_EQ(s.GetScores(2).error().message,
            P("run 2: shard 1/2 records documents [-2, 1), but shard 1 of 2 over 5 documents is [2, 5)"));
  Tamper("UPDATE runs SET shard_count = -9223372036854775808, shard_index = -1 WHERE id = 2");
  EXPECT_EQ(s.ListRuns().error().message, P("run 2: shard -1/-9223372036854775808 (expected 0 <= I < N)"));
  Tamper("UPDATE runs SET shard_count = 2, shard_index = NULL WHERE id = 2");
  EXPECT_EQ(s.GetRun(2).error().message,
            P("run 2: runs.shard_index, shard_count, doc_begin and doc_end are partly NULL (expected all four for a "
              "shard, none for a whole run)"));
}

TEST(ShardRangeTest, ExactAtTheLimits) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(ShardRange(5, 1, 2).begin, 2);
  EXPECT_EQ(ShardRange(5, 1, 2).end, 5);
  // n * index / count for n = 2^63 - 1: exact with 128-bit products (by hand: (2^63 - 1) * (2^62) / (2^63 - 1)).
  EXPECT_EQ(ShardRange(kMax, int64_t{1} << 62, kMax).begin, int64_t{1} << 62);
  EXPECT_EQ(ShardRange(kMax, kMax - 1, kMax).begin, kMax - 1);
  EXPECT_EQ(ShardRange(kMax, kMax - 1, kMax).end, kMax);
  EXPECT_EQ(ShardRange(3, 0, 3).end, 1);
}

// The issue's case: a shard whose run_slots rows were deleted merged silently into other numbers.
// Here: a slot in the middle, the last slot of a subset, a subset with values, every slot.
TEST_F(Readback, SlotDeletedFromTheMiddleOfASubset) {
  Tamper("DELETE FROM run_slots WHERE run_id = 2 AND subset = 'all' AND slot = 1");
  EXPECT_EQ(Open().GetSlots(2).error().message,
            P("run 2: the slots of plugin 'exact' (subset 'all') are not numbered from 1 (slot 2 at position 1: a "
              "slot is missing)"));
}

TEST_F(Readback, SlotDeletedFromTheEndOfASubset) {
  Tamper("DELETE FROM run_slots WHERE run_id = 2 AND subset = 'present' AND slot = 2");
  EXPECT_EQ(Open().GetSlots(2).error().message,
            P("run 2: plugin 'exact' stores 2 slots in subset 'all' and 1 in subset 'present', or other ones (every "
              "subset has the plugin's declared slots)"));
}

TEST_F(Readback, SubsetOrEverySlotDeleted) {
  RunStore s = Open();
  Tamper("DELETE FROM run_slots WHERE run_id = 2 AND subset = 'all'");
  EXPECT_EQ(s.GetSlots(2).error().message,
            P("run 2: score column 'all.p@5' is no slot the run stores (its slots were changed or deleted)"));
  EXPECT_EQ(s.GetScores(2).error().message, s.GetSlots(2).error().message);  // export refuses it too
  Tamper("DELETE FROM run_slots WHERE run_id = 2");
  EXPECT_EQ(s.GetSlots(2).error().message, P("run 2: stores no slots (a shard keeps every slot of every plugin)"));
  Tamper("DELETE FROM run_slots WHERE run_id = 3");
  EXPECT_EQ(s.GetSlots(3).error().message,
            P("run 3: stores no slots (a run scored with --ci keeps every slot of every plugin)"));
}

TEST_F(Readback, SlotsAgainstTheScoreColumns) {
  RunStore s = Open();
  // A public slot changed: no longer the score column it is.
  Tamper("UPDATE run_slots SET values_f64le = zeroblob(24) WHERE run_id = 2 AND subset = 'all' AND slot = 1");
  EXPECT_EQ(s.GetSlots(2).error().message,
            P("run 2: score column 'all.p@5' and its slot differ at document 1 of the shard (0.2 and 0)"));
  // A public slot with values and no column.
  Tamper("UPDATE run_slots SET values_f64le = zeroblob(24) WHERE run_id = 2 AND subset = 'present' AND slot = 1");
  Tamper(
      "UPDATE run_slots SET values_f64le = (SELECT values_f64le FROM scores WHERE run_id = 2) WHERE run_id = 2 AND "
      "subset = 'all' AND slot = 1");
  EXPECT_EQ(s.GetSlots(2).error().message,
            P("run 2: slot 'p@5' of plugin 'exact' has values but no score column 'present.p@5'"));
}

// What the checks above cannot see, the digest stored with the slots does (docs/store.md, schema
// version 6): a hidden slot changed (the shard's hits 1, 2, 3 made 1, 2, 4: nothing else in the run
// holds them; a merge would sum them into another micro average), a hidden slot of the --ci run zeroed,
// a hidden slot added, and the digest itself changed, cut or removed.
TEST_F(Readback, HiddenSlotChangesThatOnlyTheDigestSees) {
  RunStore s = Open();
  const std::string changed =
      P("run 2: its slots are not the ones stored with it (run_slots differs from runs.slots_digest: a slot row was "
        "changed, added or deleted)");
  // 1.0, 2.0, 4.0 as little-endian IEEE-754 doubles.
  Tamper(
      "UPDATE run_slots SET values_f64le = x'000000000000f03f00000000000000400000000000001040' WHERE run_id = 2 "
      "AND subset = 'all' AND slot = 2");
  EXPECT_EQ(s.GetSlots(2).error().message, changed);
  EXPECT_EQ(s.GetScores(2).error().message, changed);  // export reads the slots beside the columns
  EXPECT_TRUE(s.GetRun(2).ok());                       // the run's row and plugins are untouched
  // Back as it was: read back whole again (the digest is of the rows, not of when they were written).
  Tamper(
      "UPDATE run_slots SET values_f64le = x'000000000000f03f00000000000000400000000000000840' WHERE run_id = 2 "
      "AND subset = 'all' AND slot = 2");
  EXPECT_TRUE(s.GetSlots(2).ok()) << s.GetSlots(2).error().message;
  Tamper("UPDATE run_slots SET values_f64le = zeroblob(40) WHERE run_id = 3 AND subset = 'all' AND slot = 2");
  EXPECT_EQ(s.GetSlots(3).error().message,
            P("run 3: its slots are not the ones stored with it (run_slots differs from runs.slots_digest: a slot row "
              "was changed, added or deleted)"));
  // A hidden slot added to every subset of the shard's plugin: as declared slots look, only not its own.
  Tamper(
      "INSERT INTO run_slots(run_id, plugin_idx, subset, slot, name, hidden, n, values_f64le) "
      "VALUES(2, 0, 'all', 3, 'extra', 1, 3, zeroblob(24)), (2, 0, 'present', 3, 'extra', 1, 3, zeroblob(24))");
  EXPECT_EQ(s.GetSlots(2).error().message, changed);
  Tamper("DELETE FROM run_slots WHERE run_id = 2 AND slot = 3");
  EXPECT_TRUE(s.GetSlots(2).ok()) << s.GetSlots(2).error().message;
  // The digest changed: the slots are refused, not the digest believed.
  Tamper("UPDATE runs SET slots_digest = replace(slots_digest, substr(slots_digest, 1, 1), 'x') WHERE id = 1");
  EXPECT_EQ(s.ListRuns().error().message.find(P("run 1: runs.slots_digest is 'x")), 0u);
  Tamper("UPDATE runs SET slots_digest = (SELECT slots_digest FROM runs WHERE id = 3) WHERE id = 1");
  EXPECT_EQ(s.GetSlots(1).error().message,
            P("run 1: its slots are not the ones stored with it (run_slots differs from runs.slots_digest: a slot row "
              "was changed, added or deleted)"));
  Tamper("UPDATE runs SET slots_digest = substr(slots_digest, 2) WHERE id = 1");
  EXPECT_EQ(s.GetRun(1).error().message.find(P("run 1: runs.slots_digest is '")), 0u);
  EXPECT_NE(s.GetRun(1).error().message.find("' (expected 64 hexadecimal digits, a SHA-256 digest)"),
            std::string::npos);
  // Removed: every run of a version-6 file has one, so NULL is not "an old run".
  Tamper("UPDATE runs SET slots_digest = NULL WHERE id = 1");
  EXPECT_EQ(s.GetRun(1).error().message, P("run 1: runs.slots_digest is NULL (expected text)"));
  EXPECT_EQ(s.ListRuns().error().message, P("run 1: runs.slots_digest is NULL (expected text)"));
}

TEST_F(Readback, SlotRowsOfTheWrongShape) {
  RunStore s = Open();
  Tamper("UPDATE run_slots SET plugin_idx = 7 WHERE run_id = 2 AND subset = 'present'");
  EXPECT_EQ(s.GetSlots(2).error().message,
            P("run 2: slot 'p@5' (subset 'present') belongs to plugin 7, and the run has 1 plugins"));
  Tamper("UPDATE run_slots SET plugin_idx = 0 WHERE run_id = 2 AND subset = 'present'");
  Tamper("UPDATE run_slots SET hidden = 7 WHERE run_id = 2 AND subset = 'present' AND slot = 2");
  EXPECT_EQ(s.GetSlots(2).error().message,
            P("run 2: slot 2 'hits' of plugin 'exact' (subset 'present'): run_slots.hidden is 7 (expected 0 or 1)"));
  Tamper(
      "UPDATE run_slots SET hidden = 1, n = 1, values_f64le = zeroblob(8) WHERE run_id = 2 AND subset = 'present' "
      "AND slot = 2");
  EXPECT_EQ(s.GetSlots(2).error().message,
            P("run 2: slot 2 'hits' of plugin 'exact' (subset 'present') holds 1 value, the shard has 3 documents"));
  Tamper(
      "UPDATE run_slots SET n = 3, values_f64le = zeroblob(24), slot = -9223372036854775808 WHERE run_id = 2 AND "
      "subset = 'present' AND slot = 2");
  EXPECT_EQ(s.GetSlots(2).error().message,
            P("run 2: the slots of plugin 'exact' (subset 'present') are not numbered from 1 (slot "
              "-9223372036854775808 at position 1: a slot is missing)"));
  Tamper("UPDATE run_slots SET slot = 2, name = NULL WHERE run_id = 2 AND subset = 'present' AND slot < 0", true);
  EXPECT_EQ(s.GetSlots(2).error().message, P("run 2: run_slots.name is NULL (expected text)"));
}

// Units of a --ci run index its documents: a unit of no document, or a NaN key, is refused before the
// comparison converts it to an index.
TEST_F(Readback, UnitsThatIndexNoDocument) {
  RunStore s = Open();
  for (const char* bad : {"-1.0", "2.5", "5.0", "1e300"}) {
    SQLite::Database db(path_, SQLite::OPEN_READWRITE);
    SQLite::Statement st(db,
                         "UPDATE run_slots SET values_f64le = ? WHERE run_id = 3 AND subset = '#:units' AND slot = 1");
    const double v[4] = {0, std::stod(bad), 2, 4};
    st.bind(1, v, sizeof v);
    st.exec();
    EXPECT_EQ(s.GetSlots(3).error().message, P(std::string("run 3: unit 2 of plugin 'exact' belongs to document ") +
                                               (std::string(bad) == "-1.0"  ? "-1"
                                                : std::string(bad) == "2.5" ? "2.5"
                                                : std::string(bad) == "5.0" ? "5"
                                                                            : "1e+300") +
                                               " (expected an index from 0 to 4)"))
        << bad;
  }
  {
    SQLite::Database db(path_, SQLite::OPEN_READWRITE);
    SQLite::Statement st(db,
                         "UPDATE run_slots SET values_f64le = ? WHERE run_id = 3 AND subset = '#:units' AND slot = ?");
    const double doc[4] = {0, 0, 2, 4}, key[4] = {1, kReadbackNaN, 1, 1};
    st.bind(1, doc, sizeof doc);
    st.bind(2, 1);
    st.exec();
    st.reset();
    st.bind(1, key, sizeof key);
    st.bind(2, 2);
    st.exec();
  }
  EXPECT_EQ(s.GetSlots(3).error().message, P("run 3: unit 2 of plugin 'exact' has key nan (expected a number)"));
  Tamper("DELETE FROM run_slots WHERE run_id = 3 AND subset = '#:units'");
  EXPECT_EQ(s.GetSlots(3).error().message,
            P("run 3: plugin 'exact' stores unit values without their index (subset '#:units')"));
}

// What SaveRun accepts reads back: it refuses slots the read-back would refuse, before writing.
TEST_F(Readback, SaveRunRefusesWhatWouldNotReadBack) {
  auto s = RunStore::Open(path_);
  ASSERT_TRUE(s.ok());
  RunRecord shard = MakeRun("d", {"e1", "e2", "e3", "e4", "e5"});
  shard.shard = ShardRange(5, 0, 2);
  EXPECT_EQ(s->SaveRun(shard, {{"all.p@5"}, {{0.2, 0.4}}}, {}).error().message,
            "cannot save run: stores no slots (a shard keeps every slot of every plugin)");
  EXPECT_EQ(
      s->SaveRun(shard, {{"all.p@5"}, {{0.2, 0.4}}}, {}, {{0, "all", 1, "p@5", false, {0.2, 0.5}}}).error().message,
      "cannot save run: score column 'all.p@5' and its slot differ at document 2 of the shard (0.4 and 0.5)");
  EXPECT_EQ(
      s->SaveRun(shard, {{"all.p@5"}, {{0.2, 0.4}}}, {}, {{0, "all", 2, "p@5", false, {0.2, 0.4}}}).error().message,
      "cannot save run: the slots of plugin 'exact' (subset 'all') are not numbered from 1 (slot 2 at position 1: a "
      "slot is missing)");
  EXPECT_EQ(s->ListRuns()->size(), 3u);
}

}  // namespace
}  // namespace kplab
