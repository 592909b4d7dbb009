// The steps of a run's embedding plan, shared by EvaluateCorpus and `kplab cache phrases` (so the
// phrases printed are the ones a run embeds). Not installed: evaluate.h stays free of the bindings'
// embedding types.
//
// Threads: PreparePlugins uses its LuaVm on the calling thread only; SelectedMetrics and PlanNeeds are pure;
// PlannedPhrases loads the plugins into a Lua VM of its own, on the calling thread.
#pragma once

#include <string>
#include <vector>

#include "kplab/embedding_plan.h"
#include "kplab/corpus.h"
#include "kplab/profile.h"
#include "kplab/result.h"
#include "plugin.h"
#include "sandbox.h"

namespace kplab::host {

struct EvalRequest;  // evaluate.h (which includes nothing of this file's, so the units stay acyclic)

// The metric names a request selects: its list, or kDefaultMetrics when it names none. A name listed
// twice is a usage error.
Result<std::vector<std::string>> SelectedMetrics(const EvalRequest& request);

// What a run does with freshly loaded plugins before planning: check(params, profile), then
// needs(profile, params) for those whose needs is a function.
Status PreparePlugins(LuaVm& vm, std::vector<MetricPlugin>& plugins, const Profile& profile);

// The plan for prepared plugins: the forms their needs declare and whether the index is loaded.
// Returns false when no plugin needs embeddings (the run plans nothing).
bool PlanNeeds(const std::vector<MetricPlugin>& plugins, PlanRequest& plan);

// The distinct strings a run of this request on this corpus would embed, found by the run's own steps
// (SelectedMetrics, LoadMetrics, PreparePlugins, PlanNeeds, CollectPhrases) without a model or cache.
// Empty when no selected metric needs embeddings. `kplab cache phrases` prints it.
Result<PhrasePlan> PlannedPhrases(const Corpus& corpus, const EvalRequest& request);

}  // namespace kplab::host
