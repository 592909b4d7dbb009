#include "batch.h"

#include <glob.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>

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
      return Error{fmt::format("--predictions '{}': a directory on the way cannot be read", pattern),
                   ErrorKind::kInput};
    }
    if (files.empty()) {
      return Error{fmt::format("--predictions '{}' matches no file (expected a path or a shell pattern such as "
                               "'outputs/*/seed*.txt', quoted so that kplab expands it)",
                               pattern),
                   ErrorKind::kUsage};
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

void EvaluateBatch(const EvalRequest& base, const std::vector<ManifestEntry>& entries,
                   const std::function<void(std::size_t, const Result<EvalResult>&)>& done,
                   const std::function<void(std::size_t)>& before) {
  // Datasets imported so far, by path: the raw import does not depend on the profile (normalization,
  // in LoadCorpusFor, does), so one import serves every entry on that dataset.
  std::map<std::string, std::shared_ptr<Result<RawDataset>>> datasets;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    if (before) before(i);
    const ManifestEntry& e = entries[i];
    const auto start = std::chrono::steady_clock::now();
    EvalRequest req = base;
    req.dataset_path = e.dataset_path;
    req.predictions_path = e.predictions_path;
    if (!e.system.empty()) req.system = e.system;
    if (e.seed) req.seed = e.seed;
    if (!e.profile.empty()) req.profile = e.profile;
    auto& ds = datasets[e.dataset_path];
    if (!ds) ds = std::make_shared<Result<RawDataset>>(ImportRequestDataset(req));
    if (!*ds) {
      done(i, Result<EvalResult>(ds->error()));
      continue;
    }
    auto corpus = LoadCorpusFor(**ds, req);
    if (!corpus) {
      done(i, Result<EvalResult>(corpus.error()));
      continue;
    }
    auto res = EvaluateCorpus(std::make_shared<const Corpus>(std::move(*corpus)), req);
    if (res) {
      res->run.dataset_path = AbsolutePath(req.dataset_path);
      res->run.predictions_path = AbsolutePath(req.predictions_path);
      res->run.elapsed_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
    done(i, res);
  }
}

}  // namespace kplab::host
