// Shared by the run store and the phrase cache, which live in the same SQLite file.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <SQLiteCpp/Column.h>
#include <SQLiteCpp/Database.h>

#include "kplab/result.h"
#include "kplab/sha256.h"

namespace kplab::store_internal {

// Sets the connection up (busy timeout, WAL, foreign keys) and migrates the schema to the current
// version; returns that version. Errors name the path.
Result<int> PrepareDatabase(SQLite::Database& db, const std::string& path);

// The digest of a run's slots (runs.slots_digest, schema version 6, docs/store.md): SHA-256, in hex, over
// the run's run_slots rows in key order (plugin_idx, subset, slot), each row's seven values (plugin_idx,
// subset, slot, name, hidden, n, values_f64le) as their SQLite type and bytes. SaveRun writes it with the
// slots, the migration to version 6 computes it for the runs already stored, and the read-back compares
// it with the rows it reads. The consistency checks cannot see a hidden slot changed where everything it
// enters is 0 (a recall denominator zeroed in a shard without absent hits: 0/2 and 0/0 aggregate
// alike); the digest does. A checksum against changes made behind kplab's back, not a signature: whoever
// rewrites the rows can rewrite it.
//
// Threads: one SlotsDigest per thread.
class SlotsDigest {
 public:
  void Int(int64_t v);
  void Real(double v);
  void Text(std::string_view s);
  void Blob(std::string_view b);
  void Null();
  // A stored value of any type, as SQLite returns it.
  void Column(const SQLite::Column& c);
  std::string FinishHex() { return sha_.FinishHex(); }

 private:
  void Tagged(char type, std::string_view bytes);
  Sha256 sha_;
};

// A run's run_slots rows as the digest covers them (bind the run id): the read-back and the migration
// read them with this one query, SaveRun digests what it writes in the same order and columns.
inline constexpr const char* kSlotRowsSql =
    "SELECT plugin_idx, subset, slot, name, hidden, n, values_f64le FROM run_slots "
    "WHERE run_id = ? ORDER BY plugin_idx, subset, slot";
inline constexpr int kSlotRowColumns = 7;

// The length of a digest in hex.
inline constexpr std::size_t kSlotsDigestHexLength = 64;

// The current time as ISO 8601 UTC ("2026-11-22T10:00:00Z").
std::string NowIsoUtc();

// "YYYY-MM-DDTHH:MM:SS[.fff]Z", the only form SaveRun writes and the read-back accepts: ListRuns orders
// by this text, which is only chronological in this form.
bool IsIsoUtc(std::string_view s);

// Regular files only (docs/store.md, "Store paths"). A store path names a regular file or nothing (a
// new store), symbolic links followed; so do the side files SQLite opens beside it (PATH-wal, PATH-shm,
// PATH-journal, beside both the path and the file its links resolve to). Anything else is refused
// with the importers' message before SQLite opens it, because SQLite would block on a FIFO for ever
// or read a device: "PATH: a FIFO, not a regular file (expected a kplab database)". ":memory:" and ""
// pass. The check and the open are two steps: a file swapped for a FIFO between them is not caught.
Status CheckStorePath(const std::string& path);

// The one way kplab opens a store file (RunStore and PhraseCache, every connection): GateFile (read for
// SQLite::OPEN_READONLY, write otherwise: the caller's grants), CheckStorePath, then SQLite is given a "file:" URI naming exactly `path` (percent-encoded, SQLITE_OPEN_URI added to
// `flags`) with `query` ("?mode=ro", ...), so that a path is never read as a URI of its own
// ("file:x?mode=memory" is a file of that name). A refused path is the returned Error; SQLite's own
// failures are thrown as SQLite::Exception, as SQLiteCpp does.
// file-gate: a declaration; the definition calls GateFile first
Result<SQLite::Database> OpenSqlite(const std::string& path, int flags, std::string_view query = "");

}  // namespace kplab::store_internal
