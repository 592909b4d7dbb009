// Profiles: named bundles of the conventions on which published evaluation scripts disagree
// (docs/profiles.md gives each knob's peer source). A profile fixes how a corpus is built (tokenizing,
// splitting, filtering, dedup) and exposes the scoring conventions to metric plugins (ctx.profile).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kplab/stem.h"

namespace kplab {

enum class SourceSplit {
  kPySplitSpaceJoined,   // peers: lower(title + " " + body) split(' '); empty tokens kept; one sequence
  kPySplitSections,      // kplab: lower(title).split() and lower(body).split() as separate sections
};

enum class Dedup {
  kStemKey,         // first occurrence of each stem key wins
  kStemKeyPerPart,  // ExHiRD: dedup within present and within absent predictions separately
};

struct Profile {
  std::string name;
  std::string description;
  PorterMode stem_mode = PorterMode::kNltk;

  // Corpus building.
  SourceSplit source_split = SourceSplit::kPySplitSections;
  bool match_across_sections = false;  // may a present match span the title/body boundary?
  bool split_slash = false;            // ExHiRD: keyphrases also split on '/'
  bool kpeval_cleanup = false;         // KPEval: ' ##' -> '', '[ digit ]' -> '[digit]' in keyphrases
  bool keyphrase_split_space = false;  // tokens of a keyphrase by split(' ') (else split())
  bool drop_empty = true;              // drop empty keyphrases (else they are kept, never present)
  bool empty_line_is_none = true;      // an empty prediction line has no keyphrase at all
  bool keep_peos = false;              // keep "<peos>" as a prediction (else: a marker, dropped)
  std::vector<std::string> invalid_tokens = {"<unk>"};  // a prediction with any of these is dropped
  bool invalid_drops_empty = false;    // the invalid filter also drops empty keyphrases
  int max_predictions = 0;             // keep only the first N predictions (0 = all)
  Dedup dedup = Dedup::kStemKey;

  // Scoring conventions (read by plugins through ctx.profile).
  std::string pk_denominator = "k";       // "k": P@k = hits/k; "min": hits/min(k, n)
  std::string micro_p5_denominator = "per_doc";  // "per_doc" or "k_all_docs" (ExHiRD: 5 x all docs)
  std::string ap_denominator = "min_refs_k";     // "refs" or "min_refs_k"
  std::string ndcg_ideal = "standard";           // "standard" or "own" (sorted own relevance)
  std::string rprec_order = "model";             // "model" or "present_first"
  bool substr_empty_matches = false;              // KPEval: an empty prediction matches everything
  bool rank_on_filtered = true;

  // (knob name, value) pairs in a fixed order, for `kplab profiles diff` and ctx.profile.
  std::vector<std::pair<std::string, std::string>> Knobs() const;
};

// Built-in profiles: kplab (default), kpeval, kenchan, exhird. A profile name may carry options after
// '+', e.g. "kenchan+one2set" (kg_one2set's empty-line rule and 200-prediction cut).
const std::vector<std::string>& ProfileNames();
std::optional<Profile> FindProfile(std::string_view name);

}  // namespace kplab
