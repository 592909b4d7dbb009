// Transformer backend (BERT, MPNet). Truth comes from outside the code: tests/data/transformer holds
// tiny random-weight checkpoints in the exact Hugging Face / sentence-transformers layout and
// expected.json, made by gen_fixtures.py beside them from a reference forward pass written with
// torch's own modules (nn.TransformerEncoderLayer, nn.LayerNorm, nn.Embedding), in float64; the token
// ids in it are written by hand in the generator. kplab computes in float32, so values agree within
// 1e-5 relative to max(|expected|, 1) (hidden states are LayerNorm outputs, of order 1).
#include "kplab/transformer.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <simdjson.h>
#include <sys/stat.h>
#include <unistd.h>

#include <thread>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "kplab/registry.h"
#include "kplab/safetensors.h"
#include "temp_dir.h"

namespace kplab {
namespace {

namespace fs = std::filesystem;
using test::TempDir;

const std::string kDir = std::string(KPLAB_TEST_DATA) + "/transformer/";
constexpr double kTol = 1e-5;

std::string TfReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
void TfWriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
}

struct Expected {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  Expected() { root = parser.load(kDir + "expected.json").value(); }
  simdjson::dom::element Model(const std::string& name) { return root["models"][name].value(); }
};

// A copy of the array: a loop over get_array().value() would hold a reference into a temporary.
simdjson::dom::array Arr(simdjson::dom::element e) {
  simdjson::dom::array a = e.get_array().value();
  return a;
}

std::vector<double> Doubles(simdjson::dom::element e) {
  std::vector<double> v;
  for (simdjson::dom::element x : Arr(e)) v.push_back(x.get_double().value());
  return v;
}
std::vector<int> Ints(simdjson::dom::element e) {
  std::vector<int> v;
  for (simdjson::dom::element x : Arr(e)) v.push_back(static_cast<int>(x.get_int64().value()));
  return v;
}

// Largest |got - want| / max(|want|, 1).
double WorstError(const float* got, const std::vector<double>& want) {
  double worst = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    worst = std::max(worst, std::abs(got[i] - want[i]) / std::max(std::abs(want[i]), 1.0));
  }
  return worst;
}

std::unique_ptr<TransformerModel> MustLoad(const std::string& dir) {
  auto m = TransformerModel::Load(dir);
  EXPECT_TRUE(m.ok()) << (m.ok() ? "" : m.error().message);
  return m.ok() ? std::move(*m) : nullptr;
}

class Fixture : public ::testing::TestWithParam<const char*> {};

TEST_P(Fixture, EveryLayerPoolingAndSentenceVectorMatchTheTorchReference) {
  Expected ex;
  auto m = ex.Model(GetParam());
  auto model = MustLoad(kDir + std::string(m["dir"].get_string().value()));
  ASSERT_TRUE(model);
  const int layers = static_cast<int>(m["num_layers"].get_int64().value());
  const int H = static_cast<int>(m["hidden_size"].get_int64().value());
  EXPECT_EQ(model->token_layers(), layers);
  EXPECT_EQ(model->config().max_seq_length, m["max_seq_length"].get_int64().value());
  std::vector<std::string> texts;
  std::vector<bool> truncated;
  std::vector<std::vector<double>> sentences;
  std::vector<std::vector<std::vector<double>>> per_layer_rows;  // [input][layer] flattened
  double worst = 0;
  int n_inputs = 0;
  for (simdjson::dom::element in : Arr(m["inputs"].value())) {
    ++n_inputs;
    const std::string text(in["text"].get_string().value());
    SCOPED_TRACE(text);
    std::vector<int> ids;
    std::vector<std::uint8_t> special;
    const bool cut = model->Tokenize(text, 0, ids, special);
    EXPECT_EQ(ids, Ints(in["ids"].value()));
    EXPECT_EQ(cut, in["truncated"].get_bool().value());
    ASSERT_GE(ids.size(), 2u);
    EXPECT_EQ(special.front(), 1);
    EXPECT_EQ(special.back(), 1);
    auto hs = model->HiddenStates(ids, layers);
    ASSERT_TRUE(hs.ok()) << hs.error().message;
    ASSERT_EQ(hs->size(), static_cast<std::size_t>(layers + 1));
    std::size_t l = 0;
    std::vector<std::vector<double>> rows_by_layer;
    for (simdjson::dom::element layer : Arr(in["hidden"].value())) {
      std::vector<double> flat;
      for (simdjson::dom::element tok : Arr(layer)) {
        auto v = Doubles(tok);
        flat.insert(flat.end(), v.begin(), v.end());
      }
      ASSERT_EQ((*hs)[l].size(), flat.size()) << "layer " << l;
      const double e = WorstError((*hs)[l].data(), flat);
      EXPECT_LE(e, kTol) << "layer " << l;
      worst = std::max(worst, e);
      rows_by_layer.push_back(std::move(flat));
      ++l;
    }
    EXPECT_EQ(l, static_cast<std::size_t>(layers + 1));
    const std::vector<float>& last = hs->back();
    for (const char* mode : {"mean", "cls", "max"}) {
      auto pooled = TransformerModel::Pool(last.data(), ids.size(), H, mode);
      EXPECT_LE(WorstError(pooled.data(), Doubles(in["pooled"][mode].value())), kTol) << mode;
    }
    texts.push_back(text);
    truncated.push_back(cut);
    sentences.push_back(Doubles(in["sentence"].value()));
    per_layer_rows.push_back(std::move(rows_by_layer));
  }
  EXPECT_GE(n_inputs, 8);
  // The batched path (grouped by length) gives the same vectors as one sequence at a time.
  std::vector<std::string_view> views(texts.begin(), texts.end());
  std::vector<float> out(texts.size() * static_cast<std::size_t>(model->dims()));
  std::vector<std::uint8_t> has(texts.size());
  ASSERT_TRUE(model->Embed(views, out.data(), has.data()).ok());
  for (std::size_t i = 0; i < texts.size(); ++i) {
    SCOPED_TRACE(texts[i]);
    EXPECT_EQ(has[i], 1);
    EXPECT_LE(WorstError(out.data() + i * model->dims(), sentences[i]), kTol);
  }
  // Token embeddings at every layer are the hidden states of that layer.
  for (int layer = 0; layer <= layers; ++layer) {
    TokenBatch tb;
    ASSERT_TRUE(model->EmbedTokens(views, layer, tb).ok());
    ASSERT_EQ(tb.offsets.size(), texts.size() + 1);
    for (std::size_t i = 0; i < texts.size(); ++i) {
      if (truncated[i]) {
        // Token embeddings are cut to the tokenizer's model_max_length (as bert_score cuts), not to
        // sentence-transformers' max_seq_length: a longer sequence, not the reference's.
        EXPECT_LE(tb.offsets[i + 1] - tb.offsets[i], static_cast<std::size_t>(model->config().token_max_length));
        EXPECT_GT(tb.offsets[i + 1] - tb.offsets[i], static_cast<std::size_t>(model->config().max_seq_length));
        continue;
      }
      EXPECT_EQ(tb.truncated[i], 0);
      const auto& want = per_layer_rows[i][static_cast<std::size_t>(layer)];
      ASSERT_EQ((tb.offsets[i + 1] - tb.offsets[i]) * H, want.size());
      EXPECT_LE(WorstError(tb.vecs.data() + tb.offsets[i] * H, want), kTol) << texts[i] << " layer " << layer;
    }
  }
  TokenBatch tb;
  auto bad = model->EmbedTokens(views, layers + 1, tb);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find(fmt::format("layer {} is outside 0..{}", layers + 1, layers)), std::string::npos);
  std::cout << GetParam() << ": worst relative error " << worst << "\n";
}

INSTANTIATE_TEST_SUITE_P(Transformer, Fixture, ::testing::Values("bert-tiny", "mpnet-tiny"));

// A text's vector barely depends on what it is embedded with: every text alone, in the whole list,
// and in the list reversed and extended agree to 1e-6 of the row's largest value. On OpenBLAS kernels
// whose results do not depend on a row's place in a block (SkylakeX, Cooperlake, Sandybridge, Nehalem,
// Prescott: the fixed blocks of 256 rows make the bits equal there) the difference is 0; the Haswell
// and Zen kernels round a row differently by its place in the micro-tile (design note 35), so the test
// asserts the bound, which holds on every CPU, and prints how many vectors were bit-identical.
TEST(Transformer, AVectorBarelyDependsOnWhatIsEmbeddedWithIt) {
  for (const char* name : {"bert-tiny", "mpnet-tiny"}) {
    auto model = MustLoad(kDir + name);
    ASSERT_TRUE(model);
    std::vector<std::string> texts;
    for (int i = 0; i < 300; ++i) {
      std::string t;
      for (int w = 0; w <= i % 9; ++w) t += (w ? " " : "") + std::string(w % 2 ? "neural" : "network") + std::to_string(i % 7);
      texts.push_back(t);
    }
    const int D = model->dims();
    std::vector<std::string_view> all(texts.begin(), texts.end());
    std::vector<float> together(all.size() * D);
    std::vector<std::uint8_t> has(all.size());
    ASSERT_TRUE(model->Embed(all, together.data(), has.data()).ok());
    std::vector<std::string_view> mixed(all.rbegin(), all.rend());
    mixed.insert(mixed.end(), all.begin(), all.begin() + 57);
    std::vector<float> other(mixed.size() * D);
    std::vector<std::uint8_t> has2(mixed.size());
    ASSERT_TRUE(model->Embed(mixed, other.data(), has2.data()).ok());
    std::size_t identical = 0;
    for (std::size_t i = 0; i < all.size(); ++i) {
      std::vector<float> alone(D);
      std::uint8_t h = 0;
      ASSERT_TRUE(model->Embed({all[i]}, alone.data(), &h).ok());
      float scale = 0;
      for (float v : alone) scale = std::max(scale, std::abs(v));
      for (const float* row : {together.data() + i * D, other.data() + (all.size() - 1 - i) * D}) {
        float worst = 0;
        for (int j = 0; j < D; ++j) worst = std::max(worst, std::abs(row[j] - alone[j]));
        ASSERT_LE(worst, 1e-6f * scale) << name << " " << texts[i];
        identical += std::memcmp(alone.data(), row, D * sizeof(float)) == 0;
      }
    }
    std::cout << name << ": " << identical << " of " << 2 * all.size() << " vectors bit-identical to the text alone\n";
  }
}

TEST(Transformer, MpnetBucketsAreHuggingFacesFromMinus600To600) {
  Expected ex;
  auto m = ex.Model("mpnet-tiny");
  auto model = MustLoad(kDir + "mpnet-tiny");
  ASSERT_TRUE(model);
  const int from = static_cast<int>(m["buckets"]["from"].get_int64().value());
  const auto values = Ints(m["buckets"]["values"].value());
  ASSERT_EQ(values.size(), 1201u);
  for (std::size_t i = 0; i < values.size(); ++i) {
    EXPECT_EQ(model->Bucket(from + static_cast<int>(i)), values[i]) << "relative position " << from + static_cast<int>(i);
  }
  // By hand (HF relative_position_bucket, 32 buckets, max_distance 128): n = -rel; n < 0 adds 16;
  // |n| < 8 is its own bucket; |n| = 16 gives 8 + int(log(2)/log(16) * 8) = 10; far away caps at 15.
  EXPECT_EQ(model->Bucket(0), 0);
  EXPECT_EQ(model->Bucket(-3), 3);
  EXPECT_EQ(model->Bucket(3), 19);
  EXPECT_EQ(model->Bucket(-16), 10);
  EXPECT_EQ(model->Bucket(-1000), 15);
  EXPECT_EQ(model->Bucket(1000), 31);
}

TEST(Transformer, HubCacheLayoutLoadsTheSnapshotRefsMainNames) {
  const std::string hub = kDir + "hub/models--kplab-test--mpnet-tiny";
  auto snap = ResolveSnapshot(hub);
  ASSERT_TRUE(snap.ok()) << snap.error().message;
  const std::string sha = TfReadBytes(hub + "/refs/main");
  EXPECT_EQ(*snap, hub + "/snapshots/" + sha);
  EXPECT_TRUE(fs::is_symlink(*snap + "/model.safetensors"));  // as the hub writes it: links into blobs/
  auto a = MustLoad(hub);
  auto b = MustLoad(kDir + "mpnet-tiny");
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->fingerprint(), b->fingerprint());
  EXPECT_EQ(a->dims(), 32);
  EXPECT_TRUE(a->config().normalize);
  EXPECT_EQ(a->config().pooling, "mean");
  EXPECT_EQ(MustLoad(kDir + "bert-tiny")->config().pooling, "cls");
}

TEST(Transformer, ImportCopiesTheSnapshotAndTheCopyGivesTheSameVectors) {
  TempDir models;
  auto info = ImportTransformer(models.path(), "mpnet", kDir + "hub/models--kplab-test--mpnet-tiny");
  ASSERT_TRUE(info.ok()) << info.error().message;
  EXPECT_EQ(info->backend, "transformer");
  EXPECT_EQ(info->dims, 32);
  EXPECT_FALSE(fs::is_symlink(info->dir + "/model.safetensors"));
  EXPECT_TRUE(fs::exists(info->dir + "/1_Pooling/config.json"));
  auto got = GetModel(models.path(), "mpnet");
  ASSERT_TRUE(got.ok()) << got.error().message;
  auto emb = LoadEmbedder(*got);
  ASSERT_TRUE(emb.ok()) << emb.error().message;
  EXPECT_EQ((*emb)->token_layers(), 2);
  std::vector<float> a(32), b(32);
  std::uint8_t ha = 0, hb = 0;
  ASSERT_TRUE((*emb)->Embed({"neural networks"}, a.data(), &ha).ok());
  ASSERT_TRUE(MustLoad(kDir + "mpnet-tiny")->Embed({"neural networks"}, b.data(), &hb).ok());
  EXPECT_EQ(a, b);
  EXPECT_TRUE(VerifyModel(*got).ok());
  // A changed file after import is found.
  std::string st = TfReadBytes(info->dir + "/model.safetensors");
  st[st.size() - 1] ^= 0x01;
  TfWriteBytes(info->dir + "/model.safetensors", st);
  auto again = LoadEmbedder(*got);
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.error().message.find("do not match the model's fingerprint"), std::string::npos)
      << again.error().message;
}

// --- Bad input -------------------------------------------------------------------------------

// A copy of a fixture to break.
std::string CopyFixture(const TempDir& t, const std::string& name) {
  const std::string dst = t.File(name);
  fs::copy(kDir + name, dst, fs::copy_options::recursive);
  return dst;
}

struct TfTensor {
  std::string name, dtype;
  std::vector<std::int64_t> shape;
  std::string bytes;
};

std::vector<TfTensor> ReadTensors(const std::string& path) {
  auto st = Safetensors::Open(path);
  EXPECT_TRUE(st.ok());
  std::vector<TfTensor> out;
  const std::string& all = st->bytes();
  std::uint64_t n = 0;
  std::memcpy(&n, all.data(), 8);
  for (const auto& t : st->tensors()) {
    out.push_back({t.name, t.dtype, t.shape, all.substr(8 + n + t.begin, t.end - t.begin)});
  }
  return out;
}

void WriteTensors(const std::string& path, const std::vector<TfTensor>& ts) {
  std::string header = "{", data;
  for (const auto& t : ts) {
    std::string shape;
    for (std::size_t i = 0; i < t.shape.size(); ++i) shape += (i ? "," : "") + std::to_string(t.shape[i]);
    header += fmt::format("{}\"{}\":{{\"dtype\":\"{}\",\"shape\":[{}],\"data_offsets\":[{},{}]}}",
                          header.size() > 1 ? "," : "", t.name, t.dtype, shape, data.size(), data.size() + t.bytes.size());
    data += t.bytes;
  }
  header += "}";
  std::string out(8, '\0');
  const std::uint64_t n = header.size();
  std::memcpy(out.data(), &n, 8);
  TfWriteBytes(path, out + header + data);
}

void ReplaceInFile(const std::string& path, const std::string& from, const std::string& to) {
  std::string s = TfReadBytes(path);
  const auto at = s.find(from);
  ASSERT_NE(at, std::string::npos) << from << " in " << path;
  s.replace(at, from.size(), to);
  TfWriteBytes(path, s);
}

std::string TfLoadError(const std::string& dir) {
  auto m = TransformerModel::Load(dir);
  EXPECT_FALSE(m.ok()) << dir << " loaded";
  return m.ok() ? "" : m.error().message;
}

// sentence-transformers' older layout: the Transformer module in 0_Transformer/ (config, weights,
// tokenizer, sentence_bert_config.json), the top's config.json only sentence-transformers' version.
// The same network as the top-level layout: the same vectors, and an import that copies the folder.
TEST(Transformer, OlderSentenceTransformersLayoutWithA0TransformerFolder) {
  TempDir t;
  const std::string d = CopyFixture(t, "mpnet-tiny");
  fs::create_directory(d + "/0_Transformer");
  for (const char* f : {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json",
                        "sentence_bert_config.json"}) {
    fs::rename(d + "/" + f, d + "/0_Transformer/" + f);
  }
  TfWriteBytes(d + "/config.json", "{\"__version__\": \"0.3.9\"}");
  ReplaceInFile(d + "/modules.json", "\"path\": \"\"", "\"path\": \"0_Transformer\"");
  auto old = MustLoad(d);
  auto top = MustLoad(kDir + "mpnet-tiny");
  ASSERT_TRUE(old && top);
  EXPECT_EQ(old->config().max_seq_length, 16);
  EXPECT_EQ(old->config().pooling, "mean");
  EXPECT_TRUE(old->config().normalize);
  const std::vector<std::string_view> texts = {"neural networks", "deep learning", "keyphrase extraction"};
  std::vector<float> a(3 * 32), b(3 * 32);
  std::vector<std::uint8_t> h(3);
  ASSERT_TRUE(old->Embed(texts, a.data(), h.data()).ok());
  ASSERT_TRUE(top->Embed(texts, b.data(), h.data()).ok());
  EXPECT_EQ(a, b);
  TempDir models;
  auto info = ImportTransformer(models.path(), "old", d);
  ASSERT_TRUE(info.ok()) << info.error().message;
  EXPECT_TRUE(fs::exists(info->dir + "/0_Transformer/model.safetensors"));
  auto emb = LoadEmbedder(*info);
  ASSERT_TRUE(emb.ok()) << emb.error().message;
  ASSERT_TRUE((*emb)->Embed(texts, a.data(), h.data()).ok());
  EXPECT_EQ(a, b);
  // The module's folder must stay inside the snapshot.
  ReplaceInFile(d + "/modules.json", "\"path\": \"0_Transformer\"", "\"path\": \"../0_Transformer\"");
  EXPECT_EQ(TfLoadError(d), d + "/modules.json: the Transformer module's path '../0_Transformer' leaves the snapshot "
                                "(expected a directory inside it, such as 0_Transformer)");
}

TEST(TransformerBadInput, UnknownArchitecture) {
  TempDir t;
  const std::string d = CopyFixture(t, "bert-tiny");
  ReplaceInFile(d + "/config.json", "\"model_type\": \"bert\"", "\"model_type\": \"roberta\"");
  EXPECT_EQ(TfLoadError(d), d + "/config.json: unknown architecture: model_type \"roberta\" (expected \"bert\", "
                                "\"mpnet\" or \"distilbert\")");
  ReplaceInFile(d + "/config.json", "\"model_type\": \"roberta\"", "\"model_typo\": \"bert\"");
  EXPECT_EQ(TfLoadError(d), d + "/config.json: unknown architecture: model_type \"\" (expected \"bert\", "
                                "\"mpnet\" or \"distilbert\")");
}

TEST(TransformerBadInput, MissingTensorWrongShapeWrongDtype) {
  TempDir t;
  const std::string d = CopyFixture(t, "bert-tiny");
  const std::string st = d + "/model.safetensors";
  const auto orig = ReadTensors(st);
  auto drop = orig;
  drop.erase(std::remove_if(drop.begin(), drop.end(),
                            [](const TfTensor& r) { return r.name == "encoder.layer.1.attention.self.key.weight"; }),
             drop.end());
  ASSERT_EQ(drop.size() + 1, orig.size());
  WriteTensors(st, drop);
  EXPECT_EQ(TfLoadError(d), st + ": has no tensor 'encoder.layer.1.attention.self.key.weight' (expected a Linear of 32 "
                                 "inputs and 32 outputs for these config.json sizes)");
  // Shape: a config that says 65 intermediate units for weights of 64.
  WriteTensors(st, orig);
  ReplaceInFile(d + "/config.json", "\"intermediate_size\": 64", "\"intermediate_size\": 65");
  EXPECT_EQ(TfLoadError(d),
            st + ": tensor 'encoder.layer.0.intermediate.dense.weight' has shape [64, 32] (expected [65, 32]: a "
                 "Linear of 32 inputs and 65 outputs for these config.json sizes)");
  ReplaceInFile(d + "/config.json", "\"intermediate_size\": 65", "\"intermediate_size\": 64");
  // Dtype: integers where floats belong.
  auto ints = orig;
  for (auto& r : ints) {
    if (r.name == "embeddings.LayerNorm.bias") r.dtype = "I32";
  }
  WriteTensors(st, ints);
  EXPECT_EQ(TfLoadError(d), st + ": tensor 'embeddings.LayerNorm.bias' has dtype I32 (expected F32, F16 or BF16)");
  // A NaN weight.
  auto nan = orig;
  for (auto& r : nan) {
    if (r.name == "encoder.layer.0.output.dense.bias") {
      const float q = std::nanf("");
      std::memcpy(r.bytes.data() + 4, &q, 4);
    }
  }
  WriteTensors(st, nan);
  const std::string e = TfLoadError(d);
  EXPECT_NE(e.find("encoder.layer.0.output.dense.bias"), std::string::npos) << e;
  EXPECT_NE(e.find(st), std::string::npos) << e;
  // Truncated file.
  TfWriteBytes(st, TfReadBytes(kDir + "bert-tiny/model.safetensors").substr(0, 5000));
  EXPECT_NE(TfLoadError(d).find(st), std::string::npos);
  // The old LayerNorm names (gamma / beta) and a "bert." prefix are read, as Hugging Face reads them.
  auto renamed = orig;
  for (auto& r : renamed) {
    std::string n = "bert." + r.name;
    if (n.find("LayerNorm.weight") != std::string::npos) n.replace(n.size() - 6, 6, "gamma");
    if (n.find("LayerNorm.bias") != std::string::npos) n.replace(n.size() - 4, 4, "beta");
    r.name = n;
  }
  WriteTensors(st, renamed);
  auto ok = TransformerModel::Load(d);
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  std::vector<float> a(32), b(32);
  std::uint8_t h = 0;
  ASSERT_TRUE((*ok)->Embed({"deep learning"}, a.data(), &h).ok());
  ASSERT_TRUE(MustLoad(kDir + "bert-tiny")->Embed({"deep learning"}, b.data(), &h).ok());
  EXPECT_EQ(a, b);
}

TEST(TransformerBadInput, TokenizerLargerThanTheVocabulary) {
  TempDir t;
  const std::string d = CopyFixture(t, "bert-tiny");
  const std::string st = d + "/model.safetensors";
  auto ts = ReadTensors(st);
  int vocab = 0;
  for (auto& r : ts) {
    if (r.name == "embeddings.word_embeddings.weight") {
      vocab = static_cast<int>(r.shape[0]);
      r.shape[0] -= 10;
      r.bytes.resize(r.bytes.size() - 10 * 32 * 4);
    }
  }
  WriteTensors(st, ts);
  ReplaceInFile(d + "/config.json", fmt::format("\"vocab_size\": {}", vocab), fmt::format("\"vocab_size\": {}", vocab - 10));
  EXPECT_EQ(TfLoadError(d),
            fmt::format("{}/tokenizer.json: the tokenizer has {} token ids but config.json vocab_size is {} "
                        "(the word embeddings have {} rows): tokenizer and model do not match",
                        d, vocab, vocab - 10, vocab - 10));
}

TEST(TransformerBadInput, PytorchBinOnlySaysHowToConvert) {
  TempDir t;
  const std::string d = CopyFixture(t, "mpnet-tiny");
  fs::rename(d + "/model.safetensors", d + "/pytorch_model.bin");
  const std::string e = TfLoadError(d);
  EXPECT_EQ(e.rfind(d + ": no model.safetensors (it has pytorch_model.bin) (kplab reads safetensors only; convert", 0), 0u)
      << e;
  EXPECT_NE(e.find("save_file("), std::string::npos) << e;
  EXPECT_NE(e.find("safe_serialization=True"), std::string::npos) << e;
}

TEST(TransformerBadInput, MaxSeqLengthBeyondThePositionTable) {
  TempDir t;
  const std::string d = CopyFixture(t, "mpnet-tiny");
  ReplaceInFile(d + "/sentence_bert_config.json", "\"max_seq_length\": 16", "\"max_seq_length\": 21");
  EXPECT_EQ(TfLoadError(d),
            d + "/sentence_bert_config.json: max_seq_length 21 is longer than the position table allows "
                "(20 = config.json max_position_embeddings 22 - 2)");
  ReplaceInFile(d + "/sentence_bert_config.json", "\"max_seq_length\": 21", "\"max_seq_length\": 20");
  auto m = MustLoad(d);
  ASSERT_TRUE(m);
  // A text far longer than the table is cut, never read past it.
  std::string longtext;
  for (int i = 0; i < 500; ++i) longtext += "neural network ";
  std::vector<int> ids;
  std::vector<std::uint8_t> sp;
  EXPECT_TRUE(m->Tokenize(longtext, 0, ids, sp));
  EXPECT_EQ(ids.size(), 20u);
  std::vector<float> v(32);
  std::uint8_t h = 0;
  EXPECT_TRUE(m->Embed({longtext}, v.data(), &h).ok());
  EXPECT_EQ(h, 1);
}

TEST(TransformerBadInput, SentenceTransformersModulesAndHostileFiles) {
  TempDir t;
  const std::string d = CopyFixture(t, "mpnet-tiny");
  const std::string modules = TfReadBytes(d + "/modules.json");
  ReplaceInFile(d + "/modules.json", "sentence_transformers.models.Normalize", "sentence_transformers.models.Dense");
  EXPECT_EQ(TfLoadError(d),
            d + "/modules.json: module \"sentence_transformers.models.Dense\" is not supported (expected "
                "Transformer, Pooling and Normalize)");
  TfWriteBytes(d + "/modules.json", modules);
  const std::string config = TfReadBytes(d + "/config.json");
  ReplaceInFile(d + "/config.json", "\"relative_attention_num_buckets\": 32", "\"relative_attention_num_buckets\": 16");
  EXPECT_EQ(TfLoadError(d),
            d + "/config.json: \"relative_attention_num_buckets\" is 16 (expected an integer from 32 to 4096)");
  TfWriteBytes(d + "/config.json", config);
  ReplaceInFile(d + "/config.json", "\"hidden_act\": \"gelu\"", "\"hidden_act\": \"relu\"");
  EXPECT_EQ(TfLoadError(d), d + "/config.json: \"hidden_act\" is \"relu\" (expected \"gelu\", the exact erf GELU)");
  fs::remove(d + "/config.json");
  ASSERT_EQ(::mkfifo((d + "/config.json").c_str(), 0600), 0);
  EXPECT_EQ(TfLoadError(d), d + "/config.json: a FIFO, not a regular file (expected the model's config.json)");
  fs::remove(d + "/config.json");
  fs::copy_file(kDir + "mpnet-tiny/config.json", d + "/config.json");
  fs::remove(d + "/tokenizer.json");
  fs::create_directory(d + "/tokenizer.json");
  EXPECT_EQ(TfLoadError(d).rfind(d + "/tokenizer.json: a directory, not a regular file", 0), 0u) << TfLoadError(d);
  EXPECT_EQ(TfLoadError(t.File("nowhere")),
            t.File("nowhere") + ": not a directory (expected a Hugging Face snapshot directory with config.json)");
}

TEST(TransformerBadInput, HubCacheWithoutRefsOrWithABadRef) {
  TempDir t;
  const std::string hub = t.File("models--x--y");
  fs::copy(kDir + "hub/models--kplab-test--mpnet-tiny", hub, fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  const std::string sha = TfReadBytes(hub + "/refs/main");
  ASSERT_TRUE(TransformerModel::Load(hub).ok());
  TfWriteBytes(hub + "/refs/main", "0000000000000000000000000000000000000000");
  EXPECT_EQ(TfLoadError(hub), hub +
                                  "/refs/main: points to snapshot '0000000000000000000000000000000000000000', which " +
                                  hub + "/snapshots does not have");
  TfWriteBytes(hub + "/refs/main", "../../etc");
  EXPECT_EQ(TfLoadError(hub), hub + "/refs/main: '../../etc' is not a commit id (expected the snapshot's name)");
  fs::remove(hub + "/refs/main");
  ASSERT_TRUE(TransformerModel::Load(hub).ok());  // the only snapshot
  fs::create_directory(hub + "/snapshots/other");
  EXPECT_EQ(TfLoadError(hub),
            hub + "/snapshots: 2 snapshots and no refs/main (expected one, or name the snapshot directory)");
}

// From the hostile pass: files far larger than a model's (a sparse terabyte) are refused by their
// size or their header, never read into memory.
TEST(TransformerBadInput, SparseTerabyteFilesAreRefusedWithoutReading) {
  TempDir t;
  const std::string d = CopyFixture(t, "bert-tiny");
  const std::string st = d + "/model.safetensors";
  TfWriteBytes(st, "");
  ASSERT_EQ(::truncate(st.c_str(), 1LL << 40), 0);  // zeros: header length 0
  EXPECT_EQ(TfLoadError(d), st + ": header does not start with '{' (expected a JSON object header)");
  // A header length just under the file's size: refused by the format's 100 MB limit, not allocated.
  {
    std::ofstream f(st, std::ios::binary | std::ios::trunc);
    const std::uint64_t n = (1ULL << 40) - 8;
    f.write(reinterpret_cast<const char*>(&n), 8);
  }
  ASSERT_EQ(::truncate(st.c_str(), 1LL << 40), 0);
  EXPECT_EQ(TfLoadError(d),
            fmt::format("{}: header length {} is over the format's limit of 100000000 bytes (expected a "
                        "safetensors file: 8-byte little-endian header length, JSON header, tensor data)",
                        st, (1ULL << 40) - 8));
  // A valid header followed by a terabyte of nothing.
  fs::copy_file(kDir + "bert-tiny/model.safetensors", st, fs::copy_options::overwrite_existing);
  const auto real = fs::file_size(st);
  ASSERT_EQ(::truncate(st.c_str(), 1LL << 40), 0);
  EXPECT_EQ(TfLoadError(d), fmt::format("{}: the file is {} bytes but its header describes {} (padded, or not a "
                                        "safetensors file?) (expected a safetensors file: 8-byte little-endian header "
                                        "length, JSON header, tensor data)",
                                        st, 1LL << 40, real));
  fs::copy_file(kDir + "bert-tiny/model.safetensors", st, fs::copy_options::overwrite_existing);
  ASSERT_EQ(::truncate((d + "/config.json").c_str(), 1LL << 40), 0);
  EXPECT_EQ(TfLoadError(d), fmt::format("{}/config.json: {} bytes, more than a model's configuration file can be "
                                        "(expected the model's config.json of at most 1 GiB)",
                                        d, 1LL << 40));
}

TEST(TransformerBadInput, ModulePathsStayInsideTheSnapshot) {
  TempDir t;
  const std::string d = CopyFixture(t, "mpnet-tiny");
  ReplaceInFile(d + "/modules.json", "\"path\": \"1_Pooling\"", "\"path\": \"../evil\"");
  EXPECT_EQ(TfLoadError(d), d + "/modules.json: module 1 has path '../evil', which leaves the snapshot (expected a "
                                "directory inside it, such as 1_Pooling)");
  ReplaceInFile(d + "/modules.json", "\"path\": \"../evil\"", "\"path\": \"/etc\"");
  EXPECT_EQ(TfLoadError(d), d + "/modules.json: module 1 has path '/etc', which leaves the snapshot (expected a "
                                "directory inside it, such as 1_Pooling)");
  TempDir models;
  EXPECT_FALSE(ImportTransformer(models.path(), "m", d).ok());
  EXPECT_TRUE(fs::is_empty(models.path()) || !fs::exists(models.path() + "/m"));
}

// Hugging Face numbers MPNet positions with create_position_ids_from_input_ids: a padding id (1) gets
// position 1 and does not advance the others. "<pad> neural" is <s> <pad> neural </s> = ids 0 1 135 2
// at positions 2 1 3 4. The embedding layer's output is computed here by hand from the tensors:
// LayerNorm(word[id] + position[p]) with eps 1e-5.
TEST(Transformer, MpnetLiteralPadTokenTakesPositionOneAsHuggingFace) {
  auto model = MustLoad(kDir + "mpnet-tiny");
  ASSERT_TRUE(model);
  std::vector<int> ids;
  std::vector<std::uint8_t> sp;
  model->Tokenize("<pad> neural", 0, ids, sp);
  ASSERT_EQ(ids, (std::vector<int>{0, 1, 135, 2}));
  auto st = Safetensors::Open(kDir + "mpnet-tiny/model.safetensors");
  ASSERT_TRUE(st.ok());
  auto word = st->ToFloat(*st->Find("embeddings.word_embeddings.weight")).value();
  auto pos = st->ToFloat(*st->Find("embeddings.position_embeddings.weight")).value();
  auto g = st->ToFloat(*st->Find("embeddings.LayerNorm.weight")).value();
  auto b = st->ToFloat(*st->Find("embeddings.LayerNorm.bias")).value();
  const int positions[] = {2, 1, 3, 4};
  std::vector<double> want;
  for (int t = 0; t < 4; ++t) {
    std::vector<double> v(32);
    double mean = 0, var = 0;
    for (int i = 0; i < 32; ++i) {
      v[i] = static_cast<double>(word[ids[t] * 32 + i]) + pos[positions[t] * 32 + i];
      mean += v[i] / 32;
    }
    for (int i = 0; i < 32; ++i) var += (v[i] - mean) * (v[i] - mean) / 32;
    for (int i = 0; i < 32; ++i) want.push_back((v[i] - mean) / std::sqrt(var + 1e-5) * g[i] + b[i]);
  }
  auto hs = model->HiddenStates(ids, 0);
  ASSERT_TRUE(hs.ok());
  EXPECT_LE(WorstError((*hs)[0].data(), want), kTol);
}

TEST(Transformer, TokenizerFileTruncationAndPaddingDoNotApplyAsInSentenceTransformers) {
  TempDir t;
  const std::string d = CopyFixture(t, "bert-tiny");
  ReplaceInFile(d + "/tokenizer.json", "\"truncation\": null",
                "\"truncation\": {\"direction\": \"Left\", \"max_length\": 4, \"strategy\": \"LongestFirst\", "
                "\"stride\": 0}");
  ReplaceInFile(d + "/tokenizer.json", "\"padding\": null",
                "\"padding\": {\"strategy\": \"BatchLongest\", \"direction\": \"Right\", \"pad_to_multiple_of\": null, "
                "\"pad_id\": 0, \"pad_type_id\": 0, \"pad_token\": \"[PAD]\"}");
  auto model = MustLoad(d);
  ASSERT_TRUE(model);
  std::vector<int> ids;
  std::vector<std::uint8_t> sp;
  EXPECT_FALSE(model->Tokenize("neural networks deep learning", 0, ids, sp));
  EXPECT_EQ(ids, (std::vector<int>{2, 131, 133, 135, 134, 3}));  // [CLS] neural networks deep learning [SEP]
}

// A word of 200,000 letters with max_input_chars_per_word raised to 1e9: WordPiece starts each piece
// at the longest vocabulary entry, so this finishes at once (it took cubic time) with the same
// pieces: a ##a ##a ..., cut to max_seq_length 12 = [CLS] a + 9 x ##a [SEP].
TEST(TransformerBadInput, LongWordsTokenizeInLinearTime) {
  TempDir t;
  const std::string d = CopyFixture(t, "bert-tiny");
  ReplaceInFile(d + "/tokenizer.json", "\"max_input_chars_per_word\": 100", "\"max_input_chars_per_word\": 1000000000");
  auto model = MustLoad(d);
  ASSERT_TRUE(model);
  std::vector<int> ids;
  std::vector<std::uint8_t> sp;
  EXPECT_TRUE(model->Tokenize(std::string(200000, 'a'), 0, ids, sp));
  std::vector<int> want = {2, 47};
  want.insert(want.end(), 9, 73);
  want.push_back(3);
  EXPECT_EQ(ids, want);
}

// Two imports of one name at once, without --replace: exactly one wins, the other says so.
TEST(TransformerBadInput, ConcurrentImportsOfOneNameWithoutReplace) {
  for (int round = 0; round < 8; ++round) {
    TempDir models;
    Result<ModelInfo> a = Error::Internal(""), b = Error::Internal("");
    std::thread ta([&] { a = ImportTransformer(models.path(), "m", kDir + "bert-tiny"); });
    std::thread tb([&] { b = ImportTransformer(models.path(), "m", kDir + "mpnet-tiny"); });
    ta.join();
    tb.join();
    ASSERT_EQ(a.ok() + b.ok(), 1) << "round " << round << ": " << (a.ok() ? "" : a.error().message) << " / " << (b.ok() ? "" : b.error().message);
    const std::string e = a.ok() ? b.error().message : a.error().message;
    EXPECT_NE(e.find("model 'm' is already installed in " + models.path()), std::string::npos) << e;
    auto got = GetModel(models.path(), "m");
    ASSERT_TRUE(got.ok()) << got.error().message;
    EXPECT_EQ(got->fingerprint, a.ok() ? a->fingerprint : b->fingerprint);
  }
}

TEST(TransformerBadInput, JsonErrorsSayWhatIsWrong) {
  TempDir t;
  const std::string d = CopyFixture(t, "bert-tiny");
  TfWriteBytes(d + "/config.json", "{\"model_type\": \"bert\", \"layer_norm_eps\": NaN}");
  const std::string e = TfLoadError(d);
  EXPECT_EQ(e.rfind(d + "/config.json: malformed JSON (", 0), 0u) << e;
  EXPECT_NE(e.find("(expected the model's config.json)"), std::string::npos) << e;
  TfWriteBytes(d + "/config.json", "[1, 2]");
  EXPECT_EQ(TfLoadError(d), d + "/config.json: not a JSON object (expected the model's config.json)");
  const std::string hub = t.File("models--x--y");
  fs::copy(kDir + "hub/models--kplab-test--mpnet-tiny", hub, fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  TfWriteBytes(hub + "/refs/main", ".");
  EXPECT_EQ(TfLoadError(hub), hub + "/refs/main: '.' is not a commit id (expected the snapshot's name)");
  fs::remove(hub + "/refs/main");
  fs::create_directory(hub + "/refs/main");
  EXPECT_EQ(TfLoadError(hub).rfind(hub + "/refs/main: a directory, not a regular file", 0), 0u) << TfLoadError(hub);
}

}  // namespace
}  // namespace kplab
