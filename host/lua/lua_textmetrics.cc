// kp.textmetrics: the counting behind ROUGE, METEOR, Self-BLEU and the Indel similarity
// (kplab/textmetrics.h); the plugins rouge.lua, meteor.lua and diversity.lua turn the counts into scores.
// Pure functions (no file access but WordNet's fixed database, read once per process).
//   kp.textmetrics.rouge_n(hyp, ref, n [, style]) -> hits, hyp_count, ref_count
//   kp.textmetrics.rouge_l(hyp, ref [, style])    -> hits, hyp_count, ref_count
//       style "lin" (default): hyp/ref a KeyphraseList (one unit per keyphrase: its tokens), an array
//       of strings (one unit each, split on whitespace) or a string (one unit); "pltrdy": strings, read
//       as pltrdy/rouge 1.0.1 reads them (cut at '.', words between spaces)
//   kp.textmetrics.meteor(hyp, ref [, {synonyms = true}])
//       -> {matches=, chunks=, hyp_len=, ref_len=, exact=, stem=, synonym=}; hyp/ref a string (kplab's
//       word tokenizer, as evaluate's meteor runs nltk.word_tokenize), an array of tokens or a
//       KeyphraseList (its keyphrases' tokens, in order)
//   kp.textmetrics.wordnet() -> true, or nil and why WordNet cannot be read (what to install)
//   kp.textmetrics.self_bleu(items, n [, split]) -> {{num={...}, den={...}, hyp_len=, ref_len=}, ...}
//       items: array of strings, split = "words" (default: kplab's word tokenizer, KPEval's
//       word_tokenize) or "whitespace"
//   kp.textmetrics.self_indel(items) -> {mean similarity of item i to the others, ...} ({} for < 2)
// Every native loop is charged to the VM's budget before it runs (ChargeNative), checked while it runs
// where it is long (CheckNative), and its buffers are checked against the memory cap (ReserveNative).
// The cost bounds, in steps (about one inner-loop iteration each), are those of docs/plugins.md, Limits.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "bindings.h"
#include "kplab/corpus.h"
#include "kplab/file_gate.h"
#include "kplab/text.h"
#include "kplab/textmetrics.h"
#include "kplab/utf8.h"
#include "kplab/wordnet.h"
#include "lua_util.h"
#include "sandbox.h"

namespace kplab::host {

namespace {

namespace tm = kplab::textmetrics;

[[noreturn]] void Fail(lua_State* L, const char* fn, const std::string& what) {
  luaL_error(L, "kp.textmetrics.%s: %s", fn, what.c_str());
  std::abort();  // unreachable
}

// A string argument checked as every binding checks one (lua_util.h: CheckUtf8Arg), named as this module's
// errors are: "kp.textmetrics.FN: WHAT is not valid UTF-8".
std::string_view TextArg(lua_State* L, int idx, const char* fn, const std::string& what) {
  return CheckUtf8Arg(L, idx, std::string("kp.textmetrics.") + fn, what);
}

// The strings of an array argument (raw reads: no metamethod runs). Views into the Lua strings, which
// the array keeps alive during the call.
std::vector<std::string_view> StringArray(lua_State* L, int idx, const char* fn) {
  if (!lua_istable(L, idx)) {
    Fail(L, fn, fmt::format("argument #{} must be an array of strings (got {})", idx, luaL_typename(L, idx)));
  }
  const lua_Unsigned n = lua_rawlen(L, idx);
  std::vector<std::string_view> out;
  out.reserve(n);
  for (lua_Unsigned i = 1; i <= n; ++i) {
    lua_rawgeti(L, idx, static_cast<lua_Integer>(i));
    if (lua_type(L, -1) != LUA_TSTRING) {
      Fail(L, fn, fmt::format("argument #{}[{}] must be a string (got {})", idx, i, luaL_typename(L, -1)));
    }
    out.push_back(TextArg(L, -1, fn, fmt::format("argument #{}[{}]", idx, i)));
    lua_pop(L, 1);
  }
  return out;
}

// A text argument as units. Strings the units view are kept in `own` (tokens from a tokenizer) or in
// the Lua values and the corpus's lexicon.
struct Text {
  tm::Units units;
  std::vector<std::string> own;
};

void UnitsOfList(const KeyphraseList& items, const Corpus& c, tm::Units* out) {
  std::vector<std::string_view> toks;
  for (const Keyphrase* k : items) {
    toks.clear();
    for (TokenId t : k->tokens()) toks.push_back(c.Str(t));
    out->Add(toks);
  }
}

// hyp/ref of rouge_n and rouge_l.
Text RougeText(lua_State* L, int idx, tm::RougeStyle style, const char* fn) {
  Text t;
  KeyphraseList items;
  const Corpus* c = nullptr;
  if (style == tm::RougeStyle::kPltrdy) {
    if (lua_type(L, idx) != LUA_TSTRING) {
      Fail(L, fn,
           fmt::format("argument #{} must be a string with style 'pltrdy' (got {})", idx, luaL_typename(L, idx)));
    }
    const std::string_view s = TextArg(L, idx, fn, fmt::format("argument #{}", idx));
    ReserveNative(L, 32.0 * static_cast<double>(s.size()), fmt::format("kp.textmetrics.{}", fn).c_str());
    t.units = tm::PltrdySentences(s);
    return t;
  }
  if (ToKeyphraseList(L, idx, &items, &c)) {
    UnitsOfList(items, *c, &t.units);
    return t;
  }
  if (lua_type(L, idx) == LUA_TSTRING) {
    t.units.Add(SplitWhitespace(TextArg(L, idx, fn, fmt::format("argument #{}", idx))));
    return t;
  }
  if (!lua_istable(L, idx)) {
    Fail(L, fn,
         fmt::format("argument #{} must be a KeyphraseList, an array of strings or a string (got {})", idx,
                     luaL_typename(L, idx)));
  }
  for (std::string_view s : StringArray(L, idx, fn)) t.units.Add(SplitWhitespace(s));
  return t;
}

tm::RougeStyle StyleArg(lua_State* L, int idx, const char* fn) {
  const std::string_view s = luaL_optstring(L, idx, "lin");
  if (s == "lin") return tm::RougeStyle::kLin;
  if (s == "pltrdy") return tm::RougeStyle::kPltrdy;
  Fail(L, fn, fmt::format("style must be 'lin' or 'pltrdy' (got '{}')", s));
}

void PushOverlap(lua_State* L, const tm::Overlap& o) {
  lua_pushinteger(L, o.hits);
  lua_pushinteger(L, o.hyp);
  lua_pushinteger(L, o.ref);
}

// Cost: (tokens of hyp + tokens of ref + 1) * n steps; memory 64 bytes per token and n-gram order.
int RougeN(lua_State* L) {
  const char* fn = "rouge_n";
  const lua_Integer n = luaL_checkinteger(L, 3);
  if (n < 1 || n > 100) Fail(L, fn, fmt::format("n must be an integer from 1 to 100 (got {})", n));
  const tm::RougeStyle style = StyleArg(L, 4, fn);
  const Text h = RougeText(L, 1, style, fn), r = RougeText(L, 2, style, fn);
  const double tokens = static_cast<double>(h.units.tokens.size() + r.units.tokens.size() + 1);
  ChargeNative(L, tokens * static_cast<double>(n));
  ReserveNative(L, 64.0 * tokens * static_cast<double>(n), "kp.textmetrics.rouge_n");
  PushOverlap(L, tm::RougeN(h.units, r.units, static_cast<int>(n), style));
  return 3;
}

// Cost: RougeLCells steps (the LCS tables of every reference unit with every hypothesis unit); memory
// the largest table (4 bytes a cell) and 16 bytes a token.
int RougeL(lua_State* L) {
  const char* fn = "rouge_l";
  const tm::RougeStyle style = StyleArg(L, 3, fn);
  const Text h = RougeText(L, 1, style, fn), r = RougeText(L, 2, style, fn);
  ChargeNative(L, tm::RougeLCells(h.units, r.units));
  ReserveNative(L,
                4.0 * tm::RougeLTableCells(h.units, r.units) +
                    16.0 * static_cast<double>(h.units.tokens.size() + r.units.tokens.size()),
                "kp.textmetrics.rouge_l");
  PushOverlap(L, tm::RougeL(h.units, r.units, style, [L](double cells) { CheckNative(L, cells); }));
  return 3;
}

// A METEOR or BLEU side as tokens: a string goes through the word tokenizer (one step and 32 bytes a
// byte, as kp.word_tokenize), an array is taken as tokens, a KeyphraseList gives its tokens in order.
std::vector<std::string_view> TokensArg(lua_State* L, int idx, const char* fn, std::vector<std::string>* own) {
  KeyphraseList items;
  const Corpus* c = nullptr;
  std::vector<std::string_view> out;
  if (lua_type(L, idx) == LUA_TSTRING) {
    const std::string_view s = TextArg(L, idx, fn, fmt::format("argument #{}", idx));
    ChargeNative(L, static_cast<double>(s.size()));
    ReserveNative(L, 32.0 * static_cast<double>(s.size()), fmt::format("kp.textmetrics.{}", fn).c_str());
    *own = WordTokenize(s);
    out.assign(own->begin(), own->end());
  } else if (ToKeyphraseList(L, idx, &items, &c)) {
    for (const Keyphrase* k : items) {
      for (TokenId t : k->tokens()) out.push_back(c->Str(t));
    }
  } else if (lua_istable(L, idx)) {
    out = StringArray(L, idx, fn);
  } else {
    Fail(L, fn,
         fmt::format("argument #{} must be a string, an array of tokens or a KeyphraseList (got {})", idx,
                     luaL_typename(L, idx)));
  }
  return out;
}

// The process's WordNet, or the error that says what to install.
// WordNet is installed data (Debian's wordnet-base, or $KPLAB_WORDNET: the user's environment), read in
// the user's context whoever asked: a plugin names no path, it only asks for METEOR's synonyms.
Result<std::shared_ptr<const WordNet>> SharedWordNet() {
  UserFileScope user;
  return WordNet::Shared(WordNet::DefaultDir());
}

// Cost: 16 steps a byte of both sides' tokens (lower-casing, stemming, the synonym stage's morphy: each
// linear in a word's length) and 64 steps a token; memory 64 bytes a byte. The first call reads WordNet
// (about 30 MB, once per process; not counted in the VM's cap, like a model's files).
int Meteor(lua_State* L) {
  const char* fn = "meteor";
  if (!lua_isnoneornil(L, 3) && !lua_istable(L, 3)) {
    Fail(L, fn, fmt::format("options must be a table (got {})", luaL_typename(L, 3)));
  }
  bool synonyms = true;
  if (lua_istable(L, 3)) {
    lua_pushnil(L);
    while (lua_next(L, 3)) {
      lua_pop(L, 1);
      if (lua_type(L, -1) != LUA_TSTRING || std::string_view(lua_tostring(L, -1)) != "synonyms") {
        const std::string key = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : luaL_typename(L, -1);
        lua_pop(L, 1);
        Fail(L, fn, fmt::format("unknown option '{}' (expected: synonyms)", key));
      }
    }
    lua_pushstring(L, "synonyms");
    const int t = lua_rawget(L, 3);
    if (t != LUA_TNIL && t != LUA_TBOOLEAN) Fail(L, fn, "option 'synonyms' must be a boolean");
    synonyms = t == LUA_TNIL || lua_toboolean(L, -1) != 0;
    lua_pop(L, 1);
  }
  std::vector<std::string> own_h, own_r;
  const auto h = TokensArg(L, 1, fn, &own_h);
  const auto r = TokensArg(L, 2, fn, &own_r);
  double bytes = 0;
  for (auto* side : {&h, &r}) {
    for (std::string_view t : *side) bytes += static_cast<double>(t.size());
  }
  ChargeNative(L, 16.0 * bytes + 64.0 * static_cast<double>(h.size() + r.size()));
  ReserveNative(L, 64.0 * bytes + 64.0 * static_cast<double>(h.size() + r.size()), "kp.textmetrics.meteor");
  std::shared_ptr<const WordNet> wn;
  if (synonyms) {
    auto loaded = SharedWordNet();
    if (!loaded) Fail(L, fn, loaded.error().message);
    wn = *loaded;
  }
  const tm::MeteorAlignment a = tm::MeteorAlign(h, r, wn.get());
  lua_createtable(L, 0, 7);
  for (const auto& [k, v] : {std::pair{"matches", a.matches},
                             {"chunks", a.chunks},
                             {"hyp_len", a.hyp_len},
                             {"ref_len", a.ref_len},
                             {"exact", a.exact},
                             {"stem", a.stem},
                             {"synonym", a.synonym}}) {
    lua_pushinteger(L, v);
    lua_setfield(L, -2, k);
  }
  return 1;
}

// Cost: none beyond reading WordNet the first time (as meteor).
int WordNetStatus(lua_State* L) {
  auto wn = SharedWordNet();
  if (!wn) {
    lua_pushnil(L);
    lua_pushstring(L, wn.error().message.c_str());
    return 2;
  }
  lua_pushboolean(L, 1);
  return 1;
}

// Cost: (tokens + 1) * n steps, plus the word tokenizer's byte each; memory 64 bytes a token and order.
int SelfBleu(lua_State* L) {
  const char* fn = "self_bleu";
  const std::vector<std::string_view> items = StringArray(L, 1, fn);
  const lua_Integer n = luaL_checkinteger(L, 2);
  if (n < 1 || n > 100) Fail(L, fn, fmt::format("n must be an integer from 1 to 100 (got {})", n));
  const std::string_view split = luaL_optstring(L, 3, "words");
  if (split != "words" && split != "whitespace") {
    Fail(L, fn, fmt::format("split must be 'words' or 'whitespace' (got '{}')", split));
  }
  double bytes = 0;
  for (std::string_view s : items) bytes += static_cast<double>(s.size());
  ChargeNative(L, bytes);
  ReserveNative(L, 32.0 * bytes, "kp.textmetrics.self_bleu");
  std::vector<std::vector<std::string>> own(items.size());
  tm::Units units;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (split == "words") {
      own[i] = WordTokenize(items[i]);
      std::vector<std::string_view> v(own[i].begin(), own[i].end());
      units.Add(v);
    } else {
      units.Add(SplitWhitespace(items[i]));
    }
  }
  const double tokens = static_cast<double>(units.tokens.size() + 1);
  ChargeNative(L, tokens * static_cast<double>(n));
  ReserveNative(L, 64.0 * tokens * static_cast<double>(n) + 64.0 * static_cast<double>(items.size()),
                "kp.textmetrics.self_bleu");
  const std::vector<tm::BleuCounts> counts = tm::SelfBleuCounts(units, static_cast<int>(n));
  lua_createtable(L, static_cast<int>(counts.size()), 0);
  for (std::size_t i = 0; i < counts.size(); ++i) {
    const tm::BleuCounts& c = counts[i];
    lua_createtable(L, 0, 4);
    for (const auto& [key, values] : {std::pair{"num", &c.num}, {"den", &c.den}}) {
      lua_createtable(L, static_cast<int>(values->size()), 0);
      for (std::size_t k = 0; k < values->size(); ++k) {
        lua_pushinteger(L, (*values)[k]);
        lua_rawseti(L, -2, static_cast<lua_Integer>(k + 1));
      }
      lua_setfield(L, -2, key);
    }
    lua_pushinteger(L, c.hyp_len);
    lua_setfield(L, -2, "hyp_len");
    lua_pushinteger(L, c.ref_len);
    lua_setfield(L, -2, "ref_len");
    lua_rawseti(L, -2, static_cast<lua_Integer>(i + 1));
  }
  return 1;
}

// Cost: SelfIndelCells steps (every pair: the 64-bit words of one string per character of the other);
// memory 8 bytes a code point and 16 an item.
int SelfIndel(lua_State* L) {
  const char* fn = "self_indel";
  const std::vector<std::string_view> items = StringArray(L, 1, fn);
  double bytes = 0;
  for (std::string_view s : items) bytes += static_cast<double>(s.size());
  ChargeNative(L, bytes);
  ReserveNative(L, 8.0 * bytes + 16.0 * static_cast<double>(items.size()), "kp.textmetrics.self_indel");
  std::vector<std::u32string> cps(items.size());
  for (std::size_t i = 0; i < items.size(); ++i) {
    for (std::size_t k = 0; k < items[i].size();) cps[i].push_back(DecodeUtf8(items[i], k));
  }
  ChargeNative(L, tm::SelfIndelCells(cps));
  const std::vector<double> sims = tm::SelfIndelSimilarity(cps, [L](double cells) { CheckNative(L, cells); });
  lua_createtable(L, static_cast<int>(sims.size()), 0);
  for (std::size_t i = 0; i < sims.size(); ++i) {
    lua_pushnumber(L, sims[i]);
    lua_rawseti(L, -2, static_cast<lua_Integer>(i + 1));
  }
  return 1;
}

const luaL_Reg kFunctions[] = {
    {"rouge_n", Safe<RougeN>},
    {"rouge_l", Safe<RougeL>},
    {"meteor", Safe<Meteor>},
    {"wordnet", Safe<WordNetStatus>},
    {"self_bleu", Safe<SelfBleu>},
    {"self_indel", Safe<SelfIndel>},
    {nullptr, nullptr},
};

}  // namespace

void InstallTextMetrics(lua_State* L) {
  // [kp]
  luaL_newlib(L, kFunctions);  // [kp, textmetrics]
  lua_setfield(L, -2, "textmetrics");
}

}  // namespace kplab::host
