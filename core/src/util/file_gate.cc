#include "kplab/file_gate.h"

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <system_error>

namespace kplab {

namespace fs = std::filesystem;

namespace {

thread_local std::shared_ptr<const FileGrants> t_current;
std::atomic<FileGateObserver> g_observer{nullptr};

const std::shared_ptr<const FileGrants>& UserGrants() {
  static const auto user = std::make_shared<const FileGrants>(FileGrants::User());
  return user;
}

std::string Refusal(const FileGrants& g, FileAccess access) {
  if (g.holder == FileGrants::Holder::kPlugin) {
    return access == FileAccess::kWrite
               ? "plugins write no files"
               : "not a file a plugin may read (only the value of one of its string parameters set for the run, "
                 "e.g. --param METRIC.NAME=PATH, read while its prepare runs)";
  }
  return access == FileAccess::kWrite
             ? "outside the directories scripts may write (the current directory and --allow-write DIR)"
             : "outside the directories scripts may read (the current directory, --allow-read DIR and "
               "--allow-write DIR)";
}

bool Allowed(const FileGrants& g, const std::string& resolved, FileAccess access) {
  if (g.holder == FileGrants::Holder::kPlugin) {
    // The files granted, and what lies under a granted directory (a dataset folder, a model snapshot the
    // user named); resolved paths, so a link inside that leads elsewhere is not under it.
    if (access == FileAccess::kWrite) return false;
    return std::any_of(g.read.begin(), g.read.end(), [&](const std::string& f) { return PathWithin(resolved, f); });
  }
  for (const std::string& dir : g.write) {
    if (PathWithin(resolved, dir)) return true;
  }
  if (access == FileAccess::kWrite) return false;
  for (const std::string& dir : g.read) {
    if (PathWithin(resolved, dir)) return true;
  }
  return false;
}

}  // namespace

Result<std::string> ResolvePath(std::string_view path) {
  if (path.find('\0') != std::string_view::npos) return Error::Usage("path contains a NUL byte");
  if (path.empty()) return Error::Usage("empty path");
  std::error_code ec;
  const fs::path abs = fs::absolute(fs::path(path), ec);
  if (ec) return Error::Usage(ec.message());
  const fs::path canonical = fs::weakly_canonical(abs, ec);
  if (ec == std::errc::too_many_symbolic_link_levels) return Error::Usage("symbolic link loop");
  if (ec) return Error::Usage(ec.message());
  return canonical.native();
}

bool PathWithin(std::string_view resolved, std::string_view granted) {
  const fs::path rel = fs::path(resolved).lexically_relative(fs::path(granted));
  return !rel.empty() && *rel.begin() != "..";
}

Status GateFile(std::string_view path, FileAccess access) {
  const std::shared_ptr<const FileGrants> g = CurrentFileGrants();
  bool allowed = true;
  Status status;
  if (g->confined()) {
    const std::string shown(path.substr(0, path.find('\0')));
    Result<std::string> resolved = ResolvePath(path);
    if (!resolved) {
      allowed = false;
      // Relabel on purpose (tests/layout/error_relabels.py): every refusal of the gate is a usage error
      // (file_gate.h), a path it cannot resolve as much as one outside the grants.
      status = Error::Usage(shown + ": " + resolved.error().message);
    } else if (!Allowed(*g, *resolved, access)) {
      allowed = false;
      status = Error::Usage(shown + ": " + Refusal(*g, access));
    }
  }
  if (FileGateObserver observe = g_observer.load()) observe(path, access, allowed);
  return status;
}

std::shared_ptr<const FileGrants> CurrentFileGrants() { return t_current ? t_current : UserGrants(); }

FileScope::FileScope(std::shared_ptr<const FileGrants> grants) {
  if (!grants) return;
  saved_ = std::move(t_current);
  t_current = std::move(grants);
  active_ = true;
}

FileScope::~FileScope() {
  if (active_) t_current = std::move(saved_);
}

UserFileScope::UserFileScope() : FileScope(UserGrants()) {}

void SetFileGateObserver(FileGateObserver observer) { g_observer.store(observer); }

}  // namespace kplab
