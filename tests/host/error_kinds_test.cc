// Errors carry their kind (core/include/kplab/result.h): callers branch on it, not on message text.
// The CLI's exit codes come from it (cli.h ExitCodeFor), the Python module's exception classes too.
#include <gtest/gtest.h>

#include "cli.h"
#include "evaluate.h"
#include "kplab/result.h"
#include "kplab/store.h"

namespace kplab::host {
namespace {

EvalRequest TinyKindsRequest() {
  EvalRequest req;
  req.dataset_path = std::string(KPLAB_SOURCE_DIR) + "/examples/tiny";
  req.predictions_path = req.dataset_path + "/predictions.txt";
  req.metrics = {"exact"};
  return req;
}

TEST(ErrorKinds, StatusKeepsTheKind) {
  const Status st = Error::Store("x");
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(st.kind(), ErrorKind::kStore);
  EXPECT_TRUE(st.error().IsStore());
  EXPECT_TRUE(Error::Input("plain").IsInput());  // the default: most failures are bad input
  EXPECT_STREQ(ErrorKindName(ErrorKind::kLimit), "limit");
}

TEST(ErrorKinds, EvaluateSaysWhatFailed) {
  EvalRequest req = TinyKindsRequest();
  req.profile = "nope";
  EXPECT_TRUE(Evaluate(req).error().IsUsage());
  req = TinyKindsRequest();
  req.metrics = {"exact", "nosuch"};
  EXPECT_TRUE(Evaluate(req).error().IsUsage());
  req = TinyKindsRequest();
  req.params["exact"]["ks"] = "0";
  EXPECT_TRUE(Evaluate(req).error().IsUsage());
  req = TinyKindsRequest();
  req.predictions_path = std::string(KPLAB_SOURCE_DIR) + "/README.md";
  EXPECT_TRUE(Evaluate(req).error().IsInput());
  req = TinyKindsRequest();  // a plugin whose declaration is wrong (score missing): a script failure
  req.plugin_dirs = {std::string(KPLAB_TEST_DATA) + "/plugins/decl"};
  req.metrics = {"score_missing"};
  auto r = Evaluate(req);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.error().IsScript()) << r.error().message;
}

TEST(ErrorKinds, StoreErrorsAreStoreErrors) {
  auto store = RunStore::Open("/nonexistent-dir/kplab.db");
  ASSERT_FALSE(store.ok());
  EXPECT_TRUE(store.error().IsStore()) << store.error().message;
  EXPECT_EQ(ExitCodeFor(store.error().kind), kExitStore);
  EXPECT_EQ(ExitCodeFor(ErrorKind::kUsage), kExitUsage);
  EXPECT_EQ(ExitCodeFor(ErrorKind::kInput), kExitInput);
  EXPECT_EQ(ExitCodeFor(ErrorKind::kScript), kExitScript);
  EXPECT_EQ(ExitCodeFor(ErrorKind::kLimit), kExitScript);
  EXPECT_EQ(ExitCodeFor(ErrorKind::kInternal), kExitInternal);
}

}  // namespace
}  // namespace kplab::host
