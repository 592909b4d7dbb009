// BM25 as rank_bm25 0.2.2's BM25Okapi (dorianbrown/rank_bm25, rank_bm25.py) computes it, over an
// inverted index. rank_bm25 scores a query by looping over every document for every query term
// (numpy arrays of length N per term); here a term's postings are visited and every other document's
// contribution, which is exactly +0 or -0 there, is skipped. Adding a signed zero leaves a sum that
// started at +0 unchanged, so the scores are the same bits. The per-posting arithmetic repeats
// rank_bm25's expression in its evaluation order (Python and numpy round each operation to double,
// as C++ does without contraction: this file is built with -ffp-contract=off).
#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "kplab/retrieval.h"
#include "kplab/text.h"

namespace kplab::retrieval {

namespace {

// Python's string.punctuation: the ASCII punctuation characters !"#$%&'()*+,-./:;<=>?@[\]^_`{|}~.
bool IsPyPunctuation(unsigned char c) {
  return (c >= 0x21 && c <= 0x2f) || (c >= 0x3a && c <= 0x40) || (c >= 0x5b && c <= 0x60) ||
         (c >= 0x7b && c <= 0x7e);
}

// How often a meter is called: every this many steps of work.
constexpr std::size_t kMeterEvery = 1 << 16;

}  // namespace

void KpevalTokens(std::string_view text, std::vector<std::string>& out) {
  const std::string lower = Lower(text);
  for (std::string_view tok : SplitWhitespace(lower)) {
    // token.strip(string.punctuation): ASCII bytes only, so a UTF-8 sequence is never cut.
    while (!tok.empty() && IsPyPunctuation(static_cast<unsigned char>(tok.front()))) tok.remove_prefix(1);
    while (!tok.empty() && IsPyPunctuation(static_cast<unsigned char>(tok.back()))) tok.remove_suffix(1);
    if (!tok.empty() && !IsSklearnStopWord(tok)) out.emplace_back(tok);
  }
}

Result<Bm25Index> Bm25Index::Build(const std::vector<std::vector<std::string>>& docs, const Bm25Options& opt,
                                   const Meter& meter) {
  if (docs.empty()) return Error::Input("BM25 over an empty collection (expected at least one document)");
  if (docs.size() > UINT32_MAX - 1) return Error::Limit("BM25: more than 4 billion documents");
  Bm25Index ix;
  ix.opt_ = opt;
  // Pass 1: term ids in first-occurrence order, and each document's (term, tf) pairs in the order its
  // terms first occur (rank_bm25's per-document `frequencies` dict).
  std::vector<std::uint32_t> df;
  std::vector<std::uint32_t> doc_terms_begin{0}, doc_terms, doc_tfs;
  std::vector<std::uint32_t> last_doc, slot;  // by term: the last document that had it, and where
  std::size_t total = 0, since_meter = 0;
  ix.doc_len_.reserve(docs.size());
  for (std::size_t d = 0; d < docs.size(); ++d) {
    const auto& tokens = docs[d];
    if (tokens.size() > UINT32_MAX)
      return Error::Limit(fmt::format("BM25: document {} has over 4 billion tokens", d + 1));
    for (const std::string& t : tokens) {
      auto [it, fresh] = ix.term_id_.try_emplace(t, static_cast<std::uint32_t>(ix.term_id_.size()));
      const std::uint32_t id = it->second;
      if (fresh) {
        df.push_back(0);
        last_doc.push_back(UINT32_MAX);
        slot.push_back(0);
      }
      if (last_doc[id] != d) {
        last_doc[id] = static_cast<std::uint32_t>(d);
        slot[id] = static_cast<std::uint32_t>(doc_terms.size());
        doc_terms.push_back(id);
        doc_tfs.push_back(0);
        ++df[id];
      }
      ++doc_tfs[slot[id]];
    }
    ix.doc_len_.push_back(static_cast<std::uint32_t>(tokens.size()));
    doc_terms_begin.push_back(static_cast<std::uint32_t>(doc_terms.size()));
    total += tokens.size();
    since_meter += tokens.size() + 1;
    if (meter && since_meter >= kMeterEvery) {
      meter(static_cast<double>(since_meter));
      since_meter = 0;
    }
  }
  if (ix.term_id_.empty()) {
    return Error::Input(
        "BM25 over documents without a single token (expected at least one token after "
        "tokenization)");
  }
  // avgdl = num_doc / corpus_size: Python's int / int, correctly rounded as this division is.
  const double n = static_cast<double>(docs.size());
  ix.avgdl_ = static_cast<double>(total) / n;
  // idf in nd's order; the mean is summed in that order; negative idfs become epsilon * mean.
  const std::size_t terms = df.size();
  ix.idf_.resize(terms);
  double idf_sum = 0;
  for (std::size_t t = 0; t < terms; ++t) {
    const double f = static_cast<double>(df[t]);
    const double idf = std::log(static_cast<double>(docs.size() - df[t]) + 0.5) - std::log(f + 0.5);
    ix.idf_[t] = idf;
    idf_sum += idf;
  }
  ix.average_idf_ = idf_sum / static_cast<double>(terms);
  const double eps = opt.epsilon * ix.average_idf_;
  for (double& idf : ix.idf_) {
    if (idf < 0) idf = eps;
  }
  // norm = k1 * (1 - b + b * doc_len / avgdl), evaluated as Python does: (1 - b) + ((b * len) / avgdl).
  ix.norm_.resize(docs.size());
  for (std::size_t d = 0; d < docs.size(); ++d) {
    ix.norm_[d] = opt.k1 * ((1 - opt.b) + (opt.b * static_cast<double>(ix.doc_len_[d])) / ix.avgdl_);
  }
  // Pass 2: postings by term, documents ascending (CSR).
  ix.post_begin_.assign(terms + 1, 0);
  for (std::size_t t = 0; t < terms; ++t) ix.post_begin_[t + 1] = ix.post_begin_[t] + df[t];
  ix.post_doc_.resize(doc_terms.size());
  ix.post_tf_.resize(doc_terms.size());
  std::vector<std::uint32_t> fill(ix.post_begin_.begin(), ix.post_begin_.end() - 1);
  for (std::size_t d = 0; d < docs.size(); ++d) {
    for (std::uint32_t k = doc_terms_begin[d]; k < doc_terms_begin[d + 1]; ++k) {
      const std::uint32_t at = fill[doc_terms[k]]++;
      ix.post_doc_[at] = static_cast<std::uint32_t>(d);
      ix.post_tf_[at] = doc_tfs[k];
    }
  }
  if (meter && since_meter > 0) meter(static_cast<double>(since_meter));
  return ix;
}

double Bm25Index::Idf(std::string_view term) const {
  auto it = term_id_.find(std::string(term));
  return it == term_id_.end() ? 0.0 : idf_[it->second];
}

void Bm25Index::Scores(const std::vector<std::string>& query, std::vector<double>& scores, const Meter& meter) const {
  scores.assign(doc_len_.size(), 0.0);
  std::vector<std::uint32_t> touched;
  ScoreSparse(query, scores, touched, meter);
}

void Bm25Index::ScoreSparse(const std::vector<std::string>& query, std::vector<double>& scores,
                            std::vector<std::uint32_t>& touched, const Meter& meter) const {
  const std::size_t first = touched.size();
  const double k1p1 = opt_.k1 + 1;  // (self.k1 + 1)
  std::size_t since_meter = 0;
  for (const std::string& q : query) {
    auto it = term_id_.find(q);
    if (it == term_id_.end()) continue;  // (idf.get(q) or 0) * ...: adds zeros
    const std::uint32_t t = it->second;
    const double w = idf_[t];
    for (std::uint32_t p = post_begin_[t]; p < post_begin_[t + 1]; ++p) {
      const std::uint32_t d = post_doc_[p];
      const double tf = static_cast<double>(post_tf_[p]);
      scores[d] += w * ((tf * k1p1) / (tf + norm_[d]));
      touched.push_back(d);
    }
    since_meter += post_begin_[t + 1] - post_begin_[t] + 1;
    if (meter && since_meter >= kMeterEvery) {
      meter(static_cast<double>(since_meter));
      since_meter = 0;
    }
  }
  // Each touched document once, ascending.
  std::sort(touched.begin() + static_cast<std::ptrdiff_t>(first), touched.end());
  touched.erase(std::unique(touched.begin() + static_cast<std::ptrdiff_t>(first), touched.end()), touched.end());
  if (meter && since_meter > 0) meter(static_cast<double>(since_meter));
}

std::size_t Bm25Index::bytes() const {
  std::size_t dict = 0;
  for (const auto& [term, id] : term_id_) dict += term.capacity() + sizeof(term) + sizeof(id) + 2 * sizeof(void*);
  return dict + idf_.capacity() * sizeof(double) + post_begin_.capacity() * 4 + post_doc_.capacity() * 4 +
         post_tf_.capacity() * 4 + doc_len_.capacity() * 4 + norm_.capacity() * sizeof(double);
}

Placement Place(const std::vector<double>& scores, std::size_t target) {
  Placement p;
  const double s = scores[target];
  for (std::size_t d = 0; d < scores.size(); ++d) {
    if (scores[d] > s) {
      ++p.better;
    } else if (scores[d] == s && d != target) {
      ++p.ties;
      if (d < target) ++p.ties_before;
    }
  }
  return p;
}

Placement PlaceSparse(const std::vector<double>& acc, const std::vector<std::uint32_t>& touched, std::size_t n,
                      std::size_t target) {
  Placement p;
  const double s = acc[target];
  // The touched documents (ascending), then the others, which all score 0.
  std::int64_t touched_below = 0;
  bool target_touched = false;
  for (std::uint32_t d : touched) {
    if (d == target) {
      target_touched = true;
      continue;
    }
    if (d < target) ++touched_below;
    if (acc[d] > s) {
      ++p.better;
    } else if (acc[d] == s) {
      ++p.ties;
      if (d < target) ++p.ties_before;
    }
  }
  const std::int64_t untouched = static_cast<std::int64_t>(n - touched.size()) - (target_touched ? 0 : 1);
  if (0.0 > s) {
    p.better += untouched;
  } else if (0.0 == s) {
    p.ties += untouched;
    p.ties_before += static_cast<std::int64_t>(target) - touched_below;
  }
  return p;
}

Placement PlaceAmong(const std::vector<double>& scores, const std::vector<std::size_t>& pool, std::size_t target) {
  Placement p;
  const double s = scores[target];
  bool seen_target = false;
  for (std::size_t d : pool) {
    if (d == target) {
      seen_target = true;
    } else if (scores[d] > s) {
      ++p.better;
    } else if (scores[d] == s) {
      ++p.ties;
      if (!seen_target) ++p.ties_before;
    }
  }
  return p;
}

std::vector<std::size_t> TopN(const std::vector<double>& scores, std::size_t n) {
  std::vector<std::size_t> idx(scores.size());
  std::iota(idx.begin(), idx.end(), std::size_t{0});
  n = std::min(n, idx.size());
  auto before = [&](std::size_t a, std::size_t b) { return scores[a] > scores[b] || (scores[a] == scores[b] && a < b); };
  std::partial_sort(idx.begin(), idx.begin() + static_cast<std::ptrdiff_t>(n), idx.end(), before);
  idx.resize(n);
  return idx;
}

void CosineScores(const float* query, const float* rows, std::size_t n, int dims, std::vector<double>& out) {
  out.assign(n, 0.0);
  double qq = 0;
  for (int j = 0; j < dims; ++j) qq += static_cast<double>(query[j]) * query[j];
  if (qq == 0) return;
  for (std::size_t r = 0; r < n; ++r) {
    const float* v = rows + r * static_cast<std::size_t>(dims);
    double dot = 0, vv = 0;
    for (int j = 0; j < dims; ++j) {
      dot += static_cast<double>(query[j]) * v[j];
      vv += static_cast<double>(v[j]) * v[j];
    }
    out[r] = vv == 0 ? 0.0 : dot / (std::sqrt(qq) * std::sqrt(vv));
  }
}

}  // namespace kplab::retrieval
