// Corpus building under profiles: tokenizing, present/absent, dedup, filters, PRMU. Expected values
// are worked out by hand (stems from nltk 3.8's PorterStemmer, noted where they matter).
#include "kplab/corpus.h"

#include <gtest/gtest.h>

namespace kplab {
namespace {

RawDataset OneDoc(std::string title, std::string body, std::vector<std::string> refs) {
  RawDataset ds;
  ds.path = "mem";
  ds.name = "mem";
  RawDoc d;
  d.id = "d1";
  d.title = std::move(title);
  d.body = std::move(body);
  d.separator = "<eos>";
  d.pretokenized = true;
  d.has_text = true;
  for (auto& r : refs) d.refs.push_back({r});
  ds.docs.push_back(std::move(d));
  return ds;
}

RawPredictions Preds(std::vector<std::string> pieces) {
  RawPredictions p;
  p.path = "preds";
  RawPrediction rp;
  rp.phrases.assign(pieces.begin(), pieces.end());
  p.docs.push_back(std::move(rp));
  return p;
}

std::vector<std::string> SurfaceTexts(std::span<const Keyphrase> kps) {
  std::vector<std::string> out;
  for (const auto& k : kps) out.emplace_back(k.surface());
  return out;
}

TEST(Corpus, KplabProfileNormalizesAndDedups) {
  // "Neural Networks" and "neural network" share the stem key "neural network" (nltk: networks ->
  // network); the second is a duplicate. "<peos>" is a marker; "<unk> model" is dropped; empty pieces
  // and the trailing ';' give nothing.
  const auto ds = OneDoc("training neural networks .", "we train deep models .",
                         {"Neural Networks", "neural network", "deep models", " "});
  const auto preds = Preds({"neural networks", "<peos>", "<unk> model", "neural network", "", "deep learning", ""});
  auto c = BuildCorpus(ds, &preds, *FindProfile("kplab"));
  ASSERT_TRUE(c.ok()) << c.error().message;
  const Document& d = c->docs[0];
  EXPECT_EQ(SurfaceTexts(d.refs), (std::vector<std::string>{"neural networks", "deep models"}));
  EXPECT_EQ(SurfaceTexts(d.preds), (std::vector<std::string>{"neural networks", "deep learning"}));
  EXPECT_TRUE(d.preds[0].present());
  EXPECT_FALSE(d.preds[0].after_peos());
  EXPECT_FALSE(d.preds[1].present());
  EXPECT_TRUE(d.preds[1].after_peos());
  EXPECT_EQ(c->Str(d.refs[0].key()), "neural network");
  EXPECT_EQ(d.n_pred_pieces, 7);
}

std::vector<std::string> SurfaceTexts(const KeyphraseList& kps) {
  std::vector<std::string> out;
  for (const Keyphrase* k : kps) out.emplace_back(k->surface());
  return out;
}

TEST(Corpus, ReferencesBeforeDedupKeepEachRepeatsOwnSurfaceAndPresence) {
  // "Neural Networks" and "neural network" share a stem key: dedup keeps the first, the list before
  // dedup keeps both with their own surfaces; "graphs" (absent) repeats the present "graph" by key.
  const auto ds = OneDoc("training neural networks on a graph .", "we train deep models .",
                         {"Neural Networks", "deep models", "neural network", "graph", "graphs", "trees"});
  auto c = BuildCorpus(ds, nullptr, *FindProfile("kplab"));
  ASSERT_TRUE(c.ok()) << c.error().message;
  const Document& d = c->docs[0];
  EXPECT_EQ(SurfaceTexts(d.refs), (std::vector<std::string>{"neural networks", "deep models", "graph", "trees"}));
  EXPECT_EQ(SurfaceTexts(d.ref_view_dups()),
            (std::vector<std::string>{"neural networks", "deep models", "neural network", "graph", "graphs", "trees"}));
  ASSERT_EQ(d.refs_before_dedup().size(), 6u);
  EXPECT_TRUE(d.refs_before_dedup()[2].present());   // "neural network" occurs (stems "neural network")
  EXPECT_TRUE(d.refs_before_dedup()[4].present());   // "graphs" -> "graph", in the title
  EXPECT_FALSE(d.refs_before_dedup()[5].present());  // "trees"
  // A line without a repeat keeps no second list: the view is the references themselves.
  const auto plain = OneDoc("a b", "c", {"a", "b"});
  auto p = BuildCorpus(plain, nullptr, *FindProfile("kplab"));
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(p->docs[0].refs_before_dedup().empty());
  EXPECT_TRUE(p->docs[0].ref_view_dups().SameAs(KeyphraseList(p->docs[0].refs)));
  // A profile that keeps repeats (semrp-standalone) has them in refs already.
  auto s = BuildCorpus(ds, nullptr, *FindProfile("semrp-standalone"));
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->docs[0].refs.size(), 6u);
  EXPECT_TRUE(s->docs[0].refs_before_dedup().empty());
}

// KPEval's reference lists (rouge_metric.py: zip(references, the deduplicated references' presence
// flags)), by hand for the line above. The unique references and their flags: neural networks P (title),
// deep models P (body), graph P (title), trees A. Zipped with the line's six references, the first four
// take those flags: neural networks P, deep models P, neural network P, graph A; "graphs" and "trees" are
// dropped (two repeats, two references lost), and the present "graph" is counted absent.
TEST(Corpus, KpevalReferenceListsZipTheLineWithTheUniqueFlags) {
  auto ds = OneDoc("training neural networks on a graph .", "we train deep models .",
                   {"Neural Networks", "deep models", "neural network", "graph", "graphs", "trees"});
  auto c = BuildCorpus(ds, nullptr, *FindProfile("kpeval"));
  ASSERT_TRUE(c.ok()) << c.error().message;
  KpevalReferences r = KpevalReferenceLists(c->docs[0]);
  EXPECT_EQ(SurfaceTexts(r.present), (std::vector<std::string>{"neural networks", "deep models", "neural network"}));
  EXPECT_EQ(SurfaceTexts(r.absent), (std::vector<std::string>{"graph"}));
  // Without a repeat: each reference with its own flag.
  auto plain =
      BuildCorpus(OneDoc("a graph", "of trees", {"graph", "forest", "trees"}), nullptr, *FindProfile("kpeval"));
  ASSERT_TRUE(plain.ok());
  r = KpevalReferenceLists(plain->docs[0]);
  EXPECT_EQ(SurfaceTexts(r.present), (std::vector<std::string>{"graph", "trees"}));
  EXPECT_EQ(SurfaceTexts(r.absent), (std::vector<std::string>{"forest"}));
  // Without text (KPEval run with an empty source): every one absent, still zipped.
  ds.docs[0].has_text = false;
  auto none = BuildCorpus(ds, nullptr, *FindProfile("kpeval"));
  ASSERT_TRUE(none.ok());
  r = KpevalReferenceLists(none->docs[0]);
  EXPECT_TRUE(r.present.empty());
  EXPECT_EQ(SurfaceTexts(r.absent),
            (std::vector<std::string>{"neural networks", "deep models", "neural network", "graph"}));
}

// A document's new pieces are looked up first and their phrases' keys interned together afterwards
// (design-notes.md#73): a new piece met again in its own document (in the references and in the
// predictions, verbatim or by key, dropped or kept) is the one phrase, and the next document finds it.
// Stems (nltk): networks -> network, models -> model.
TEST(Corpus, ANewPieceMetAgainInItsDocumentIsOnePhrase) {
  auto ds = OneDoc("graph neural networks for text", "we train deep models .",
                   {"graph neural networks", "deep models", "graph neural networks"});
  RawDoc second = ds.docs[0];
  second.id = "d2";
  second.refs.clear();
  for (const char* r : {"deep models", "text mining"}) second.refs.push_back({r});
  ds.docs.push_back(second);
  auto preds = Preds({"deep models", "graph neural network", "deep models", "<unk> trees", "text"});
  preds.docs.push_back(Preds({"text mining", "deep models", "<unk> trees"}).docs[0]);
  auto c = BuildCorpus(ds, &preds, *FindProfile("kplab"));
  ASSERT_TRUE(c.ok()) << c.error().message;
  const Document& d = c->docs[0];
  EXPECT_EQ(SurfaceTexts(d.refs), (std::vector<std::string>{"graph neural networks", "deep models"}));
  EXPECT_EQ(SurfaceTexts(d.preds), (std::vector<std::string>{"deep models", "graph neural network", "text"}));
  EXPECT_EQ(c->Str(d.refs[0].key()), "graph neural network");
  EXPECT_EQ(c->Str(d.refs[1].key()), "deep model");
  EXPECT_EQ(c->Str(d.preds[2].key()), "text");
  EXPECT_EQ(d.preds[0].key(), d.refs[1].key());
  EXPECT_EQ(d.preds[1].key(), d.refs[0].key());
  for (const auto& k : d.preds) EXPECT_TRUE(k.present()) << k.surface();
  const Document& e = c->docs[1];
  EXPECT_EQ(SurfaceTexts(e.refs), (std::vector<std::string>{"deep models", "text mining"}));
  EXPECT_EQ(SurfaceTexts(e.preds), (std::vector<std::string>{"text mining", "deep models"}));
  EXPECT_EQ(e.refs[0].key(), d.refs[1].key());
  EXPECT_EQ(c->Str(e.refs[1].key()), "text mine");  // nltk: mining -> mine
  EXPECT_EQ(e.preds[0].key(), e.refs[1].key());
  EXPECT_FALSE(e.refs[1].present());
}

// The same with a token of 70,000 bytes, past what a lexicon string's packed length holds (65,535: its
// length is stored before its bytes) and past a piece record's inline bytes (48), so that the stem's
// string the token table keeps, the deferred key and the piece records all take their long paths.
// By hand: "a...as" -> "a...a" (step 1a drops the s; no later rule ends in a), "models" -> "model";
// Debian's nltk 3.8 PorterStemmer gives the same.
TEST(Corpus, ANewPieceWithATokenPastSixtyFourKibIsOnePhrase) {
  const std::string a(70000, 'a');
  const std::string as = a + "s";
  for (const char* profile : {"kplab", "kpeval", "exhird"}) {
    const auto ds = OneDoc(as + " models", "we train deep models .", {as + " models", as, as + " models"});
    const auto preds = Preds({a + " model", as, as + " models", "deep models"});
    auto c = BuildCorpus(ds, &preds, *FindProfile(profile));
    ASSERT_TRUE(c.ok()) << c.error().message;
    const Document& d = c->docs[0];
    ASSERT_GE(d.refs.size(), 2u) << profile;
    EXPECT_EQ(c->Str(d.refs[0].key()), a + " model") << profile;
    EXPECT_EQ(c->Str(d.refs[1].key()), a) << profile;
    EXPECT_EQ(d.refs[0].surface(), as + " models") << profile;
    ASSERT_GE(d.preds.size(), 2u) << profile;
    EXPECT_EQ(d.preds[0].surface(), a + " model") << profile;
    EXPECT_EQ(d.preds[0].key(), d.refs[0].key()) << profile;
    EXPECT_EQ(d.preds[1].key(), d.refs[1].key()) << profile;
    EXPECT_TRUE(d.preds[0].present()) << profile;
    EXPECT_TRUE(d.preds[1].present()) << profile;
    EXPECT_EQ(c->Str(d.preds.back().key()), "deep model") << profile;
  }
}

TEST(Corpus, KplabDoesNotMatchAcrossTitleAndBody) {
  // "models we" spans the boundary only if the title's last token touches the body's first.
  const auto ds = OneDoc("deep models", "we train", {"models we", "deep models"});
  auto c = BuildCorpus(ds, nullptr, *FindProfile("kplab"));
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->docs[0].refs[0].present());
  EXPECT_TRUE(c->docs[0].refs[1].present());
  // The peers join title and body into one sequence, so the same phrase is present there.
  auto k = BuildCorpus(ds, nullptr, *FindProfile("kenchan"));
  ASSERT_TRUE(k.ok());
  EXPECT_TRUE(k->docs[0].refs[0].present());
}

TEST(Corpus, PeerProfilesKeepEmptyAndPeosPieces) {
  const auto ds = OneDoc("a b .", "c d", {"a b"});
  const auto preds = Preds({"a b", "<peos>", ""});
  auto c = BuildCorpus(ds, &preds, *FindProfile("kpeval"));
  ASSERT_TRUE(c.ok());
  // KPEval keeps "<peos>" as a keyphrase and the empty piece as an empty keyphrase (never present).
  EXPECT_EQ(SurfaceTexts(c->docs[0].preds), (std::vector<std::string>{"a b", "<peos>", ""}));
  EXPECT_FALSE(c->docs[0].preds[2].present());
}

TEST(Corpus, OneToSetRuleAndCut) {
  const auto ds = OneDoc("a", "b", {"a"});
  const auto empty = Preds({""});
  auto c = BuildCorpus(ds, &empty, *FindProfile("kenchan+one2set"));
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->docs[0].preds.empty());
  std::vector<std::string> many;
  for (int i = 0; i < 250; ++i) many.push_back("w" + std::to_string(i));
  const auto lots = Preds(many);
  c = BuildCorpus(ds, &lots, *FindProfile("kenchan+one2set"));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->docs[0].preds.size(), 200u);
}

TEST(Corpus, PrmuLikeBoudin) {
  // Source "keyphrase generation with neural models"; stems (nltk): keyphras gener with neural model.
  const auto ds = OneDoc("keyphrase generation", "with neural models",
                         {"keyphrase generation", "neural keyphrase", "neural summarization", "graph theory"});
  auto c = BuildCorpus(ds, nullptr, *FindProfile("kplab"));
  ASSERT_TRUE(c.ok());
  const Document& d = c->docs[0];
  EXPECT_EQ(c->Classify(d, d.refs[0]), Prmu::kPresent);
  EXPECT_EQ(c->Classify(d, d.refs[1]), Prmu::kReordered);  // both words occur, not contiguously
  EXPECT_EQ(c->Classify(d, d.refs[2]), Prmu::kMixed);      // "neural" occurs, "summarization" not
  EXPECT_EQ(c->Classify(d, d.refs[3]), Prmu::kUnseen);
}

TEST(Corpus, ExhirdSplitsOnSlash) {
  const auto ds = OneDoc("x", "y", {"input/output"});
  const auto preds = Preds({"input/output"});
  auto c = BuildCorpus(ds, &preds, *FindProfile("exhird"));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(SurfaceTexts(c->docs[0].refs), (std::vector<std::string>{"input", "output"}));
  EXPECT_EQ(SurfaceTexts(c->docs[0].preds), (std::vector<std::string>{"input", "output"}));
}

// The keyphrase tokenizer is Python's piece.strip().lower().split(), checked here on the bytes where a
// word-at-a-time scan could go wrong. Expected tokens as Python 3.11 prints them: whitespace is
// \t \n \v \f \r, \x1c-\x1f and space; \x01, \x0e and \x1b are not (they stay inside a token); only
// A-Z are lower-cased in ASCII ('@' '[' '`' '{' border the letters); a non-ASCII piece is stripped of
// its no-break spaces and lower-cased in full Unicode ("Ü" -> "ü").
TEST(Corpus, KeyphraseTokensSplitAsPythonStrSplit) {
  const auto ds = OneDoc("x", "y", {"z"});
  const auto preds = Preds({
      "a\tb\nc\vd\fe\rf\x1cg\x1dh\x1ei\x1fj k",
      "long\x01token\x0ewith\x1b"
      "controls and more",
      "ABCDEFGHIJKLMNOPQRSTUVWXYZ@[`{",
      "  \x1f spaced   out \t ",
      "\xc2\xa0\xc3\x9cn\xc3\xaf"
      "code X\xc2\xa0",
      "twelve_bytes\x0b\x0b\x0b\x0b\x0b\x0b\x0b\x0b\x0bnext",
  });
  auto c = BuildCorpus(ds, &preds, *FindProfile("kplab"));
  ASSERT_TRUE(c.ok()) << c.error().message;
  const Document& d = c->docs[0];
  auto tokens = [&](const Keyphrase& k) {
    std::vector<std::string> out;
    for (TokenId t : k.tokens()) out.emplace_back(c->Str(t));
    return out;
  };
  ASSERT_EQ(d.preds.size(), 6u);
  EXPECT_EQ(tokens(d.preds[0]), (std::vector<std::string>{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k"}));
  EXPECT_EQ(tokens(d.preds[1]), (std::vector<std::string>{"long\x01token\x0ewith\x1b"
                                                          "controls",
                                                          "and", "more"}));
  EXPECT_EQ(tokens(d.preds[2]), (std::vector<std::string>{"abcdefghijklmnopqrstuvwxyz@[`{"}));
  EXPECT_EQ(d.preds[3].surface(), "spaced   out");
  EXPECT_EQ(tokens(d.preds[3]), (std::vector<std::string>{"spaced", "out"}));
  EXPECT_EQ(d.preds[4].surface(),
            "\xc3\xbcn\xc3\xaf"
            "code x");
  EXPECT_EQ(tokens(d.preds[4]), (std::vector<std::string>{"\xc3\xbcn\xc3\xaf"
                                                          "code",
                                                          "x"}));
  EXPECT_EQ(tokens(d.preds[5]), (std::vector<std::string>{"twelve_bytes", "next"}));
}

TEST(Corpus, MisalignedPredictionsAreAnError) {
  const auto ds = OneDoc("x", "y", {"a"});
  RawPredictions p = Preds({"a"});
  p.docs.push_back(p.docs[0]);
  auto c = BuildCorpus(ds, &p, *FindProfile("kplab"));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().message, "preds: 2 prediction lines for 1 documents of mem (expected one per document)");
}

}  // namespace
}  // namespace kplab
