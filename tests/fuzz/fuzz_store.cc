// libFuzzer harness for reading run stores back (docs/store.md, "Reading a store back"): each input is a
// program of up to 8 changes to real stores made by the engine (store_mutator.h: rows, blobs, integers at
// their limits, deleted and duplicated rows, NULLs and wrong types), after which everything that
// `runs list|show|export|compare|table|docs|merge` reads is read and checked. A read must return what
// the stores hold or refuse by name; a crash, sanitizer report, hang, a run that breaks what readers rely
// on, or a merge that accepts changed shards and gives other numbers is a finding (docs/testing.md).
//
// KPLAB_FUZZ_PRINT=1 prints each input's changes as SQL, which reproduces a finding with the sqlite3
// shell on copies of the stores (their directory is printed too).
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "store_mutator.h"

namespace {

const std::string& Work() {
  static const std::string dir = [] {
    const char* base = ::access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    return std::string(base) + "/kplab-fuzz-store-" + std::to_string(::getpid());
  }();
  return dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace kplab::storefuzz;
  static const bool print = std::getenv("KPLAB_FUZZ_PRINT") != nullptr;
  const std::vector<Change> changes = Decode(data, size);
  if (print) {
    std::fprintf(stderr, "stores: %s\n", PristineDir().c_str());
    for (const Change& c : changes) std::fprintf(stderr, "  %s\n", c.Describe().c_str());
  }
  if (!Apply(Work(), changes)) return 0;
  Exercise(Work(), changes, [&](const std::string& what) {
    std::fprintf(stderr, "fuzz_store: broken promise: %s\n", what.c_str());
    for (const Change& c : changes) std::fprintf(stderr, "  after %s\n", c.Describe().c_str());
    std::abort();
  });
  return 0;
}
