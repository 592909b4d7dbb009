// Inputs the corpus tests build corpora from: a dataset of references only, made in memory, a
// predictions file imported and aligned to a dataset, as `kplab eval` reads them, and the shared
// datasets and profiles the range-built corpora are tried on.
#pragma once

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kplab/io.h"
#include "kplab/profile.h"

namespace kplab::test {

// Documents "1", "2", ... without text, document i's references refs[i] (one form each).
inline RawDataset RefsOnlyDataset(const std::vector<std::vector<std::string>>& refs) {
  RawDataset ds;
  ds.path = ds.name = "mem";
  for (std::size_t i = 0; i < refs.size(); ++i) {
    RawDoc d;
    d.id = std::to_string(i + 1);
    d.has_text = false;
    for (const auto& r : refs[i]) d.refs.push_back({r});
    ds.docs.push_back(std::move(d));
  }
  return ds;
}

// The predictions file at path, imported and aligned to ds (ImportPredictions, AlignPredictions).
inline Result<RawPredictions> ImportAligned(const RawDataset& ds, const std::string& path) {
  auto p = ImportPredictions(path);
  if (!p) return p.error();
  return AlignPredictions(ds, std::move(*p));
}

// The predictions file at path ("": none) aligned to ds into `aligned`; a failure fails the test.
inline void AlignIfAny(const std::string& path, const RawDataset& ds, std::optional<RawPredictions>& aligned) {
  if (path.empty()) return;
  auto a = ImportAligned(ds, path);
  ASSERT_TRUE(a.ok()) << a.error().message;
  aligned = std::move(*a);
}

// A shared dataset, its predictions ("": none) and a profile.
struct RangeCase {
  std::string dataset, predictions, profile;
};

// The datasets and profiles a corpus built in ranges (per-range ids, or streamed) is tried on: every way
// a document is read, under profiles that cut and clean up pieces differently.
inline std::vector<RangeCase> RangeCases() {
  const std::string shared = std::string(KPLAB_SHARED_DATA) + "/";
  const std::string meng = shared + "kpg_testsets_meng2017/";
  const std::string preds = shared + "predictions/catSeqTG-2RF1/";
  return {
      {meng + "inspec", preds + "inspec/seed1234.txt", "kplab"},
      {meng + "inspec", preds + "inspec/seed1234.txt", "exhird"},     // re-cut pieces
      {meng + "inspec", preds + "inspec/seed1234.txt", "kpeval"},     // cleanup, dedup_join
      {meng + "semeval", preds + "semeval/seed1234.txt", "kenchan"},  // gold matched as given, a warning
      {shared + "kptimes_sample", "", "kplab"},                       // raw text, alternative forms
  };
}

// A shared case as its tests read it: the dataset imported, its predictions aligned (none when it has
// none) and its profile.
struct LoadedCase {
  RawDataset ds;
  std::optional<RawPredictions> aligned;
  Profile profile;
  const RawPredictions* predictions() const { return aligned ? &*aligned : nullptr; }
};

// Loads c into out; a failure fails the test (call it inside ASSERT_NO_FATAL_FAILURE).
inline void LoadCase(const RangeCase& c, LoadedCase& out) {
  auto ds = ImportDataset(c.dataset);
  ASSERT_TRUE(ds.ok()) << ds.error().message;
  out.ds = std::move(*ds);
  ASSERT_NO_FATAL_FAILURE(AlignIfAny(c.predictions, out.ds, out.aligned));
  const std::optional<Profile> profile = FindProfile(c.profile);
  ASSERT_TRUE(profile.has_value()) << c.profile;
  out.profile = *profile;
}

}  // namespace kplab::test
