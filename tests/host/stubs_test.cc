// The LuaLS stub file docs/lua/kp.lua is the one source of the kp API's documentation (editor
// completion and the REPL's help). These tests hold it to the live API: every kp function and userdata
// method the host VM has (plugin sandbox + script API) must have an entry, and every entry must still
// exist.
#include <gtest/gtest.h>

#include <lua.hpp>

#include <algorithm>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>
#include <string>

#include "bindings.h"
#include "evaluate.h"
#include "lua_script.h"
#include "repl.h"
#include "runner.h"
#include "sandbox.h"

namespace kplab::host {
namespace {

// Names whose entries cannot be checked against a live value here, with the reason.
// Ctx: the table the runner passes to score/aggregate; cosine/embedding exist only with an embedding
// space (docs/embeddings.md), partners only for needs = {"pairs"}, unit only for a plugin that declares
// c:units (tests/host/ci_test.cc calls it).
// token_embeddings and token_layers only with a model (needs = {"tokens"}); TokenEmbeddings are made by
// ctx.token_embeddings alone (tests/host/bertscore_test.cc, mover_test.cc).
const std::set<std::string> kUnchecked = {"Ctx", "Ctx.cosine", "Ctx.embedding", "Ctx.partners", "Ctx.unit",
                                          "Ctx.token_embeddings", "Ctx.token_layers"};

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class StubsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    InstallAll(vm_);
    InstallScriptApi(vm_, "stubs_test.lua", FileGrants::User());
    EvalRequest req;
    req.dataset_path = std::string(KPLAB_SOURCE_DIR) + "/examples/tiny";
    req.predictions_path = std::string(KPLAB_SOURCE_DIR) + "/examples/tiny/predictions.txt";
    auto corpus = LoadCorpus(req);
    ASSERT_TRUE(corpus.ok()) << corpus.error().message;
    corpus_ = std::make_shared<const Corpus>(std::move(*corpus));
    // The runner defines the Column type (aggregate's cols) in the VMs it is given.
    runner_ = std::make_unique<MetricRunner>(std::vector<Lane>{Lane{&vm_, {}}}, corpus_, RunContext{});
  }

  // Runs `source` in a fresh sandbox env and returns its string results (an array).
  std::vector<std::string> RunForStrings(const std::string& source) {
    lua_State* L = vm_.state();
    vm_.PushSandboxEnv("stubs_test");
    auto err = vm_.RunChunk(source, "stubs_test", 1);
    EXPECT_FALSE(err) << err->Format();
    std::vector<std::string> out;
    if (err) return out;
    const lua_Integer n = static_cast<lua_Integer>(lua_rawlen(L, -1));
    for (lua_Integer i = 1; i <= n; ++i) {
      lua_rawgeti(L, -1, i);
      out.push_back(lua_tostring(L, -1));
      lua_pop(L, 1);
    }
    lua_pop(L, 1);
    return out;
  }

  // Every live API name: "kp.a.b" for functions (and "kp.a" for modules, as classes), "Type:method" for
  // the methods of the kplab.* userdata types.
  std::set<std::string> LiveNames(std::set<std::string>* modules) {
    std::set<std::string> names;
    for (const std::string& n : RunForStrings(R"(
        local out = {}
        local function walk(t, prefix)
          for k, v in pairs(t) do
            if type(v) == "function" then out[#out + 1] = prefix .. k
            elseif type(v) == "table" then out[#out + 1] = "module " .. prefix .. k; walk(v, prefix .. k .. ".") end
          end
        end
        walk(kp, "kp.")
        return out)")) {
      if (n.starts_with("module ")) {
        modules->insert(n.substr(7));
      } else {
        names.insert(n);
      }
    }
    lua_State* L = vm_.state();
    lua_pushnil(L);
    while (lua_next(L, LUA_REGISTRYINDEX) != 0) {
      if (lua_type(L, -2) == LUA_TSTRING && lua_type(L, -1) == LUA_TTABLE) {
        const std::string key = lua_tostring(L, -2);
        lua_getfield(L, -1, "__name");
        const bool is_type = key.starts_with("kplab.") && lua_type(L, -1) == LUA_TSTRING && key == lua_tostring(L, -1);
        lua_pop(L, 1);
        // Methods live in a table of their own beside the metatable (lua_util.h: DefineMetatable).
        if (is_type && lua_getfield(L, LUA_REGISTRYINDEX, (key + ".methods").c_str()) == LUA_TTABLE) {
          lua_pushnil(L);
          while (lua_next(L, -2) != 0) {
            if (lua_type(L, -2) == LUA_TSTRING && lua_type(L, -1) == LUA_TFUNCTION) {
              const std::string m = lua_tostring(L, -2);
              if (!m.starts_with("__")) names.insert(key.substr(6) + ":" + m);
            }
            lua_pop(L, 1);
          }
        }
        if (is_type) lua_pop(L, 1);
      }
      lua_pop(L, 1);
    }
    return names;
  }

  // Pushes a live instance of a userdata type, or nothing (returns false) for types made elsewhere.
  bool PushInstance(const std::string& type) {
    lua_State* L = vm_.state();
    if (type == "Corpus") {
      PushCorpus(L, corpus_);
    } else if (type == "Document") {
      PushDocument(L, corpus_, 0);
    } else if (type == "KeyphraseList") {
      PushDocument(L, corpus_, 0);
      lua_getfield(L, -1, "preds");
      lua_remove(L, -2);
    } else if (type == "Matrix") {
      PushMatrix(L, Matrix(2, 2));
    } else if (type == "Match") {
      PushDocument(L, corpus_, 0);
      lua_getfield(L, -1, "preds");
      lua_getfield(L, -1, "match");
      lua_insert(L, -2);
      lua_getfield(L, -3, "refs");
      lua_call(L, 2, 1);
      lua_remove(L, -2);
    } else {
      return false;
    }
    return true;
  }

  // Does `type` have a function member `name`? Through a live instance when one can be made (covers
  // members served by an __index function, like Document's), else in its metatable.
  bool HasMember(const std::string& type, const std::string& name, bool want_function) {
    lua_State* L = vm_.state();
    const int top = lua_gettop(L);
    bool ok = false;
    if (PushInstance(type)) {
      lua_pushcfunction(L, [](lua_State* L) -> int {
        lua_gettable(L, 1);
        return 1;
      });
      lua_insert(L, -2);
      lua_pushstring(L, name.c_str());
      if (lua_pcall(L, 2, 1, 0) == LUA_OK) {
        ok = want_function ? lua_type(L, -1) == LUA_TFUNCTION : !lua_isnil(L, -1) || name == "source";
      }
    } else if (lua_getfield(L, LUA_REGISTRYINDEX, ("kplab." + type + ".methods").c_str()) == LUA_TTABLE) {
      lua_getfield(L, -1, name.c_str());
      ok = lua_type(L, -1) == LUA_TFUNCTION;
    }
    lua_settop(L, top);
    return ok;
  }

  LuaVm vm_;
  std::shared_ptr<const Corpus> corpus_;
  std::unique_ptr<MetricRunner> runner_;
};

TEST_F(StubsTest, EveryLiveFunctionAndMethodHasAStubEntry) {
  const auto stubs = ParseStubs(KpStubs());
  std::set<std::string> modules;
  const std::set<std::string> live = LiveNames(&modules);
  ASSERT_GT(live.size(), 50u);  // the walk saw the API (kp.stem ... Matrix:assign)
  EXPECT_TRUE(live.count("kp.stem") && live.count("kp.load") && live.count("Matrix:assign") &&
              live.count("Column:mean"));
  for (const std::string& name : live) {
    auto it = stubs.find(name);
    EXPECT_TRUE(it != stubs.end() && !it->second.is_class)
        << name << " has no entry in docs/lua/kp.lua (add `function " << name << "(...) end` with its doc)";
  }
  for (const std::string& m : modules) {
    auto it = stubs.find(m);
    EXPECT_TRUE(it != stubs.end() && it->second.is_class) << "module " << m << " has no ---@class " << m;
  }
}

TEST_F(StubsTest, EveryStubEntryStillExists) {
  const auto stubs = ParseStubs(KpStubs());
  std::set<std::string> modules;
  const std::set<std::string> live = LiveNames(&modules);
  for (const auto& [name, e] : stubs) {
    if (kUnchecked.count(name) != 0) continue;
    if (e.is_class) {
      if (name == "kp" || name.starts_with("kp.")) {
        EXPECT_TRUE(name == "kp" || modules.count(name)) << "docs/lua/kp.lua:" << e.line << ": no module " << name;
        continue;
      }
      lua_State* L = vm_.state();
      const bool exists = lua_getfield(L, LUA_REGISTRYINDEX, ("kplab." + name).c_str()) == LUA_TTABLE;
      lua_pop(L, 1);
      EXPECT_TRUE(exists) << "docs/lua/kp.lua:" << e.line << ": no userdata type " << name;
      // Fields: readable on a live instance.
      std::istringstream in(e.text);
      for (std::string l; std::getline(in, l);) {
        if (!l.starts_with("@field ")) continue;
        std::istringstream w(l.substr(7));
        std::string field;
        w >> field;
        EXPECT_TRUE(HasMember(name, field, false)) << "docs/lua/kp.lua: no field " << name << "." << field;
      }
      continue;
    }
    if (name.starts_with("kp.")) {
      EXPECT_TRUE(live.count(name)) << "docs/lua/kp.lua:" << e.line << ": " << name << " no longer exists";
      continue;
    }
    const auto colon = name.find(':');
    ASSERT_NE(colon, std::string::npos) << "docs/lua/kp.lua:" << e.line << ": unexpected entry " << name;
    EXPECT_TRUE(HasMember(name.substr(0, colon), name.substr(colon + 1), true))
        << "docs/lua/kp.lua:" << e.line << ": " << name << " no longer exists";
  }
}

// The binary embeds the file as it is in the tree (no stale copy).
TEST_F(StubsTest, EmbeddedStubsAreTheTreeFile) {
  EXPECT_EQ(std::string(KpStubs()), ReadFile(std::string(KPLAB_SOURCE_DIR) + "/docs/lua/kp.lua"));
}

TEST(StubParser, ReadsFunctionsClassesAndFields) {
  const auto s = ParseStubs(
      "---@meta x\n"
      "---A type.\n"
      "---@class Thing\n"
      "---@field size integer how big\n"
      "local Thing = {}\n"
      "\n"
      "---Does it.\n"
      "---@param n integer count\n"
      "---@return string\n"
      "function Thing:go(n) end\n");
  ASSERT_EQ(s.size(), 2u);
  EXPECT_TRUE(s.at("Thing").is_class);
  EXPECT_EQ(s.at("Thing").text, "A type.\n@field size integer how big\n");
  EXPECT_EQ(s.at("Thing:go").signature, "Thing:go(n)");
  EXPECT_EQ(s.at("Thing:go").line, 10);
  EXPECT_EQ(FormatStub(s.at("Thing:go")),
            "Thing:go(n)\nDoes it.\nparameters:\n  n integer count\nreturns:\n  string\n");
}

}  // namespace
}  // namespace kplab::host
