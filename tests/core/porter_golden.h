// The Porter golden files' stem codes (tests/data/porter/*.tsv.gz, written from nltk 3.8's stemmer):
// read by the stemmer's tests and by the corpus's token-table test.
#pragma once

#include <cstdlib>
#include <string>
#include <string_view>

namespace kplab::test {

// "D:REST": the word with A-Z mapped to a-z, minus its last D bytes, plus REST.
inline std::string DecodeStemCode(std::string_view word, std::string_view code) {
  std::string base(word);
  for (char& c : base) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + ('a' - 'A'));
  }
  const std::size_t colon = code.find(':');
  const std::size_t drop = std::strtoul(std::string(code.substr(0, colon)).c_str(), nullptr, 10);
  return base.substr(0, base.size() - drop) + std::string(code.substr(colon + 1));
}

}  // namespace kplab::test
