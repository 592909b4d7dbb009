// Hugging Face tokenizers (tokenizer.json), the subset that Model2Vec models use, reimplemented so
// kplab needs no Rust or Python at run time. Encode() gives the ids that the reference library
// gives for encode(text, add_special_tokens=False):
//   1. added tokens (e.g. "[CLS]") found in the raw text keep their ids (leftmost-longest match,
//      with their single_word / lstrip / rstrip flags; "normalized" ones are looked for in the
//      normalized text); the text between them goes on. As in the reference, an added token's id
//      is its id in the model's vocabulary, or a new id after it: the "id" in the file is unused;
//   2. normalizer: BertNormalizer, Lowercase, Strip, StripAccents, NFC/NFD/NFKC/NFKD, Nmt, Prepend,
//      Replace (a string, or the regex \s+ or " +"), or a Sequence of these;
//   3. pre-tokenizer: BertPreTokenizer, Whitespace, WhitespaceSplit, Metaspace, Punctuation,
//      Digits, or a Sequence of these;
//   4. model: WordPiece (greedy longest-match-first), Unigram (Viterbi over piece scores; unknown
//      characters fused into one unknown piece; byte_fallback) or WordLevel.
// A component outside this list is a load error naming the file and the component, never a silently
// different tokenization. Character classes (punctuation, whitespace, marks, case, normal forms)
// come from ICU. Text that is not valid UTF-8 is read with U+FFFD for each bad sequence.
//
// A "truncation" in the file applies (as in the reference's encode()); a "padding" is a load error.
// The post-processor (TemplateProcessing's single template, BertProcessing, RobertaProcessing, or a
// Sequence with ByteLevel) gives EncodeWithSpecials its special tokens; another one is a load error.
// Checked against the reference library (tokenizers 0.23.2) under 23 configurations of the
// Model2Vec fixtures' tokenizers (tests/data/model2vec/tokenizer_oracle.txt). The object is
// immutable after Load(): Encode() is thread-safe.
//
// Threads: an HfTokenizer is immutable after Load/Parse: one may Encode on several threads at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kplab/result.h"

namespace kplab {

class HfTokenizer {
 public:
  // Reads and parses tokenizer.json; errors name the file and the field.
  static Result<HfTokenizer> Load(const std::string& path);
  // Parses the JSON text; path is only used in messages.
  static Result<HfTokenizer> Parse(std::string_view json, const std::string& path);
  // for_encoder: the tokenizer of a transformer (EncodeWithSpecials, one text at a time), for which a
  // "padding" in the file is ignored as transformers ignores it when called without padding.
  static Result<HfTokenizer> Parse(std::string_view json, const std::string& path, bool for_encoder);

  HfTokenizer(HfTokenizer&&) noexcept;
  HfTokenizer& operator=(HfTokenizer&&) noexcept;
  ~HfTokenizer();

  // Token ids of text, without special tokens added around it.
  std::vector<int> Encode(std::string_view text) const;
  // The same into ids (cleared first), to reuse its storage.
  void Encode(std::string_view text, std::vector<int>& ids) const;
  // Token ids as encode(text, add_special_tokens=True, truncation=True, max_length=max_length) gives
  // them (what sentence-transformers and bert_score call): the post-processor's single-sequence
  // special tokens around the text's tokens, the text's tokens cut from the right so that the whole
  // fits max_length (0 = no limit). The file's own "truncation" is not applied here: the callers that
  // add special tokens (sentence-transformers, bert_score) replace it with theirs. special[i] = 1 for
  // the ids the post-processor added. Returns true when tokens were cut.
  bool EncodeWithSpecials(std::string_view text, std::size_t max_length, std::vector<int>& ids,
                          std::vector<std::uint8_t>& special) const;
  // How many ids the post-processor adds to one text (0 without one).
  std::size_t num_special_tokens() const;
  bool has_post_processor() const;

  std::string_view model_type() const;  // "WordPiece", "Unigram" or "WordLevel"
  // The model's unknown-token id (WordPiece/WordLevel: the id of unk_token; Unigram: unk_id), or
  // -1.
  int unk_id() const;
  // Highest token id + 1 (vocabulary and added tokens).
  int vocab_size() const;
  // -1 when token is neither in the vocabulary nor an added token.
  int TokenToId(std::string_view token) const;
  // Every distinct token string (vocabulary and added tokens), as get_vocab() lists them.
  std::vector<std::string_view> Tokens() const;

 // The parser's functions fill it (hf_tokenizer.cc).
  struct Impl;

 private:
  explicit HfTokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace kplab
