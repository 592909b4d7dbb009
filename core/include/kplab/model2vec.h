// Model2Vec static embeddings (github.com/MinishLab/model2vec, e.g. minishlab/potion-base-8M): a
// token embedding table plus a Hugging Face tokenizer. A phrase's vector is computed as model2vec's
// StaticModel.encode() does (model2vec/model.py):
//   1. cut the text to 512 * median_token_length characters (the median of the vocabulary's token
//      lengths in code points, as int(np.median(...)));
//   2. tokenize without special tokens (hf_tokenizer.h);
//   3. drop the unknown-token id when the tokenizer model has an unk_token (WordPiece, WordLevel);
//      Python model2vec finds no unk_token on a Unigram model and keeps its unknown ids;
//   4. keep the first 512 ids;
//   5. mean of the token rows, each multiplied by weights[id] first when the file has a "weights"
//      tensor, and read through mapping[id] when it has a "mapping" tensor (vocabulary-quantized
//      models). The arithmetic follows numpy's: float32 tables are summed in float32 in token
//      order; int8 tables and weighted rows in float64. (numpy rounds a float16 table's mean to
//      float16; kplab keeps it in float32.)
//   6. L2-normalize (x / (|x| + 1e-32), the norm by numpy's pairwise sum) when the configuration
//      says normalize.
// A phrase with no token left has no vector (has = 0, zero row).
//
// Directory layouts: model2vec's (model.safetensors with tensor "embeddings", tokenizer.json,
// config.json) and sentence-transformers' (tensor "embedding.weight",
// config_sentence_transformers.json, modules.json). normalize comes from the layout's config file
// ("normalize": bool), else from modules.json (a Normalize module), else true (as model2vec-rs;
// Python model2vec would take false when the key is missing). Embedding dtypes F32, F16, BF16 and
// I8 (int8 values as they are: model2vec stores no scale, and normalization cancels one anyway).
//
// fingerprint() is the lower-case hex SHA-256 over the files that decide the output
// (model.safetensors, tokenizer.json, the config file used, modules.json when it decided
// normalize), each prefixed by its name and byte length, in name order (the scheme of the dataset
// content hashes).
//
// Threads: a loaded model is immutable: Embed may run on several threads at once.
#pragma once

#include <memory>
#include <string>

#include "kplab/embed.h"
#include "kplab/result.h"

namespace kplab {

// Loads a Model2Vec model directory. Every problem (missing or corrupt file, unsupported tokenizer
// component, NaN weights, sizes that disagree) is an Error naming the file and what was expected.
Result<std::unique_ptr<Embedder>> LoadModel2Vec(const std::string& dir);

}  // namespace kplab
