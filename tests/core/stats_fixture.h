// Reader of the stats fixtures (tests/data/stats/*.txt, written by tests/reference/gen_stats.py and
// gen_stats_fa.R): "case <kind> <name>", then "<key> <values...>" lines, then "end"; '#' lines are
// comments. Shared by tests/core/stats_test.cc and tests/host/stats_lua_test.cc.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace kplab::stats::test {

struct FixtureCase {
  std::string kind;
  std::string name;
  std::map<std::string, std::vector<std::string>> values;

  bool has(const std::string& key) const { return values.count(key) > 0; }
  const std::vector<std::string>& raw(const std::string& key) const {
    auto it = values.find(key);
    if (it == values.end()) {
      ADD_FAILURE() << kind << " " << name << ": no key '" << key << "'";
      static const std::vector<std::string> kEmpty;
      return kEmpty;
    }
    return it->second;
  }
  std::vector<double> nums(const std::string& key) const {
    std::vector<double> out;
    for (const std::string& s : raw(key)) out.push_back(std::strtod(s.c_str(), nullptr));
    return out;
  }
  std::vector<int> ints(const std::string& key) const {
    std::vector<int> out;
    for (const std::string& s : raw(key)) out.push_back(std::atoi(s.c_str()));
    return out;
  }
  double num(const std::string& key) const {
    const std::vector<double> v = nums(key);
    return v.empty() ? 0.0 : v[0];
  }
  std::string str(const std::string& key) const {
    const auto& v = raw(key);
    return v.empty() ? std::string() : v[0];
  }
};

inline std::vector<FixtureCase> LoadFixture(const std::string& file) {
  const std::string path = std::string(KPLAB_TEST_DATA) + "/stats/" + file;
  std::ifstream in(path);
  EXPECT_TRUE(in) << "cannot open " << path;
  std::vector<FixtureCase> cases;
  std::string line;
  FixtureCase cur;
  bool open = false;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ls(line);
    std::string key;
    ls >> key;
    if (key == "case") {
      cur = FixtureCase();
      ls >> cur.kind >> cur.name;
      open = true;
    } else if (key == "end") {
      if (open) cases.push_back(cur);
      open = false;
    } else if (open) {
      std::vector<std::string> vals;
      for (std::string v; ls >> v;) vals.push_back(v);
      cur.values[key] = vals;
    }
  }
  return cases;
}

inline std::vector<FixtureCase> CasesOf(const std::vector<FixtureCase>& all, const std::string& kind) {
  std::vector<FixtureCase> out;
  for (const FixtureCase& c : all) {
    if (c.kind == kind) out.push_back(c);
  }
  EXPECT_FALSE(out.empty()) << "no fixture cases of kind " << kind;
  return out;
}

inline FixtureCase CaseNamed(const std::vector<FixtureCase>& all, const std::string& kind,
                             const std::string& name) {
  for (const FixtureCase& c : all) {
    if (c.kind == kind && c.name == name) return c;
  }
  ADD_FAILURE() << "no fixture case " << kind << " " << name;
  return {};
}

}  // namespace kplab::stats::test
