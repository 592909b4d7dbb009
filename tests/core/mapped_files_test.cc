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

TEST(MappedFiles, ARewriteOfTheSameSizeIsReported) {
  TempDir dir;
  const std::string text = WriteMapped(dir / "big.txt", 10000);
  MappedReads reads(true);
  auto bytes = FileBytes::Open(dir / "big.txt", "X");
  ASSERT_TRUE(bytes.ok());
  EXPECT_FALSE((*bytes)->Changed());
  {
    std::fstream f(dir / "big.txt", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(5);
    f << "X";
  }
  // The same size; the modification time is set apart from the first one in case the clock is coarse.
  const struct timespec times[2] = {{0, UTIME_OMIT}, {1234567, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, (dir / "big.txt").c_str(), times, 0), 0);
  EXPECT_TRUE((*bytes)->Changed());
}

std::atomic<int> g_bus_seen{0};
sigjmp_buf g_bus_jump;

void CountBus(int, siginfo_t*, void*) { g_bus_seen.fetch_add(1); }
void JumpOnBus(int, siginfo_t*, void*) {
  g_bus_seen.fetch_add(1);
  siglongjmp(g_bus_jump, 1);
}

TEST(MappedFiles, OtherBusErrorsReachTheHandlerThatWasThere) {
  TempDir dir;
  WriteMapped(dir / "a.txt", 10000);
  WriteMapped(dir / "b.txt", 10000);
  MappedReads reads(true);
  BusHandler before(JumpOnBus);
  auto a = FileBytes::Open(dir / "a.txt", "X");
  ASSERT_TRUE(a.ok() && (*a)->mapped());
  // A SIGBUS sent (no fault, no address) goes to the handler found.
  g_bus_seen = 0;
  if (sigsetjmp(g_bus_jump, 1) == 0) ::raise(SIGBUS);
  EXPECT_EQ(g_bus_seen.load(), 1);
  // A real bus error in a mapping that is no FileBytes' goes there too.
  const int fd = ::open((dir / "b.txt").c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  void* other = ::mmap(nullptr, 65536, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  ASSERT_NE(other, MAP_FAILED);
  ASSERT_EQ(::truncate((dir / "b.txt").c_str(), 0), 0);
  g_bus_seen = 0;
  volatile char got = 1;
  if (sigsetjmp(g_bus_jump, 1) == 0) got = static_cast<volatile const char*>(other)[40000];
  EXPECT_EQ(g_bus_seen.load(), 1);
  EXPECT_EQ(got, 1);  // the read never completed
  ::munmap(other, 65536);
}

TEST(MappedFiles, AHandlerInstalledLaterIsChainedBehindOursAtTheNextMapping) {
  TempDir dir;
  const std::string text = WriteMapped(dir / "a.txt", 10000);
  WriteMapped(dir / "b.txt", 10000);
  MappedReads reads(true);
  auto a = FileBytes::Open(dir / "a.txt", "X");
  ASSERT_TRUE(a.ok() && (*a)->mapped());
  // Someone takes SIGBUS over after the first mapping (Python's faulthandler does, for one).
  BusHandler later(CountBus);
  auto b = FileBytes::Open(dir / "b.txt", "X");
  ASSERT_TRUE(b.ok() && (*b)->mapped());
  ASSERT_EQ(::truncate((dir / "b.txt").c_str(), 100), 0);
  EXPECT_EQ((*b)->view()[text.size() - 1], '\0');  // ours again: zeros, no signal for the other handler
  EXPECT_TRUE((*b)->Changed());
  g_bus_seen = 0;
  ::raise(SIGBUS);
  EXPECT_EQ(g_bus_seen.load(), 1);  // and behind ours, the later one
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

}  // namespace
}  // namespace kplab
