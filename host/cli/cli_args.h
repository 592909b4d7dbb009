// Command-line argument handling shared by the CLI's command files.
//
// Threads: an Args is one command line's, read by the thread that runs the command; UsageError is a plain
// exception.
#pragma once

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include <iostream>
#include <string_view>

#include "kplab/safe_text.h"
#include "kplab/suggest.h"

namespace kplab::host {

// The one way the command line reports a problem: "kplab: MESSAGE" on stderr, the message through
// TerminalText (kplab/safe_text.h) so that no name, path or plugin text in it can drive the terminal;
// a traceback's line breaks are kept. clear_progress_line: the progress line drawn on the terminal is
// cleared first ("\r\033[K", the one control sequence kplab writes on purpose, past the escaping of
// std::cerr; see TerminalSafeStream).
inline void ReportError(std::string_view message, bool clear_progress_line = false) {
  if (clear_progress_line) {
    std::cerr.flush();
    std::fputs("\r\033[K", stderr);
  }
  // One insertion, so one write: no other thread's line (kp.log's) lands inside a message.
  std::cerr << ("kplab: " + ErrorText(message) + "\n");
}

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Minimal argument cursor: options are taken by name; what is left are positionals.
class Args {
 public:
  explicit Args(std::vector<std::string> v) : v_(std::move(v)) {}
  // The value of an option given once ("--x V" or "--x=V"); given twice is a usage error.
  std::optional<std::string> Take(const std::string& name) {
    Known(name);
    auto v = TakeOne(name);
    if (v && Has(name)) throw UsageError(fmt::format("option {} is repeated", name));
    return v;
  }
  // Every value of a repeatable option, in order.
  std::vector<std::string> TakeAll(const std::string& name) {
    std::vector<std::string> out;
    Known(name);
    while (auto v = TakeOne(name)) out.push_back(*v);
    return out;
  }
  bool Flag(const std::string& name) {
    Known(name);
    auto it = std::find(v_.begin(), v_.end(), name);
    if (it == v_.end()) return false;
    v_.erase(it);
    if (std::find(v_.begin(), v_.end(), name) != v_.end()) {
      throw UsageError(fmt::format("option {} is repeated", name));
    }
    return true;
  }
  // A required option. A missing one is reported by Positionals(), after any unknown option: a
  // misspelt "--datset" is the likely cause of a missing "--dataset".
  std::string Require(const std::string& name) {
    auto v = Take(name);
    if (!v) {
      missing_.push_back(name);
      return "";
    }
    return *v;
  }
  // Remaining arguments; unknown options are usage errors, then missing required ones.
  std::vector<std::string> Positionals(bool allow_dash = false) const {
    for (const auto& a : v_) {
      if (!allow_dash && a.size() > 1 && a[0] == '-' && a[1] == '-') {
        // The nearest of the options this command asked for: a misspelt "--datset" gets "--dataset".
        const std::string near = NearestName(a.substr(0, a.find('=')), known_);
        throw UsageError(near.empty() ? fmt::format("unknown option {}", a)
                                      : fmt::format("unknown option {} (did you mean {}?)", a, near));
      }
    }
    if (!allow_dash && !missing_.empty()) {
      throw UsageError(fmt::format("missing required option {}", missing_.front()));
    }
    return v_;
  }

 private:
  void Known(const std::string& name) {
    if (std::find(known_.begin(), known_.end(), name) == known_.end()) known_.push_back(name);
  }
  std::optional<std::string> TakeOne(const std::string& name) {
    for (std::size_t i = 0; i < v_.size(); ++i) {
      if (v_[i] == name) {
        if (i + 1 >= v_.size()) throw UsageError(fmt::format("option {} needs a value", name));
        std::string val = v_[i + 1];
        v_.erase(v_.begin() + static_cast<std::ptrdiff_t>(i), v_.begin() + static_cast<std::ptrdiff_t>(i) + 2);
        return val;
      }
      if (v_[i].starts_with(name + "=")) {
        std::string val = v_[i].substr(name.size() + 1);
        v_.erase(v_.begin() + static_cast<std::ptrdiff_t>(i));
        return val;
      }
    }
    return std::nullopt;
  }
  bool Has(const std::string& name) const {
    return std::any_of(v_.begin(), v_.end(), [&](const std::string& a) { return a == name || a.starts_with(name + "="); });
  }
  std::vector<std::string> v_;
  std::vector<std::string> missing_;
  std::vector<std::string> known_;  // every option name asked for, in order (for "did you mean")
};

// A whole non-negative integer option value in [lo, hi], else a usage error naming the option.
inline std::uint64_t ParseCount(const std::string& option, const std::string& value, std::uint64_t lo, std::uint64_t hi) {
  std::uint64_t v = 0;
  const char* end = value.data() + value.size();
  const auto [ptr, ec] = std::from_chars(value.data(), end, v);
  if (value.empty() || ec != std::errc() || ptr != end || v < lo || v > hi) {
    throw UsageError(fmt::format("{} must be an integer from {} to {} (got '{}')", option, lo, hi, value));
  }
  return v;
}


}  // namespace kplab::host
