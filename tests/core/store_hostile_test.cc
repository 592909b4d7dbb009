// The run store under hostile conditions: many first opens of one new file at once, read-only files,
// directories and filesystems, and values beyond the documented bounds.
#include <SQLiteCpp/SQLiteCpp.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "kplab/store.h"
#include "temp_dir.h"

namespace kplab {
namespace {

namespace fs = std::filesystem;
using test::TempDir;

RunRecord SmallRun(const std::string& system) {
  RunRecord run;
  run.dataset_name = "tiny";
  run.dataset_path = "examples/tiny";
  run.dataset_format = "meng";
  run.dataset_hash = "h";
  run.doc_ids = {"1", "2"};
  run.system = system;
  run.profile = "kplab";
  run.kplab_version = "test";
  return run;
}

// n threads open path at once (each waits until all have started), each then calling save(store, i);
// returns each one's error ("" when it opened and saved).
template <typename Save>
std::vector<std::string> OpenTogether(const std::string& path, int n, const Save& save) {
  std::vector<std::string> errors(n);
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i) {
    threads.emplace_back([&, i] {
      ready.fetch_add(1);
      while (ready.load() < n) std::this_thread::yield();  // start together
      auto store = RunStore::Open(path);
      if (!store) {
        errors[i] = store.error().message;
        return;
      }
      auto id = save(*store, i);
      if (!id) errors[i] = id.error().message;
    });
  }
  for (auto& t : threads) t.join();
  return errors;
}

// 200 connections open one file that does not exist yet, each from its own thread (SQLite locks
// per file, so threads with their own connections contend as processes do): every open sets the file
// up or finds it set up (page size, WAL switch, schema), and every run is stored.
TEST(StoreHostileTest, TwoHundredConcurrentFirstOpensAllSucceed) {
  TempDir dir;
  const std::string path = dir / "new.db";
  constexpr int kOpeners = 200;
  const std::vector<std::string> errors = OpenTogether(path, kOpeners, [](RunStore& store, int i) {
    ScoreColumns scores;
    scores.metrics = {"m"};
    scores.columns = {{0.5, 1.0}};
    return store.SaveRun(SmallRun("s" + std::to_string(i)), scores, {{"m", 0.75, {}, {}}});
  });
  int failed = 0;
  for (int i = 0; i < kOpeners; ++i) {
    if (!errors[i].empty()) {
      ++failed;
      ADD_FAILURE() << "opener " << i << ": " << errors[i];
    }
  }
  EXPECT_EQ(failed, 0);
  SQLite::Database db(path, SQLite::OPEN_READONLY);
  EXPECT_EQ(db.execAndGet("SELECT count(*) FROM runs").getInt64(), kOpeners);
  EXPECT_EQ(db.execAndGet("PRAGMA journal_mode").getString(), "wal");
}

// A version-5 file with a shard's slots opened by 50 writers at once (threads with their own
// connections, as processes contend): one of them migrates it to version 6 and computes the digests,
// the others wait for the lock and find it done; every one saves a run, and the first run's slots
// still read back under the digest computed for them.
TEST(StoreHostileTest, ConcurrentOpensOfAVersionFiveFileMigrateItOnce) {
  TempDir dir;
  const std::string path = dir / "v5.db";
  {
    auto store = RunStore::Open(path);
    ASSERT_TRUE(store.ok()) << store.error().message;
    RunRecord run = SmallRun("shard");
    run.plugins = {{"p", "1", "aa", "p.lua"}};
    run.shard = ShardInfo{1, 2, 1, 2};
    auto id = store->SaveRun(run, {}, {}, {{0, "", 1, "h", true, {3.0}}});
    ASSERT_TRUE(id.ok()) << id.error().message;
  }
  {
    SQLite::Database db(path, SQLite::OPEN_READWRITE);
    db.exec("ALTER TABLE runs DROP COLUMN slots_digest; UPDATE meta SET value = '5' WHERE key = 'schema_version'");
  }
  constexpr int kOpeners = 50;
  const std::vector<std::string> errors = OpenTogether(
      path, kOpeners, [](RunStore& store, int i) { return store.SaveRun(SmallRun("s" + std::to_string(i)), {}, {}); });
  for (int i = 0; i < kOpeners; ++i) EXPECT_EQ(errors[i], "") << "opener " << i;
  auto store = RunStore::Open(path, RunStore::Mode::kReadOnly);
  ASSERT_TRUE(store.ok()) << store.error().message;
  EXPECT_EQ(store->schema_version(), 6);
  EXPECT_EQ(store->ListRuns()->size(), static_cast<std::size_t>(kOpeners + 1));
  auto slots = store->GetSlots(1);
  ASSERT_TRUE(slots.ok()) << slots.error().message;
  EXPECT_EQ((*slots)[0].values, std::vector<double>{3.0});
  SQLite::Database db(path, SQLite::OPEN_READONLY);
  EXPECT_EQ(db.execAndGet("SELECT count(*) FROM runs WHERE slots_digest IS NULL").getInt64(), 0);
}

// The documented bounds (docs/store.md), exactly at and one past each.
TEST(StoreHostileTest, BoundsOnColumnsNamesAndErrorText) {
  auto store = RunStore::Open(":memory:");
  ASSERT_TRUE(store.ok());
  ScoreColumns many;
  for (std::size_t i = 0; i <= RunStore::kMaxColumns; ++i) {
    many.metrics.push_back(std::string("m").append(std::to_string(i)));
    many.columns.push_back({0.0, 1.0});
  }
  EXPECT_EQ(store->SaveRun(SmallRun("a"), many, {}).error().message,
            "cannot save run: 10001 score columns (expected at most 10000)");
  many.metrics.pop_back();
  many.columns.pop_back();
  EXPECT_TRUE(store->SaveRun(SmallRun("a"), many, {}).ok());
  std::vector<AggregateValue> aggs(RunStore::kMaxColumns + 1);
  for (std::size_t i = 0; i < aggs.size(); ++i) aggs[i].metric = std::string("a").append(std::to_string(i));
  EXPECT_EQ(store->SaveRun(SmallRun("a"), {}, aggs).error().message,
            "cannot save run: 10001 aggregates (expected at most 10000)");
  ScoreColumns named;
  named.metrics = {std::string(1024, 'x')};
  named.columns = {{0.0, 1.0}};
  EXPECT_TRUE(store->SaveRun(SmallRun("a"), named, {}).ok());
  named.metrics = {std::string(1025, 'x')};
  EXPECT_EQ(store->SaveRun(SmallRun("a"), named, {}).error().message,
            "cannot save run: a metric name in scores has 1025 bytes, starting '" + std::string(40, 'x') +
                "...' (expected at most 1024)");
  EXPECT_EQ(store->SaveRun(SmallRun("a"), {}, {{std::string(10 << 20, 'y'), 1.0, {}, {}}}).error().message,
            "cannot save run: a metric name in aggregates has 10485760 bytes, starting '" + std::string(40, 'y') +
                "...' (expected at most 1024)");
  // A failed run's error text: kept whole up to 64 KiB, cut beyond with its length (on a UTF-8
  // boundary: the 2-byte 'é' straddling the cut is left out whole).
  RunRecord failed = SmallRun("f");
  failed.status = "failed";
  failed.error = std::string(65535, 'e') + "\xC3\xA9" + std::string(100, 'z');
  auto id = store->SaveRun(failed, {}, {});
  ASSERT_TRUE(id.ok()) << id.error().message;
  EXPECT_EQ(store->GetRun(*id)->error, std::string(65535, 'e') + " ... (error text cut at 65536 of 65637 bytes)");
  failed.error = std::string(65536, 'e');
  id = store->SaveRun(failed, {}, {});
  EXPECT_EQ(store->GetRun(*id)->error, std::string(65536, 'e'));
}

// Read-only opens never write: a missing file is an error (not created), an old schema is read as it
// is (not migrated), and an empty file is not a store.
TEST(StoreHostileTest, ReadOnlyModeNeverWrites) {
  TempDir dir;
  const std::string missing = dir / "missing.db";
  EXPECT_EQ(RunStore::Open(missing, RunStore::Mode::kReadOnly).error().message,
            missing + ": no such run store (expected a kplab database; `kplab eval` creates one)");
  EXPECT_FALSE(fs::exists(missing));
  const std::string path = dir / "v2.db";
  {
    auto store = RunStore::Open(path);
    ASSERT_TRUE(store.ok());
    ASSERT_TRUE(store->SaveRun(SmallRun("s"), {}, {{"m", 0.5, {}, {}}}).ok());
  }
  {  // pretend it is a version-1 file
    SQLite::Database db(path, SQLite::OPEN_READWRITE);
    db.exec("UPDATE meta SET value = '1' WHERE key = 'schema_version'");
  }
  const auto before = fs::last_write_time(path);
  auto ro = RunStore::Open(path, RunStore::Mode::kReadOnly);
  ASSERT_TRUE(ro.ok()) << ro.error().message;
  EXPECT_EQ(ro->schema_version(), 1);
  EXPECT_EQ(ro->ListRuns()->size(), 1u);
  EXPECT_EQ(ro->GetAggregates(1)->at(0).value, 0.5);
  EXPECT_FALSE(ro->SaveRun(SmallRun("t"), {}, {}).ok());
  EXPECT_EQ(fs::last_write_time(path), before);
  const std::string empty = dir / "empty.db";
  std::ofstream(empty).close();
  EXPECT_EQ(RunStore::Open(empty, RunStore::Mode::kReadOnly).error().message,
            empty + ": not a kplab database (it has no tables)");
}

}  // namespace
}  // namespace kplab
