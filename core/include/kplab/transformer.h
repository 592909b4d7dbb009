// Transformer encoders (BERT, MPNet) read from a local Hugging Face / sentence-transformers snapshot
// and run on the CPU in float32, so the field's own models (uclanlp/keyphrase-mpnet-v1 for KPEval's
// semantic matching and SemR-p, bert-base-uncased for BERTScore) need no Python and no network.
//
// A snapshot directory holds config.json, model.safetensors, tokenizer.json and, when
// sentence-transformers saved it, modules.json, 1_Pooling/config.json and sentence_bert_config.json.
// The hub cache layout models--ORG--NAME/ (refs/main, snapshots/SHA/) is resolved to its snapshot.
//
// The network, as Hugging Face's BertModel / MPNetModel compute it (post-LayerNorm layers, exact erf
// GELU, softmax attention; MPNet: positions from 2 (HF's MPNetEmbeddings fixes padding_idx = 1) and
// one relative-position bias per head shared by every layer, bucketed as HF's
// relative_position_bucket in float32 with 32 buckets whatever the config says, as HF does). Sequences are
// run unpadded: several at once as one matrix of token rows (attention within each sequence), the
// matrix products on fixed blocks of rows, so padding never enters a result and, on OpenBLAS kernels
// that round a row independently of its place in a block (not Haswell / Zen), a text's vector is the
// same bits whatever is embedded with it (elsewhere within 1e-6 of its largest value). A phrase's vector is the
// sentence-transformers output: the text lower-cased first when sentence_bert_config.json says
// do_lower_case, tokenized with the special tokens and cut to max_seq_length tokens (as
// sentence-transformers truncates: the text's tokens from the right, the special tokens kept), the
// last layer pooled (CLS / mean / max / mean_sqrt_len_tokens as 1_Pooling/config.json says, modes
// concatenated in sentence-transformers' order), L2-normalized when modules.json has a Normalize
// module. Without modules.json (a plain Hugging Face model) the pooling is mean, as
// sentence-transformers builds it.
//
// Every problem with the files is an Error naming the file and what was expected: an architecture
// other than bert / mpnet, a missing tensor, a tensor of the wrong shape or dtype, a tokenizer whose
// ids do not fit the embedding table, a pytorch_model.bin without model.safetensors (with the command
// that converts it), max_seq_length beyond the position table.
//
// Threads: a loaded TransformerModel is immutable: Embed and EmbedTokens may run on several threads at once
// (each matrix product on its caller's thread and kplab/blas.h's BLAS threads).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kplab/embed.h"
#include "kplab/result.h"

namespace kplab {

struct TransformerConfig {
  std::string model_type;  // "bert" | "mpnet" | "distilbert"
  int vocab_size = 0;
  int hidden = 0;
  int layers = 0;
  int heads = 0;
  int intermediate = 0;
  int max_positions = 0;  // rows of the position table
  int type_vocab = 0;     // bert: token type rows (type 0 is used)
  double layer_norm_eps = 1e-12;
  int pad_token_id = 0;
  int buckets = 32;        // mpnet: relative_attention_num_buckets (rows of the bias table, >= 32)
  // sentence-transformers
  std::string pooling = "mean";  // canonical: modes joined by '+', e.g. "cls", "mean", "mean+max"
  bool normalize = false;
  bool lowercase = false;       // sentence_bert_config.json do_lower_case
  int max_seq_length = 0;       // tokens, special tokens included
  int token_max_length = 0;     // EmbedTokens (bert_score): tokenizer model_max_length, capped
};

// The snapshot directory that path names: path itself when it has config.json; for a hub cache
// directory (models--ORG--NAME), the snapshot refs/main points to, else its only snapshot.
Result<std::string> ResolveSnapshot(const std::string& path);

class TransformerModel final : public Embedder {
 public:
  // Loads and checks a snapshot directory (ResolveSnapshot is applied first).
  static Result<std::unique_ptr<TransformerModel>> Load(const std::string& dir);
  ~TransformerModel() override;

  std::string_view backend() const override { return "transformer"; }
  int dims() const override;
  const std::string& fingerprint() const override;
  Status Embed(const std::vector<std::string_view>& phrases, float* out, std::uint8_t* has) const override;
  int token_layers() const override;
  int token_max_length() const override;
  Status EmbedTokens(const std::vector<std::string_view>& texts, int layer, TokenBatch& out) const override;
  // max_tokens is capped at the position table (minus MPNet's offset); errors: max_tokens < 3.
  Status EmbedLimited(const std::vector<std::string_view>& texts, int max_tokens, float* out,
                      std::uint8_t* has) const override;

  // Cross-encoders (a BertForSequenceClassification checkpoint: pooler and classifier weights present):
  // the number of outputs of the classifier, 0 for an encoder without one.
  int num_labels() const;
  // sentence-transformers' CrossEncoder.predict for a model with one label: per pair (a, b), the sigmoid
  // of the logit of [CLS] a [SEP] b [SEP] (token types 0 then 1), cut to max_tokens tokens (0: the
  // tokenizer's model_max_length) as transformers' 'longest_first' truncation cuts a pair. Errors: no
  // one-label head, not BERT.
  Result<std::vector<float>> ScorePairs(const std::vector<std::pair<std::string_view, std::string_view>>& pairs,
                                        int max_tokens) const;

  // Layers from one run (MoverScore v1 pools the last five); see Embedder::EmbedTokenLayers.
  Status EmbedTokenLayers(const std::vector<std::string_view>& texts, const std::vector<int>& layers,
                          TokenBatch& out) const override;
  std::string TokenText(int id) const override;

  const TransformerConfig& config() const;
  // The files the fingerprint covers, relative to the snapshot, in the order hashed.
  const std::vector<std::string>& hashed_files() const;
  const std::string& dir() const;

  // Token ids with the special tokens, cut to max_len (0: max_seq_length); returns true when cut.
  // sentence_bert_config.json's do_lower_case applies unless raw (bert_score uses the tokenizer alone).
  bool Tokenize(std::string_view text, std::size_t max_len, std::vector<int>& ids,
                std::vector<std::uint8_t>& special, bool raw = false) const;
  // The network on given ids: every layer's hidden states 0 .. last (hidden_states[i] of Hugging
  // Face), each ids.size() x hidden floats, for one sequence run alone.
  Result<std::vector<std::vector<float>>> HiddenStates(const std::vector<int>& ids, int last) const;
  // Pooling of one sequence's last-layer rows with a mode ("cls", "mean", "max", "mean_sqrt_len").
  static std::vector<float> Pool(const float* rows, std::size_t n, int dims, std::string_view mode);
  // MPNet's bucket for memory_position - context_position = rel.
  int Bucket(int rel) const;

 private:
  struct Impl;
  struct Loader;  // Load's phases (transformer.cc)
  Status EmbedUnchecked(const std::vector<std::string_view>& phrases, float* out, std::uint8_t* has,
                        std::size_t max_len = 0) const;
  Status EmbedTokensUnchecked(const std::vector<std::string_view>& texts, int layer, TokenBatch& out) const;
  Status EmbedTokenLayersUnchecked(const std::vector<std::string_view>& texts, const std::vector<int>& layers,
                                   TokenBatch& out) const;
  explicit TransformerModel(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace kplab
