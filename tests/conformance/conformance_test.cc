// Conformance: kplab's numbers under each profile equal those of the independent Python reference
// (tests/reference/kpref.py, written from docs/profiles.md and the peers' code) on the real data in
// ../shared/data, to 1e-9. The expected JSON files and manifest.tsv are produced by
// tests/reference/make_expected.py.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
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

std::vector<std::string> SplitTabs(const std::string& line) {
  std::vector<std::string> out;
  std::string field;
  std::istringstream in(line);
  while (std::getline(in, field, '\t')) out.push_back(field);
  return out;
}

std::vector<Case> ReadManifest() {
  std::vector<Case> cases;
  std::ifstream in(std::string(KPLAB_SOURCE_DIR) + "/tests/conformance/expected/manifest.tsv");
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

TEST_P(Conformance, MatchesReference) {
  const Case& c = GetParam();
  const std::string shared = KPLAB_SHARED_DATA;
  if (!fs::exists(shared + "/" + c.dataset_path)) GTEST_SKIP() << "shared data not found at " << shared;
  DatasetOptions opt;
  opt.format = c.format;
  auto ds = ImportDataset(shared + "/" + c.dataset_path, opt);
  ASSERT_TRUE(ds.ok()) << ds.error().message;
  auto preds = ImportPredictions(shared + "/" + c.predictions);
  ASSERT_TRUE(preds.ok()) << preds.error().message;
  // Options: comma-separated "one2set" (the kenchan+one2set profile), "max_docs=N" (first N lines of
  // every file), "no-text" (the dataset has no text: nothing to do, the importer knows).
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
  const auto expected = ReadExpected(std::string(KPLAB_SOURCE_DIR) + "/tests/conformance/expected/" + c.expected);
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

std::string CaseName(const ::testing::TestParamInfo<Case>& info) {
  std::string name = info.param.expected;  // "<profile>/<system>__<dataset>.json", unique
  name = name.substr(0, name.size() - 5);
  if (auto plus = name.find('+'); plus != std::string::npos) name.replace(plus, 1, "_plus_");
  for (char& ch : name) {
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(Shared, Conformance, ::testing::ValuesIn(ReadManifest()), CaseName);

}  // namespace
}  // namespace kplab::host
