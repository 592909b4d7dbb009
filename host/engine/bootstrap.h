// Uncertainty for every aggregate, corpus-level ones included (ECE, micro averages, CP over pairs):
// a plugin of API 2 declares how its run-level values follow from per-row slot values, so the
// bootstrap re-runs that aggregation (the one `kplab runs merge` re-runs) over resampled rows instead
// of averaging a per-document column. `kplab eval --ci` and `kplab runs compare` use it
// (docs/store.md, "Confidence intervals for every aggregate").
//
// Threads: a BootstrapDraws (it holds an Rng) and a Reaggregation (it runs code in one LuaVm) are one per
// thread, as the VM is; the functions that take a LuaVm or a lua_State use it on the calling thread only;
// SlotValues and StoredUnits are plain values.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "columns.h"
#include "kplab/result.h"
#include "kplab/stats.h"
#include "kplab/store.h"
#include "plugin.h"
#include "runner.h"
#include "sandbox.h"

struct lua_State;

namespace kplab::host {

// The resamples, confidence and seed come as stats::BootstrapOptions: `kplab eval --ci` converts its
// CiOptions (evaluate.h, which this file does not include: evaluate.cc includes this one).

// values[s][j][d]: slot j + 1 of subset s for row d (an empty column: a subset no row wrote).
using SlotValues = std::vector<std::vector<std::vector<double>>>;

// The rows of bootstrap resample r (r = 0, 1, ...) of n rows: n indices rng.Below(n), in order, from
// one Rng(seed) drawn resample after resample (stats::BootstrapMeanCI's draws, so
// tests/reference/gen_bootstrap.py replays them with its own xoshiro256**).
class BootstrapDraws {
 public:
  BootstrapDraws(std::size_t n, std::uint64_t seed);
  const std::vector<std::uint32_t>& Next();

 private:
  std::uint32_t n_;
  stats::Rng rng_;
  std::vector<std::uint32_t> idx_;
};

// out[s][j][k] = in[s][j][idx[k]] (empty columns stay empty); `out` is reused between calls.
void PickRows(const SlotValues& in, std::span<const std::uint32_t> idx, SlotValues& out);

// The plugin's aggregates over `values` (ComputeAggregates), by name: out[i] = the value of names[i],
// NaN when the aggregation does not produce it. Errors are the plugin's (a custom function failing).
Status AggregateByName(LuaVm& vm, const MetricPlugin& plugin, const DeclaredColumns& decl, const SlotValues& values,
                       const std::function<void(lua_State*)>& push_ctx, const std::vector<std::string>& names,
                       std::vector<double>& out);

// Percentile bootstrap CI of every aggregate in `aggs` (the plugin's, over `values`): resample the rows
// (BootstrapDraws), aggregate, and take the (1 - confidence) / 2 and (1 + confidence) / 2 quantiles
// (numpy 'linear') of the resampled values that are defined. Sets ci_low / ci_high of each aggregate
// some resample defines; `rows` is the number of rows (documents, or pairs for a plugin with units).
Status BootstrapAggregates(LuaVm& vm, const MetricPlugin& plugin, const DeclaredColumns& decl, const SlotValues& values,
                           std::size_t rows, const std::function<void(lua_State*)>& push_ctx, const stats::BootstrapOptions& opt,
                           std::vector<AggregateValue>& aggs);

// Why a plugin's aggregates cannot be bootstrapped by re-aggregation (API 1: its aggregate(cols) is
// free code over public columns only; unmergeable: its aggregation needs more than the slots), or ""
// when they can.
std::string NotResampleable(const MetricPlugin& plugin);

// A plugin loaded in `vm` with its columns declared again (as `kplab runs merge` does) and a run budget
// of the VM's limits open, ready for AggregateByName; both are released by the destructor. The VM must
// outlive it and run nothing else meanwhile.
class Reaggregation {
 public:
  static Result<std::unique_ptr<Reaggregation>> Open(LuaVm& vm, const MetricPlugin& plugin);
  ~Reaggregation();
  Reaggregation(const Reaggregation&) = delete;
  Reaggregation& operator=(const Reaggregation&) = delete;
  const DeclaredColumns& decl() const { return decl_; }

 private:
  explicit Reaggregation(LuaVm& vm) : vm_(vm) {}
  LuaVm& vm_;
  DeclaredColumns decl_;
};

// The units a run reported (c:units, ctx.unit) as rows: out[s][j][u] = slot j + 1 unit u wrote in
// subset s, NaN when it wrote none (or was scored in another subset).
SlotValues UnitSlotValues(const MetricPlugin& plugin, const DeclaredColumns& decl, const std::vector<UnitRow>& units);

// How a run stores its units (`kplab eval --ci`, for `kplab runs compare`): subset kUnitSubset holds
// three columns, slot 1 "doc" (corpus index of the unit's document), slot 2 "key", slot 3 "subset"
// (index into the plugin's subsets); subset "#" + the plugin's subset ("#" alone without subsets)
// holds each slot's unit column, as UnitSlotValues. `plugin` of the columns is left 0.
inline constexpr const char* kUnitSubset = "#:units";
std::vector<SlotColumn> UnitSlotColumns(const MetricPlugin& plugin,
                                        const std::vector<std::pair<std::string, bool>>& slot_names,
                                        const std::vector<UnitRow>& units);

// The stored units of plugin `pi` back: the rows as UnitSlotValues, and each row's (document, key).
// Empty when the run stored none.
struct StoredUnits {
  SlotValues values;
  std::vector<std::pair<std::size_t, double>> ids;
};
StoredUnits ReadUnits(const std::vector<SlotColumn>& slots, std::int64_t pi, const MetricPlugin& plugin,
                      std::size_t n_slots);

// The number of rows of `values` (the length of any non-empty column; 0 when none).
std::size_t RowCount(const SlotValues& values);

}  // namespace kplab::host
