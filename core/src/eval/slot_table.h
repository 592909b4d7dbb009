// Open-addressing hash slots for the corpus's interning tables (Lexicon, the builder's piece memo): one
// 64-bit word a slot, the upper half of the key's hash beside a 1-based index into the caller's own
// records (0 = free), so a probe reads 8 bytes and the key itself only on a matching hash half. The
// position comes from that half too, so growing moves slots without reading a key again. Tables
// of millions of slots (a million documents) are mapped with transparent huge pages where the kernel
// allows them, as random probes otherwise spend most of their time in TLB misses.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <new>
#include <utility>

namespace kplab::eval_internal {

// The interning tables' hash of a string's bytes (the Lexicon's strings, the builders' raw pieces):
// a 64-bit multiply-mix over 8-byte words, good enough to make 64-bit equality a near-certain match.
[[gnu::always_inline]] inline std::uint64_t HashBytes(std::string_view s) {  // short strings: no call
  std::uint64_t h = 0x9E3779B97F4A7C15ull ^ (s.size() * 0xC2B2AE3D27D4EB4Full);
  const char* p = s.data();
  std::size_t n = s.size();
  while (n >= 8) {
    std::uint64_t w;
    std::memcpy(&w, p, 8);
    h = (h ^ w) * 0xBF58476D1CE4E5B9ull;
    h ^= h >> 31;
    p += 8;
    n -= 8;
  }
  // The last 1-7 bytes without a variable-length copy (which compiles to a branch per length): the
  // last 8 bytes of the string when it has that many (overlapping the words above), else two
  // overlapping 4-byte loads or three single bytes, which cover every byte, so strings of one length
  // that differ still differ here.
  std::uint64_t w = 0;
  if (n > 0) {
    if (s.size() >= 8) {
      std::memcpy(&w, p + n - 8, 8);
    } else if (n >= 4) {
      std::uint32_t a, b;
      std::memcpy(&a, p, 4);
      std::memcpy(&b, p + n - 4, 4);
      w = a | (static_cast<std::uint64_t>(b) << 32);
    } else {
      w = static_cast<unsigned char>(p[0]) | (static_cast<std::uint64_t>(static_cast<unsigned char>(p[n / 2])) << 8) |
          (static_cast<std::uint64_t>(static_cast<unsigned char>(p[n - 1])) << 16);
    }
  }
  h = (h ^ w) * 0x94D049BB133111EBull;
  h ^= h >> 29;
  h *= 0xBF58476D1CE4E5B9ull;
  h ^= h >> 32;
  return h;
}

class SlotTable {
 public:
  explicit SlotTable(std::size_t slots = 1024) { Allocate(slots); }
  ~SlotTable() { Free(); }
  SlotTable(SlotTable&& o) noexcept
      : slots_(std::exchange(o.slots_, nullptr)), size_(std::exchange(o.size_, 0)),
        used_(std::exchange(o.used_, 0)), mapped_(o.mapped_) {}
  SlotTable& operator=(SlotTable&& o) noexcept {
    if (this != &o) {
      Free();
      slots_ = std::exchange(o.slots_, nullptr);
      size_ = std::exchange(o.size_, 0);
      used_ = std::exchange(o.used_, 0);
      mapped_ = o.mapped_;
    }
    return *this;
  }
  SlotTable(const SlotTable&) = delete;
  SlotTable& operator=(const SlotTable&) = delete;

  static std::uint64_t Slot(std::uint64_t hash, std::uint32_t index) {
    return (hash & 0xFFFFFFFF00000000ull) | (static_cast<std::uint64_t>(index) + 1);
  }
  static bool HashMatches(std::uint64_t slot, std::uint64_t hash) {
    return (slot & 0xFFFFFFFF00000000ull) == (hash & 0xFFFFFFFF00000000ull);
  }
  static std::uint32_t Index(std::uint64_t slot) { return static_cast<std::uint32_t>(slot) - 1; }

  // Calls match(index) for every slot on the probe path of hash whose hash half matches, until one
  // returns true (then its position) or a free slot ends the path (then that free position).
  template <typename Match>
  std::size_t Probe(std::uint64_t hash, const Match& match, bool* found) const {
    const std::size_t mask = size_ - 1;
    for (std::size_t i = Home(hash) & mask;; i = (i + 1) & mask) {
      const std::uint64_t s = slots_[i];
      if (s == 0) {
        *found = false;
        return i;
      }
      if (HashMatches(s, hash) && match(Index(s))) {
        *found = true;
        return i;
      }
    }
  }
  std::uint64_t At(std::size_t pos) const { return slots_[pos]; }
  // The slot where hash's probe path starts (0: free).
  std::uint64_t AtHome(std::uint64_t hash) const { return slots_[Home(hash) & (size_ - 1)]; }
  // Starts loading the first slot of hash's probe path (a list of keys is hashed, then probed).
  void Prefetch(std::uint64_t hash) const { __builtin_prefetch(&slots_[Home(hash) & (size_ - 1)]); }
  // Fills the free position pos (from Probe); the table doubles when over 70% full. (Half full was
  // the limit before: 4.3 million keys then took 16 million slots, 128 MB, for a million documents. A
  // probe compares 32 bits of hash before any key, and eight slots share a cache line, so the longer
  // runs of linear probing at 70% cost little.)
  void Fill(std::size_t pos, std::uint64_t hash, std::uint32_t index) {
    slots_[pos] = Slot(hash, index);
    if (++used_ * 10 > size_ * 7) Grow();
  }
  std::size_t size() const { return size_; }
  // The slots for about `entries` entries at most 70% full (a power of two, at least 1024).
  static std::size_t SlotsFor(std::size_t entries) {
    std::size_t slots = 1024;
    while (slots * 7 < entries * 10) slots *= 2;
    return slots;
  }
  // An empty table made ready for about `entries` entries without growing on the way (a hint: it grows
  // past them as before). A table that holds entries, or is that large already, stays as it is.
  void Reserve(std::size_t entries) {
    const std::size_t slots = SlotsFor(entries);
    if (used_ != 0 || slots <= size_) return;
    Free();
    Allocate(slots);
  }
  // Frees every slot and keeps the table's size and memory (a thread's next range, design note 71):
  // zeroing memory already faulted in costs less than fresh pages, and the table does not grow again.
  void Clear() {
    if (slots_ != nullptr) std::memset(slots_, 0, size_ * sizeof(std::uint64_t));
    used_ = 0;
  }

 private:
  static constexpr std::size_t kMapBytes = std::size_t{2} << 20;  // from one huge page up: mmap

  static std::size_t Home(std::uint64_t hash_or_slot) { return static_cast<std::size_t>(hash_or_slot >> 32); }

  void Grow() {
    const std::uint64_t* old = slots_;
    const std::size_t old_size = size_, used = used_;
    const bool old_mapped = mapped_;
    try {
      Allocate(old_size * 2);
    } catch (...) {  // the old table stays, whole (Fill's slot is already written)
      slots_ = const_cast<std::uint64_t*>(old);
      size_ = old_size;
      used_ = used;
      mapped_ = old_mapped;
      throw;
    }
    const std::size_t mask = size_ - 1;
    for (std::size_t k = 0; k < old_size; ++k) {
      if (old[k] == 0) continue;
      std::size_t i = Home(old[k]) & mask;
      while (slots_[i] != 0) i = (i + 1) & mask;
      slots_[i] = old[k];
    }
    used_ = used;
    if (old_mapped) {
      munmap(const_cast<std::uint64_t*>(old), old_size * sizeof(std::uint64_t));
    } else {
      std::free(const_cast<std::uint64_t*>(old));
    }
  }

  void Allocate(std::size_t slots) {
    size_ = slots;
    used_ = 0;
    const std::size_t bytes = slots * sizeof(std::uint64_t);
    mapped_ = bytes >= kMapBytes;
    if (mapped_) {
      // file-gate: anonymous memory, no file
      void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED) throw std::bad_alloc();
      madvise(p, bytes, MADV_HUGEPAGE);  // advice only: without THP the table works the same
      slots_ = static_cast<std::uint64_t*>(p);  // anonymous pages read as zero: all free
    } else {
      slots_ = static_cast<std::uint64_t*>(std::calloc(slots, sizeof(std::uint64_t)));
      if (slots_ == nullptr) throw std::bad_alloc();
    }
  }
  void Free() {
    if (slots_ == nullptr) return;
    if (mapped_) {
      munmap(slots_, size_ * sizeof(std::uint64_t));
    } else {
      std::free(slots_);
    }
    slots_ = nullptr;
  }

  std::uint64_t* slots_ = nullptr;
  std::size_t size_ = 0, used_ = 0;
  bool mapped_ = false;
};

}  // namespace kplab::eval_internal
