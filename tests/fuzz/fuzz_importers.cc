// libFuzzer harness for the importers (core/src/io*.cc) and the corpus builder: one input becomes a
// dataset laid out on disk the way its format expects (plus, optionally, a prediction file), then goes
// through ImportDataset -> ImportPredictions -> AlignPredictions -> BuildCorpus under every profile
// choice, as `kplab eval` would. An importer must either return the data or an Error; any crash,
// sanitizer report, abort or hang is a finding (docs/testing.md).
//
// KPLAB_FUZZ_PRINT=1 prints what each stage returned (to check a seed does reach the corpus builder).
//
// Input layout (so that seeds can be written by hand, tests/fuzz/corpus/importers):
//   byte 0: dataset format (low 3 bits, mod 6: meng, one2set, kpeval, hulth, semeval, kptimes);
//           bit 3: pass the format explicitly instead of auto-detecting; bits 4-5: format option
//           (hulth keys uncontr/contr/both; semeval answers combined/author/liaad/path);
//           bit 6: import the single file instead of the directory (meng, one2set, kpeval, kptimes)
//           bit 7: instead, one of the record/pair formats (low 3 bits mod 4: midas, taln, deepkpg,
//           pke = a Hulth text directory with --references), bits 4-5 choosing the split option (none,
//           "test", "train", none)
//   byte 1: prediction format (low 2 bits: lines, jsonl, tokens, auto-detected from the file name);
//           bits 2-4: profile (mod the number of built-in profiles); bit 5: instead hf (low bit 0) or
//           opennmt-kpg (low bit 1), written to pred.jsonl
//   rest:   parts separated by NUL bytes, one file each; which file a part becomes depends on the format:
//     meng     [context, allkeywords, predictions]        test_context.txt, test_allkeywords.txt
//     one2set  [src, trg, predictions]                    test_src.txt, test_trg.txt
//     kpeval   [jsonl, predictions]                       data.jsonl
//     kptimes  [jsonl, predictions]                       data.jsonl
//     hulth    [predictions, abstr1, uncontr1, contr1, abstr2, ...]   Test/<i>.abstr ...
//     semeval  [predictions, answers, text1, key1, text2, key2, ...]  test/C-<i>.txt.final,
//              test_answer/test.<combined|author>.stem.final or answers.txt, liaad_keys/C-<i>.key
//     midas    [records, predictions]                    data.jsonl (a JSON array if it starts with '[')
//     taln     [records, predictions]                    data.jsonl
//     deepkpg  [source, target, predictions]             test.source, test.target
//     pke      [predictions, refs JSON, abstr1, abstr2, ...]  inspec/Test/<i>.abstr, refs.json
//   A missing part means the file is absent; an empty part is an empty file (but an empty text part
//   in single-file mode means no text file: a keys-only dataset).
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "kplab/corpus.h"
#include "kplab/io.h"
#include "kplab/profile.h"

namespace fs = std::filesystem;

namespace {

const fs::path& Root() {
  static const fs::path root = [] {
    const char* base = std::getenv("KPLAB_FUZZ_TMP");
    std::string tmpl = std::string(base != nullptr ? base : (fs::exists("/dev/shm") ? "/dev/shm" : "/tmp")) +
                       "/kplab-fuzz-importers-XXXXXX";
    if (mkdtemp(tmpl.data()) == nullptr) {
      std::perror("mkdtemp");
      std::abort();
    }
    std::atexit([] {
      std::error_code ec;
      fs::remove_all(Root(), ec);
    });
    return fs::path(tmpl);
  }();
  return root;
}

void Put(const fs::path& path, std::string_view bytes) {
  fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::vector<std::string_view> Parts(std::string_view rest) {
  std::vector<std::string_view> parts;
  if (rest.empty()) return parts;
  std::size_t start = 0;
  while (true) {
    const std::size_t pos = rest.find('\0', start);
    if (pos == std::string_view::npos) {
      parts.push_back(rest.substr(start));
      return parts;
    }
    parts.push_back(rest.substr(start, pos - start));
    start = pos + 1;
  }
}

// Every importer result is used as a caller would: sizes, ids and strings read.
std::size_t Touch(const kplab::RawDataset& d) {
  std::size_t n = d.content_hash.size() + d.name.size();
  for (const auto& doc : d.docs) {
    n += doc.id.size() + doc.title.size() + doc.body.size();
    for (const auto& ref : doc.refs)
      for (const auto& alt : ref) n += alt.size();
  }
  return n;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  const std::uint8_t b0 = data[0], b1 = data[1];
  const std::vector<std::string_view> parts =
      Parts(std::string_view(reinterpret_cast<const char*>(data) + 2, size - 2));
  const auto part = [&](std::size_t i) -> const std::string_view* {
    return i < parts.size() ? &parts[i] : nullptr;
  };

  const fs::path& root = Root();
  std::error_code ec;
  fs::remove_all(root, ec);
  fs::create_directories(root);

  static const char* kRecordFormats[] = {"midas", "taln", "deepkpg", "pke"};
  const bool record_format = (b0 >> 7) & 1;
  const std::string format = record_format ? kRecordFormats[(b0 & 7) % 4] : kplab::DatasetFormats()[(b0 & 7) % 6];
  const bool explicit_format = (b0 >> 3) & 1;
  const int option = (b0 >> 4) & 3;
  const bool single_file = (b0 >> 6) & 1;
  kplab::DatasetOptions options;
  if (explicit_format) options.format = format == "pke" ? "hulth" : format;
  if (record_format) {
    static const char* kSplits[] = {"", "test", "train", ""};
    options.split = kSplits[option];
  }

  fs::path dataset = root / "data";
  const std::string_view* predictions = nullptr;
  if (format == "meng" || format == "one2set") {
    const bool meng = format == "meng";
    const fs::path text = dataset / (meng ? "test_context.txt" : "test_src.txt");
    const fs::path keys = dataset / (meng ? "test_allkeywords.txt" : "test_trg.txt");
    fs::create_directories(dataset);
    // Single-file mode with an empty text part: the keys file alone (Meng-2017's kp20k layout).
    if (part(0) && !(single_file && part(0)->empty())) Put(text, *part(0));
    if (part(1)) Put(keys, *part(1));
    predictions = part(2);
    if (single_file) dataset = part(1) ? keys : text;
  } else if (format == "midas" || format == "taln") {
    fs::create_directories(dataset);
    if (part(0)) Put(dataset / "data.jsonl", *part(0));
    predictions = part(1);
    if (single_file) dataset /= "data.jsonl";
  } else if (format == "deepkpg") {
    fs::create_directories(dataset);
    if (part(0)) Put(dataset / "test.source", *part(0));
    if (part(1)) Put(dataset / "test.target", *part(1));
    predictions = part(2);
    if (single_file) dataset /= part(0) ? "test.source" : "test.target";
  } else if (format == "pke") {
    dataset = root / "inspec" / "Test";
    fs::create_directories(dataset);
    predictions = part(0);
    if (part(1)) {
      Put(root / "refs.json", *part(1));
      options.references = (root / "refs.json").string();
    }
    for (std::size_t i = 2; i < parts.size(); ++i) Put(dataset / (std::to_string(i - 1) + ".abstr"), parts[i]);
  } else if (format == "kpeval" || format == "kptimes") {
    fs::create_directories(dataset);
    if (part(0)) Put(dataset / "data.jsonl", *part(0));
    predictions = part(1);
    if (single_file) dataset /= "data.jsonl";
  } else if (format == "hulth") {
    static const char* kKeys[] = {"uncontr", "contr", "both", "uncontr"};
    options.hulth_keys = kKeys[option];
    dataset = root / "inspec" / "Test";
    fs::create_directories(dataset);
    predictions = part(0);
    for (std::size_t i = 1; i < parts.size(); ++i) {
      const std::size_t doc = (i - 1) / 3 + 1;
      static const char* kExt[] = {".abstr", ".uncontr", ".contr"};
      Put(dataset / (std::to_string(doc) + kExt[(i - 1) % 3]), parts[i]);
    }
  } else {  // semeval
    static const char* kAnswers[] = {"combined", "author", "liaad", ""};
    dataset = root / "semeval" / "test";
    fs::create_directories(dataset);
    predictions = part(0);
    if (part(1)) {
      if (option == 3) {
        Put(root / "answers.txt", *part(1));
        options.semeval_answers = (root / "answers.txt").string();
      } else {
        options.semeval_answers = kAnswers[option];
        const std::string who = option == 1 ? "author" : "combined";
        Put(root / "semeval" / "test_answer" / ("test." + who + ".stem.final"), *part(1));
      }
    }
    for (std::size_t i = 2; i < parts.size(); ++i) {
      const std::string id = "C-" + std::to_string((i - 2) / 2 + 1);
      if ((i - 2) % 2 == 0) {
        Put(dataset / (id + ".txt.final"), parts[i]);
      } else {
        Put(root / "semeval" / "liaad_keys" / (id + ".key"), parts[i]);
      }
    }
  }

  static const bool print = std::getenv("KPLAB_FUZZ_PRINT") != nullptr;
  const auto say = [&](const char* stage, const std::string& what) {
    if (print) std::fprintf(stderr, "%s: %s\n", stage, what.c_str());
  };
  auto ds = kplab::ImportDataset(dataset.string(), options);
  (void)kplab::DetectDatasetFormat(dataset.string());
  say("dataset", ds.ok() ? ds->format + ", " + std::to_string(ds->docs.size()) + " documents" : ds.error().message);
  if (!ds.ok()) {
    if (ds.error().message.empty()) std::abort();  // every failure must say what is wrong
    return 0;
  }
  volatile std::size_t sink = Touch(*ds);

  const auto& names = kplab::ProfileNames();
  const auto profile = kplab::FindProfile(names[((b1 >> 2) & 7) % names.size()]);
  if (!profile) std::abort();
  {
    auto corpus = kplab::BuildCorpus(*ds, nullptr, *profile);
    sink = sink + (corpus.ok() ? corpus->docs.size() : 0);
  }
  if (predictions == nullptr) return 0;

  static const char* kPredFormat[] = {"lines", "jsonl", "tokens", ""};
  const std::string pred_format = (b1 >> 5) & 1 ? ((b1 & 1) ? "opennmt-kpg" : "hf") : kPredFormat[b1 & 3];
  const fs::path pred_path = root / (pred_format == "lines" ? "pred.txt" : "pred.jsonl");
  Put(pred_path, *predictions);
  auto preds = kplab::ImportPredictions(pred_path.string(), pred_format);
  say("predictions", preds.ok() ? preds->format + ", " + std::to_string(preds->docs.size()) + " lines"
                                : preds.error().message);
  if (!preds.ok()) {
    if (preds.error().message.empty()) std::abort();
    return 0;
  }
  auto aligned = kplab::AlignPredictions(*ds, std::move(*preds));
  say("align", aligned.ok() ? "ok" : aligned.error().message);
  if (!aligned.ok()) return 0;
  auto corpus = kplab::BuildCorpus(*ds, &*aligned, *profile);
  say("corpus", corpus.ok() ? std::to_string(corpus->docs.size()) + " documents" : corpus.error().message);
  sink = sink + (corpus.ok() ? corpus->docs.size() : 0);
  (void)sink;
  return 0;
}
