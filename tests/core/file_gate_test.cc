// The one gate for files (kplab/file_gate.h): what each context may open, how a path is resolved before
// it is checked, and that worker threads and lazy loads keep the context that started them.
#include "kplab/file_gate.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>

#include "kplab/homog.h"
#include "kplab/io.h"

namespace kplab {
namespace {

namespace fs = std::filesystem;

class FileGate : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kplab_file_gate_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "granted");
    fs::create_directories(dir_ / "outside");
    std::ofstream(dir_ / "granted/in.txt") << "in";
    std::ofstream(dir_ / "outside/secret.txt") << "TOPSECRET";
    granted_ = *ResolvePath((dir_ / "granted").string());
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string P(const std::string& rel) const { return (dir_ / rel).string(); }
  std::shared_ptr<const FileGrants> Script(bool write) const {
    FileGrants g = FileGrants::Script();
    (write ? g.write : g.read).push_back(granted_);
    return std::make_shared<const FileGrants>(g);
  }
  fs::path dir_;
  std::string granted_;
};

const std::string kOutsideRead =
    ": outside the directories scripts may read (the current directory, --allow-read DIR and --allow-write DIR)";
const std::string kOutsideWrite =
    ": outside the directories scripts may write (the current directory and --allow-write DIR)";

TEST_F(FileGate, TheUserMayOpenAnything) {
  EXPECT_FALSE(CurrentFileGrants()->confined());
  EXPECT_TRUE(GateFile(P("outside/secret.txt"), FileAccess::kRead).ok());
  EXPECT_TRUE(GateFile(P("outside/new.txt"), FileAccess::kWrite).ok());
  // The user's context leaves bad names to the opener, which reports them itself.
  EXPECT_TRUE(GateFile(std::string("a\0b", 3), FileAccess::kRead).ok());
}

TEST_F(FileGate, AScriptReadsAndWritesOnlyUnderItsGrants) {
  FileScope scope(Script(false));
  EXPECT_TRUE(GateFile(P("granted/in.txt"), FileAccess::kRead).ok());
  EXPECT_TRUE(GateFile(P("granted"), FileAccess::kRead).ok());
  EXPECT_TRUE(GateFile(P("granted/missing/deeper.txt"), FileAccess::kRead).ok());
  EXPECT_EQ(GateFile(P("granted/in.txt"), FileAccess::kWrite).message(), P("granted/in.txt") + kOutsideWrite);
  EXPECT_EQ(GateFile(P("outside/secret.txt"), FileAccess::kRead).message(), P("outside/secret.txt") + kOutsideRead);
  // ".." out, a prefix that is not a parent, and a symbolic link out of the granted directory.
  EXPECT_EQ(GateFile(P("granted/../outside/secret.txt"), FileAccess::kRead).message(),
            P("granted/../outside/secret.txt") + kOutsideRead);
  fs::create_directories(dir_ / "granted2");
  EXPECT_FALSE(GateFile(P("granted2/x"), FileAccess::kRead).ok());
  fs::create_symlink(dir_ / "outside/secret.txt", dir_ / "granted/link.txt");
  EXPECT_EQ(GateFile(P("granted/link.txt"), FileAccess::kRead).message(), P("granted/link.txt") + kOutsideRead);
  fs::create_symlink(dir_ / "outside", dir_ / "granted/linkdir");
  EXPECT_FALSE(GateFile(P("granted/linkdir/secret.txt"), FileAccess::kRead).ok());
  // Names the gate refuses whatever the grants.
  const Status nul = GateFile(std::string("granted/in.txt\0/etc/passwd", 26), FileAccess::kRead);
  EXPECT_EQ(nul.message(), "granted/in.txt: path contains a NUL byte");
  EXPECT_EQ(nul.kind(), ErrorKind::kUsage);
  fs::create_symlink(dir_ / "granted/loop", dir_ / "granted/loop");
  EXPECT_EQ(GateFile(P("granted/loop"), FileAccess::kRead).message(), P("granted/loop") + ": symbolic link loop");
  EXPECT_EQ(GateFile("", FileAccess::kRead).message(), ": empty path");
}

TEST_F(FileGate, WriteGrantsAlsoRead) {
  FileScope scope(Script(true));
  EXPECT_TRUE(GateFile(P("granted/in.txt"), FileAccess::kRead).ok());
  EXPECT_TRUE(GateFile(P("granted/new/out.txt"), FileAccess::kWrite).ok());
  EXPECT_EQ(GateFile(P("outside/x"), FileAccess::kWrite).message(), P("outside/x") + kOutsideWrite);
}

// A plugin reads exactly the files granted to it: not what lies beside or under them, and never writes.
TEST_F(FileGate, APluginReadsExactlyItsFiles) {
  const std::string file = *ResolvePath(P("granted/in.txt"));
  FileScope scope(std::make_shared<const FileGrants>(FileGrants::Plugin({file, granted_})));
  EXPECT_TRUE(GateFile(P("granted/in.txt"), FileAccess::kRead).ok());
  EXPECT_TRUE(GateFile(P("granted/../granted/in.txt"), FileAccess::kRead).ok());
  const std::string refused =
      ": not a file a plugin may read (only the value of one of its string parameters set for the run, e.g. "
      "--param METRIC.NAME=PATH, read while its prepare runs)";
  // The directory was granted by a parameter naming it: what is under it may be read (a dataset folder,
  // a model snapshot), not what is beside it, nor what a link inside it leads to.
  std::ofstream(dir_ / "granted/other.txt") << "x";
  EXPECT_TRUE(GateFile(P("granted/other.txt"), FileAccess::kRead).ok());
  std::ofstream(dir_ / "beside.txt") << "x";
  EXPECT_EQ(GateFile(P("beside.txt"), FileAccess::kRead).message(), P("beside.txt") + refused);
  std::filesystem::create_symlink(dir_ / "beside.txt", dir_ / "granted/link.txt");
  EXPECT_EQ(GateFile(P("granted/link.txt"), FileAccess::kRead).message(), P("granted/link.txt") + refused);
  EXPECT_EQ(GateFile(P("granted/in.txt"), FileAccess::kWrite).message(),
            P("granted/in.txt") + ": plugins write no files");
  FileScope nothing(std::make_shared<const FileGrants>(FileGrants::Plugin()));
  EXPECT_EQ(GateFile(P("granted/in.txt"), FileAccess::kRead).message(), P("granted/in.txt") + refused);
}

TEST_F(FileGate, ScopesNestAndEnd) {
  {
    FileScope script(Script(false));
    EXPECT_TRUE(CurrentFileGrants()->confined());
    {
      UserFileScope user;
      EXPECT_TRUE(GateFile(P("outside/secret.txt"), FileAccess::kRead).ok());
      FileScope keep(nullptr);  // null keeps the current context
      EXPECT_FALSE(CurrentFileGrants()->confined());
    }
    EXPECT_FALSE(GateFile(P("outside/secret.txt"), FileAccess::kRead).ok());
  }
  EXPECT_FALSE(CurrentFileGrants()->confined());
}

// A thread starts in the user's context: code that hands work to a thread carries its own context.
TEST_F(FileGate, AThreadKeepsTheContextItIsGiven) {
  FileScope script(Script(false));
  bool fresh_allowed = false, carried_allowed = true;
  std::thread fresh([&] { fresh_allowed = GateFile(P("outside/secret.txt"), FileAccess::kRead).ok(); });
  fresh.join();
  std::thread carried([&, grants = CurrentFileGrants()] {
    FileScope scope(grants);
    carried_allowed = GateFile(P("outside/secret.txt"), FileAccess::kRead).ok();
  });
  carried.join();
  EXPECT_TRUE(fresh_allowed);
  EXPECT_FALSE(carried_allowed);
}

// The openers of core call the gate before they open: a refused file is never read, so its content
// cannot reach a message.
TEST_F(FileGate, CoreReadersAskTheGateFirst) {
  FileScope script(Script(false));
  const Result<std::string> read = ReadRegularFile(P("outside/secret.txt"), "a text file");
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.error().message, P("outside/secret.txt") + kOutsideRead);
  EXPECT_EQ(CheckRegularFile(P("outside/secret.txt"), "x").message(), P("outside/secret.txt") + kOutsideRead);
  DatasetOptions opt;
  auto ds = ImportDataset(P("outside"), opt);
  ASSERT_FALSE(ds.ok());
  EXPECT_EQ(ds.error().message, P("outside") + kOutsideRead);
  EXPECT_EQ(ReadManifest(P("outside/secret.txt")).error().message, P("outside/secret.txt") + kOutsideRead);
  // Granted: read as before.
  EXPECT_EQ(*ReadRegularFile(P("granted/in.txt"), "a text file"), "in");
}

// An importer's error keeps its kind on the way out (design note 52): a path the gate refuses is a usage
// error wherever the importer meets it (a dataset directory it lists, a file it reads, the predictions
// read on the line importer's second thread, a reformulation-pairs file), while a granted file that is
// wrong is still input, with its file and line. Before, every importer error came out as input.
TEST_F(FileGate, AnImporterPassesTheGatesUsageErrorOn) {
  fs::create_directories(dir_ / "granted/meng");
  std::ofstream(dir_ / "granted/meng/x_context.txt") << "a title <eos> the body\n";
  std::ofstream(dir_ / "granted/meng/x_allkeywords.txt") << "body\n";
  std::ofstream(dir_ / "granted/bad.jsonl") << "{\"id\": \"d1\"\n";
  std::ofstream(dir_ / "outside/preds.txt") << "body\n";
  std::ofstream(dir_ / "outside/pairs.jsonl") << "{}\n";
  FileScope script(Script(false));
  auto expect_usage = [&](const Error& e, const std::string& path) {
    EXPECT_EQ(e.kind, ErrorKind::kUsage) << e.message;
    EXPECT_EQ(e.message, path + kOutsideRead);
  };
  auto listed = ImportDataset(P("outside"));
  ASSERT_FALSE(listed.ok());
  expect_usage(listed.error(), P("outside"));
  auto preds = ImportPredictions(P("outside/preds.txt"));
  ASSERT_FALSE(preds.ok());
  expect_usage(preds.error(), P("outside/preds.txt"));
  for (int threads : {1, 2}) {  // the predictions read after the dataset, or beside it on a thread
    auto lines = LineDocuments::Open(P("granted/meng"), {}, P("outside/preds.txt"), threads);
    ASSERT_FALSE(lines.ok());
    expect_usage(lines.error(), P("outside/preds.txt"));
  }
  auto pairs = homog::ImportReformulations(P("outside/pairs.jsonl"));
  ASSERT_FALSE(pairs.ok());
  expect_usage(pairs.error(), P("outside/pairs.jsonl"));
  // The hostile input the gate lets through is still bad input.
  DatasetOptions kpeval;
  kpeval.format = "kpeval";
  auto bad = ImportDataset(P("granted/bad.jsonl"), kpeval);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().kind, ErrorKind::kInput) << bad.error().message;
  EXPECT_EQ(bad.error().message.rfind(P("granted/bad.jsonl") + ":1: ", 0), 0u) << bad.error().message;
  auto good = LineDocuments::Open(P("granted/meng"), {}, P("granted/meng/x_allkeywords.txt"), 1);
  EXPECT_TRUE(good.ok()) << good.error().message;
}

}  // namespace
}  // namespace kplab
