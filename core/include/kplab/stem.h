// Porter stemmer agreeing exactly with nltk 3.8's PorterStemmer(mode).stem(word) (to_lowercase=True)
// in each of its three modes. Verified on every word of Debian's wamerican-huge and every distinct
// token of the shared benchmark data (tests/core/stem_test.cc, golden files in tests/data/porter/).
//
// Threads: a PorterStemmer is stateless and safe from several threads at once; a StemCache memoizes,
// so one per thread.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace kplab {

enum class PorterMode {
  kNltk,      // nltk's NLTK_EXTENSIONS (its default)
  kOriginal,  // ORIGINAL_ALGORITHM
  kMartin,    // MARTIN_EXTENSIONS
};

// "nltk", "original", "martin".
std::optional<PorterMode> ParsePorterMode(std::string_view name);
const char* PorterModeName(PorterMode mode);

// Stateless stemmer. Thread-safe.
class PorterStemmer {
 public:
  explicit PorterStemmer(PorterMode mode = PorterMode::kNltk) : mode_(mode) {}
  PorterMode mode() const { return mode_; }
  // word: valid UTF-8. Works on code points, as nltk does on Python str.
  std::string Stem(std::string_view word) const;

 private:
  PorterMode mode_;
};

// Memoizing stemmer: each distinct word is stemmed once. Not thread-safe; use one per thread.
// Returned references stay valid for the lifetime of the cache.
class StemCache {
 public:
  explicit StemCache(PorterMode mode = PorterMode::kNltk);
  ~StemCache();
  StemCache(StemCache&&) noexcept;
  StemCache& operator=(StemCache&&) noexcept;
  PorterMode mode() const;
  const std::string& Stem(std::string_view word);
  std::size_t size() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kplab
