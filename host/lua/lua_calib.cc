// kp.calib: keyphrase perplexity, expected calibration error and positional analysis (core calib.h,
// docs/calibration.md). The functions that take a KeyphraseList read the token probabilities and source
// positions in C++ and return plain arrays, one entry per keyphrase of the list:
//   kp.calib.kpp(logprobs [, words])        -> KPP (Eq. 2/3) of one keyphrase, or KPP-s (Eq. 7) with words
//   kp.calib.kpps(list [, "words"|"tokens"]) -> KPP-s (default) or KPP per keyphrase; NaN without token data
//   kp.calib.token_probs(list)              -> per keyphrase, the probability of each token ({} without data)
//   kp.calib.word_probs(list)               -> per keyphrase, the probability of each word
//   kp.calib.count_probs(list)              -> how many keyphrases of the list carry token probabilities
//   kp.calib.bin(confidence, bins)          -> 1-based equal-width bin, (lo, hi]
//   kp.calib.reliability(conf, correct, bins [, "width"|"mass"]) -> {ece=, mce=, n=, binning=, bins={{lo=,
//                                                hi=, count=, correct=, accuracy=, confidence=}, ...}}
//                                                (accuracy/confidence NaN when empty)
//   kp.calib.brier(conf, correct)           -> Brier score
//   kp.calib.risk_coverage(conf, correct)   -> {aurc=, coverage={}, risk={}, threshold={}, order={}}
//   kp.calib.sequence_logprobs(list)        -> the log-probabilities of the list's document's whole
//                                              generated sequence (padding left out; {} without data)
//   kp.calib.excluded(list)                 -> duplicates, invalid (<unk>) predictions the profile
//                                              dropped from the list's document
//   kp.calib.positions(list [, bins])       -> relative character position of each keyphrase's first
//                                              occurrence in its document's source (NaN when absent), and
//                                              its 1-based section of `bins` (default 10; false when absent)
//   kp.calib.position_bin(relative, bins)   -> 1-based section
#include <cmath>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "bindings.h"
#include "kplab/calib.h"
#include "lua_util.h"

namespace kplab::host {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

struct ListArg {
  KeyphraseList items;
  const Corpus* corpus = nullptr;
  const Document* doc = nullptr;
};

ListArg CheckListArg(lua_State* L, int i, const char* fn) {
  ListArg a;
  if (!ToKeyphraseListDoc(L, i, &a.items, &a.corpus, &a.doc)) {
    luaL_error(L, "kp.calib.%s: argument %d is %s (expected a KeyphraseList, e.g. doc.preds)", fn, i,
               luaL_typename(L, i));
  }
  return a;
}

std::vector<double> CheckNumbers(lua_State* L, int arg, const char* fn, const char* name) {
  luaL_checktype(L, arg, LUA_TTABLE);
  const lua_Integer n = luaL_len(L, arg);  // __len may lie: size checked before reserving
  if (n < 0) luaL_error(L, "kp.calib.%s: %s has a negative length", fn, name);
  ReserveNative(L, static_cast<double>(n) * sizeof(double), "the array of numbers");
  std::vector<double> out;
  out.reserve(static_cast<std::size_t>(n));
  for (lua_Integer i = 1; i <= n; ++i) {
    lua_rawgeti(L, arg, i);
    int ok = 0;
    const double v = lua_tonumberx(L, -1, &ok);
    if (!ok) {
      luaL_error(L, "kp.calib.%s: %s[%d] is %s (expected a number)", fn, name, static_cast<int>(i),
                 luaL_typename(L, -1));
    }
    out.push_back(v);
    lua_pop(L, 1);
  }
  return out;
}

int CheckBins(lua_State* L, int arg, const char* fn) {
  const lua_Integer b = luaL_optinteger(L, arg, 10);
  if (b < 1 || b > 100000) luaL_error(L, "kp.calib.%s: bins must be in 1..100000 (got %I)", fn, static_cast<LUAI_UACINT>(b));
  return static_cast<int>(b);
}

void PushNumbers(lua_State* L, std::span<const double> v) {
  lua_createtable(L, static_cast<int>(v.size()), 0);
  for (std::size_t i = 0; i < v.size(); ++i) {
    lua_pushnumber(L, v[i]);
    lua_rawseti(L, -2, static_cast<lua_Integer>(i + 1));
  }
}

int Kpp(lua_State* L) {
  const std::vector<double> lp = CheckNumbers(L, 1, "kpp", "logprobs");
  if (lua_isnoneornil(L, 2)) {
    lua_pushnumber(L, calib::Kpp(lp));
  } else {
    lua_pushnumber(L, calib::KppWords(lp, static_cast<int>(luaL_checkinteger(L, 2))));
  }
  return 1;
}

int Kpps(lua_State* L) {
  const ListArg a = CheckListArg(L, 1, "kpps");
  auto norm = calib::ParseKppNorm(luaL_optstring(L, 2, "words"));
  if (!norm) return luaL_error(L, "kp.calib.kpps: %s", norm.error().message.c_str());
  std::vector<double> out;
  out.reserve(a.items.size());
  for (const Keyphrase* k : a.items) out.push_back(k->probs() ? calib::KeyphraseKpp(*k->probs(), *norm) : kNaN);
  PushNumbers(L, out);
  return 1;
}

template <bool kWords>
int Probs(lua_State* L) {
  const ListArg a = CheckListArg(L, 1, kWords ? "word_probs" : "token_probs");
  lua_createtable(L, static_cast<int>(a.items.size()), 0);
  for (std::size_t i = 0; i < a.items.size(); ++i) {
    std::vector<double> p;
    if (const TokenProbs* t = a.items[i]->probs()) {
      if (kWords) {
        p = calib::WordProbs(*t);
      } else {
        for (double lp : t->logprobs) p.push_back(std::exp(lp));
      }
    }
    PushNumbers(L, p);
    lua_rawseti(L, -2, static_cast<lua_Integer>(i + 1));
  }
  return 1;
}

int CountProbs(lua_State* L) {
  const ListArg a = CheckListArg(L, 1, "count_probs");
  lua_Integer n = 0;
  for (const Keyphrase* k : a.items) n += k->probs() != nullptr;
  lua_pushinteger(L, n);
  return 1;
}

int Bin(lua_State* L) {
  const double c = luaL_checknumber(L, 1);
  const int bins = CheckBins(L, 2, "bin");
  if (!std::isfinite(c) || c < 0) return luaL_error(L, "kp.calib.bin: confidence %f (expected a finite number >= 0)", c);
  lua_pushinteger(L, calib::BinIndex(c, bins) + 1);
  return 1;
}

std::vector<std::uint8_t> CheckCorrect(lua_State* L, int arg, const char* fn) {
  luaL_checktype(L, arg, LUA_TTABLE);
  const lua_Integer n = luaL_len(L, arg);
  if (n < 0) luaL_error(L, "kp.calib.%s: correct has a negative length", fn);
  ReserveNative(L, static_cast<double>(n), "the array of flags");
  std::vector<std::uint8_t> correct;
  for (lua_Integer i = 1; i <= n; ++i) {
    lua_rawgeti(L, arg, i);
    if (lua_isboolean(L, -1)) {
      correct.push_back(lua_toboolean(L, -1) ? 1 : 0);
    } else if (lua_isinteger(L, -1) && (lua_tointeger(L, -1) == 0 || lua_tointeger(L, -1) == 1)) {
      correct.push_back(static_cast<std::uint8_t>(lua_tointeger(L, -1)));
    } else {
      luaL_error(L, "kp.calib.%s: correct[%d] is %s (expected a boolean or 0/1)", fn, static_cast<int>(i),
                 luaL_typename(L, -1));
    }
    lua_pop(L, 1);
  }
  return correct;
}

int Reliability(lua_State* L) {
  const std::vector<double> conf = CheckNumbers(L, 1, "reliability", "confidence");
  const std::vector<std::uint8_t> correct = CheckCorrect(L, 2, "reliability");
  const int bins = CheckBins(L, 3, "reliability");
  const char* mode = luaL_optstring(L, 4, "width");
  auto binning = calib::ParseBinning(mode);
  if (!binning) return luaL_error(L, "kp.calib.reliability: %s", binning.error().message.c_str());
  auto r = calib::ComputeReliability(conf, correct, bins, *binning);
  if (!r) return luaL_error(L, "kp.calib.reliability: %s", r.error().message.c_str());
  lua_createtable(L, 0, 5);
  SetNumber(L, "ece", r->ece);
  SetNumber(L, "mce", r->mce);
  lua_pushstring(L, mode);
  lua_setfield(L, -2, "binning");
  lua_pushinteger(L, static_cast<lua_Integer>(r->n));
  lua_setfield(L, -2, "n");
  lua_createtable(L, bins, 0);
  for (int i = 0; i < bins; ++i) {
    const calib::ReliabilityBin& b = r->bins[static_cast<std::size_t>(i)];
    lua_createtable(L, 0, 6);
    SetNumber(L, "lo", b.lo);
    SetNumber(L, "hi", b.hi);
    lua_pushinteger(L, static_cast<lua_Integer>(b.count));
    lua_setfield(L, -2, "count");
    lua_pushinteger(L, static_cast<lua_Integer>(b.correct));
    lua_setfield(L, -2, "correct");
    SetNumber(L, "accuracy", b.accuracy());
    SetNumber(L, "confidence", b.confidence());
    lua_rawseti(L, -2, i + 1);
  }
  lua_setfield(L, -2, "bins");
  return 1;
}

int Brier(lua_State* L) {
  const std::vector<double> conf = CheckNumbers(L, 1, "brier", "confidence");
  const std::vector<std::uint8_t> correct = CheckCorrect(L, 2, "brier");
  auto b = calib::Brier(conf, correct);
  if (!b) return luaL_error(L, "kp.calib.brier: %s", b.error().message.c_str());
  lua_pushnumber(L, *b);
  return 1;
}

int RiskCoverage(lua_State* L) {
  const std::vector<double> conf = CheckNumbers(L, 1, "risk_coverage", "confidence");
  const std::vector<std::uint8_t> correct = CheckCorrect(L, 2, "risk_coverage");
  auto rc = calib::ComputeRiskCoverage(conf, correct);
  if (!rc) return luaL_error(L, "kp.calib.risk_coverage: %s", rc.error().message.c_str());
  lua_createtable(L, 0, 5);
  SetNumber(L, "aurc", rc->aurc);
  PushNumbers(L, rc->coverage);
  lua_setfield(L, -2, "coverage");
  PushNumbers(L, rc->risk);
  lua_setfield(L, -2, "risk");
  PushNumbers(L, rc->threshold);
  lua_setfield(L, -2, "threshold");
  lua_createtable(L, static_cast<int>(rc->order.size()), 0);
  for (std::size_t i = 0; i < rc->order.size(); ++i) {
    lua_pushinteger(L, static_cast<lua_Integer>(rc->order[i] + 1));
    lua_rawseti(L, -2, static_cast<lua_Integer>(i + 1));
  }
  lua_setfield(L, -2, "order");
  return 1;
}

int SequenceLogprobs(lua_State* L) {
  const ListArg a = CheckListArg(L, 1, "sequence_logprobs");
  PushNumbers(L, a.doc ? a.doc->sequence_logprobs() : std::span<const double>{});
  return 1;
}

int Excluded(lua_State* L) {
  const ListArg a = CheckListArg(L, 1, "excluded");
  lua_pushinteger(L, a.doc ? a.doc->n_pred_dups() : 0);
  lua_pushinteger(L, a.doc ? a.doc->n_pred_invalid : 0);
  return 2;
}

int Positions(lua_State* L) {
  const ListArg a = CheckListArg(L, 1, "positions");
  const int bins = CheckBins(L, 2, "positions");
  std::vector<double> out;
  out.reserve(a.items.size());
  lua_createtable(L, static_cast<int>(a.items.size()), 0);  // sections, returned second
  for (std::size_t i = 0; i < a.items.size(); ++i) {
    const auto first = calib::FirstOccurrence(*a.corpus, *a.doc, a.items[i]->stems());
    if (first) {
      const calib::CharPosition p = calib::TokenCharPosition(*a.corpus, *a.doc, *first);
      out.push_back(p.relative());
      lua_pushinteger(L, p.Section(bins) + 1);
    } else {
      out.push_back(kNaN);
      lua_pushboolean(L, 0);
    }
    lua_rawseti(L, -2, static_cast<lua_Integer>(i + 1));
  }
  PushNumbers(L, out);
  lua_insert(L, -2);
  return 2;
}

int PositionBin(lua_State* L) {
  const double rel = luaL_checknumber(L, 1);
  const int bins = CheckBins(L, 2, "position_bin");
  if (!std::isfinite(rel)) return luaL_error(L, "kp.calib.position_bin: position is not finite (expected 0..1)");
  lua_pushinteger(L, calib::PositionBin(rel, bins) + 1);
  return 1;
}

const luaL_Reg kFunctions[] = {
    {"kpp", Safe<Kpp>},
    {"kpps", Safe<Kpps>},
    {"token_probs", Safe<Probs<false>>},
    {"word_probs", Safe<Probs<true>>},
    {"count_probs", Safe<CountProbs>},
    {"bin", Safe<Bin>},
    {"reliability", Safe<Reliability>},
    {"brier", Safe<Brier>},
    {"risk_coverage", Safe<RiskCoverage>},
    {"sequence_logprobs", Safe<SequenceLogprobs>},
    {"excluded", Safe<Excluded>},
    {"positions", Safe<Positions>},
    {"position_bin", Safe<PositionBin>},
    {nullptr, nullptr},
};

}  // namespace

void InstallCalib(lua_State* L) {
  // [kp]
  luaL_newlib(L, kFunctions);  // [kp, calib]
  lua_setfield(L, -2, "calib");
}

}  // namespace kplab::host
