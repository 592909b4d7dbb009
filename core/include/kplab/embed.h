// Phrase embedders. A model is a backend (wordvec, model2vec, precomputed, transformer) + its files + its pooling
// configuration, identified by a fingerprint: the SHA-256 (hex) of its weights and configuration. The
// fingerprint is part of every phrase-cache key and every run record, so two models never mix.
//
// Every backend maps a phrase (the string the metric asks about, e.g. a keyphrase's normalized surface)
// to one float32 vector of dims() values, or to "no vector" (e.g. every word out of vocabulary).
// Cosines involving a phrase without a vector are 0 (docs/embeddings.md).
//
// Threads: an Embedder's const members (Embed, EmbedTokens, ...) may be called from several threads at once
// on one object.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kplab/result.h"

namespace kplab {

// Contextual token embeddings of several strings (transformer backends): every string's tokens, the
// special tokens its post-processor adds included ([CLS] ... [SEP], <s> ... </s>), in order.
struct TokenBatch {
  int dims = 0;
  std::vector<float> vecs;            // one row of dims floats per token, strings one after another
  std::vector<std::size_t> offsets;   // string i's rows are offsets[i] .. offsets[i + 1] - 1
  std::vector<int> ids;               // per row: the token id
  std::vector<std::uint8_t> special;  // per row: 1 when the post-processor added it (CLS/SEP-like)
  std::vector<std::uint8_t> truncated;  // per string: 1 when cut to the model's max_seq_length
};

class Embedder {
 public:
  virtual ~Embedder() = default;

  virtual std::string_view backend() const = 0;  // "wordvec", "model2vec", "precomputed", "transformer"
  virtual int dims() const = 0;
  // Lower-case hex SHA-256 of weights + configuration.
  virtual const std::string& fingerprint() const = 0;

  // Embeds n phrases. out has room for phrases.size() * dims() floats; has[i] is set to 1 when phrase
  // i got a vector, 0 when it has none (its row of out is then all zeros). Errors are for conditions
  // that make the whole batch meaningless (e.g. a precomputed table that lacks phrases). Must be safe to
  // call concurrently from several threads.
  virtual Status Embed(const std::vector<std::string_view>& phrases, float* out,
                       std::uint8_t* has) const = 0;

  // Contextual backends (transformer): the number of layers L, so EmbedTokens takes layer 0 (the
  // embedding layer's output) .. L (the last layer's output), as Hugging Face's hidden_states[layer].
  // -1 for backends without token embeddings (wordvec, model2vec, precomputed).
  virtual int token_layers() const { return -1; }
  // The most tokens EmbedTokens gives one text (special tokens included), or 0 when unknown: lets a
  // caller bound the memory of a call before making it.
  virtual int token_max_length() const { return 0; }
  // Token embeddings of texts at one layer, tokenized as for Embed (special tokens added, cut to
  // max_seq_length). Thread-safe. The default says the backend has none.
  virtual Status EmbedTokens(const std::vector<std::string_view>& texts, int layer,
                             TokenBatch& out) const;
  // Embed with another token limit: sentence-transformers' `model.max_seq_length = n` (KPEval's
  // retrieval sets 512 for whole documents), special tokens included, at most what the model's position
  // table holds. Backends without a token limit (word vectors, Model2Vec, tables) ignore it.
  virtual Status EmbedLimited(const std::vector<std::string_view>& texts, int max_tokens, float* out,
                              std::uint8_t* has) const {
    (void)max_tokens;
    return Embed(texts, out, has);
  }
  // Several layers from one run of the network (MoverScore v1 pools layers L-4 .. L): each token's row
  // is the listed layers' vectors one after another (out.dims = layers.size() x the hidden size), in
  // the order listed; a layer may repeat. The default calls EmbedTokens once per layer.
  virtual Status EmbedTokenLayers(const std::vector<std::string_view>& texts, const std::vector<int>& layers,
                                  TokenBatch& out) const;
  // The vocabulary string of a token id as EmbedTokens gives it ("[CLS]", "##ing"), "" for an id the
  // backend cannot name (MoverScore filters tokens by these strings).
  virtual std::string TokenText(int id) const;
};

}  // namespace kplab
