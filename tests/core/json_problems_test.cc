// JSON that simdjson refuses is reported by what is wrong and where, not as "malformed JSON": a document
// nested too deeply, a number beyond a double, an integer beyond 64 bits (simdjson gives one error code,
// NUMBER_ERROR, for the last two, and none of them has a position). Columns are counted by hand below.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "kplab/hf_tokenizer.h"
#include "kplab/io.h"

namespace kplab {
namespace {

namespace fs = std::filesystem;

class JsonProblems : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kplab_json_problems_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  // The import error of a kpeval JSON Lines file holding `text`.
  std::string KpevalError(const std::string& text) {
    const std::string f = (dir_ / "d.jsonl").string();
    std::ofstream(f, std::ios::binary) << text;
    DatasetOptions opt;
    opt.format = "kpeval";
    auto ds = ImportDataset(f, opt);
    EXPECT_FALSE(ds.ok());
    return ds.ok() ? "" : ds.error().message.substr(f.size());
  }
  fs::path dir_;
};

const std::string kLine = " (expected one JSON object a line)";

TEST_F(JsonProblems, SaysWhatIsWrongAndWhere) {
  const std::string ok = "{\"source\": \"a b\", \"target\": \"a\"}\n";
  // 2^100 as an id: `{"id": ` is 7 characters, the number starts in column 8.
  EXPECT_EQ(KpevalError(ok + "{\"id\": 1267650600228229401496703205376, \"source\": \"a\", \"target\": \"a\"}\n"),
            ":2: integer out of range at column 8 ('1267650600228229401496703205376': JSON integers are read as "
            "64-bit integers)" +
                kLine);
  // 1e999: `{"source": "a", "target": "a", "x": ` is 36 characters.
  EXPECT_EQ(KpevalError("{\"source\": \"a\", \"target\": \"a\", \"x\": 1e999}\n"),
            ":1: number out of range at column 37 ('1e999': beyond the range of a double)" + kLine);
  EXPECT_EQ(KpevalError("{\"source\": \"a\", \"target\": \"a\", \"x\": -2e308}\n"),
            ":1: number out of range at column 37 ('-2e308': beyond the range of a double)" + kLine);
  // The 1024th [ opens level 1025 (the object is level 1): it is character 6 + 1024 of the line.
  EXPECT_EQ(KpevalError("{\"x\": " + std::string(2000, '[') + std::string(2000, ']') + "}\n"),
            ":1: too deeply nested at column 1030 (more than 1024 levels of arrays and objects)" + kLine);
  // 2^64 - 1 and -2^63 are 64-bit integers: a number simdjson refuses for another reason is named as such.
  const std::string other = KpevalError("{\"id\": 18446744073709551615, \"x\": -9223372036854775808, \"y\": 1.}\n");
  EXPECT_EQ(other.rfind(":1: malformed JSON (", 0), 0u) << other;
  // Structural errors keep simdjson's own description.
  EXPECT_EQ(KpevalError("{\"source\": \n").rfind(":1: malformed JSON (", 0), 0u);
}

// A whole-file JSON document (records as one array, a pke reference file) gives line and column.
TEST_F(JsonProblems, WholeFileDocumentsGiveLineAndColumn) {
  const std::string f = (dir_ / "refs.json").string();
  std::ofstream(f, std::ios::binary) << "{\n  \"d1\": [[\"a\"]],\n  \"d2\": [[\"b\", 1e400]]\n}\n";
  const std::string ds = (dir_ / "ds").string();
  fs::create_directories(ds);
  std::ofstream(ds + "/d1.abstr") << "a b\n";
  // pke's reference JSON for a text-file dataset (Hulth's layout).
  DatasetOptions opt;
  opt.format = "hulth";
  opt.references = f;
  auto r = ImportDataset(ds, opt);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find(f + ": number out of range at line 3, column 16 ('1e400': beyond the range of "
                                       "a double)"),
            std::string::npos)
      << r.error().message;
}

// tokenizer.json: counts the reference reads as unsigned are refused when negative, not clamped to 0.
TEST(HfTokenizerCounts, NegativeCountsAreRefused) {
  auto err = [](const std::string& model_extra, const std::string& top_extra = "") {
    const std::string json = R"({"model":{"type":"WordPiece","unk_token":"[UNK]","vocab":{"[UNK]":0,"a":1})" +
                             model_extra + "}" + top_extra + "}";
    auto t = HfTokenizer::Parse(json, "m/tokenizer.json");
    return t.ok() ? std::string("(parsed)") : t.error().message;
  };
  EXPECT_EQ(err(R"(,"max_input_chars_per_word":-1)"),
            "m/tokenizer.json: \"model.max_input_chars_per_word\" is -1 (expected an integer >= 0)");
  EXPECT_EQ(err(R"(,"max_input_chars_per_word":100)"), "(parsed)");
  EXPECT_EQ(err("", R"(,"truncation":{"max_length":-5})"),
            "m/tokenizer.json: \"truncation.max_length\" is -5 (expected an integer >= 0)");
  EXPECT_NE(err("{").find("m/tokenizer.json: malformed JSON ("), std::string::npos) << err("{");
}

}  // namespace
}  // namespace kplab
