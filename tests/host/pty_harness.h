// Drives an interactive program through a real pseudo-terminal (forkpty), the way a person at a terminal
// would: keys go to the pty master, everything the program writes is read back. Every wait has a hard
// timeout and the child is killed when the session ends, so a hung program fails a test instead of
// hanging it.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

namespace kplab::test {

class PtySession {
 public:
  // Starts argv[0] (a path) with argv in a fresh 100x30 terminal, in directory cwd, with the current
  // environment plus `env` (NAME=VALUE; a bare NAME is unset).
  PtySession(const std::vector<std::string>& argv, const std::string& cwd, const std::vector<std::string>& env) {
    struct winsize ws {};
    ws.ws_row = 30;
    ws.ws_col = 100;
    pid_ = forkpty(&master_, nullptr, nullptr, &ws);
    if (pid_ < 0) start_error_ = std::string("forkpty: ") + std::strerror(errno) + " (is /dev/pts mounted?)";
    if (pid_ == 0) {
      if (chdir(cwd.c_str()) != 0) _exit(126);
      for (const std::string& e : env) {
        const auto eq = e.find('=');
        if (eq == std::string::npos) {
          unsetenv(e.c_str());
        } else {
          setenv(e.substr(0, eq).c_str(), e.substr(eq + 1).c_str(), 1);
        }
      }
      std::vector<char*> args;
      for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      execv(args[0], args.data());
      _exit(127);
    }
    if (master_ >= 0) fcntl(master_, F_SETFL, fcntl(master_, F_GETFL) | O_NONBLOCK);
  }

  ~PtySession() {
    if (pid_ > 0 && !exited_) {
      kill(pid_, SIGKILL);
      int status = 0;
      waitpid(pid_, &status, 0);
    }
    if (master_ >= 0) close(master_);
  }
  PtySession(const PtySession&) = delete;
  PtySession& operator=(const PtySession&) = delete;

  bool started() const { return pid_ > 0 && master_ >= 0; }
  // Why the session did not start ("" when it did).
  const std::string& start_error() const { return start_error_; }

  void Send(const std::string& keys) {
    std::size_t off = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (off < keys.size() && std::chrono::steady_clock::now() < deadline) {
      const ssize_t n = write(master_, keys.data() + off, keys.size() - off);
      if (n > 0) {
        off += static_cast<std::size_t>(n);
      } else {
        Pump(10);
      }
    }
  }

  // Waits until `needle` occurs in the (cleaned) output after the read cursor; on success moves the
  // cursor past it. False after timeout_ms.
  bool WaitFor(const std::string& needle, int timeout_ms = 15000) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (true) {
      const std::string text = Text();
      const auto at = text.find(needle, cursor_);
      if (at != std::string::npos) {
        cursor_ = at + needle.size();
        return true;
      }
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now()).count();
      if (left <= 0) return false;
      if (!Pump(static_cast<int>(std::min<long long>(left, 100))) && exited_) {
        const std::string rest = Text();
        if (rest.find(needle, cursor_) == std::string::npos) return false;
      }
    }
  }

  // Reads whatever arrives for ms milliseconds.
  void Drain(int ms) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    while (std::chrono::steady_clock::now() < deadline) Pump(20);
  }

  // Waits for the child to exit; its exit status, or -1 after timeout_ms (or on a signal).
  int WaitExit(int timeout_ms = 15000) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (!exited_ && std::chrono::steady_clock::now() < deadline) {
      Pump(20);
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        exited_ = true;
        status_ = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      }
    }
    return exited_ ? status_ : -1;
  }

  // Everything written so far, with carriage returns, terminal escape sequences (CSI and OSC) and
  // bells removed, so tests can look for plain text.
  std::string Text() const {
    std::string out;
    for (std::size_t i = 0; i < raw_.size(); ++i) {
      const char c = raw_[i];
      if (c == '\r' || c == '\a') continue;
      if (c == '\x1b' && i + 1 < raw_.size()) {
        if (raw_[i + 1] == '[') {  // CSI: parameters, then a final byte in @..~
          i += 2;
          while (i < raw_.size() && !(raw_[i] >= '@' && raw_[i] <= '~')) ++i;
        } else if (raw_[i + 1] == ']') {  // OSC: up to BEL
          while (i < raw_.size() && raw_[i] != '\a') ++i;
        } else {
          ++i;
        }
        continue;
      }
      out.push_back(c);
    }
    return out;
  }
  // The cleaned output after the read cursor.
  std::string Rest() const { return Text().substr(std::min(cursor_, Text().size())); }

 private:
  // Reads what is available within ms; false when nothing came.
  bool Pump(int ms) {
    struct pollfd p {master_, POLLIN, 0};
    if (poll(&p, 1, ms) <= 0) return false;
    char buf[4096];
    const ssize_t n = read(master_, buf, sizeof buf);
    if (n <= 0) {  // EIO: the child closed the terminal
      exited_ = exited_ || WaitChild();
      return false;
    }
    raw_.append(buf, static_cast<std::size_t>(n));
    return true;
  }
  bool WaitChild() {  // bounded: a child that closed its terminal is about to exit
    for (int i = 0; i < 500; ++i) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        status_ = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        return true;
      }
      usleep(10000);
    }
    return false;
  }

  pid_t pid_ = -1;
  int master_ = -1;
  std::string start_error_;
  std::string raw_;
  std::size_t cursor_ = 0;
  bool exited_ = false;
  int status_ = -1;
};

}  // namespace kplab::test
