// Whether and how a stored aggregate is tested between paired runs: one rule for `kplab runs compare`
// and `kplab runs table` (docs/tables.md, "Which columns are tested").
//
// - kDocumentMean: the aggregate is the mean of a per-document column (x, x.macro, x.macro_doc) in every
//   run: a paired test of that column's mean.
// - kReaggregate: a corpus-level value recomputed from per-document rows, paired by document. Two forms
//   are recognized natively, and used by both commands: <s>.f1@k.macro_hm = the harmonic mean of the
//   means of <s>.p@k and <s>.r@k (public columns), and <s>.{p,r,f1}@k.micro = ratios of the sums of the
//   hidden slots hits@k / pden@k / rden@k (and their harmonic mean). Any other corpus-level value of runs
//   that stored their slots (ECE, CP over pairs) is re-aggregated by its plugin (kPlugin): `runs compare`
//   does; a table leaves it untested and says so.
// - kNone: not testable, with the reason.
// A form is used only when recomputing it over each run's own documents gives the stored value (1e-9
// relative), so a plugin that defines a name differently is never tested as if it did not.
//
// Threads: pure functions over plain values.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kplab/store.h"

namespace kplab::host {

struct TestPlan {
  enum class Kind { kDocumentMean, kReaggregate, kNone };
  enum class Form { kMean, kHarmonicOfMeans, kRatioOfSums, kF1OfRatios, kPlugin };
  Kind kind = Kind::kNone;
  Form form = Form::kPlugin;
  // The per-document inputs of the form, by name (a score column, or "<subset>.<slot>" of a stored slot):
  // kMean {x}; kHarmonicOfMeans {p, r}; kRatioOfSums {num, den}; kF1OfRatios {hits, pden, rden}.
  std::vector<std::string> inputs;
  std::string reason;  // kNone: why
};

// What a plan is decided from: one run's stored value of the metric and its stored per-document data.
struct RunEvidence {
  std::int64_t id = 0;
  double stored = 0;
  const RunRecord* record = nullptr;
  const ScoreColumns* scores = nullptr;
  const std::vector<SlotColumn>* slots = nullptr;  // empty: the run stored none
};

// The plan for `metric` over `runs` (every run that enters the test: both sides, every seed).
TestPlan PlanTest(const std::string& metric, const std::vector<RunEvidence>& runs);

// A run's per-document values of a form input (in the run's document order), or empty when it has none.
std::vector<double> InputColumn(const RunEvidence& run, const std::string& name);

// The form's value over rows: inputs[i][d] for input i and document d (every row defined).
double FormValue(TestPlan::Form form, const std::vector<std::vector<double>>& inputs);

struct PairedResult {
  double observed = 0;  // FormValue(b) - FormValue(a)
  double p = 1;         // two-sided, (1 + hits) / (1 + resamples drawn), or 50 / drawn when stopped
  int drawn = 0;
};

// Paired approximate randomization over documents of a native form: each resample swaps the two sides'
// rows of a document with probability 1/2 (bit d mod 64 of the (d div 64)-th word of stats::Rng(seed))
// and recomputes FormValue of both; a resample counts when |d_r| >= |d_obs| (1e-12 relative). Stops after
// `stop_after` counted resamples when it is > 0 (Besag-Clifford). `charge` (optional) is called with the
// work done every 64 resamples.
PairedResult PairedFormTest(TestPlan::Form form, const std::vector<std::vector<double>>& a,
                            const std::vector<std::vector<double>>& b, int resamples, std::uint64_t seed,
                            int stop_after, const std::function<void(double)>& charge = {});

}  // namespace kplab::host
