#include "kplab/profile.h"

#include <fmt/format.h>

namespace kplab {

std::vector<std::pair<std::string, std::string>> Profile::Knobs() const {
  auto b = [](bool v) { return std::string(v ? "true" : "false"); };
  std::string invalid;
  for (const auto& t : invalid_tokens) invalid += (invalid.empty() ? "" : " ") + t;
  return {
      {"stem_mode", PorterModeName(stem_mode)},
      {"source_split", source_split == SourceSplit::kPySplitSections ? "sections: lower().split() per title/body"
                                                                     : "joined: strip().split(' ') of title + body"},
      {"match_across_sections", b(match_across_sections)},
      {"split_slash", b(split_slash)},
      {"kpeval_cleanup", b(kpeval_cleanup)},
      {"keyphrase_split_space", b(keyphrase_split_space)},
      {"drop_empty", b(drop_empty)},
      {"empty_line_is_none", b(empty_line_is_none)},
      {"keep_peos", b(keep_peos)},
      {"invalid_tokens", invalid.empty() ? "(none)" : invalid},
      {"invalid_drops_empty", b(invalid_drops_empty)},
      {"max_predictions", max_predictions == 0 ? "all" : std::to_string(max_predictions)},
      {"dedup", dedup == Dedup::kStemKey ? "stem_key" : "stem_key_per_part"},
      {"pk_denominator", pk_denominator},
      {"micro_p5_denominator", micro_p5_denominator},
      {"ap_denominator", ap_denominator},
      {"ndcg_ideal", ndcg_ideal},
      {"rprec_order", rprec_order},
      {"substr_empty_matches", b(substr_empty_matches)},
  };
}

namespace {

Profile KplabProfile() {
  Profile p;
  p.name = "kplab";
  p.description = "kplab's documented semantics: the peers' quirks fixed (docs/profiles.md)";
  return p;
}

// Shared conventions of KPEval, kenchan0226 and kg_one2set (ANCHORS.md, docs/profiles.md).
Profile PeerBase() {
  Profile p;
  p.source_split = SourceSplit::kPySplitSpaceJoined;
  p.match_across_sections = true;
  p.keyphrase_split_space = true;
  p.drop_empty = false;
  p.empty_line_is_none = false;
  p.keep_peos = true;
  p.invalid_tokens = {};
  p.pk_denominator = "k";
  p.ap_denominator = "refs";
  p.ndcg_ideal = "own";
  return p;
}

Profile KpevalProfile() {
  Profile p = PeerBase();
  p.name = "kpeval";
  p.description = "uclanlp/KPEval";
  p.kpeval_cleanup = true;
  p.rprec_order = "present_first";
  p.substr_empty_matches = true;
  return p;
}

Profile KenchanProfile() {
  Profile p = PeerBase();
  p.name = "kenchan";
  p.description = "kenchan0226/keyphrase-generation-rl with -invalidate_unk -disable_extra_one_word_filter";
  p.invalid_tokens = {"<unk>", ",", "."};
  p.invalid_drops_empty = true;
  return p;
}

Profile ExhirdProfile() {
  Profile p = PeerBase();
  p.name = "exhird";
  p.description = "Chen-Wang-CUHK/ExHiRD-DKG";
  p.split_slash = true;
  p.dedup = Dedup::kStemKeyPerPart;
  p.micro_p5_denominator = "k_all_docs";
  return p;
}

}  // namespace

const std::vector<std::string>& ProfileNames() {
  static const std::vector<std::string> names = {"kplab", "kpeval", "kenchan", "exhird"};
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
  } else {
    return std::nullopt;
  }
  if (plus != std::string_view::npos) {
    const std::string_view opt = spec.substr(plus + 1);
    if (name == "kenchan" && opt == "one2set") {
      // kg_one2set: an empty prediction line is no keyphrase; only the first 200 predictions count.
      p.empty_line_is_none = true;
      p.max_predictions = 200;
      p.name = "kenchan+one2set";
      p.description += "; kg_one2set's empty-line rule and 200-prediction cut";
    } else {
      return std::nullopt;
    }
  }
  return p;
}

}  // namespace kplab
