// Runs the kplab executable for end-to-end tests: from the source tree, with environment assignments,
// capturing exit code, stdout and stderr through files in a test directory.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

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

// The words of a command-line fragment when it needs no shell to split: plain words, '...' and "..."
// (without $, ` or \\ inside), separated by blanks; nullopt when a shell would do more with it (an
// expansion, a glob, a redirection, an operator, a comment, an escape).
inline std::optional<std::vector<std::string>> PlainWords(const std::string& s) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == ' ' || c == '\t' || c == '\n') {
      if (in_word) words.push_back(std::move(word));
      word.clear();
      in_word = false;
    } else if (c == '\'' || c == '"') {
      const std::size_t end = s.find(c, i + 1);
      if (end == std::string::npos) return std::nullopt;
      const std::string quoted = s.substr(i + 1, end - i - 1);
      if (c == '"' && quoted.find_first_of("$`\\") != std::string::npos) return std::nullopt;
      word += quoted;
      in_word = true;
      i = end;
    } else if (std::string_view("$`\\|&;<>()*?[]{}~#!").find(c) != std::string_view::npos) {
      return std::nullopt;
    } else {
      word += c;
      in_word = true;
    }
  }
  if (in_word) words.push_back(std::move(word));
  return words;
}

// Starts ENV's command (or kplab) in the source tree with its streams in the three files, and waits for
// it: ENV's leading NAME=VALUE words are set in its environment (the last one of a name wins), the
// words after them are the command kplab runs under. The shell's exit code: 128 + N for a signal N, 127
// (with a message in *why) for a command that cannot be started.
inline int RunDirect(std::vector<std::string> env, std::vector<std::string> args, const std::filesystem::path& in,
                     const std::filesystem::path& out, const std::filesystem::path& err, std::string* why) {
  auto name_of = [](std::string_view v) { return v.substr(0, v.find('=')); };
  auto is_assignment = [](const std::string& w) {
    const std::size_t eq = w.find('=');
    return eq != std::string::npos && eq > 0 && !(w[0] >= '0' && w[0] <= '9') &&
           w.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") == eq;
  };
  std::vector<std::string> envs, argv;
  for (char** e = environ; *e != nullptr; ++e) envs.emplace_back(*e);
  for (std::string& w : env) {
    if (argv.empty() && is_assignment(w)) {
      std::erase_if(envs, [&](const std::string& e) { return name_of(e) == name_of(w); });
      envs.push_back(std::move(w));
    } else {
      argv.push_back(std::move(w));
    }
  }
  argv.push_back(KPLAB_BINARY);
  for (std::string& w : args) argv.push_back(std::move(w));
  std::vector<char*> cargv, cenv;
  for (std::string& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  for (std::string& e : envs) cenv.push_back(e.data());
  cenv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addchdir_np(&actions, KPLAB_SOURCE_DIR);
  posix_spawn_file_actions_addopen(&actions, 0, in.c_str(), O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawnattr_t attr;  // the signal mask a shell's child would have: none blocked
  posix_spawnattr_init(&attr);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
  pid_t pid = -1;
  const int spawned = posix_spawnp(&pid, cargv[0], &actions, &attr, cargv.data(), cenv.data());
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) {
    *why = std::string("RunKplab: cannot start ") + cargv[0] + ": " + std::strerror(spawned) + "\n";
    return 127;
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : -1;
}

// `cd KPLAB_SOURCE_DIR && ENV kplab ARGS <input`, with the streams kept in dir. ENV is the shell's
// prefix: NAME=VALUE assignments, then perhaps a command kplab runs under (`timeout 60`, `prlimit
// ...`). When ENV and ARGS are plain words (PlainWords), kplab (or that command) is started directly
// (RunDirect), without a shell between: a shell costs ~8 ms of CPU a call on the 2-core machine
// (`perf stat`), and the quick tier starts kplab ~2,000 times.
inline Output RunKplab(const std::filesystem::path& dir, const std::string& env, const std::string& args,
                       const std::string& input = "") {
  const auto in = dir / "stdin", out = dir / "stdout", err = dir / "stderr";
  std::ofstream(in, std::ios::binary) << input;
  Output o;
  auto env_words = PlainWords(env);
  auto arg_words = PlainWords(args);
  if (env_words && arg_words) {
    std::string why;
    o.code = RunDirect(std::move(*env_words), std::move(*arg_words), in, out, err, &why);
    if (!why.empty()) {
      o.err = why;
      return o;
    }
  } else {
    const std::string cmd = std::string("cd ") + KPLAB_SOURCE_DIR + " && " + env + " " + KPLAB_BINARY + " " + args +
                            " <" + in.string() + " >" + out.string() + " 2>" + err.string();
    const int status = std::system(cmd.c_str());
    o.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
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
