#include "kplab/homog.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <numeric>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

namespace kplab::homog {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double Ratio(std::size_t common, std::size_t na, std::size_t nb, Denominator d) {
  if (na == 0 && nb == 0) return kNaN;
  double den = 0;
  switch (d) {
    case Denominator::kUnion:
      den = static_cast<double>(na + nb - common);
      break;
    case Denominator::kMax:
      den = static_cast<double>(std::max(na, nb));
      break;
    case Denominator::kMean:
      // 2C / (A + B): one division, so that the value is the correctly rounded ratio.
      return 2.0 * static_cast<double>(common) / static_cast<double>(na + nb);
  }
  return static_cast<double>(common) / den;
}

template <class T>
double SetConsistencyImpl(std::span<const T> a, std::span<const T> b, Denominator d) {
  std::vector<T> x(a.begin(), a.end()), y(b.begin(), b.end());
  std::sort(x.begin(), x.end());
  x.erase(std::unique(x.begin(), x.end()), x.end());
  std::sort(y.begin(), y.end());
  y.erase(std::unique(y.begin(), y.end()), y.end());
  std::size_t common = 0;
  for (std::size_t i = 0, j = 0; i < x.size() && j < y.size();) {
    if (x[i] < y[j]) {
      ++i;
    } else if (y[j] < x[i]) {
      ++j;
    } else {
      ++common, ++i, ++j;
    }
  }
  return Ratio(common, x.size(), y.size(), d);
}

// Size of the intersection of two ascending, duplicate-free sequences.
std::uint32_t MergeCount(const std::vector<std::uint32_t>& x, const std::vector<std::uint32_t>& y) {
  std::uint32_t common = 0;
  std::size_t i = 0, j = 0;
  while (i < x.size() && j < y.size()) {
    if (x[i] < y[j]) {
      ++i;
    } else if (y[j] < x[i]) {
      ++j;
    } else {
      ++common, ++i, ++j;
    }
  }
  return common;
}

// MergeCount for a partitioned join: false, without finishing the merge, when the first (lowest-rank)
// element the two sets share is not owned by `part` (the pair is another partition's); otherwise true
// with the intersection size in *common.
bool OwnedMergeCount(const std::vector<std::uint32_t>& x, const std::vector<std::uint32_t>& y, Partition part,
                     std::uint32_t* common) {
  std::uint32_t c = 0;
  std::size_t i = 0, j = 0;
  while (i < x.size() && j < y.size()) {
    if (x[i] < y[j]) {
      ++i;
    } else if (y[j] < x[i]) {
      ++j;
    } else {
      if (c == 0 && x[i] % part.count != part.index) return false;
      ++c, ++i, ++j;
    }
  }
  *common = c;
  return true;
}

Status CheckTheta(double theta) {
  if (!(theta > 0 && theta <= 1)) {
    return Error::Usage(fmt::format("pair mining: theta must be in (0, 1] (got {})", theta));
  }
  return Status::Ok();
}

std::vector<std::vector<std::uint32_t>> SortedUnique(std::span<const std::vector<std::uint32_t>> sets) {
  std::vector<std::vector<std::uint32_t>> out(sets.begin(), sets.end());
  for (auto& s : out) {
    std::sort(s.begin(), s.end());
    s.erase(std::unique(s.begin(), s.end()), s.end());
  }
  return out;
}

// The smallest integer overlap/size that theta * n may require, rounded down a little so that a
// bound computed from it only admits more candidates (floating-point error in theta * n could
// otherwise push ceil() one too high).
std::size_t CeilTheta(double theta, std::size_t n) {
  const double t = theta * static_cast<double>(n) - 1e-9 * static_cast<double>(n + 1);
  return t <= 0 ? 0 : static_cast<std::size_t>(std::ceil(t));
}

}  // namespace

bool ParseDenominator(std::string_view name, Denominator* out) {
  if (name == "union") {
    *out = Denominator::kUnion;
  } else if (name == "max") {
    *out = Denominator::kMax;
  } else if (name == "mean") {
    *out = Denominator::kMean;
  } else {
    return false;
  }
  return true;
}

const char* DenominatorName(Denominator d) {
  switch (d) {
    case Denominator::kUnion:
      return "union";
    case Denominator::kMax:
      return "max";
    case Denominator::kMean:
      return "mean";
  }
  return "?";
}

double SetConsistency(std::span<const std::uint32_t> a, std::span<const std::uint32_t> b, Denominator d) {
  return SetConsistencyImpl(a, b, d);
}

double SetConsistency(std::span<const std::string_view> a, std::span<const std::string_view> b,
                      Denominator d) {
  return SetConsistencyImpl(a, b, d);
}

Cp Consistency(std::span<const Words> a, std::span<const Words> b, Denominator d) {
  // Hooper: a keyphrase is its word sequence; joined with a byte that no word contains.
  auto phrases = [](std::span<const Words> list, std::vector<std::string>& joined,
                    std::vector<std::string_view>& words) {
    for (const Words& w : list) {
      if (w.empty()) continue;
      std::string s;
      for (std::size_t i = 0; i < w.size(); ++i) {
        if (i) s += '\x1f';
        s += w[i];
      }
      joined.push_back(std::move(s));
      words.insert(words.end(), w.begin(), w.end());
    }
  };
  std::vector<std::string> ja, jb;
  std::vector<std::string_view> wa, wb;
  phrases(a, ja, wa);
  phrases(b, jb, wb);
  std::vector<std::string_view> va(ja.begin(), ja.end()), vb(jb.begin(), jb.end());
  Cp cp;
  cp.hooper = SetConsistency(std::span<const std::string_view>(va), std::span<const std::string_view>(vb), d);
  cp.rodgers = SetConsistency(std::span<const std::string_view>(wa), std::span<const std::string_view>(wb), d);
  return cp;
}

std::vector<std::vector<std::uint32_t>> InternSets(std::span<const std::vector<std::string>> sets) {
  std::vector<std::string_view> all;
  for (const auto& s : sets) all.insert(all.end(), s.begin(), s.end());
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  std::vector<std::vector<std::uint32_t>> out;
  out.reserve(sets.size());
  for (const auto& s : sets) {
    std::vector<std::uint32_t> ids;
    ids.reserve(s.size());
    for (const std::string& k : s) {
      ids.push_back(static_cast<std::uint32_t>(std::lower_bound(all.begin(), all.end(), k) - all.begin()));
    }
    out.push_back(std::move(ids));
  }
  return out;
}

Result<std::vector<DocPair>> MinePairsNaive(std::span<const std::vector<std::uint32_t>> sets, double theta,
                                            MineStats* stats) {
  if (Status st = CheckTheta(theta); !st.ok()) return st.error();
  const auto s = SortedUnique(sets);
  std::vector<DocPair> out;
  MineStats ms;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i].empty()) continue;
    ++ms.sets;
    for (std::size_t j = i + 1; j < s.size(); ++j) {
      if (s[j].empty()) continue;
      ++ms.candidates;
      const std::uint32_t c = MergeCount(s[i], s[j]);
      const auto u = static_cast<std::uint32_t>(s[i].size() + s[j].size() - c);
      if (PassesJaccard(c, u, theta)) {
        out.push_back({static_cast<std::uint32_t>(i), static_cast<std::uint32_t>(j), c, u,
                       static_cast<double>(c) / static_cast<double>(u)});
      }
    }
  }
  ms.pairs = out.size();
  if (stats) *stats = ms;
  return out;
}

Result<std::vector<DocPair>> MinePairs(std::span<const std::vector<std::uint32_t>> sets, double theta,
                                       MineStats* stats) {
  return MinePairs(sets, theta, stats, Partition{});
}

// Partitioned mining: why the partitions are disjoint and their union is the whole result.
//
// Let x be the prober and y an indexed record (|y| <= |x|), J(x, y) >= theta, c = |x ∩ y| and f the
// lowest rank in x ∩ y (the pair's rarest shared token). c >= theta |x ∪ y| >= theta |x|, so
// c >= ceil(theta |x|) >= need (CeilTheta only rounds down) and c >= 1. In x (ascending ranks) the
// c - 1 other shared tokens come after f, so f's position is at most |x| - c <= |x| - need < prefix:
// f is in x's probe prefix. By the same argument with c >= theta |y|, f is in y's index prefix (the
// prefix length is the same function of the record's own size). The length filter keeps y for x
// whichever token finds it (|y| >= theta |x| >= min_size). Hence:
//  - partition owner(f) = f mod count probes f, finds y in index[f] (it indexes every record whose
//    prefix holds a token it owns), and OwnedMergeCount's first common element is f: the pair is
//    verified there, with the same merge (same shared, uni, jaccard) as in the single process;
//  - any other partition q may reach (x, y) through another owned token it probes, but the first
//    common element is still f, not q's: rejected before it counts as a candidate.
// So each pair of the single result is produced by exactly one partition. A partition produces
// nothing else, since everything it keeps passed the same PassesJaccard. The same argument without
// J >= theta shows candidates split too: a single-process candidate shares some token t in both
// prefixes; f <= t is then in both prefixes as well, so exactly partition owner(f) verifies it.
// Ranks depend only on the sets (document frequency, then id), so every worker computes the same
// order; round-robin ownership over ranks spreads the long lists of frequent tokens (the join's cost)
// evenly over the partitions, where contiguous rank ranges would leave them all to the last one.
Result<std::vector<DocPair>> MinePairs(std::span<const std::vector<std::uint32_t>> sets, double theta, MineStats* stats,
                                       Partition part) {
  if (Status st = CheckTheta(theta); !st.ok()) return st.error();
  if (part.count == 0 || part.index >= part.count) {
    return Error::Usage(fmt::format("pair mining: partition {} of {} is out of range (expected 0 <= index < count)",
                                    part.index, part.count));
  }
  const bool whole = part.count == 1;
  auto owned = [&](std::uint32_t rank) { return whole || rank % part.count == part.index; };
  auto s = SortedUnique(sets);
  MineStats ms;

  // Global token order: increasing document frequency, then id. Each set is rewritten as the ranks
  // of its tokens, ascending, so that its prefix holds its rarest tokens. Interned ids (Lexicon) are
  // dense, so a counting array indexed by id is used when the largest id is not much more than the
  // number of occurrences; sparse ids go through a sorted table instead.
  std::size_t occurrences = 0;
  std::uint32_t max_id = 0;
  for (const auto& x : s) {
    occurrences += x.size();
    for (std::uint32_t t : x) max_id = std::max(max_id, t);
  }
  std::vector<std::uint32_t> tokens;  // distinct ids, ascending
  std::vector<std::uint32_t> df;      // per position in tokens
  std::vector<std::uint32_t> slot;    // id -> position in tokens (dense case)
  const bool dense = occurrences > 0 && max_id <= 8 * occurrences + (1u << 16);
  if (dense) {
    std::vector<std::uint32_t> count(static_cast<std::size_t>(max_id) + 1, 0);
    for (const auto& x : s) {
      for (std::uint32_t t : x) ++count[t];
    }
    slot.assign(count.size(), 0);
    for (std::uint32_t id = 0; id <= max_id; ++id) {
      if (count[id] == 0) continue;
      slot[id] = static_cast<std::uint32_t>(tokens.size());
      tokens.push_back(id);
      df.push_back(count[id]);
    }
  } else {
    std::vector<std::uint32_t> all;
    all.reserve(occurrences);
    for (const auto& x : s) all.insert(all.end(), x.begin(), x.end());
    std::sort(all.begin(), all.end());
    for (std::size_t i = 0; i < all.size();) {
      std::size_t j = i;
      while (j < all.size() && all[j] == all[i]) ++j;
      tokens.push_back(all[i]);
      df.push_back(static_cast<std::uint32_t>(j - i));
      i = j;
    }
  }
  std::vector<std::uint32_t> by_df(tokens.size());
  std::iota(by_df.begin(), by_df.end(), 0u);
  std::stable_sort(by_df.begin(), by_df.end(), [&](std::uint32_t a, std::uint32_t b) { return df[a] < df[b]; });
  std::vector<std::uint32_t> rank(tokens.size());
  for (std::uint32_t r = 0; r < by_df.size(); ++r) rank[by_df[r]] = r;
  for (auto& x : s) {
    for (auto& t : x) {
      const std::uint32_t pos =
          dense ? slot[t]
                : static_cast<std::uint32_t>(std::lower_bound(tokens.begin(), tokens.end(), t) - tokens.begin());
      t = rank[pos];
    }
    std::sort(x.begin(), x.end());
  }

  // Records by increasing size (then index): when x probes, every indexed y has |y| <= |x|.
  std::vector<std::uint32_t> order;
  for (std::uint32_t i = 0; i < s.size(); ++i) {
    if (!s[i].empty()) order.push_back(i);
  }
  ms.sets = order.size();
  std::stable_sort(order.begin(), order.end(),
                   [&](std::uint32_t a, std::uint32_t b) { return s[a].size() < s[b].size(); });

  // Inverted index over prefixes: rank -> records (in insertion order, so by increasing size), with a
  // start offset per list that moves past records too short for every later (longer) prober.
  std::vector<std::vector<std::uint32_t>> index(tokens.size());
  std::vector<std::size_t> start(tokens.size(), 0);
  std::vector<std::uint32_t> seen_at(s.size(), std::numeric_limits<std::uint32_t>::max());
  std::vector<std::uint32_t> cands;
  std::vector<DocPair> out;
  for (std::uint32_t x : order) {
    const std::vector<std::uint32_t>& rx = s[x];
    const std::size_t nx = rx.size();
    // J(x, y) >= theta implies |x ∩ y| >= theta |x ∪ y| >= theta |x| and |y| >= theta |x|.
    const std::size_t need = std::max<std::size_t>(CeilTheta(theta, nx), 1);
    const std::size_t min_size = CeilTheta(theta, nx);
    const std::size_t prefix = nx - std::min(need, nx) + 1;
    cands.clear();
    for (std::size_t p = 0; p < prefix && p < nx; ++p) {
      const std::uint32_t t = rx[p];
      if (!owned(t)) continue;  // another partition's token: its index list stays empty here
      auto& list = index[t];
      std::size_t& st = start[t];
      while (st < list.size() && s[list[st]].size() < min_size) ++st;  // length filter, for good
      for (std::size_t k = st; k < list.size(); ++k) {
        const std::uint32_t y = list[k];
        if (seen_at[y] == x) continue;
        seen_at[y] = x;
        cands.push_back(y);
      }
    }
    for (std::uint32_t y : cands) {
      std::uint32_t c = 0;
      if (whole) {
        c = MergeCount(rx, s[y]);
      } else if (!OwnedMergeCount(rx, s[y], part, &c)) {
        continue;  // the pair's rarest shared token belongs to another partition
      }
      ++ms.candidates;
      const auto u = static_cast<std::uint32_t>(nx + s[y].size() - c);
      if (PassesJaccard(c, u, theta)) {
        const std::uint32_t a = std::min(x, y), b = std::max(x, y);
        out.push_back({a, b, c, u, static_cast<double>(c) / static_cast<double>(u)});
      }
    }
    // Index x's own prefix (the same length it probed with: a later, longer prober z needs
    // |x ∩ z| >= theta |z| >= theta |x|, so x's first |x| - ceil(theta |x|) + 1 tokens suffice).
    for (std::size_t p = 0; p < prefix && p < nx; ++p) {
      if (owned(rx[p])) index[rx[p]].push_back(x);
    }
  }
  std::sort(out.begin(), out.end(),
            [](const DocPair& p, const DocPair& q) { return p.a != q.a ? p.a < q.a : p.b < q.b; });
  ms.pairs = out.size();
  if (stats) *stats = ms;
  return out;
}

GenericityReport ComputeGenericity(std::span<const std::vector<std::uint32_t>> sets,
                                   std::span<const DocPair> pairs,
                                   const std::function<std::size_t(std::uint32_t)>& words_of) {
  const auto s = SortedUnique(sets);
  std::unordered_map<std::uint32_t, std::size_t> df;
  for (const auto& x : s) {
    for (std::uint32_t t : x) ++df[t];
  }
  auto summarize = [&](const std::vector<std::uint32_t>& ids) {
    Genericity g;
    g.distinct = ids.size();
    if (ids.empty()) {
      g.mean_df = g.mean_words = kNaN;
      return g;
    }
    double sdf = 0, sw = 0;
    for (std::uint32_t t : ids) {
      sdf += static_cast<double>(df[t]);
      sw += static_cast<double>(words_of(t));
    }
    g.mean_df = sdf / static_cast<double>(ids.size());
    g.mean_words = sw / static_cast<double>(ids.size());
    return g;
  };
  std::vector<std::uint32_t> all;
  all.reserve(df.size());
  for (const auto& [t, _] : df) all.push_back(t);
  std::sort(all.begin(), all.end());

  std::unordered_set<std::uint32_t> shared_set, docs;
  for (const DocPair& p : pairs) {
    docs.insert(p.a);
    docs.insert(p.b);
    const auto& x = s.at(p.a);
    const auto& y = s.at(p.b);
    std::set_intersection(x.begin(), x.end(), y.begin(), y.end(), std::inserter(shared_set, shared_set.end()));
  }
  std::vector<std::uint32_t> shared(shared_set.begin(), shared_set.end());
  std::sort(shared.begin(), shared.end());
  GenericityReport r;
  r.collection = summarize(all);
  r.shared = summarize(shared);
  r.pair_docs = docs.size();
  r.pairs = pairs.size();
  return r;
}

double Wer(std::span<const std::string_view> hyp, std::span<const std::string_view> ref) {
  return Wer(hyp, ref, {});
}

double Wer(std::span<const std::string_view> hyp, std::span<const std::string_view> ref,
           const std::function<void(double)>& checkpoint) {
  if (ref.empty()) return kNaN;
  // Two rows of the Levenshtein table: prev[j] = distance(hyp[0, i), ref[0, j)).
  std::vector<std::size_t> prev(ref.size() + 1), cur(ref.size() + 1);
  std::iota(prev.begin(), prev.end(), std::size_t{0});
  for (std::size_t i = 1; i <= hyp.size(); ++i) {
    if (checkpoint && (i & 63) == 0) checkpoint(64.0 * static_cast<double>(ref.size()));
    cur[0] = i;
    for (std::size_t j = 1; j <= ref.size(); ++j) {
      const std::size_t sub = prev[j - 1] + (hyp[i - 1] == ref[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return static_cast<double>(prev[ref.size()]) / static_cast<double>(ref.size());
}

double Rouge1Recall(std::span<const std::string_view> hyp, std::span<const std::string_view> ref) {
  if (ref.empty()) return kNaN;
  std::unordered_map<std::string_view, std::size_t> hc;
  for (auto w : hyp) ++hc[w];
  std::unordered_map<std::string_view, std::size_t> rc;
  for (auto w : ref) ++rc[w];
  std::size_t overlap = 0;
  for (const auto& [w, n] : rc) {
    auto it = hc.find(w);
    if (it != hc.end()) overlap += std::min(n, it->second);
  }
  return static_cast<double>(overlap) / static_cast<double>(ref.size());
}

FilterVerdict FilterReformulation(std::span<const bool> present_kept, std::size_t words_original,
                                  std::size_t words_reformulation, double tolerance) {
  FilterVerdict v;
  for (bool ok : present_kept) v.lost_keyphrases += !ok;
  v.keyphrases_ok = v.lost_keyphrases == 0;
  const double diff = std::fabs(static_cast<double>(words_reformulation) - static_cast<double>(words_original));
  // The small slack keeps "exactly 10%" inside despite 0.1 having no exact binary value.
  v.length_ok = diff <= tolerance * static_cast<double>(words_original) + 1e-9;
  v.keep = v.keyphrases_ok && v.length_ok;
  return v;
}

}  // namespace kplab::homog
