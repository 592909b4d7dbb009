// kplab/blas.h: the BLAS thread count is the program's choice, never a side effect of loading or
// running a model (a library inside Python must leave numpy's setting alone).
#include "kplab/blas.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <string_view>
#include <vector>

#include "kplab/transformer.h"

namespace kplab {
namespace {

const std::string kBlasModel = std::string(KPLAB_TEST_DATA) + "/transformer/bert-tiny";

// Restores the count the test binary started with, whatever a test set.
class Blas : public ::testing::Test {
 protected:
  void TearDown() override { ASSERT_TRUE(SetBlasThreads(start_).ok()); }
  int start_ = BlasThreads();
};

TEST_F(Blas, SetsTheCountAndRefusesOutOfRange) {
  ASSERT_TRUE(SetBlasThreads(3).ok());
  EXPECT_EQ(BlasThreads(), 3);
  for (int bad : {0, -1, 1025}) {
    const Status s = SetBlasThreads(bad);
    ASSERT_FALSE(s.ok()) << bad;
    EXPECT_EQ(s.error().kind, ErrorKind::kUsage) << bad;
    EXPECT_NE(s.error().message.find("between 1 and 1024"), std::string::npos) << s.error().message;
    EXPECT_EQ(BlasThreads(), 3) << "a refused value changed the count";
  }
}

// The regression: TransformerModel::Load used to set OpenBLAS to one thread for the whole process.
TEST_F(Blas, LoadingAndEmbeddingLeaveTheProcessCountAlone) {
  ASSERT_TRUE(SetBlasThreads(3).ok());
  auto model = TransformerModel::Load(kBlasModel);
  ASSERT_TRUE(model.ok()) << model.error().message;
  EXPECT_EQ(BlasThreads(), 3);
  const std::vector<std::string_view> phrases = {"neural network", "keyphrase generation"};
  std::vector<float> out(phrases.size() * static_cast<std::size_t>((*model)->dims()));
  std::vector<std::uint8_t> has(phrases.size());
  ASSERT_TRUE((*model)->Embed(phrases, out.data(), has.data()).ok());
  EXPECT_EQ(BlasThreads(), 3);
}

// Same phrase vectors with one BLAS thread or several (the products are partitioned, not reduced
// differently, on this build): the count is a speed setting for the library's users.
TEST_F(Blas, OneThreadAndSeveralGiveTheSameVectorsWithinTolerance) {
  auto model = TransformerModel::Load(kBlasModel);
  ASSERT_TRUE(model.ok()) << model.error().message;
  const std::vector<std::string_view> phrases = {"neural network", "deep learning", "keyphrase"};
  const std::size_t dims = static_cast<std::size_t>((*model)->dims());
  std::vector<float> one(phrases.size() * dims), many(phrases.size() * dims);
  std::vector<std::uint8_t> has(phrases.size());
  ASSERT_TRUE(SetBlasThreads(1).ok());
  ASSERT_TRUE((*model)->Embed(phrases, one.data(), has.data()).ok());
  ASSERT_TRUE(SetBlasThreads(4).ok());
  ASSERT_TRUE((*model)->Embed(phrases, many.data(), has.data()).ok());
  for (std::size_t i = 0; i < one.size(); ++i) EXPECT_NEAR(one[i], many[i], 1e-6 * (1 + std::abs(one[i]))) << i;
}

}  // namespace
}  // namespace kplab
