// Between kplab/blas.h (the thread count a program chooses) and transformer.cc (which opens OpenBLAS on
// first use, design note "OpenBLAS is opened on first use"): the count can be chosen before the library
// is loaded, and is applied when it is.
#pragma once

#include <string>

namespace kplab::blas_internal {

using SetThreads = void (*)(int);
using GetThreads = int (*)();

// Loads OpenBLAS once (thread-safe; transformer.cc); an error message if it cannot be, else empty.
const std::string& OpenBlas();

// Called by OpenBlas() once, with the library's own functions: applies the count SetBlasThreads chose
// before, if any (blas.cc).
void Loaded(SetThreads set, GetThreads get);

}  // namespace kplab::blas_internal
