// Headless Chromium for the tests that render SVG figures (Debian package chromium, installed by
// scripts/test.sh, the README's test command).
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>

namespace kplab::test {

// The chromium executable on PATH, or "".
inline std::string FindChromium() {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    if (dir.empty()) continue;
    const std::filesystem::path p = std::filesystem::path(dir) / "chromium";
    if (::access(p.c_str(), X_OK) == 0 && std::filesystem::is_regular_file(p)) return p.string();
  }
  return "";
}

inline constexpr const char* kChromiumMissing =
    "chromium is not installed (no `chromium` on PATH); the SVG figures are rendered in headless Chromium. "
    "Run scripts/test.sh, or `apt-get install chromium` (Debian package chromium).";

// The shell command that prints the DOM Chromium builds from `file` (a browser profile in profile_dir).
inline std::string DumpDomCommand(const std::string& chromium, const std::filesystem::path& profile_dir,
                                  const std::filesystem::path& file) {
  return "timeout 60 " + chromium + " --headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run" +
         " --user-data-dir=" + profile_dir.string() + " --dump-dom file://" + file.string();
}

}  // namespace kplab::test
