#include "kplab/profile.h"

#include <fmt/format.h>

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

std::optional<Profile> FindProfile(std::string_view spec) {
  const auto plus = spec.find('+');
  const std::string_view name = spec.substr(0, plus);
  Profile p;
  if (name == "kplab") {
    p = KplabProfile();
  } else if (name == "kpeval") {
    p = KpevalProfile();
  } else if (name == "kenchan") {
    p = KenchanProfile();
  } else if (name == "exhird") {
    p = ExhirdProfile();
  } else if (name == "semrp-standalone") {
    p = SemrpStandaloneProfile();
  } else {
    return std::nullopt;
  }
  if (plus != std::string_view::npos) {
    const std::string_view opt = spec.substr(plus + 1);
    if (name == "kenchan" && opt == "one2set") {
      // kg_one2set: an empty prediction line is no keyphrase (the 200 cut is kenchan's too).
      p.empty_line_is_none = true;
      p.name = "kenchan+one2set";
      p.description = "jiacheng-ye/kg_one2set: kenchan, but an empty prediction line is no keyphrase";
    } else {
      return std::nullopt;
    }
  }
  return p;
}

}  // namespace kplab
