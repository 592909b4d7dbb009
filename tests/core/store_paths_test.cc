// Store paths name regular files (docs/store.md, "Store paths"): the store file and SQLite's side files
// beside it are checked before SQLite opens anything, in every mode of RunStore::Open and in
// PhraseCache::Open, with the importers' message; a path is a file name, never a URI of its own.
// Hostile: FIFOs (which blocked `runs list` for ever), devices, directories, sockets, links to them,
// link loops, side files that are FIFOs or directories (beside the link and beside its target).
// tests/host/store_paths_test.cc tries the same through every front-end that takes a store path.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>

#include "kplab/cache.h"
#include "kplab/store.h"
#include "temp_dir.h"

namespace kplab {
namespace {

using test::TempDir;
namespace fs = std::filesystem;

constexpr const char* kDb = "(expected a kplab database)";

// The error of every way of opening `path` (each must give the same one), or "" when all open it.
std::string StoreOpenError(const std::string& path) {
  std::string first;
  bool differ = false;
  auto note = [&](const std::string& e) {
    if (first.empty()) first = e;
    differ = differ || e != first;
  };
  for (auto mode : {RunStore::Mode::kReadWrite, RunStore::Mode::kRead, RunStore::Mode::kReadOnly}) {
    auto s = RunStore::Open(path, mode);
    note(s.ok() ? std::string("(opened)") : s.error().message);
  }
  auto c = PhraseCache::Open(path);
  note(c.ok() ? std::string("(opened)") : c.error().message);
  EXPECT_FALSE(differ) << "the ways of opening " << path << " disagree";
  return first;
}

void Store(const std::string& path) {
  auto s = RunStore::Open(path);
  ASSERT_TRUE(s.ok()) << s.error().message;
}

void Fifo(const std::string& path) { ASSERT_EQ(::mkfifo(path.c_str(), 0644), 0) << std::strerror(errno); }

TEST(StorePathsTest, NonRegularStoreFilesAreRefusedBeforeSqliteOpensThem) {
  TempDir dir;
  Fifo(dir / "fifo.db");
  EXPECT_EQ(StoreOpenError(dir / "fifo.db"), dir / "fifo.db" + ": a FIFO, not a regular file " + kDb);
  fs::create_directory(dir / "dir.db");
  EXPECT_EQ(StoreOpenError(dir / "dir.db"), dir / "dir.db" + ": a directory, not a regular file " + kDb);
  EXPECT_EQ(StoreOpenError("/dev/null"), std::string("/dev/null: a character device, not a regular file ") + kDb);
  EXPECT_EQ(StoreOpenError("/dev/zero"), std::string("/dev/zero: a character device, not a regular file ") + kDb);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string sock = dir / "sock.db";
  ASSERT_LT(sock.size(), sizeof addr.sun_path);
  std::strcpy(addr.sun_path, sock.c_str());
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  EXPECT_EQ(StoreOpenError(sock), sock + ": a socket, not a regular file " + kDb);
  ::close(fd);
}

TEST(StorePathsTest, LinksAreFollowedToWhatTheyName) {
  TempDir dir;
  Fifo(dir / "fifo");
  fs::create_symlink(dir / "fifo", dir / "link.db");
  EXPECT_EQ(StoreOpenError(dir / "link.db"), dir / "link.db" + ": a FIFO, not a regular file " + kDb);
  fs::create_symlink(dir / "link.db", dir / "chain.db");
  EXPECT_EQ(StoreOpenError(dir / "chain.db"), dir / "chain.db" + ": a FIFO, not a regular file " + kDb);
  fs::create_symlink(dir / "loop.db", dir / "loop.db");
  EXPECT_EQ(StoreOpenError(dir / "loop.db"), dir / "loop.db" + ": symbolic link loop " + kDb);
  // A dangling link is not a new store: SQLite would create whatever it points at.
  fs::create_symlink(dir / "nowhere/x.db", dir / "dangling.db");
  EXPECT_EQ(StoreOpenError(dir / "dangling.db"), dir / "dangling.db" + ": no such file " + kDb);
  // A link to a real store opens it.
  Store(dir / "real.db");
  fs::create_symlink(dir / "real.db", dir / "good.db");
  EXPECT_EQ(StoreOpenError(dir / "good.db"), "(opened)");
}

// SQLite opens PATH-wal, PATH-shm and PATH-journal beside the store: each must be absent or a regular
// file, beside the path and beside the file its links resolve to.
TEST(StorePathsTest, SideFilesAreCheckedToo) {
  TempDir dir;
  const std::string wal = "(expected SQLite's write-ahead log of a kplab database, or no file)";
  Store(dir / "a.db");
  Fifo(dir / "a.db-wal");
  EXPECT_EQ(StoreOpenError(dir / "a.db"), dir / "a.db-wal" + ": a FIFO, not a regular file " + wal);
  Store(dir / "b.db");
  fs::create_directory(dir / "b.db-shm");
  EXPECT_EQ(StoreOpenError(dir / "b.db"),
            dir / "b.db-shm" +
                ": a directory, not a regular file (expected SQLite's shared-memory index of a kplab "
                "database, or no file)");
  Store(dir / "c.db");
  Fifo(dir / "c.db-journal");
  EXPECT_EQ(StoreOpenError(dir / "c.db"),
            dir / "c.db-journal" +
                ": a FIFO, not a regular file (expected SQLite's rollback journal of a kplab "
                "database, or no file)");
  // A new store (nothing at the path yet) whose -wal is already a FIFO.
  Fifo(dir / "new.db-wal");
  EXPECT_EQ(StoreOpenError(dir / "new.db"), dir / "new.db-wal" + ": a FIFO, not a regular file " + wal);
  EXPECT_FALSE(fs::exists(dir / "new.db"));
  // A link to a store in another directory, whose -wal there is a FIFO.
  fs::create_directory(dir / "real");
  Store(dir / "real/r.db");
  Fifo(dir / "real/r.db-wal");
  fs::create_symlink(dir / "real/r.db", dir / "l.db");
  EXPECT_EQ(StoreOpenError(dir / "l.db"), dir / "real/r.db-wal" + ": a FIFO, not a regular file " + wal);
}

TEST(StorePathsTest, APathIsAFileNameNeverAUri) {
  TempDir dir;
  // With SQLite's URI names on (Debian builds it so), "file:...?mode=memory" would be a database in
  // memory: a run "stored" nowhere. It is a file of exactly that name.
  for (const std::string name : {"file:x.db?mode=memory", "file:y.db?mode=ro#frag", "odd%41 ?#.db"}) {
    const std::string path = dir / name;
    {
      auto s = RunStore::Open(path);
      ASSERT_TRUE(s.ok()) << name << ": " << s.error().message;
      RunRecord run;
      run.dataset_name = run.dataset_path = run.dataset_format = run.dataset_hash = "d";
      run.doc_ids = {"1"};
      run.system = run.profile = run.kplab_version = "x";
      ASSERT_TRUE(s->SaveRun(run, {}, {}).ok());
    }
    EXPECT_TRUE(fs::is_regular_file(path)) << name;
    auto again = RunStore::Open(path, RunStore::Mode::kReadOnly);
    ASSERT_TRUE(again.ok()) << again.error().message;
    EXPECT_EQ(again->ListRuns()->size(), 1u);
  }
  // "//x" is a path (with an empty authority in the URI), not a host name.
  Store("/" + (dir / "slashes.db"));
  EXPECT_TRUE(fs::is_regular_file(dir / "slashes.db"));
}

TEST(StorePathsTest, NulInThePath) {
  const std::string path("/tmp/a\0b.db", 11);
  EXPECT_EQ(StoreOpenError(path), "/tmp/a: path contains a NUL byte (expected a kplab database)");
}

}  // namespace
}  // namespace kplab
