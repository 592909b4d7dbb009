#include <charconv>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <new>

#include "cli.h"
#include "exit_code.h"
#include "kplab/blas.h"

// Out of memory must be std::bad_alloc (a clear error and a failed run: host/lua/lua_util.h, Safe), never
// an abort. Debian's mimalloc (linked into this executable only, host/CMakeLists.txt) is built as C:
// its operator new calls abort() when an allocation fails and it finds no new-handler, and the
// new-handler it finds is its own stub, not libstdc++'s. The executable's own operator new comes first
// in symbol lookup, so these replace it: malloc is still mimalloc's (or glibc's without it), and every
// operator delete (mimalloc's or libstdc++'s) frees malloc'ed memory, so the pairs stay compatible.
namespace {

void* Allocate(std::size_t n, std::size_t align) {
  if (n == 0) n = 1;
  while (true) {
    void* p = align <= alignof(std::max_align_t)
                  ? std::malloc(n)
                  : std::aligned_alloc(align, (n + align - 1) / align * align);
    if (p != nullptr) return p;
    std::new_handler handler = std::get_new_handler();
    if (handler == nullptr) throw std::bad_alloc();
    handler();
  }
}

}  // namespace

void* operator new(std::size_t n) { return Allocate(n, 0); }
void* operator new[](std::size_t n) { return Allocate(n, 0); }
void* operator new(std::size_t n, std::align_val_t a) { return Allocate(n, static_cast<std::size_t>(a)); }
void* operator new[](std::size_t n, std::align_val_t a) { return Allocate(n, static_cast<std::size_t>(a)); }

// The kplab executable runs each matrix product of the transformer backend on the scoring thread that
// asked for it: OpenBLAS gets 1 thread unless KPLAB_BLAS_THREADS names another count (kplab/blas.h;
// docs/embeddings.md, "BLAS threads"). The libraries leave the count to their host program.
int main(int argc, char** argv) {
  int blas_threads = 1;
  if (const char* env = std::getenv("KPLAB_BLAS_THREADS"); env != nullptr) {
    const char* end = env + std::strlen(env);
    auto [ptr, ec] = std::from_chars(env, end, blas_threads);
    if (ec != std::errc() || ptr != end || blas_threads < 1 || blas_threads > 1024) {
      std::cerr << "kplab: KPLAB_BLAS_THREADS='" << env << "': expected a whole number of threads from 1 to 1024\n";
      return kplab::host::kExitUsage;
    }
  }
  if (kplab::Status s = kplab::SetBlasThreads(blas_threads); !s.ok()) {
    std::cerr << "kplab: " << s.error().message << "\n";
    return kplab::host::kExitUsage;
  }
  return kplab::host::Main(argc, argv);
}
