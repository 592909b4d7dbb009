#include "kplab/profile.h"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>

#include "kplab/suggest.h"

namespace kplab {

std::vector<std::pair<std::string, std::string>> Profile::Knobs() const {
  auto b = [](bool v) { return std::string(v ? "true" : "false"); };
  std::string invalid;
  for (const auto& t : invalid_tokens) invalid += (invalid.empty() ? "" : " ") + t;
  const char* split = source_split == SourceSplit::kSections        ? "sections"
                      : source_split == SourceSplit::kJoinedSplitSpace ? "joined_split_space"
                                                                       : "whole_line";
  return {
      {"stem_mode", PorterModeName(stem_mode)},
      {"source_split", split},
      {"lowercase", b(lowercase)},
      {"match_across_sections", b(match_across_sections)},
      {"exhird_markers", b(exhird_markers)},
      {"kpeval_cleanup", b(kpeval_cleanup)},
      {"keyphrase_split_space", b(keyphrase_split_space)},
      {"drop_empty", b(drop_empty)},
      {"empty_line_is_none", b(empty_line_is_none)},
      {"peos", peos},
      {"invalid_tokens", invalid.empty() ? "none" : invalid},
      {"invalid_substring", invalid_substring.empty() ? "none" : invalid_substring},
      {"max_pieces", max_pieces == 0 ? "all" : std::to_string(max_pieces)},
      {"one_word_preds", first_one_word_only ? "first" : "all"},
      {"dedup_join", dedup_join == " " ? "space" : dedup_join},
      {"dedup", b(dedup)},
      {"semeval_refs_as_given", b(semeval_refs_as_given)},
      {"lowercase_given_refs", b(lowercase_given_refs)},
      {"pk_denominator", pk_denominator},
      {"ap_denominator", ap_denominator},
      {"ndcg_ideal", ndcg_ideal},
      {"alpha_ndcg", alpha_ndcg},
      {"rprec_order", rprec_order},
      {"semrp_denominator", semrp_denominator},
      {"semrp_embed", semrp_embed},
      {"semr_exact", semr_exact},
      {"text_overlap", text_overlap},
  };
}

namespace {

Profile KplabProfile() {
  Profile p;
  p.name = "kplab";
  p.description = "kplab's documented semantics: the peers' quirks fixed (docs/profiles.md)";
  return p;
}

// Shared conventions of KPEval and kenchan0226 (docs/profiles.md §4-5).
Profile PeerBase() {
  Profile p;
  p.source_split = SourceSplit::kJoinedSplitSpace;
  p.match_across_sections = true;
  p.keyphrase_split_space = true;
  p.drop_empty = false;
  p.empty_line_is_none = false;
  p.dedup_join = "_";
  p.pk_denominator = "k";
  p.ap_denominator = "refs";
  p.ndcg_ideal = "own";
  p.alpha_ndcg = "substring";
  return p;
}

Profile KpevalProfile() {
  Profile p = PeerBase();
  p.name = "kpeval";
  p.description = "uclanlp/KPEval (its unk filter is off: the flag lands in disable_valid_filter)";
  p.kpeval_cleanup = true;
  p.peos = "piece_in_lines";
  p.invalid_tokens = {};
  p.rprec_order = "present_first";
  p.semrp_embed = "stems";  // the KPEval-SemR-p fork embeds stemmed strings
  p.semr_exact = "cosine";  // sem_matching_metric.py L92
  p.text_overlap = "kpeval";  // rouge_metric.py, meteor_metric.py, diversity_metric.py
  return p;
}

Profile KenchanProfile() {
  Profile p = PeerBase();
  p.name = "kenchan";
  p.description =
      "kenchan0226/keyphrase-generation-rl, -invalidate_unk -disable_extra_one_word_filter "
      "-prediction_separated -num_preds 200";
  p.invalid_tokens = {"<unk>", ",", "."};
  p.peos = "first_token";
  p.max_pieces = 200;
  p.lowercase_given_refs = false;  // evaluate_prediction.py L1077-1083: targets not stem()med stay as written
  return p;
}

Profile ExhirdProfile() {
  Profile p;
  p.name = "exhird";
  p.description = "Chen-Wang-CUHK/ExHiRD-DKG evaluation_utils.py defaults";
  p.source_split = SourceSplit::kWholeLine;
  p.lowercase = false;
  p.match_across_sections = true;
  p.exhird_markers = true;
  p.peos = "keep";
  p.invalid_tokens = {};
  p.invalid_substring = "<unk>";
  p.semeval_refs_as_given = true;
  p.pk_denominator = "k_always";
  p.ap_denominator = "refs";
  return p;
}

// shamira-venturini/semantic-r-precision (calculate_sem_r_p): keyphrases as given (original case kept
// for embedding, stems from lower().split()), no dedup of predictions or references, and SemR-p
// divided by min(#predictions, R).
Profile SemrpStandaloneProfile() {
  Profile p;
  p.name = "semrp-standalone";
  p.description = "shamira-venturini/semantic-r-precision: no dedup, original case embedded, / min(#preds, R)";
  p.lowercase = false;
  p.keyphrase_split_space = false;
  p.dedup = false;
  p.invalid_tokens = {};
  p.peos = "piece_in_lines";
  p.semrp_denominator = "min_preds_refs";
  return p;
}

}  // namespace

const std::vector<std::string>& ProfileNames() {
  static const std::vector<std::string> names = {"kplab", "kpeval", "kenchan", "exhird", "semrp-standalone"};
  return names;
}

const std::vector<KnobInfo>& SettableKnobs() {
  static const std::vector<KnobInfo> knobs = {
      {"peos", "piece, piece_in_lines, first_token or keep",
       "what a '<peos>' marker in a prediction line does: piece drops a piece equal to it, piece_in_lines "
       "only in ';' line files, first_token drops every piece starting with it (kenchan0226's "
       "-prediction_separated), keep scores it as an ordinary keyphrase (kenchan0226 without "
       "-prediction_separated)"},
      {"invalid_tokens", "tokens separated by spaces, or none",
       "a prediction with such a (stemmed) token is dropped: '<unk> , .' is kenchan0226's "
       "-invalidate_unk, ', .' its run without it, none its -disable_valid_filter"},
      {"max_pieces", "a whole number >= 1, or all",
       "keep only the first N pieces of each prediction line, before any filter (kenchan0226's -num_preds N)"},
      {"one_word_preds", "all or first",
       "first keeps only the first one-token prediction (kenchan0226 without -disable_extra_one_word_filter)"},
  };
  return knobs;
}

namespace {

// Sets one knob from its text; "" when done, else what was expected.
std::string SetKnob(Profile& p, std::string_view name, std::string_view v) {
  if (name == "peos") {
    for (const char* ok : {"piece", "piece_in_lines", "first_token", "keep"}) {
      if (v == ok) {
        p.peos = std::string(v);
        return "";
      }
    }
    return "piece, piece_in_lines, first_token or keep";
  }
  if (name == "invalid_tokens") {
    std::vector<std::string> tokens;
    std::size_t i = 0;
    while (i < v.size()) {
      const std::size_t e = std::min(v.find(' ', i), v.size());
      if (e > i) tokens.emplace_back(v.substr(i, e - i));
      i = e + 1;
    }
    if (tokens.empty()) return "tokens separated by spaces, or none";
    if (tokens.size() == 1 && tokens[0] == "none") tokens.clear();
    p.invalid_tokens = std::move(tokens);
    return "";
  }
  if (name == "max_pieces") {
    if (v == "all") {
      p.max_pieces = 0;
      return "";
    }
    int n = 0;
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (ec != std::errc() || end != v.data() + v.size() || n < 1) return "a whole number >= 1, or all";
    p.max_pieces = n;
    return "";
  }
  if (name == "one_word_preds") {
    if (v != "all" && v != "first") return "all or first";
    p.first_one_word_only = v == "first";
    return "";
  }
  return "?";  // not a settable knob: ResolveProfile checks the name first
}

std::string KnobValue(const Profile& p, std::string_view name) {
  for (const auto& [k, v] : p.Knobs()) {
    if (k == name) return v;
  }
  return "";
}

std::vector<std::string> SettableNames() {
  std::vector<std::string> names;
  for (const auto& k : SettableKnobs()) names.push_back(k.name);
  return names;
}

Error ProfileError(std::string message) { return Error::Usage(std::move(message)); }

}  // namespace

Result<Profile> ResolveProfile(std::string_view spec) {
  std::vector<std::string_view> parts;
  for (std::size_t i = 0;;) {
    const std::size_t plus = spec.find('+', i);
    parts.push_back(spec.substr(i, plus == std::string_view::npos ? std::string_view::npos : plus - i));
    if (plus == std::string_view::npos) break;
    i = plus + 1;
  }
  const std::string_view name = parts[0];
  std::optional<Profile> base;
  if (name == "kplab") {
    base = KplabProfile();
  } else if (name == "kpeval") {
    base = KpevalProfile();
  } else if (name == "kenchan") {
    base = KenchanProfile();
  } else if (name == "exhird") {
    base = ExhirdProfile();
  } else if (name == "semrp-standalone") {
    base = SemrpStandaloneProfile();
  } else {
    std::vector<std::string> names = ProfileNames();
    names.push_back("kenchan+one2set");
    return ProfileError(fmt::format("unknown profile '{}' ({}expected one of: {})", spec, DidYouMean(name, names),
                                    JoinNames(names)));
  }
  Profile p = *std::move(base);
  // Options first, then knobs: the canonical name lists the knobs that differ from the profile
  // with its options.
  for (std::size_t i = 1; i < parts.size(); ++i) {
    const std::string_view part = parts[i];
    if (part.find('=') == std::string_view::npos) {
      if (name == "kenchan" && part == "one2set" && p.name == "kenchan") {
        // kg_one2set: an empty prediction line is no keyphrase (the 200 cut is kenchan's too).
        p.empty_line_is_none = true;
        p.name = "kenchan+one2set";
        p.description = "jiacheng-ye/kg_one2set: kenchan, but an empty prediction line is no keyphrase";
        continue;
      }
      return ProfileError(fmt::format(
          "profile '{}': '{}' is no option of profile '{}' (expected {}KNOB=VALUE with a knob of: {})", spec, part,
          name, name == "kenchan" ? "one2set or " : "", JoinNames(SettableNames())));
    }
  }
  const Profile plain = p;
  std::vector<std::string> set;
  for (std::size_t i = 1; i < parts.size(); ++i) {
    const std::string_view part = parts[i];
    const std::size_t eq = part.find('=');
    if (eq == std::string_view::npos) continue;
    const std::string_view knob = part.substr(0, eq), value = part.substr(eq + 1);
    const std::vector<std::string> names = SettableNames();
    if (std::find(names.begin(), names.end(), knob) == names.end()) {
      const bool fixed = !KnobValue(p, knob).empty();
      return ProfileError(fmt::format("profile '{}': {} '{}' ({}expected one of: {})", spec,
                                      fixed ? "the profile fixes the knob" : "unknown knob", knob,
                                      DidYouMean(knob, names), JoinNames(names)));
    }
    if (std::find(set.begin(), set.end(), knob) != set.end()) {
      return ProfileError(fmt::format("profile '{}': knob '{}' is set twice (expected one value per knob)", spec, knob));
    }
    set.emplace_back(knob);
    if (std::string expected = SetKnob(p, knob, value); !expected.empty()) {
      return ProfileError(fmt::format("profile '{}': knob {} must be {} (got '{}')", spec, knob, expected, value));
    }
  }
  // The canonical name: the knobs that differ from the profile's own, in table order.
  std::string knobs;
  for (const auto& k : SettableKnobs()) {
    const std::string v = KnobValue(p, k.name);
    if (v == KnobValue(plain, k.name)) continue;
    p.name += fmt::format("+{}={}", k.name, v);
    knobs += " " + k.name + "=" + v;
  }
  if (!knobs.empty()) p.description += " (knobs set:" + knobs + ")";
  return p;
}

std::optional<Profile> FindProfile(std::string_view spec) {
  auto p = ResolveProfile(spec);
  if (!p) return std::nullopt;
  return *std::move(p);
}

}  // namespace kplab
