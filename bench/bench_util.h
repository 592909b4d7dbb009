// Small helpers shared by the benchmark programs: wall-clock timing, aborting on a failed Result, and
// the median of repeated timings.
#pragma once

#include <errno.h>  // program_invocation_short_name (glibc)

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <utility>
#include <vector>

#include "kplab/result.h"
#include "kplab/stats.h"

namespace kplab::bench {

using Clock = std::chrono::steady_clock;

inline double Since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// The value of r, or the error on stderr ("PROGRAM: what: message") and exit status 1.
template <class T>
T Must(Result<T> r, const char* what) {
  if (!r.ok()) {
    std::cerr << program_invocation_short_name << ": " << what << ": " << r.error().message << "\n";
    std::exit(1);
  }
  return std::move(*r);
}

// Median of timings (at least one).
inline double Median(const std::vector<double>& v) { return *stats::Median(v); }

}  // namespace kplab::bench
