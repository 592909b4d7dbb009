// The kplab executable links ICU statically (design note 69), its data included; the libraries and the
// core tests use the shared ICU. These run the executable itself where ICU decides the result, each
// against what Unicode defines (not what kplab printed): a compatibility normalization that needs ICU's
// data (NFKC, in a tokenizer) and a context-dependent lower-casing (the final sigma, as Python's lower()).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "../core/temp_dir.h"
#include "cli_harness.h"

namespace {

namespace fs = std::filesystem;
using kplab::test::Output;
using kplab::test::RunKplab;

// The tiny MPNet fixture's tokenizer with NFKC put before its BERT normalizer. Fullwidth letters
// (U+FF2E "Ｎ", U+FF45 "ｅ", ...) have compatibility decompositions to ASCII, so under NFKC the fullwidth
// "Ｎｅｕｒａｌ ｎｅｔｗｏｒｋｓ" is "Neural networks": the fixture generator's hand-written ids, <s> neural
// networks </s> = 0 135 137 2. Without NFKC (the fixture as it is) they are two unknown words, 5 5. An
// executable whose ICU lacked its data could not run NFKC at all.
TEST(StaticIcu, ExecutableRunsNfkcFromItsOwnIcuData) {
  const kplab::test::TempDir tmp;
  const fs::path dir = tmp.path();
  const fs::path snap = dir / "snap";
  fs::copy(std::string(KPLAB_TEST_DATA) + "/transformer/mpnet-tiny", snap, fs::copy_options::recursive);
  std::string tok;
  {
    std::ifstream in(snap / "tokenizer.json");
    tok.assign(std::istreambuf_iterator<char>(in), {});
  }
  // The normalizer object, by its braces (the fixture is pretty-printed JSON without braces in strings
  // there), wrapped in a Sequence after NFKC.
  const std::size_t key = tok.find("\"normalizer\":");
  ASSERT_NE(key, std::string::npos);
  const std::size_t open = tok.find('{', key);
  ASSERT_NE(open, std::string::npos);
  std::size_t close = open;
  for (int depth = 0; close < tok.size(); ++close) {
    depth += tok[close] == '{' ? 1 : tok[close] == '}' ? -1 : 0;
    if (depth == 0) break;
  }
  ASSERT_LT(close, tok.size());
  ASSERT_NE(tok.substr(open, close - open).find("BertNormalizer"), std::string::npos);
  tok = tok.substr(0, open) + "{\"type\": \"Sequence\", \"normalizers\": [{\"type\": \"NFKC\"}, " +
        tok.substr(open, close + 1 - open) + "]}" + tok.substr(close + 1);
  std::ofstream(snap / "tokenizer.json", std::ios::trunc) << tok;

  const std::string env = "KPLAB_MODELS=" + (dir / "models").string();
  ASSERT_EQ(RunKplab(dir, env, "model import nfkc " + snap.string() + " --backend transformer").code, 0);
  ASSERT_EQ(
      RunKplab(dir, env,
               "model import plain " + std::string(KPLAB_TEST_DATA) + "/transformer/mpnet-tiny --backend transformer")
          .code,
      0);
  const std::string fullwidth =
      "\xEF\xBC\xAE\xEF\xBD\x85\xEF\xBD\x95\xEF\xBD\x92\xEF\xBD\x81\xEF\xBD\x8C "  // Ｎｅｕｒａｌ
      "\xEF\xBD\x8E\xEF\xBD\x85\xEF\xBD\x94\xEF\xBD\x97\xEF\xBD\x8F\xEF\xBD\x92\xEF\xBD\x8B\xEF\xBD\x93\n";  // ｎｅｔｗｏｒｋｓ
  const Output nfkc = RunKplab(dir, env, "model tokenize nfkc -", "Neural Networks\n" + fullwidth);
  ASSERT_EQ(nfkc.code, 0) << nfkc.err;
  EXPECT_EQ(nfkc.out, "0 135 137 2\n0 135 137 2\n");
  const Output plain = RunKplab(dir, env, "model tokenize plain -", "Neural Networks\n" + fullwidth);
  ASSERT_EQ(plain.code, 0) << plain.err;
  EXPECT_EQ(plain.out, "0 135 137 2\n0 5 5 2\n");
}

// Python's 'ΟΔΟΣ'.lower() is 'οδος', its last letter the final sigma U+03C2, while 'ΣΟΦΙΑ'.lower() is
// 'σοφια' with U+03C3: Unicode's Final_Sigma context. A document whose references are written in
// capitals and whose predictions are those lower-cased words matches both only when the executable
// lower-cases as Python does (one plain σ for every Σ would miss 'οδος'): recall 2 / 2 = 1.
TEST(StaticIcu, ExecutableLowerCasesTheFinalSigmaAsPythonDoes) {
  const kplab::test::TempDir tmp;
  const fs::path dir = tmp.path();
  fs::create_directories(dir / "ds");
  std::ofstream(dir / "ds" / "word_greek_testing_allkeywords.txt")
      << "\xCE\x9F\xCE\x94\xCE\x9F\xCE\xA3;"                                     // ΟΔΟΣ
         "\xCE\xA3\xCE\x9F\xCE\xA6\xCE\x99\xCE\x91\n";                           // ΣΟΦΙΑ
  std::ofstream(dir / "p.txt") << "\xCE\xBF\xCE\xB4\xCE\xBF\xCF\x82;"            // οδος (final ς)
                                  "\xCF\x83\xCE\xBF\xCF\x86\xCE\xB9\xCE\xB1\n";  // σοφια
  const Output o = RunKplab(dir, "",
                            "eval --dataset " + (dir / "ds").string() + " --predictions " + (dir / "p.txt").string() +
                                " --metrics exact --no-store --output csv");
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.out.find("\nall.r@M.macro,1\n"), std::string::npos) << o.out;
  // The control: 'οδοσ' with a plain σ is not what 'ΟΔΟΣ' lower-cases to, so one reference of two.
  std::ofstream(dir / "p.txt", std::ios::trunc) << "\xCE\xBF\xCE\xB4\xCE\xBF\xCF\x83;"
                                                   "\xCF\x83\xCE\xBF\xCF\x86\xCE\xB9\xCE\xB1\n";
  const Output control = RunKplab(dir, "",
                                  "eval --dataset " + (dir / "ds").string() + " --predictions " +
                                      (dir / "p.txt").string() + " --metrics exact --no-store --output csv");
  ASSERT_EQ(control.code, 0) << control.err;
  EXPECT_NE(control.out.find("\nall.r@M.macro,0.5\n"), std::string::npos) << control.out;
}

}  // namespace
