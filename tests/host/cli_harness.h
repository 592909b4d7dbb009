// Runs the kplab executable for end-to-end tests: from the source tree, with environment assignments,
// capturing exit code, stdout and stderr through files in a test directory.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>

namespace kplab::test {

struct Output {
  int code = -1;
  std::string out, err;
};

inline std::string Slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// `cd KPLAB_SOURCE_DIR && ENV kplab ARGS <input`, with the streams kept in dir.
inline Output RunKplab(const std::filesystem::path& dir, const std::string& env, const std::string& args,
                       const std::string& input = "") {
  const auto in = dir / "stdin", out = dir / "stdout", err = dir / "stderr";
  std::ofstream(in, std::ios::binary) << input;
  const std::string cmd = std::string("cd ") + KPLAB_SOURCE_DIR + " && " + env + " " + KPLAB_BINARY + " " +
                          args + " <" + in.string() + " >" + out.string() + " 2>" + err.string();
  const int status = std::system(cmd.c_str());
  Output o;
  o.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  o.out = Slurp(out);
  o.err = Slurp(err);
  return o;
}

// A test with a fresh directory of its own (kplab_PREFIX_PID_TESTNAME under the temporary directory,
// removed after it) and a run store in it: Run("ARGS") is `KPLAB_DB=STORE kplab ARGS` from the source
// tree. The fixture the end-to-end tests of gold, knobs and fidelity each had a copy of.
class KplabDirTest : public ::testing::Test {
 protected:
  explicit KplabDirTest(std::string prefix) : prefix_(std::move(prefix)) {}
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("kplab_" + prefix_ + "_" + std::to_string(::getpid()) + "_" +
                                                     ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    db_ = (dir_ / "runs.db").string();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  Output Run(const std::string& args) { return RunKplab(dir_, "KPLAB_DB=" + db_, args); }
  void Write(const std::filesystem::path& rel, const std::string& text) {
    std::filesystem::create_directories((dir_ / rel).parent_path());
    std::ofstream(dir_ / rel, std::ios::binary) << text;
  }
  std::string P(const std::filesystem::path& rel) const { return (dir_ / rel).string(); }
  // The value of one aggregate in `kplab eval --output csv` output (NaN when absent).
  static double Agg(const std::string& csv, const std::string& metric) {
    const auto at = csv.find("\n" + metric + ",");
    if (at == std::string::npos) return std::nan("");
    return std::stod(csv.substr(at + metric.size() + 2));
  }

  std::filesystem::path dir_;
  std::string db_;

 private:
  std::string prefix_;
};

}  // namespace kplab::test
