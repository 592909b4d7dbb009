// Earth mover's distance between two histograms over the same n bins, as pyemd's emd() and
// emd_with_flow() compute it (pyemd 0.5.1, Debian python3-pyemd: Pele & Werman's FastEMD,
// emd_hat_gd_metric<double>), which MoverScore (Zhao et al., EMNLP 2019) calls. The result is exact,
// not an entropic (Sinkhorn) approximation, and reproduces FastEMD's own arithmetic:
//   1. the mass a bin has on both sides stays in place (cost 0; C is assumed a metric);
//   2. masses are scaled by 1e6 / max(sum p, sum q) and costs by 1e6 / max C, each rounded to an integer
//      (floor(x * f + 0.5));
//   3. the integer transportation problem is solved exactly: every unit the lighter side needs is moved
//      at least cost, the heavier side's surplus is dropped for free;
//   4. distance = integer cost / mass factor / cost factor + |sum p - sum q| * extra_mass_penalty
//      (-1: max C, FastEMD's EMD-hat).
// The optimal integer cost is unique, so the distance is FastEMD's to the last bit whatever optimal flow
// is found. The flow (emd_with_flow) is an optimal one; where several are optimal it may differ from
// FastEMD's. Like FastEMD, flow that leaves through the surplus or on the most expensive pairs is put back
// on bins in index order (transform_flow_to_regular). Pure function; thread-safe.
//
// Threads: no shared state: pure functions, safe from several threads at once.
#pragma once

#include <cstddef>
#include <functional>
#include <span>
#include <vector>

#include "kplab/result.h"

namespace kplab {

struct EmdOptions {
  double extra_mass_penalty = -1;  // -1: the largest cost, as pyemd's default
  bool flow = false;               // fill EmdResult::flow
  // Called now and then with the solver's work since the last call (about one step per cost cell read
  // or relaxed), so a caller can meter or stop a long solve; it may throw.
  std::function<void(double)> checkpoint;
};

struct EmdResult {
  double distance = 0;
  std::vector<double> flow;  // n x n row-major, flow[i * n + j] from bin i of p to bin j of q (options.flow)
};

// p and q: n masses each, finite and >= 0; cost: n x n row-major, finite and >= 0. Bad sizes or values
// are an Error naming the first offending entry. n = 0 gives distance 0. Two histograms that are both
// all zero give distance 0 and a zero flow (FastEMD divides by their zero total there).
Result<EmdResult> EarthMoversDistance(std::span<const double> p, std::span<const double> q,
                                      std::span<const double> cost, const EmdOptions& options = {});

}  // namespace kplab
