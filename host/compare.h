// `kplab runs compare A B`: aggregates side by side, and for every per-document metric both runs
// have, the paired difference over the documents they share with a bootstrap percentile CI and an
// approximate-randomization p-value (Holm-adjusted across the metrics as well).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kplab/result.h"
#include "kplab/store.h"

namespace kplab::host {

struct CompareOptions {
  int resamples = 1000;      // bootstrap resamples and randomization flips, each
  double confidence = 0.95;
  std::uint64_t seed = 1;
  int threads = 0;           // 0: one per core
};

struct CompareRow {
  std::string metric;
  double a = 0, b = 0;  // aggregate values (or, for per-document-only rows, means over shared docs)
  // For a metric with a per-document column in both runs: over the documents where both are defined.
  bool paired = false;
  std::size_t n = 0;       // documents in the comparison
  double mean_diff = 0;    // mean of B - A per document
  double ci_low = 0, ci_high = 0;
  double p = 0, p_holm = 0;
};

struct Comparison {
  std::int64_t a = 0, b = 0;
  std::size_t shared_docs = 0;  // document ids present in both runs
  std::vector<CompareRow> rows;  // A's aggregate order
};

Result<Comparison> CompareRuns(RunStore& store, std::int64_t a, std::int64_t b, const CompareOptions& opt);

}  // namespace kplab::host
