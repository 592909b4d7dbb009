// tokenizer.json reader and encoder (see hf_tokenizer.h). Text is processed as UTF-32 through the
// added-token split, the normalizer and the pre-tokenizer, and as UTF-8 in the models (their
// vocabularies are UTF-8 strings). Every step mirrors the reference library's semantics, including
// its order of operations and tie-breaking, because a different token id is a different vector.
#include "kplab/hf_tokenizer.h"
#include "kplab/io.h"

#include <fmt/format.h>
#include <simdjson.h>

#include "kplab/utf8.h"
#include "util/json_internal.h"
#include <unicode/normalizer2.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>
#include <unicode/utypes.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <fstream>
#include <functional>
#include <limits>
#include <sstream>
#include <unordered_map>
#include <utility>

namespace kplab {
namespace {

using simdjson::dom::element;
using simdjson::dom::element_type;
using simdjson::dom::object;
using U32 = std::u32string;

struct Failure {
  std::string message;
};

// ---------------------------------------------------------------------------------------------
// UTF-8

// The code points of s; each maximal ill-formed subpart becomes U+FFFD (Rust's from_utf8_lossy).
U32 FromUtf8(std::string_view s) {
  U32 out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    const Utf8Char d = DecodeUtf8Char(s, i);
    out.push_back(d.cp);
    i += d.size;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Character classes, as the reference library's Rust code defines them.

// char::is_whitespace: the Unicode White_Space property.
bool IsWhitespace(char32_t c) {
  if (c < 0x80) return c == ' ' || (c >= 0x09 && c <= 0x0D);
  return u_hasBinaryProperty(static_cast<UChar32>(c), UCHAR_WHITE_SPACE);
}

int Category(char32_t c) { return u_charType(static_cast<UChar32>(c)); }

// BertNormalizer's is_control: categories Cc, Cf, Co, except \t \n \r (whitespace there). The
// reference's check (unicode_categories' is_other) does not catch unassigned code points (Cn): they
// stay, and become unknown tokens.
bool IsBertControl(char32_t c) {
  if (c == '\t' || c == '\n' || c == '\r') return false;
  if (c >= 0x20 && c < 0x7F) return false;
  const int cat = Category(c);
  return cat == U_CONTROL_CHAR || cat == U_FORMAT_CHAR || cat == U_PRIVATE_USE_CHAR ||
         cat == U_SURROGATE;
}

// is_bert_punc: ASCII punctuation (33-47, 58-64, 91-96, 123-126) or a Unicode P* category.
bool IsPunctuation(char32_t c) {
  if (c < 0x80) {
    return (c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) ||
           (c >= 123 && c <= 126);
  }
  return u_ispunct(static_cast<UChar32>(c));
}

bool IsChineseChar(char32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
         (c >= 0x20000 && c <= 0x2A6DF) || (c >= 0x2A700 && c <= 0x2B73F) ||
         (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

bool IsNonspacingMark(char32_t c) { return c >= 0x300 && Category(c) == U_NON_SPACING_MARK; }

bool IsMark(char32_t c) {
  if (c < 0x300) return false;
  const int cat = Category(c);
  return cat == U_NON_SPACING_MARK || cat == U_COMBINING_SPACING_MARK || cat == U_ENCLOSING_MARK;
}

// char::is_numeric: categories Nd, Nl, No.
bool IsNumeric(char32_t c) {
  if (c < 0x80) return c >= '0' && c <= '9';
  const int cat = Category(c);
  return cat == U_DECIMAL_DIGIT_NUMBER || cat == U_LETTER_NUMBER || cat == U_OTHER_NUMBER;
}

// Regex \w (Unicode): Alphabetic, marks, decimal digits, connector punctuation, join controls.
bool IsWordChar(char32_t c) {
  if (c < 0x80) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  }
  const auto u = static_cast<UChar32>(c);
  if (u_hasBinaryProperty(u, UCHAR_ALPHABETIC) || u_hasBinaryProperty(u, UCHAR_JOIN_CONTROL)) {
    return true;
  }
  const int cat = Category(c);
  return cat == U_NON_SPACING_MARK || cat == U_COMBINING_SPACING_MARK || cat == U_ENCLOSING_MARK ||
         cat == U_DECIMAL_DIGIT_NUMBER || cat == U_CONNECTOR_PUNCTUATION;
}

// char::to_lowercase, one character at a time: the full mapping, which differs from the simple one
// only for U+0130 (-> "i" + U+0307). No context (a final sigma stays sigma).
void AppendLower(char32_t c, U32& out) {
  if (c < 0x80) {
    out.push_back(c >= 'A' && c <= 'Z' ? c + 32 : c);
  } else if (c == 0x130) {
    out.push_back('i');
    out.push_back(0x307);
  } else {
    out.push_back(static_cast<char32_t>(u_tolower(static_cast<UChar32>(c))));
  }
}

bool IsAscii(const U32& s) {
  return std::all_of(s.begin(), s.end(), [](char32_t c) { return c < 0x80; });
}

enum class NormalForm { kNfc, kNfd, kNfkc, kNfkd };

U32 Normalize(const U32& s, NormalForm form) {
  if (IsAscii(s)) return s;  // every normal form leaves ASCII as it is
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* n = nullptr;
  switch (form) {
    case NormalForm::kNfc:
      n = icu::Normalizer2::getNFCInstance(status);
      break;
    case NormalForm::kNfd:
      n = icu::Normalizer2::getNFDInstance(status);
      break;
    case NormalForm::kNfkc:
      n = icu::Normalizer2::getNFKCInstance(status);
      break;
    case NormalForm::kNfkd:
      n = icu::Normalizer2::getNFKDInstance(status);
      break;
  }
  if (U_FAILURE(status) || n == nullptr) return s;
  const icu::UnicodeString in = icu::UnicodeString::fromUTF32(
      reinterpret_cast<const UChar32*>(s.data()), static_cast<int32_t>(s.size()));
  const icu::UnicodeString norm = n->normalize(in, status);
  if (U_FAILURE(status)) return s;
  U32 out(static_cast<std::size_t>(norm.countChar32()), U'\0');
  UErrorCode st2 = U_ZERO_ERROR;
  norm.toUTF32(reinterpret_cast<UChar32*>(out.data()), static_cast<int32_t>(out.size()), st2);
  return out;
}

// ---------------------------------------------------------------------------------------------
// JSON helpers: every error names the file and the field.

using json_internal::TypeName;

struct Json {
  const std::string& path;

  [[noreturn]] void Fail(std::string_view what, std::string_view expected) const {
    throw Failure{fmt::format("{}: {} (expected {})", path, what, expected)};
  }
  [[noreturn]] void WrongType(std::string_view field, const element& e,
                              std::string_view expected) const {
    Fail(fmt::format("\"{}\" is {}", field, TypeName(e)), expected);
  }
  bool Get(const object& o, std::string_view key, element& e) const {
    return o.at_key(key).get(e) == simdjson::SUCCESS && e.type() != element_type::NULL_VALUE;
  }
  object Obj(const element& e, std::string_view field) const {
    if (e.type() != element_type::OBJECT) WrongType(field, e, "an object");
    return e.get_object().value_unsafe();
  }
  std::string_view Str(const object& o, std::string_view key, std::string_view field) const {
    element e;
    if (!Get(o, key, e)) Fail(fmt::format("\"{}\" is missing", field), "a string");
    if (e.type() != element_type::STRING) WrongType(field, e, "a string");
    return e.get_string().value_unsafe();
  }
  std::string_view StrOr(const object& o, std::string_view key, std::string_view field,
                         std::string_view dflt) const {
    element e;
    if (!Get(o, key, e)) return dflt;
    if (e.type() != element_type::STRING) WrongType(field, e, "a string");
    return e.get_string().value_unsafe();
  }
  bool BoolOr(const object& o, std::string_view key, std::string_view field, bool dflt) const {
    element e;
    if (!Get(o, key, e)) return dflt;
    if (e.type() != element_type::BOOL) WrongType(field, e, "true or false");
    return e.get_bool().value_unsafe();
  }
  std::int64_t Int(const element& e, std::string_view field) const {
    if (e.type() == element_type::INT64) return e.get_int64().value_unsafe();
    if (e.type() == element_type::UINT64) Fail(fmt::format("\"{}\" is too large", field), "an id");
    WrongType(field, e, "an integer");
  }
  double Num(const element& e, std::string_view field) const {
    if (e.type() == element_type::DOUBLE) return e.get_double().value_unsafe();
    if (e.type() == element_type::INT64) return static_cast<double>(e.get_int64().value_unsafe());
    if (e.type() == element_type::UINT64) return static_cast<double>(e.get_uint64().value_unsafe());
    WrongType(field, e, "a number");
  }
};

// ---------------------------------------------------------------------------------------------
// Pipeline components.

enum class NormKind {
  kBert,
  kLowercase,
  kStrip,
  kStripAccents,
  kNfc,
  kNfd,
  kNfkc,
  kNfkd,
  kNmt,
  kPrepend,
  kReplaceString,
  kReplaceWhitespaceRuns,  // Replace with Regex \s+
  kReplaceSpaceRuns,       // Replace with Regex " +"
};

struct NormStep {
  NormKind kind;
  bool clean_text = true, chinese = true, strip_accents = true, lowercase = true;  // Bert
  bool left = true, right = true;                                                  // Strip
  U32 pattern, content;  // Replace (pattern), Replace / Prepend (content)
};

void ApplyNorm(const NormStep& n, U32& s) {
  switch (n.kind) {
    case NormKind::kBert: {
      U32 out;
      out.reserve(s.size() + 8);
      for (char32_t c : s) {
        if (n.clean_text) {
          if (c == 0 || c == 0xFFFD || IsBertControl(c)) continue;
          if (IsWhitespace(c)) c = ' ';
        }
        if (n.chinese && c >= 0x3400 && IsChineseChar(c)) {
          out.push_back(' ');
          out.push_back(c);
          out.push_back(' ');
        } else {
          out.push_back(c);
        }
      }
      if (n.strip_accents && !IsAscii(out)) {
        out = Normalize(out, NormalForm::kNfd);
        std::erase_if(out, IsNonspacingMark);
      }
      if (n.lowercase) {
        U32 low;
        low.reserve(out.size());
        for (char32_t c : out) AppendLower(c, low);
        out.swap(low);
      }
      s.swap(out);
      return;
    }
    case NormKind::kLowercase: {
      U32 low;
      low.reserve(s.size());
      for (char32_t c : s) AppendLower(c, low);
      s.swap(low);
      return;
    }
    case NormKind::kStrip: {
      std::size_t b = 0, e = s.size();
      if (n.left) {
        while (b < e && IsWhitespace(s[b])) ++b;
      }
      if (n.right) {
        while (e > b && IsWhitespace(s[e - 1])) --e;
      }
      s = s.substr(b, e - b);
      return;
    }
    case NormKind::kStripAccents:
      std::erase_if(s, IsMark);
      return;
    case NormKind::kNfc:
      s = Normalize(s, NormalForm::kNfc);
      return;
    case NormKind::kNfd:
      s = Normalize(s, NormalForm::kNfd);
      return;
    case NormKind::kNfkc:
      s = Normalize(s, NormalForm::kNfkc);
      return;
    case NormKind::kNfkd:
      s = Normalize(s, NormalForm::kNfkd);
      return;
    case NormKind::kNmt: {
      U32 out;
      out.reserve(s.size());
      for (char32_t c : s) {
        if ((c >= 0x01 && c <= 0x08) || c == 0x0B || (c >= 0x0E && c <= 0x1F) || c == 0x7F ||
            c == 0x8F || c == 0x9F) {
          continue;
        }
        if (c == 0x09 || c == 0x0A || c == 0x0C || c == 0x0D || c == 0x1680 ||
            (c >= 0x200B && c <= 0x200F) || c == 0x2028 || c == 0x2029 || c == 0x2581 ||
            c == 0xFEFF || c == 0xFFFD) {
          c = ' ';
        }
        out.push_back(c);
      }
      s.swap(out);
      return;
    }
    case NormKind::kPrepend:
      if (!s.empty()) s.insert(0, n.content);
      return;
    case NormKind::kReplaceString: {
      if (s.find(n.pattern) == U32::npos) return;
      U32 out;
      std::size_t pos = 0;
      while (true) {
        const std::size_t hit = s.find(n.pattern, pos);
        if (hit == U32::npos) break;
        out.append(s, pos, hit - pos);
        out += n.content;
        pos = hit + n.pattern.size();
      }
      out.append(s, pos, U32::npos);
      s.swap(out);
      return;
    }
    case NormKind::kReplaceWhitespaceRuns:
    case NormKind::kReplaceSpaceRuns: {
      const bool any_ws = n.kind == NormKind::kReplaceWhitespaceRuns;
      U32 out;
      out.reserve(s.size());
      std::size_t i = 0;
      while (i < s.size()) {
        const bool ws = any_ws ? IsWhitespace(s[i]) : s[i] == ' ';
        if (!ws) {
          out.push_back(s[i++]);
          continue;
        }
        while (i < s.size() && (any_ws ? IsWhitespace(s[i]) : s[i] == ' ')) ++i;
        out += n.content;
      }
      s.swap(out);
      return;
    }
  }
}

// How a split keeps the delimiters (SplitDelimiterBehavior).
enum class Behavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

enum class PreKind { kBert, kWhitespace, kWhitespaceSplit, kMetaspace, kPunctuation, kDigits };
enum class Prepend { kAlways, kFirst, kNever };

struct PreStep {
  PreKind kind;
  Behavior behavior = Behavior::kIsolated;  // Punctuation; Digits (isolated or contiguous)
  char32_t replacement = 0x2581;            // Metaspace
  Prepend prepend = Prepend::kAlways;
  bool split = true;
};

// A pre-token: its text and whether it starts at offset 0 of the original input (Metaspace's
// prepend_scheme "first" looks at that).
struct Piece {
  U32 text;
  bool at_start;
};

// NormalizedString::split with a per-character predicate: every matching character is one match;
// the behavior decides what becomes of it. Empty pieces are dropped, as the reference does.
template <class Pred>
void SplitPiece(const Piece& piece, Pred is_delim, Behavior behavior, std::vector<Piece>& out) {
  const U32& s = piece.text;
  struct Span {
    std::size_t b, e;
    bool match;
  };
  std::vector<Span> spans;
  std::size_t last = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (!is_delim(s[i])) continue;
    if (last < i) spans.push_back({last, i, false});
    spans.push_back({i, i + 1, true});
    last = i + 1;
  }
  if (last < s.size()) spans.push_back({last, s.size(), false});

  std::vector<std::pair<std::size_t, std::size_t>> keep;
  switch (behavior) {
    case Behavior::kRemoved:
      for (const Span& sp : spans) {
        if (!sp.match) keep.emplace_back(sp.b, sp.e);
      }
      break;
    case Behavior::kIsolated:
      for (const Span& sp : spans) keep.emplace_back(sp.b, sp.e);
      break;
    case Behavior::kContiguous: {
      bool prev = false;
      for (const Span& sp : spans) {
        if (!keep.empty() && sp.match == prev) {
          keep.back().second = sp.e;
        } else {
          keep.emplace_back(sp.b, sp.e);
        }
        prev = sp.match;
      }
      break;
    }
    case Behavior::kMergedWithPrevious: {
      bool prev = false;
      for (const Span& sp : spans) {
        if (sp.match && !prev && !keep.empty()) {
          keep.back().second = sp.e;
        } else {
          keep.emplace_back(sp.b, sp.e);
        }
        prev = sp.match;
      }
      break;
    }
    case Behavior::kMergedWithNext: {
      bool prev = false;
      for (auto it = spans.rbegin(); it != spans.rend(); ++it) {
        if (it->match && !prev && !keep.empty()) {
          keep.back().first = it->b;
        } else {
          keep.emplace_back(it->b, it->e);
        }
        prev = it->match;
      }
      std::reverse(keep.begin(), keep.end());
      break;
    }
  }
  for (const auto& [b, e] : keep) {
    if (b == e) continue;
    out.push_back(Piece{s.substr(b, e - b), piece.at_start && b == 0});
  }
}

void ApplyPre(const PreStep& p, std::vector<Piece>& pieces) {
  std::vector<Piece> out;
  out.reserve(pieces.size() * 2);
  for (Piece& piece : pieces) {
    switch (p.kind) {
      case PreKind::kBert: {
        std::vector<Piece> words;
        SplitPiece(piece, IsWhitespace, Behavior::kRemoved, words);
        for (const Piece& w : words) SplitPiece(w, IsPunctuation, Behavior::kIsolated, out);
        break;
      }
      case PreKind::kWhitespaceSplit:
        SplitPiece(piece, IsWhitespace, Behavior::kRemoved, out);
        break;
      case PreKind::kWhitespace: {
        // Regex \w+|[^\w\s]+: runs of word characters and runs of other non-space characters.
        const U32& s = piece.text;
        std::size_t i = 0;
        while (i < s.size()) {
          if (IsWhitespace(s[i])) {
            ++i;
            continue;
          }
          const bool word = IsWordChar(s[i]);
          std::size_t j = i + 1;
          while (j < s.size() && !IsWhitespace(s[j]) && IsWordChar(s[j]) == word) ++j;
          out.push_back(Piece{s.substr(i, j - i), piece.at_start && i == 0});
          i = j;
        }
        break;
      }
      case PreKind::kPunctuation:
        SplitPiece(piece, IsPunctuation, p.behavior, out);
        break;
      case PreKind::kDigits:
        SplitPiece(piece, IsNumeric, p.behavior, out);
        break;
      case PreKind::kMetaspace: {
        Piece m{piece.text, piece.at_start};
        std::replace(m.text.begin(), m.text.end(), U' ', p.replacement);
        const bool starts = !m.text.empty() && m.text.front() == p.replacement;
        if (!starts &&
            (p.prepend == Prepend::kAlways || (p.prepend == Prepend::kFirst && m.at_start))) {
          m.text.insert(m.text.begin(), p.replacement);
        }
        if (p.split) {
          const char32_t r = p.replacement;
          SplitPiece(
              m, [r](char32_t c) { return c == r; }, Behavior::kMergedWithNext, out);
        } else if (!m.text.empty()) {
          out.push_back(std::move(m));
        }
        break;
      }
    }
  }
  pieces.swap(out);
}

struct AddedToken {
  U32 content;
  int id;
  bool single_word, lstrip, rstrip;
};

// Leftmost-longest matcher over a set of added tokens (what the reference's Aho-Corasick does).
class AddedMatcher {
 public:
  void Add(AddedToken t) {
    if (t.content.empty()) return;
    const std::size_t idx = tokens_.size();
    const char32_t first = t.content.front();
    if (first < 0x80) {
      ascii_[first].push_back(idx);
    } else {
      other_[first].push_back(idx);
    }
    tokens_.push_back(std::move(t));
  }
  bool empty() const { return tokens_.empty(); }

  // Splits s into (id or -1, begin, end) spans covering it; text spans have id -1.
  struct Span {
    int id;
    std::size_t b, e;
  };
  void Split(const U32& s, std::vector<Span>& out) const {
    out.clear();
    std::size_t start_offset = 0;
    std::size_t pos = 0;
    while (pos < s.size()) {
      const std::vector<std::size_t>* cands = nullptr;
      const char32_t c = s[pos];
      if (c < 0x80) {
        cands = ascii_[c].empty() ? nullptr : &ascii_[c];
      } else if (!other_.empty()) {
        auto it = other_.find(c);
        if (it != other_.end()) cands = &it->second;
      }
      const AddedToken* best = nullptr;
      if (cands != nullptr) {
        for (std::size_t idx : *cands) {
          const AddedToken& t = tokens_[idx];
          if (t.content.size() > s.size() - pos) continue;
          if (s.compare(pos, t.content.size(), t.content) != 0) continue;
          if (best == nullptr || t.content.size() > best->content.size()) best = &t;
        }
      }
      if (best == nullptr) {
        ++pos;
        continue;
      }
      std::size_t start = pos, stop = pos + best->content.size();
      pos = stop;
      if (best->single_word) {
        const bool start_space = start == 0 || !IsWordChar(s[start - 1]);
        const bool stop_space = stop == s.size() || !IsWordChar(s[stop]);
        if (!start_space || !stop_space) continue;
      }
      if (best->lstrip) {
        std::size_t ns = start;
        while (ns > 0 && IsWhitespace(s[ns - 1])) --ns;
        start = std::max(ns, start_offset);
      }
      if (best->rstrip) {
        while (stop < s.size() && IsWhitespace(s[stop])) ++stop;
      }
      if (start_offset < start) out.push_back({-1, start_offset, start});
      out.push_back({best->id, start, stop});
      start_offset = stop;
      pos = std::max(pos, stop);
    }
    if (start_offset < s.size()) out.push_back({-1, start_offset, s.size()});
  }

 private:
  std::vector<AddedToken> tokens_;
  std::array<std::vector<std::size_t>, 128> ascii_;
  std::unordered_map<char32_t, std::vector<std::size_t>> other_;
};

struct SvHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using VocabMap = std::unordered_map<std::string, int, SvHash, std::equal_to<>>;

int Lookup(const VocabMap& m, std::string_view key) {
  auto it = m.find(key);
  return it == m.end() ? -1 : it->second;
}

// Byte trie over the Unigram pieces, for the common-prefix search of the Viterbi pass (the
// reference uses one too). Each node's edges are contiguous and sorted by byte.
class ByteTrie {
 public:
  void Build(const VocabMap& vocab) {
    std::vector<std::pair<std::string_view, int>> keys(vocab.begin(), vocab.end());
    std::sort(keys.begin(), keys.end());
    id_.clear();
    first_.clear();
    count_.clear();
    edge_byte_.clear();
    edge_node_.clear();
    // keys[lo, hi) share their first `depth` bytes, the path to `node`. Iterative: a piece may be
    // long.
    struct Task {
      std::uint32_t node;
      std::size_t lo, hi, depth;
    };
    std::vector<Task> stack = {{NewNode(), 0, keys.size(), 0}};
    while (!stack.empty()) {
      Task t = stack.back();
      stack.pop_back();
      if (t.lo < t.hi && keys[t.lo].first.size() == t.depth) id_[t.node] = keys[t.lo++].second;
      first_[t.node] = static_cast<std::uint32_t>(edge_byte_.size());
      std::uint32_t count = 0;
      for (std::size_t i = t.lo; i < t.hi;) {
        const char b = keys[i].first[t.depth];
        std::size_t j = i + 1;
        while (j < t.hi && keys[j].first[t.depth] == b) ++j;
        const std::uint32_t child = NewNode();
        edge_byte_.push_back(static_cast<unsigned char>(b));
        edge_node_.push_back(child);
        stack.push_back({child, i, j, t.depth + 1});
        ++count;
        i = j;
      }
      count_[t.node] = count;
    }
  }

  // Calls fn(length, id) for every piece that is a prefix of s, shortest first.
  template <class Fn>
  void Prefixes(std::string_view s, Fn fn) const {
    std::uint32_t node = 0;
    for (std::size_t i = 0; i < s.size(); ++i) {
      const auto b = static_cast<unsigned char>(s[i]);
      const auto* begin = edge_byte_.data() + first_[node];
      const auto* end = begin + count_[node];
      const auto* it = std::lower_bound(begin, end, b);
      if (it == end || *it != b) return;
      node = edge_node_[static_cast<std::size_t>(it - edge_byte_.data())];
      if (id_[node] >= 0) fn(i + 1, id_[node]);
    }
  }

 private:
  std::uint32_t NewNode() {
    id_.push_back(-1);
    first_.push_back(0);
    count_.push_back(0);
    return static_cast<std::uint32_t>(id_.size() - 1);
  }

  std::vector<int> id_;
  std::vector<std::uint32_t> first_, count_;
  std::vector<unsigned char> edge_byte_;
  std::vector<std::uint32_t> edge_node_;
};

constexpr double kUnkPenalty = 10.0;  // the reference's K_UNK_PENALTY

}  // namespace

// ---------------------------------------------------------------------------------------------

struct HfTokenizer::Impl {
  std::string path;
  enum class Model { kWordPiece, kUnigram, kWordLevel } model = Model::kWordPiece;

  std::vector<NormStep> norm;
  std::vector<PreStep> pre;
  AddedMatcher added_raw;   // normalized: false, matched on the input
  AddedMatcher added_norm;  // normalized: true, matched on the normalized text
  std::vector<std::pair<std::string, int>> added_list;

  VocabMap vocab;  // token -> id (the model's vocabulary)
  int unk = -1;
  int size = 0;              // highest id + 1
  std::size_t truncate = 0;  // 0 = off
  bool truncate_left = false;
  // The post-processor's single-sequence template: ids put before and after the text's tokens.
  std::vector<int> special_before, special_after;
  bool has_post = false;

  void EncodeContent(std::string_view text, std::vector<int>& ids) const;

  // WordPiece
  VocabMap continuing;  // pieces that start with the prefix, keyed without it
  std::size_t longest_piece = 0;  // bytes of the longest key of vocab or continuing
  std::string prefix = "##";
  std::size_t max_chars = 100;

  // Unigram
  std::vector<double> scores;
  ByteTrie pieces;
  double unk_score = 0;
  bool byte_fallback = false;
  std::array<int, 256> byte_ids{};

  void EncodeWord(const U32& word, std::vector<int>& ids, std::string& buf) const;
  void WordPiece(std::string_view w, std::vector<int>& ids) const;
  void Unigram(std::string_view w, std::vector<int>& ids) const;
};

void HfTokenizer::Impl::WordPiece(std::string_view w, std::vector<int>& ids) const {
  if (Utf8Length(w) > max_chars) {
    if (unk >= 0) ids.push_back(unk);
    return;
  }
  const std::size_t first = ids.size();
  std::size_t start = 0;
  while (start < w.size()) {
    // No piece is longer than the longest vocabulary entry: starting there changes no result and keeps
    // a long word (max_input_chars_per_word can be anything) from costing cubic time.
    std::size_t end = w.size();
    if (end - start > longest_piece) {
      end = start + longest_piece;
      while (end > start && end < w.size() && IsUtf8Continuation(static_cast<unsigned char>(w[end]))) --end;
      if (end == start) end = w.size();  // cannot happen for valid UTF-8 and a piece of >= 4 bytes
    }
    int id = -1;
    while (start < end) {
      const std::string_view sub = w.substr(start, end - start);
      id = Lookup(start == 0 ? vocab : continuing, sub);
      if (id >= 0) break;
      do {
        --end;  // back over the last character
      } while (end > start && IsUtf8Continuation(static_cast<unsigned char>(w[end])));
    }
    if (id < 0) {
      ids.resize(first);
      if (unk >= 0) ids.push_back(unk);
      return;
    }
    ids.push_back(id);
    start = end;
  }
}

void HfTokenizer::Impl::Unigram(std::string_view w, std::vector<int>& ids) const {
  const std::size_t n = w.size();
  if (n == 0) return;
  struct Node {
    int id = -1;
    double score = 0;
    std::ptrdiff_t start = -1;
  };
  std::vector<Node> best(n + 1);
  auto char_len = [&](std::size_t i) {
    return std::min(Utf8SequenceLength(static_cast<unsigned char>(w[i])), n - i);
  };
  std::size_t pos = 0;
  while (pos < n) {
    const double base = best[pos].score;
    const std::size_t mblen = char_len(pos);
    bool has_single = false;
    pieces.Prefixes(w.substr(pos), [&](std::size_t len, int id) {
      const double cand = scores[static_cast<std::size_t>(id)] + base;
      Node& t = best[pos + len];
      if (t.start < 0 || cand > t.score) {
        t.score = cand;
        t.start = static_cast<std::ptrdiff_t>(pos);
        t.id = id;
      }
      if (len == mblen) has_single = true;
    });
    if (!has_single) {
      Node& t = best[pos + mblen];
      const double cand = unk_score + base;
      if (t.start < 0 || cand > t.score) {
        t.score = cand;
        t.start = static_cast<std::ptrdiff_t>(pos);
        t.id = unk;
      }
    }
    pos += mblen;
  }
  // Backtrack; consecutive unknown pieces are fused into one (fuse_unk).
  std::vector<std::pair<std::size_t, std::size_t>> pieces;  // reversed
  std::size_t end = n;
  std::size_t unk_end = 0;
  bool in_unk = false;
  while (end > 0) {
    const Node& node = best[end];
    const auto start = static_cast<std::size_t>(node.start);
    if (unk >= 0 && node.id == unk) {
      if (!in_unk) unk_end = end;
      in_unk = true;
    } else {
      if (in_unk) pieces.emplace_back(end, unk_end);
      in_unk = false;
      pieces.emplace_back(start, end);
    }
    end = start;
  }
  if (in_unk) pieces.emplace_back(0, unk_end);
  for (auto it = pieces.rbegin(); it != pieces.rend(); ++it) {
    const std::string_view piece = w.substr(it->first, it->second - it->first);
    const int id = Lookup(vocab, piece);
    if (id >= 0) {
      ids.push_back(id);
      continue;
    }
    if (byte_fallback) {
      bool all = true;
      for (unsigned char b : piece) all = all && byte_ids[b] >= 0;
      if (all) {
        for (unsigned char b : piece) ids.push_back(byte_ids[b]);
        continue;
      }
    }
    if (unk >= 0) ids.push_back(unk);
  }
}

void HfTokenizer::Impl::EncodeWord(const U32& word, std::vector<int>& ids, std::string& buf) const {
  buf.clear();
  for (char32_t c : word) AppendUtf8(buf, c);
  switch (model) {
    case Model::kWordPiece:
      WordPiece(buf, ids);
      return;
    case Model::kUnigram:
      Unigram(buf, ids);
      return;
    case Model::kWordLevel: {
      const int id = Lookup(vocab, buf);
      if (id >= 0) {
        ids.push_back(id);
      } else if (unk >= 0) {
        ids.push_back(unk);
      }
      return;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Loading.

namespace {

NormStep ParseNormStep(const Json& j, const object& o, std::string_view type,
                       const std::string& field) {
  NormStep n{};
  if (type == "BertNormalizer") {
    n.kind = NormKind::kBert;
    n.clean_text = j.BoolOr(o, "clean_text", field + ".clean_text", true);
    n.chinese = j.BoolOr(o, "handle_chinese_chars", field + ".handle_chinese_chars", true);
    n.lowercase = j.BoolOr(o, "lowercase", field + ".lowercase", true);
    // strip_accents: null follows lowercase.
    n.strip_accents = j.BoolOr(o, "strip_accents", field + ".strip_accents", n.lowercase);
  } else if (type == "Lowercase") {
    n.kind = NormKind::kLowercase;
  } else if (type == "Strip") {
    n.kind = NormKind::kStrip;
    n.left = j.BoolOr(o, "strip_left", field + ".strip_left", true);
    n.right = j.BoolOr(o, "strip_right", field + ".strip_right", true);
  } else if (type == "StripAccents") {
    n.kind = NormKind::kStripAccents;
  } else if (type == "NFC") {
    n.kind = NormKind::kNfc;
  } else if (type == "NFD") {
    n.kind = NormKind::kNfd;
  } else if (type == "NFKC") {
    n.kind = NormKind::kNfkc;
  } else if (type == "NFKD") {
    n.kind = NormKind::kNfkd;
  } else if (type == "Nmt") {
    n.kind = NormKind::kNmt;
  } else if (type == "Prepend") {
    n.kind = NormKind::kPrepend;
    n.content = FromUtf8(j.Str(o, "prepend", field + ".prepend"));
  } else if (type == "Replace") {
    element pat;
    if (!j.Get(o, "pattern", pat))
      j.Fail(fmt::format("\"{}.pattern\" is missing", field),
             "{\"String\": ...} or {\"Regex\": ...}");
    const object po = j.Obj(pat, field + ".pattern");
    n.content = FromUtf8(j.Str(o, "content", field + ".content"));
    element v;
    if (j.Get(po, "String", v)) {
      n.kind = NormKind::kReplaceString;
      n.pattern = FromUtf8(j.Str(po, "String", field + ".pattern.String"));
      if (n.pattern.empty())
        j.Fail(fmt::format("\"{}.pattern.String\" is empty", field), "a non-empty string");
    } else if (j.Get(po, "Regex", v)) {
      const std::string_view re = j.Str(po, "Regex", field + ".pattern.Regex");
      if (re == "\\s+") {
        n.kind = NormKind::kReplaceWhitespaceRuns;
      } else if (re == " +") {
        n.kind = NormKind::kReplaceSpaceRuns;
      } else {
        j.Fail(fmt::format("unsupported Replace regex \"{}\" in {}", re, field),
               "one of the regexes kplab implements: \\s+ or \" +\"");
      }
    } else {
      j.Fail(fmt::format("\"{}.pattern\" has neither String nor Regex", field),
             "{\"String\": ...} or {\"Regex\": ...}");
    }
  } else {
    j.Fail(fmt::format("unsupported normalizer \"{}\" in {}", type, field),
           "one of BertNormalizer, Lowercase, Strip, StripAccents, NFC, NFD, NFKC, NFKD, Nmt, "
           "Prepend, Replace, Sequence");
  }
  return n;
}

void ParseNormalizer(const Json& j, const element& e, const std::string& field,
                     std::vector<NormStep>& out) {
  const object o = j.Obj(e, field);
  const std::string_view type = j.Str(o, "type", field + ".type");
  if (type == "Sequence") {
    element arr;
    if (!j.Get(o, "normalizers", arr) || arr.type() != element_type::ARRAY) {
      j.Fail(fmt::format("\"{}.normalizers\" is missing", field), "an array of normalizers");
    }
    std::size_t i = 0;
    const simdjson::dom::array items = arr.get_array().value_unsafe();
    for (element sub : items) {
      ParseNormalizer(j, sub, fmt::format("{}.normalizers[{}]", field, i++), out);
    }
    return;
  }
  out.push_back(ParseNormStep(j, o, type, field));
}

Behavior ParseBehavior(const Json& j, const object& o, const std::string& field, Behavior dflt) {
  const std::string_view b = j.StrOr(o, "behavior", field + ".behavior", "");
  if (b.empty()) return dflt;
  if (b == "Removed") return Behavior::kRemoved;
  if (b == "Isolated") return Behavior::kIsolated;
  if (b == "MergedWithPrevious") return Behavior::kMergedWithPrevious;
  if (b == "MergedWithNext") return Behavior::kMergedWithNext;
  if (b == "Contiguous") return Behavior::kContiguous;
  j.Fail(fmt::format("\"{}.behavior\" is \"{}\"", field, b),
         "Removed, Isolated, MergedWithPrevious, MergedWithNext or Contiguous");
}

void ParsePreTokenizer(const Json& j, const element& e, const std::string& field,
                       std::vector<PreStep>& out) {
  const object o = j.Obj(e, field);
  const std::string_view type = j.Str(o, "type", field + ".type");
  PreStep p{};
  if (type == "Sequence") {
    element arr;
    if (!j.Get(o, "pretokenizers", arr) || arr.type() != element_type::ARRAY) {
      j.Fail(fmt::format("\"{}.pretokenizers\" is missing", field), "an array of pre-tokenizers");
    }
    std::size_t i = 0;
    const simdjson::dom::array items = arr.get_array().value_unsafe();
    for (element sub : items) {
      ParsePreTokenizer(j, sub, fmt::format("{}.pretokenizers[{}]", field, i++), out);
    }
    return;
  } else if (type == "BertPreTokenizer") {
    p.kind = PreKind::kBert;
  } else if (type == "Whitespace") {
    p.kind = PreKind::kWhitespace;
  } else if (type == "WhitespaceSplit") {
    p.kind = PreKind::kWhitespaceSplit;
  } else if (type == "Punctuation") {
    p.kind = PreKind::kPunctuation;
    p.behavior = ParseBehavior(j, o, field, Behavior::kIsolated);
  } else if (type == "Digits") {
    p.kind = PreKind::kDigits;
    p.behavior = j.BoolOr(o, "individual_digits", field + ".individual_digits", false)
                     ? Behavior::kIsolated
                     : Behavior::kContiguous;
  } else if (type == "Metaspace") {
    p.kind = PreKind::kMetaspace;
    const U32 rep = FromUtf8(j.StrOr(o, "replacement", field + ".replacement", "\xE2\x96\x81"));
    if (rep.size() != 1) {
      j.Fail(fmt::format("\"{}.replacement\" is not one character", field), "one character");
    }
    p.replacement = rep[0];
    const std::string_view scheme = j.StrOr(o, "prepend_scheme", field + ".prepend_scheme", "");
    if (scheme.empty()) {
      // Older files: add_prefix_space (default true).
      p.prepend = j.BoolOr(o, "add_prefix_space", field + ".add_prefix_space", true)
                      ? Prepend::kAlways
                      : Prepend::kNever;
    } else if (scheme == "always") {
      p.prepend = Prepend::kAlways;
    } else if (scheme == "first") {
      p.prepend = Prepend::kFirst;
    } else if (scheme == "never") {
      p.prepend = Prepend::kNever;
    } else {
      j.Fail(fmt::format("\"{}.prepend_scheme\" is \"{}\"", field, scheme),
             "always, first or never");
    }
    p.split = j.BoolOr(o, "split", field + ".split", true);
  } else {
    j.Fail(fmt::format("unsupported pre-tokenizer \"{}\" in {}", type, field),
           "one of BertPreTokenizer, Whitespace, WhitespaceSplit, Metaspace, Punctuation, Digits, "
           "Sequence");
  }
  out.push_back(p);
}

void ReadVocabObject(const Json& j, const element& v, const std::string& field, VocabMap& vocab) {
  const object vo = j.Obj(v, field);
  for (auto kv : vo) {
    const std::int64_t id = j.Int(kv.value, fmt::format("{}[\"{}\"]", field, kv.key));
    if (id < 0 || id > (1 << 30)) {
      j.Fail(fmt::format("\"{}[\"{}\"]\" is {}", field, kv.key, id), "an id in [0, 2^30]");
    }
    vocab[std::string(kv.key)] = static_cast<int>(id);
  }
}

}  // namespace

HfTokenizer::HfTokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
HfTokenizer::HfTokenizer(HfTokenizer&&) noexcept = default;
HfTokenizer& HfTokenizer::operator=(HfTokenizer&&) noexcept = default;
HfTokenizer::~HfTokenizer() = default;

Result<HfTokenizer> HfTokenizer::Load(const std::string& path) {
  if (Status st = CheckRegularFile(path, "a tokenizer.json file"); !st.ok()) return st.error();
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error::Input(fmt::format("{}: cannot open (expected a tokenizer.json file)", path));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return Error::Input(fmt::format("{}: read error", path));
  return Parse(ss.str(), path);
}

namespace {

int PairId(const Json& j, const object& o, std::string_view key, const std::string& field) {
  element e;
  const std::string f = fmt::format("{}.{}", field, key);
  if (!j.Get(o, key, e)) j.Fail(fmt::format("\"{}\" is missing", f), "a [token, id] pair");
  simdjson::dom::array pair;
  if (e.get_array().get(pair) || pair.size() != 2) j.Fail(fmt::format("\"{}\" is not a [token, id] pair", f), "[token, id]");
  element id_el;
  if (pair.at(1).get(id_el)) j.Fail(fmt::format("\"{}[1]\" is missing", f), "an id");
  const std::int64_t id = j.Int(id_el, f + "[1]");
  if (id < 0 || id > 100000000) j.Fail(fmt::format("\"{}[1]\" is {}", f, id), "a token id >= 0");
  return static_cast<int>(id);
}

}  // namespace

void ParsePostProcessorImpl(const Json& j, const element& e, const std::string& field,
                            std::vector<int>& before, std::vector<int>& after) {
  const object o = j.Obj(e, field);
  const std::string type(j.Str(o, "type", field + ".type"));
  if (type == "BertProcessing" || type == "RobertaProcessing") {
    before.push_back(PairId(j, o, "cls", field));
    after.push_back(PairId(j, o, "sep", field));
  } else if (type == "TemplateProcessing") {
    element single, specials;
    if (!j.Get(o, "single", single) || single.type() != element_type::ARRAY) {
      j.Fail(fmt::format("\"{}.single\" is missing or not an array", field), "the single-sequence template");
    }
    const bool have_specials = j.Get(o, "special_tokens", specials);
    bool seen_sequence = false;
    std::size_t i = 0;
    const simdjson::dom::array arr1 = single.get_array().value_unsafe();  // a copy, not the temporary's
    for (element item : arr1) {
      const std::string f = fmt::format("{}.single[{}]", field, i++);
      const object io = j.Obj(item, f);
      element x;
      if (j.Get(io, "Sequence", x)) {
        if (seen_sequence) j.Fail(fmt::format("\"{}\" is a second sequence", f), "one sequence in the single template");
        seen_sequence = true;
        continue;
      }
      if (!j.Get(io, "SpecialToken", x)) j.Fail(fmt::format("\"{}\" is neither Sequence nor SpecialToken", f), "Sequence or SpecialToken");
      const std::string name(j.Str(j.Obj(x, f + ".SpecialToken"), "id", f + ".SpecialToken.id"));
      element tok;
      if (!have_specials || specials.type() != element_type::OBJECT ||
          specials.get_object().value_unsafe()[name].get(tok)) {
        j.Fail(fmt::format("\"{}.special_tokens\" has no \"{}\"", field, name), "every SpecialToken of the template listed");
      }
      const std::string tf = fmt::format("{}.special_tokens.{}", field, name);
      element ids;
      if (!j.Get(j.Obj(tok, tf), "ids", ids) || ids.type() != element_type::ARRAY) {
        j.Fail(fmt::format("\"{}.ids\" is missing", tf), "an array of ids");
      }
      const simdjson::dom::array arr2 = ids.get_array().value_unsafe();  // a copy, not the temporary's
      for (element id_el : arr2) {
        const std::int64_t id = j.Int(id_el, tf + ".ids[]");
        if (id < 0 || id > 100000000) j.Fail(fmt::format("\"{}.ids\" has {}", tf, id), "token ids >= 0");
        (seen_sequence ? after : before).push_back(static_cast<int>(id));
      }
    }
    if (!seen_sequence) j.Fail(fmt::format("\"{}.single\" has no Sequence", field), "the text's place in the template");
  } else if (type == "Sequence") {
    element procs;
    if (!j.Get(o, "processors", procs) || procs.type() != element_type::ARRAY) {
      j.Fail(fmt::format("\"{}.processors\" is missing", field), "an array of post-processors");
    }
    std::size_t i = 0;
    const simdjson::dom::array arr3 = procs.get_array().value_unsafe();  // a copy, not the temporary's
    for (element p : arr3) {
      const std::string f = fmt::format("{}.processors[{}]", field, i++);
      if (j.Str(j.Obj(p, f), "type", f + ".type") == "ByteLevel") continue;  // offsets only
      ParsePostProcessorImpl(j, p, f, before, after);
    }
  } else if (type != "ByteLevel") {
    j.Fail(fmt::format("unsupported post-processor \"{}\" in \"{}\"", type, field),
           "TemplateProcessing, BertProcessing, RobertaProcessing, ByteLevel or a Sequence of these");
  }
}

void ParsePostProcessor(const Json& j, const element& e, const std::string& field, HfTokenizer::Impl& impl) {
  ParsePostProcessorImpl(j, e, field, impl.special_before, impl.special_after);
  impl.has_post = true;
}

namespace {

// "model": its type (untagged in old files: told by its fields), then the vocabulary and the type's
// own settings. Throws Failure.
std::string_view ModelType(const Json& j, const object& m, const element& vocab_el) {
  std::string_view type = j.StrOr(m, "type", "model.type", "");
  if (!type.empty()) return type;  // old files have untagged models
  element x;
  if (j.Get(m, "merges", x)) return "BPE";
  if (vocab_el.type() == element_type::ARRAY) return "Unigram";
  if (j.Get(m, "continuing_subword_prefix", x) || j.Get(m, "max_input_chars_per_word", x)) return "WordPiece";
  return "WordLevel";
}

void ParseWordModel(const Json& j, const object& m, const element& vocab_el, std::string_view type,
                    HfTokenizer::Impl& impl) {
  impl.model = type == "WordPiece" ? HfTokenizer::Impl::Model::kWordPiece : HfTokenizer::Impl::Model::kWordLevel;
  ReadVocabObject(j, vocab_el, "model.vocab", impl.vocab);
  const std::string_view unk = j.StrOr(m, "unk_token", "model.unk_token", "[UNK]");
  impl.unk = Lookup(impl.vocab, unk);
  if (type != "WordPiece") return;
  impl.prefix = std::string(j.StrOr(m, "continuing_subword_prefix", "model.continuing_subword_prefix", "##"));
  element x;
  if (j.Get(m, "max_input_chars_per_word", x)) {
    const std::int64_t v = j.Int(x, "model.max_input_chars_per_word");
    // An unsigned count in the reference (Rust's usize): a negative one is refused, not clamped.
    if (v < 0) j.Fail(fmt::format("\"model.max_input_chars_per_word\" is {}", v), "an integer >= 0");
    impl.max_chars = static_cast<std::size_t>(v);
  }
  for (const auto& [tok, id] : impl.vocab) {
    impl.longest_piece = std::max(impl.longest_piece, tok.size());
    if (tok.size() >= impl.prefix.size() && tok.compare(0, impl.prefix.size(), impl.prefix) == 0) {
      impl.continuing[tok.substr(impl.prefix.size())] = id;
    }
  }
}

void ParseUnigramModel(const Json& j, const object& m, const element& vocab_el, HfTokenizer::Impl& impl) {
  impl.model = HfTokenizer::Impl::Model::kUnigram;
  if (vocab_el.type() != element_type::ARRAY) j.WrongType("model.vocab", vocab_el, "an array");
  double min_score = std::numeric_limits<double>::infinity();
  std::size_t i = 0;
  const simdjson::dom::array entries = vocab_el.get_array().value_unsafe();
  for (element entry : entries) {
    const std::string f = fmt::format("model.vocab[{}]", i);
    simdjson::dom::array pair;
    if (entry.get_array().get(pair) || pair.size() != 2) {
      j.Fail(fmt::format("\"{}\" is not a [piece, score] pair", f), "[piece, score]");
    }
    std::string_view piece;
    if (pair.at(0).get_string().get(piece)) {
      j.Fail(fmt::format("\"{}[0]\" is not a string", f), "the piece as a string");
    }
    element score_el;
    if (pair.at(1).get(score_el)) j.Fail(fmt::format("\"{}[1]\" is missing", f), "a score");
    const double score = j.Num(score_el, f + "[1]");
    if (!std::isfinite(score)) j.Fail(fmt::format("\"{}[1]\" is not finite", f), "a finite score");
    impl.vocab[std::string(piece)] = static_cast<int>(i);
    impl.scores.push_back(score);
    min_score = std::min(min_score, score);
    ++i;
  }
  impl.unk_score = (i == 0 ? 0.0 : min_score) - kUnkPenalty;
  impl.pieces.Build(impl.vocab);
  element u;
  if (j.Get(m, "unk_id", u)) {
    const std::int64_t id = j.Int(u, "model.unk_id");
    if (id < 0 || static_cast<std::size_t>(id) >= i) {
      j.Fail(fmt::format("\"model.unk_id\" is {} but the vocabulary has {} pieces", id, i),
             "an index into model.vocab");
    }
    impl.unk = static_cast<int>(id);
  }
  impl.byte_fallback = j.BoolOr(m, "byte_fallback", "model.byte_fallback", false);
  for (int b = 0; b < 256; ++b) {
    impl.byte_ids[static_cast<std::size_t>(b)] = Lookup(impl.vocab, fmt::format("<0x{:02X}>", b));
  }
}

void ParseModel(const Json& j, const object& top, HfTokenizer::Impl& impl) {
  element me;
  if (!j.Get(top, "model", me)) j.Fail("\"model\" is missing", "a model object");
  const object m = j.Obj(me, "model");
  element vocab_el;
  if (!j.Get(m, "vocab", vocab_el)) j.Fail("\"model.vocab\" is missing", "the vocabulary");
  const std::string_view type = ModelType(j, m, vocab_el);
  if (type == "WordPiece" || type == "WordLevel") {
    ParseWordModel(j, m, vocab_el, type, impl);
  } else if (type == "Unigram") {
    ParseUnigramModel(j, m, vocab_el, impl);
  } else {
    j.Fail(fmt::format("unsupported model type \"{}\"", type),
           "WordPiece, Unigram or WordLevel (the models Model2Vec uses)");
  }
  for (const auto& [tok, id] : impl.vocab) impl.size = std::max(impl.size, id + 1);
}

// Truncation applies to encode() as well; padding would add pad ids, which a mean must not see.
void ParseTruncation(const Json& j, const object& top, bool for_encoder, HfTokenizer::Impl& impl) {
  element e;
  if (j.Get(top, "truncation", e)) {
    const object t = j.Obj(e, "truncation");
    element ml;
    if (!j.Get(t, "max_length", ml)) j.Fail("\"truncation.max_length\" is missing", "a number");
    const std::int64_t v = j.Int(ml, "truncation.max_length");
    if (v < 0) j.Fail(fmt::format("\"truncation.max_length\" is {}", v), "an integer >= 0");
    impl.truncate = static_cast<std::size_t>(v);
    impl.truncate_left = j.StrOr(t, "direction", "truncation.direction", "Right") == "Left";
  }
  if (j.Get(top, "padding", e) && !for_encoder) {
    j.Fail("\"padding\" is set", "null: padding adds pad tokens to every text of a batch");
  }
}

// Added tokens. As the reference loads them, the "id" written in the file is not used: a token whose
// content is in the model's vocabulary gets that id, any other the next id after the vocabulary (and
// after earlier added tokens); a repeated content is skipped.
void ParseAddedTokens(const Json& j, const element& e, HfTokenizer::Impl& impl) {
  if (e.type() != element_type::ARRAY) j.WrongType("added_tokens", e, "an array");
  const int model_size = static_cast<int>(impl.vocab.size());
  int max_added = -1;
  std::size_t i = 0;
  const simdjson::dom::array tokens = e.get_array().value_unsafe();
  for (element at : tokens) {
    const std::string f = fmt::format("added_tokens[{}]", i++);
    const object ao = j.Obj(at, f);
    const std::string content(j.Str(ao, "content", f + ".content"));
    const bool single_word = j.BoolOr(ao, "single_word", f + ".single_word", false);
    const bool lstrip = j.BoolOr(ao, "lstrip", f + ".lstrip", false);
    const bool rstrip = j.BoolOr(ao, "rstrip", f + ".rstrip", false);
    const bool normalized = j.BoolOr(ao, "normalized", f + ".normalized", true);
    if (content.empty()) continue;
    bool seen = false;
    for (const auto& [c, id] : impl.added_list) seen = seen || c == content;
    if (seen) continue;
    int id = Lookup(impl.vocab, content);
    if (id < 0) {
      id = max_added < 0 ? model_size : (max_added >= model_size || model_size == 0 ? max_added + 1 : model_size);
    }
    max_added = std::max(max_added, id);
    impl.size = std::max(impl.size, id + 1);
    impl.added_list.emplace_back(content, id);
    AddedToken t{FromUtf8(content), id, single_word, lstrip, rstrip};
    if (normalized) {
      for (const NormStep& n : impl.norm) ApplyNorm(n, t.content);
      impl.added_norm.Add(std::move(t));
    } else {
      impl.added_raw.Add(std::move(t));
    }
  }
}

}  // namespace

Result<HfTokenizer> HfTokenizer::Parse(std::string_view json, const std::string& path) {
  return Parse(json, path, false);
}

Result<HfTokenizer> HfTokenizer::Parse(std::string_view json, const std::string& path, bool for_encoder) {
  try {
    auto impl = std::make_unique<Impl>();
    impl->path = path;
    const Json j{impl->path};
    simdjson::dom::parser parser;
    element root;
    if (auto err = parser.parse(json.data(), json.size()).get(root); err != simdjson::SUCCESS) {
      j.Fail(json_internal::JsonProblem(json, err), "a Hugging Face tokenizer.json");
    }
    const object top = j.Obj(root, "(top level)");
    ParseModel(j, top, *impl);
    // Normalizer and pre-tokenizer.
    element e;
    if (j.Get(top, "normalizer", e)) ParseNormalizer(j, e, "normalizer", impl->norm);
    if (j.Get(top, "pre_tokenizer", e)) ParsePreTokenizer(j, e, "pre_tokenizer", impl->pre);
    ParseTruncation(j, top, for_encoder, *impl);
    // Post-processor: only its single-sequence form matters (one text at a time).
    if (j.Get(top, "post_processor", e) && e.type() != element_type::NULL_VALUE) {
      ParsePostProcessor(j, e, "post_processor", *impl);
    }
    if (j.Get(top, "added_tokens", e)) ParseAddedTokens(j, e, *impl);
    return HfTokenizer(std::move(impl));
  } catch (const Failure& f) {
    return Error::Input(f.message);
  }
}

std::vector<int> HfTokenizer::Encode(std::string_view text) const {
  std::vector<int> ids;
  Encode(text, ids);
  return ids;
}

void HfTokenizer::Encode(std::string_view text, std::vector<int>& ids) const {
  const Impl& im = *impl_;
  ids.clear();
  im.EncodeContent(text, ids);
  if (im.truncate > 0 && ids.size() > im.truncate) {
    if (im.truncate_left)
      ids.erase(ids.begin(), ids.end() - static_cast<std::ptrdiff_t>(im.truncate));
    else
      ids.resize(im.truncate);
  }
}

bool HfTokenizer::EncodeWithSpecials(std::string_view text, std::size_t max_length, std::vector<int>& ids,
                                     std::vector<std::uint8_t>& special) const {
  const Impl& im = *impl_;
  ids.clear();
  ids.insert(ids.end(), im.special_before.begin(), im.special_before.end());
  im.EncodeContent(text, ids);
  const std::size_t n_special = im.special_before.size() + im.special_after.size();
  // The file's own truncation is not applied: sentence-transformers and transformers replace it with
  // the max_length of the call (set_truncation_and_padding), cutting from the right.
  const std::size_t limit = max_length;
  bool cut = false;
  if (limit > 0) {
    const std::size_t room = limit > n_special ? limit - n_special : 0;
    const std::size_t content = ids.size() - im.special_before.size();
    if (content > room) {
      cut = true;
      ids.resize(im.special_before.size() + room);
    }
  }
  ids.insert(ids.end(), im.special_after.begin(), im.special_after.end());
  special.assign(ids.size(), 0);
  for (std::size_t i = 0; i < im.special_before.size(); ++i) special[i] = 1;
  for (std::size_t i = 0; i < im.special_after.size(); ++i) special[ids.size() - 1 - i] = 1;
  return cut;
}

std::size_t HfTokenizer::num_special_tokens() const {
  return impl_->special_before.size() + impl_->special_after.size();
}
bool HfTokenizer::has_post_processor() const { return impl_->has_post; }

void HfTokenizer::Impl::EncodeContent(std::string_view text, std::vector<int>& ids) const {
  const Impl& im = *this;
  U32 input = FromUtf8(text);

  std::vector<AddedMatcher::Span> raw_spans, norm_spans;
  std::vector<Piece> pieces;
  std::string buf;
  auto run_segment = [&](U32 seg, bool at_start) {
    for (const NormStep& n : im.norm) ApplyNorm(n, seg);
    if (seg.empty()) return;
    if (im.added_norm.empty()) {
      norm_spans.assign(1, {-1, 0, seg.size()});
    } else {
      im.added_norm.Split(seg, norm_spans);
    }
    for (const auto& sp : norm_spans) {
      if (sp.id >= 0) {
        ids.push_back(sp.id);
        continue;
      }
      pieces.clear();
      pieces.push_back(Piece{seg.substr(sp.b, sp.e - sp.b), at_start && sp.b == 0});
      for (const PreStep& p : im.pre) ApplyPre(p, pieces);
      for (const Piece& w : pieces) {
        if (!w.text.empty()) im.EncodeWord(w.text, ids, buf);
      }
    }
  };
  if (im.added_raw.empty()) {
    if (!input.empty()) run_segment(std::move(input), true);
  } else {
    im.added_raw.Split(input, raw_spans);
    for (const auto& sp : raw_spans) {
      if (sp.id >= 0) {
        ids.push_back(sp.id);
      } else {
        run_segment(input.substr(sp.b, sp.e - sp.b), sp.b == 0);
      }
    }
  }
}

std::string_view HfTokenizer::model_type() const {
  switch (impl_->model) {
    case Impl::Model::kWordPiece:
      return "WordPiece";
    case Impl::Model::kUnigram:
      return "Unigram";
    case Impl::Model::kWordLevel:
      return "WordLevel";
  }
  return "";
}

int HfTokenizer::unk_id() const { return impl_->unk; }
int HfTokenizer::vocab_size() const { return impl_->size; }

int HfTokenizer::TokenToId(std::string_view token) const {
  for (const auto& [content, id] : impl_->added_list) {
    if (content == token) return id;
  }
  return Lookup(impl_->vocab, token);
}

std::vector<std::string_view> HfTokenizer::Tokens() const {
  std::vector<std::string_view> out;
  out.reserve(impl_->vocab.size() + impl_->added_list.size());
  for (const auto& [tok, id] : impl_->vocab) out.push_back(tok);
  for (const auto& [content, id] : impl_->added_list) {
    if (impl_->vocab.find(std::string_view(content)) == impl_->vocab.end() &&
        std::find(out.begin() + static_cast<std::ptrdiff_t>(impl_->vocab.size()), out.end(),
                  std::string_view(content)) == out.end()) {
      out.push_back(content);
    }
  }
  return out;
}

}  // namespace kplab
