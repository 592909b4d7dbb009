// WordNet 3.0 database files (wndb(5WN)) read the way nltk 3.8's WordNetCorpusReader reads them, for
// what meteor_score asks: _load_lemma_pos_offset_map, _load_exception_map, _morphy, synsets() and the
// lemma names of _synset_from_pos_and_line.
#include "kplab/wordnet.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdlib>
#include <map>
#include <mutex>
#include <set>
#include <span>
#include <unordered_map>

#include "kplab/io.h"
#include "kplab/text.h"

namespace kplab {

namespace {

constexpr std::array<char, 4> kPos = {'n', 'v', 'a', 'r'};  // nltk's POS_LIST order
constexpr std::array<const char*, 4> kSuffix = {"noun", "verb", "adj", "adv"};
constexpr std::size_t kMemoLimit = 1 << 18;  // distinct words remembered by Synonyms
constexpr std::size_t kMemoWord = 64;        // longer words are looked up every time, not remembered

int PosIndex(char pos) {
  for (int i = 0; i < 4; ++i) {
    if (kPos[i] == pos) return i;
  }
  return -1;
}

// nltk's MORPHOLOGICAL_SUBSTITUTIONS (ADJ_SAT shares ADJ's; adverbs have none).
struct Rule {
  std::string_view old_suffix, new_suffix;
};
const std::vector<Rule>& Rules(int pos) {
  static const std::array<std::vector<Rule>, 4> rules = {{
      {{"s", ""},
       {"ses", "s"},
       {"ves", "f"},
       {"xes", "x"},
       {"zes", "z"},
       {"ches", "ch"},
       {"shes", "sh"},
       {"men", "man"},
       {"ies", "y"}},
      {{"s", ""}, {"ies", "y"}, {"es", "e"}, {"es", ""}, {"ed", "e"}, {"ed", ""}, {"ing", "e"}, {"ing", ""}},
      {{"er", ""}, {"est", ""}, {"er", "e"}, {"est", "e"}},
      {},
  }};
  return rules[pos];
}

std::string Where(const std::string& path, std::size_t line) { return path + ":" + std::to_string(line); }

Error Bad(const std::string& path, std::size_t line, const std::string& what) {
  return Error::Input(Where(path, line) + ": " + what + " (expected a WordNet 3.0 database file, wndb(5WN))");
}

bool ParseInt(std::string_view s, int base, std::int64_t* out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out, base);
  return ec == std::errc() && p == s.data() + s.size() && *out >= 0;
}

}  // namespace

namespace {

// The next field of a line (ASCII whitespace separates fields: the database is ASCII), or "" at its end.
std::string_view NextField(std::string_view& rest) {
  std::size_t b = 0;
  while (b < rest.size() && (rest[b] == ' ' || rest[b] == '\t' || rest[b] == '\r')) ++b;
  std::size_t e = b;
  while (e < rest.size() && rest[e] != ' ' && rest[e] != '\t' && rest[e] != '\r') ++e;
  const std::string_view field = rest.substr(b, e - b);
  rest.remove_prefix(e);
  return field;
}

// Calls fn(line, line_no) for each line of text.
template <typename Fn>
Status ForEachLine(std::string_view text, Fn fn) {
  std::size_t line_no = 0;
  while (!text.empty()) {
    const std::size_t nl = text.find('\n');
    const std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    if (Status s = fn(line, ++line_no); !s) return s;
  }
  return Status::Ok();
}

}  // namespace

struct WordNet::Impl {
  // A lemma's synset offsets per part of speech (kPos order): offsets[start[p], start[p] + count[p]).
  struct Entry {
    std::array<std::uint32_t, 4> start{};
    std::array<std::uint16_t, 4> count{};
  };
  std::string dir;
  std::array<std::string, 4> index_text, data_text;  // file bytes; lemmas and names are views into them
  std::unordered_map<std::string_view, Entry> index;
  std::vector<std::uint32_t> offsets;
  std::array<std::unordered_map<std::string, std::vector<std::string>>, 4> exceptions;
  std::size_t n_lemmas = 0;
  std::size_t longest_lemma = 0;  // bytes: no longer form can be in the index
  mutable std::mutex memo_mu;
  mutable std::unordered_map<std::string, std::vector<std::string_view>> memo;

  std::span<const std::uint32_t> Offsets(const Entry& e, int pos) const {
    return {offsets.data() + e.start[pos], e.count[pos]};
  }
  bool InIndex(std::string_view form, int pos) const {
    auto it = index.find(form);
    return it != index.end() && it->second.count[pos] > 0;
  }
  void SynsetNames(int pos, std::uint32_t offset, std::set<std::string_view>* out) const;
  Status ReadIndex(int pos, const std::string& path);
  Status ReadExceptions(int pos, const std::string& path);
  Status CheckOffsets(int pos);
};

// "lemma pos synset_cnt p_cnt [ptr_symbol...] sense_cnt tagsense_cnt synset_offset..." per line; lines
// starting with a space are the licence header.
Status WordNet::Impl::ReadIndex(int pos, const std::string& path) {
  index.reserve(index.size() + index_text[pos].size() / 40);
  return ForEachLine(index_text[pos], [&](std::string_view line, std::size_t line_no) -> Status {
    if (line.empty() || line.front() == ' ') return Status::Ok();
    std::string_view rest = line;
    const std::string_view lemma = NextField(rest), p = NextField(rest);
    std::int64_t n_synsets = 0, n_pointers = 0, n_senses = 0, tagged = 0;
    if (!ParseInt(NextField(rest), 10, &n_synsets) || n_synsets == 0 || n_synsets > 0xffff ||
        !ParseInt(NextField(rest), 10, &n_pointers)) {
      return Bad(path, line_no, "malformed index line");
    }
    for (std::int64_t i = 0; i < n_pointers; ++i) {
      if (NextField(rest).empty()) return Bad(path, line_no, "malformed index line");
    }
    if (!ParseInt(NextField(rest), 10, &n_senses) || n_senses != n_synsets || !ParseInt(NextField(rest), 10, &tagged)) {
      return Bad(path, line_no, "malformed index line");
    }
    if (p.size() != 1 || PosIndex(p[0]) != pos) return Bad(path, line_no, "part of speech '" + std::string(p) + "'");
    Entry& e = index[lemma];  // nltk's dict assignment: a lemma listed twice keeps its last line
    e.start[pos] = static_cast<std::uint32_t>(offsets.size());
    e.count[pos] = static_cast<std::uint16_t>(n_synsets);
    for (std::int64_t i = 0; i < n_synsets; ++i) {
      std::int64_t off = 0;
      if (!ParseInt(NextField(rest), 10, &off) || off > 0xffffffffLL) return Bad(path, line_no, "synset offset");
      offsets.push_back(static_cast<std::uint32_t>(off));
    }
    if (!NextField(rest).empty()) return Bad(path, line_no, "malformed index line");
    ++n_lemmas;
    longest_lemma = std::max(longest_lemma, lemma.size());
    return Status::Ok();
  });
}

Status WordNet::Impl::ReadExceptions(int pos, const std::string& path) {
  Result<std::string> text = ReadRegularFile(path, "a WordNet exception list");
  if (!text) return text.error();
  auto& map = exceptions[pos];
  return ForEachLine(*text, [&](std::string_view line, std::size_t) {
    std::string_view rest = line;
    const std::string_view inflected = NextField(rest);
    if (inflected.empty()) return Status::Ok();
    std::vector<std::string>& bases = map[std::string(inflected)];
    bases.clear();
    for (std::string_view f = NextField(rest); !f.empty(); f = NextField(rest)) bases.emplace_back(f);
    return Status::Ok();
  });
}

// Every offset an index names must start a line of the data file with that 8-digit offset (nltk checks
// it when it reads the synset), so that lookups cannot fail later.
Status WordNet::Impl::CheckOffsets(int pos) {
  const std::string_view data = data_text[pos];
  for (const auto& [lemma, e] : index) {
    for (std::uint32_t off : Offsets(e, pos)) {
      // In size_t: an offset near 2^32 must not wrap past the bounds check.
      const std::size_t at = off;
      bool ok = at + 9 <= data.size() && (at == 0 || data[at - 1] == '\n') && data[at + 8] == ' ';
      std::uint64_t v = 0;
      for (std::size_t k = 0; ok && k < 8; ++k) {
        const char c = data[at + k];
        ok = c >= '0' && c <= '9';
        v = v * 10 + static_cast<std::uint64_t>(c - '0');
      }
      if (!ok || v != off) {
        return Error::Input(dir + "/data." + kSuffix[pos] + ": no synset at offset " + std::to_string(off) +
                            " (named by index." + kSuffix[pos] + " for '" + std::string(lemma) +
                            "'; expected a WordNet 3.0 database, wndb(5WN))");
      }
    }
  }
  return Status::Ok();
}

// The lemma names of the synset at `offset` of data.POS: "offset lex_filenum ss_type w_cnt word lex_id
// [word lex_id...] p_cnt ...", w_cnt in hexadecimal; an adjective's marker "(a)", "(p)" or "(ip)" is
// dropped as nltk's regex (.*?)(\(.*\))?$ drops it; names with '_' (multi-word lemmas) are skipped.
void WordNet::Impl::SynsetNames(int pos, std::uint32_t offset, std::set<std::string_view>* out) const {
  std::string_view rest = std::string_view(data_text[pos]).substr(offset);
  rest = rest.substr(0, rest.find('\n'));
  rest = rest.substr(0, rest.find('|'));
  const std::vector<std::string_view> f = SplitWhitespace(rest);
  std::int64_t n = 0;
  if (f.size() < 4 || !ParseInt(f[3], 16, &n)) return;
  for (std::int64_t i = 0; i < n && 4 + 2 * i < static_cast<std::int64_t>(f.size()); ++i) {
    std::string_view name = f[4 + 2 * i];
    if (!name.empty() && name.back() == ')') {
      const std::size_t paren = name.find('(');
      if (paren != std::string_view::npos) name = name.substr(0, paren);
    }
    if (name.find('_') == std::string_view::npos) out->insert(name);
  }
}

WordNet::WordNet(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
WordNet::~WordNet() = default;

std::string WordNet::DefaultDir() {
  const char* env = std::getenv("KPLAB_WORDNET");
  return env != nullptr && *env != '\0' ? std::string(env) : std::string("/usr/share/wordnet");
}

Result<std::shared_ptr<const WordNet>> WordNet::Open(const std::string& dir) {
  auto impl = std::make_unique<Impl>();
  impl->dir = dir;
  for (int pos = 0; pos < 4; ++pos) {
    const std::string index_path = dir + "/index." + kSuffix[pos];
    const std::string data_path = dir + "/data." + kSuffix[pos];
    for (const std::string* path : {&index_path, &data_path}) {
      Result<std::string> text = ReadRegularFile(*path, "a WordNet 3.0 database file");
      if (!text) {
        return Error(text.error().kind,
                     "WordNet not found: " + text.error().message +
                         ". METEOR's synonym stage reads Debian's WordNet 3.0 (package wordnet-base): install it "
                         "with `scripts/setup.sh --extra wordnet` (or `apt-get install wordnet-base`), or set "
                         "KPLAB_WORDNET to a folder holding index.noun, data.noun, noun.exc, ...");
      }
      (path == &index_path ? impl->index_text[pos] : impl->data_text[pos]) = std::move(*text);
    }
    if (Status s = impl->ReadIndex(pos, index_path); !s) return s.error();
    if (Status s = impl->ReadExceptions(pos, dir + "/" + kSuffix[pos] + ".exc"); !s) return s.error();
  }
  for (int pos = 0; pos < 4; ++pos) {
    if (Status s = impl->CheckOffsets(pos); !s) return s.error();
  }
  return std::shared_ptr<const WordNet>(new WordNet(std::move(impl)));
}

Result<std::shared_ptr<const WordNet>> WordNet::Shared(const std::string& dir) {
  static std::mutex mu;
  static std::map<std::string, std::shared_ptr<const WordNet>> loaded;
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = loaded.find(dir); it != loaded.end()) return it->second;
  Result<std::shared_ptr<const WordNet>> wn = Open(dir);
  if (wn) loaded.emplace(dir, *wn);
  return wn;
}

std::size_t WordNet::index_size() const { return impl_->n_lemmas; }

// nltk's _morphy as a set. Its three steps (the exception list; the original and one application of the
// rules; further applications, level by level, until a level has a form in the index) are kept; forms
// are deduplicated across levels: a form met again at a later level was checked when first met, and
// what it leads to was reached one level earlier then, so the first level with a hit keeps the same
// hits. A form is a prefix of the word plus a suffix of at most three letters (no rule's new suffix is
// longer than its old one), held as (prefix length, suffix): a word of L letters has at most 20 (L + 1)
// forms, each visited once, and only those no longer than the longest lemma are looked up.
std::vector<std::string> WordNet::Morphy(std::string_view form_in, char pos_letter) const {
  const int pos = PosIndex(pos_letter);
  if (pos < 0) return {};
  const std::string form(form_in);
  const auto& exc = impl_->exceptions[pos];
  std::set<std::string> out;
  if (auto it = exc.find(form); it != exc.end()) {
    if (impl_->InIndex(form, pos)) out.insert(form);
    for (const std::string& f : it->second) {
      if (impl_->InIndex(f, pos)) out.insert(f);
    }
    return std::vector<std::string>(out.begin(), out.end());
  }
  struct Form {
    std::size_t prefix;
    std::string suffix;
    bool operator<(const Form& o) const { return prefix != o.prefix ? prefix < o.prefix : suffix < o.suffix; }
  };
  auto text = [&](const Form& f) { return form.substr(0, f.prefix) + f.suffix; };
  auto ends_with = [&](const Form& f, std::string_view old) {
    if (f.prefix + f.suffix.size() < old.size()) return false;
    const std::size_t from_prefix = old.size() > f.suffix.size() ? old.size() - f.suffix.size() : 0;
    const std::string tail = form.substr(f.prefix - from_prefix, from_prefix) +
                             f.suffix.substr(f.suffix.size() - (old.size() - from_prefix));
    return tail == old;
  };
  std::set<Form> seen = {{form.size(), ""}};
  auto apply = [&](const std::vector<Form>& forms) {
    std::vector<Form> next;
    for (const Form& f : forms) {
      for (const Rule& r : Rules(pos)) {
        if (!ends_with(f, r.old_suffix)) continue;
        Form g;
        if (r.old_suffix.size() > f.suffix.size()) {
          g = {f.prefix - (r.old_suffix.size() - f.suffix.size()), std::string(r.new_suffix)};
        } else {
          g = {f.prefix, f.suffix.substr(0, f.suffix.size() - r.old_suffix.size()) + std::string(r.new_suffix)};
        }
        if (seen.insert(g).second) next.push_back(std::move(g));
      }
    }
    return next;
  };
  auto hits = [&](const std::vector<Form>& forms) {
    for (const Form& f : forms) {
      if (f.prefix + f.suffix.size() > impl_->longest_lemma) continue;
      std::string t = text(f);
      if (impl_->InIndex(t, pos)) out.insert(std::move(t));
    }
    return !out.empty();
  };
  std::vector<Form> forms = apply({{form.size(), ""}});
  std::vector<Form> first = forms;
  first.push_back({form.size(), ""});
  if (hits(first)) return std::vector<std::string>(out.begin(), out.end());
  while (!forms.empty()) {
    forms = apply(forms);
    if (hits(forms)) break;
  }
  return std::vector<std::string>(out.begin(), out.end());
}

std::vector<std::string_view> WordNet::Synonyms(std::string_view word_in) const {
  const std::string word = Lower(word_in);  // synsets() lower-cases its argument
  {
    std::lock_guard<std::mutex> lock(impl_->memo_mu);
    if (auto it = impl_->memo.find(word); it != impl_->memo.end()) return it->second;
  }
  std::set<std::string_view> names;
  for (int pos = 0; pos < 4; ++pos) {
    for (const std::string& form : Morphy(word, kPos[pos])) {
      auto it = impl_->index.find(form);
      for (std::uint32_t off : impl_->Offsets(it->second, pos)) impl_->SynsetNames(pos, off, &names);
    }
  }
  std::vector<std::string_view> out(names.begin(), names.end());
  std::lock_guard<std::mutex> lock(impl_->memo_mu);
  if (impl_->memo.size() < kMemoLimit && word.size() <= kMemoWord) impl_->memo.emplace(word, out);
  return out;
}

}  // namespace kplab
