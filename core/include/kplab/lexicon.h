// String interning: every distinct token, stem and stem key of a corpus gets a dense 32-bit id, so
// matching compares integers and stemming is memoized per id.
// Not thread-safe for Intern(); Str()/Find() are safe to call concurrently when no Intern() runs.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kplab {

using TokenId = std::uint32_t;
inline constexpr TokenId kNoToken = 0xFFFFFFFFu;

class Lexicon {
 public:
  Lexicon();
  ~Lexicon();
  Lexicon(Lexicon&&) noexcept;
  Lexicon& operator=(Lexicon&&) noexcept;

  TokenId Intern(std::string_view s);
  std::optional<TokenId> Find(std::string_view s) const;
  std::string_view Str(TokenId id) const { return strings_[id]; }
  std::size_t size() const { return strings_.size(); }

 private:
  struct Table;
  std::unique_ptr<Table> table_;
  std::vector<std::unique_ptr<char[]>> chunks_;  // string bytes, stable addresses
  char* chunk_pos_ = nullptr;
  std::size_t chunk_left_ = 0;
  std::vector<std::string_view> strings_;
};

}  // namespace kplab
