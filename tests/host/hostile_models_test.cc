// Embedding-model importers refuse what is not a regular file before opening it, as every reader does
// (docs/formats.md, "What is refused before parsing"): a FIFO would block `kplab model import` forever,
// /dev/zero never end. Exact messages, exit 2, nothing installed (each command returns at once; a hang
// would be stopped by ctest's timeout).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "cli_harness.h"

namespace {

namespace fs = std::filesystem;

TEST(HostileModels, ImportersRefuseNonRegularFiles) {
  const fs::path dir = fs::temp_directory_path() / ("kplab_hostile_models_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "m2v");
  ASSERT_EQ(::mkfifo((dir / "fifo.txt").c_str(), 0600), 0);
  ASSERT_EQ(::mkfifo((dir / "m2v" / "model.safetensors").c_str(), 0600), 0);
  std::ofstream(dir / "m2v" / "tokenizer.json") << "{}";
  const std::string env = "KPLAB_MODELS=" + (dir / "models").string();
  const std::string d = dir.string();
  const std::pair<std::string, std::string> cases[] = {
      {"w /dev/zero --backend wordvec",
       "kplab: /dev/zero: a character device, not a regular file (expected a word-vector text file)\n"},
      {"w " + d + "/fifo.txt --backend wordvec",
       "kplab: " + d + "/fifo.txt: a FIFO, not a regular file (expected a word-vector text file)\n"},
      {"p " + d + "/fifo.txt --backend precomputed --format tsv",
       "kplab: " + d + "/fifo.txt: a FIFO, not a regular file (expected a TSV table of phrase vectors)\n"},
      {"p " + d + " --backend precomputed --format jsonl",
       "kplab: " + d + ": a directory, not a regular file (expected a JSONL table of phrase vectors)\n"},
      {"p /dev/zero --backend precomputed --format npy --phrases /dev/zero",
       "kplab: /dev/zero: a character device, not a regular file (expected a .npy file)\n"},
  };
  for (const auto& [args, message] : cases) {
    kplab::test::Output o = kplab::test::RunKplab(dir, env, "model import " + args);
    EXPECT_EQ(o.code, 2) << args << "\n" << o.err;
    EXPECT_EQ(o.err, message) << args;
  }
  kplab::test::Output m = kplab::test::RunKplab(dir, env, "model import m " + d + "/m2v --backend model2vec");
  EXPECT_EQ(m.code, 2) << m.err;
  EXPECT_NE(m.err.find("m2v/model.safetensors: a FIFO, not a regular file"), std::string::npos) << m.err;
  EXPECT_FALSE(fs::exists(dir / "models" / "w"));
  EXPECT_FALSE(fs::exists(dir / "models" / "p"));
  fs::remove_all(dir);
}

}  // namespace
