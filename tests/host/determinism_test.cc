// Determinism as a checked property (docs/plugins.md, "What a plugin may keep"): the freeze closes what it
// can see (userdata and iterators made at load, writes to ctx), each plugin draws from its own math.random
// seeded per document, and after scoring a sample of documents is re-scored alone and compared bit for
// bit. Hostile plugins try each way of carrying a value from one document to the next and expect the exact
// message; a property test runs every plugin at 1, 2 and 4 threads and expects the same bits or a run that
// fails naming the plugin. The generator is checked against the stock lua5.4 interpreter.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "../../core/src/eval/on_threads.h"
#include "cli_harness.h"
#include "evaluate.h"
#include "kplab/corpus.h"
#include "kplab/io.h"
#include "kplab/profile.h"
#include "sandbox.h"

namespace {

namespace fs = std::filesystem;
using kplab::test::Output;

constexpr const char* kDetTiny = "--dataset examples/tiny --predictions examples/tiny/predictions.txt";

class Determinism : public ::testing::Test {
 protected:
  void SetUp() override {
    // Short: Lua shortens a chunk name past 60 bytes in messages, and the tests compare them exactly.
    static int n = 0;
    dir_ = fs::temp_directory_path() / ("kd" + std::to_string(::getpid()) + "_" + std::to_string(++n));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "pl");
  }
  void TearDown() override { fs::remove_all(dir_); }

  void Write(const std::string& name, const std::string& source) {
    std::ofstream(dir_ / "pl" / (name + ".lua")) << source;
  }
  std::string Plugins() const { return (dir_ / "pl").string(); }

  // `kplab eval` of examples/tiny (or `data`) with `metrics` from pl/, not stored, CSV. Every metric on
  // all --threads lanes (KPLAB_LANES=max): these small inputs would otherwise be scored on one lane each
  // (lanes.h), and what is tested here is that the lanes change no number.
  Output Eval(const std::string& metrics, const std::string& extra = "", const std::string& data = kDetTiny) {
    return kplab::test::RunKplab(
        dir_, "KPLAB_LANES=max KPLAB_DB=" + (dir_ / "db").string(),
        "eval " + data + " --output csv --no-store --metrics " + metrics + " --plugins " + Plugins() + " " + extra);
  }
  fs::path dir_;
};

// A plugin of one subset ("all") and one column (x) whose score body is `body`.
std::string DetProbe(const std::string& name, const std::string& prelude, const std::string& body,
                     const std::string& fields = "", const std::string& column = "x") {
  return "-- kplab-api: 2\n" + prelude + "\nreturn kp.metric { name = \"" + name + "\", version = \"1\", " + fields +
         "\n  subsets = { \"all\" }, columns = { \"" + column +
         "\" },\n"
         "  score = function(preds, refs, doc, p, ctx, out)\n" +
         body + "\n  end }\n";
}

std::string FirstLine(const std::string& s) { return s.substr(0, s.find('\n')); }

// ---- (c) the freeze closes what it can see ---------------------------------------------------------

TEST_F(Determinism, FreezeRefusesOrFreezesWhatCarriesStateFromLoad) {
  struct Case {
    std::string name, prelude, body, fields, message;  // message: the first line of stderr after "kplab: "
  };
  const std::string p = Plugins() + "/";
  const std::string refused =
      ", which plugin API 2 cannot make read-only (state kept across documents is refused; "
      "build it inside the call)";
  const std::string matrix =
      ":6: attempt to modify a read-only Matrix (it was made at load: plugin API 2 keeps no "
      "state across documents; make the Matrix inside the call) (while scoring document '1', "
      "subset 'all')";
  const std::vector<Case> cases = {
      // Found by the hostile pass: a Matrix made at load and set while scoring counted documents per lane.
      {"ud_matrix", "local M = kp.matrix{{0}}", "    M:set(1, 1, M:get(1, 1) + 1)\n    out.x = M:get(1, 1)", "",
       p + "ud_matrix.lua" + matrix},
      {"ud_nested", "local T = { m = kp.matrix{{1}} }", "    T.m:set(1, 1, 2)\n    out.x = T.m:get(1, 1)", "",
       p + "ud_nested.lua" + matrix},
      {"ud_closure", "local M = kp.matrix{{0}}\nlocal function bump() M:set(1, 1, 1) return 1 end",
       "    out.x = bump()", "",
       p + "ud_closure.lua:3: attempt to modify a read-only Matrix (it was made at load: plugin "
           "API 2 keeps no state across documents; make the Matrix inside the call) (while "
           "scoring document '1', subset 'all')"},
      // Found by the hostile pass: a string.gmatch iterator made at load kept its position across documents.
      {"it_gmatch", "local it = string.gmatch(string.rep('a ', 100), '%a')", "    out.x = it() and 1 or 0", "",
       p +
           "it_gmatch.lua:5: upvalue 'it' is a C function that keeps state of its own (an iterator such as "
           "string.gmatch's)" +
           refused},
      {"it_nested", "local T = { it = ('a b c'):gmatch('%a') }", "    out.x = T.it() and 1 or 0", "",
       p +
           "it_nested.lua:5: upvalue 'T' is a C function that keeps state of its own (an iterator such as "
           "string.gmatch's)" +
           refused},
      {"co_nested", "local T = { co = coroutine.create(function() end) }", "    out.x = T.co and 1 or 0", "",
       p + "co_nested.lua:5: upvalue 'T' is a coroutine" + refused},
      {"co_wrap_resume", "local step = coroutine.wrap(function() while true do coroutine.yield(1) end end)",
       "    out.x = step()", "",
       p +
           "co_wrap_resume.lua:5: upvalue 'step' is a function over a coroutine "
           "(coroutine.wrap)" +
           refused},
      // Found by the hostile pass: ctx.pairs and ctx.model were plain tables behind a shallow read-only ctx.
      {"ctx_pairs", "", "    ctx.pairs.count = (ctx.pairs.count or 0) + 1\n    out.x = ctx.pairs.count",
       "needs = {\"pairs\"},",
       p + "ctx_pairs.lua:6: attempt to modify read-only table 'ctx.pairs' (while scoring "
           "document '1', subset 'all')"},
      {"ctx_prepared", "", "    ctx.prepared.t.n = 1\n    out.x = 1", "prepare = function() return { t = {} } end,",
       p + "ctx_prepared.lua:6: attempt to modify read-only table 'ctx.prepared.t' (while scoring document '1', subset "
           "'all')"},
      {"ctx_field", "", "    ctx.memo = 1\n    out.x = 1", "",
       p + "ctx_field.lua:6: attempt to modify read-only table 'ctx' (while scoring document '1', subset 'all')"},
      // A table keyed by a document: the upvalue table is read-only.
      {"doc_key", "local seen = {}", "    seen[doc] = true\n    out.x = 1", "",
       p + "doc_key.lua:6: attempt to modify read-only table 'upvalue 'seen' of " + p +
           "doc_key.lua (plugin API 2: state is read-only after load)' (while scoring document '1', subset 'all')"},
      // string.gsub with a replacement function that counts in an upvalue.
      {"gsub_count", "local n = 0\nlocal function f() n = n + 1 end", "    ('a b'):gsub('%a', f)\n    out.x = n", "",
       p + "gsub_count.lua:3: upvalue 'n' of this function changed between documents (plugin API 2 refuses state "
           "kept across documents: results would depend on how documents are split among lanes; keep values per "
           "document, or declare a run-level value with c:custom) (after document '1')"},
      // string.gsub with a replacement table whose __index counts: refused at load.
      {"gsub_table", "local T = setmetatable({}, { __index = function(t, k) return k end })",
       "    out.x = #(('a b'):gsub('%a', T))", "",
       p + "gsub_table.lua:5: upvalue 'T' is a table with a metatable" + refused},
      // A seed from the clock is refused.
      {"seed_clock", "", "    math.randomseed()\n    out.x = math.random(10)", "",
       p + "seed_clock.lua:6: math.randomseed() needs a seed in a plugin: a seed from the clock would make the numbers "
           "irreproducible (math.random is seeded per document; docs/plugins.md, Randomness) (while scoring document "
           "'1', subset 'all')"},
  };
  for (const Case& c : cases) {
    Write(c.name, DetProbe(c.name, c.prelude, c.body, c.fields));
    const Output o = Eval(c.name);
    EXPECT_EQ(o.code, 3) << c.name << "\n" << o.err;
    EXPECT_EQ(FirstLine(o.err), "kplab: " + c.message) << c.name;
  }
}

// What a plugin may keep from load and use: constant tables, a Matrix it only reads, math.random,
// pairs(kp)'s iterator, utf8.codes, kp.log. The same numbers at 1 and 2 threads.
TEST_F(Determinism, WhatMayBeKeptFromLoadStillWorks) {
  Write("keeps",
        DetProbe("keeps",
                 "local M = kp.matrix{{3}}\nlocal rand, nxt, codes = math.random, pairs(kp), utf8.codes\n"
                 "local CATS = {'P', 'R'}",
                 "    local n = 0\n    for _ in codes('héllo') do n = n + 1 end\n"
                 "    local r = rand(1000)\n    out.x = M:get(1, 1) + #CATS + n + (nxt(kp) and 1 or 0) + r - r"));
  const Output one = Eval("keeps", "--threads 1"), two = Eval("keeps", "--threads 2");
  ASSERT_EQ(one.code, 0) << one.err;
  EXPECT_EQ(one.out, "metric,value\nall.x,11\n");  // 3 + 2 + 5 + 1
  EXPECT_EQ(two.out, one.out);
}

// ---- (a) each plugin's own math.random, seeded per document ------------------------------------------

// FNV-1a 64 of a, 0x00, b (docs/plugins.md, Randomness), written again here from its definition.
std::uint64_t Fnv(const std::string& a, const std::string& b) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : a + std::string(1, '\0') + b) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

// The generator is stock Lua 5.4's: each document's draws are what the lua5.4 interpreter prints after
// math.randomseed(H, S) with H and S as documented.
TEST_F(Determinism, EachDocumentDrawsStockLuasStreamForItsSeed) {
  EXPECT_EQ(kplab::host::SeedKey("rnd", "1"), Fnv("rnd", "1"));
  Write("rnd",
        "-- kplab-api: 2\nreturn kp.metric { name = \"rnd\", version = \"1\", columns = { \"a\", \"b\", \"c\" },\n"
        "  score = function(doc, p, ctx, out) out.a = math.random(1, 1000000) out.b = math.random(0) % 1000 "
        "out.c = math.random() end }\n");
  const Output o = kplab::test::RunKplab(dir_, "KPLAB_DB=" + (dir_ / "db").string(),
                                         std::string("eval ") + kDetTiny + " --metrics rnd --random-seed 7 --plugins " +
                                             Plugins() + " --db " + (dir_ / "db").string() + " --output csv");
  ASSERT_EQ(o.code, 0) << o.err;
  const Output exported =
      kplab::test::RunKplab(dir_, "", "runs export 1 --db " + (dir_ / "db").string() + " --output csv");
  ASSERT_EQ(exported.code, 0) << exported.err;
  if (std::system("command -v lua5.4 >/dev/null 2>&1") != 0) GTEST_SKIP() << "no lua5.4 interpreter";
  // The stock interpreter's draws for documents 1..5 (examples/tiny's ids), as CSV rows like the export's.
  std::string lua =
      "local function row(id, h) math.randomseed(h, 7) local a = math.random(1, 1000000) "
      "local b = math.random(0) % 1000 local c = math.random() "
      "io.write(string.format('%s,%.17g,%.17g,%.17g\\n', id, a, b, c)) end ";
  for (int d = 1; d <= 5; ++d) {
    lua += "row('" + std::to_string(d) + "', " +
           std::to_string(static_cast<std::int64_t>(Fnv("rnd", std::to_string(d)))) + ") ";
  }
  std::ofstream(dir_ / "ref.lua") << lua;
  const std::string cmd = "lua5.4 " + (dir_ / "ref.lua").string() + " > " + (dir_ / "ref.txt").string();
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  const std::string want = kplab::test::Slurp(dir_ / "ref.txt");
  // The export's rows: doc_id, then all.a/all.b/all.c (no subsets: names as written, a, b, c).
  std::string got;
  std::istringstream in(exported.out);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "doc_id,a,b,c");
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string id, a, b, c;
    std::getline(f, id, ',');
    std::getline(f, a, ',');
    std::getline(f, b, ',');
    std::getline(f, c, ',');
    char buf[128];
    std::snprintf(buf, sizeof buf, "%s,%.17g,%.17g,%.17g\n", id.c_str(), std::stod(a), std::stod(b), std::stod(c));
    got += buf;
  }
  EXPECT_EQ(got, want);
}

// Draws do not depend on the threads, on the run being repeated, or on another plugin; the run seed
// changes them and is stored with the run. Found by the hostile pass: seeded at load the numbers moved
// with --threads, unseeded they moved on every identical run, and one plugin's math.randomseed moved
// another's.
TEST_F(Determinism, RandomnessIsPerPluginAndPerDocument) {
  Write("draw", DetProbe("draw", "", "    out.d = math.random(1000000)", "", "d"));
  Write("seedload", DetProbe("seedload", "math.randomseed(7)\nlocal K = math.random(1000000)",
                             "    out.s = K + math.random(1000)", "", "s"));
  Write("prep",
        "-- kplab-api: 2\nreturn kp.metric { name = \"prep\", version = \"1\", columns = { \"y\" },\n"
        "  prepare = function() return { r = math.random(1000000) } end,\n"
        "  score = function(doc, p, ctx, out) out.y = ctx.prepared.r end }\n");
  Write("reseeder",
        "-- kplab-api: 2\nreturn kp.metric { name = \"reseeder\", version = \"1\", columns = { \"r\" },\n"
        "  score = function(doc, p, ctx, out) math.randomseed(42) math.random() out.r = 1 end }\n");
  const std::string metrics = "draw,seedload,prep";
  const Output base = Eval(metrics, "--threads 1");
  ASSERT_EQ(base.code, 0) << base.err;
  for (const std::string threads : {"1", "2", "4"}) {
    const Output o = Eval(metrics, "--threads " + threads);
    EXPECT_EQ(o.code, 0) << o.err;
    EXPECT_EQ(o.out, base.out) << threads << " threads";
  }
  // Another plugin re-seeding its own generator before and beside them changes nothing of theirs.
  const Output with = Eval("reseeder," + metrics, "--threads 2");
  ASSERT_EQ(with.code, 0) << with.err;
  EXPECT_EQ(with.out, "metric,value\nr,1\n" + base.out.substr(std::string("metric,value\n").size()));
  // The run seed moves the per-document draws only (load and prepare are seeded from the plugin alone).
  const Output seeded = Eval(metrics, "--threads 2 --random-seed 5");
  ASSERT_EQ(seeded.code, 0) << seeded.err;
  EXPECT_NE(seeded.out, base.out);
  EXPECT_EQ(seeded.out.substr(seeded.out.find("\ny,")), base.out.substr(base.out.find("\ny,")));
}

// table.sort orders ties one way (a stable merge sort): Lua's own quicksort took a pivot from the clock on
// uneven partitions, so a plugin whose value depends on the order of ties could move between identical
// runs. 2000 records with two keys, sorted by key: stable, the first is id 2, the 1001st id 1 and the
// last id 1999 (x = 2e8 + 1e4 + 1999 on every document), at 1, 2 and 4 threads and on a second run.
TEST_F(Determinism, SortOrdersTiesOneWay) {
  Write("ties", DetProbe("ties", "",
                         "    local r = {}\n"
                         "    for i = 1, 2000 do r[i] = {k = i % 2, id = i} end\n"
                         "    table.sort(r, function(a, b) return a.k < b.k end)\n"
                         "    out.x = r[1].id * 100000000 + r[1001].id * 10000 + r[2000].id"));
  for (const std::string threads : {"1", "2", "4", "1"}) {
    const Output o = Eval("ties", "--threads " + threads);
    EXPECT_EQ(o.code, 0) << o.err;
    EXPECT_EQ(o.out, "metric,value\nall.x,200011999\n") << threads << " threads";
  }
}

// ---- (b) documents re-scored alone -------------------------------------------------------------------

// What the freeze cannot see: an API 1 counter, an address, the order of pairs over string keys.
TEST_F(Determinism, ReScoringAloneCatchesWhatTheFreezeMisses) {
  Write("counter",
        "-- kplab-api: 1\nlocal n = 0\nreturn kp.metric { name = \"counter\", version = \"1\",\n"
        "  score = function(doc, p, ctx) n = n + 1 return { [\"all.x\"] = n } end }\n");
  // examples/tiny in one lane: document 2 is the second scored (2 in the run), alone it is the first.
  Output o = Eval("counter", "--threads 1");
  EXPECT_EQ(o.code, 3) << o.err;
  EXPECT_EQ(FirstLine(o.err), "kplab: " + Plugins() +
                                  "/counter.lua: plugin 'counter' carried state across documents "
                                  "(document '2', column 'all.x': 2 in the run, 1 alone)");
  // Two lanes: documents 1-2 and 3-5. Document 3 opens lane 2 (1 in the run, as alone); document 2 does not.
  o = Eval("counter", "--threads 2");
  EXPECT_EQ(FirstLine(o.err), "kplab: " + Plugins() +
                                  "/counter.lua: plugin 'counter' carried state across documents "
                                  "(document '2', column 'all.x': 2 in the run, 1 alone)");
  // Turned off, the run goes through (and its numbers depend on the lanes: what the check is for).
  o = Eval("counter", "--threads 1 --verify-docs 0");
  EXPECT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(o.out, "metric,value\nall.x,3\n");  // (1 + 2 + 3 + 4 + 5) / 5

  // An API 1 plugin writing to its ctx (API 1's ctx is the lane's table).
  Write("ctxcount",
        "-- kplab-api: 1\nreturn kp.metric { name = \"ctxcount\", version = \"1\",\n"
        "  score = function(doc, p, ctx) ctx.n = (ctx.n or 0) + 1 return { [\"all.x\"] = ctx.n } end }\n");
  o = Eval("ctxcount", "--threads 1");
  EXPECT_EQ(FirstLine(o.err), "kplab: " + Plugins() +
                                  "/ctxcount.lua: plugin 'ctxcount' carried state across "
                                  "documents (document '2', column 'all.x': 2 in the run, 1 alone)");
  // A document that fails alone: it relied on what the document before left.
  Write("relies",
        "-- kplab-api: 1\nlocal last\nreturn kp.metric { name = \"relies\", version = \"1\",\n"
        "  score = function(doc, p, ctx)\n    if doc.id ~= '1' then assert(last, 'no previous document') end\n"
        "    last = doc.id return { [\"all.x\"] = 1 } end }\n");
  o = Eval("relies", "--threads 1");
  EXPECT_EQ(o.code, 3);
  EXPECT_EQ(FirstLine(o.err), "kplab: " + Plugins() +
                                  "/relies.lua: plugin 'relies' carried state across documents "
                                  "(document '2' fails when scored alone: " +
                                  Plugins() + "/relies.lua:5: no previous document (while scoring document '2'))");
  // Table addresses (tostring, %p) and the order of pairs over string keys differ between Lua states.
  const std::vector<std::pair<std::string, std::string>> unstable = {
      {"address", "    out.x = tonumber(tostring({}):match('0x(%x+)'), 16) % 1000003"},
      {"pointer", "    out.x = tonumber(string.format('%p', {}):match('(%x+)$'), 16) % 1000003"},
      {"hashorder", "    local t = {}\n    for i = 1, 40 do t['key' .. i] = i end\n    out.x = t[next(t)]"},
  };
  for (const auto& [name, body] : unstable) {
    Write(name, DetProbe(name, "", body));
    o = Eval(name, "--threads 2");
    EXPECT_EQ(o.code, 3) << name << "\n" << o.err;
    EXPECT_EQ(FirstLine(o.err).rfind("kplab: " + Plugins() + "/" + name + ".lua: plugin '" + name +
                                         "' carried state across documents (document '",
                                     0),
              0u)
        << name << ": " << o.err;
  }
}

// The setting is recorded with the run and refused outside its range.
TEST_F(Determinism, VerifySettingIsRecordedAndChecked) {
  const std::string db = (dir_ / "db").string();
  Output o = kplab::test::RunKplab(dir_, "", std::string("eval ") + kDetTiny + " --db " + db + " --output csv");
  ASSERT_EQ(o.code, 0) << o.err;
  o = kplab::test::RunKplab(
      dir_, "", std::string("eval ") + kDetTiny + " --db " + db + " --output csv --verify-docs 3 --random-seed 9");
  ASSERT_EQ(o.code, 0) << o.err;
  o = kplab::test::RunKplab(dir_, "", "runs show 1 --db " + db);
  EXPECT_NE(o.out.find("\"_verify\": {\"docs\": 16}"), std::string::npos) << o.out;
  EXPECT_EQ(o.out.find("_random_seed"), std::string::npos) << o.out;
  o = kplab::test::RunKplab(dir_, "", "runs show 2 --db " + db);
  EXPECT_NE(o.out.find("\"_verify\": {\"docs\": 3}, \"_random_seed\": 9"), std::string::npos) << o.out;
  o = kplab::test::RunKplab(dir_, "", std::string("eval ") + kDetTiny + " --no-store --verify-docs -1");
  EXPECT_EQ(o.code, 1);
  EXPECT_NE(o.err.find("--verify-docs"), std::string::npos) << o.err;
}

// ---- the property: the same bits at 1, 2 and 4 threads, or a run that fails naming the plugin --------

TEST_F(Determinism, EveryPluginGivesTheSameBitsAtAnyThreadCountOrFailsNamingItself) {
  // Hostile plugins (each a way of carrying state or drawing unreproducible numbers) beside the shipped
  // ones that run without a model. Inspec (500 documents) when the shared data is there, else examples/tiny.
  const std::map<std::string, std::string> hostile = {
      {"h_counter1",
       "-- kplab-api: 1\nlocal n = 0\nreturn kp.metric { name = \"h_counter1\", version = \"1\",\n"
       "  score = function(doc, p, ctx) n = n + 1 return { [\"all.x\"] = n % 7 } end }\n"},
      {"h_address", DetProbe("h_address", "", "    out.x = tonumber(tostring({}):match('0x(%x+)'), 16) % 7")},
      {"h_hash",
       DetProbe("h_hash", "", "    local t = {}\n    for i = 1, 40 do t['k' .. i] = i end\n    out.x = t[next(t)]")},
      {"h_random", DetProbe("h_random", "local K = math.random(100)", "    out.x = K + math.random(100)")},
      {"h_keep",
       "-- kplab-api: 1\nlocal first\nreturn kp.metric { name = \"h_keep\", version = \"1\",\n"
       "  score = function(doc, p, ctx) first = first or doc return { [\"all.x\"] = #first.preds } end }\n"},
  };
  for (const auto& [name, source] : hostile) Write(name, source);
  const std::string inspec = std::string(KPLAB_SHARED_DATA) + "/kpg_testsets_meng2017/inspec";
  const std::string data = fs::exists(inspec) ? "--dataset " + inspec + " --predictions " + KPLAB_SHARED_DATA +
                                                    "/predictions/catSeqTG-2RF1/inspec/seed1234.txt"
                                              : kDetTiny;
  std::vector<std::string> plugins = {"exact", "rank", "rprec", "prmu", "homogeneity"};
  for (const auto& [name, _] : hostile) plugins.push_back(name);
  for (const std::string& plugin : plugins) {
    std::string first;
    for (const char* threads : {"1", "2", "4"}) {
      const Output o = Eval(plugin, std::string("--threads ") + threads, data);
      if (o.code == 3) {
        EXPECT_NE(o.err.find("plugin '" + plugin + "' carried state across documents"), std::string::npos)
            << plugin << " at " << threads << " threads: " << o.err;
        continue;
      }
      ASSERT_EQ(o.code, 0) << plugin << " at " << threads << " threads: " << o.err;
      if (first.empty()) first = o.out;
      EXPECT_EQ(o.out, first) << plugin << " at " << threads << " threads";
    }
  }
}

// ---- the corpus a run builds: streamed only when every metric compares within a document ----

// Evaluate resolves the metrics before it reads the files and streams the corpus (scores each range as
// it is built, keeps none) only when every plugin is a native kernel among exact, rank and rprec with
// nothing that reads across documents (ComparesWithinDocuments, design note 72). Decided by what the
// plugins are, not by their names: a plugin directory's exact.lua that scores in Lua, or a kernel plugin
// with needs or prepare, gets the corpus built whole, with corpus-wide ids. Either way the numbers are
// the one-thread run's.
TEST_F(Determinism, OnlyWithinDocumentKernelsAreStreamedAndNumbersDoNotMove) {
  const std::string inspec = std::string(KPLAB_SHARED_DATA) + "/kpg_testsets_meng2017/inspec";
  if (!fs::exists(inspec)) GTEST_SKIP() << "no ../shared/data";
  const std::string data =
      "--dataset " + inspec + " --predictions " + KPLAB_SHARED_DATA + "/predictions/catSeqTG-2RF1/inspec/seed1234.txt";
  auto run = [&](const std::string& metrics, const std::string& plugins, const std::string& threads) {
    return kplab::test::RunKplab(dir_, "KPLAB_TIMING=1 KPLAB_DB=" + (dir_ / "db").string(),
                                 "eval " + data + " --output csv --no-store --metrics " + metrics + " --threads " +
                                     threads + (plugins.empty() ? "" : " --plugins " + plugins));
  };
  // A plugin directory holding one exact.lua: the file, with `insert` after its `score = ` line's start.
  auto directory = [&](const std::string& name, const std::string& source) {
    fs::create_directories(dir_ / name);
    std::ofstream(dir_ / name / "exact.lua") << source;
    return (dir_ / name).string();
  };
  auto read = [](const std::string& path) {
    std::ifstream in(std::string(KPLAB_SOURCE_DIR) + "/" + path);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  const std::string shipped = read("plugins/exact.lua");
  const std::string score_line = "  score = kp.kernel.exact,";
  ASSERT_NE(shipped.find(score_line), std::string::npos);
  auto with = [&](const std::string& field) {
    std::string s = shipped;
    return s.insert(s.find(score_line), field);
  };
  const std::string streamed = "streamed: ", built = "phrase ids: corpus-wide";
  const Output one = run("exact", "", "1");
  ASSERT_EQ(one.code, 0) << one.err;
  EXPECT_NE(one.err.find(streamed), std::string::npos) << one.err;
  struct Case {
    std::string what, metrics, plugins, note;
  };
  const std::vector<Case> cases = {
      {"the shipped kernel", "exact", "", streamed},
      {"a Lua exact.lua under the shipped name", "exact", directory("lua", read("plugins/reference/exact.lua")), built},
      {"the kernel with needs", "exact", directory("needs", with("  needs = { \"source\" },\n")), built},
      {"the kernel with prepare", "exact",
       directory("prepare", with("  prepare = function(corpus, p, ctx) return #corpus end,\n")), built},
      {"the kernel with needs as a function returning none", "exact",
       directory("needs_fn", with("  needs = function(profile, params) return {} end,\n")), built},
  };
  for (const Case& c : cases) {
    for (const char* threads : {"1", "3"}) {
      const Output o = run(c.metrics, c.plugins, threads);
      ASSERT_EQ(o.code, 0) << c.what << ": " << o.err;
      EXPECT_NE(o.err.find(c.note), std::string::npos) << c.what << ", " << threads << " threads: " << o.err;
      EXPECT_EQ(o.err.find(c.note == streamed ? built : streamed), std::string::npos) << c.what << ": " << o.err;
      EXPECT_EQ(o.out, one.out) << c.what << ", " << threads << " threads";
    }
  }
  // The default metrics (exact, rank, rprec) are streamed too; with a metric scored in Lua beside them, not.
  const Output defaults_one = run("exact,rank,rprec", "", "1");
  ASSERT_EQ(defaults_one.code, 0) << defaults_one.err;
  const Output defaults = run("exact,rank,rprec", "", "4");
  EXPECT_NE(defaults.err.find(streamed), std::string::npos) << defaults.err;
  EXPECT_EQ(defaults.out, defaults_one.out);
  const Output with_prmu = run("exact,prmu", "", "4");
  ASSERT_EQ(with_prmu.code, 0) << with_prmu.err;
  EXPECT_NE(with_prmu.err.find(built), std::string::npos) << with_prmu.err;
}

// The one seam refuses what Evaluate never builds: a per-range corpus given (through EvaluateCorpus, as
// a library caller could) to a run whose metrics compare phrases across documents is an internal error,
// not numbers read from two ids of one string; the same corpus serves the kernels, with the numbers of a
// corpus-wide one.
TEST_F(Determinism, APerRangeCorpusIsRefusedToMetricsThatReadAcrossDocuments) {
  const std::string inspec = std::string(KPLAB_SHARED_DATA) + "/kpg_testsets_meng2017/inspec";
  if (!fs::exists(inspec)) GTEST_SKIP() << "no ../shared/data";
  auto ds = kplab::ImportDataset(inspec);
  ASSERT_TRUE(ds.ok()) << ds.error().message;
  auto p = kplab::ImportPredictions(std::string(KPLAB_SHARED_DATA) + "/predictions/catSeqTG-2RF1/inspec/seed1234.txt");
  ASSERT_TRUE(p.ok()) << p.error().message;
  auto aligned = kplab::AlignPredictions(*ds, std::move(*p));
  ASSERT_TRUE(aligned.ok()) << aligned.error().message;
  auto build = [&](kplab::PhraseIds ids) {
    auto c = kplab::BuildCorpus(*ds, &*aligned, *kplab::FindProfile("kplab"), 3, [ids] { return ids; });
    EXPECT_TRUE(c.ok()) << c.error().message;
    return std::make_shared<const kplab::Corpus>(std::move(*c));
  };
  const auto per_range = build(kplab::PhraseIds::kPerRange), corpus_wide = build(kplab::PhraseIds::kCorpus);
  ASSERT_EQ(per_range->phrase_ids, kplab::PhraseIds::kPerRange);
  kplab::host::EvalRequest req;
  req.threads = 2;
  req.keep_columns = false;
  for (const char* metric : {"prmu", "homogeneity"}) {
    req.metrics = {metric};
    auto refused = kplab::host::EvaluateCorpus(per_range, req);
    ASSERT_FALSE(refused.ok()) << metric;
    EXPECT_EQ(refused.error().kind, kplab::ErrorKind::kInternal) << metric;
    EXPECT_NE(refused.error().message.find("per-range phrase ids"), std::string::npos) << refused.error().message;
    EXPECT_TRUE(kplab::host::EvaluateCorpus(corpus_wide, req).ok()) << metric;
  }
  req.metrics = {"exact", "rank", "rprec"};
  auto kernels = kplab::host::EvaluateCorpus(per_range, req);
  ASSERT_TRUE(kernels.ok()) << kernels.error().message;
  auto expected = kplab::host::EvaluateCorpus(corpus_wide, req);
  ASSERT_TRUE(expected.ok()) << expected.error().message;
  ASSERT_EQ(kernels->aggregates.size(), expected->aggregates.size());
  EXPECT_FALSE(kernels->aggregates.empty());
  for (std::size_t i = 0; i < expected->aggregates.size(); ++i) {
    EXPECT_EQ(kernels->aggregates[i].metric, expected->aggregates[i].metric);
    EXPECT_EQ(kernels->aggregates[i].value, expected->aggregates[i].value) << expected->aggregates[i].metric;
  }
}

// The whole evaluation (the files read as lines, the ranges built and scored as they are, the aggregates)
// with many ranges on each thread (design notes 70 and 72): KP20k's 20,000 documents in ranges of at most
// 1,499 on 2 threads and of at most 997 on 3 (7 ranges a thread either way), against one thread in one
// range. Every per-document value and every aggregate of the default metrics is the same, bit for bit (NaN
// where NaN); KPLAB_TIMING says how many ranges were streamed, so the ranges were really cut.
TEST_F(Determinism, ManyRangesOnEachThreadGiveTheOneRangeRunsBits) {
  const std::string kp20k = std::string(KPLAB_SHARED_DATA) + "/kpg_testsets_meng2017/kp20k";
  if (!fs::exists(kp20k)) GTEST_SKIP() << "no ../shared/data";
  kplab::host::EvalRequest req;
  req.dataset_path = kp20k;
  req.predictions_path = std::string(KPLAB_SHARED_DATA) + "/predictions/catSeqTG-2RF1/kp20k/seed1234.txt";
  req.metrics = {"exact", "rank", "rprec"};
  auto evaluate = [&](int threads, std::size_t docs_per_range, std::string* timing) {
    kplab::eval_internal::ScopedDocsPerRange ranges(docs_per_range);
    req.threads = threads;
    ::setenv("KPLAB_TIMING", "1", 1);
    ::testing::internal::CaptureStderr();
    auto r = kplab::host::Evaluate(req);
    *timing = ::testing::internal::GetCapturedStderr();
    ::unsetenv("KPLAB_TIMING");
    return r;
  };
  std::string timing;
  auto one = evaluate(1, kplab::eval_internal::DocsPerRange(), &timing);
  ASSERT_TRUE(one.ok()) << one.error().message;
  EXPECT_NE(timing.find("streamed: each of 1 range "), std::string::npos) << timing;
  ASSERT_FALSE(one->scores.columns.empty());
  ASSERT_EQ(one->scores.columns[0].size(), 20000u);
  for (auto [threads, per_range] : {std::pair{2, std::size_t{1499}}, std::pair{3, std::size_t{997}}}) {
    const std::string what = std::to_string(threads) + " threads, ranges of " + std::to_string(per_range);
    auto many = evaluate(threads, per_range, &timing);
    ASSERT_TRUE(many.ok()) << what << ": " << many.error().message;
    EXPECT_NE(timing.find("streamed: each of " + std::to_string(7 * threads) + " ranges"), std::string::npos)
        << what << ": " << timing;
    ASSERT_EQ(many->scores.metrics, one->scores.metrics) << what;
    ASSERT_EQ(many->scores.columns.size(), one->scores.columns.size()) << what;
    for (std::size_t c = 0; c < one->scores.columns.size(); ++c) {
      const auto& want = one->scores.columns[c];
      const auto& got = many->scores.columns[c];
      ASSERT_EQ(got.size(), want.size()) << what << ", " << one->scores.metrics[c];
      std::size_t differ = 0, first = want.size();
      for (std::size_t d = 0; d < want.size(); ++d) {
        if (std::memcmp(&got[d], &want[d], sizeof(double)) != 0 && ++differ == 1) first = d;
      }
      EXPECT_EQ(differ, 0u) << what << ", " << one->scores.metrics[c] << ": first at document " << first;
    }
    ASSERT_EQ(many->aggregates.size(), one->aggregates.size()) << what;
    for (std::size_t i = 0; i < one->aggregates.size(); ++i) {
      EXPECT_EQ(many->aggregates[i].metric, one->aggregates[i].metric) << what;
      EXPECT_EQ(std::memcmp(&many->aggregates[i].value, &one->aggregates[i].value, sizeof(double)), 0)
          << what << ", " << one->aggregates[i].metric;
    }
  }
}

}  // namespace
