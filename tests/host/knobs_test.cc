// Profile knobs (docs/profiles.md, "Knobs"): the peer flags that change numbers and that papers vary,
// set with --knob NAME=VALUE or in the profile's name ("kenchan+max_pieces=5"), checked against
// kenchan0226's own script run with those flags, and attacked with bad names and values.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include "cli_harness.h"

namespace {

namespace fs = std::filesystem;
using kplab::test::Output;

class Knobs : public kplab::test::KplabDirTest {
 protected:
  Knobs() : KplabDirTest("knobs") {}
};

// What kenchan0226/keyphrase-generation-rl @ 1a3b20b's own evaluate_prediction.py printed
// (results_log_*.txt, 5 significant digits), run unmodified with Debian's python3-nltk 3.8 and
// python3-numpy and an empty stand-in for torch (which pykp/io.py imports but never uses here), on
// Inspec (kpg_testsets_meng2017, 500 documents) with -src_file_path word_inspec_testing_context.txt
// -trg_file_path word_inspec_testing_allkeywords.txt and, per column:
//   0  catSeqTG-2RF1/inspec/seed1234.txt -invalidate_unk -disable_extra_one_word_filter -prediction_separated
//   1  the same, -num_preds 5
//   2  seed1234.txt -invalidate_unk -disable_extra_one_word_filter   (not -prediction_separated)
//   3  seed1234.txt -invalidate_unk -prediction_separated            (its extra one-word filter on)
//   4  seed1234.txt -num_preds 8                                      (none of the three flags)
//   5  catSeq-run2/inspec/predictions.txt -invalidate_unk -disable_extra_one_word_filter -prediction_separated
//   6  predictions.txt -disable_extra_one_word_filter -prediction_separated  (not -invalidate_unk)
struct Column {
  const char* predictions;  // under ../shared/data/predictions
  const char* knobs;        // kplab's spelling of the flags
};
constexpr Column kColumns[] = {
    {"catSeqTG-2RF1/inspec/seed1234.txt", ""},
    {"catSeqTG-2RF1/inspec/seed1234.txt", " --knob max_pieces=5"},
    {"catSeqTG-2RF1/inspec/seed1234.txt", " --knob peos=keep"},
    {"catSeqTG-2RF1/inspec/seed1234.txt", " --knob one_word_preds=first"},
    {"catSeqTG-2RF1/inspec/seed1234.txt",
     " --knob max_pieces=8 --knob peos=keep --knob 'invalid_tokens=, .' --knob one_word_preds=first"},
    {"catSeq-run2/inspec/predictions.txt", ""},
    {"catSeq-run2/inspec/predictions.txt", " --knob 'invalid_tokens=, .'"},
};
struct PeerRow {
  const char* metric;
  double value[7];
};
constexpr PeerRow kPeer[] = {
  {"all.p@5.micro", {0.274, 0.2672, 0.2684, 0.2568, 0.2544, 0.2592, 0.2592}},
  {"all.r@5.micro", {0.13994, 0.13647, 0.13708, 0.13115, 0.12993, 0.13238, 0.13238}},
  {"all.f1@5.micro", {0.18526, 0.18066, 0.18147, 0.17363, 0.17201, 0.17525, 0.17525}},
  {"all.p@5.macro", {0.274, 0.2672, 0.2684, 0.2568, 0.2544, 0.2592, 0.2592}},
  {"all.r@5.macro", {0.1662, 0.16294, 0.16333, 0.15565, 0.15455, 0.15693, 0.15693}},
  {"all.f1@5.macro_hm", {0.2069, 0.20244, 0.20308, 0.19382, 0.19229, 0.1955, 0.1955}},
  {"all.p@M.micro", {0.27596, 0.35139, 0.23046, 0.28322, 0.26995, 0.33869, 0.3173}},
  {"all.r@M.micro", {0.1428, 0.13647, 0.1428, 0.13279, 0.13197, 0.1334, 0.1334}},
  {"all.f1@M.micro", {0.18821, 0.19659, 0.17634, 0.18081, 0.17728, 0.19141, 0.18783}},
  {"all.p@M.macro", {0.2809, 0.3534, 0.23152, 0.28065, 0.26229, 0.34642, 0.32736}},
  {"all.r@M.macro", {0.16908, 0.16294, 0.16908, 0.15698, 0.15628, 0.15804, 0.15804}},
  {"all.f1@M.macro_hm", {0.2111, 0.22304, 0.19544, 0.20134, 0.19586, 0.21706, 0.21317}},
  {"present.p@5.micro", {0.2684, 0.264, 0.2684, 0.252, 0.2516, 0.2572, 0.2572}},
  {"present.r@5.micro", {0.18629, 0.18323, 0.18629, 0.1749, 0.17463, 0.17851, 0.17851}},
  {"present.f1@5.micro", {0.21993, 0.21632, 0.21993, 0.20649, 0.20616, 0.21075, 0.21075}},
  {"present.p@5.macro", {0.2684, 0.264, 0.2684, 0.252, 0.2516, 0.2572, 0.2572}},
  {"present.r@5.macro", {0.2262, 0.22335, 0.2262, 0.21179, 0.2115, 0.21788, 0.21788}},
  {"present.f1@5.macro_hm", {0.2455, 0.24198, 0.2455, 0.23015, 0.22982, 0.23591, 0.23591}},
  {"present.p@M.micro", {0.40552, 0.41431, 0.40552, 0.42349, 0.4277, 0.40759, 0.40759}},
  {"present.r@M.micro", {0.18767, 0.18323, 0.18767, 0.17518, 0.1749, 0.17879, 0.17879}},
  {"present.f1@M.micro", {0.2566, 0.25409, 0.2566, 0.24784, 0.24828, 0.24855, 0.24855}},
  {"present.p@M.macro", {0.40611, 0.41107, 0.40611, 0.40862, 0.41203, 0.41625, 0.41625}},
  {"present.r@M.macro", {0.22794, 0.22335, 0.22794, 0.21189, 0.2116, 0.21804, 0.21804}},
  {"present.f1@M.macro_hm", {0.29199, 0.28944, 0.29199, 0.27907, 0.27961, 0.28618, 0.28618}},
  {"absent.p@5.micro", {0.01, 0.0062992, 0.0092, 0.0085393, 0.0070022, 0.0068966, 0.0051282}},
  {"absent.r@5.micro", {0.017788, 0.0061872, 0.017788, 0.014695, 0.012374, 0.0069606, 0.0069606}},
  {"absent.f1@5.micro", {0.012803, 0.0062427, 0.012128, 0.010802, 0.0089435, 0.0069284, 0.0059055}},
  {"absent.p@5.macro", {0.0092, 0.0032, 0.0092, 0.0076, 0.0064, 0.0036, 0.0036}},
  {"absent.r@5.macro", {0.019402, 0.0042524, 0.019402, 0.015902, 0.013252, 0.0058048, 0.0058048}},
  {"absent.f1@5.macro_hm", {0.012482, 0.0036519, 0.012482, 0.010285, 0.0086315, 0.0044439, 0.0044439}},
  {"absent.p@M.micro", {0.026559, 0.025974, 0.016837, 0.023602, 0.017391, 0.025862, 0.018828}},
  {"absent.r@M.micro", {0.017788, 0.0061872, 0.017788, 0.014695, 0.012374, 0.0069606, 0.0069606}},
  {"absent.f1@M.micro", {0.021306, 0.0099938, 0.0173, 0.018112, 0.01446, 0.010969, 0.010164}},
  {"absent.p@M.macro", {0.028667, 0.014, 0.016833, 0.026, 0.018833, 0.016, 0.016}},
  {"absent.r@M.macro", {0.019402, 0.0042524, 0.019402, 0.015902, 0.013252, 0.0058048, 0.0058048}},
  {"absent.f1@M.macro_hm", {0.023142, 0.0065233, 0.018027, 0.019735, 0.015557, 0.0085189, 0.0085189}},
};

TEST_F(Knobs, KenchanFlagsMatchKenchan0226RunWithThem) {
  const std::string shared = KPLAB_SHARED_DATA;
  if (!fs::exists(shared + "/kpg_testsets_meng2017/inspec")) GTEST_SKIP() << "no shared data";
  for (int c = 0; c < 7; ++c) {
    SCOPED_TRACE(std::string(kColumns[c].predictions) + kColumns[c].knobs);
    Output o = Run("eval --no-store --output csv --metrics exact --profile kenchan --dataset " + shared +
                   "/kpg_testsets_meng2017/inspec --predictions " + shared + "/predictions/" +
                   kColumns[c].predictions + kColumns[c].knobs);
    ASSERT_EQ(o.code, 0) << o.err;
    for (const PeerRow& r : kPeer) {
      // The peer printed 5 significant digits.
      EXPECT_NEAR(Agg(o.out, r.metric), r.value[c], 1e-4 * r.value[c] + 1e-12) << r.metric;
    }
  }
}

// The knob is recorded with the run, in its profile's canonical name, and `runs show` shows it.
TEST_F(Knobs, RecordedWithTheRunInACanonicalName) {
  const std::string tiny = " --metrics exact --dataset examples/tiny --predictions examples/tiny/predictions.txt";
  Output a = Run("eval --profile kenchan --knob peos=keep --knob max_pieces=3 --system a" + tiny);
  ASSERT_EQ(a.code, 0) << a.err;
  // Written the other way round, in the name itself: the same profile.
  Output b = Run("eval --profile kenchan+max_pieces=3+peos=keep --system b" + tiny);
  ASSERT_EQ(b.code, 0) << b.err;
  // A knob at the profile's own value is no change: the plain profile.
  Output c = Run("eval --profile kenchan --knob max_pieces=200 --system c" + tiny);
  ASSERT_EQ(c.code, 0) << c.err;
  Output list = Run("runs list");
  ASSERT_EQ(list.code, 0) << list.err;
  EXPECT_EQ(list.out.find("max_pieces=200"), std::string::npos) << list.out;
  Output show = Run("runs show 1");
  ASSERT_EQ(show.code, 0) << show.err;
  EXPECT_NE(show.out.find("kenchan+peos=keep+max_pieces=3"), std::string::npos) << show.out;
  show = Run("runs show 2");
  EXPECT_NE(show.out.find("kenchan+peos=keep+max_pieces=3"), std::string::npos) << show.out;
  show = Run("runs show 3");
  EXPECT_EQ(show.out.find("kenchan+"), std::string::npos) << show.out;
}

TEST_F(Knobs, ProfilesShowListsKnobsDefaultsAndMeanings) {
  Output o = Run("profiles show kenchan");
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.out.find("settable with --knob NAME=VALUE (or kenchan+NAME=VALUE):\n"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("  max_pieces             200 (accepts a whole number >= 1, or all): keep only the first N "
                       "pieces of each prediction line, before any filter (kenchan0226's -num_preds N)\n"),
            std::string::npos)
      << o.out;
  EXPECT_NE(o.out.find("  peos                   first_token (accepts"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("  invalid_tokens         <unk> , . (accepts"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("  one_word_preds         all (accepts all or first)"), std::string::npos) << o.out;
  // With a knob set: its value, in the name and the table.
  o = Run("profiles show kenchan --knob max_pieces=50");
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_TRUE(o.out.starts_with("kenchan+max_pieces=50: ")) << o.out;
  EXPECT_NE(o.out.find("  max_pieces             50\n"), std::string::npos) << o.out;
}

TEST_F(Knobs, BadKnobsAreClearErrors) {
  const std::string tiny = " --no-store --dataset examples/tiny --predictions examples/tiny/predictions.txt";
  struct Case {
    std::string args, err;
  };
  const Case cases[] = {
      {"--profile kenchan --knob max_piece=50",
       "kplab: profile 'kenchan+max_piece=50': unknown knob 'max_piece' (did you mean 'max_pieces'? expected one "
       "of: peos, invalid_tokens, max_pieces, one_word_preds)\n"},
      {"--profile kenchan --knob lowercase=false",
       "kplab: profile 'kenchan+lowercase=false': the profile fixes the knob 'lowercase' (expected one of: peos, "
       "invalid_tokens, max_pieces, one_word_preds)\n"},
      {"--profile kenchan --knob max_pieces=0",
       "kplab: profile 'kenchan+max_pieces=0': knob max_pieces must be a whole number >= 1, or all (got '0')\n"},
      {"--profile kenchan --knob max_pieces=5x",
       "kplab: profile 'kenchan+max_pieces=5x': knob max_pieces must be a whole number >= 1, or all (got '5x')\n"},
      {"--profile kenchan --knob peos=drop",
       "kplab: profile 'kenchan+peos=drop': knob peos must be piece, piece_in_lines, first_token or keep (got "
       "'drop')\n"},
      {"--profile kenchan --knob one_word_preds=1",
       "kplab: profile 'kenchan+one_word_preds=1': knob one_word_preds must be all or first (got '1')\n"},
      {"--profile kenchan --knob 'invalid_tokens= '",
       "kplab: profile 'kenchan+invalid_tokens= ': knob invalid_tokens must be tokens separated by spaces, or "
       "none (got ' ')\n"},
      {"--profile kenchan --knob peos=keep --knob peos=piece",
       "kplab: profile 'kenchan+peos=keep+peos=piece': knob 'peos' is set twice (expected one value per knob)\n"},
      {"--profile kenchan --knob peos", "kplab: --knob must be NAME=VALUE, without '+' (got 'peos') (see 'kplab help')\n"},
      {"--profile kenchan --knob peos=keep+x", "kplab: --knob must be NAME=VALUE, without '+' (got 'peos=keep+x') (see 'kplab help')\n"},
      {"--profile kenchn --knob peos=keep",
       "kplab: unknown profile 'kenchn+peos=keep' (did you mean 'kenchan'? expected one of: kplab, kpeval, kenchan, "
       "exhird, semrp-standalone, kenchan+one2set)\n"},
      {"--profile kplab+one2set",
       "kplab: profile 'kplab+one2set': 'one2set' is no option of profile 'kplab' (expected KNOB=VALUE with a knob "
       "of: peos, invalid_tokens, max_pieces, one_word_preds)\n"},
  };
  for (const Case& c : cases) {
    Output o = Run("eval " + c.args + tiny);
    EXPECT_EQ(o.code, 1) << c.args;  // usage
    EXPECT_EQ(o.err, c.err) << c.args;
    EXPECT_EQ(o.out, "") << c.args;
  }
}

// Every front-end names a profile by the same string, so a knob travels in it: a manifest entry.
TEST_F(Knobs, ManifestEntryCarriesKnobsInTheProfile) {
  std::ofstream(dir_ / "m.json") << R"([{"dataset": ")" << KPLAB_SOURCE_DIR
                                 << R"(/examples/tiny", "predictions": ")" << KPLAB_SOURCE_DIR
                                 << R"(/examples/tiny/predictions.txt", "profile": "kenchan+max_pieces=3"}])";
  Output o = Run("eval --metrics exact --manifest " + (dir_ / "m.json").string());
  ASSERT_EQ(o.code, 0) << o.err;
  Output show = Run("runs show 1");
  EXPECT_NE(show.out.find("kenchan+max_pieces=3"), std::string::npos) << show.out;
  std::ofstream(dir_ / "bad.json") << R"([{"dataset": ")" << KPLAB_SOURCE_DIR
                                   << R"(/examples/tiny", "predictions": ")" << KPLAB_SOURCE_DIR
                                   << R"(/examples/tiny/predictions.txt", "profile": "kenchan+max_pieces=x"}])";
  o = Run("eval --metrics exact --manifest " + (dir_ / "bad.json").string());
  EXPECT_EQ(o.code, 1);
  EXPECT_NE(o.err.find("bad.json: runs[0]: profile 'kenchan+max_pieces=x': knob max_pieces must be a whole number "
                       ">= 1, or all (got 'x')"),
            std::string::npos)
      << o.err;
}

}  // namespace
