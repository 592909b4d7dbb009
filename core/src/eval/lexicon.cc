#include "kplab/lexicon.h"

#include <cstring>

namespace kplab {

namespace {

// A 64-bit multiply-mix over 8-byte words; good enough to make 64-bit equality a near-certain match.
inline std::uint64_t HashBytes(std::string_view s) {
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
  std::uint64_t w = 0;
  std::memcpy(&w, p, n);
  h = (h ^ w) * 0x94D049BB133111EBull;
  h ^= h >> 29;
  h *= 0xBF58476D1CE4E5B9ull;
  h ^= h >> 32;
  return h;
}

}  // namespace

// Open addressing with linear probing. A slot carries the hash, the string's address and length, so a
// probe touches the slot and, on a hash match, the bytes — not a side table of views.
struct Lexicon::Table {
  struct Slot {
    std::uint64_t hash = 0;
    const char* data = nullptr;
    std::uint32_t size = 0;
    TokenId id = kNoToken;
  };
  std::vector<Slot> slots = std::vector<Slot>(1024);
  std::size_t used = 0;

  static bool Same(const Slot& slot, std::uint64_t h, std::string_view s) {
    return slot.hash == h && slot.size == s.size() && std::memcmp(slot.data, s.data(), s.size()) == 0;
  }
};

Lexicon::Lexicon() : table_(std::make_unique<Table>()) {}
Lexicon::~Lexicon() = default;
Lexicon::Lexicon(Lexicon&&) noexcept = default;
Lexicon& Lexicon::operator=(Lexicon&&) noexcept = default;

std::optional<TokenId> Lexicon::Find(std::string_view s) const {
  const std::uint64_t h = HashBytes(s);
  const std::size_t mask = table_->slots.size() - 1;
  for (std::size_t i = h & mask;; i = (i + 1) & mask) {
    const auto& slot = table_->slots[i];
    if (slot.id == kNoToken) return std::nullopt;
    if (Table::Same(slot, h, s)) return slot.id;
  }
}

TokenId Lexicon::Intern(std::string_view s) {
  const std::uint64_t h = HashBytes(s);
  auto& slots = table_->slots;
  std::size_t mask = slots.size() - 1;
  std::size_t i = h & mask;
  for (;; i = (i + 1) & mask) {
    const auto& slot = slots[i];
    if (slot.id == kNoToken) break;
    if (Table::Same(slot, h, s)) return slot.id;
  }
  const TokenId id = static_cast<TokenId>(strings_.size());
  // Strings live in large chunks (stable addresses, one allocation per 64 KiB).
  if (chunk_left_ < s.size() + 1) {
    const std::size_t size = std::max<std::size_t>(64 * 1024, s.size() + 1);
    chunks_.push_back(std::make_unique<char[]>(size));
    chunk_pos_ = chunks_.back().get();
    chunk_left_ = size;
  }
  char* dst = chunk_pos_;
  std::memcpy(dst, s.data(), s.size());
  dst[s.size()] = '\0';
  chunk_pos_ += s.size() + 1;
  chunk_left_ -= s.size() + 1;
  strings_.emplace_back(dst, s.size());
  slots[i] = {h, dst, static_cast<std::uint32_t>(s.size()), id};
  if (++table_->used * 2 > slots.size()) {
    std::vector<Table::Slot> bigger(slots.size() * 2);
    mask = bigger.size() - 1;
    for (const auto& old : slots) {
      if (old.id == kNoToken) continue;
      std::size_t j = old.hash & mask;
      while (bigger[j].id != kNoToken) j = (j + 1) & mask;
      bigger[j] = old;
    }
    slots.swap(bigger);
  }
  return id;
}

}  // namespace kplab
