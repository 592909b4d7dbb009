// kp text functions: kp.lower, kp.split, kp.word_tokenize, kp.stem.
#include <string>

#include "bindings.h"
#include "kplab/stem.h"
#include "kplab/text.h"
#include "lua_util.h"

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

int Lower(lua_State* L) {
  const std::string out = kplab::Lower(CheckUtf8(L, 1));
  lua_pushlstring(L, out.data(), out.size());
  return 1;
}

// kp.split(s [, how]): how = "whitespace" (Python s.split(), default) or "space" (Python s.split(' ')).
int Split(lua_State* L) {
  const std::string_view s = CheckUtf8(L, 1);
  const std::string_view how = luaL_optstring(L, 2, "whitespace");
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
  PushArray(L, kplab::WordTokenize(CheckUtf8(L, 1)));
  return 1;
}

// kp.stem(word [, mode]) with mode "nltk" (default), "original" or "martin".
int Stem(lua_State* L) {
  const std::string_view word = CheckUtf8(L, 1);
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
