#include "bootstrap.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_map>

#include <fmt/format.h>

#include "lua_util.h"

namespace kplab::host {

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
}  // namespace

BootstrapDraws::BootstrapDraws(std::size_t n, std::uint64_t seed)
    : n_(static_cast<std::uint32_t>(n)), rng_(seed), idx_(n) {}

const std::vector<std::uint32_t>& BootstrapDraws::Next() {
  for (auto& i : idx_) i = rng_.Below(n_);
  return idx_;
}

void PickRows(const SlotValues& in, std::span<const std::uint32_t> idx, SlotValues& out) {
  out.resize(in.size());
  for (std::size_t s = 0; s < in.size(); ++s) {
    out[s].resize(in[s].size());
    for (std::size_t j = 0; j < in[s].size(); ++j) {
      const auto& src = in[s][j];
      auto& dst = out[s][j];
      if (src.empty()) {
        dst.clear();
        continue;
      }
      dst.resize(idx.size());
      for (std::size_t k = 0; k < idx.size(); ++k) dst[k] = src[idx[k]];
    }
  }
}

Status AggregateByName(LuaVm& vm, const MetricPlugin& plugin, const DeclaredColumns& decl, const SlotValues& values,
                       const std::function<void(lua_State*)>& push_ctx, const std::vector<std::string>& names,
                       std::vector<double>& out) {
  std::vector<AggregateValue> aggs;
  if (Status st = ComputeAggregates(vm, plugin, decl, values, push_ctx, &aggs); !st.ok()) return st;
  out.assign(names.size(), kNaN);
  // Both lists are short (a plugin's aggregates); ComputeAggregates keeps the declaration order, so the
  // scan from the last match is linear in the common case.
  std::size_t from = 0;
  for (std::size_t i = 0; i < names.size(); ++i) {
    for (std::size_t t = 0; t < aggs.size(); ++t) {
      const std::size_t k = (from + t) % aggs.size();
      if (aggs[k].metric == names[i]) {
        out[i] = aggs[k].value;
        from = k + 1;
        break;
      }
    }
  }
  return Status::Ok();
}

Status BootstrapAggregates(LuaVm& vm, const MetricPlugin& plugin, const DeclaredColumns& decl, const SlotValues& values,
                           std::size_t rows, const std::function<void(lua_State*)>& push_ctx, const stats::BootstrapOptions& opt,
                           std::vector<AggregateValue>& aggs) {
  if (rows == 0 || aggs.empty()) return Status::Ok();
  if (rows >= (std::size_t{1} << 32)) {
    return Error::Limit(fmt::format("metric '{}': {} rows are too many to resample", plugin.name, rows));
  }
  std::vector<std::string> names;
  for (const auto& a : aggs) names.push_back(a.metric);
  std::vector<std::vector<double>> samples(aggs.size());
  for (auto& s : samples) s.reserve(static_cast<std::size_t>(opt.n_resamples));
  BootstrapDraws draws(rows, opt.seed);
  SlotValues picked;
  std::vector<double> got;
  for (int r = 0; r < opt.n_resamples; ++r) {
    PickRows(values, draws.Next(), picked);
    if (Status st = AggregateByName(vm, plugin, decl, picked, push_ctx, names, got); !st.ok()) return st;
    for (std::size_t i = 0; i < got.size(); ++i) {
      if (!std::isnan(got[i])) samples[i].push_back(got[i]);
    }
  }
  const double qs[2] = {(1 - opt.confidence) / 2, (1 + opt.confidence) / 2};
  for (std::size_t i = 0; i < aggs.size(); ++i) {
    if (samples[i].empty()) continue;
    auto q = stats::Quantiles(samples[i], qs);
    if (!q) return q.error();
    // Interpolating next to an infinite resample gives NaN (inf - inf); the bound is then the order
    // statistic on the infinite side, as the value it stands for is unbounded (an overflowing mean).
    for (int b = 0; b < 2; ++b) {
      if (!std::isnan((*q)[b])) continue;
      std::vector<double> sorted = samples[i];
      std::sort(sorted.begin(), sorted.end());
      const double pos = qs[b] * static_cast<double>(sorted.size() - 1);
      const double lo = sorted[static_cast<std::size_t>(std::floor(pos))];
      const double hi = sorted[static_cast<std::size_t>(std::ceil(pos))];
      (*q)[b] = std::isinf(lo) ? lo : hi;
    }
    aggs[i].ci_low = (*q)[0];
    aggs[i].ci_high = (*q)[1];
  }
  return Status::Ok();
}

std::string NotResampleable(const MetricPlugin& plugin) {
  if (plugin.api < 2) {
    return fmt::format("{} is plugin API 1, whose aggregate(cols) cannot be re-run over resampled documents (plugin "
                       "API 2 declares its aggregation in columns(c, params))",
                       plugin.file.display_name);
  }
  if (!plugin.unmergeable.empty()) {
    return fmt::format("{} declares unmergeable = \"{}\"", plugin.file.display_name, plugin.unmergeable);
  }
  return "";
}

Result<std::unique_ptr<Reaggregation>> Reaggregation::Open(LuaVm& vm, const MetricPlugin& plugin) {
  std::unique_ptr<Reaggregation> r(new Reaggregation(vm));
  vm.BeginRun(LuaVm::NewRunBudget(vm.limits()));
  if (Status st = DeclareColumns(vm, plugin, r->decl_); !st.ok()) return st.error();
  lua_pop(vm.state(), 1);  // ctx.slots: nothing is scored here
  return r;
}

Reaggregation::~Reaggregation() {
  if (decl_.customs_ref != -2) luaL_unref(vm_.state(), LUA_REGISTRYINDEX, decl_.customs_ref);
  vm_.EndRun();
}

SlotValues UnitSlotValues(const MetricPlugin& plugin, const DeclaredColumns& decl, const std::vector<UnitRow>& units) {
  const std::size_t n_sub = plugin.subsets.empty() ? 1 : plugin.subsets.size();
  SlotValues out(n_sub, std::vector<std::vector<double>>(decl.slots.size(), std::vector<double>(units.size(), kNaN)));
  for (std::size_t u = 0; u < units.size(); ++u) {
    for (const auto& [slot, v] : units[u].values) out[units[u].subset][static_cast<std::size_t>(slot - 1)][u] = v;
  }
  return out;
}

std::vector<SlotColumn> UnitSlotColumns(const MetricPlugin& plugin,
                                        const std::vector<std::pair<std::string, bool>>& slot_names,
                                        const std::vector<UnitRow>& units) {
  std::vector<SlotColumn> out;
  SlotColumn doc{0, kUnitSubset, 1, "doc", true, {}}, key{0, kUnitSubset, 2, "key", true, {}},
      sub{0, kUnitSubset, 3, "subset", true, {}};
  for (const UnitRow& u : units) {
    doc.values.push_back(static_cast<double>(u.doc));
    key.values.push_back(u.key);
    sub.values.push_back(static_cast<double>(u.subset));
  }
  out.push_back(std::move(doc));
  out.push_back(std::move(key));
  out.push_back(std::move(sub));
  const std::size_t n_sub = plugin.subsets.empty() ? 1 : plugin.subsets.size();
  for (std::size_t s = 0; s < n_sub; ++s) {
    std::vector<std::vector<double>> cols(slot_names.size());
    bool any = false;
    for (std::size_t u = 0; u < units.size(); ++u) {
      if (units[u].subset != s) continue;
      for (const auto& [slot, v] : units[u].values) {
        auto& col = cols[static_cast<std::size_t>(slot - 1)];
        if (col.empty()) col.assign(units.size(), kNaN);
        col[u] = v;
        any = true;
      }
    }
    if (!any) continue;
    for (std::size_t j = 0; j < cols.size(); ++j) {
      if (cols[j].empty()) continue;
      out.push_back(SlotColumn{0, "#" + (plugin.subsets.empty() ? std::string() : plugin.subsets[s]),
                               static_cast<int64_t>(j + 1), slot_names[j].first, slot_names[j].second,
                               std::move(cols[j])});
    }
  }
  return out;
}

StoredUnits ReadUnits(const std::vector<SlotColumn>& slots, std::int64_t pi, const MetricPlugin& plugin,
                      std::size_t n_slots) {
  StoredUnits out;
  const std::vector<double>*doc = nullptr, *key = nullptr, *sub = nullptr;
  for (const SlotColumn& c : slots) {
    if (c.plugin != pi || c.subset != kUnitSubset) continue;
    (c.slot == 1 ? doc : c.slot == 2 ? key : sub) = &c.values;
  }
  if (!doc || !key || !sub || doc->size() != key->size() || doc->size() != sub->size()) return out;
  const std::size_t n = doc->size();
  const std::size_t n_sub = plugin.subsets.empty() ? 1 : plugin.subsets.size();
  out.values.assign(n_sub, std::vector<std::vector<double>>(n_slots, std::vector<double>(n, kNaN)));
  for (std::size_t u = 0; u < n; ++u) out.ids.emplace_back(static_cast<std::size_t>((*doc)[u]), (*key)[u]);
  for (const SlotColumn& c : slots) {
    if (c.plugin != pi || c.subset.empty() || c.subset[0] != '#' || c.subset == kUnitSubset) continue;
    const std::string name = c.subset.substr(1);
    std::size_t s = 0;
    if (!plugin.subsets.empty()) {
      auto it = std::find(plugin.subsets.begin(), plugin.subsets.end(), name);
      if (it == plugin.subsets.end()) continue;
      s = static_cast<std::size_t>(it - plugin.subsets.begin());
    } else if (!name.empty()) {
      continue;
    }
    if (c.slot < 1 || static_cast<std::size_t>(c.slot) > n_slots || c.values.size() != n) continue;
    out.values[s][static_cast<std::size_t>(c.slot - 1)] = c.values;
  }
  return out;
}

std::size_t RowCount(const SlotValues& values) {
  for (const auto& sub : values) {
    for (const auto& col : sub) {
      if (!col.empty()) return col.size();
    }
  }
  return 0;
}

}  // namespace kplab::host
