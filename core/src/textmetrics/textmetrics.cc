// Counting for ROUGE, METEOR, BLEU and Indel similarity (kplab/textmetrics.h). Each function follows the
// reference implementation named in the header; comments give the line of thought where the fast form
// differs from the reference's loop (stacks instead of rescans, one n-gram table for Self-BLEU,
// bit-parallel LCS for Indel).
#include "kplab/textmetrics.h"

#include <algorithm>
#include <bit>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "kplab/stem.h"
#include "kplab/text.h"
#include "kplab/wordnet.h"

namespace kplab::textmetrics {

namespace {

// Interns token strings as ids, so that n-grams are short byte strings of ids.
class Ids {
 public:
  std::uint32_t Of(std::string_view s) {
    auto [it, fresh] = ids_.try_emplace(s, static_cast<std::uint32_t>(ids_.size()));
    return it->second;
  }
  std::vector<std::uint32_t> Of(std::span<const std::string_view> toks) {
    std::vector<std::uint32_t> out;
    out.reserve(toks.size());
    for (std::string_view t : toks) out.push_back(Of(t));
    return out;
  }
  std::size_t size() const { return ids_.size(); }

 private:
  std::unordered_map<std::string_view, std::uint32_t> ids_;
};

std::string NgramKey(const std::uint32_t* ids, int n) {
  return std::string(reinterpret_cast<const char*>(ids), sizeof(std::uint32_t) * static_cast<std::size_t>(n));
}

using NgramCounts = std::unordered_map<std::string, std::int64_t>;

// The n-grams of one token sequence, added to counts; returns how many there were.
std::int64_t AddNgrams(std::span<const std::uint32_t> ids, int n, NgramCounts* counts) {
  if (static_cast<int>(ids.size()) < n) return 0;
  const std::size_t k = ids.size() - static_cast<std::size_t>(n) + 1;
  for (std::size_t i = 0; i < k; ++i) ++(*counts)[NgramKey(ids.data() + i, n)];
  return static_cast<std::int64_t>(k);
}

// One LCS of x and y traced back from the end (pltrdy's _recon_lcs): calls take(i) for every position
// i of x on it. table is scratch of (|x| + 1) * (|y| + 1) cells.
template <typename Take>
void TraceLcs(std::span<const std::uint32_t> x, std::span<const std::uint32_t> y, std::vector<std::uint32_t>& table,
              Take take) {
  const std::size_t w = y.size() + 1;
  table.assign((x.size() + 1) * w, 0);
  for (std::size_t i = 1; i <= x.size(); ++i) {
    for (std::size_t j = 1; j <= y.size(); ++j) {
      table[i * w + j] = x[i - 1] == y[j - 1] ? table[(i - 1) * w + j - 1] + 1
                                              : std::max(table[(i - 1) * w + j], table[i * w + j - 1]);
    }
  }
  std::size_t i = x.size(), j = y.size();
  while (i > 0 && j > 0) {
    if (x[i - 1] == y[j - 1]) {
      take(i - 1);
      --i;
      --j;
    } else if (table[(i - 1) * w + j] > table[i * w + j - 1]) {
      --i;
    } else {
      --j;
    }
  }
}

}  // namespace

Units PltrdySentences(std::string_view text) {
  Units out;
  for (std::string_view piece : SplitOn(text, ".")) {
    if (piece.empty()) continue;
    std::vector<std::string_view> words = SplitWhitespace(piece);
    if (words.empty()) words.push_back(piece.substr(0, 0));  // " ".join([]) is "", and "".split(" ") is [""]
    out.Add(words);
  }
  return out;
}

Overlap RougeN(const Units& hyp, const Units& ref, int n, RougeStyle style) {
  Overlap o;
  if (n < 1) return o;
  Ids ids;
  if (style == RougeStyle::kPltrdy) {
    NgramCounts h, r;
    AddNgrams(ids.Of(hyp.tokens), n, &h);
    AddNgrams(ids.Of(ref.tokens), n, &r);
    o.hyp = static_cast<std::int64_t>(h.size());
    o.ref = static_cast<std::int64_t>(r.size());
    for (const auto& [g, c] : h) o.hits += r.count(g) ? 1 : 0;
    return o;
  }
  NgramCounts h, r;
  for (std::size_t u = 0; u < hyp.size(); ++u) o.hyp += AddNgrams(ids.Of(hyp.unit(u)), n, &h);
  for (std::size_t u = 0; u < ref.size(); ++u) o.ref += AddNgrams(ids.Of(ref.unit(u)), n, &r);
  for (const auto& [g, c] : h) {
    if (auto it = r.find(g); it != r.end()) o.hits += std::min(c, it->second);
  }
  return o;
}

double RougeLTableCells(const Units& hyp, const Units& ref) {
  std::size_t x = 0, y = 0;
  for (std::size_t u = 0; u < ref.size(); ++u) x = std::max(x, ref.unit(u).size());
  for (std::size_t u = 0; u < hyp.size(); ++u) y = std::max(y, hyp.unit(u).size());
  return static_cast<double>(x + 1) * static_cast<double>(y + 1);
}

double RougeLCells(const Units& hyp, const Units& ref) {
  return (static_cast<double>(hyp.tokens.size()) + static_cast<double>(hyp.size())) *
         (static_cast<double>(ref.tokens.size()) + static_cast<double>(ref.size()));
}

Overlap RougeL(const Units& hyp, const Units& ref, RougeStyle style, const Checkpoint& checkpoint) {
  Overlap o;
  Ids ids;
  const std::vector<std::uint32_t> h = ids.Of(hyp.tokens), r = ids.Of(ref.tokens);
  auto unit = [](const std::vector<std::uint32_t>& all, const Units& u, std::size_t k) {
    const std::size_t b = k == 0 ? 0 : u.ends[k - 1];
    return std::span<const std::uint32_t>(all.data() + b, u.ends[k] - b);
  };
  std::vector<std::uint32_t> table;
  double pending = 0;
  auto charge = [&](std::size_t x, std::size_t y) {
    pending += static_cast<double>(x + 1) * static_cast<double>(y + 1);
    if (checkpoint && pending > 65536) {
      checkpoint(pending);
      pending = 0;
    }
  };
  if (style == RougeStyle::kPltrdy) {
    o.hyp = static_cast<std::int64_t>(std::unordered_set<std::uint32_t>(h.begin(), h.end()).size());
    o.ref = static_cast<std::int64_t>(std::unordered_set<std::uint32_t>(r.begin(), r.end()).size());
    std::unordered_set<std::uint32_t> words;  // the union of the traced LCSs' words
    for (std::size_t ru = 0; ru < ref.size(); ++ru) {
      const auto x = unit(r, ref, ru);
      for (std::size_t hu = 0; hu < hyp.size(); ++hu) {
        const auto y = unit(h, hyp, hu);
        charge(x.size(), y.size());
        TraceLcs(x, y, table, [&](std::size_t i) { words.insert(x[i]); });
      }
    }
    o.hits = static_cast<std::int64_t>(words.size());
    return o;
  }
  o.hyp = static_cast<std::int64_t>(h.size());
  o.ref = static_cast<std::int64_t>(r.size());
  std::vector<std::int64_t> hyp_left(ids.size(), 0), ref_left(ids.size(), 0);
  for (std::uint32_t t : h) ++hyp_left[t];
  for (std::uint32_t t : r) ++ref_left[t];
  std::vector<char> on_lcs;
  for (std::size_t ru = 0; ru < ref.size(); ++ru) {
    const auto x = unit(r, ref, ru);
    on_lcs.assign(x.size(), 0);
    for (std::size_t hu = 0; hu < hyp.size(); ++hu) {
      const auto y = unit(h, hyp, hu);
      charge(x.size(), y.size());
      TraceLcs(x, y, table, [&](std::size_t i) { on_lcs[i] = 1; });
    }
    for (std::size_t i = 0; i < x.size(); ++i) {  // ROUGE-1.5.5: a hit while both sides have the word left
      if (on_lcs[i] && hyp_left[x[i]] > 0 && ref_left[x[i]] > 0) {
        --hyp_left[x[i]];
        --ref_left[x[i]];
        ++o.hits;
      }
    }
  }
  return o;
}

namespace {

// One word of a METEOR text: its position and the form the current stage compares.
struct Enum {
  std::int64_t index;
  std::string word;
};

// nltk's _match_enums with `same` as the test: hypothesis words from the last, each taking the last
// remaining reference word that passes. Reference words are kept in per-form stacks of positions, so
// "the last remaining match" is a stack's top; a synonym stage asks several forms (candidates) and
// takes the largest top.
template <typename Candidates>
std::vector<std::pair<std::int64_t, std::int64_t>> MatchStage(std::vector<Enum>& hyp, std::vector<Enum>& ref,
                                                              Candidates candidates) {
  std::unordered_map<std::string_view, std::vector<std::size_t>> where;  // form -> positions in ref, ascending
  for (std::size_t j = 0; j < ref.size(); ++j) where[ref[j].word].push_back(j);
  std::vector<char> hyp_used(hyp.size(), 0), ref_used(ref.size(), 0);
  std::vector<std::pair<std::int64_t, std::int64_t>> matches;
  for (std::size_t i = hyp.size(); i-- > 0;) {
    std::vector<std::size_t>* best = nullptr;
    candidates(hyp[i].word, [&](std::string_view form) {
      auto it = where.find(form);
      if (it == where.end() || it->second.empty()) return;
      if (best == nullptr || it->second.back() > best->back()) best = &it->second;
    });
    if (best == nullptr) continue;
    const std::size_t j = best->back();
    best->pop_back();
    matches.emplace_back(hyp[i].index, ref[j].index);
    hyp_used[i] = ref_used[j] = 1;
  }
  auto keep = [](std::vector<Enum>& v, const std::vector<char>& used) {
    std::size_t k = 0;
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (used[i]) continue;
      if (k != i) v[k] = std::move(v[i]);  // never onto itself: a self-moved string may be left empty
      ++k;
    }
    v.resize(k);
  };
  keep(hyp, hyp_used);
  keep(ref, ref_used);
  return matches;
}

}  // namespace

MeteorAlignment MeteorAlign(std::span<const std::string_view> hyp_tokens, std::span<const std::string_view> ref_tokens,
                            const WordNet* wordnet) {
  MeteorAlignment a;
  a.hyp_len = static_cast<std::int64_t>(hyp_tokens.size());
  a.ref_len = static_cast<std::int64_t>(ref_tokens.size());
  auto enums = [](std::span<const std::string_view> toks) {
    std::vector<Enum> out;
    out.reserve(toks.size());
    for (std::size_t i = 0; i < toks.size(); ++i) out.push_back({static_cast<std::int64_t>(i), Lower(toks[i])});
    return out;
  };
  std::vector<Enum> hyp = enums(hyp_tokens), ref = enums(ref_tokens);
  auto same = [](std::string_view w, const auto& ask) { ask(w); };
  auto exact = MatchStage(hyp, ref, same);
  const PorterStemmer stemmer(PorterMode::kNltk);
  for (auto* side : {&hyp, &ref}) {
    for (Enum& e : *side) e.word = stemmer.Stem(e.word);
  }
  auto stem = MatchStage(hyp, ref, same);
  std::vector<std::pair<std::int64_t, std::int64_t>> synonym;
  if (wordnet != nullptr && !hyp.empty() && !ref.empty()) {
    synonym = MatchStage(hyp, ref, [&](std::string_view w, const auto& ask) {
      ask(w);
      for (std::string_view name : wordnet->Synonyms(w)) ask(name);
    });
  }
  a.exact = static_cast<std::int64_t>(exact.size());
  a.stem = static_cast<std::int64_t>(stem.size());
  a.synonym = static_cast<std::int64_t>(synonym.size());
  std::vector<std::pair<std::int64_t, std::int64_t>> all;
  for (const auto* m : {&exact, &stem, &synonym}) all.insert(all.end(), m->begin(), m->end());
  std::sort(all.begin(), all.end());  // by hypothesis position (each taken once)
  a.matches = static_cast<std::int64_t>(all.size());
  a.chunks = all.empty() ? 0 : 1;  // nltk's _count_chunks
  for (std::size_t k = 1; k < all.size(); ++k) {
    if (!(all[k].first == all[k - 1].first + 1 && all[k].second == all[k - 1].second + 1)) ++a.chunks;
  }
  return a;
}

namespace {

std::int64_t ClosestRefLength(const std::map<std::int64_t, std::int64_t>& lengths, std::int64_t hyp_len) {
  std::int64_t best = 0, best_diff = -1;
  for (const auto& [len, count] : lengths) {  // ascending: the shorter wins a tie
    if (count == 0) continue;
    const std::int64_t diff = len > hyp_len ? len - hyp_len : hyp_len - len;
    if (best_diff < 0 || diff < best_diff) {
      best_diff = diff;
      best = len;
    }
  }
  return best_diff < 0 ? 0 : best;
}

}  // namespace

BleuCounts SentenceBleuCounts(std::span<const std::string_view> hyp_tokens,
                              std::span<const std::span<const std::string_view>> refs, int max_n) {
  BleuCounts c;
  Ids ids;
  const std::vector<std::uint32_t> h = ids.Of(hyp_tokens);
  c.hyp_len = static_cast<std::int64_t>(h.size());
  std::map<std::int64_t, std::int64_t> lengths;
  for (auto r : refs) ++lengths[static_cast<std::int64_t>(r.size())];
  c.ref_len = ClosestRefLength(lengths, c.hyp_len);
  for (int n = 1; n <= max_n; ++n) {
    NgramCounts counts, max_ref;
    const std::int64_t total = AddNgrams(h, n, &counts);
    for (auto r : refs) {
      NgramCounts rc;
      AddNgrams(ids.Of(r), n, &rc);
      for (const auto& [g, k] : rc) {
        if (counts.count(g)) max_ref[g] = std::max(max_ref[g], k);
      }
    }
    std::int64_t num = 0;
    for (const auto& [g, k] : counts) {
      if (auto it = max_ref.find(g); it != max_ref.end()) num += std::min(k, it->second);
    }
    c.num.push_back(num);
    c.den.push_back(std::max<std::int64_t>(1, total));
  }
  return c;
}

std::vector<BleuCounts> SelfBleuCounts(const Units& items, int max_n) {
  const std::size_t n_items = items.size();
  std::vector<BleuCounts> out(n_items);
  Ids ids;
  std::vector<std::vector<std::uint32_t>> seqs(n_items);
  std::map<std::int64_t, std::int64_t> lengths;
  for (std::size_t i = 0; i < n_items; ++i) {
    seqs[i] = ids.Of(items.unit(i));
    ++lengths[static_cast<std::int64_t>(seqs[i].size())];
  }
  for (std::size_t i = 0; i < n_items; ++i) {  // closest_ref_length over the other items
    const auto len = static_cast<std::int64_t>(seqs[i].size());
    --lengths[len];
    out[i].hyp_len = len;
    out[i].ref_len = ClosestRefLength(lengths, len);
    ++lengths[len];
  }
  // Per n-gram, its largest count over the items (and which item has it) and the second largest: the
  // largest count among the items other than i is the second one exactly when i holds the first.
  struct Top {
    std::int64_t first = 0, second = 0;
    std::size_t holder = 0;
  };
  for (int n = 1; n <= max_n; ++n) {
    std::vector<NgramCounts> counts(n_items);
    std::vector<std::int64_t> totals(n_items);
    std::unordered_map<std::string, Top> top;
    for (std::size_t i = 0; i < n_items; ++i) {
      totals[i] = AddNgrams(seqs[i], n, &counts[i]);
      for (const auto& [g, k] : counts[i]) {
        Top& t = top[g];
        if (k > t.first) {
          t.second = t.first;
          t.first = k;
          t.holder = i;
        } else if (k > t.second) {
          t.second = k;
        }
      }
    }
    for (std::size_t i = 0; i < n_items; ++i) {
      std::int64_t num = 0;
      for (const auto& [g, k] : counts[i]) {
        const Top& t = top[g];
        num += std::min(k, t.holder == i ? t.second : t.first);
      }
      out[i].num.push_back(num);
      out[i].den.push_back(std::max<std::int64_t>(1, totals[i]));
    }
  }
  return out;
}

namespace {

// Bit-parallel LCS (Hyyro 2004; Allison and Dix 1986) of a pattern `a` against text b: one bit per
// character of a, in 64-bit words. V starts all ones; for each character c of b, X = V & M[c] and
// V = (V + X) | (V - X), where V - X = V & ~M[c] needs no borrow; LCS = |a| - ones(V).
class LcsPattern {
 public:
  explicit LcsPattern(std::u32string_view a) : n_(a.size()), words_((a.size() + 63) / 64) {
    for (std::size_t i = 0; i < a.size(); ++i) {
      std::uint64_t* m = Mask(a[i], true);
      m[i / 64] |= std::uint64_t{1} << (i % 64);
    }
  }
  std::int64_t Lcs(std::u32string_view b) const {
    if (n_ == 0 || b.empty()) return 0;
    if (words_ == 1) {  // the usual case: a keyphrase of at most 64 code points
      std::uint64_t v = ~std::uint64_t{0};
      for (char32_t c : b) {
        const std::uint64_t* m = Mask(c);
        if (m != nullptr) v = (v + (v & *m)) | (v & ~*m);
      }
      if (n_ < 64) v &= (std::uint64_t{1} << n_) - 1;
      return static_cast<std::int64_t>(n_) - std::popcount(v);
    }
    v_.assign(words_, ~std::uint64_t{0});
    for (char32_t c : b) {
      const std::uint64_t* m = Mask(c);
      if (m == nullptr) continue;  // X = 0: V unchanged
      std::uint64_t carry = 0;
      for (std::size_t w = 0; w < words_; ++w) {
        const std::uint64_t x = v_[w] & m[w];
        const std::uint64_t sum = v_[w] + x;
        const std::uint64_t with_carry = sum + carry;
        carry = (sum < v_[w] || with_carry < sum) ? 1 : 0;
        v_[w] = with_carry | (v_[w] & ~m[w]);
      }
    }
    std::int64_t ones = 0;
    for (std::size_t w = 0; w < words_; ++w) {
      std::uint64_t v = v_[w];
      if (w + 1 == words_ && n_ % 64 != 0) v &= (std::uint64_t{1} << (n_ % 64)) - 1;
      ones += std::popcount(v);
    }
    return static_cast<std::int64_t>(n_) - ones;
  }
  std::size_t size() const { return n_; }

 private:
  std::uint64_t* Mask(char32_t c, bool create) {
    if (c < 128) {
      if (ascii_[c] < 0 && create) ascii_[c] = Allocate();
      return ascii_[c] < 0 ? nullptr : &masks_[static_cast<std::size_t>(ascii_[c]) * words_];
    }
    auto it = other_.find(c);
    if (it == other_.end()) {
      if (!create) return nullptr;
      it = other_.emplace(c, Allocate()).first;
    }
    return &masks_[static_cast<std::size_t>(it->second) * words_];
  }
  const std::uint64_t* Mask(char32_t c) const { return const_cast<LcsPattern*>(this)->Mask(c, false); }
  int Allocate() {
    masks_.resize(masks_.size() + words_, 0);
    return static_cast<int>(masks_.size() / words_ - 1);
  }

  std::size_t n_, words_;
  std::vector<std::uint64_t> masks_;
  int ascii_[128] = {-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
                     -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
                     -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
                     -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
                     -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
                     -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1};
  std::unordered_map<char32_t, int> other_;
  mutable std::vector<std::uint64_t> v_;
};

double IndelSimilarity(std::int64_t lcs, std::size_t la, std::size_t lb) {
  const auto total = static_cast<std::int64_t>(la + lb);
  if (total == 0) return 1.0;  // rapidfuzz: normalized distance 0 for two empty strings
  const std::int64_t dist = total - 2 * lcs;
  return 1.0 - static_cast<double>(dist) / static_cast<double>(total);
}

}  // namespace

std::int64_t IndelDistance(std::u32string_view a, std::u32string_view b) {
  const LcsPattern p(a);
  return static_cast<std::int64_t>(a.size() + b.size()) - 2 * p.Lcs(b);
}

namespace {
// The work of one pair (i, j) of SelfIndelSimilarity: the 64-bit words of i's pattern per character of
// j, plus one.
double PairCells(std::size_t len_i, std::size_t len_j) {
  return (static_cast<double>(len_i + 63) / 64 + 1) * (static_cast<double>(len_j) + 1);
}
}  // namespace

double SelfIndelCells(std::span<const std::u32string> items) {
  double cells = 0, after = 0;  // after: sum of (len_j + 1) over j > i
  for (std::size_t i = items.size(); i-- > 0;) {
    cells += PairCells(items[i].size(), 0) * after;
    after += static_cast<double>(items[i].size()) + 1;
  }
  return cells;
}

std::vector<double> SelfIndelSimilarity(std::span<const std::u32string> items, const Checkpoint& checkpoint) {
  const std::size_t n = items.size();
  if (n < 2) return {};
  // Each pair once. Item i's sum receives j < i while row j runs and j > i in its own row, so it adds
  // its similarities in j order, as KPEval's list of targets.
  std::vector<double> sums(n, 0.0);
  double pending = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const LcsPattern p(items[i]);
    for (std::size_t j = i + 1; j < n; ++j) {
      const double s = IndelSimilarity(p.Lcs(items[j]), items[i].size(), items[j].size());
      sums[i] += s;
      sums[j] += s;
      pending += PairCells(items[i].size(), items[j].size());
      if (checkpoint && pending > 65536) {
        checkpoint(pending);
        pending = 0;
      }
    }
  }
  for (double& s : sums) s /= static_cast<double>(n - 1);
  return sums;
}

}  // namespace kplab::textmetrics
