// Vector files, word-vector pooling, phrase tables and the model registry on small hand-made models
// (tests/data/embed), with every expected value worked out by hand in the comments.
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kplab/registry.h"
#include "kplab/vecfile.h"
#include "kplab/wordvec.h"
#include "temp_dir.h"

namespace fs = std::filesystem;
using ::testing::HasSubstr;

namespace kplab {
namespace {

const std::string kEmbedData = std::string(KPLAB_TEST_DATA) + "/embed/";

using test::TempDir;

std::vector<float> Embed1(const Embedder& e, std::string_view phrase, bool* has = nullptr) {
  std::vector<float> v(e.dims());
  std::uint8_t h = 9;
  Status st = e.Embed({phrase}, v.data(), &h);
  EXPECT_TRUE(st.ok()) << st.message();
  if (has) *has = h != 0;
  return v;
}

TEST(VecFileTest, RoundTripAndLookup) {
  TempDir dir;
  VecFileWriter w(2, VecKind::kWords);
  const float a[] = {1, 2}, b[] = {-3.5f, 0}, c[] = {7, 8};
  ASSERT_TRUE(w.Add("alpha", a, "x").ok());
  ASSERT_TRUE(w.Add("béta", b, "x").ok());
  ASSERT_TRUE(w.Add("alpha", c, "x").ok());  // repeated word: first kept, counted
  EXPECT_EQ(w.size(), 2u);
  EXPECT_EQ(w.duplicates(), 1u);
  auto sha = w.Write(dir.File("v.kvec"));
  ASSERT_TRUE(sha.ok()) << sha.error().message;
  auto vf = VecFile::Open(dir.File("v.kvec"));
  ASSERT_TRUE(vf.ok()) << vf.error().message;
  EXPECT_EQ(vf->size(), 2u);
  EXPECT_EQ(vf->dims(), 2);
  EXPECT_EQ(vf->weights_sha256(), *sha);
  EXPECT_EQ(vf->Find("alpha"), 0);
  EXPECT_EQ(vf->Find("béta"), 1);
  EXPECT_EQ(vf->Find("gamma"), -1);
  EXPECT_EQ(vf->str(1), "béta");
  EXPECT_EQ(vf->row(0)[1], 2.0f);
  EXPECT_EQ(vf->row(1)[0], -3.5f);
  EXPECT_TRUE(vf->VerifySha256().ok());
}

TEST(VecFileTest, NonFiniteValueIsAnError) {
  VecFileWriter w(2, VecKind::kWords);
  const float bad[] = {1, std::nanf("")};
  Status st = w.Add("x", bad, "f.txt:3");
  ASSERT_FALSE(st.ok());
  EXPECT_THAT(st.message(), HasSubstr("f.txt:3: value 2 of the vector for 'x' is not finite"));
}

TEST(VecFileTest, CorruptFilesAreErrorsNamingTheFile) {
  TempDir dir;
  VecFileWriter w(3, VecKind::kWords);
  const float a[] = {1, 2, 3};
  ASSERT_TRUE(w.Add("alpha", a, "x").ok());
  const std::string path = dir.File("v.kvec");
  ASSERT_TRUE(w.Write(path).ok());
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  auto write = [&](const std::string& name, const std::string& content) {
    std::ofstream(dir.File(name), std::ios::binary) << content;
    return dir.File(name);
  };
  // Truncated.
  auto r = VecFile::Open(write("trunc.kvec", bytes.substr(0, bytes.size() - 4)));
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.error().message, HasSubstr("trunc.kvec: truncated or padded"));
  // Shorter than a header.
  r = VecFile::Open(write("tiny.kvec", bytes.substr(0, 100)));
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.error().message, HasSubstr("tiny.kvec: truncated vector file"));
  // A flipped byte in the matrix.
  std::string flipped = bytes;
  flipped[flipped.size() - 2] ^= 0x40;
  r = VecFile::Open(write("flip.kvec", flipped));
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.error().message, HasSubstr("flip.kvec: corrupt vector file (checksum mismatch"));
  // Wrong magic.
  std::string magic = bytes;
  magic[0] = 'X';
  r = VecFile::Open(write("magic.kvec", magic));
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.error().message, HasSubstr("magic.kvec: not a kplab vector file"));
  // Garbage and a missing file.
  r = VecFile::Open(write("garbage.kvec", std::string(4096, '\x7f')));
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.error().message, HasSubstr("garbage.kvec"));
  r = VecFile::Open(dir.File("missing.kvec"));
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.error().message, HasSubstr("missing.kvec: cannot open"));
}

TEST(WordVecTextTest, ImportsWithAndWithoutHeader) {
  TempDir dir;
  auto s = ConvertWordVecText(kEmbedData + "tiny.txt", dir.File("t.kvec"));
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(s->rows, 7u);
  EXPECT_EQ(s->dims, 3);
  auto h = ConvertWordVecText(kEmbedData + "header.txt", dir.File("h.kvec"));
  ASSERT_TRUE(h.ok()) << h.error().message;
  EXPECT_EQ(h->rows, 3u);
  EXPECT_EQ(h->dims, 2);
  auto vf = VecFile::Open(dir.File("h.kvec"));
  ASSERT_TRUE(vf.ok());
  EXPECT_EQ(vf->row(vf->Find("gamma"))[1], -1.0f);
}

TEST(WordVecTextTest, BadFilesNameFileAndLine) {
  TempDir dir;
  auto r = ConvertWordVecText(kEmbedData + "short_row.txt", dir.File("x.kvec"));
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.error().message, HasSubstr("short_row.txt:2: 2 numbers (expected 3)"));
  r = ConvertWordVecText(kEmbedData + "nan.txt", dir.File("x.kvec"));
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.error().message, HasSubstr("nan.txt:2: value 2 of the vector for 'network' is not finite"));
  r = ConvertWordVecText(kEmbedData + "truncated.txt", dir.File("x.kvec"));
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.error().message, HasSubstr("header says 5 rows but the file has 2 (truncated?)"));
  EXPECT_FALSE(fs::exists(dir.File("x.kvec")));
}

class WordVecPoolingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(ConvertWordVecText(kEmbedData + "tiny.txt", dir_.File("t.kvec")).ok());
    auto vf = VecFile::Open(dir_.File("t.kvec"));
    ASSERT_TRUE(vf.ok());
    vf_ = std::make_shared<const VecFile>(std::move(*vf));
  }
  TempDir dir_;
  std::shared_ptr<const VecFile> vf_;
};

TEST_F(WordVecPoolingTest, MeanOfInVocabularyWords) {
  auto e = MakeWordVecEmbedder(vf_, WordVecConfig{}, "fp");
  // neural (1,0,0) and network (0,1,0): mean (0.5, 0.5, 0). Upper case is folded (GloVe 6B is uncased).
  EXPECT_THAT(Embed1(*e, "Neural Network"), ::testing::ElementsAre(0.5f, 0.5f, 0.0f));
  // "quantum" is out of vocabulary and dropped: deep (1,1,0) + learning (0,0,1) -> (0.5, 0.5, 0.5).
  EXPECT_THAT(Embed1(*e, "quantum deep learning"), ::testing::ElementsAre(0.5f, 0.5f, 0.5f));
  // A hyphenated word in the vocabulary is used whole: state-of-the-art = (3, 0, 4).
  EXPECT_THAT(Embed1(*e, "state-of-the-art"), ::testing::ElementsAre(3.0f, 0.0f, 4.0f));
  // One that is not falls back to its parts: graph (0,2,0), based (0,0,2) -> (0, 1, 1).
  EXPECT_THAT(Embed1(*e, "graph-based"), ::testing::ElementsAre(0.0f, 1.0f, 1.0f));
  EXPECT_THAT(Embed1(*e, "graph/based"), ::testing::ElementsAre(0.0f, 1.0f, 1.0f));
  // Every word out of vocabulary: no vector, zeros.
  bool has = true;
  EXPECT_THAT(Embed1(*e, "quantum chromodynamics", &has), ::testing::ElementsAre(0.0f, 0.0f, 0.0f));
  EXPECT_FALSE(has);
  Embed1(*e, "", &has);
  EXPECT_FALSE(has);
}

TEST_F(WordVecPoolingTest, SifWeightsByZipfRank) {
  // Vocabulary of V = 7 words, H_7 = 1 + 1/2 + ... + 1/7 = 363/140. Ranks: neural 0, network 1.
  // p(neural) = 1/(1 * H_7) = 140/363, p(network) = 1/(2 * H_7) = 70/363. With a = 1:
  // w(neural) = 1/(1 + 140/363) = 363/503, w(network) = 1/(1 + 70/363) = 363/433.
  // Weighted mean: (w1 * (1,0,0) + w2 * (0,1,0)) / (w1 + w2) = (433, 503, 0) / 936.
  WordVecConfig cfg;
  cfg.sif_a = 1;
  auto e = MakeWordVecEmbedder(vf_, cfg, "fp");
  auto v = Embed1(*e, "neural network");
  EXPECT_NEAR(v[0], 433.0 / 936.0, 1e-6);
  EXPECT_NEAR(v[1], 503.0 / 936.0, 1e-6);
  EXPECT_EQ(v[2], 0.0f);
}

TEST(PhraseTableTest, JsonlTsvAndNpyAgree) {
  TempDir dir;
  auto j = ConvertPhraseTable(kEmbedData + "table.jsonl", "jsonl", "", dir.File("j.kvec"));
  ASSERT_TRUE(j.ok()) << j.error().message;
  auto t = ConvertPhraseTable(kEmbedData + "table.tsv", "", "", dir.File("t.kvec"));
  ASSERT_TRUE(t.ok()) << t.error().message;
  // The same table as a version-1 .npy file, written byte by byte: magic, version 1.0, header length
  // (little-endian u16), the header dict padded with spaces to a multiple of 64 bytes with the preamble
  // and ending in '\n', then 3 x 3 little-endian float32 values.
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 3), }";
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string npy = std::string("\x93NUMPY\x01\x00", 8);
  npy += static_cast<char>(header.size() & 0xff);
  npy += static_cast<char>(header.size() >> 8);
  npy += header;
  for (float x : {1.f, 2.f, 2.f, 0.f, 3.f, 4.f, 0.f, 0.f, 1.f}) npy.append(reinterpret_cast<const char*>(&x), 4);
  std::ofstream(dir.File("t.npy"), std::ios::binary) << npy;
  std::ofstream(dir.File("phrases.txt")) << "neural network\ndeep learning\ngraph\n";
  auto n = ConvertPhraseTable(dir.File("t.npy"), "npy", dir.File("phrases.txt"), dir.File("n.kvec"));
  ASSERT_TRUE(n.ok()) << n.error().message;
  EXPECT_EQ(j->weights_sha256, t->weights_sha256);
  EXPECT_EQ(j->weights_sha256, n->weights_sha256);

  auto vf = VecFile::Open(dir.File("j.kvec"));
  ASSERT_TRUE(vf.ok());
  auto e = MakePrecomputedEmbedder(std::make_shared<const VecFile>(std::move(*vf)), "fp");
  EXPECT_THAT(Embed1(*e, "deep learning"), ::testing::ElementsAre(0.f, 3.f, 4.f));
  // Phrases are looked up exactly as given; missing ones make the batch an error that counts them.
  std::vector<float> out(3 * 3);
  std::vector<std::uint8_t> has(3);
  Status st = e->Embed({"graph", "Graph", "knowledge graph"}, out.data(), has.data());
  ASSERT_FALSE(st.ok());
  EXPECT_THAT(st.message(), HasSubstr("2 of 3 phrases are not in the precomputed table (first: 'Graph', "
                                      "'knowledge graph')"));
}

TEST(PhraseTableTest, BadTablesNameFileAndLine) {
  TempDir dir;
  auto r = ConvertPhraseTable(kEmbedData + "table_bad_dims.jsonl", "jsonl", "", dir.File("x.kvec"));
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.error().message, HasSubstr("table_bad_dims.jsonl:2: vector of 3 values (expected 2"));
  std::ofstream(dir.File("p.txt")) << "a\n";
  std::ofstream(dir.File("bad.npy"), std::ios::binary) << "NOTNUMPY";
  r = ConvertPhraseTable(dir.File("bad.npy"), "npy", dir.File("p.txt"), dir.File("x.kvec"));
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.error().message, HasSubstr("bad.npy: not a .npy file"));
  r = ConvertPhraseTable(dir.File("bad.npy"), "npy", "", dir.File("x.kvec"));
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.error().message, HasSubstr("needs --phrases"));
  // A hostile header (version 2: 32-bit length) is refused before it is parsed, as numpy does.
  std::string big = std::string("\x93NUMPY\x02\x00", 8);
  const std::uint32_t len = 50000;
  big.append(reinterpret_cast<const char*>(&len), 4);
  big += "{'descr': '" + std::string(len - 13, 'x') + "'}";  // exactly len bytes
  std::ofstream(dir.File("big.npy"), std::ios::binary) << big;
  r = ConvertPhraseTable(dir.File("big.npy"), "npy", dir.File("p.txt"), dir.File("x.kvec"));
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.error().message, HasSubstr("big.npy: .npy header of 50000 bytes (expected at most 10000)"));
}

TEST(RegistryTest, ImportListLoadRemove) {
  TempDir dir;
  const std::string models = dir.File("models");
  auto m = ImportWordVecText(models, "tiny", kEmbedData + "tiny.txt", WordVecConfig{});
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(m->backend, "wordvec");
  EXPECT_EQ(m->dims, 3);
  EXPECT_EQ(m->fingerprint, ModelFingerprint("wordvec", m->weights_sha256, m->config_json));
  // The same vectors pooled differently are a different model.
  WordVecConfig sif;
  sif.sif_a = 0.001;
  auto m2 = ImportWordVecText(models, "tiny-sif", kEmbedData + "tiny.txt", sif);
  ASSERT_TRUE(m2.ok());
  EXPECT_EQ(m2->weights_sha256, m->weights_sha256);
  EXPECT_NE(m2->fingerprint, m->fingerprint);
  // A second import under a taken name is refused.
  auto again = ImportWordVecText(models, "tiny", kEmbedData + "tiny.txt", WordVecConfig{});
  ASSERT_FALSE(again.ok());
  EXPECT_THAT(again.error().message, HasSubstr("already installed"));

  // A model whose name ends in ".old" is not mistaken for a backup by a --replace of another.
  ASSERT_TRUE(ImportWordVecText(models, "tiny-sif.old", kEmbedData + "tiny.txt", WordVecConfig{}).ok());
  ImportOptions replace;
  replace.replace = true;
  ASSERT_TRUE(ImportWordVecText(models, "tiny-sif", kEmbedData + "tiny.txt", sif, replace).ok());
  EXPECT_TRUE(GetModel(models, "tiny-sif.old").ok());
  ASSERT_TRUE(RemoveModel(models, "tiny-sif.old").ok());

  auto list = ListModels(models);
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[0].name, "tiny");
  auto got = GetModel(models, "tiny");
  ASSERT_TRUE(got.ok());
  auto e = LoadEmbedder(*got);
  ASSERT_TRUE(e.ok()) << e.error().message;
  EXPECT_EQ((*e)->fingerprint(), m->fingerprint);
  EXPECT_THAT(Embed1(**e, "neural network"), ::testing::ElementsAre(0.5f, 0.5f, 0.0f));
  EXPECT_TRUE(VerifyModel(*got).ok());

  ASSERT_TRUE(RemoveModel(models, "tiny").ok());
  auto gone = GetModel(models, "tiny");
  ASSERT_FALSE(gone.ok());
  EXPECT_THAT(gone.error().message, HasSubstr("model 'tiny' is not installed"));
  EXPECT_FALSE(GetModel(models, "../etc").ok());
}

TEST(RegistryTest, SwappedOrEditedFilesAreErrors) {
  TempDir dir;
  const std::string models = dir.File("models");
  ASSERT_TRUE(ImportWordVecText(models, "a", kEmbedData + "tiny.txt", WordVecConfig{}).ok());
  ASSERT_TRUE(ImportWordVecText(models, "b", kEmbedData + "header.txt", WordVecConfig{}).ok());
  // b's vectors put in a's place: the header's weights hash no longer matches a's manifest.
  fs::copy_file(models + "/b/vectors.kvec", models + "/a/vectors.kvec", fs::copy_options::overwrite_existing);
  auto e = LoadEmbedder(*GetModel(models, "a"));
  ASSERT_FALSE(e.ok());
  EXPECT_THAT(e.error().message, HasSubstr("a/vectors.kvec: the vectors do not match the model's fingerprint"));
  // An edited manifest (fingerprint no longer derived from weights + config).
  std::string manifest;
  {
    std::ifstream in(models + "/b/model.json");
    manifest.assign(std::istreambuf_iterator<char>(in), {});
  }
  manifest.replace(manifest.find("\"sif_a\":0"), 9, "\"sif_a\":1");
  std::ofstream(models + "/b/model.json") << manifest;
  auto b = GetModel(models, "b");
  ASSERT_FALSE(b.ok());
  EXPECT_THAT(b.error().message, HasSubstr("b/model.json: the fingerprint does not match"));
  // A manifest that is not JSON says what is wrong and where, like every other JSON file kplab reads.
  // `{"name":"b",` is 12 characters and the line break; on line 2 the number starts in column 8.
  std::ofstream(models + "/b/model.json", std::ios::trunc) << "{\"name\":\"b\",\n\"dims\":1e999}";
  b = GetModel(models, "b");
  ASSERT_FALSE(b.ok());
  EXPECT_THAT(b.error().message,
              HasSubstr("b/model.json: number out of range at line 2, column 8 ('1e999': beyond the range of a "
                        "double) (expected a kplab model manifest)"));
  std::ofstream(models + "/b/model.json", std::ios::trunc) << "{\"name\": \"b";
  b = GetModel(models, "b");
  ASSERT_FALSE(b.ok());
  EXPECT_THAT(b.error().message, HasSubstr("b/model.json: malformed JSON ("));
}

TEST(RegistryTest, WinkJsonProblemsSayWhatAndWhere) {
  TempDir dir;
  const std::string f = dir.File("wink.json");
  // `{"dimensions": 2,` then line 2 `"size": ` (8 characters): the integer starts in column 9.
  std::ofstream(f) << "{\"dimensions\": 2,\n\"size\": 1267650600228229401496703205376}";
  auto r = ConvertWinkJson(f, dir.File("out.kvec"));
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.error().message, HasSubstr(f + ": integer out of range at line 2, column 9 "
                                               "('1267650600228229401496703205376'"));
  EXPECT_THAT(r.error().message, HasSubstr("(expected a wink-embeddings JSON file)"));
}

}  // namespace
}  // namespace kplab
