// Inputs the corpus tests build corpora from: a dataset of references only, made in memory, and a
// predictions file imported and aligned to a dataset, as `kplab eval` reads them.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "kplab/io.h"

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

}  // namespace kplab::test
