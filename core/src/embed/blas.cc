// kplab/blas.h over OpenBLAS's process-wide thread count.
#include "kplab/blas.h"

#include <cblas.h>

#include <string>

namespace kplab {

Status SetBlasThreads(int n) {
  if (n < 1 || n > 1024) {
    return Error{"BLAS threads must be between 1 and 1024 (got " + std::to_string(n) + ")", ErrorKind::kUsage};
  }
  openblas_set_num_threads(n);
  return Status::Ok();
}

int BlasThreads() { return openblas_get_num_threads(); }

}  // namespace kplab
