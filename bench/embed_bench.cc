// kplab_embed_bench: in-process benchmarks of the embedding layer. scripts/bench.sh
// runs it; bench/README.md reports the numbers.
//
//   kplab_embed_bench --dataset DIR --predictions FILE [--predictions FILE ...] [--db PATH]
//                     [--model2vec DIR] [--queries N] [--min-seconds S]
//
// The phrase set is every distinct normalized surface (profile kplab) of the dataset's references and
// of every predictions file. Lines of key=value fields:
//   load         model=glove-6b-100d ms=...            LoadEmbedder (mmap + checksum), median of runs
//   embed        backend=... phrases=... phrases_per_s=...   Embedder::Embed, one thread, batches of 4096
//   cache_cold   phrases=... seconds=... phrases_per_s=...   PhraseCache::Get on an empty database
//                (embed every phrase on all cores + insert)
//   cache_warm   phrases=... seconds=... phrases_per_s=...   the same Get from a new PhraseCache object
//                on the filled database (what a second process does)
//   hnsw_build   vectors=... seconds=...                      PhraseCache::Index from scratch
//   hnsw_load    vectors=... seconds=...                      PhraseCache::Index from the saved file
//   hnsw_query   k=10 queries=... recall_at_10=... queries_per_s=...   against BruteForceSearch
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <random>
#include <string>
#include <unordered_set>
#include <vector>

#include "bench_util.h"
#include "kplab/ann.h"
#include "kplab/cache.h"
#include "kplab/corpus.h"
#include "kplab/io.h"
#include "kplab/model2vec.h"
#include "kplab/profile.h"
#include "kplab/registry.h"

namespace fs = std::filesystem;
using namespace kplab::bench;
using namespace kplab;

namespace {


double EmbedRate(const Embedder& e, const std::vector<std::string_view>& phrases, double min_seconds) {
  std::vector<float> out(4096 * static_cast<std::size_t>(e.dims()));
  std::vector<std::uint8_t> has(4096);
  double best = 0;
  double total = 0;
  while (total < min_seconds) {
    auto t0 = Clock::now();
    for (std::size_t b = 0; b < phrases.size(); b += 4096) {
      std::vector<std::string_view> batch(phrases.begin() + b,
                                          phrases.begin() + std::min(phrases.size(), b + 4096));
      Status st = e.Embed(batch, out.data(), has.data());
      if (!st.ok()) {
        std::cerr << st.message() << "\n";
        std::exit(1);
      }
    }
    double dt = Since(t0);
    total += dt;
    best = std::max(best, phrases.size() / dt);
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  std::string dataset, db = "/tmp/kplab-embed-bench.db", m2v;
  std::vector<std::string> preds;
  int queries = 1000;
  std::vector<int> efs;  // extra ef_search values to report recall/queries for
  double min_seconds = 1.0;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::cerr << a << " needs a value\n";
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--dataset") dataset = next();
    else if (a == "--predictions") preds.push_back(next());
    else if (a == "--db") db = next();
    else if (a == "--model2vec") m2v = next();
    else if (a == "--queries") queries = std::stoi(next());
    else if (a == "--min-seconds") min_seconds = std::stod(next());
    else if (a == "--ef") efs.push_back(std::stoi(next()));
    else {
      std::cerr << "unknown argument " << a << "\n";
      return 2;
    }
  }
  if (dataset.empty() || preds.empty()) {
    std::cerr << "usage: kplab_embed_bench --dataset DIR --predictions FILE [...]\n";
    return 2;
  }
  // Distinct phrases of references + every predictions file.
  RawDataset ds = Must(ImportDataset(dataset, {}), "dataset");
  Profile profile = *FindProfile("kplab");
  std::unordered_set<std::string> seen;
  std::vector<std::string> texts;
  for (const auto& p : preds) {
    RawPredictions rp = Must(AlignPredictions(ds, Must(ImportPredictions(p, ""), "predictions")), "align");
    Corpus c = Must(BuildCorpus(ds, &rp, profile), "corpus");
    for (const Phrase& ph : c.phrases) {
      if (seen.emplace(ph.surface()).second) texts.emplace_back(ph.surface());
    }
  }
  std::vector<std::string_view> phrases(texts.begin(), texts.end());
  std::printf("phrases distinct=%zu files=%zu\n", phrases.size(), preds.size() + 1);

  // Model load.
  ModelInfo glove = Must(GetModel(ModelsDir(), kDefaultModel), "default model");
  std::vector<double> loads;
  std::shared_ptr<const Embedder> emb;
  for (int r = 0; r < 9; ++r) {
    auto t0 = Clock::now();
    emb = Must(LoadEmbedder(glove), "load");
    loads.push_back(Since(t0) * 1000);
  }
  std::sort(loads.begin(), loads.end());
  std::printf("load model=%s ms=%.1f min_ms=%.1f\n", glove.name.c_str(), loads[loads.size() / 2], loads[0]);

  // Backends.
  std::printf("embed backend=wordvec model=%s phrases=%zu phrases_per_s=%.0f\n", glove.name.c_str(),
              phrases.size(), EmbedRate(*emb, phrases, min_seconds));
  if (!m2v.empty()) {
    auto m = Must(LoadModel2Vec(m2v), "model2vec");
    std::printf("embed backend=model2vec model=%s phrases=%zu phrases_per_s=%.0f\n",
                fs::path(m2v).filename().c_str(), phrases.size(), EmbedRate(*m, phrases, min_seconds));
  }
  {
    // A precomputed table holding every phrase (GloVe vectors), as one imported from elsewhere.
    std::string dir = db + ".models";
    fs::remove_all(dir);
    std::string jsonl = db + ".table.jsonl";
    {
      std::FILE* f = std::fopen(jsonl.c_str(), "w");
      std::vector<float> v(emb->dims());
      std::uint8_t h;
      for (auto p : phrases) {
        (void)emb->Embed({p}, v.data(), &h);
        if (!h) continue;
        std::string line = "{\"phrase\": \"";
        for (char c : p) {
          if (c == '"' || c == '\\') line += '\\';
          line += c;
        }
        line += "\", \"vector\": [";
        for (int j = 0; j < emb->dims(); ++j) {
          line += j ? "," : "";
          line += std::to_string(v[j]);
        }
        line += "]}\n";
        std::fputs(line.c_str(), f);
      }
      std::fclose(f);
    }
    ModelInfo pre = Must(ImportPrecomputed(dir, "table", jsonl, "jsonl", ""), "import precomputed");
    auto pe = Must(LoadEmbedder(pre), "load precomputed");
    std::vector<std::string_view> present;
    for (auto p : phrases) {
      std::vector<float> v(pe->dims());
      std::uint8_t h;
      if (pe->Embed({p}, v.data(), &h).ok()) present.push_back(p);
    }
    std::printf("embed backend=precomputed phrases=%zu phrases_per_s=%.0f\n", present.size(),
                EmbedRate(*pe, present, min_seconds));
    fs::remove_all(dir);
    fs::remove(jsonl);
  }

  // Cache cold vs warm.
  for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(db + suffix);
  fs::remove_all(db + ".hnsw");
  std::vector<float> out(phrases.size() * emb->dims());
  std::vector<std::uint8_t> has(phrases.size());
  {
    auto cache = Must(PhraseCache::Open(db), "cache");
    auto t0 = Clock::now();
    CacheStats s = Must(cache.Get(*emb, glove.name, phrases, out.data(), has.data()), "cold");
    double dt = Since(t0);
    std::printf("cache_cold phrases=%zu embedded=%zu seconds=%.3f phrases_per_s=%.0f embed_s=%.3f store_s=%.3f\n",
                phrases.size(), s.embedded, dt, phrases.size() / dt, s.embed_seconds, s.store_seconds);
  }
  {
    auto t0 = Clock::now();
    auto cache = Must(PhraseCache::Open(db), "cache");
    CacheStats s = Must(cache.Get(*emb, glove.name, phrases, out.data(), has.data()), "warm");
    double dt = Since(t0);
    std::printf("cache_warm phrases=%zu hits=%zu seconds=%.3f phrases_per_s=%.0f\n", phrases.size(), s.hits,
                dt, phrases.size() / dt);
  }

  // HNSW.
  auto cache = Must(PhraseCache::Open(db), "cache");
  IndexStats is;
  auto index = Must(cache.Index(*emb, &is), "index build");
  std::printf("hnsw_build vectors=%zu seconds=%.2f vectors_per_s=%.0f\n", is.size, is.seconds, is.size / is.seconds);
  auto index2 = Must(cache.Index(*emb, &is), "index load");
  std::printf("hnsw_load vectors=%zu seconds=%.3f rebuilt=%d\n", is.size, is.seconds, is.rebuilt ? 1 : 0);

  // Recall@10 of the index against exact search over the same unit vectors, for queries drawn from the
  // phrases themselves (the phrase itself is among the true neighbours, as for the index).
  auto all = Must(cache.AllPhrases(emb->fingerprint()), "phrases");
  std::vector<std::int64_t> labels;
  std::vector<float> unit;
  {
    std::vector<std::string_view> v;
    for (auto& [id, t] : all) v.push_back(t);
    std::vector<float> raw(v.size() * emb->dims());
    std::vector<std::uint8_t> h(v.size());
    Must(cache.Get(*emb, glove.name, v, raw.data(), h.data()), "vectors");
    const int d = emb->dims();
    for (std::size_t i = 0; i < v.size(); ++i) {
      double n = 0;
      for (int j = 0; j < d; ++j) n += raw[i * d + j] * raw[i * d + j];
      n = std::sqrt(n);
      labels.push_back(all[i].first);
      for (int j = 0; j < d; ++j) unit.push_back(static_cast<float>(raw[i * d + j] / n));
    }
  }
  std::mt19937_64 rng(42);
  std::uniform_int_distribution<std::size_t> pick(0, labels.size() - 1);
  std::vector<std::size_t> qs;
  for (int q = 0; q < queries; ++q) qs.push_back(pick(rng));
  const int d = emb->dims();
  std::vector<std::vector<std::pair<std::int64_t, float>>> exact;
  for (std::size_t q : qs) exact.push_back(BruteForceSearch(unit.data(), labels.data(), labels.size(), d, &unit[q * d], 10));
  efs.insert(efs.begin(), index2->ef_search());
  for (std::size_t e = 0; e < efs.size(); ++e) {
    index2->set_ef_search(efs[e]);
    std::size_t found = 0, total = 0;
    auto t0 = Clock::now();
    std::vector<std::vector<std::pair<std::int64_t, float>>> approx;
    for (std::size_t q : qs) approx.push_back(index2->Search(&unit[q * d], 10));
    double qdt = Since(t0);
    for (std::size_t i = 0; i < qs.size(); ++i) {
      // Ties at the 10th cosine make several exact answers valid (phrases that differ only in
      // out-of-vocabulary words share a vector): an approximate neighbour counts when its cosine
      // reaches the 10th exact cosine.
      const float kth = exact[i].back().second;
      for (const auto& [lab, cos] : approx[i]) found += cos >= kth - 1e-6f;
      total += exact[i].size();
    }
    std::printf("%s k=10 queries=%zu recall_at_10=%.4f queries_per_s=%.0f ef_search=%d\n",
                e == 0 ? "hnsw_query" : "hnsw_query_ef", qs.size(), static_cast<double>(found) / total,
                qs.size() / qdt, efs[e]);
  }
  {
    auto t0 = Clock::now();
    for (std::size_t q : qs) BruteForceSearch(unit.data(), labels.data(), labels.size(), d, &unit[q * d], 10);
    std::printf("exact_query k=10 queries=%zu queries_per_s=%.0f\n", qs.size(), qs.size() / Since(t0));
  }
  for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(db + suffix);
  fs::remove_all(db + ".hnsw");
  return 0;
}
