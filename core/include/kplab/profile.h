// Profiles: named bundles of the conventions on which published evaluation scripts disagree
// (docs/profiles.md gives each knob's peer source). A profile fixes how a corpus is built (tokenizing,
// splitting, filtering, dedup) and exposes the scoring conventions to metric plugins (ctx.profile).
//
// Threads: a Profile is a plain value; FindProfile and ProfileNames read constant tables and are safe from
// several threads at once.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kplab/result.h"
#include "kplab/stem.h"

namespace kplab {

enum class SourceSplit {
  kSections,          // kplab: lower().split() of title and of body, as separate sections
  kJoinedSplitSpace,  // KPEval/kenchan: title.strip().split(' ') + body.strip().split(' '), one sequence
  kWholeLine,         // ExHiRD: the whole line .split(), the separator token kept
};

// Every knob is documented with its peer source in docs/profiles.md.
struct Profile {
  std::string name;
  std::string description;
  PorterMode stem_mode = PorterMode::kNltk;

  // Corpus building.
  SourceSplit source_split = SourceSplit::kSections;
  bool lowercase = true;               // lower-case source and keyphrases (ExHiRD: only nltk's own)
  bool match_across_sections = false;  // may a present match span the title/body boundary?
  bool exhird_markers = false;         // ExHiRD: also split on '/', <p_start> ...; drop <eokp>, <blank>
  bool kpeval_cleanup = false;         // KPEval: ' ##' -> '', '[ digit ]' -> '[digit]' in keyphrases
  bool keyphrase_split_space = false;  // keyphrase tokens by split(' ') (else split())
  bool drop_empty = true;              // drop empty keyphrases (else kept, never present)
  bool empty_line_is_none = true;      // an empty prediction line has no keyphrase at all
  // "<peos>" in a prediction line: "piece" drops a piece equal to it wherever it comes from (kplab),
  // "piece_in_lines" drops it from ';'-line prediction files only and keeps a JSONL list verbatim
  // (KPEval, semrp-standalone: their users convert line files and drop the marker; a list in KPEval's
  // own JSONL is the user's data), "first_token" drops every piece whose first token is it (kenchan's
  // -prediction_separated), "keep" keeps it as an ordinary keyphrase (ExHiRD reads line files itself).
  std::string peos = "piece";
  std::vector<std::string> invalid_tokens = {"<unk>"};  // drop a prediction with such a (stemmed) token
  std::string invalid_substring;       // drop a prediction whose stemmed string contains this
  int max_pieces = 0;                  // keep only the first N raw prediction pieces (0 = all)
  // Keep only the first prediction of one token, drop later ones (kenchan0226 without
  // -disable_extra_one_word_filter): counted over every piece the peos rule keeps, also invalid or
  // repeated ones, as its mask is.
  bool first_one_word_only = false;
  std::string dedup_join = " ";        // stems joined with this form the dedup key (peers: "_")
  bool dedup = true;                   // drop repeated keyphrases (same dedup key), first wins
  bool semeval_refs_as_given = false;  // ExHiRD: references are not stemmed when the keywords file's
                                       // path contains 'semeval' (released stemmed)
  // References matched as given (--refs-stemmed) are lower-cased like everything else (kplab), or
  // compared as written (kenchan0226's -target_already_stemmed: its targets skip stem(), which is where
  // the other strings are lower-cased; DUC-2001's gold has capitals).
  bool lowercase_given_refs = true;

  // Scoring conventions (read by plugins through ctx.profile).
  std::string pk_denominator = "k";            // "k": den k, 0 without predictions; "k_always"
  std::string ap_denominator = "min_refs_k";   // "refs" or "min_refs_k"
  std::string ndcg_ideal = "standard";         // "standard" or "own" (sorted own relevance)
  std::string alpha_ndcg = "word_pool";        // "word_pool" or "substring" (KPEval)
  std::string rprec_order = "model";           // "model" or "present_first"
  // Semantic R-Precision (plugins/semrp.lua): divide by "refs" (R, the paper's Eq. 2) or by
  // "min_preds_refs" (the standalone code); embed the "surface" or the "stems" form (KPEval fork).
  std::string semrp_denominator = "refs";
  std::string semrp_embed = "surface";
  // SemR (plugins/semantic.lua): a reference matched exactly by a prediction scores "one" (kplab), or
  // its best cosine ("cosine": KPEval L92 tests the whole stemmed list against the predictions, so
  // the exact-match branch never fires).
  std::string semr_exact = "one";
  // ROUGE, METEOR, Self-BLEU and self edit distance (plugins rouge.lua, meteor.lua, diversity.lua):
  // "kplab" = keyphrases as units, references deduplicated with their own presence, corrected
  // semantics; "kpeval" = KPEval's strings and its quirks (docs/profiles.md §4, "Text overlap").
  std::string text_overlap = "kplab";

  // (knob name, value) pairs in a fixed order, for `kplab profiles diff` and ctx.profile.
  std::vector<std::pair<std::string, std::string>> Knobs() const;
};

// Built-in profiles: kplab (default), kpeval, kenchan, exhird, semrp-standalone. A profile name may carry options after
// '+', e.g. "kenchan+one2set" (kg_one2set's empty-line rule and 200-prediction cut), and settable knobs
// as KNOB=VALUE, e.g. "kenchan+max_pieces=50+peos=keep" (SettableKnobs; docs/profiles.md, "Knobs").
const std::vector<std::string>& ProfileNames();
std::optional<Profile> FindProfile(std::string_view name);

// A knob a profile spec may set: the peer flags that change numbers and that papers vary.
struct KnobInfo {
  std::string name;     // as Profile::Knobs() names it
  std::string values;   // what it accepts
  std::string meaning;  // what it does, and the peer flag it reproduces
};
const std::vector<KnobInfo>& SettableKnobs();

// The profile a spec names: a built-in name, then '+'-separated options ("one2set" for kenchan) and
// KNOB=VALUE settings, each knob at most once. The result's name is canonical: the base name, its
// option, then the knobs whose value differs from the base's, in SettableKnobs order, written as
// Knobs() writes them ("kenchan+peos=keep+max_pieces=50" and "kenchan+max_pieces=50+peos=keep" are
// one profile, and "kenchan+max_pieces=200" is "kenchan"). Errors (kind usage) name the spec, the
// part and what was expected, with a did-you-mean for a misspelt profile or knob.
Result<Profile> ResolveProfile(std::string_view spec);

}  // namespace kplab
