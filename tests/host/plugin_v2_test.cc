// Plugin API 2 (docs/plugins.md): typed parameters checked once, subsets iterated by the host, columns
// declared with their aggregation, and no state across documents. Happy cases check hand-computed
// numbers on examples/tiny; hostile ones try to get around each promise.
//
// Hand calculation (examples/tiny, kplab profile): hits in the top 5 predictions per document are 3, 3,
// 2, 2, 2 (tests/lua_module/api.lua lists them), every document has predictions, so P@5 micro = 12 / 25
// = 0.48.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "cli_harness.h"

namespace {

namespace fs = std::filesystem;

class PluginV2 : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kplab_v2_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "pl");
  }
  void TearDown() override { fs::remove_all(dir_); }
  // Writes pl/probe.lua = source and evaluates examples/tiny with it.
  kplab::test::Output Eval(const std::string& source, const std::string& extra = "") {
    std::ofstream(dir_ / "pl" / "probe.lua") << source;
    return kplab::test::RunKplab(dir_, "KPLAB_DB=" + (dir_ / "db").string(),
                                 "eval --dataset examples/tiny --predictions examples/tiny/predictions.txt "
                                 "--output csv --metrics probe --plugins " + (dir_ / "pl").string() + " " + extra);
  }
  bool Has(const kplab::test::Output& o, const std::string& line) {
    return o.out.find("\n" + line + "\n") != std::string::npos;
  }
  fs::path dir_;
};

// A plugin with one subset whose score body is `body` (preds, refs, doc, p, ctx, out in scope).
std::string V2Probe(const std::string& prelude, const std::string& body, const std::string& params = "") {
  return "-- kplab-api: 2\n" + prelude +
         "return kp.metric { name = \"probe\", version = \"1\",\n"
         "  params = { " + params + " },\n"
         "  subsets = { \"all\" },\n"
         "  columns = { \"x\" },\n"
         "  score = function(preds, refs, doc, p, ctx, out)\n" + body + "\n  end }\n";
}

TEST_F(PluginV2, DeclaredAggregatesByHand) {
  auto o = Eval(R"(-- kplab-api: 2
return kp.metric { name = "probe", version = "1",
  params = { k = kp.int { default = 5, min = 1, doc = "cut-off" } },
  subsets = { "all", "present" },
  columns = function(c, p)
    local s = { hits = c:column("hits", "sum"), den = c:hidden("den") }
    c:ratio("p", s.hits, s.den)
    c:custom("twice_p", function(a) return 2 * a.p end)
    c:custom("docs", function(a, cols) return cols.den:count() end)
    return s
  end,
  score = function(preds, refs, doc, p, ctx, out)
    if ctx.subset == "present" then return end  -- nothing written: no present.* values at all
    out[ctx.slots.hits] = preds:match(refs):hits(p.k)
    out.den = p.k  -- by declared name
  end }
)");
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_TRUE(Has(o, "all.hits,12")) << o.out;
  EXPECT_TRUE(Has(o, "all.p,0.48")) << o.out;
  EXPECT_TRUE(Has(o, "all.twice_p,0.96")) << o.out;
  EXPECT_TRUE(Has(o, "all.docs,5")) << o.out;
  EXPECT_EQ(o.out.find("present."), std::string::npos) << o.out;
  EXPECT_EQ(o.out.find("den"), std::string::npos) << "hidden columns are not results: " << o.out;
}

TEST_F(PluginV2, HostIteratesEverySubsetOfEveryDocument) {
  auto o = Eval(R"(-- kplab-api: 2
return kp.metric { name = "probe", version = "1",
  subsets = { "all", "present", "absent" },
  columns = function(c) return { n = c:column("calls", "sum") } end,
  score = function(preds, refs, doc, p, ctx, out) out[ctx.slots.n] = 1 end }
)");
  ASSERT_EQ(o.code, 0) << o.err;
  // 5 documents, all with text: each subset scored 5 times.
  EXPECT_TRUE(Has(o, "all.calls,5") && Has(o, "present.calls,5") && Has(o, "absent.calls,5")) << o.out;
}

TEST_F(PluginV2, ParametersAreCheckedOnceWithTheirDeclaredType) {
  const std::string src = V2Probe("", "    out.x = p.k", "k = kp.int { default = 3, min = 1, max = 10 }");
  auto ok = Eval(src, "--no-store --param probe.k=7");
  ASSERT_EQ(ok.code, 0) << ok.err;
  EXPECT_TRUE(Has(ok, "all.x,7")) << ok.out;
  for (const auto& [value, message] : std::vector<std::pair<std::string, std::string>>{
           {"0", "must be an integer from 1 to 10 (got 0)"},
           {"2.5", "must be an integer from 1 to 10 (got 2.5)"},
           {"11", "must be an integer from 1 to 10 (got 11)"},
           {"x", "must be an integer from 1 to 10 (got 'x')"},
           {"nan", "must be an integer from 1 to 10 (got nan)"}}) {
    auto o = Eval(src, "--param probe.k=" + value);
    EXPECT_EQ(o.code, 1) << value;
    EXPECT_EQ(o.err, "kplab: plugin 'probe': parameter 'k' " + message + "\n") << value;
  }
  EXPECT_FALSE(fs::exists(dir_ / "db")) << "a usage error stores nothing";
  auto s = Eval(V2Probe("", "    out.x = 1", "d = kp.string { default = \"union\", one_of = { \"union\", \"max\" } }"),
                "--param probe.d=min");
  EXPECT_EQ(s.err, "kplab: plugin 'probe': parameter 'd' must be one of: union, max (got 'min')\n");
  auto c = Eval(V2Probe("", "    out.x = #p.ks", "ks = kp.cutoffs { default = \"5,M\" }"), "--no-store");
  ASSERT_EQ(c.code, 0) << c.err;
  EXPECT_TRUE(Has(c, "all.x,2")) << c.out;
  auto b = Eval(V2Probe("", "    out.x = 1", "on = kp.bool { default = false }"), "--param probe.on=yes");
  EXPECT_EQ(b.err, "kplab: plugin 'probe': parameter 'on' must be a boolean: true, false, 1 or 0 (got 'yes')\n");
}

TEST_F(PluginV2, BadDeclarationsNameTheFileAndField) {
  auto plain = Eval(V2Probe("", "    out.x = 1", "k = 3"));
  EXPECT_EQ(plain.code, 3);
  EXPECT_NE(plain.err.find("pl/probe.lua: field 'params.k' must be declared with kp.int, kp.number, kp.bool, "
                           "kp.string or kp.cutoffs{...}"),
            std::string::npos)
      << plain.err;
  auto range = Eval(V2Probe("", "    out.x = 1", "k = kp.int { default = 0, min = 1 }"));
  EXPECT_NE(range.err.find("pl/probe.lua:3: kp.int{...}: field 'default' must be an integer >= 1 (got 0)"),
            std::string::npos)
      << range.err;
  auto typo = Eval(V2Probe("", "    out.x = 1", "k = kp.int { default = 1, mni = 1 }"));
  EXPECT_NE(typo.err.find("pl/probe.lua:3: kp.int{...}: unknown field 'mni' (expected: default, doc, min, max)"),
            std::string::npos)
      << typo.err;
  auto agg = Eval("-- kplab-api: 2\nreturn kp.metric { name = \"probe\", version = \"1\", columns = {\"x\"},\n"
                  "  score = function() end, aggregate = function() end }\n");
  EXPECT_NE(agg.err.find("pl/probe.lua: unknown field 'aggregate' (plugin API 2 declares aggregates in columns"),
            std::string::npos)
      << agg.err;
  auto sub = Eval("-- kplab-api: 2\nreturn kp.metric { name = \"probe\", version = \"1\", columns = {\"x\"},\n"
                  "  subsets = { \"all\", \"al\" }, score = function() end }\n");
  EXPECT_NE(sub.err.find("pl/probe.lua: field 'subsets' must be a list of distinct names among: all, present, absent"),
            std::string::npos)
      << sub.err;
  auto nocols = Eval("-- kplab-api: 2\nreturn kp.metric { name = \"probe\", version = \"1\", score = function() end }\n");
  EXPECT_NE(nocols.err.find("pl/probe.lua: field 'columns' must be a function columns(c, params) or a list"),
            std::string::npos)
      << nocols.err;
}

TEST_F(PluginV2, MisspeltParameterAndKnobAreErrorsAtTheirLine) {
  auto p = Eval(V2Probe("", "    out.x = p.thershold", "threshold = kp.number { default = 0 }"));
  EXPECT_EQ(p.code, 3);
  EXPECT_NE(p.err.find("pl/probe.lua:7: unknown parameter 'thershold' (expected one of: threshold)"), std::string::npos)
      << p.err;
  auto k = Eval(V2Probe("", "    out.x = ctx.profile.rprec_ordr == 'x' and 1 or 0"));
  EXPECT_NE(k.err.find("pl/probe.lua:7: unknown profile knob 'rprec_ordr'"), std::string::npos) << k.err;
}

TEST_F(PluginV2, WritingWhatIsNotDeclaredIsAnError) {
  auto name = Eval(V2Probe("", "    out.y = 1"));
  EXPECT_EQ(name.code, 3);
  EXPECT_NE(name.err.find("pl/probe.lua: score wrote out['y'] for document"), std::string::npos) << name.err;
  EXPECT_NE(name.err.find("subset 'all', which is not a declared column"), std::string::npos) << name.err;
  auto slot = Eval(V2Probe("", "    out[2] = 1"));
  EXPECT_NE(slot.err.find("score wrote out[2] for document"), std::string::npos) << slot.err;
  auto text = Eval(V2Probe("", "    out.x = '0.5'"));
  EXPECT_NE(text.err.find("score wrote column 'x' = a string for document"), std::string::npos) << text.err;
  auto dup = Eval("-- kplab-api: 2\nreturn kp.metric { name = \"probe\", version = \"1\",\n"
                  "  columns = function(c) c:column('x'); c:column('x') end, score = function() end }\n");
  EXPECT_NE(dup.err.find("pl/probe.lua:3: column 'x' is declared twice"), std::string::npos) << dup.err;
  auto bad_slot = Eval("-- kplab-api: 2\nreturn kp.metric { name = \"probe\", version = \"1\",\n"
                       "  columns = function(c) c:mean('m', c:column('x') + 1) end, score = function() end }\n");
  EXPECT_NE(bad_slot.err.find("pl/probe.lua:3: bad argument #2: expected a slot returned by c:column or c:hidden "
                              "(1..1), got 2"),
            std::string::npos)
      << bad_slot.err;
  auto custom = Eval("-- kplab-api: 2\nreturn kp.metric { name = \"probe\", version = \"1\",\n"
                     "  columns = function(c) c:column('x'); c:custom('m', function() return 'high' end) end,\n"
                     "  score = function(doc, p, ctx, out) out.x = 1 end }\n");
  EXPECT_NE(custom.err.find("pl/probe.lua: custom aggregate 'm' must return a number or nil (got string)"),
            std::string::npos)
      << custom.err;
}

// State across documents would make results depend on how documents are split among lanes.
TEST_F(PluginV2, StateAcrossDocumentsIsRefused) {
  struct Case {
    std::string prelude, body, message;
  };
  const std::vector<Case> cases = {
      {"local n = 0\n", "    n = n + 1\n    out.x = n",
       "upvalue 'n' of this function changed between documents (plugin API 2 refuses state kept across documents"},
      {"local seen = {}\n", "    seen[doc.id] = true\n    out.x = 1",
       "attempt to modify read-only table 'upvalue 'seen' of"},
      {"local T = { inner = {} }\n", "    T.inner.last = doc.id\n    out.x = 1",
       "attempt to modify read-only table 'upvalue 'T' of"},
      {"local M, c = {}, 0\nfunction M.bump() c = c + 1 return c end\n", "    out.x = M.bump()",
       "upvalue 'c' of this function changed between documents"},
      {"local cache\n", "    cache = cache or {}\n    out.x = 1", "upvalue 'cache' of this function changed"},
      {"", "    tostring = nil\n    out.x = 1", "attempt to modify read-only table 'the globals of"},
      {"", "    ctx.memo = 1\n    out.x = 1", "attempt to modify read-only table 'ctx'"},
      // Found by a hostile review: each of these used to count documents per lane.
      {"local st = setmetatable({}, {__metatable = false})\n", "    st.n = (st.n or 0) + 1\n    out.x = st.n",
       "upvalue 'st' is a table with a metatable, which plugin API 2 cannot make read-only"},
      {"local gen = coroutine.wrap(function() local n = 0 while true do n = n + 1 coroutine.yield(n) end end)\n",
       "    out.x = gen()", "upvalue 'gen' is a function over a coroutine (coroutine.wrap)"},
      {"local S = {[{}] = true}\n", "    for k in pairs(S) do k.n = (k.n or 0) + 1 end\n    out.x = 1",
       "upvalue 'S' holds a table as a key"},
      {"local S = {acc = setmetatable({}, {__index = function() return 0 end})}\n", "    out.x = S.acc.z",
       "upvalue 'S' is a table with a metatable"},
      {"local flag = false\n", "    flag = not flag\n    out.x = 1", "upvalue 'flag' of this function changed between "
       "documents"},
  };
  for (const Case& c : cases) {
    auto o = Eval(V2Probe(c.prelude, c.body), "--no-store");
    EXPECT_EQ(o.code, 3) << c.body;
    EXPECT_NE(o.err.find(c.message), std::string::npos) << c.body << "\n" << o.err;
  }
  // A table with a metatable of its own cannot be frozen: refused at load, naming the upvalue.
  auto meta = Eval(V2Probe("local acc = setmetatable({}, { __index = function() return 0 end })\n",
                           "    acc.total = (acc.total or 0) + 1\n    out.x = acc.total"),
                   "--no-store");
  EXPECT_EQ(meta.code, 3);
  EXPECT_NE(meta.err.find("pl/probe.lua:7: upvalue 'acc' is a table with a metatable, which plugin API 2 cannot make "
                          "read-only"),
            std::string::npos)
      << meta.err;
  // The same plugin without state runs (control for the cases above).
  auto ok =
      Eval(V2Probe("local ONE = { v = 1 }\n", "    local t = {}\n    t.v = ONE.v\n    out.x = t.v"), "--no-store");
  ASSERT_EQ(ok.code, 0) << ok.err;
  EXPECT_TRUE(Has(ok, "all.x,1")) << ok.out;
}

// `out` is reused within a lane, but nothing set on it survives a call: a metatable is cleared too.
TEST_F(PluginV2, OutCarriesNothingBetweenCalls) {
  auto o = Eval(V2Probe("",
                        "    local mt = getmetatable(out) or {}\n    mt.n = (mt.n or 0) + 1\n"
                        "    setmetatable(out, mt)\n    out.x = mt.n"),
                "--no-store");
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_TRUE(Has(o, "all.x,1")) << o.out;
  // What columns() returns reaches every document (ctx.slots): plain data only.
  auto fn = Eval("-- kplab-api: 2\nlocal n = 0\nreturn kp.metric { name = \"probe\", version = \"1\",\n"
                 "  columns = function(c) return {x = c:column('x', 'mean'), inc = function() n = n + 1 end} end,\n"
                 "  score = function(doc, p, ctx, out) ctx.slots.inc() out.x = 1 end }\n",
                 "--no-store");
  EXPECT_EQ(fn.code, 3);
  EXPECT_NE(fn.err.find("the value columns(c, params) returned[inc] is a function (expected plain data"),
            std::string::npos)
      << fn.err;
}

// Declared columns live in native arrays outside the Lua memory cap: a declaration the machine cannot
// hold is refused before anything is allocated (100,000 columns x 3 subsets x 20,000 KP20k documents).
TEST_F(PluginV2, ColumnsTheMachineCannotHoldAreRefused) {
  std::ofstream(dir_ / "pl" / "probe.lua")
      << "-- kplab-api: 2\nreturn kp.metric { name = \"probe\", version = \"1\", subsets = {'all', 'present', 'absent'},\n"
         "  columns = function(c) for i = 1, 100000 do c:column('c' .. i) end end,\n"
         "  score = function(preds, refs, doc, p, ctx, out) out[1] = 1 end }\n";
  auto o = kplab::test::RunKplab(dir_, "", "eval --no-store --dataset ../shared/data/kpg_testsets_meng2017/kp20k "
                                           "--predictions ../shared/data/predictions/catSeqTG-2RF1/kp20k/seed1234.txt "
                                           "--metrics probe --plugins " + (dir_ / "pl").string());
  EXPECT_EQ(o.code, 3);
  EXPECT_NE(o.err.find("100000 columns x 3 subsets for 20000 documents need 44.7 GiB, more than the"),
            std::string::npos)
      << o.err;
}

// What a call leaves behind (a list and a match per document, userdata with finalizers) is collected
// between documents: 20,000 KP20k documents on one lane under a 1 MiB memory limit. Before the host
// collected between documents this stopped at document 11160 (~50 bytes a document piled up).
TEST_F(PluginV2, GarbageOfEveryDocumentIsCollectedWithinTheMemoryLimit) {
  std::ofstream(dir_ / "pl" / "probe.lua")
      << "-- kplab-api: 2\nreturn kp.metric { name = \"probe\", version = \"1\", subsets = {'all'}, columns = {'x'},\n"
         "  score = function(preds, refs, doc, p, ctx, out) out[1] = preds:match(refs, 'zg'):hits() end }\n";
  auto o = kplab::test::RunKplab(dir_, "", "eval --no-store --output csv --threads 1 --memory-limit 1 "
                                           "--dataset ../shared/data/kpg_testsets_meng2017/kp20k "
                                           "--predictions ../shared/data/predictions/catSeqTG-2RF1/kp20k/seed1234.txt "
                                           "--metrics probe --plugins " + (dir_ / "pl").string());
  EXPECT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.out.find("\nall.x,"), std::string::npos) << o.out;
}

TEST_F(PluginV2, ColumnsMayDependOnParamsOnly) {
  auto o = Eval("-- kplab-api: 2\nlocal calls = 0\nreturn kp.metric { name = \"probe\", version = \"1\",\n"
                "  columns = function(c) calls = calls + 1; c:column('x') end, score = function() end }\n",
                "--no-store");
  EXPECT_EQ(o.code, 3);
  EXPECT_NE(o.err.find("upvalue 'calls' of this function changed between documents"), std::string::npos) << o.err;
  auto late = Eval("-- kplab-api: 2\nlocal keep = {}\nreturn kp.metric { name = \"probe\", version = \"1\",\n"
                   "  columns = function(c) c:column('x'); c:custom('m', function() c:column('y') end) end,\n"
                   "  score = function(doc, p, ctx, out) out.x = 1 end }\n",
                   "--no-store");
  EXPECT_NE(late.err.find("the column builder is only usable while columns(c, params) runs"), std::string::npos)
      << late.err;
}

}  // namespace

namespace {

// The plugin at the top of docs/plugins.md works as shown (P@5 micro and macro: 12 / 25, see the hand
// calculation at the top of this file).
TEST_F(PluginV2, DocsExampleRuns) {
  std::ifstream in(fs::path(KPLAB_SOURCE_DIR) / "docs" / "plugins.md");
  const std::string doc((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto begin = doc.find("```lua\n");
  const auto end = doc.find("```", begin + 7);
  ASSERT_NE(begin, std::string::npos);
  std::ofstream(dir_ / "pl" / "mymetric.lua") << doc.substr(begin + 7, end - begin - 7);
  auto o = kplab::test::RunKplab(dir_, "", "eval --dataset examples/tiny --predictions examples/tiny/predictions.txt "
                                           "--no-store --output csv --metrics mymetric --plugins " + (dir_ / "pl").string());
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_TRUE(Has(o, "all.p@5.micro,0.48")) << o.out;
  EXPECT_TRUE(Has(o, "all.p@5.macro,0.48")) << o.out;
  EXPECT_NE(o.out.find("present.f1@5.micro,"), std::string::npos) << o.out;
}

}  // namespace
