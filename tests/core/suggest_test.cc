// "Did you mean": the nearest name within the edit budget, worked out by hand per case.
#include <gtest/gtest.h>

#include "kplab/suggest.h"

namespace {

using kplab::DidYouMean;
using kplab::NearestName;

TEST(Suggest, NearestWithinTheBudget) {
  const std::vector<std::string> profiles = {"kplab", "kpeval", "kenchan", "exhird", "semrp-standalone"};
  EXPECT_EQ(NearestName("kenchn", profiles), "kenchan");  // 1 deletion (budget 2 for 6 letters)
  EXPECT_EQ(NearestName("kpaval", profiles), "kpeval");   // 1 substitution
  EXPECT_EQ(NearestName("kplba", profiles), "kplab");     // 1 swap of neighbours
  EXPECT_EQ(NearestName("KPLAB", profiles), "kplab");     // case ignored
  EXPECT_EQ(NearestName("zzzzzz", profiles), "");         // 6 edits from all: none
  EXPECT_EQ(NearestName("kplab", profiles), "");          // a valid name needs no guess
  EXPECT_EQ(NearestName("", profiles), "");
  // A truncated aggregate, as in the issue: 'all.f1@5.macro' is 'all.f1@5.macro_hm' without its tail
  // (half an edit), ahead of 'all.f1@5.micro' (one substitution).
  EXPECT_EQ(NearestName("all.f1@5.macro", {"all.f1@5.micro", "all.f1@5.macro_hm"}), "all.f1@5.macro_hm");
  EXPECT_EQ(NearestName("all.f1@5.macr", {"all.f1@5.macro_hm", "absent.r@5.micro"}), "all.f1@5.macro_hm");
  // Budget: 1 edit up to 4 characters ("sed" -> "seed" is 1), 2 up to 8, a quarter beyond.
  EXPECT_EQ(NearestName("sed", {"seed"}), "seed");
  EXPECT_EQ(NearestName("sxx", {"seed"}), "");  // 3 edits (x->e, x->e, insert d) > 1
  EXPECT_EQ(NearestName("refs_stemed", {"refs_stemmed", "references"}), "refs_stemmed");
  EXPECT_EQ(DidYouMean("refs_stemed", {"refs_stemmed"}), "did you mean 'refs_stemmed'? ");
  EXPECT_EQ(DidYouMean("q", {"refs_stemmed"}), "");
}

}  // namespace
