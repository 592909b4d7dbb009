// Runs the kplab executable for end-to-end tests: from the source tree, with environment assignments,
// capturing exit code, stdout and stderr through files in a test directory.
#pragma once

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

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

}  // namespace kplab::test
