// Many evaluations in one command (`kplab eval --predictions 'outputs/*/seed*.txt'` or `--manifest
// FILE`): every dataset is imported once, each predictions file is scored against it and becomes one run.
//
// Threads: the calling thread hands each finished run to `done`, in order; the workers that score the entries
// are the batch's own threads, joined before it returns.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "evaluate.h"
#include "kplab/io.h"
#include "kplab/result.h"

namespace kplab::host {

// Expands a --predictions pattern with shell wildcards (*, ?, [...], {a,b}; glob(3), sorted) into one entry per
// regular file for `dataset_path`. A pattern without wildcards is the one file. Nothing matching is a
// usage error naming the pattern.
Result<std::vector<ManifestEntry>> ExpandPredictions(const std::string& dataset_path, const std::string& pattern);

// True when a --predictions value holds a wildcard (then `kplab eval` runs a batch).
bool HasWildcard(const std::string& pattern);

// The most entries EvaluateBatch evaluates at once (`kplab eval --jobs`).
inline constexpr int kMaxJobs = 256;

// Evaluates every entry with `base` (its dataset options, profile, metrics, params, ...), the entry
// giving the dataset, predictions, system, seed and profile. Each distinct dataset is imported once.
// `done(i, result)` is called for every entry in order, with the run's result or its error (an
// entry's error does not stop the others); `before(i)` when entry i starts (a progress bar).
//
// `jobs` entries are evaluated at once, each on a thread of its own (1: one after the other, on the
// calling thread, as before --jobs existed). Whatever `jobs`, `done` runs on the calling thread, for
// i = 0, 1, 2, ... in order, never concurrently: a caller that stores runs in `done` writes through
// one RunStore on one thread (RunStore is not thread-safe), and run ids, rows and messages come out in
// the order a serial batch gives. An entry's result does not depend on `jobs` (EvaluateCorpus does
// not depend on which thread runs it; each run keeps its own lanes, `base.threads`). With jobs > 1,
// `before` is called from the worker threads, one call at a time, in the order entries start; at most
// 2 * jobs finished results wait for `done` at any time. An exception thrown while evaluating entry i
// (out of memory) is rethrown on the calling thread in entry i's turn, after done(0..i-1), as the
// serial loop would; the workers still running are joined first. jobs must be in [1, kMaxJobs].
void EvaluateBatch(const EvalRequest& base, const std::vector<ManifestEntry>& entries,
                   const std::function<void(std::size_t, const Result<EvalResult>&)>& done,
                   const std::function<void(std::size_t)>& before = {}, int jobs = 1);

}  // namespace kplab::host
