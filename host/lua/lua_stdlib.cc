// string.rep, table.insert, table.remove, table.move, table.concat, table.unpack and table.sort for
// sandboxed VMs. Lua's own versions loop in C a number of times the script chooses (a count, or a
// `__len` that lies) without running a Lua instruction or allocating: `string.rep("", 1 << 62)` or
// `table.insert(t, 1, x)` with `__len` returning 2^62 ran past every limit. The table functions charge
// each element to the instruction budget as they go (sandbox.h: ChargeNative), so the budget, the
// deadline and Ctrl-C stop them; string.rep makes an empty result without looping (any other result
// costs its bytes, which the memory cap bounds). Results and error texts are Lua 5.4's, table.sort's where
// the order has no ties (tests/host/metered_entries_test.cc compares them with Lua's own in a plain state).
//
// Written from the reference manual (§6.4, §6.6), not copied from lstrlib.c / ltablib.c. table.sort is
// not Lua's algorithm but a stable merge sort (below): the same result wherever the order is total, and
// one order for ties, the same on every run.
#include <lua.hpp>

#include <climits>
#include <cmath>
#include <algorithm>
#include <cstring>
#include <utility>

#include "lua_stdlib.h"
#include "sandbox.h"

namespace kplab::host {
namespace {

// Charges each element's work as it goes, in blocks (ChargeNative also reads the clock every few
// thousand steps and sees Ctrl-C). Moving an element of a plain table through the C API (lua_geti,
// lua_seti) takes the time of ~4 VM instructions (measured: shifting 3e7 elements with table.insert,
// 0.26 s of CPU; a Lua loop of 1.2e8 instructions, 0.22 s): kElementSteps each, so the instruction
// budget stops a lying __len about as soon as it would stop the same loop written in Lua.
constexpr int kElementSteps = 4;

class Meter {
 public:
  explicit Meter(lua_State* L) : L_(L) {}
  void Step() {
    if (++elements_ == kBlock) {
      elements_ = 0;
      ChargeNative(L_, static_cast<double>(kBlock) * kElementSteps);
    }
  }

 private:
  static constexpr int kBlock = 128;
  lua_State* L_;
  int elements_ = 0;
};

// As Lua's table functions: the value at `arg` must be a table, or have the metamethods the function
// uses (__index to read, __newindex to write, __len for the length).
constexpr int kRead = 1, kWrite = 2, kLength = 4;
void CheckTable(lua_State* L, int arg, int what) {
  if (lua_type(L, arg) == LUA_TTABLE) return;
  if (lua_getmetatable(L, arg)) {  // [mt]
    bool ok = true;
    for (const auto& [flag, name] : {std::pair{kRead, "__index"}, std::pair{kWrite, "__newindex"},
                                     std::pair{kLength, "__len"}}) {
      if ((what & flag) == 0) continue;
      lua_pushstring(L, name);
      ok = ok && lua_rawget(L, -2) != LUA_TNIL;
      lua_pop(L, 1);
    }
    lua_pop(L, 1);
    if (ok) return;
  }
  luaL_checktype(L, arg, LUA_TTABLE);  // raises "table expected, got X"
}

// #t through __len, as Lua's table functions read it.
lua_Integer Length(lua_State* L, int arg, int what) {
  CheckTable(L, arg, what | kLength);
  return luaL_len(L, arg);
}

int Insert(lua_State* L) {
  // The first empty slot; wraps as Lua's does when a __len says math.maxinteger (then out of bounds).
  const lua_Integer e = static_cast<lua_Integer>(static_cast<lua_Unsigned>(Length(L, 1, kRead | kWrite)) + 1u);
  lua_Integer pos = e;
  switch (lua_gettop(L)) {
    case 2:
      break;
    case 3: {
      pos = luaL_checkinteger(L, 2);
      // 1 <= pos <= e, compared unsigned so that a negative pos is out of bounds too.
      luaL_argcheck(L, static_cast<lua_Unsigned>(pos) - 1u < static_cast<lua_Unsigned>(e), 2, "position out of bounds");
      Meter meter(L);
      for (lua_Integer i = e; i > pos; --i) {  // t[i] = t[i - 1]
        meter.Step();
        lua_geti(L, 1, i - 1);
        lua_seti(L, 1, i);
      }
      break;
    }
    default:
      return luaL_error(L, "wrong number of arguments to 'insert'");
  }
  lua_seti(L, 1, pos);  // the value, on top
  return 0;
}

int Remove(lua_State* L) {
  const lua_Integer size = Length(L, 1, kRead | kWrite);
  lua_Integer pos = luaL_optinteger(L, 2, size);
  if (pos != size) {  // 1 <= pos <= size + 1 (and 0 when the list is empty)
    luaL_argcheck(L, static_cast<lua_Unsigned>(pos) - 1u <= static_cast<lua_Unsigned>(size), 1,
                  "position out of bounds");
  }
  lua_geti(L, 1, pos);  // the result
  Meter meter(L);
  for (; pos < size; ++pos) {  // t[pos] = t[pos + 1]
    meter.Step();
    lua_geti(L, 1, pos + 1);
    lua_seti(L, 1, pos);
  }
  lua_pushnil(L);
  lua_seti(L, 1, pos);
  return 1;
}

int Move(lua_State* L) {
  const lua_Integer f = luaL_checkinteger(L, 2);
  const lua_Integer e = luaL_checkinteger(L, 3);
  const lua_Integer t = luaL_checkinteger(L, 4);
  const int dest = lua_isnoneornil(L, 5) ? 1 : 5;
  CheckTable(L, 1, kRead);
  CheckTable(L, dest, kWrite);
  if (e >= f) {
    luaL_argcheck(L, f > 0 || e < LUA_MAXINTEGER + f, 3, "too many elements to move");
    const lua_Integer n = e - f + 1;  // elements to move
    luaL_argcheck(L, t <= LUA_MAXINTEGER - n + 1, 4, "destination wrap around");
    Meter meter(L);
    // Forward unless the ranges overlap with the destination after the source in the same table.
    if (t > e || t <= f || (dest != 1 && !lua_compare(L, 1, dest, LUA_OPEQ))) {
      for (lua_Integer i = 0; i < n; ++i) {
        meter.Step();
        lua_geti(L, 1, f + i);
        lua_seti(L, dest, t + i);
      }
    } else {
      for (lua_Integer i = n - 1; i >= 0; --i) {
        meter.Step();
        lua_geti(L, 1, f + i);
        lua_seti(L, dest, t + i);
      }
    }
  }
  lua_pushvalue(L, dest);
  return 1;
}

void AddElement(lua_State* L, luaL_Buffer* b, lua_Integer i) {
  lua_geti(L, 1, i);
  if (!lua_isstring(L, -1)) {
    luaL_error(L, "invalid value (%s) at index %I in table for 'concat'", luaL_typename(L, -1),
               static_cast<LUAI_UACINT>(i));
  }
  luaL_addvalue(b);
}

int Concat(lua_State* L) {
  lua_Integer last = Length(L, 1, kRead);
  std::size_t lsep = 0;
  const char* sep = luaL_optlstring(L, 2, "", &lsep);
  lua_Integer i = luaL_optinteger(L, 3, 1);
  last = luaL_optinteger(L, 4, last);
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  Meter meter(L);
  for (; i < last; ++i) {
    meter.Step();
    AddElement(L, &b, i);
    luaL_addlstring(&b, sep, lsep);
  }
  if (i == last) AddElement(L, &b, i);
  luaL_pushresult(&b);
  return 1;
}

int Unpack(lua_State* L) {
  lua_Integer i = luaL_optinteger(L, 2, 1);
  const lua_Integer e = lua_isnoneornil(L, 3) ? luaL_len(L, 1) : luaL_checkinteger(L, 3);
  if (i > e) return 0;
  lua_Unsigned n = static_cast<lua_Unsigned>(e) - static_cast<lua_Unsigned>(i);  // elements - 1
  if (n >= static_cast<lua_Unsigned>(INT_MAX) || !lua_checkstack(L, static_cast<int>(++n))) {
    return luaL_error(L, "too many results to unpack");
  }
  Meter meter(L);
  for (; i < e; ++i) {
    meter.Step();
    lua_geti(L, 1, i);
  }
  lua_geti(L, 1, e);
  return static_cast<int>(n);
}

// table.sort as a stable merge sort (docs/design-notes.md, "table.sort is a stable merge sort"). Lua's own
// quicksort picks a pivot from the clock on uneven partitions (ltablib.c, l_randomizePivot), so the
// order of ties could differ between identical runs; a stable sort has one result for every comparator
// that is a strict weak order: ties keep the order they had. The sort works on a plain copy (stack
// index kFrom) with a plain buffer (kTo): the table is read once through lua_geti (its __index and __len,
// as Lua's sort) and written back once through lua_seti only when the sort succeeded, so a comparator
// that raises leaves the table as it was. The whole work is charged before anything is copied (so a
// size the budget cannot pay, a __len that lies, is refused at once); the loops then only look at the
// clock and Ctrl-C. The comparator and __lt run inside the caller's metered call (the count hook).
constexpr int kTable = 1, kComparator = 2, kFrom = 3, kTo = 4, kLeft = 5, kRight = 6;

struct SortRun {
  lua_State* L;
  bool has_comparator;
  int checked = 0;  // element steps since the last CheckNative
  // Lets the deadline and Ctrl-C stop a long sort whose steps were charged up front.
  void Step(int steps) {
    if ((checked += steps) >= 512) {
      CheckNative(L, checked);
      checked = 0;
    }
  }
};

// a < b for the values on top of the stack (a below b); pops both.
bool Less(SortRun& run) {
  lua_State* L = run.L;
  run.Step(1);
  bool less;
  if (run.has_comparator) {
    lua_pushvalue(L, kComparator);
    lua_rotate(L, -3, 1);  // [comp, a, b]
    lua_call(L, 2, 1);
    less = lua_toboolean(L, -1);
    lua_pop(L, 1);
  } else {
    less = lua_compare(L, -2, -1, LUA_OPLT);
    lua_pop(L, 2);
  }
  return less;
}

// Merges the sorted runs from[lo..mid] and from[mid+1..hi] into to[lo..hi]; the runs' current heads wait in
// the stack slots kLeft and kRight. An element of the right run goes first only when it is less than the
// left one's, so equal elements keep their order.
void Merge(SortRun& run, int from, int to, lua_Integer lo, lua_Integer mid, lua_Integer hi) {
  lua_State* L = run.L;
  lua_Integer i = lo, j = mid + 1, k = lo;
  lua_rawgeti(L, from, i);
  lua_replace(L, kLeft);
  lua_rawgeti(L, from, j);
  lua_replace(L, kRight);
  for (;;) {
    lua_pushvalue(L, kRight);
    lua_pushvalue(L, kLeft);
    run.Step(kElementSteps);
    if (Less(run)) {
      lua_pushvalue(L, kRight);
      lua_rawseti(L, to, k++);
      if (++j > hi) break;
      lua_rawgeti(L, from, j);
      lua_replace(L, kRight);
    } else {
      lua_pushvalue(L, kLeft);
      lua_rawseti(L, to, k++);
      if (++i > mid) break;
      lua_rawgeti(L, from, i);
      lua_replace(L, kLeft);
    }
  }
  // One run is used up; the rest of the other follows as it is.
  for (lua_Integer r = i <= mid ? i : j, end = i <= mid ? mid : hi; r <= end; ++r) {
    lua_rawgeti(L, from, r);
    lua_rawseti(L, to, k++);
    run.Step(kElementSteps);
  }
}

// Sorts the copy at kFrom (n elements) bottom-up; returns the index (kFrom or kTo) holding the result.
int MergeSort(SortRun& run, lua_Integer n) {
  int from = kFrom, to = kTo;
  for (lua_Integer width = 1; width < n; width *= 2) {
    for (lua_Integer lo = 1; lo <= n; lo += 2 * width) {
      const lua_Integer mid = std::min(lo + width - 1, n), hi = std::min(lo + 2 * width - 1, n);
      if (mid < hi) {
        Merge(run, from, to, lo, mid, hi);
      } else {  // a last run without a partner this pass
        for (lua_Integer r = lo; r <= hi; ++r) {
          lua_rawgeti(run.L, from, r);
          lua_rawseti(run.L, to, r);
          run.Step(kElementSteps);
        }
      }
    }
    std::swap(from, to);
  }
  return from;
}

// table.sort(list [, comp]): argument checks and error texts as Lua 5.4's. A comparator that is not a
// strict weak order (`a <= b`, `function() return true end`) leaves a result in which a later element is
// less than an earlier one; a final pass over neighbours finds that and raises Lua's "invalid order
// function for sorting" (an inconsistent comparator that passes it still gives one deterministic order).
int Sort(lua_State* L) {
  CheckTable(L, kTable, kRead | kWrite | kLength);
  const lua_Integer n = luaL_len(L, kTable);
  if (n <= 1) return 0;  // as Lua's: nothing to sort, nothing checked
  luaL_argcheck(L, n < INT_MAX, 1, "array too big");
  const bool has_comparator = !lua_isnoneornil(L, kComparator);
  if (has_comparator) luaL_checktype(L, kComparator, LUA_TFUNCTION);
  lua_settop(L, kComparator);
  // Copy in and out, and in each of the ceil(log2 n) passes one move and at most one comparison per
  // element, then the final check: all charged now, a comparison as much as a move (lua_compare or
  // lua_call through the C API; the comparator's own instructions are counted by the hook on top).
  // Measured: 1e6 numbers sort in the CPU time of ~1.8e8 VM instructions; this charges 1.7e8.
  const double d = static_cast<double>(n), passes = std::ceil(std::log2(d));
  ChargeNative(L, d * kElementSteps * (2 * passes + 3));
  // The copy and the buffer: n values each, 16 bytes a value in a table's array part (a TValue).
  constexpr double kValueBytes = 16;
  ReserveNative(L, 2 * d * kValueBytes, "table.sort");
  luaL_checkstack(L, 8, "table.sort");
  lua_createtable(L, static_cast<int>(n), 0);  // kFrom
  lua_createtable(L, static_cast<int>(n), 0);  // kTo
  lua_settop(L, kRight);
  SortRun run{L, has_comparator};
  for (lua_Integer i = 1; i <= n; ++i) {
    lua_geti(L, kTable, i);
    lua_rawseti(L, kFrom, i);
    run.Step(kElementSteps);
  }
  const int sorted = MergeSort(run, n);
  for (lua_Integer i = 1; i < n; ++i) {
    lua_rawgeti(L, sorted, i);
    lua_rawgeti(L, sorted, i + 1);
    lua_rotate(L, -2, 1);  // [next, this]: is the next one less?
    if (Less(run)) return luaL_error(L, "invalid order function for sorting");
  }
  for (lua_Integer i = 1; i <= n; ++i) {
    lua_rawgeti(L, sorted, i);
    lua_seti(L, kTable, i);
    run.Step(kElementSteps);
  }
  return 0;
}

// string.rep(s, n [, sep]): a result of no bytes is made without a loop (Lua's loops n times, copying
// nothing, which no limit sees); any other result costs what its bytes cost, which the memory cap
// bounds and the allocator charges (1 MiB and more).
int Rep(lua_State* L) {
  std::size_t l = 0, lsep = 0;
  const char* s = luaL_checklstring(L, 1, &l);
  const lua_Integer n = luaL_checkinteger(L, 2);
  const char* sep = luaL_optlstring(L, 3, "", &lsep);
  if (n <= 0) {
    lua_pushliteral(L, "");
    return 1;
  }
  constexpr std::size_t kMaxSize = INT_MAX;  // Lua's limit for string.rep's result
  if (l + lsep < l || l + lsep > kMaxSize / static_cast<std::size_t>(n)) {
    return luaL_error(L, "resulting string too large");
  }
  const std::size_t total = static_cast<std::size_t>(n) * l + static_cast<std::size_t>(n - 1) * lsep;
  if (total == 0) {
    lua_pushliteral(L, "");
    return 1;
  }
  luaL_Buffer b;
  char* p = luaL_buffinitsize(L, &b, total);
  for (lua_Integer i = 0; i < n; ++i) {
    std::memcpy(p, s, l);
    p += l;
    if (lsep > 0 && i + 1 < n) {
      std::memcpy(p, sep, lsep);
      p += lsep;
    }
  }
  luaL_pushresultsize(&b, total);
  return 1;
}

}  // namespace

void InstallBoundedStdlib(lua_State* L) {
  lua_getglobal(L, LUA_TABLIBNAME);  // [table]
  for (const auto& [name, fn] :
       {std::pair{"insert", &Insert}, std::pair{"remove", &Remove}, std::pair{"move", &Move},
        std::pair{"concat", &Concat}, std::pair{"unpack", &Unpack}, std::pair{"sort", &Sort}}) {
    lua_pushcfunction(L, fn);
    lua_setfield(L, -2, name);
  }
  lua_pop(L, 1);
  lua_getglobal(L, LUA_STRLIBNAME);
  lua_pushcfunction(L, &Rep);
  lua_setfield(L, -2, "rep");
  lua_pop(L, 1);
}

}  // namespace kplab::host
