// Real stores changed behind kplab's back, and every reading command run on them (docs/testing.md,
// "The store fuzzer"; tests/fuzz/store_mutator.h): every column of every table set to each value of a
// fixed list (NULL, zero, -1, one past the counts, the integer limits, a count whose byte length wraps,
// a non-integer, infinity, texts, a blob) in the first and the last row, each of those rows deleted and
// copied under another key, every blob cut, grown, zeroed and with a value replaced, and both shards
// changed alike; then the inputs the fuzzer found (tests/fuzz/regressions/store/). Each must be read
// back whole or refused by name: never a crash, a run that breaks what readers rely on, or a merge that
// accepts changed shards and gives other numbers.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include "../fuzz/store_mutator.h"

namespace kplab::storefuzz {
namespace {

namespace fs = std::filesystem;

std::string Work(const char* what) {
  const std::string base = fs::is_directory("/dev/shm") ? "/dev/shm" : "/tmp";
  return base + "/kplab_store_mutation_" + std::to_string(::getpid()) + "_" + what;
}

std::string Describe(const std::vector<Change>& changes) {
  std::string out;
  for (const Change& c : changes) out += "\n  " + c.Describe();
  return out;
}

// The systematic changes of the stores in `stores` (indices into kStores), with counts printed.
void Systematically(const std::set<int>& stores, const char* what) {
  const std::string work = Work(what);
  int applied = 0, refused = 0, accepted = 0;
  for (const std::vector<Change>& changes : Systematic()) {
    if (!stores.count(changes.front().store)) continue;
    if (!Apply(work, changes)) continue;
    ++applied;
    const Outcome o = Exercise(work, changes, [&](const std::string& what) { ADD_FAILURE() << what << Describe(changes); });
    refused += o.refused;
    accepted += o.accepted;
  }
  fs::remove_all(work);
  std::printf("%s: %d changes applied; %d reads and commands refused, %d accepted\n", what, applied, refused, accepted);
  EXPECT_GT(applied, 500);
  EXPECT_GT(refused, 500);
}

TEST(StoreMutation, WholeRunsChangedAreReadBackOrRefused) { Systematically({0}, "whole"); }
TEST(StoreMutation, ShardsChangedAreReadBackOrRefusedAndNeverMergedIntoOtherNumbers) { Systematically({1, 2}, "shards"); }
TEST(StoreMutation, CiRunsChangedAreReadBackOrRefused) { Systematically({3}, "ci"); }

// Every column of the run store is one the mutator changes (store_mutator.cc, Tables()): a field added to
// the schema must be added there too, or this fails naming it.
TEST(StoreMutation, EveryColumnOfTheStoreIsOneTheMutatorChanges) {
  EXPECT_EQ(ColumnsNotMutated(), std::vector<std::string>{});
}

TEST(StoreMutation, KeptFuzzFindingsStayFixed) {
  const std::string work = Work("regressions");
  const fs::path dir = fs::path(KPLAB_SOURCE_DIR) / "tests/fuzz/regressions/store";
  int replayed = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    std::ifstream in(entry.path(), std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::vector<Change> changes = Decode(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
    ++replayed;
    std::printf("%s:%s\n", entry.path().filename().c_str(), Describe(changes).c_str());
    if (!Apply(work, changes)) continue;
    Exercise(work, changes, [&](const std::string& what) {
      ADD_FAILURE() << entry.path().filename().string() << ": " << what << Describe(changes);
    });
  }
  fs::remove_all(work);
  EXPECT_GT(replayed, 0);
}

}  // namespace
}  // namespace kplab::storefuzz
