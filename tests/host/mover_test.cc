// MoverScore (plugins/mover.lua) and its primitives (kp.emd, kp.token_distances, T:ngrams, T:select,
// T:tokens, pooled layers).
//
// Outside truth: KPEval's own MoverScoreMetric over AIPHES/emnlp19-moverscore, run with Debian's torch
// and pyemd on the random-weight snapshots tests/data/mover/{bert-mnli-tiny,distilbert-tiny}
// (tests/data/mover/README.md says how; kpeval_mover.tsv holds the numbers it printed), and cases worked
// out by hand below.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <lua.hpp>

#include "bindings.h"
#include "cli_harness.h"
#include "sandbox.h"

namespace kplab::host {
namespace {

namespace fs = std::filesystem;

const std::string kMover = std::string(KPLAB_SOURCE_DIR) + "/tests/data/mover";

std::vector<std::string> Fields(const std::string& line) {
  std::vector<std::string> out(1);
  for (char c : line) {
    if (c == '\t') {
      out.emplace_back();
    } else {
      out.back() += c;
    }
  }
  return out;
}

class MoverRuns : public ::testing::Test {
 public:  // CompareWithReference runs evaluations through the fixture
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kplab_mover_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    for (const char* m : {"bert-mnli-tiny", "distilbert-tiny"}) {
      kplab::test::Output o =
          Run(std::string("model import ") + m + " tests/data/mover/" + m + " --backend transformer");
      ASSERT_EQ(o.code, 0) << o.err;
    }
  }
  void TearDown() override { fs::remove_all(dir_); }
  kplab::test::Output Run(const std::string& args) {
    return kplab::test::RunKplab(
        dir_, "KPLAB_DB=" + (dir_ / "runs.db").string() + " KPLAB_MODELS=" + (dir_ / "models").string(), args);
  }
  // doc id -> column -> value (and "mean" -> column -> the run's value), from the stored run.
  std::map<std::string, std::map<std::string, double>> Eval(const std::string& args) {
    kplab::test::Output o = Run("eval " + args + " --output json");
    EXPECT_EQ(o.code, 0) << o.err;
    std::map<std::string, std::map<std::string, double>> s;
    for (const char* subset : {"all", "present", "absent"}) {
      const std::string key = std::string("\"") + subset + ".moverscore\": ";
      const auto at = o.out.find(key);
      if (at != std::string::npos) s["mean"][subset] = std::stod(o.out.substr(at + key.size()));
    }
    const auto at = o.out.find("\"run_id\": ");
    if (at == std::string::npos) return s;
    o = Run("runs export " + o.out.substr(at + 10, o.out.find_first_of(",}", at) - at - 10) + " --output tsv");
    EXPECT_EQ(o.code, 0) << o.err;
    std::istringstream in(o.out);
    std::string line;
    std::getline(in, line);
    const std::vector<std::string> header = Fields(line);
    while (std::getline(in, line)) {
      const std::vector<std::string> row = Fields(line);
      for (std::size_t i = 1; i < row.size() && i < header.size(); ++i) {
        const auto dot = header[i].find(".moverscore");
        if (!row[i].empty() && dot != std::string::npos) s[row[0]][header[i].substr(0, dot)] = std::stod(row[i]);
      }
    }
    return s;
  }
  // The first n documents of a dataset and of catSeqTG-2RF1's predictions for it, copied into the
  // test's directory (the reference run read the same first n lines).
  std::string DatasetArgs(const std::string& ds, const std::string& seed, int n = 40) {
    const std::string data = KPLAB_SHARED_DATA;
    const fs::path d = dir_ / (ds + "_" + seed + "_" + std::to_string(n));
    fs::create_directories(d);
    auto head = [n](const std::string& from, const fs::path& to) {
      std::ifstream in(from);
      std::ofstream out(to);
      std::string line;
      for (int i = 0; i < n && std::getline(in, line); ++i) out << line << "\n";
    };
    head(data + "/predictions/catSeqTG-2RF1/" + ds + "/seed" + seed + ".txt", d / "predictions.txt");
    if (ds == "kp20k") {
      head(data + "/kp20k_test_first1000/test_src.txt", d / "test_src.txt");
      head(data + "/kp20k_test_first1000/test_trg.txt", d / "test_trg.txt");
      return "--dataset " + d.string() + " --dataset-format one2set --predictions " + (d / "predictions.txt").string();
    }
    const std::string meng = data + "/kpg_testsets_meng2017/" + ds + "/word_" + ds + "_testing_";
    head(meng + "context.txt", d / ("word_" + ds + "_testing_context.txt"));
    head(meng + "allkeywords.txt", d / ("word_" + ds + "_testing_allkeywords.txt"));
    return "--dataset " + d.string() + " --predictions " + (d / "predictions.txt").string();
  }
  fs::path dir_;
};

// The differences from KPEval larger than 1e-6 (tests/data/mover/README.md, "What agrees and what does
// not"), each with a bound above its measured size: run, dataset, seed, document, subset -> bound, and a
// floor it must stay above (the list is out of date once it agrees). All are version 2 and one cause:
// moverscore_v2 computes distances in float32 as sqrt(|y|^2 - 2 x.y + |x|^2) (torch baddbmm, i.e.
// OpenBLAS' sgemm), which for two equal token vectors -- a prediction string equal to its reference
// string, so every token has a twin -- gives sqrt(a few float32 ulps of 1), 3e-4 to 5e-4, or 1e-15
// (clamped), depending on the sgemm kernel and on the twins' columns in the matrix; kplab computes
// these distances in double, ~0. The authors' code with float64 distances (run_reference.py
// --f64-distances, kpeval_mover_f64.tsv) agrees with kplab to 1e-6 on every value of these runs, the
// differences below included (ReproducesTheAuthorsCodeWithFloat64Distances).
struct KnownDifference {
  std::string run, dataset, seed, doc, subset;
  double bound, floor;
};
const std::vector<KnownDifference> kKnownDifferences = {
    // Prediction and reference `present` strings equal ("lower bounds, error correcting codes, z
    // channel"): 1.67e-4, 1.68e-4 (seed 9527) and, padded in a batch of 40, 1.17e-4; the means 4.2e-6,
    // 4.2e-6, 2.9e-6.
    {"v2b1", "inspec", "1234", "13", "present", 2e-4, 1e-5},
    {"v2b1", "inspec", "1234", "mean", "present", 5e-6, 1e-6},
    {"v2b1", "inspec", "9527", "13", "present", 2e-4, 1e-5},
    {"v2b1", "inspec", "9527", "mean", "present", 5e-6, 1e-6},
    {"v2b128", "inspec", "1234", "13", "present", 1.5e-4, 1e-5},
    {"v2b128", "inspec", "1234", "mean", "present", 4e-6, 1e-6},
    // `absent` strings equal ("primal dual algorithm"): at batch size 1 the twins' distances happen
    // to come out ~0 (agrees to 1e-6), padded in the batch of 40 they do not: 2.48e-4, the mean 6.2e-6.
    {"v2b128", "kp20k", "1234", "40", "absent", 3e-4, 1e-5},
    {"v2b128", "kp20k", "1234", "mean", "absent", 8e-6, 1e-6},
    // Nearly equal vectors ("continuous testing" in both strings of the tiny model): 1.04e-6, at the
    // edge of 1e-6 (no floor: a rounding of the network may take it under).
    {"v2b1", "krapivin", "1234", "12", "present", 2e-6, 0},
};

const KnownDifference* Known(const std::vector<std::string>& f) {
  for (const KnownDifference& k : kKnownDifferences) {
    if (k.run == f[0] && k.dataset == f[1] && k.seed == f[2] && k.doc == f[3] && k.subset == f[4]) return &k;
  }
  return nullptr;
}

// Rows of one of the reference files: run, dataset, seed, doc (1-based or "mean"), subset, value.
std::vector<std::vector<std::string>> ReadReference(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in) << path;
  std::string line;
  std::getline(in, line);
  std::vector<std::vector<std::string>> rows;
  while (std::getline(in, line)) {
    rows.push_back(Fields(line));
    EXPECT_EQ(rows.back().size(), 6u) << path << ": " << line;
    if (rows.back().size() != 6u) rows.pop_back();
  }
  return rows;
}

// Compares kplab (profile kpeval, KPEval's configuration) with every row of a reference file: calls
// check(row, kplab's value) for each, running one evaluation per dataset, seed, version and number of
// documents. Version 2 runs of either batch size are set against the same kplab run: kplab scores each
// document alone.
template <class Check>
void CompareWithReference(MoverRuns& t, const std::vector<std::vector<std::string>>& rows, Check check) {
  std::map<std::string, int> ndocs;  // "run dataset seed" -> documents the reference read (its last number)
  for (const std::vector<std::string>& f : rows) {
    int& n = ndocs[f[0] + " " + f[1] + " " + f[2]];
    if (f[3] != "mean") n = std::max(n, std::stoi(f[3]));
  }
  std::map<std::string, std::map<std::string, std::map<std::string, double>>> runs;
  for (const std::vector<std::string>& f : rows) {
    const int n = ndocs[f[0] + " " + f[1] + " " + f[2]];
    const std::string args =
        "--profile kpeval " + t.DatasetArgs(f[1], f[2], n) + " --metrics mover --model " +
        (f[0] == "v1" ? "bert-mnli-tiny --param mover.version=1" : "distilbert-tiny --param mover.version=2");
    if (!runs.count(args)) runs[args] = t.Eval(args);
    const auto doc = runs[args].find(f[3]);
    ASSERT_NE(doc, runs[args].end()) << "document " << f[3] << " of " << args;
    const auto v = doc->second.find(f[4]);
    ASSERT_NE(v, doc->second.end()) << f[4] << " of document " << f[3] << " of " << args;
    check(f, v->second);
  }
}

// Every per-document value and every mean KPEval printed (kpeval_mover.tsv: versions 1 and 2, batch
// sizes 1 and 128, four datasets, three seeds) under profile kpeval with KPEval's configuration: to
// 1e-6, but for the known differences above. Inspec documents 17 and 22 repeat a reference (same stem
// key): kpeval reproduces KPEval's zip of all references with the unique ones' flags there
// (doc.refs_with_duplicates), and they are compared to 1e-6 like the rest.
TEST_F(MoverRuns, MatchesKpevalsMoverScoreOnCatSeqTG) {
  const auto rows = ReadReference(kMover + "/kpeval_mover.tsv");
  int checked = 0, known_seen = 0;
  double worst = 0;
  CompareWithReference(*this, rows, [&](const std::vector<std::string>& f, double got) {
    const std::string line = f[0] + " " + f[1] + " " + f[2] + " " + f[3] + " " + f[4] + " " + f[5];
    const double diff = std::fabs(got - std::stod(f[5]));
    if (const KnownDifference* k = Known(f); k != nullptr) {
      ++known_seen;
      std::cout << "known difference " << line << ": " << diff << "\n";
      EXPECT_GT(diff, k->floor) << "known difference now agrees (update tests/data/mover/README.md and this list): "
                                << line;
      EXPECT_LE(diff, k->bound) << "known difference grew: " << line;
      return;
    }
    worst = std::max(worst, diff);
    EXPECT_LE(diff, 1e-6) << "kplab " << got << " for " << line;
    ++checked;
  });
  EXPECT_EQ(known_seen, static_cast<int>(kKnownDifferences.size()));
  EXPECT_GE(checked, 3400);
  std::cout << "compared " << checked << " values with KPEval's to 1e-6; largest difference " << worst << "\n";
}

// The authors' code with its distances computed in float64 (run_reference.py --f64-distances, the one
// change) on the runs with known differences: every value, those included, agrees with kplab to 1e-6.
// This is what pins the known differences on torch's float32 distances.
TEST_F(MoverRuns, ReproducesTheAuthorsCodeWithFloat64Distances) {
  const auto rows = ReadReference(kMover + "/kpeval_mover_f64.tsv");
  int checked = 0, known_rows = 0;
  CompareWithReference(*this, rows, [&](const std::vector<std::string>& f, double got) {
    EXPECT_NEAR(got, std::stod(f[5]), 1e-6) << f[0] << " " << f[1] << " " << f[2] << " " << f[3] << " " << f[4];
    known_rows += Known(f) != nullptr;
    ++checked;
  });
  EXPECT_EQ(known_rows, static_cast<int>(kKnownDifferences.size()));
  EXPECT_EQ(checked, 5 * 123);
}

// Profile kplab: each side weighted by its own idf; an empty side scores 0.
TEST_F(MoverRuns, KplabWeighsEachSideByItsOwnIdfAndScoresEmptySidesZero) {
  const std::string args = DatasetArgs("inspec", "1234") + " --metrics mover --model bert-mnli-tiny";
  const auto kplab = Eval("--profile kplab " + args);
  const auto kpeval = Eval("--profile kpeval " + args);
  const auto swapped = Eval("--profile kplab --param mover.idf_swap=true " + args);
  ASSERT_EQ(kplab.size(), 41u);
  int differ = 0, zero = 0;
  for (const auto& [doc, cols] : kplab) {
    if (doc == "mean") continue;
    differ += cols.at("all") != swapped.at(doc).at("all");
    if (kpeval.at(doc).at("absent") == 1.0) {  // both absent strings empty under kpeval
      EXPECT_EQ(cols.at("absent"), 0.0) << doc;
      ++zero;
    }
  }
  EXPECT_GT(differ, 30);
  EXPECT_GT(zero, 0);
}

TEST_F(MoverRuns, MismatchedModelsAreRefusedOrNamed) {
  kplab::test::Output o = Run("model import glove tests/data/embed/tiny.txt --backend wordvec");
  ASSERT_EQ(o.code, 0) << o.err;
  o = Run("eval --dataset examples/tiny --predictions examples/tiny/predictions.txt --metrics mover --model glove");
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.err.find("metric 'mover' needs token embeddings, but model 'glove' (backend wordvec) has no token "
                       "embeddings"),
            std::string::npos)
      << o.err;
  // Version 2's formula on the BERT and version 1's on DistilBERT run: the versions name formulas, the
  // model is the user's choice (a 6-layer DistilBERT has the five layers version 1 pools).
  o =
      Run("eval --dataset examples/tiny --predictions examples/tiny/predictions.txt --metrics mover --model "
          "distilbert-tiny --param mover.version=1 --no-store");
  EXPECT_EQ(o.code, 0) << o.err;
  o =
      Run("eval --dataset examples/tiny --predictions examples/tiny/predictions.txt --metrics mover --model "
          "bert-mnli-tiny --param mover.version=3 --no-store");
  EXPECT_EQ(o.code, 1);  // a bad parameter value, as for every plugin (calib_test.cc)
  EXPECT_NE(o.err.find("parameter 'version' must be an integer from 1 to 2 (got 3)"), std::string::npos) << o.err;
}

// The token primitives MoverScore uses, given bad arguments by a plugin on the tiny DistilBERT: each is a
// clear error at the plugin's line, and a distance matrix past 46,340 rows is refused before anything is
// allocated. (The happy paths are checked against KPEval above.)
TEST_F(MoverRuns, TokenPrimitivesRefuseBadArguments) {
  const fs::path plugins = dir_ / "probe_plugins";
  fs::create_directories(plugins);
  auto error_of = [&](const std::string& body) {
    std::ofstream(plugins / "probe.lua") << "-- kplab-api: 2\n"
                                            "return kp.metric {\n"
                                            "  name = 'probe', version = '1.0.0', doc = 'probe',\n"
                                            "  needs = { 'tokens' }, subsets = { 'all' }, columns = { 'x' },\n"
                                            "  score = function(preds, refs, doc, p, ctx, out)\n"
                                            "    local T = ctx.token_embeddings({ 'neural networks', 'a tree' }, 6)\n"
                                         << body
                                         << "\n    out.x = 0\n"
                                            "  end,\n"
                                            "}\n";
    kplab::test::Output o = Run("eval --dataset examples/tiny --predictions examples/tiny/predictions.txt --plugins " +
                                plugins.string() + " --metrics probe --model distilbert-tiny --no-store");
    EXPECT_NE(o.code, 0) << body;
    return o.err;
  };
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"ctx.token_embeddings({ 'a' }, { 7 }, { 'min' })",
       "probe.lua:7: ctx.token_embeddings: layer list entry 1 is not a layer in 0..6 (model 'distilbert-tiny' has 6 "
       "layers)"},
      {"ctx.token_embeddings({ 'a' }, { 5, 6 }, { 'median' })",
       "probe.lua:7: ctx.token_embeddings: pool list entry 1 must be \"min\", \"mean\" or \"max\""},
      {"ctx.token_embeddings({ 'a' }, { 5, 6 })", "probe.lua:7: ctx.token_embeddings: a layer list needs a pool list"},
      {"ctx.token_embeddings({ 'a' }, {}, { 'min' })",
       "probe.lua:7: ctx.token_embeddings: the layer list has 0 entries (expected 1 to 64)"},
      {"T:ngrams(1, { true }, { 1 }, 1, 0)", "probe.lua:7: ngrams: keep has 1 entries (expected 4, one per token)"},
      {"T:ngrams(1, { true, true, 1, true }, { 1, 1, 1, 1 }, 1, 0)",
       "probe.lua:7: ngrams: keep[3] must be true or false"},
      {"T:ngrams(1, { true, true, true, true }, { 1, 1, -1, 1 }, 1, 0)",
       "probe.lua:7: ngrams: weights[3] must be a finite number >= 0"},
      {"T:ngrams(1, { true, true, true, true }, { 1, 1, 1, 1 }, 0, 0)",
       "probe.lua:7: ngrams: n is 0 (expected 1 to 512)"},
      {"T:ngrams(1, { true, true, true, true }, { 1, 1, 1, 1 }, 1, -1)",
       "probe.lua:7: ngrams: eps must be a finite number >= 0"},
      {"T:select(3, {})", "probe.lua:7: string index 3 out of range 1..2"},
      {"T:select(2, { true })", "probe.lua:7: select: keep has 1 entries (expected 4, one per token)"},
      {"T:tokens(0)", "probe.lua:7: string index 0 out of range 1..2"},
      {"kp.token_distances(T, T, 'cosine', 0)",
       "probe.lua:7: kp.token_distances: kind must be \"sqeuclidean\" or \"euclidean\" (got 'cosine')"},
      {"kp.token_distances(T, T, 'euclidean', 0/0)",
       "probe.lua:7: kp.token_distances: eps must be a finite number >= 0"},
      {"kp.token_distances(T, ctx.token_embeddings({ 'a' }, { 5, 6 }, { 'min', 'max' }), 'euclidean', 0)",
       "probe.lua:7: kp.token_distances needs token embeddings of the same size (got 16 and 32 dimensions)"},
      // 92 strings of 600 words, cut at 512 tokens each: 47,104 rows.
      {"local s, l = {}, string.rep('tree ', 600) for i = 1, 46 do s[i] = l end\n"
       "    local B = ctx.token_embeddings(s, 6)\n"
       "    kp.token_distances(B, B, 'euclidean', 0)",
       "probe.lua:9: kp.token_distances: 47104 rows (at most 46340)"},
  };
  for (const auto& [body, want] : cases) {
    const std::string err = error_of(body);
    EXPECT_NE(err.find(want), std::string::npos) << body << "\n" << err;
  }
}

// ---- the Lua primitives, on the tiny DistilBERT (token strings, pooled layers, n-grams) ------------

class MoverLua : public ::testing::Test {
 protected:
  MoverLua() {
    for (const ModuleInstaller& m : AllModules()) vm_.Install(m);
  }
  std::vector<double> Numbers(const std::string& src) {
    lua_State* L = vm_.state();
    const int top = lua_gettop(L);
    vm_.PushSandboxEnv("mv");
    std::optional<ScriptError> err = vm_.RunChunk(src, "mv.lua", LUA_MULTRET);
    EXPECT_FALSE(err) << (err ? err->message : "");
    std::vector<double> out;
    for (int i = top + 1; !err && i <= lua_gettop(L); ++i) out.push_back(lua_tonumber(L, i));
    lua_settop(L, top);
    return out;
  }
  std::string ErrorOf(const std::string& src) {
    lua_State* L = vm_.state();
    const int top = lua_gettop(L);
    vm_.PushSandboxEnv("mv");
    std::optional<ScriptError> err = vm_.RunChunk(src, "mv.lua", 0);
    lua_settop(L, top);
    return err ? err->message : "(no error)";
  }
  LuaVm vm_;
};

// The tiny case of tests/core/emd_test.cc through the binding: points 0, 1, 2 on a line.
TEST_F(MoverLua, EmdByHand) {
  const std::vector<double> v = Numbers(
      "local D = kp.matrix{{0, 1, 2}, {1, 0, 1}, {2, 1, 0}}\n"
      "return kp.emd({.6, 0, 0}, {0, .3, .2}, D)");
  ASSERT_EQ(v.size(), 2u);
  const double pq = 1000000.0 / 0.6, cf = 1000000.0 / 2;
  EXPECT_EQ(v[0], (500000.0 * 500000.0 + 333333.0 * 1000000.0) / pq / cf + (0.6 - (0.3 + 0.2)) * 2);
  // The flow: .3 to bin 2 at cost 1, 333333 units (in 1e6 / .6 steps) to bin 3 at cost 2.
  EXPECT_NEAR(v[1], 0.3 * 1 + static_cast<float>(333333.0 / pq) * 2.0, 1e-7);
  // Two empty histograms (MoverScore's two empty strings): distance 0, no flow.
  EXPECT_EQ(Numbers("return kp.emd({0, 0}, {0, 0}, kp.matrix{{0, 1}, {1, 0}})"), (std::vector<double>{0, 0}));
}

TEST_F(MoverLua, HostileArguments) {
  const std::string D = "local D = kp.matrix{{0, 1}, {1, 0}}\n";
  EXPECT_EQ(ErrorOf(D + "kp.emd({1}, {0, 1}, D)"), "mv.lua:2: kp.emd: p has 1 entries (expected 2)");
  EXPECT_EQ(ErrorOf(D + "kp.emd({1, -1}, {0, 1}, D)"), "mv.lua:2: kp.emd: p[2] must be a finite number >= 0");
  EXPECT_EQ(ErrorOf(D + "kp.emd({1, 0}, {0, 0/0}, D)"), "mv.lua:2: kp.emd: q[2] must be a finite number >= 0");
  EXPECT_EQ(ErrorOf("kp.emd({1}, {1}, kp.matrix{{0, 1}})"), "mv.lua:1: kp.emd: D is 1 x 2 (expected a square matrix)");
  EXPECT_EQ(ErrorOf("kp.emd({1, 0}, {0, 1}, kp.matrix{{0, -1}, {1, 0}})"),
            "mv.lua:1: kp.emd: cost (1, 2) is -1 (expected a finite distance >= 0)");
  EXPECT_EQ(ErrorOf("kp.emd({}, {}, {})"), "mv.lua:1: bad argument #3 to 'emd' (kplab.Matrix expected, got table)");
  EXPECT_EQ(ErrorOf("kp.token_distances({}, {}, 'sqeuclidean', 0)"),
            "mv.lua:1: bad argument #1 to 'token_distances' (kplab.TokenEmbeddings expected, got table)");
}

// A one-bin pair of histograms of one unit each at distance 3 costs 3; large inputs are charged to
// the budget before they run (the per-call instruction budget stops a 3000 x 3000 problem).
TEST_F(MoverLua, EmdIsChargedToTheBudget) {
  EXPECT_EQ(Numbers("return kp.emd({1, 0}, {0, 1}, kp.matrix{{0, 3}, {3, 0}})"), (std::vector<double>{3, 3}));
  const std::string big =
      "local n = 3000 local rows, p, q = {}, {}, {}\n"
      "for i = 1, n do rows[i] = {} for j = 1, n do rows[i][j] = math.abs(i - j) end p[i] = i <= n // 2 and 1 or 0 "
      "q[i] = 1 - p[i] end\n"
      "return kp.emd(p, q, kp.matrix(rows))";
  const std::string err = ErrorOf(big);
  EXPECT_NE(err.find("exceeded"), std::string::npos) << err;
}

}  // namespace
}  // namespace kplab::host
