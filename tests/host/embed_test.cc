// End-to-end tests of the semantic primitives: `kplab model import`, a run whose plugin uses
// ctx.cosine / Matrix / ctx.embedding / kp.neighbors, the phrase cache across processes, and
// `kplab neighbors`. The model is tests/data/embed/tiny.txt (3 dimensions), so every number below is
// worked out by hand:
//   neural (1,0,0)  network (0,1,0)  deep (1,1,0)  learning (0,0,1)  graph (0,2,0)  based (0,0,2)
//   "neural network" nn = (.5,.5,0)   "deep learning" dl = (.5,.5,.5)   "graph based" gb = (0,1,1)
//   "learning" = (0,0,1)              "quantum chromodynamics": every word unknown -> no vector
//   cos(gb, nn) = .5 / (sqrt2 * sqrt.5) = .5          cos(gb, dl) = 1 / (sqrt2 * sqrt.75) = 2/sqrt6
//   cos(nn, dl) = .5 / (sqrt.5 * sqrt.75) = 2/sqrt6   cos(learning, dl) = .5 / sqrt.75 = 1/sqrt3
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "cli_harness.h"

namespace {

namespace fs = std::filesystem;

using kplab::test::Output;

class EmbedCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("kplab_embed_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    db_ = (dir_ / "runs.db").string();
    models_ = (dir_ / "models").string();
  }
  void TearDown() override { fs::remove_all(dir_); }

  Output Run(const std::string& args) {
    return kplab::test::RunKplab(dir_, "KPLAB_DB=" + db_ + " KPLAB_MODELS=" + models_ + " KPLAB_MODEL=tiny",
                                 args);
  }

  void ImportTiny() {
    Output o = Run("model import tiny tests/data/embed/tiny.txt --backend wordvec");
    ASSERT_EQ(o.code, 0) << o.err;
  }

  // Per-document scores of the last run as metric -> value (one document).
  std::map<std::string, double> Scores(const std::string& run_id) {
    Output o = Run("runs export " + run_id + " --output tsv");
    EXPECT_EQ(o.code, 0) << o.err;
    std::istringstream in(o.out);
    std::string header, row;
    std::getline(in, header);
    std::getline(in, row);
    std::vector<std::string> h, r;
    std::string f;
    for (std::istringstream hs(header); std::getline(hs, f, '\t');) h.push_back(f);
    for (std::istringstream rs(row); std::getline(rs, f, '\t');) r.push_back(f);
    std::map<std::string, double> out;
    for (std::size_t i = 1; i < h.size() && i < r.size(); ++i) out[h[i]] = r[i].empty() ? NAN : std::stod(r[i]);
    return out;
  }

  fs::path dir_;
  std::string db_, models_;
};

constexpr const char* kSemRun =
    "eval --dataset tests/data/embed/sem --predictions tests/data/embed/sem/predictions.txt "
    "--plugins tests/data/embed/plugins --metrics semtest --output json";

TEST_F(EmbedCli, SemanticPrimitivesInAPlugin) {
  ImportTiny();
  Output o = Run(kSemRun);
  ASSERT_EQ(o.code, 0) << o.err;
  // 4 predictions + 2 references, surface and stems forms: nn, dl, gb, learning, quantum
  // chromodynamics, deep learn, graph base, learn, quantum chromodynam = 9 distinct strings
  // ("neural network" stems to itself). No vector: both quantum forms and "learn" = 3.
  EXPECT_NE(o.err.find("9 distinct phrases, 0 from the cache, 9 embedded now"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("3 without a vector"), std::string::npos) << o.err;
  auto s = Scores("1");
  const double r6 = 2 / std::sqrt(6.0), r3 = 1 / std::sqrt(3.0);
  EXPECT_EQ(s["rows"], 4);
  EXPECT_EQ(s["cols"], 2);
  EXPECT_NEAR(s["gb_nn"], 0.5, 1e-6);
  EXPECT_NEAR(s["gb_dl"], r6, 1e-6);
  EXPECT_NEAR(s["learning_dl"], r3, 1e-6);
  EXPECT_EQ(s["oov_nn"], 0);  // a phrase without a vector has cosine 0 with everything
  EXPECT_NEAR(s["row1_max"], r6, 1e-6);
  EXPECT_EQ(s["row1_argmax"], 2);
  EXPECT_NEAR(s["row1_top2_mean"], (r6 + 0.5) / 2, 1e-6);
  // Assignment over rows gb, nn, learning, quantum x columns nn, dl: gb-dl + nn-nn = 2/sqrt6 + 1 beats
  // nn-dl + gb-nn (2/sqrt6 + .5) and learning-dl + nn-nn (1/sqrt3 + 1); rows 3 and 4 stay unassigned (0).
  EXPECT_NEAR(s["assign_total"], 1 + r6, 1e-6);
  EXPECT_EQ(s["assign_row1"], 2);
  EXPECT_EQ(s["assign_row2"], 1);
  EXPECT_EQ(s["assign_row3"], 0);
  EXPECT_EQ(s["assign_row4"], 0);
  EXPECT_NEAR(s["self_mean_upper"], r6, 1e-6);
  // Stems: "deep learning" -> "deep learn"; "learn" is unknown, so it is deep (1,1,0), parallel to nn.
  EXPECT_NEAR(s["stems_nn_dl"], 1, 1e-6);
  EXPECT_EQ(s["emb1"], 0);
  EXPECT_EQ(s["emb2"], 1);
  EXPECT_EQ(s["emb3"], 1);
  EXPECT_EQ(s["emb_oov_is_nil"], 1);
  EXPECT_NEAR(s["strings"], 1, 1e-6);  // "deep" (not planned, embedded on the spot) vs nn
  // Neighbours of nn among the cached strings with a vector: "deep learn" = deep (cos 1), dl (2/sqrt6),
  // "graph base" = graph (1/sqrt2), gb (.5), learning (0).
  EXPECT_EQ(s["n_neighbors"], 2);
  EXPECT_EQ(s["nb1_is_deep_learn"], 1);
  EXPECT_NEAR(s["nb1_cos"], 1, 1e-5);
  EXPECT_EQ(s["nb2_is_dl"], 1);
  EXPECT_NEAR(s["nb2_cos"], r6, 1e-5);
  EXPECT_EQ(s["dims"], 3);
  // The run records the model's fingerprint.
  Output show = Run("runs show 1");
  Output info = Run("model info tiny");
  const std::string fp_line = info.out.substr(info.out.find("fingerprint") + 13, 64);
  EXPECT_NE(show.out.find(fp_line), std::string::npos) << show.out;
}

TEST_F(EmbedCli, CacheSurvivesAcrossProcesses) {
  ImportTiny();
  ASSERT_EQ(Run(kSemRun).code, 0);
  Output again = Run(kSemRun);
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_NE(again.err.find("9 distinct phrases, 9 from the cache, 0 embedded now"), std::string::npos)
      << again.err;
  EXPECT_EQ(Scores("2")["assign_total"], Scores("1")["assign_total"]);
}

TEST_F(EmbedCli, NeighborsCommand) {
  ImportTiny();
  ASSERT_EQ(Run(kSemRun).code, 0);
  Output o = Run("neighbors \"neural network\" -k 3 --output tsv");
  ASSERT_EQ(o.code, 0) << o.err;
  // cos 1, 2/sqrt6 = 0.816497, 1/sqrt2 = 0.707107 (see SemanticPrimitivesInAPlugin).
  EXPECT_EQ(o.out, "deep learn\t1.000000\ndeep learning\t0.816497\ngraph base\t0.707107\n");
  // The index file was written beside the database and is reused.
  Output again = Run("neighbors \"neural network\" -k 3 --output tsv");
  EXPECT_EQ(again.out, o.out);
  EXPECT_EQ(again.err.find("index built"), std::string::npos) << again.err;
  // A corrupt index file is rebuilt, not trusted.
  for (const auto& e : fs::directory_iterator(db_ + ".hnsw")) {
    std::fstream f(e.path(), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(200);
    f.write("garbage!", 8);
  }
  Output rebuilt = Run("neighbors \"neural network\" -k 3 --output tsv");
  EXPECT_EQ(rebuilt.out, o.out);
  EXPECT_NE(rebuilt.err.find("index built"), std::string::npos) << rebuilt.err;
  // Vocabulary search of a word-vector model.
  Output vocab = Run("neighbors \"deep\" -k 2 --vocab --output tsv");
  ASSERT_EQ(vocab.code, 0) << vocab.err;
  // deep (1,1,0): neural and network 1/sqrt2 each (rank order breaks the tie), graph 1/sqrt2 too.
  EXPECT_EQ(vocab.out, "neural\t0.707107\nnetwork\t0.707107\n");
}

TEST_F(EmbedCli, MissingModelAndPrecomputedGaps) {
  Output o = Run(kSemRun);
  // A model name that is not installed is a request that cannot mean anything, as an unknown metric is:
  // a usage error (exit 1), not bad input.
  EXPECT_EQ(o.code, 1);
  EXPECT_NE(o.err.find("model 'tiny' is not installed"), std::string::npos) << o.err;
  // A precomputed table that lacks some of the run's phrases: a clear error with the count.
  ASSERT_EQ(Run("model import tab tests/data/embed/table.jsonl --backend precomputed").code, 0);
  o = Run(std::string(kSemRun) + " --model tab");
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.err.find("phrases are not in the precomputed table"), std::string::npos) << o.err;
}

TEST_F(EmbedCli, PluginWithoutEmbeddingsCannotCallThem) {
  ImportTiny();
  fs::create_directories(dir_ / "p");
  std::ofstream(dir_ / "p" / "nosem.lua") << "-- kplab-api: 1\n"
                                            "return kp.metric{name='nosem', version='1',\n"
                                            "  score=function(doc, p, ctx) return {x = ctx.cosine(doc.refs):get(1,1)} end}\n";
  Output o = Run("eval --dataset tests/data/embed/sem --predictions tests/data/embed/sem/predictions.txt "
                 "--plugins " + (dir_ / "p").string() + " --metrics nosem --no-store");
  EXPECT_EQ(o.code, 3);
  EXPECT_NE(o.err.find("nosem.lua:3:"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("cosine"), std::string::npos) << o.err;
}

// The model's files are opened only when a phrase must be embedded (DeferredEmbedder): a warm
// `cache add` reads no weights, and a changed vector file is still refused the moment it would be
// used — by `cache add` with a new phrase and by a run whose plugin embeds beyond the plan — with
// nothing stored.
TEST_F(EmbedCli, ModelFilesAreReadOnlyToEmbedAndAChangedFileIsStillRefused) {
  ImportTiny();
  const std::string add = "cache add tests/data/embed/sem tests/data/embed/sem/predictions.txt";
  // Surfaces: neural network, deep learning, graph based, learning, quantum chromodynamics (no vector).
  Output o = Run(add);
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(o.out.rfind("5 distinct phrases: 0 cached already, 5 embedded now (1 without a vector)", 0), 0u)
      << o.out;
  const fs::path kvec = fs::path(models_) / "tiny" / "vectors.kvec";
  const auto size = fs::file_size(kvec);
  auto flip_last_byte = [&] {
    std::fstream f(kvec, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(size - 1));
    char c = 0;
    f.read(&c, 1);
    c = static_cast<char>(c ^ 0x40);
    f.seekp(static_cast<std::streamoff>(size - 1));
    f.write(&c, 1);
  };
  flip_last_byte();  // the last float of the matrix: the payload checksum no longer matches
  // Everything cached: answered from the cache, the file is not opened.
  o = Run(add);
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(o.out.rfind("5 distinct phrases: 5 cached already, 0 embedded now (1 without a vector)", 0), 0u)
      << o.out;
  // A new phrase ("graph") must be embedded: the file is opened and refused, nothing is stored.
  fs::create_directories(dir_ / "more");
  std::ofstream(dir_ / "more" / "more_allkeywords.txt") << "neural network;graph\n";
  const std::string add_more = "cache add " + (dir_ / "more").string();
  o = Run(add_more);
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.err.find("tiny/vectors.kvec: corrupt vector file (checksum mismatch"), std::string::npos) << o.err;
  o = Run("cache info");
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.out.find("  tiny" + std::string(20, ' ') + " " + std::string(8, ' ') + "5 phrases"),
            std::string::npos)
      << o.out;
  // A run whose plugin embeds a string beyond the plan ("deep") opens the file too, and fails.
  o = Run(kSemRun);
  EXPECT_NE(o.code, 0);
  EXPECT_NE(o.err.find("checksum mismatch"), std::string::npos) << o.err;
  // Another model's (valid) file in its place: refused as not the manifest's weights.
  std::ofstream(dir_ / "other.txt") << "neural 1 0 0\nnetwork 0 1 0\ngraph 0 0 1\n";
  ASSERT_EQ(Run("model import other " + (dir_ / "other.txt").string() + " --backend wordvec").code, 0);
  fs::copy_file(fs::path(models_) / "other" / "vectors.kvec", kvec, fs::copy_options::overwrite_existing);
  o = Run(add_more);
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.err.find("tiny/vectors.kvec: the vectors do not match the model's fingerprint"), std::string::npos)
      << o.err;
  // The right file back: the new phrase is embedded, the cached ones are not.
  ASSERT_EQ(Run("model import tiny tests/data/embed/tiny.txt --backend wordvec --replace").code, 0);
  o = Run(add_more);
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(o.out.rfind("2 distinct phrases: 1 cached already, 1 embedded now (0 without a vector)", 0), 0u)
      << o.out;
}

}  // namespace
