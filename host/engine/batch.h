// Many evaluations in one command (`kplab eval --predictions 'outputs/*/seed*.txt'` or `--manifest
// FILE`): every dataset is imported once, each predictions file is scored against it and becomes one run.
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

// Evaluates every entry with `base` (its dataset options, profile, metrics, params, ...), the entry
// giving the dataset, predictions, system, seed and profile. Each distinct (dataset, profile) is imported
// once. `done(i, result)` is called for every entry in order, with the run's result or its error (an
// entry's error does not stop the others); `before(i)` before entry i starts (a progress bar).
void EvaluateBatch(const EvalRequest& base, const std::vector<ManifestEntry>& entries,
                   const std::function<void(std::size_t, const Result<EvalResult>&)>& done,
                   const std::function<void(std::size_t)>& before = {});

}  // namespace kplab::host
