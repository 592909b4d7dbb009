// The compact storage of the import and the corpus (docs/design-notes.md, note 33): StringList (a
// prediction line's pieces in one buffer), SharedPath (one copy of a file's name for all its records),
// PhraseArena (phrases' surfaces and ids in chunks). What each promises in its header, including the
// edges: empty items, items larger than a chunk, addresses that stay put when the arena grows or is
// adopted.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "kplab/corpus.h"
#include "kplab/io.h"
#include "kplab/lexicon.h"
#include "kplab/profile.h"
#include "kplab/string_list.h"

namespace kplab {
namespace {

TEST(StringList, ReadsLikeAVectorOfStrings) {
  StringList l;
  EXPECT_TRUE(l.empty());
  l.push_back("neural network");
  l.push_back("");  // an empty piece (a trailing ';') is an item of its own
  l.emplace_back("<peos>");
  l.push_back(std::string(300, 'x'));
  ASSERT_EQ(l.size(), 4u);
  EXPECT_EQ(l[0], "neural network");
  EXPECT_EQ(l[1], "");
  EXPECT_EQ(l.at(2), "<peos>");
  EXPECT_EQ(l.back(), std::string(300, 'x'));
  EXPECT_EQ(l.front(), "neural network");
  EXPECT_THROW(static_cast<void>(l.at(4)), std::out_of_range);
  // Iteration, random access and algorithms over the items as string_views.
  std::vector<std::string> seen(l.begin(), l.end());
  EXPECT_EQ(seen, (std::vector<std::string>{"neural network", "", "<peos>", std::string(300, 'x')}));
  EXPECT_EQ(l.end() - l.begin(), 4);
  EXPECT_EQ(*(l.begin() + 2), "<peos>");
  EXPECT_EQ(std::find(l.begin(), l.end(), "<peos>") - l.begin(), 2);
  EXPECT_TRUE(l == (std::vector<std::string>{"neural network", "", "<peos>", std::string(300, 'x')}));
  EXPECT_FALSE(l == (std::vector<std::string>{"neural network", "", "<peos>"}));
  EXPECT_FALSE(l == (std::vector<std::string>{"neural network", "x", "<peos>", std::string(300, 'x')}));
  EXPECT_EQ(l.ToVector(), seen);
}

TEST(StringList, ItemBoundariesAreKeptNotInferredFromTheBytes) {
  // "ab" + "c" and "a" + "bc" have the same bytes: they are different lists.
  const StringList a{"ab", "c"}, b{"a", "bc"};
  EXPECT_FALSE(a == b);
  EXPECT_TRUE(a == (StringList{"ab", "c"}));
  // Only empty items: a size without bytes.
  const StringList empties{"", "", ""};
  EXPECT_EQ(empties.size(), 3u);
  EXPECT_FALSE(empties == (StringList{"", ""}));
  // assign replaces, from any range of string-likes.
  StringList c{"old"};
  const std::vector<std::string_view> pieces = {"x", "y z"};
  c.assign(pieces.begin(), pieces.end());
  EXPECT_TRUE(c == (std::vector<std::string>{"x", "y z"}));
  std::ostringstream os;
  os << c;
  EXPECT_EQ(os.str(), "{\"x\", \"y z\"}");
}

TEST(SharedPath, CopiesShareOneString) {
  const SharedPath p(std::string("/data/kp20k/word_kp20k_testing_allkeywords.txt"));
  const SharedPath q = p;  // what every record's SourceLoc holds
  EXPECT_EQ(&p.str(), &q.str());
  EXPECT_TRUE(q == std::string("/data/kp20k/word_kp20k_testing_allkeywords.txt"));
  const std::string& as_string = q;
  EXPECT_EQ(as_string, "/data/kp20k/word_kp20k_testing_allkeywords.txt");
  // A default SharedPath is the empty name, not a null dereference.
  const SharedPath none;
  EXPECT_TRUE(none.empty());
  EXPECT_EQ(none.str(), "");
  SourceLoc loc{p, 3};
  EXPECT_EQ(loc.file.str(), p.str());
  EXPECT_EQ(loc.line, 3);
}

TEST(PhraseArena, ViewsStayPutAsTheArenaGrowsAndIsAdopted) {
  PhraseArena a;
  const std::string_view first = a.Copy("feedback vertex set");
  const std::span<TokenId> ids = a.Ids(3);
  ids[0] = 7;
  ids[1] = 8;
  ids[2] = 9;
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(ids.data()) % alignof(TokenId), 0u);
  // Enough bytes to fill several chunks, odd sizes between the ids to test their alignment, and one
  // item larger than a chunk.
  std::vector<std::string_view> more;
  std::vector<std::span<TokenId>> spans;
  for (int i = 0; i < 20000; ++i) {
    more.push_back(a.Copy(std::string(static_cast<std::size_t>(1 + i % 37), static_cast<char>('a' + i % 26))));
    spans.push_back(a.Ids(static_cast<std::size_t>(1 + i % 5)));
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(spans.back().data()) % alignof(TokenId), 0u);
    for (TokenId& t : spans.back()) t = static_cast<TokenId>(i);
  }
  const std::string big(1 << 20, 'q');
  const std::string_view big_view = a.Copy(big);
  PhraseArena corpus;
  corpus.Adopt(std::move(a));
  EXPECT_EQ(first, "feedback vertex set");
  EXPECT_EQ(std::vector<TokenId>(ids.begin(), ids.end()), (std::vector<TokenId>{7, 8, 9}));
  for (int i = 0; i < 20000; ++i) {
    ASSERT_EQ(more[static_cast<std::size_t>(i)],
              std::string(static_cast<std::size_t>(1 + i % 37), static_cast<char>('a' + i % 26)));
    for (TokenId t : spans[static_cast<std::size_t>(i)]) ASSERT_EQ(t, static_cast<TokenId>(i));
  }
  EXPECT_EQ(big_view, big);
  // The adopted-from arena is empty and usable again; empty items take no space.
  EXPECT_EQ(a.Copy("again"), "again");  // NOLINT(bugprone-use-after-move): Adopt leaves it empty
  EXPECT_TRUE(a.Copy("").empty());
  EXPECT_TRUE(a.Ids(0).empty());
}

// The lexicon keeps strings with a space in a table of their own (a string's table depends on the
// string alone): ids are still one counter in Intern order, equal strings one id, and Find agrees,
// whatever the mix — strings that differ only by a space, other whitespace, the empty string.
TEST(Lexicon, TwoTablesOneIdSpace) {
  Lexicon lex;
  const std::vector<std::string> strings = {"neural", "neural network", "", " ", "neural\tnetwork",
                                            "network", "neural  network", "neuralnetwork", " neural"};
  for (std::size_t i = 0; i < strings.size(); ++i) EXPECT_EQ(lex.Intern(strings[i]), i) << strings[i];
  EXPECT_EQ(lex.size(), strings.size());
  for (std::size_t i = 0; i < strings.size(); ++i) {
    EXPECT_EQ(lex.Intern(strings[i]), i) << "again: " << strings[i];
    EXPECT_EQ(lex.Str(static_cast<TokenId>(i)), strings[i]);
    ASSERT_TRUE(lex.Find(strings[i]).has_value()) << strings[i];
    EXPECT_EQ(*lex.Find(strings[i]), i);
  }
  EXPECT_FALSE(lex.Find("neural network ").has_value());
  EXPECT_FALSE(lex.Find("neura").has_value());
  // Enough of both kinds that each table grows several times; ids stay in order.
  for (int i = 0; i < 50000; ++i) {
    const std::string word = "w" + std::to_string(i), phrase = "p " + std::to_string(i);
    ASSERT_EQ(lex.Intern(word), strings.size() + 2 * static_cast<std::size_t>(i));
    ASSERT_EQ(lex.Intern(phrase), strings.size() + 2 * static_cast<std::size_t>(i) + 1);
  }
  EXPECT_EQ(*lex.Find("w49999"), strings.size() + 2 * 49999);
  EXPECT_EQ(*lex.Find("p 0"), strings.size() + 1);
}

// InternWords and InternStableWords (a string the caller knows holds a space, the corpus builder's keys
// of two or more words) choose the table of strings with a space without reading the string: the ids
// are those Intern gives, whichever call meets a string first, and Find agrees.
TEST(Lexicon, WordsCallsGiveInternsIds) {
  Lexicon lex;
  const std::string stable = "deep neural network";
  const TokenId a = lex.InternWords("neural network", Lexicon::Hash("neural network"));
  EXPECT_EQ(lex.Intern("neural network"), a);
  const TokenId b = lex.Intern("graph network");
  lex.PrefetchWords(Lexicon::Hash("graph network"));
  EXPECT_EQ(lex.InternWords("graph network", Lexicon::Hash("graph network")), b);
  const TokenId c = lex.InternStableWords(stable, Lexicon::Hash(stable));
  EXPECT_EQ(lex.Str(c).data(), stable.data());  // borrowed, as InternStable
  EXPECT_EQ(lex.InternStable(stable), c);
  EXPECT_EQ(lex.Intern("deep neural network"), c);
  EXPECT_EQ(lex.Intern("neural"), 3u);  // one counter for both tables
  for (TokenId id = 0; id < lex.size(); ++id) EXPECT_EQ(*lex.Find(lex.Str(id)), id) << lex.Str(id);
}

// Strings of every length read back whole, including those past the 16-bit length of an entry
// (65,535 bytes and up keep their length beside their bytes) and ones with NUL bytes inside.
TEST(Lexicon, LongStringsAndBorrowedBytes) {
  Lexicon lex;
  const std::string at_limit(65534, 'a'), marker(65535, 'b'), long_one(200000, 'c');
  const std::string with_nul("x\0y", 3);
  for (const std::string* s : {&at_limit, &marker, &long_one, &with_nul}) {
    const TokenId id = lex.Intern(*s);
    EXPECT_EQ(lex.Str(id), *s) << s->size();
    EXPECT_EQ(lex.Intern(*s), id);
    EXPECT_EQ(*lex.Find(*s), id);
  }
  // InternStable keeps the caller's bytes for a new string (same address), and a long string is
  // copied anyway (its length has no room in the entry).
  const std::string borrowed = "graph neural network";
  const TokenId b = lex.InternStable(borrowed);
  EXPECT_EQ(lex.Str(b).data(), borrowed.data());
  EXPECT_EQ(lex.Intern("graph neural network"), b);  // found, not added again
  const std::string long_borrowed(70000, 'd');
  const TokenId lb = lex.InternStable(long_borrowed);
  EXPECT_NE(lex.Str(lb).data(), long_borrowed.data());
  EXPECT_EQ(lex.Str(lb), long_borrowed);
  // Adopted bytes outlive the lexicon they came from.
  Lexicon merged;
  TokenId in_other;
  {
    Lexicon other;
    in_other = other.Intern("from the other range");
    merged.AdoptBytes(other);
    const TokenId m = merged.InternStable(other.Str(in_other));
    EXPECT_EQ(m, 0u);
  }
  EXPECT_EQ(merged.Str(0), "from the other range");
  EXPECT_EQ(merged.Intern("next"), 1u);
}

// An import given up to the build and refused (a predictions file of another length) gives the error
// the shared build gives, and nothing half-built.
TEST(CorpusRelease, RefusedReleasedImportGivesTheSameError) {
  RawDataset ds;
  ds.path = "data";
  for (int i = 0; i < 3; ++i) {
    RawDoc d;
    d.id = std::to_string(i + 1);
    d.has_text = false;
    d.refs.push_back({"a b"});
    ds.docs.push_back(std::move(d));
  }
  RawPredictions p;
  p.path = "preds.txt";
  p.docs.resize(2);
  const Profile profile = *FindProfile("kplab");
  auto shared = BuildCorpus(ds, &p, profile);
  ASSERT_FALSE(shared.ok());
  EXPECT_EQ(shared.error().message, "preds.txt: 2 prediction lines for 3 documents of data (expected one per document)");
  auto released = BuildCorpus(RawDataset(ds), std::optional<RawPredictions>(p), profile);
  ASSERT_FALSE(released.ok());
  EXPECT_EQ(released.error().message, shared.error().message);
}

}  // namespace
}  // namespace kplab
