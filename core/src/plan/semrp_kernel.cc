#include "kplab/semrp_kernel.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

#include "kplab/match.h"
#include "kplab/sim.h"

namespace kplab {

namespace {

class SemrpKernel final : public MetricKernel {
 public:
  SemrpKernel(std::shared_ptr<const EmbeddingSpace> space, const SemrpParams& params, const Profile& profile)
      : space_(std::move(space)),
        p_(params),
        form_(profile.semrp_embed == "stems" ? EmbedForm::kStems : EmbedForm::kSurface),
        present_first_(profile.rprec_order == "present_first"),
        min_preds_refs_(profile.semrp_denominator == "min_preds_refs"),
        keep_repeats_(p_.dedup == "false" && profile.dedup),
        drop_repeats_(p_.dedup == "true" && !profile.dedup) {
    // Every row's norm once (CosineMatrix recomputes them per call; the values are the same).
    norms_ = RowNorms(space_->vecs.data(), space_->has.data(), static_cast<int>(space_->has.size()), space_->dims);
    names_ = {"semrp", "semrp_div", "semrp_ak", "semrp_dk"};
    for (int k : p_.ks) names_.push_back(fmt::format("semrp_k{}", k));
  }

  void Score(const Corpus& corpus, const Document& doc, std::span<const KernelSubset> subsets,
             std::span<double> values) const override {
    std::vector<const Keyphrase*> ordered, listed;
    std::vector<std::int32_t> rt, rr;
    for (std::size_t s = 0; s < subsets.size(); ++s) {
      double* out = &values[s * names_.size()];
      PhraseRefs preds = doc.pred_view(subsets[s].view);
      const PhraseRefs refs = doc.ref_view(subsets[s].view);
      if (keep_repeats_ && !doc.pred_view_dups().empty()) {
        // The corpus dropped repeats; its list before dedup (a repeat points at its first occurrence, so
        // it scores the same) restricted to the subset, whose present flag every repeat shares.
        const int view = subsets[s].view;
        listed.clear();
        for (const Keyphrase* k : doc.pred_view_dups()) {
          if (view == 0 || (view == 1) == k->present()) listed.push_back(k);
        }
        preds = listed;
      } else if (drop_repeats_) {
        listed.clear();
        for (const Keyphrase* k : preds) {
          const bool seen = std::any_of(listed.begin(), listed.end(), [&](const Keyphrase* e) {
            return corpus.DedupKey(*e->phrase) == corpus.DedupKey(*k->phrase);
          });
          if (!seen) listed.push_back(k);
        }
        preds = listed;
      }
      if (subsets[s].name == "all" && doc.has_text && present_first_) {
        ordered.assign(preds.begin(), preds.end());
        std::stable_partition(ordered.begin(), ordered.end(), [](const Keyphrase* k) { return k->present(); });
        preds = ordered;
      }
      const std::size_t R = refs.size();
      const PhraseRefs top = preds.first(std::min(R, preds.size()));
      const std::size_t n = top.size();
      if (n == 0) {
        std::fill(out, out + names_.size(), 0.0);
        continue;
      }
      const double den = static_cast<double>(min_preds_refs_ ? std::min(n, R) : R);
      Rows(top, rt);
      Rows(refs, rr);
      Matrix S(static_cast<int>(n), static_cast<int>(R), 0.0);
      for (std::size_t i = 0; i < n; ++i) {
        for (std::size_t j = 0; j < R; ++j) S.at(static_cast<int>(i), static_cast<int>(j)) = Cosine(rt[i], rr[j]);
      }
      if (p_.clamp) Clamp(S);
      const std::vector<std::uint8_t> flags = ExactMatch(top, refs);
      // semrp_sum(S:row_topk_means(k), flags): 1 for a stem match, else the row's top-k mean, summed in order.
      auto semrp_sum = [&](long long k) {
        const int kk = static_cast<int>(std::min<long long>(k, S.cols + 1));
        double sum = 0;
        for (int r = 0; r < S.rows; ++r) sum += flags[static_cast<std::size_t>(r)] ? 1.0 : RowTopKMean(S, r, kk);
        return sum;
      };
      out[0] = semrp_sum(p_.k) / den;
      // Div: one maximum-weight assignment over max(S, exact-match pairs).
      Matrix W = S;
      const std::vector<std::uint8_t> pairs = ExactMatchPairs(top, refs);
      for (std::size_t i = 0; i < W.v.size(); ++i) W.v[i] = std::fmax(S.v[i], static_cast<double>(pairs[i]));
      Result<Assignment> a = MaxWeightAssignment(W);
      if (!a.ok()) throw std::runtime_error(a.error().message);
      out[1] = a->total / den;
      // max(1, min(R, ...)) as Lua's math.min/max compute it, in doubles: a huge alpha or a NaN density
      // gives R, never an out-of-range integer conversion.
      const double Rd = static_cast<double>(R);
      auto clip = [&](double k) { return static_cast<long long>(std::max(1.0, std::min(Rd, k))); };
      out[2] = semrp_sum(clip(std::ceil(p_.alpha * Rd))) / den;
      double d = 0;
      if (R >= 2) {
        // The mean above the diagonal of the references' cosine matrix (mean_upper), in its row order;
        // only those cells are computed.
        double sum = 0;
        std::size_t count = 0;
        for (std::size_t r = 0; r < R; ++r) {
          for (std::size_t c = r + 1; c < R; ++c) {
            double x = Cosine(rr[r], rr[c]);
            if (p_.clamp && !std::isnan(x)) x = std::clamp(x, 0.0, 1.0);
            sum += x;
            ++count;
          }
        }
        d = sum / static_cast<double>(count);
      }
      out[3] = semrp_sum(clip(std::floor(1 + std::max(d, 0.0) * static_cast<double>(R - 1) + 0.5))) / den;
      for (std::size_t j = 0; j < p_.ks.size(); ++j) out[4 + j] = semrp_sum(p_.ks[j]) / den;
    }
  }

 private:
  // The space rows of a list's phrases in the run's form (as ctx.cosine gathers them).
  void Rows(PhraseRefs items, std::vector<std::int32_t>& rows) const {
    rows.resize(items.size());
    for (std::size_t i = 0; i < items.size(); ++i) {
      rows[i] = space_->Row(*items[i]->phrase, form_);
      if (rows[i] < 0) {
        throw std::runtime_error(fmt::format("the {} form of phrase '{}' was not embedded in the plan",
                                             form_ == EmbedForm::kStems ? "stems" : "surface", items[i]->surface()));
      }
    }
  }
  // ctx.cosine's cell for two rows (CosineMatrix, with the norms kept).
  double Cosine(std::int32_t a, std::int32_t b) const {
    const std::size_t d = static_cast<std::size_t>(space_->dims);
    return CosineOf(space_->vecs.data() + static_cast<std::size_t>(a) * d, norms_[static_cast<std::size_t>(a)],
                    space_->vecs.data() + static_cast<std::size_t>(b) * d, norms_[static_cast<std::size_t>(b)],
                    space_->dims);
  }
  static void Clamp(Matrix& m) {
    for (double& x : m.v) {
      if (!std::isnan(x)) x = std::clamp(x, 0.0, 1.0);
    }
  }

  std::shared_ptr<const EmbeddingSpace> space_;
  std::vector<double> norms_;  // per space row
  SemrpParams p_;
  EmbedForm form_;
  bool present_first_, min_preds_refs_;
  bool keep_repeats_;  // semrp.dedup=false on a deduplicating profile: score the list before dedup
  bool drop_repeats_;  // semrp.dedup=true on a profile that keeps repeats: drop them here, first wins
};

}  // namespace

std::unique_ptr<MetricKernel> MakeSemrpKernel(std::shared_ptr<const EmbeddingSpace> space, const SemrpParams& params,
                                              const Profile& profile) {
  return std::make_unique<SemrpKernel>(std::move(space), params, profile);
}

}  // namespace kplab
