// kplab/blas.h over OpenBLAS's process-wide thread count. OpenBLAS is opened on first use
// (transformer.cc), so a count chosen before that is kept here and applied when the library loads.
#include "kplab/blas.h"

#include <atomic>
#include <mutex>
#include <string>

#include "embed/blas_internal.h"

namespace kplab {
namespace {

std::mutex g_mu;
int g_wanted = 0;  // 0: no choice made, OpenBLAS's own default stands
blas_internal::SetThreads g_set = nullptr;
blas_internal::GetThreads g_get = nullptr;

}  // namespace

void blas_internal::Loaded(SetThreads set, GetThreads get) {
  std::lock_guard lock(g_mu);
  g_set = set;
  g_get = get;
  if (g_wanted > 0) g_set(g_wanted);
}

Status SetBlasThreads(int n) {
  if (n < 1 || n > 1024) {
    return Error::Usage("BLAS threads must be between 1 and 1024 (got " + std::to_string(n) + ")");
  }
  std::lock_guard lock(g_mu);
  g_wanted = n;
  if (g_set != nullptr) g_set(n);  // not loaded yet: applied by Loaded
  return Status::Ok();
}

int BlasThreads() {
  {
    std::lock_guard lock(g_mu);
    if (g_get != nullptr) return g_get();
    if (g_wanted > 0) return g_wanted;
  }
  // Asked before anything chose a count or loaded a model: the library's own default, which needs it.
  if (!blas_internal::OpenBlas().empty()) return 1;
  std::lock_guard lock(g_mu);
  return g_get != nullptr ? g_get() : 1;
}

}  // namespace kplab
