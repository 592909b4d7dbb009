// Model2Vec backend: safetensors reader, Hugging Face tokenizer, pooling. Truth comes from outside
// the code:
//   - ../shared/models/model2vec-fixtures (MinishLab/model2vec-rs tests/fixtures):
//   embeddings_*.json
//     are Python model2vec's outputs; PROVENANCE.txt states token ids;
//   - tests/data/model2vec/tokenizer_oracle.txt: ids from the reference tokenizers library
//     (make_tokenizer_oracle.js beside it says how it was made);
//   - values computed by hand (or with numpy from the raw tensor bytes) and written out below.
#include "kplab/model2vec.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "kplab/hf_tokenizer.h"
#include "kplab/io.h"
#include "kplab/safetensors.h"
#include "temp_dir.h"

namespace kplab {
namespace {

namespace fs = std::filesystem;

const std::string kFixtures = std::string(KPLAB_SHARED_MODELS) + "/model2vec-fixtures/";
const std::string kM2vData = std::string(KPLAB_TEST_DATA) + "/model2vec/";
const std::string kF32 = kFixtures + "test-model-float32";
const std::string kF16 = kFixtures + "test-model-float16";
const std::string kI8 = kFixtures + "test-model-int8";
const std::string kSt = kFixtures + "test-model-sentence-transformers";
const std::string kVq = kFixtures + "test-model-vocab-quantized";

using test::TempDir;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void WriteAll(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
}

// A model directory: the float32 fixture's files, then overrides.
void CopyModel(const std::string& from, const TempDir& to) {
  for (const auto& e : fs::directory_iterator(from)) {
    fs::copy_file(e.path(), to / e.path().filename().string());
  }
}

std::unique_ptr<Embedder> Load(const std::string& dir) {
  auto m = LoadModel2Vec(dir);
  EXPECT_TRUE(m.ok()) << (m.ok() ? "" : m.error().message);
  if (!m.ok()) return nullptr;
  return std::move(*m);
}

std::string LoadError(const std::string& dir) {
  auto m = LoadModel2Vec(dir);
  EXPECT_FALSE(m.ok()) << dir << " loaded without error";
  return m.ok() ? "" : m.error().message;
}

struct Vec {
  std::vector<float> v;
  bool has = false;
};

Vec EmbedOne(const Embedder& e, std::string_view phrase) {
  Vec out;
  out.v.resize(static_cast<std::size_t>(e.dims()));
  std::uint8_t has = 9;
  Status st = e.Embed({phrase}, out.v.data(), &has);
  EXPECT_TRUE(st.ok()) << st.message();
  out.has = has == 1;
  return out;
}

// The numbers of a Python list of lists of floats, e.g. [[0.1, -0.2]]. (No simdjson here: this
// target does not get its compile definitions, and a mismatched dom::parser breaks the ODR.)
std::vector<double> ReadExpected(const std::string& path) {
  std::string text = ReadAll(path);
  EXPECT_FALSE(text.empty()) << path;
  std::replace_if(
      text.begin(), text.end(), [](char c) { return c == '[' || c == ']' || c == ','; }, ' ');
  std::istringstream in(text);
  std::vector<double> out;
  double d;
  while (in >> d) out.push_back(d);
  return out;
}

// |got - want| <= rel * |want| (+ a tiny absolute floor for values near 0), as approx's
// assert_relative_eq!(max_relative = rel) in model2vec-rs's tests.
void ExpectClose(const std::vector<float>& got, const std::vector<double>& want, double rel,
                 const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_NEAR(got[i], want[i], rel * std::fabs(want[i]) + 1e-7) << what << " element " << i;
  }
}

// ---------------------------------------------------------------------------- safetensors

// binary16 by its definition: (-1)^s * 2^(e-15) * (1 + m/1024), subnormals 2^-14 * m/1024.
double HalfReference(std::uint16_t h) {
  const int s = h >> 15, e = (h >> 10) & 0x1F, m = h & 0x3FF;
  const double sign = s != 0 ? -1.0 : 1.0;
  if (e == 0) return sign * std::ldexp(m, -24);
  if (e == 31) return m == 0 ? sign * INFINITY : NAN;
  return sign * std::ldexp(1024 + m, e - 25);
}

TEST(SafetensorsTest, HalfToFloatEveryValue) {
  for (std::uint32_t h = 0; h < 65536; ++h) {
    const float got = HalfToFloat(static_cast<std::uint16_t>(h));
    const double want = HalfReference(static_cast<std::uint16_t>(h));
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << std::hex << h;
    } else {
      EXPECT_EQ(static_cast<double>(got), want) << std::hex << h;
      EXPECT_EQ(std::signbit(got), (h & 0x8000) != 0) << std::hex << h;  // -0.0 stays negative
    }
  }
  EXPECT_EQ(HalfToFloat(0x3C00), 1.0f);
  EXPECT_EQ(HalfToFloat(0x7BFF), 65504.0f);               // largest half
  EXPECT_EQ(HalfToFloat(0x0001), std::ldexp(1.0f, -24));  // smallest subnormal
  EXPECT_EQ(HalfToFloat(0x03FF), std::ldexp(1023.0f, -24));
  EXPECT_EQ(HalfToFloat(0xFC00), -INFINITY);
}

TEST(SafetensorsTest, FixtureHeaders) {
  // Shapes and dtypes as PROVENANCE.txt lists them.
  auto f32 = Safetensors::Open(kF32 + "/model.safetensors");
  ASSERT_TRUE(f32.ok()) << f32.error().message;
  ASSERT_EQ(f32->tensors().size(), 1u);
  const SafetensorInfo* e = f32->Find("embeddings");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->dtype, "F32");
  EXPECT_EQ(e->shape, (std::vector<std::int64_t>{29528, 2}));
  auto vals = f32->ToFloat(*e);
  ASSERT_TRUE(vals.ok());
  // Row 6598 ("hello"), read with numpy from the file's bytes.
  EXPECT_FLOAT_EQ((*vals)[6598 * 2], -9.35731315612793f);
  EXPECT_FLOAT_EQ((*vals)[6598 * 2 + 1], -7.064754486083984f);

  auto vq = Safetensors::Open(kVq + "/model.safetensors");
  ASSERT_TRUE(vq.ok()) << vq.error().message;
  EXPECT_EQ(vq->Find("embeddings")->shape, (std::vector<std::int64_t>{128, 64}));
  EXPECT_EQ(vq->Find("mapping")->dtype, "I32");
  EXPECT_EQ(vq->Find("weights")->dtype, "F64");
  auto mapping = vq->ToInt(*vq->Find("mapping"));
  auto weights = vq->ToDouble(*vq->Find("weights"));
  ASSERT_TRUE(mapping.ok() && weights.ok());
  EXPECT_EQ(mapping->size(), 29524u);
  EXPECT_EQ((*mapping)[6594], 124);                  // PROVENANCE: "▁hello" -> row 124
  EXPECT_NEAR((*weights)[6594], 0.86685, 0.000005);  // PROVENANCE: weight 0.86685

  auto f16 = Safetensors::Open(kF16 + "/model.safetensors");
  ASSERT_TRUE(f16.ok());
  auto h = f16->ToFloat(*f16->Find("embeddings"));
  ASSERT_TRUE(h.ok());
  // The F16 bits of "hello"'s row are 0xC8AE, 0xC711: -9.359375, -7.06640625.
  EXPECT_EQ((*h)[6598 * 2], -9.359375f);
  EXPECT_EQ((*h)[6598 * 2 + 1], -7.06640625f);
}

struct RawTensor {
  std::string name, dtype;
  std::vector<std::int64_t> shape;
  std::string bytes;
};

// A safetensors file written by hand: header JSON padded with spaces to a multiple of 8.
std::string MakeSafetensors(const std::vector<RawTensor>& ts, const std::string& extra = "") {
  std::string header = "{";
  std::string data;
  for (const RawTensor& t : ts) {
    if (header.size() > 1) header += ",";
    header += "\"" + t.name + "\":{\"dtype\":\"" + t.dtype + "\",\"shape\":[";
    for (std::size_t i = 0; i < t.shape.size(); ++i) {
      header += (i ? "," : "") + std::to_string(t.shape[i]);
    }
    header += "],\"data_offsets\":[" + std::to_string(data.size()) + "," +
              std::to_string(data.size() + t.bytes.size()) + "]}";
    data += t.bytes;
  }
  header += extra + "}";
  while ((8 + header.size()) % 8 != 0) header += " ";
  std::string out(8, '\0');
  const std::uint64_t n = header.size();
  std::memcpy(out.data(), &n, 8);
  return out + header + data;
}

template <class T>
std::string Bytes(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

std::string OpenError(const std::string& bytes) {
  auto st = Safetensors::Parse(bytes, "dir/model.safetensors");
  EXPECT_FALSE(st.ok());
  return st.ok() ? "" : st.error().message;
}

TEST(SafetensorsTest, CorruptFilesAreErrorsNamingTheFile) {
  const std::string good = ReadAll(kF32 + "/model.safetensors");
  // Truncated: the header is intact but the data region is short.
  std::string e = OpenError(good.substr(0, 1000));
  EXPECT_NE(e.find("dir/model.safetensors: "), std::string::npos) << e;
  EXPECT_NE(e.find("outside the 912-byte data region"), std::string::npos) << e;
  // Truncated inside the header, and shorter than the length field.
  e = OpenError(good.substr(0, 50));
  EXPECT_NE(e.find("header length 80 runs past the end of the 50-byte file"), std::string::npos)
      << e;
  e = OpenError(good.substr(0, 5));
  EXPECT_NE(e.find("too short"), std::string::npos) << e;
  EXPECT_NE(OpenError("").find("dir/model.safetensors"), std::string::npos);
  // Header length beyond the file.
  std::string huge = good;
  const std::uint64_t big = 1ull << 40;
  std::memcpy(huge.data(), &big, 8);
  EXPECT_NE(OpenError(huge).find("runs past the end"), std::string::npos);
  // Not JSON.
  std::string garbled = good;
  garbled[8 + 1] = '#';  // {#embeddings":...
  e = OpenError(garbled);
  EXPECT_NE(e.find("dir/model.safetensors: header: malformed JSON ("), std::string::npos) << e;
  EXPECT_NE(e.find("(expected a JSON object header)"), std::string::npos) << e;
  // A header that is JSON but for one number: the message says which and where. The header is
  // {"__metadata__":{"x":1e999}} padded with spaces to the fixture's 80 bytes; `{"__metadata__":{"x":` is
  // 21 characters, so the number starts in column 22.
  std::string ranged = good;
  std::string header = R"({"__metadata__":{"x":1e999}})";
  header.resize(80, ' ');
  ranged.replace(8, 80, header);
  e = OpenError(ranged);
  EXPECT_NE(e.find("header: number out of range at line 1, column 22 ('1e999': beyond the range of a double)"),
            std::string::npos)
      << e;
  std::string not_object = good;
  not_object[8] = '[';
  EXPECT_NE(OpenError(not_object).find("does not start with '{'"), std::string::npos);

  const std::string f8 = Bytes(std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8});
  // Offsets out of range.
  std::string s = MakeSafetensors({{"embeddings", "F32", {4, 2}, f8}});
  std::string bad = s;
  const auto pos = bad.find("[0,32]");
  bad.replace(pos, 6, "[0,64]");
  e = OpenError(bad);
  EXPECT_NE(e.find("data_offsets [0, 64] are outside the 32-byte data region"), std::string::npos)
      << e;
  // Shape x dtype size disagrees with the offsets.
  e = OpenError(MakeSafetensors({{"embeddings", "F32", {4, 3}, f8}}));
  EXPECT_NE(e.find("tensor \"embeddings\" F32 4x3 needs 48 bytes but data_offsets give 32"),
            std::string::npos)
      << e;
  // Unsupported dtype.
  e = OpenError(MakeSafetensors({{"embeddings", "C64", {4}, f8}}));
  EXPECT_NE(e.find("unsupported dtype \"C64\""), std::string::npos) << e;
  // Missing fields, negative dims.
  EXPECT_NE(OpenError(MakeSafetensors({{"embeddings", "F32", {-1}, f8}})).find("negative"),
            std::string::npos);
  // A gap between two tensors, and extra bytes after the last one.
  std::string gap =
      MakeSafetensors({{"a", "F32", {2}, f8.substr(0, 8)}, {"b", "F32", {2}, f8.substr(0, 8)}});
  const auto bpos = gap.find("[8,16]");
  gap.replace(bpos, 6, "[9,17]");
  gap += "x";
  e = OpenError(gap);
  EXPECT_NE(e.find("tensor \"b\" starts at data byte 9, but the previous tensor ends at 8"),
            std::string::npos)
      << e;
  e = OpenError(MakeSafetensors({{"a", "F32", {8}, f8}}) + "tail");
  EXPECT_NE(e.find("cover 32 data bytes but the file has 36"), std::string::npos) << e;
  // __metadata__ is allowed.
  auto meta = Safetensors::Parse(
      MakeSafetensors({{"a", "F32", {8}, f8}}, ",\"__metadata__\":{\"format\":\"pt\"}"), "m");
  EXPECT_TRUE(meta.ok()) << (meta.ok() ? "" : meta.error().message);
}

TEST(SafetensorsTest, NonFiniteValuesAreErrors) {
  auto st = Safetensors::Parse(
      MakeSafetensors({{"w", "F32", {3}, Bytes(std::vector<float>{1, NAN, 2})},
                       {"h", "F16", {2}, Bytes(std::vector<std::uint16_t>{0x3C00, 0x7C00})},
                       {"d", "F64", {1}, Bytes(std::vector<double>{1e300})}}),
      "x/model.safetensors");
  ASSERT_TRUE(st.ok()) << st.error().message;
  auto w = st->ToFloat(*st->Find("w"));
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.error().message.find("x/model.safetensors: tensor \"w\" element 1 is nan"),
            std::string::npos)
      << w.error().message;
  auto h = st->ToFloat(*st->Find("h"));
  ASSERT_FALSE(h.ok());
  EXPECT_NE(h.error().message.find("element 1 is inf"), std::string::npos) << h.error().message;
  // 1e300 is finite as a double but overflows float32.
  EXPECT_FALSE(st->ToFloat(*st->Find("d")).ok());
  EXPECT_TRUE(st->ToDouble(*st->Find("d")).ok());
  EXPECT_FALSE(st->ToInt(*st->Find("w")).ok());
}

// ---------------------------------------------------------------------------- tokenizer

const HfTokenizer& WordPieceFixture() {
  static const HfTokenizer* tok = [] {
    auto t = HfTokenizer::Load(kF32 + "/tokenizer.json");
    EXPECT_TRUE(t.ok()) << (t.ok() ? "" : t.error().message);
    return new HfTokenizer(std::move(*t));
  }();
  return *tok;
}

const HfTokenizer& UnigramFixture() {
  static const HfTokenizer* tok = [] {
    auto t = HfTokenizer::Load(kVq + "/tokenizer.json");
    EXPECT_TRUE(t.ok()) << (t.ok() ? "" : t.error().message);
    return new HfTokenizer(std::move(*t));
  }();
  return *tok;
}

using Ids = std::vector<int>;

TEST(HfTokenizerTest, ProvenanceIds) {
  const HfTokenizer& wp = WordPieceFixture();
  EXPECT_EQ(wp.model_type(), "WordPiece");
  EXPECT_EQ(wp.vocab_size(), 29528);
  EXPECT_EQ(wp.unk_id(), 1);
  EXPECT_EQ(wp.Encode("hello world"), (Ids{6598, 1094}));
  EXPECT_EQ(wp.TokenToId("hello"), 6598);

  const HfTokenizer& ug = UnigramFixture();
  EXPECT_EQ(ug.model_type(), "Unigram");
  EXPECT_EQ(ug.vocab_size(), 29524);
  EXPECT_EQ(ug.unk_id(), 1);
  EXPECT_EQ(ug.TokenToId("\xE2\x96\x81hello"), 6594);  // "▁hello"
  EXPECT_EQ(ug.Encode("hello"), (Ids{6594}));
}

TEST(HfTokenizerTest, WordPieceByHand) {
  // Ids looked up in test-model-float32/tokenizer.json's model.vocab.
  const HfTokenizer& wp = WordPieceFixture();
  // BertNormalizer lowercases and (strip_accents null follows lowercase) strips accents after NFD:
  // "Café" -> "cafe" (6674).
  EXPECT_EQ(wp.Encode("Café"), (Ids{6674}));
  EXPECT_EQ(wp.Encode("CAFE\xCC\x81"), (Ids{6674}));  // combining acute accent, already decomposed
  // BertPreTokenizer: every punctuation character is a word of its own:
  // state 1116, - 17, of 1003, - 17, the 1002, - 17, art 1402.
  EXPECT_EQ(wp.Encode("state-of-the-art"), (Ids{1116, 17, 1003, 17, 1002, 17, 1402}));
  // "hello, world!" -> hello 6598, "," 16, world 1094, "!" 5.
  EXPECT_EQ(wp.Encode("  Hello,\tWORLD! "), (Ids{6598, 16, 1094, 5}));
  // Greedy longest match first. "unaffable" is not in the vocabulary; its prefixes that are:
  // "una" (13483), "un", "u" -> "una". Then of "##ffable" ... "##f": "##ffa" (19967) is the
  // longest; then "##ble" (2474).
  EXPECT_EQ(wp.Encode("unaffable"), (Ids{13483, 19967, 2474}));
  // "Ångström" -> "angstrom": "ang" (16082) then "##strom" (14693), longer than "##st".
  EXPECT_EQ(wp.Encode("Ångström"), (Ids{16082, 14693}));
  // handle_chinese_chars puts spaces around CJK ideographs: 中 752, 文 867.
  EXPECT_EQ(wp.Encode("中文"), (Ids{752, 867}));
  // A word longer than max_input_chars_per_word (100) is [UNK] (1) as a whole; so is a word with
  // a character no piece covers.
  EXPECT_EQ(wp.Encode(std::string(101, 'a')), (Ids{1}));
  EXPECT_EQ(wp.Encode("\xF0\x9F\x98\x80"), (Ids{1}));  // U+1F600
  // Added tokens in the text keep their ids even without special tokens added: [CLS] is 2.
  EXPECT_EQ(wp.Encode("hello [CLS] world"), (Ids{6598, 2, 1094}));
  // clean_text drops control characters and U+FFFD, and maps other whitespace to ' '.
  EXPECT_EQ(wp.Encode("hel\x01lo\xC2\xA0world\xEF\xBF\xBD"), (Ids{6598, 1094}));
  // Invalid UTF-8 is read as U+FFFD, which clean_text drops.
  EXPECT_EQ(wp.Encode("hello\xFF world"), (Ids{6598, 1094}));
  EXPECT_EQ(wp.Encode(""), Ids{});
  EXPECT_EQ(wp.Encode(" \t\n"), Ids{});
}

TEST(HfTokenizerTest, UnigramByHand) {
  const HfTokenizer& ug = UnigramFixture();
  // Metaspace (prepend_scheme always, split false) after the normalizer Sequence, which replaces
  // "," with " , ", collapses \s+ to " " and strips: "Hello, World" -> "hello , world" ->
  // "▁hello▁,▁world", one word. The Viterbi path is ▁hello 6594, ▁, 13, ▁world 1091.
  EXPECT_EQ(ug.Encode("Hello, World"), (Ids{6594, 13, 1091}));
  // "▁unaffable": ▁una 13479 + ffa 19963 + ble 2470 (the oracle file confirms the path).
  EXPECT_EQ(ug.Encode("unaffable"), (Ids{13479, 19963, 2470}));
}

// The reference library's ids for every text of tokenizer_oracle.jsonl under every configuration.
std::string ModelText(const std::string& json) {
  std::size_t k = json.find("\"model\":");
  while (k != std::string::npos) {
    std::size_t i = k + 8;
    while (i < json.size() && (json[i] == ' ' || json[i] == '\n')) ++i;
    if (i < json.size() && json[i] == '{') return json.substr(i, json.rfind('}') - i);
    k = json.find("\"model\":", k + 1);
  }
  return "";
}

std::string Unhex(std::string_view hex) {
  std::string out;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
  }
  return out;
}

std::vector<std::string> SplitTabs(const std::string& s) {
  std::vector<std::string> out;
  std::size_t b = 0;
  while (true) {
    const std::size_t e = s.find('\t', b);
    out.push_back(s.substr(b, e == std::string::npos ? std::string::npos : e - b));
    if (e == std::string::npos) return out;
    b = e + 1;
  }
}

TEST(HfTokenizerTest, MatchesReferenceLibrary) {
  std::ifstream in(kM2vData + "tokenizer_oracle.txt");
  ASSERT_TRUE(in) << "missing " << kM2vData << "tokenizer_oracle.txt";
  const std::string wp_json = ReadAll(kF32 + "/tokenizer.json");
  const std::string ug_json = ReadAll(kVq + "/tokenizer.json");
  std::vector<std::string> texts;
  std::string line, name;
  std::optional<HfTokenizer> tok;
  std::size_t next = 0;
  int configs = 0, checked = 0, failures = 0;
  auto finish_config = [&] {
    if (!tok) return;
    EXPECT_EQ(next, texts.size()) << name;
    EXPECT_EQ(failures, 0) << name;
    ++configs;
  };
  while (std::getline(in, line)) {
    if (line.rfind("T ", 0) == 0) {
      texts.push_back(Unhex(std::string_view(line).substr(2)));
    } else if (line.rfind("C ", 0) == 0) {
      finish_config();
      const std::vector<std::string> f = SplitTabs(line.substr(2));
      ASSERT_EQ(f.size(), 5u) << line;
      name = f[0];
      const std::string& base = f[1];
      const std::string base_json = base == "wordpiece" ? wp_json
                                    : base == "unigram" ? ug_json
                                                        : ReadAll(kM2vData + base.substr(5));
      std::string json = base_json;
      if (f[3] != "-") {
        json =
            "{\"version\":\"1.0\",\"truncation\":null,\"padding\":null,\"added_tokens\":" + f[2] +
            ",\"normalizer\":" + f[3] + ",\"pre_tokenizer\":" + f[4] +
            ",\"post_processor\":null,\"decoder\":null,\"model\":" + ModelText(base_json) + "}";
      }
      auto t = HfTokenizer::Parse(json, name);
      ASSERT_TRUE(t.ok()) << name << ": " << t.error().message;
      tok.emplace(std::move(*t));
      next = 0;
      failures = 0;
    } else if (line.rfind("I", 0) == 0) {
      ASSERT_TRUE(tok.has_value());
      ASSERT_LT(next, texts.size()) << name;
      std::istringstream ids_in(line.substr(1));
      Ids want;
      int id;
      while (ids_in >> id) want.push_back(id);
      const Ids got = tok->Encode(texts[next]);
      if (got != want && ++failures <= 5) {
        ADD_FAILURE() << name << ": text #" << next << " \"" << texts[next] << "\"\n  got  "
                      << testing::PrintToString(got) << "\n  want " << testing::PrintToString(want);
      }
      ++checked;
      ++next;
    }
  }
  finish_config();
  EXPECT_EQ(configs, 23);
  EXPECT_EQ(texts.size(), 289u);
  EXPECT_EQ(checked, 23 * 289);
}

TEST(HfTokenizerTest, BadFilesNameTheFileAndComponent) {
  auto err = [](const std::string& json) {
    auto t = HfTokenizer::Parse(json, "m/tokenizer.json");
    EXPECT_FALSE(t.ok()) << json;
    return t.ok() ? std::string() : t.error().message;
  };
  EXPECT_NE(err("{not json").find("m/tokenizer.json: malformed JSON ("), std::string::npos);
  EXPECT_NE(err("[]").find("m/tokenizer.json: \"(top level)\" is an array (expected an object)"),
            std::string::npos);
  EXPECT_NE(err("{}").find("\"model\" is missing"), std::string::npos);
  const std::string wp =
      R"("model":{"type":"WordPiece","unk_token":"[UNK]","vocab":{"[UNK]":0,"a":1}})";
  EXPECT_NE(err(R"({"model":{"type":"BPE","vocab":{},"merges":[]}})")
                .find("unsupported model type \"BPE\" (expected WordPiece, Unigram or WordLevel"),
            std::string::npos);
  EXPECT_NE(err(R"({"normalizer":{"type":"Precompiled","precompiled_charsmap":""},)" + wp + "}")
                .find("m/tokenizer.json: unsupported normalizer \"Precompiled\" in normalizer"),
            std::string::npos);
  EXPECT_NE(
      err(R"({"normalizer":{"type":"Sequence","normalizers":[{"type":"Lowercase"},{"type":"Replace","pattern":{"Regex":"[a-z]+"},"content":""}]},)" +
          wp + "}")
          .find("unsupported Replace regex \"[a-z]+\" in normalizer.normalizers[1]"),
      std::string::npos);
  EXPECT_NE(err(R"({"pre_tokenizer":{"type":"ByteLevel"},)" + wp + "}")
                .find("unsupported pre-tokenizer \"ByteLevel\" in pre_tokenizer"),
            std::string::npos);
  EXPECT_NE(err(R"({"model":{"type":"WordPiece","vocab":{"a":"x"}}})")
                .find("\"model.vocab[\"a\"]\" is a string (expected an integer)"),
            std::string::npos);
  EXPECT_NE(err(R"({"model":{"type":"Unigram","unk_id":5,"vocab":[["a",-1.0]]}})")
                .find("\"model.unk_id\" is 5 but the vocabulary has 1 pieces"),
            std::string::npos);
  EXPECT_NE(err(R"({"model":{"type":"Unigram","vocab":[["a"]]}})")
                .find("\"model.vocab[0]\" is not a [piece, score] pair"),
            std::string::npos);
  EXPECT_NE(err(R"({"padding":{"strategy":"BatchLongest"},)" + wp + "}").find("\"padding\" is set"),
            std::string::npos);
  auto missing = HfTokenizer::Load("/nonexistent/tokenizer.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().message,
            "/nonexistent/tokenizer.json: no such file (expected a tokenizer.json file)");
}

TEST(HfTokenizerTest, TruncationFromTheFile) {
  // The reference library (tokenizers 0.23.2) gives [1, 2] / [3, 0] (Right) and [2, 3] / [3, 0]
  // (Left) for this file.
  for (const std::string dir : {"Right", "Left"}) {
    const std::string json = R"({"truncation":{"max_length":2,"strategy":"LongestFirst","stride":0,)"
                             R"("direction":")" +
                             dir +
                             R"("},"pre_tokenizer":{"type":"WhitespaceSplit"},)"
                             R"("model":{"type":"WordLevel","unk_token":"[UNK]",)"
                             R"("vocab":{"[UNK]":0,"a":1,"b":2,"c":3}}})";
    auto t = HfTokenizer::Parse(json, "t.json");
    ASSERT_TRUE(t.ok()) << t.error().message;
    EXPECT_EQ(t->Encode("a b c"), dir == "Right" ? (Ids{1, 2}) : (Ids{2, 3}));
    EXPECT_EQ(t->Encode("c x"), (Ids{3, 0}));
  }
}

// ---------------------------------------------------------------------------- model2vec

TEST(Model2VecTest, MatchesPythonFixtures) {
  auto f32 = Load(kF32);
  ASSERT_NE(f32, nullptr);
  EXPECT_EQ(f32->backend(), "model2vec");
  EXPECT_EQ(f32->dims(), 2);
  std::string long_text = "hello";
  for (int i = 1; i < 1000; ++i) long_text += " hello";
  Vec s = EmbedOne(*f32, "hello world");
  EXPECT_TRUE(s.has);
  ExpectClose(s.v, ReadExpected(kFixtures + "embeddings_short.json"), 1e-5, "short");
  // The long text is cut to 512 tokens (3072 characters first), and float32 rows are summed in
  // float32, as numpy did: that reproduces Python's output to the last bit here. A double sum (or
  // 1000 tokens) would give -0.7980812 / -0.6025499, 4e-6 and 7e-6 away.
  Vec l = EmbedOne(*f32, long_text);
  ExpectClose(l.v, ReadExpected(kFixtures + "embeddings_long.json"), 1e-5, "long");
  const auto want_long = ReadExpected(kFixtures + "embeddings_long.json");
  EXPECT_EQ(l.v[0], static_cast<float>(want_long[0]));
  EXPECT_EQ(l.v[1], static_cast<float>(want_long[1]));

  auto vq = Load(kVq);
  ASSERT_NE(vq, nullptr);
  EXPECT_EQ(vq->dims(), 64);
  ExpectClose(EmbedOne(*vq, long_text).v,
              ReadExpected(kFixtures + "embeddings_vocab_quantized.json"), 1e-5, "vocab quantized");
}

TEST(Model2VecTest, VocabQuantizedTwoTokensByNumpy) {
  // "hello world" -> ▁hello 6594, ▁world 1091 (oracle); mapping -> rows 124, 83; weights
  // 0.8668513096144009, 0.5189568565130355; v = mean(E[124]*w0, E[83]*w1); v / (|v| + 1e-32),
  // computed with numpy from the file's bytes.
  const std::vector<double> want = {
      -0.0006017525244626691, -0.32968359111803575,  0.31183154315300654,   -0.10358465754516667,
      -0.23365965869047275,   -0.10960152391352293,  -0.027530384211650792, -0.1458674586398191,
      0.1983662860702912,     -0.027244549313449166, -0.24736306079493162,  -0.17711410133681968,
      0.11770447605819982,    0.05841143766532098,   -0.02500831476508095,  0.019392276185177006,
      -0.057399648445511306,  4.391384497208232e-05, 0.0843392363034222,    0.0029508915233424494,
      0.15647749099457875,    -0.028404335589616348, -0.1390035611145893,   -0.24753590326696975,
      0.17708206414239688,    -0.21040843763113146,  0.055494610629048514,  0.1999006645827356,
      0.07084851538868209,    -0.11044425884608317,  0.10162689002343797,   -0.016858785058354208,
      -0.012455709171028749,  -0.004950517239562385, -0.11010380976495633,  0.00846107854054281,
      0.01962280868646084,    0.12167270760985752,   -0.02281726935569883,  0.060596525213414895,
      -0.19171587559674994,   0.038817755674880786,  -0.02513172305471828,  -0.02653509107839591,
      0.04314917629539509,    0.10887617120874933,   0.09021639631286658,   -0.1692703101904999,
      -0.06446208588592427,   -0.17771396519345578,  0.08600701110040518,   0.08342454281425267,
      0.19413307019665563,    -0.05198266248364224,  0.19203778333160632,   0.13368914560801984,
      0.012973999940613073,   0.01766614644190601,   0.04151513929934866,   -0.051114033677529154,
      0.04394944047143421,    0.07552138164666482,   -0.02514997286338663,  0.02817071144048001};
  auto vq = Load(kVq);
  ASSERT_NE(vq, nullptr);
  ExpectClose(EmbedOne(*vq, "hello world").v, want, 1e-6, "vq hello world");
}

TEST(Model2VecTest, Float16AndInt8ByHand) {
  // Rows of hello (6598) and world (1094) in each file (read with numpy):
  //   float16: [-9.359375, -7.06640625], [6.05859375, -0.6435546875]
  //            mean [-1.650390625, -3.85498046875], |mean| = 4.193393..., normalized below;
  //   int8:    [-23, -17], [15, -2] (no scale) -> mean [-4, -9.5] -> / sqrt(16 + 90.25).
  auto f16 = Load(kF16);
  auto i8 = Load(kI8);
  auto f32 = Load(kF32);
  ASSERT_TRUE(f16 && i8 && f32);
  const Vec h = EmbedOne(*f16, "hello world");
  ExpectClose(h.v, {-0.39356794155466834, -0.9192955321225167}, 1e-6, "float16");
  const double n8 = std::sqrt(16 + 90.25);
  const Vec q = EmbedOne(*i8, "hello world");
  ExpectClose(q.v, {-4 / n8, -9.5 / n8}, 1e-6, "int8");
  // model2vec-rs's quantized_models_match_float32: within 10% relative of the float32 model.
  const Vec r = EmbedOne(*f32, "hello world");
  ExpectClose(h.v, {r.v[0], r.v[1]}, 1e-1, "float16 vs float32");
  ExpectClose(q.v, {r.v[0], r.v[1]}, 1e-1, "int8 vs float32");
}

TEST(Model2VecTest, SentenceTransformersLayout) {
  // Same weights under "embedding.weight", config_sentence_transformers.json {"normalize": true}.
  auto st = Load(kSt);
  auto f32 = Load(kF32);
  ASSERT_TRUE(st && f32);
  for (const char* p : {"hello", "world test sentence", "hello world"}) {
    EXPECT_EQ(EmbedOne(*st, p).v, EmbedOne(*f32, p).v) << p;
  }
  EXPECT_NE(st->fingerprint(), f32->fingerprint());
}

TEST(Model2VecTest, NoTokensNoVector) {
  auto f32 = Load(kF32);
  ASSERT_NE(f32, nullptr);
  const std::vector<std::string_view> phrases = {"",      "   ",   "\xF0\x9F\x98\x80",
                                                 "[UNK]", "hello", "\xEE\x80\x80"};
  std::vector<float> out(phrases.size() * 2, 7.0f);
  std::vector<std::uint8_t> has(phrases.size(), 7);
  ASSERT_TRUE(f32->Embed(phrases, out.data(), has.data()).ok());
  // "" and spaces: no tokens. The emoji is [UNK] and U+E000 is dropped by clean_text; [UNK] ids are
  // dropped, as model2vec drops them for WordPiece tokenizers.
  EXPECT_EQ(has, (std::vector<std::uint8_t>{0, 0, 0, 0, 1, 0}));
  for (std::size_t i : {0u, 1u, 2u, 3u, 5u}) {
    EXPECT_EQ(out[2 * i], 0.0f);
    EXPECT_EQ(out[2 * i + 1], 0.0f);
  }
  // model2vec-rs's test_normalization_flag_override: unit norm when normalize is on.
  EXPECT_NEAR(std::hypot(out[8], out[9]), 1.0, 1e-6);
}

TEST(Model2VecTest, UnigramKeepsUnknownIdsAsPythonDoes) {
  // Python model2vec looks for tokenizer.model.unk_token, which a Unigram model does not have, so
  // it keeps unknown ids: U+E000 is dropped by clean_text but "\xE2\x98\x83" (☃) is an unknown
  // piece (id 1) that stays, and its vector is row mapping[1] x weights[1].
  auto vq = Load(kVq);
  ASSERT_NE(vq, nullptr);
  EXPECT_EQ(UnigramFixture().Encode("\xE2\x98\x83"), (Ids{1}));
  EXPECT_TRUE(EmbedOne(*vq, "\xE2\x98\x83").has);
  EXPECT_EQ(EmbedOne(*vq, "\xE2\x98\x83").v, EmbedOne(*vq, "[UNK]").v);
}

TEST(Model2VecTest, TruncationToMaxLength) {
  auto f32 = Load(kF32);
  ASSERT_NE(f32, nullptr);
  // 512 "a" tokens then "b" tokens, 1224 characters (< 3072): only the token limit cuts.
  std::string ab;
  for (int i = 0; i < 512; ++i) ab += "a ";
  std::string ab_b = ab;
  for (int i = 0; i < 100; ++i) ab_b += "b ";
  // (Close, not equal: 512 float32 additions of one row round differently from the row itself.
  // Without the cut, b would be a sixth of the mean, and "a b" is far from "a".)
  const Vec a = EmbedOne(*f32, "a");
  ExpectClose(EmbedOne(*f32, ab_b).v, {a.v[0], a.v[1]}, 1e-4, "512 a, then b");
  const Vec mix = EmbedOne(*f32, "a b");
  EXPECT_GT(std::fabs(mix.v[0] - a.v[0]) + std::fabs(mix.v[1] - a.v[1]), 0.01);
  // The character cut: 512 * median token length (int(np.median) of the 29528 token lengths = 6)
  // = 3072 characters. "internationalization " is 21 characters and 2 tokens
  // (international ##ization), so 150 of them (300 tokens) and " world" exceed 3072 characters
  // but not 512 tokens: " world" is cut away with the characters.
  std::string intl;
  for (int i = 0; i < 150; ++i) intl += "internationalization ";
  const std::string with_world = intl + "world";
  EXPECT_EQ(EmbedOne(*f32, with_world).v, EmbedOne(*f32, with_world.substr(0, 3072)).v);
  EXPECT_NE(EmbedOne(*f32, with_world.substr(0, 3072)).v,
            EmbedOne(*f32, "world " + with_world.substr(0, 3066)).v);
}

TEST(Model2VecTest, NormalizeFromConfigOrModules) {
  // normalize false: the plain mean of the two rows, in float32:
  // ([-9.357313, -7.064754] + [6.0584302, -0.6433963]) / 2 = [-1.6494415, -3.854075].
  {
    TempDir d;
    CopyModel(kF32, d);
    WriteAll(d / "config.json", R"({"model_type": "model2vec", "normalize": false})");
    auto m = Load(d.path());
    ASSERT_NE(m, nullptr);
    ExpectClose(EmbedOne(*m, "hello world").v, {-1.6494414806365967, -3.854075402021408}, 1e-6,
                "unnormalized");
  }
  const double hello_norm = std::hypot(-9.35731315612793, -7.064754486083984);
  // No config: modules.json decides; without it, normalize.
  for (const char* modules : {"", "[{\"type\": \"sentence_transformers.models.StaticEmbedding\"}]",
                              "[{\"type\": \"sentence_transformers.models.StaticEmbedding\"}, "
                              "{\"type\": \"sentence_transformers.models.Normalize\"}]"}) {
    TempDir d;
    CopyModel(kF32, d);
    fs::remove(d / "config.json");
    fs::remove(d / "modules.json");
    if (*modules != '\0') WriteAll(d / "modules.json", modules);
    auto m = Load(d.path());
    ASSERT_NE(m, nullptr);
    const Vec v = EmbedOne(*m, "hello");
    const bool normalized =
        std::string(modules).empty() || std::string(modules).find("Normalize") != std::string::npos;
    EXPECT_NEAR(std::hypot(v.v[0], v.v[1]), normalized ? 1.0 : hello_norm, 1e-5) << modules;
  }
  // sentence-transformers layout with both configs: its own config_sentence_transformers.json wins.
  {
    TempDir d;
    CopyModel(kSt, d);
    WriteAll(d / "config.json", R"({"model_type":"model2vec","normalize":false})");
    auto m = Load(d.path());
    ASSERT_NE(m, nullptr);
    const Vec v = EmbedOne(*m, "hello world");
    EXPECT_NEAR(std::hypot(v.v[0], v.v[1]), 1.0, 1e-6);
  }
}

TEST(Model2VecTest, Fingerprint) {
  auto a = Load(kF32);
  auto b = Load(kF32);
  ASSERT_TRUE(a && b);
  // The scheme: SHA-256 over name NUL size NUL bytes for each file, in name order.
  std::string all;
  for (const char* f : {"config.json", "model.safetensors", "tokenizer.json"}) {
    const std::string bytes = ReadAll(kF32 + "/" + f);
    all += std::string(f) + '\0' + std::to_string(bytes.size()) + '\0' + bytes;
  }
  EXPECT_EQ(a->fingerprint(), Sha256Hex(all));
  EXPECT_EQ(a->fingerprint(), b->fingerprint());
  EXPECT_EQ(a->fingerprint().size(), 64u);
  // float16 has other weights but the same tokenizer and config.
  auto f16 = Load(kF16);
  ASSERT_NE(f16, nullptr);
  EXPECT_NE(f16->fingerprint(), a->fingerprint());
  // A changed config changes it; README.md does not count.
  TempDir d;
  CopyModel(kF32, d);
  WriteAll(d / "README.md", "changed");
  auto same = Load(d.path());
  ASSERT_NE(same, nullptr);
  EXPECT_EQ(same->fingerprint(), a->fingerprint());
  WriteAll(d / "config.json", R"({"normalize": true})");
  auto other = Load(d.path());
  ASSERT_NE(other, nullptr);
  EXPECT_NE(other->fingerprint(), a->fingerprint());
}

TEST(Model2VecTest, ConcurrentEmbedMatchesSerial) {
  auto vq = Load(kVq);
  ASSERT_NE(vq, nullptr);
  const std::vector<std::string_view> phrases = {
      "neural networks",     "Café Münster", "state-of-the-art", "hello world", "",
      "keyphrase extraction"};
  const std::size_t d = 64;
  std::vector<float> serial(phrases.size() * d);
  std::vector<std::uint8_t> serial_has(phrases.size());
  ASSERT_TRUE(vq->Embed(phrases, serial.data(), serial_has.data()).ok());
  std::vector<std::thread> threads;
  std::atomic<int> mismatches{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      std::vector<float> out(phrases.size() * d);
      std::vector<std::uint8_t> has(phrases.size());
      for (int rep = 0; rep < 200; ++rep) {
        if (!vq->Embed(phrases, out.data(), has.data()).ok() || out != serial ||
            has != serial_has) {
          ++mismatches;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(mismatches.load(), 0);
}

TEST(Model2VecTest, BadModelsAreErrorsNamingTheFile) {
  EXPECT_NE(LoadError("/nonexistent/m2v").find("/nonexistent/m2v: no such directory"),
            std::string::npos);
  {
    TempDir d;
    CopyModel(kF32, d);
    fs::remove(d / "tokenizer.json");
    EXPECT_NE(LoadError(d.path()).find(d / "tokenizer.json" + ": missing"), std::string::npos);
  }
  {  // truncated weights
    TempDir d;
    CopyModel(kF32, d);
    WriteAll(d / "model.safetensors", ReadAll(kF32 + "/model.safetensors").substr(0, 4000));
    const std::string e = LoadError(d.path());
    EXPECT_NE(e.find(d / "model.safetensors" + ": tensor \"embeddings\" data_offsets [0, 236224] "
                                               "are outside the 3912-byte data region"),
              std::string::npos)
        << e;
  }
  const std::string tok_ids = "29528";
  auto model_with = [&](const std::vector<RawTensor>& ts, const std::string& base = kF32) {
    auto d = std::make_unique<TempDir>();
    CopyModel(base, *d);
    WriteAll(*d / "model.safetensors", MakeSafetensors(ts));
    return d;
  };
  std::vector<float> table(29528 * 2, 0.5f);
  {  // no embedding tensor
    auto d = model_with({{"other", "F32", {2}, Bytes(std::vector<float>{1, 2})}});
    const std::string e = LoadError(d->path());
    EXPECT_NE(e.find(*d / "model.safetensors" +
                     ": no tensor \"embeddings\" or \"embedding.weight\" (has \"other\")"),
              std::string::npos)
        << e;
  }
  {  // rows disagree with the tokenizer
    auto d = model_with({{"embeddings", "F32", {10, 2}, Bytes(std::vector<float>(20, 1.0f))}});
    const std::string e = LoadError(d->path());
    EXPECT_NE(e.find("tensor \"embeddings\" has 10 rows but " + *d / "tokenizer.json" + " has " +
                     tok_ids + " token ids"),
              std::string::npos)
        << e;
  }
  {  // 1-D table
    auto d = model_with({{"embeddings", "F32", {4}, Bytes(std::vector<float>(4, 1.0f))}});
    EXPECT_NE(LoadError(d->path()).find("has shape [4] (expected [vocabulary, dimensions])"),
              std::string::npos);
  }
  {  // NaN weight
    std::vector<float> t = table;
    t[6598 * 2 + 1] = NAN;
    auto d = model_with({{"embeddings", "F32", {29528, 2}, Bytes(t)}});
    const std::string e = LoadError(d->path());
    EXPECT_NE(e.find(*d / "model.safetensors" + ": tensor \"embeddings\" element 13197 is nan"),
              std::string::npos)
        << e;
  }
  {  // unsupported embedding dtype
    auto d = model_with(
        {{"embeddings", "I32", {29528, 2}, Bytes(std::vector<std::int32_t>(29528 * 2))}});
    EXPECT_NE(LoadError(d->path()).find("has dtype I32 (expected F32, F16, BF16, F64 or I8"),
              std::string::npos);
  }
  {  // mapping out of range, weights of the wrong length (on the Unigram fixture's tokenizer)
    std::vector<std::int32_t> mapping(29524, 0);
    mapping[7] = 128;
    auto d = model_with({{"embeddings", "F32", {128, 2}, Bytes(std::vector<float>(256, 1.0f))},
                         {"mapping", "I32", {29524}, Bytes(mapping)}},
                        kVq);
    EXPECT_NE(LoadError(d->path()).find("tensor \"mapping\" element 7 is 128 (expected a row of "
                                        "\"embeddings\", 0 to 127)"),
              std::string::npos);
    mapping[7] = 0;
    auto w = model_with({{"embeddings", "F32", {128, 2}, Bytes(std::vector<float>(256, 1.0f))},
                         {"mapping", "I32", {29524}, Bytes(mapping)},
                         {"weights", "F64", {3}, Bytes(std::vector<double>(3, 1.0))}},
                        kVq);
    EXPECT_NE(LoadError(w->path()).find("tensor \"weights\" has shape [3] but the tokenizer has "
                                        "29524 ids"),
              std::string::npos);
    auto nan_w = std::vector<double>(29524, 1.0);
    nan_w[3] = INFINITY;
    auto wn = model_with({{"embeddings", "F32", {128, 2}, Bytes(std::vector<float>(256, 1.0f))},
                          {"mapping", "I32", {29524}, Bytes(mapping)},
                          {"weights", "F64", {29524}, Bytes(nan_w)}},
                         kVq);
    EXPECT_NE(LoadError(wn->path()).find("tensor \"weights\" element 3 is inf"), std::string::npos);
  }
  {  // bad config.json, bad tokenizer.json
    TempDir d;
    CopyModel(kF32, d);
    WriteAll(d / "config.json", "{\"normalize\": \"yes\"}");
    EXPECT_NE(LoadError(d.path()).find(d / "config.json" + ": \"normalize\" is not a boolean"),
              std::string::npos);
    WriteAll(d / "config.json", "not json");
    EXPECT_NE(LoadError(d.path()).find(d / "config.json" + ": malformed JSON ("), std::string::npos)
        << LoadError(d.path());
    WriteAll(d / "config.json", "[1]");
    EXPECT_NE(LoadError(d.path()).find(d / "config.json" + ": not a JSON object (expected the model's configuration)"),
              std::string::npos);
    // Line 2 is `"size": 1267...`: `"size": ` is 8 characters, so the integer starts in column 9.
    WriteAll(d / "config.json", "{\"normalize\": true,\n\"size\": 1267650600228229401496703205376}");
    EXPECT_NE(LoadError(d.path()).find(d / "config.json" +
                                       ": integer out of range at line 2, column 9 ('1267650600228229401496703205376'"),
              std::string::npos)
        << LoadError(d.path());
    WriteAll(d / "config.json", "{}");
    WriteAll(d / "tokenizer.json", ReadAll(kF32 + "/tokenizer.json").substr(0, 5000));
    EXPECT_NE(LoadError(d.path()).find(d / "tokenizer.json" + ": malformed JSON ("),
              std::string::npos);
  }
}

// Throughput for keyphrase-sized inputs (2-3 words), logged for the record.
TEST(Model2VecTest, ShortPhraseThroughput) {
  auto f32 = Load(kF32);
  ASSERT_NE(f32, nullptr);
  const std::vector<std::string> words = {
      "neural", "network", "graph", "learning", "keyphrase", "extraction", "support",
      "vector", "machine", "deep",  "semantic", "retrieval", "Café",       "state-of-the-art"};
  std::mt19937 rng(7);
  std::vector<std::string> store;
  for (int i = 0; i < 20000; ++i) {
    const int n = 2 + static_cast<int>(rng() % 2);
    std::string p;
    for (int k = 0; k < n; ++k) p += (k ? " " : "") + words[rng() % words.size()];
    store.push_back(p);
  }
  const std::vector<std::string_view> phrases(store.begin(), store.end());
  std::vector<float> out(phrases.size() * 2);
  std::vector<std::uint8_t> has(phrases.size());
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(f32->Embed(phrases, out.data(), has.data()).ok());
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::cout << "[ model2vec ] " << phrases.size() << " phrases in " << s * 1000
            << " ms: " << static_cast<long>(phrases.size() / s) << " phrases/s (one thread)\n";
  EXPECT_EQ(std::count(has.begin(), has.end(), 1), static_cast<long>(phrases.size()));
}

}  // namespace
}  // namespace kplab
