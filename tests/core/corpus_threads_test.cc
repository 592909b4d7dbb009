// BuildCorpus on several threads: each builds a range of documents with its own lexicon and memos and
// the ranges are merged. The promise (corpus.h): the corpus is the same for every thread count, ids
// included. Checked field by field against one thread on the real data of ../shared/data, under every
// profile that builds differently, and by hand on small corpora where the ids are known.
#include <gtest/gtest.h>

#include <cctype>
#include <chrono>
#include <filesystem>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "../../core/src/eval/on_threads.h"
#include "corpus_inputs.h"
#include "kplab/corpus.h"
#include "kplab/io.h"

namespace kplab {
namespace {

const std::string kShared = std::string(KPLAB_SHARED_DATA) + "/";

std::vector<TokenId> IdVector(std::span<const TokenId> ids) { return {ids.begin(), ids.end()}; }

// Positions of view entries in the document's own keyphrase list (views hold addresses).
std::vector<std::ptrdiff_t> Positions(KeyphraseList view, std::span<const Keyphrase> kps) {
  std::vector<std::ptrdiff_t> out;
  for (const Keyphrase* k : view) out.push_back(k - kps.data());
  return out;
}

void ExpectSameKeyphrases(std::span<const Keyphrase> a, std::span<const Keyphrase> b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (std::size_t j = 0; j < a.size(); ++j) {
    EXPECT_EQ(a[j].phrase->id, b[j].phrase->id) << what << " " << j;
    EXPECT_EQ(a[j].key(), b[j].key()) << what << " " << j;
    EXPECT_EQ(IdVector(a[j].alt_keys()), IdVector(b[j].alt_keys())) << what << " " << j;
    EXPECT_EQ(a[j].present(), b[j].present()) << what << " " << j;
    EXPECT_EQ(a[j].after_peos(), b[j].after_peos()) << what << " " << j;
    EXPECT_EQ(a[j].score(), b[j].score()) << what << " " << j;
    EXPECT_EQ(a[j].probs() == nullptr, b[j].probs() == nullptr) << what << " " << j;
  }
}

// Every string, phrase and document field of two corpora, ids compared as numbers.
void ExpectSameCorpus(const Corpus& a, const Corpus& b) {
  ASSERT_EQ(a.lex.size(), b.lex.size());
  for (TokenId id = 0; id < a.lex.size(); ++id) ASSERT_EQ(a.lex.Str(id), b.lex.Str(id)) << "string " << id;
  ASSERT_EQ(a.phrases.size(), b.phrases.size());
  for (std::size_t i = 0; i < a.phrases.size(); ++i) {
    const Phrase& p = a.phrases[i];
    const Phrase& q = b.phrases[i];
    ASSERT_EQ(p.id, i);
    ASSERT_EQ(q.id, i);
    EXPECT_EQ(p.surface(), q.surface()) << "phrase " << i;
    EXPECT_EQ(IdVector(p.tokens()), IdVector(q.tokens())) << "phrase " << i;
    EXPECT_EQ(IdVector(p.stems()), IdVector(q.stems())) << "phrase " << i;
    EXPECT_EQ(p.key, q.key) << "phrase " << i;
    EXPECT_EQ(a.DedupKey(p), b.DedupKey(q)) << "phrase " << i;
    EXPECT_EQ(p.blank(), q.blank()) << "phrase " << i;
  }
  ASSERT_EQ(a.docs.size(), b.docs.size());
  for (std::size_t i = 0; i < a.docs.size(); ++i) {
    const Document& d = a.docs[i];
    const Document& e = b.docs[i];
    const std::string what = "doc " + std::to_string(i);
    EXPECT_EQ(d.id, e.id) << what;
    EXPECT_EQ(d.has_text, e.has_text) << what;
    EXPECT_EQ(IdVector(d.src_tokens()), IdVector(e.src_tokens())) << what;
    EXPECT_EQ(IdVector(d.src_stems()), IdVector(e.src_stems())) << what;
    EXPECT_EQ(IdVector(d.section_starts()), IdVector(e.section_starts())) << what;
    EXPECT_EQ(d.title_end(), e.title_end()) << what;
    EXPECT_EQ(d.body_start(), e.body_start()) << what;
    EXPECT_EQ(d.n_pred_pieces, e.n_pred_pieces) << what;
    EXPECT_EQ(d.one2set, e.one2set) << what;
    ExpectSameKeyphrases(d.refs, e.refs, what + " refs");
    ExpectSameKeyphrases(d.preds, e.preds, what + " preds");
    ExpectSameKeyphrases(d.refs_before_dedup(), e.refs_before_dedup(), what + " refs_before_dedup");
    for (int v = 0; v < 3; ++v) {
      EXPECT_EQ(Positions(d.pred_view(v), d.preds), Positions(e.pred_view(v), e.preds)) << what << " pred_view " << v;
      EXPECT_EQ(Positions(d.ref_view(v), d.refs), Positions(e.ref_view(v), e.refs)) << what << " ref_view " << v;
    }
    EXPECT_EQ(Positions(d.pred_view_dups(), d.preds), Positions(e.pred_view_dups(), e.preds)) << what;
    // Keyphrases point at the corpus's own phrases, by id.
    for (const Keyphrase& k : e.refs) EXPECT_EQ(k.phrase, &b.phrases[k.phrase->id]) << what;
    for (const Keyphrase& k : e.preds) EXPECT_EQ(k.phrase, &b.phrases[k.phrase->id]) << what;
    for (const Keyphrase& k : e.refs_before_dedup()) EXPECT_EQ(k.phrase, &b.phrases[k.phrase->id]) << what;
  }
}

struct RealCase {
  std::string dataset, predictions, profile;
};

TEST(CorpusThreads, RealDataSameForEveryThreadCount) {
  if (!std::filesystem::exists(kShared + "kpg_testsets_meng2017/kp20k")) GTEST_SKIP() << "no ../shared/data";
  const std::string meng = kShared + "kpg_testsets_meng2017/";
  const std::string preds = kShared + "predictions/catSeqTG-2RF1/";
  const std::vector<RealCase> cases = {
      // Keyphrase-only KP20k, the large case.
      {meng + "kp20k", preds + "kp20k/seed1234.txt", "kplab"},
      // Source text under each profile's source split; ExHiRD's re-cut pieces; KPEval's cleanup.
      {meng + "inspec", preds + "inspec/seed1234.txt", "kplab"},
      {meng + "inspec", preds + "inspec/seed1234.txt", "exhird"},
      {meng + "inspec", preds + "inspec/seed1234.txt", "kpeval"},
      {meng + "semeval", preds + "semeval/seed1234.txt", "kenchan"},
      // Raw text (the word tokenizer) and alternative forms of a reference (alt_keys).
      {kShared + "inspec_hulth2003/Test", "", "kplab"},
      {kShared + "kptimes_sample", "", "kplab"},
  };
  for (const RealCase& c : cases) {
    SCOPED_TRACE(c.dataset + " " + c.profile);
    auto ds = ImportDataset(c.dataset);
    ASSERT_TRUE(ds.ok()) << ds.error().message;
    std::optional<RawPredictions> aligned;
    ASSERT_NO_FATAL_FAILURE(test::AlignIfAny(c.predictions, *ds, aligned));
    const Profile profile = *FindProfile(c.profile);
    auto one = BuildCorpus(*ds, aligned ? &*aligned : nullptr, profile, 1);
    ASSERT_TRUE(one.ok()) << one.error().message;
    ASSERT_GT(one->phrases.size(), 20u);
    for (int threads : {2, 3, 8}) {
      SCOPED_TRACE("threads " + std::to_string(threads));
      auto many = BuildCorpus(*ds, aligned ? &*aligned : nullptr, profile, threads);
      ASSERT_TRUE(many.ok()) << many.error().message;
      ExpectSameCorpus(*one, *many);
    }
    // Read a line at a time by the building threads (LineDocuments: Meng-2017 lines with prediction
    // lines), the lines' whole 2 MiB extents given back every 4096 documents: the same corpus, the same
    // identity.
    if (LineDocuments::Handles(c.dataset, {}, c.predictions, "")) {
      for (int threads : {1, 2, 3}) {
        SCOPED_TRACE("line documents, threads " + std::to_string(threads));
        auto docs = LineDocuments::Open(c.dataset, {}, c.predictions, threads);
        ASSERT_TRUE(docs.ok()) << docs.error().message;
        EXPECT_EQ(docs->size(), ds->docs.size());
        auto lines = BuildCorpus(std::move(*docs), profile, threads);
        ASSERT_TRUE(lines.ok()) << lines.error().message;
        ExpectSameCorpus(*one, *lines);
        EXPECT_EQ(lines->dataset_name, one->dataset_name);
        EXPECT_EQ(lines->dataset_path, one->dataset_path);
        EXPECT_EQ(lines->dataset_format, one->dataset_format);
        EXPECT_EQ(lines->dataset_hash, one->dataset_hash);
        EXPECT_EQ(lines->predictions_path, one->predictions_path);
        EXPECT_EQ(lines->predictions_hash, one->predictions_hash);
        EXPECT_EQ(lines->has_predictions, one->has_predictions);
        EXPECT_EQ(lines->refs_stemmed, one->refs_stemmed);
        EXPECT_EQ(lines->warnings, one->warnings);
      }
    } else {
      EXPECT_TRUE(c.predictions.empty() || c.dataset.find("meng2017") == std::string::npos) << "not read as lines";
    }
    // An import given up to the build (freed document by document as it is built) gives the same
    // corpus, and is left without documents but with its identity.
    for (int threads : {1, 2, 3}) {
      SCOPED_TRACE("released import, threads " + std::to_string(threads));
      RawDataset ds_copy = *ds;
      std::optional<RawPredictions> preds_copy = aligned;
      auto released = BuildCorpus(std::move(ds_copy), std::move(preds_copy), profile, threads);
      ASSERT_TRUE(released.ok()) << released.error().message;
      ExpectSameCorpus(*one, *released);
      EXPECT_TRUE(ds_copy.docs.empty());
      EXPECT_EQ(ds_copy.content_hash, ds->content_hash);
      if (preds_copy) {
        EXPECT_TRUE(preds_copy->docs.empty());
      }
    }
  }
}

// --refs-stemmed reaches every document read as lines (SemEval's stemmed gold matched as given).
TEST(CorpusThreads, LineDocumentsKeepRefsStemmed) {
  const std::string semeval = kShared + "kpg_testsets_meng2017/semeval";
  const std::string preds = kShared + "predictions/catSeqTG-2RF1/semeval/seed1234.txt";
  if (!std::filesystem::exists(semeval)) GTEST_SKIP() << "no ../shared/data";
  DatasetOptions opt;
  opt.refs_stemmed = true;
  auto ds = ImportDataset(semeval, opt);
  auto p = ImportPredictions(preds);
  ASSERT_TRUE(ds.ok() && p.ok());
  auto a = AlignPredictions(*ds, std::move(*p));
  ASSERT_TRUE(a.ok());
  const Profile profile = *FindProfile("kenchan");
  auto one = BuildCorpus(*ds, &*a, profile, 1);
  ASSERT_TRUE(one.ok());
  ASSERT_TRUE(LineDocuments::Handles(semeval, opt, preds, "lines"));
  auto docs = LineDocuments::Open(semeval, opt, preds);
  ASSERT_TRUE(docs.ok()) << docs.error().message;
  auto lines = BuildCorpus(std::move(*docs), profile, 2);
  ASSERT_TRUE(lines.ok());
  EXPECT_TRUE(lines->refs_stemmed);
  ExpectSameCorpus(*one, *lines);
}

// Three documents on three threads, one each: phrases and strings get their ids in document order
// (first occurrence), and a phrase met in two ranges is one phrase.
TEST(CorpusThreads, IdsByFirstOccurrenceAcrossRanges) {
  const RawDataset ds = test::RefsOnlyDataset({{"Beta", "alpha"}, {"gamma rays", "alpha"}, {"alpha", "delta"}});
  for (int threads : {1, 3}) {
    SCOPED_TRACE(threads);
    auto c = BuildCorpus(ds, nullptr, *FindProfile("kplab"), threads);
    ASSERT_TRUE(c.ok());
    std::vector<std::string> surfaces;
    for (const Phrase& p : c->phrases) surfaces.emplace_back(p.surface());
    EXPECT_EQ(surfaces, (std::vector<std::string>{"beta", "alpha", "gamma rays", "delta"}));
    // Strings in order of first use: token, its stem, then the key (nltk: rays -> ray).
    std::vector<std::string> strings;
    for (TokenId id = 0; id < c->lex.size(); ++id) strings.emplace_back(c->lex.Str(id));
    EXPECT_EQ(strings, (std::vector<std::string>{"beta", "alpha", "gamma", "rays", "ray", "gamma ray", "delta"}));
    EXPECT_EQ(c->docs[0].refs[1].phrase, c->docs[1].refs[1].phrase);
    EXPECT_EQ(c->docs[1].refs[1].phrase, c->docs[2].refs[0].phrase);
    EXPECT_EQ(c->docs[2].refs[1].phrase->id, 3u);
  }
}

// Pieces around the length the builder's piece records hold inline (PieceStore::kInline, 48 bytes:
// longer ones are kept by address), each met again in a later document, in another range, written
// with other case (another piece, the same phrase) and as a prefix of a longer one: the same corpus on
// one thread and on three, from the import kept and from the import released as it is built (whose
// long pieces the builder must copy), and a piece met again is its first meeting's phrase.
TEST(CorpusThreads, PiecesAroundTheInlineLength) {
  std::vector<std::string> pieces;
  for (std::size_t n : {1, 7, 8, 9, 15, 16, 17, 40, 47, 48, 49, 50, 64, 200, 5000}) {
    std::string p;
    for (std::size_t k = 0; p.size() < n; ++k)
      p += (k % 7 == 6 && p.size() + 1 < n) ? ' ' : static_cast<char>('a' + k % 26);
    pieces.push_back(p);
  }
  std::vector<std::vector<std::string>> docs;
  for (int round = 0; round < 3; ++round) {
    for (std::size_t i = 0; i < pieces.size(); ++i) {
      std::string upper = pieces[i];
      for (char& ch : upper) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
      const std::string& other = pieces[(i + 1) % pieces.size()];
      docs.push_back({pieces[i], round == 1 ? upper : other, pieces[i] + "x"});
    }
  }
  const RawDataset ds = test::RefsOnlyDataset(docs);
  const Profile profile = *FindProfile("kplab");
  auto one = BuildCorpus(ds, nullptr, profile, 1);
  ASSERT_TRUE(one.ok());
  for (int threads : {1, 3}) {
    SCOPED_TRACE(threads);
    auto kept = BuildCorpus(ds, nullptr, profile, threads);
    RawDataset copy = ds;
    auto released = BuildCorpus(std::move(copy), std::nullopt, profile, threads);
    ASSERT_TRUE(kept.ok() && released.ok());
    ExpectSameCorpus(*one, *kept);
    ExpectSameCorpus(*one, *released);
  }
  const std::size_t n = pieces.size();
  for (std::size_t i = 0; i < n; ++i) {
    SCOPED_TRACE(pieces[i].size());
    const Phrase* first = one->docs[i].refs[0].phrase;
    EXPECT_EQ(first->surface(), pieces[i]);
    EXPECT_EQ(one->docs[n + i].refs[0].phrase, first);  // met again
    // The upper-case piece is a piece of its own, lower-cased to the same key: the dedup drops it.
    ASSERT_EQ(one->docs[n + i].refs_before_dedup().size(), 3u);
    EXPECT_NE(one->docs[n + i].refs_before_dedup()[1].phrase, first);
    EXPECT_EQ(one->docs[n + i].refs_before_dedup()[1].phrase->surface(), pieces[i]);
    EXPECT_EQ(one->docs[n + i].refs_before_dedup()[1].key(), first->key);
    EXPECT_EQ(one->docs[n + i].refs.size(), 2u);
    EXPECT_EQ(one->docs[2 * n + i].refs[0].phrase, first);
    EXPECT_NE(one->docs[i].refs[2].phrase, first);  // the piece and one more byte
  }
}

// A document built twice in a row: the second time every piece is met again, so its phrase, dedup key
// and filter flags come from the piece memo's records, not from normalizing it. Under the profiles whose
// filters differ (kplab; kenchan: <peos> as a first token, "," invalid, dedup keys joined by "_";
// kpeval: <peos> dropped in lines; ExHiRD: re-cut pieces, <unk> as a substring,
// case kept, pieces longer than the records' inline bytes), the copy is the original, and on one
// thread and three. The kplab and kenchan originals are worked out by hand.
TEST(CorpusThreads, PiecesMetAgainAreThePiecesMetFirst) {
  const std::string long_piece = "a keyphrase long enough to be kept by address, not inline";
  const std::vector<std::string> pieces = {"<peos>",   "a <unk>", "x , y", "x y", "X Y",      "x_y",
                                           "<peos> z", "one",     "two",   "x y", long_piece, long_piece + " <unk>",
                                           "One"};
  RawDataset ds;
  ds.path = ds.name = "mem";
  RawPredictions preds;
  preds.path = "preds";
  for (int copy = 0; copy < 4; ++copy) {
    RawDoc d;
    d.id = std::to_string(copy + 1);
    d.title = "x y and one";
    d.body = "two x , y " + long_piece;
    d.separator = "<eos>";
    d.pretokenized = true;
    d.has_text = true;
    d.refs = {{"x y"}, {"X Y"}, {"one"}, {long_piece}, {"x_y"}};
    ds.docs.push_back(std::move(d));
    RawPrediction rp;
    rp.phrases.assign(pieces.begin(), pieces.end());
    rp.from_line = true;
    preds.docs.push_back(std::move(rp));
  }
  for (const char* name : {"kplab", "kenchan", "kpeval", "exhird"}) {
    SCOPED_TRACE(name);
    const Profile profile = *FindProfile(name);
    auto c = BuildCorpus(ds, &preds, profile, 1);
    ASSERT_TRUE(c.ok()) << c.error().message;
    const Document& first = c->docs[0];
    for (std::size_t i = 1; i < c->docs.size(); ++i) {
      const Document& again = c->docs[i];
      ExpectSameKeyphrases(first.preds, again.preds, "preds");
      ExpectSameKeyphrases(first.refs, again.refs, "refs");
      ExpectSameKeyphrases(first.refs_before_dedup(), again.refs_before_dedup(), "refs_before_dedup");
      EXPECT_EQ(Positions(first.pred_view_dups(), first.preds), Positions(again.pred_view_dups(), again.preds));
      EXPECT_EQ(first.n_pred_invalid, again.n_pred_invalid);
      EXPECT_EQ(first.n_pred_pieces, again.n_pred_pieces);
      for (std::size_t j = 0; j < first.preds.size(); ++j) EXPECT_EQ(first.preds[j].phrase, again.preds[j].phrase);
    }
    auto many = BuildCorpus(ds, &preds, profile, 3);
    ASSERT_TRUE(many.ok());
    ExpectSameCorpus(*c, *many);
    std::vector<std::string> kept;
    for (const Keyphrase& k : first.preds) kept.emplace_back(k.surface());
    if (std::string(name) == "kplab") {
      // <peos> dropped (after_peos from then on); "a <unk>" invalid; "X Y" and the second "x y" repeat
      // "x y"; "<peos> z" kept (only a piece equal to the marker is dropped); "One" repeats "one".
      EXPECT_EQ(kept, (std::vector<std::string>{"x , y", "x y", "x_y", "<peos> z", "one", "two", long_piece}));
      EXPECT_EQ(first.n_pred_invalid, 2);  // "a <unk>" and the long piece with <unk>
      EXPECT_EQ(first.n_pred_dups(), 3);
      for (const Keyphrase& k : first.preds) EXPECT_TRUE(k.after_peos());
    }
    if (std::string(name) == "kenchan") {
      // "<peos>" and "<peos> z" dropped (a first token); "a <unk>", "x , y" and the long piece with
      // <unk> invalid; "X Y", the second "x y" and "One" repeat. "x_y" is kept: "x y"'s dedup key is
      // x_y, but nltk 3.8 stems the token "x_y" to "x_i" (a y after a consonant that is not the first
      // letter), so its key is x_i.
      EXPECT_EQ(kept, (std::vector<std::string>{"x y", "x_y", "one", "two", long_piece}));
      EXPECT_EQ(first.n_pred_invalid, 3);
      EXPECT_EQ(first.n_pred_dups(), 3);
    }
  }
}

// The stemmed-gold warning is the one-thread warning on every thread count (ranges built apart and
// merged), its example the corpus's first changed token although a later range has others. 60 documents, each one
// reference of two words: "graph models" in documents 30-32 ("models" -> "model", nltk 3.8), "graph networks" in 50-59
// ("networks" -> "network"), "graph data" elsewhere (neither changes): 13 of 120 word tokens change,
// 10.8%, under the 15% that looks stemmed.
TEST(CorpusThreads, StemmedGoldWarningIsTheSameOnEveryThreadCount) {
  std::vector<std::vector<std::string>> refs;
  for (int i = 0; i < 60; ++i) {
    refs.push_back({(i >= 30 && i < 33) ? "graph models" : i >= 50 ? "graph networks" : "graph data"});
  }
  const RawDataset ds = test::RefsOnlyDataset(refs);
  const std::string expected =
      "warning: the references look Porter-stemmed already: 10.8% of their 120 word tokens change when stemmed "
      "(e.g. 'models' -> 'model')";
  for (int threads : {1, 2, 3, 8}) {
    SCOPED_TRACE(threads);
    auto c = BuildCorpus(ds, nullptr, *FindProfile("kplab"), threads);
    ASSERT_TRUE(c.ok());
    ASSERT_EQ(c->warnings.size(), 1u);
    EXPECT_EQ(c->warnings[0].substr(0, expected.size()), expected);
  }
}

// The counts behind the warning, by hand, where the builder's shortcuts end: references matched as
// given (no stem asked while building: each word is stemmed for the count alone), written in capitals
// (lower-cased for the count), and one reference of 300 words (more than a piece record's counts hold:
// counted from its tokens). Document 1's reference "Graph Networks" x 150: 300 words, the 150
// "networks" change (-> "network"), "graph" does not. Documents 2-60: "data h2o ab", one word ("data",
// unchanged; "h2o" has a digit, "ab" is under 3 letters), and document 2 repeats it (dropped by the
// dedup, not counted): 300 + 59 = 359 words, 150 changed, 41.8%, over the 35% that does not look stemmed.
TEST(CorpusThreads, StemmedGoldCountsLongCapitalisedReferencesMatchedAsGiven) {
  std::string long_ref;
  for (int k = 0; k < 150; ++k) long_ref += k ? " Graph Networks" : "Graph Networks";
  std::vector<std::vector<std::string>> refs{{long_ref}};
  for (int i = 1; i < 60; ++i)
    refs.push_back(i == 1 ? std::vector<std::string>{"data h2o ab", "data h2o ab"}
                          : std::vector<std::string>{"data h2o ab"});
  RawDataset ds = test::RefsOnlyDataset(refs);
  for (RawDoc& d : ds.docs) d.refs_stemmed = true;
  const std::string expected =
      "warning: the references are matched as given (--refs-stemmed, refs_stemmed, or a *.stem.* answer file) but "
      "do not look Porter-stemmed: 41.8% of their 359 word tokens change when stemmed (e.g. 'networks' -> 'network')";
  for (const char* profile : {"kplab", "kenchan"}) {
    for (int threads : {1, 2, 3}) {
      SCOPED_TRACE(std::string(profile) + " " + std::to_string(threads));
      auto c = BuildCorpus(ds, nullptr, *FindProfile(profile), threads);
      ASSERT_TRUE(c.ok());
      ASSERT_EQ(c->warnings.size(), 1u);
      EXPECT_EQ(c->warnings[0].substr(0, expected.size()), expected);
    }
  }
}

// The edge of a piece record's counts (254 words fit, 255 are counted from the tokens), on both paths.
// Matched as given: "networks" x 254 and x 255 (every word changes), then 58 documents of "data"
// (unchanged): 567 words, 509 changed, 89.8%. Stemmed while building: "graph" x 254 and x 255
// (unchanged), then 58 documents of "graph networks": 625 words, 58 changed, 9.3%, under 15%.
TEST(CorpusThreads, StemmedGoldCountsAtTheEdgeOfAPieceRecord) {
  auto repeated = [](const char* word, int n) {
    std::string s = word;
    for (int k = 1; k < n; ++k) s += std::string(" ") + word;
    return s;
  };
  struct Case {
    const char* word;
    const char* rest;
    bool as_given;
    std::string expected;
  };
  const Case cases[] = {
      {"networks", "data", true,
       "warning: the references are matched as given (--refs-stemmed, refs_stemmed, or a *.stem.* answer file) but "
       "do not look Porter-stemmed: 89.8% of their 567 word tokens change when stemmed (e.g. 'networks' -> "
       "'network')"},
      {"graph", "graph networks", false,
       "warning: the references look Porter-stemmed already: 9.3% of their 625 word tokens change when stemmed "
       "(e.g. 'networks' -> 'network')"},
  };
  for (const Case& c : cases) {
    std::vector<std::vector<std::string>> refs{{repeated(c.word, 254)}, {repeated(c.word, 255)}};
    for (int i = 0; i < 58; ++i) refs.push_back({c.rest});
    RawDataset ds = test::RefsOnlyDataset(refs);
    for (RawDoc& d : ds.docs) d.refs_stemmed = c.as_given;
    for (int threads : {1, 2}) {
      SCOPED_TRACE(std::string(c.word) + " " + std::to_string(threads));
      auto corpus = BuildCorpus(ds, nullptr, *FindProfile("kplab"), threads);
      ASSERT_TRUE(corpus.ok());
      ASSERT_EQ(corpus->warnings.size(), 1u);
      EXPECT_EQ(corpus->warnings[0].substr(0, c.expected.size()), c.expected);
    }
  }
}

// The builder's threads (core/src/eval/on_threads.h): every index runs once; the calling thread takes
// the first, or with caller_last the last (BuildRanges: the last range, whose memory the merge frees);
// when two indices throw, the lower one's exception comes out, whichever thread ran it and whichever
// finished first (the later index throws at once, the earlier one after a wait); no index, no call.
TEST(CorpusThreads, OnThreadsRunsEachIndexOnceAndRethrowsTheLowestError) {
  using eval_internal::OnThreads;
  const std::thread::id caller = std::this_thread::get_id();
  for (bool caller_last : {false, true}) {
    SCOPED_TRACE(caller_last);
    for (std::size_t n : {1, 2, 3, 8}) {
      std::mutex m;
      std::vector<int> runs(n, 0);
      std::vector<std::size_t> on_caller;
      OnThreads(
          n,
          [&](std::size_t t) {
            std::lock_guard<std::mutex> lock(m);
            ++runs[t];
            if (std::this_thread::get_id() == caller) on_caller.push_back(t);
          },
          caller_last);
      EXPECT_EQ(runs, std::vector<int>(n, 1)) << n;
      EXPECT_EQ(on_caller, std::vector<std::size_t>{caller_last ? n - 1 : 0}) << n;
    }
    try {
      OnThreads(
          3,
          [](std::size_t t) {
            if (t == 1) {
              std::this_thread::sleep_for(std::chrono::milliseconds(50));
              throw std::runtime_error("range 1");
            }
            if (t == 2) throw std::runtime_error("range 2");
          },
          caller_last);
      ADD_FAILURE() << "no exception";
    } catch (const std::runtime_error& e) {
      EXPECT_STREQ(e.what(), "range 1");
    }
  }
  int calls = 0;
  OnThreads(
      0, [&](std::size_t) { ++calls; }, true);
  OnThreads(0, [&](std::size_t) { ++calls; });
  EXPECT_EQ(calls, 0);
}

// More threads than documents, and no documents at all: every document is built once.
TEST(CorpusThreads, MoreThreadsThanDocuments) {
  const RawDataset ds = test::RefsOnlyDataset({{"a b", "c"}, {"c", "a b"}});
  auto one = BuildCorpus(ds, nullptr, *FindProfile("kplab"), 1);
  auto many = BuildCorpus(ds, nullptr, *FindProfile("kplab"), 64);
  ASSERT_TRUE(one.ok() && many.ok());
  ExpectSameCorpus(*one, *many);
  EXPECT_EQ(many->phrases.size(), 2u);
  auto empty = BuildCorpus(test::RefsOnlyDataset({}), nullptr, *FindProfile("kplab"), 8);
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->docs.empty());
  EXPECT_TRUE(empty->phrases.empty());
}

}  // namespace
}  // namespace kplab
