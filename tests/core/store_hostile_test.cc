// The run store under hostile conditions (issue 13): many first opens of one new file at once,
// read-only files, directories and filesystems, and values beyond the documented bounds.
#include <SQLiteCpp/SQLiteCpp.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
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

// 200 connections open one file that does not exist yet, each from its own thread (SQLite locks
// per file, so threads with their own connections contend as processes do): every open sets the file
// up or finds it set up (page size, WAL switch, schema), and every run is stored.
TEST(StoreHostileTest, TwoHundredConcurrentFirstOpensAllSucceed) {
  TempDir dir;
  const std::string path = dir / "new.db";
  constexpr int kOpeners = 200;
  std::vector<std::string> errors(kOpeners);
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kOpeners; ++i) {
    threads.emplace_back([&, i] {
      ready.fetch_add(1);
      while (ready.load() < kOpeners) std::this_thread::yield();  // start together
      auto store = RunStore::Open(path);
      if (!store) {
        errors[i] = store.error().message;
        return;
      }
      ScoreColumns scores;
      scores.metrics = {"m"};
      scores.columns = {{0.5, 1.0}};
      auto id = store->SaveRun(SmallRun("s" + std::to_string(i)), scores, {{"m", 0.75, {}, {}}});
      if (!id) errors[i] = id.error().message;
    });
  }
  for (auto& t : threads) t.join();
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

}  // namespace
}  // namespace kplab
