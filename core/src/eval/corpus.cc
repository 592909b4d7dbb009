#include "kplab/corpus.h"

#include <algorithm>
#include <fstream>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "kplab/stem.h"
#include "kplab/text.h"

namespace kplab {

const char* PrmuName(Prmu p) {
  switch (p) {
    case Prmu::kPresent: return "P";
    case Prmu::kReordered: return "R";
    case Prmu::kMixed: return "M";
    case Prmu::kUnseen: return "U";
  }
  return "?";
}

namespace {

constexpr std::string_view kPeos = "<peos>";

std::string ReplaceAll(std::string s, std::string_view from, std::string_view to) {
  std::size_t pos = 0;
  while ((pos = s.find(from, pos)) != std::string::npos) {
    s.replace(pos, from.size(), to);
    pos += to.size();
  }
  return s;
}

// ExHiRD's keyphrase-line markers, replaced in its order (a deletion can create a later marker):
// split points become ';', <eokp> and <blank> are deleted.
constexpr std::pair<std::string_view, std::string_view> kExhirdReplacements[] = {
    {"/", ";"}, {"<eokp>", ""}, {"<p_start>", ";"}, {"<a_start>", ";"},
    {"<blank>", ""}, {"<p_end>", ";"}, {"<a_end>", ";"}};

std::vector<std::string> ExhirdPieces(const std::vector<std::string>& pieces) {
  std::vector<std::string> out;
  for (std::string piece : pieces) {
    for (const auto& [marker, with] : kExhirdReplacements) piece = ReplaceAll(std::move(piece), marker, with);
    for (auto part : SplitOn(piece, ";")) {
      const auto t = Strip(part);
      if (t.empty() || t == "<absent_end>") continue;
      out.emplace_back(t);
    }
  }
  return out;
}

// Interns tokens, memoizes stems by token id and normalized phrases by raw piece.
class Normalizer {
 public:
  // raw_text: the dataset is untokenized text, so keyphrases go through the same word tokenizer as
  // the source (as boudinfl's PRMU does), or "children's" could never match "children 's".
  Normalizer(Corpus& corpus, bool raw_text)
      : corpus_(corpus), stemmer_(corpus.profile.stem_mode), raw_text_(raw_text) {}

  TokenId Token(std::string_view tok) { return corpus_.lex.Intern(tok); }

  TokenId StemOf(TokenId tok) {
    if (tok >= stem_of_.size()) stem_of_.resize(corpus_.lex.size() + 1024, kNoToken);
    if (stem_of_[tok] != kNoToken) return stem_of_[tok];
    // The peers stem w.strip() (nltk lower-cases inside stem()); a token can only hold other
    // whitespace when it came from split(' ').
    const std::string stem = stemmer_.Stem(Strip(corpus_.lex.Str(tok)));
    const TokenId id = corpus_.lex.Intern(stem);
    if (tok >= stem_of_.size()) stem_of_.resize(corpus_.lex.size() + 1024, kNoToken);
    stem_of_[tok] = id;
    return id;
  }

  void Source(Document& doc, const RawDoc& raw) {
    const Profile& p = corpus_.profile;
    auto add_tokens = [&](const auto& toks) {
      for (const auto& t : toks) {
        const TokenId id = Token(t);
        doc.src_tokens.push_back(id);
        doc.src_stems.push_back(StemOf(id));
      }
    };
    auto section = [&] { doc.section_starts.push_back(static_cast<std::uint32_t>(doc.src_tokens.size())); };
    const std::string title = p.lowercase ? Lower(raw.title) : raw.title;
    const std::string body = p.lowercase ? Lower(raw.body) : raw.body;
    auto mark_title = [&](std::size_t skip) {
      doc.title_end = static_cast<std::uint32_t>(doc.src_tokens.size());
      doc.body_start = doc.title_end + static_cast<std::uint32_t>(skip);
    };
    if (!raw.pretokenized) {  // raw text: kplab's word tokenizer, title and body as sections
      section();
      add_tokens(WordTokenize(title));
      mark_title(0);
      section();
      add_tokens(WordTokenize(body));
      return;
    }
    switch (p.source_split) {
      case SourceSplit::kSections:
        section();
        add_tokens(SplitWhitespace(title));
        mark_title(0);
        section();
        add_tokens(SplitWhitespace(body));
        break;
      case SourceSplit::kJoinedSplitSpace: {
        section();
        const auto title_tokens = SplitSpace(Strip(title));
        add_tokens(title_tokens);
        // split(' ') of an empty title is one empty token: a token of the sequence, not a title.
        if (Strip(title).empty()) doc.title_end = 0, doc.body_start = static_cast<std::uint32_t>(doc.src_tokens.size());
        else mark_title(0);
        add_tokens(SplitSpace(Strip(body)));
        break;
      }
      case SourceSplit::kWholeLine: {
        section();
        if (raw.separator.empty()) {
          mark_title(0);
          add_tokens(SplitWhitespace(body));
        } else {  // the line "title SEP body", split as one: the separator stays a token
          add_tokens(SplitWhitespace(title));
          mark_title(1);
          add_tokens(SplitWhitespace(raw.separator + " " + body));
        }
        break;
      }
    }
  }

  // One keyphrase piece -> its interned Phrase, or nullptr if the profile drops it as empty.
  // Memoized on the raw piece (separately for unstemmed references).
  const Phrase* Intern(std::string_view piece, bool stem) {
    Memo& memo = memo_[stem ? 1 : 0];
    const TokenId raw = memo.pieces.Intern(piece);
    if (raw >= memo.phrases.size()) memo.phrases.resize(raw + 1, kUnset);
    if (memo.phrases[raw] == kUnset) memo.phrases[raw] = Normalize(piece, stem);
    return memo.phrases[raw];
  }

 private:
  const Phrase* Normalize(std::string_view piece, bool stem) {
    const Profile& p = corpus_.profile;
    const std::string_view stripped = Strip(piece);
    std::string s;
    if (p.lowercase && !IsAscii(stripped)) {
      s = Lower(stripped);
    } else {
      s.assign(stripped);
      if (p.lowercase) {
        for (char& ch : s) {
          if (ch >= 'A' && ch <= 'Z') ch = static_cast<char>(ch - 'A' + 'a');
        }
      }
    }
    if (p.kpeval_cleanup) {
      s = ReplaceAll(std::move(s), " ##", "");
      s = ReplaceAll(std::move(s), "[ digit ]", "[digit]");
    }
    if (s.empty() && p.drop_empty) return nullptr;
    Phrase& ph = corpus_.phrases.emplace_back();
    ph.id = static_cast<std::uint32_t>(corpus_.phrases.size() - 1);
    const bool same_join = p.dedup_join == " ";
    key_.clear();
    dedup_.clear();
    auto add = [&](std::string_view t) {
      const TokenId id = Token(t);
      ph.tokens.push_back(id);
      const TokenId st = stem ? StemOf(id) : id;
      ph.stems.push_back(st);
      const std::string_view sv = corpus_.lex.Str(st);
      if (!sv.empty()) ph.blank = false;
      if (ph.stems.size() > 1) {
        key_.push_back(' ');
        if (!same_join) dedup_.append(p.dedup_join);
      }
      key_.append(sv);
      if (!same_join) dedup_.append(sv);
    };
    if (raw_text_) {
      for (const auto& t : WordTokenize(s)) add(t);
    } else {
      tokens_.clear();
      if (p.keyphrase_split_space) {
        for (auto t : SplitSpace(s)) tokens_.push_back(t);
      } else {
        for (auto t : SplitWhitespace(s)) tokens_.push_back(t);
      }
      ph.tokens.reserve(tokens_.size());
      ph.stems.reserve(tokens_.size());
      for (auto t : tokens_) add(t);
    }
    ph.key = corpus_.lex.Intern(key_);
    ph.dedup_key = same_join ? ph.key : corpus_.lex.Intern(dedup_);
    ph.surface = std::move(s);
    return &ph;
  }

  static inline const Phrase* const kUnset = reinterpret_cast<const Phrase*>(1);
  struct Memo {
    Lexicon pieces;
    std::vector<const Phrase*> phrases;
  };
  Corpus& corpus_;
  PorterStemmer stemmer_;
  bool raw_text_;
  std::string key_, dedup_;                // scratch buffers of Normalize
  std::vector<std::string_view> tokens_;
  std::vector<TokenId> stem_of_;
  Memo memo_[2];
};

bool IsInvalid(const Corpus& c, const Phrase& ph) {
  const Profile& p = c.profile;
  for (TokenId t : ph.stems) {
    const auto s = c.lex.Str(t);
    for (const auto& bad : p.invalid_tokens) {
      if (s == bad) return true;
    }
  }
  return !p.invalid_substring.empty() &&
         c.lex.Str(ph.key).find(p.invalid_substring) != std::string_view::npos;
}

std::string AsciiLower(std::string s) {
  for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

}  // namespace

std::optional<std::size_t> Corpus::FirstOccurrence(const Document& doc, const std::vector<TokenId>& stems) const {
  if (stems.empty() || !doc.has_text) return std::nullopt;
  if (std::all_of(stems.begin(), stems.end(), [&](TokenId t) { return lex.Str(t).empty(); })) return std::nullopt;
  const auto& src = doc.src_stems;
  const std::size_t n = stems.size();
  const bool cross = profile.match_across_sections || doc.section_starts.size() <= 1;
  // Sections are in source order, so the first section with a match has the earliest one.
  const std::size_t n_sections = cross ? 1 : doc.section_starts.size();
  for (std::size_t s = 0; s < n_sections; ++s) {
    const std::size_t begin = cross ? 0 : doc.section_starts[s];
    const std::size_t end = (cross || s + 1 == doc.section_starts.size()) ? src.size() : doc.section_starts[s + 1];
    for (std::size_t i = begin; i + n <= end; ++i) {
      if (src[i] == stems[0] && std::equal(stems.begin(), stems.end(), src.begin() + static_cast<std::ptrdiff_t>(i))) {
        return i;
      }
    }
  }
  return std::nullopt;
}

Prmu Corpus::Classify(const Document& doc, const Keyphrase& kp) const {
  if (kp.phrase->blank) return Prmu::kPresent;  // boudinfl: an empty keyphrase counts as present
  if (IsPresent(doc, kp.stems())) return Prmu::kPresent;
  std::size_t seen = 0;
  for (TokenId s : kp.stems()) {
    if (std::find(doc.src_stems.begin(), doc.src_stems.end(), s) != doc.src_stems.end()) ++seen;
  }
  if (seen == kp.stems().size()) return Prmu::kReordered;
  if (seen > 0) return Prmu::kMixed;
  return Prmu::kUnseen;
}

Result<Corpus> BuildCorpus(const RawDataset& dataset, const RawPredictions* predictions,
                           const Profile& profile) {
  if (predictions && predictions->docs.size() != dataset.docs.size()) {
    return Error{fmt::format("{}: {} prediction lines for {} documents of {} (expected one per document)",
                             predictions->path, predictions->docs.size(), dataset.docs.size(),
                             dataset.path)};
  }
  Corpus corpus;
  corpus.profile = profile;
  corpus.dataset_name = dataset.name;
  corpus.dataset_path = dataset.path;
  corpus.dataset_format = dataset.format;
  corpus.dataset_hash = dataset.content_hash;
  if (predictions) {
    corpus.has_predictions = true;
    corpus.predictions_path = predictions->path;
    corpus.predictions_hash = predictions->content_hash;
  }
  // ExHiRD does not stem the references when the keywords file's path contains "semeval" (they are
  // released stemmed).
  bool stem_refs = true;
  if (profile.semeval_refs_as_given) {
    for (const auto& f : dataset.files) {
      const std::string lower = AsciiLower(f);
      if (lower.find("semeval") != std::string::npos && lower.find("keyword") != std::string::npos) stem_refs = false;
    }
  }
  // References released stemmed (RawDoc::refs_stemmed: SemEval *.stem.final, --refs-stemmed) are
  // matched as given: stemming "databas" again gives "databa" and a correct prediction stops matching.
  corpus.refs_stemmed = std::any_of(dataset.docs.begin(), dataset.docs.end(),
                                    [](const RawDoc& d) { return d.refs_stemmed; });
  if (stem_refs && !corpus.refs_stemmed && dataset.format == "meng") {
    bool semeval = AsciiLower(dataset.name).find("semeval") != std::string::npos;
    for (const auto& f : dataset.files) semeval = semeval || AsciiLower(f).find("semeval") != std::string::npos;
    if (semeval) {
      corpus.warnings.push_back(
          "warning: Meng-2017's SemEval gold is released Porter-stemmed and stemming it again changes some "
          "references ('databas' -> 'databa'), so correct predictions stop matching; add --refs-stemmed "
          "(kenchan0226's -target_already_stemmed) to match the references as given");
    }
  }
  const bool raw_text = std::any_of(dataset.docs.begin(), dataset.docs.end(),
                                    [](const RawDoc& d) { return d.has_text && !d.pretokenized; });
  Normalizer norm(corpus, raw_text);
  corpus.docs.resize(dataset.docs.size());
  // Dedup sets are usually small (tens of keyphrases): a vector scan beats hashing; a hash set takes
  // over for long lists so a line with thousands of predictions stays linear.
  struct SmallSet {
    std::vector<TokenId> items;
    std::unordered_set<TokenId> big;
    void clear() {
      items.clear();
      big.clear();
    }
    bool insert(TokenId t) {
      if (items.size() < 64) {
        if (std::find(items.begin(), items.end(), t) != items.end()) return false;
        items.push_back(t);
        if (items.size() == 64) big.insert(items.begin(), items.end());
        return true;
      }
      return big.insert(t).second;
    }
  } seen;
  std::vector<std::uint32_t> dup_index;  // per kept prediction piece: its index in doc.preds
  std::unordered_map<std::size_t, std::vector<std::uint32_t>> dup_indices;  // docs with repeats
  for (std::size_t i = 0; i < dataset.docs.size(); ++i) {
    const RawDoc& raw = dataset.docs[i];
    Document& doc = corpus.docs[i];
    doc.id = raw.id;
    doc.has_text = raw.has_text;
    if (raw.has_text) norm.Source(doc, raw);

    // References: each with its alternative forms; dedup by key, first wins.
    std::vector<std::vector<std::string>> split_refs;
    if (profile.exhird_markers) {  // each split part becomes a reference of its own
      for (const auto& alternatives : raw.refs) {
        if (alternatives.empty()) continue;
        for (auto& part : ExhirdPieces({alternatives[0]})) split_refs.push_back({std::move(part)});
      }
    }
    seen.clear();
    for (const auto& alternatives : profile.exhird_markers ? split_refs : raw.refs) {
      Keyphrase kp;
      for (const auto& form : alternatives) {
        const Phrase* ph = norm.Intern(form, stem_refs && !raw.refs_stemmed);
        if (!ph) continue;
        if (!kp.phrase) {
          kp.phrase = ph;
        } else if (ph->key != kp.key() &&
                   std::find(kp.alt_keys.begin(), kp.alt_keys.end(), ph->key) == kp.alt_keys.end()) {
          kp.alt_keys.push_back(ph->key);
        }
      }
      if (!kp.phrase || (profile.dedup && !seen.insert(kp.phrase->dedup_key))) continue;
      kp.present = corpus.IsPresent(doc, kp.stems());
      doc.refs.push_back(std::move(kp));
    }

    if (!predictions) continue;
    const RawPrediction& rp = predictions->docs[i];
    doc.n_pred_pieces = static_cast<int>(rp.phrases.size());
    doc.one2set = rp.one2set;
    // Token probabilities follow their piece; ExHiRD's marker splitting re-cuts the pieces, so they
    // cannot be attached then (as scores).
    const bool with_probs = !rp.token_probs.empty() && !profile.exhird_markers;
    std::size_t n_pieces = rp.phrases.size();
    if (profile.max_pieces > 0) n_pieces = std::min(n_pieces, static_cast<std::size_t>(profile.max_pieces));
    if (profile.empty_line_is_none && n_pieces == 1 && Strip(rp.phrases[0]).empty()) n_pieces = 0;
    std::vector<std::string> exhird_pieces;
    if (profile.exhird_markers) {
      exhird_pieces = ExhirdPieces({rp.phrases.begin(), rp.phrases.begin() + static_cast<std::ptrdiff_t>(n_pieces)});
      n_pieces = exhird_pieces.size();
    }
    const std::vector<std::string>& pieces = profile.exhird_markers ? exhird_pieces : rp.phrases;
    bool after_peos = false;
    seen.clear();
    dup_index.clear();
    bool any_dup = false;
    for (std::size_t j = 0; j < n_pieces; ++j) {
      const Phrase* ph = norm.Intern(pieces[j], true);
      if (!ph) continue;
      if (ph->surface == kPeos || (!ph->stems.empty() && corpus.lex.Str(ph->stems[0]) == kPeos)) {
        const bool exact = ph->surface == kPeos;
        if (exact) after_peos = true;
        if (profile.peos == "first_token" || (profile.peos == "piece" && exact) ||
            (profile.peos == "piece_in_lines" && exact && rp.from_line)) {
          continue;
        }
      }
      if (IsInvalid(corpus, *ph)) continue;
      if (profile.dedup && !seen.insert(ph->dedup_key)) {
        for (std::size_t f = 0; f < doc.preds.size(); ++f) {
          if (doc.preds[f].phrase->dedup_key == ph->dedup_key) {
            dup_index.push_back(static_cast<std::uint32_t>(f));
            break;
          }
        }
        any_dup = true;
        continue;
      }
      dup_index.push_back(static_cast<std::uint32_t>(doc.preds.size()));
      Keyphrase kp;
      kp.phrase = ph;
      kp.after_peos = after_peos;
      if (j < rp.scores.size() && !profile.exhird_markers) kp.score = rp.scores[j];
      kp.present = corpus.IsPresent(doc, kp.stems());
      doc.preds.push_back(std::move(kp));
      if (with_probs) doc.pred_probs.push_back(rp.token_probs[j]);
    }
    if (any_dup) dup_indices[i] = dup_index;
  }
  for (auto& [i, indices] : dup_indices) {
    Document& doc = corpus.docs[i];
    doc.pred_view_dups.reserve(indices.size());
    for (std::uint32_t f : indices) doc.pred_view_dups.push_back(&doc.preds[f]);
  }
  for (Document& doc : corpus.docs) {
    if (!doc.pred_probs.empty() && doc.pred_probs.size() == doc.preds.size()) {
      for (std::size_t j = 0; j < doc.preds.size(); ++j) doc.preds[j].probs = &doc.pred_probs[j];
    }
    for (const Keyphrase& k : doc.preds) {
      doc.pred_view[0].push_back(&k);
      doc.pred_view[k.present ? 1 : 2].push_back(&k);
    }
    for (const Keyphrase& k : doc.refs) {
      doc.ref_view[0].push_back(&k);
      doc.ref_view[k.present ? 1 : 2].push_back(&k);
    }
  }
  return corpus;
}

Status AttachSources(RawDataset& dataset, const std::string& path) {
  constexpr std::string_view kExpected = "a source file, one document a line";
  // A directory, FIFO or /dev/zero is refused before it is read (it used to attach nothing, or never end).
  Result<std::string> read = ReadRegularFile(path, kExpected);
  if (!read) return Error{read.error().message};
  const std::string& file = *read;
  std::string_view text = file;
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);  // as the importers do (docs/formats.md)
  if (text.empty()) return Error{fmt::format("{}: no source lines (expected {})", path, kExpected)};
  std::string line;
  std::size_t i = 0;
  for (std::size_t start = 0; start < text.size(); ++i) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    line.assign(text.substr(start, end - start));
    start = end + 1;
    if (!line.empty() && line.back() == '\r' && end < text.size()) line.pop_back();
    if (line.find('\r') != std::string::npos) {
      return Error{fmt::format("{}:{}: carriage return (CR) without a line feed after it (expected LF or CRLF "
                               "line ends; convert CR-only files with `tr '\\r' '\\n'`)",
                               path, i + 1)};
    }
    if (i >= dataset.docs.size()) {
      return Error{fmt::format("{}:{}: more source lines than the {} documents of {} (expected at most {})",
                               path, i + 1, dataset.docs.size(), dataset.path, dataset.docs.size())};
    }
    std::size_t bad = 0;
    if (!ValidUtf8(line, &bad)) {
      return Error{fmt::format("{}:{}: invalid UTF-8 at byte {} (expected UTF-8 text)", path, i + 1, bad + 1)};
    }
    RawDoc& d = dataset.docs[i];
    // Same split as the line importers: at the first " <eos> ", one space dropped on each side.
    const auto pos = line.find("<eos>");
    if (pos == std::string::npos) {
      d.title.clear();
      d.body = line;
      d.separator.clear();
    } else {
      d.title = line.substr(0, pos > 0 && line[pos - 1] == ' ' ? pos - 1 : pos);
      const std::size_t after = pos + 5 < line.size() && line[pos + 5] == ' ' ? pos + 6 : pos + 5;
      d.body = line.substr(std::min(after, line.size()));
      d.separator = "<eos>";
    }
    d.pretokenized = true;
    d.has_text = true;
  }
  // The attached text is part of what was evaluated: it enters the dataset's content hash (the file's
  // bytes with a final newline, as when it was read line by line).
  const std::string hashed = file.ends_with('\n') ? file : file + '\n';
  dataset.content_hash = Sha256Hex(dataset.content_hash + "\nsource:" + Sha256Hex(hashed));
  dataset.files.push_back(path);
  return Status::Ok();
}

}  // namespace kplab
