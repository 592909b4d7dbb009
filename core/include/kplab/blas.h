// The BLAS thread count: how many threads one matrix product of the transformer backend may use
// (core/src/embed/transformer.cc; docs/embeddings.md, "BLAS threads").
//
// OpenBLAS keeps a single count for the whole process — numpy's products share it inside Python — so
// kplab never changes it as a side effect of loading or running a model. The program chooses: the
// kplab executable sets 1 at start-up (each of kplab's own scoring threads then runs its products on
// itself; KPLAB_BLAS_THREADS=N chooses N), and the libraries (C++ API, C ABI, Lua and Python modules)
// leave whatever the host process set (OpenBLAS's default: OPENBLAS_NUM_THREADS, else one per core).
//
// Threads: a process-wide setting. Call SetBlasThreads before embedding starts, not while another
// thread is inside a matrix product.
#pragma once

#include "kplab/result.h"

namespace kplab {

// Sets the process's BLAS thread count to `n` (1 <= n <= 1024); a usage error otherwise.
Status SetBlasThreads(int n);

// The process's BLAS thread count now.
int BlasThreads();

}  // namespace kplab
