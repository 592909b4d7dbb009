// Whole-document kernels of the shipped metrics exact, rank and rprec (docs/design-notes.md, note 25):
// the arithmetic of the score functions of plugins/exact.lua, rank.lua and rprec.lua in one native call
// per document and subset, with the same operations in the same order, so the numbers are the plugins'
// bit for bit. A plugin selects one with `score = kp.kernel.NAME`; its Lua file keeps the parameters,
// the columns and the aggregation (docs/plugins.md, "Native kernels").
//
// Threads: a MetricKernel is read-only while it scores: one kernel, built once per run, is shared by all
// scoring threads and Score runs on them at once.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kplab/corpus.h"
#include "kplab/match.h"
#include "kplab/result.h"

namespace kplab {

// What a kernel reads besides the document: the plugin's parameters it uses (cut-offs of `ks`, `alpha`)
// and the profile's knobs.
struct KernelParams {
  std::vector<Cutoff> ks;
  double alpha = 0.5;
};

// One subset of a document a kernel scores: its view (0 all, 1 present, 2 absent: Document::pred_view
// and ref_view) and its name ("" for a plugin without subsets, scored on the whole lists).
struct KernelSubset {
  int view = 0;
  std::string_view name;
};

class MetricKernel {
 public:
  virtual ~MetricKernel() = default;
  // The columns the kernel writes, relative to the subset ("p@5", "mrr"), in the order of Score's values.
  const std::vector<std::string>& names() const { return names_; }
  // Scores the given subsets of one document in one call (what the subsets share, such as the match
  // relation between all predictions and references, is computed once): row s of values, values[s *
  // names().size() ...], receives subsets[s]. Present/absent subsets of a document without text must not
  // be asked for.
  virtual void Score(const Corpus& corpus, const Document& doc, std::span<const KernelSubset> subsets,
                     std::span<double> values) const = 0;

 protected:
  std::vector<std::string> names_;
};

// While a scope lives, the kernels that score `doc` on this thread share what they read of it (its
// predictions' and references' keys and stems, and the sets the relations filter with) rather than each
// reading it again: the runner opens one around each document's kernels. Outside a scope, and for any
// other document, a kernel reads the document afresh. A second scope on the thread replaces the first.
class KernelDocumentScope {
 public:
  explicit KernelDocumentScope(const Document& doc);
  ~KernelDocumentScope();
  KernelDocumentScope(const KernelDocumentScope&) = delete;
  KernelDocumentScope& operator=(const KernelDocumentScope&) = delete;
};

// The kernel called `name` ("exact", "rank", "rprec") for these parameters and profile; ErrorKind::kUsage
// for an unknown name.
Result<std::unique_ptr<MetricKernel>> MakeMetricKernel(std::string_view name, const KernelParams& params,
                                                       const Profile& profile);
}  // namespace kplab
