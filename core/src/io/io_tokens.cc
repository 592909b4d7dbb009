// The "tokens" prediction format: one JSON object a line with the tokens a generator produced and the
// log-probability of each, from which keyphrase perplexity and calibration are computed
// (docs/calibration.md). A keyphrase is a maximal run of tokens that are not listed in "special"
// (delimiters, end-of-sequence, null and padding tokens are not part of any keyphrase, seed 001 §4.1);
// its text comes from the tokens under the declared subword scheme.
#include <fmt/format.h>
#include <simdjson.h>

#include <cmath>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "io/io_internal.h"
#include "util/json_internal.h"
#include "kplab/io.h"
#include "kplab/subword.h"

namespace kplab::io_internal {
namespace {

using json_internal::TypeName;
using simdjson::dom::element;
using simdjson::dom::element_type;

constexpr std::string_view kObject =
    "a JSON object with \"tokens\" and \"logprobs\" (docs/calibration.md)";
// A rounding excess: log-softmax computed in float can come out a hair above 0.
constexpr double kMaxLogprob = 1e-6;

// By value: iterating `e.get_array().value_unsafe()` directly would bind to a temporary's member.
simdjson::dom::array Arr(const element& e) { return e.get_array().value_unsafe(); }

bool Blank(std::string_view line) { return line.find_first_not_of(" \t\r") == std::string_view::npos; }

struct LineCtx {
  const FileData& file;
  int no;
  [[noreturn]] void Fail(std::string_view what, std::string_view expected) const {
    io_internal::Fail(file.path, no, what, expected);
  }
  [[noreturn]] void WrongType(std::string_view what, const element& e, std::string_view expected) const {
    Fail(fmt::format("{} is {}", what, TypeName(e)), expected);
  }
};

std::vector<std::string> Strings(const LineCtx& ctx, const element& e, const std::string& what) {
  if (e.type() != element_type::ARRAY) ctx.WrongType(what, e, "an array of strings");
  std::vector<std::string> out;
  std::size_t i = 0;
  for (element item : Arr(e)) {
    if (item.type() != element_type::STRING) ctx.WrongType(fmt::format("{}[{}]", what, i), item, "a string");
    out.emplace_back(item.get_string().value_unsafe());
    ++i;
  }
  return out;
}

std::vector<double> Logprobs(const LineCtx& ctx, const element& e, const std::string& what) {
  if (e.type() != element_type::ARRAY) ctx.WrongType(what, e, "an array of numbers");
  std::vector<double> out;
  std::size_t i = 0;
  for (element item : Arr(e)) {
    double v = 0;
    // The "what[i]" label is built only for an error: this loop runs once per generated token.
    if (item.get_double().get(v) != simdjson::SUCCESS) {
      ctx.WrongType(fmt::format("{}[{}]", what, i), item, "a log-probability (a number <= 0)");
    }
    if (!std::isfinite(v) || v > kMaxLogprob) {
      ctx.Fail(fmt::format("{}[{}] is {}", what, i, v),
               "a natural-log probability: finite and <= 0 (a token with probability 0 cannot have been generated)");
    }
    out.push_back(v);
    ++i;
  }
  return out;
}

struct LineSpec {
  calib::Subword subword = calib::Subword::kNone;
  std::unordered_set<std::string> special;
  std::unordered_set<std::string> padding;
};

// Every token's log-probability except padding's, for the whole-sequence perplexity.
void AddSequence(const LineSpec& spec, const std::vector<std::string>& tokens, const std::vector<double>& logprobs,
                 RawPrediction& pred) {
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    if (!spec.padding.contains(tokens[i])) pred.sequence_logprobs.push_back(logprobs[i]);
  }
}

// Appends the keyphrases of tokens[begin, end) (runs of non-special tokens) to pred. Returns how many.
int AddKeyphrases(const LineCtx& ctx, const LineSpec& spec, const std::vector<std::string>& tokens,
                  const std::vector<double>& logprobs, const std::string& where, RawPrediction& pred) {
  int added = 0;
  std::size_t i = 0;
  while (i < tokens.size()) {
    if (spec.special.contains(tokens[i])) {
      ++i;
      continue;
    }
    std::size_t j = i;
    while (j < tokens.size() && !spec.special.contains(tokens[j])) ++j;
    TokenProbs tp;
    tp.tokens.assign(tokens.begin() + static_cast<std::ptrdiff_t>(i), tokens.begin() + static_cast<std::ptrdiff_t>(j));
    tp.logprobs.assign(logprobs.begin() + static_cast<std::ptrdiff_t>(i),
                       logprobs.begin() + static_cast<std::ptrdiff_t>(j));
    auto text = calib::Detokenize(tp.tokens, spec.subword, &tp.word_start);
    if (!text) ctx.Fail(fmt::format("{} tokens {}..{}: {}", where, i, j - 1, text.error().message),
                        "tokens of the declared \"subword\" scheme");
    tp.words = calib::CountWords(*text);
    pred.phrases.push_back(std::move(*text));
    pred.token_probs.push_back(std::move(tp));
    ++added;
    i = j;
  }
  return added;
}

}  // namespace

bool IsTokenPredictionFile(const FileData& file) {
  simdjson::dom::parser parser;
  for (std::string_view line : SplitLines(file.bytes)) {
    if (Blank(line)) continue;
    element el;
    if (parser.parse(line.data(), line.size()).get(el) != simdjson::SUCCESS) return false;
    if (el.type() != element_type::OBJECT) return false;
    element field;
    return el.get_object().value_unsafe().at_key("logprobs").get(field) == simdjson::SUCCESS;
  }
  return false;
}

void ParseTokenPredictions(const FileData& file, RawPredictions& out) {
  simdjson::dom::parser parser;
  const auto lines = SplitLines(file.bytes);
  for (std::size_t li = 0; li < lines.size(); ++li) {
    const LineCtx ctx{file, static_cast<int>(li + 1)};
    if (Blank(lines[li])) continue;
    element el;
    if (auto err = parser.parse(lines[li].data(), lines[li].size()).get(el); err != simdjson::SUCCESS) {
      ctx.Fail(json_internal::JsonProblem(lines[li], err, true), kObject);
    }
    if (el.type() != element_type::OBJECT) ctx.WrongType("line", el, kObject);
    const simdjson::dom::object obj = el.get_object().value_unsafe();
    for (auto field : obj) {
      const std::string_view k = field.key;
      if (k != "id" && k != "decoding" && k != "subword" && k != "special" && k != "tokens" && k != "logprobs" &&
          k != "padding") {
        ctx.Fail(fmt::format("unknown field \"{}\"", k),
                 "only id, decoding, subword, special, padding, tokens, logprobs");
      }
    }
    RawPrediction pred;
    pred.loc = {LocPath(file), ctx.no};
    element e;
    if (obj.at_key("id").get(e) == simdjson::SUCCESS) {
      if (e.type() == element_type::STRING) {
        pred.doc_id.assign(e.get_string().value_unsafe());
      } else if (e.type() == element_type::INT64) {
        pred.doc_id = std::to_string(e.get_int64().value_unsafe());
      } else if (e.type() == element_type::UINT64) {
        pred.doc_id = std::to_string(e.get_uint64().value_unsafe());
      } else {
        ctx.WrongType("field \"id\"", e, "a string or an integer");
      }
    }
    if (obj.at_key("decoding").get(e) == simdjson::SUCCESS) {
      const std::string_view d = e.type() == element_type::STRING ? e.get_string().value_unsafe() : "";
      if (d == "one2set") {
        pred.one2set = true;
      } else if (d != "one2seq") {
        if (e.type() != element_type::STRING) ctx.WrongType("field \"decoding\"", e, "\"one2seq\" or \"one2set\"");
        ctx.Fail(fmt::format("field \"decoding\" is \"{}\"", d), "\"one2seq\" or \"one2set\"");
      }
    }
    LineSpec spec;
    if (obj.at_key("subword").get(e) == simdjson::SUCCESS) {
      constexpr std::string_view kSchemes = "\"none\", \"sentencepiece\", \"wordpiece\" or \"bpe\"";
      if (e.type() != element_type::STRING) ctx.WrongType("field \"subword\"", e, kSchemes);
      auto s = calib::ParseSubword(e.get_string().value_unsafe());
      if (!s) ctx.Fail(fmt::format("field \"subword\" is \"{}\"", std::string_view(e.get_string().value_unsafe())), kSchemes);
      spec.subword = *s;
    }
    if (obj.at_key("special").get(e) == simdjson::SUCCESS) {
      for (auto& s : Strings(ctx, e, "field \"special\"")) spec.special.insert(std::move(s));
    }
    if (obj.at_key("padding").get(e) == simdjson::SUCCESS) {
      for (auto& s : Strings(ctx, e, "field \"padding\"")) {
        // Padding belongs to no keyphrase either: a padding token that is not special would be cut into one.
        if (!spec.special.contains(s)) {
          ctx.Fail(fmt::format("field \"padding\" lists \"{}\", which \"special\" does not", s),
                   "padding tokens listed in \"special\" too");
        }
        spec.padding.insert(std::move(s));
      }
    }
    element tokens_el, logprobs_el;
    if (obj.at_key("tokens").get(tokens_el) != simdjson::SUCCESS) ctx.Fail("missing field \"tokens\"", kObject);
    if (obj.at_key("logprobs").get(logprobs_el) != simdjson::SUCCESS) ctx.Fail("missing field \"logprobs\"", kObject);
    if (!pred.one2set) {
      const auto tokens = Strings(ctx, tokens_el, "field \"tokens\"");
      const auto logprobs = Logprobs(ctx, logprobs_el, "field \"logprobs\"");
      if (tokens.size() != logprobs.size()) {
        ctx.Fail(fmt::format("{} tokens and {} log-probabilities", tokens.size(), logprobs.size()),
                 "one log-probability per token");
      }
      AddKeyphrases(ctx, spec, tokens, logprobs, "\"tokens\"", pred);
      AddSequence(spec, tokens, logprobs, pred);
    } else {
      constexpr std::string_view kSlots = "one array per decoder slot (\"decoding\": \"one2set\")";
      if (tokens_el.type() != element_type::ARRAY) ctx.WrongType("field \"tokens\"", tokens_el, kSlots);
      if (logprobs_el.type() != element_type::ARRAY) ctx.WrongType("field \"logprobs\"", logprobs_el, kSlots);
      std::vector<element> tok_slots, lp_slots;
      for (element x : Arr(tokens_el)) tok_slots.push_back(x);
      for (element x : Arr(logprobs_el)) lp_slots.push_back(x);
      if (tok_slots.size() != lp_slots.size()) {
        ctx.Fail(fmt::format("{} token slots and {} log-probability slots", tok_slots.size(), lp_slots.size()),
                 "one log-probability array per token array");
      }
      for (std::size_t s = 0; s < tok_slots.size(); ++s) {
        const auto tokens = Strings(ctx, tok_slots[s], fmt::format("\"tokens\"[{}]", s));
        const auto logprobs = Logprobs(ctx, lp_slots[s], fmt::format("\"logprobs\"[{}]", s));
        if (tokens.size() != logprobs.size()) {
          ctx.Fail(fmt::format("slot {} has {} tokens and {} log-probabilities", s, tokens.size(), logprobs.size()),
                   "one log-probability per token");
        }
        const int n = AddKeyphrases(ctx, spec, tokens, logprobs, fmt::format("slot {}", s), pred);
        AddSequence(spec, tokens, logprobs, pred);
        if (n > 1) {
          ctx.Fail(fmt::format("slot {} has {} keyphrases (runs of tokens between \"special\" tokens)", s, n),
                   "at most one keyphrase per One2Set slot");
        }
      }
    }
    out.docs.push_back(std::move(pred));
  }
}

}  // namespace kplab::io_internal
