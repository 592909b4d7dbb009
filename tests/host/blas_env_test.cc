// KPLAB_BLAS_THREADS (docs/embeddings.md, "BLAS threads"): the kplab executable's one BLAS setting,
// refused with a usage error unless it is a whole number from 1 to 1024.
#include <gtest/gtest.h>

#include "../core/temp_dir.h"
#include "cli_harness.h"

namespace kplab::test {
namespace {

TEST(BlasThreadsEnv, AValidCountRunsAndAnythingElseIsAUsageError) {
  TempDir dir;
  for (const char* good : {"1", "2", "1024"}) {
    const Output o = RunKplab(dir.path(), std::string("KPLAB_BLAS_THREADS=") + good, "version");
    EXPECT_EQ(o.code, 0) << good << ": " << o.err;
  }
  for (const char* bad : {"0", "-1", "1025", "abc", "2x", "''", "99999999999999999999"}) {
    const Output o = RunKplab(dir.path(), std::string("KPLAB_BLAS_THREADS=") + bad, "version");
    EXPECT_EQ(o.code, 1) << bad;
    EXPECT_NE(o.err.find("KPLAB_BLAS_THREADS="), std::string::npos) << o.err;
    EXPECT_NE(o.err.find("expected a whole number of threads from 1 to 1024"), std::string::npos) << o.err;
    EXPECT_EQ(o.out, "") << bad;
  }
}

}  // namespace
}  // namespace kplab::test
