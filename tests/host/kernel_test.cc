// Native kernels: plugins/exact.lua, rank.lua, rprec.lua and semrp.lua score with `score = kp.kernel.NAME`.
// Their formulas ship beside them as whole Lua plugins of the same names in plugins/reference/ (the code the
// conformance tests validated against the peers' scripts); the kernels must give the same numbers bit for
// bit, aggregates and per-document columns, under every profile and non-default parameters, and the two
// files of a metric must declare the same parameters, documentation and subsets. The hostile cases try to
// misuse a kernel.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "cli_harness.h"

namespace {

namespace fs = std::filesystem;

class Kernels : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kplab_kernel_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "pl");
  }
  void TearDown() override { fs::remove_all(dir_); }
  kplab::test::Output Run(const std::string& args, const std::string& db = "db") {
    return kplab::test::RunKplab(dir_, "KPLAB_DB=" + (dir_ / db).string(), args);
  }
  // Evaluates with `plugins` (empty: the shipped ones) into its own store; returns the aggregates (json)
  // followed by the per-document export.
  std::string Numbers(const std::string& eval_args, const std::string& plugins, const std::string& db) {
    const std::string with = plugins.empty() ? "" : " --plugins " + plugins;
    auto o = Run("eval " + eval_args + with + " --output json", db);
    EXPECT_EQ(o.code, 0) << eval_args << with << "\n" << o.err;
    auto id = Run("runs list --output csv", db);
    const std::string last = id.out.substr(id.out.find('\n') + 1);
    auto ex = Run("runs export " + last.substr(0, last.find(',')) + " --output csv", db);
    EXPECT_EQ(ex.code, 0) << ex.err;
    return o.out + "\n" + ex.out;
  }
  kplab::test::Output Probe(const std::string& source) {
    std::ofstream(dir_ / "pl" / "probe.lua") << source;
    return Run("eval --dataset examples/tiny --predictions examples/tiny/predictions.txt --no-store --output csv "
               "--metrics probe --plugins " + (dir_ / "pl").string());
  }
  fs::path dir_;

  // `--no-store` prints what the stored run prints, but for the run id. `dataset` is one of the
  // catSeqTG-2RF1 systems' datasets in the shared data.
  void ExpectNoStoreOutputIsTheStoredOne(const std::string& dataset) {
    const std::string d = "../shared/data/kpg_testsets_meng2017/", p = "../shared/data/predictions/catSeqTG-2RF1/";
    const std::string c = "--dataset " + d + dataset + " --predictions " + p + dataset + "/seed1234.txt";
    for (const std::string output : {"table", "csv"}) {
      const std::string args = "eval " + c + " --metrics exact,rank,rprec,prmu,diversity --output " + output;
      auto stored = Run(args);
      auto unstored = Run(args + " --no-store");
      ASSERT_EQ(stored.code, 0) << stored.err;
      ASSERT_EQ(unstored.code, 0) << unstored.err;
      std::string s = stored.out;
      // The run id: "not stored" instead when not stored.
      if (output == "table") s.replace(0, s.find("  dataset") + 2, "not stored  ");
      EXPECT_EQ(unstored.out, s) << c;
      EXPECT_NE(unstored.out.find(output == "csv" ? "all.p@5.micro," : "(documents)"), std::string::npos);
    }
  }
};

// The text between `open` and the next line equal to `close`, from `file` (empty when absent).
std::string Block(const std::string& file, const std::string& open, const std::string& close) {
  std::ifstream in(file);
  std::string text((std::istreambuf_iterator<char>(in)), {});
  const auto at = text.find(open);
  if (at == std::string::npos) return "";
  const auto end = text.find(close, at);
  return text.substr(at, end == std::string::npos ? std::string::npos : end - at);
}

// A kernel-backed plugin and its Lua formula cannot drift apart: the same parameters (names, defaults,
// choices, documentation), the same doc string, version, subsets and needs.
TEST(KernelReferences, DeclareWhatTheirKernelPluginsDeclare) {
  for (const std::string name : {"exact", "rank", "rprec", "semrp"}) {
    const std::string src = std::string(KPLAB_SOURCE_DIR) + "/";
    const std::string shipped = src + "plugins/" + name + ".lua", ref = src + "plugins/reference/" + name + ".lua";
    ASSERT_TRUE(fs::exists(ref)) << ref;
    for (const auto& [open, close] : std::initializer_list<std::pair<std::string, std::string>>{
             {"  name = ", "\n"}, {"  version = ", "\n"}, {"  doc = [[", "]]"}, {"  params = {", "\n  },"},
             {"  subsets = ", "\n"}, {"  needs = ", "\n  end,"}}) {
      const std::string a = Block(shipped, open, close), b = Block(ref, open, close);
      EXPECT_EQ(a, b) << name << ": '" << open << "' differs between " << shipped << " and " << ref;
      if (open != "  needs = " && open != "  params = {") {  // rprec has no parameters, only semrp needs
        EXPECT_FALSE(a.empty()) << shipped << " has no '" << open << "'";
      }
    }
    // The shipped file scores with the kernel; the reference with a Lua function.
    EXPECT_NE(Block(shipped, "  score = kp.kernel." + name, "\n"), "") << shipped;
    EXPECT_NE(Block(ref, "  score = function(", "\n"), "") << ref;
  }
}

TEST_F(Kernels, SameNumbersAsTheirLuaUnderEveryProfile) {
  const std::string d = "../shared/data/kpg_testsets_meng2017/", p = "../shared/data/predictions/catSeqTG-2RF1/";
  const std::string cases[] = {
      "--dataset examples/tiny --predictions examples/tiny/predictions.txt",
      "--dataset examples/tiny --predictions examples/tiny/predictions.txt --param exact.ks=1,3,M,O "
      "--param rank.ks=2,O,50 --param rank.alpha=0.7",
      "--dataset " + d + "inspec --predictions " + p + "inspec/seed1234.txt",
      "--dataset " + d + "inspec --predictions " + p + "inspec/seed1234.txt --profile kpeval",
      "--dataset " + d + "inspec --predictions " + p + "inspec/seed1234.txt --profile kenchan",
      "--dataset " + d + "inspec --predictions " + p + "inspec/seed1234.txt --profile exhird",
      "--dataset " + d + "semeval --predictions " + p + "semeval/seed1234.txt --profile semrp-standalone",
      "--dataset " + d + "semeval --predictions " + p + "semeval/seed1234.txt --refs-stemmed --profile kpeval",
      "--dataset " + d + "kp20k --predictions " + p + "kp20k/seed1234.txt",
      "--dataset " + d + "inspec --predictions " + p + "inspec/seed1234.txt --param semrp.clamp=true "
      "--param semrp.ks=1,2,7 --param semrp.alpha=0.3 --param semrp.k=1",
      // semrp.dedup=false: the list before dedup, per subset (kpeval: then present-first).
      "--dataset " + d + "krapivin --predictions " + p + "krapivin/seed1234.txt --param semrp.dedup=false "
      "--param semrp.ks=1,2",
      "--dataset " + d + "inspec --predictions " + p + "inspec/seed1234.txt --profile kpeval --param semrp.dedup=false",
      // semrp.dedup=true on a profile that keeps repeats: the kernel drops them, the Lua by list:unique().
      "--dataset " + d + "semeval --predictions " + p + "semeval/seed1234.txt --profile semrp-standalone "
      "--param semrp.dedup=true --param semrp.ks=1,5",
  };
  int n = 0;
  for (const std::string& c : cases) {
    const std::string args = c + " --metrics exact,rank,rprec,semrp --system s";
    const std::string lua = Numbers(args, "plugins/reference", "lua" + std::to_string(n) + ".db");
    const std::string native = Numbers(args, "", "native" + std::to_string(n) + ".db");
    ASSERT_GT(native.size(), 200u) << c;
    EXPECT_EQ(native, lua) << c;
    ++n;
  }
}

// The kernels score a document from bit masks of its prediction-reference relations (at most 64
// references, 256 keyphrases; otherwise from the lists) with byte- and stem-set filters in front of
// the substring and run searches (docs/design-notes.md, note 25). Documents written to break that: 64
// references (the top bit), 70 (the list path), 200 predictions beside 60 references (too many
// keyphrases), predictions that are byte substrings but not stem runs ("net" in "network"), whose bytes
// all occur in a reference without being a substring of it ("ten" and "network"), references inside
// predictions, repeats, an empty prediction line; under every alpha-NDCG form and an alpha of 0 and 1
// (every repeat's gain zero), against the plugins' Lua; and SemEval-2010's references with alternative
// forms ('+').
TEST_F(Kernels, MaskPathMatchesTheLuaOnHostileDocuments) {
  const fs::path data = dir_ / "hostile";
  fs::create_directories(data);
  std::ofstream ctx(data / "hostile_context.txt"), keys(data / "hostile_allkeywords.txt"), preds(dir_ / "preds.txt");
  auto refs_list = [](int n, const std::string& word) {
    std::string out;
    for (int i = 1; i <= n; ++i) out += (i > 1 ? ";" : "") + word + " t" + std::to_string(i);
    return out;
  };
  // 64 references: predictions hit the first and the last (bit 63) and cover some by a run.
  ctx << "alpha t1 and alpha t64 with beta t2 . <eos> alpha t63 text\n";
  keys << refs_list(64, "alpha") << "\n";
  preds << "alpha t64;alpha t1;t2;alpha;alpha t1;<peos>;alpha t63;gamma\n";
  // 70 references: the list path.
  ctx << "beta t70 and beta t1 . <eos> beta t35\n";
  keys << refs_list(70, "beta") << "\n";
  preds << "beta t70;beta;beta t1;t1;<peos>;beta t35;delta\n";
  // 200 predictions beside 60 references: too many keyphrases for the masks.
  ctx << "gamma t1 gamma t2 . <eos> gamma t60\n";
  keys << refs_list(60, "gamma") << "\n";
  for (int i = 1; i <= 200; ++i) preds << (i > 1 ? ";" : "") << "gamma t" << (i * 7 % 230);
  preds << "\n";
  // Byte substrings that are not stem runs, bytes without a substring, runs both ways, repeats.
  ctx << "network analysis of deep neural network models . <eos> we study graph neural network training on a "
         "network of ten nodes\n";
  keys << "network;deep neural network model;graph;ten nodes;neural network training\n";
  preds << "net;ten;work;neural network;graph neural network;network;network;deep neural network model;"
           "neural;<peos>;twork;network training;nodes\n";
  // No prediction at all, then a document whose predictions match nothing.
  ctx << "an empty line of predictions . <eos> nothing here\n";
  keys << "empty line;predictions\n";
  preds << "\n";
  ctx << "unrelated words . <eos> more words\n";
  keys << "first key;second key\n";
  preds << "zzz;yyy;<peos>;xxx\n";
  ctx.close(), keys.close(), preds.close();
  const std::string on = "--dataset " + data.string() + " --predictions " + (dir_ / "preds.txt").string();
  const std::string cases[] = {
      on,
      on + " --profile kpeval",
      on + " --profile kenchan",
      on + " --param rank.alpha=1 --param rank.ks=1,2,3,64,70,100,M,O --param exact.ks=1,64,O,M",
      on + " --param rank.alpha=0 --profile kpeval --param rank.ks=1,3,M,O,250",
      "--dataset ../shared/data/semeval2010/test --predictions ../shared/data/predictions/catSeqTG-2RF1/semeval/"
      "seed1234.txt",
      "--dataset ../shared/data/semeval2010/test --predictions ../shared/data/predictions/catSeqTG-2RF1/semeval/"
      "seed1234.txt --profile kpeval",
  };
  int n = 0;
  for (const std::string& c : cases) {
    const std::string args = c + " --metrics exact,rank,rprec --system s";
    const std::string lua = Numbers(args, "plugins/reference", "hlua" + std::to_string(n) + ".db");
    const std::string native = Numbers(args, "", "hnative" + std::to_string(n) + ".db");
    ASSERT_GT(native.size(), 200u) << c;
    EXPECT_EQ(native, lua) << c;
    ++n;
  }
}

TEST_F(Kernels, MarkerCalledFromLuaExplainsItself) {
  auto o = Probe(R"(-- kplab-api: 2
return kp.metric { name = "probe", version = "1", subsets = { "all" }, columns = { "x" },
  score = function(preds, refs, doc, p, ctx, out) kp.kernel.exact(preds, refs, doc, p, ctx, out) end }
)");
  EXPECT_NE(o.code, 0);
  EXPECT_NE(o.err.find("probe.lua:3:"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("kp.kernel.exact is scored by the host, not called: declare it as the plugin's score "
                       "(score = kp.kernel.exact)"),
            std::string::npos)
      << o.err;
}

TEST_F(Kernels, KernelNeedsApi2AndTheParametersItReads) {
  auto v1 = Probe(R"(-- kplab-api: 1
return kp.metric { name = "probe", version = "1", score = kp.kernel.rprec }
)");
  EXPECT_NE(v1.code, 0);
  EXPECT_NE(v1.err.find("probe.lua: score = kp.kernel.rprec needs plugin API 2 (-- kplab-api: 2)"), std::string::npos)
      << v1.err;
  auto no_alpha = Probe(R"(-- kplab-api: 2
return kp.metric { name = "probe", version = "1", subsets = { "all" },
  params = { ks = kp.cutoffs { default = "5" } }, columns = { "mrr" }, score = kp.kernel.rank }
)");
  EXPECT_NE(no_alpha.code, 0);
  EXPECT_NE(no_alpha.err.find("probe.lua: score = kp.kernel.rank reads parameter 'alpha' of type number, which field "
                              "'params' must declare with that type"),
            std::string::npos)
      << no_alpha.err;
  auto ks_as_int = Probe(R"(-- kplab-api: 2
return kp.metric { name = "probe", version = "1", params = { ks = kp.int { default = 5 } },
  columns = { "p@5" }, score = kp.kernel.exact }
)");
  EXPECT_NE(ks_as_int.code, 0);
  EXPECT_NE(ks_as_int.err.find("reads parameter 'ks' of type cut-off list"), std::string::npos) << ks_as_int.err;
}

TEST_F(Kernels, DeclaredColumnTheKernelDoesNotWriteIsAnError) {
  auto o = Probe(R"(-- kplab-api: 2
return kp.metric { name = "probe", version = "1", subsets = { "all" },
  params = { ks = kp.cutoffs { default = "5" } }, columns = { "p@5", "precision@5" }, score = kp.kernel.exact }
)");
  EXPECT_NE(o.code, 0);
  EXPECT_NE(o.err.find("probe.lua: column 'precision@5' is declared, but score = kp.kernel.exact does not write it "
                       "(it writes: p@5, r@5, f1@5, hits@5, pden@5, rden@5)"),
            std::string::npos)
      << o.err;
}

// semrp's kernel reads the run's embeddings: without `needs` there are none, and the run says so.
TEST_F(Kernels, SemrpKernelWithoutEmbeddingsSaysSo) {
  auto o = Probe(R"(-- kplab-api: 2
return kp.metric { name = "probe", version = "1", subsets = { "all" },
  params = { k = kp.int { default = 3 }, clamp = kp.bool { default = false }, alpha = kp.number { default = 0.5 },
             ks = kp.string { default = "" } },
  columns = { "semrp" }, score = kp.kernel.semrp }
)");
  EXPECT_NE(o.code, 0);
  EXPECT_NE(o.err.find("probe.lua: score = kp.kernel.semrp needs the run's embeddings (needs = {\"embeddings\"})"),
            std::string::npos)
      << o.err;
}

// A plugin of its own over a kernel: a subset of its columns, its own aggregation, no subsets. Hand
// calculation (examples/tiny, kplab profile): hits in the top 5 are 3, 3, 2, 2, 2, so the mean P@5 over
// the five documents is 12 / 25 = 0.48 and the summed hits are 12.
TEST_F(Kernels, UserPluginDeclaresWhatItKeeps) {
  auto o = Probe(R"(-- kplab-api: 2
return kp.metric { name = "probe", version = "1",
  params = { ks = kp.cutoffs { default = "5" } },
  columns = function(c) c:mean("p5", c:column("p@5")) c:sum("hits5", c:hidden("hits@5")) end,
  score = kp.kernel.exact }
)");
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.out.find("\np5,0.48\n"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("\nhits5,12\n"), std::string::npos) << o.out;
}

}  // namespace

namespace {

// kplab eval --no-store drops each plugin's per-document columns after its aggregates (the memory of a
// million-document run): what it prints must still equal a stored run's output, document counts per
// subset included (Inspec has text: present/absent columns; KP20k has none).
TEST_F(Kernels, NoStoreRunPrintsWhatAStoredRunPrints) { ExpectNoStoreOutputIsTheStoredOne("inspec"); }

// The same at 20,000 documents (slow tier).
TEST_F(Kernels, NoStoreRunPrintsWhatAStoredRunPrintsOnKp20k) { ExpectNoStoreOutputIsTheStoredOne("kp20k"); }

}  // namespace

namespace {

// kplab eval reads the predictions on a second thread while it reads the dataset; the errors stay what
// they were when the files were read in turn: a bad dataset is reported first even when the predictions
// are bad too, and a bad predictions file alone is reported with its own line.
TEST_F(Kernels, PredictionsReadBesideTheDatasetKeepTheErrorOrder) {
  std::ofstream(dir_ / "preds.txt") << "a;b\n\xff\xfe;c\n";
  const std::string bad_preds = (dir_ / "preds.txt").string();
  for (const std::string threads : {"", " --threads 1", " --threads 2"}) {
    auto both = Run("eval --no-store --dataset " + (dir_ / "missing").string() + " --predictions " + bad_preds + threads);
    EXPECT_EQ(both.code, 2) << both.err;
    EXPECT_NE(both.err.find("missing: no such file or directory (expected a dataset file or directory)"),
              std::string::npos)
        << both.err;
    EXPECT_EQ(both.err.find("preds.txt"), std::string::npos) << both.err;
    auto preds = Run("eval --no-store --dataset examples/tiny --predictions " + bad_preds + threads);
    EXPECT_NE(preds.code, 0);
    EXPECT_NE(preds.err.find("preds.txt:2: invalid UTF-8"), std::string::npos) << preds.err;
  }
}

}  // namespace
