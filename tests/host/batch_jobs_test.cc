// `kplab eval --jobs N` (docs/formats.md, Manifests): a batch evaluated N files at once must store the
// same runs as the serial batch — same ids in the same order, same numbers to the last bit, same lines
// on stdout and stderr, same exit code — including when one file of many fails. The truth is the serial
// command (--jobs 1, today's loop) on real sweeps of ../shared/data; EvaluateBatch's own contract (done
// on the calling thread, in entry order) is checked directly.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "batch.h"
#include "cli_harness.h"

namespace {

namespace fs = std::filesystem;
using kplab::test::Output;

const std::string kJobsShared = "../shared/data";

class BatchJobs : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kplab_jobs_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  Output Run(const std::string& db, const std::string& args) {
    return kplab::test::RunKplab(dir_, "KPLAB_DB=" + (dir_ / db).string(), args);
  }
  // Everything a stored run holds that does not depend on when it ran: `runs show` (its dataset,
  // predictions and their hashes, profile, parameters with the "_embeddings" record, plugins and their
  // hashes, every aggregate) without the first line (creation time, elapsed seconds), the aggregates as
  // JSON (shortest round-trip numbers: every bit), and every per-document score (`runs export`).
  std::string StoredRun(const std::string& db, int id) {
    Output table = Run(db, "runs show " + std::to_string(id));
    EXPECT_EQ(table.code, 0) << table.err;
    EXPECT_EQ(table.out.rfind("run " + std::to_string(id) + " (", 0), 0u) << table.out;
    Output json = Run(db, "runs show " + std::to_string(id) + " --output json");
    EXPECT_EQ(json.code, 0) << json.err;
    Output exported = Run(db, "runs export " + std::to_string(id) + " --output csv");
    EXPECT_EQ(exported.code, 0) << exported.err;
    return table.out.substr(table.out.find('\n') + 1) + json.out + exported.out;
  }
  fs::path dir_;
};

bool HaveData() { return fs::exists(std::string(KPLAB_SOURCE_DIR) + "/" + kJobsShared + "/predictions"); }

// Every predictions file of the shared data on Inspec, Krapivin and SemEval (500, 400 and 100
// documents) and one KP20k seed (20,000): 19 runs over four datasets, five systems and three seeds.
constexpr int kSweepRuns = 19;

std::string WriteSweepManifest(const fs::path& dir) {
  const fs::path root = fs::path(KPLAB_SOURCE_DIR) / kJobsShared;
  std::vector<fs::path> files;
  for (const auto& e : fs::recursive_directory_iterator(root / "predictions")) {
    // predictions/SYSTEM/DATASET/FILE.txt (not predictions/PROVENANCE.txt)
    if (e.is_regular_file() && e.path().extension() == ".txt" &&
        e.path().parent_path().parent_path().parent_path() == root / "predictions") {
      files.push_back(e.path());
    }
  }
  std::sort(files.begin(), files.end());
  std::string json = "{\"runs\": [";
  int n = 0;
  for (const fs::path& f : files) {
    const std::string dataset = f.parent_path().filename().string();
    if (dataset == "kp20k" && f.filename() != "seed1234.txt") continue;
    if (f.filename() == "predictions_stemmed_filtered.txt") continue;
    json += std::string(n++ ? ", " : "") + "{\"predictions\": \"" + f.string() + "\", \"dataset\": \"" +
            (root / "kpg_testsets_meng2017" / dataset).string() + "\"}";
  }
  json += "]}";
  const fs::path m = dir / "sweep.json";
  std::ofstream(m) << json;
  EXPECT_EQ(n, kSweepRuns);
  return m.string();
}

TEST_F(BatchJobs, ParallelSweepStoresWhatTheSerialOneStores) {
  if (!HaveData()) GTEST_SKIP() << "no ../shared/data";
  const std::string m = WriteSweepManifest(dir_);
  const std::string args = "eval --manifest " + m + " --metrics exact,rank,rprec,prmu --output csv";
  Output serial = Run("serial.db", args);  // --jobs 1 is the default
  ASSERT_EQ(serial.code, 0) << serial.err;
  // 19 runs, ids 1..19, in manifest order.
  EXPECT_NE(serial.out.find("\n19,ok,catSeqTG-2RF1,9527,semeval,"), std::string::npos) << serial.out;
  std::vector<std::string> serial_runs;
  for (int id = 1; id <= kSweepRuns; ++id) serial_runs.push_back(StoredRun("serial.db", id));
  for (int jobs : {1, 2, 3, 256}) {  // 256: more workers than files
    const std::string db = "jobs" + std::to_string(jobs) + ".db";
    Output par = Run(db, args + " --jobs " + std::to_string(jobs));
    ASSERT_EQ(par.code, 0) << par.err;
    EXPECT_EQ(par.out, serial.out) << "--jobs " << jobs;
    EXPECT_EQ(par.err, serial.err) << "--jobs " << jobs;
    for (int id = 1; id <= kSweepRuns; ++id) {
      EXPECT_EQ(StoredRun(db, id), serial_runs[id - 1]) << "--jobs " << jobs << ", run " << id;
    }
    Output extra = Run(db, "runs show " + std::to_string(kSweepRuns + 1));
    EXPECT_EQ(extra.code, 4) << "--jobs " << jobs << ": one run too many was stored";
  }
  // JSON and table output list the runs in the same order too.
  Output json_serial = Run("serial_json.db", "eval --manifest " + m + " --output json");
  Output json_par = Run("par_json.db", "eval --manifest " + m + " --output json --jobs 2");
  ASSERT_EQ(json_par.code, 0) << json_par.err;
  EXPECT_EQ(json_par.out, json_serial.out);
}

// One bad file and one file whose plugin fails among good ones, evaluated two at a time: the same
// messages (FILE: and FILE:LINE:) in the same order, the same rows, the same runs stored (the script
// failure recorded as a failed run, the unreadable file not at all), the same exit code (the first
// failure's: 2, an input error) as the serial batch.
TEST_F(BatchJobs, FailingFilesAmongManyAsInTheSerialBatch) {
  const fs::path out = dir_ / "out";
  const fs::path tiny = fs::path(KPLAB_SOURCE_DIR) / "examples/tiny/predictions.txt";
  for (const char* sys : {"a", "b", "bad", "broken", "c", "d"}) {
    fs::create_directories(out / sys);
    if (std::string(sys) == "bad") {
      std::ofstream(out / sys / "seed1.txt") << "a;b\n";  // 1 line for 5 documents
    } else {
      fs::copy_file(tiny, out / sys / "seed1.txt");
    }
  }
  const std::string args = "eval --dataset examples/tiny --predictions '" + out.string() +
                           "/*/seed1.txt' --plugins tests/data/batch --metrics exact,broken_system --output csv";
  Output serial = Run("serial.db", args);
  EXPECT_EQ(serial.code, 2) << serial.err;
  // The unreadable file: its error names the file; the plugin failure names the plugin's file and line.
  EXPECT_NE(serial.err.find("kplab: " + (out / "bad/seed1.txt").string() + ": "), std::string::npos) << serial.err;
  EXPECT_NE(serial.err.find("tests/data/batch/broken_system.lua:9: the broken system cannot be scored"),
            std::string::npos)
      << serial.err;
  // a, b stored as 1, 2; bad not stored; broken stored failed as 3; c, d as 4, 5.
  EXPECT_NE(serial.out.find("\n1,ok,a,1,tiny,kplab,"), std::string::npos) << serial.out;
  EXPECT_NE(serial.out.find("\n2,ok,b,1,tiny,kplab,"), std::string::npos) << serial.out;
  EXPECT_NE(serial.out.find("\n0,error,,,"), std::string::npos) << serial.out;
  EXPECT_NE(serial.out.find("\n3,failed,broken,1,tiny,kplab,"), std::string::npos) << serial.out;
  EXPECT_NE(serial.out.find("\n5,ok,d,1,tiny,kplab,"), std::string::npos) << serial.out;
  for (int jobs : {2, 6}) {
    const std::string db = "jobs" + std::to_string(jobs) + ".db";
    Output par = Run(db, args + " --jobs " + std::to_string(jobs));
    EXPECT_EQ(par.code, serial.code);
    EXPECT_EQ(par.out, serial.out) << "--jobs " << jobs;
    EXPECT_EQ(par.err, serial.err) << "--jobs " << jobs;
    for (int id = 1; id <= 5; ++id) EXPECT_EQ(StoredRun(db, id), StoredRun("serial.db", id)) << id;
    EXPECT_EQ(Run(db, "runs show 6").code, 4);
  }
}

// Semantic metrics in a parallel batch: every run plans its embeddings through the phrase cache in the
// store's database, so several threads open, read and write the cache at once (one connection each).
// The stored runs (their numbers and their "_embeddings" record) must be the serial batch's. The model
// is tests/data/homog/vectors.tsv (precomputed, so every cosine is fixed); the predictions are six
// rotations of tests/data/homog/pairs/predictions.txt's keyphrases (file k gives document d the line
// (d + k) mod 6), each a new set of phrases per document.
TEST_F(BatchJobs, SemanticMetricsShareThePhraseCacheAsInTheSerialBatch) {
  const std::string env = "KPLAB_MODELS=" + (dir_ / "models").string();
  Output imp =
      kplab::test::RunKplab(dir_, env, "model import homog tests/data/homog/vectors.tsv --backend precomputed");
  ASSERT_EQ(imp.code, 0) << imp.err;
  std::vector<std::string> lines;
  {
    std::ifstream in(fs::path(KPLAB_SOURCE_DIR) / "tests/data/homog/pairs/predictions.txt");
    for (std::string l; std::getline(in, l);) lines.push_back(l);
  }
  ASSERT_EQ(lines.size(), 6u);
  for (int k = 0; k < 6; ++k) {
    const fs::path d = dir_ / "out" / ("sys" + std::to_string(k));
    fs::create_directories(d);
    std::ofstream f(d / "seed1.txt");
    for (int doc = 0; doc < 6; ++doc) f << lines[(doc + k) % 6] << "\n";
  }
  const std::string args = "eval --dataset tests/data/homog/pairs --predictions '" + (dir_ / "out").string() +
                           "/*/seed1.txt' --metrics exact,semrp,homogeneity_sem,homogeneity_vocab --model homog "
                           "--output csv";
  auto run = [&](const std::string& db, const std::string& extra) {
    return kplab::test::RunKplab(dir_, env + " KPLAB_DB=" + (dir_ / db).string(), args + extra);
  };
  Output serial = run("serial.db", "");
  ASSERT_EQ(serial.code, 0) << serial.err;
  EXPECT_NE(serial.out.find("\n6,ok,sys5,1,"), std::string::npos) << serial.out;
  for (int jobs : {3, 6}) {
    const std::string db = "jobs" + std::to_string(jobs) + ".db";
    Output par = run(db, " --jobs " + std::to_string(jobs));
    ASSERT_EQ(par.code, 0) << par.err;
    EXPECT_EQ(par.out, serial.out);
    EXPECT_EQ(par.err, serial.err);
    for (int id = 1; id <= 6; ++id) {
      const std::string stored = StoredRun(db, id);
      EXPECT_NE(stored.find("\"_embeddings\": {\"model\": \"homog\""), std::string::npos) << stored;
      EXPECT_EQ(stored, StoredRun("serial.db", id)) << "--jobs " << jobs << ", run " << id;
    }
  }
}

TEST_F(BatchJobs, BadJobsValuesAreUsageErrors) {
  const std::string eval = "eval --dataset examples/tiny --predictions 'examples/tiny/pred*.txt' --jobs ";
  for (const char* v : {"0", "-1", "257", "99999999999999999999999", "two", "2.5", "", "1e3"}) {
    Output o = Run("db", eval + "'" + v + "'");
    EXPECT_EQ(o.code, 1) << v;
    EXPECT_EQ(o.err,
              std::string("kplab: --jobs must be an integer from 1 to 256 (got '") + v + "') (see 'kplab help')\n")
        << v;
    EXPECT_EQ(o.out, "") << v;
  }
  EXPECT_FALSE(fs::exists(dir_ / "db"));  // nothing opened, nothing stored
  Output missing = Run("db", "eval --dataset examples/tiny --predictions 'examples/tiny/pred*.txt' --jobs");
  EXPECT_EQ(missing.code, 1);
  EXPECT_NE(missing.err.find("--jobs"), std::string::npos) << missing.err;
  // A single file is one run: --jobs is accepted and changes nothing.
  Output one = Run("db",
                   "eval --dataset examples/tiny --predictions examples/tiny/predictions.txt --jobs 4 "
                   "--output csv --no-store");
  EXPECT_EQ(one.code, 0) << one.err;
  EXPECT_NE(one.out.find("all.p@5.micro,0.48\n"), std::string::npos) << one.out;
}

// EvaluateBatch's contract: `done` runs on the calling thread for entries 0, 1, 2, ... in order, once
// each, whatever `jobs`; `before` once per entry.
// Lines on stderr stay whole while files are scored at once: a plugin's kp.log lines (written from the
// scoring lanes of several files) and the batch's error messages with their tracebacks never land inside
// one another. Before the error messages were written in one piece each, "kplab: " and the message
// were separate writes, and a kp.log line landed between them in 6 of 10 runs of this batch.
TEST_F(BatchJobs, StderrLinesStayWholeUnderManyJobs) {
  std::string ds, preds[8];
  for (int i = 0; i < 60; ++i) {
    const std::string id = "d" + std::to_string(i);
    ds += "{\"id\": \"" + id +
          "\", \"source\": \"a title [sep] running dogs\", \"target\": \"running dogs;walked cats\"}\n";
    for (int k = 0; k < 8; ++k) {
      // The last document fails in every other file: its error is reported while other files still log.
      const bool fail = i == 59 && k % 2 == 0;
      preds[k] +=
          "{\"id\": \"" + id + "\", \"predictions\": [\"running dogs\", \"x\"" + (fail ? ", \"y\"" : "") + "]}\n";
    }
  }
  fs::create_directories(dir_ / "p");
  fs::create_directories(dir_ / "pl");
  std::ofstream(dir_ / "ds.jsonl") << ds;
  for (int k = 0; k < 8; ++k) std::ofstream(dir_ / "p" / ("p" + std::to_string(k) + ".jsonl")) << preds[k];
  std::ofstream(dir_ / "pl" / "lg.lua")
      << "-- kplab-api: 2\n"
         "return kp.metric {\n"
         "  name = 'lg', version = '1', columns = {'v'},\n"
         "  score = function(doc, p, ctx, out)\n"
         "    if #doc.preds == 3 then error('boom ' .. doc.id) end\n"
         "    for i = 1, 30 do kp.log('LOGLINE-' .. doc.id .. '-' .. i .. string.rep('x', 100)) end\n"
         "    out.v = 1\n"
         "  end,\n"
         "}\n";
  // A whole line: a kp.log line ("[lg] LOGLINE-dN-I" and its 100 x's), an error message with the failing
  // document, or a line of its traceback. (No std::regex: its templates took ~28 s of this binary's
  // compile.)
  const auto whole = [](const std::string& l) {
    if (l.starts_with("[lg] LOGLINE-d")) {
      return l.size() > 100 && l.find_first_not_of('x', l.size() - 100) == std::string::npos &&
             l.find_first_not_of("0123456789-", 14) == l.size() - 100;
    }
    return (l.starts_with("kplab: ") && l.find("boom d59") != std::string::npos) || l == "stack traceback:" ||
           l.starts_with("\t");
  };
  for (int round = 0; round < 5; ++round) {
    const Output o =
        Run("unused.db", "eval --dataset " + (dir_ / "ds.jsonl").string() + " --predictions '" + (dir_ / "p").string() +
                             "/p*.jsonl' --jobs 4 --no-store --plugins " + (dir_ / "pl").string() + " --metrics lg");
    EXPECT_EQ(o.code, 3) << o.err.substr(0, 2000);
    std::istringstream in(o.err);
    int logs = 0, errors = 0;
    for (std::string line; std::getline(in, line);) {
      EXPECT_TRUE(whole(line)) << "round " << round << ": a line that is not whole: " << line;
      logs += line.starts_with("[lg] ");
      errors += line.starts_with("kplab: ");
    }
    // Every document but the four failing ones logs its 30 lines (some twice: --verify-docs re-scores a few).
    EXPECT_GE(logs, (8 * 60 - 4) * 30) << "round " << round;
    EXPECT_EQ(errors, 4) << "round " << round;
  }
}

TEST(EvaluateBatchJobs, DoneRunsOnTheCallerInEntryOrder) {
  kplab::host::EvalRequest base;
  base.metrics = {"exact"};
  std::vector<kplab::ManifestEntry> entries;
  for (int i = 0; i < 9; ++i) {
    kplab::ManifestEntry e;
    e.dataset_path = std::string(KPLAB_SOURCE_DIR) + "/examples/tiny";
    // Every third entry a missing file: errors are delivered in their turn too.
    e.predictions_path =
        std::string(KPLAB_SOURCE_DIR) + (i % 3 == 1 ? "/examples/tiny/missing.txt" : "/examples/tiny/predictions.txt");
    e.system = std::string("s").append(std::to_string(i));
    entries.push_back(e);
  }
  for (int jobs : {1, 2, 4, 9, 64}) {
    std::vector<std::size_t> order;
    std::vector<int> before(entries.size(), 0);
    std::mutex mu;
    const auto caller = std::this_thread::get_id();
    bool wrong_thread = false;
    kplab::host::EvaluateBatch(
        base, entries,
        [&](std::size_t i, const kplab::Result<kplab::host::EvalResult>& r) {
          wrong_thread = wrong_thread || std::this_thread::get_id() != caller;
          order.push_back(i);
          EXPECT_EQ(r.ok(), i % 3 != 1) << i;
          if (r.ok()) {
            EXPECT_EQ(r->run.system, "s" + std::to_string(i));
          }
        },
        [&](std::size_t i) {
          std::lock_guard<std::mutex> lock(mu);
          ++before[i];
        },
        jobs);
    EXPECT_FALSE(wrong_thread) << jobs;
    EXPECT_EQ(order, (std::vector<std::size_t>{0, 1, 2, 3, 4, 5, 6, 7, 8})) << jobs;
    EXPECT_EQ(before, std::vector<int>(entries.size(), 1)) << jobs;
  }
}

}  // namespace
