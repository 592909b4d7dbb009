// A run's slot columns of half a million documents and more are kept off 2 MiB pages (runner.h,
// docs/design-notes.md note 75). The range advised is the whole 2 MiB pages inside the array, worked
// out by hand; and the advice is really on the memory: /proc/self/smaps lists the mapping that holds
// them with VmFlags "nh" (MADV_NOHUGEPAGE), for a region of our own and for a run's column of a million
// documents (NewSlotColumn, which AllocateSlots makes every column with), while an array under the
// threshold is left as it was.
#include <gtest/gtest.h>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include <cmath>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "runner.h"

namespace kplab::host {
namespace {

constexpr std::uintptr_t kMiB = 1 << 20;

TEST(SlotPages, WholeHugePagesInsideTheArrayByHand) {
  // 2 MiB pages start at multiples of 0x200000.
  EXPECT_EQ(WholeHugePages(0x200000, 4 * kMiB), (std::pair<std::uintptr_t, std::uintptr_t>{0x200000, 0x600000}));
  // Not aligned: from the next page boundary up to the last boundary inside [at, at + bytes).
  EXPECT_EQ(WholeHugePages(0x200010, 4 * kMiB), (std::pair<std::uintptr_t, std::uintptr_t>{0x400000, 0x600000}));
  EXPECT_EQ(WholeHugePages(0x3FFFF8, 8 * kMiB), (std::pair<std::uintptr_t, std::uintptr_t>{0x400000, 0xA00000}));
  // No whole page inside: empty.
  EXPECT_EQ(WholeHugePages(0x200010, 2 * kMiB), (std::pair<std::uintptr_t, std::uintptr_t>{0x200010, 0x200010}));
  EXPECT_EQ(WholeHugePages(0x200000, 2 * kMiB - 8), (std::pair<std::uintptr_t, std::uintptr_t>{0x200000, 0x200000}));
  EXPECT_EQ(kSmallPagesFrom, 4 * kMiB);
  // A run of no documents: an empty column (no address to advise), and no advice asked for null.
  EXPECT_TRUE(NewSlotColumn(0).empty());
  AdviseSmallPages(nullptr, 0);
  AdviseSmallPages(nullptr, 64 * kMiB);  // advice on no mapping: madvise fails, nothing to act on
}

#if defined(__linux__)
// The VmFlags of the mapping that holds `at` (empty when /proc/self/smaps does not list it).
std::string VmFlagsAt(std::uintptr_t at) {
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    std::uintptr_t lo = 0, hi = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> lo >> dash >> hi && dash == '-') {
      inside = lo <= at && at < hi;
      continue;
    }
    if (inside && line.rfind("VmFlags:", 0) == 0) return line;
  }
  return "";
}

bool AdvisedSmall(std::uintptr_t at) { return (VmFlagsAt(at) + " ").find(" nh ") != std::string::npos; }

TEST(SlotPages, LargeArraysAreAdvisedSmallPagesAndSmallOnesAreNot) {
  if (VmFlagsAt(reinterpret_cast<std::uintptr_t>(&kMiB)).empty()) GTEST_SKIP() << "no /proc/self/smaps";
  // A region of our own, so that no earlier advice is on it: 12 MiB, of which the 2 MiB pages inside
  // its first 1 MiB + 8 MiB are advised.
  const std::size_t size = 12 * kMiB;
  void* map = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(map, MAP_FAILED);
  const auto base = reinterpret_cast<std::uintptr_t>(map);
  const std::uintptr_t first = (base + 2 * kMiB - 1) & ~(2 * kMiB - 1);  // its first whole 2 MiB page
  AdviseSmallPages(map, 3 * kMiB);                                       // under the threshold: nothing
  EXPECT_FALSE(AdvisedSmall(first)) << VmFlagsAt(first);
  AdviseSmallPages(map, 9 * kMiB);
  EXPECT_TRUE(AdvisedSmall(first)) << VmFlagsAt(first);
  const auto [lo, hi] = WholeHugePages(base, 9 * kMiB);
  EXPECT_TRUE(AdvisedSmall(hi - 1)) << VmFlagsAt(hi - 1);
  EXPECT_FALSE(AdvisedSmall(hi)) << "advice past the array: " << VmFlagsAt(hi);  // the region goes on
  EXPECT_EQ(lo, first);
  munmap(map, size);

  // A run's column for a million documents (MetricRunner::AllocateSlots makes each with NewSlotColumn).
  const std::vector<double> column = NewSlotColumn(1000000);
  ASSERT_EQ(column.size(), 1000000u);
  EXPECT_TRUE(std::isnan(column.front()) && std::isnan(column.back()));
  const auto [col_lo, col_hi] = WholeHugePages(reinterpret_cast<std::uintptr_t>(column.data()), 8000000);
  ASSERT_LT(col_lo, col_hi);
  EXPECT_TRUE(AdvisedSmall(col_lo)) << VmFlagsAt(col_lo);
  EXPECT_TRUE(AdvisedSmall(col_hi - 1)) << VmFlagsAt(col_hi - 1);
}
#endif

}  // namespace
}  // namespace kplab::host
