#include "kplab/match.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <unordered_set>
#include <vector>

#include <fmt/format.h>

#include "kplab/text.h"

namespace kplab {

namespace {

// log2(i + 2) for rank i (0-based), cached. Gains are divided by it, as the usual definition writes.
const std::vector<double> kLog2Ranks = [] {
  std::vector<double> t(512);
  for (std::size_t i = 0; i < t.size(); ++i) t[i] = std::log2(static_cast<double>(i) + 2.0);
  return t;
}();
inline double Log2Rank(std::size_t rank0) {
  return rank0 < kLog2Ranks.size() ? kLog2Ranks[rank0] : std::log2(static_cast<double>(rank0) + 2.0);
}

bool KeyMatches(const Keyphrase& pred, const Keyphrase& ref) {
  if (pred.key() == ref.key()) return true;
  const auto alt = ref.alt_keys();
  return std::find(alt.begin(), alt.end(), pred.key()) != alt.end();
}

bool ContainsRun(std::span<const TokenId> hay, std::span<const TokenId> needle) {
  if (needle.empty() || needle.size() > hay.size()) return false;
  return std::search(hay.begin(), hay.end(), needle.begin(), needle.end()) != hay.end();
}

// ContainsRun(hay's stems, needle's stems) for keyphrases. A key is its stems joined by ' ' (no stem holds
// a space), so equal keys are equal stems, and different keys of as many stems are not a run of each
// other: most pairs need no search.
bool StemsRunIn(const Keyphrase& hay, const Keyphrase& needle) {
  if (hay.key() == needle.key()) return !needle.stems().empty();
  const auto& h = hay.stems();
  const auto& n = needle.stems();
  if (n.empty() || n.size() >= h.size()) return false;
  return std::search(h.begin(), h.end(), n.begin(), n.end()) != h.end();
}

// Python `b in a`.
bool In(std::string_view b, std::string_view a) { return a.find(b) != std::string_view::npos; }

// Keys a and b (their strings sa, sb): is either a substring of the other? Keys are interned: one id is
// one string, and two different strings of one length contain neither the other, so only the shorter
// is looked for in the longer.
bool SubstrEitherKeys(TokenId a, std::string_view sa, TokenId b, std::string_view sb) {
  if (a == b) return true;
  if (sa.size() == sb.size()) return false;
  return sa.size() < sb.size() ? In(sa, sb) : In(sb, sa);
}

bool SubstrEither(const Lexicon& lex, const Keyphrase& p, const Keyphrase& r) {
  return SubstrEitherKeys(p.key(), lex.Str(p.key()), r.key(), lex.Str(r.key()));
}

}  // namespace

std::vector<std::uint8_t> ExactMatch(PhraseRefs preds, PhraseRefs refs) {
  std::vector<std::uint8_t> flags(preds.size(), 0);
  // A prediction matches some reference exactly when its key is one of the references' keys or
  // alternative keys (KeyMatches): past a few dozen references, those keys are sorted once and each
  // prediction looked up, so a document of 100,000 keyphrases takes milliseconds, not minutes (the pair
  // loop below is predictions x references).
  if (refs.size() > 32 && preds.size() > 1) {
    std::vector<TokenId> keys;
    keys.reserve(refs.size());
    for (const Keyphrase* r : refs) {
      keys.push_back(r->key());
      for (TokenId a : r->alt_keys()) keys.push_back(a);
    }
    std::sort(keys.begin(), keys.end());
    for (std::size_t i = 0; i < preds.size(); ++i) {
      flags[i] = std::binary_search(keys.begin(), keys.end(), preds[i]->key()) ? 1 : 0;
    }
    return flags;
  }
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

std::vector<std::uint8_t> ExactMatchPairs(PhraseRefs preds, PhraseRefs refs) {
  std::vector<std::uint8_t> cells(preds.size() * refs.size(), 0);
  for (std::size_t i = 0; i < preds.size(); ++i) {
    for (std::size_t j = 0; j < refs.size(); ++j) cells[i * refs.size() + j] = KeyMatches(*preds[i], *refs[j]);
  }
  return cells;
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

std::vector<std::uint8_t> SubstringMatchPairs(const Lexicon& lex, PhraseRefs preds, PhraseRefs refs) {
  // SubstrEither on every pair, each key's string looked up once (in a large corpus every lookup is a
  // cache miss).
  std::vector<std::uint8_t> cells(preds.size() * refs.size(), 0);
  std::vector<std::string_view> ref_keys(refs.size());
  for (std::size_t j = 0; j < refs.size(); ++j) ref_keys[j] = lex.Str(refs[j]->key());
  for (std::size_t i = 0; i < preds.size(); ++i) {
    const TokenId pk = preds[i]->key();
    const std::string_view a = lex.Str(pk);
    for (std::size_t j = 0; j < refs.size(); ++j) cells[i * refs.size() + j] = SubstrEitherKeys(pk, a, refs[j]->key(), ref_keys[j]);
  }
  return cells;
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
    if (preds[i]->phrase->blank()) continue;
    for (const Keyphrase* r : refs) {
      if (r->phrase->blank()) continue;
      if (StemsRunIn(*r, *preds[i]) || StemsRunIn(*preds[i], *r)) {
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
    if (flags[i]) dcg += 1.0 / Log2Rank(i);
  }
  return dcg;
}

double IdealDcgAt(std::size_t n_relevant, std::size_t k) {
  const std::size_t n = std::min(n_relevant, k);
  // The sums the loop below adds, in its order, for the ranks kLog2Ranks holds.
  static const std::vector<double> kCumulative = [] {
    std::vector<double> t(kLog2Ranks.size() + 1, 0.0);
    for (std::size_t i = 0; i < kLog2Ranks.size(); ++i) t[i + 1] = t[i] + 1.0 / Log2Rank(i);
    return t;
  }();
  if (n < kCumulative.size()) return kCumulative[n];
  double dcg = 0;
  for (std::size_t i = 0; i < n; ++i) dcg += 1.0 / Log2Rank(i);
  return dcg;
}

int FirstHit(std::span<const std::uint8_t> flags) {
  for (std::size_t i = 0; i < flags.size(); ++i) {
    if (flags[i]) return static_cast<int>(i) + 1;
  }
  return 0;
}

void RunningRankSums(std::span<const std::uint8_t> flags, int* hits, double* psum, double* dcg) {
  int h = 0;
  double p = 0, d = 0;
  hits[0] = 0;
  if (psum) psum[0] = 0;
  if (dcg) dcg[0] = 0;
  for (std::size_t i = 0; i < flags.size(); ++i) {
    if (flags[i]) {
      ++h;
      if (psum) p += static_cast<double>(h) / static_cast<double>(i + 1);  // PrecisionSumAt's addition
      if (dcg) d += 1.0 / Log2Rank(i);                                     // DcgAt's
    }
    hits[i + 1] = h;
    if (psum) psum[i + 1] = p;
    if (dcg) dcg[i + 1] = d;
  }
}

namespace {

// Covered references of each item, as a flat list with offsets.
struct Covers {
  std::vector<std::uint32_t> refs;
  std::vector<std::uint32_t> begin = {0};
  std::size_t size() const { return begin.size() - 1; }
  void EndItem() { begin.push_back(static_cast<std::uint32_t>(refs.size())); }
};

class AlphaGain {
 public:
  AlphaGain(std::size_t n_refs, double alpha) : seen_(n_refs, 0), alpha_(alpha) {}
  double Gain(const Covers& c, std::size_t item) const {
    double g = 0;
    for (std::uint32_t k = c.begin[item]; k < c.begin[item + 1]; ++k) g += Pow(seen_[c.refs[k]]);
    return g;
  }
  void Take(const Covers& c, std::size_t item) {
    for (std::uint32_t k = c.begin[item]; k < c.begin[item + 1]; ++k) ++seen_[c.refs[k]];
  }

 private:
  // (1 - alpha)^times with std::pow, as the reference computes it (repeated multiplication could
  // differ in the last bit), cached per exponent.
  double Pow(int times) const {
    while (pow_.size() <= static_cast<std::size_t>(times)) {
      pow_.push_back(std::pow(1.0 - alpha_, static_cast<double>(pow_.size())));
    }
    return pow_[static_cast<std::size_t>(times)];
  }
  std::vector<int> seen_;
  double alpha_;
  mutable std::vector<double> pow_ = {1.0};
};

// Cumulative alpha-DCG of the items in order: out[i] = DCG of the first i items.
std::vector<double> CumulativeDcg(const Covers& c, std::size_t n_refs, double alpha) {
  AlphaGain g(n_refs, alpha);
  std::vector<double> out(c.size() + 1, 0.0);
  for (std::size_t i = 0; i < c.size(); ++i) {
    out[i + 1] = out[i] + g.Gain(c, i) / Log2Rank(i);
    g.Take(c, i);
  }
  return out;
}

// Cumulative greedy-ideal alpha-DCG over a pool, up to `depth` picks (ties: lowest index).
// Lazy greedy: an item's gain can only shrink as references get covered, so a max-heap of stale gains
// (largest first, then lowest index) is re-checked only at its top; an item whose recomputed gain still
// equals its stored one beats every other (their true gains are at most their stored ones, and equal
// stored gains come later in index order). Same picks as the plain O(depth * pool) scan.
std::vector<double> CumulativeGreedyIdeal(const Covers& pool, std::size_t n_refs, std::size_t depth,
                                          double alpha) {
  AlphaGain g(n_refs, alpha);
  depth = std::min(depth, pool.size());
  std::vector<double> out(depth + 1, 0.0);
  struct Entry {
    double gain;
    std::size_t index;
    bool operator<(const Entry& o) const { return gain < o.gain || (gain == o.gain && index > o.index); }
  };
  std::vector<Entry> heap;
  heap.reserve(pool.size());
  for (std::size_t i = 0; i < pool.size(); ++i) heap.push_back({g.Gain(pool, i), i});
  std::make_heap(heap.begin(), heap.end());
  for (std::size_t r = 0; r < depth;) {
    std::pop_heap(heap.begin(), heap.end());
    Entry top = heap.back();
    heap.pop_back();
    const double now = g.Gain(pool, top.index);
    if (now != top.gain) {  // stale: put it back with its current gain
      heap.push_back({now, top.index});
      std::push_heap(heap.begin(), heap.end());
      continue;
    }
    g.Take(pool, top.index);
    out[r + 1] = out[r] + now / Log2Rank(r);
    ++r;
  }
  return out;
}

double At(const std::vector<double>& cumulative, std::size_t k) {
  return cumulative[std::min(k, cumulative.size() - 1)];
}

}  // namespace

bool AlphaNdcgFromMasks(std::span<const std::uint64_t> pred_cover, std::span<const std::uint64_t> pool,
                        std::span<const std::size_t> ks, double alpha, std::span<double> out) {
  constexpr std::size_t kMaxItems = 256;
  const std::size_t n = pred_cover.size(), pool_size = pool.size();
  if (n > kMaxItems || pool_size > kMaxItems || out.size() < ks.size()) return false;
  // (1 - alpha)^times with std::pow, as AlphaGain computes it; kept per thread while alpha stays the same
  // (a run scores every document with one alpha).
  thread_local double pow_alpha = std::numeric_limits<double>::quiet_NaN();
  thread_local double pow_cache[kMaxItems + 1];
  thread_local std::size_t pow_size = 0;
  if (!(pow_alpha == alpha)) {
    pow_alpha = alpha;
    pow_cache[0] = 1.0;
    pow_size = 1;
  }
  auto pow = [&](int times) {
    while (pow_size <= static_cast<std::size_t>(times)) {
      pow_cache[pow_size] = std::pow(1.0 - alpha, static_cast<double>(pow_size));
      ++pow_size;
    }
    return pow_cache[times];
  };
  int seen[64];
  auto gain = [&](std::uint64_t mask) {
    double g = 0;
    for (; mask != 0; mask &= mask - 1) g += pow(seen[std::countr_zero(mask)]);
    return g;
  };
  auto take = [&](std::uint64_t mask) {
    for (; mask != 0; mask &= mask - 1) ++seen[std::countr_zero(mask)];
  };
  std::size_t max_k = 0;
  for (std::size_t k : ks) max_k = std::max(max_k, k);
  // The counts of the references some mask covers (the others are never read).
  std::uint64_t covered = 0;
  for (std::uint64_t m : pred_cover) covered |= m;
  for (std::uint64_t m : pool) covered |= m;
  const int width = 64 - std::countl_zero(covered);
  auto clear_seen = [&] {
    for (int t = 0; t < width; ++t) seen[t] = 0;
  };
  // Cumulative DCG of the predictions in order (CumulativeDcg), as far as a cut-off reads it. An item
  // covering nothing adds a zero gain, which leaves the sum as it is.
  const std::size_t dcg_depth = std::min(max_k, n);
  double dcg[kMaxItems + 1];
  clear_seen();
  dcg[0] = 0.0;
  for (std::size_t i = 0; i < dcg_depth; ++i) {
    dcg[i + 1] = pred_cover[i] != 0 ? dcg[i] + gain(pred_cover[i]) / Log2Rank(i) : dcg[i];
    take(pred_cover[i]);
  }
  // Cumulative greedy ideal over the pool, with CumulativeGreedyIdeal's picks: the item of the largest
  // current gain, the lowest index on ties (what its lazy heap returns: an entry whose stored gain is
  // still current beats every other, whose current gain is at most its stored one, equal stored gains
  // ranking by index). Each live item's current gain is kept, recomputed only when a pick covers one
  // of its references (otherwise its counts, so the double gain() gives, are unchanged). Gains never
  // grow (0 <= 1 - alpha <= 1), so an item whose gain reaches zero stays at zero and is dropped; when
  // none is left every later pick adds zero, and the rest of the ideal is the sum so far.
  const std::size_t depth = std::min(max_k, pool_size);
  double ideal[kMaxItems + 1];
  clear_seen();
  ideal[0] = 0.0;
  double current[kMaxItems];
  std::uint16_t live_index[kMaxItems];  // pool indices, increasing
  std::size_t live = 0;
  for (std::size_t i = 0; i < pool_size; ++i) {
    if (pool[i] == 0) continue;
    if (const double g = gain(pool[i]); g > 0) {
      current[live] = g;
      live_index[live++] = static_cast<std::uint16_t>(i);
    }
  }
  std::size_t r = 0;
  while (r < depth && live > 0) {
    std::size_t best = 0;
    for (std::size_t k = 1; k < live; ++k) {
      if (current[k] > current[best]) best = k;
    }
    const std::uint64_t taken = pool[live_index[best]];
    take(taken);
    ideal[r + 1] = ideal[r] + current[best] / Log2Rank(r);
    ++r;
    std::size_t kept = 0;
    for (std::size_t k = 0; k < live; ++k) {
      if (k == best) continue;
      const std::uint64_t mask = pool[live_index[k]];
      const double g = (mask & taken) != 0 ? gain(mask) : current[k];
      if (g > 0) {
        current[kept] = g;
        live_index[kept++] = live_index[k];
      }
    }
    live = kept;
  }
  for (; r < depth; ++r) ideal[r + 1] = ideal[r];
  for (std::size_t i = 0; i < ks.size(); ++i) {
    const double id = ideal[std::min(ks[i], depth)];
    out[i] = id > 0 ? dcg[std::min(ks[i], n)] / id : 0;
  }
  return true;
}

namespace {

// AlphaNdcgWordPool for lists that fit fixed arrays (at most 64 references, 256 items in the pool): each
// item's coverage is a 64-bit mask, visited from the lowest reference up, the order in which Covers
// lists them, so every sum is added in the same order and the result is the general path's to the bit;
// nothing is allocated. Returns false (out untouched) when the lists do not fit.
bool AlphaNdcgWordPoolSmall(PhraseRefs preds, PhraseRefs refs, std::span<const std::size_t> ks, double alpha,
                            std::vector<double>& out) {
  constexpr std::size_t kMaxRefs = 64, kMaxItems = 256;
  const std::size_t n = preds.size(), n_refs = refs.size();
  if (n_refs > kMaxRefs || n + n_refs > kMaxItems) return false;
  // ContainsRun(reference's stems, item's stems). A key is its stems joined by ' ' (no stem holds a
  // space), so equal keys are equal stems, and different keys of as many stems are not a run of the other.
  auto cover = [&](const Keyphrase& item) {
    std::uint64_t mask = 0;
    if (item.phrase->blank()) return mask;
    for (std::size_t t = 0; t < n_refs; ++t) {
      if (StemsRunIn(*refs[t], item)) mask |= std::uint64_t{1} << t;
    }
    return mask;
  };
  std::uint64_t pred_mask[kMaxItems], pool[kMaxItems];
  std::size_t pool_size = 0;
  for (std::size_t i = 0; i < n; ++i) pred_mask[i] = cover(*preds[i]);
  for (std::size_t t = 0; t < n_refs; ++t) pool[pool_size++] = cover(*refs[t]);
  for (std::size_t i = 0; i < n; ++i) {
    const Keyphrase* p = preds[i];
    if (std::any_of(refs.begin(), refs.end(), [&](const Keyphrase* r) { return KeyMatches(*p, *r); })) continue;
    pool[pool_size++] = pred_mask[i];
  }
  return AlphaNdcgFromMasks(std::span(pred_mask, n), std::span(pool, pool_size), ks, alpha, out);
}

}  // namespace

std::vector<double> AlphaNdcgWordPool(PhraseRefs preds, PhraseRefs refs, std::span<const std::size_t> ks,
                                      double alpha) {
  std::vector<double> out(ks.size(), 0.0);
  if (preds.empty() || refs.empty()) return out;
  if (AlphaNdcgWordPoolSmall(preds, refs, ks, alpha, out)) return out;
  Covers pred_covers, pool;
  auto add = [&](Covers& c, const Keyphrase& item) {
    if (!item.phrase->blank()) {
      for (std::size_t t = 0; t < refs.size(); ++t) {
        if (ContainsRun(refs[t]->stems(), item.stems())) c.refs.push_back(static_cast<std::uint32_t>(t));
      }
    }
    c.EndItem();
  };
  for (const Keyphrase* p : preds) add(pred_covers, *p);
  for (const Keyphrase* r : refs) add(pool, *r);
  for (std::size_t i = 0; i < preds.size(); ++i) {
    // A prediction that is a reference (or one of its alternative forms) is already in the pool. (Equal
    // stems mean equal keys, the stems joined, so the key test covers them.) The others join it with the
    // coverage computed above.
    const Keyphrase* p = preds[i];
    if (std::any_of(refs.begin(), refs.end(), [&](const Keyphrase* r) { return KeyMatches(*p, *r); })) continue;
    pool.refs.insert(pool.refs.end(), pred_covers.refs.begin() + pred_covers.begin[i],
                     pred_covers.refs.begin() + pred_covers.begin[i + 1]);
    pool.EndItem();
  }
  std::size_t max_k = 0;
  for (std::size_t k : ks) max_k = std::max(max_k, k);
  const auto dcg = CumulativeDcg(pred_covers, refs.size(), alpha);
  const auto ideal = CumulativeGreedyIdeal(pool, refs.size(), max_k, alpha);
  for (std::size_t i = 0; i < ks.size(); ++i) {
    const double id = At(ideal, ks[i]);
    out[i] = id > 0 ? At(dcg, ks[i]) / id : 0;
  }
  return out;
}

double AlphaNdcgWordPool(PhraseRefs preds, PhraseRefs refs, std::size_t k, double alpha) {
  const std::size_t ks[] = {k};
  return AlphaNdcgWordPool(preds, refs, ks, alpha)[0];
}

std::vector<double> AlphaNdcgSubstring(const Lexicon& lex, PhraseRefs preds, PhraseRefs refs,
                                       std::span<const std::size_t> ks, double alpha) {
  std::vector<double> out(ks.size(), 0.0);
  if (preds.empty() || refs.empty()) return out;
  Covers covers;
  for (const Keyphrase* p : preds) {
    const std::string_view a = lex.Str(p->key());
    for (std::size_t t = 0; t < refs.size(); ++t) {
      if (In(a, lex.Str(refs[t]->key()))) covers.refs.push_back(static_cast<std::uint32_t>(t));
    }
    covers.EndItem();
  }
  const auto dcg = CumulativeDcg(covers, refs.size(), alpha);
  const auto ideal = CumulativeGreedyIdeal(covers, refs.size(), preds.size(), alpha);
  for (std::size_t i = 0; i < ks.size(); ++i) {
    const std::size_t cut = std::min(ks[i], preds.size());
    const double id = At(ideal, cut);
    out[i] = id > 0 ? At(dcg, cut) / id : 0;
  }
  return out;
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

Result<std::vector<Cutoff>> ParseCutoffs(std::string_view spec) {
  constexpr const char* kExpected = "expected integers from 1 to 100000, M or O, comma-separated, e.g. 1,3,5,10,M,O";
  std::vector<std::string_view> items;
  for (std::size_t start = 0;;) {
    const std::size_t comma = spec.find(',', start);
    items.push_back(Strip(spec.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start)));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  if (items.size() == 1 && items[0].empty()) {
    return Error::Usage(fmt::format("no cut-off in '' ({})", kExpected));
  }
  std::vector<Cutoff> out;
  out.reserve(items.size());
  std::unordered_set<std::string> seen;  // a list of 100,000 cut-offs must stay linear
  for (std::string_view t : items) {
    const std::string shown = t.size() > 40 ? std::string(t.substr(0, 37)) + "..." : std::string(t);
    Cutoff c;
    if (t == "M" || t == "O") {
      c.symbol = t[0];
    } else if (!t.empty() && t.size() <= 6 && std::all_of(t.begin(), t.end(), [](char ch) { return ch >= '0' && ch <= '9'; })) {
      c.k = std::stoi(std::string(t));
    }
    if (c.symbol == 0 && (c.k < 1 || c.k > 100000)) {
      return Error::Usage(fmt::format("'{}' is not a cut-off ({})", shown, kExpected));
    }
    if (!seen.insert(c.Text()).second) {
      return Error::Usage(fmt::format("'{}' is listed twice ({})", c.Text(), kExpected));
    }
    out.push_back(c);
  }
  return out;
}

}  // namespace kplab
