// The threads of the passes over a dataset's documents in contiguous ranges (the corpus builder,
// eval/corpus.cc; the distinct surfaces, eval/surface.cc): how many ranges, and one function over
// indices [0, n), each on a thread of its own, the calling thread taking one. Stateless; fn must be
// safe to call from n threads at once.
#pragma once

#include <algorithm>
#include <cstddef>
#include <exception>
#include <system_error>
#include <thread>
#include <vector>

namespace kplab::eval_internal {

// How many ranges (one thread each) for docs documents when `threads` were asked for (0 or less: as
// many as the machine's cores, at most 8). Each range has its own tables and a share of the merge:
// below a few thousand documents a second one costs more than it saves, so an automatic count gives
// each range at least kDocsPerThread documents. Never more ranges than documents, never fewer than 1.
inline std::size_t RangeThreads(std::size_t docs, int threads) {
  constexpr std::size_t kDocsPerThread = 4000;
  std::size_t n = threads > 0 ? static_cast<std::size_t>(threads)
                              : std::clamp<std::size_t>(std::thread::hardware_concurrency(), 1, 8);
  if (threads <= 0) n = std::min(n, std::max<std::size_t>(1, docs / kDocsPerThread));
  return std::clamp<std::size_t>(n, 1, std::max<std::size_t>(docs, 1));
}

// With ids per range (PhraseIds::kPerRange, kplab/corpus.h) and in a streamed build (StreamCorpus),
// each thread's block of documents is built as ranges of at most this many documents, one after another,
// each with tables of its own: at a million documents on two threads, sixteen ranges of 62,500 rather
// than two of 500,000, whose smaller tables miss the cache less (design note 70); a streamed range is
// scored and freed before the next is built, so its size is also the build's memory (design note 72).
// Changed only by tests (ScopedDocsPerRange).
inline std::size_t& DocsPerRange() {
  static std::size_t docs = 65536;
  return docs;
}
// Sets DocsPerRange for the scope's lifetime (tests: many small ranges from a small dataset).
class ScopedDocsPerRange {
 public:
  explicit ScopedDocsPerRange(std::size_t docs) : old_(DocsPerRange()) { DocsPerRange() = docs; }
  ~ScopedDocsPerRange() { DocsPerRange() = old_; }
  ScopedDocsPerRange(const ScopedDocsPerRange&) = delete;
  ScopedDocsPerRange& operator=(const ScopedDocsPerRange&) = delete;

 private:
  std::size_t old_;
};

// Runs fn(t) for t in [0, n) on n threads, the calling thread taking t = 0 (or, with caller_last,
// t = n - 1). An exception of any of them (std::bad_alloc) is rethrown here, after every thread ended,
// the lowest t's first, as if one thread had done it all in order.
template <typename Fn>
void OnThreads(std::size_t n, const Fn& fn, bool caller_last = false) {
  if (n == 0) return;
  std::vector<std::exception_ptr> errors(n);
  auto run = [&](std::size_t t) {
    try {
      fn(t);
    } catch (...) {
      errors[t] = std::current_exception();
    }
  };
  std::vector<std::thread> threads;
  threads.reserve(n - 1);
  const std::size_t mine = caller_last ? n - 1 : 0;
  std::vector<std::size_t> here = {mine};  // ranges the calling thread runs (all, if no thread starts)
  here.reserve(n);
  for (std::size_t t = 0; t < n; ++t) {
    if (t == mine) continue;
    try {
      threads.emplace_back(run, t);
    } catch (...) {  // std::system_error, or std::bad_alloc for the thread's state: run it here
      here.push_back(t);
    }
  }
  for (std::size_t t : here) run(t);
  for (auto& th : threads) th.join();
  for (const auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

}  // namespace kplab::eval_internal
