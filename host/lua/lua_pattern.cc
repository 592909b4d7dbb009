// string.find, string.match, string.gmatch and string.gsub for sandboxed VMs: Lua 5.4's pattern
// language (manual §6.4.1) with the same results and error texts, but every step of the backtracking
// matcher is charged to the script's instruction budget (sandbox.h: ChargeNative). Lua's own matcher
// runs in C without hooks, so `string.find(string.rep('a', 20000), '.-.-.-b')` (~1e12 steps) could not
// be stopped by the budget, the deadline or Ctrl-C.
//
// A plain rewrite from the manual's rules, not a copy of lstrlib.c; the matcher is the usual
// recursive backtracking one (recursion for captures and '?', loops for '*', '+', '-').
#include <lua.hpp>

#include <cctype>
#include <cstddef>
#include <cstring>
#include <new>
#include <string_view>

#include "lua_pattern.h"
#include "sandbox.h"

namespace kplab::host {
namespace {

constexpr int kMaxCaptures = 32;           // as Lua's LUA_MAXCAPTURES: "too many captures"
constexpr int kMaxDepth = 200;            // as Lua's MAXCCALLS: "pattern too complex"
constexpr std::ptrdiff_t kUnfinished = -1;
constexpr std::ptrdiff_t kPosition = -2;
constexpr int kChargeEvery = 4096;        // steps between two calls to ChargeNative
constexpr char kEsc = '%';

struct Capture {
  const char* init;
  std::ptrdiff_t len;
};

struct Matcher {
  Matcher(lua_State* l, const char* src, const char* src_stop, const char* pat_stop)
      : L(l), src_init(src), src_end(src_stop), pat_end(pat_stop) {}
  lua_State* L;
  const char* src_init;
  const char* src_end;
  const char* pat_end;
  int level = 0;
  int depth = kMaxDepth;
  int steps = 0;
  Capture capture[kMaxCaptures] = {};

  void Step() {
    if (++steps == kChargeEvery) {
      steps = 0;
      ChargeNative(L, kChargeEvery);
    }
  }
  // Charges what is left over when a call ends.
  void Flush() {
    if (steps != 0) ChargeNative(L, steps);
    steps = 0;
  }
  void Reset() {
    level = 0;
    depth = kMaxDepth;
  }

  // The end of the single-character class starting at p.
  const char* ClassEnd(const char* p) {
    const char c = *p++;
    if (c == kEsc) {
      if (p >= pat_end) luaL_error(L, "malformed pattern (ends with '%%')");
      return p + 1;
    }
    if (c == '[') {
      if (*p == '^') ++p;
      do {  // the first ']' of a set is a member, not its end
        if (p >= pat_end) luaL_error(L, "malformed pattern (missing ']')");
        const char m = *p++;
        if (m == kEsc && p < pat_end) ++p;
      } while (*p != ']');
      return p + 1;
    }
    return p;
  }

  static bool ClassMatches(int c, int cl) {
    bool res;
    switch (std::tolower(cl)) {
      case 'a': res = std::isalpha(c); break;
      case 'c': res = std::iscntrl(c); break;
      case 'd': res = std::isdigit(c); break;
      case 'g': res = std::isgraph(c); break;
      case 'l': res = std::islower(c); break;
      case 'p': res = std::ispunct(c); break;
      case 's': res = std::isspace(c); break;
      case 'u': res = std::isupper(c); break;
      case 'w': res = std::isalnum(c); break;
      case 'x': res = std::isxdigit(c); break;
      case 'z': res = c == 0; break;  // deprecated in 5.2, still accepted by Lua 5.4
      default: return cl == c;
    }
    return std::isupper(cl) ? !res : res;
  }

  // p points at '[', last at its closing ']'.
  static bool SetMatches(int c, const char* p, const char* last) {
    bool member = true;
    if (p[1] == '^') {
      member = false;
      ++p;
    }
    while (++p < last) {
      if (*p == kEsc) {
        ++p;
        if (ClassMatches(c, static_cast<unsigned char>(*p))) return member;
      } else if (p[1] == '-' && p + 2 < last) {
        p += 2;
        if (static_cast<unsigned char>(p[-2]) <= c && c <= static_cast<unsigned char>(*p)) return member;
      } else if (static_cast<unsigned char>(*p) == c) {
        return member;
      }
    }
    return !member;
  }

  bool SingleMatches(const char* s, const char* p, const char* ep) const {
    if (s >= src_end) return false;
    const int c = static_cast<unsigned char>(*s);
    switch (*p) {
      case '.': return true;
      case kEsc: return ClassMatches(c, static_cast<unsigned char>(p[1]));
      case '[': return SetMatches(c, p, ep - 1);
      default: return static_cast<unsigned char>(*p) == c;
    }
  }

  const char* Balance(const char* s, const char* p) {
    if (p >= pat_end - 1) luaL_error(L, "malformed pattern (missing arguments to '%%b')");
    if (s >= src_end || *s != *p) return nullptr;
    const char open = p[0], close = p[1];
    int depth_b = 1;
    while (++s < src_end) {
      Step();
      if (*s == close) {
        if (--depth_b == 0) return s + 1;
      } else if (*s == open) {
        ++depth_b;
      }
    }
    return nullptr;
  }

  const char* MaxExpand(const char* s, const char* p, const char* ep) {
    std::ptrdiff_t i = 0;
    while (SingleMatches(s + i, p, ep)) {
      Step();
      ++i;
    }
    for (; i >= 0; --i) {  // longest first, then give back one at a time
      if (const char* r = Match(s + i, ep + 1)) return r;
    }
    return nullptr;
  }

  const char* MinExpand(const char* s, const char* p, const char* ep) {
    while (true) {
      if (const char* r = Match(s, ep + 1)) return r;
      if (!SingleMatches(s, p, ep)) return nullptr;
      ++s;
    }
  }

  const char* OpenCapture(const char* s, const char* p, std::ptrdiff_t what) {
    if (level >= kMaxCaptures) luaL_error(L, "too many captures");
    capture[level] = {s, what};
    ++level;
    const char* r = Match(s, p);
    if (r == nullptr) --level;
    return r;
  }

  const char* CloseCapture(const char* s, const char* p) {
    int l = level - 1;
    while (l >= 0 && capture[l].len != kUnfinished) --l;
    if (l < 0) luaL_error(L, "invalid pattern capture");
    capture[l].len = s - capture[l].init;
    const char* r = Match(s, p);
    if (r == nullptr) capture[l].len = kUnfinished;
    return r;
  }

  const char* BackReference(const char* s, int digit) {
    const int l = digit - '1';
    if (l < 0 || l >= level || capture[l].len == kUnfinished) {
      luaL_error(L, "invalid capture index %%%d", l + 1);
    }
    const std::size_t len = static_cast<std::size_t>(capture[l].len);
    if (static_cast<std::size_t>(src_end - s) >= len && std::memcmp(capture[l].init, s, len) == 0) {
      return s + len;
    }
    return nullptr;
  }

  // The end of the match of pattern [p, pat_end) at s, or null.
  const char* Match(const char* s, const char* p) {
    if (depth-- == 0) luaL_error(L, "pattern too complex");
    Step();
    while (true) {
      if (p == pat_end) break;
      if (*p == '(') {
        s = (p + 1 < pat_end && p[1] == ')') ? OpenCapture(s, p + 2, kPosition) : OpenCapture(s, p + 1, kUnfinished);
        break;
      }
      if (*p == ')') {
        s = CloseCapture(s, p + 1);
        break;
      }
      if (*p == '$' && p + 1 == pat_end) {
        if (s != src_end) s = nullptr;
        break;
      }
      if (*p == kEsc && p + 1 < pat_end && p[1] == 'b') {
        s = Balance(s, p + 2);
        if (s == nullptr) break;
        p += 4;
        continue;
      }
      if (*p == kEsc && p + 1 < pat_end && p[1] == 'f') {
        p += 2;
        if (*p != '[') luaL_error(L, "missing '[' after '%%f' in pattern");
        const char* ep = ClassEnd(p);
        const int before = s == src_init ? '\0' : static_cast<unsigned char>(s[-1]);
        const int here = s < src_end ? static_cast<unsigned char>(*s) : '\0';
        if (!SetMatches(before, p, ep - 1) && SetMatches(here, p, ep - 1)) {
          p = ep;
          continue;
        }
        s = nullptr;
        break;
      }
      if (*p == kEsc && p + 1 < pat_end && std::isdigit(static_cast<unsigned char>(p[1]))) {
        s = BackReference(s, static_cast<unsigned char>(p[1]));
        if (s == nullptr) break;
        p += 2;
        continue;
      }
      // A single-character class, maybe with a quantifier.
      const char* ep = ClassEnd(p);
      const char q = ep < pat_end ? *ep : '\0';
      if (!SingleMatches(s, p, ep)) {
        if (q == '*' || q == '?' || q == '-') {  // zero repetitions are fine
          p = ep + 1;
          continue;
        }
        s = nullptr;
        break;
      }
      if (q == '?') {
        if (const char* r = Match(s + 1, ep + 1)) {
          s = r;
          break;
        }
        p = ep + 1;
        continue;
      }
      if (q == '+') {
        s = MaxExpand(s + 1, p, ep);
        break;
      }
      if (q == '*') {
        s = MaxExpand(s, p, ep);
        break;
      }
      if (q == '-') {
        s = MinExpand(s, p, ep);
        break;
      }
      ++s;
      p = ep;
    }
    ++depth;
    return s;
  }

  // Capture i of the match [s, e) as a pointer and length; kPosition for a position capture
  // (pushed as an integer). With no captures, capture 0 is the whole match.
  std::ptrdiff_t GetCapture(int i, const char* s, const char* e, const char** out) {
    if (i >= level) {
      if (i != 0) luaL_error(L, "invalid capture index %%%d", i + 1);
      *out = s;
      return e - s;
    }
    const std::ptrdiff_t len = capture[i].len;
    *out = capture[i].init;
    if (len == kUnfinished) luaL_error(L, "unfinished capture");
    if (len == kPosition) lua_pushinteger(L, (capture[i].init - src_init) + 1);
    return len;
  }

  void PushCapture(int i, const char* s, const char* e) {
    const char* cap = nullptr;
    const std::ptrdiff_t len = GetCapture(i, s, e, &cap);
    if (len != kPosition) lua_pushlstring(L, cap, static_cast<std::size_t>(len));
  }

  // Pushes the captures (or the whole match when there are none and s is not null).
  int PushCaptures(const char* s, const char* e) {
    const int n = (level == 0 && s != nullptr) ? 1 : level;
    luaL_checkstack(L, n, "too many captures");
    for (int i = 0; i < n; ++i) PushCapture(i, s, e);
    return n;
  }
};

// 1-based, negative from the end, clipped to [1, ...] (Lua's string.find init rule).
std::size_t StartIndex(lua_Integer pos, std::size_t len) {
  if (pos > 0) return static_cast<std::size_t>(pos);
  if (pos == 0) return 1;
  if (pos < -static_cast<lua_Integer>(len)) return 1;
  return len + static_cast<std::size_t>(pos) + 1;
}

bool HasSpecials(const char* p, std::size_t lp) {
  for (std::size_t i = 0; i < lp; ++i) {
    if (std::strchr("^$*+?.([%-", p[i]) != nullptr && p[i] != '\0') return true;
  }
  return false;
}

int FindOrMatch(lua_State* L, bool find) {
  std::size_t ls = 0, lp = 0;
  const char* s = luaL_checklstring(L, 1, &ls);
  const char* p = luaL_checklstring(L, 2, &lp);
  const std::size_t init = StartIndex(luaL_optinteger(L, 3, 1), ls) - 1;
  if (init > ls) {
    luaL_pushfail(L);
    return 1;
  }
  if (find && (lua_toboolean(L, 4) || !HasSpecials(p, lp))) {
    // Plain search: charged for its worst case (a memcmp per start).
    ChargeNative(L, static_cast<double>(ls - init) * (1.0 + static_cast<double>(lp) / 64));
    const std::size_t at = std::string_view(s + init, ls - init).find(std::string_view(p, lp));
    if (at == std::string_view::npos) {
      luaL_pushfail(L);
      return 1;
    }
    lua_pushinteger(L, static_cast<lua_Integer>(init + at + 1));
    lua_pushinteger(L, static_cast<lua_Integer>(init + at + lp));
    return 2;
  }
  Matcher m(L, s, s + ls, p + lp);
  const bool anchor = *p == '^';
  if (anchor) ++p;
  const char* s1 = s + init;
  do {
    m.Reset();
    if (const char* e = m.Match(s1, p)) {
      m.Flush();
      if (find) {
        lua_pushinteger(L, (s1 - s) + 1);
        lua_pushinteger(L, e - s);
        return m.PushCaptures(nullptr, nullptr) + 2;
      }
      return m.PushCaptures(s1, e);
    }
  } while (s1++ < m.src_end && !anchor);
  m.Flush();
  luaL_pushfail(L);
  return 1;
}

int Find(lua_State* L) { return FindOrMatch(L, true); }
int MatchFn(lua_State* L) { return FindOrMatch(L, false); }

// gmatch's state, kept in a userdata upvalue of the iterator (never visible to scripts).
struct GmatchState {
  const char* src;
  const char* pat;
  const char* last;  // end of the last match: an empty match there is skipped
  Matcher m;
};

int GmatchNext(lua_State* L) {
  auto* g = static_cast<GmatchState*>(lua_touserdata(L, lua_upvalueindex(3)));
  g->m.L = L;
  for (const char* src = g->src; src <= g->m.src_end; ++src) {
    g->m.Reset();
    const char* e = g->m.Match(src, g->pat);
    if (e != nullptr && e != g->last) {
      g->m.Flush();
      g->src = g->last = e;
      return g->m.PushCaptures(src, e);
    }
  }
  g->m.Flush();
  g->src = g->m.src_end + 1;  // done: later calls return nothing at once
  return 0;
}

int Gmatch(lua_State* L) {
  std::size_t ls = 0, lp = 0;
  const char* s = luaL_checklstring(L, 1, &ls);
  const char* p = luaL_checklstring(L, 2, &lp);
  std::size_t init = StartIndex(luaL_optinteger(L, 3, 1), ls) - 1;
  if (init > ls) init = ls + 1;  // no matches
  lua_settop(L, 2);  // the strings stay alive as upvalues 1 and 2
  // Trivially destructible: the userdata needs no __gc.
  new (lua_newuserdatauv(L, sizeof(GmatchState), 0)) GmatchState{s + init, p, nullptr, Matcher(L, s, s + ls, p + lp)};
  lua_pushcclosure(L, &GmatchNext, 3);
  return 1;
}

// Appends the replacement of match [s, e) to b; false when the original text was kept (the function
// or table gave false or nil).
bool AddReplacement(Matcher& m, luaL_Buffer* b, const char* s, const char* e, int repl_type) {
  lua_State* L = m.L;
  if (repl_type == LUA_TFUNCTION) {
    lua_pushvalue(L, 3);
    const int n = m.PushCaptures(s, e);
    lua_call(L, n, 1);
  } else if (repl_type == LUA_TTABLE) {
    m.PushCapture(0, s, e);
    lua_gettable(L, 3);
  } else {
    std::size_t l = 0;
    const char* news = lua_tolstring(L, 3, &l);
    const char* end = news + l;
    const char* p;
    while ((p = static_cast<const char*>(std::memchr(news, kEsc, static_cast<std::size_t>(end - news)))) != nullptr) {
      luaL_addlstring(b, news, static_cast<std::size_t>(p - news));
      ++p;
      if (p < end && *p == kEsc) {
        luaL_addchar(b, *p);
      } else if (p < end && *p == '0') {
        luaL_addlstring(b, s, static_cast<std::size_t>(e - s));
      } else if (p < end && std::isdigit(static_cast<unsigned char>(*p))) {
        const char* cap = nullptr;
        const std::ptrdiff_t len = m.GetCapture(*p - '1', s, e, &cap);
        if (len == kPosition) {
          luaL_addvalue(b);
        } else {
          luaL_addlstring(b, cap, static_cast<std::size_t>(len));
        }
      } else {
        luaL_error(L, "invalid use of '%c' in replacement string", kEsc);
      }
      news = p + 1;
    }
    luaL_addlstring(b, news, static_cast<std::size_t>(end - news));
    return true;
  }
  if (!lua_toboolean(L, -1)) {
    lua_pop(L, 1);
    luaL_addlstring(b, s, static_cast<std::size_t>(e - s));
    return false;
  }
  if (!lua_isstring(L, -1)) return luaL_error(L, "invalid replacement value (a %s)", luaL_typename(L, -1));
  luaL_addvalue(b);
  return true;
}

int Gsub(lua_State* L) {
  std::size_t ls = 0, lp = 0;
  const char* src = luaL_checklstring(L, 1, &ls);
  const char* p = luaL_checklstring(L, 2, &lp);
  const int repl_type = lua_type(L, 3);
  const lua_Integer max_n = luaL_optinteger(L, 4, static_cast<lua_Integer>(ls) + 1);
  luaL_argexpected(L,
                   repl_type == LUA_TNUMBER || repl_type == LUA_TSTRING || repl_type == LUA_TFUNCTION ||
                       repl_type == LUA_TTABLE,
                   3, "string/function/table");
  Matcher m(L, src, src + ls, p + lp);
  const bool anchor = *p == '^';
  if (anchor) ++p;
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  const char* last = nullptr;
  lua_Integer n = 0;
  bool changed = false;
  while (n < max_n) {
    m.Reset();
    const char* e = m.Match(src, p);
    if (e != nullptr && e != last) {
      ++n;
      changed = AddReplacement(m, &b, src, e, repl_type) || changed;
      src = last = e;
    } else if (src < m.src_end) {
      m.Step();
      luaL_addchar(&b, *src++);
    } else {
      break;
    }
    if (anchor) break;
  }
  m.Flush();
  if (!changed) {
    lua_pushvalue(L, 1);
  } else {
    luaL_addlstring(&b, src, static_cast<std::size_t>(m.src_end - src));
    luaL_pushresult(&b);
  }
  lua_pushinteger(L, n);
  return 2;
}

}  // namespace

void InstallBudgetedPatterns(lua_State* L) {
  // [string]
  static const luaL_Reg kFunctions[] = {
      {"find", Find}, {"match", MatchFn}, {"gmatch", Gmatch}, {"gsub", Gsub}, {nullptr, nullptr}};
  luaL_setfuncs(L, kFunctions, 0);
}

}  // namespace kplab::host
