// The corpus builder's distinct raw keyphrase pieces (eval/corpus.cc), in order of first use, each a
// record of what a document needs of a piece it meets again: the piece's length and bytes, its phrase
// (the builder's local id), that phrase's dedup key and filter flags. A piece met again is then one
// record read after its memo slot: before, the slot led to a piece record, the record to the piece's
// bytes (wherever its first occurrence left them) and the phrase to its key and flags, three dependent
// cache misses for each of the ~70% of a corpus's pieces that were met before (design notes, "The
// piece memo's hit reads one record").
//
// Records are 16 bytes of head and the bytes inline, rounded up to 8, for pieces of up to kInline
// bytes (nearly all keyphrases); a longer piece's record holds the address of its bytes instead, which
// the caller keeps alive as long as the store is read. Records live in chunks of 256 KiB and are named
// by a 32-bit index (their position in 8-byte units), stable as the store grows. Not thread-safe: one
// builder (one thread) owns a store; readers of a finished store may share it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "token_table.h"

namespace kplab::eval_internal {

// Asks the CPU to start loading the cache line at p: a hint, which reads nothing in C++'s terms. An asm
// statement, because GCC deletes a __builtin_prefetch whose address is computed under a condition that
// feeds nothing else (design notes, "At a million documents the corpus build waits on memory"); on
// other architectures than x86 and AArch64 it does nothing.
inline void RequestLine(const void* p) {
#if defined(__x86_64__) || defined(__i386__)
  asm volatile("prefetcht0 %0" : : "m"(*static_cast<const char*>(p)));
#elif defined(__aarch64__)
  asm volatile("prfm pldl1keep, [%0]" : : "r"(p));
#else
  (void)p;
#endif
}

class PieceStore {
 public:
  static constexpr std::uint32_t kDropped = 0x7FFFFFFFu;  // the profile dropped the piece: no phrase
  static constexpr std::size_t kInline = 48;              // longer pieces: their address, not their bytes

  struct Head {
    std::uint32_t size = 0;  // the piece's length in bytes
    std::uint32_t phrase : 31 = kDropped;
    std::uint32_t stem : 1 = 0;  // met as a stemmed piece (the builder's memo[1])
    std::uint32_t dedup = 0;     // the phrase's dedup key (the builder's DedupKey), when it has one
    std::uint8_t flags = 0;      // the builder's filter flags of the phrase
    std::uint8_t external = 0;   // the bytes are elsewhere: their address follows the head
    std::uint16_t gold = 0;      // the builder's count of the phrase's word tokens (its GoldStems)
  };
  static_assert(sizeof(Head) == 16);

  // Appends a record for piece (its bytes copied when they fit inline; else only their address, which
  // must outlive the store) and returns its index.
  std::uint32_t Add(std::string_view piece, Head head) {
    // A length is 32 bits (a record's and the memo's): a piece of 4 GiB is refused, not cut.
    if (piece.size() > 0xFFFFFFFFu) throw std::length_error("a keyphrase piece of 4 GiB or more");
    const bool external = piece.size() > kInline;
    const std::size_t units = 2 + (external ? 1 : (piece.size() + 7) / 8);
    if (left_ < units) NewChunk();
    const std::uint32_t index = next_;
    std::byte* rec = pos_;
    head.size = static_cast<std::uint32_t>(piece.size());
    head.external = external ? 1 : 0;
    std::memcpy(rec, &head, sizeof head);
    if (external) {
      const char* p = piece.data();
      std::memcpy(rec + sizeof head, &p, sizeof p);
    } else if (!piece.empty()) {
      std::memset(rec + 8 * (units - 1), 0, 8);  // the last word's padding: defined bytes
      std::memcpy(rec + sizeof head, piece.data(), piece.size());
    }
    pos_ += 8 * units;
    left_ -= units;
    next_ += static_cast<std::uint32_t>(units);
    return index;
  }

  Head HeadOf(std::uint32_t index) const {
    Head h;
    std::memcpy(&h, Record(index), sizeof h);
    return h;
  }

  // Sets what the record's head says of its phrase beyond its id (a piece whose phrase's key was
  // interned after the record was made: the builder's deferred keys).
  void Complete(std::uint32_t index, std::uint32_t dedup, std::uint8_t flags, std::uint16_t gold) {
    std::byte* rec = chunks_[index >> kChunkShift].get() + 8 * (index & (kChunkUnits - 1));
    Head head;
    std::memcpy(&head, rec, sizeof head);
    head.dedup = dedup;
    head.flags = flags;
    head.gold = gold;
    std::memcpy(rec, &head, sizeof head);
  }

  std::string_view View(std::uint32_t index) const {
    const std::byte* rec = Record(index);
    Head h;
    std::memcpy(&h, rec, sizeof h);
    return {Bytes(rec, h), h.size};
  }

  // Forgets every record and keeps the chunks for the next ones (a thread's next range, design note 71).
  void Clear() {
    in_use_ = 0;
    pos_ = nullptr;
    left_ = 0;
    next_ = 0;
  }

  // Where the record is (a prefetch hint's address).
  const std::byte* RecordAddress(std::uint32_t index) const { return Record(index); }

  // Is the record's piece s? Its length first, then its bytes (inline: in the record's own cache lines).
  bool Same(std::uint32_t index, std::string_view s) const {
    const std::byte* rec = Record(index);
    Head h;
    std::memcpy(&h, rec, sizeof h);
    return h.size == s.size() && SameBytes(Bytes(rec, h), s.data(), s.size());
  }

 private:
  static constexpr unsigned kChunkShift = 15;  // 2^15 8-byte units: 256 KiB a chunk
  static constexpr std::size_t kChunkUnits = std::size_t{1} << kChunkShift;

  const std::byte* Record(std::uint32_t index) const {
    return chunks_[index >> kChunkShift].get() + 8 * (index & (kChunkUnits - 1));
  }
  static const char* Bytes(const std::byte* rec, const Head& h) {
    if (!h.external) return reinterpret_cast<const char*>(rec + sizeof(Head));
    const char* p;
    std::memcpy(&p, rec + sizeof(Head), sizeof p);
    return p;
  }

  void NewChunk() {
    // An index is 32 bits and a memo slot keeps index + 1: 2^17 chunks (32 GiB of records) at most.
    if (in_use_ + 1 >= (std::size_t{1} << (32 - kChunkShift))) {
      throw std::length_error("the corpus builder's piece store is full (32 GiB of distinct keyphrase pieces)");
    }
    if (in_use_ == chunks_.size()) chunks_.push_back(std::make_unique_for_overwrite<std::byte[]>(8 * kChunkUnits));
    pos_ = chunks_[in_use_++].get();
    left_ = kChunkUnits;
    next_ = static_cast<std::uint32_t>((in_use_ - 1) << kChunkShift);
  }

  std::vector<std::unique_ptr<std::byte[]>> chunks_;
  std::size_t in_use_ = 0;  // chunks_[0, in_use_) hold records; the rest were kept by Clear
  std::byte* pos_ = nullptr;
  std::size_t left_ = 0;
  std::uint32_t next_ = 0;
};

}  // namespace kplab::eval_internal
