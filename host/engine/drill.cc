#include "drill.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "evaluate.h"
#include "kplab/match.h"
#include "merge.h"

namespace kplab::host {

Result<Corpus> ReloadRunCorpus(const RunRecord& run) {
  const std::int64_t id = run.id;
  // How the run read its dataset: the "_dataset" record EvaluateCorpus writes into params_json.
  auto params = ParseRunParams(run.params_json);
  // Relabel on purpose (tests/layout/error_relabels.py): ParseRunParams calls text it cannot read a usage
  // error (it also reads shards named on the command line), but params_json was written by kplab into
  // the store: if it does not parse, the store is damaged.
  if (!params) return Error::Store(fmt::format("run {}: {}", id, params.error().message));
  const std::map<std::string, std::string> none;
  const auto found = params->records.find("_dataset");
  const std::map<std::string, std::string>& ds = found == params->records.end() ? none : found->second;
  auto field = [&](const char* key) -> std::optional<std::string> {
    const auto it = ds.find(key);
    return it == ds.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
  EvalRequest req;
  req.dataset_path = run.dataset_path;
  req.dataset_options.format = run.dataset_format;
  req.dataset_options.refs_stemmed = field("refs_stemmed") == "true";
  req.dataset_options.hulth_keys = field("hulth_keys").value_or("");
  req.dataset_options.semeval_answers = field("semeval_answers").value_or("");
  req.dataset_options.split = field("split").value_or("");
  req.dataset_options.references = field("references").value_or("");
  req.source_path = field("source");
  req.predictions_path = run.predictions_path;
  req.profile = run.profile;
  auto corpus = LoadCorpus(req);
  if (!corpus) {
    return Error(corpus.error().kind, fmt::format("run {}: cannot re-read its files: {}", id, corpus.error().message));
  }
  const std::string dataset_hash = RunDatasetHash(corpus->dataset_hash, req.dataset_options);
  if (dataset_hash != run.dataset_hash || corpus->predictions_hash != run.predictions_hash) {
    const bool ds = dataset_hash != run.dataset_hash;
    return Error::Input(fmt::format(
        "run {}: {} changed since the run (sha256 {}... now, {}... then), so what is shown "
        "would not be what was scored",
        id, ds ? run.dataset_path : run.predictions_path, (ds ? dataset_hash : corpus->predictions_hash).substr(0, 12),
        (ds ? run.dataset_hash : run.predictions_hash).substr(0, 12)));
  }
  return corpus;
}

Result<DocView> ViewDocument(RunStore& store, std::int64_t id, const std::string& doc_id) {
  auto run = store.GetRun(id);
  if (!run) return run.error();
  const auto it = std::find(run->doc_ids.begin(), run->doc_ids.end(), doc_id);
  if (it == run->doc_ids.end()) {
    return Error::Usage(fmt::format("run {} has no document '{}' (it has {}{})", id, doc_id, run->doc_ids.size(),
                                    run->doc_ids.empty() ? "" : ", e.g. '" + run->doc_ids.front() + "'"));
  }
  const std::size_t index = static_cast<std::size_t>(it - run->doc_ids.begin());
  auto corpus = ReloadRunCorpus(*run);
  if (!corpus) return corpus.error();
  if (index >= corpus->docs.size() || corpus->docs[index].id != doc_id) {
    return Error::Input(fmt::format("run {}: document '{}' is not where the run had it", id, doc_id));
  }
  const Document& d = corpus->docs[index];
  DocView v;
  v.run = id;
  v.doc_id = doc_id;
  v.system = run->system;
  v.dataset = run->dataset_name;
  v.profile = run->profile;
  v.has_text = d.has_text;
  const auto& preds = d.pred_view(0);
  const auto& refs = d.ref_view(0);
  const std::vector<std::uint8_t> pairs = ExactMatchPairs(preds, refs);
  for (std::size_t i = 0; i < preds.size(); ++i) {
    bool m = false;
    for (std::size_t j = 0; j < refs.size(); ++j) m = m || pairs[i * refs.size() + j];
    v.preds.push_back({std::string(preds[i]->surface()), preds[i]->present(), m});
  }
  for (std::size_t j = 0; j < refs.size(); ++j) {
    bool m = false;
    for (std::size_t i = 0; i < preds.size(); ++i) m = m || pairs[i * refs.size() + j];
    v.refs.push_back({std::string(refs[j]->surface()), refs[j]->present(), m});
  }
  auto scores = store.GetScores(id);
  if (!scores) return scores.error();
  for (std::size_t c = 0; c < scores->metrics.size(); ++c) {
    v.scores.emplace_back(scores->metrics[c], index < scores->columns[c].size() ? scores->columns[c][index] : std::nan(""));
  }
  return v;
}

Result<std::vector<RankedDoc>> RankDocuments(RunStore& store, std::int64_t id, const std::string& metric,
                                             bool best_first, std::size_t limit) {
  auto run = store.GetRun(id);
  if (!run) return run.error();
  auto scores = store.GetScores(id);
  if (!scores) return scores.error();
  const auto c = std::find(scores->metrics.begin(), scores->metrics.end(), metric);
  if (c == scores->metrics.end()) {
    std::string some;
    for (std::size_t i = 0; i < scores->metrics.size() && i < 8; ++i) some += (i ? ", " : "") + scores->metrics[i];
    return Error::Usage(fmt::format("run {} has no per-document column '{}' (it has {}{}{})", id, metric,
                                    scores->metrics.size(), scores->metrics.empty() ? "" : ": ",
                                    some + (scores->metrics.size() > 8 ? ", ..." : "")));
  }
  const auto& col = scores->columns[static_cast<std::size_t>(c - scores->metrics.begin())];
  std::vector<RankedDoc> out;
  for (std::size_t i = 0; i < run->doc_ids.size() && i < col.size(); ++i) out.push_back({run->doc_ids[i], col[i]});
  std::stable_sort(out.begin(), out.end(), [&](const RankedDoc& a, const RankedDoc& b) {
    if (std::isnan(a.value) != std::isnan(b.value)) return !std::isnan(a.value);
    return best_first ? a.value > b.value : a.value < b.value;
  });
  if (limit && out.size() > limit) out.resize(limit);
  return out;
}

}  // namespace kplab::host
