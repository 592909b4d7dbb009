// Files mapped in place of a copy (kplab/io.h, SetMappedFileReads; design note 66): the bytes are the
// file's, a file cut shorter under the mapping reads as zeros and is reported instead of killing the
// process with SIGBUS, a file rewritten meanwhile is reported, and a bus error that is not a mapped
// file's still reaches the handler that was there before.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>
#include <thread>

#include "../../core/src/io/file_bytes.h"
#include "kplab/corpus.h"
#include "kplab/io.h"
#include "kplab/profile.h"
#include "temp_dir.h"

namespace kplab {
namespace {

using io_internal::FileBytes;
using test::TempDir;

// Mapping on for one test, and back to what it was after.
class MappedReads {
 public:
  explicit MappedReads(bool on) : was_(MappedFileReads()) { SetMappedFileReads(on); }
  ~MappedReads() { SetMappedFileReads(was_); }

 private:
  bool was_;
};

// A handler of our own for SIGBUS while it lives (the one before is put back after).
class BusHandler {
 public:
  explicit BusHandler(void (*handler)(int, siginfo_t*, void*)) {
    struct sigaction sa {};
    sa.sa_sigaction = handler;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGBUS, &sa, &before_);
  }
  ~BusHandler() { sigaction(SIGBUS, &before_, nullptr); }

 private:
  struct sigaction before_ {};
};

std::string WriteMapped(const std::string& path, std::size_t lines) {
  std::string text;
  for (std::size_t i = 0; i < lines; ++i) text += "keyphrase " + std::to_string(i) + ";graph network\n";
  std::ofstream(path, std::ios::binary) << text;
  return text;
}

TEST(MappedFiles, BytesAreTheFilesWhetherMappedOrRead) {
  TempDir dir;
  const std::string text = WriteMapped(dir / "big.txt", 10000);
  ASSERT_GE(text.size(), FileBytes::kMinMapped);
  for (const bool on : {true, false}) {
    MappedReads reads(on);
    auto bytes = FileBytes::Open(dir / "big.txt", "X");
    ASSERT_TRUE(bytes.ok()) << bytes.error().message;
    EXPECT_EQ((*bytes)->mapped(), on);
    EXPECT_EQ((*bytes)->view(), text);
    EXPECT_FALSE((*bytes)->Changed());
  }
  // Under 64 KiB a file is read: a mapping costs more than the copy.
  std::ofstream(dir / "small.txt") << "a;b\n";
  MappedReads reads(true);
  auto small = FileBytes::Open(dir / "small.txt", "X");
  ASSERT_TRUE(small.ok());
  EXPECT_FALSE((*small)->mapped());
  EXPECT_EQ((*small)->view(), "a;b\n");
  // The gate and the kind checks are ReadRegularFile's, before anything is opened or mapped.
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0644), 0);
  EXPECT_EQ(FileBytes::Open(dir / "fifo", "X").error().message,
            dir / "fifo" + ": a FIFO, not a regular file (expected X)");
  EXPECT_EQ(FileBytes::Open(dir / "none", "X").error().message, dir / "none" + ": no such file (expected X)");
}

TEST(MappedFiles, AFileCutShorterReadsAsZerosAndIsReported) {
  TempDir dir;
  const std::string text = WriteMapped(dir / "big.txt", 10000);
  MappedReads reads(true);
  auto bytes = FileBytes::Open(dir / "big.txt", "X");
  ASSERT_TRUE(bytes.ok());
  ASSERT_TRUE((*bytes)->mapped());
  const std::string_view view = (*bytes)->view();
  // Read the start once, then cut the file to 10,000 bytes (a page and more): what lay past the new
  // end would have raised SIGBUS.
  EXPECT_EQ(view.substr(0, 100), std::string_view(text).substr(0, 100));
  ASSERT_EQ(::truncate((dir / "big.txt").c_str(), 10000), 0);
  const std::size_t far = text.size() - 10;
  EXPECT_EQ(view[far], '\0');
  EXPECT_EQ(view[text.size() - 1], '\0');
  // Bytes before the cut are the file's still; every later page is zeros.
  EXPECT_EQ(view.substr(0, 100), std::string_view(text).substr(0, 100));
  for (std::size_t i = 16384; i < text.size(); i += 4096) EXPECT_EQ(view[i], '\0') << i;
  EXPECT_TRUE((*bytes)->Changed());
}

TEST(MappedFiles, ARewriteOfTheSameSizeAndModificationTimeIsReported) {
  TempDir dir;
  const std::string text = WriteMapped(dir / "big.txt", 10000);
  MappedReads reads(true);
  auto bytes = FileBytes::Open(dir / "big.txt", "X");
  ASSERT_TRUE(bytes.ok());
  EXPECT_FALSE((*bytes)->Changed());
  struct stat before {};
  ASSERT_EQ(::stat((dir / "big.txt").c_str(), &before), 0);
  {
    std::fstream f(dir / "big.txt", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(5);
    f << "X";
  }
  // The same size, and the modification time put back as it was (touch -r, rsync -t --inplace do):
  // the change time, which no one can set, still tells.
  const struct timespec times[2] = {{0, UTIME_OMIT}, before.st_mtim};
  ASSERT_EQ(::utimensat(AT_FDCWD, (dir / "big.txt").c_str(), times, 0), 0);
  EXPECT_TRUE((*bytes)->Changed());
}

// A file of exactly 17 pages (69,632 bytes) whose last line has no line feed: its last byte is the
// region's last file byte, and the readers' word-at-a-time loops end at the page of zeros after it. Each
// line is "x<i>;y" padded with 'p' to 63 bytes and a feed: 69,632 / 64 = 1,088 lines, the last one
// "x1087;y..." with a "q" in place of its feed.
TEST(MappedFiles, AFileOfWholePagesWithoutAFinalFeedIsReadToItsLastByte) {
  TempDir dir;
  constexpr std::size_t kBytes = 17 * 4096, kLine = 64;
  static_assert(kBytes % kLine == 0);
  std::string text;
  for (std::size_t i = 0; text.size() < kBytes; ++i) {
    std::string line = "x" + std::to_string(i) + ";y";
    line.resize(kLine - 1, 'p');
    text += line + "\n";
  }
  text.back() = 'q';  // the last line ends in "q", no feed
  ASSERT_EQ(text.size(), kBytes);
  std::ofstream(dir / "pred.txt", std::ios::binary) << text;
  MappedReads reads(true);
  auto bytes = FileBytes::Open(dir / "pred.txt", "X");
  ASSERT_TRUE(bytes.ok() && (*bytes)->mapped());
  auto p = ImportPredictions(dir / "pred.txt");
  ASSERT_TRUE(p.ok()) << p.error().message;
  ASSERT_EQ(p->docs.size(), kBytes / kLine);  // 1,088 lines
  const auto& last = p->docs.back().phrases;
  ASSERT_EQ(last.size(), 2u);
  EXPECT_EQ(std::string(last[0]), "x1087");
  // The line is 63 bytes before its feed; "x1087;y" is 7 of them, 56 'p's follow, then "q" in the feed's
  // place: "y", 56 'p's, "q".
  EXPECT_EQ(std::string(last[1]), "y" + std::string(56, 'p') + "q");
}

// More files mapped at once than there are guard slots (64): every file's bytes are right, those past
// the slots are read instead, and a slot given back is used again.
TEST(MappedFiles, FilesPastTheGuardSlotsAreRead) {
  TempDir dir;
  const std::string text = WriteMapped(dir / "a.txt", 10000);
  MappedReads reads(true);
  std::vector<std::shared_ptr<const FileBytes>> open;
  std::size_t mapped = 0;
  for (int i = 0; i < 70; ++i) {
    auto b = FileBytes::Open(dir / "a.txt", "X");
    ASSERT_TRUE(b.ok());
    ASSERT_EQ((*b)->view(), text) << i;
    mapped += (*b)->mapped() ? 1 : 0;
    open.push_back(std::move(*b));
  }
  EXPECT_LE(mapped, 64u);
  EXPECT_GE(mapped, 1u);
  EXPECT_FALSE(open.back()->mapped());
  open.erase(open.begin(), open.begin() + 10);  // whatever these held is free again
  auto again = FileBytes::Open(dir / "a.txt", "X");
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE((*again)->mapped());
}

// A file grown (appended to) after it was mapped is reported: its size moved.
TEST(MappedFiles, AFileGrownMeanwhileIsReported) {
  TempDir dir;
  WriteMapped(dir / "a.txt", 10000);
  MappedReads reads(true);
  auto b = FileBytes::Open(dir / "a.txt", "X");
  ASSERT_TRUE(b.ok() && (*b)->mapped());
  EXPECT_FALSE((*b)->Changed());
  std::ofstream(dir / "a.txt", std::ios::binary | std::ios::app) << "more;lines\n";
  EXPECT_TRUE((*b)->Changed());
}

std::atomic<int> g_bus_seen{0};
sigjmp_buf g_bus_jump;

void CountBus(int, siginfo_t*, void*) { g_bus_seen.fetch_add(1); }
void JumpOnBus(int, siginfo_t*, void*) {
  g_bus_seen.fetch_add(1);
  siglongjmp(g_bus_jump, 1);
}

// Reads byte i of p with JumpOnBus in charge: whether the read raised a SIGBUS that reached it (the read
// never completed).
[[gnu::noinline]] bool ReadFaults(const void* p, std::size_t i) {
  g_bus_seen = 0;
  volatile char got = 1;
  if (sigsetjmp(g_bus_jump, 1) == 0) got = static_cast<volatile const char*>(p)[i];
  return g_bus_seen.load() == 1 && got == 1;
}

// The handler's tests depend on what was installed before the first mapping of the process, so each runs
// in a process of its own: a death test's child, started afresh ("threadsafe" style re-runs the binary),
// exits 0 when every check held and 1 naming the first that did not.
#define KPLAB_IN_FRESH_PROCESS(body)                      \
  do {                                                    \
    GTEST_FLAG_SET(death_test_style, "threadsafe");       \
    EXPECT_EXIT(                                          \
        {                                                 \
          auto check = [](bool ok, const char* what) {    \
            if (!ok) {                                    \
              std::fprintf(stderr, "failed: %s\n", what); \
              std::_Exit(1);                              \
            }                                             \
          };                                              \
          body;                                           \
          std::_Exit(0);                                  \
        },                                                \
        ::testing::ExitedWithCode(0), "");                \
  } while (0)

TEST(MappedFilesDeathTest, OtherBusErrorsReachTheHandlerThatWasThere) {
  TempDir dir;
  WriteMapped(dir / "a.txt", 10000);
  WriteMapped(dir / "b.txt", 10000);
  KPLAB_IN_FRESH_PROCESS({
    SetMappedFileReads(true);
    BusHandler before(JumpOnBus);
    auto a = FileBytes::Open(dir / "a.txt", "X");
    check(a.ok() && (*a)->mapped(), "a.txt mapped");
    // A SIGBUS sent (no fault, no address) goes to the handler found.
    g_bus_seen = 0;
    if (sigsetjmp(g_bus_jump, 1) == 0) ::raise(SIGBUS);
    check(g_bus_seen.load() == 1, "a SIGBUS raised reached the handler found");
    // A real bus error in a mapping that is no FileBytes' goes there too.
    const int fd = ::open((dir / "b.txt").c_str(), O_RDONLY);
    void* other = ::mmap(nullptr, 65536, PROT_READ, MAP_PRIVATE, fd, 0);
    ::close(fd);
    check(other != MAP_FAILED, "b.txt mapped by hand");
    check(::truncate((dir / "b.txt").c_str(), 0) == 0, "b.txt cut");
    check(ReadFaults(other, 40000), "a real bus error elsewhere reached the handler found");
  });
}

// A handler installed after ours (as Python's faulthandler is) is left in front: ours is not put back
// before it, since it may chain to ours and ours to it for ever. Files are read from then on.
TEST(MappedFilesDeathTest, AHandlerInstalledLaterIsLeftInFrontAndFilesAreReadThen) {
  TempDir dir;
  const std::string text = WriteMapped(dir / "a.txt", 10000);
  WriteMapped(dir / "b.txt", 10000);
  KPLAB_IN_FRESH_PROCESS({
    SetMappedFileReads(true);
    auto a = FileBytes::Open(dir / "a.txt", "X");
    check(a.ok() && (*a)->mapped(), "a.txt mapped");
    struct sigaction later {};
    later.sa_sigaction = CountBus;
    later.sa_flags = SA_SIGINFO;
    sigemptyset(&later.sa_mask);
    ::sigaction(SIGBUS, &later, nullptr);
    auto b = FileBytes::Open(dir / "b.txt", "X");
    check(b.ok() && !(*b)->mapped(), "b.txt read, not mapped");
    check((*b)->view() == text, "b.txt's bytes");
    struct sigaction now {};
    ::sigaction(SIGBUS, nullptr, &now);
    check(now.sa_sigaction == CountBus, "the later handler still in front");
    g_bus_seen = 0;
    ::raise(SIGBUS);
    check(g_bus_seen.load() == 1, "a SIGBUS reaches it, once");
  });
}

// A process that ignores SIGBUS keeps ignoring one sent, with ours installed.
TEST(MappedFilesDeathTest, AnIgnoredSignalSentStaysIgnored) {
  TempDir dir;
  WriteMapped(dir / "a.txt", 10000);
  KPLAB_IN_FRESH_PROCESS({
    ::signal(SIGBUS, SIG_IGN);
    SetMappedFileReads(true);
    auto a = FileBytes::Open(dir / "a.txt", "X");
    check(a.ok() && (*a)->mapped(), "a.txt mapped");
    ::raise(SIGBUS);
    ::kill(::getpid(), SIGBUS);
  });
}

// Files mapped and unmapped on one thread, their guard slots claimed and freed again and again, while
// another thread takes bus errors in a mapping of its own: every one reaches the handler found, and none
// is mistaken for a mapped file's (which would map zeros over the other mapping).
TEST(MappedFilesDeathTest, SlotsClaimedMeanwhileNeverCatchAnotherFault) {
  TempDir dir;
  WriteMapped(dir / "a.txt", 10000);
  WriteMapped(dir / "b.txt", 10000);
  KPLAB_IN_FRESH_PROCESS({
    SetMappedFileReads(true);
    BusHandler before(JumpOnBus);
    // Below every file's region (mappings are placed from the top down), so that the fault's address
    // lies under the end of whichever slot is being claimed.
    const int fd = ::open((dir / "b.txt").c_str(), O_RDONLY);
    void* other = ::mmap(reinterpret_cast<void*>(std::uintptr_t{1} << 32), 65536, PROT_READ, MAP_PRIVATE, fd, 0);
    ::close(fd);
    check(other != MAP_FAILED && ::truncate((dir / "b.txt").c_str(), 0) == 0, "b.txt mapped by hand, then cut");
    {
      auto a = FileBytes::Open(dir / "a.txt", "X");
      check(a.ok() && (*a)->mapped() && static_cast<const void*>((*a)->view().data()) > other,
            "the fault's address is below the files' regions");
    }
    std::atomic<bool> stop{false};
    std::thread churn([&] {
      while (!stop.load()) {
        auto a = FileBytes::Open(dir / "a.txt", "X");
        if (!a.ok() || !(*a)->mapped()) std::_Exit(2);
      }
    });
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(500);
    long faults = 0;
    while (std::chrono::steady_clock::now() < until) {
      if (!ReadFaults(other, 40000)) {
        stop = true;
        churn.join();
        check(false, "a bus error outside every mapped file was taken for one");
      }
      ++faults;
    }
    stop = true;
    churn.join();
    check(faults > 100, "bus errors taken");
  });
}

// Kplab's own reader of a Meng-2017 dataset and its predictions: a predictions file cut shorter after it
// was opened (its documents are parsed while the corpus is built) fails the build with the change, not a
// corpus of zeros.
TEST(MappedFiles, ACorpusBuiltFromAFileCutMeanwhileIsRefused) {
  TempDir dir;
  WriteMapped(dir / "word_x_testing_allkeywords.txt", 10000);
  WriteMapped(dir / "pred.txt", 10000);
  MappedReads reads(true);
  const Profile profile = *FindProfile("kplab");
  {
    auto docs = LineDocuments::Open(dir.path(), {}, dir / "pred.txt", 1);
    ASSERT_TRUE(docs.ok()) << docs.error().message;
    auto corpus = BuildCorpus(std::move(*docs), profile, 1);
    ASSERT_TRUE(corpus.ok()) << corpus.error().message;
    EXPECT_EQ(corpus->docs.size(), 10000u);
  }
  auto docs = LineDocuments::Open(dir.path(), {}, dir / "pred.txt", 1);
  ASSERT_TRUE(docs.ok());
  ASSERT_EQ(::truncate((dir / "pred.txt").c_str(), 5000), 0);
  auto corpus = BuildCorpus(std::move(*docs), profile, 2);
  ASSERT_FALSE(corpus.ok());
  EXPECT_EQ(corpus.error().message, dir / "pred.txt" +
                                        ": changed while kplab read it (expected a file that stays as it is until "
                                        "kplab has read it)");
}

// A file cut at a random moment around its import, fifty times: each import gives the whole file's
// documents, or the documents of the file as cut (the cut came before the file was opened), or the
// change; never a crash, another error, or any other set of documents.
TEST(MappedFiles, ImportsRacingACutGiveTheFileTheCutFileOrTheChange) {
  TempDir dir;
  const std::string path = dir / "pred.txt";
  const std::string text = WriteMapped(path, 40000);
  const std::size_t cut_at = text.find('\n', text.size() / 3) + 1;  // a line's end: the cut file is valid
  const std::size_t whole = 40000,
                    cut = static_cast<std::size_t>(std::count(text.begin(), text.begin() + cut_at, '\n'));
  MappedReads reads(true);
  // The cut falls anywhere from the open to after the import: up to 1.5 times its time alone (warm).
  ASSERT_TRUE(ImportPredictions(path).ok());
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(ImportPredictions(path).ok());
  const auto alone = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0);
  std::mt19937 rng(7);
  int changed = 0, whole_seen = 0, cut_seen = 0;
  for (int round = 0; round < 50; ++round) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
    const auto delay = std::chrono::microseconds(std::uniform_int_distribution<long>(0, 3 * alone.count() / 2)(rng));
    std::thread cutter([&] {
      std::this_thread::sleep_for(delay);
      ASSERT_EQ(::truncate(path.c_str(), static_cast<off_t>(cut_at)), 0);
    });
    auto p = ImportPredictions(path);
    cutter.join();
    if (!p.ok()) {
      EXPECT_EQ(p.error().message, path +
                                       ": changed while kplab read it (expected a file that stays as it is until "
                                       "kplab has read it)");
      ++changed;
      continue;
    }
    EXPECT_TRUE(p->docs.size() == whole || p->docs.size() == cut) << p->docs.size();
    (p->docs.size() == whole ? whole_seen : cut_seen) += 1;
    EXPECT_EQ(std::string(p->docs.back().phrases.back()), "graph network");
  }
  RecordProperty("outcomes", std::to_string(whole_seen) + " whole, " + std::to_string(cut_seen) + " cut, " +
                                 std::to_string(changed) + " changed");
}

// The same race against kplab's own reader of a Meng-2017 dataset (LineDocuments::Open, then the corpus
// built from it, on two threads): the whole corpus, the change, or the error the file as cut gives ("only
// N lines", N its lines); never an error counted from zeros past the cut.
TEST(MappedFiles, LineDocumentsRacingACutGiveTheFileTheCutFileOrTheChange) {
  TempDir dir;
  WriteMapped(dir / "word_x_testing_allkeywords.txt", 40000);
  const std::string path = dir / "pred.txt";
  const std::string text = WriteMapped(path, 40000);
  const std::size_t cut_at = text.find('\n', text.size() / 3) + 1;
  const auto cut = static_cast<std::size_t>(std::count(text.begin(), text.begin() + cut_at, '\n'));
  const std::string changed_error =
      path + ": changed while kplab read it (expected a file that stays as it is until kplab has read it)";
  // LineDocuments names the last line there is ("p.txt:40: only 40 lines", as `kplab eval` says of a
  // short file); an import names the first one missing (the test above).
  const std::string cut_error = path + ":" + std::to_string(cut) + ": only " + std::to_string(cut) +
                                " lines (expected 40000 lines, one per document of " + dir.path() + ")";
  const Profile profile = *FindProfile("kplab");
  MappedReads reads(true);
  auto once = [&] {
    auto docs = LineDocuments::Open(dir.path(), {}, path, 2);
    if (!docs.ok()) return Result<std::size_t>(docs.error());
    auto corpus = BuildCorpus(std::move(*docs), profile, 2);
    if (!corpus.ok()) return Result<std::size_t>(corpus.error());
    return Result<std::size_t>(corpus->docs.size());
  };
  // The file as cut, read alone: the error the race may give.
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text.substr(0, cut_at);
  const auto cut_alone = once();
  ASSERT_FALSE(cut_alone.ok());
  EXPECT_EQ(cut_alone.error().message, cut_error);
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
  ASSERT_TRUE(once().ok());
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(once().ok());
  const auto alone = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0);
  std::mt19937 rng(11);
  for (int round = 0; round < 30; ++round) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
    const auto delay = std::chrono::microseconds(std::uniform_int_distribution<long>(0, alone.count())(rng));
    std::thread cutter([&] {
      std::this_thread::sleep_for(delay);
      ASSERT_EQ(::truncate(path.c_str(), static_cast<off_t>(cut_at)), 0);
    });
    auto got = once();
    cutter.join();
    if (got.ok()) {
      EXPECT_EQ(*got, 40000u);
    } else {
      EXPECT_TRUE(got.error().message == changed_error || got.error().message == cut_error) << got.error().message;
    }
  }
}

}  // namespace
}  // namespace kplab
