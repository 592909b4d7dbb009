#include "kplab/embedding_plan.h"

#include <cmath>

#include <fmt/format.h>

#include "kplab/file_gate.h"

namespace kplab {

std::string_view FormText(const Corpus& c, const Phrase& p, EmbedForm f) {
  return f == EmbedForm::kSurface ? p.surface() : c.Str(p.key);
}

namespace {

// Per phrase id: does some document list it (its references, before or after dedup, or its
// predictions)? The corpus interns every piece it reads, also those the profile then drops (the
// "<peos>" marker, an invalid prediction, a piece past max_pieces): no plugin is ever handed those, so
// the plan does not embed them.
std::vector<std::uint8_t> ListedPhrases(const Corpus& corpus) {
  std::vector<std::uint8_t> listed(corpus.phrases.size(), 0);
  for (const Document& d : corpus.docs) {
    for (const std::span<const Keyphrase> list : {d.refs, d.refs_before_dedup(), d.preds}) {
      for (const Keyphrase& kp : list) listed[kp.phrase->id] = 1;
    }
  }
  return listed;
}

}  // namespace

PhrasePlan CollectPhrases(const Corpus& corpus, const bool (&forms)[kEmbedForms]) {
  RequireCorpusIds(corpus, "the embedding plan");
  PhrasePlan plan;
  const std::vector<std::uint8_t> listed = ListedPhrases(corpus);
  // Keys are views of the corpus's own strings (surfaces in its arena, stem keys in its lexicon),
  // which outlive this call: one copy per distinct text, into plan.texts. A million distinct phrases:
  // rehashing the map as it grows cost more than filling it.
  std::unordered_map<std::string_view, std::int32_t> row_by_text;
  row_by_text.reserve(corpus.phrases.size());
  plan.texts.reserve(corpus.phrases.size());
  for (int f = 0; f < kEmbedForms; ++f) {
    if (!forms[f]) continue;
    auto& rows = plan.row_of[f];
    rows.assign(corpus.phrases.size(), -1);
    for (const Phrase& p : corpus.phrases) {
      if (!listed[p.id]) continue;
      const std::string_view t = FormText(corpus, p, static_cast<EmbedForm>(f));
      auto [it, inserted] = row_by_text.emplace(t, static_cast<std::int32_t>(plan.texts.size()));
      if (inserted) {
        plan.texts.emplace_back(t);
        plan.forms.push_back(0);
      }
      plan.forms[it->second] |= static_cast<std::uint8_t>(1u << f);
      rows[p.id] = it->second;
    }
  }
  return plan;
}

Status EmbeddingSpace::Lookup(std::string_view text, std::vector<float>& out, bool& has_vec) const {
  out.assign(static_cast<std::size_t>(dims), 0.0f);
  std::call_once(row_by_text_once_, [this] {
    row_by_text_.reserve(texts.size());
    for (std::size_t r = 0; r < texts.size(); ++r) row_by_text_.emplace(texts[r], static_cast<std::int32_t>(r));
  });
  auto it = row_by_text_.find(text);
  if (it != row_by_text_.end()) {
    const float* v = vecs.data() + static_cast<std::size_t>(it->second) * dims;
    out.assign(v, v + dims);
    has_vec = has[it->second] != 0;
    return Status::Ok();
  }
  std::uint8_t h = 0;
  Status st = embedder->Embed({text}, out.data(), &h);
  double n2 = 0;
  for (float x : out) n2 += static_cast<double>(x) * x;
  has_vec = h != 0 && n2 > 0 && std::isfinite(n2);  // the cache's rule: a zero vector is no vector
  return st;
}

Result<std::shared_ptr<EmbeddingSpace>> PlanEmbeddings(const Corpus& corpus, const PlanRequest& req) {
  const std::string name = req.model_name.empty() ? DefaultModelName() : req.model_name;
  auto space = std::make_shared<EmbeddingSpace>();
  // A model registered at run time (e.g. a Python callable) shadows an installed one of that name.
  if (auto runtime = FindRuntimeModel(name, &space->model)) {
    space->embedder = std::move(runtime);
  } else {
    // A script or plugin names a model, never where it lives: the registry is the user's, so its manifest
    // and (later, when DeferredEmbedder loads them) its files are opened in the user's context.
    UserFileScope user;
    auto info = GetModel(ModelsDir(), name);
    if (!info.ok()) return info.error();
    // Its files are opened only when a phrase must be embedded (not found in the cache, or asked for
    // by a plugin beyond the plan): a warm run reads no weights.
    space->model = *info;
    space->embedder = DeferredEmbedder(*info);
  }
  space->dims = space->embedder->dims();

  PhrasePlan plan = CollectPhrases(corpus, req.forms);
  for (int f = 0; f < kEmbedForms; ++f) space->row_of[f] = std::move(plan.row_of[f]);
  space->texts = std::move(plan.texts);
  const std::vector<std::string>& texts = space->texts;
  std::vector<std::string_view> views(texts.begin(), texts.end());
  space->vecs.assign(views.size() * space->dims, 0.0f);
  space->has.assign(views.size(), 0);
  auto cache = PhraseCache::Open(req.db_path);
  if (!cache.ok()) return cache.error();
  auto stats = cache->Get(*space->embedder, name, views, space->vecs.data(), space->has.data(), req.threads);
  if (!stats.ok()) return stats.error();
  space->cache = *stats;
  space->no_vector = stats->no_vector;
  if (req.neighbors) {
    auto index = cache->Index(*space->embedder);
    if (!index.ok()) return index.error();
    space->index = *index;
    auto all = cache->AllPhrases(space->embedder->fingerprint());
    if (!all.ok()) return all.error();
    for (auto& [id, text] : *all) space->label_text.emplace(id, std::move(text));
  }
  return space;
}

std::vector<std::pair<std::string, double>> Neighbors(const EmbeddingSpace& s, const float* q, int k,
                                                      std::string_view exclude) {
  std::vector<std::pair<std::string, double>> out;
  if (!s.index || k <= 0) return out;
  for (const auto& [label, cos] : s.index->Search(q, k + 1)) {
    auto it = s.label_text.find(label);
    if (it == s.label_text.end() || it->second == exclude) continue;
    out.emplace_back(it->second, cos);
    if (static_cast<int>(out.size()) == k) break;
  }
  return out;
}

}  // namespace kplab
