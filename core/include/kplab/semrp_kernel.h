// The native kernel of plugins/semrp.lua (score = kp.kernel.semrp): SemR-p and its Div, adaptive-k,
// density-k and extra-k variants over the run's embedding space, with the plugin's arithmetic in the same
// order, so the numbers are its Lua score's bit for bit (tests/host/kernel_test.cc).
//
// Threads: the kernel is read-only while it scores (kplab/kernels.h): one kernel, over one read-only
// EmbeddingSpace, is shared by all scoring threads.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kplab/embedding_plan.h"
#include "kplab/kernels.h"

namespace kplab {

struct SemrpParams {
  int k = 3;
  bool clamp = false;
  double alpha = 0.5;
  std::vector<int> ks;  // extra k values (semrp_k<j> columns)
  // Repeated predictions (same stem key) before the top-R cut: "profile" as the corpus was built
  // (kplab, kpeval...: dropped, first wins; semrp-standalone: kept), "true" dropped, "false" kept, each
  // repeat taking a rank as in the authors' code. References stay as the profile built them.
  std::string dedup = "profile";
};

std::unique_ptr<MetricKernel> MakeSemrpKernel(std::shared_ptr<const EmbeddingSpace> space, const SemrpParams& params,
                                              const Profile& profile);

}  // namespace kplab
