// kplab_bench: in-process benchmarks of the stemmer (the benchmark suite's task (i)). A plain std::chrono loop;
// scripts/bench.sh runs it next to the Python peer and computes the ratios.
//
//   kplab_bench --tokens FILE [--min-seconds S]
//   kplab_bench --corpus DATASET PREDICTIONS [--source FILE] [--threads N] [--min-seconds S]
//
// FILE holds the benchmark token stream, one token a line (bench/peer_stem.py --write-tokens makes it).
// Prints one line per benchmark, key=value fields, e.g.
//   stem_cold tokens=577506 passes=22 seconds=0.0464 tokens_per_s=1.24e+07 best_tokens_per_s=1.3e+07
//   stem_warm tokens=577506 distinct=27191 passes=140 seconds=0.00715 tokens_per_s=8.08e+07 best_...
// `seconds` is the median time of one pass over the whole stream; tokens_per_s = tokens / seconds;
// best_tokens_per_s uses the fastest pass (less sensitive to other load on the machine).
//
// stem_cold: kplab::PorterStemmer::Stem on every token (no memo), as the peer scripts call nltk.
// stem_warm: kplab::StemCache, every token stemmed once before timing (so every distinct word is
//            cached), then whole passes over the stream are timed (hash look-ups only).
// corpus:    kplab::BuildCorpus (profile kplab) of an imported dataset + predictions, timed alone
//            (import excluded): the normalization a `kplab eval` does before scoring. --threads: its
//            thread count (default: BuildCorpus's own choice).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "bench_util.h"
#include "kplab/corpus.h"
#include "kplab/io.h"
#include "kplab/profile.h"
#include "kplab/stem.h"

namespace {

using namespace kplab::bench;

volatile std::size_t g_sink = 0;  // keeps the stemming work observable

double Seconds(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }


// Runs pass() until at least min_seconds have elapsed and at least min_passes passes were made;
// returns the per-pass times.
template <class F>
std::vector<double> Repeat(F&& pass, double min_seconds, int min_passes) {
  std::vector<double> times;
  double total = 0;
  while (total < min_seconds || static_cast<int>(times.size()) < min_passes) {
    const auto t0 = Clock::now();
    pass();
    const double dt = Seconds(t0, Clock::now());
    times.push_back(dt);
    total += dt;
  }
  return times;
}

void Report(const char* name, std::size_t tokens, const std::vector<double>& times, const std::string& extra) {
  const double med = Median(times);
  const double best = *std::min_element(times.begin(), times.end());
  std::printf("%s tokens=%zu%s passes=%zu seconds=%.9g tokens_per_s=%.6g best_tokens_per_s=%.6g\n", name, tokens,
              extra.c_str(), times.size(), med, static_cast<double>(tokens) / med, static_cast<double>(tokens) / best);
  std::fflush(stdout);
}

[[noreturn]] void Usage() {
  std::fprintf(stderr,
               "usage: kplab_bench --tokens FILE [--min-seconds S]\n"
               "       kplab_bench --corpus DATASET PREDICTIONS [--source FILE] [--threads N] [--min-seconds S]\n");
  std::exit(1);
}

}  // namespace

int main(int argc, char** argv) {
  std::string tokens_path, dataset_path, predictions_path, source_path;
  double min_seconds = 1.0;
  int threads = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--tokens" && i + 1 < argc) {
      tokens_path = argv[++i];
    } else if (arg == "--corpus" && i + 2 < argc) {
      dataset_path = argv[++i];
      predictions_path = argv[++i];
    } else if (arg == "--source" && i + 1 < argc) {
      source_path = argv[++i];
    } else if (arg == "--threads" && i + 1 < argc) {
      threads = std::atoi(argv[++i]);
    } else if (arg == "--min-seconds" && i + 1 < argc) {
      min_seconds = std::atof(argv[++i]);
    } else {
      Usage();
    }
  }
  if (!dataset_path.empty()) {
    auto ds = kplab::ImportDataset(dataset_path);
    if (ds && !source_path.empty()) {
      if (auto st = kplab::AttachSources(*ds, source_path); !st) {
        std::fprintf(stderr, "kplab_bench: %s\n", st.message().c_str());
        return 2;
      }
    }
    auto preds = ds ? kplab::ImportPredictions(predictions_path) : kplab::Result<kplab::RawPredictions>(ds.error());
    auto aligned = preds ? kplab::AlignPredictions(*ds, std::move(*preds)) : preds;
    if (!aligned) {
      std::fprintf(stderr, "kplab_bench: %s\n", aligned.error().message.c_str());
      return 2;
    }
    const auto profile = *kplab::FindProfile("kplab");
    std::size_t pieces = 0;
    for (const auto& d : aligned->docs) pieces += d.phrases.size();
    for (const auto& d : ds->docs) pieces += d.refs.size();
    auto pass = [&] {
      auto c = kplab::BuildCorpus(*ds, &*aligned, profile, threads);
      g_sink = g_sink + c->phrases.size();
    };
    const auto times = Repeat(pass, min_seconds, 3);
    std::printf("corpus docs=%zu pieces=%zu passes=%zu seconds=%.6g best_seconds=%.6g\n", ds->docs.size(), pieces,
                times.size(), Median(times), *std::min_element(times.begin(), times.end()));
    return 0;
  }
  if (tokens_path.empty()) Usage();

  std::ifstream in(tokens_path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "kplab_bench: cannot read %s\n", tokens_path.c_str());
    return 2;
  }
  std::vector<std::string> tokens;
  for (std::string line; std::getline(in, line);) tokens.push_back(std::move(line));
  if (tokens.empty()) {
    std::fprintf(stderr, "kplab_bench: %s: no tokens\n", tokens_path.c_str());
    return 2;
  }
  // The stream as string_views into one contiguous buffer, as a tokenizer would hand them over.
  std::string arena;
  for (const auto& t : tokens) arena += t;
  std::vector<std::string_view> views;
  views.reserve(tokens.size());
  {
    std::size_t off = 0;
    for (const auto& t : tokens) {
      views.emplace_back(arena.data() + off, t.size());
      off += t.size();
    }
  }

  // Cold: the stemmer itself, every token, no memo.
  {
    const kplab::PorterStemmer stemmer(kplab::PorterMode::kNltk);
    auto pass = [&] {
      std::size_t s = 0;
      for (auto w : views) s += stemmer.Stem(w).size();
      g_sink = g_sink + s;
    };
    Report("stem_cold", views.size(), Repeat(pass, min_seconds, 3), "");
  }

  // Warm: StemCache after one untimed pass over the whole stream.
  {
    kplab::StemCache cache(kplab::PorterMode::kNltk);
    std::size_t s = 0;
    for (auto w : views) s += cache.Stem(w).size();
    g_sink = g_sink + s;
    auto pass = [&] {
      std::size_t s2 = 0;
      for (auto w : views) s2 += cache.Stem(w).size();
      g_sink = g_sink + s2;
    };
    Report("stem_warm", views.size(), Repeat(pass, min_seconds, 5), " distinct=" + std::to_string(cache.size()));
  }
  return 0;
}
