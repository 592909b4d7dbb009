#include "kplab/kernels.h"

#include <algorithm>
#include <bit>

#include <fmt/format.h>

#include "eval/byte_set.h"
#include "eval/ref_lanes.h"

namespace kplab {

namespace {

using eval_internal::CountLane;
using eval_internal::LowBits;
using eval_internal::SizeLane;
using eval_internal::Within;
using eval_internal::WithinRows;

// Each kernel below transcribes its plugin's score function: integers where the Lua has integers (a
// hit count, a cut-off), one float division where the Lua divides, and the same expression order, so
// `2 * p * r / (p + r)` rounds as Lua's does.

double F1(double p, double r) { return p + r > 0 ? 2 * p * r / (p + r) : 0; }

double Ratio(double num, std::size_t den) { return den > 0 ? num / static_cast<double>(den) : 0; }

std::vector<std::size_t> Resolve(const std::vector<Cutoff>& ks, std::size_t n, std::size_t r) {
  std::vector<std::size_t> cut(ks.size());
  for (std::size_t i = 0; i < ks.size(); ++i) cut[i] = ks[i].Resolve(n, r);
  return cut;
}

// One document's keyphrases as the kernels read them, and the relations between its predictions and
// references as bit masks over the references (bit j: doc.refs[j]), computed once per document for all
// its subsets. In a large corpus every keyphrase's phrase is a cache miss, and the per-subset matching
// of match.h reads each one many times; here each is read once. A subset is a sub-list of doc.preds
// and doc.refs in their order (its views point into them), so its relation is its predictions' rows
// masked with its references' bits, and the bits from the lowest up visit its references in list
// order: every test and sum is the one match.h makes on the subset's lists. Documents with more than
// 64 references or 256 keyphrases do not fit; the kernels score them with match.h as before.
constexpr std::size_t kMaxRefs = 64, kMaxItems = 256;

bool FitsMasks(const Document& doc) {
  return doc.refs.size() <= kMaxRefs && doc.preds.size() + doc.refs.size() <= kMaxItems;
}

struct Item {
  TokenId key = kNoToken;
  bool blank = true;
  std::uint32_t len = 0;              // number of stems
  std::span<const TokenId> stems;
  std::uint64_t stem_set = 0;         // bit (id & 63) set for each stem id
  std::span<const TokenId> alt_keys;  // references only
  std::string_view str;               // the key's string, when the kernel reads it
  std::uint64_t byte_set = 0;         // bit (c & 63) set for each byte c of str
};

// The document a KernelDocumentScope on this thread is open for (null: none), and the scope's number
// (each scope a new one), which is what the items a kernel loaded are valid for.
struct ScopeState {
  const Document* doc = nullptr;
  std::uint64_t serial = 0;
};
thread_local ScopeState t_scope;

struct DocItems {
  std::size_t n_preds = 0, n_refs = 0;
  std::uint64_t alt_refs = 0;  // references with alternative keys
  Item preds[kMaxItems];
  Item refs[kMaxRefs];
  // The references' keys side by side (KeyBits compares four at a time), and which references are
  // blank.
  TokenId ref_keys[kMaxRefs + 7] = {};
  std::uint64_t blank_refs = 0, stemmed_refs = 0;  // references with stems (with_stems)
  // The references' counts and sets side by side, for the rows' filters (eval/ref_lanes.h): the number
  // of stems (CountLane) and their set, with stems; the key's bytes (SizeLane) and their set, with
  // strings. Read up to n_refs rounded up to eight.
  std::int32_t ref_len_lanes[kMaxRefs + 7] = {}, ref_size_lanes[kMaxRefs + 7] = {};
  std::uint64_t ref_stem_sets[kMaxRefs + 7] = {}, ref_byte_sets[kMaxRefs + 7] = {};
  // The scope (ScopeState::serial) these items were loaded in, 0 for none; and which sets they hold.
  std::uint64_t serial = 0;
  bool have_stems = false, have_strings = false, have_key_rows = false;
  std::uint64_t key_rows[kMaxItems];  // KeyRows'

  // with_stems: the stems' set (for runs of stems); with_strings: the keys' strings and their bytes'
  // set (for substrings). Within a scope for doc, what an earlier kernel loaded is kept and only what
  // it did not is added; otherwise the document is read afresh.
  [[gnu::always_inline]] void Load(const Corpus& corpus, const Document& doc, bool with_stems, bool with_strings) {
    const bool scoped = t_scope.doc == &doc;
    if (!scoped || serial != t_scope.serial) {
      LoadItems(doc);
      serial = scoped ? t_scope.serial : 0;
      have_stems = have_strings = have_key_rows = false;
    }
    // In passes, each of which only starts loads (independent cache misses overlap) that the next one
    // reads: the phrases (LoadItems), then what they point to (stems, key strings), then the sets.
    with_stems = with_stems && !have_stems;
    with_strings = with_strings && !have_strings;
    if (!with_stems && !with_strings) return;
    auto point = [&](Item& it) {
      if (with_stems && it.len > 0) __builtin_prefetch(it.stems.data());
      if (with_strings) {
        it.str = corpus.lex.Str(it.key);
        __builtin_prefetch(it.str.data());
      }
    };
    auto sets = [&](Item& it) {
      if (with_stems) {
        std::uint64_t set = 0;
        for (TokenId id : it.stems) set |= std::uint64_t{1} << (id & 63);
        it.stem_set = set;
      }
      if (with_strings) it.byte_set = eval_internal::ByteSet(it.str);
    };
    for (std::size_t i = 0; i < n_preds; ++i) point(preds[i]);
    for (std::size_t j = 0; j < n_refs; ++j) point(refs[j]);
    for (std::size_t i = 0; i < n_preds; ++i) sets(preds[i]);
    for (std::size_t j = 0; j < n_refs; ++j) {
      sets(refs[j]);
      if (with_stems) {
        ref_stem_sets[j] = refs[j].stem_set;
        ref_len_lanes[j] = CountLane(refs[j].len);
        stemmed_refs |= static_cast<std::uint64_t>(refs[j].len > 0) << j;
      }
      if (with_strings) {
        ref_byte_sets[j] = refs[j].byte_set;
        ref_size_lanes[j] = SizeLane(refs[j].str.size());
      }
    }
    have_stems = have_stems || with_stems;
    have_strings = have_strings || with_strings;
  }

 private:
  void LoadItems(const Document& doc) {
    n_preds = doc.preds.size();
    n_refs = doc.refs.size();
    alt_refs = 0;
    auto phrase = [&](const Keyphrase& kp, Item& it) {
      it.key = kp.key();
      it.blank = kp.phrase->blank();
      it.stems = kp.stems();
      it.len = static_cast<std::uint32_t>(it.stems.size());
    };
    for (const Keyphrase& kp : doc.preds) __builtin_prefetch(&kp.phrase->key);
    for (const Keyphrase& kp : doc.refs) __builtin_prefetch(&kp.phrase->key);
    for (std::size_t i = 0; i < n_preds; ++i) phrase(doc.preds[i], preds[i]);
    blank_refs = stemmed_refs = 0;  // stemmed_refs: made with the stems' sets
    for (std::size_t j = 0; j < n_refs; ++j) {
      phrase(doc.refs[j], refs[j]);
      ref_keys[j] = refs[j].key;
      blank_refs |= static_cast<std::uint64_t>(refs[j].blank) << j;
      refs[j].alt_keys = doc.refs[j].alt_keys();
      if (!refs[j].alt_keys.empty()) alt_refs |= std::uint64_t{1} << j;
    }
  }
};

// This thread's items, shared by its kernels (DocItems::Load says when they are reused).
DocItems& ThreadItems() {
  thread_local DocItems items;
  return items;
}

std::size_t Row(const Document& doc, const Keyphrase* k) { return static_cast<std::size_t>(k - doc.preds.data()); }
std::size_t Col(const Document& doc, const Keyphrase* k) { return static_cast<std::size_t>(k - doc.refs.data()); }

std::uint64_t RefBits(const Document& doc, PhraseRefs refs) {
  std::uint64_t bits = 0;
  for (const Keyphrase* r : refs) bits |= std::uint64_t{1} << Col(doc, r);
  return bits;
}

// A subset's rows (indices into doc.preds) and its references' bits. View 0 is the whole lists, all of
// doc.preds and doc.refs in order: its rows are read without walking its pointers (a cache miss per
// document in a large corpus).
struct SubsetIndex {
  const Document* doc;
  PhraseRefs preds;
  bool whole;
  std::uint64_t cols;
  std::size_t row(std::size_t i) const { return whole ? i : Row(*doc, preds[i]); }
};

SubsetIndex IndexSubset(const Document& doc, int view, PhraseRefs preds, PhraseRefs refs) {
  const bool whole = view == 0 && preds.size() == doc.preds.size() && refs.size() == doc.refs.size();
  const std::uint64_t all = refs.size() >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << refs.size()) - 1;
  return {&doc, preds, whole, whole ? all : RefBits(doc, refs)};
}

std::uint64_t Bit(bool b, std::size_t j) { return static_cast<std::uint64_t>(b) << j; }

// Bit j for every reference j whose key is `key` (eval/ref_lanes.h: four keys a compare).
std::uint64_t KeyBits(const DocItems& d, TokenId key) { return eval_internal::EqualBits(d.ref_keys, d.n_refs, key); }

// Each row below is one item's relation to every reference, as bits. The tests are those of match.cc,
// the cheap ones first, for all references at once (eval/ref_lanes.h: their sizes and sets side by
// side), the search only where they leave a candidate: a run of stems (a substring) holds every stem
// id (byte) of the needle, so a needle whose set is not within the hay's is none.

// match.cc's KeyMatches(pred, reference j): the key is the reference's or one of its alternative keys.
[[gnu::always_inline]] inline std::uint64_t KeyRow(const DocItems& d, const Item& p) {
  std::uint64_t bits = KeyBits(d, p.key);
  for (std::uint64_t alt = d.alt_refs & ~bits; alt != 0; alt &= alt - 1) {
    const std::size_t j = static_cast<std::size_t>(std::countr_zero(alt));
    const auto keys = d.refs[j].alt_keys;
    if (std::find(keys.begin(), keys.end(), p.key) != keys.end()) bits |= Bit(true, j);
  }
  return bits;
}

// Every prediction's KeyRow, made once for a document's items (the exact and rank kernels both read
// them; in a KernelDocumentScope the second reads the first's).
const std::uint64_t* KeyRows(DocItems& d) {
  if (!d.have_key_rows) {
    for (std::size_t i = 0; i < d.n_preds; ++i) d.key_rows[i] = KeyRow(d, d.preds[i]);
    d.have_key_rows = true;
  }
  return d.key_rows;
}

bool StemsSearch(const Item& hay, const Item& needle) {
  return std::search(hay.stems.begin(), hay.stems.end(), needle.stems.begin(), needle.stems.end()) != hay.stems.end();
}

// match.cc's StemsRunIn(reference j, x) for every j: x's stems occur contiguously in the reference's
// (equal keys are equal stems; different keys of as many stems are not a run of each other).
std::uint64_t RunInRefsRow(const DocItems& d, const Item& x) {
  if (x.len == 0) return 0;
  std::uint64_t equal = KeyBits(d, x.key);
  std::uint64_t maybe = Within<false>(d.ref_len_lanes, d.ref_stem_sets, d.n_refs, x.len, x.stem_set).longer;
  for (maybe &= ~equal; maybe != 0; maybe &= maybe - 1) {
    const std::size_t j = static_cast<std::size_t>(std::countr_zero(maybe));
    if (StemsSearch(d.refs[j], x)) equal |= Bit(true, j);
  }
  return equal;
}

// match.cc's ZeschGurevychMatch relation of a non-blank prediction p to every reference j: j is not
// blank and StemsRunIn(j, p) || StemsRunIn(p, j).
std::uint64_t ZeschGurevychRow(const DocItems& d, const Item& p) {
  const std::uint64_t live_refs = ~d.blank_refs;
  const WithinRows within = Within(d.ref_len_lanes, d.ref_stem_sets, d.n_refs, p.len, p.stem_set);
  std::uint64_t equal = p.len > 0 ? KeyBits(d, p.key) & live_refs : 0;
  std::uint64_t p_in_r = p.len > 0 ? within.longer & live_refs : 0;
  std::uint64_t r_in_p = within.shorter & live_refs & d.stemmed_refs;
  for (p_in_r &= ~equal; p_in_r != 0; p_in_r &= p_in_r - 1) {
    const std::size_t j = static_cast<std::size_t>(std::countr_zero(p_in_r));
    if (StemsSearch(d.refs[j], p)) equal |= Bit(true, j);
  }
  for (r_in_p &= ~equal; r_in_p != 0; r_in_p &= r_in_p - 1) {
    const std::size_t j = static_cast<std::size_t>(std::countr_zero(r_in_p));
    if (StemsSearch(p, d.refs[j])) equal |= Bit(true, j);
  }
  return equal;
}

// The references whose keys are longer than `size` bytes and hold every byte of `bytes` (a ByteSet), and
// those shorter whose bytes it holds (eval/ref_lanes.h's WithinSizes: a key of 4 GiB or more drops none).
template <bool kShorter = true>
WithinRows KeysWithin(const DocItems& d, std::size_t size, std::uint64_t bytes) {
  return eval_internal::WithinSizes<kShorter>(d.ref_size_lanes, d.ref_byte_sets, d.n_refs, size, bytes);
}

// Python `b in a` on the keys' strings.
bool StrIn(const Item& b, const Item& a) { return a.str.find(b.str) != std::string_view::npos; }

// match.cc's SubstringCover row (AlphaNdcgSubstring): p's string is in reference j's.
std::uint64_t InRefsRow(const DocItems& d, const Item& p) {
  // As long or longer: longer than one byte less (the empty string is in every reference).
  std::uint64_t maybe = p.str.empty() ? LowBits(d.n_refs) : KeysWithin<false>(d, p.str.size() - 1, p.byte_set).longer;
  std::uint64_t bits = 0;
  for (; maybe != 0; maybe &= maybe - 1) {
    const std::size_t j = static_cast<std::size_t>(std::countr_zero(maybe));
    if (StrIn(p, d.refs[j])) bits |= Bit(true, j);
  }
  return bits;
}

// match.cc's SubstrEitherKeys (SubstringMatch's relation) of p to every reference j: equal keys, or the
// shorter string is in the longer (two different strings of one length hold neither the other).
std::uint64_t SubstrEitherRow(const DocItems& d, const Item& p) {
  std::uint64_t equal = KeyBits(d, p.key);
  const WithinRows within = KeysWithin(d, p.str.size(), p.byte_set);
  std::uint64_t p_in_r = within.longer, r_in_p = within.shorter;
  for (p_in_r &= ~equal; p_in_r != 0; p_in_r &= p_in_r - 1) {
    const std::size_t j = static_cast<std::size_t>(std::countr_zero(p_in_r));
    if (StrIn(p, d.refs[j])) equal |= Bit(true, j);
  }
  for (r_in_p &= ~equal; r_in_p != 0; r_in_p &= r_in_p - 1) {
    const std::size_t j = static_cast<std::size_t>(std::countr_zero(r_in_p));
    if (StrIn(d.refs[j], p)) equal |= Bit(true, j);
  }
  return equal;
}

// A subset's running sums (RunningRankSums), read at each cut-off clipped to the list: HitsAt,
// PrecisionSumAt and DcgAt at k, the same numbers, each made once for all cut-offs. Per thread, grown
// to the longest list seen.
class RankSums {
 public:
  static RankSums& Of(std::span<const std::uint8_t> flags, bool gains) {
    thread_local RankSums sums;
    sums.n_ = flags.size();
    if (sums.hits_.size() < sums.n_ + 1) {
      sums.hits_.resize(sums.n_ + 1);
      sums.psum_.resize(sums.n_ + 1);
      sums.dcg_.resize(sums.n_ + 1);
    }
    RunningRankSums(flags, sums.hits_.data(), gains ? sums.psum_.data() : nullptr, gains ? sums.dcg_.data() : nullptr);
    return sums;
  }
  int HitsAt(std::size_t k) const { return hits_[std::min(k, n_)]; }
  double PrecisionSumAt(std::size_t k) const { return psum_[std::min(k, n_)]; }
  double DcgAt(std::size_t k) const { return dcg_[std::min(k, n_)]; }

 private:
  std::size_t n_ = 0;
  std::vector<int> hits_;
  std::vector<double> psum_, dcg_;
};

// plugins/exact.lua: per cut-off p, r, f1, hits, pden, rden.
class ExactKernel final : public MetricKernel {
 public:
  ExactKernel(const KernelParams& params, const Profile& profile)
      : ks_(params.ks), always_(profile.pk_denominator == "k_always") {
    for (const Cutoff& k : ks_) {
      for (const char* c : {"p", "r", "f1", "hits", "pden", "rden"}) names_.push_back(fmt::format("{}@{}", c, k.Text()));
    }
  }
  void Score(const Corpus& corpus, const Document& doc, std::span<const KernelSubset> subsets,
             std::span<double> values) const override {
    if (!FitsMasks(doc)) {
      for (std::size_t s = 0; s < subsets.size(); ++s) {
        const PhraseRefs preds = doc.pred_view(subsets[s].view), refs = doc.ref_view(subsets[s].view);
        Write(ExactMatch(preds, refs), preds.size(), refs.size(), &values[s * names_.size()]);
      }
      return;
    }
    DocItems& d = ThreadItems();
    d.Load(corpus, doc, false, false);
    const std::uint64_t* const match = KeyRows(d);
    std::uint8_t flags[kMaxItems];
    for (std::size_t s = 0; s < subsets.size(); ++s) {
      const PhraseRefs preds = doc.pred_view(subsets[s].view), refs = doc.ref_view(subsets[s].view);
      const SubsetIndex index = IndexSubset(doc, subsets[s].view, preds, refs);
      for (std::size_t i = 0; i < preds.size(); ++i) flags[i] = (match[index.row(i)] & index.cols) != 0;
      Write(std::span(flags, preds.size()), preds.size(), refs.size(), &values[s * names_.size()]);
    }
  }

 private:
  // One subset's values from its match flags (ExactMatch's).
  void Write(std::span<const std::uint8_t> flags, std::size_t n, std::size_t r, double* out) const {
    const RankSums& sums = RankSums::Of(flags, false);
    for (std::size_t i = 0; i < ks_.size(); ++i) {
      const std::size_t cut = ks_[i].Resolve(n, r);
      const int hits = sums.HitsAt(cut);
      const std::size_t pden = (n > 0 || always_) ? cut : 0;
      const double p = Ratio(hits, pden), rc = Ratio(hits, r);
      double* o = &out[i * 6];
      o[0] = p, o[1] = rc, o[2] = F1(p, rc);
      o[3] = hits, o[4] = static_cast<double>(pden), o[5] = static_cast<double>(r);
    }
  }

  std::vector<Cutoff> ks_;
  bool always_;
};

// plugins/rank.lua: mrr, then per cut-off ap, ndcg, alpha_ndcg.
class RankKernel final : public MetricKernel {
 public:
  RankKernel(const KernelParams& params, const Profile& profile)
      : ks_(params.ks),
        alpha_(params.alpha),
        ap_refs_(profile.ap_denominator == "refs"),
        own_ideal_(profile.ndcg_ideal == "own"),
        substring_(profile.alpha_ndcg == "substring") {
    names_.push_back("mrr");
    for (const Cutoff& k : ks_) {
      for (const char* c : {"ap", "ndcg", "alpha_ndcg"}) names_.push_back(fmt::format("{}@{}", c, k.Text()));
    }
  }
  void Score(const Corpus& corpus, const Document& doc, std::span<const KernelSubset> subsets,
             std::span<double> values) const override {
    if (!FitsMasks(doc)) {
      for (std::size_t s = 0; s < subsets.size(); ++s) {
        const PhraseRefs preds = doc.pred_view(subsets[s].view), refs = doc.ref_view(subsets[s].view);
        const std::size_t n = preds.size(), r = refs.size();
        const std::vector<std::size_t> cut = Resolve(ks_, n, r);
        const std::vector<double> alpha = substring_ ? AlphaNdcgSubstring(corpus.lex, preds, refs, cut, alpha_)
                                                     : AlphaNdcgWordPool(preds, refs, cut, alpha_);
        Write(ExactMatch(preds, refs), r, cut, alpha, &values[s * names_.size()]);
      }
      return;
    }
    DocItems& d = ThreadItems();
    d.Load(corpus, doc, !substring_, substring_);
    // Per prediction: the references it matches (ExactMatch) and those it covers as alpha-NDCG's
    // subtopics (AlphaNdcgSubstring: its string is in theirs; AlphaNdcgWordPool: its stems are a run of
    // theirs, and each reference's own coverage for the ideal's pool).
    const std::uint64_t* const match = KeyRows(d);
    std::uint64_t cover[kMaxItems], ref_cover[kMaxRefs];
    for (std::size_t i = 0; i < d.n_preds; ++i) {
      const Item& p = d.preds[i];
      if (substring_) {
        cover[i] = InRefsRow(d, p);
      } else {
        cover[i] = p.blank ? 0 : RunInRefsRow(d, p);
      }
    }
    if (!substring_) {
      for (std::size_t u = 0; u < d.n_refs; ++u) {
        const Item& item = d.refs[u];
        ref_cover[u] = item.blank ? 0 : RunInRefsRow(d, item);
      }
    }
    thread_local std::vector<std::size_t> cut;
    thread_local std::vector<double> alpha;
    std::uint8_t flags[kMaxItems];
    std::uint64_t pred_cover[kMaxItems], pool[kMaxItems];
    for (std::size_t s = 0; s < subsets.size(); ++s) {
      const PhraseRefs preds = doc.pred_view(subsets[s].view), refs = doc.ref_view(subsets[s].view);
      const std::size_t n = preds.size(), r = refs.size();
      const SubsetIndex index = IndexSubset(doc, subsets[s].view, preds, refs);
      const std::uint64_t cols = index.cols;
      for (std::size_t i = 0; i < n; ++i) {
        const std::size_t row = index.row(i);
        flags[i] = (match[row] & cols) != 0;
        pred_cover[i] = cover[row] & cols;
      }
      cut.resize(ks_.size());
      for (std::size_t i = 0; i < ks_.size(); ++i) cut[i] = ks_[i].Resolve(n, r);
      alpha.assign(ks_.size(), 0.0);
      if (n > 0 && r > 0) {
        // The ideal's pool: the predictions (substring), or the references then the predictions that
        // match none of them (word pool). At most n + r <= kMaxItems items.
        std::size_t pool_size = 0;
        if (substring_) {
          std::copy(pred_cover, pred_cover + n, pool);
          pool_size = n;
        } else {
          for (std::uint64_t bits = cols; bits != 0; bits &= bits - 1) {  // the references in list order
            pool[pool_size++] = ref_cover[std::countr_zero(bits)] & cols;
          }
          for (std::size_t i = 0; i < n; ++i) {
            if (!flags[i]) pool[pool_size++] = pred_cover[i];
          }
        }
        AlphaNdcgFromMasks(std::span(pred_cover, n), std::span(pool, pool_size), cut, alpha_, alpha);
      }
      Write(std::span(flags, n), r, cut, alpha, &values[s * names_.size()]);
    }
  }

 private:
  // One subset's values from its match flags, cut-offs and alpha-NDCG values.
  void Write(std::span<const std::uint8_t> flags, std::size_t r, std::span<const std::size_t> cut,
             std::span<const double> alpha, double* out) const {
    const RankSums& sums = RankSums::Of(flags, true);
    const std::size_t own_hits = static_cast<std::size_t>(sums.HitsAt(flags.size()));
    for (std::size_t i = 0; i < ks_.size(); ++i) {
      const double psum = sums.PrecisionSumAt(cut[i]);
      const double dcg = sums.DcgAt(cut[i]);
      const double ideal = IdealDcgAt(own_ideal_ ? own_hits : r, cut[i]);
      const std::size_t den = ap_refs_ ? r : std::min(r, cut[i]);
      double* o = &out[1 + i * 3];
      o[0] = Ratio(psum, den);
      o[1] = ideal > 0 ? dcg / ideal : 0;
      o[2] = alpha[i];
    }
    const int first = FirstHit(flags);
    out[0] = first > 0 ? 1.0 / first : 0;
  }

  std::vector<Cutoff> ks_;
  double alpha_;
  bool ap_refs_, own_ideal_, substring_;
};

// plugins/rprec.lua: rprec_substr, rprec_zg, substr_precision, substr_recall, substr_f1.
class RprecKernel final : public MetricKernel {
 public:
  explicit RprecKernel(const Profile& profile) : present_first_(profile.rprec_order == "present_first") {
    names_ = {"rprec_substr", "rprec_zg", "substr_precision", "substr_recall", "substr_f1"};
  }
  // The substring relation of every prediction-reference pair of the document is computed once; each
  // subset reads its rows and columns (SubstringMatch over a sub-list gives the same flags).
  void Score(const Corpus& corpus, const Document& doc, std::span<const KernelSubset> subsets,
             std::span<double> values) const override {
    if (!FitsMasks(doc)) {
      ScoreLists(corpus, doc, subsets, values);
      return;
    }
    DocItems& d = ThreadItems();
    d.Load(corpus, doc, true, true);
    std::uint64_t rel[kMaxItems];
    for (std::size_t i = 0; i < d.n_preds; ++i) {
      rel[i] = SubstrEitherRow(d, d.preds[i]);
    }
    // ZeschGurevychMatch's relation, for the rows a subset's top reads (usually a few).
    std::uint64_t zg[kMaxItems];
    std::uint8_t zg_done[kMaxItems];
    std::fill(zg_done, zg_done + d.n_preds, 0);
    auto zg_row = [&](std::size_t row) {
      if (!zg_done[row]) {
        const Item& p = d.preds[row];
        zg[row] = p.blank ? 0 : ZeschGurevychRow(d, p);
        zg_done[row] = 1;
      }
      return zg[row];
    };
    for (std::size_t s = 0; s < subsets.size(); ++s) {
      PhraseRefs preds = doc.pred_view(subsets[s].view);
      const PhraseRefs refs = doc.ref_view(subsets[s].view);
      const SubsetIndex index = IndexSubset(doc, subsets[s].view, preds, refs);
      const std::uint64_t cols = index.cols;
      int pred_hits = 0;
      std::uint64_t reached = 0;  // the subset's references some prediction relates to
      for (std::size_t i = 0; i < preds.size(); ++i) {
        const std::uint64_t bits = rel[index.row(i)] & cols;
        pred_hits += bits != 0;
        reached |= bits;
      }
      const PhraseRefs top = Top(doc, subsets[s], preds, refs.size());
      const bool reordered = !top.SharesStart(preds);
      int top_hits = 0, zg_hits = 0;
      for (std::size_t i = 0; i < top.size(); ++i) {
        const std::size_t row = reordered ? Row(doc, top[i]) : index.row(i);
        top_hits += (rel[row] & cols) != 0;
        zg_hits += (zg_row(row) & cols) != 0;
      }
      Write(preds.size(), refs.size(), pred_hits, std::popcount(reached), top_hits, zg_hits, &values[s * names_.size()]);
    }
  }

 private:
  // Score on the lists, for a document whose relations do not fit the masks.
  void ScoreLists(const Corpus& corpus, const Document& doc, std::span<const KernelSubset> subsets,
                  std::span<double> values) const {
    const auto& all_preds = doc.pred_view(0);
    const auto& all_refs = doc.ref_view(0);
    const std::size_t width = all_refs.size();
    const std::vector<std::uint8_t> rel = SubstringMatchPairs(corpus.lex, all_preds, all_refs);
    // Views hold pointers into doc.preds / doc.refs, so a pointer's offset is its row or column.
    std::vector<std::size_t> ref_cols;
    for (std::size_t s = 0; s < subsets.size(); ++s) {
      const PhraseRefs preds = doc.pred_view(subsets[s].view);
      const PhraseRefs refs = doc.ref_view(subsets[s].view);
      ref_cols.clear();
      for (const Keyphrase* r : refs) ref_cols.push_back(Col(doc, r));
      auto matches_some_ref = [&](const Keyphrase* p) {
        const std::uint8_t* cells = &rel[Row(doc, p) * width];
        for (std::size_t c : ref_cols) {
          if (cells[c]) return true;
        }
        return false;
      };
      int pred_hits = 0;
      for (const Keyphrase* p : preds) pred_hits += matches_some_ref(p);
      int ref_hits = 0;
      for (std::size_t c : ref_cols) {
        for (const Keyphrase* p : preds) {
          if (rel[Row(doc, p) * width + c]) {
            ++ref_hits;
            break;
          }
        }
      }
      const PhraseRefs top = Top(doc, subsets[s], preds, refs.size());
      int top_hits = 0;
      for (const Keyphrase* t : top) top_hits += matches_some_ref(t);
      const int zg_hits = HitsAt(ZeschGurevychMatch(top, refs), top.size());
      Write(preds.size(), refs.size(), pred_hits, ref_hits, top_hits, zg_hits, &values[s * names_.size()]);
    }
  }

  // The first min(R, n) predictions R-precision reads: of the list, or (profile rprec_order
  // "present_first", subset "all" of a document with text) of the list with its present predictions
  // first. Valid until the next call on this thread.
  PhraseRefs Top(const Document& doc, const KernelSubset& subset, PhraseRefs preds, std::size_t n_refs) const {
    if (subset.name == "all" && doc.has_text && present_first_) {
      thread_local std::vector<const Keyphrase*> ordered;
      ordered.assign(preds.begin(), preds.end());
      std::stable_partition(ordered.begin(), ordered.end(), [](const Keyphrase* k) { return k->present(); });
      preds = ordered;
    }
    return preds.first(std::min(n_refs, preds.size()));
  }

  void Write(std::size_t n, std::size_t R, int pred_hits, int ref_hits, int top_hits, int zg_hits, double* out) const {
    const double p = n > 0 ? pred_hits / static_cast<double>(n) : 0;
    const double rc = R > 0 ? ref_hits / static_cast<double>(R) : 0;
    out[2] = p, out[3] = rc;
    out[4] = p * rc != 0 ? 2 * p * rc / (p + rc) : 0;
    out[0] = R > 0 ? top_hits / static_cast<double>(R) : 0;
    out[1] = R > 0 ? zg_hits / static_cast<double>(R) : 0;
  }

  bool present_first_;
};

}  // namespace

KernelDocumentScope::KernelDocumentScope(const Document& doc) {
  t_scope.doc = &doc;
  ++t_scope.serial;
}
KernelDocumentScope::~KernelDocumentScope() { t_scope.doc = nullptr; }

Result<std::unique_ptr<MetricKernel>> MakeMetricKernel(std::string_view name, const KernelParams& params,
                                                       const Profile& profile) {
  if (name == "exact") return std::unique_ptr<MetricKernel>(std::make_unique<ExactKernel>(params, profile));
  if (name == "rank") return std::unique_ptr<MetricKernel>(std::make_unique<RankKernel>(params, profile));
  if (name == "rprec") return std::unique_ptr<MetricKernel>(std::make_unique<RprecKernel>(profile));
  return Error::Usage(fmt::format("unknown metric kernel '{}' (expected one of: exact, rank, rprec)", name));
}

}  // namespace kplab
