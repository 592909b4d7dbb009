// StreamCorpus (kplab/corpus.h, design note 72): the documents BuildCorpus builds, handed out range by
// range and not kept. The promises, each tried here: every document is handed out once, in a range that
// reads as the corpus BuildCorpus gives (by string, since ids differ) and gives its kernel bits; the
// header, ids and warnings are the built corpus's; start is called once, before any range, with the plan
// the ranges then follow; an error of start, or of the files, stops the build before any range; and
// nothing of the documents is kept.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "../../core/src/eval/on_threads.h"
#include "corpus_inputs.h"
#include "kplab/corpus.h"
#include "kplab/io.h"
#include "kplab/kernels.h"
#include "kplab/store.h"

namespace kplab {
namespace {

const std::string kStreamShared = std::string(KPLAB_SHARED_DATA) + "/";

std::vector<std::string> StreamStrings(const Corpus& c, std::span<const TokenId> ids) {
  std::vector<std::string> out;
  for (TokenId id : ids) out.emplace_back(c.Str(id));
  return out;
}

// What a document reads, string by string, and what the three kernels give it, bit by bit: what must not
// depend on the corpus it is read from.
std::vector<std::string> StreamDocumentReading(const Corpus& c, const Document& doc) {
  std::vector<std::string> out{"id " + doc.id, doc.has_text ? "text" : "no text"};
  auto add = [&](const std::string& what, const std::vector<std::string>& strings) {
    out.push_back(what);
    out.insert(out.end(), strings.begin(), strings.end());
  };
  add("source tokens", StreamStrings(c, doc.src_tokens()));
  add("source stems", StreamStrings(c, doc.src_stems()));
  for (const auto& [name, list] : {std::pair{"refs", doc.refs}, std::pair{"preds", doc.preds},
                                   std::pair{"refs before dedup", doc.refs_before_dedup()}}) {
    for (const Keyphrase& kp : list) {
      const Phrase& p = *kp.phrase;
      add(std::string(name) + " " + std::string(p.surface()) + " key " + std::string(c.Str(p.key)) + " dedup " +
              std::string(c.Str(c.DedupKey(p))) + (kp.present() ? " present" : " absent") +
              (kp.after_peos() ? " after peos" : ""),
          StreamStrings(c, p.tokens()));
      add("stems", StreamStrings(c, p.stems()));
      add("alternative keys", StreamStrings(c, kp.alt_keys()));
    }
  }
  for (int v = 0; v < 3; ++v) {
    out.push_back("views " + std::to_string(v));
    for (const Keyphrase* kp : doc.pred_view(v)) out.emplace_back(kp->phrase->surface());
    for (const Keyphrase* kp : doc.ref_view(v)) out.emplace_back(kp->phrase->surface());
  }
  for (const Keyphrase* kp : doc.pred_view_dups()) out.emplace_back(kp->phrase->surface());
  out.push_back("pieces " + std::to_string(doc.n_pred_pieces) + " invalid " + std::to_string(doc.n_pred_invalid) +
                " dups " + std::to_string(doc.n_pred_dups()));
  KernelParams params;
  params.ks = *ParseCutoffs("5,10,M,O");
  for (const char* name : {"exact", "rank", "rprec"}) {
    auto kernel = MakeMetricKernel(name, params, c.profile);
    EXPECT_TRUE(kernel.ok()) << name;
    if (!kernel.ok()) return out;
    std::vector<KernelSubset> subsets = {{0, "all"}};
    if (doc.has_text) subsets.insert(subsets.end(), {{1, "present"}, {2, "absent"}});
    std::vector<double> values((*kernel)->names().size() * subsets.size());
    (*kernel)->Score(c, doc, subsets, values);
    for (double v : values) {
      std::uint64_t bits;
      std::memcpy(&bits, &v, sizeof bits);
      out.push_back(std::string(name) + " " + std::to_string(bits));
    }
  }
  return out;
}

// What a stream gave: each document's reading (empty: never handed out) and how often it was handed out,
// start's calls and plan, and whether a range came before start.
struct StreamSeen {
  std::mutex mutex;
  std::vector<std::vector<std::string>> readings;
  std::vector<int> times;
  int starts = 0;
  bool range_before_start = false;
  std::vector<std::size_t> plan, range_begins;
  std::shared_ptr<const Corpus> header;
};

CorpusSinks StreamRecorder(StreamSeen& seen, std::size_t n_docs) {
  seen.readings.assign(n_docs, {});
  seen.times.assign(n_docs, 0);
  CorpusSinks sinks;
  sinks.start = [&seen](std::shared_ptr<const Corpus> header, const StreamPlan& plan) {
    const std::lock_guard<std::mutex> lock(seen.mutex);
    ++seen.starts;
    seen.plan.assign(plan.starts.begin(), plan.starts.end());
    seen.header = std::move(header);
    return Status::Ok();
  };
  sinks.range = [&seen](const Corpus& range, std::size_t begin) {
    std::vector<std::vector<std::string>> readings;
    for (const Document& doc : range.docs) readings.push_back(StreamDocumentReading(range, doc));
    const std::lock_guard<std::mutex> lock(seen.mutex);
    seen.range_before_start = seen.range_before_start || seen.starts == 0;
    seen.range_begins.push_back(begin);
    EXPECT_EQ(range.phrase_ids, PhraseIds::kPerRange);
    for (std::size_t i = 0; i < readings.size(); ++i) {
      ASSERT_LT(begin + i, seen.readings.size());
      seen.readings[begin + i] = std::move(readings[i]);
      ++seen.times[begin + i];
    }
  };
  return sinks;
}

// The streamed documents against the corpus BuildCorpus gives on one thread: each once, reading the same.
void ExpectStreamedAsBuilt(const Corpus& built, StreamSeen& seen, const Result<StreamedCorpus>& streamed,
                           const std::string& what) {
  ASSERT_TRUE(streamed.ok()) << what << ": " << streamed.error().message;
  EXPECT_EQ(seen.starts, 1) << what;
  EXPECT_FALSE(seen.range_before_start) << what;
  ASSERT_FALSE(seen.plan.empty()) << what;
  EXPECT_EQ(seen.plan.front(), 0u) << what;
  EXPECT_EQ(seen.plan.back(), built.docs.size()) << what;
  // The ranges handed out are the plan's, each once.
  std::vector<std::size_t> begins = seen.range_begins;
  std::sort(begins.begin(), begins.end());
  EXPECT_EQ(begins, std::vector<std::size_t>(seen.plan.begin(), seen.plan.end() - 1)) << what;
  for (std::size_t r = 0; r + 1 < seen.plan.size(); ++r) {
    EXPECT_LE(seen.plan[r + 1] - seen.plan[r], eval_internal::DocsPerRange()) << what << ", range " << r;
  }
  ASSERT_EQ(seen.readings.size(), built.docs.size()) << what;
  for (std::size_t i = 0; i < built.docs.size(); ++i) {
    ASSERT_EQ(seen.times[i], 1) << what << ", document " << i;
    ASSERT_EQ(seen.readings[i], StreamDocumentReading(built, built.docs[i])) << what << ", document " << i;
  }
  ASSERT_NE(seen.header, nullptr) << what;
  EXPECT_EQ(streamed->header, seen.header) << what;
  const Corpus& h = *streamed->header;
  EXPECT_EQ(h.dataset_name, built.dataset_name) << what;
  EXPECT_EQ(h.dataset_path, built.dataset_path) << what;
  EXPECT_EQ(h.dataset_hash, built.dataset_hash) << what;
  EXPECT_EQ(h.predictions_path, built.predictions_path) << what;
  EXPECT_EQ(h.predictions_hash, built.predictions_hash) << what;
  EXPECT_EQ(h.refs_stemmed, built.refs_stemmed) << what;
  EXPECT_EQ(h.profile.name, built.profile.name) << what;
  // Nothing of the documents is kept.
  EXPECT_TRUE(h.docs.empty() && h.phrases.empty() && h.lex.size() == 0 && h.view_blocks.empty()) << what;
  std::vector<std::string> ids;
  for (const Document& d : built.docs) ids.push_back(d.id);
  // A line dataset's ids are its documents' numbers, kept as their count (DocIds::Numbered); an
  // imported dataset's are kept one by one.
  EXPECT_TRUE(streamed->numbered_ids == 0 || streamed->doc_ids.empty()) << what;
  const std::vector<std::string> streamed_ids =
      streamed->numbered_ids > 0 ? DocIds::Numbered(streamed->numbered_ids).ToVector() : streamed->doc_ids;
  EXPECT_EQ(streamed_ids, ids) << what;
  EXPECT_EQ(streamed->warnings, built.warnings) << what;
}

// Streams case c in ranges of each size of `per` (0: kplab eval's, 37: 3 for a dataset under 100
// documents) on each thread count, from an import given up and (Meng-2017 files) from lines, against the
// corpus BuildCorpus gives on one thread.
void ExpectStreamedCaseAsBuilt(const test::RangeCase& c, const std::vector<std::size_t>& per_range,
                               const std::vector<int>& thread_counts) {
  const Profile profile = *FindProfile(c.profile);
  auto ds = ImportDataset(c.dataset);
  ASSERT_TRUE(ds.ok()) << ds.error().message;
  std::optional<RawPredictions> aligned;
  ASSERT_NO_FATAL_FAILURE(test::AlignIfAny(c.predictions, *ds, aligned));
  auto built = BuildCorpus(*ds, aligned ? &*aligned : nullptr, profile, 1);
  ASSERT_TRUE(built.ok()) << built.error().message;
  for (std::size_t per : per_range) {
    if (per == 0) per = eval_internal::DocsPerRange();
    if (per == 37 && built->docs.size() < 100) per = 3;
    const eval_internal::ScopedDocsPerRange ranges(per);
    for (int threads : thread_counts) {
      const std::string what = c.dataset + " " + c.profile + ", ranges of " + std::to_string(per) + ", " +
                               std::to_string(threads) + " threads";
      {
        StreamSeen seen;
        RawDataset copy = *ds;
        std::optional<RawPredictions> preds = aligned;
        auto streamed =
            StreamCorpus(std::move(copy), std::move(preds), profile, threads, StreamRecorder(seen, built->docs.size()));
        ExpectStreamedAsBuilt(*built, seen, streamed, what + ", import");
        EXPECT_TRUE(copy.docs.empty()) << what << ": the import given up keeps no documents";
      }
      if (!c.predictions.empty() && LineDocuments::Handles(c.dataset, {}, c.predictions, "")) {
        StreamSeen seen;
        auto docs = LineDocuments::Open(c.dataset, {}, c.predictions, threads);
        ASSERT_TRUE(docs.ok()) << docs.error().message;
        auto streamed = StreamCorpus(std::move(*docs), profile, threads, StreamRecorder(seen, built->docs.size()));
        ExpectStreamedAsBuilt(*built, seen, streamed, what + ", lines");
      }
    }
  }
}

// Quick: Inspec's lines and text under kplab's profile, KPTimes' raw text and alternative forms; ranges
// of one document and of 37 (3).
TEST(StreamCorpus, EveryDocumentIsHandedOutOnceAndReadsAsTheBuiltCorpus) {
  if (!std::filesystem::exists(kStreamShared + "kpg_testsets_meng2017/inspec")) GTEST_SKIP() << "no ../shared/data";
  const std::vector<test::RangeCase> cases = test::RangeCases();
  ExpectStreamedCaseAsBuilt(cases[0], {1, 37}, {1, 3});
  ExpectStreamedCaseAsBuilt(cases.back(), {1, 37}, {2});
}

// Slow: every case, ranges of 1, 37 (3) and kplab eval's, on 1, 2 and 3 threads.
TEST(StreamCorpus, EveryDocumentOfEveryCaseReadsAsTheBuiltCorpus) {
  if (!std::filesystem::exists(kStreamShared + "kpg_testsets_meng2017/inspec")) GTEST_SKIP() << "no ../shared/data";
  for (const test::RangeCase& c : test::RangeCases()) ExpectStreamedCaseAsBuilt(c, {1, 37, 0}, {1, 2, 3});
}

TEST(StreamCorpus, AStartErrorStopsTheBuildBeforeAnyRange) {
  int ranges = 0;
  CorpusSinks sinks;
  sinks.start = [](std::shared_ptr<const Corpus>, const StreamPlan& plan) -> Status {
    EXPECT_EQ(plan.starts.back(), 3u);
    return Error::Usage("shard 5/2: no such shard");
  };
  sinks.range = [&](const Corpus&, std::size_t) { ++ranges; };
  auto streamed =
      StreamCorpus(test::RefsOnlyDataset({{"a"}, {"b"}, {"c"}}), std::nullopt, *FindProfile("kplab"), 2, sinks);
  ASSERT_FALSE(streamed.ok());
  EXPECT_EQ(streamed.error().kind, ErrorKind::kUsage);
  EXPECT_EQ(streamed.error().message, "shard 5/2: no such shard");
  EXPECT_EQ(ranges, 0);
}

TEST(StreamCorpus, PredictionsThatDoNotAlignAreRefusedBeforeStart) {
  RawDataset ds = test::RefsOnlyDataset({{"a"}, {"b"}});
  RawPredictions preds;
  preds.path = "preds.txt";
  preds.docs.resize(3);
  int calls = 0;
  CorpusSinks sinks;
  sinks.start = [&](std::shared_ptr<const Corpus>, const StreamPlan&) {
    ++calls;
    return Status::Ok();
  };
  sinks.range = [&](const Corpus&, std::size_t) { ++calls; };
  auto streamed = StreamCorpus(std::move(ds), std::move(preds), *FindProfile("kplab"), 1, sinks);
  ASSERT_FALSE(streamed.ok());
  EXPECT_EQ(streamed.error().kind, ErrorKind::kInput);
  EXPECT_NE(streamed.error().message.find("preds.txt: 3 prediction lines for 2 documents"), std::string::npos)
      << streamed.error().message;
  EXPECT_EQ(calls, 0);
}

TEST(StreamCorpus, NoDocumentsIsOneEmptyRange) {
  StreamSeen seen;
  auto streamed =
      StreamCorpus(test::RefsOnlyDataset({}), std::nullopt, *FindProfile("kplab"), 4, StreamRecorder(seen, 0));
  ASSERT_TRUE(streamed.ok()) << streamed.error().message;
  EXPECT_EQ(seen.starts, 1);
  EXPECT_EQ(seen.plan, (std::vector<std::size_t>{0, 0}));
  EXPECT_EQ(seen.range_begins, (std::vector<std::size_t>{0}));
  EXPECT_TRUE(streamed->doc_ids.empty());
}

TEST(StreamCorpus, ThePlanSaysWhetherAnyDocumentHasText) {
  if (!std::filesystem::exists(kStreamShared + "kptimes_sample")) GTEST_SKIP() << "no ../shared/data";
  auto plan_text = [](Result<RawDataset> ds) {
    EXPECT_TRUE(ds.ok());
    std::optional<bool> any_text;
    CorpusSinks sinks;
    sinks.start = [&](std::shared_ptr<const Corpus>, const StreamPlan& plan) {
      any_text = plan.any_text;
      return Status::Ok();
    };
    auto streamed = StreamCorpus(std::move(*ds), std::nullopt, *FindProfile("kplab"), 1, sinks);
    EXPECT_TRUE(streamed.ok());
    return any_text;
  };
  EXPECT_EQ(plan_text(ImportDataset(kStreamShared + "kptimes_sample")), std::optional<bool>(true));
  EXPECT_EQ(plan_text(test::RefsOnlyDataset({{"a"}})), std::optional<bool>(false));
  // Meng-2017 lines without a text file (KP20k), and with one (Inspec).
  const std::string meng = kStreamShared + "kpg_testsets_meng2017/";
  const std::string preds = kStreamShared + "predictions/catSeqTG-2RF1/";
  for (const auto& [dataset, want] : {std::pair{std::string("kp20k"), false}, std::pair{std::string("inspec"), true}}) {
    auto docs = LineDocuments::Open(meng + dataset, {}, preds + dataset + "/seed1234.txt", 1);
    ASSERT_TRUE(docs.ok()) << docs.error().message;
    std::optional<bool> any_text;
    CorpusSinks sinks;
    sinks.start = [&](std::shared_ptr<const Corpus>, const StreamPlan& plan) {
      any_text = plan.any_text;
      return Status::Ok();
    };
    ASSERT_TRUE(StreamCorpus(std::move(*docs), *FindProfile("kplab"), 1, sinks).ok()) << dataset;
    EXPECT_EQ(any_text, std::optional<bool>(want)) << dataset;
  }
}

}  // namespace
}  // namespace kplab
