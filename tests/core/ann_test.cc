// AnnIndex and BruteForceSearch. Truth from outside the code: BruteForceSearch against cosines
// worked out by hand, the HNSW index against BruteForceSearch (recall), and the file checks against
// files damaged byte by byte (offsets from the format in kplab/ann.h and hnswlib 0.6.2's
// saveIndex).
#include "kplab/ann.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <random>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "kplab/sha256.h"
#include "temp_dir.h"

namespace kplab {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using Hits = std::vector<std::pair<std::int64_t, float>>;

const std::string kModel = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
const std::string kOtherModel = "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210";
constexpr std::size_t kHeaderSize = 136;  // kplab header; hnswlib's payload follows

using test::TempDir;

// n Gaussian vectors normalized to unit length (uniform on the sphere), row-major.
std::vector<float> RandomUnitRows(std::size_t n, int dims, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  std::vector<float> v(n * dims);
  for (std::size_t i = 0; i < n; ++i) {
    double sum = 0;
    for (int j = 0; j < dims; ++j) {
      v[i * dims + j] = normal(rng);
      sum += double(v[i * dims + j]) * v[i * dims + j];
    }
    for (int j = 0; j < dims; ++j) v[i * dims + j] = float(v[i * dims + j] / std::sqrt(sum));
  }
  return v;
}

std::vector<std::int64_t> Labels(std::size_t n, std::int64_t first) {
  std::vector<std::int64_t> labels(n);
  for (std::size_t i = 0; i < n; ++i) labels[i] = first + std::int64_t(i);
  return labels;
}

std::string ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
}

template <class T>
T Get(const std::string& b, std::size_t off) {
  T v;
  std::memcpy(&v, b.data() + off, sizeof(T));
  return v;
}

template <class T>
void Put(std::string& b, std::size_t off, T v) {
  std::memcpy(b.data() + off, &v, sizeof(T));
}

// Recomputes the header's payload length and SHA-256 (offsets 96 and 104), as a hostile writer
// would, so that the payload checks behind the checksum get exercised.
void Reseal(std::string& b) {
  Put<std::uint64_t>(b, 96, b.size() - kHeaderSize);
  Sha256 sha;
  sha.Update(std::string_view(b).substr(kHeaderSize));
  const auto digest = sha.Finish();
  std::memcpy(b.data() + 104, digest.data(), 32);
}

double Recall(const std::vector<Hits>& got, const std::vector<Hits>& truth) {
  std::size_t hit = 0, total = 0;
  for (std::size_t q = 0; q < truth.size(); ++q) {
    std::set<std::int64_t> want;
    for (const auto& [label, cos] : truth[q]) want.insert(label);
    for (const auto& [label, cos] : got[q]) hit += want.count(label);
    total += want.size();
  }
  return double(hit) / double(total);
}

// ---------------------------------------------------------------- BruteForceSearch

TEST(AnnBruteForceTest, HandComputedCosines) {
  // Unit rows; query (3, 4, 0) normalizes to (0.6, 0.8, 0). Cosines are the dot products:
  const std::vector<float> rows = {
      1,     0,     0,      // label 10: 0.6
      0,     1,     0,      // label 20: 0.8
      0.6f,  0.8f,  0,      // label 30: 0.36 + 0.64 = 1.0
      0.8f,  0.6f,  0,      // label 40: 0.48 + 0.48 = 0.96
      0,     0.6f,  -0.8f,  // label 50: 0.48
      0,     0,     1,      // label 7:  0 (ties with label 5; the lower label comes first)
      0,     0,     -1,     // label 5:  0
      -0.6f, -0.8f, 0,      // label 60: -0.36 - 0.64 = -1.0
  };
  const std::vector<std::int64_t> labels = {10, 20, 30, 40, 50, 7, 5, 60};
  const float query[3] = {3, 4, 0};

  const Hits top3 = BruteForceSearch(rows.data(), labels.data(), 8, 3, query, 3);
  ASSERT_EQ(top3.size(), 3u);
  const std::vector<std::pair<std::int64_t, float>> want = {{30, 1.0f}, {40, 0.96f}, {20, 0.8f},
                                                            {10, 0.6f}, {50, 0.48f}, {5, 0.0f},
                                                            {7, 0.0f},  {60, -1.0f}};
  const Hits all = BruteForceSearch(rows.data(), labels.data(), 8, 3, query, 100);
  ASSERT_EQ(all.size(), 8u);
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(all[i].first, want[i].first) << "rank " << i;
    EXPECT_NEAR(all[i].second, want[i].second, 1e-6) << "rank " << i;
    if (i < 3) {
      EXPECT_EQ(top3[i], all[i]);
    }
  }

  const float zero[3] = {0, 0, 0};
  const float nan[3] = {std::numeric_limits<float>::quiet_NaN(), 0, 0};
  EXPECT_TRUE(BruteForceSearch(rows.data(), labels.data(), 8, 3, zero, 3).empty());
  EXPECT_TRUE(BruteForceSearch(rows.data(), labels.data(), 8, 3, nan, 3).empty());
  EXPECT_TRUE(BruteForceSearch(rows.data(), labels.data(), 8, 3, query, 0).empty());
}

// ---------------------------------------------------------------- AnnIndex in memory

TEST(AnnIndexTest, SmallIndexMatchesHandComputedCosines) {
  // The rows above, scaled (Add normalizes): every search is exact on 8 points.
  auto index = AnnIndex::Create(3, kModel);
  EXPECT_EQ(index.size(), 0u);
  EXPECT_EQ(index.max_label(), std::numeric_limits<std::int64_t>::min());
  const float query[3] = {3, 4, 0};
  EXPECT_TRUE(index.Search(query, 5).empty());

  const std::vector<std::pair<std::int64_t, std::vector<float>>> rows = {
      {10, {2, 0, 0}},  {20, {0, 5, 0}},   {30, {3, 4, 0}}, {40, {4, 3, 0}},
      {50, {0, 3, -4}}, {7, {0, 0, 0.5f}}, {5, {0, 0, -9}}, {60, {-3, -4, 0}}};
  for (const auto& [label, v] : rows) ASSERT_TRUE(index.Add(label, v.data()).ok());
  EXPECT_EQ(index.size(), 8u);
  EXPECT_EQ(index.dims(), 3);
  EXPECT_EQ(index.fingerprint(), kModel);
  EXPECT_EQ(index.max_label(), 60);

  const Hits hits = index.Search(query, 4);
  ASSERT_EQ(hits.size(), 4u);
  EXPECT_EQ(hits[0].first, 30);
  EXPECT_NEAR(hits[0].second, 1.0, 1e-6);
  EXPECT_EQ(hits[1].first, 40);
  EXPECT_NEAR(hits[1].second, 0.96, 1e-6);
  EXPECT_EQ(hits[2].first, 20);
  EXPECT_EQ(hits[3].first, 10);
  EXPECT_EQ(index.Search(query, 100).size(), 8u);
  EXPECT_TRUE(index.Search(query, 0).empty());
  const float zero[3] = {0, 0, 0};
  EXPECT_TRUE(index.Search(zero, 3).empty());
}

TEST(AnnIndexTest, RejectsBadVectorsAndDuplicateLabels) {
  auto index = AnnIndex::Create(3, kModel);
  const float ok[3] = {1, 2, 3};
  const float zero[3] = {0, 0, 0};
  const float inf[3] = {1, std::numeric_limits<float>::infinity(), 0};
  const float nan[3] = {1, std::numeric_limits<float>::quiet_NaN(), 0};
  ASSERT_TRUE(index.Add(1, ok).ok());
  for (const float* bad : {zero, inf, nan}) {
    const Status s = index.Add(2, bad);
    EXPECT_FALSE(s.ok());
    EXPECT_THAT(s.message(), HasSubstr("label 2 is zero or not finite"));
  }
  EXPECT_THAT(index.Add(1, ok).message(), HasSubstr("label 1 is already in the index"));

  // A batch is checked before anything is added.
  const std::vector<float> rows = {1, 0, 0, 0, 1, 0, 0, 0, 0};
  const std::vector<std::int64_t> labels = {3, 4, 5};
  EXPECT_THAT(index.AddBatch(labels, rows.data()).message(), HasSubstr("(row 2)"));
  const std::vector<std::int64_t> dup = {3, 3};
  EXPECT_THAT(index.AddBatch(dup, rows.data()).message(), HasSubstr("label 3 (row 1)"));
  EXPECT_EQ(index.size(), 1u);
  EXPECT_EQ(index.max_label(), 1);
  // Large finite components do not overflow the norm.
  const float big[3] = {3e38f, 3e38f, 0};
  EXPECT_TRUE(index.Add(9, big).ok());
}

TEST(AnnIndexTest, RecallAt10AgainstBruteForce) {
  // 20,000 random 100-d unit vectors (the hard case for HNSW: no cluster structure) and 200
  // random queries; recall@10 of the default options must be >= 0.99.
  constexpr int kDims = 100;
  constexpr std::size_t kN = 20000, kQueries = 200;
  const auto rows = RandomUnitRows(kN, kDims, 42);
  const auto queries = RandomUnitRows(kQueries, kDims, 43);
  const auto labels = Labels(kN, 1);

  const auto t0 = std::chrono::steady_clock::now();
  auto index = AnnIndex::Create(kDims, kModel);
  ASSERT_TRUE(index.AddBatch(labels, rows.data(), 2).ok());
  const auto t1 = std::chrono::steady_clock::now();
  ASSERT_EQ(index.size(), kN);
  EXPECT_EQ(index.max_label(), std::int64_t(kN));

  std::vector<Hits> truth, got;
  for (std::size_t q = 0; q < kQueries; ++q) {
    truth.push_back(
        BruteForceSearch(rows.data(), labels.data(), kN, kDims, &queries[q * kDims], 10));
  }
  const auto t2 = std::chrono::steady_clock::now();
  for (std::size_t q = 0; q < kQueries; ++q) got.push_back(index.Search(&queries[q * kDims], 10));
  const auto t3 = std::chrono::steady_clock::now();

  const double recall = Recall(got, truth);
  const auto ms = [](auto a, auto b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
  };
  std::cout << "[ann] n=" << kN << " d=" << kDims << " build(2 threads)=" << ms(t0, t1)
            << " ms, brute force=" << ms(t1, t2) << " ms, hnsw=" << ms(t2, t3) << " ms for "
            << kQueries << " queries, recall@10=" << recall << "\n";
  EXPECT_GE(recall, 0.99);
  // Cosines agree with the exact ones where the labels agree.
  for (std::size_t q = 0; q < kQueries; ++q) {
    ASSERT_EQ(got[q].size(), 10u);
    for (std::size_t r = 0; r + 1 < got[q].size(); ++r) {
      EXPECT_GE(got[q][r].second, got[q][r + 1].second);
    }
    if (got[q][0].first == truth[q][0].first) {
      EXPECT_NEAR(got[q][0].second, truth[q][0].second, 1e-5);
    }
  }
  // A vector in the index finds itself with cosine 1.
  const Hits self = index.Search(&rows[1234 * kDims], 1);
  ASSERT_EQ(self.size(), 1u);
  EXPECT_EQ(self[0].first, 1235);
  EXPECT_NEAR(self[0].second, 1.0, 1e-5);
}

// ---------------------------------------------------------------- Save / Load

TEST(AnnIndexTest, SaveLoadRoundTripThenGrow) {
  TempDir dir;
  constexpr int kDims = 32;
  constexpr std::size_t kN = 3000;
  const auto rows = RandomUnitRows(kN + 3000, kDims, 7);
  const auto labels = Labels(kN + 3000, 100);  // first 3000 now, the rest after loading
  const auto queries = RandomUnitRows(50, kDims, 8);

  auto index = AnnIndex::Create(kDims, kModel);
  ASSERT_TRUE(index.AddBatch(std::span(labels).first(kN), rows.data()).ok());
  const std::string path = dir.File("phrases.kann");
  ASSERT_TRUE(index.Save(path).ok());
  EXPECT_FALSE(fs::exists(path + ".tmp"));
  for (const auto& entry : fs::directory_iterator(dir.File(""))) {
    EXPECT_EQ(entry.path().filename(), "phrases.kann");  // no temp file left behind
  }

  auto loaded = AnnIndex::Load(path, kDims, kModel);
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  EXPECT_EQ(loaded->size(), kN);
  EXPECT_EQ(loaded->dims(), kDims);
  EXPECT_EQ(loaded->fingerprint(), kModel);
  EXPECT_EQ(loaded->max_label(), 100 + std::int64_t(kN) - 1);
  for (std::size_t q = 0; q < 50; ++q) {
    EXPECT_EQ(loaded->Search(&queries[q * kDims], 10), index.Search(&queries[q * kDims], 10));
  }
  // Saving the loaded index gives the same bytes.
  ASSERT_TRUE(loaded->Save(dir.File("again.kann")).ok());
  EXPECT_EQ(ReadBytes(dir.File("again.kann")), ReadBytes(path));

  // Grow past the loaded capacity, one by one and in a batch.
  for (std::size_t i = kN; i < kN + 1000; ++i) {
    ASSERT_TRUE(loaded->Add(labels[i], &rows[i * kDims]).ok());
  }
  ASSERT_TRUE(
      loaded->AddBatch(std::span(labels).subspan(kN + 1000), &rows[(kN + 1000) * kDims]).ok());
  EXPECT_EQ(loaded->size(), kN + 3000);
  EXPECT_EQ(loaded->max_label(), labels.back());
  for (std::size_t i = 0; i < kN + 3000; i += 97) {
    const Hits self = loaded->Search(&rows[i * kDims], 1);
    ASSERT_EQ(self.size(), 1u);
    EXPECT_EQ(self[0].first, labels[i]);
  }
  // Overwrite the first file with the grown index and read it back.
  ASSERT_TRUE(loaded->Save(path).ok());
  auto reloaded = AnnIndex::Load(path, kDims, kModel);
  ASSERT_TRUE(reloaded.ok()) << reloaded.error().message;
  EXPECT_EQ(reloaded->size(), kN + 3000);
  EXPECT_EQ(reloaded->Search(&queries[0], 10), loaded->Search(&queries[0], 10));
}

TEST(AnnIndexTest, EmptyIndexRoundTrip) {
  TempDir dir;
  const std::string path = dir.File("empty.kann");
  ASSERT_TRUE(AnnIndex::Create(4, kModel).Save(path).ok());
  EXPECT_EQ(fs::file_size(path), kHeaderSize + 96);  // hnswlib header only
  auto loaded = AnnIndex::Load(path, 4, kModel);
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  EXPECT_EQ(loaded->size(), 0u);
  EXPECT_EQ(loaded->max_label(), std::numeric_limits<std::int64_t>::min());
  const float v[4] = {1, 2, 3, 4};
  EXPECT_TRUE(loaded->Search(v, 3).empty());
  ASSERT_TRUE(loaded->Add(-5, v).ok());  // negative rowids are labels too
  const Hits hits = loaded->Search(v, 3);
  ASSERT_EQ(hits.size(), 1u);
  EXPECT_EQ(hits[0].first, -5);
  EXPECT_EQ(loaded->max_label(), -5);
}

TEST(AnnIndexTest, SaveErrors) {
  TempDir dir;
  EXPECT_THAT(AnnIndex::Create(4, "not-hex").Save(dir.File("x.kann")).message(),
              HasSubstr("fingerprint 'not-hex' is not 64 lower-case hex digits"));
  const std::string in_missing_dir = dir.File("no/such/dir/x.kann");
  const Status s = AnnIndex::Create(4, kModel).Save(in_missing_dir);
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr(in_missing_dir + ": cannot write ann index"));
}

// ---------------------------------------------------------------- damaged files

class AnnFileTest : public ::testing::Test {
 protected:
  static constexpr int kDims = 16;
  static constexpr std::size_t kN = 400;

  void SetUp() override {
    rows_ = RandomUnitRows(kN, kDims, 11);
    auto index = AnnIndex::Create(kDims, kModel);
    // One by one, so that internal id i holds label 1000 + i (offsets below rely on it).
    for (std::size_t i = 0; i < kN; ++i) ASSERT_TRUE(index.Add(1000 + i, &rows_[i * kDims]).ok());
    good_ = dir_.File("good.kann");
    ASSERT_TRUE(index.Save(good_).ok());
    bytes_ = ReadBytes(good_);
    ASSERT_TRUE(AnnIndex::Load(good_, kDims, kModel).ok());
  }

  // Writes bytes to a new file and returns Load's error (failing the test if it loads).
  std::string LoadError(const std::string& bytes, int dims = kDims,
                        const std::string& model = kModel) {
    path_ = dir_.File("bad" + std::to_string(++files_) + ".kann");
    WriteBytes(path_, bytes);
    auto r = AnnIndex::Load(path_, dims, model);
    EXPECT_FALSE(r.ok()) << "loaded without error";
    if (r.ok()) return "";
    EXPECT_THAT(r.error().message, HasSubstr(path_ + ": "));
    return r.error().message;
  }

  // Payload offsets (hnswlib 0.6.2 saveIndex): 96 bytes of fields, then count elements of
  // size_per_element bytes: [u32 link count, u32 ids x 2M][dims floats][i64 label].
  std::size_t Payload(std::size_t off) const { return kHeaderSize + off; }
  std::size_t Element(std::size_t i) const {
    return Payload(96) + i * Get<std::uint64_t>(bytes_, Payload(24));
  }
  std::size_t LabelOffset() const { return Get<std::uint64_t>(bytes_, Payload(32)); }

  TempDir dir_;
  std::vector<float> rows_;
  std::string good_, bytes_, path_;
  int files_ = 0;
};

TEST_F(AnnFileTest, MissingEmptyAndGarbageFiles) {
  const std::string missing = dir_.File("missing.kann");
  auto r = AnnIndex::Load(missing, kDims, kModel);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.error().message, HasSubstr(missing + ": no such file"));

  EXPECT_THAT(LoadError(""), HasSubstr("empty file (expected a kplab ann index"));

  std::mt19937 rng(5);
  for (std::size_t n : {1, 7, 8, 135, 136, 5000}) {
    std::string garbage(n, '\0');
    for (char& c : garbage) c = char(rng());
    EXPECT_THAT(LoadError(garbage), HasSubstr("not a kplab ann index (expected the magic"));
  }
  // A directory is not an index.
  auto d = AnnIndex::Load(dir_.File(""), kDims, kModel);
  ASSERT_FALSE(d.ok());
}

TEST_F(AnnFileTest, WrongMagicAndVersion) {
  std::string b = bytes_;
  b[3] = 'X';
  EXPECT_THAT(LoadError(b), HasSubstr("not a kplab ann index (expected the magic \"KPLBHNSW\""));
  // A bare hnswlib file (what saveIndex writes) has no kplab header.
  EXPECT_THAT(LoadError(bytes_.substr(kHeaderSize)), HasSubstr("not a kplab ann index"));
  b = bytes_;
  Put<std::uint32_t>(b, 8, 2);
  EXPECT_THAT(LoadError(b), HasSubstr("unsupported ann index format version 2 (expected 1"));
}

TEST_F(AnnFileTest, WrongDimsOrModel) {
  EXPECT_THAT(LoadError(bytes_, kDims + 1),
              HasSubstr("index has 16 dimensions, expected 17 (rebuild the index)"));
  EXPECT_THAT(LoadError(bytes_, kDims, kOtherModel),
              HasSubstr("index was built for model " + kModel + ", expected " + kOtherModel));
  std::string b = bytes_;
  b[16] = 'Z';
  EXPECT_THAT(LoadError(b), HasSubstr("corrupt ann index header: model fingerprint"));
}

TEST_F(AnnFileTest, Truncated) {
  for (std::size_t n : {8, 100, 135}) {
    EXPECT_THAT(LoadError(bytes_.substr(0, n)),
                HasSubstr("truncated ann index: " + std::to_string(n) + " bytes"));
  }
  for (std::size_t n : {kHeaderSize, kHeaderSize + 50, bytes_.size() / 2, bytes_.size() - 1}) {
    EXPECT_THAT(LoadError(bytes_.substr(0, n)), HasSubstr("truncated ann index"));
  }
  EXPECT_THAT(LoadError(bytes_ + "xyz"), HasSubstr("3 unexpected bytes after the payload"));
}

TEST_F(AnnFileTest, FlippedPayloadByteFailsTheChecksum) {
  for (std::size_t off :
       {kHeaderSize, kHeaderSize + 20, Element(0) + 4, Element(kN / 2) + 50, bytes_.size() - 1}) {
    std::string b = bytes_;
    b[off] ^= 0x10;
    EXPECT_THAT(LoadError(b), HasSubstr("checksum mismatch")) << "offset " << off;
  }
  std::string b = bytes_;
  b[104] ^= 1;  // the stored digest itself
  EXPECT_THAT(LoadError(b), HasSubstr("checksum mismatch"));
}

TEST_F(AnnFileTest, HostilePayloadWithValidChecksum) {
  // Each change is resealed with a correct length and SHA-256, so only the structural checks stand
  // between the bytes and hnswlib's loader, which trusts them.
  auto expect_corrupt = [&](std::string b, const std::string& what) {
    Reseal(b);
    EXPECT_THAT(LoadError(b), HasSubstr("corrupt ann index payload: " + what));
  };
  std::string b = bytes_;
  Put<std::uint32_t>(b, Element(5) + 4, std::uint32_t(kN + 3));  // first level-0 neighbour
  expect_corrupt(b, "element 5 links to element 403 of 400");
  b = bytes_;
  Put<std::uint32_t>(b, Element(5), 1000);  // level-0 link count
  expect_corrupt(b, "element 5 has 1000 level-0 links");
  b = bytes_;
  b[Element(9) + 2] = 1;  // hnswlib's "deleted" mark
  expect_corrupt(b, "element 9 has 65");
  b = bytes_;
  Put<std::uint64_t>(b, Payload(24), Get<std::uint64_t>(b, Payload(24)) + 4);  // size_per_element
  expect_corrupt(b, "element layout");
  b = bytes_;
  Put<std::uint32_t>(b, Payload(52), std::uint32_t(kN));  // entry point
  expect_corrupt(b, "entry point 400");
  b = bytes_;
  Put<std::int32_t>(b, Payload(48), 40);  // top level
  expect_corrupt(b, "entry point");
  b = bytes_;
  Put<std::uint64_t>(b, Payload(72), 1u << 20);  // M
  expect_corrupt(b, "graph degree");
  b = bytes_;
  Put<double>(b, Payload(80), 1e300);  // level multiplier
  expect_corrupt(b, "level multiplier");
  b = bytes_;
  Put<std::uint64_t>(b, Payload(8), 3);  // capacity below count
  expect_corrupt(b, "capacity 3");
  b = bytes_;
  Put<std::uint64_t>(b, Payload(16), 1u << 30);  // element count
  expect_corrupt(b, "hnswlib holds 1073741824 elements, header says 400");
  b = bytes_;
  Put<std::int64_t>(b, Element(1) + LabelOffset(), 1000);  // label 1001 -> 1000, a duplicate
  expect_corrupt(b, "399 distinct labels for 400 elements");
  b = bytes_;
  Put<std::int64_t>(b, Element(7) + LabelOffset(), 5000);
  expect_corrupt(b, "largest label is 5000, header says 1399");
  b = bytes_.substr(0, bytes_.size() - 4);
  expect_corrupt(b, "");
  b = bytes_ + std::string(12, '\0');
  expect_corrupt(b, "");
  // Header fields outside the checksum are checked against the payload.
  b = bytes_;
  Put<std::uint64_t>(b, 80, kN + 1);
  expect_corrupt(b, "hnswlib holds 400 elements, header says 401");
  b = bytes_;
  Put<std::int64_t>(b, 88, 7);
  expect_corrupt(b, "largest label is 1399, header says 7");
  // The upper-level links of the first element that has some.
  std::size_t pos = Element(kN);
  std::size_t upper = 0, element = 0;
  for (; element < kN; ++element) {
    const auto size = Get<std::uint32_t>(bytes_, pos);
    if (size > 0) {
      upper = pos + 4;
      break;
    }
    pos += 4 + size;
  }
  ASSERT_GT(upper, 0u) << "no element above level 0";
  b = bytes_;
  Put<std::uint32_t>(b, upper, 17);  // links on level 1 (at most M = 16)
  expect_corrupt(b, "element " + std::to_string(element) + " has 17 links on level 1");
  b = bytes_;
  Put<std::uint32_t>(b, upper - 4, 7);  // byte size not a multiple of a level's size
  expect_corrupt(b, "element " + std::to_string(element) + " has 7 bytes of upper-level links");
  // Random payload bytes of the right length.
  b = bytes_;
  std::mt19937 rng(9);
  for (std::size_t i = kHeaderSize; i < b.size(); ++i) b[i] = char(rng());
  expect_corrupt(b, "");
}

TEST_F(AnnFileTest, RandomDamageNeverCrashes) {
  // Random bytes changed anywhere, resealed or not: Load either fails with a message naming the
  // file or returns an index that can be searched and grown.
  std::mt19937 rng(2024);
  int loaded = 0;
  for (int trial = 0; trial < 300; ++trial) {
    std::string b = bytes_;
    const int changes = 1 + int(rng() % 4);
    for (int c = 0; c < changes; ++c) {
      // Mostly the first kilobytes (header fields, links), sometimes anywhere.
      const std::size_t span = rng() % 2 ? 4096 : b.size();
      b[rng() % span] = char(rng());
    }
    if (trial % 3 != 0) Reseal(b);
    const std::string path = dir_.File("fuzz.kann");
    WriteBytes(path, b);
    auto r = AnnIndex::Load(path, kDims, kModel);
    if (!r.ok()) {
      EXPECT_THAT(r.error().message, HasSubstr(path + ": "));
      continue;
    }
    ++loaded;
    for (int q = 0; q < 5; ++q) r->Search(&rows_[q * kDims], 10);
    const float v[kDims] = {1};
    EXPECT_TRUE(r->Add(-1, v).ok());
  }
  std::cout << "[ann] random damage: " << loaded << " of 300 files still loaded\n";
}

}  // namespace
}  // namespace kplab
