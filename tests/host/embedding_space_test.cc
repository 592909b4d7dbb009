// EmbeddingSpace::Lookup (kplab/embedding_plan.h, core/src/plan): its text->row map is made on the first call, from the
// plan's texts. The promise is "thread-safe": the scoring lanes share one space and may all ask at
// once, so the first calls race to build the map. Hand-made space: two planned rows, values by hand.
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "kplab/embedding_plan.h"

namespace kplab::host {
namespace {

TEST(EmbeddingSpace, LookupsRacingToBuildTheTextMapAllSeeThePlannedRows) {
  for (int round = 0; round < 50; ++round) {
    EmbeddingSpace s;
    s.dims = 2;
    s.texts = {"neural network", "graph"};
    s.vecs = {0.6f, 0.8f, 0.0f, 0.0f};
    s.has = {1, 0};  // "graph" is planned but the model has no vector for it
    std::atomic<int> go{0}, wrong{0};
    std::vector<std::thread> lanes;
    for (int t = 0; t < 8; ++t) {
      lanes.emplace_back([&, t] {
        while (go.load() == 0) {
        }
        std::vector<float> out;
        bool has = true;
        const std::string text = t % 2 == 0 ? "neural network" : "graph";
        if (!s.Lookup(text, out, has).ok()) ++wrong;
        const std::vector<float> want = t % 2 == 0 ? std::vector<float>{0.6f, 0.8f} : std::vector<float>{0, 0};
        if (out != want || has != (t % 2 == 0)) ++wrong;
      });
    }
    go = 1;
    for (auto& l : lanes) l.join();
    ASSERT_EQ(wrong.load(), 0) << "round " << round;
  }
}

}  // namespace
}  // namespace kplab::host
