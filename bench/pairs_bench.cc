// kplab_pairs_bench: pair mining for the homogeneity study. scripts/bench.sh runs it;
// bench/README.md reports the numbers.
//
//   kplab_pairs_bench --dataset DIR [--theta T] [--min-seconds S] [--partitions N[,N...]]
//
// The sets are the dataset's gold keyphrase keys (profile kplab: stemmed, one interned id per distinct
// stem key; KP20k: 20,000 sets). Both miners run in the same process on the same sets, each repeated
// until at least --min-seconds have passed (the naive loop runs at least once); the median run is
// reported. The program exits 1 if the two results differ. One line of key=value fields:
//   pairs  sets=... theta=... pairs=... naive_candidates=... join_candidates=... naive_s=... join_s=...
//          ratio=... same=yes
// With --partitions, one more line per N: each of the N partitions of the join (homog::Partition) timed
// the same way, their largest and summed time against the whole join's, the pairs each produced, and
// whether their union is the whole join's result (exit 1 if not):
//   partitions n=... max_s=... sum_s=... whole_s=... pairs=a+b+... candidates=c+d+... same=yes
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "bench_util.h"
#include "kplab/corpus.h"
#include "kplab/homog.h"
#include "kplab/io.h"
#include "kplab/profile.h"

using namespace kplab::bench;
using namespace kplab;

namespace {



template <class Fn>
double Time(Fn fn, double min_seconds, int min_runs) {
  std::vector<double> runs;
  const auto start = Clock::now();
  while (static_cast<int>(runs.size()) < min_runs || Since(start) < min_seconds) {
    const auto t0 = Clock::now();
    fn();
    runs.push_back(Since(t0));
  }
  return Median(runs);
}

}  // namespace

int main(int argc, char** argv) {
  std::string dataset;
  double theta = 0.5, min_seconds = 3;
  std::vector<std::uint32_t> partitions;
  for (int i = 1; i < argc; ++i) {
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::cerr << "kplab_pairs_bench: " << argv[i] << " needs a value\n";
        std::exit(1);
      }
      return argv[++i];
    };
    if (!std::strcmp(argv[i], "--dataset")) {
      dataset = value();
    } else if (!std::strcmp(argv[i], "--theta")) {
      theta = std::stod(value());
    } else if (!std::strcmp(argv[i], "--min-seconds")) {
      min_seconds = std::stod(value());
    } else if (!std::strcmp(argv[i], "--partitions")) {
      const std::string list = value();
      for (std::size_t at = 0; at <= list.size();) {
        const std::size_t comma = std::min(list.find(',', at), list.size());
        const long n = std::strtol(list.substr(at, comma - at).c_str(), nullptr, 10);
        if (n < 1) {
          std::cerr << "kplab_pairs_bench: --partitions takes counts >= 1 (got '" << list << "')\n";
          return 1;
        }
        partitions.push_back(static_cast<std::uint32_t>(n));
        at = comma + 1;
      }
    } else {
      std::cerr << "usage: kplab_pairs_bench --dataset DIR [--theta T] [--min-seconds S]\n";
      return 1;
    }
  }
  if (dataset.empty()) {
    std::cerr << "usage: kplab_pairs_bench --dataset DIR [--theta T] [--min-seconds S]\n";
    return 1;
  }
  const RawDataset ds = Must(ImportDataset(dataset), "dataset");
  const Corpus corpus = Must(BuildCorpus(ds, nullptr, *FindProfile("kplab")), "corpus");
  std::vector<std::vector<std::uint32_t>> sets;
  for (const auto& d : corpus.docs) {
    std::vector<std::uint32_t> s;
    for (const auto& r : d.refs) {
      if (!r.phrase->blank()) s.push_back(r.key());
    }
    sets.push_back(std::move(s));
  }

  homog::MineStats ns, js;
  std::vector<homog::DocPair> naive, join;
  const double naive_s = Time([&] { naive = Must(homog::MinePairsNaive(sets, theta, &ns), "naive"); },
                              min_seconds, 1);
  const double join_s = Time([&] { join = Must(homog::MinePairs(sets, theta, &js), "join"); }, min_seconds, 5);
  const bool same = naive == join;
  std::printf("pairs sets=%zu theta=%g pairs=%zu naive_candidates=%zu join_candidates=%zu naive_s=%.4f "
              "join_s=%.6f ratio=%.0f same=%s\n",
              ns.sets, theta, join.size(), ns.candidates, js.candidates, naive_s, join_s, naive_s / join_s,
              same ? "yes" : "NO");
  bool all_same = same;
  for (std::uint32_t n : partitions) {
    std::vector<homog::DocPair> uni;
    double max_s = 0, sum_s = 0;
    std::string counts, cands;
    for (std::uint32_t p = 0; p < n; ++p) {
      homog::MineStats ps;
      std::vector<homog::DocPair> part;
      const double t = Time(
          [&] {
            part = Must(homog::MinePairs(sets, theta, &ps, {p, n}), "partition");
          },
          min_seconds / n, 3);
      max_s = std::max(max_s, t);
      sum_s += t;
      counts += p ? "+" : "";
      counts += std::to_string(part.size());
      cands += p ? "+" : "";
      cands += std::to_string(ps.candidates);
      uni.insert(uni.end(), part.begin(), part.end());
    }
    std::sort(uni.begin(), uni.end(),
              [](const homog::DocPair& x, const homog::DocPair& y) { return x.a != y.a ? x.a < y.a : x.b < y.b; });
    const bool ok = uni == join;
    all_same = all_same && ok;
    std::printf("partitions n=%u max_s=%.6f sum_s=%.6f whole_s=%.6f pairs=%s candidates=%s same=%s\n", n, max_s, sum_s,
                join_s, counts.c_str(), cands.c_str(), ok ? "yes" : "NO");
  }
  return all_same ? 0 : 1;
}
