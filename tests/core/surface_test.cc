// DistinctSurfaces (kplab/surface.h), the lean path of `kplab cache add`: the distinct surfaces of a
// dataset's keyphrases without building a corpus. The reference is the corpus itself: BuildCorpus's
// phrases, their surfaces deduplicated in phrase order (what the plan embeds in the surface form),
// must equal DistinctSurfaces's list, element by element, for every profile on the shared data's
// formats (Meng-2017 keyphrase-only and with text, Hulth raw text, KPTimes JSONL with alternatives,
// kg_one2set), and on hand-made hostile pieces whose expected list is worked out below.
#include <gtest/gtest.h>

#include <filesystem>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "corpus_inputs.h"
#include "kplab/corpus.h"
#include "kplab/surface.h"

namespace kplab {
namespace {

const std::string kSurfaceShared = std::string(KPLAB_SHARED_DATA) + "/";

std::vector<std::string> CorpusSurfaces(const Corpus& c) {
  std::vector<std::string> out;
  std::unordered_set<std::string> seen;
  for (const Phrase& p : c.phrases) {
    if (seen.emplace(p.surface()).second) out.emplace_back(p.surface());
  }
  return out;
}

std::vector<std::string> Lean(const RawDataset& ds, const RawPredictions* preds, const Profile& profile,
                              int threads = 0) {
  auto s = DistinctSurfaces(ds, preds, profile, threads);
  EXPECT_TRUE(s.ok()) << s.error().message;
  std::vector<std::string> out;
  if (!s.ok()) return out;
  for (std::size_t i = 0; i < s->size(); ++i) out.emplace_back((*s)[i]);
  return out;
}

std::vector<std::string> AllProfiles() {
  std::vector<std::string> names = ProfileNames();
  names.push_back("kenchan+one2set");
  return names;
}

// Same list (order included) as the corpus under every profile; returns the kplab profile's size.
void ExpectSameAsCorpus(const RawDataset& ds, const RawPredictions* preds, std::size_t min_phrases) {
  for (const std::string& name : AllProfiles()) {
    SCOPED_TRACE("profile " + name);
    const Profile profile = *FindProfile(name);
    auto corpus = BuildCorpus(ds, preds, profile);
    ASSERT_TRUE(corpus.ok()) << corpus.error().message;
    const std::vector<std::string> want = CorpusSurfaces(*corpus);
    ASSERT_GE(want.size(), min_phrases);
    // One range, the default, and more ranges than cores (the merge of ranges keeps one pass's order).
    for (int threads : {1, 0, 3, 8}) {
      SCOPED_TRACE("threads " + std::to_string(threads));
      const std::vector<std::string> got = Lean(ds, preds, profile, threads);
      ASSERT_EQ(got.size(), want.size());
      for (std::size_t i = 0; i < want.size(); ++i) ASSERT_EQ(got[i], want[i]) << "surface " << i;
    }
  }
}

struct SurfaceCase {
  std::string dataset, predictions;
  std::size_t min_phrases;
};

TEST(DistinctSurfaces, EqualTheCorpusPhrasesOnRealDataUnderEveryProfile) {
  if (!std::filesystem::exists(kSurfaceShared + "kpg_testsets_meng2017/kp20k")) GTEST_SKIP() << "no ../shared/data";
  const std::string meng = kSurfaceShared + "kpg_testsets_meng2017/";
  const std::string preds = kSurfaceShared + "predictions/catSeqTG-2RF1/";
  const std::vector<SurfaceCase> cases = {
      {meng + "kp20k", preds + "kp20k/seed1234.txt", 80000},     // keyphrase-only, 20,000 documents
      {meng + "inspec", preds + "inspec/seed1234.txt", 5000},    // with text
      {meng + "semeval", preds + "semeval/seed1234.txt", 1000},  // ExHiRD: references as given
      {meng + "krapivin", preds + "krapivin/seed1234.txt", 2900},
      {kSurfaceShared + "kp20k_test_first1000", "", 4000},   // kg_one2set's src/trg pair
      {kSurfaceShared + "inspec_hulth2003/Test", "", 3000},  // raw text: the word tokenizer
      {kSurfaceShared + "kptimes_sample", "", 50},           // JSONL, alternative forms of a reference
  };
  for (const SurfaceCase& c : cases) {
    SCOPED_TRACE(c.dataset);
    auto ds = ImportDataset(c.dataset);
    ASSERT_TRUE(ds.ok()) << ds.error().message;
    std::optional<RawPredictions> aligned;
    ASSERT_NO_FATAL_FAILURE(test::AlignIfAny(c.predictions, *ds, aligned));
    ExpectSameAsCorpus(*ds, aligned ? &*aligned : nullptr, c.min_phrases);
  }
}

// JSONL predictions (a list per document with "<peos>" inside, which a list keeps under
// piece_in_lines; ids) on a JSONL dataset (MIDAS), and KPEval's JSONL dataset alone.
TEST(DistinctSurfaces, EqualTheCorpusPhrasesOnJsonlFiles) {
  const std::string data = std::string(KPLAB_TEST_DATA);
  auto ds = ImportDataset(data + "/formats/midas/tiny.jsonl");
  ASSERT_TRUE(ds.ok()) << ds.error().message;
  auto p = ImportPredictions(data + "/formats/hf_predictions.jsonl");
  ASSERT_TRUE(p.ok()) << p.error().message;
  auto a = AlignPredictions(*ds, std::move(*p));
  ASSERT_TRUE(a.ok()) << a.error().message;
  ExpectSameAsCorpus(*ds, &*a, 20);
  auto kpeval = ImportDataset(data + "/io/kpeval_ok.jsonl");
  ASSERT_TRUE(kpeval.ok()) << kpeval.error().message;
  ExpectSameAsCorpus(*kpeval, nullptr, 2);
}

RawDataset HostileDataset() {
  RawDataset ds;
  ds.path = ds.name = "mem";
  ds.format = "jsonl";
  auto doc = [&](std::vector<std::vector<std::string>> refs) {
    RawDoc d;
    d.id = std::to_string(ds.docs.size() + 1);
    d.has_text = false;
    d.refs = std::move(refs);
    ds.docs.push_back(std::move(d));
  };
  doc({{"Deep Learning"}, {" deep learning "}, {"  "}, {"\xC3\x84rger"}, {"a/b <eokp>"}});
  doc({{"graph", "Graphs"}, {}, {"new ##er [ digit ]"}});
  doc({});
  return ds;
}

RawPredictions HostilePredictions() {
  RawPredictions p;
  p.path = "mem-preds";
  p.format = "lines";
  auto line = [&](std::vector<std::string> pieces) {
    RawPrediction r;
    r.phrases.assign(pieces.begin(), pieces.end());
    r.from_line = true;
    p.docs.push_back(std::move(r));
  };
  line({"deep learning", "<peos>", "GRAPH", "", "graph", "<unk> net", "x <p_start> y"});
  line({""});  // an empty line: no keyphrase, or one empty keyphrase (peers)
  line({"Tree", "tree ", "trees"});
  return p;
}

// Pieces that normalize to one surface, empty and blank pieces, non-ASCII upper case, ExHiRD's
// markers, KPEval's cleanup, <peos> and a filtered <unk> prediction (its phrase is made before it is
// filtered, so it is embedded), an empty line, a document without keyphrases.
TEST(DistinctSurfaces, HostilePiecesGiveTheCorpusSurfaces) {
  const RawDataset ds = HostileDataset();
  const RawPredictions preds = HostilePredictions();
  ExpectSameAsCorpus(ds, &preds, 5);
  ExpectSameAsCorpus(ds, nullptr, 3);
  // By hand, profile kplab: stripped and lower-cased; blank pieces and the empty line dropped; each
  // document's references, then its predictions; the first occurrence places a surface.
  EXPECT_EQ(Lean(ds, &preds, *FindProfile("kplab")),
            (std::vector<std::string>{"deep learning", "\xC3\xA4rger", "a/b <eokp>", "<peos>", "graph",
                                      "<unk> net", "x <p_start> y", "graphs", "new ##er [ digit ]", "tree",
                                      "trees"}));
  // kpeval: lower-cased, empty pieces kept (the blank reference is the first), " ##" and "[ digit ]"
  // cleaned up.
  EXPECT_EQ(Lean(ds, &preds, *FindProfile("kpeval")),
            (std::vector<std::string>{"deep learning", "", "\xC3\xA4rger", "a/b <eokp>", "<peos>", "graph",
                                      "<unk> net", "x <p_start> y", "graphs", "newer [digit]", "tree",
                                      "trees"}));
  // exhird: case kept; the markers split pieces ("a/b <eokp>" -> "a", "b"); a reference's first form
  // only ("Graphs" is an alternative); the empty line has no keyphrase.
  EXPECT_EQ(Lean(ds, &preds, *FindProfile("exhird")),
            (std::vector<std::string>{"Deep Learning", "deep learning", "\xC3\x84rger", "a", "b", "<peos>",
                                      "GRAPH", "graph", "<unk> net", "x", "y", "new ##er [ digit ]", "Tree",
                                      "tree", "trees"}));
}

TEST(DistinctSurfaces, PredictionCountMismatchIsBuildCorpusError) {
  const RawDataset ds = HostileDataset();
  RawPredictions preds = HostilePredictions();
  preds.docs.pop_back();
  auto corpus = BuildCorpus(ds, &preds, *FindProfile("kplab"));
  auto lean = DistinctSurfaces(ds, &preds, *FindProfile("kplab"));
  ASSERT_FALSE(corpus.ok());
  ASSERT_FALSE(lean.ok());
  EXPECT_EQ(lean.error().message, "mem-preds: 2 prediction lines for 3 documents of mem (expected one per document)");
  EXPECT_EQ(lean.error().message, corpus.error().message);
}

}  // namespace
}  // namespace kplab
