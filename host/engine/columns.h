// Declared result columns of a plugin of API 2 (docs/plugins.md): the plugin's columns(c, params)
// names its per-document slots once per run, and says how each run-level value is computed from them
// (mean, sum, ratio of sums, or a custom function), so the host collects and aggregates by slot.
//
// Threads: a DeclaredColumns is a plain value, read-only once declared (the lanes of a run read one); the
// functions that take a LuaVm or a lua_State use it on the calling thread only.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "kplab/result.h"
#include "kplab/store.h"
#include "plugin.h"
#include "sandbox.h"

struct lua_State;

namespace kplab::host {

class BorrowScope;  // lua_util.h

struct DeclaredColumns {
  struct Slot {
    std::string name;  // relative to the subset ("p@5"), or full ("all.cp_hooper") without subsets
    bool hidden = false;  // c:hidden: summed for aggregates, not a per-document column
  };
  enum class Kind { kMean, kSum, kRatio, kCustom };
  struct Aggregate {
    std::string name;
    Kind kind = Kind::kMean;
    int a = 0, b = 0;                // slots (1-based): mean/sum of a; ratio a / b
    std::optional<double> if_zero;   // ratio: the value when the sum of b is 0 (absent: no value)
    int custom = 0;                  // index into the customs table
  };
  std::vector<Slot> slots;  // slot j is slots[j - 1]
  std::unordered_map<std::string, int> slot_of;
  std::vector<Aggregate> aggregates;
  std::unordered_set<std::string> aggregate_names;
  int customs_ref = -2;  // registry: list of the custom functions, in the VM that declared them
  // registry: what the plugin's prepare(corpus, params, ctx) returned in this VM (deep read-only), handed
  // to score as ctx.prepared; LUA_NOREF without prepare.
  int prepared_ref = -2;
  // c:units(name): the run-level values are over units finer than documents (homogeneity's document
  // pairs), each reported by score with ctx.unit(key, values) as a row of slot values; the document's
  // own slots are the sums over its units. `kplab eval --ci` then resamples units instead of documents.
  std::string units;
  // c:units(name, {fixed = {...}}): aggregates that count the run itself rather than its units (the
  // pairs homogeneity left out): not checked against the units and given no CI by `--ci`.
  std::vector<std::string> unit_fixed;
  bool open = true;      // the builder refuses use once columns() has returned

  // Is the run-level value `full_name` ("all.x", or "x" for a plugin without subsets) one of unit_fixed?
  bool UnitFixed(const std::string& full_name) const {
    for (const auto& f : unit_fixed) {
      if (full_name == f || (full_name.size() > f.size() && full_name.ends_with(f) &&
                             full_name[full_name.size() - f.size() - 1] == '.')) {
        return true;
      }
    }
    return false;
  }
};

// Calls plugin.columns(c, params) in `vm` (the VM that loaded the plugin) and fills `out`. On success
// pushes what columns() returned, made deep read-only (the score function finds it as ctx.slots).
// Errors name the plugin file. [-0, +1 | +0 on error]
Status DeclareColumns(LuaVm& vm, const MetricPlugin& plugin, DeclaredColumns& out);

// True when two lanes declared the same columns (columns() may depend on params only).
bool SameDeclaration(const DeclaredColumns& a, const DeclaredColumns& b);

// The run-level values of an API 2 plugin. values[s][j] is slot j+1 of subset s (one subset, unnamed,
// when the plugin declares none), one value per document, NaN = none. A subset no document wrote any
// value for has no aggregates. Custom functions are called as fn(a, cols, params, ctx) in `vm` with
// `a` the subset's aggregates so far and `cols` its columns (Column objects) by relative name;
// push_ctx pushes ctx. Names are "subset.name" (or the name alone without subsets).
Status ComputeAggregates(LuaVm& vm, const MetricPlugin& plugin, const DeclaredColumns& cols,
                         const std::vector<std::vector<std::vector<double>>>& values,
                         const std::function<void(lua_State*)>& push_ctx, std::vector<AggregateValue>* out);

// Defines the Column and ColumnBuilder userdata types in L (once per VM; MetricRunner does it). [-0, +0]
void DefineColumnTypes(lua_State* L);

// Pushes a Column object (sum, mean, count, get, #) named `name` over `values`, which must live as
// long as `scope`: used after the scope ends, the Column raises "Column 'NAME' used after its
// aggregation ended". [-0, +1]
void PushColumn(lua_State* L, const std::vector<double>* values, const std::string& name, const BorrowScope& scope);

}  // namespace kplab::host
