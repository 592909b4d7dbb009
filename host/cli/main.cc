#include <charconv>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include "cli.h"
#include "cli_args.h"
#include "exit_code.h"
#include "kplab/blas.h"
#include "kplab/io.h"

#ifdef KPLAB_WITH_MIMALLOC
#include <mimalloc.h>

#include <cstring>
#endif

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

#ifdef KPLAB_WITH_MIMALLOC
namespace {

// mimalloc takes its memory from the system in 2 MiB pages (transparent huge pages, asked for with
// madvise) when its option large_os_pages is on, and commits a thread's first segment up front when
// eager_commit_delay is 0 (with the default 1, a second thread's memory is committed in small pieces,
// which 2 MiB pages cannot back). A fresh 4 KiB page costs a page fault, and on the virtual machines
// kplab is measured on a fault costs microseconds: `kplab eval --metrics exact` on KP20k took 10,600-
// 11,000 of them with mimalloc's defaults and ~780 with these options, and 410-430 ms of CPU against
// 256-261 ms (perf stat -r 5; docs/design-notes.md, note 47). mimalloc reads its options once, as it
// starts, before main; a function of .preinit_array runs before any library's initializer, and
// mi_option_set only stores the value (no allocation, nothing of mimalloc's that needs starting). The
// MIMALLOC_* variables in the environment (envp: libc has not set environ yet) still decide.
void MimallocOptions(int, char**, char** envp) {
  bool large = true, delay = true;
  for (char** e = envp; e != nullptr && *e != nullptr; ++e) {
    large = large && std::strncmp(*e, "MIMALLOC_LARGE_OS_PAGES=", 24) != 0;
    delay = delay && std::strncmp(*e, "MIMALLOC_EAGER_COMMIT_DELAY=", 28) != 0;
  }
  if (large) mi_option_enable(mi_option_large_os_pages);
  if (delay) mi_option_set(mi_option_eager_commit_delay, 0);
}

__attribute__((section(".preinit_array"), used)) void (*const kMimallocOptions)(int, char**, char**) = MimallocOptions;

}  // namespace
#endif


// The kplab executable runs each matrix product of the transformer backend on the scoring thread that
// asked for it: OpenBLAS gets 1 thread unless KPLAB_BLAS_THREADS names another count (kplab/blas.h;
// docs/embeddings.md, "BLAS threads"). The libraries leave the count to their host program.
int main(int argc, char** argv) {
  int blas_threads = 1;
  if (const char* env = std::getenv("KPLAB_BLAS_THREADS"); env != nullptr) {
    const char* end = env + std::strlen(env);
    auto [ptr, ec] = std::from_chars(env, end, blas_threads);
    if (ec != std::errc() || ptr != end || blas_threads < 1 || blas_threads > 1024) {
      kplab::host::ReportError(std::string("KPLAB_BLAS_THREADS='") + env +
                               "': expected a whole number of threads from 1 to 1024");
      return kplab::host::kExitUsage;
    }
  }
  if (kplab::Status s = kplab::SetBlasThreads(blas_threads); !s.ok()) {
    kplab::host::ReportError(s.error().message);
    return kplab::host::kExitUsage;
  }
  // The executable is its own process: the importers map large files rather than copy them, and take
  // SIGBUS over for a file cut shorter meanwhile (kplab/io.h, SetMappedFileReads; design note 66).
  kplab::SetMappedFileReads(true);
  return kplab::host::Main(argc, argv);
}
