// PhraseIds::kPerRange (kplab/corpus.h, design note 61): a corpus built in ranges whose strings and
// phrases are appended instead of merged. The promises, each tried here: every document reads the same
// strings as in the corpus built on one thread (by string, since ids differ), so the exact, rank and
// rprec kernels give the same bits; ids stay unique; the choice is asked once, and only when there is a
// merge to skip; and what needs one id per string across documents refuses such a corpus instead of
// answering from it (the lexicon's look-ups, the embedding plan, homogeneity). With per-range ids each
// thread's block is cut into ranges of at most DocsPerRange documents (design note 70): the same
// promises on many small ranges, one thread's included.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "../../core/src/eval/on_threads.h"
#include "../../core/src/eval/piece_store.h"
#include "corpus_inputs.h"
#include "kplab/corpus.h"
#include "kplab/embedding_plan.h"
#include "kplab/homog_corpus.h"
#include "kplab/io.h"
#include "kplab/kernels.h"
#include "kplab/lexicon.h"
#include "temp_dir.h"

namespace kplab {
namespace {

const std::string kPerRangeShared = std::string(KPLAB_SHARED_DATA) + "/";

std::vector<std::string> PerRangeStrings(const Corpus& c, std::span<const TokenId> ids) {
  std::vector<std::string> out;
  for (TokenId id : ids) out.emplace_back(c.Str(id));
  return out;
}

void ExpectSameByPerRangeStrings(const Corpus& a, std::span<const Keyphrase> x, const Corpus& b,
                                 std::span<const Keyphrase> y, const std::string& what) {
  ASSERT_EQ(x.size(), y.size()) << what;
  for (std::size_t j = 0; j < x.size(); ++j) {
    const Phrase& p = *x[j].phrase;
    const Phrase& q = *y[j].phrase;
    EXPECT_EQ(p.surface(), q.surface()) << what << " " << j;
    EXPECT_EQ(a.Str(p.key), b.Str(q.key)) << what << " " << j;
    EXPECT_EQ(a.Str(a.DedupKey(p)), b.Str(b.DedupKey(q))) << what << " " << j;
    EXPECT_EQ(PerRangeStrings(a, p.tokens()), PerRangeStrings(b, q.tokens())) << what << " " << j;
    EXPECT_EQ(PerRangeStrings(a, p.stems()), PerRangeStrings(b, q.stems())) << what << " " << j;
    EXPECT_EQ(PerRangeStrings(a, x[j].alt_keys()), PerRangeStrings(b, y[j].alt_keys())) << what << " " << j;
    EXPECT_EQ(x[j].present(), y[j].present()) << what << " " << j;
    EXPECT_EQ(x[j].after_peos(), y[j].after_peos()) << what << " " << j;
  }
}

// Every document of b reads what the same document of a reads, string by string.
void ExpectSameDocumentsByStrings(const Corpus& a, const Corpus& b) {
  ASSERT_EQ(a.docs.size(), b.docs.size());
  for (std::size_t i = 0; i < a.docs.size(); ++i) {
    const Document& d = a.docs[i];
    const Document& e = b.docs[i];
    const std::string what = "doc " + std::to_string(i);
    ASSERT_EQ(d.id, e.id) << what;
    EXPECT_EQ(PerRangeStrings(a, d.src_tokens()), PerRangeStrings(b, e.src_tokens())) << what;
    EXPECT_EQ(PerRangeStrings(a, d.src_stems()), PerRangeStrings(b, e.src_stems())) << what;
    ExpectSameByPerRangeStrings(a, d.refs, b, e.refs, what + " refs");
    ExpectSameByPerRangeStrings(a, d.preds, b, e.preds, what + " preds");
    ExpectSameByPerRangeStrings(a, d.refs_before_dedup(), b, e.refs_before_dedup(), what + " refs_before_dedup");
  }
  EXPECT_EQ(a.warnings, b.warnings);
}

// Every value of the three kernels on every document and subset, as bits.
std::vector<std::uint64_t> PerRangeKernelBits(const Corpus& c) {
  std::vector<std::uint64_t> out;
  KernelParams params;
  params.ks = *ParseCutoffs("5,10,M,O");
  for (const char* name : {"exact", "rank", "rprec"}) {
    auto kernel = MakeMetricKernel(name, params, c.profile);
    EXPECT_TRUE(kernel.ok()) << name;
    if (!kernel.ok()) return out;
    const std::size_t width = (*kernel)->names().size();
    for (const Document& doc : c.docs) {
      std::vector<KernelSubset> subsets = {{0, "all"}};
      if (doc.has_text) subsets.insert(subsets.end(), {{1, "present"}, {2, "absent"}});
      std::vector<double> values(width * subsets.size());
      (*kernel)->Score(c, doc, subsets, values);
      for (double v : values) {
        std::uint64_t bits;
        std::memcpy(&bits, &v, sizeof bits);
        out.push_back(bits);
      }
    }
  }
  return out;
}

// The values of one document of the kernels in `order` (indices into kernels), scored in that order,
// as bits, listed in the kernels' order (a kernel not in `order` gives none).
std::vector<std::uint64_t> DocumentBits(const Corpus& c, const Document& doc,
                                        const std::vector<std::unique_ptr<MetricKernel>>& kernels,
                                        const std::vector<std::size_t>& order) {
  std::vector<KernelSubset> subsets = {{0, "all"}};
  if (doc.has_text) subsets.insert(subsets.end(), {{1, "present"}, {2, "absent"}});
  std::vector<std::vector<double>> values(kernels.size());
  for (std::size_t k : order) {
    values[k].assign(kernels[k]->names().size() * subsets.size(), -1.0);
    kernels[k]->Score(c, doc, subsets, values[k]);
  }
  std::vector<std::uint64_t> out;
  for (const auto& row : values) {
    for (double v : row) {
      std::uint64_t bits;
      std::memcpy(&bits, &v, sizeof bits);
      out.push_back(bits);
    }
  }
  return out;
}

ChoosePhraseIds AlwaysAnswer(PhraseIds ids, int* asked) {
  return [ids, asked] {
    ++*asked;
    return ids;
  };
}

TEST(PhraseIds, PerRangeCorpusReadsTheSameStringsAndScoresTheSameBits) {
  if (!std::filesystem::exists(kPerRangeShared + "kpg_testsets_meng2017/kp20k")) GTEST_SKIP() << "no ../shared/data";
  for (const test::RangeCase& c : test::RangeCases()) {
    SCOPED_TRACE(c.dataset + " " + c.profile);
    test::LoadedCase in;
    ASSERT_NO_FATAL_FAILURE(test::LoadCase(c, in));
    const Profile& profile = in.profile;
    int asked = 0;
    // One range: nothing to merge, so nothing is asked and the corpus is kCorpus whatever the answer.
    auto one = BuildCorpus(in.ds, in.predictions(), profile, 1, AlwaysAnswer(PhraseIds::kPerRange, &asked));
    ASSERT_TRUE(one.ok()) << one.error().message;
    EXPECT_EQ(asked, 0);
    EXPECT_EQ(one->phrase_ids, PhraseIds::kCorpus);
    const std::vector<std::uint64_t> expected = PerRangeKernelBits(*one);
    ASSERT_FALSE(expected.empty());
    for (int threads : {2, 3, 8}) {
      SCOPED_TRACE("threads " + std::to_string(threads));
      asked = 0;
      auto many = BuildCorpus(in.ds, in.predictions(), profile, threads, AlwaysAnswer(PhraseIds::kPerRange, &asked));
      ASSERT_TRUE(many.ok()) << many.error().message;
      EXPECT_EQ(asked, 1);
      EXPECT_EQ(many->phrase_ids, PhraseIds::kPerRange);
      ExpectSameDocumentsByStrings(*one, *many);
      EXPECT_EQ(PerRangeKernelBits(*many), expected);
      // Phrase ids are unique over the corpus: each phrase is phrases[id], each range's after the last's,
      // and every keyphrase points at one of them.
      for (std::size_t i = 0; i < many->phrases.size(); ++i) ASSERT_EQ(many->phrases[i].id, i);
      EXPECT_GE(many->phrases.size(), one->phrases.size());  // a piece met in two ranges: two phrases
      for (const Document& d : many->docs) {
        for (const Keyphrase& k : d.refs) ASSERT_EQ(k.phrase, &many->phrases[k.phrase->id]);
        for (const Keyphrase& k : d.preds) ASSERT_EQ(k.phrase, &many->phrases[k.phrase->id]);
        for (const Keyphrase& k : d.refs_before_dedup()) ASSERT_EQ(k.phrase, &many->phrases[k.phrase->id]);
      }
      // Asked for kCorpus, the same build merges: the corpus of one thread, ids included.
      asked = 0;
      auto merged = BuildCorpus(in.ds, in.predictions(), profile, threads, AlwaysAnswer(PhraseIds::kCorpus, &asked));
      ASSERT_TRUE(merged.ok()) << merged.error().message;
      EXPECT_EQ(asked, 1);
      EXPECT_EQ(merged->phrase_ids, PhraseIds::kCorpus);
      ASSERT_EQ(merged->lex.size(), one->lex.size());
      ASSERT_EQ(merged->phrases.size(), one->phrases.size());
      for (const Document& d : merged->docs) {
        for (const Keyphrase& k : d.preds) ASSERT_EQ(k.phrase, &merged->phrases[k.phrase->id]);
      }
      ExpectSameDocumentsByStrings(*one, *merged);
    }
    // Read as lines by the building threads (KP20k-style Meng-2017 files): the same.
    if (LineDocuments::Handles(c.dataset, {}, c.predictions, "")) {
      auto docs = LineDocuments::Open(c.dataset, {}, c.predictions, 3);
      ASSERT_TRUE(docs.ok()) << docs.error().message;
      asked = 0;
      auto lines = BuildCorpus(std::move(*docs), profile, 3, AlwaysAnswer(PhraseIds::kPerRange, &asked));
      ASSERT_TRUE(lines.ok()) << lines.error().message;
      EXPECT_EQ(asked, 1);
      ExpectSameDocumentsByStrings(*one, *lines);
      EXPECT_EQ(PerRangeKernelBits(*lines), expected);
    }
  }
}

// KernelDocumentScope (the runner opens one around each document's kernels): the kernels that score
// the scope's document share the items the first of them read, and each adds the sets it needs (exact
// none, rank the stems' or the strings', rprec both). Every order of the three kernels in a scope gives
// the bits each gives alone without one, on every shared case and profile (KPEval's alpha-NDCG reads
// strings, not stems). And the hostile interleavings: another document scored inside the scope, then
// the scope's again; a second scope opened over the first; a kernel after its scope ended; two threads
// scoring their own documents in scopes at once.
TEST(KernelDocumentScope, SharedItemsGiveEachKernelsOwnBits) {
  if (!std::filesystem::exists(kPerRangeShared + "kpg_testsets_meng2017/inspec")) GTEST_SKIP() << "no ../shared/data";
  for (const test::RangeCase& c : test::RangeCases()) {
    SCOPED_TRACE(c.dataset + " " + c.profile);
    test::LoadedCase in;
    ASSERT_NO_FATAL_FAILURE(test::LoadCase(c, in));
    const Profile& profile = in.profile;
    auto corpus = BuildCorpus(in.ds, in.predictions(), profile, 1);
    ASSERT_TRUE(corpus.ok()) << corpus.error().message;
    KernelParams params;
    params.ks = *ParseCutoffs("5,10,M,O");
    std::vector<std::unique_ptr<MetricKernel>> kernels;
    for (const char* name : {"exact", "rank", "rprec"}) {
      auto kernel = MakeMetricKernel(name, params, corpus->profile);
      ASSERT_TRUE(kernel.ok()) << name;
      kernels.push_back(std::move(*kernel));
    }
    const std::vector<std::vector<std::size_t>> orders = {{0, 1, 2}, {2, 1, 0}, {1, 2, 0}, {2, 0, 1}};
    const std::vector<Document>& docs = corpus->docs;
    ASSERT_GT(docs.size(), 3u);
    std::vector<std::vector<std::uint64_t>> alone_of(docs.size());
    for (std::size_t d = 0; d < docs.size(); ++d) {
      // Each kernel alone, without a scope, on a thread of its own (whose items it reads first).
      std::vector<std::uint64_t>& alone = alone_of[d];
      for (std::size_t k = 0; k < kernels.size(); ++k) {
        std::vector<std::uint64_t> bits;
        std::thread([&] { bits = DocumentBits(*corpus, docs[d], kernels, {k}); }).join();
        alone.insert(alone.end(), bits.begin(), bits.end());
      }
      for (const auto& order : orders) {
        const KernelDocumentScope scope(docs[d]);
        ASSERT_EQ(DocumentBits(*corpus, docs[d], kernels, order), alone) << "document " << d;
      }
      {
        const KernelDocumentScope scope(docs[d]);
        DocumentBits(*corpus, docs[d], kernels, {0});                      // exact's items, no sets
        DocumentBits(*corpus, docs[(d + 1) % docs.size()], kernels, {2});  // another document, in the scope
        ASSERT_EQ(DocumentBits(*corpus, docs[d], kernels, {1, 2, 0}), alone) << "document " << d;
        const KernelDocumentScope over(docs[(d + 2) % docs.size()]);  // a second scope replaces it
        DocumentBits(*corpus, docs[(d + 2) % docs.size()], kernels, {2});
        ASSERT_EQ(DocumentBits(*corpus, docs[d], kernels, {2, 0, 1}), alone) << "document " << d;
      }
      ASSERT_EQ(DocumentBits(*corpus, docs[d], kernels, {1, 0, 2}), alone) << "after the scopes, document " << d;
    }
    // Two threads at once, each opening scopes for its own documents: a scope is its thread's alone.
    std::atomic<int> wrong{0};
    auto half = [&](std::size_t first) {
      for (std::size_t d = first; d < docs.size(); d += 2) {
        const KernelDocumentScope scope(docs[d]);
        if (DocumentBits(*corpus, docs[d], kernels, {2, 0, 1}) != alone_of[d]) ++wrong;
      }
    };
    std::thread other(half, 1);
    half(0);
    other.join();
    EXPECT_EQ(wrong.load(), 0);
  }
}

// Every string of a corpus built with one id per string (kCorpus) has exactly one: the builder interns
// tokens, stems, keys and dedup keys through different calls (keys of two or more words through
// Lexicon::InternWords, which trusts the caller that they hold a space), and a string put in the wrong
// one of the lexicon's two tables would get a second id, which Find (by the string's bytes) would not
// give back. Tried on every way a document is read and every profile's cut of the pieces, on one thread
// and merged from two.
TEST(PhraseIds, EveryStringOfACorpusHasOneId) {
  if (!std::filesystem::exists(kPerRangeShared + "kpg_testsets_meng2017/inspec")) GTEST_SKIP() << "no ../shared/data";
  for (const test::RangeCase& c : test::RangeCases()) {
    SCOPED_TRACE(c.dataset + " " + c.profile);
    test::LoadedCase in;
    ASSERT_NO_FATAL_FAILURE(test::LoadCase(c, in));
    const Profile& profile = in.profile;
    for (int threads : {1, 2}) {
      int asked = 0;
      auto corpus = BuildCorpus(in.ds, in.predictions(), profile, threads, AlwaysAnswer(PhraseIds::kCorpus, &asked));
      ASSERT_TRUE(corpus.ok()) << corpus.error().message;
      ASSERT_GT(corpus->lex.size(), 100u);
      std::size_t with_space = 0;
      for (TokenId id = 0; id < corpus->lex.size(); ++id) {
        const std::string_view s = corpus->lex.Str(id);
        with_space += s.find(' ') != std::string_view::npos;
        const std::optional<TokenId> found = corpus->lex.Find(s);
        ASSERT_TRUE(found.has_value()) << "threads " << threads << ": '" << s << "'";
        ASSERT_EQ(*found, id) << "threads " << threads << ": '" << s << "'";
      }
      EXPECT_GT(with_space, 10u);  // keys of two or more words were interned
    }
  }
}

// Ranges of at most DocsPerRange documents, built one after another on each thread (design note 70),
// here 37 (3 for KPTimes' 10) and 1 (a range a document), so that every dataset makes many: every document reads
// the strings of the one-thread corpus and the kernels give its bits, with ids unique, on 1, 2 and 3
// threads, read as an import and as lines; asked for kCorpus, a build is one range a thread, merged.
TEST(PhraseIds, SmallRangesReadTheSameStringsAndScoreTheSameBits) {
  if (!std::filesystem::exists(kPerRangeShared + "kpg_testsets_meng2017/inspec")) GTEST_SKIP() << "no ../shared/data";
  for (const test::RangeCase& c : test::RangeCases()) {
    SCOPED_TRACE(c.dataset + " " + c.profile);
    test::LoadedCase in;
    ASSERT_NO_FATAL_FAILURE(test::LoadCase(c, in));
    const Profile& profile = in.profile;
    int asked = 0;
    auto one = BuildCorpus(in.ds, in.predictions(), profile, 1, AlwaysAnswer(PhraseIds::kPerRange, &asked));
    ASSERT_TRUE(one.ok()) << one.error().message;
    ASSERT_EQ(asked, 0);  // DocsPerRange is far above these datasets' size: one range, nothing asked
    const std::vector<std::uint64_t> expected = PerRangeKernelBits(*one);
    const std::size_t n_docs = one->docs.size();
    ASSERT_GT(n_docs, 3u);
    for (std::size_t per : {n_docs > 100 ? std::size_t{37} : std::size_t{3}, std::size_t{1}}) {
      const eval_internal::ScopedDocsPerRange small(per);
      for (int threads : {1, 2, 3}) {
        SCOPED_TRACE("threads " + std::to_string(threads) + ", " + std::to_string(per) + " documents a range");
        // Each thread's block [n * t / threads, n * (t + 1) / threads) in ceil(size / per) ranges.
        std::size_t ranges = 0;
        for (int t = 0; t < threads; ++t) {
          const std::size_t size = n_docs * (t + 1) / threads - n_docs * t / threads;
          ranges += (size + per - 1) / per;
        }
        asked = 0;
        auto many = BuildCorpus(in.ds, in.predictions(), profile, threads, AlwaysAnswer(PhraseIds::kPerRange, &asked));
        ASSERT_TRUE(many.ok()) << many.error().message;
        EXPECT_EQ(asked, 1);
        EXPECT_EQ(many->phrase_ids, PhraseIds::kPerRange);
        EXPECT_EQ(many->view_blocks.size(), ranges);
        ExpectSameDocumentsByStrings(*one, *many);
        EXPECT_EQ(PerRangeKernelBits(*many), expected);
        for (std::size_t i = 0; i < many->phrases.size(); ++i) ASSERT_EQ(many->phrases[i].id, i);
        for (const Document& d : many->docs) {
          for (const Keyphrase& k : d.refs) ASSERT_EQ(k.phrase, &many->phrases[k.phrase->id]);
          for (const Keyphrase& k : d.preds) ASSERT_EQ(k.phrase, &many->phrases[k.phrase->id]);
          for (const Keyphrase& k : d.refs_before_dedup()) ASSERT_EQ(k.phrase, &many->phrases[k.phrase->id]);
        }
        EXPECT_THROW(many->lex.Intern("a string"), std::logic_error);
        // Asked for kCorpus: one range a thread, merged into the one-thread corpus, ids included.
        asked = 0;
        auto merged = BuildCorpus(in.ds, in.predictions(), profile, threads, AlwaysAnswer(PhraseIds::kCorpus, &asked));
        ASSERT_TRUE(merged.ok()) << merged.error().message;
        EXPECT_EQ(asked, 1);
        EXPECT_EQ(merged->phrase_ids, PhraseIds::kCorpus);
        EXPECT_EQ(merged->view_blocks.size(), static_cast<std::size_t>(threads));
        ASSERT_EQ(merged->lex.size(), one->lex.size());
        ASSERT_EQ(merged->phrases.size(), one->phrases.size());
        ExpectSameDocumentsByStrings(*one, *merged);
        // Read as lines by the building threads, each thread's block through one reader.
        if (LineDocuments::Handles(c.dataset, {}, c.predictions, "")) {
          auto docs = LineDocuments::Open(c.dataset, {}, c.predictions, threads);
          ASSERT_TRUE(docs.ok()) << docs.error().message;
          asked = 0;
          auto lines = BuildCorpus(std::move(*docs), profile, threads, AlwaysAnswer(PhraseIds::kPerRange, &asked));
          ASSERT_TRUE(lines.ok()) << lines.error().message;
          EXPECT_EQ(asked, 1);
          EXPECT_EQ(lines->view_blocks.size(), ranges);
          ExpectSameDocumentsByStrings(*one, *lines);
          EXPECT_EQ(PerRangeKernelBits(*lines), expected);
        }
      }
    }
  }
}

// Every view of every document (by subset, and the repeats'), by string, and the counts beside them.
void ExpectSameViews(const Corpus& a, const Corpus& b) {
  ASSERT_EQ(a.docs.size(), b.docs.size());
  for (std::size_t i = 0; i < a.docs.size(); ++i) {
    const Document& d = a.docs[i];
    const Document& e = b.docs[i];
    auto same = [&](KeyphraseList x, KeyphraseList y, const char* what) {
      ASSERT_EQ(x.size(), y.size()) << what << " doc " << i;
      for (std::size_t j = 0; j < x.size(); ++j) {
        ASSERT_EQ(x[j]->phrase->surface(), y[j]->phrase->surface()) << what << " doc " << i << " " << j;
        ASSERT_EQ(a.Str(x[j]->phrase->key), b.Str(y[j]->phrase->key)) << what << " doc " << i << " " << j;
      }
    };
    for (int v = 0; v < 3; ++v) {
      same(d.pred_view(v), e.pred_view(v), "pred_view");
      same(d.ref_view(v), e.ref_view(v), "ref_view");
    }
    same(d.pred_view_dups(), e.pred_view_dups(), "pred_view_dups");
    same(d.ref_view_dups(), e.ref_view_dups(), "ref_view_dups");
    ASSERT_EQ(d.n_pred_dups(), e.n_pred_dups()) << i;
    ASSERT_EQ(d.n_pred_invalid, e.n_pred_invalid) << i;
    ASSERT_EQ(d.n_pred_pieces, e.n_pred_pieces) << i;
  }
}

// Where several ranges of a block meet what a small dataset never reaches: lines released in whole 2 MiB
// extents every 4096 documents while later ranges of the same block still read theirs (KP20k twice over,
// 40,000 documents in files of 3.7 and 6.0 MB, so that whole extents lie inside), mapped and read, and
// an import given up to the build (its raw documents freed as they are built), in ranges of 5000
// documents on one and two threads: the one-thread corpus's strings, views and bits.
TEST(PhraseIds, RangesOfABlockReadTheirLinesAsTheEarlierOnesGoBack) {
  const std::string shared_kp20k = kPerRangeShared + "kpg_testsets_meng2017/kp20k/word_kp20k_testing_allkeywords.txt";
  const std::string shared_preds = kPerRangeShared + "predictions/catSeqTG-2RF1/kp20k/seed1234.txt";
  if (!std::filesystem::exists(shared_kp20k)) GTEST_SKIP() << "no ../shared/data";
  const test::TempDir dir;
  const std::string kp20k = dir / "kp20k", preds = dir / "predictions.txt";
  std::filesystem::create_directory(kp20k);
  auto twice = [](const std::string& from, const std::string& to) {
    std::ifstream in(from, std::ios::binary);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::ofstream(to, std::ios::binary) << text << text;
  };
  twice(shared_kp20k, kp20k + "/word_kp20k_testing_allkeywords.txt");
  twice(shared_preds, preds);
  ASSERT_GT(std::filesystem::file_size(preds), std::uintmax_t{2} << 21);  // a whole 2 MiB extent inside
  auto ds = ImportDataset(kp20k);
  ASSERT_TRUE(ds.ok()) << ds.error().message;
  auto aligned = test::ImportAligned(*ds, preds);
  ASSERT_TRUE(aligned.ok()) << aligned.error().message;
  const Profile profile = *FindProfile("kplab");
  auto one = BuildCorpus(*ds, &*aligned, profile, 1);
  ASSERT_TRUE(one.ok()) << one.error().message;
  const std::vector<std::uint64_t> expected = PerRangeKernelBits(*one);
  const eval_internal::ScopedDocsPerRange ranges_of(5000);
  struct MappedReads {  // the switch as the test found it, whatever happens
    ~MappedReads() { SetMappedFileReads(false); }
  } restore;
  for (int threads : {1, 2}) {
    SCOPED_TRACE("threads " + std::to_string(threads));
    int asked = 0;
    RawDataset dataset = *ds;
    std::optional<RawPredictions> predictions = *aligned;
    auto given_up = BuildCorpus(std::move(dataset), std::move(predictions), profile, threads,
                                AlwaysAnswer(PhraseIds::kPerRange, &asked));
    ASSERT_TRUE(given_up.ok()) << given_up.error().message;
    EXPECT_EQ(given_up->view_blocks.size(), 8u);
    ExpectSameDocumentsByStrings(*one, *given_up);
    ExpectSameViews(*one, *given_up);
    EXPECT_EQ(PerRangeKernelBits(*given_up), expected);
    for (bool mapped : {false, true}) {
      SCOPED_TRACE(mapped ? "lines mapped" : "lines read");
      SetMappedFileReads(mapped);
      auto docs = LineDocuments::Open(kp20k, {}, preds, threads);
      ASSERT_TRUE(docs.ok()) << docs.error().message;
      auto lines = BuildCorpus(std::move(*docs), profile, threads, AlwaysAnswer(PhraseIds::kPerRange, &asked));
      ASSERT_TRUE(lines.ok()) << lines.error().message;
      EXPECT_EQ(lines->view_blocks.size(), 8u);
      ExpectSameDocumentsByStrings(*one, *lines);
      ExpectSameViews(*one, *lines);
      EXPECT_EQ(PerRangeKernelBits(*lines), expected);
    }
    EXPECT_EQ(asked, 3);
  }
}

// The edges of the split: more threads than documents and a range a document give a range a document,
// never an empty one; one thread over more documents than a range takes is asked and split; a dataset
// of no documents is one range, merged, and nothing is asked.
TEST(PhraseIds, RangesAreNeverEmptyAndNoDocumentsAsksNothing) {
  const RawDataset ds = test::RefsOnlyDataset({{"neural networks"}, {"graph data"}, {"neural networks"}});
  const Profile profile = *FindProfile("kplab");
  auto one = BuildCorpus(ds, nullptr, profile, 1);
  ASSERT_TRUE(one.ok()) << one.error().message;
  for (auto [per, threads, ranges] : {std::tuple{1, 8, 3}, std::tuple{2, 1, 2}, std::tuple{2, 3, 3}}) {
    SCOPED_TRACE(std::to_string(per) + " a range, " + std::to_string(threads) + " threads");
    const eval_internal::ScopedDocsPerRange small(per);
    int asked = 0;
    auto c = BuildCorpus(ds, nullptr, profile, threads, AlwaysAnswer(PhraseIds::kPerRange, &asked));
    ASSERT_TRUE(c.ok()) << c.error().message;
    EXPECT_EQ(asked, 1);
    EXPECT_EQ(c->phrase_ids, PhraseIds::kPerRange);
    EXPECT_EQ(c->view_blocks.size(), static_cast<std::size_t>(ranges));
    ExpectSameDocumentsByStrings(*one, *c);
    EXPECT_EQ(PerRangeKernelBits(*c), PerRangeKernelBits(*one));
  }
  const eval_internal::ScopedDocsPerRange small(1);
  int asked = 0;
  auto none = BuildCorpus(test::RefsOnlyDataset({}), nullptr, profile, 4, AlwaysAnswer(PhraseIds::kPerRange, &asked));
  ASSERT_TRUE(none.ok()) << none.error().message;
  EXPECT_EQ(asked, 0);
  EXPECT_EQ(none->phrase_ids, PhraseIds::kCorpus);
  EXPECT_TRUE(none->docs.empty());
}

// What a thread's next range takes over (design note 71) in the worst light: pieces longer than a
// record holds (kept by address, into bytes the previous range's builder freed or the build released)
// met again in every document, so every range's memo would hit stale records if a clear missed one;
// short ones, `<peos>`, a repeat, a document without references. In ranges of one and two documents on
// 1, 2 and 3 threads, from a kept import, an import given up to the build, and lines, under kplab's and
// ExHiRD's profiles: the one-thread corpus's strings and the kernels' bits.
TEST(PhraseIds, LongPiecesMetAgainInEveryRangeReadAsOnOneThread) {
  const test::TempDir dir;
  const std::string data = dir / "long", preds = dir / "predictions.txt";
  std::filesystem::create_directory(data);
  const std::string common = "a keyphrase far longer than the forty eight bytes a record holds inline";
  std::ofstream context(data + "/long_context.txt"), keywords(data + "/long_allkeywords.txt"), predicted(preds);
  for (int i = 0; i < 24; ++i) {
    const std::string mine = "another long keyphrase, this one only for document number " + std::to_string(i % 5);
    context << "we study " << common << " and " << mine << " with graphs . <eos> more text\n";
    keywords << (i % 7 == 3 ? "" : common + ";" + mine + ";graphs") << "\n";
    predicted << common << ";graphs;" << mine << ";" << common << ";<peos>;" << mine << " again;short\n";
  }
  context.close();
  keywords.close();
  predicted.close();
  auto ds = ImportDataset(data);
  ASSERT_TRUE(ds.ok()) << ds.error().message;
  auto aligned = test::ImportAligned(*ds, preds);
  ASSERT_TRUE(aligned.ok()) << aligned.error().message;
  for (const char* name : {"kplab", "exhird"}) {
    const Profile profile = *FindProfile(name);
    auto one = BuildCorpus(*ds, &*aligned, profile, 1);
    ASSERT_TRUE(one.ok()) << one.error().message;
    ASSERT_GT(one->docs[0].preds.size(), 2u);
    ASSERT_GT(one->docs[0].preds[0].phrase->surface().size(), eval_internal::PieceStore::kInline);
    const std::vector<std::uint64_t> expected = PerRangeKernelBits(*one);
    for (std::size_t per : {std::size_t{1}, std::size_t{2}}) {
      const eval_internal::ScopedDocsPerRange small(per);
      for (int threads : {1, 2, 3}) {
        SCOPED_TRACE(std::string(name) + ", " + std::to_string(per) + " a range, threads " + std::to_string(threads));
        int asked = 0;
        auto kept = BuildCorpus(*ds, &*aligned, profile, threads, AlwaysAnswer(PhraseIds::kPerRange, &asked));
        ASSERT_TRUE(kept.ok()) << kept.error().message;
        EXPECT_EQ(kept->view_blocks.size(), 24 / per);
        ExpectSameDocumentsByStrings(*one, *kept);
        EXPECT_EQ(PerRangeKernelBits(*kept), expected);
        RawDataset dataset = *ds;
        std::optional<RawPredictions> predictions = *aligned;
        auto given_up = BuildCorpus(std::move(dataset), std::move(predictions), profile, threads,
                                    AlwaysAnswer(PhraseIds::kPerRange, &asked));
        ASSERT_TRUE(given_up.ok()) << given_up.error().message;
        ExpectSameDocumentsByStrings(*one, *given_up);
        EXPECT_EQ(PerRangeKernelBits(*given_up), expected);
        auto docs = LineDocuments::Open(data, {}, preds, threads);
        ASSERT_TRUE(docs.ok()) << docs.error().message;
        auto lines = BuildCorpus(std::move(*docs), profile, threads, AlwaysAnswer(PhraseIds::kPerRange, &asked));
        ASSERT_TRUE(lines.ok()) << lines.error().message;
        ExpectSameDocumentsByStrings(*one, *lines);
        EXPECT_EQ(PerRangeKernelBits(*lines), expected);
        EXPECT_EQ(asked, 3);
      }
    }
  }
}

// A string met in two ranges has two ids in a per-range corpus, by design: worked out by hand.
TEST(PhraseIds, AStringOfTwoRangesHasTwoIds) {
  const RawDataset ds = test::RefsOnlyDataset({{"neural networks"}, {"graph data"}, {"neural networks"}});
  int asked = 0;
  auto c = BuildCorpus(ds, nullptr, *FindProfile("kplab"), 3, AlwaysAnswer(PhraseIds::kPerRange, &asked));
  ASSERT_TRUE(c.ok()) << c.error().message;
  const Keyphrase& first = c->docs[0].refs[0];
  const Keyphrase& third = c->docs[2].refs[0];
  EXPECT_EQ(first.phrase->surface(), "neural networks");
  EXPECT_EQ(third.phrase->surface(), "neural networks");
  EXPECT_NE(first.phrase->id, third.phrase->id);  // ranges 0 and 2: one phrase each
  EXPECT_NE(first.key(), third.key());
  EXPECT_EQ(c->Str(first.key()), "neural network");
  EXPECT_EQ(c->Str(third.key()), "neural network");
  // The one-thread corpus has one phrase for the two.
  auto one = BuildCorpus(ds, nullptr, *FindProfile("kplab"), 1);
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->docs[0].refs[0].phrase, one->docs[2].refs[0].phrase);
}

// What needs one id per string across documents refuses a per-range corpus rather than answer from it.
TEST(PhraseIds, WhatReadsAcrossDocumentsRefusesAPerRangeCorpus) {
  const RawDataset ds =
      test::RefsOnlyDataset(std::vector<std::vector<std::string>>(4, {"graph data", "neural networks"}));
  int asked = 0;
  auto c = BuildCorpus(ds, nullptr, *FindProfile("kplab"), 2, AlwaysAnswer(PhraseIds::kPerRange, &asked));
  ASSERT_TRUE(c.ok());
  ASSERT_EQ(c->phrase_ids, PhraseIds::kPerRange);
  // The lexicon: its strings read back, but look-ups (which could not see the later ranges') throw.
  EXPECT_FALSE(c->lex.indexed());
  EXPECT_THROW(c->lex.Find("graph"), std::logic_error);
  EXPECT_THROW(c->lex.Intern("graph"), std::logic_error);
  EXPECT_THROW(c->lex.InternStable("graph"), std::logic_error);
  // The embedding plan and homogeneity.
  PlanRequest plan;
  plan.forms[0] = true;
  EXPECT_THROW((void)PlanEmbeddings(*c, plan), std::logic_error);
  EXPECT_THROW((void)homog::GoldSets(*c, true), std::logic_error);
  std::vector<std::size_t> docs = {0, 1};
  EXPECT_THROW((void)homog::CountSystem(*c, docs, 5), std::logic_error);
  EXPECT_THROW((void)homog::MineGoldPairs(*c, homog::GoldPairOptions{}), std::logic_error);
  // The same documents with corpus-wide ids: answered.
  auto merged = BuildCorpus(ds, nullptr, *FindProfile("kplab"), 2);
  ASSERT_TRUE(merged.ok());
  EXPECT_TRUE(merged->lex.Find("graph").has_value());
  EXPECT_NO_THROW((void)homog::GoldSets(*merged, true));
}

TEST(PhraseIds, LexiconAppendUnindexedShiftsIdsAndRefusesLookUps) {
  Lexicon a, b;
  EXPECT_EQ(a.Intern("graph"), 0u);
  EXPECT_EQ(a.Intern("data"), 1u);
  EXPECT_EQ(b.Intern("data"), 0u);
  const std::string long_string(70000, 'x');  // its length is kept before its bytes
  EXPECT_EQ(b.Intern(long_string), 1u);
  EXPECT_TRUE(a.indexed());
  EXPECT_EQ(a.AppendUnindexed(std::move(b)), 2u);
  ASSERT_EQ(a.size(), 4u);
  EXPECT_EQ(a.Str(0), "graph");
  EXPECT_EQ(a.Str(1), "data");
  EXPECT_EQ(a.Str(2), "data");  // two ids, one string
  EXPECT_EQ(a.Str(3), long_string);
  EXPECT_FALSE(a.indexed());
  EXPECT_THROW(a.Find("graph"), std::logic_error);
  EXPECT_THROW(a.Intern("new"), std::logic_error);
  EXPECT_THROW(a.InternStable("data"), std::logic_error);
  // Its index is dropped (nothing may look a string up): a prefetch hint still reads a table, and a
  // third lexicon appended after the second continues the ids with every string readable.
  a.Prefetch("graph", Lexicon::Hash("graph"));
  Lexicon c;
  EXPECT_EQ(c.Intern("graph"), 0u);
  EXPECT_EQ(a.AppendUnindexed(std::move(c)), 4u);
  ASSERT_EQ(a.size(), 5u);
  EXPECT_EQ(a.Str(0), "graph");
  EXPECT_EQ(a.Str(3), long_string);
  EXPECT_EQ(a.Str(4), "graph");
  EXPECT_THROW(a.Find("data"), std::logic_error);
}

// A lexicon given another's index (a thread's next range, design note 71) interns from id 0 into the
// other's tables at their size, finding none of its strings; the other keeps its strings readable and
// refuses look-ups. Into a lexicon that holds a string, refused.
TEST(PhraseIds, LexiconTakeIndexStartsEmptyAndLeavesTheStringsUnindexed) {
  Lexicon a;
  for (int i = 0; i < 5000; ++i) a.Intern("word" + std::to_string(i) + (i % 2 ? " key" : ""));
  Lexicon b;
  b.TakeIndex(a);
  EXPECT_TRUE(b.indexed());
  EXPECT_EQ(b.size(), 0u);
  EXPECT_FALSE(b.Find("word1 key").has_value());
  EXPECT_FALSE(b.Find("word2").has_value());
  EXPECT_EQ(b.Intern("word2"), 0u);
  EXPECT_EQ(b.Intern("graph key"), 1u);
  EXPECT_EQ(b.Intern("word2"), 0u);
  EXPECT_EQ(b.Find("graph key"), std::optional<TokenId>(1));
  EXPECT_FALSE(a.indexed());
  ASSERT_EQ(a.size(), 5000u);
  EXPECT_EQ(a.Str(1), "word1 key");
  EXPECT_EQ(a.Str(4999), "word4999 key");
  EXPECT_THROW(a.Find("word2"), std::logic_error);
  EXPECT_THROW(a.Intern("new"), std::logic_error);
  Lexicon c;
  EXPECT_THROW(b.TakeIndex(c), std::logic_error);  // b holds strings
  EXPECT_TRUE(c.indexed());
  EXPECT_EQ(c.Intern("x"), 0u);
}

}  // namespace
}  // namespace kplab
