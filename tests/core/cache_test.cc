// The phrase cache and its index on a hand-made model (tests/data/embed/zero.txt):
//   pad (0,0,0)  cat (1,0,0)  dog (.8,.6,0)  fish (0,0,1)
//   cos(cat, dog) = .8, cos(cat, fish) = cos(dog, fish) = 0; "pad" is a zero vector = no vector.
#include <cstdlib>
#include <filesystem>

#include <SQLiteCpp/SQLiteCpp.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kplab/cache.h"
#include "kplab/registry.h"
#include "temp_dir.h"

namespace fs = std::filesystem;
using ::testing::HasSubstr;

namespace kplab {
namespace {

class CacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto m = ImportWordVecText(tmp_.File("models"), "zero", std::string(KPLAB_TEST_DATA) + "/embed/zero.txt",
                               WordVecConfig{});
    ASSERT_TRUE(m.ok()) << m.error().message;
    auto e = LoadEmbedder(*m);
    ASSERT_TRUE(e.ok()) << e.error().message;
    model_ = *e;
    db_ = tmp_.File("c.db");
  }

  CacheStats Get(PhraseCache& c, const std::vector<std::string_view>& p, std::vector<float>* out = nullptr,
                 std::vector<std::uint8_t>* has = nullptr) {
    std::vector<float> o(p.size() * 3);
    std::vector<std::uint8_t> h(p.size());
    auto s = c.Get(*model_, "zero", p, o.data(), h.data());
    EXPECT_TRUE(s.ok()) << s.error().message;
    if (out) *out = o;
    if (has) *has = h;
    return s.ok() ? *s : CacheStats{};
  }

  test::TempDir tmp_;
  std::string db_;
  std::shared_ptr<const Embedder> model_;
};

TEST_F(CacheTest, EmbedsOnceAndSurvivesReopening) {
  {
    auto c = PhraseCache::Open(db_);
    ASSERT_TRUE(c.ok()) << c.error().message;
    CacheStats s = Get(*c, {"cat", "dog", "pad", "unknownword"});
    EXPECT_EQ(s.requested, 4u);
    EXPECT_EQ(s.hits, 0u);
    EXPECT_EQ(s.embedded, 4u);
    EXPECT_EQ(s.no_vector, 2u);  // pad (zero vector) and unknownword (out of vocabulary)
  }
  auto c = PhraseCache::Open(db_);
  ASSERT_TRUE(c.ok());
  std::vector<float> v;
  std::vector<std::uint8_t> h;
  CacheStats s = Get(*c, {"dog", "pad", "fish"}, &v, &h);
  EXPECT_EQ(s.hits, 2u);
  EXPECT_EQ(s.embedded, 1u);
  EXPECT_THAT(v, ::testing::ElementsAre(0.8f, 0.6f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 1.f));
  EXPECT_THAT(h, ::testing::ElementsAre(1, 0, 1));
  EXPECT_EQ(*c->Count(model_->fingerprint()), 5u);
  // Phrases are stored as TEXT (queryable from any SQLite client).
  SQLite::Database db(db_, SQLite::OPEN_READONLY);
  EXPECT_EQ(db.execAndGet("SELECT count(*) FROM phrase_vectors WHERE phrase = 'dog' AND typeof(phrase) = 'text'")
                .getInt(),
            1);
  EXPECT_EQ(db.execAndGet("SELECT count(*) FROM phrase_vectors WHERE vec IS NULL").getInt(), 2);
}

TEST_F(CacheTest, IndexSkipsPhrasesWithoutVectorsAndFollowsTheTable) {
  auto c = PhraseCache::Open(db_);
  ASSERT_TRUE(c.ok());
  Get(*c, {"pad", "cat", "dog"});
  IndexStats st;
  auto index = c->Index(*model_, &st);
  ASSERT_TRUE(index.ok()) << index.error().message;
  EXPECT_TRUE(st.rebuilt);
  EXPECT_EQ((*index)->size(), 2u);  // cat, dog; not pad
  const float cat[] = {1, 0, 0};
  auto hits = (*index)->Search(cat, 2);
  ASSERT_EQ(hits.size(), 2u);
  EXPECT_NEAR(hits[0].second, 1.0, 1e-6);
  EXPECT_NEAR(hits[1].second, 0.8, 1e-6);
  // New phrases are added to the saved index, not rebuilt.
  Get(*c, {"fish"});
  index = c->Index(*model_, &st);
  ASSERT_TRUE(index.ok());
  EXPECT_FALSE(st.rebuilt);
  EXPECT_EQ(st.added, 1u);
  EXPECT_EQ((*index)->size(), 3u);
}

TEST_F(CacheTest, IndexOfADeletedDatabaseIsNotReused) {
  {
    auto c = PhraseCache::Open(db_);
    ASSERT_TRUE(c.ok());
    Get(*c, {"cat", "dog", "fish"});  // labels 1, 2, 3 (in key order)
    ASSERT_TRUE(c->Index(*model_).ok());
  }
  for (const char* s : {"", "-wal", "-shm"}) fs::remove(db_ + s);  // the .hnsw folder stays
  auto c = PhraseCache::Open(db_);
  ASSERT_TRUE(c.ok());
  Get(*c, {"fish", "dog"});  // labels 1, 2 again, other phrases
  Get(*c, {"cat"});          // label 3
  auto index = c->Index(*model_);
  ASSERT_TRUE(index.ok());
  const float cat[] = {1, 0, 0};
  auto hits = (*index)->Search(cat, 1);
  ASSERT_EQ(hits.size(), 1u);
  auto text = c->Phrases(model_->fingerprint(), {hits[0].first});
  ASSERT_TRUE(text.ok());
  EXPECT_EQ((*text)[0], "cat");
}

TEST_F(CacheTest, CorruptCachedVectorIsAnError) {
  {
    auto c = PhraseCache::Open(db_);
    ASSERT_TRUE(c.ok());
    Get(*c, {"cat"});
  }
  {
    SQLite::Database db(db_, SQLite::OPEN_READWRITE);
    db.exec("UPDATE phrase_vectors SET vec = x'0000803f' WHERE phrase = 'cat'");  // 4 bytes, not 12
  }
  auto c = PhraseCache::Open(db_);
  ASSERT_TRUE(c.ok());
  std::vector<float> o(3);
  std::uint8_t h;
  auto s = c->Get(*model_, "zero", {"cat"}, o.data(), &h);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.error().message, HasSubstr("c.db: phrase cache: the cached vector of 'cat' has 4 bytes (expected 12)"));
}

}  // namespace
}  // namespace kplab
