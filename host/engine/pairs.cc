#include "pairs.h"

#include <string>
#include <utility>
#include <variant>

#include <fmt/format.h>

namespace kplab::host {

Result<std::shared_ptr<const PairIndex>> MineCorpusPairs(const Corpus& corpus, const MetricPlugin& plugin,
                                                         std::shared_ptr<const EmbeddingSpace> space) {
  homog::GoldPairOptions options;
  std::string vocabulary;
  if (auto it = plugin.params.find("theta"); it != plugin.params.end()) {
    const double* t = std::get_if<double>(&it->second);
    if (!t) return Error::Usage("parameter 'theta' must be a number");
    options.theta = *t;
  }
  for (auto [name, flag] :
       {std::pair{"mine_stem", &options.stem}, std::pair{"keep_identical", &options.keep_identical}}) {
    if (auto it = plugin.params.find(name); it != plugin.params.end()) {
      const bool* b = std::get_if<bool>(&it->second);
      if (!b) return Error::Usage(fmt::format("parameter '{}' must be a boolean", name));
      *flag = *b;
    }
  }
  if (auto it = plugin.params.find("vocabulary"); it != plugin.params.end()) {
    const std::string* v = std::get_if<std::string>(&it->second);
    if (!v || (!v->empty() && *v != "gold")) {
      return Error::Usage("parameter 'vocabulary' must be \"gold\" or \"\" (none)");
    }
    vocabulary = *v;
  }
  auto gold = homog::MineGoldPairs(corpus, options);
  if (!gold.ok()) return gold.error();
  auto index = std::make_shared<PairIndex>();
  index->gold = std::move(*gold);
  if (vocabulary == "gold") {
    if (!space)
      return Error::Script("vocabulary = \"gold\" needs embeddings: declare needs = {\"pairs\", \"embeddings\"}");
    const EmbeddingSpace& s = *space;
    auto vocab = homog::BuildGoldVocabulary(
        corpus, s.dims, s.model.fingerprint, s.has.size(), s.vecs.data(), [&s](const Phrase& p) {
          const std::int32_t row = s.Row(p, EmbedForm::kSurface);
          return row >= 0 && s.has[row] ? row : -1;
        });
    if (!vocab.ok()) return vocab.error();
    index->vocab = std::move(*vocab);
    index->space = std::move(space);
  }
  return std::shared_ptr<const PairIndex>(std::move(index));
}

}  // namespace kplab::host
