// `kplab eval` on examples/tiny re-expressed in each new format (tests/data/formats, docs/formats.md):
// the same documents, references and predictions must give exactly the aggregates of examples/tiny
// in its own (Meng-2017) format. Also pke's references on real Inspec Test against Hulth's keys.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cli_harness.h"

namespace {

namespace fs = std::filesystem;
using kplab::test::Output;

class Formats : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kplab_formats_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  Output Run(const std::string& args) { return kplab::test::RunKplab(dir_, "KPLAB_DB=" + (dir_ / "db").string(), args); }

  // The "aggregates" object of `kplab eval --output json` (numbers and nulls only: no nested braces).
  std::string Aggregates(const std::string& dataset_args, const std::string& predictions) {
    const Output o = Run("eval --no-store --output json --system s " + dataset_args + " --predictions " + predictions);
    EXPECT_EQ(o.code, 0) << o.err;
    const std::string key = "\"aggregates\": {";
    const auto start = o.out.find(key);
    if (start == std::string::npos) return "no aggregates in: " + o.out + o.err;
    return o.out.substr(start, o.out.find('}', start) - start + 1);
  }

  fs::path dir_;
};

constexpr const char* kFormatsTiny = "--dataset examples/tiny";
constexpr const char* kTinyPreds = "examples/tiny/predictions.txt";
const std::string kF = "tests/data/formats/";

TEST_F(Formats, EveryPretokenizedFormatGivesTinysNumbers) {
  const std::string want = Aggregates(kFormatsTiny, kTinyPreds);
  ASSERT_NE(want.find("\"all.f1@5.macro_hm\""), std::string::npos) << want;
  // midas records (JSONL, a to_json array, a file of two splits) with HF predictions keyed by id.
  EXPECT_EQ(Aggregates("--dataset " + kF + "midas/tiny.jsonl", kF + "hf_predictions.jsonl"), want);
  EXPECT_EQ(Aggregates("--dataset " + kF + "midas/tiny_array.json", kF + "hf_predictions.jsonl"), want);
  EXPECT_EQ(Aggregates("--dataset " + kF + "midas/tiny_splits.jsonl --split test", kF + "hf_predictions.jsonl"), want);
  // Named explicitly rather than detected: the same.
  EXPECT_EQ(Aggregates("--dataset " + kF + "midas/tiny.jsonl --dataset-format midas",
                       kF + "hf_predictions.jsonl --predictions-format hf"),
            want);
  // DeepKPG pair with its " ; "-joined hypotheses file (read as lines), and with OpenNMT-kpg output.
  EXPECT_EQ(Aggregates("--dataset " + kF + "deepkpg", kF + "deepkpg/tiny_hypotheses.txt"), want);
  EXPECT_EQ(Aggregates("--dataset " + kF + "deepkpg/test.source", kF + "opennmt_kpg_predictions.jsonl"), want);
  EXPECT_EQ(Aggregates("--dataset " + kF + "deepkpg --dataset-format deepkpg",
                       kF + "opennmt_kpg_predictions.jsonl --predictions-format opennmt-kpg"),
            want);
}

// taln-ls2n records and a Hulth text directory with pke's references hold raw text, not tokenized
// text, so kplab's word tokenizer reads them. The one difference it makes on tiny: the prediction
// "<unk> review" is dropped by the kplab profile's <unk> filter only when "<unk>" is a token of
// pretokenized text; through the word tokenizer it is an ordinary (never matching) prediction. Without
// that prediction the raw-text formats give tiny's numbers exactly; with it they agree with each other.
TEST_F(Formats, RawTextFormatsGiveTinysNumbersBarTheUnkPrediction) {
  const std::string want = Aggregates(kFormatsTiny, kTinyPreds);
  std::string preds;
  {
    std::ifstream in(std::string(KPLAB_SOURCE_DIR) + "/" + kTinyPreds);
    std::string line;
    while (std::getline(in, line)) {
      const auto at = line.find(";<unk> review");
      if (at != std::string::npos) line.erase(at, 13);
      preds += line + "\n";
    }
  }
  ASSERT_EQ(std::count(preds.begin(), preds.end(), '<'), 5 + 0) << preds;  // the five <peos> only
  const std::string no_unk = (dir_ / "no_unk.txt").string();
  std::ofstream(no_unk) << preds;
  EXPECT_EQ(Aggregates(kFormatsTiny, no_unk), want);  // dropped anyway in tiny's own format
  const std::string pke = "--dataset " + kF + "pke/Test --references " + kF + "pke/tiny.uncontr.json";
  EXPECT_EQ(Aggregates("--dataset " + kF + "taln/tiny.jsonl", no_unk), want);
  EXPECT_EQ(Aggregates(pke, no_unk), want);
  // With it: taln (HF predictions by id, OpenNMT-kpg by line) and pke agree, and differ from tiny.
  const std::string raw = Aggregates("--dataset " + kF + "taln/tiny.jsonl", kF + "hf_predictions.jsonl");
  EXPECT_NE(raw, want);
  EXPECT_EQ(Aggregates("--dataset " + kF + "taln/tiny_text_splits.jsonl --split test",
                       kF + "opennmt_kpg_predictions.jsonl"),
            raw);
  EXPECT_EQ(Aggregates(pke, kTinyPreds), raw);
}

TEST_F(Formats, CliErrorsNameTheFileAndWhatWasExpected) {
  Output o = Run("eval --no-store --dataset " + kF + "midas/tiny_splits.jsonl --predictions " + kF +
                 "hf_predictions.jsonl");
  EXPECT_EQ(o.code, 2);  // bad input
  EXPECT_EQ(o.err, "kplab: " + kF + "midas/tiny_splits.jsonl: records of 2 splits: test, train (expected one split; "
                   "choose one with --split NAME (Python split=NAME) rather than mixing them)\n");
  // A prediction id that is not a document of the chosen split.
  o = Run("eval --no-store --dataset " + kF + "midas/tiny_splits.jsonl --split train --predictions " + kF +
          "hf_predictions.jsonl");
  EXPECT_EQ(o.code, 2);  // bad input
  EXPECT_EQ(o.err, "kplab: " + kF + "hf_predictions.jsonl:1: unknown document id \"5\" (expected an id of a document of " +
                       kF + "midas/tiny_splits.jsonl)\n");
  o = Run("eval --no-store --dataset examples/tiny --references " + kF + "pke/tiny.uncontr.json --predictions " +
          kTinyPreds);
  EXPECT_EQ(o.code, 2);  // bad input
  EXPECT_EQ(o.err, "kplab: examples/tiny: references file given for format \"meng\", whose files hold their own "
                   "references (expected --references only with a text-file dataset: hulth or semeval)\n");
}

// Inspec Test evaluated with its .uncontr keys and with pke's test.uncontr.json: the same numbers under
// the kplab profile (which lower-cases and strips references, the normalisation pke applied to its
// file). Predictions are made up here from the keys so that some match and some do not.
TEST_F(Formats, PkeInspecReferencesGiveHulthNumbers) {
  const fs::path test = fs::path(KPLAB_SHARED_DATA) / "inspec_hulth2003/Test";
  const fs::path refs = fs::path(KPLAB_SHARED_DATA) / "inspec_hulth2003/boudinfl_references/test.uncontr.json";
  if (!fs::exists(refs)) GTEST_SKIP() << "shared data not found at " << refs;
  std::vector<long> ids;
  for (const auto& e : fs::directory_iterator(test)) {
    if (e.path().extension() == ".abstr") ids.push_back(std::stol(e.path().stem().string()));
  }
  std::sort(ids.begin(), ids.end());
  ASSERT_EQ(ids.size(), 500u);
  // Document i predicts every other key of its own and the first key of the next document.
  std::vector<std::string> keys;
  for (long id : ids) {
    std::ifstream in(test / (std::to_string(id) + ".uncontr"));
    std::string all((std::istreambuf_iterator<char>(in)), {});
    std::replace(all.begin(), all.end(), '\n', ' ');
    std::replace(all.begin(), all.end(), '\t', ' ');
    keys.push_back(all);
  }
  std::string preds;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    std::vector<std::string> own;
    std::string piece;
    for (char c : keys[i] + ";") {
      if (c == ';') {
        own.push_back(piece);
        piece.clear();
      } else {
        piece += c;
      }
    }
    std::string line;
    for (std::size_t k = 0; k < own.size(); k += 2) line += (line.empty() ? "" : ";") + own[k];
    line += ";" + keys[(i + 1) % keys.size()].substr(0, keys[(i + 1) % keys.size()].find(';'));
    preds += line + "\n";
  }
  const std::string pred_path = (dir_ / "inspec_preds.txt").string();
  std::ofstream(pred_path) << preds;
  const std::string hulth = Aggregates("--dataset " + test.string(), pred_path);
  EXPECT_EQ(Aggregates("--dataset " + test.string() + " --references " + refs.string(), pred_path), hulth);
  EXPECT_NE(hulth.find("\"all.f1@5.macro_hm\""), std::string::npos);
}

}  // namespace
