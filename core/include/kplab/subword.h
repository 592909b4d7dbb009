// Detokenization of subword tokens (the "tokens" prediction format, docs/calibration.md): the text of
// a keyphrase from its tokens, and its word count. Part of text/ and free of the corpus, so that the
// importer (io/) uses it without depending on calibration (calib.h includes the corpus, whose header
// includes io.h). The names stay in kplab::calib, where calib.h declared them first; calib.h includes
// this header.
//
// Threads: no shared state: pure functions, safe from several threads at once.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kplab/result.h"

namespace kplab::calib {

// Subword schemes by their word markers: "none" (word-level: every token a word), "sentencepiece"
// ("▁" starts a word: T5, mT5, ...), "wordpiece" ("##" continues a word: BERT), "bpe" (byte-level BPE
// with "Ġ" starting a word: GPT-2, BART, RoBERTa).
enum class Subword { kNone, kSentencePiece, kWordPiece, kByteBpe };
Result<Subword> ParseSubword(std::string_view s);

// The text of a keyphrase from its tokens under a scheme, with surrounding spaces stripped; fills
// word_start (one flag per token). Errors (byte-level BPE only): a character outside the GPT-2 byte
// alphabet, or bytes that are not UTF-8 once decoded.
Result<std::string> Detokenize(std::span<const std::string> tokens, Subword scheme,
                               std::vector<std::uint8_t>* word_start);

// Words of a string split on spaces (empty pieces, from repeated spaces, are not words).
int CountWords(std::string_view s);

}  // namespace kplab::calib
