// The record and pair formats (docs/formats.md): Hugging Face midas/* and taln-ls2n/* records, DeepKPG
// test.source/test.target, pke's reference JSON, HF predictions keyed by id and OpenNMT-kpg predictions.
// Fixtures in tests/data/formats re-express examples/tiny's five documents; hostile inputs are written
// here, each with the exact message it must give.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "kplab/io.h"
#include "temp_dir.h"

namespace kplab {
namespace {

namespace fs = std::filesystem;
using test::TempDir;

const std::string kFormatsData = std::string(KPLAB_TEST_DATA) + "/formats/";

std::string WriteFormatsFile(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

std::string FormatsImportError(const std::string& path, DatasetOptions opt = {}) {
  auto d = ImportDataset(path, opt);
  return d.ok() ? "imported " + std::to_string(d->docs.size()) + " documents" : d.error().message;
}

std::string PredError(const std::string& path, const std::string& format = "") {
  auto p = ImportPredictions(path, format);
  return p.ok() ? "imported " + std::to_string(p->docs.size()) + " lines" : p.error().message;
}

std::vector<std::string> Primary(const RawDoc& d) {
  std::vector<std::string> out;
  for (const auto& r : d.refs) out.push_back(r.at(0));
  return out;
}

constexpr const char* kMidasObject =
    "a JSON object with \"id\", \"document\", \"extractive_keyphrases\" and \"abstractive_keyphrases\"";
constexpr const char* kRecords = "one JSON object a line, or a JSON array of objects (datasets' to_json)";

// A midas record line with the given id and otherwise valid fields.
std::string Midas(const std::string& id, const std::string& extra = "") {
  return "{\"id\": \"" + id + "\", \"document\": [\"a\", \"b\"], \"extractive_keyphrases\": [\"a\"], "
         "\"abstractive_keyphrases\": []" + extra + "}\n";
}

TEST(IoFormatsTest, MidasRecordsAreTokensAndExtractiveThenAbstractiveReferences) {
  auto d = ImportDataset(kFormatsData + "midas/tiny.jsonl");
  ASSERT_TRUE(d.ok()) << d.error().message;
  EXPECT_EQ(d->format, "midas");
  ASSERT_EQ(d->docs.size(), 5u);
  const RawDoc& doc = d->docs[0];
  EXPECT_EQ(doc.id, "1");
  EXPECT_TRUE(doc.pretokenized);
  EXPECT_EQ(doc.title, "");
  EXPECT_EQ(doc.body.substr(0, 61), "a lightweight scheduler for mixed batch and interactive workl");
  // Tiny doc 1's references are scheduling;batch jobs;interactive queries;preemption;cluster computing:
  // the two found in the text are extractive, the other three abstractive, in that order.
  EXPECT_EQ(Primary(doc), (std::vector<std::string>{"batch jobs", "interactive queries", "scheduling", "preemption",
                                                    "cluster computing"}));
  // The same records as one JSON array (to_json(lines=False)) give the same documents.
  auto a = ImportDataset(kFormatsData + "midas/tiny_array.json");
  ASSERT_TRUE(a.ok()) << a.error().message;
  EXPECT_EQ(a->format, "midas");
  ASSERT_EQ(a->docs.size(), 5u);
  for (std::size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(a->docs[i].id, d->docs[i].id);
    EXPECT_EQ(a->docs[i].body, d->docs[i].body);
    EXPECT_EQ(a->docs[i].refs, d->docs[i].refs);
  }
  EXPECT_EQ(DetectDatasetFormat(kFormatsData + "midas/tiny_array.json").value(), "midas");
}

TEST(IoFormatsTest, SplitColumnChoosesOneSplitAndNeverMixes) {
  const std::string f = kFormatsData + "midas/tiny_splits.jsonl";
  EXPECT_EQ(FormatsImportError(f),
            f + ": records of 2 splits: test, train (expected one split; choose one with --split "
                "NAME (Python split=NAME) rather than mixing them)");
  DatasetOptions opt;
  opt.split = "train";
  auto train = ImportDataset(f, opt);
  ASSERT_TRUE(train.ok()) << train.error().message;
  // Id "1" is in both splits: not a duplicate, since only the chosen split is read.
  ASSERT_EQ(train->docs.size(), 2u);
  EXPECT_EQ(train->docs[0].id, "t1");
  EXPECT_EQ(train->docs[1].id, "1");
  opt.split = "test";
  EXPECT_EQ(ImportDataset(f, opt)->docs.size(), 5u);
  opt.split = "dev";
  EXPECT_EQ(FormatsImportError(f, opt),
            f + ": no record of split \"dev\" (expected one of the splits in the file: test, train)");
  // A split asked of records that have none.
  opt.split = "test";
  EXPECT_EQ(FormatsImportError(kFormatsData + "midas/tiny.jsonl", opt),
            kFormatsData +
                "midas/tiny.jsonl: split \"test\" asked for, but the records have no \"split\" field (expected a "
                "\"split\" field in every record, or no split option)");
  // ... or of a format without splits.
  EXPECT_EQ(FormatsImportError(std::string(KPLAB_SOURCE_DIR) + "/examples/tiny", opt),
            std::string(KPLAB_SOURCE_DIR) +
                "/examples/tiny: split \"test\" asked for, but format \"meng\" has no "
                "splits (expected --split only with midas, taln or deepkpg)");
  // Taln records with "text" instead of "abstract", test split after the training records.
  auto t = ImportDataset(kFormatsData + "taln/tiny_text_splits.jsonl", opt);
  ASSERT_TRUE(t.ok()) << t.error().message;
  ASSERT_EQ(t->docs.size(), 5u);
  EXPECT_EQ(t->docs[4].id, "5");
  EXPECT_EQ(t->docs[4].title, "an empirical study of code review comments .");
}

TEST(IoFormatsTest, MidasHostileRecords) {
  TempDir dir;
  const std::string f = dir / "m.jsonl";
  WriteFormatsFile(
      f, "{\"id\": \"a\", \"document\": \"a b\", \"extractive_keyphrases\": [], \"abstractive_keyphrases\": []}\n");
  EXPECT_EQ(FormatsImportError(f), f + ":1: field \"document\" is a string (expected an array of tokens (strings))");
  WriteFormatsFile(f, Midas("a") + "{\"id\": \"b\", \"document\": [], \"extractive_keyphrases\": []}\n");
  EXPECT_EQ(FormatsImportError(f), f + ":2: missing field \"abstractive_keyphrases\" (expected " + kMidasObject + ")");
  WriteFormatsFile(
      f, "{\"id\": \"a\", \"document\": [], \"extractive_keyphrases\": [\"x\", 3], \"abstractive_keyphrases\": []}\n");
  EXPECT_EQ(FormatsImportError(f), f + ":1: \"extractive_keyphrases\"[1] is a number (expected a string)");
  WriteFormatsFile(f, Midas("x") + Midas("y") + Midas("x"));
  EXPECT_EQ(FormatsImportError(f),
            f + ":3: second record with id \"x\" (the first is line 1) (expected unique document ids)");
  WriteFormatsFile(f, Midas("x") + "{\"id\": \n");
  EXPECT_EQ(
      FormatsImportError(f),
      f + ":2: malformed JSON (a missing or extra comma, colon, brace, bracket or key) (expected " + kRecords + ")");
  WriteFormatsFile(f, "{\"document\": [], \"extractive_keyphrases\": [], \"abstractive_keyphrases\": []}\n");
  EXPECT_EQ(FormatsImportError(f), f + ":1: missing field \"id\" (expected " + kMidasObject + ")");
  WriteFormatsFile(f, Midas(""));
  EXPECT_EQ(FormatsImportError(f),
            f + ":1: field \"id\" is an empty string (expected a non-empty string or an integer)");
  WriteFormatsFile(f, Midas("x", ", \"split\": \"test\"") + Midas("y"));
  EXPECT_EQ(FormatsImportError(f),
            f + ":2: no \"split\" field, but line 1 has one (expected \"split\" on every record or on none)");
  WriteFormatsFile(f, Midas("x", ", \"split\": 1"));
  EXPECT_EQ(FormatsImportError(f), f + ":1: field \"split\" is a number (expected a string (the split's name))");
  // An empty file, blank lines only or an empty array: no documents, nothing imported.
  WriteFormatsFile(f, "");
  DatasetOptions midas;
  midas.format = "midas";
  EXPECT_EQ(FormatsImportError(f, midas), f + ": no documents (expected a dataset with at least one document)");
  midas.split = "test";  // a split of an empty file: still "no documents", not an empty list of splits
  EXPECT_EQ(FormatsImportError(f, midas), f + ": no documents (expected a dataset with at least one document)");
  midas.split.clear();
  const std::string arr = dir / "m.json";
  WriteFormatsFile(arr, " []\n");
  EXPECT_EQ(FormatsImportError(arr, midas), arr + ": no documents (expected a dataset with at least one document)");
  // JSON arrays: no line numbers in a parsed array, so records are named by their position.
  WriteFormatsFile(arr, "[" + Midas("x") + ", {\"id\": 2}]");
  EXPECT_EQ(FormatsImportError(arr, midas),
            arr + ": record 2: missing field \"document\" (expected " + kMidasObject + ")");
  WriteFormatsFile(arr, "[" + Midas("x") + ", 3]");
  EXPECT_EQ(FormatsImportError(arr, midas), arr + ": record 2 is a number (expected a JSON object for each record)");
  WriteFormatsFile(arr, "[" + Midas("x") + ",");
  EXPECT_EQ(
      FormatsImportError(arr, midas),
      arr + ": malformed JSON (a missing or extra comma, colon, brace, bracket or key) (expected " + kRecords + ")");
  WriteFormatsFile(arr, "[" + Midas("x") + "," + Midas("x") + "]");
  EXPECT_EQ(FormatsImportError(arr, midas),
            arr + ": record 2: second record with id \"x\" (the first is record 1) (expected unique document ids)");
  // A byte order mark before the first record is stripped, not glued to it.
  WriteFormatsFile(f, "\xEF\xBB\xBF" + Midas("x"));
  auto bom = ImportDataset(f);
  ASSERT_TRUE(bom.ok()) << bom.error().message;
  EXPECT_EQ(bom->format, "midas");
  EXPECT_EQ(bom->docs[0].id, "x");
}

TEST(IoFormatsTest, TalnRecords) {
  auto d = ImportDataset(kFormatsData + "taln/tiny.jsonl");
  ASSERT_TRUE(d.ok()) << d.error().message;
  EXPECT_EQ(d->format, "taln");
  ASSERT_EQ(d->docs.size(), 5u);
  EXPECT_EQ(d->docs[1].id, "2");
  EXPECT_EQ(d->docs[1].title, "measuring reading difficulty of patient leaflets .");
  EXPECT_FALSE(d->docs[1].pretokenized);
  EXPECT_EQ(Primary(d->docs[1]),
            (std::vector<std::string>{"readability", "patient leaflets", "readability formulas", "health literacy"}));
  TempDir dir;
  const std::string f = dir / "t.jsonl";
  const std::string expected =
      "a JSON object with \"id\", \"title\", \"abstract\" (or \"text\") and \"keyphrases\"";
  WriteFormatsFile(f, "{\"id\": 1, \"title\": \"t\", \"keyphrases\": []}\n");
  EXPECT_EQ(FormatsImportError(f), f + ":1: missing field \"abstract\" (or \"text\") (expected " + expected + ")");
  WriteFormatsFile(f, "{\"id\": 1, \"title\": \"t\", \"abstract\": \"a\", \"keyphrases\": \"x;y\"}\n");
  EXPECT_EQ(FormatsImportError(f),
            f + ":1: field \"keyphrases\" is a string (expected an array of keyphrases (strings))");
  WriteFormatsFile(
      f, "{\"id\": 1, \"title\": \"t\", \"abstract\": \"a\", \"keyphrases\": [\"x\", \"y\"], \"prmu\": [\"P\"]}\n");
  EXPECT_EQ(FormatsImportError(f),
            f + ":1: fields \"prmu\" and \"keyphrases\" differ in length (1 and 2) (expected one "
                "PRMU category per keyphrase)");
  WriteFormatsFile(f, "{\"id\": 1, \"title\": 7, \"abstract\": \"a\", \"keyphrases\": []}\n");
  EXPECT_EQ(FormatsImportError(f), f + ":1: field \"title\" is a number (expected a string)");
  // Integer ids are their decimal digits.
  WriteFormatsFile(f, "{\"id\": 12, \"title\": \"t\", \"abstract\": \"a\", \"keyphrases\": [\"x\"]}\n");
  EXPECT_EQ(ImportDataset(f)->docs[0].id, "12");
}

TEST(IoFormatsTest, DeepKpgLinePairs) {
  auto d = ImportDataset(kFormatsData + "deepkpg");
  ASSERT_TRUE(d.ok()) << d.error().message;
  EXPECT_EQ(d->format, "deepkpg");
  ASSERT_EQ(d->docs.size(), 5u);
  const RawDoc& doc = d->docs[0];
  EXPECT_EQ(doc.id, "1");
  EXPECT_TRUE(doc.pretokenized);
  EXPECT_EQ(doc.separator, "[sep]");
  EXPECT_EQ(doc.title, "a lightweight scheduler for mixed batch and interactive workloads .");
  EXPECT_EQ(doc.body.substr(0, 18), "we present a sched");
  // " ; "-joined: the pieces of split(';'), spaces kept as in every ';' format.
  EXPECT_EQ(Primary(doc), (std::vector<std::string>{"scheduling ", " batch jobs ", " interactive queries ",
                                                    " preemption ", " cluster computing"}));
  // Either file of the pair names the same dataset.
  auto t = ImportDataset(kFormatsData + "deepkpg/test.target");
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->docs[4].refs, d->docs[4].refs);
  EXPECT_EQ(t->content_hash, d->content_hash);

  TempDir dir;
  const std::string s = dir / "test.source", g = dir / "test.target";
  WriteFormatsFile(s, "t [sep] a\nt2 [sep] b\n");
  WriteFormatsFile(g, "x\n");
  EXPECT_EQ(FormatsImportError(dir.path()), g + ":1: only 1 line (expected 2 lines, one per line of " + s + ")");
  WriteFormatsFile(g, "x\ny\nz\n");
  EXPECT_EQ(FormatsImportError(dir.path()), g + ":3: extra line (expected 2 lines, one per line of " + s + ")");
  WriteFormatsFile(s, "t [sep] a [SEP] c\nb\nc\n");
  EXPECT_EQ(FormatsImportError(dir.path()),
            s + ":1: second \"[sep]\" (expected \"title [sep] abstract\" with one [sep])");
  WriteFormatsFile(s, "t [sep] a\nb\nc\n");
  WriteFormatsFile(dir / "valid.source", "v\n");
  WriteFormatsFile(dir / "valid.target", "kv\n");
  EXPECT_EQ(FormatsImportError(dir.path()), dir.path() +
                                                ": 2 DeepKPG splits: test, valid (expected one split; choose one "
                                                "with --split NAME (Python split=NAME))");
  DatasetOptions opt;
  opt.split = "valid";
  auto v = ImportDataset(dir.path(), opt);
  ASSERT_TRUE(v.ok()) << v.error().message;
  ASSERT_EQ(v->docs.size(), 1u);
  EXPECT_EQ(v->docs[0].body, "v");
  opt.split = "dev";
  EXPECT_EQ(FormatsImportError(dir.path(), opt),
            dir.path() + ": no split \"dev\" (expected one of the splits in the directory: test, valid)");
  fs::remove(dir / "valid.target");
  opt.split = "valid";
  EXPECT_EQ(FormatsImportError(dir.path(), opt),
            dir / "valid.source" + ": no target file (expected " + dir / "valid.target" + ")");
  WriteFormatsFile(s, "");
  WriteFormatsFile(g, "");
  opt.split = "test";
  EXPECT_EQ(FormatsImportError(dir.path(), opt),
            dir.path() + ": no documents (expected a dataset with at least one document)");
}

// pke's references replace the key files of a text-file dataset; the JSON must name every document
// once and nothing else.
TEST(IoFormatsTest, PkeReferencesForTextFiles) {
  DatasetOptions opt;
  opt.references = kFormatsData + "pke/tiny.uncontr.json";
  auto d = ImportDataset(kFormatsData + "pke/Test", opt);  // no .uncontr files there: not needed
  ASSERT_TRUE(d.ok()) << d.error().message;
  EXPECT_EQ(d->format, "hulth");
  ASSERT_EQ(d->docs.size(), 5u);
  EXPECT_EQ(d->docs[2].id, "3");
  EXPECT_EQ(d->docs[2].title, "graph neural networks for predicting traffic speed .");
  EXPECT_EQ(Primary(d->docs[2]), (std::vector<std::string>{"graph neural networks", "traffic speed prediction",
                                                           "spatial convolution", "intelligent transportation"}));
  EXPECT_FALSE(d->docs[2].refs_stemmed);
  EXPECT_EQ(d->files.back(), opt.references);  // read, and part of the content hash

  TempDir dir;
  fs::create_directories(dir / "Test");
  WriteFormatsFile(dir / "Test/1.abstr", "title one\nbody one\n");
  WriteFormatsFile(dir / "Test/2.abstr", "title two\nbody two\n");
  const std::string ds = dir / "Test";
  const std::string r = dir / "refs.json";
  opt.references = r;
  const std::string expected = "a JSON object {document id: [[keyphrase, variant...], ...]}, as pke's reference files";
  WriteFormatsFile(r, "{\"1\": [[\"a\"]]}");
  EXPECT_EQ(FormatsImportError(ds, opt),
            r + ": no references for document \"2\" (expected a key for every document of " + ds + ")");
  WriteFormatsFile(r, "{\"1\": [[\"a\"]], \"2\": [], \"9\": [[\"c\"]]}");
  EXPECT_EQ(FormatsImportError(ds, opt), r + ": key \"9\" is not a document of " + ds +
                                             " (expected the ids (file stems) of the dataset's documents)");
  WriteFormatsFile(r, "{\"1\": \"a\", \"2\": []}");
  EXPECT_EQ(FormatsImportError(ds, opt),
            r + ": \"1\" is a string (expected a list of references, each a list of a keyphrase and its variants)");
  WriteFormatsFile(r, "{\"1\": [[\"a\", 2]], \"2\": []}");
  EXPECT_EQ(FormatsImportError(ds, opt), r + ": \"1\"[0][1] is a number (expected a string)");
  WriteFormatsFile(r, "{\"1\": [[]], \"2\": []}");
  EXPECT_EQ(FormatsImportError(ds, opt), r + ": \"1\"[0] is an empty list (expected a keyphrase and its variants)");
  WriteFormatsFile(r, "{\"1\": [[\"a\"]], \"1\": [[\"b\"]], \"2\": []}");
  EXPECT_EQ(FormatsImportError(ds, opt), r + ": second key \"1\" (expected unique document ids)");
  WriteFormatsFile(r, "{\"1\": [[\"a\"]");
  EXPECT_EQ(
      FormatsImportError(ds, opt),
      r + ": malformed JSON (a missing or extra comma, colon, brace, bracket or key) (expected " + expected + ")");
  WriteFormatsFile(r, "[]");
  EXPECT_EQ(FormatsImportError(ds, opt), r + ": the file is an array (expected " + expected + ")");
  WriteFormatsFile(r, "");
  EXPECT_EQ(FormatsImportError(ds, opt), r + ": malformed JSON (no JSON value) (expected " + expected + ")");
  // A byte order mark is stripped; variants are kept as alternatives, the first the primary form;
  // ".stem." in the file name says the references are stemmed (as SemEval's *.stem.final).
  const std::string stem = dir / "refs.stem.json";
  WriteFormatsFile(stem, "\xEF\xBB\xBF{\"1\": [[\"a\", \"aa\"]], \"2\": [[\"b\"]]}");
  opt.references = stem;
  auto ok = ImportDataset(ds, opt);
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ(ok->docs[0].refs, (std::vector<std::vector<std::string>>{{"a", "aa"}}));
  EXPECT_TRUE(ok->docs[1].refs_stemmed);
  // Formats whose files hold references refuse a second source of them.
  EXPECT_EQ(FormatsImportError(kFormatsData + "deepkpg", opt),
            kFormatsData +
                "deepkpg: references file given for format \"deepkpg\", whose files hold their own references "
                "(expected --references only with a text-file dataset: hulth or semeval)");
}

// Inspec (Hulth 2003) Test with pke's test.uncontr.json against its own .uncontr files: the same 500
// documents, and per document the same references once pke's normalisation is undone on the Hulth
// side (wrapped lines joined, each piece stripped and lower-cased: pke's files are lower-cased).
TEST(IoFormatsTest, PkeInspecReferencesAreHulthUncontrLowerCased) {
  const std::string dir = std::string(KPLAB_SHARED_DATA) + "/inspec_hulth2003/Test";
  const std::string refs = std::string(KPLAB_SHARED_DATA) + "/inspec_hulth2003/boudinfl_references/test.uncontr.json";
  if (!fs::exists(refs)) GTEST_SKIP() << "shared data not found at " << refs;
  auto hulth = ImportDataset(dir);
  DatasetOptions opt;
  opt.references = refs;
  auto pke = ImportDataset(dir, opt);
  ASSERT_TRUE(hulth.ok()) << hulth.error().message;
  ASSERT_TRUE(pke.ok()) << pke.error().message;
  ASSERT_EQ(hulth->docs.size(), 500u);
  ASSERT_EQ(pke->docs.size(), 500u);
  const auto norm = [](std::string s) {
    std::string out;
    for (char c : s) {
      if (std::isspace(static_cast<unsigned char>(c))) {
        if (!out.empty() && out.back() != ' ') out += ' ';
      } else {
        out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      }
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out;
  };
  int differing_raw = 0;
  for (std::size_t i = 0; i < 500; ++i) {
    ASSERT_EQ(hulth->docs[i].id, pke->docs[i].id);
    EXPECT_EQ(hulth->docs[i].body, pke->docs[i].body);
    std::vector<std::string> a;
    for (const auto& r : Primary(hulth->docs[i])) a.push_back(norm(r));
    EXPECT_EQ(a, Primary(pke->docs[i])) << "document " << hulth->docs[i].id;
    differing_raw += Primary(hulth->docs[i]) != Primary(pke->docs[i]);
  }
  // Not byte-equal as stored (spaces after ';', capitals): only the normalised forms agree.
  EXPECT_GT(differing_raw, 0);
}

// SemEval-2010 test with pke's test.combined.stem.json against the answer file the semeval importer
// reads by default (test_answer/test.combined.stem.final): the same 100 documents, the same references
// and alternatives ('+' variants) once stripped, stemmed both ways (".stem." in both names).
TEST(IoFormatsTest, PkeSemEvalReferencesAreTheCombinedStemAnswers) {
  const std::string dir = std::string(KPLAB_SHARED_DATA) + "/semeval2010/test";
  const std::string refs = std::string(KPLAB_SHARED_DATA) + "/semeval2010/boudinfl_references/test.combined.stem.json";
  if (!fs::exists(refs)) GTEST_SKIP() << "shared data not found at " << refs;
  auto answers = ImportDataset(dir);
  DatasetOptions opt;
  opt.references = refs;
  auto pke = ImportDataset(dir, opt);
  ASSERT_TRUE(answers.ok()) << answers.error().message;
  ASSERT_TRUE(pke.ok()) << pke.error().message;
  ASSERT_EQ(answers->docs.size(), 100u);
  ASSERT_EQ(pke->docs.size(), 100u);
  const auto strip = [](std::string s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
    std::size_t i = 0;
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    return s.substr(i);
  };
  for (std::size_t i = 0; i < 100; ++i) {
    ASSERT_EQ(answers->docs[i].id, pke->docs[i].id);
    std::vector<std::vector<std::string>> a = answers->docs[i].refs;
    for (auto& r : a)
      for (auto& alt : r) alt = strip(alt);
    EXPECT_EQ(a, pke->docs[i].refs) << "document " << answers->docs[i].id;
    EXPECT_TRUE(answers->docs[i].refs_stemmed);
    EXPECT_TRUE(pke->docs[i].refs_stemmed);
  }
}

TEST(IoFormatsTest, HfPredictionsAlignById) {
  auto p = ImportPredictions(kFormatsData + "hf_predictions.jsonl");
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->format, "hf");
  ASSERT_EQ(p->docs.size(), 5u);
  EXPECT_EQ(p->docs[0].doc_id, "5");  // written in reverse order
  auto d = ImportDataset(kFormatsData + "midas/tiny.jsonl");
  ASSERT_TRUE(d.ok());
  auto a = AlignPredictions(*d, std::move(*p));
  ASSERT_TRUE(a.ok()) << a.error().message;
  EXPECT_EQ(a->docs[0].doc_id, "1");
  EXPECT_EQ(a->docs[0].phrases.at(0), "scheduler");

  TempDir dir;
  const std::string f = dir / "p.jsonl";
  WriteFormatsFile(f, "{\"keyphrases\": [\"a\"]}\n");
  EXPECT_EQ(PredError(f, "hf"), f + ":1: missing field \"id\" (expected a JSON object with \"id\" and \"keyphrases\")");
  WriteFormatsFile(f, "{\"id\": \"1\", \"keyphrases\": 3}\n");
  EXPECT_EQ(PredError(f, "hf"), f + ":1: field \"keyphrases\" is a number (expected a ';'-joined string or an array)");
  WriteFormatsFile(f, "{\"id\": \"1\", \"keyphrases\": [\"a\"]}\n{\"id\": \"9\", \"keyphrases\": [\"b\"]}\n");
  auto unknown = AlignPredictions(*d, *ImportPredictions(f));
  EXPECT_EQ(unknown.error().message,
            f + ":2: unknown document id \"9\" (expected an id of a document of " + kFormatsData + "midas/tiny.jsonl)");
  WriteFormatsFile(f, "{\"id\": \"1\", \"keyphrases\": [\"a\"]}\n{\"id\": 1, \"keyphrases\": [\"b\"]}\n");
  auto twice = AlignPredictions(*d, *ImportPredictions(f));
  EXPECT_EQ(twice.error().message, f + ":2: second prediction line for \"1\" (expected one line per document of " +
                                       kFormatsData + "midas/tiny.jsonl)");
  // A JSON array of records, scores as [phrase, score] pairs.
  const std::string arr = dir / "p.json";
  WriteFormatsFile(arr, "[{\"id\": \"1\", \"keyphrases\": [[\"a\", 0.5], [\"b\", 0.25]]}]");
  auto scored = ImportPredictions(arr);
  ASSERT_TRUE(scored.ok()) << scored.error().message;
  EXPECT_EQ(scored->format, "hf");
  EXPECT_EQ(scored->docs[0].scores, (std::vector<double>{0.5, 0.25}));
  WriteFormatsFile(f, "");
  EXPECT_EQ(PredError(f, "hf"), f + ": no prediction lines (expected one line per document)");
  EXPECT_EQ(PredError(f, "csv"),
            f + ": unknown prediction format \"csv\" (expected one of: lines, jsonl, kpeval, tokens, hf, opennmt-kpg)");
}

TEST(IoFormatsTest, OpenNmtKpgPredictionsKeepModelOrderAndScores) {
  auto p = ImportPredictions(kFormatsData + "opennmt_kpg_predictions.jsonl");
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->format, "opennmt-kpg");
  ASSERT_EQ(p->docs.size(), 5u);
  // Tiny's ranked list for doc 1 without its <peos>, token lists joined with spaces, in beam order.
  EXPECT_EQ(p->docs[0].phrases, (std::vector<std::string>{"scheduler", "batch jobs", "interactive queries", "cluster",
                                                          "job length", "cluster computing", "resource management"}));
  EXPECT_EQ(p->docs[0].scores, (std::vector<double>{-0.25, -0.5, -0.75, -1.0, -1.25, -1.5, -1.75}));
  EXPECT_EQ(p->docs[0].doc_id, "");  // aligned by line order

  TempDir dir;
  const std::string f = dir / "kpg.jsonl";
  WriteFormatsFile(f, "{\"pred_sents\": [[\"a\"], [\"b\"]], \"pred_scores\": [-1]}\n");
  EXPECT_EQ(PredError(f), f + ":1: fields \"pred_scores\" and \"pred_sents\" differ in length (1 and 2) (expected "
                              "one score per predicted keyphrase)");
  WriteFormatsFile(f, "{\"pred_sents\": [[\"a\", 1]]}\n");
  EXPECT_EQ(PredError(f, "opennmt-kpg"), f + ":1: \"pred_sents\"[0][1] is a number (expected a string (a token))");
  WriteFormatsFile(f, "{\"pred_sents\": [\"a b\"], \"pred_scores\": [\"x\"]}\n");
  EXPECT_EQ(PredError(f, "opennmt-kpg"), f + ":1: \"pred_scores\"[0] is a string (expected a number)");
  WriteFormatsFile(f, "{\"pred_sents\": {}}\n");
  EXPECT_EQ(PredError(f, "opennmt-kpg"), f + ":1: field \"pred_sents\" is an object (expected an array of token lists)");
  WriteFormatsFile(f, "{\"src\": []}\n");
  EXPECT_EQ(PredError(f, "opennmt-kpg"), f + ":1: missing field \"pred_sents\" (expected a JSON object with \"pred_sents\")");
  WriteFormatsFile(f, "{\"pred_sents\": [\n");
  EXPECT_EQ(PredError(f, "opennmt-kpg"), f + ":1: malformed JSON (a missing or extra comma, colon, brace, bracket or key) (expected " + kRecords + ")");
  // Scores saved as one-element lists (a tensor's tolist()) are read as their number.
  WriteFormatsFile(f, "\xEF\xBB\xBF{\"pred_sents\": [[\"a\"]], \"pred_scores\": [[-2.5]]}\n");
  auto one = ImportPredictions(f);
  ASSERT_TRUE(one.ok()) << one.error().message;
  EXPECT_EQ(one->format, "opennmt-kpg");
  EXPECT_EQ(one->docs[0].scores, (std::vector<double>{-2.5}));
}

TEST(IoFormatsTest, DetectionNamesEveryNewFormat) {
  EXPECT_EQ(DetectDatasetFormat(kFormatsData + "midas/tiny.jsonl").value(), "midas");
  EXPECT_EQ(DetectDatasetFormat(kFormatsData + "taln/tiny.jsonl").value(), "taln");
  EXPECT_EQ(DetectDatasetFormat(kFormatsData + "deepkpg").value(), "deepkpg");
  EXPECT_EQ(DetectDatasetFormat(kFormatsData + "deepkpg/test.source").value(), "deepkpg");
  EXPECT_EQ(DetectDatasetFormat(kFormatsData + "pke/Test").value(), "hulth");
  TempDir dir;
  fs::create_directories(dir / "one");
  fs::copy_file(kFormatsData + "taln/tiny.jsonl", dir / "one/test.json");
  EXPECT_EQ(DetectDatasetFormat(dir / "one").value(), "taln");  // the one JSON file in the directory
  const std::string f = WriteFormatsFile(dir / "x.json", "[{\"id\": 1, \"text\": \"no keyphrase field\"}]");
  EXPECT_EQ(DetectDatasetFormat(f).error().message,
            f + ": cannot detect dataset format (expected one of: meng, one2set, kpeval, hulth, semeval, kptimes, midas, "
                "taln, deepkpg)");
}

}  // namespace
}  // namespace kplab
