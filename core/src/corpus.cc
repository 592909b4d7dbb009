#include "kplab/corpus.h"

#include <algorithm>
#include <fstream>
#include <sstream>
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

// Interns tokens and memoizes their stems by token id.
class Normalizer {
 public:
  Normalizer(Corpus& corpus) : corpus_(corpus), stemmer_(corpus.profile.stem_mode) {}

  TokenId Token(std::string_view tok) { return corpus_.lex.Intern(tok); }

  TokenId StemOf(TokenId tok) {
    if (tok >= stem_of_.size()) stem_of_.resize(corpus_.lex.size() + 1024, kNoToken);
    TokenId& s = stem_of_[tok];
    if (s == kNoToken) {
      // Copy: Intern may grow the lexicon's storage (string_views stay valid: deque storage).
      const std::string stem = stemmer_.Stem(corpus_.lex.Str(tok));
      const TokenId id = corpus_.lex.Intern(stem);
      if (tok >= stem_of_.size()) stem_of_.resize(corpus_.lex.size() + 1024, kNoToken);
      stem_of_[tok] = id;
      return id;
    }
    return s;
  }

  // Source: tokens and stems, section starts.
  void Source(Document& doc, const RawDoc& raw) {
    const Profile& p = corpus_.profile;
    auto add_tokens = [&](const auto& toks) {
      for (const auto& t : toks) {
        const TokenId id = Token(t);
        doc.src_tokens.push_back(id);
        doc.src_stems.push_back(StemOf(id));
      }
    };
    const std::string title = Lower(raw.title);
    const std::string body = Lower(raw.body);
    if (!raw.pretokenized) {
      doc.section_starts.push_back(0);
      add_tokens(WordTokenize(title));
      doc.section_starts.push_back(static_cast<std::uint32_t>(doc.src_tokens.size()));
      add_tokens(WordTokenize(body));
      return;
    }
    switch (p.source_split) {
      case SourceSplit::kPySplitSections:
        doc.section_starts.push_back(0);
        add_tokens(SplitWhitespace(title));
        doc.section_starts.push_back(static_cast<std::uint32_t>(doc.src_tokens.size()));
        add_tokens(SplitWhitespace(body));
        break;
      case SourceSplit::kPySplitSpaceJoined:
        // title.strip().split(' ') + body.strip().split(' '): one sequence, the separator dropped.
        doc.section_starts.push_back(0);
        add_tokens(SplitSpace(Strip(title)));
        add_tokens(SplitSpace(Strip(body)));
        break;
    }
  }

  // One keyphrase string -> Keyphrase. Returns false if it is dropped as empty.
  bool Phrase(std::string_view piece, Keyphrase& kp) {
    const Profile& p = corpus_.profile;
    std::string s(piece);
    if (p.kpeval_cleanup) {
      s = ReplaceAll(s, " ##", "");
      s = ReplaceAll(s, "[ digit ]", "[digit]");
    }
    s = Lower(Strip(s));
    if (s.empty() && p.drop_empty) return false;
    kp.tokens.clear();
    kp.stems.clear();
    std::string key;
    auto add = [&](std::string_view t) {
      const TokenId id = Token(t);
      kp.tokens.push_back(id);
      const TokenId st = StemOf(id);
      kp.stems.push_back(st);
      if (kp.stems.size() > 1) key.push_back(' ');
      key.append(corpus_.lex.Str(st));
    };
    if (p.keyphrase_split_space) {
      for (auto t : SplitSpace(s)) add(t);
    } else {
      for (auto t : SplitWhitespace(s)) add(t);
    }
    kp.key = corpus_.lex.Intern(key);
    kp.surface = std::move(s);
    return true;
  }

  static std::string ReplaceAll(std::string s, std::string_view from, std::string_view to) {
    std::size_t pos = 0;
    while ((pos = s.find(from, pos)) != std::string::npos) {
      s.replace(pos, from.size(), to);
      pos += to.size();
    }
    return s;
  }

 private:
  Corpus& corpus_;
  PorterStemmer stemmer_;
  std::vector<TokenId> stem_of_;
};

// Splits pieces further on '/' (ExHiRD).
std::vector<std::string> SlashSplit(const std::vector<std::string>& pieces) {
  std::vector<std::string> out;
  for (const auto& piece : pieces) {
    for (auto part : SplitOn(piece, "/")) out.emplace_back(part);
  }
  return out;
}

}  // namespace

bool Corpus::IsPresent(const Document& doc, const std::vector<TokenId>& stems) const {
  if (stems.empty() || !doc.has_text) return false;
  const auto& src = doc.src_stems;
  const std::size_t n = stems.size();
  const bool cross = profile.match_across_sections || doc.section_starts.size() <= 1;
  for (std::size_t s = 0; s < doc.section_starts.size(); ++s) {
    const std::size_t begin = doc.section_starts[s];
    const std::size_t end = (cross || s + 1 == doc.section_starts.size())
                                ? src.size()
                                : doc.section_starts[s + 1];
    if (end < begin + n) {
      if (cross) break;
      continue;
    }
    for (std::size_t i = begin; i + n <= end; ++i) {
      if (src[i] != stems[0]) continue;
      if (std::equal(stems.begin(), stems.end(), src.begin() + i)) return true;
    }
    if (cross) break;
  }
  return false;
}

Prmu Corpus::Classify(const Document& doc, const Keyphrase& kp) const {
  if (kp.stems.empty()) return Prmu::kPresent;  // boudinfl: an empty keyphrase counts as present
  if (IsPresent(doc, kp.stems)) return Prmu::kPresent;
  std::size_t seen = 0;
  for (TokenId s : kp.stems) {
    if (std::find(doc.src_stems.begin(), doc.src_stems.end(), s) != doc.src_stems.end()) ++seen;
  }
  if (seen == kp.stems.size()) return Prmu::kReordered;
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
  Normalizer norm(corpus);
  corpus.docs.resize(dataset.docs.size());
  std::unordered_set<TokenId> seen;
  for (std::size_t i = 0; i < dataset.docs.size(); ++i) {
    const RawDoc& raw = dataset.docs[i];
    Document& doc = corpus.docs[i];
    doc.id = raw.id;
    doc.has_text = raw.has_text;
    if (raw.has_text) norm.Source(doc, raw);

    // References: dedup by key, first wins; alternatives add keys.
    seen.clear();
    std::vector<std::vector<std::string>> slash_refs;
    if (profile.split_slash) {  // each '/'-part of a reference becomes a reference of its own
      for (const auto& alternatives : raw.refs) {
        if (alternatives.empty()) continue;
        for (auto part : SplitOn(alternatives[0], "/")) slash_refs.push_back({std::string(part)});
      }
    }
    for (const auto& alternatives : profile.split_slash ? slash_refs : raw.refs) {
      Keyphrase kp;
      bool have = false;
      for (std::size_t a = 0; a < alternatives.size(); ++a) {
        Keyphrase alt;
        if (!norm.Phrase(alternatives[a], alt)) continue;
        if (!have) {
          kp = std::move(alt);
          have = true;
        } else if (alt.key != kp.key) {
          kp.alt_keys.push_back(alt.key);
        }
      }
      if (!have) continue;
      if (!seen.insert(kp.key).second) continue;
      kp.present = corpus.IsPresent(doc, kp.stems);
      doc.refs.push_back(std::move(kp));
    }

    if (!predictions) continue;
    const RawPrediction& rp = predictions->docs[i];
    std::vector<std::string> pieces = rp.phrases;
    doc.n_pred_pieces = static_cast<int>(pieces.size());
    if (profile.empty_line_is_none && pieces.size() == 1 && Strip(pieces[0]).empty()) pieces.clear();
    if (profile.split_slash) pieces = SlashSplit(pieces);
    bool after_peos = false;
    int kept = 0;
    seen.clear();
    std::unordered_set<TokenId> seen_absent;  // ExHiRD: dedup per present/absent part
    for (std::size_t j = 0; j < pieces.size(); ++j) {
      if (!profile.keep_peos && Strip(pieces[j]) == kPeos) {
        after_peos = true;
        continue;
      }
      if (profile.max_predictions > 0 && kept >= profile.max_predictions) break;
      Keyphrase kp;
      if (!norm.Phrase(pieces[j], kp)) continue;
      ++kept;
      bool invalid = profile.invalid_drops_empty && kp.surface.empty();
      for (TokenId t : kp.tokens) {
        const auto tok = corpus.lex.Str(t);
        for (const auto& bad : profile.invalid_tokens) invalid = invalid || tok == bad;
      }
      if (invalid) continue;
      kp.after_peos = after_peos;
      if (j < rp.scores.size()) kp.score = rp.scores[j];
      kp.present = corpus.IsPresent(doc, kp.stems);
      auto& dedup_set = (profile.dedup == Dedup::kStemKeyPerPart && !kp.present) ? seen_absent : seen;
      if (!dedup_set.insert(kp.key).second) continue;
      doc.preds.push_back(std::move(kp));
    }
  }
  return corpus;
}

Status AttachSources(RawDataset& dataset, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error{fmt::format("{}: cannot open (expected a source file, one document a line)", path)};
  std::string line;
  std::size_t i = 0;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (i >= dataset.docs.size()) {
      return Error{fmt::format("{}:{}: more source lines than the {} documents of {} (expected at most {})",
                               path, i + 1, dataset.docs.size(), dataset.path, dataset.docs.size())};
    }
    std::size_t bad = 0;
    if (!ValidUtf8(line, &bad)) {
      return Error{fmt::format("{}:{}: invalid UTF-8 at byte {} (expected UTF-8 text)", path, i + 1, bad + 1)};
    }
    RawDoc& d = dataset.docs[i];
    const auto pos = line.find("<eos>");
    d.title = pos == std::string::npos ? std::string() : line.substr(0, pos);
    d.body = pos == std::string::npos ? line : line.substr(pos + 5);
    d.separator = pos == std::string::npos ? "" : "<eos>";
    d.pretokenized = true;
    d.has_text = true;
    ++i;
  }
  return Status::Ok();
}

}  // namespace kplab
