// FileBytes: a file read into memory, or mapped in place with a SIGBUS guard (design note 66).
#include "io/file_bytes.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <mutex>

#include "io/io_internal.h"
#include "kplab/io.h"

namespace kplab {
namespace io_internal {
namespace {

// The regions of the files mapped now, for the signal handler: it reads them without a lock, so a slot
// is claimed by its begin (0: free; kClaiming: being filled, matching no address) and its end is written
// before its begin is. The handler reads begin, end, then begin again, and trusts the pair only if begin
// did not change in between (a slot freed and claimed again meanwhile).
constexpr int kSlots = 64;
constexpr std::uintptr_t kClaiming = UINTPTR_MAX;
struct GuardSlot {
  std::atomic<std::uintptr_t> begin{0}, end{0};  // the file's pages (not the page of zeros after them)
  std::atomic<bool> cut{false};                  // a read past the file's end was given zeros
};
GuardSlot g_slots[kSlots];

std::atomic<bool> g_enabled{false};
std::mutex g_install_mutex;
// The handler ours passes other faults to: written once, under the mutex, before ours is installed, and
// never again (a handler that replaced ours is not put behind it: see InstallGuard).
struct sigaction g_previous {};
bool g_installed = false;  // under the mutex

std::uintptr_t PageSize() {
  static const std::uintptr_t size = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  return size;
}

// SIGBUS: a read of a mapped file's page past its end (the file was cut shorter). The pages from the
// faulting one to the region's end become zeros (an anonymous mapping in their place) and the read is
// done again. mmap is a plain system call here (no lock of the C library's is taken). Any other SIGBUS
// goes to the handler found when ours was installed, or kills the process as it would have.
void OnBus(int sig, siginfo_t* info, void* context) {
  const auto addr = reinterpret_cast<std::uintptr_t>(info->si_addr);
  // A fault's code is positive; a signal sent by kill or raise has no address to look up.
  for (GuardSlot& s : g_slots) {
    if (info->si_code <= 0) break;
    const std::uintptr_t begin = s.begin.load(std::memory_order_acquire);
    if (begin == 0 || begin == kClaiming || addr < begin) continue;
    const std::uintptr_t end = s.end.load(std::memory_order_acquire);
    if (addr >= end || s.begin.load(std::memory_order_acquire) != begin) continue;
    const std::uintptr_t page = addr & ~(PageSize() - 1);
    void* const at = reinterpret_cast<void*>(page);
    // file-gate: anonymous memory, no file
    void* zeros = ::mmap(at, end - page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    if (zeros != MAP_FAILED) {
      s.cut.store(true, std::memory_order_release);
      return;
    }
    break;
  }
  const struct sigaction& prev = g_previous;
  if ((prev.sa_flags & SA_SIGINFO) != 0 && prev.sa_sigaction != nullptr) {
    prev.sa_sigaction(sig, info, context);
    return;
  }
  if (prev.sa_handler != SIG_DFL && prev.sa_handler != SIG_IGN && prev.sa_handler != nullptr) {
    prev.sa_handler(sig);
    return;
  }
  // Ignored, as the process had it: a signal sent stays ignored. A fault cannot be ignored (the kernel
  // would kill the process on the read done again), nor can the default action be taken from here but by
  // putting it back: the read done again then ends the process as it would have without ours.
  if (prev.sa_handler == SIG_IGN && info->si_code <= 0) return;
  ::signal(SIGBUS, SIG_DFL);
  if (info->si_code <= 0) ::raise(SIGBUS);
}

// Ours in front, chaining to whatever was there, the first time. When another handler has since taken
// ours's place (a host that installs its own, such as Python's faulthandler), ours is not put back in
// front of it: that handler may chain to ours, and ours to it, for ever. Files are then read, not mapped.
bool InstallGuard() {
  std::lock_guard<std::mutex> lock(g_install_mutex);
  struct sigaction now {};
  if (::sigaction(SIGBUS, nullptr, &now) != 0) return false;
  if ((now.sa_flags & SA_SIGINFO) != 0 && now.sa_sigaction == OnBus) return true;
  if (g_installed) return false;
  struct sigaction ours {};
  ours.sa_sigaction = OnBus;
  ours.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
  sigemptyset(&ours.sa_mask);
  g_previous = now;
  if (::sigaction(SIGBUS, &ours, nullptr) != 0) return false;
  g_installed = true;
  return true;
}

int ClaimSlot(std::uintptr_t begin, std::uintptr_t end) {
  for (int i = 0; i < kSlots; ++i) {
    std::uintptr_t free_slot = 0;
    // Claimed with a placeholder begin the handler never matches (kClaiming), so the end is in place
    // before the real begin makes the slot live.
    if (g_slots[i].begin.compare_exchange_strong(free_slot, kClaiming, std::memory_order_acq_rel)) {
      g_slots[i].cut.store(false, std::memory_order_relaxed);
      g_slots[i].end.store(end, std::memory_order_release);
      g_slots[i].begin.store(begin, std::memory_order_release);
      return i;
    }
  }
  return -1;
}

}  // namespace

Result<std::shared_ptr<const FileBytes>> FileBytes::Open(const std::string& path, std::string_view expected) {
  Result<OpenedFile> opened = OpenRegularFile(path, expected);
  if (!opened) return opened.error();
  std::shared_ptr<FileBytes> out(new FileBytes());
  const auto size = static_cast<std::size_t>(opened->st.st_size);
  if (g_enabled.load(std::memory_order_relaxed) && size >= kMinMapped && InstallGuard()) {
    const std::uintptr_t page = PageSize();
    const std::size_t file_pages = (size + page - 1) / page * page;
    // The region first (the file's pages and a page of zeros), then the file over its start.
    // file-gate: anonymous memory, no file
    void* region = ::mmap(nullptr, file_pages + page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    const bool placed = region != MAP_FAILED &&
                        // file-gate: the descriptor OpenRegularFile opened behind the gate
                        ::mmap(region, size, PROT_READ, MAP_PRIVATE | MAP_FIXED, opened->fd, 0) != MAP_FAILED;
    if (placed) {
      const auto begin = reinterpret_cast<std::uintptr_t>(region);
      const int slot = ClaimSlot(begin, begin + file_pages);
      if (slot >= 0) {
        out->fd_ = opened->fd;
        out->at_open_ = opened->st;
        out->base_ = region;
        out->region_ = file_pages + page;
        out->slot_ = slot;
        out->view_ = std::string_view(static_cast<const char*>(region), size);
        return std::shared_ptr<const FileBytes>(std::move(out));
      }
    }
    if (region != MAP_FAILED) ::munmap(region, file_pages + page);
  }
  Result<std::string> read = ReadOpenedFile(*opened, path, expected);
  if (!read) return read.error();
  out->read_ = std::move(*read);
  out->view_ = out->read_;
  return std::shared_ptr<const FileBytes>(std::move(out));
}

FileBytes::~FileBytes() {
  if (base_ == nullptr) return;
  // Out of the handler's sight first, then unmapped.
  g_slots[slot_].begin.store(0, std::memory_order_release);
  ::munmap(base_, region_);
  ::close(fd_);
}

bool FileBytes::Changed() const {
  if (base_ == nullptr) return false;
  if (g_slots[slot_].cut.load(std::memory_order_acquire)) return true;
  struct stat now {};
  if (::fstat(fd_, &now) != 0) return true;
  // The change time too: a writer may set the modification time back (touch -r, rsync -t --inplace),
  // but not that one, which every write and every change of the status moves.
  auto same = [](const struct timespec& a, const struct timespec& b) {
    return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec;
  };
  return now.st_size != at_open_.st_size || !same(now.st_mtim, at_open_.st_mtim) ||
         !same(now.st_ctim, at_open_.st_ctim);
}

}  // namespace io_internal

void SetMappedFileReads(bool on) { io_internal::g_enabled.store(on, std::memory_order_relaxed); }
bool MappedFileReads() { return io_internal::g_enabled.load(std::memory_order_relaxed); }

}  // namespace kplab
