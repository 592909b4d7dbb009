// No raw borrowed pointer behind a userdata (docs/plugins.md, "What a plugin may keep"). Every userdata
// type a kplab Lua state can hold is enumerated from the registry table every type is defined through
// (lua_util.h, kTypesKey), and each one is kept past the lifetime of its source — the document, the call,
// the aggregation, the resampling, the run — and used: it gives valid data or a Lua error naming the
// object, never freed memory. scripts/sanitize.sh runs these under ASan, where a use after free aborts.
// A scan of the sources lists every raw userdata and light userdata kplab makes, so a new one is looked at.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include <lua.hpp>

#include "bindings.h"
#include "cli_harness.h"
#include "columns.h"
#include "kplab/embedding_plan.h"
#include "evaluate.h"
#include "kplab/embed.h"
#include "kplab/registry.h"
#include "lua_script.h"
#include "lua_util.h"
#include "plugin.h"
#include "runner.h"
#include "sandbox.h"

namespace kplab::host {
namespace {

namespace fs = std::filesystem;

const std::string kTinyDir = std::string(KPLAB_SOURCE_DIR) + "/examples/tiny";

// Context-free 2-d vectors for every phrase and token, so semantic and token userdata can be made
// in-process without a model file (the values do not matter here, only that they stay valid).
class FlatModel : public Embedder {
 public:
  std::string_view backend() const override { return "flat"; }
  int dims() const override { return 2; }
  const std::string& fingerprint() const override { return fp_; }
  Status Embed(const std::vector<std::string_view>& phrases, float* out, std::uint8_t* has) const override {
    for (std::size_t i = 0; i < phrases.size(); ++i) {
      out[2 * i] = static_cast<float>(phrases[i].size());
      out[2 * i + 1] = 1;
      has[i] = 1;
    }
    return Status::Ok();
  }
  int token_layers() const override { return 1; }
  Status EmbedTokens(const std::vector<std::string_view>& texts, int, TokenBatch& out) const override {
    out = TokenBatch{};
    out.dims = 2;
    out.offsets.push_back(0);
    for (std::string_view t : texts) {
      for (std::size_t k = 0; k < 1 + t.size() % 3; ++k) {
        out.ids.push_back(static_cast<int>(k));
        out.special.push_back(0);
        out.vecs.insert(out.vecs.end(), {static_cast<float>(k + 1), 1.0f});
      }
      out.offsets.push_back(out.ids.size());
      out.truncated.push_back(0);
    }
    return Status::Ok();
  }

 private:
  std::string fp_ = std::string(64, 'f');
};

class Lifetime : public ::testing::Test {
 protected:
  void SetUp() override {
    static int n = 0;
    dir_ = fs::temp_directory_path() / ("kl" + std::to_string(::getpid()) + "_" + std::to_string(++n));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "pl");
    ModelInfo info;
    info.name = "flat-lifetime";
    info.backend = "flat";
    info.fingerprint = std::string(64, 'f');
    info.dims = 2;
    UnregisterRuntimeModel(info.name);
    ASSERT_TRUE(RegisterRuntimeModel(info, std::make_shared<FlatModel>()).ok());
  }
  void TearDown() override {
    UnregisterRuntimeModel("flat-lifetime");
    fs::remove_all(dir_);
  }

  void Write(const std::string& name, const std::string& source) {
    std::ofstream(dir_ / "pl" / (name + ".lua")) << source;
  }
  // examples/tiny scored in-process with pl/`metric`.
  EvalRequest Request(const std::string& metric) {
    EvalRequest req;
    req.dataset_path = kTinyDir;
    req.predictions_path = kTinyDir + "/predictions.txt";
    req.metrics = {metric};
    req.plugin_dirs = {(dir_ / "pl").string()};
    req.model = "flat-lifetime";
    req.cache_db = (dir_ / "cache.db").string();
    req.threads = 2;
    return req;
  }
  static std::string Errors(const EvalResult& r) {
    std::string s;
    for (const auto& e : r.errors) s += e.message + "\n";
    return s;
  }
  static double Aggregate(const EvalResult& r, const std::string& name) {
    for (const auto& a : r.aggregates) {
      if (a.metric == name) return a.value;
    }
    ADD_FAILURE() << "no aggregate " << name;
    return -1;
  }

  // ---- the scenarios: each keeps objects of some types past their source and uses them ----------

  // Corpus, Document, KeyphraseList, Match, Matrix in a script's state: made from a corpus the host then
  // drops (its last reference outside Lua) and collects; the objects still answer as before.
  void CorpusObjectsOutliveTheirCorpus() {
    LuaVm vm;
    InstallAll(vm);
    lua_State* L = vm.state();
    EvalRequest req = Request("exact");
    auto built = LoadCorpus(req);
    ASSERT_TRUE(built.ok()) << built.error().message;
    auto corpus = std::make_shared<const Corpus>(std::move(*built));
    vm.PushSandboxEnv("keep");  // [env]
    const int env = lua_gettop(L);
    // Host-made globals (raw: the environment is strict).
    lua_pushliteral(L, "c");
    PushCorpus(L, corpus);
    lua_rawset(L, env);
    lua_pushliteral(L, "keep");
    lua_newtable(L);
    lua_rawset(L, env);
    const std::string make = R"(
local d = c:doc(1)
keep.c, keep.d, keep.l, keep.top, keep.pf = c, d, d.preds, d.preds:top(2), d.preds:present_first()
keep.pre = d.refs:present()
keep.m, keep.x = d.preds:match(d.refs), d.preds:match_pairs(d.refs)
local function show(k)
  return table.concat({#k.c, k.c:doc(5).id, k.d.id, #k.l, k.l[1].surface, #k.top, k.top[2].surface,
                       k.pf[1].surface, #k.pre, k.m:hits(), k.m:dcg(3), k.x:sum(), k.x:rows()}, "|")
end
keep.show = show
return show(keep)
)";
    auto run = [&](const std::string& source) {
      lua_pushvalue(L, env);
      std::optional<ScriptError> err = vm.RunChunk(source, "keep.lua", 1);
      EXPECT_FALSE(err) << err->Format();
      std::string out = err ? "" : lua_tostring(L, -1);
      if (!err) lua_pop(L, 1);
      return out;
    };
    const std::string before = run(make);
    ASSERT_FALSE(before.empty());
    // The source goes: the host's reference and the script's variable, then a full collection.
    lua_pushliteral(L, "c");
    lua_pushnil(L);
    lua_rawset(L, env);
    const std::weak_ptr<const Corpus> watch = corpus;
    corpus.reset();
    lua_gc(L, LUA_GCCOLLECT, 0);
    EXPECT_FALSE(watch.expired());  // the objects own it
    EXPECT_EQ(run("return keep.show(keep)"), before);
    lua_settop(L, env - 1);
  }

  // An API 1 plugin keeps the first document's objects in an upvalue and uses them on every later
  // document (another lane's too) and in aggregate, after the lanes are gone.
  void Api1KeepsDocumentObjects() {
    Write("keepdoc", R"(-- kplab-api: 1
local first, sig = {}, nil
local function show()
  return table.concat({first.doc.id, #first.list, #first.top, first.match:hits(), first.m:sum()}, "|")
end
return kp.metric { name = "keepdoc", version = "1",
  score = function(doc, p, ctx)
    if not first.doc then
      first.doc, first.list, first.top = doc, doc.preds, doc.preds:top(2)
      first.match, first.m = doc.preds:match(doc.refs), doc.preds:match_pairs(doc.refs)
      sig = show()
    end
    return { ["all.same"] = show() == sig and 1 or 0 }
  end,
  aggregate = function(cols) return { ["all.same"] = cols["all.same"]:mean(), ["all.later"] = show() == sig and 1 or 0 } end }
)");
    EvalRequest req = Request("keepdoc");
    req.verify_docs = 0;  // it keeps state on purpose
    // Both lanes used (five documents are one lane's work by their cost otherwise; lanes.h).
    ::setenv("KPLAB_LANES", "max", 1);
    auto r = Evaluate(req);
    ::unsetenv("KPLAB_LANES");
    ASSERT_TRUE(r.ok()) << r.error().message;
    ASSERT_TRUE(r->errors.empty()) << Errors(*r);
    EXPECT_EQ(Aggregate(*r, "all.same"), 1);
    EXPECT_EQ(Aggregate(*r, "all.later"), 1);
  }

  // A Column kept by a c:custom closure and used in a later aggregation: a bootstrap resample (--ci,
  // after the run's own columns are gone) and another subset.
  void ColumnKeptPastItsAggregation() {
    const std::string keep = R"(-- kplab-api: 2
return kp.metric { name = "NAME", version = "1", subsets = SUBSETS,
  columns = function(c, p)
    local s = { x = c:column("x", "mean") }
    local kept
    c:custom("kept", function(a, cols)
      kept = kept or cols.x
      return kept:sum()
    end)
    return s
  end,
  score = function(preds, refs, doc, p, ctx, out) out[ctx.slots.x] = #preds end }
)";
    auto make = [&](const std::string& name, const std::string& subsets) {
      Write(name,
            std::regex_replace(std::regex_replace(keep, std::regex("NAME"), name), std::regex("SUBSETS"), subsets));
    };
    make("keepci", "{\"all\"}");
    EvalRequest req = Request("keepci");
    req.ci = CiOptions{100, 0.95, 1};
    auto r = Evaluate(req);
    ASSERT_TRUE(r.ok()) << r.error().message;
    ASSERT_EQ(r->errors.size(), 1u);
    const std::string want =
        "Column 'all.x' used after its aggregation ended (a Column is valid only during the call "
        "it was given to; keep numbers, not Columns)";
    EXPECT_NE(r->errors[0].message.find(want), std::string::npos) << r->errors[0].Format();
    EXPECT_NE(r->errors[0].message.find("(while resampling for --ci)"), std::string::npos) << r->errors[0].message;
    make("keepsub", "{\"all\", \"present\"}");
    r = Evaluate(Request("keepsub"));
    ASSERT_TRUE(r.ok()) << r.error().message;
    ASSERT_EQ(r->errors.size(), 1u);
    EXPECT_NE(r->errors[0].message.find(want), std::string::npos) << r->errors[0].Format();
    EXPECT_NE(r->errors[0].message.find("(while computing aggregate 'present.kept')"), std::string::npos)
        << r->errors[0].Format();
  }

  // The column builder kept by a c:custom closure and used during the aggregation.
  void BuilderKeptPastColumns() {
    Write("keepc", R"(-- kplab-api: 2
return kp.metric { name = "keepc", version = "1",
  columns = function(c, p)
    c:custom("y", function() c:column("late") return 1 end)
    return { x = c:column("x", "mean") }
  end,
  score = function(doc, p, ctx, out) out.x = 1 end }
)");
    auto r = Evaluate(Request("keepc"));
    ASSERT_TRUE(r.ok()) << r.error().message;
    ASSERT_EQ(r->errors.size(), 1u);
    EXPECT_NE(r->errors[0].message.find("the column builder is only usable while columns(c, params) runs"),
              std::string::npos)
        << r->errors[0].Format();
  }

  // ctx.partners (over the run's PairIndex), ctx.cosine / ctx.embedding (over the VM's embedding space),
  // ctx.token_embeddings and a TokenEmbeddings, kept by an API 1 plugin from its first document and used on
  // the later ones and in aggregate.
  void Api1KeepsContextFunctions() {
    Write("keepctx", R"(-- kplab-api: 1
local k, sig = {}, nil
local function show()
  local T = k.T
  return table.concat({#k.partners(k.doc), k.cosine(k.doc.preds, k.doc.refs):rows(),
                       #k.embedding("a b"), #T, T:ids(1)[1], T:cosine(1, T, 1):get(1, 1),
                       #k.tokens(k.doc.refs, 1)}, "|")
end
return kp.metric { name = "keepctx", version = "1", needs = { "pairs", "embeddings", "tokens" },
  score = function(doc, p, ctx)
    if not k.doc then
      k.doc, k.partners, k.cosine, k.embedding, k.tokens = doc, ctx.partners, ctx.cosine, ctx.embedding, ctx.token_embeddings
      k.T = ctx.token_embeddings(doc.preds, 1)
      sig = show()
    end
    return { ["all.same"] = show() == sig and 1 or 0 }
  end,
  aggregate = function(cols) return { ["all.same"] = cols["all.same"]:mean(), ["all.later"] = show() == sig and 1 or 0 } end }
)");
    EvalRequest req = Request("keepctx");
    req.verify_docs = 0;
    auto r = Evaluate(req);
    ASSERT_TRUE(r.ok()) << r.error().message;
    ASSERT_TRUE(r->errors.empty()) << Errors(*r);
    EXPECT_EQ(Aggregate(*r, "all.same"), 1);
    EXPECT_EQ(Aggregate(*r, "all.later"), 1);
  }

  // The embedding space a kept ctx.cosine reaches is the VM's current one: after the run takes it away,
  // the kept function says so instead of reaching a space that is gone.
  void CosineKeptPastTheRunsSpace() {
    LuaVm vm;
    InstallAll(vm);
    lua_State* L = vm.state();
    auto space = std::make_shared<EmbeddingSpace>();
    space->model.name = "flat-lifetime";
    space->dims = 2;
    space->embedder = std::make_shared<FlatModel>();
    SetEmbeddingSpace(L, space);
    std::weak_ptr<EmbeddingSpace> watch = space;
    space.reset();
    EXPECT_FALSE(watch.expired());  // the VM's holder owns it
    lua_newtable(L);
    AddEmbeddingCtx(L);  // [ctx]
    lua_getfield(L, -1, "embedding");
    const int kept = luaL_ref(L, LUA_REGISTRYINDEX);
    lua_pop(L, 1);
    SetEmbeddingSpace(L, nullptr);  // the run is over
    lua_gc(L, LUA_GCCOLLECT, 0);
    EXPECT_TRUE(watch.expired());
    lua_rawgeti(L, LUA_REGISTRYINDEX, kept);
    lua_pushliteral(L, "a b");
    ASSERT_NE(lua_pcall(L, 1, 1, 0), LUA_OK);
    EXPECT_EQ(std::string(lua_tostring(L, -1)),
              "ctx.embedding needs embeddings: declare needs = {\"embeddings\"} in the plugin");
    lua_pop(L, 1);
  }

  // ctx.unit cannot be kept past its document by a plugin of API 2: every place score could put it is
  // read-only or checked; what it reports while its document is scored is kept.
  void UnitSinkCannotBeKept() {
    const std::string head = R"(-- kplab-api: 2
local KEEP = {}
return kp.metric { name = "NAME", version = "1",
  columns = function(c) local s = { n = c:column("n", "sum") } c:units("things") return s end,
  score = function(doc, p, ctx, out)
    ctx.unit(1, { n = 1 })
)";
    const std::vector<std::pair<std::string, std::string>> tries = {
        {"KEEP.u = ctx.unit", "attempt to modify read-only table 'upvalue 'KEEP' of"},
        {"ctx.u = ctx.unit", "attempt to modify read-only table 'ctx'"},
        {"out.n = ctx.unit", "score wrote column 'n' = a function for document '1' (expected a number)"},
    };
    for (std::size_t i = 0; i < tries.size(); ++i) {
      const std::string name = "unit" + std::to_string(i);
      Write(name, std::regex_replace(head, std::regex("NAME"), name) + "    " + tries[i].first + "\n  end }\n");
      EvalRequest req = Request(name);
      req.ci = CiOptions{100, 0.95, 1};  // units kept
      auto r = Evaluate(req);
      ASSERT_TRUE(r.ok()) << r.error().message;
      ASSERT_EQ(r->errors.size(), 1u) << tries[i].first;
      EXPECT_NE(r->errors[0].message.find(tries[i].second), std::string::npos) << r->errors[0].Format();
    }
    Write("unitok", std::regex_replace(head, std::regex("NAME"), "unitok") + "    out.n = 1\n  end }\n");
    EvalRequest req = Request("unitok");
    req.ci = CiOptions{100, 0.95, 1};
    auto r = Evaluate(req);
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_TRUE(r->errors.empty()) << Errors(*r);
    EXPECT_EQ(Aggregate(*r, "n"), 5);
  }

  // A plugin's math.random kept past the plugin (its refs released, the state collected): the function
  // owns its generator.
  void RandomKeptPastItsPlugin() {
    LuaVm vm;
    InstallAll(vm);
    lua_State* L = vm.state();
    PluginFile file;
    file.name = file.display_name = "rnd";
    file.api_version = 2;
    file.source =
        "-- kplab-api: 2\nreturn kp.metric { name = 'rnd', version = '1', columns = {'x'},\n"
        "  score = function(doc, p, ctx, out) out.x = math.random() end }\n";
    auto p = LoadMetricPlugin(vm, file);
    ASSERT_TRUE(p.ok()) << p.error().message;
    lua_rawgeti(L, LUA_REGISTRYINDEX, p->env_ref);
    lua_getfield(L, -1, "math");
    lua_getfield(L, -1, "random");
    const int kept = luaL_ref(L, LUA_REGISTRYINDEX);
    lua_pop(L, 2);
    ReleaseMetricPlugin(vm, *p);
    lua_gc(L, LUA_GCCOLLECT, 0);
    lua_rawgeti(L, LUA_REGISTRYINDEX, kept);
    ASSERT_EQ(lua_pcall(L, 0, 1, 0), LUA_OK) << lua_tostring(L, -1);
    const double x = lua_tonumber(L, -1);
    EXPECT_TRUE(x >= 0 && x < 1) << x;
    lua_pop(L, 1);
  }

  // A retrieval collection copies its documents' strings into C++ memory it owns: the Lua strings it was
  // given can go, and it still ranks the same. Made at a plugin's load it is refused (state across documents).
  void RetrievalCollectionOwnsItsDocuments() {
    LuaVm vm;
    InstallAll(vm);
    lua_State* L = vm.state();
    vm.PushSandboxEnv("keep");  // [env]
    const int env = lua_gettop(L);
    lua_pushliteral(L, "keep");
    lua_newtable(L);
    lua_rawset(L, env);
    lua_pushvalue(L, env);
    std::optional<ScriptError> err = vm.RunChunk(R"(
local parts = {string.rep("neural ", 2) .. "network", "a neural network learns"}
keep.col = kp.retrieval.collection()
keep.col:add(parts[1], parts[2])
keep.col:add("graph", "a graph of nodes")
keep.col:add("tree", "a tree of leaves")
parts = nil
)", "keep.lua", 0);
    ASSERT_FALSE(err) << err->Format();
    lua_gc(L, LUA_GCCOLLECT, 0);
    lua_pushvalue(L, env);
    // Query 1 is written for document 1, query 2 for document 2; each shares terms with its own document
    // only, so with three documents (idf log(2.5 / 1.5) > 0 for a term in one of them) its document scores
    // above 0 and the others 0: none better, none tied. (With two, every such idf is 0 and all tie.)
    err = vm.RunChunk(R"(
local r = keep.col:bm25({"neural network", "graph nodes"})
return table.concat({#keep.col, r.better[1], r.better[2], r.ties[1], r.ties[2]}, "|")
)", "use.lua", 1);
    ASSERT_FALSE(err) << err->Format();
    EXPECT_STREQ(lua_tostring(L, -1), "3|0|0|0|0");
    lua_settop(L, 0);
    PluginFile file;
    file.name = file.display_name = "col";
    file.api_version = 2;
    file.source =
        "-- kplab-api: 2\nlocal col = kp.retrieval.collection()\n"
        "return kp.metric { name = 'col', version = '1', columns = {'x'},\n"
        "  score = function(doc, p, ctx, out) out.x = #col end }\n";
    auto p = LoadMetricPlugin(vm, file);
    ASSERT_FALSE(p.ok());
    EXPECT_NE(p.error().message.find("cannot make read-only"), std::string::npos) << p.error().message;
  }

  fs::path dir_;
};

// Every type defined in a Lua state that has everything kplab installs: the kp modules, the script API,
// the column types, a loaded plugin (its generator) and a runner (ctx.unit's sink).
std::set<std::string> RegisteredTypes(const std::string& scratch) {
  LuaVm vm;
  InstallAll(vm);
  InstallScriptApi(vm, scratch + "/s.lua", FileGrants::User());
  lua_State* L = vm.state();
  DefineColumnTypes(L);
  PluginFile file;
  file.name = file.display_name = "p";
  file.api_version = 2;
  file.source =
      "-- kplab-api: 2\nreturn kp.metric { name = 'p', version = '1', columns = {'x'},\n"
      "  score = function(doc, p, ctx, out) out.x = 1 end }\n";
  auto plugin = LoadMetricPlugin(vm, file);
  EXPECT_TRUE(plugin.ok()) << plugin.error().message;
  EvalRequest req;
  req.dataset_path = kTinyDir;
  req.predictions_path = kTinyDir + "/predictions.txt";
  auto corpus = LoadCorpus(req);
  EXPECT_TRUE(corpus.ok());
  MetricRunner runner({Lane{&vm, {&*plugin}}}, std::make_shared<const Corpus>(std::move(*corpus)), RunContext{});
  std::set<std::string> out;
  EXPECT_EQ(lua_getfield(L, LUA_REGISTRYINDEX, kTypesKey), LUA_TTABLE);
  lua_pushnil(L);
  while (lua_next(L, -2) != 0) {
    out.insert(lua_tostring(L, -2));
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  return out;
}

TEST_F(Lifetime, EveryUserdataTypeIsKeptPastItsSourceAndUsed) {
  // Type -> the scenario that keeps one past its source. Several types share a scenario.
  const std::map<std::string, std::function<void()>> scenarios = {
      {"kplab.Corpus", [&] { CorpusObjectsOutliveTheirCorpus(); }},
      {"kplab.Document",
       [&] {
         CorpusObjectsOutliveTheirCorpus();
         Api1KeepsDocumentObjects();
       }},
      {"kplab.KeyphraseList",
       [&] {
         CorpusObjectsOutliveTheirCorpus();
         Api1KeepsDocumentObjects();
       }},
      {"kplab.Match",
       [&] {
         CorpusObjectsOutliveTheirCorpus();
         Api1KeepsDocumentObjects();
       }},
      {"kplab.Matrix",
       [&] {
         CorpusObjectsOutliveTheirCorpus();
         Api1KeepsDocumentObjects();
       }},
      {"kplab.Column", [&] { ColumnKeptPastItsAggregation(); }},
      {"kplab.ColumnBuilder", [&] { BuilderKeptPastColumns(); }},
      {"kplab.PairIndex", [&] { Api1KeepsContextFunctions(); }},
      {"kplab.EmbeddingSpaceHolder",
       [&] {
         Api1KeepsContextFunctions();
         CosineKeptPastTheRunsSpace();
       }},
      {"kplab.TokenSpaceHolder", [&] { Api1KeepsContextFunctions(); }},
      {"kplab.TokenEmbeddings", [&] { Api1KeepsContextFunctions(); }},
      {"kplab.UnitSink", [&] { UnitSinkCannotBeKept(); }},
      {"kplab.Random", [&] { RandomKeptPastItsPlugin(); }},
      {"kplab.RetrievalCollection", [&] { RetrievalCollectionOwnsItsDocuments(); }},
  };
  const std::set<std::string> types = RegisteredTypes(dir_.string());
  EXPECT_GE(types.size(), 13u);
  for (const std::string& type : types) {
    SCOPED_TRACE(type);
    auto it = scenarios.find(type);
    if (it == scenarios.end()) {
      ADD_FAILURE() << "userdata type '" << type
                    << "' has no lifetime scenario: keep one past what it points into "
                       "(its document, call, aggregation, resampling, run) and use it, here";
      continue;
    }
    it->second();
  }
  for (const auto& [type, _] : scenarios) EXPECT_TRUE(types.count(type)) << type << " is no longer defined";
}

// The hostile pass's case, through the kplab executable: a c:custom closure keeps a Column and uses it
// again in `runs compare` of two --ci runs. This one keeps the Column of the first bootstrap resample
// (call 3: after the two observed aggregations), whose rows are freed when the bootstrap ends, and uses it
// in the randomization test that follows (call 203 with --ci-resamples 100); `eval --ci` with 100
// resamples makes 100 calls, so the runs themselves go through.
TEST_F(Lifetime, ColumnKeptAcrossRunsCompareIsAnError) {
  Write("keepcol", R"(-- kplab-api: 2
return kp.metric { name = "keepcol", version = "1", subsets = { "all" },
  columns = function(c, p)
    local s = { x = c:column("x", "mean") }
    local calls, kept = 0, nil
    c:custom("total", function(a, cols)
      calls = calls + 1
      if calls == 3 then kept = cols.x end
      if calls >= 203 and kept then return kept:sum() end
      return cols.x:sum()
    end)
    return s
  end,
  score = function(preds, refs, doc, p, ctx, out) out[ctx.slots.x] = #preds end }
)");
  const std::string db = (dir_ / "db").string(), pl = (dir_ / "pl").string();
  const std::string tiny = "--dataset examples/tiny --predictions examples/tiny/predictions.txt --plugins " + pl;
  for (const char* system : {"a", "b"}) {
    const auto o = kplab::test::RunKplab(dir_, "",
                                         "eval " + tiny +
                                             " --metrics keepcol --ci --ci-resamples 100 "
                                             "--output csv --system " +
                                             system + " --db " + db);
    ASSERT_EQ(o.code, 0) << o.err;
  }
  const auto o = kplab::test::RunKplab(dir_, "", "runs compare 1 2 --ci-resamples 100 --plugins " + pl + " --db " + db);
  EXPECT_EQ(o.code, 3) << o.out << o.err;
  EXPECT_NE(o.err.find(":9: Column 'all.x' used after its aggregation ended (a Column is valid only during the "
                       "call it was given to; keep numbers, not Columns)"),
            std::string::npos)
      << o.err;
}

// ---- raw userdata and light userdata -----------------------------------------------------------------

// Every place kplab makes a userdata without a registered type, or hands Lua a raw pointer, with why it
// cannot outlive what it points to. A new one fails this test until it is listed (or made a registered
// type that owns its memory or checks a BorrowScope).
TEST(LifetimeSources, RawUserdataAndLightUserdataAreListed) {
  const std::map<std::string, int> listed = {
      // NewUserdata<T>: every type through DefineMetatable, so in the registry the test above walks.
      {"host/lua/lua_util.h lua_newuserdatauv", 1},
      // string.gmatch's state: pointers into its subject and pattern, both kept alive as the iterator's
      // upvalues 1 and 2; the freeze of plugin API 2 refuses the iterator itself.
      {"host/lua/lua_pattern.cc lua_newuserdatauv", 1},
      // The VM's own allocator state and kill flag (xpcall's guard, Call's message handler): they live as
      // long as the lua_State.
      {"host/lua/sandbox.cc lua_pushlightuserdata", 2},
      // The REPL object, which owns the VM it is registered in.
      {"host/repl/repl.cc lua_pushlightuserdata", 1},
      // A script's file grants (GrantsBox): a shared_ptr the userdata owns (its __gc releases it), kept in
      // the registry, never handed to a script.
      {"host/engine/lua_script.cc lua_newuserdatauv", 1},
  };
  std::map<std::string, int> found;
  const std::regex call(R"(\b(lua_newuserdatauv|lua_newuserdata|lua_pushlightuserdata)\s*\()");
  for (const auto& entry : fs::recursive_directory_iterator(std::string(KPLAB_SOURCE_DIR) + "/host")) {
    const std::string ext = entry.path().extension().string();
    if (ext != ".cc" && ext != ".h") continue;
    std::ifstream in(entry.path());
    const std::string rel = fs::relative(entry.path(), KPLAB_SOURCE_DIR).string();
    for (std::string line; std::getline(in, line);) {
      const auto comment = line.find("//");
      const std::string code = comment == std::string::npos ? line : line.substr(0, comment);
      for (auto it = std::sregex_iterator(code.begin(), code.end(), call); it != std::sregex_iterator(); ++it) {
        ++found[rel + " " + (*it)[1].str()];
      }
    }
  }
  EXPECT_EQ(found, listed);
}

}  // namespace
}  // namespace kplab::host
