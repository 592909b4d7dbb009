#include "kplab/lexicon.h"

#include <cstring>

namespace kplab {

namespace {

// FNV-1a is too slow per byte for long strings; this is a simple 64-bit multiply-mix over 8-byte words.
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

// Open addressing with linear probing; slots hold (hash, id).
struct Lexicon::Table {
  struct Slot {
    std::uint64_t hash = 0;
    TokenId id = kNoToken;
  };
  std::vector<Slot> slots = std::vector<Slot>(1024);
  std::size_t used = 0;
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
    if (slot.hash == h && strings_[slot.id] == s) return slot.id;
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
    if (slot.hash == h && strings_[slot.id] == s) return slot.id;
  }
  const TokenId id = static_cast<TokenId>(strings_.size());
  storage_.emplace_back(s);
  strings_.push_back(storage_.back());
  slots[i] = {h, id};
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
