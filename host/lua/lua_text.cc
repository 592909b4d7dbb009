// kp text functions: kp.lower, kp.split, kp.word_tokenize, kp.stem.
#include <string>
#include <string_view>

#include "bindings.h"
#include "kplab/stem.h"
#include "kplab/text.h"
#include "lua_util.h"
#include "sandbox.h"

namespace kplab::host {

namespace {

std::string_view CheckUtf8(lua_State* L, int i) {
  std::size_t n = 0;
  const char* s = luaL_checklstring(L, i, &n);
  std::string_view v(s, n);
  if (!ValidUtf8(v)) luaL_argerror(L, i, "invalid UTF-8");
  return v;
}

template <class Seq>
void PushArray(lua_State* L, const Seq& items) {
  lua_createtable(L, static_cast<int>(items.size()), 0);
  lua_Integer i = 0;
  for (const auto& s : items) {
    lua_pushlstring(L, s.data(), s.size());
    lua_rawseti(L, -2, ++i);
  }
}

// Native work on a script's behalf is charged before it is done (sandbox.h: ChargeNative,
// ReserveNative): one step per input byte, and the worst case of the output's native size.
void ChargeText(lua_State* L, std::string_view s, double bytes_per_input_byte, const char* what) {
  ChargeNative(L, static_cast<double>(s.size()));
  ReserveNative(L, bytes_per_input_byte * static_cast<double>(s.size()), what);
}

int Lower(lua_State* L) {
  const std::string_view in = CheckUtf8(L, 1);
  ChargeText(L, in, 2, "kp.lower");
  const std::string out = kplab::Lower(in);
  lua_pushlstring(L, out.data(), out.size());
  return 1;
}

// kp.split(s [, how]): how = "whitespace" (Python s.split(), default) or "space" (Python s.split(' ')).
int Split(lua_State* L) {
  const std::string_view s = CheckUtf8(L, 1);
  const std::string_view how = luaL_optstring(L, 2, "whitespace");
  // At most one piece per two bytes ("a a a"), one per byte for "space" ("   " gives empty pieces).
  ChargeText(L, s, sizeof(std::string_view), "kp.split");
  if (how == "whitespace") {
    PushArray(L, SplitWhitespace(s));
  } else if (how == "space") {
    PushArray(L, SplitSpace(s));
  } else {
    return luaL_argerror(L, 2, "expected 'whitespace' or 'space'");
  }
  return 1;
}

int WordTokenize(lua_State* L) {
  const std::string_view s = CheckUtf8(L, 1);
  // At most one token per byte, each a std::string.
  ChargeText(L, s, sizeof(std::string), "kp.word_tokenize");
  PushArray(L, kplab::WordTokenize(s));
  return 1;
}

// kp.stem(word [, mode]) with mode "nltk" (default), "original" or "martin".
int Stem(lua_State* L) {
  const std::string_view word = CheckUtf8(L, 1);
  ChargeText(L, word, 4, "kp.stem");
  const auto mode = ParsePorterMode(luaL_optstring(L, 2, "nltk"));
  if (!mode) return luaL_argerror(L, 2, "expected 'nltk', 'original' or 'martin'");
  const std::string out = PorterStemmer(*mode).Stem(word);
  lua_pushlstring(L, out.data(), out.size());
  return 1;
}

const luaL_Reg kFunctions[] = {
    {"lower", Safe<Lower>},
    {"split", Safe<Split>},
    {"word_tokenize", Safe<WordTokenize>},
    {"stem", Safe<Stem>},
    {nullptr, nullptr},
};

}  // namespace

void InstallText(lua_State* L) { luaL_setfuncs(L, kFunctions, 0); }  // [kp]

}  // namespace kplab::host
