// `kplab runs compare A B`: aggregates side by side, and for every per-document metric both runs
// have, the paired difference over the documents they share with a bootstrap percentile CI and an
// approximate-randomization p-value, Holm-adjusted over exactly the metrics shown (identical columns
// tested once).
//
// Threads: CompareRuns uses its RunStore on the calling thread (one store per thread) and spreads the paired
// tests over threads of its own (opt.threads), each metric with its own seed; the options and results are plain
// values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kplab/result.h"
#include "kplab/store.h"
#include "sandbox.h"

namespace kplab::host {

struct CompareOptions {
  // Resamples of the randomization test; 0 = chosen from the family size m so that Holm can reach
  // 0.05: max(kMinResamples, 40 m) (the smallest p is 1 / (resamples + 1), Holm multiplies it by m).
  int resamples = 0;
  int ci_resamples = 1000;   // bootstrap resamples of the CI
  double confidence = 0.95;
  std::uint64_t seed = 1;
  int threads = 0;           // 0: one per core
  std::vector<std::string> metrics;  // glob patterns ('*', '?') over aggregate names; empty = all
  bool force = false;        // compare runs on different datasets (documents paired by id)
  // Corpus-level metrics (not the mean of a per-document column: ECE, micro averages, CP over pairs) are
  // tested by re-running their plugin's aggregation over the runs' stored slots (`kplab eval --ci`
  // stores them), so the plugin files are looked up as `kplab runs merge` does.
  std::vector<std::string> plugin_dirs;
  Limits limits;
};

inline constexpr int kMinResamples = 9999;

struct CompareRow {
  std::string metric;
  double a = 0, b = 0;  // aggregate values
  // For a metric with a per-document column in both runs: over the documents where both are defined.
  bool paired = false;
  std::size_t n = 0;       // documents in the comparison
  double mean_diff = 0;    // mean of B - A per document
  double ci_low = 0, ci_high = 0;
  double p = 0, p_holm = 0;
  // The paired per-document values equal those of an earlier shown metric (e.g. r@10 and r@M when no
  // document has more than 10 predictions): the same test, counted once in Holm's family.
  std::string same_as;
  // A corpus-level metric tested by re-aggregating resampled slots (mean_diff is then B - A of the
  // aggregates over the shared documents, ci the paired bootstrap percentile CI of that difference, p the
  // approximate randomization test swapping each document's slots between the runs).
  bool resampled = false;
  std::string unit;  // what was resampled: "documents", or the plugin's units ("pairs")
  // Why a corpus-level metric has no test (e.g. a run stored without slots); empty otherwise.
  std::string untested;
};

struct Comparison {
  RunRecord a, b;               // the two runs' records (ids, system, dataset, profile)
  std::size_t shared_docs = 0;  // document ids present in both runs
  std::vector<CompareRow> rows;  // A's aggregate order, the selected metrics only
  std::size_t family = 0;       // distinct tests in Holm's family
  int resamples = 0;            // randomization resamples used (at most; see stop_after_hits)
  int ci_resamples = 0;
  std::vector<std::string> warnings;  // e.g. different profiles
};

// Errors: a run that does not exist or failed; runs on different datasets (content hash) unless
// opt.force; no shared documents; a pattern that selects no metric.
Result<Comparison> CompareRuns(RunStore& store, std::int64_t a, std::int64_t b, const CompareOptions& opt);

// fnmatch-style glob over a metric name: '*' any run of characters, '?' one character.
bool GlobMatch(std::string_view pattern, std::string_view name);

}  // namespace kplab::host
