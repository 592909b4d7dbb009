#include "kplab/kernels.h"

#include <algorithm>

#include <fmt/format.h>

namespace kplab {

namespace {

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

// plugins/exact.lua: per cut-off p, r, f1, hits, pden, rden.
class ExactKernel final : public MetricKernel {
 public:
  ExactKernel(const KernelParams& params, const Profile& profile)
      : ks_(params.ks), always_(profile.pk_denominator == "k_always") {
    for (const Cutoff& k : ks_) {
      for (const char* c : {"p", "r", "f1", "hits", "pden", "rden"}) names_.push_back(fmt::format("{}@{}", c, k.Text()));
    }
  }
  void Score(const Corpus&, const Document& doc, std::span<const KernelSubset> subsets,
             std::span<double> values) const override {
    for (std::size_t s = 0; s < subsets.size(); ++s) {
      const PhraseRefs preds = doc.pred_view(subsets[s].view), refs = doc.ref_view(subsets[s].view);
      const std::size_t n = preds.size(), r = refs.size();
      const std::vector<std::uint8_t> flags = ExactMatch(preds, refs);
      for (std::size_t i = 0; i < ks_.size(); ++i) {
        const std::size_t cut = ks_[i].Resolve(n, r);
        const int hits = HitsAt(flags, cut);
        const std::size_t pden = (n > 0 || always_) ? cut : 0;
        const double p = Ratio(hits, pden), rc = Ratio(hits, r);
        double* o = &values[s * names_.size() + i * 6];
        o[0] = p, o[1] = rc, o[2] = F1(p, rc);
        o[3] = hits, o[4] = static_cast<double>(pden), o[5] = static_cast<double>(r);
      }
    }
  }

 private:
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
    for (std::size_t s = 0; s < subsets.size(); ++s) {
      const PhraseRefs preds = doc.pred_view(subsets[s].view), refs = doc.ref_view(subsets[s].view);
      const std::size_t n = preds.size(), r = refs.size();
      const std::vector<std::uint8_t> flags = ExactMatch(preds, refs);
      const std::vector<std::size_t> cut = Resolve(ks_, n, r);
      const std::vector<double> alpha = substring_ ? AlphaNdcgSubstring(corpus.lex, preds, refs, cut, alpha_)
                                                   : AlphaNdcgWordPool(preds, refs, cut, alpha_);
      const std::size_t own_hits = static_cast<std::size_t>(HitsAt(flags, flags.size()));
      double* out = &values[s * names_.size()];
      for (std::size_t i = 0; i < ks_.size(); ++i) {
        const double psum = PrecisionSumAt(flags, cut[i]);
        const double dcg = DcgAt(flags, cut[i]);
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
  }


 private:
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
    const auto& all_preds = doc.pred_view(0);
    const auto& all_refs = doc.ref_view(0);
    const std::size_t width = all_refs.size();
    const std::vector<std::uint8_t> rel = SubstringMatchPairs(corpus.lex, all_preds, all_refs);
    // Views hold pointers into doc.preds / doc.refs, so a pointer's offset is its row or column.
    auto row = [&](const Keyphrase* k) { return static_cast<std::size_t>(k - doc.preds.data()); };
    auto col = [&](const Keyphrase* k) { return static_cast<std::size_t>(k - doc.refs.data()); };
    std::vector<std::size_t> ref_cols;
    std::vector<const Keyphrase*> ordered;
    for (std::size_t s = 0; s < subsets.size(); ++s) {
      PhraseRefs preds = doc.pred_view(subsets[s].view);
      const PhraseRefs refs = doc.ref_view(subsets[s].view);
      const std::size_t n = preds.size(), R = refs.size();
      ref_cols.clear();
      for (const Keyphrase* r : refs) ref_cols.push_back(col(r));
      auto matches_some_ref = [&](const Keyphrase* p) {
        const std::uint8_t* cells = &rel[row(p) * width];
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
          if (rel[row(p) * width + c]) {
            ++ref_hits;
            break;
          }
        }
      }
      double* out = &values[s * names_.size()];
      const double p = n > 0 ? pred_hits / static_cast<double>(n) : 0;
      const double rc = R > 0 ? ref_hits / static_cast<double>(R) : 0;
      out[2] = p, out[3] = rc;
      out[4] = p * rc != 0 ? 2 * p * rc / (p + rc) : 0;
      if (subsets[s].name == "all" && doc.has_text && present_first_) {
        ordered.assign(preds.begin(), preds.end());
        std::stable_partition(ordered.begin(), ordered.end(), [](const Keyphrase* k) { return k->present(); });
        preds = ordered;
      }
      const PhraseRefs top = preds.first(std::min(R, n));
      int top_hits = 0;
      for (const Keyphrase* t : top) top_hits += matches_some_ref(t);
      out[0] = R > 0 ? top_hits / static_cast<double>(R) : 0;
      auto hits = [](const std::vector<std::uint8_t>& flags) { return HitsAt(flags, flags.size()); };
      out[1] = R > 0 ? hits(ZeschGurevychMatch(top, refs)) / static_cast<double>(R) : 0;
    }
  }


 private:
  bool present_first_;
};

}  // namespace

Result<std::unique_ptr<MetricKernel>> MakeMetricKernel(std::string_view name, const KernelParams& params,
                                                       const Profile& profile) {
  if (name == "exact") return std::unique_ptr<MetricKernel>(std::make_unique<ExactKernel>(params, profile));
  if (name == "rank") return std::unique_ptr<MetricKernel>(std::make_unique<RankKernel>(params, profile));
  if (name == "rprec") return std::unique_ptr<MetricKernel>(std::make_unique<RprecKernel>(profile));
  return Error{fmt::format("unknown metric kernel '{}' (expected one of: exact, rank, rprec)", name),
               ErrorKind::kUsage};
}

}  // namespace kplab
