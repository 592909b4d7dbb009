// The one gate for files. Every path kplab opens — from the command line, a script, a plugin parameter,
// an option, a manifest or an environment variable — is checked by GateFile, inside the function that
// opens it, against the grants of the context the path came from:
//   - the user (the command line, the library entry points, kplab's own configuration: the model
//     registry, the plugin directories, the default store): everything;
//   - a script (`kplab run`, the REPL): its FileGrants (the current directory, --allow-read DIR,
//     --allow-write DIR, the store $KPLAB_DB names; docs/scripts.md);
//   - a plugin: nothing, except while its prepare runs the files the user set as its string parameters
//     (and that the context which set them could read itself; docs/plugins.md).
// The context is the thread's innermost FileScope; a thread with none acts for the user. A file the
// context may not read is never opened, so no error can quote it. Worker threads and lazy loads carry
// the context of the code that started them (CurrentFileGrants + FileScope).
// tests/layout/file_gate.py checks that every open in core/ and host/ sits behind a call of this gate.
//
// Threads: the file context is per thread (a FileScope acts for the thread that made it); the test hook
// SetGateObserver is not thread-safe.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kplab/result.h"

namespace kplab {

enum class FileAccess { kRead, kWrite };

struct FileGrants {
  enum class Holder { kUser, kScript, kPlugin };
  // A default-made FileGrants grants nothing: everything must be granted on purpose.
  Holder holder = Holder::kScript;
  // Canonical absolute paths (ResolvePath) of directories or single files; a path is granted when it
  // resolves to one of them or to something under it. Writing is allowed under `write`, reading under
  // both. Ignored for the user.
  std::vector<std::string> read, write;

  static FileGrants User() { return FileGrants{.holder = Holder::kUser, .read = {}, .write = {}}; }
  static FileGrants Script() { return FileGrants{.holder = Holder::kScript, .read = {}, .write = {}}; }
  // A plugin that may read these (resolved) files, and what lies under those that are directories (a
  // dataset folder or a model snapshot the user named as a parameter).
  static FileGrants Plugin(std::vector<std::string> files = {}) {
    return FileGrants{.holder = Holder::kPlugin, .read = std::move(files), .write = {}};
  }
  bool confined() const { return holder != Holder::kUser; }
};

// What the path names now: absolute, symbolic links resolved as far as the path exists
// (weakly_canonical), "." and ".." removed. Errors: "path contains a NUL byte", "empty path",
// "symbolic link loop", or the system's message.
Result<std::string> ResolvePath(std::string_view path);

// Whether the resolved path is `granted` or lies under it.
bool PathWithin(std::string_view resolved, std::string_view granted);

// The gate. Ok when the thread's current context may open `path` for `access`; else "PATH: outside the
// directories scripts may read (the current directory, --allow-read DIR and --allow-write DIR)", "PATH:
// outside the directories scripts may write (...)", "PATH: not a file a plugin may read (...)" or
// "PATH: path contains a NUL byte" (PATH cut at a NUL byte), with ErrorKind::kUsage. The user's context
// checks nothing (each opener reports a bad name itself).
Status GateFile(std::string_view path, FileAccess access);

// The thread's current context (never null): the innermost FileScope's grants, else the user's.
std::shared_ptr<const FileGrants> CurrentFileGrants();

// Makes `grants` the thread's context until destroyed (scopes nest; a null pointer keeps the current
// one). Not movable: the scope is a stack frame.
class FileScope {
 public:
  explicit FileScope(std::shared_ptr<const FileGrants> grants);
  ~FileScope();
  FileScope(const FileScope&) = delete;
  FileScope& operator=(const FileScope&) = delete;

 private:
  std::shared_ptr<const FileGrants> saved_;
  bool active_ = false;
};

// A path kplab takes from the user's own configuration (the model registry, the plugin directories
// of the installation and $KPLAB_PLUGIN_PATH, the default store as phrase cache) is opened in the
// user's context whoever asked for it: a script names a model or a metric, never where it lives.
// Every use is listed in tests/layout/file_gate.py with its reason.
class UserFileScope : public FileScope {
 public:
  UserFileScope();
};

// For tests: called with every decision of GateFile (path as given). Null to stop. Not thread-safe to
// change while files are being opened.
using FileGateObserver = void (*)(std::string_view path, FileAccess access, bool allowed);
void SetFileGateObserver(FileGateObserver observer);

}  // namespace kplab
