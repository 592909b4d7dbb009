// Command-line argument handling shared by the CLI's command files.
#pragma once

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

namespace kplab::host {

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Minimal argument cursor: options are taken by name; what is left are positionals.
class Args {
 public:
  explicit Args(std::vector<std::string> v) : v_(std::move(v)) {}
  std::optional<std::string> Take(const std::string& name) {
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
  std::vector<std::string> TakeAll(const std::string& name) {
    std::vector<std::string> out;
    while (auto v = Take(name)) out.push_back(*v);
    return out;
  }
  bool Flag(const std::string& name) {
    auto it = std::find(v_.begin(), v_.end(), name);
    if (it == v_.end()) return false;
    v_.erase(it);
    return true;
  }
  std::string Require(const std::string& name) {
    auto v = Take(name);
    if (!v) throw UsageError(fmt::format("missing required option {}", name));
    return *v;
  }
  // Remaining arguments; unknown options are usage errors.
  std::vector<std::string> Positionals(bool allow_dash = false) const {
    for (const auto& a : v_) {
      if (!allow_dash && a.size() > 1 && a[0] == '-' && a[1] == '-') {
        throw UsageError(fmt::format("unknown option {}", a));
      }
    }
    return v_;
  }

 private:
  std::vector<std::string> v_;
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
