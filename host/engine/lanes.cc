#include "lanes.h"

#include <algorithm>
#include <cmath>
#include <string_view>

namespace kplab::host {

namespace {

// KPLAB_TIMING's phases at --threads 1 on KP20k's 20,000 documents, divided by 20,000: the kernels exact
// 4.2 ms, rank 12.9 ms, rprec 13.2 ms (quiet machine); plugins/reference/{exact,rank,rprec}.lua, the
// same arithmetic in Lua, 180-200 ms of CPU (9-10 us a document).
struct Measured {
  std::string_view kernel;
  double ns;
};
constexpr Measured kKernels[] = {{"exact", 210}, {"rank", 645}, {"rprec", 660}};
constexpr double kLua = 10'000;

// The native kernel's measured figure, or null (a plugin scored in Lua, or a kernel not measured).
const Measured* MeasuredKernel(const MetricPlugin& plugin) {
  if (plugin.api >= 2 && !plugin.kernel.empty()) {
    for (const Measured& m : kKernels) {
      if (m.kernel == plugin.kernel) return &m;
    }
  }
  return nullptr;
}

}  // namespace

double ScoringCostPerDocumentNs(const MetricPlugin& plugin) {
  const Measured* m = MeasuredKernel(plugin);
  return m ? m->ns : kLua;
}

double LaneWorkNs(const MetricPlugin& plugin) { return MeasuredKernel(plugin) ? kKernelLaneWorkNs : kLuaLaneWorkNs; }

std::size_t LanesFor(const MetricPlugin& plugin, std::size_t n_docs, std::size_t max_lanes) {
  const std::size_t most = std::max<std::size_t>(1, std::min(max_lanes, n_docs));
  const double work = static_cast<double>(n_docs) * ScoringCostPerDocumentNs(plugin);
  const double paid = std::floor(work / LaneWorkNs(plugin));
  return paid >= static_cast<double>(most) ? most : std::max<std::size_t>(1, static_cast<std::size_t>(paid));
}

bool ParseLanesSetting(const std::string& value, bool& by_cost) {
  if (value.empty() || value == "auto") {
    by_cost = true;
    return true;
  }
  if (value == "max") {
    by_cost = false;
    return true;
  }
  return false;
}

}  // namespace kplab::host
