// Importers. Expected values come from reading the fixture files in tests/data/io/ and the real
// data in ../shared/data by hand; SHA-256 values come from the FIPS 180-2 examples and `sha256sum`.
#include "kplab/io.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "../../core/src/io/io_internal.h"
#include "../../core/src/util/sha256_internal.h"
#include "temp_dir.h"

namespace kplab {
namespace {

DatasetOptions WithFormat(const std::string& format) {
  DatasetOptions o;
  o.format = format;
  return o;
}

const std::string kIoData = std::string(KPLAB_TEST_DATA) + "/io/";
const std::string kIoShared = std::string(KPLAB_SHARED_DATA) + "/";

using Refs = std::vector<std::vector<std::string>>;

RawDataset ImportOrDie(const std::string& path, const DatasetOptions& options = {}) {
  auto r = ImportDataset(path, options);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  if (!r.ok()) return {};
  return std::move(r).value();
}

std::string ImportError(const std::string& path, const DatasetOptions& options = {}) {
  auto r = ImportDataset(path, options);
  EXPECT_FALSE(r.ok()) << path << " imported without error";
  return r.ok() ? "" : r.error().message;
}

RawPredictions PredsOrDie(const std::string& path, const std::string& format = "") {
  auto r = ImportPredictions(path, format);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  if (!r.ok()) return {};
  return std::move(r).value();
}

std::string PredsError(const std::string& path) {
  auto r = ImportPredictions(path);
  EXPECT_FALSE(r.ok()) << path << " imported without error";
  return r.ok() ? "" : r.error().message;
}

std::string AlignError(const RawDataset& ds, const std::string& pred_path) {
  auto r = AlignPredictions(ds, PredsOrDie(pred_path));
  EXPECT_FALSE(r.ok());
  return r.ok() ? "" : r.error().message;
}

// ---------------------------------------------------------------- SHA-256

TEST(Sha256Test, FipsVectors) {
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(Sha256Hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256Test, MatchesSha256sumOfFile) {
  // `sha256sum tests/data/io/sha256_input.txt` (95 bytes: one full block plus a padded one).
  const auto file = io_internal::ReadTextFile(kIoData + "sha256_input.txt", "x");
  EXPECT_EQ(file.bytes.size(), 95u);
  EXPECT_EQ(Sha256Hex(file.bytes),
            "bf703a506e19f24ae6e073eea8b9aca9f64ab6b51dbe1e48c1a81a50a7cbbc01");
}

TEST(Sha256Test, IncrementalEqualsOneShotAcrossBlockBoundaries) {
  std::string data(1000, '\0');
  std::mt19937 rng(7);
  for (char& c : data) c = static_cast<char>(rng());
  for (std::size_t split : {0, 1, 55, 56, 63, 64, 65, 127, 128, 999}) {
    Sha256 h;
    h.Update(std::string_view(data).substr(0, split));
    h.Update(std::string_view(data).substr(split));
    EXPECT_EQ(h.FinishHex(), Sha256Hex(data)) << split;
  }
}

// Empty updates, also of a view with no address (what SQLite gives for a NULL or empty value; the store
// fuzzer's regressions/store/digest_of_a_null_value, where memcpy was handed the null pointer), between
// and around the bytes: the digest of the bytes alone (FIPS 180-4's "abc"; the empty string's).
TEST(Sha256Test, EmptyUpdatesAddNothing) {
  Sha256 h;
  h.Update(std::string_view());
  h.Update("a");
  h.Update(std::string_view(nullptr, 0));
  h.Update("bc");
  h.Update(std::string_view());
  EXPECT_EQ(h.FinishHex(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  Sha256 none;
  none.Update(std::string_view());
  EXPECT_EQ(none.FinishHex(), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(Sha256Test, ShaNiBlocksAgreeWithPortable) {
  std::string data(64 * 300, '\0');
  std::mt19937 rng(11);
  for (char& c : data) c = static_cast<char>(rng());
  std::uint32_t a[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                        0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  std::uint32_t b[8];
  std::copy(a, a + 8, b);
  const auto* p = reinterpret_cast<const std::uint8_t*>(data.data());
  sha256_internal::Sha256BlocksPortable(a, p, 300);
  if (!sha256_internal::Sha256BlocksShaNi(b, p, 300)) GTEST_SKIP() << "CPU has no SHA extensions";
  for (int i = 0; i < 8; ++i) EXPECT_EQ(a[i], b[i]) << i;
}

// ---------------------------------------------------------------- detection

TEST(IoDetectTest, Formats) {
  EXPECT_EQ(*DetectDatasetFormat(kIoData + "meng_ok"), "meng");
  EXPECT_EQ(*DetectDatasetFormat(kIoData + "meng_ok/word_tiny_testing_context.txt"), "meng");
  EXPECT_EQ(*DetectDatasetFormat(kIoData + "meng_keys_only"), "meng");
  EXPECT_EQ(*DetectDatasetFormat(kIoData + "one2set_ok"), "one2set");
  EXPECT_EQ(*DetectDatasetFormat(kIoData + "hulth_ok"), "hulth");
  EXPECT_EQ(*DetectDatasetFormat(kIoData + "semeval_ok/test"), "semeval");
  EXPECT_EQ(*DetectDatasetFormat(kIoData + "kpeval_ok.jsonl"), "kpeval");
  EXPECT_EQ(*DetectDatasetFormat(kIoData + "kptimes_ok.jsonl"), "kptimes");
  EXPECT_EQ(*DetectDatasetFormat(kIoShared + "kptimes_sample"), "kptimes");
}

TEST(IoDetectTest, UnknownAndEmpty) {
  const std::string expected =
      ": cannot detect dataset format (expected one of: meng, one2set, kpeval, hulth, semeval, "
      "kptimes, midas, taln, deepkpg)";
  EXPECT_EQ(ImportError(kIoData + "not_a_dataset"), kIoData + "not_a_dataset" + expected);
  const auto empty = std::filesystem::temp_directory_path() / "kplab_io_test_empty_dir";
  std::filesystem::create_directories(empty);
  EXPECT_EQ(ImportError(empty.string()), empty.string() + expected);
  std::filesystem::remove(empty);
  EXPECT_EQ(DetectDatasetFormat(kIoData + "nope").error().message,
            kIoData + "nope: no such file or directory (expected a dataset file or directory)");
  DatasetOptions bad;
  bad.format = "csv";
  EXPECT_EQ(ImportError(kIoData + "meng_ok", bad),
            kIoData +
                "meng_ok: unknown dataset format \"csv\" (expected one of: meng, one2set, "
                "kpeval, hulth, semeval, kptimes, midas, taln, deepkpg)");
}

// ---------------------------------------------------------------- meng / one2set

TEST(IoMengTest, Fixture) {
  const RawDataset ds = ImportOrDie(kIoData + "meng_ok");
  EXPECT_EQ(ds.format, "meng");
  EXPECT_EQ(ds.name, "meng_ok");
  ASSERT_EQ(ds.docs.size(), 3u);
  const RawDoc& d1 = ds.docs[0];
  EXPECT_EQ(d1.id, "1");
  EXPECT_EQ(d1.title, "deep learning for keyphrases .");
  EXPECT_EQ(d1.body, "we study deep learning and keyphrase generation .");
  EXPECT_EQ(d1.separator, "<eos>");
  EXPECT_TRUE(d1.pretokenized);
  EXPECT_TRUE(d1.has_text);
  EXPECT_EQ(d1.refs, (Refs{{"deep learning"}, {" keyphrase generation"}, {"neural nets"}, {""}}));
  EXPECT_EQ(d1.loc.file, kIoData + "meng_ok/word_tiny_testing_context.txt");
  EXPECT_EQ(d1.loc.line, 1);
  const RawDoc& d2 = ds.docs[1];
  EXPECT_EQ(d2.title, "");
  EXPECT_EQ(d2.body, "no separator here just text");
  EXPECT_EQ(d2.separator, "");
  EXPECT_EQ(d2.refs, (Refs{{"foo"}}));
  const RawDoc& d3 = ds.docs[2];
  EXPECT_EQ(d3.title, "short title .");
  EXPECT_EQ(d3.body, "body with  two spaces");  // "\r\n" stripped, inner spaces kept
  EXPECT_EQ(d3.refs, (Refs{{""}}));             // an empty line is one empty piece
  EXPECT_EQ(d3.loc.line, 3);
  EXPECT_EQ(ds.content_hash.size(), 64u);
}

TEST(IoMengTest, EitherFileOfThePair) {
  const RawDataset from_keys = ImportOrDie(kIoData + "meng_ok/word_tiny_testing_allkeywords.txt");
  const RawDataset from_dir = ImportOrDie(kIoData + "meng_ok");
  ASSERT_EQ(from_keys.docs.size(), 3u);
  EXPECT_EQ(from_keys.docs[0].title, "deep learning for keyphrases .");
  EXPECT_EQ(from_keys.content_hash, from_dir.content_hash);
}

TEST(IoMengTest, KeysOnly) {
  const RawDataset ds = ImportOrDie(kIoData + "meng_keys_only");
  ASSERT_EQ(ds.docs.size(), 2u);
  EXPECT_FALSE(ds.docs[0].has_text);
  EXPECT_TRUE(ds.docs[0].pretokenized);
  EXPECT_EQ(ds.docs[0].title, "");
  EXPECT_EQ(ds.docs[0].body, "");
  EXPECT_EQ(ds.docs[0].refs, (Refs{{"alpha"}, {"beta"}}));
  EXPECT_EQ(ds.docs[1].loc.file, kIoData + "meng_keys_only/word_k_testing_allkeywords.txt");
  EXPECT_EQ(ds.docs[1].loc.line, 2);
}

TEST(IoMengTest, Errors) {
  EXPECT_EQ(ImportError(kIoData + "meng_short"),
            kIoData +
                "meng_short/word_s_testing_allkeywords.txt:2: only 2 lines (expected 3 lines, "
                "one per line of " +
                kIoData + "meng_short/word_s_testing_context.txt)");
  EXPECT_EQ(ImportError(kIoData + "meng_extra"),
            kIoData +
                "meng_extra/word_e_testing_allkeywords.txt:3: extra line (expected 2 lines, "
                "one per line of " +
                kIoData + "meng_extra/word_e_testing_context.txt)");
  EXPECT_EQ(ImportError(kIoData + "meng_bad_utf8"),
            kIoData + "meng_bad_utf8/word_u_testing_context.txt:2: invalid UTF-8 (expected UTF-8 text)");
}

TEST(IoOne2SetTest, FixtureAndErrors) {
  const RawDataset ds = ImportOrDie(kIoData + "one2set_ok");
  EXPECT_EQ(ds.format, "one2set");
  ASSERT_EQ(ds.docs.size(), 2u);
  EXPECT_EQ(ds.docs[0].title, "graph coloring .");
  EXPECT_EQ(ds.docs[0].body, "we color graphs");
  EXPECT_EQ(ds.docs[0].refs, (Refs{{"graph coloring"}, {"chromatic number"}}));
  EXPECT_EQ(ds.docs[1].title, "second doc");
  EXPECT_EQ(ds.docs[1].body, "more text");
  EXPECT_EQ(ImportError(kIoData + "one2set_short"),
            kIoData + "one2set_short/test_trg.txt: no lines (expected 1 line, one per line of " + kIoData +
                "one2set_short/test_src.txt)");
}

// ---------------------------------------------------------------- KPEval / KPTimes JSONL

TEST(IoKpEvalTest, Fixture) {
  const RawDataset ds = ImportOrDie(kIoData + "kpeval_ok.jsonl");
  EXPECT_EQ(ds.format, "kpeval");
  EXPECT_EQ(ds.name, "kpeval_ok");
  ASSERT_EQ(ds.docs.size(), 3u);  // the blank line 3 is skipped
  EXPECT_EQ(ds.docs[0].id, "d1");
  EXPECT_EQ(ds.docs[0].title, "deep learning .");
  EXPECT_EQ(ds.docs[0].body, "we study deep learning .");
  EXPECT_EQ(ds.docs[0].separator, "[sep]");
  EXPECT_EQ(ds.docs[0].refs, (Refs{{"deep learning"}, {"neural nets"}}));
  EXPECT_EQ(ds.docs[1].id, "7");
  EXPECT_EQ(ds.docs[1].title, "");
  EXPECT_EQ(ds.docs[1].body, "No Sep Here");
  EXPECT_EQ(ds.docs[1].refs, (Refs{{"a"}, {"b", "b variant"}}));
  EXPECT_EQ(ds.docs[2].id, "3");
  EXPECT_EQ(ds.docs[2].title, "upper");
  EXPECT_EQ(ds.docs[2].body, "case");
  EXPECT_EQ(ds.docs[2].refs, (Refs{{""}}));
  EXPECT_EQ(ds.docs[2].loc.line, 4);
}

TEST(IoKpEvalTest, Errors) {
  EXPECT_EQ(ImportError(kIoData + "kpeval_second_sep.jsonl"),
            kIoData +
                "kpeval_second_sep.jsonl:2: second \"[sep]\" in field \"source\" (expected "
                "\"title [sep] abstract\" with one [sep])");
  EXPECT_EQ(ImportError(kIoData + "kpeval_missing_target.jsonl"),
            kIoData +
                "kpeval_missing_target.jsonl:2: missing field \"target\" (expected a JSON "
                "object with \"source\" and \"target\")");
  EXPECT_EQ(ImportError(kIoData + "kpeval_wrong_type.jsonl"),
            kIoData +
                "kpeval_wrong_type.jsonl:1: field \"target\" is a number (expected a "
                "';'-joined string or an array of strings or of arrays of strings)");
  EXPECT_EQ(ImportError(kIoData + "kpeval_wrong_item.jsonl"),
            kIoData +
                "kpeval_wrong_item.jsonl:1: \"target\"[1] is a number (expected a string or "
                "an array of strings)");
  EXPECT_EQ(ImportError(kIoData + "kpeval_array_line.jsonl", WithFormat("kpeval")),
            kIoData + "kpeval_array_line.jsonl:1: line is an array (expected one JSON object a line)");
  DatasetOptions kpeval;
  kpeval.format = "kpeval";
  EXPECT_EQ(ImportError(kIoData + "kpeval_malformed.jsonl", kpeval),
            kIoData +
                "kpeval_malformed.jsonl:2: malformed JSON (a missing or extra comma, colon, brace, bracket or key) "
                "(expected one JSON object a line)");
  EXPECT_EQ(ImportError(kIoData + "kpeval_bad_utf8.jsonl", kpeval),
            kIoData + "kpeval_bad_utf8.jsonl:2: invalid UTF-8 (expected UTF-8 text)");
}

// A JSON dataset named by its directory (kpeval, kptimes, midas, taln) is the directory's one *.jsonl or
// *.json file; none, or several, is refused naming the directory and, for several, the files.
TEST(IoJsonDirectoryTest, NoneOrSeveralRecordFilesAreRefused) {
  test::TempDir dir;
  const std::string expected =
      " (expected exactly one *.jsonl or *.json file in the directory, or the path of the file)";
  for (const char* format : {"kpeval", "kptimes", "midas", "taln"}) {
    EXPECT_EQ(ImportError(dir.path(), WithFormat(format)), dir.path() + ": no JSON file" + expected) << format;
  }
  std::filesystem::create_directory(dir / "sub.jsonl");  // a directory with the name of a file is no file
  EXPECT_EQ(ImportError(dir.path(), WithFormat("kpeval")), dir.path() + ": no JSON file" + expected);
  std::filesystem::copy_file(kIoData + "kpeval_ok.jsonl", dir / "b.jsonl");
  EXPECT_EQ(ImportOrDie(dir.path(), WithFormat("kpeval")).docs.size(),
            ImportOrDie(kIoData + "kpeval_ok.jsonl").docs.size());
  std::filesystem::copy_file(kIoData + "kpeval_ok.jsonl", dir / "a.json");
  for (const char* format : {"kpeval", "kptimes", "midas", "taln"}) {
    EXPECT_EQ(ImportError(dir.path(), WithFormat(format)),
              dir.path() + ": 2 JSON files (" + (dir / "a.json") + ", " + (dir / "b.jsonl") + ")" + expected)
        << format;
  }
}

TEST(IoKpTimesTest, FixtureAndErrors) {
  const RawDataset ds = ImportOrDie(kIoData + "kptimes_ok.jsonl");
  EXPECT_EQ(ds.format, "kptimes");
  ASSERT_EQ(ds.docs.size(), 2u);
  EXPECT_EQ(ds.docs[0].id, "ny1");
  EXPECT_EQ(ds.docs[0].title, "Mayor Wins");
  EXPECT_EQ(ds.docs[0].body, "The mayor won.");
  EXPECT_FALSE(ds.docs[0].pretokenized);
  EXPECT_EQ(ds.docs[0].refs, (Refs{{"Elections"}, {"New York City", "NYC"}}));
  EXPECT_EQ(ds.docs[1].id, "2");
  EXPECT_EQ(ds.docs[1].refs, (Refs{{"Politics"}, {"Budget"}}));
  EXPECT_EQ(ImportError(kIoData + "kptimes_missing_title.jsonl", WithFormat("kptimes")),
            kIoData +
                "kptimes_missing_title.jsonl:1: missing field \"title\" (expected a JSON "
                "object with \"title\", \"abstract\" and \"keyword\")");
}

// ---------------------------------------------------------------- Hulth / SemEval

TEST(IoHulthTest, Fixture) {
  const RawDataset ds = ImportOrDie(kIoData + "hulth_ok");
  EXPECT_EQ(ds.format, "hulth");
  ASSERT_EQ(ds.docs.size(), 2u);
  EXPECT_EQ(ds.docs[0].id, "9");  // numeric order: 9 before 10
  EXPECT_EQ(ds.docs[0].title, "Short title");
  EXPECT_EQ(ds.docs[0].body, "One line abstract.");
  EXPECT_EQ(ds.docs[0].refs, (Refs{{"single"}}));
  const RawDoc& d = ds.docs[1];
  EXPECT_EQ(d.id, "10");
  EXPECT_EQ(d.title, "A long title that is wrapped over two lines");
  EXPECT_EQ(d.body, "The abstract starts here and continues on a second line.");
  EXPECT_FALSE(d.pretokenized);
  EXPECT_EQ(d.refs, (Refs{{"alpha beta"}, {" gamma delta"}, {" epsilon"}, {" zeta"}}));
  EXPECT_EQ(d.loc.file, kIoData + "hulth_ok/10.abstr");

  DatasetOptions contr;
  contr.hulth_keys = "contr";
  EXPECT_EQ(ImportOrDie(kIoData + "hulth_ok", contr).docs[0].refs, (Refs{{"c1"}, {" c2"}}));
  DatasetOptions both;
  both.hulth_keys = "both";
  EXPECT_EQ(ImportOrDie(kIoData + "hulth_ok", both).docs[0].refs, (Refs{{"single"}, {"c1"}, {" c2"}}));
}

TEST(IoHulthTest, Errors) {
  EXPECT_EQ(ImportError(kIoData + "hulth_missing_key"),
            kIoData + "hulth_missing_key/1.abstr: no key file (expected " + kIoData + "hulth_missing_key/1.uncontr)");
  DatasetOptions bad;
  bad.hulth_keys = "all";
  EXPECT_EQ(ImportError(kIoData + "hulth_ok", bad),
            kIoData + "hulth_ok: unknown hulth_keys \"all\" (expected uncontr, contr or both)");
}

TEST(IoSemEvalTest, Fixture) {
  const RawDataset ds = ImportOrDie(kIoData + "semeval_ok/test");
  EXPECT_EQ(ds.format, "semeval");
  EXPECT_EQ(ds.name, "semeval_ok/test");
  ASSERT_EQ(ds.docs.size(), 3u);
  EXPECT_EQ(ds.docs[0].id, "A-1");
  EXPECT_EQ(ds.docs[1].id, "A-2");
  EXPECT_EQ(ds.docs[2].id, "A-10");
  EXPECT_EQ(ds.docs[0].title, "Deep Learning Paper");
  EXPECT_EQ(ds.docs[0].body, "Abstract\nFirst section text.\n");
  EXPECT_EQ(ds.docs[0].refs, (Refs{{"deep learn"}, {"neural network", "network neural"}}));
  EXPECT_TRUE(ds.docs[0].refs_stemmed);
  EXPECT_EQ(ds.docs[1].title, "Graph Paper");
  EXPECT_EQ(ds.docs[1].refs, (Refs{{"graph"}}));
  EXPECT_EQ(ds.docs[2].title, "Tenth Paper");
  EXPECT_EQ(ds.docs[2].body, "");
  EXPECT_TRUE(ds.docs[2].refs.empty());

  DatasetOptions author;
  author.semeval_answers = "author";
  EXPECT_EQ(ImportOrDie(kIoData + "semeval_ok/test", author).docs[2].refs, (Refs{{"z"}}));
  DatasetOptions liaad;
  liaad.semeval_answers = "liaad";
  const RawDataset keys = ImportOrDie(kIoData + "semeval_ok/test", liaad);
  EXPECT_EQ(keys.docs[0].refs, (Refs{{"deep learning"}, {"neural networks"}}));
  EXPECT_FALSE(keys.docs[0].refs_stemmed);
  DatasetOptions by_path;
  by_path.semeval_answers = kIoData + "semeval_ok/test_answer/test.author.stem.final";
  EXPECT_EQ(ImportOrDie(kIoData + "semeval_ok/test", by_path).docs[1].refs, (Refs{{"y"}}));
}

TEST(IoSemEvalTest, Errors) {
  EXPECT_EQ(ImportError(kIoData + "semeval_bad_colon/test"),
            kIoData +
                "semeval_bad_colon/test_answer/test.combined.stem.final:2: no \" : \" after "
                "the document id (expected lines \"ID : kp1,kp2+variant,...\")");
  EXPECT_EQ(ImportError(kIoData + "semeval_unknown_id/test"),
            kIoData +
                "semeval_unknown_id/test_answer/test.combined.stem.final:2: no text file for "
                "\"B-9\" (expected " +
                kIoData + "semeval_unknown_id/test/B-9.txt.final)");
  EXPECT_EQ(ImportError(kIoData + "semeval_missing_answer/test"),
            kIoData +
                "semeval_missing_answer/test_answer/test.combined.stem.final: no answer line for "
                "\"B-2\" (expected one line per text file in " +
                kIoData + "semeval_missing_answer/test)");
  DatasetOptions reader;
  reader.semeval_answers = "reader";
  EXPECT_EQ(ImportError(kIoData + "semeval_ok/test", reader),
            kIoData + "semeval_ok/test: no answer file (expected " + kIoData +
                "semeval_ok/test_answer/test.reader.stem.final or " + kIoData +
                "semeval_ok/test_answer/test.reader.final)");
}

// ---------------------------------------------------------------- predictions

TEST(IoPredictionsTest, Lines) {
  const RawPredictions p = PredsOrDie(kIoData + "preds_lines.txt");
  EXPECT_EQ(p.format, "lines");
  ASSERT_EQ(p.docs.size(), 3u);
  EXPECT_EQ(p.docs[0].phrases,
            (std::vector<std::string>{"deep learning", "neural nets", "<peos>", "transformers"}));
  EXPECT_EQ(p.docs[1].phrases, (std::vector<std::string>{""}));
  EXPECT_EQ(p.docs[2].phrases, (std::vector<std::string>{"foo", ""}));
  EXPECT_TRUE(p.docs[0].scores.empty());
  EXPECT_EQ(p.docs[2].loc.line, 3);
  // python3: sha256(b"preds_lines.txt\0" + b"53" + b"\0" + bytes)
  EXPECT_EQ(p.content_hash, "f3423b82a1c0f8762cd83f8daf51ed3fac5c10f479ae01bbc3bf490c1f396499");
}

TEST(IoPredictionsTest, Jsonl) {
  const RawPredictions p = PredsOrDie(kIoData + "preds_ok.jsonl");
  EXPECT_EQ(p.format, "jsonl");
  ASSERT_EQ(p.docs.size(), 5u);
  EXPECT_EQ(p.docs[0].doc_id, "d1");
  EXPECT_EQ(p.docs[0].phrases, (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(p.docs[0].scores.empty());
  EXPECT_EQ(p.docs[1].scores, (std::vector<double>{0.9, 1.0}));
  EXPECT_EQ(p.docs[2].phrases, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(p.docs[2].scores, (std::vector<double>{-0.5, 0.25}));
  EXPECT_EQ(p.docs[3].doc_id, "");
  EXPECT_EQ(p.docs[3].phrases, (std::vector<std::string>{"only phrase"}));
  EXPECT_EQ(p.docs[4].phrases, (std::vector<std::string>{"x", "y", ""}));

  // A KPEval file doubles as a prediction file through its "predictions" field.
  auto missing = ImportPredictions(kIoData + "kpeval_ok.jsonl", "kpeval");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().message,
            kIoData +
                "kpeval_ok.jsonl:1: missing field \"predictions\" (expected a JSON object with "
                "\"predictions\")");
}

TEST(IoPredictionsTest, Errors) {
  EXPECT_EQ(PredsError(kIoData + "preds_mixed_scores.jsonl"),
            kIoData +
                "preds_mixed_scores.jsonl:1: \"predictions\"[1] has no score (expected scores "
                "for all predictions of a line or for none)");
  EXPECT_EQ(PredsError(kIoData + "preds_bad_pair.jsonl"),
            kIoData + "preds_bad_pair.jsonl:1: \"predictions\"[0][1] is a string (expected a number)");
  EXPECT_EQ(PredsError(kIoData + "preds_no_field.jsonl"),
            kIoData +
                "preds_no_field.jsonl:1: missing field \"predictions\" (expected a JSON object "
                "with \"predictions\")");
  auto bad = ImportPredictions(kIoData + "preds_lines.txt", "csv");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message, kIoData +
                                     "preds_lines.txt: unknown prediction format \"csv\" "
                                     "(expected one of: lines, jsonl, kpeval, tokens, hf, opennmt-kpg)");
}

TEST(IoAlignTest, CountsAndIds) {
  const RawDataset meng = ImportOrDie(kIoData + "meng_ok");
  auto ok = AlignPredictions(meng, PredsOrDie(kIoData + "preds_lines.txt"));
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->docs.size(), 3u);
  EXPECT_EQ(AlignError(meng, kIoData + "preds_short.txt"),
            kIoData + "preds_short.txt:2: only 2 lines (expected 3 lines, one per document of " + kIoData + "meng_ok)");
  EXPECT_EQ(AlignError(meng, kIoData + "preds_long.txt"),
            kIoData + "preds_long.txt:4: extra line (expected 3 lines, one per document of " + kIoData + "meng_ok)");

  const RawDataset times = ImportOrDie(kIoData + "kptimes_ok.jsonl");
  auto reordered = AlignPredictions(times, PredsOrDie(kIoData + "preds_ids.jsonl"));
  ASSERT_TRUE(reordered.ok()) << reordered.error().message;
  EXPECT_EQ(reordered->docs[0].doc_id, "ny1");
  EXPECT_EQ(reordered->docs[0].phrases, (std::vector<std::string>{"elections", "mayor"}));
  EXPECT_EQ(reordered->docs[1].doc_id, "2");
  EXPECT_EQ(AlignError(times, kIoData + "preds_unknown_id.jsonl"),
            kIoData +
                "preds_unknown_id.jsonl:2: unknown document id \"zzz\" (expected an id of a "
                "document of " +
                kIoData + "kptimes_ok.jsonl)");
  EXPECT_EQ(AlignError(times, kIoData + "preds_missing_id.jsonl"),
            kIoData +
                "preds_missing_id.jsonl: no prediction line for document \"2\" (expected one "
                "line per document of " +
                kIoData + "kptimes_ok.jsonl)");
  EXPECT_EQ(AlignError(times, kIoData + "preds_dup_id.jsonl"),
            kIoData +
                "preds_dup_id.jsonl:2: second prediction line for \"ny1\" (expected one line "
                "per document of " +
                kIoData + "kptimes_ok.jsonl)");
}

// ---------------------------------------------------------------- real data (../shared/data)

TEST(IoRealDataTest, MengInspec) {
  const RawDataset ds = ImportOrDie(kIoShared + "kpg_testsets_meng2017/inspec");
  EXPECT_EQ(ds.name, "inspec");
  ASSERT_EQ(ds.docs.size(), 500u);
  EXPECT_EQ(ds.docs[0].title,
            "twenty years of the literature on acquiring out of print materials .");
  EXPECT_EQ(ds.docs[0].body.substr(0, 23), "out of print materials ");
  ASSERT_EQ(ds.docs[0].refs.size(), 6u);
  EXPECT_EQ(ds.docs[0].refs[0][0], "out of print materials");
  EXPECT_EQ(ds.docs[0].refs[5][0], "acquisition");
}

// Import speed is measured by bench/ (kplab_bench), not asserted here.
TEST(IoRealDataTest, Kp20kKeysOnly) {
  const RawDataset ds = ImportOrDie(kIoShared + "kpg_testsets_meng2017/kp20k");
  ASSERT_EQ(ds.docs.size(), 20000u);
  EXPECT_FALSE(ds.docs[0].has_text);
  EXPECT_EQ(ds.docs[0].refs,
            (Refs{{"feedback vertex set"}, {"<digit> degenerate graphs"}, {"decycling set"}}));

  const RawPredictions p = PredsOrDie(kIoShared + "predictions/catSeqTG-2RF1/kp20k/seed1234.txt");
  EXPECT_TRUE(AlignPredictions(ds, p).ok());
}

TEST(IoRealDataTest, One2SetKp20kFirst1000MatchesMengGold) {
  const RawDataset ds = ImportOrDie(kIoShared + "kp20k_test_first1000");
  EXPECT_EQ(ds.format, "one2set");
  ASSERT_EQ(ds.docs.size(), 1000u);
  EXPECT_EQ(ds.docs[0].title, "a feedback vertex set of <digit> degenerate graphs .");
  EXPECT_EQ(ds.docs[1].refs[0][0], "analytical modeling");
}

TEST(IoRealDataTest, HulthTest) {
  const RawDataset ds = ImportOrDie(kIoShared + "inspec_hulth2003/Test");
  ASSERT_EQ(ds.docs.size(), 500u);
  EXPECT_EQ(ds.docs[0].id, "2");
  EXPECT_EQ(ds.docs.back().id, "2200");
  EXPECT_EQ(ds.docs[0].title, "Waiting for the wave to crest [wavelength services]");
  EXPECT_EQ(ds.docs[0].refs, (Refs{{"wavelength services"},
                                   {" fiber optic networks"},
                                   {" Looking Glass Networks"},
                                   {" PointEast Research"}}));
}

TEST(IoRealDataTest, SemEvalTest) {
  const RawDataset ds = ImportOrDie(kIoShared + "semeval2010/test");
  ASSERT_EQ(ds.docs.size(), 100u);
  EXPECT_EQ(ds.docs[0].id, "C-1");
  EXPECT_EQ(ds.docs[0].title, "Scalable Grid Service Discovery Based on UDDI*");
  EXPECT_TRUE(ds.docs[0].refs_stemmed);
  EXPECT_EQ(ds.docs[0].refs[0], (std::vector<std::string>{"grid servic discoveri"}));
  ASSERT_EQ(ds.docs[1].id, "C-3");
  EXPECT_EQ(ds.docs[1].refs[5],
            (std::vector<std::string>{"heterogen of resourc", "resourc heterogen"}));

  DatasetOptions liaad;
  liaad.semeval_answers = "liaad";
  EXPECT_EQ(ImportError(kIoShared + "semeval2010/test", liaad),
            kIoShared + "semeval2010/test/C-86.txt.final: no key file (expected " + kIoShared +
                "semeval2010/liaad_keys/C-86.key)");
}

TEST(IoRealDataTest, KpTimesSample) {
  const RawDataset ds = ImportOrDie(kIoShared + "kptimes_sample/train_sample.jsonl");
  ASSERT_EQ(ds.docs.size(), 10u);
  EXPECT_EQ(ds.docs[0].id, "ny0296216");
  EXPECT_EQ(ds.docs[1].refs[2],
            (std::vector<std::string>{"Republican National Convention", "RNC"}));
}

TEST(IoRealDataTest, CatSeqPredictionsAlignWithInspec) {
  const RawPredictions p = PredsOrDie(kIoShared + "predictions/catSeqTG-2RF1/inspec/seed1234.txt");
  ASSERT_EQ(p.docs.size(), 500u);
  ASSERT_GE(p.docs[0].phrases.size(), 11u);
  EXPECT_EQ(p.docs[0].phrases[0], "literature");
  EXPECT_EQ(p.docs[0].phrases[10], "<peos>");
  EXPECT_TRUE(AlignPredictions(ImportOrDie(kIoShared + "kpg_testsets_meng2017/inspec"), p).ok());
  EXPECT_FALSE(AlignPredictions(ImportOrDie(kIoShared + "kpg_testsets_meng2017/krapivin"), p).ok());
}

}  // namespace
}  // namespace kplab
