// Conformance: kplab's numbers under each profile equal those of the independent Python reference
// (tests/reference/kpref.py, written from docs/profiles.md and the peers' code) on the real data in
// ../shared/data, to 1e-9. The expected JSON files and manifest.tsv are produced by
// tests/reference/make_expected.py.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <simdjson.h>

#include "evaluate.h"
#include "kplab/corpus.h"
#include "kplab/io.h"
#include "kplab/profile.h"

namespace kplab::host {
namespace {

namespace fs = std::filesystem;

struct Case {
  std::string profile, system, dataset, dataset_path, predictions, format, options, expected;
};

// gtest prints a failing case's parameter with this (instead of a byte dump).
void PrintTo(const Case& c, std::ostream* os) { *os << c.expected; }

std::vector<std::string> SplitTabs(const std::string& line) {
  std::vector<std::string> out;
  std::string field;
  std::istringstream in(line);
  while (std::getline(in, field, '\t')) out.push_back(field);
  return out;
}

std::vector<Case> ReadCaseManifest(const std::string& path) {
  std::vector<Case> cases;
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    const auto f = SplitTabs(line);
    if (f.size() < 10) continue;
    cases.push_back({f[0], f[1], f[2], f[3], f[6], f[7], f[8], f[9]});
  }
  return cases;
}

std::map<std::string, double> ReadExpected(const std::string& path) {
  std::map<std::string, double> out;
  simdjson::dom::parser parser;
  simdjson::dom::element doc = parser.load(path);
  for (auto [key, value] : doc["aggregates"].get_object()) {
    out[std::string(key)] = value.get_double();
  }
  return out;
}

class Conformance : public ::testing::TestWithParam<Case> {};

// Runs one manifest case: dataset, predictions and dataset_path relative to data_root, expected JSON
// relative to expected_root.
void RunCase(const Case& c, const std::string& shared, const std::string& expected_root) {
  DatasetOptions opt;
  opt.format = c.format;
  opt.refs_stemmed = ("," + c.options + ",").find(",refs_stemmed,") != std::string::npos;
  auto ds = ImportDataset(shared + "/" + c.dataset_path, opt);
  ASSERT_TRUE(ds.ok()) << ds.error().message;
  auto preds = ImportPredictions(shared + "/" + c.predictions);
  ASSERT_TRUE(preds.ok()) << preds.error().message;
  // Options: comma-separated "one2set" (the kenchan+one2set profile), "max_docs=N" (first N lines of
  // every file), "no-text" (the dataset has no text: nothing to do, the importer knows), "refs_stemmed"
  // (references matched as given: --refs-stemmed).
  std::string profile_name = c.profile;
  std::istringstream opts(c.options);
  for (std::string o; std::getline(opts, o, ',');) {
    if (o == "one2set") profile_name += "+one2set";
    if (o.starts_with("max_docs=")) {
      const std::size_t n = std::stoul(o.substr(9));
      ds->docs.resize(std::min(n, ds->docs.size()));
      preds->docs.resize(std::min(n, preds->docs.size()));
    }
  }
  auto aligned = AlignPredictions(*ds, std::move(*preds));
  ASSERT_TRUE(aligned.ok()) << aligned.error().message;
  auto profile = FindProfile(profile_name);
  ASSERT_TRUE(profile.has_value()) << profile_name;
  auto corpus = BuildCorpus(*ds, &*aligned, *profile);
  ASSERT_TRUE(corpus.ok()) << corpus.error().message;
  EvalRequest req;
  auto res = EvaluateCorpus(std::make_shared<const Corpus>(std::move(*corpus)), req);
  ASSERT_TRUE(res.ok()) << res.error().message;
  ASSERT_TRUE(res->errors.empty()) << res->errors[0].Format();

  std::map<std::string, double> got;
  for (const auto& a : res->aggregates) got[a.metric] = a.value;
  const auto expected = ReadExpected(expected_root + "/" + c.expected);
  ASSERT_FALSE(expected.empty());
  int mismatches = 0;
  for (const auto& [name, want] : expected) {
    auto it = got.find(name);
    if (it == got.end()) {
      ADD_FAILURE() << "missing metric " << name;
      continue;
    }
    if (std::abs(it->second - want) > 1e-9 && ++mismatches <= 12) {
      ADD_FAILURE() << name << ": kplab " << it->second << " reference " << want;
    }
  }
  for (const auto& [name, value] : got) {
    if (!expected.count(name)) ADD_FAILURE() << "metric not in the reference: " << name;
  }
  EXPECT_EQ(mismatches, 0);
}

TEST_P(Conformance, MatchesReference) {
  const Case& c = GetParam();
  const std::string shared = KPLAB_SHARED_DATA;
  if (!fs::exists(shared + "/" + c.dataset_path)) GTEST_SKIP() << "shared data not found at " << shared;
  RunCase(c, shared, std::string(KPLAB_SOURCE_DIR) + "/tests/conformance/expected");
}

// Edge cases the real data never exercises (empty prediction lines, trailing ';', double spaces,
// KPEval's ' ##' / '[ digit ]' cleanup, <unk>, ',' and '.' tokens, <peos> pieces, ExHiRD's '/' and
// markers, upper case, stem duplicates, title/body spans, documents without references or predictions,
// more than 200 predictions, a 'semeval' keywords path): hand-written datasets in tests/data/edge
// (README.md there lists what each line tests), expected values from the same Python reference
// (tests/reference/make_expected_edge.py). Paths in the manifest are relative to KPLAB_TEST_DATA.
class ConformanceEdge : public ::testing::TestWithParam<Case> {};

TEST_P(ConformanceEdge, MatchesReference) {
  RunCase(GetParam(), KPLAB_TEST_DATA, std::string(KPLAB_SOURCE_DIR) + "/tests/conformance/expected_edge");
}

std::string CaseName(const ::testing::TestParamInfo<Case>& info) {
  std::string name = info.param.expected;  // "<profile>/<system>__<dataset>.json", unique
  name = name.substr(0, name.size() - 5);
  if (auto plus = name.find('+'); plus != std::string::npos) name.replace(plus, 1, "_plus_");
  for (char& ch : name) {
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(Shared, Conformance,
                         ::testing::ValuesIn(ReadCaseManifest(std::string(KPLAB_SOURCE_DIR) +
                                                              "/tests/conformance/expected/manifest.tsv")),
                         CaseName);
INSTANTIATE_TEST_SUITE_P(Edge, ConformanceEdge,
                         ::testing::ValuesIn(ReadCaseManifest(std::string(KPLAB_SOURCE_DIR) +
                                                              "/tests/conformance/expected_edge/manifest.tsv")),
                         CaseName);

// PRMU (Boudin & Gallina 2021; boudinfl/redefining-absent-keyphrases src/trec_to_prmu.py::pmru_uw) of
// every reference of Inspec (Hulth 2003) Test, .uncontr keys, under the kplab profile, against the
// independent reference tests/reference/prmu_ref.py (tests/conformance/expected_prmu/
// inspec_test_uncontr.tsv). kplab deduplicates references by stem key (first occurrence wins); the TSV
// is deduplicated the same way (first occurrence of each stem key), so both hold one row per distinct
// reference of a document and are compared by (doc id, lower-cased stripped keyphrase).
TEST(Prmu, InspecTestUncontrMatchesReference) {
  const std::string dir = std::string(KPLAB_SHARED_DATA) + "/inspec_hulth2003/Test";
  if (!fs::exists(dir)) GTEST_SKIP() << "shared data not found at " << dir;
  std::map<std::pair<std::string, std::string>, std::string> want;
  {
    std::ifstream in(std::string(KPLAB_SOURCE_DIR) + "/tests/conformance/expected_prmu/inspec_test_uncontr.tsv");
    ASSERT_TRUE(in) << "missing expected_prmu/inspec_test_uncontr.tsv";
    std::string line;
    bool header = true;
    while (std::getline(in, line)) {
      if (line.empty() || line[0] == '#') continue;
      if (header) {
        header = false;
        continue;
      }
      const auto f = SplitTabs(line);
      ASSERT_EQ(f.size(), 3u) << line;
      ASSERT_TRUE(want.emplace(std::make_pair(f[0], f[1]), f[2]).second) << "duplicate row " << line;
    }
  }
  ASSERT_FALSE(want.empty());

  DatasetOptions opt;
  opt.format = "hulth";
  auto ds = ImportDataset(dir, opt);
  ASSERT_TRUE(ds.ok()) << ds.error().message;
  auto profile = FindProfile("kplab");
  ASSERT_TRUE(profile.has_value());
  auto corpus = BuildCorpus(*ds, nullptr, *profile);
  ASSERT_TRUE(corpus.ok()) << corpus.error().message;

  std::map<char, int> totals;
  int compared = 0, mismatches = 0, extra = 0;
  std::map<std::pair<std::string, std::string>, bool> found;
  for (const Document& doc : corpus->docs) {
    for (const Keyphrase& kp : doc.refs) {
      const std::string got = PrmuName(corpus->Classify(doc, kp));
      ++totals[got[0]];
      // The TSV names each keyphrase by the first 16 hex digits of the SHA-256 of its text.
      const auto key = std::make_pair(doc.id, Sha256Hex(kp.surface()).substr(0, 16));
      auto it = want.find(key);
      if (it == want.end()) {
        if (++extra <= 20) ADD_FAILURE() << "doc " << doc.id << ": reference \"" << kp.surface() << "\" not in the TSV";
        continue;
      }
      found[key] = true;
      ++compared;
      if (got != it->second && ++mismatches <= 40) {
        ADD_FAILURE() << "doc " << doc.id << " \"" << kp.surface() << "\": kplab " << got << ", reference "
                      << it->second;
      }
    }
  }
  int missing = 0;
  for (const auto& [key, cat] : want) {
    if (!found.count(key) && ++missing <= 20) {
      ADD_FAILURE() << "doc " << key.first << ": reference \"" << key.second << "\" (" << cat
                    << ") not among kplab's references";
    }
  }
  std::cout << "PRMU kplab: P=" << totals['P'] << " R=" << totals['R'] << " M=" << totals['M']
            << " U=" << totals['U'] << "; compared " << compared << ", mismatches " << mismatches
            << ", kplab-only " << extra << ", reference-only " << missing << "\n";
  EXPECT_EQ(mismatches, 0);
  EXPECT_EQ(extra, 0);
  EXPECT_EQ(missing, 0);
}

// The peers' OWN scripts (not our reading of them): numbers printed by uclanlp/KPEval and kenchan0226's
// evaluate_prediction.py, run unmodified on the shared catSeqTG-2RF1 outputs
// (tests/conformance/peers/peer_outputs.tsv; how they were made: tests/reference/import_peer_outputs.py).
// kplab under the matching profile and options must give every one of them to 1e-9: from the corpus built
// whole, and (every case but the first-N-documents ones) from the files as `kplab eval` reads them, streamed.
struct PeerCase {
  std::string peer, profile, dataset, dataset_path, format, predictions, options, params;
};

void PrintTo(const PeerCase& c, std::ostream* os) {
  *os << c.peer << " " << c.dataset << " " << c.predictions << " " << c.options;
}

// Calls f(case, metric, value) for each line of the committed outputs.
template <typename F>
void ForEachPeerOutput(F f) {
  std::ifstream in(std::string(KPLAB_SOURCE_DIR) + "/tests/conformance/peers/peer_outputs.tsv");
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    const auto t = SplitTabs(line);
    if (t.size() != 10) continue;
    f(PeerCase{t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7]}, t[8], t[9]);
  }
}

std::string PeerKey(const PeerCase& c) { return c.peer + "|" + c.dataset + "|" + c.predictions + "|" + c.options; }

// The cases, in the file's order (every test process lists them all: the values are read by each
// case's own test, PeerValues).
std::vector<PeerCase> ReadPeerOutputs() {
  std::set<std::string> seen;
  std::vector<PeerCase> out;
  ForEachPeerOutput([&](PeerCase c, const std::string&, const std::string&) {
    if (seen.insert(PeerKey(c)).second) out.push_back(std::move(c));
  });
  return out;
}

std::map<std::string, double> PeerValues(const PeerCase& want) {
  std::map<std::string, double> values;
  const std::string key = PeerKey(want);
  ForEachPeerOutput([&](const PeerCase& c, const std::string& metric, const std::string& value) {
    if (PeerKey(c) == key) values[metric] = std::stod(value);
  });
  return values;
}

class PeerOutputs : public ::testing::TestWithParam<PeerCase> {};

TEST_P(PeerOutputs, MatchThePeersOwnScript) {
  const PeerCase& c = GetParam();
  const std::string shared = KPLAB_SHARED_DATA;
  if (!fs::exists(shared + "/" + c.dataset_path)) GTEST_SKIP() << "shared data not found at " << shared;
  DatasetOptions opt;
  opt.format = c.format;
  opt.refs_stemmed = c.options == "refs_stemmed";
  auto ds = ImportDataset(shared + "/" + c.dataset_path, opt);
  ASSERT_TRUE(ds.ok()) << ds.error().message;
  auto preds = ImportPredictions(shared + "/" + c.predictions);
  ASSERT_TRUE(preds.ok()) << preds.error().message;
  if (c.options.starts_with("max_docs=")) {
    const std::size_t n = std::stoul(c.options.substr(9));
    ds->docs.resize(n);
    preds->docs.resize(n);
  }
  auto aligned = AlignPredictions(*ds, std::move(*preds));
  ASSERT_TRUE(aligned.ok()) << aligned.error().message;
  auto corpus = BuildCorpus(*ds, &*aligned, *FindProfile(c.profile));
  ASSERT_TRUE(corpus.ok()) << corpus.error().message;
  EvalRequest req;
  std::istringstream params(c.params);
  for (std::string p; std::getline(params, p, ';');) {
    const auto dot = p.find('.'), eq = p.find('=');
    req.params[p.substr(0, dot)][p.substr(dot + 1, eq - dot - 1)] = p.substr(eq + 1);
  }
  const std::map<std::string, double> values = PeerValues(c);
  ASSERT_FALSE(values.empty());
  // Every one of the peer's values in a run's aggregates, to 1e-9.
  auto expect_peer_values = [&](const Result<EvalResult>& res, const std::string& how) {
    ASSERT_TRUE(res.ok()) << how << ": " << res.error().message;
    ASSERT_TRUE(res->errors.empty()) << how << ": " << res->errors[0].Format();
    std::map<std::string, double> got;
    for (const auto& a : res->aggregates) got[a.metric] = a.value;
    int mismatches = 0;
    for (const auto& [name, want] : values) {
      auto it = got.find(name);
      if (it == got.end()) {
        ADD_FAILURE() << how << ": kplab has no " << name;
      } else if (std::abs(it->second - want) > 1e-9 && ++mismatches <= 12) {
        ADD_FAILURE() << how << ": " << name << ": kplab " << it->second << ", " << c.peer << " " << want;
      }
    }
    EXPECT_EQ(mismatches, 0) << how;
  };
  expect_peer_values(EvaluateCorpus(std::make_shared<const Corpus>(std::move(*corpus)), req), "the corpus built whole");
  // kplab eval's own path from the files: the default metrics are streamed, each range scored as it is
  // built (design note 72), and must give the peer's numbers too.
  if (c.options.starts_with("max_docs=")) return;  // no file holds the first N documents alone
  req.dataset_path = shared + "/" + c.dataset_path;
  req.dataset_options = opt;
  req.predictions_path = shared + "/" + c.predictions;
  req.profile = c.profile;
  expect_peer_values(Evaluate(req), "kplab eval's path, streamed");
}

INSTANTIATE_TEST_SUITE_P(Peers, PeerOutputs, ::testing::ValuesIn(ReadPeerOutputs()),
                         [](const ::testing::TestParamInfo<PeerCase>& info) {
                           std::string name = info.param.peer + "_" + info.param.dataset + "_" +
                                              info.param.predictions + "_" + info.param.options;
                           for (char& ch : name) {
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace kplab::host
