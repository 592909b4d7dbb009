#include "kplab/homog_corpus.h"

#include <algorithm>
#include <span>
#include <unordered_map>

#include <fmt/format.h>

#include "kplab/io_memory.h"
#include "kplab/sha256.h"
#include "kplab/text.h"

namespace kplab::homog {

std::vector<std::vector<std::uint32_t>> GoldSets(const Corpus& c, bool stem) {
  RequireCorpusIds(c, "homogeneity (GoldSets)");
  std::vector<std::vector<std::uint32_t>> sets(c.docs.size());
  for (std::size_t i = 0; i < c.docs.size(); ++i) {
    for (const Keyphrase& r : c.docs[i].refs) {
      if (!r.phrase->blank()) sets[i].push_back(stem ? r.key() : r.phrase->id);
    }
  }
  return sets;
}

SystemCounts CountSystem(const Corpus& c, std::span<const std::size_t> docs, std::size_t top_k) {
  RequireCorpusIds(c, "homogeneity (CountSystem)");
  SystemCounts out;
  out.docs = docs.size();
  for (std::size_t i : docs) {
    const Document& d = c.docs[i];
    if (!d.has_text) continue;  // present/absent is undefined without the source
    ++out.docs_with_text;
    const std::size_t n = top_k == 0 ? d.preds.size() : std::min(top_k, d.preds.size());
    for (const Keyphrase& k : d.preds.first(n)) {
      ++out.preds;
      out.absent += !k.present();
      ++out.prmu[static_cast<int>(c.Classify(d, k))];
    }
  }
  return out;
}

GenericityReport CorpusGenericity(const Corpus& c, std::span<const DocPair> pairs, bool stem) {
  RequireCorpusIds(c, "homogeneity (CorpusGenericity)");
  const auto sets = GoldSets(c, stem);
  std::unordered_map<std::uint32_t, std::size_t> words;  // key -> words of its first phrase
  for (const auto& d : c.docs) {
    for (const Keyphrase& r : d.refs) words.emplace(stem ? r.key() : r.phrase->id, r.stems().size());
  }
  return ComputeGenericity(sets, pairs, [&](std::uint32_t key) { return words.at(key); });
}

Result<GoldPairs> MineGoldPairs(const Corpus& c, const GoldPairOptions& options) {
  RequireCorpusIds(c, "homogeneity (MineGoldPairs)");
  auto pairs = MinePairs(GoldSets(c, options.stem), options.theta);
  if (!pairs.ok()) return pairs.error();
  GoldPairs out;
  out.theta = options.theta;
  out.partners.resize(c.docs.size());
  out.identical.assign(c.docs.size(), 0);
  for (const auto& p : *pairs) {
    // Identical gold sets: in KP20k almost always the same record twice (docs/homogeneity.md).
    if (p.shared == p.uni) {
      ++out.n_identical;
      ++out.identical[p.a];
      if (!options.keep_identical) continue;
    }
    out.partners[p.a].emplace_back(p.b, p.jaccard);
    ++out.n_pairs;
  }
  return out;
}

Result<GoldVocabulary> BuildGoldVocabulary(const Corpus& c, int dims, const std::string& fingerprint,
                                           std::size_t n_rows, const float* vecs,
                                           const std::function<std::int32_t(const Phrase&)>& row_of) {
  RequireCorpusIds(c, "homogeneity (BuildGoldVocabulary)");
  std::vector<std::int64_t> labels;
  std::vector<float> rows;
  std::vector<std::uint8_t> seen(n_rows, 0);
  for (const Document& d : c.docs) {
    for (const Keyphrase& r : d.refs) {
      const std::int32_t row = row_of(*r.phrase);
      if (row < 0 || seen[row]) continue;
      seen[row] = 1;
      labels.push_back(r.phrase->id);
      const float* v = vecs + static_cast<std::size_t>(row) * dims;
      rows.insert(rows.end(), v, v + dims);
    }
  }
  AnnIndex::Options opt;
  opt.ef_construction = 100;  // build time matters here (one index per run); recall is checked in ann_test
  opt.ef_search = 200;
  GoldVocabulary out;
  out.index = std::make_unique<AnnIndex>(AnnIndex::Create(dims, fingerprint, opt));
  // One thread: a multi-threaded HNSW build depends on thread timing (ann.h), and a run's scores must not.
  if (Status st = out.index->AddBatch(labels, rows.data(), 1); !st.ok()) return st.error();
  out.size = labels.size();
  return out;
}

Result<RawPredictions> PredictionsFromLines(std::span<const std::string_view> lines, const std::string& name) {
  RawPredictions p;
  p.path = name;
  p.format = "lines";
  std::string all;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    std::string_view line = lines[i];
    const int lineno = static_cast<int>(i + 1);
    if (!ValidUtf8(line)) return Error::Input(fmt::format("{}:{}: invalid UTF-8 (expected UTF-8 text)", name, lineno));
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    RawPrediction rp;
    for (std::string_view piece : SplitOn(line, ";")) rp.phrases.emplace_back(piece);
    rp.loc = {name, lineno};
    p.docs.push_back(std::move(rp));
    all.append(line);
    all.push_back('\n');
  }
  p.content_hash = Sha256Hex(all);
  return p;
}

namespace {

bool IsWord(std::string_view tok) {
  // Python's str.isalnum() for some character (the reference, tests/data/homog/peer_reformulations.py):
  // \w without '_'. Non-ASCII punctuation such as “ or — is not a word.
  for (std::size_t i = 0; i < tok.size();) {
    const char32_t cp = DecodeUtf8(tok, i);
    if (cp != U'_' && IsPyWordChar(cp)) return true;
  }
  return false;
}

}  // namespace

Result<ReformulationStudy> StudyReformulations(std::span<const ReformulationPair> pairs, const std::string& name,
                                               const Profile& profile,
                                               std::optional<RawPredictions> predictions_original,
                                               std::optional<RawPredictions> predictions_reformulation,
                                               double tolerance) {
  // Two datasets with the same gold: the originals and their reformulations, document i = pair i.
  // DatasetFromRecords checks them and hashes every field (ids, texts and gold), as for Python's records.
  RawDataset ds[2];
  for (int side = 0; side < 2; ++side) {
    std::vector<RawDoc> docs;
    for (const auto& p : pairs) {
      RawDoc d;
      d.id = p.id;
      d.body = side == 0 ? p.original : p.reformulation;
      for (const auto& k : p.keyphrases) d.refs.push_back({k});
      d.loc = {name, p.line};
      docs.push_back(std::move(d));
    }
    auto built = DatasetFromRecords(name, std::move(docs));
    if (!built.ok()) return built.error();
    ds[side] = std::move(*built);
    ds[side].format = "reformulations";
    ds[side].name = side == 0 ? "original" : "reformulation";
    ds[side].files = {name};
  }
  std::optional<RawPredictions>* preds[2] = {&predictions_original, &predictions_reformulation};
  ReformulationStudy out;
  std::shared_ptr<const Corpus>* corpora[2] = {&out.original, &out.reformulation};
  for (int side = 0; side < 2; ++side) {
    std::optional<RawPredictions> aligned;
    if (*preds[side]) {
      auto al = AlignPredictions(ds[side], std::move(**preds[side]));
      if (!al.ok()) return al.error();
      aligned = std::move(*al);
    }
    auto c = BuildCorpus(ds[side], aligned ? &*aligned : nullptr, profile);
    if (!c.ok()) return c.error();
    *corpora[side] = std::make_shared<const Corpus>(std::move(*c));
  }
  const Corpus& orig = *out.original;
  const Corpus& ref = *out.reformulation;
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    const Document& a = orig.docs[i];
    const Document& b = ref.docs[i];
    // Same gold strings under the same profile: the reference lists align one to one.
    if (a.refs.size() != b.refs.size()) {
      return Error::Internal("internal error: reference lists differ");
    }
    std::vector<bool> kept;
    for (std::size_t j = 0; j < a.refs.size(); ++j) {
      if (!a.refs[j].present()) continue;
      const Prmu cls = ref.Classify(b, b.refs[j]);
      kept.push_back(cls == Prmu::kPresent || cls == Prmu::kReordered);
    }
    // Words: the profile's source tokens with a letter or digit (punctuation is not a word).
    std::vector<std::string_view> wa, wb;
    for (TokenId t : a.src_tokens()) {
      if (IsWord(orig.Str(t))) wa.push_back(orig.Str(t));
    }
    for (TokenId t : b.src_tokens()) {
      if (IsWord(ref.Str(t))) wb.push_back(ref.Str(t));
    }
    std::unique_ptr<bool[]> kept_arr(new bool[kept.size() + 1]);
    for (std::size_t k = 0; k < kept.size(); ++k) kept_arr[k] = kept[k];
    ReformulationRow row;
    row.verdict = FilterReformulation(std::span<const bool>(kept_arr.get(), kept.size()), wa.size(), wb.size(),
                                      tolerance);
    row.words_original = wa.size();
    row.words_reformulation = wb.size();
    row.wer = Wer(wb, wa);
    row.rouge1 = Rouge1Recall(wb, wa);
    out.rows.push_back(row);
  }
  return out;
}

}  // namespace kplab::homog
