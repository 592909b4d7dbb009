// The transformer backend from the command line (docs/embeddings.md, "Transformer encoders"):
// `kplab model import --backend transformer` of a hub cache directory, `model tokenize`, `model embed`,
// and `kplab eval --metrics semrp,semantic` with the model, no Python anywhere. Token ids below are the
// fixture generator's hand-written ones (tests/data/transformer/gen_fixtures.py); the vectors themselves
// are checked against the torch reference in tests/core/transformer_test.cc.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "cli_harness.h"

namespace {

namespace fs = std::filesystem;
using kplab::test::Output;
using kplab::test::RunKplab;

const std::string kFix = std::string(KPLAB_TEST_DATA) + "/transformer/";

struct Dir {
  fs::path path;
  Dir() {
    path = fs::temp_directory_path() / ("kplab_transformer_cli_" + std::to_string(::getpid()));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~Dir() { fs::remove_all(path); }
};

TEST(TransformerCli, ImportTokenizeEmbedAndEvaluateWithoutPython) {
  Dir d;
  const std::string env = "KPLAB_MODELS=" + (d.path / "models").string();
  Output imp = RunKplab(d.path, env, "model import mpnet " + kFix + "hub/models--kplab-test--mpnet-tiny --backend transformer");
  ASSERT_EQ(imp.code, 0) << imp.err;
  EXPECT_NE(imp.err.find("imported 'mpnet' (transformer backend, 32 dims)"), std::string::npos) << imp.err;
  Output list = RunKplab(d.path, env, "model list");
  EXPECT_NE(list.out.find("transformer"), std::string::npos) << list.out;

  std::ofstream(d.path / "texts.txt") << "Neural Networks\n\nneural\r\n";
  Output tok = RunKplab(d.path, env, "model tokenize mpnet " + (d.path / "texts.txt").string());
  ASSERT_EQ(tok.code, 0) << tok.err;
  // <s> neural networks </s>; an empty line is the two special tokens; CRLF is a line end.
  EXPECT_EQ(tok.out, "0 135 137 2\n0 2\n0 135 2\n");
  EXPECT_EQ(tok.err, "3 lines, 0 cut to max_seq_length = 16\n");
  // The same from standard input; a bad line there is named as -:LINE, and nothing is printed.
  Output in = RunKplab(d.path, env, "model tokenize mpnet -", "Neural Networks\n\nneural\r\n");
  EXPECT_EQ(in.code, 0) << in.err;
  EXPECT_EQ(in.out, tok.out);
  Output bad_in = RunKplab(d.path, env, "model tokenize mpnet -", "neural\nnet\xffworks\n");
  EXPECT_EQ(bad_in.code, 2);
  EXPECT_EQ(bad_in.out, "");
  EXPECT_EQ(bad_in.err, "kplab: -:2: not valid UTF-8 (expected text)\n");

  Output emb = RunKplab(d.path, env, "model embed mpnet " + (d.path / "texts.txt").string() + " --threads 2 --output " +
                                         (d.path / "v.npy").string());
  ASSERT_EQ(emb.code, 0) << emb.err;
  EXPECT_NE(emb.err.find("3 lines, 3 with a vector, 32 dims"), std::string::npos) << emb.err;
  EXPECT_EQ(fs::file_size(d.path / "v.npy"), 128u + 3 * 32 * 4);  // .npy header of 128 bytes, float32 rows

  const std::string common = "eval --dataset examples/tiny --predictions examples/tiny/predictions.txt "
                             "--metrics semrp,semantic --output csv --db " + (d.path / "k.db").string();
  // 39 phrases: tiny's 21 references and 18 predictions that are none, the phrases its documents list
  // under kplab (CachePhrases.TinyKplabProfileIsEveryListedSurfaceOnce counts them by hand); the
  // <peos> marker and the invalid "<unk> review" are not embedded.
  Output first = RunKplab(d.path, env, common + " --model mpnet");
  ASSERT_EQ(first.code, 0) << first.err;
  EXPECT_NE(first.err.find("model 'mpnet': 39 distinct phrases, 0 from the cache, 39 embedded now"), std::string::npos)
      << first.err;
  Output second = RunKplab(d.path, env, common + " --model mpnet");
  ASSERT_EQ(second.code, 0) << second.err;
  EXPECT_NE(second.err.find("39 distinct phrases, 39 from the cache, 0 embedded now"), std::string::npos) << second.err;
  EXPECT_EQ(first.out, second.out);

  // The same vectors as a precomputed table give the same numbers: the metrics see the transformer's
  // vectors through the same cache path as any model's.
  Output phrases = RunKplab(d.path, env, "cache phrases --dataset examples/tiny --predictions examples/tiny/predictions.txt "
                                         "--metrics semrp,semantic");
  ASSERT_EQ(phrases.code, 0) << phrases.err;
  std::ofstream(d.path / "phrases.txt") << phrases.out;
  Output table = RunKplab(d.path, env, "model embed mpnet " + (d.path / "phrases.txt").string() + " --output " +
                                           (d.path / "t.npy").string());
  ASSERT_EQ(table.code, 0) << table.err;
  Output pre = RunKplab(d.path, env, "model import tbl " + (d.path / "t.npy").string() +
                                         " --backend precomputed --phrases " + (d.path / "phrases.txt").string());
  ASSERT_EQ(pre.code, 0) << pre.err;
  Output via_table = RunKplab(d.path, env,
                              "eval --dataset examples/tiny --predictions examples/tiny/predictions.txt "
                              "--metrics semrp,semantic --output csv --no-store --db " + (d.path / "t.db").string() +
                                  " --model tbl");
  ASSERT_EQ(via_table.code, 0) << via_table.err;
  // The table was embedded in other batches than the run's cache: the same values to 1e-6 (bit for bit
  // on OpenBLAS kernels that do not round a row by its place in a block; design note 35).
  std::istringstream a(via_table.out), b(first.out);
  std::string la, lb;
  int lines = 0;
  while (std::getline(a, la) && std::getline(b, lb)) {
    ++lines;
    const auto ca = la.find(','), cb = lb.find(',');
    ASSERT_EQ(la.substr(0, ca), lb.substr(0, cb));
    if (lines == 1) continue;
    EXPECT_NEAR(std::stod(la.substr(ca + 1)), std::stod(lb.substr(cb + 1)), 1e-6) << la << " / " << lb;
  }
  EXPECT_EQ(lines, 22);
}

// What the backend is for: one command, three semantic metrics, one transformer model, no Python. The
// tiny model has 2 layers, so BERTScore's layer (KPEval's 8) is set to its last.
TEST(TransformerCli, SemrpSemanticAndBertscoreInOneRun) {
  Dir d;
  const std::string env = "KPLAB_MODELS=" + (d.path / "models").string();
  ASSERT_EQ(RunKplab(d.path, env, "model import bert " + kFix + "bert-tiny --backend transformer").code, 0);
  Output o = RunKplab(d.path, env,
                      "eval --dataset examples/tiny --predictions examples/tiny/predictions.txt --profile kpeval "
                      "--metrics semrp,semantic,bertscore --model bert --param bertscore.layer=2 --output csv --db " +
                          (d.path / "k.db").string());
  ASSERT_EQ(o.code, 0) << o.err;
  for (const char* name : {"all.semrp,", "all.semf1,", "all.bertscore_f1,", "present.bertscore_p,", "absent.bertscore_r,"}) {
    EXPECT_NE(o.out.find(name), std::string::npos) << name << "\n" << o.out;
  }
  Output without = RunKplab(d.path, env,
                            "eval --dataset examples/tiny --predictions examples/tiny/predictions.txt --profile kpeval "
                            "--metrics bertscore --model bert --output csv --no-store --db " + (d.path / "k.db").string());
  EXPECT_EQ(without.code, 3) << without.err;  // a script error, at the plugin's line
  EXPECT_EQ(without.err.rfind("embeddings: model 'bert': token embeddings only, computed while scoring\n", 0), 0u)
      << without.err;
  EXPECT_NE(without.err.find("plugins/bertscore.lua:120: ctx.token_embeddings: layer 8 is outside 0..2"),
            std::string::npos)
      << without.err;
}

TEST(TransformerCli, BadSnapshotsAreClearErrorsAndInstallNothing) {
  Dir d;
  const std::string env = "KPLAB_MODELS=" + (d.path / "models").string();
  fs::copy(kFix + "bert-tiny", d.path / "pt", fs::copy_options::recursive);
  fs::rename(d.path / "pt" / "model.safetensors", d.path / "pt" / "pytorch_model.bin");
  Output o = RunKplab(d.path, env, "model import pt " + (d.path / "pt").string() + " --backend transformer");
  EXPECT_EQ(o.code, 2) << o.err;
  EXPECT_EQ(o.err.rfind("kplab: " + (d.path / "pt").string() + ": no model.safetensors (it has pytorch_model.bin)", 0), 0u)
      << o.err;
  EXPECT_FALSE(fs::exists(d.path / "models" / "pt"));
  Output none = RunKplab(d.path, env, "model import x " + (d.path / "nowhere").string() + " --backend transformer");
  EXPECT_EQ(none.code, 2);
  EXPECT_EQ(none.err, "kplab: " + (d.path / "nowhere").string() +
                          ": not a directory (expected a Hugging Face snapshot directory with config.json)\n");
  std::ofstream(d.path / "words.txt") << "a 0.1 0.2\nb 0.3 0.4\n";
  ASSERT_EQ(RunKplab(d.path, env, "model import w " + (d.path / "words.txt").string() + " --backend wordvec").code, 0);
  Output wtok = RunKplab(d.path, env, "model tokenize w " + (d.path / "words.txt").string());
  EXPECT_EQ(wtok.code, 1);
  EXPECT_EQ(wtok.err, "kplab: model 'w' is a wordvec model; tokenize reads transformer models (see 'kplab help')\n");
  std::ofstream(d.path / "bad.txt") << "ok\n\xff\xfe\n";
  Output bad = RunKplab(d.path, env, "model embed w " + (d.path / "bad.txt").string());
  EXPECT_EQ(bad.code, 2);
  EXPECT_EQ(bad.err, "kplab: " + (d.path / "bad.txt").string() + ":2: not valid UTF-8 (expected text)\n");
}

}  // namespace
