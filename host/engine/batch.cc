#include "batch.h"

#include <glob.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <system_error>
#include <thread>

#include <fmt/format.h>

namespace kplab::host {

bool HasWildcard(const std::string& pattern) {
  // An existing file is itself, whatever its name holds ("catSeq[v2].txt").
  std::error_code ec;
  if (std::filesystem::exists(pattern, ec)) return false;
  return pattern.find_first_of("*?[{") != std::string::npos;
}

Result<std::vector<ManifestEntry>> ExpandPredictions(const std::string& dataset_path, const std::string& pattern) {
  std::vector<std::string> files;
  if (!HasWildcard(pattern)) {
    files.push_back(pattern);
  } else {
    glob_t g{};
    // No GLOB_ERR: a brace alternative naming a directory that does not exist (catSeq-GAN/inspec) is
    // normal in a pattern over several systems; nothing matching at all is the error below.
    const int rc = ::glob(pattern.c_str(), GLOB_BRACE, nullptr, &g);
    if (rc == 0) {
      for (std::size_t i = 0; i < g.gl_pathc; ++i) files.emplace_back(g.gl_pathv[i]);  // sorted by glob
    }
    ::globfree(&g);
    if (rc == GLOB_ABORTED) {
      return Error::Input(fmt::format("--predictions '{}': a directory on the way cannot be read", pattern));
    }
    if (files.empty()) {
      return Error::Usage(
          fmt::format("--predictions '{}' matches no file (expected a path or a shell pattern such as "
                      "'outputs/*/seed*.txt', quoted so that kplab expands it)",
                      pattern));
    }
  }
  std::vector<ManifestEntry> out;
  for (const std::string& f : files) {
    ManifestEntry e;
    e.predictions_path = f;
    e.dataset_path = dataset_path;
    e.origin = f;
    out.push_back(std::move(e));
  }
  return out;
}

namespace {

// Datasets imported so far, by path: the raw import does not depend on the profile (normalization, in
// LoadCorpusFor, does), so one import serves every entry on that dataset. Shared by the workers of a
// parallel batch: the first to need a dataset imports it while the others wanting it wait
// (std::call_once), so each is imported once, as in the serial loop, and a failed import is every
// entry's error on that dataset.
class DatasetCache {
 public:
  std::shared_ptr<const Result<RawDataset>> Get(const EvalRequest& req) {
    std::shared_ptr<Slot> slot;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto& s = slots_[Key(req)];
      if (!s) s = std::make_shared<Slot>();
      slot = s;
    }
    std::call_once(slot->once,
                   [&] { slot->result = std::make_shared<const Result<RawDataset>>(ImportRequestDataset(req)); });
    return slot->result;
  }

 private:
  // A dataset is its path and the options that choose its documents and references (a manifest entry
  // may set its own: refs_stemmed, split, references, source).
  static std::string Key(const EvalRequest& req) {
    const DatasetOptions& o = req.dataset_options;
    return fmt::format("{}\n{}\n{}\n{}\n{}\n{}\n{}\n{}", req.dataset_path, o.format, o.hulth_keys,
                       o.semeval_answers, o.refs_stemmed, o.split, o.references,
                       req.source_path ? "+" + *req.source_path : "-");
  }
  struct Slot {
    std::once_flag once;
    std::shared_ptr<const Result<RawDataset>> result;
  };
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<Slot>> slots_;
};

Result<EvalResult> EvaluateEntry(const EvalRequest& base, const ManifestEntry& e, DatasetCache& datasets) {
  const auto start = std::chrono::steady_clock::now();
  EvalRequest req = base;
  req.dataset_path = e.dataset_path;
  req.predictions_path = e.predictions_path;
  if (!e.system.empty()) req.system = e.system;
  if (e.seed) req.seed = e.seed;
  if (!e.profile.empty()) req.profile = e.profile;
  if (e.refs_stemmed) req.dataset_options.refs_stemmed = *e.refs_stemmed;
  if (e.split) req.dataset_options.split = *e.split;
  if (e.references) req.dataset_options.references = *e.references;
  if (e.source) req.source_path = *e.source;
  if (e.dataset_format) req.dataset_options.format = *e.dataset_format;
  if (e.predictions_format) req.predictions_format = *e.predictions_format;
  if (e.hulth_keys) req.dataset_options.hulth_keys = *e.hulth_keys;
  if (e.semeval_answers) req.dataset_options.semeval_answers = *e.semeval_answers;
  const auto ds = datasets.Get(req);
  if (!*ds) return ds->error();
  auto corpus = LoadCorpusFor(**ds, req);
  if (!corpus) return corpus.error();
  auto res = EvaluateCorpus(std::make_shared<const Corpus>(std::move(*corpus)), req);
  if (res) {
    res->run.dataset_path = AbsolutePath(req.dataset_path);
    res->run.predictions_path = AbsolutePath(req.predictions_path);
    res->run.elapsed_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  return res;
}

void EvaluateSerial(const EvalRequest& base, const std::vector<ManifestEntry>& entries,
                    const std::function<void(std::size_t, const Result<EvalResult>&)>& done,
                    const std::function<void(std::size_t)>& before) {
  DatasetCache datasets;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    if (before) before(i);
    done(i, EvaluateEntry(base, entries[i], datasets));
  }
}

}  // namespace

void EvaluateBatch(const EvalRequest& base, const std::vector<ManifestEntry>& entries,
                   const std::function<void(std::size_t, const Result<EvalResult>&)>& done,
                   const std::function<void(std::size_t)>& before, int jobs) {
  const std::size_t n = entries.size();
  jobs = std::clamp(jobs, 1, kMaxJobs);
  if (jobs == 1 || n <= 1) return EvaluateSerial(base, entries, done, before);

  // Workers take entries in order; the calling thread hands finished ones to `done` in order. A worker
  // does not start entry i before i < delivered + window, which bounds the results (each holds its
  // corpus and score columns) waiting behind a slow earlier entry.
  const std::size_t window = 2 * static_cast<std::size_t>(jobs);
  DatasetCache datasets;
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::optional<Result<EvalResult>>> results(n);
  std::vector<std::exception_ptr> thrown(n);
  std::vector<char> ready(n, 0);
  std::size_t next = 0, delivered = 0;
  bool stop = false;
  auto work = [&] {
    for (;;) {
      std::size_t i = 0;
      {
        std::unique_lock<std::mutex> lock(mu);
        cv.wait(lock, [&] { return stop || next >= n || next < delivered + window; });
        if (stop || next >= n) return;
        i = next++;
        if (before) before(i);  // under the lock: one call at a time, in start order
      }
      std::optional<Result<EvalResult>> res;
      std::exception_ptr ex;
      try {
        res.emplace(EvaluateEntry(base, entries[i], datasets));
      } catch (...) {
        ex = std::current_exception();
      }
      {
        std::lock_guard<std::mutex> lock(mu);
        results[i] = std::move(res);
        thrown[i] = ex;
        ready[i] = 1;
      }
      cv.notify_all();
    }
  };
  std::vector<std::thread> workers;
  // Stops and joins the workers however this function is left (an exception from `done` or rethrown
  // from an entry): a worker waiting for the window would otherwise wait for ever.
  struct Joiner {
    std::mutex& mu;
    std::condition_variable& cv;
    bool& stop;
    std::vector<std::thread>& workers;
    ~Joiner() {
      {
        std::lock_guard<std::mutex> lock(mu);
        stop = true;
      }
      cv.notify_all();
      for (auto& t : workers) t.join();
    }
  } joiner{mu, cv, stop, workers};
  for (int j = 0; j < jobs && static_cast<std::size_t>(j) < n; ++j) {
    try {
      workers.emplace_back(work);
    } catch (const std::system_error&) {
      break;  // no more threads: the ones started do the work
    }
  }
  if (workers.empty()) return EvaluateSerial(base, entries, done, before);
  for (std::size_t i = 0; i < n; ++i) {
    std::optional<Result<EvalResult>> res;
    {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return ready[i] != 0; });
      if (thrown[i]) std::rethrow_exception(thrown[i]);  // the Joiner stops the others
      res = std::move(results[i]);
      results[i].reset();
    }
    done(i, *res);
    res.reset();
    {
      std::lock_guard<std::mutex> lock(mu);
      delivered = i + 1;
    }
    cv.notify_all();
  }
}

}  // namespace kplab::host
