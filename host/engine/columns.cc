#include "columns.h"

#include <cmath>
#include <cstring>
#include <limits>

#include <fmt/format.h>
#include <lua.hpp>

#include "kplab/safe_text.h"
#include "lua_util.h"

namespace kplab::host {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// ---- Column: a read-only view of one column for aggregate functions ------------------------------

constexpr const char* kColumnMeta = "kplab.Column";

// A view of a column the host owns for one aggregation (its values are not copied: the bootstrap
// aggregates thousands of times). A plugin may keep the object (a c:custom closure can), so every use
// checks the aggregation's lease first.
struct ColumnUd {
  const std::vector<double>* values;
  std::weak_ptr<const void> lease;  // BorrowScope of the aggregation that made it
  std::string name;
};

const std::vector<double>& CheckColumn(lua_State* L, int i) {
  const ColumnUd* c = Check<ColumnUd>(L, i, kColumnMeta);
  if (c->lease.expired()) {
    luaL_error(L,
               "Column '%s' used after its aggregation ended (a Column is valid only during the call it was "
               "given to; keep numbers, not Columns)",
               c->name.c_str());
  }
  return *c->values;
}

int ColumnLen(lua_State* L) {
  lua_pushinteger(L, static_cast<lua_Integer>(CheckColumn(L, 1).size()));
  return 1;
}
int ColumnSum(lua_State* L) {
  double s = 0;
  for (double v : CheckColumn(L, 1)) {
    if (!std::isnan(v)) s += v;
  }
  lua_pushnumber(L, s);
  return 1;
}
int ColumnCount(lua_State* L) {
  lua_Integer n = 0;
  for (double v : CheckColumn(L, 1)) n += !std::isnan(v);
  lua_pushinteger(L, n);
  return 1;
}
int ColumnMean(lua_State* L) {
  double s = 0;
  std::size_t n = 0;
  for (double v : CheckColumn(L, 1)) {
    if (std::isnan(v)) continue;
    s += v;
    ++n;
  }
  lua_pushnumber(L, n ? s / static_cast<double>(n) : kNaN);
  return 1;
}
int ColumnGet(lua_State* L) {
  const auto& c = CheckColumn(L, 1);
  const lua_Integer i = luaL_checkinteger(L, 2);
  if (i < 1 || static_cast<std::size_t>(i) > c.size()) {
    lua_pushnil(L);
  } else {
    lua_pushnumber(L, c[static_cast<std::size_t>(i - 1)]);
  }
  return 1;
}

const luaL_Reg kColumnMethods[] = {
    {"__len", Safe<ColumnLen>}, {"sum", Safe<ColumnSum>}, {"count", Safe<ColumnCount>},
    {"mean", Safe<ColumnMean>}, {"get", Safe<ColumnGet>}, {nullptr, nullptr},
};

// ---- the column builder c handed to columns(c, params) -------------------------------------------

constexpr const char* kBuilderMeta = "kplab.ColumnBuilder";

struct BuilderUd {
  std::shared_ptr<DeclaredColumns> cols;
};

DeclaredColumns& CheckOpen(lua_State* L) {
  DeclaredColumns& c = *Check<BuilderUd>(L, 1, kBuilderMeta)->cols;
  if (!c.open) luaL_error(L, "the column builder is only usable while columns(c, params) runs");
  return c;
}

std::string CheckName(lua_State* L, int idx, const char* what) {
  std::size_t len = 0;
  const char* s = luaL_checklstring(L, idx, &len);
  if (len == 0 || len > 1024 || std::memchr(s, '\0', len) != nullptr) {
    luaL_error(L, "%s name must be 1 to 1024 bytes without NUL (got %d bytes)", what, static_cast<int>(len));
  }
  // Names reach tables, JSON and terminals (kplab/safe_text.h): refused here, where they are made.
  if (Status st = kplab::CheckName(std::string(what) + " name", std::string_view(s, len)); !st.ok()) {
    luaL_error(L, "%s", st.message().c_str());
  }
  return std::string(s, len);
}

int CheckSlot(lua_State* L, const DeclaredColumns& c, int idx) {
  if (!lua_isinteger(L, idx) || lua_tointeger(L, idx) < 1 ||
      lua_tointeger(L, idx) > static_cast<lua_Integer>(c.slots.size())) {
    luaL_error(L, "bad argument #%d: expected a slot returned by c:column or c:hidden (1..%d), got %s", idx - 1,
               static_cast<int>(c.slots.size()), RawText(L, idx).c_str());
  }
  return static_cast<int>(lua_tointeger(L, idx));
}

void AddColumn(lua_State* L, DeclaredColumns& c, std::string name, bool hidden) {
  if (c.slot_of.count(name)) luaL_error(L, "column '%s' is declared twice", name.c_str());
  if (c.slots.size() >= 100000) luaL_error(L, "too many columns (at most 100000)");
  c.slots.push_back({name, hidden});
  c.slot_of.emplace(std::move(name), static_cast<int>(c.slots.size()));
}

DeclaredColumns::Aggregate& AddAggregate(lua_State* L, DeclaredColumns& c, std::string name,
                                         DeclaredColumns::Kind kind) {
  if (!c.aggregate_names.insert(name).second) luaL_error(L, "aggregate '%s' is declared twice", name.c_str());
  if (c.aggregates.size() >= 100000) luaL_error(L, "too many aggregates (at most 100000)");
  DeclaredColumns::Aggregate a;
  a.name = std::move(name);
  a.kind = kind;
  c.aggregates.push_back(std::move(a));
  return c.aggregates.back();
}

// c:column(name [, "mean" | "sum"]): a per-document column; with a second argument also the run-level
// value of the same name (its mean or sum over documents).
int AddSlot(lua_State* L, bool hidden) {
  DeclaredColumns& c = CheckOpen(L);
  std::string name = CheckName(L, 2, "column");
  std::optional<DeclaredColumns::Kind> kind;
  if (!hidden && !lua_isnoneornil(L, 3)) {
    const std::string_view k = luaL_checkstring(L, 3);
    if (k == "mean") {
      kind = DeclaredColumns::Kind::kMean;
    } else if (k == "sum") {
      kind = DeclaredColumns::Kind::kSum;
    } else {
      return luaL_argerror(L, 3, "expected \"mean\" or \"sum\" (the run-level value of the same name)");
    }
  }
  AddColumn(L, c, name, hidden);
  const int slot = static_cast<int>(c.slots.size());
  if (kind) AddAggregate(L, c, name, *kind).a = slot;
  lua_pushinteger(L, slot);
  return 1;
}
int BuilderColumn(lua_State* L) { return AddSlot(L, false); }
int BuilderHidden(lua_State* L) { return AddSlot(L, true); }

DeclaredColumns::Aggregate& AddAggregate(lua_State* L, DeclaredColumns& c, DeclaredColumns::Kind kind) {
  return AddAggregate(L, c, CheckName(L, 2, "aggregate"), kind);
}

int BuilderMean(lua_State* L) {
  DeclaredColumns& c = CheckOpen(L);
  const int slot = CheckSlot(L, c, 3);
  AddAggregate(L, c, DeclaredColumns::Kind::kMean).a = slot;
  return 0;
}
int BuilderSum(lua_State* L) {
  DeclaredColumns& c = CheckOpen(L);
  const int slot = CheckSlot(L, c, 3);
  AddAggregate(L, c, DeclaredColumns::Kind::kSum).a = slot;
  return 0;
}
int BuilderRatio(lua_State* L) {
  DeclaredColumns& c = CheckOpen(L);
  const int num = CheckSlot(L, c, 3), den = CheckSlot(L, c, 4);
  std::optional<double> if_zero;
  if (!lua_isnoneornil(L, 5)) if_zero = luaL_checknumber(L, 5);
  auto& a = AddAggregate(L, c, DeclaredColumns::Kind::kRatio);
  a.a = num;
  a.b = den;
  a.if_zero = if_zero;
  return 0;
}
int BuilderCustom(lua_State* L) {
  DeclaredColumns& c = CheckOpen(L);
  luaL_checktype(L, 3, LUA_TFUNCTION);
  auto& a = AddAggregate(L, c, DeclaredColumns::Kind::kCustom);
  lua_rawgeti(L, LUA_REGISTRYINDEX, c.customs_ref);
  const lua_Integer n = static_cast<lua_Integer>(lua_rawlen(L, -1)) + 1;
  lua_pushvalue(L, 3);
  lua_rawseti(L, -2, n);
  a.custom = static_cast<int>(n);
  return 0;
}

// c:units(name): the resampling unit of the run-level values, when not the document (DeclaredColumns).
int BuilderUnits(lua_State* L) {
  DeclaredColumns& c = CheckOpen(L);
  std::string name = CheckName(L, 2, "units");
  if (!c.units.empty()) luaL_error(L, "units are declared twice ('%s' and '%s')", c.units.c_str(), name.c_str());
  c.units = std::move(name);
  if (lua_isnoneornil(L, 3)) return 0;
  luaL_checktype(L, 3, LUA_TTABLE);
  lua_pushnil(L);
  while (lua_next(L, 3) != 0) {
    if (lua_type(L, -2) != LUA_TSTRING || std::string_view(lua_tostring(L, -2)) != "fixed") {
      luaL_error(L, "units options: unknown key (expected only 'fixed', a list of aggregate names)");
    }
    luaL_checktype(L, -1, LUA_TTABLE);
    const lua_Integer n = luaL_len(L, -1);
    for (lua_Integer i = 1; i <= n; ++i) {
      lua_rawgeti(L, -1, i);
      if (lua_type(L, -1) != LUA_TSTRING) luaL_error(L, "units option 'fixed': entry %d is not an aggregate name", static_cast<int>(i));
      std::string agg = lua_tostring(L, -1);
      if (!c.aggregate_names.count(agg)) {
        luaL_error(L, "units option 'fixed': '%s' is not an aggregate declared before c:units", agg.c_str());
      }
      c.unit_fixed.push_back(std::move(agg));
      lua_pop(L, 1);
    }
    lua_pop(L, 1);
  }
  return 0;
}

const luaL_Reg kBuilderMethods[] = {
    {"column", Safe<BuilderColumn>}, {"hidden", Safe<BuilderHidden>}, {"mean", Safe<BuilderMean>},
    {"sum", Safe<BuilderSum>},       {"ratio", Safe<BuilderRatio>},   {"custom", Safe<BuilderCustom>},
    {"units", Safe<BuilderUnits>},   {nullptr, nullptr},
};

std::string JoinName(const std::string& subset, const std::string& name) {
  return subset.empty() ? name : subset + "." + name;
}

}  // namespace

void DefineColumnTypes(lua_State* L) {
  if (luaL_getmetatable(L, kColumnMeta) == LUA_TNIL) {
    DefineType<ColumnUd>(L, kColumnMeta, kColumnMethods, nullptr, KeptAtLoad::kImmutable);
  }
  if (luaL_getmetatable(L, kBuilderMeta) == LUA_TNIL) DefineType<BuilderUd>(L, kBuilderMeta, kBuilderMethods);
  lua_pop(L, 2);
}

void PushColumn(lua_State* L, const std::vector<double>* values, const std::string& name, const BorrowScope& scope) {
  DefineColumnTypes(L);
  NewUserdata<ColumnUd>(L, kColumnMeta, ColumnUd{values, scope.Lease(), name});
}

Status DeclareColumns(LuaVm& vm, const MetricPlugin& plugin, DeclaredColumns& out) {
  lua_State* L = vm.state();
  const int top = lua_gettop(L);
  DefineColumnTypes(L);
  auto cols = std::make_shared<DeclaredColumns>();
  lua_newtable(L);
  cols->customs_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  if (lua_rawgeti(L, LUA_REGISTRYINDEX, plugin.columns_ref) == LUA_TTABLE) {
    // columns = {"semp", "semr"}: each a per-document column whose run value is its mean; ctx.slots maps
    // the names to their slots.
    const int list = lua_gettop(L);
    const lua_Unsigned n = lua_rawlen(L, list);
    lua_createtable(L, 0, static_cast<int>(n));  // [list, slots]
    for (lua_Unsigned i = 1; i <= n; ++i) {
      lua_rawgeti(L, list, static_cast<lua_Integer>(i));
      std::string name = lua_tostring(L, -1);  // checked by the loader
      lua_pushinteger(L, static_cast<lua_Integer>(i));
      lua_rawset(L, -3);
      cols->slots.push_back({name, false});
      cols->slot_of.emplace(name, static_cast<int>(i));
      DeclaredColumns::Aggregate a;
      a.name = std::move(name);
      a.a = static_cast<int>(i);
      cols->aggregates.push_back(std::move(a));
    }
    lua_remove(L, list);
    cols->open = false;
    PushReadOnlyProxy(L, -1, "ctx.slots");
    lua_remove(L, -2);
    out = std::move(*cols);
    return Status::Ok();
  }
  NewUserdata<BuilderUd>(L, kBuilderMeta, BuilderUd{cols});
  PushParams(L, plugin);
  SeedForCall(L, plugin, "columns");
  std::optional<ScriptError> err = vm.Call(2, 1, plugin.name);
  cols->open = false;
  if (err) {
    luaL_unref(L, LUA_REGISTRYINDEX, cols->customs_ref);
    lua_settop(L, top);
    return Error::Script(err->Format());
  }
  std::string problem;
  if (cols->slots.empty()) problem = "columns(c, params) declared no column (c:column or c:hidden)";
  // What columns() returns reaches every document as ctx.slots: plain data only, then made read-only.
  if (std::string e = CheckPlainData(L, -1, "the value columns(c, params) returned"); problem.empty() && !e.empty()) {
    problem = e + " (expected plain data: slots, names, numbers and tables of them)";
  }
  if (std::string state = vm.CheckState(plugin.state_ref); problem.empty() && !state.empty()) problem = state;
  if (!problem.empty()) {
    luaL_unref(L, LUA_REGISTRYINDEX, cols->customs_ref);
    lua_settop(L, top);
    return Error::Script(fmt::format("{}: {}", plugin.file.display_name, problem));
  }
  if (std::string e = PushDeepReadOnly(L, -1, "ctx.slots"); !e.empty()) {  // CheckPlainData refused it first
    luaL_unref(L, LUA_REGISTRYINDEX, cols->customs_ref);
    lua_settop(L, top);
    return Error::Script(fmt::format("{}: {}", plugin.file.display_name, e));
  }
  lua_remove(L, -2);
  out = std::move(*cols);
  return Status::Ok();
}

bool SameDeclaration(const DeclaredColumns& a, const DeclaredColumns& b) {
  if (a.slots.size() != b.slots.size() || a.aggregates.size() != b.aggregates.size() || a.units != b.units ||
      a.unit_fixed != b.unit_fixed) {
    return false;
  }
  for (std::size_t i = 0; i < a.slots.size(); ++i) {
    if (a.slots[i].name != b.slots[i].name || a.slots[i].hidden != b.slots[i].hidden) return false;
  }
  for (std::size_t i = 0; i < a.aggregates.size(); ++i) {
    const auto &x = a.aggregates[i], &y = b.aggregates[i];
    if (x.name != y.name || x.kind != y.kind || x.a != y.a || x.b != y.b) return false;
  }
  return true;
}

Status ComputeAggregates(LuaVm& vm, const MetricPlugin& plugin, const DeclaredColumns& cols,
                         const std::vector<std::vector<std::vector<double>>>& values,
                         const std::function<void(lua_State*)>& push_ctx, std::vector<AggregateValue>* out) {
  lua_State* L = vm.state();
  const std::size_t n_subsets = plugin.subsets.empty() ? 1 : plugin.subsets.size();
  for (std::size_t s = 0; s < n_subsets; ++s) {
    const std::string subset = plugin.subsets.empty() ? "" : plugin.subsets[s];
    const auto& slots = values[s];
    bool reached = false;
    for (const auto& col : slots) {
      for (double v : col) reached = reached || !std::isnan(v);
      if (reached) break;
    }
    if (!reached) continue;
    // Each slot's total and count over the documents with a value, in document order, computed once
    // (a slot may feed several aggregates: exact's hits@k feeds two ratios) and four slots per pass,
    // whose additions then overlap instead of each waiting on the one before.
    std::vector<double> totals(slots.size(), 0.0);
    std::vector<std::size_t> counts(slots.size(), 0);
    {
      std::vector<std::size_t> todo;
      std::vector<bool> needed(slots.size(), false);
      for (const auto& agg : cols.aggregates) {
        if (agg.kind == DeclaredColumns::Kind::kCustom) continue;
        needed[static_cast<std::size_t>(agg.a - 1)] = true;
        if (agg.kind == DeclaredColumns::Kind::kRatio) needed[static_cast<std::size_t>(agg.b - 1)] = true;
      }
      for (std::size_t j = 0; j < slots.size(); ++j) {
        if (needed[j]) todo.push_back(j);
      }
      auto one = [&](std::size_t j) {
        double total = 0;
        std::size_t n = 0;
        for (double v : slots[j]) {
          if (std::isnan(v)) continue;
          total += v;
          ++n;
        }
        totals[j] = total;
        counts[j] = n;
      };
      std::size_t t = 0;
      for (; t + 4 <= todo.size(); t += 4) {
        const std::vector<double>* c[4] = {&slots[todo[t]], &slots[todo[t + 1]], &slots[todo[t + 2]], &slots[todo[t + 3]]};
        const std::size_t len = c[0]->size();
        if (c[1]->size() != len || c[2]->size() != len || c[3]->size() != len) {
          for (int k = 0; k < 4; ++k) one(todo[t + static_cast<std::size_t>(k)]);
          continue;
        }
        double total[4] = {0, 0, 0, 0};
        std::size_t n[4] = {0, 0, 0, 0};
        const double* d[4] = {c[0]->data(), c[1]->data(), c[2]->data(), c[3]->data()};
        for (std::size_t i = 0; i < len; ++i) {
          for (int k = 0; k < 4; ++k) {
            const double v = d[k][i];
            if (std::isnan(v)) continue;
            total[k] += v;
            ++n[k];
          }
        }
        for (int k = 0; k < 4; ++k) {
          totals[todo[t + static_cast<std::size_t>(k)]] = total[k];
          counts[todo[t + static_cast<std::size_t>(k)]] = n[k];
        }
      }
      for (; t < todo.size(); ++t) one(todo[t]);
    }
    auto sum = [&](int slot, std::size_t* count) {
      if (count) *count = counts[static_cast<std::size_t>(slot - 1)];
      return totals[static_cast<std::size_t>(slot - 1)];
    };
    const int top = lua_gettop(L);
    // The Columns handed to custom functions view `slots`, valid for this subset's aggregation only.
    const BorrowScope scope;
    lua_newtable(L);  // [a]: this subset's aggregates so far, by relative name
    const int a_idx = lua_gettop(L);
    int cols_idx = 0;
    for (const auto& agg : cols.aggregates) {
      std::optional<double> value;
      switch (agg.kind) {
        case DeclaredColumns::Kind::kMean: {
          std::size_t n = 0;
          const double total = sum(agg.a, &n);
          if (n) value = total / static_cast<double>(n);  // no document with a value: no aggregate
          break;
        }
        case DeclaredColumns::Kind::kSum: value = sum(agg.a, nullptr); break;
        case DeclaredColumns::Kind::kRatio: {
          const double num = sum(agg.a, nullptr), den = sum(agg.b, nullptr);
          if (den != 0) {
            value = num / den;
          } else {
            value = agg.if_zero;
          }
          break;
        }
        case DeclaredColumns::Kind::kCustom: {
          if (cols_idx == 0) {
            lua_createtable(L, 0, static_cast<int>(cols.slots.size()));
            for (std::size_t j = 0; j < cols.slots.size(); ++j) {
              PushColumn(L, &slots[j], JoinName(subset, cols.slots[j].name), scope);
              lua_setfield(L, -2, cols.slots[j].name.c_str());
            }
            PushReadOnlyProxy(L, -1, "cols");
            lua_remove(L, -2);
            cols_idx = lua_gettop(L);
          }
          lua_rawgeti(L, LUA_REGISTRYINDEX, cols.customs_ref);
          lua_rawgeti(L, -1, agg.custom);
          lua_remove(L, -2);
          PushReadOnlyProxy(L, a_idx, "a");
          lua_pushvalue(L, cols_idx);
          PushParams(L, plugin);
          push_ctx(L);
          FreezeTableFields(L, -1, "ctx");
          PushReadOnlyProxy(L, -1, "ctx");
          lua_remove(L, -2);
          SeedForCall(L, plugin, "aggregate");
          if (auto err = vm.Call(4, 1, plugin.name)) {
            lua_settop(L, top);
            return Error::Script(err->Format() +
                                 fmt::format("\n(while computing aggregate '{}')", JoinName(subset, agg.name)));
          }
          const int t = lua_type(L, -1);
          if (t == LUA_TNUMBER) {
            if (std::isfinite(lua_tonumber(L, -1))) value = lua_tonumber(L, -1);  // NaN, inf: no value
          } else if (t != LUA_TNIL) {
            const std::string got = luaL_typename(L, -1);
            lua_settop(L, top);
            return Error::Script(fmt::format("{}: custom aggregate '{}' must return a number or nil (got {})",
                                             plugin.file.display_name, JoinName(subset, agg.name), got));
          }
          lua_pop(L, 1);
          break;
        }
      }
      if (!value) continue;
      lua_pushnumber(L, *value);
      lua_setfield(L, a_idx, agg.name.c_str());
      out->push_back({JoinName(subset, agg.name), *value, {}, {}});
    }
    lua_settop(L, top);
  }
  return Status::Ok();
}

}  // namespace kplab::host
