// Helpers shared by stats.cc and stats_fa.cc.
#pragma once

#include <optional>
#include <span>
#include <string_view>

#include "kplab/result.h"

namespace kplab::stats::internal {

// "fn: arg[i] is NaN" for the first NaN, else nullopt.
std::optional<Error> CheckNoNaN(std::span<const double> x, std::string_view fn, std::string_view arg);
// "fn: x and y must have the same length (got n and m)".
std::optional<Error> CheckSameLength(std::span<const double> x, std::span<const double> y,
                                     std::string_view fn);
// Pairwise (cascade) summation.
double PairwiseSum(const double* x, std::size_t n);

}  // namespace kplab::stats::internal
