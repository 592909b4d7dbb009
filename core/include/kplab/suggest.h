// "Did you mean" for names a user types: options, fields, profiles, metrics, aggregates. One rule for
// every message, so a misspelt name gets the same help wherever it is typed.
//
// Threads: no shared state: pure functions, safe from several threads at once.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kplab {

// The candidate nearest to `name` by edit distance (insertions, deletions, substitutions and swaps of
// two neighbouring characters, each costing 1; ASCII case ignored), when it is close enough to be the
// name meant: at most 1 edit for names of up to 4 characters, 2 up to 8, else a quarter of the length
// (a prefix of a long candidate, 'all.f1@5.macro' for 'all.f1@5.macro_hm', also counts). Ties go to the
// earlier candidate. "" when none is close or `name` is itself a candidate.
std::string NearestName(std::string_view name, const std::vector<std::string>& candidates);

// "did you mean 'X'? " (to open a parenthesis of expected values), or "" when NearestName finds none.
std::string DidYouMean(std::string_view name, const std::vector<std::string>& candidates);

// "a, b, c": the names joined for "expected one of: ..." messages.
std::string JoinNames(const std::vector<std::string>& names);

}  // namespace kplab
