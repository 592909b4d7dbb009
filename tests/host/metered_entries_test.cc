// Metered entries (docs/design-notes.md, "Metered entries"; docs/plugins.md, Limits): the host runs a
// script's code only through LuaVm::Call, and the C functions a script reaches have bounded costs.
// Hostile cases: a plugin's values whose metamethods loop, library loops driven by a __len that lies or
// by a count, native statistics whose exact methods are cubic, and the REPL's printer, completion,
// help() and :load. Each runs the real kplab executable (a real pty for Ctrl-C); time bounds are
// generous ("it finishes"). The bounded library functions are checked against Lua's own.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include <lua.hpp>

#include "../core/temp_dir.h"
#include "cli_harness.h"
#include "lua_stdlib.h"
#include "pty_harness.h"
#include "slow_build.h"

namespace kplab::test {
namespace {

namespace fs = std::filesystem;
using SteadyClock = std::chrono::steady_clock;

constexpr double kMeteredFinishes = 20.0 * kSlowBuild;  // seconds: "it finishes", not a speed claim
constexpr const char* kMeteredTiny = "--dataset examples/tiny --predictions examples/tiny/predictions.txt";
constexpr const char* kLoop = "setmetatable({}, {__tostring = function() while true do end end})";
constexpr const char* kMeteredBudget = "instruction budget of 100000000 exceeded";

class MeteredEntriesTest : public ::testing::Test {
 protected:
  TempDir dir_;

  std::string Write(const std::string& name, const std::string& text) {
    const std::string path = dir_.File(name);
    fs::create_directories(fs::path(path).parent_path());
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }

  Output Kplab(const std::string& args, const std::string& input = "") {
    const auto start = SteadyClock::now();
    Output o = RunKplab(dir_.path(), "timeout 60", args, input);
    EXPECT_LT(std::chrono::duration<double>(SteadyClock::now() - start).count(), kMeteredFinishes) << args;
    EXPECT_NE(o.code, 124) << "hung: " << args;
    return o;
  }

  // `kplab run [options] s.lua`; returns the first line of stderr with the script's path as "s.lua".
  std::string RunFails(const std::string& lua, const std::string& options = "") {
    const std::string path = Write("s.lua", lua);
    const Output o = Kplab("run " + options + " " + path);
    EXPECT_EQ(o.code, 3) << lua << "\n" << o.out << o.err;
    std::string first = o.err.substr(0, o.err.find('\n'));
    if (const auto at = first.find(path); at != std::string::npos) first.replace(at, path.size(), "s.lua");
    return first;
  }

  // An API 2 plugin "hostile" with `columns` and `score` bodies, on examples/tiny; stderr's first line.
  std::string EvalFails(const std::string& columns, const std::string& score) {
    Write("plugins/hostile.lua", "-- kplab-api: 2\nreturn kp.metric {\n  name = \"hostile\", version = \"1\",\n"
                                 "  columns = function(c) " + columns + " end,\n"
                                 "  score = function(doc, params, ctx, out) " + score + " end,\n}\n");
    const Output o = Kplab(std::string("eval ") + kMeteredTiny + " --no-store --metrics hostile --plugins " +
                           dir_.File("plugins") + " --time-limit 5");
    EXPECT_EQ(o.code, 3) << o.out << o.err;
    std::string first = o.err.substr(0, o.err.find('\n'));
    const std::string file = dir_.File("plugins/hostile.lua");
    if (const auto at = first.find(file); at != std::string::npos) first.replace(at, file.size(), "hostile.lua");
    return std::regex_replace(first, std::regex("0x[0-9a-f]+"), "0x...");
  }
};

// ---- the host reads a plugin's values raw ----------------------------------------------------------

TEST_F(MeteredEntriesTest, KeysAreNamedRawNotThroughTheirTostring) {
  // A key of out that is not a column: named after the call, without running its __tostring (which
  // looped forever or allocated past the memory cap, outside every limit).
  EXPECT_EQ(EvalFails("c:column('x', 'mean')", std::string("out.x = 1 out[") + kLoop + "] = 1"),
            "kplab: hostile.lua: score wrote out[table: 0x...] for document '1', which is not a declared column "
            "(write out[slot] with a slot from c:column / c:hidden, or a declared name)");
  EXPECT_EQ(EvalFails("c:column('x', 'mean')",
                      "out.x = 1 out[setmetatable({}, {__tostring = function() return string.rep('x', 1 << 30) end})] = 1"),
            "kplab: hostile.lua: score wrote out[table: 0x...] for document '1', which is not a declared column "
            "(write out[slot] with a slot from c:column / c:hidden, or a declared name)");
  EXPECT_EQ(EvalFails("c:column('x', 'mean') c:units('u')", std::string("ctx.unit(1, {[") + kLoop + "] = 1})"),
            "kplab: hostile.lua:5: ctx.unit: key table: 0x... of the values is not a declared column (expected a slot "
            "from c:column / c:hidden or a declared name) (while scoring document '1')");
  EXPECT_EQ(EvalFails(std::string("c:column('x') c:mean('m', ") + kLoop + ")", "out.x = 1"),
            "kplab: hostile.lua:4: bad argument #2: expected a slot returned by c:column or c:hidden (1..1), got table: "
            "0x...");
  EXPECT_EQ(std::regex_replace(RunFails(std::string("local x = _ENV[") + kLoop + "]\n"), std::regex("0x[0-9a-f]+"), "0x..."),
            "kplab: s.lua:1: undefined global 'table: 0x...'");
}

// ---- library loops ------------------------------------------------------------------------------------

TEST_F(MeteredEntriesTest, LibraryLoopsDrivenByALyingLengthAreCharged) {
  // Every element read and written is nil: nothing runs but the library's own loop, which allocates
  // nothing.
  // Each kill runs to a budget of 10^7, a tenth of the default (whose message has its own test): what is
  // checked is that the library's loop is charged at all.
  const std::string small = "--instruction-limit 10000000";
  const std::string budget = "instruction budget of 10000000 exceeded";
  const std::string liar = "local t = setmetatable({}, {__len = function() return 1 << 62 end})\n";
  for (const std::string call : {"table.insert(t, 1, 'x')", "table.remove(t, 1)", "table.unpack(t)"}) {
    // unpack refuses 2^62 results before looping; the others are stopped by the budget.
    const std::string want =
        call == "table.unpack(t)" ? "kplab: s.lua:2: too many results to unpack" : "kplab: s.lua:2: " + budget;
    EXPECT_EQ(RunFails(liar + call + "\n", small), want) << call;
  }
  // concat's elements must be strings: "" from a metamethod, which the hook meters too (so the kill
  // comes from line 1 or line 2, whichever charge crosses the budget first).
  EXPECT_TRUE(std::regex_match(RunFails("local t = setmetatable({}, {__len = function() return 1 << 62 end, "
                                        "__index = function() return '' end})\ntable.concat(t)\n",
                                        small),
                               std::regex("kplab: s\\.lua:[12]: " + budget)));
  EXPECT_EQ(RunFails("table.move({}, 1, 1 << 62, 2)\n", small), "kplab: s.lua:1: " + budget);
  // __index and __newindex C functions run no instruction at all: the sort's whole work is charged
  // before it copies an element, so 2^31 elements are refused at once; without a budget, the copies it
  // would need are checked against the memory cap first (2 x 2^31 values of 16 bytes).
  const std::string sort_liar =
      "local t = setmetatable({}, {__len = function() return (1 << 31) - 2 end, "
      "__index = rawlen, __newindex = rawequal})\ntable.sort(t)\n";
  EXPECT_EQ(RunFails(sort_liar, small), "kplab: s.lua:2: " + budget);
  EXPECT_EQ(RunFails(sort_liar, "--instruction-limit 0"),
            "kplab: s.lua:2: memory limit of 256 MiB exceeded (table.sort needs 65536 MiB)");
  // Without an instruction budget, the deadline stops them.
  EXPECT_EQ(RunFails(liar + "table.insert(t, 1, 'x')\n", "--instruction-limit 0 --time-limit 0.25"),
            "kplab: s.lua:2: time limit of 0.25 s exceeded");
  // A C __index makes each element cost no instruction: a loop of big unpacks is charged per element.
  EXPECT_EQ(RunFails("local t = setmetatable({}, {__index = rawlen})\nwhile true do table.unpack(t, 1, 900000) end\n",
                     small + " --time-limit 300"),
            "kplab: s.lua:2: " + budget);
}

// table.sort is charged before it runs: 1e6 elements cost about 4 x 1e6 x (2 x 20 + 3) steps, far more than
// what is left of a budget of 2e7 after the 1e6-iteration loop that built the table. The same sort of
// 1e5 elements fits a budget of 1e8.
TEST_F(MeteredEntriesTest, SortingIsChargedBeforeItRuns) {
  EXPECT_EQ(RunFails("local t = {} for i = 1, 1000000 do t[i] = (i * 7919) % 1000003 end\ntable.sort(t)\n",
                     "--instruction-limit 20000000"),
            "kplab: s.lua:2: instruction budget of 20000000 exceeded");
  const std::string path = Write("ok.lua",
                                 "local t = {} for i = 1, 100000 do t[i] = (i * 7919) % 100003 end\ntable.sort(t)\n"
                                 "print(t[1], t[2], t[100000])\n");
  const Output o = Kplab("run " + path);
  EXPECT_EQ(o.code, 0) << o.err;
  // i * 7919 mod 100003 (a prime) for i = 1..100000 takes 100000 distinct values of 1..100002: the three
  // missing are those of i = 100000, 100001, 100002 (100000 * 7919 = 791900000 = 7918 x 100003 + 76246,
  // then + 7919 mod 100003: 84165, 92084), so the smallest are 1 and 2 and the largest 100002.
  EXPECT_EQ(o.out, "1\t2\t100002\n");
}

TEST_F(MeteredEntriesTest, EmptyRepetitionsNeedNoLoop) {
  const std::string path = Write("s.lua", "print(#string.rep('', 1 << 62), #string.rep('', 1 << 62, ''), "
                                          "string.rep('ab', 3, ','), #string.rep('', 5, '-'))\n");
  const Output o = Kplab("run --time-limit 2 " + path);
  EXPECT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(o.out, "0\t0\tab,ab,ab\t4\n");
}

// ---- native work that was not charged ------------------------------------------------------------------

TEST_F(MeteredEntriesTest, CubicStatisticsAreChargedBeforeTheyRun) {
  const std::string budget = std::string("kplab: s.lua:2: ") + kMeteredBudget;
  EXPECT_EQ(RunFails("local x, y = {}, {} for i = 1, 20000 do x[i] = i y[i] = (i * 7919) % 20011 end\n"
                     "kp.stats.kendall(x, y, 'exact')\n"),
            budget);
  EXPECT_EQ(RunFails("local x = {} for i = 1, 3000 do x[i] = i * ((i % 2) * 2 - 1) + 0.5 end\n"
                     "kp.stats.wilcoxon(x, nil, {method = 'exact'})\n"),
            budget);
  EXPECT_EQ(RunFails("local y, a, b = {}, {}, {} for i = 1, 20000 do y[i] = i % 13 a[i] = i % 5000 b[i] = (i // 4) % 5000 end\n"
                     "kp.stats.anova2(y, a, b)\n"),
            budget);
  EXPECT_EQ(RunFails("local rows = {} for i = 1, 2000 do local r = {} for j = 1, 2000 do r[j] = ((i * j) % 97) / 97 end "
                     "rows[i] = r end\nkp.matrix(rows):assign()\n"),
            budget);
  // At their usual sizes they run as before (the values: tests/host/stats_lua_test.cc and friends).
  const std::string ok = Write("ok.lua", "print(kp.stats.kendall({1, 2, 3, 4, 5}, {1, 3, 2, 5, 4}, 'exact'))\n"
                                         "print(kp.matrix{{1, 0}, {0, 1}}:assign())\n");
  const Output o = Kplab("run " + ok);
  EXPECT_EQ(o.code, 0) << o.err;
  // tau = (8 - 2) / 10 = 0.6 (8 concordant, 2 discordant pairs); the identity assignment weighs 2.
  EXPECT_EQ(o.out.substr(0, o.out.find('\t')), "0.6") << o.out;
  EXPECT_NE(o.out.find("\n2.0\t"), std::string::npos) << o.out;
}

TEST_F(MeteredEntriesTest, RunsTableResamplesAreCharged) {
  for (const char* system : {"a", "b"}) {
    const Output e =
        Kplab(std::string("eval ") + kMeteredTiny + " --metrics exact --system " + system + " --db " + dir_.File("db"));
    ASSERT_EQ(e.code, 0) << e.err;
  }
  // A macro average is tested (docs/tables.md): 10,000,000 resamples of the 5 documents.
  const std::string lua = "kp.runs.table{metrics = 'all.p@5.macro', baseline = 'a', resamples = 10000000, db = '" +
                          dir_.File("db") + "'}\nprint('done')\n";
  // 5 documents x 10,000,000 resamples: far more than a budget of 1,000,000.
  EXPECT_EQ(RunFails(lua, "--instruction-limit 1000000 --allow-read " + dir_.path()),
            "kplab: s.lua:1: instruction budget of 1000000 exceeded");
}

// The bounded functions give Lua's own results and error texts (Lua's are the reference: both run in one
// plain state). string.rep('', 2^62) is left out: Lua's own loops 2^62 times.
TEST(BoundedStdlibTest, AgreesWithLuasOwn) {
  lua_State* L = luaL_newstate();
  luaL_openlibs(L);
  ASSERT_EQ(luaL_dostring(L, "O = {rep = string.rep, insert = table.insert, remove = table.remove, move = table.move, "
                             "concat = table.concat, unpack = table.unpack, sort = table.sort}"),
            LUA_OK);
  host::InstallBoundedStdlib(L);
  const char* chunk = R"lua(
local function backed(t)  -- a table seen through metamethods, as a proxy is
  return setmetatable({}, {__index = t, __newindex = t, __len = function() return #t end}), t
end
local cases = {
  {"rep", "ab", 3}, {"rep", "ab", 3, ","}, {"rep", "", 5}, {"rep", "", 5, ""}, {"rep", "", 5, "-"}, {"rep", "x", 0},
  {"rep", "x", -1}, {"rep", "x", 1 << 62}, {"rep", "ab", 1 << 31}, {"rep", nil, 1}, {"rep", "x", 2.5}, {"rep", "x"},
  {"rep", 12, 2}, {"rep", "x", 1, "yz"},
  {"insert", {1, 2, 3}, "x"}, {"insert", {1, 2, 3}, 1, "x"}, {"insert", {1, 2, 3}, 4, "x"}, {"insert", {1, 2, 3}, 5, "x"},
  {"insert", {1, 2, 3}, 0, "x"}, {"insert", {1, 2, 3}, -1, "x"}, {"insert", {}, 1, 2, 3}, {"insert", "s", 1},
  {"insert", {}}, {"insert", {1, 2}, 1.5, "x"}, {"insert", {1, nil, 3}, 2, "x"},
  {"remove", {1, 2, 3}}, {"remove", {1, 2, 3}, 1}, {"remove", {1, 2, 3}, 3}, {"remove", {1, 2, 3}, 4},
  {"remove", {1, 2, 3}, 5}, {"remove", {}, 0}, {"remove", {}}, {"remove", {}, -1}, {"remove", {}, 1}, {"remove", 7},
  {"move", {1, 2, 3}, 1, 3, 2}, {"move", {1, 2, 3}, 2, 3, 1}, {"move", {1, 2, 3}, 1, 3, 1, {}}, {"move", {1, 2, 3}, 3, 1, 1},
  {"move", {}, 1, math.maxinteger, 2}, {"move", {}, -1, math.maxinteger, 1}, {"move", {1, 2, 3}, 1, 3, 3, nil},
  {"move", {1, 2, 3}, 1, 2}, {"move", nil, 1, 2, 3}, {"move", {1, 2, 3}, 1, 3, 2, "s"},
  {"concat", {1, 2, 3}}, {"concat", {1, 2, 3}, ", "}, {"concat", {1, 2, 3}, ", ", 2}, {"concat", {1, 2, 3}, ", ", 2, 3},
  {"concat", {1, 2, 3}, "", 3, 2}, {"concat", {1, {}, 3}}, {"concat", {1, 2, 3}, ", ", 1, 5}, {"concat", {}, "x"},
  {"concat", {"a", 1.5, 2}}, {"concat", {1, 2}, {}}, {"concat", "abc"},
  {"unpack", {1, 2, 3}}, {"unpack", {1, 2, 3}, 2}, {"unpack", {1, 2, 3}, 2, 5}, {"unpack", {}, 1, 0},
  {"unpack", {1, 2}, 1, 1e7}, {"unpack", {1, 2}, -2, 1}, {"unpack", {1, 2}, math.mininteger, math.maxinteger},
  {"sort", {3, 1, 2}}, {"sort", {3, 1, 2}, function(a, b) return a > b end}, {"sort", {3, "a"}}, {"sort", {1, 2, 3}, 5},
  {"sort", {1}, 5}, {"sort", {}}, {"sort", "s"}, {"sort", {3, 1, 2}, function(a, b) error("boom") end},
}
-- Orders without ties only: there every sort has one result (ties, invalid comparators: SortIsStable...).
local big = {} for i = 1, 500 do big[i] = (i * 7919) % 503 end
cases[#cases + 1] = {"sort", big}
cases[#cases + 1] = {"sort", big, function(a, b) return a > b end}
local function copy(v)
  if type(v) ~= "table" then return v end
  local c = {} for k, x in pairs(v) do c[k] = x end return c
end
local function show(t)
  if type(t) ~= "table" then return tostring(t) end
  local out = {} for i = 1, rawlen(t) do out[i] = tostring(t[i]) end return "{" .. table.concat(out, ",") .. "}"
end
local function outcome(f, c)
  local args = {}
  for i = 2, 7 do args[i - 1] = copy(c[i]) end
  local r = table.pack(pcall(f, table.unpack(args, 1, 6)))
  local parts = {}
  -- Lua's originals, kept aside, are no longer found under their names: "bad argument #1 to '?'".
  for i = 1, r.n do parts[i] = (show(r[i]):gsub("(bad argument #%d+ to )'[^']*'", "%1'?'")) end
  return table.concat(parts, "|") .. " args: " .. show(args[1]) .. " " .. show(args[5])
end
local diffs = {}
for i, c in ipairs(cases) do
  local a, b = outcome(O[c[1]], c), outcome(table[c[1]] or string[c[1]], c)
  if a ~= b then diffs[#diffs + 1] = i .. " " .. c[1] .. ":\n  Lua:   " .. a .. "\n  kplab: " .. b end
end
-- Through metamethods (a table backed by another): the same final contents.
for _, name in ipairs{"insert", "remove", "sort", "concat", "unpack"} do
  local p1, t1 = backed({5, 3, 9, 1})
  local p2, t2 = backed({5, 3, 9, 1})
  local args = name == "insert" and {2, "x"} or name == "remove" and {2} or {}
  local a = show(table.pack(pcall(O[name], p1, table.unpack(args)))) .. show(t1)
  local b = show(table.pack(pcall(table[name], p2, table.unpack(args)))) .. show(t2)
  if a ~= b then diffs[#diffs + 1] = "backed " .. name .. ":\n  Lua:   " .. a .. "\n  kplab: " .. b end
end
return table.concat(diffs, "\n")
)lua";
  ASSERT_EQ(luaL_dostring(L, chunk), LUA_OK) << lua_tostring(L, -1);
  EXPECT_EQ(std::string(lua_tostring(L, -1)), "");
  lua_close(L);
}

// table.sort is a stable merge sort (docs/design-notes.md, "table.sort is a stable merge sort"): equal
// elements keep their order, so a sort has one result whatever the clock (Lua's quicksort took a pivot
// from it on uneven partitions). The reference for ties is the definition of a stable sort: a worked
// example by hand, and an insertion sort (stable by construction) in the test.
TEST(BoundedStdlibTest, SortIsStableSoTiesHaveOneOrder) {
  lua_State* L = luaL_newstate();
  luaL_openlibs(L);
  host::InstallBoundedStdlib(L);
  const char* chunk = R"lua(
local function ids(t, field) local o = {} for i = 1, #t do o[i] = t[i][field] end return table.concat(o, " ") end
local out = {}
-- By hand: keys 2 1 2 1 0 -> the 0, then the 1s (b before d), then the 2s (a before c).
local r = {{k = 2, v = "a"}, {k = 1, v = "b"}, {k = 2, v = "c"}, {k = 1, v = "d"}, {k = 0, v = "e"}}
table.sort(r, function(x, y) return x.k < y.k end)
out[#out + 1] = ids(r, "v")
-- 2000 records with two keys: Lua's quicksort partitions them unevenly (a pivot from the clock). Stable:
-- the even ids in order, then the odd ones.
local recs = {} for i = 1, 2000 do recs[i] = {k = i % 2, id = i} end
table.sort(recs, function(x, y) return x.k < y.k end)
out[#out + 1] = recs[1].id .. " " .. recs[2].id .. " " .. recs[1000].id .. " " .. recs[1001].id .. " " .. recs[2000].id
-- 500 numbers by their last digit, against an insertion sort.
local big, ref = {}, {}
for i = 1, 500 do big[i] = (i * 7919) % 503 ref[i] = big[i] end
local function key_less(a, b) return a % 10 < b % 10 end
table.sort(big, key_less)
for i = 2, #ref do  -- moves an element left past the greater ones only: equal ones keep their order
  local v, j = ref[i], i - 1
  while j >= 1 and key_less(v, ref[j]) do ref[j + 1] = ref[j] j = j - 1 end
  ref[j + 1] = v
end
local same = true for i = 1, 500 do same = same and big[i] == ref[i] end
out[#out + 1] = tostring(same)
-- __lt metamethods, with ties: stable too.
local mt = {__lt = function(a, b) return a.k < b.k end}
local m = {} for i = 1, 8 do m[i] = setmetatable({k = i % 3, id = i}, mt) end
table.sort(m)
out[#out + 1] = ids(m, "id")
-- A table seen through metamethods (__index, __newindex, __len), as a proxy is.
local back = {3, 1, 2, 1}
local p = setmetatable({}, {__index = back, __newindex = back, __len = function() return #back end})
table.sort(p)
out[#out + 1] = table.concat(back, " ")
-- A __len that says less than the table holds: only that prefix is sorted.
local short = setmetatable({5, 4, 3, 2, 1}, {__len = function() return 3 end})
table.sort(short)
out[#out + 1] = table.concat(short, " ", 1, 5)
return table.concat(out, "\n")
)lua";
  ASSERT_EQ(luaL_dostring(L, chunk), LUA_OK) << lua_tostring(L, -1);
  EXPECT_EQ(std::string(lua_tostring(L, -1)),
            "e b d a c\n"
            "2 4 2000 1 1999\n"
            "true\n"
            "3 6 1 4 7 2 5 8\n"  // keys 0 (3, 6), 1 (1, 4, 7), 2 (2, 5, 8)
            "1 1 2 3\n"
            "3 4 5 2 1");
  lua_close(L);
}

// A comparator that raises, yields, answers with non-booleans or is no order at all: a clear error with
// the table left as it was, or one deterministic order; never a crash or a hang.
TEST(BoundedStdlibTest, SortRefusesBadComparatorsClearly) {
  lua_State* L = luaL_newstate();
  luaL_openlibs(L);
  host::InstallBoundedStdlib(L);
  const char* chunk = R"lua(
local out = {}
local function try(t, comp)
  local ok, err = pcall(table.sort, t, comp)
  out[#out + 1] = (ok and "ok" or tostring(err)) .. " | " .. table.concat(t, " ")
end
try({3, 1, 2}, function(a, b) error("boom", 0) end)       -- raises: the table is left as it was
try({3, 1, 2}, function(a, b) error(setmetatable({}, {__tostring = function() return "obj" end})) end)
try({5, 2, 8, 1, 9, 3, 7, 4, 6, 0}, function() return true end)  -- no order: every element "less"
try({3, 1, 2, 2}, function(a, b) return a <= b end)       -- <= with ties is no strict order
try({3, 1, 2}, function(a, b) return a <= b end)          -- without ties it sorts
try({3, 1, 2}, function(a, b) return 1 end)               -- a number is true: as `return true`
try({3, 1, 2}, function(a, b) return nil end)             -- nothing is less: all equal, order kept
try({3, 1, 2}, function(a, b) return a < b and "yes" end) -- a string is true
try({3, "a"})                                             -- Lua's own comparison error
try({2, 1}, 5)
-- Yielding inside the comparator is refused by Lua (the sort is a C function).
local co = coroutine.wrap(function()
  local t = {3, 1, 2}
  local ok, err = pcall(table.sort, t, function(a, b) coroutine.yield() return a < b end)
  return tostring(err) .. " | " .. table.concat(t, " ")
end)
out[#out + 1] = co()
-- An inconsistent comparator (depends on a counter) gives an error or an order, the same each time.
local function run()
  local calls = 0
  local t = {} for i = 1, 200 do t[i] = (i * 37) % 101 end
  local ok, err = pcall(table.sort, t, function(a, b) calls = calls + 1 return (a * 7 + b * 3 + calls) % 5 < 2 end)
  return (ok and "ok" or err) .. " " .. table.concat(t, ",")
end
out[#out + 1] = tostring(run() == run())
-- A comparator that sorts the same table again, or empties it, while it is being sorted.
local t = {4, 3, 2, 1}
try(t, function(a, b) table.sort(t) return a < b end)
local u = {4, 3, 2, 1}
try(u, function(a, b) for i = 1, #u do u[i] = nil end return a < b end)
-- A __len that is not an integer.
local ok, err = pcall(table.sort, setmetatable({}, {__len = function() return 1.5 end}))
out[#out + 1] = tostring(err)
return table.concat(out, "\n")
)lua";
  ASSERT_EQ(luaL_dostring(L, chunk), LUA_OK) << lua_tostring(L, -1);
  EXPECT_EQ(std::string(lua_tostring(L, -1)),
            "boom | 3 1 2\n"
            "obj | 3 1 2\n"
            "invalid order function for sorting | 5 2 8 1 9 3 7 4 6 0\n"
            "invalid order function for sorting | 3 1 2 2\n"
            "ok | 1 2 3\n"
            "invalid order function for sorting | 3 1 2\n"
            "ok | 3 1 2\n"
            "ok | 1 2 3\n"
            "attempt to compare string with number | 3 a\n"
            "bad argument #2 to 'table.sort' (function expected, got number) | 2 1\n"
            "attempt to yield across a C-call boundary | 3 1 2\n"
            "true\n"
            "ok | 1 2 3 4\n"
            "ok | 1 2 3 4\n"
            "object length is not an integer");
  lua_close(L);
}

// ---- the REPL ---------------------------------------------------------------------------------------------

TEST_F(MeteredEntriesTest, ReplPrintingHelpAndLoadStayMetered) {
  const std::string repl = "repl --instruction-limit 1000000 --time-limit 5";
  // Printing a value runs its code (a key's __tostring): metered like the line itself.
  Output o = Kplab(repl, std::string("return {[") + kLoop + "] = 1}\n6 * 7\n");
  EXPECT_EQ(o.out, "<error while printing: stdin:1: instruction budget of 1000000 exceeded>\n42\n") << o.err;
  // help(name) loads a plugin in a call of its own; the rest of the line stays under the line's budget.
  o = Kplab(repl, "help('exact') while true do end\n");
  EXPECT_EQ(o.code, 3);
  EXPECT_NE(o.err.find("stdin:1: instruction budget of 1000000 exceeded"), std::string::npos) << o.err;
  EXPECT_NE(o.out.find("metric plugin exact"), std::string::npos) << o.out;
  // :load calls kplab's kp.load and sets its globals raw, whatever the session did to kp or _ENV.
  o = Kplab(repl, "kp = setmetatable({}, {__index = function() while true do end end})\n"
                  "local _ = setmetatable(_ENV, {__newindex = function() while true do end end})\n"
                  ":load examples/tiny\n#tiny\n");
  EXPECT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(o.out, "tiny = Corpus(tiny: 5 documents, profile kplab)   (also `corpus`)\n5\n");
}

class MeteredReplTest : public ::testing::Test {
 protected:
  TempDir home_;
  PtySession Start(const std::vector<std::string>& extra) {
    std::vector<std::string> argv = {KPLAB_BINARY, "repl"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return PtySession(argv, KPLAB_SOURCE_DIR,
                      {"HOME=" + home_.path(), "XDG_STATE_HOME", "KPLAB_HISTORY", "KPLAB_DB=" + home_.File("db"),
                       "TERM=xterm"});
  }
};

// With no limits at all, Ctrl-C stops printing and completion that loop in the session's code.
TEST_F(MeteredReplTest, CtrlCStopsPrintingAndCompletion) {
  PtySession s = Start({"--instruction-limit", "0", "--time-limit", "0"});
  ASSERT_TRUE(s.started()) << s.start_error();
  ASSERT_TRUE(s.WaitFor("kp> ")) << s.Text();
  s.Send(std::string("return {[") + kLoop + "] = 1}\r");
  s.Drain(500);  // printing has started
  s.Send("\x03");
  ASSERT_TRUE(s.WaitFor("<error while printing: stdin:1: interrupted!>", 10000)) << s.Text();
  ASSERT_TRUE(s.WaitFor("kp> ", 10000)) << s.Text();
  s.Send("t = setmetatable({}, {__pairs = function() while true do end end})\r");
  ASSERT_TRUE(s.WaitFor("kp> ", 10000)) << s.Text();
  s.Send("t.\t");
  s.Drain(500);  // completion has started
  s.Send("\x03");
  ASSERT_TRUE(s.WaitFor("kp> ", 10000)) << s.Text();
  s.Send("6 * 7\r");
  ASSERT_TRUE(s.WaitFor("42\n", 10000)) << s.Text();
}

// With limits, completion through an __index that loops offers nothing and the prompt stays usable.
TEST_F(MeteredReplTest, CompletionThroughALoopingIndexStopsAtTheBudget) {
  PtySession s = Start({"--instruction-limit", "1000000"});
  ASSERT_TRUE(s.WaitFor("kp> ")) << s.Text();
  s.Send("t = setmetatable({}, {__index = function() while true do end end})\r");
  ASSERT_TRUE(s.WaitFor("kp> ", 10000)) << s.Text();
  s.Send("t.x.\t");
  s.Drain(1000);
  s.Send("\x15");  // clear the line
  s.Send("6 * 7\r");
  ASSERT_TRUE(s.WaitFor("42\n", 10000)) << s.Text();
}

}  // namespace
}  // namespace kplab::test
