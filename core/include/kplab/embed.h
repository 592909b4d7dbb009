// Phrase embedders. A model is a backend (wordvec, model2vec, precomputed) + its files + its pooling
// configuration, identified by a fingerprint: the SHA-256 (hex) of its weights and configuration. The
// fingerprint is part of every phrase-cache key and every run record, so two models never mix.
//
// Every backend maps a phrase (the string the metric asks about, e.g. a keyphrase's normalized surface)
// to one float32 vector of dims() values, or to "no vector" (e.g. every word out of vocabulary).
// Cosines involving a phrase without a vector are 0 (docs/embeddings.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kplab/result.h"

namespace kplab {

class Embedder {
 public:
  virtual ~Embedder() = default;

  virtual std::string_view backend() const = 0;  // "wordvec", "model2vec", "precomputed"
  virtual int dims() const = 0;
  // Lower-case hex SHA-256 of weights + configuration.
  virtual const std::string& fingerprint() const = 0;

  // Embeds n phrases. out has room for phrases.size() * dims() floats; has[i] is set to 1 when phrase
  // i got a vector, 0 when it has none (its row of out is then all zeros). Errors are for conditions
  // that make the whole batch meaningless (e.g. a precomputed table that lacks phrases). Must be safe to
  // call concurrently from several threads.
  virtual Status Embed(const std::vector<std::string_view>& phrases, float* out,
                       std::uint8_t* has) const = 0;
};

}  // namespace kplab
