// Real run stores changed behind kplab's back, and every reading command run on them (docs/testing.md,
// "The store fuzzer"). Shared by the libFuzzer harness fuzz_store.cc (random programs of changes) and
// tests/host/store_mutation_test.cc (every column of every table set to every value of a fixed list,
// every row deleted or duplicated, and the kept fuzz findings of tests/fuzz/regressions/store/).
//
// The promise under test (docs/store.md, "Reading a store back"): a store that was changed is read back
// as it was, or refused by name — never a crash, a hang, an out-of-bounds read, or numbers that are not
// the ones the stores hold. Exercise() checks what every reader relies on in each run it is given, and
// that a merge it accepts gives the numbers of the unchanged shards.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace kplab::storefuzz {

// The stores, made once per process by the engine on examples/tiny in a directory of their own:
//   whole.db  runs 1 and 2, whole runs of two systems (exact, rank, rprec);
//   s0.db     run 1, shard 0/2 of the same evaluation;  s1.db  run 1, shard 1/2;
//   ci.db     runs 1 and 2, --ci runs of exact and a plugin with units (pl/unitsx.lua).
// Aborts with a message when they cannot be made (the fixture, not the code under test, is broken).
const std::string& PristineDir();
inline constexpr const char* kStores[] = {"whole.db", "s0.db", "s1.db", "ci.db"};

// One change: SQL run on one of the stores (index into kStores). `loosen` takes the schema's NOT NULL
// and CHECK constraints out first, so that NULLs and any status can be stored.
struct Change {
  int store = 0;
  std::string sql;
  bool loosen = false;
  std::string Describe() const;
};

// Reads fuzzer bytes as up to 8 changes (the layout is in store_mutator.cc).
std::vector<Change> Decode(const std::uint8_t* data, std::size_t size);
// The systematic list: for each store, table, column and the first and last row, every value of the
// fixed list (integers at their limits, reals, texts, blobs, NULL); each row deleted; each row copied
// under another key; every blob cut, grown, zeroed and with one value replaced.
std::vector<std::vector<Change>> Systematic();

// The columns of the pristine stores' run-store tables (PRAGMA table_info; the phrase cache's tables
// aside) that the changes do not reach, as "table.column": empty while Tables() lists the schema, so a
// column added to the store without a place in the mutator is a failing test, not an unfuzzed field.
std::vector<std::string> ColumnsNotMutated();

// Copies the pristine stores into `work` (created or emptied) and applies `changes`; false when SQLite
// refused a statement (the change cannot be made, nothing to test).
bool Apply(const std::string& work, const std::vector<Change>& changes);

// What Exercise saw: reads and commands that succeeded, and that were refused.
struct Outcome {
  int accepted = 0, refused = 0;
};
// Runs what `runs list|show|export|compare|table|docs|merge` run, through RunStore and the engine, on
// the stores in `work` that `changes` touched (compare, table and docs on whole.db and ci.db, merge on
// the shards), and checks every result that succeeds; `fail` is called with a message for each broken
// promise (the fuzzer aborts there, the test records it).
Outcome Exercise(const std::string& work, const std::vector<Change>& changes,
                 const std::function<void(const std::string&)>& fail);

}  // namespace kplab::storefuzz
