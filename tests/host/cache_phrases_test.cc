// `kplab cache phrases` prints exactly the strings a run would embed. Each test checks it from outside:
// the printed phrases are embedded with a deterministic made-up table (4 numbers from a hash of the
// string, never zero), imported as a precomputed model, and the run is made into a fresh cache. A
// precomputed run fails when it needs a phrase the table lacks, so the run succeeding proves
// needed ⊆ printed; its report ("N distinct phrases ... 0 without a vector") and `kplab cache info`
// (N phrases cached in the fresh database) prove |needed| = |printed|, so the two sets are equal.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cli_harness.h"

namespace {

namespace fs = std::filesystem;

using kplab::test::Output;

const std::string kCacheSrc = KPLAB_SOURCE_DIR;
const std::string kTinyArgs = "--dataset examples/tiny --predictions examples/tiny/predictions.txt";
// A real dataset: SemEval-2010 test (100 papers) with catSeq's predictions.
const std::string kRealArgs = "--dataset ../shared/data/kpg_testsets_meng2017/semeval "
                              "--predictions ../shared/data/predictions/catSeq/semeval/predictions.txt";

std::vector<std::string> Lines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// The made-up embedding: 4 components in [1, 2) from FNV-1a 64 of the phrase.
std::string VectorTsvLine(const std::string& phrase) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : phrase) h = (h ^ c) * 1099511628211ull;
  std::string line = phrase;
  for (int i = 0; i < 4; ++i) {
    line += "\t" + std::to_string(1.0 + static_cast<double>((h >> (16 * i)) & 0xffff) / 65536.0);
  }
  return line + "\n";
}

class CachePhrases : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("kplab_phrases_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  Output Run(const std::string& args, const std::string& db = "runs.db") {
    return kplab::test::RunKplab(dir_, "KPLAB_DB=" + (dir_ / db).string() + " KPLAB_MODELS=" +
                                           (dir_ / "models").string(),
                                 args);
  }

  // Prints the phrases, embeds them with the made-up table, evaluates into a fresh database and checks
  // the run embedded exactly those strings. Returns the printed lines.
  std::vector<std::string> CheckEqualsRun(const std::string& data_args, const std::string& profile,
                                          const std::string& name) {
    const std::string args = data_args + " --profile " + profile + " --metrics semrp";
    Output o = Run("cache phrases " + args);
    EXPECT_EQ(o.code, 0) << o.err;
    const std::vector<std::string> printed = Lines(o.out);
    EXPECT_FALSE(printed.empty());
    const std::set<std::string> distinct(printed.begin(), printed.end());
    EXPECT_EQ(distinct.size(), printed.size()) << "a phrase printed twice";
    EXPECT_EQ(o.err, std::to_string(printed.size()) + " distinct phrases (profile " + profile + ")\n");
    std::string table;
    for (const auto& p : printed) {
      EXPECT_EQ(p.find('\t'), std::string::npos) << p;
      table += VectorTsvLine(p);
    }
    std::ofstream(dir_ / (name + ".tsv")) << table;
    o = Run("model import " + name + " " + (dir_ / (name + ".tsv")).string() + " --backend precomputed");
    EXPECT_EQ(o.code, 0) << o.err;
    const std::string db = name + "-fresh.db";
    o = Run("eval " + args + " --model " + name + " --output json", db);
    EXPECT_EQ(o.code, 0) << o.err;
    const std::string n = std::to_string(printed.size());
    EXPECT_NE(o.err.find("model '" + name + "': " + n + " distinct phrases, 0 from the cache, " + n +
                         " embedded now"),
              std::string::npos)
        << o.err;
    EXPECT_NE(o.err.find("; 0 without a vector (cosine 0)"), std::string::npos) << o.err;
    o = Run("cache info", db);
    EXPECT_EQ(o.code, 0) << o.err;
    EXPECT_TRUE(std::regex_search(o.out, std::regex("\\n  " + name + " +" + n + " phrases"))) << o.out;
    return printed;
  }

  fs::path dir_;
};

TEST_F(CachePhrases, TinyKplabProfileIsEveryListedSurfaceOnce) {
  const auto printed = CheckEqualsRun(kTinyArgs, "kplab", "tiny-kplab");
  // By hand from examples/tiny: 21 reference phrases, and the predicted ones that are not references
  // (the repeated "soil moisture" counts once). Not the marker piece "<peos>" (5 times; kplab drops a
  // piece equal to it) nor "<unk> review" (document 5; kplab drops a prediction with an <unk> token):
  // the corpus interns both before dropping them, but no document lists them, so no plugin can ask
  // for their vectors. Predicted, not references: scheduler, cluster, job length, resource management
  // (1); patient information leaflets, sentence length, medical communication (2); graph neural
  // network, traffic speed, road network, recurrent unit, traffic forecasting (3); low cost radar,
  // irrigation planning, remote sensing (4); open source projects, design comments, software quality
  // (5): 18. 21 + 18 = 39.
  const std::set<std::string> expected = {
      "scheduling", "batch jobs", "interactive queries", "preemption", "cluster computing", "readability",
      "patient leaflets", "readability formulas", "health literacy", "graph neural networks",
      "traffic speed prediction", "spatial convolution", "intelligent transportation", "soil moisture",
      "ground radar", "scattering model", "precision agriculture", "code review", "review comments",
      "software engineering", "open source", "scheduler", "cluster", "job length", "resource management",
      "patient information leaflets", "sentence length", "medical communication", "graph neural network",
      "traffic speed", "road network", "recurrent unit", "traffic forecasting", "low cost radar",
      "irrigation planning", "remote sensing", "open source projects", "design comments",
      "software quality"};
  EXPECT_EQ(expected.size(), 39u);
  EXPECT_EQ(std::set<std::string>(printed.begin(), printed.end()), expected);
  EXPECT_EQ(std::count(printed.begin(), printed.end(), "<peos>"), 0);
  // The order is the run's plan order, first appearance in the corpus: the first document's
  // references, then its predictions not seen yet, then the second document's...
  ASSERT_GE(printed.size(), 11u);
  EXPECT_EQ(std::vector<std::string>(printed.begin(), printed.begin() + 11),
            (std::vector<std::string>{"scheduling", "batch jobs", "interactive queries", "preemption",
                                      "cluster computing", "scheduler", "cluster", "job length",
                                      "resource management", "readability", "patient leaflets"}));
  // Stable: the same options print the same bytes.
  Output a = Run("cache phrases " + kTinyArgs + " --metrics semrp");
  Output b = Run("cache phrases " + kTinyArgs + " --metrics semrp");
  EXPECT_EQ(a.out, b.out);
}

TEST_F(CachePhrases, TinyKpevalProfileEmbedsStems) {
  const auto printed = CheckEqualsRun(kTinyArgs, "kpeval", "tiny-kpeval");
  const std::set<std::string> got(printed.begin(), printed.end());
  // Porter stems joined by spaces (the KPEval fork of SemR-p), worked out by hand.
  for (const char* stem : {"schedul", "batch job", "graph neural network", "readabl formula", "soil moistur",
                           "<unk> review", "open sourc project"}) {
    EXPECT_TRUE(got.count(stem)) << stem;
  }
  // "graph neural networks" and "graph neural network" share one stem string: embedded once.
  EXPECT_FALSE(got.count("graph neural networks"));
  EXPECT_FALSE(got.count("batch jobs"));
  // --with-form says which form each string is.
  Output o = Run("cache phrases " + kTinyArgs + " --profile kpeval --metrics semrp --with-form");
  ASSERT_EQ(o.code, 0) << o.err;
  const auto lines = Lines(o.out);
  ASSERT_EQ(lines.size(), printed.size());
  for (std::size_t i = 0; i < lines.size(); ++i) EXPECT_EQ(lines[i], "stems\t" + printed[i]);
}

TEST_F(CachePhrases, RealDatasetBothProfiles) {
  if (!fs::exists(kCacheSrc + "/../shared/data/kpg_testsets_meng2017/semeval")) GTEST_SKIP() << "no shared data";
  const auto kplab = CheckEqualsRun(kRealArgs, "kplab", "real-kplab");
  const auto kpeval = CheckEqualsRun(kRealArgs, "kpeval", "real-kpeval");
  // Stemming merges surfaces: fewer distinct strings under kpeval.
  EXPECT_LT(kpeval.size(), kplab.size());
  EXPECT_GT(kplab.size(), 1000u);
}

// Every ';'-piece of a keyphrase file, stripped, as written and lower-cased: a superset of any
// surface a profile makes of them (none of the cases below has ExHiRD's markers or KPEval's cleanup).
std::set<std::string> RawPieces(const std::string& path) {
  std::set<std::string> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    std::istringstream pieces(line);
    for (std::string piece; std::getline(pieces, piece, ';');) {
      const auto b = piece.find_first_not_of(" \t\r");
      if (b == std::string::npos) continue;
      piece = piece.substr(b, piece.find_last_not_of(" \t\r") - b + 1);
      out.insert(piece);
      std::transform(piece.begin(), piece.end(), piece.begin(), [](unsigned char c) { return std::tolower(c); });
      out.insert(piece);
    }
  }
  return out;
}

// `kplab cache add` (no corpus: DistinctSurfaces) caches every surface the corpus interns: what a run
// embeds (`cache phrases`) and the pieces the profile then drops (the "<peos>" marker, invalid
// predictions, repeats' other spellings), which a run never asks for. The model is a table of a
// superset (every raw piece, and the printed phrases); a run from the filled database then embeds
// nothing (added ⊇ planned), and on examples/tiny the count is the printed phrases plus the dropped
// pieces, worked out by hand.
TEST_F(CachePhrases, CacheAddCachesEverySurfaceARunEmbeds) {
  const std::string tiny = "examples/tiny examples/tiny/predictions.txt";
  const std::string tiny_files[] = {kCacheSrc + "/examples/tiny/tiny_allkeywords.txt",
                                    kCacheSrc + "/examples/tiny/predictions.txt"};
  struct Case {
    std::string phrases_args, add_args, profile;
    std::vector<std::string> files;
    int dropped;  // by hand; -1: not worked out (real data)
  };
  // examples/tiny's dropped pieces: "<peos>" (kplab drops the piece, semrp-standalone drops it from a
  // line file, kenchan drops a piece starting with it; exhird keeps it as a keyphrase) and "<unk>
  // review" (an <unk> token: kplab, kenchan; exhird's "<unk>" substring; semrp-standalone keeps it).
  std::vector<Case> cases = {{kTinyArgs, tiny, "kplab", {tiny_files[0], tiny_files[1]}, 2},
                             {kTinyArgs, tiny, "exhird", {tiny_files[0], tiny_files[1]}, 1},
                             {kTinyArgs, tiny, "semrp-standalone", {tiny_files[0], tiny_files[1]}, 1},
                             {kTinyArgs, tiny, "kenchan", {tiny_files[0], tiny_files[1]}, 2}};
  if (fs::exists(kCacheSrc + "/../shared/data/kpg_testsets_meng2017/semeval")) {
    const std::string gold = "../shared/data/kpg_testsets_meng2017/semeval";
    const std::string preds = "../shared/data/predictions/catSeq/semeval/predictions.txt";
    const std::vector<std::string> files = {kCacheSrc + "/" + gold + "/word_semeval_testing_allkeywords.txt",
                                            kCacheSrc + "/" + preds};
    cases.push_back({kRealArgs, gold + " " + preds, "kplab", files, -1});
    cases.push_back({kRealArgs, gold + " " + preds, "exhird", files, -1});
  }
  for (const Case& c : cases) {
    SCOPED_TRACE(c.add_args + " " + c.profile);
    const std::string args = c.phrases_args + " --profile " + c.profile + " --metrics semrp";
    Output o = Run("cache phrases " + args);
    ASSERT_EQ(o.code, 0) << o.err;
    const std::vector<std::string> printed = Lines(o.out);
    ASSERT_FALSE(printed.empty());
    std::set<std::string> rows(printed.begin(), printed.end());
    for (const auto& f : c.files) rows.merge(RawPieces(f));
    std::string table;
    for (const auto& p : rows) table += VectorTsvLine(p);
    const std::string name = "add-" + c.profile + "-" + std::to_string(printed.size());
    std::ofstream(dir_ / (name + ".tsv")) << table;
    o = Run("model import " + name + " " + (dir_ / (name + ".tsv")).string() + " --backend precomputed");
    ASSERT_EQ(o.code, 0) << o.err;
    const std::string db = name + ".db";
    o = Run("cache add " + c.add_args + " --profile " + c.profile + " --model " + name + " --db " +
            (dir_ / db).string());
    ASSERT_EQ(o.code, 0) << o.err;
    std::smatch m;
    ASSERT_TRUE(std::regex_search(o.out, m, std::regex("^([0-9]+) distinct phrases: 0 cached already, \\1 "
                                                       "embedded now \\(0 without a vector\\)")))
        << o.out;
    const std::size_t added = std::stoul(m[1]);
    EXPECT_GE(added, printed.size());
    if (c.dropped >= 0) {
      EXPECT_EQ(added, printed.size() + static_cast<std::size_t>(c.dropped));
    }
    // The run finds every phrase it plans in the filled cache.
    o = Run("eval " + args + " --model " + name + " --no-store --output json", db);
    ASSERT_EQ(o.code, 0) << o.err;
    const std::string n = std::to_string(printed.size());
    EXPECT_NE(o.err.find("model '" + name + "': " + n + " distinct phrases, " + n + " from the cache, 0 embedded now"),
              std::string::npos)
        << o.err;
  }
}

TEST_F(CachePhrases, BothFormsAndOptions) {
  // A plugin that needs both forms: a string that is both a surface and a stem key ("cluster") is
  // printed once, marked surface+stems; stems-only strings after all surfaces.
  fs::create_directories(dir_ / "plugins");
  std::ofstream(dir_ / "plugins" / "twoforms.lua")
      << "-- kplab-api: 2\n"
         "return kp.metric { name = 'twoforms', version = '1', needs = {'embeddings', 'embeddings:stems'},\n"
         "  subsets = {'all'}, columns = {'x'}, score = function(preds, refs, doc, p, ctx, out) out.x = 0 end }\n";
  Output o = Run("cache phrases " + kTinyArgs + " --metrics twoforms --plugins " + (dir_ / "plugins").string() +
                 " --with-form");
  ASSERT_EQ(o.code, 0) << o.err;
  const auto lines = Lines(o.out);
  EXPECT_NE(std::find(lines.begin(), lines.end(), "surface+stems\tcluster"), lines.end()) << o.out;
  EXPECT_NE(std::find(lines.begin(), lines.end(), "surface\tbatch jobs"), lines.end()) << o.out;
  EXPECT_NE(std::find(lines.begin(), lines.end(), "stems\tbatch job"), lines.end()) << o.out;
  bool seen_stems_only = false;
  for (const auto& l : lines) {
    if (l.starts_with("stems\t")) seen_stems_only = true;
    if (seen_stems_only) {
      EXPECT_TRUE(l.starts_with("stems\t")) << "a surface after the stems: " << l;
    }
  }
  // jsonl: one JSON object per line.
  o = Run("cache phrases " + kTinyArgs + " --metrics semrp --output jsonl");
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_TRUE(o.out.starts_with("{\"phrase\": \"scheduling\"}\n")) << o.out;
  // No metric that needs embeddings: nothing to print, said on stderr.
  o = Run("cache phrases " + kTinyArgs + " --metrics exact");
  EXPECT_EQ(o.code, 0);
  EXPECT_EQ(o.out, "");
  EXPECT_EQ(o.err, "kplab: no selected metric needs embeddings; nothing to embed\n");
}

TEST_F(CachePhrases, HostileInput) {
  Output o = Run("cache phrases --predictions examples/tiny/predictions.txt --metrics semrp");
  EXPECT_EQ(o.code, 1);
  EXPECT_EQ(o.err, "kplab: missing required option --dataset (see 'kplab help')\n");
  o = Run("cache phrases " + kTinyArgs + " --metrics semrpx");
  EXPECT_EQ(o.code, 1);
  EXPECT_NE(o.err.find("kplab: unknown metric 'semrpx' (did you mean 'semrp'? expected one of: "), std::string::npos) << o.err;
  o = Run("cache phrases " + kTinyArgs + " --metrics semrp --param semrp.k=0");
  EXPECT_EQ(o.code, 1);
  EXPECT_EQ(o.err, "kplab: plugin 'semrp': parameter 'k' must be an integer >= 1 (got 0) (see 'kplab help')\n");
  o = Run("cache nope");
  EXPECT_EQ(o.code, 1);
  EXPECT_EQ(o.err, "kplab: unknown cache subcommand 'nope' (expected add, info, phrases) (see 'kplab help')\n");
  o = Run("cache phrases " + kTinyArgs + " --metrics semrp --output csv");
  EXPECT_EQ(o.code, 1);
  EXPECT_EQ(o.err, "kplab: unknown --output 'csv' (expected lines or jsonl) (see 'kplab help')\n");
  o = Run("cache phrases --dataset examples/nowhere --metrics semrp");
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.err.find("examples/nowhere"), std::string::npos) << o.err;
  // A keyphrase with a line break inside (JSON input) cannot be printed one per line: refused, nothing
  // printed; jsonl carries it.
  std::ofstream(dir_ / "docs.jsonl") << "{\"id\": \"d1\", \"title\": \"t\", \"abstract\": \"a\", "
                                         "\"keyword\": [\"line\\nbreak\", \"plain\"]}\n";
  const std::string jsonl = "cache phrases --dataset " + (dir_ / "docs.jsonl").string() +
                            " --dataset-format kptimes --metrics semrp";
  o = Run(jsonl);
  EXPECT_EQ(o.code, 2) << o.err;
  EXPECT_EQ(o.out, "");
  EXPECT_EQ(o.err, "kplab: phrase \"line\\nbreak\" contains a line break, which one-per-line output cannot "
                   "carry (expected --output jsonl)\n");
  o = Run(jsonl + " --output jsonl");
  EXPECT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(o.out, "{\"phrase\": \"line\\nbreak\"}\n{\"phrase\": \"plain\"}\n");
}

// docs/embeddings.md's sentence-transformers recipe, run as written: its sh blocks (marked
// "<!-- recipe: precomputed -->") in a scratch directory with kplab on PATH, and in place of the Python
// block (which needs the model) a table of the made-up vectors written to the file it names.
TEST_F(CachePhrases, EmbeddingsDocRecipeRuns) {
  std::ifstream doc(kCacheSrc + "/docs/embeddings.md");
  std::vector<std::pair<std::string, std::string>> blocks;  // (language, text)
  std::string line;
  bool marked = false;
  while (std::getline(doc, line)) {
    if (line == "<!-- recipe: precomputed -->") {
      marked = true;
      continue;
    }
    if (marked && line.starts_with("```")) {
      std::string lang = line.substr(3), text;
      while (std::getline(doc, line) && line != "```") text += line + "\n";
      blocks.emplace_back(lang, text);
    }
    marked = false;
  }
  ASSERT_EQ(blocks.size(), 3u);
  ASSERT_EQ(blocks[0].first, "sh");
  ASSERT_EQ(blocks[1].first, "python");
  ASSERT_EQ(blocks[2].first, "sh");
  // The Python step reads what step 1 wrote and writes what step 3 imports.
  ASSERT_NE(blocks[0].second.find("> phrases.txt"), std::string::npos);
  ASSERT_NE(blocks[1].second.find("open(\"phrases.txt\""), std::string::npos);
  ASSERT_NE(blocks[1].second.find("open(\"mpnet.jsonl\", \"w\""), std::string::npos);
  ASSERT_NE(blocks[2].second.find("import mpnet mpnet.jsonl"), std::string::npos);

  const fs::path work = dir_ / "work", bin = dir_ / "bin";
  fs::create_directories(work);
  fs::create_directories(bin);
  fs::create_directory_symlink(kCacheSrc + "/examples", work / "examples");
  fs::create_symlink(KPLAB_BINARY, bin / "kplab");
  auto sh = [&](const std::string& script) {
    std::ofstream(dir_ / "step.sh") << script;
    const std::string cmd = "cd " + work.string() + " && PATH=" + bin.string() + ":$PATH KPLAB_DB=" +
                            (dir_ / "runs.db").string() + " KPLAB_MODELS=" + (dir_ / "models").string() +
                            " bash -euo pipefail " + (dir_ / "step.sh").string() + " </dev/null >" +
                            (dir_ / "out").string() + " 2>" + (dir_ / "err").string();
    const int status = std::system(cmd.c_str());
    Output out;
    out.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    out.out = kplab::test::Slurp(dir_ / "out");
    out.err = kplab::test::Slurp(dir_ / "err");
    return out;
  };
  Output o = sh(blocks[0].second);
  ASSERT_EQ(o.code, 0) << o.err;
  const std::vector<std::string> phrases = Lines(kplab::test::Slurp(work / "phrases.txt"));
  ASSERT_FALSE(phrases.empty());
  // The made-up model, as the Python block would write it: {"phrase": ..., "vector": [...]} per line.
  std::string jsonl;
  for (const auto& p : phrases) {
    std::string esc;
    for (char c : p) {
      if (c == '"' || c == '\\') esc += '\\';
      esc += c;
    }
    std::string v = VectorTsvLine(p).substr(p.size() + 1);
    v.pop_back();
    for (char& c : v) c = c == '\t' ? ',' : c;
    jsonl += "{\"phrase\": \"" + esc + "\", \"vector\": [" + v + "]}\n";
  }
  std::ofstream(work / "mpnet.jsonl") << jsonl;
  o = sh(blocks[2].second);
  ASSERT_EQ(o.code, 0) << o.err;
  const std::string n = std::to_string(phrases.size());
  EXPECT_NE(o.err.find("model 'mpnet': " + n + " distinct phrases, 0 from the cache, " + n + " embedded now"),
            std::string::npos)
      << o.err;
  EXPECT_NE(o.err.find("; 0 without a vector (cosine 0)"), std::string::npos) << o.err;
  EXPECT_NE(o.out.find("\nsemrp "), std::string::npos) << o.out;
}

}  // namespace
