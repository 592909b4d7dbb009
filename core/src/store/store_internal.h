// Shared by the run store and the phrase cache, which live in the same SQLite file.
#pragma once

#include <string>

#include <SQLiteCpp/Database.h>

#include "kplab/result.h"

namespace kplab::store_internal {

// Sets the connection up (busy timeout, WAL, foreign keys) and migrates the schema to the current
// version; returns that version. Errors name the path.
Result<int> PrepareDatabase(SQLite::Database& db, const std::string& path);

// The current time as ISO 8601 UTC ("2026-11-22T10:00:00Z").
std::string NowIsoUtc();

// The name to give SQLite for a file path. Debian's SQLite reads a name that starts with "file:" as a
// URI even without SQLITE_OPEN_URI, so "file:/elsewhere/x.db" would open a file the gate never saw
// (the gate resolves it as ./file:/elsewhere/x.db): such a path is made explicitly relative.
inline std::string SqliteFileName(const std::string& path) {
  return path.rfind("file:", 0) == 0 ? "./" + path : path;
}

}  // namespace kplab::store_internal
