// kp corpus types: Corpus, Document, KeyphraseList and Match userdata. Lists are views (pointers into the
// corpus, which every userdata keeps alive); matching and rank arithmetic run in C++ on whole lists.
#include <algorithm>
#include <cmath>
#include <memory>
#include <span>
#include <string>
#include <unordered_set>
#include <vector>

#include <fmt/format.h>

#include "bindings.h"
#include "kplab/match.h"
#include "kplab/text.h"
#include "lua_util.h"

namespace kplab::host {

namespace {

constexpr const char* kCorpusMeta = "kplab.Corpus";
constexpr const char* kDocMeta = "kplab.Document";
constexpr const char* kListMeta = "kplab.KeyphraseList";
constexpr const char* kMatchMeta = "kplab.Match";

struct CorpusUd {
  std::shared_ptr<const Corpus> corpus;
};
struct DocUd {
  std::shared_ptr<const Corpus> corpus;
  const Document* doc;
};
// A list is a view: `items` points into the corpus (a document's pred/ref views, kept alive by
// `corpus`) or into `owned` for lists that had to be built (filtered from a derived list, reordered).
struct ListUd {
  std::shared_ptr<const Corpus> corpus;
  const Document* doc;
  std::vector<const Keyphrase*> owned;
  KeyphraseList items;
  bool is_view = true;  // items points into the corpus
  void Own(std::vector<const Keyphrase*> v) {
    owned = std::move(v);
    items = owned;
    is_view = false;
  }
};
struct MatchUd {
  std::vector<std::uint8_t> flags;
};

std::size_t CheckK(lua_State* L, int i) {
  const lua_Integer k = luaL_checkinteger(L, i);
  luaL_argcheck(L, k >= 0, i, "k must be >= 0");
  return static_cast<std::size_t>(k);
}

ListUd* CheckList(lua_State* L, int i) { return Check<ListUd>(L, i, kListMeta); }
MatchUd* CheckMatch(lua_State* L, int i) { return Check<MatchUd>(L, i, kMatchMeta); }

ListUd* PushList(lua_State* L, const std::shared_ptr<const Corpus>& c, const Document* d) {
  return NewUserdata<ListUd>(L, kListMeta, ListUd{c, d, {}, {}, true});
}

void PushStringArray(lua_State* L, const Corpus& c, std::span<const TokenId> ids) {
  lua_createtable(L, static_cast<int>(ids.size()), 0);
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const auto s = c.Str(ids[i]);
    lua_pushlstring(L, s.data(), s.size());
    lua_rawseti(L, -2, static_cast<lua_Integer>(i + 1));
  }
}

// A keyphrase as a plain table (for exploration; metrics use list methods).
void PushKeyphrase(lua_State* L, const Corpus& c, const Keyphrase& kp) {
  lua_createtable(L, 0, 6);
  SetString(L, "surface", kp.surface());
  SetString(L, "key", c.Str(kp.key()));
  PushStringArray(L, c, kp.tokens());
  lua_setfield(L, -2, "tokens");
  PushStringArray(L, c, kp.stems());
  lua_setfield(L, -2, "stems");
  lua_pushboolean(L, kp.present());
  lua_setfield(L, -2, "present");
  lua_pushboolean(L, kp.after_peos());
  lua_setfield(L, -2, "after_peos");
  if (kp.probs() != nullptr) {  // predictions from a "tokens" file (docs/calibration.md)
    lua_createtable(L, static_cast<int>(kp.probs()->logprobs.size()), 0);
    for (std::size_t i = 0; i < kp.probs()->logprobs.size(); ++i) {
      lua_pushnumber(L, kp.probs()->logprobs[i]);
      lua_rawseti(L, -2, static_cast<lua_Integer>(i + 1));
    }
    lua_setfield(L, -2, "logprobs");
    lua_pushinteger(L, kp.probs()->words);
    lua_setfield(L, -2, "words");
  }
}

// ---- KeyphraseList --------------------------------------------------------------------------------

int ListLen(lua_State* L) {
  lua_pushinteger(L, static_cast<lua_Integer>(CheckList(L, 1)->items.size()));
  return 1;
}

int ListTop(lua_State* L) {
  ListUd* l = CheckList(L, 1);
  const lua_Integer k = luaL_checkinteger(L, 2);
  luaL_argcheck(L, k >= 0, 2, "k must be >= 0");
  const std::size_t n = std::min<std::size_t>(static_cast<std::size_t>(k), l->items.size());
  const auto prefix = l->items.first(n);
  const bool view = l->is_view;
  ListUd* out = PushList(L, l->corpus, l->doc);
  if (view) {
    out->items = prefix;  // a prefix of corpus storage
  } else {
    out->Own({prefix.begin(), prefix.end()});  // the parent's storage may be collected first
  }
  return 1;
}

template <bool kWantPresent>
int ListFilterPresent(lua_State* L) {
  ListUd* l = CheckList(L, 1);
  if (!l->doc->has_text) {
    return luaL_error(L, "document '%s' has no source text: present/absent is undefined",
                      l->doc->id.c_str());
  }
  const int view = kWantPresent ? 1 : 2;
  const Document& doc = *l->doc;
  auto same = [&](KeyphraseList v) { return l->is_view && l->items.SameAs(v); };
  const bool from_preds = same(doc.pred_view(0)), from_refs = !from_preds && same(doc.ref_view(0));
  std::vector<const Keyphrase*> filtered;
  if (!from_preds && !from_refs) {
    for (const Keyphrase* k : l->items) {
      if (k->present() == kWantPresent) filtered.push_back(k);
    }
  }
  ListUd* out = PushList(L, l->corpus, l->doc);
  if (from_preds) {
    out->items = doc.pred_view(view);
  } else if (from_refs) {
    out->items = doc.ref_view(view);
  } else {
    out->Own(std::move(filtered));
  }
  return 1;
}

int ListPresentFirst(lua_State* L) {
  ListUd* l = CheckList(L, 1);
  std::vector<const Keyphrase*> v(l->items.begin(), l->items.end());
  std::stable_partition(v.begin(), v.end(), [](const Keyphrase* k) { return k->present(); });
  PushList(L, l->corpus, l->doc)->Own(std::move(v));
  return 1;
}

// The list without repeats, first wins, by the profile's dedup key (the stems joined as the profile joins
// them for dedup): what a deduplicating profile builds, for a list that kept its repeats.
int ListUnique(lua_State* L) {
  ListUd* l = CheckList(L, 1);
  std::vector<const Keyphrase*> v;
  v.reserve(l->items.size());
  std::unordered_set<TokenId> seen;
  for (const Keyphrase* k : l->items) {
    if (seen.insert(l->corpus->DedupKey(*k->phrase)).second) v.push_back(k);
  }
  PushList(L, l->corpus, l->doc)->Own(std::move(v));
  return 1;
}

int ListSubset(lua_State* L) {
  const std::string_view which = luaL_checkstring(L, 2);
  if (which == "all") {
    lua_settop(L, 1);
    return 1;
  }
  if (which == "present") return ListFilterPresent<true>(L);
  if (which == "absent") return ListFilterPresent<false>(L);
  return luaL_argerror(L, 2, "expected 'all', 'present' or 'absent'");
}

int ListGet(lua_State* L) {
  ListUd* l = CheckList(L, 1);
  const lua_Integer i = luaL_checkinteger(L, 2);
  if (i < 1 || static_cast<std::size_t>(i) > l->items.size()) {
    lua_pushnil(L);
    return 1;
  }
  PushKeyphrase(L, *l->corpus, *l->items[static_cast<std::size_t>(i - 1)]);
  return 1;
}

int ListSurfaces(lua_State* L) {
  ListUd* l = CheckList(L, 1);
  lua_createtable(L, static_cast<int>(l->items.size()), 0);
  for (std::size_t i = 0; i < l->items.size(); ++i) {
    lua_pushlstring(L, l->items[i]->surface().data(), l->items[i]->surface().size());
    lua_rawseti(L, -2, static_cast<lua_Integer>(i + 1));
  }
  return 1;
}

int ListKeys(lua_State* L) {
  ListUd* l = CheckList(L, 1);
  lua_createtable(L, static_cast<int>(l->items.size()), 0);
  for (std::size_t i = 0; i < l->items.size(); ++i) {
    const auto s = l->corpus->Str(l->items[i]->key());
    lua_pushlstring(L, s.data(), s.size());
    lua_rawseti(L, -2, static_cast<lua_Integer>(i + 1));
  }
  return 1;
}

int ListPrmu(lua_State* L) {
  ListUd* l = CheckList(L, 1);
  if (!l->doc->has_text) return luaL_error(L, "document '%s' has no source text", l->doc->id.c_str());
  lua_createtable(L, static_cast<int>(l->items.size()), 0);
  for (std::size_t i = 0; i < l->items.size(); ++i) {
    lua_pushstring(L, PrmuName(l->corpus->Classify(*l->doc, *l->items[i])));
    lua_rawseti(L, -2, static_cast<lua_Integer>(i + 1));
  }
  return 1;
}

// list:match_pairs(refs) -> Matrix (#list x #refs) with 1 where prediction i's stem key equals
// reference j's key or one of its alternatives, else 0.
int ListMatchPairs(lua_State* L) {
  ListUd* p = CheckList(L, 1);
  ListUd* r = CheckList(L, 2);
  const std::vector<std::uint8_t> cells = ExactMatchPairs(p->items, r->items);
  Matrix m(static_cast<int>(p->items.size()), static_cast<int>(r->items.size()));
  for (std::size_t i = 0; i < cells.size(); ++i) m.v[i] = cells[i];
  PushMatrix(L, std::move(m));
  return 1;
}

// list:match(refs [, how]) -> Match; how = "exact" (default), "substr", "zg".
int ListMatch(lua_State* L) {
  ListUd* p = CheckList(L, 1);
  ListUd* r = CheckList(L, 2);
  const std::string_view how = luaL_optstring(L, 3, "exact");
  std::vector<std::uint8_t> flags;
  if (how == "exact") {
    flags = ExactMatch(p->items, r->items);
  } else if (how == "substr") {
    flags = SubstringMatch(p->corpus->lex, p->items, r->items);
  } else if (how == "zg") {
    flags = ZeschGurevychMatch(p->items, r->items);
  } else {
    return luaL_argerror(L, 3, "expected 'exact', 'substr' or 'zg'");
  }
  NewUserdata<MatchUd>(L, kMatchMeta, MatchUd{std::move(flags)});
  return 1;
}

// list:alpha_ndcg(refs, ks, alpha, kind) -> one value per k (ks: an integer or an array of integers);
// kind "word_pool" (kplab, default) or "substring" (KPEval).
int ListAlphaNdcg(lua_State* L) {
  ListUd* p = CheckList(L, 1);
  ListUd* r = CheckList(L, 2);
  std::vector<std::size_t> ks;
  if (lua_istable(L, 3)) {
    const lua_Integer n = luaL_len(L, 3);
    for (lua_Integer i = 1; i <= n; ++i) {
      lua_rawgeti(L, 3, i);
      const lua_Integer k = luaL_checkinteger(L, -1);
      luaL_argcheck(L, k >= 0, 3, "k must be >= 0");
      ks.push_back(static_cast<std::size_t>(k));
      lua_pop(L, 1);
    }
  } else {
    ks.push_back(CheckK(L, 3));
  }
  const double alpha = luaL_optnumber(L, 4, 0.5);
  const std::string_view kind = luaL_optstring(L, 5, "word_pool");
  std::vector<double> values;
  if (kind == "word_pool") {
    values = AlphaNdcgWordPool(p->items, r->items, ks, alpha);
  } else if (kind == "substring") {
    values = AlphaNdcgSubstring(p->corpus->lex, p->items, r->items, ks, alpha);
  } else {
    return luaL_argerror(L, 5, "expected 'word_pool' or 'substring'");
  }
  luaL_checkstack(L, static_cast<int>(values.size()), "too many cut-offs");
  for (double v : values) lua_pushnumber(L, v);
  return static_cast<int>(values.size());
}

int ListToString(lua_State* L) {
  ListUd* l = CheckList(L, 1);
  std::string s = "KeyphraseList(" + std::to_string(l->items.size()) + ") {";
  for (std::size_t i = 0; i < l->items.size(); ++i) {
    s += i ? "; " : "";
    s += l->items[i]->surface();
    if (i == 9 && l->items.size() > 10) {
      s += "; ...";
      break;
    }
  }
  s += "}";
  lua_pushlstring(L, s.data(), s.size());
  return 1;
}

int ListIndex(lua_State* L) {
  if (lua_type(L, 2) == LUA_TNUMBER) return ListGet(L);
  PushMethod(L, kListMeta, 2);
  return 1;
}

const luaL_Reg kListMethods[] = {
    {"__len", Safe<ListLen>},
    {"__tostring", Safe<ListToString>},
    {"top", Safe<ListTop>},
    {"present", Safe<ListFilterPresent<true>>},
    {"absent", Safe<ListFilterPresent<false>>},
    {"subset", Safe<ListSubset>},
    {"present_first", Safe<ListPresentFirst>},
    {"unique", Safe<ListUnique>},
    {"get", Safe<ListGet>},
    {"surfaces", Safe<ListSurfaces>},
    {"keys", Safe<ListKeys>},
    {"prmu", Safe<ListPrmu>},
    {"match", Safe<ListMatch>},
    {"match_pairs", Safe<ListMatchPairs>},
    {"alpha_ndcg", Safe<ListAlphaNdcg>},
    {nullptr, nullptr},
};

// ---- Match -----------------------------------------------------------------------------------------

int MatchLen(lua_State* L) {
  lua_pushinteger(L, static_cast<lua_Integer>(CheckMatch(L, 1)->flags.size()));
  return 1;
}
// The Match methods below take one or more cut-offs and return one value per cut-off, so a metric
// can ask for @5, @10 and @M in one call.
template <class F>
int PerK(lua_State* L, F f) {
  MatchUd* m = CheckMatch(L, 1);
  const int nk = lua_gettop(L) - 1;
  if (nk <= 0) {  // no cut-off: the whole list
    f(L, *m, m->flags.size());
    return 1;
  }
  luaL_checkstack(L, nk, "too many cut-offs");
  for (int i = 0; i < nk; ++i) f(L, *m, CheckK(L, 2 + i));
  return nk;
}

int MatchHits(lua_State* L) {
  return PerK(L, [](lua_State* L, MatchUd& m, std::size_t k) { lua_pushinteger(L, HitsAt(m.flags, k)); });
}
int MatchPrecisionSum(lua_State* L) {
  return PerK(L, [](lua_State* L, MatchUd& m, std::size_t k) { lua_pushnumber(L, PrecisionSumAt(m.flags, k)); });
}
int MatchDcg(lua_State* L) {
  return PerK(L, [](lua_State* L, MatchUd& m, std::size_t k) { lua_pushnumber(L, DcgAt(m.flags, k)); });
}
int MatchFirstHit(lua_State* L) {
  const int r = FirstHit(CheckMatch(L, 1)->flags);
  if (r == 0) {
    lua_pushnil(L);
  } else {
    lua_pushinteger(L, r);
  }
  return 1;
}
int MatchFlags(lua_State* L) {
  MatchUd* m = CheckMatch(L, 1);
  lua_createtable(L, static_cast<int>(m->flags.size()), 0);
  for (std::size_t i = 0; i < m->flags.size(); ++i) {
    lua_pushboolean(L, m->flags[i]);
    lua_rawseti(L, -2, static_cast<lua_Integer>(i + 1));
  }
  return 1;
}
// Ideal DCG of the own relevance vector sorted (KPEval's NDCG ideal): the hits at the top, cut at k.
int MatchOwnIdealDcg(lua_State* L) {
  return PerK(L, [](lua_State* L, MatchUd& m, std::size_t k) {
    lua_pushnumber(L, IdealDcgAt(static_cast<std::size_t>(HitsAt(m.flags, m.flags.size())), k));
  });
}
int MatchToString(lua_State* L) {
  MatchUd* m = CheckMatch(L, 1);
  std::string s = "Match{";
  for (auto f : m->flags) s += f ? '1' : '0';
  s += "}";
  lua_pushlstring(L, s.data(), s.size());
  return 1;
}

const luaL_Reg kMatchMethods[] = {
    {"__len", Safe<MatchLen>},
    {"__tostring", Safe<MatchToString>},
    {"hits", Safe<MatchHits>},
    {"precision_sum", Safe<MatchPrecisionSum>},
    {"dcg", Safe<MatchDcg>},
    {"own_ideal_dcg", Safe<MatchOwnIdealDcg>},
    {"first_hit", Safe<MatchFirstHit>},
    {"flags", Safe<MatchFlags>},
    {nullptr, nullptr},
};

// ---- Document --------------------------------------------------------------------------------------

DocUd* CheckDoc(lua_State* L, int i) { return Check<DocUd>(L, i, kDocMeta); }

void PushAll(lua_State* L, const DocUd* d, KeyphraseList view) {
  PushList(L, d->corpus, d->doc)->items = view;
}

// doc:subset(s) -> preds, refs of subset s ("all", "present", "absent"), or nothing when s needs the
// source text and the document has none. Views into the corpus, no copies.
int DocSubset(lua_State* L) {
  DocUd* d = CheckDoc(L, 1);
  const std::string_view which = luaL_checkstring(L, 2);
  int view;
  if (which == "all") {
    view = 0;
  } else if (which == "present") {
    view = 1;
  } else if (which == "absent") {
    view = 2;
  } else {
    return luaL_argerror(L, 2, "expected 'all', 'present' or 'absent'");
  }
  if (view > 0 && !d->doc->has_text) return 0;
  PushList(L, d->corpus, d->doc)->items = d->doc->pred_view(view);
  PushList(L, d->corpus, d->doc)->items = d->doc->ref_view(view);
  return 2;
}

// doc:kpeval_references() -> present, absent: KPEval's reference lists (KpevalReferenceLists), the
// references before dedup zipped with the deduplicated ones' presence flags.
int DocKpevalReferences(lua_State* L) {
  DocUd* d = CheckDoc(L, 1);
  KpevalReferences lists = KpevalReferenceLists(*d->doc);
  PushList(L, d->corpus, d->doc)->Own(std::move(lists.present));
  PushList(L, d->corpus, d->doc)->Own(std::move(lists.absent));
  return 2;
}

int DocIndex(lua_State* L) {
  DocUd* d = CheckDoc(L, 1);
  const std::string_view key = luaL_checkstring(L, 2);
  // A method (kDocMethods, in the type's method table: the sandbox's walk of every C function finds
  // them there), else a field.
  PushMethod(L, kDocMeta, 2);
  if (!lua_isnil(L, -1)) return 1;
  lua_pop(L, 1);
  if (key == "preds") {
    PushAll(L, d, d->doc->pred_view(0));
  } else if (key == "refs") {
    PushAll(L, d, d->doc->ref_view(0));
  } else if (key == "preds_with_duplicates") {
    PushAll(L, d, d->doc->pred_view_dups().empty() ? d->doc->pred_view(0) : d->doc->pred_view_dups());
  } else if (key == "refs_with_duplicates") {
    PushAll(L, d, d->doc->ref_view_dups());
  } else if (key == "id") {
    lua_pushlstring(L, d->doc->id.data(), d->doc->id.size());
  } else if (key == "index") {
    // The document's position in its corpus (1-based): corpus:doc(doc.index) is doc.
    lua_pushinteger(L, static_cast<lua_Integer>(d->doc - d->corpus->docs.data()) + 1);
  } else if (key == "has_text") {
    lua_pushboolean(L, d->doc->has_text);
  } else if (key == "source") {
    if (!d->doc->has_text) {
      lua_pushnil(L);
    } else {
      PushStringArray(L, *d->corpus, d->doc->src_tokens());
    }
  } else if (key == "title" || key == "body" || key == "title_stems" || key == "body_stems") {
    // The document's parts as the profile tokenized them (stems: one per token); nil without text.
    const Document& doc = *d->doc;
    if (!doc.has_text) {
      lua_pushnil(L);
    } else {
      const bool stems = key.ends_with("_stems");
      const std::span<const TokenId> all = stems ? doc.src_stems() : doc.src_tokens();
      const std::span<const TokenId> part =
          key.starts_with("title") ? std::span<const TokenId>(all).first(std::min<std::size_t>(doc.title_end(), all.size()))
                                   : std::span<const TokenId>(all).subspan(std::min<std::size_t>(doc.body_start(), all.size()));
      PushStringArray(L, *d->corpus, part);
    }
  } else if (key == "n_pred_pieces") {
    lua_pushinteger(L, d->doc->n_pred_pieces);
  } else {
    return luaL_error(L, "Document has no field '%s'", std::string(key).c_str());
  }
  return 1;
}

int DocToString(lua_State* L) {
  DocUd* d = CheckDoc(L, 1);
  lua_pushfstring(L, "Document(%s: %d refs, %d preds)", d->doc->id.c_str(),
                  static_cast<int>(d->doc->refs.size()), static_cast<int>(d->doc->preds.size()));
  return 1;
}

const luaL_Reg kDocMethods[] = {
    {"__tostring", Safe<DocToString>},
    {"subset", Safe<DocSubset>},
    {"kpeval_references", Safe<DocKpevalReferences>},
    {nullptr, nullptr},
};

// ---- Corpus ----------------------------------------------------------------------------------------

CorpusUd* CheckCorpus(lua_State* L, int i) { return Check<CorpusUd>(L, i, kCorpusMeta); }

int CorpusLen(lua_State* L) {
  lua_pushinteger(L, static_cast<lua_Integer>(CheckCorpus(L, 1)->corpus->docs.size()));
  return 1;
}
int CorpusDoc(lua_State* L) {
  CorpusUd* c = CheckCorpus(L, 1);
  const lua_Integer i = luaL_checkinteger(L, 2);
  if (i < 1 || static_cast<std::size_t>(i) > c->corpus->docs.size()) {
    return luaL_error(L, "document index %d out of range (expected 1..%d)", static_cast<int>(i),
                      static_cast<int>(c->corpus->docs.size()));
  }
  PushDocument(L, c->corpus, static_cast<std::size_t>(i - 1));
  return 1;
}
int CorpusToString(lua_State* L) {
  CorpusUd* c = CheckCorpus(L, 1);
  lua_pushfstring(L, "Corpus(%s: %d documents, profile %s)", c->corpus->dataset_name.c_str(),
                  static_cast<int>(c->corpus->docs.size()), c->corpus->profile.name.c_str());
  return 1;
}

const luaL_Reg kCorpusMethods[] = {
    {"__len", Safe<CorpusLen>},
    {"__tostring", Safe<CorpusToString>},
    {"doc", Safe<CorpusDoc>},
    {nullptr, nullptr},
};

// kp.ideal_dcg(n_relevant, k, ...) -> one value per k.
int IdealDcg(lua_State* L) {
  const std::size_t n = CheckK(L, 1);
  // IdealDcgAt loops min(n, k) times in C, outside the instruction budget: bound it.
  luaL_argcheck(L, n <= (1u << 24), 1, "n_relevant must be <= 16777216");
  const int nk = lua_gettop(L) - 1;
  luaL_argcheck(L, nk >= 1, 2, "expected at least one cut-off");
  luaL_checkstack(L, nk, "too many cut-offs");
  for (int i = 0; i < nk; ++i) lua_pushnumber(L, IdealDcgAt(n, CheckK(L, 2 + i)));
  return nk;
}

// kp.cutoffs("5,10,M,O") -> {5, 10, "M", "O"}, or nil and a message naming the bad item. Cut-offs are
// integers from 1 to 100000 (written in decimal), "M" (number of predictions) or "O" (of references),
// each once, in the order given.
int Cutoffs(lua_State* L) {
  if (lua_type(L, 1) == LUA_TTABLE) return DeclareCutoffsParam(L);  // a parameter declaration (plugin API 2)
  std::size_t len = 0;
  const char* s = luaL_checklstring(L, 1, &len);
  Result<std::vector<Cutoff>> ks = ParseCutoffs(std::string_view(s, len));
  if (!ks) {
    lua_pushnil(L);
    lua_pushlstring(L, ks.error().message.data(), ks.error().message.size());
    return 2;
  }
  PushCutoffs(L, *ks);
  return 1;
}

}  // namespace

void PushCutoffs(lua_State* L, const std::vector<Cutoff>& ks) {
  lua_createtable(L, static_cast<int>(ks.size()), 0);
  for (std::size_t i = 0; i < ks.size(); ++i) {
    if (ks[i].k > 0) {
      lua_pushinteger(L, ks[i].k);
    } else {
      lua_pushlstring(L, &ks[i].symbol, 1);
    }
    lua_rawseti(L, -2, static_cast<lua_Integer>(i + 1));
  }
}

int PushDocSubset(lua_State* L, int doc, int view) {
  DocUd* d = CheckDoc(L, doc);
  if (view > 0 && !d->doc->has_text) return 0;
  PushList(L, d->corpus, d->doc)->items = d->doc->pred_view(view);
  PushList(L, d->corpus, d->doc)->items = d->doc->ref_view(view);
  return 2;
}

void PushDocument(lua_State* L, std::shared_ptr<const Corpus> corpus, std::size_t index) {
  const Document* d = &corpus->docs[index];
  NewUserdata<DocUd>(L, kDocMeta, DocUd{std::move(corpus), d});
}

std::shared_ptr<const Corpus> CheckCorpusArg(lua_State* L, int idx) { return CheckCorpus(L, idx)->corpus; }

void PushCorpus(lua_State* L, std::shared_ptr<const Corpus> corpus) {
  NewUserdata<CorpusUd>(L, kCorpusMeta, CorpusUd{std::move(corpus)});
}

const Corpus* TestCorpus(lua_State* L, int idx) {
  void* p = lua_touserdata(L, idx);
  if (p == nullptr || !lua_getmetatable(L, idx)) return nullptr;
  lua_rawgetp(L, LUA_REGISTRYINDEX, kCorpusMeta);
  const bool ok = lua_rawequal(L, -1, -2);
  lua_pop(L, 2);
  return ok ? static_cast<CorpusUd*>(p)->corpus.get() : nullptr;
}

bool ToKeyphraseList(lua_State* L, int idx, KeyphraseList* items,
                     const Corpus** corpus) {
  void* p = lua_touserdata(L, idx);
  if (p == nullptr || !lua_getmetatable(L, idx)) return false;
  lua_rawgetp(L, LUA_REGISTRYINDEX, kListMeta);
  const bool ok = lua_rawequal(L, -1, -2);
  lua_pop(L, 2);
  if (!ok) return false;
  auto* l = static_cast<ListUd*>(p);
  *items = l->items;
  if (corpus != nullptr) *corpus = l->corpus.get();
  return true;
}

bool ToKeyphraseListDoc(lua_State* L, int idx, KeyphraseList* items,
                        const Corpus** corpus, const Document** doc) {
  if (!ToKeyphraseList(L, idx, items, corpus)) return false;
  *doc = static_cast<ListUd*>(lua_touserdata(L, idx))->doc;
  return true;
}

void InstallCorpus(lua_State* L) {
  // [kp]
  // No method changes a list, a match, a document or a corpus: a plugin may keep one made at load.
  DefineType<ListUd>(L, kListMeta, kListMethods, &Safe<ListIndex>, KeptAtLoad::kImmutable);
  DefineType<MatchUd>(L, kMatchMeta, kMatchMethods, nullptr, KeptAtLoad::kImmutable);
  DefineType<DocUd>(L, kDocMeta, kDocMethods, &Safe<DocIndex>, KeptAtLoad::kImmutable);
  DefineType<CorpusUd>(L, kCorpusMeta, kCorpusMethods, nullptr, KeptAtLoad::kImmutable);
  lua_pushcfunction(L, Safe<IdealDcg>);
  lua_setfield(L, -2, "ideal_dcg");
  lua_pushcfunction(L, Safe<Cutoffs>);
  lua_setfield(L, -2, "cutoffs");
}

}  // namespace kplab::host
