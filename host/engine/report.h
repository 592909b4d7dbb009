// `kplab report RUNS... -o report.html` (docs/report.md): one self-contained HTML file (no network) with
// the leaderboard of the runs (as `runs table` prints it) and, per dataset, the figures kplab draws
// (per-document score distributions, the metric correlation heat map, each with its legend) and a
// per-document view: the source text with predictions and references highlighted as matched / present /
// absent, and the documents where two chosen runs (by default the baseline and the best other system)
// differ most. The page's HTML, style and script are report_assets/, embedded at build time.
//
// Threads: BuildReport uses its RunStore on the calling thread (one store per thread); ReportOptions is a plain
// value.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kplab/result.h"
#include "kplab/store.h"

namespace kplab::host {

struct ReportOptions {
  std::vector<std::int64_t> runs;      // at least one, status ok
  std::vector<std::string> metrics;    // leaderboard patterns; empty: the usual F1 columns that exist
  std::string doc_metric = "all.f1@5";  // per-document metric of the distributions and the document list
  std::string baseline;                // leaderboard significance and each dataset's run A (optional)
  std::string title = "kplab report";
};

// The HTML text. The per-document views re-read each run's dataset and predictions (refused when they
// changed since the run, as `runs doc`); one section per dataset, in the order the runs are given.
Result<std::string> BuildReport(RunStore& store, const ReportOptions& options);

}  // namespace kplab::host
