#include "kplab/match.h"

#include <algorithm>
#include <cmath>

namespace kplab {

namespace {

bool KeyMatches(const Keyphrase& pred, const Keyphrase& ref) {
  if (pred.key() == ref.key()) return true;
  return std::find(ref.alt_keys.begin(), ref.alt_keys.end(), pred.key()) != ref.alt_keys.end();
}

bool ContainsRun(const std::vector<TokenId>& hay, const std::vector<TokenId>& needle) {
  if (needle.empty() || needle.size() > hay.size()) return false;
  return std::search(hay.begin(), hay.end(), needle.begin(), needle.end()) != hay.end();
}

// Python `b in a`.
bool In(std::string_view b, std::string_view a) { return a.find(b) != std::string_view::npos; }

bool SubstrEither(const Lexicon& lex, const Keyphrase& p, const Keyphrase& r) {
  const std::string_view a = lex.Str(p.key());
  const std::string_view b = lex.Str(r.key());
  return In(a, b) || In(b, a);
}

}  // namespace

std::vector<std::uint8_t> ExactMatch(PhraseRefs preds, PhraseRefs refs) {
  std::vector<std::uint8_t> flags(preds.size(), 0);
  for (std::size_t i = 0; i < preds.size(); ++i) {
    for (const Keyphrase* r : refs) {
      if (KeyMatches(*preds[i], *r)) {
        flags[i] = 1;
        break;
      }
    }
  }
  return flags;
}

std::vector<std::uint8_t> SubstringMatch(const Lexicon& lex, PhraseRefs preds, PhraseRefs refs) {
  std::vector<std::uint8_t> flags(preds.size(), 0);
  for (std::size_t i = 0; i < preds.size(); ++i) {
    for (const Keyphrase* r : refs) {
      if (SubstrEither(lex, *preds[i], *r)) {
        flags[i] = 1;
        break;
      }
    }
  }
  return flags;
}

std::vector<std::uint8_t> SubstringCover(const Lexicon& lex, PhraseRefs preds, PhraseRefs refs) {
  std::vector<std::uint8_t> cover(preds.size() * refs.size(), 0);
  for (std::size_t i = 0; i < preds.size(); ++i) {
    for (std::size_t j = 0; j < refs.size(); ++j) {
      cover[i * refs.size() + j] = In(lex.Str(preds[i]->key()), lex.Str(refs[j]->key()));
    }
  }
  return cover;
}

std::vector<std::uint8_t> ZeschGurevychMatch(PhraseRefs preds, PhraseRefs refs) {
  std::vector<std::uint8_t> flags(preds.size(), 0);
  for (std::size_t i = 0; i < preds.size(); ++i) {
    const auto& p = preds[i]->stems();
    if (preds[i]->phrase->blank) continue;
    for (const Keyphrase* r : refs) {
      if (r->phrase->blank) continue;
      if (p == r->stems() || ContainsRun(p, r->stems()) || ContainsRun(r->stems(), p)) {
        flags[i] = 1;
        break;
      }
    }
  }
  return flags;
}

int HitsAt(std::span<const std::uint8_t> flags, std::size_t k) {
  k = std::min(k, flags.size());
  int hits = 0;
  for (std::size_t i = 0; i < k; ++i) hits += flags[i];
  return hits;
}

double PrecisionSumAt(std::span<const std::uint8_t> flags, std::size_t k) {
  k = std::min(k, flags.size());
  double sum = 0;
  int hits = 0;
  for (std::size_t i = 0; i < k; ++i) {
    if (!flags[i]) continue;
    ++hits;
    sum += static_cast<double>(hits) / static_cast<double>(i + 1);
  }
  return sum;
}

double DcgAt(std::span<const std::uint8_t> flags, std::size_t k) {
  k = std::min(k, flags.size());
  double dcg = 0;
  for (std::size_t i = 0; i < k; ++i) {
    if (flags[i]) dcg += 1.0 / std::log2(static_cast<double>(i) + 2.0);
  }
  return dcg;
}

double IdealDcgAt(std::size_t n_relevant, std::size_t k) {
  const std::size_t n = std::min(n_relevant, k);
  double dcg = 0;
  for (std::size_t i = 0; i < n; ++i) dcg += 1.0 / std::log2(static_cast<double>(i) + 2.0);
  return dcg;
}

int FirstHit(std::span<const std::uint8_t> flags) {
  for (std::size_t i = 0; i < flags.size(); ++i) {
    if (flags[i]) return static_cast<int>(i) + 1;
  }
  return 0;
}

namespace {

double Log2Discount(std::size_t rank0) { return std::log2(static_cast<double>(rank0) + 2.0); }

// Gains of `order` (rows of cover) in sequence.
double AlphaDcg(const std::vector<std::vector<std::size_t>>& covers, std::size_t cut, std::size_t n_refs,
                double alpha) {
  std::vector<int> seen(n_refs, 0);
  double dcg = 0;
  for (std::size_t i = 0; i < cut && i < covers.size(); ++i) {
    double g = 0;
    for (std::size_t t : covers[i]) g += std::pow(1.0 - alpha, seen[t]);
    for (std::size_t t : covers[i]) ++seen[t];
    dcg += g / Log2Discount(i);
  }
  return dcg;
}

// Greedy ideal alpha-DCG over a candidate pool, `depth` picks, ties to the lowest index.
double GreedyIdealAlphaDcg(const std::vector<std::vector<std::size_t>>& pool, std::size_t depth,
                           std::size_t cut, std::size_t n_refs, double alpha) {
  std::vector<int> seen(n_refs, 0);
  std::vector<std::uint8_t> used(pool.size(), 0);
  double ideal = 0;
  for (std::size_t r = 0; r < std::min(depth, pool.size()); ++r) {
    double best = -1;
    std::size_t best_i = 0;
    for (std::size_t i = 0; i < pool.size(); ++i) {
      if (used[i]) continue;
      double g = 0;
      for (std::size_t t : pool[i]) g += std::pow(1.0 - alpha, seen[t]);
      if (g > best) {
        best = g;
        best_i = i;
      }
    }
    used[best_i] = 1;
    for (std::size_t t : pool[best_i]) ++seen[t];
    if (r < cut) ideal += best / Log2Discount(r);
  }
  return ideal;
}

}  // namespace

double AlphaNdcgWordPool(PhraseRefs preds, PhraseRefs refs, std::size_t k, double alpha) {
  if (preds.empty() || refs.empty()) return 0;
  auto covered = [&](const Keyphrase& item) {
    std::vector<std::size_t> out;
    if (item.phrase->blank) return out;
    for (std::size_t t = 0; t < refs.size(); ++t) {
      if (ContainsRun(refs[t]->stems(), item.stems())) out.push_back(t);
    }
    return out;
  };
  std::vector<std::vector<std::size_t>> pred_covers, pool;
  for (const Keyphrase* p : preds) pred_covers.push_back(covered(*p));
  for (const Keyphrase* r : refs) pool.push_back(covered(*r));
  for (std::size_t i = 0; i < preds.size(); ++i) {
    const bool is_ref = std::any_of(refs.begin(), refs.end(),
                                    [&](const Keyphrase* r) { return r->stems() == preds[i]->stems(); });
    if (!is_ref) pool.push_back(pred_covers[i]);
  }
  const std::size_t cut = std::min(k, preds.size());
  const double dcg = AlphaDcg(pred_covers, cut, refs.size(), alpha);
  const double ideal = GreedyIdealAlphaDcg(pool, k, k, refs.size(), alpha);
  return ideal > 0 ? dcg / ideal : 0;
}

double AlphaNdcgAt(std::span<const std::uint8_t> cover, std::size_t n_preds, std::size_t n_refs,
                   std::size_t k, double alpha) {
  k = std::min(k, n_preds);
  if (k == 0 || n_refs == 0) return 0;
  auto gain = [&](std::size_t i, const std::vector<int>& seen) {
    double g = 0;
    for (std::size_t j = 0; j < n_refs; ++j) {
      if (cover[i * n_refs + j]) g += std::pow(1.0 - alpha, seen[j]);
    }
    return g;
  };
  std::vector<int> seen(n_refs, 0);
  double dcg = 0;
  for (std::size_t i = 0; i < k; ++i) {
    dcg += gain(i, seen) / std::log2(static_cast<double>(i) + 2.0);
    for (std::size_t j = 0; j < n_refs; ++j) seen[j] += cover[i * n_refs + j];
  }
  // Greedy ideal: at each rank take the unused prediction with the largest gain (first on ties).
  std::fill(seen.begin(), seen.end(), 0);
  std::vector<std::uint8_t> used(n_preds, 0);
  double ideal = 0;
  for (std::size_t r = 0; r < k; ++r) {
    double best = -1;
    std::size_t best_i = 0;
    for (std::size_t i = 0; i < n_preds; ++i) {
      if (used[i]) continue;
      const double g = gain(i, seen);
      if (g > best) {
        best = g;
        best_i = i;
      }
    }
    used[best_i] = 1;
    ideal += best / std::log2(static_cast<double>(r) + 2.0);
    for (std::size_t j = 0; j < n_refs; ++j) seen[j] += cover[best_i * n_refs + j];
  }
  return ideal > 0 ? dcg / ideal : 0;
}

}  // namespace kplab
