#include "lanes.h"

#include <algorithm>
#include <cmath>
#include <string_view>

namespace kplab::host {

double ScoringCostPerDocumentNs(const MetricPlugin& plugin) {
  // KPLAB_TIMING's phases at --threads 1 on KP20k's 20,000 documents, divided by 20,000: the kernels
  // exact 4.2 ms, rank 12.9 ms, rprec 13.2 ms (quiet machine); plugins/reference/{exact,rank,rprec}.lua,
  // the same arithmetic in Lua, 180-200 ms of CPU (9-10 us a document).
  struct Measured {
    std::string_view kernel;
    double ns;
  };
  static constexpr Measured kKernels[] = {{"exact", 210}, {"rank", 645}, {"rprec", 660}};
  constexpr double kLua = 10'000;
  if (plugin.api >= 2 && !plugin.kernel.empty()) {
    for (const Measured& m : kKernels) {
      if (m.kernel == plugin.kernel) return m.ns;
    }
  }
  return kLua;
}

std::size_t LanesFor(const MetricPlugin& plugin, std::size_t n_docs, std::size_t max_lanes) {
  const std::size_t most = std::max<std::size_t>(1, std::min(max_lanes, n_docs));
  const double work = static_cast<double>(n_docs) * ScoringCostPerDocumentNs(plugin);
  const double paid = std::floor(work / kLaneWorkNs);
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
