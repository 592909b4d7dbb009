#include "kplab/stem.h"

#include <cstdint>
#include <cstring>
#include <deque>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include "kplab/text.h"
#include "kplab/utf8.h"

namespace kplab {

namespace {

// The Porter steps of nltk 3.8 (nltk/stem/porter.py), on a lower-cased word held as a string of
// code points (C = char for ASCII words, char32_t otherwise). Only the ASCII letters a, e, i, o, u
// are vowels and 'y' is a vowel after a consonant, as in nltk; every other code point (digits,
// punctuation, non-ASCII letters) counts as a consonant.
template <typename C>
class Steps {
 public:
  using Str = std::basic_string<C>;

  explicit Steps(PorterMode mode) : mode_(mode) {}

  void Run(Str& w) const {
    Step1a(w);
    Step1b(w);
    Step1c(w);
    Step2(w);
    Step3(w);
    Step4(w);
    Step5a(w);
    Step5b(w);
  }

 private:
  enum class Cond : std::uint8_t {
    kMeasureGt0,  // m(stem) > 0
    kMeasureGt1,  // m(stem) > 1
    kIon,         // m(stem) > 1 and stem ends in 's' or 't'
    kLogi,        // nltk: m(stem + "l") > 0
  };
  struct Rule {
    std::string_view suffix;
    std::string_view replacement;
    Cond cond;
  };

  bool Nltk() const { return mode_ == PorterMode::kNltk; }

  static bool IsVowelLetter(C c) {
    return c == 'a' || c == 'e' || c == 'i' || c == 'o' || c == 'u';
  }

  // nltk's recursive _is_consonant, unrolled: a run of 'y' alternates, starting from the letter
  // before it (a 'y' at position 0 is a consonant).
  static bool IsCons(const C* p, std::size_t i) {
    std::size_t j = i;
    while (j > 0 && p[j] == 'y') --j;
    const bool base = p[j] == 'y' ? true : !IsVowelLetter(p[j]);
    return ((i - j) % 2 == 0) ? base : !base;
  }

  // Number of "vc" pairs in the consonant/vowel pattern of p[0, n).
  static int Measure(const C* p, std::size_t n) {
    int m = 0;
    bool prev_cons = true;
    for (std::size_t i = 0; i < n; ++i) {
      const C c = p[i];
      const bool cons = IsVowelLetter(c) ? false : (c == 'y' ? (i == 0 || !prev_cons) : true);
      if (cons && i > 0 && !prev_cons) ++m;
      prev_cons = cons;
    }
    return m;
  }

  static bool ContainsVowel(const C* p, std::size_t n) {
    bool prev_cons = true;
    for (std::size_t i = 0; i < n; ++i) {
      const C c = p[i];
      const bool cons = IsVowelLetter(c) ? false : (c == 'y' ? (i == 0 || !prev_cons) : true);
      if (!cons) return true;
      prev_cons = cons;
    }
    return false;
  }

  static bool EndsDoubleConsonant(const C* p, std::size_t n) {
    return n >= 2 && p[n - 1] == p[n - 2] && IsCons(p, n - 1);
  }

  bool EndsCvc(const C* p, std::size_t n) const {
    if (n >= 3 && IsCons(p, n - 3) && !IsCons(p, n - 2) && IsCons(p, n - 1) && p[n - 1] != 'w' &&
        p[n - 1] != 'x' && p[n - 1] != 'y') {
      return true;
    }
    return Nltk() && n == 2 && !IsCons(p, 0) && IsCons(p, 1);
  }

  static bool EndsWith(const Str& w, std::string_view suffix) {
    if (w.size() < suffix.size()) return false;
    const C* p = w.data() + (w.size() - suffix.size());
    for (std::size_t k = 0; k < suffix.size(); ++k) {
      if (p[k] != static_cast<C>(static_cast<unsigned char>(suffix[k]))) return false;
    }
    return true;
  }

  static void Replace(Str& w, std::size_t stem_len, std::string_view replacement) {
    w.erase(stem_len);
    for (char c : replacement) w.push_back(static_cast<C>(static_cast<unsigned char>(c)));
  }

  bool Holds(const Str& w, std::size_t stem_len, Cond cond) const {
    const C* p = w.data();
    switch (cond) {
      case Cond::kMeasureGt0:
        return Measure(p, stem_len) > 0;
      case Cond::kMeasureGt1:
        return Measure(p, stem_len) > 1;
      case Cond::kIon:
        return Measure(p, stem_len) > 1 && (p[stem_len - 1] == 's' || p[stem_len - 1] == 't');
      case Cond::kLogi:
        return Measure(p, stem_len + 1) > 0;
    }
    return false;
  }

  // The last letters of a rule list's suffixes (all of them a-z), a bit each.
  template <std::size_t N>
  static constexpr std::uint32_t LastLetters(const Rule (&rules)[N]) {
    std::uint32_t mask = 0;
    for (const Rule& r : rules) mask |= std::uint32_t{1} << (r.suffix.back() - 'a');
    return mask;
  }

  // nltk's _apply_rule_list for plain suffix rules: the first rule whose suffix matches decides;
  // if its condition fails the word is left as it is. last_letters: LastLetters(rules).
  template <std::size_t N>
  void ApplyRules(Str& w, const Rule (&rules)[N], std::uint32_t last_letters) const {
    if (w.empty()) return;  // no suffix matches an empty word
    const C last = w.back();
    // A word whose last letter ends no suffix of the list is left at once (most words, at each step).
    if (last < 'a' || last > 'z' || ((last_letters >> (last - 'a')) & 1) == 0) return;
    const std::size_t count = N;
    for (std::size_t r = 0; r < count; ++r) {
      const Rule& rule = rules[r];
      // The last letter first: it rules out nearly every rule in one compare.
      if (last == static_cast<C>(static_cast<unsigned char>(rule.suffix.back())) && EndsWith(w, rule.suffix)) {
        const std::size_t stem_len = w.size() - rule.suffix.size();
        if (Holds(w, stem_len, rule.cond)) Replace(w, stem_len, rule.replacement);
        return;
      }
    }
  }

  void Step1a(Str& w) const {
    if (w.empty() || w.back() != 's') return;  // every rule below ends in 's'
    if (Nltk() && w.size() == 4 && EndsWith(w, "ies")) {
      w.erase(3);  // "ies" -> "ie"
      return;
    }
    if (EndsWith(w, "sses") || EndsWith(w, "ies")) {
      w.erase(w.size() - 2);  // "sses" -> "ss", "ies" -> "i"
    } else if (EndsWith(w, "ss")) {
      // "ss" -> "ss"
    } else if (EndsWith(w, "s")) {
      w.erase(w.size() - 1);
    }
  }

  void Step1b(Str& w) const {
    if (w.empty() || (w.back() != 'd' && w.back() != 'g')) return;  // "ied", "eed", "ed", "ing"
    if (Nltk() && EndsWith(w, "ied")) {
      w.erase(w.size() == 4 ? 3 : w.size() - 2);  // "ied" -> "ie" for 4 letters, else "i"
      return;
    }
    if (EndsWith(w, "eed")) {
      if (Measure(w.data(), w.size() - 3) > 0) w.erase(w.size() - 1);  // "eed" -> "ee"
      return;
    }
    std::size_t stem_len;
    if (EndsWith(w, "ed") && ContainsVowel(w.data(), w.size() - 2)) {
      stem_len = w.size() - 2;
    } else if (EndsWith(w, "ing") && ContainsVowel(w.data(), w.size() - 3)) {
      stem_len = w.size() - 3;
    } else {
      return;
    }
    w.erase(stem_len);
    // The rule list applied to the intermediate stem: at/bl/iz -> +e; *d; then m=1 and *o -> +e.
    if (EndsWith(w, "at") || EndsWith(w, "bl") || EndsWith(w, "iz")) {
      w.push_back('e');
      return;
    }
    const C last = w.back();
    if (EndsDoubleConsonant(w.data(), w.size())) {
      if (last != 'l' && last != 's' && last != 'z') w.pop_back();
      return;
    }
    // nltk's rule list names the double-consonant rule by the suffix "*d"; when the stem does not
    // end in a double consonant it is tried as a literal suffix, so "...*d" becomes "...d".
    if (EndsWith(w, "*d")) {
      w.erase(w.size() - 2);
      w.push_back(last);
      return;
    }
    if (Measure(w.data(), w.size()) == 1 && EndsCvc(w.data(), w.size())) w.push_back('e');
  }

  void Step1c(Str& w) const {
    if (!EndsWith(w, "y")) return;
    const std::size_t n = w.size() - 1;
    const bool ok = Nltk() ? (n > 1 && IsCons(w.data(), n - 1)) : ContainsVowel(w.data(), n);
    if (ok) w.back() = 'i';
  }

  void Step2(Str& w) const {
    if (Nltk()) {
      // nltk applies ALLI -> AL first and then step 2 again.
      while (EndsWith(w, "alli") && Measure(w.data(), w.size() - 4) > 0) {
        w.erase(w.size() - 2);
      }
    }
    static constexpr Cond k0 = Cond::kMeasureGt0;
    // The rules every mode shares, then each mode's own: ORIGINAL_ALGORITHM has "abli" where the
    // others have "bli", and the tail differs (nltk: "fulli", then "logi" under its own condition).
    static constexpr Rule kNltkRules[] = {
        {"ational", "ate", k0}, {"tional", "tion", k0},       {"enci", "ence", k0},   {"anci", "ance", k0},
        {"izer", "ize", k0},    {"bli", "ble", k0},           {"alli", "al", k0},     {"entli", "ent", k0},
        {"eli", "e", k0},       {"ousli", "ous", k0},         {"ization", "ize", k0}, {"ation", "ate", k0},
        {"ator", "ate", k0},    {"alism", "al", k0},          {"iveness", "ive", k0}, {"fulness", "ful", k0},
        {"ousness", "ous", k0}, {"aliti", "al", k0},          {"iviti", "ive", k0},   {"biliti", "ble", k0},
        {"fulli", "ful", k0},   {"logi", "log", Cond::kLogi},
    };
    static constexpr Rule kOriginalRules[] = {
        {"ational", "ate", k0}, {"tional", "tion", k0}, {"enci", "ence", k0},   {"anci", "ance", k0},
        {"izer", "ize", k0},    {"abli", "able", k0},   {"alli", "al", k0},     {"entli", "ent", k0},
        {"eli", "e", k0},       {"ousli", "ous", k0},   {"ization", "ize", k0}, {"ation", "ate", k0},
        {"ator", "ate", k0},    {"alism", "al", k0},    {"iveness", "ive", k0}, {"fulness", "ful", k0},
        {"ousness", "ous", k0}, {"aliti", "al", k0},    {"iviti", "ive", k0},   {"biliti", "ble", k0},
    };
    static constexpr Rule kMartinRules[] = {
        {"ational", "ate", k0}, {"tional", "tion", k0}, {"enci", "ence", k0},   {"anci", "ance", k0},
        {"izer", "ize", k0},    {"bli", "ble", k0},     {"alli", "al", k0},     {"entli", "ent", k0},
        {"eli", "e", k0},       {"ousli", "ous", k0},   {"ization", "ize", k0}, {"ation", "ate", k0},
        {"ator", "ate", k0},    {"alism", "al", k0},    {"iveness", "ive", k0}, {"fulness", "ful", k0},
        {"ousness", "ous", k0}, {"aliti", "al", k0},    {"iviti", "ive", k0},   {"biliti", "ble", k0},
        {"logi", "log", k0},
    };
    static constexpr std::uint32_t kNltkLast = LastLetters(kNltkRules), kOriginalLast = LastLetters(kOriginalRules),
                                   kMartinLast = LastLetters(kMartinRules);
    switch (mode_) {
      case PorterMode::kNltk:
        return ApplyRules(w, kNltkRules, kNltkLast);
      case PorterMode::kOriginal:
        return ApplyRules(w, kOriginalRules, kOriginalLast);
      case PorterMode::kMartin:
        return ApplyRules(w, kMartinRules, kMartinLast);
    }
  }

  void Step3(Str& w) const {
    static constexpr Cond k0 = Cond::kMeasureGt0;
    static constexpr Rule kRules[] = {
        {"icate", "ic", k0}, {"ative", "", k0}, {"alize", "al", k0}, {"iciti", "ic", k0},
        {"ical", "ic", k0},  {"ful", "", k0},   {"ness", "", k0},
    };
    static constexpr std::uint32_t kLast = LastLetters(kRules);
    ApplyRules(w, kRules, kLast);
  }

  void Step4(Str& w) const {
    static constexpr Cond k1 = Cond::kMeasureGt1;
    static constexpr Rule kRules[] = {
        {"al", "", k1},    {"ance", "", k1}, {"ence", "", k1}, {"er", "", k1},
        {"ic", "", k1},    {"able", "", k1}, {"ible", "", k1}, {"ant", "", k1},
        {"ement", "", k1}, {"ment", "", k1}, {"ent", "", k1},  {"ion", "", Cond::kIon},
        {"ou", "", k1},    {"ism", "", k1},  {"ate", "", k1},  {"iti", "", k1},
        {"ous", "", k1},   {"ive", "", k1},  {"ize", "", k1},
    };
    static constexpr std::uint32_t kLast = LastLetters(kRules);
    ApplyRules(w, kRules, kLast);
  }

  void Step5a(Str& w) const {
    if (!EndsWith(w, "e")) return;
    const std::size_t n = w.size() - 1;
    const int m = Measure(w.data(), n);
    if (m > 1 || (m == 1 && !EndsCvc(w.data(), n))) w.pop_back();
  }

  void Step5b(Str& w) const {
    if (EndsWith(w, "ll") && Measure(w.data(), w.size() - 1) > 1) w.pop_back();
  }

  PorterMode mode_;
};

// nltk's irregular forms (NLTK_EXTENSIONS only), looked up with the word as given.
std::string_view IrregularForm(std::string_view word) {
  struct Form {
    std::string_view word;
    std::string_view stem;
  };
  static constexpr Form kForms[] = {
      {"sky", "sky"},         {"skies", "sky"},        {"dying", "die"},
      {"lying", "lie"},       {"tying", "tie"},        {"news", "news"},
      {"innings", "inning"},  {"inning", "inning"},    {"outings", "outing"},
      {"outing", "outing"},   {"cannings", "canning"}, {"canning", "canning"},
      {"howe", "howe"},       {"proceed", "proceed"},  {"exceed", "exceed"},
      {"succeed", "succeed"},
  };
  if (word.size() < 3 || word.size() > 8) return {};
  for (const Form& f : kForms) {
    if (f.word == word) return f.stem;
  }
  return {};
}

}  // namespace

std::optional<PorterMode> ParsePorterMode(std::string_view name) {
  if (name == "nltk") return PorterMode::kNltk;
  if (name == "original") return PorterMode::kOriginal;
  if (name == "martin") return PorterMode::kMartin;
  return std::nullopt;
}

const char* PorterModeName(PorterMode mode) {
  switch (mode) {
    case PorterMode::kNltk:
      return "nltk";
    case PorterMode::kOriginal:
      return "original";
    case PorterMode::kMartin:
      return "martin";
  }
  return "nltk";
}

std::string PorterStemmer::Stem(std::string_view word) const {
  // nltk: stem = word.lower(); the irregular-forms pool and the length rule look at `word`.
  if (IsAscii(word)) {
    if (mode_ == PorterMode::kNltk) {
      std::string_view irregular = IrregularForm(word);
      if (!irregular.empty()) return std::string(irregular);
    }
    std::string w(word);
    for (char& c : w) {
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + ('a' - 'A'));
    }
    if (mode_ != PorterMode::kOriginal && word.size() <= 2) return w;
    Steps<char>(mode_).Run(w);
    return w;
  }
  // Non-ASCII words are never in the (ASCII) pool; len() counts code points.
  std::string lower = Lower(word);
  if (mode_ != PorterMode::kOriginal) {
    if (Utf8Length(word) <= 2) return lower;
  }
  std::u32string w;
  w.reserve(lower.size());
  for (std::size_t i = 0; i < lower.size();) w.push_back(DecodeUtf8(lower, i));
  Steps<char32_t>(mode_).Run(w);
  std::string out;
  out.reserve(lower.size());
  for (char32_t cp : w) AppendUtf8(out, cp);
  return out;
}

// ---------------------------------------------------------------------------------------------
// StemCache: an open-addressing table of (hash, entry) slots over entries kept in a deque, so that
// references handed out stay valid while the table grows. A hit costs one hash, one probe
// sequence and one key comparison, with no allocation.

namespace {

inline std::uint64_t Mix(std::uint64_t a, std::uint64_t b) {
  const unsigned __int128 r = static_cast<unsigned __int128>(a) * b;
  return static_cast<std::uint64_t>(r) ^ static_cast<std::uint64_t>(r >> 64);
}

inline std::uint64_t Load64(const char* p) {
  std::uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

inline std::uint64_t Load32(const char* p) {
  std::uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// A wyhash-style hash: fast on the short strings words are.
std::uint64_t HashBytes(std::string_view s) {
  constexpr std::uint64_t kP0 = 0xa0761d6478bd642fULL;
  constexpr std::uint64_t kP1 = 0xe7037ed1a0b428dbULL;
  constexpr std::uint64_t kP2 = 0x8ebc6af09c88c6e3ULL;
  const char* p = s.data();
  std::size_t n = s.size();
  std::uint64_t seed = kP0 ^ n;
  std::uint64_t a;
  std::uint64_t b;
  if (n <= 16) {
    if (n >= 8) {
      a = Load64(p);
      b = Load64(p + n - 8);
    } else if (n >= 4) {
      a = Load32(p);
      b = Load32(p + n - 4);
    } else if (n > 0) {
      a = (std::uint64_t{static_cast<unsigned char>(p[0])} << 16) |
          (std::uint64_t{static_cast<unsigned char>(p[n >> 1])} << 8) |
          static_cast<unsigned char>(p[n - 1]);
      b = 0;
    } else {
      a = b = 0;
    }
  } else {
    while (n > 16) {
      seed = Mix(Load64(p) ^ kP1, Load64(p + 8) ^ seed);
      p += 16;
      n -= 16;
    }
    a = Load64(p + n - 16);
    b = Load64(p + n - 8);
  }
  return Mix(kP1 ^ s.size(), Mix(a ^ kP1, b ^ seed) ^ kP2);
}

}  // namespace

struct StemCache::Impl {
  struct Entry {
    std::string word;
    std::string stem;
  };
  struct Slot {
    std::uint64_t hash = 0;
    const Entry* entry = nullptr;
  };

  explicit Impl(PorterMode mode) : stemmer(mode), slots(kInitialSlots) {}

  const std::string& Stem(std::string_view word) {
    const std::uint64_t h = HashBytes(word);
    std::size_t mask = slots.size() - 1;
    std::size_t i = h & mask;
    for (;; i = (i + 1) & mask) {
      const Slot& s = slots[i];
      if (s.entry == nullptr) break;
      if (s.hash == h && s.entry->word == word) return s.entry->stem;
    }
    entries.push_back(Entry{std::string(word), stemmer.Stem(word)});
    const Entry* e = &entries.back();
    if ((entries.size() + 1) * 2 > slots.size()) {
      Grow();
      mask = slots.size() - 1;
      for (i = h & mask; slots[i].entry != nullptr; i = (i + 1) & mask) {
      }
    }
    slots[i] = Slot{h, e};
    return e->stem;
  }

  void Grow() {
    std::vector<Slot> bigger(slots.size() * 2);
    const std::size_t mask = bigger.size() - 1;
    for (const Slot& s : slots) {
      if (s.entry == nullptr) continue;
      std::size_t i = s.hash & mask;
      while (bigger[i].entry != nullptr) i = (i + 1) & mask;
      bigger[i] = s;
    }
    slots.swap(bigger);
  }

  static constexpr std::size_t kInitialSlots = 1024;
  PorterStemmer stemmer;
  std::deque<Entry> entries;
  std::vector<Slot> slots;  // size is a power of two, at most half full
};

StemCache::StemCache(PorterMode mode) : impl_(std::make_unique<Impl>(mode)) {}
StemCache::~StemCache() = default;
StemCache::StemCache(StemCache&&) noexcept = default;
StemCache& StemCache::operator=(StemCache&&) noexcept = default;

PorterMode StemCache::mode() const { return impl_->stemmer.mode(); }

const std::string& StemCache::Stem(std::string_view word) { return impl_->Stem(word); }

std::size_t StemCache::size() const { return impl_->entries.size(); }

}  // namespace kplab
