// How many lanes (threads, each scoring a contiguous share of the documents) a metric is scored on: as
// many as its expected work pays for, up to the run's thread count (docs/cli.md, `--threads`;
// docs/design-notes.md, "Lanes per metric by expected work"). The choice changes no number: a run's
// values are the same bits on any number of lanes (docs/plugins.md, "What a plugin may keep").
//
// Threads: pure functions of their arguments.
#pragma once

#include <cstddef>
#include <string>

#include "plugin.h"

namespace kplab::host {

// The expected CPU time of scoring one document with `plugin`, in nanoseconds, as measured on KP20k on
// one thread (bench/README.md, "The least-work yardstick"): a native kernel's own figure, and for a
// plugin scored in Lua (or a kernel without a measured figure) that of the Lua reference plugins.
double ScoringCostPerDocumentNs(const MetricPlugin& plugin);

// The expected work a lane must take over to pay for itself (docs/design-notes.md, "Lanes per metric by
// expected work" and "A native kernel's lane pays from 2 ms"). A lane of a native kernel with a measured
// cost is a thread and its first allocations, and runs no Lua: ~0.2-0.3 ms of CPU and ~0.5 ms before it
// starts scoring. A lane of a plugin scored in Lua (or of a kernel without a measured cost) also makes a
// Lua state, loads the plugins into it and runs columns(c, params) and prepare there. Asking a kernel's
// lane for 2 ms, and a Lua lane for 6 ms, keeps the extra CPU of a second lane within about a third of
// what it shortens the wall time by.
inline constexpr double kKernelLaneWorkNs = 2e6;
inline constexpr double kLuaLaneWorkNs = 6e6;

// kKernelLaneWorkNs for a native kernel whose cost ScoringCostPerDocumentNs has measured, else
// kLuaLaneWorkNs.
double LaneWorkNs(const MetricPlugin& plugin);

// The lanes `plugin` scores `n_docs` documents on: floor(n_docs x ScoringCostPerDocumentNs / LaneWorkNs),
// at least 1 and at most min(max_lanes, n_docs) (max_lanes 0 counts as 1).
std::size_t LanesFor(const MetricPlugin& plugin, std::size_t n_docs, std::size_t max_lanes);

// KPLAB_LANES: "" or "auto" (LanesFor's choice) or "max" (every metric on min(threads, documents) lanes,
// the way to check that a plugin's numbers do not depend on the lanes). Returns false for anything else.
bool ParseLanesSetting(const std::string& value, bool& by_cost);

}  // namespace kplab::host
