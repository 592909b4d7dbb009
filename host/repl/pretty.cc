// The REPL's value printer (pretty.h). Everything is read through the values' own Lua interface
// (list:get(i), m:get(r, c), doc.refs), so what is shown is what a script would see.
#include "pretty.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <lua.hpp>

#include "lua_util.h"

namespace kplab::host {

bool IsIdentifier(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return std::find(std::begin(kLuaKeywords), std::end(kLuaKeywords), s) == std::end(kLuaKeywords);
}

namespace {

constexpr int kMaxDepth = 3;         // nested tables deeper than this print as {...}
constexpr int kMaxEntries = 40;      // entries shown per table
constexpr std::size_t kMaxSortedKeys = 2000;  // beyond this, keys are not sorted
constexpr int kMaxListItems = 30;    // phrases shown of a KeyphraseList
constexpr int kMaxDocItems = 15;     // phrases shown per list of a Document
constexpr int kMaxMatrixRows = 12;
constexpr int kMaxMatrixCols = 8;
constexpr int kMaxRecordRows = 40;   // rows of an array of records
constexpr std::size_t kLineWidth = 76;

std::string TypeName(lua_State* L, int idx) {
  std::string name;
  if (lua_getmetatable(L, idx)) {  // the C API sees through __metatable
    lua_pushliteral(L, "__name");
    lua_rawget(L, -2);
    if (lua_type(L, -1) == LUA_TSTRING) name = lua_tostring(L, -1);
    lua_pop(L, 2);
  }
  return name;
}

std::string ToString(lua_State* L, int idx) {
  std::size_t n = 0;
  const char* s = luaL_tolstring(L, idx, &n);
  std::string out(s, n);
  lua_pop(L, 1);
  return out;
}

std::string Quote(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (c < 0x20 || c == 0x7f) {
          out += fmt::format("\\{}", static_cast<int>(c));
        } else {
          out.push_back(static_cast<char>(c));
        }
    }
  }
  return out + "\"";
}

// Calls obj:method(args...) for the userdata at idx with `nargs` arguments already pushed; leaves
// nresults. Errors propagate (we run inside lua_pcall).
void CallMethod(lua_State* L, int idx, const char* method, int nargs, int nresults) {
  idx = lua_absindex(L, idx);
  lua_getfield(L, idx, method);  // [args..., f]
  lua_insert(L, -(nargs + 1));
  lua_pushvalue(L, idx);
  lua_insert(L, -(nargs + 1));   // [f, obj, args...]
  lua_call(L, nargs + 1, nresults);
}

bool IsScalar(int t) { return t == LUA_TNUMBER || t == LUA_TSTRING || t == LUA_TBOOLEAN; }

// The numbered lines of a KeyphraseList: "   1  [P] neural network".
std::string ListLines(lua_State* L, int idx, bool marks, int limit) {
  idx = lua_absindex(L, idx);
  const lua_Integer n = luaL_len(L, idx);
  std::string out;
  for (lua_Integer i = 1; i <= std::min<lua_Integer>(n, limit); ++i) {
    lua_pushinteger(L, i);
    CallMethod(L, idx, "get", 1, 1);  // [kp]
    lua_getfield(L, -1, "surface");
    lua_getfield(L, -2, "present");
    std::string mark;
    if (marks) mark = lua_toboolean(L, -1) ? "[P] " : "[A] ";
    out += fmt::format("{:>4}  {}{}\n", i, mark, lua_tostring(L, -2));
    lua_pop(L, 3);
  }
  if (n > limit) out += fmt::format("      ... ({} more)\n", n - limit);
  return out;
}

// Present/absent is only defined with the document's source text: list:present() fails without it.
bool ListHasText(lua_State* L, int idx) {
  idx = lua_absindex(L, idx);
  lua_getfield(L, idx, "present");
  lua_pushvalue(L, idx);
  const bool ok = lua_pcall(L, 1, 1, 0) == LUA_OK;
  lua_pop(L, 1);
  return ok;
}

std::string RenderList(lua_State* L, int idx) {
  const lua_Integer n = luaL_len(L, idx);
  const bool marks = ListHasText(L, idx);
  std::string out = fmt::format("KeyphraseList ({} phrase{}){}\n", n, n == 1 ? "" : "s",
                                marks && n > 0 ? "   [P] present in the source, [A] absent" : "");
  out += ListLines(L, idx, marks, kMaxListItems);
  out.pop_back();
  return out;
}

std::string FormatCell(double v) {
  if (std::isnan(v)) return "nan";
  return fmt::format("{:.4f}", v);
}

std::string RenderMatrix(lua_State* L, int idx) {
  CallMethod(L, idx, "size", 0, 2);
  const lua_Integer rows = lua_tointeger(L, -2), cols = lua_tointeger(L, -1);
  lua_pop(L, 2);
  const lua_Integer rshow = std::min<lua_Integer>(rows, kMaxMatrixRows);
  const lua_Integer cshow = std::min<lua_Integer>(cols, kMaxMatrixCols);
  std::vector<std::vector<std::string>> cells(static_cast<std::size_t>(rshow));
  std::size_t width = std::to_string(cshow).size();
  for (lua_Integer r = 1; r <= rshow; ++r) {
    for (lua_Integer c = 1; c <= cshow; ++c) {
      lua_pushinteger(L, r);
      lua_pushinteger(L, c);
      CallMethod(L, idx, "get", 2, 1);
      cells[static_cast<std::size_t>(r - 1)].push_back(FormatCell(lua_tonumber(L, -1)));
      width = std::max(width, cells[static_cast<std::size_t>(r - 1)].back().size());
      lua_pop(L, 1);
    }
  }
  const std::size_t label = std::to_string(rshow).size();
  std::string out = fmt::format("Matrix {}x{}", rows, cols);
  if (rshow < rows || cshow < cols) out += fmt::format(" (showing {}x{})", rshow, cshow);
  out += "\n" + std::string(label + 2, ' ');
  for (lua_Integer c = 1; c <= cshow; ++c) out += fmt::format(" {:>{}}", c, width);
  if (cshow < cols) out += " ...";
  for (lua_Integer r = 1; r <= rshow; ++r) {
    out += fmt::format("\n{:>{}}  ", r, label);
    for (const auto& cell : cells[static_cast<std::size_t>(r - 1)]) out += fmt::format(" {:>{}}", cell, width);
    if (cshow < cols) out += " ...";
  }
  if (rshow < rows) out += "\n" + std::string(label + 2, ' ') + " ...";
  return out;
}

std::string RenderDocument(lua_State* L, int idx) {
  idx = lua_absindex(L, idx);
  lua_getfield(L, idx, "id");
  const std::string id = lua_tostring(L, -1);
  lua_getfield(L, idx, "has_text");
  const bool has_text = lua_toboolean(L, -1);
  lua_getfield(L, idx, "refs");
  lua_getfield(L, idx, "preds");  // [id, has_text, refs, preds]
  const lua_Integer nrefs = luaL_len(L, -2), npreds = luaL_len(L, -1);
  std::string out = fmt::format("Document {} (source text: {}, {} references, {} predictions)\n", Quote(id),
                                has_text ? "yes" : "no", nrefs, npreds);
  if (has_text) out += "  [P] present in the source, [A] absent\n";
  out += "references:\n" + ListLines(L, -2, has_text, kMaxDocItems);
  out += "predictions:\n" + ListLines(L, -1, has_text, kMaxDocItems);
  lua_pop(L, 4);
  lua_getfield(L, idx, "source");
  if (lua_type(L, -1) == LUA_TTABLE) {
    const lua_Integer n = static_cast<lua_Integer>(lua_rawlen(L, -1));
    std::string text;
    for (lua_Integer i = 1; i <= n && text.size() < 200; ++i) {
      lua_rawgeti(L, -1, i);
      if (i > 1) text.push_back(' ');
      text += ToString(L, -1);
      lua_pop(L, 1);
    }
    out += fmt::format("source ({} tokens): {}{}\n", n, text, text.size() >= 200 ? " ..." : "");
  }
  lua_pop(L, 1);
  out.pop_back();
  return out;
}

std::string Render(lua_State* L, int idx, int depth, int indent, WalkDepth& walk);

// An array of tables holding only scalars (kp.runs.list(), anova rows): an aligned table.
bool RenderRecords(lua_State* L, int idx, std::string* out) {
  idx = lua_absindex(L, idx);
  const lua_Integer n = static_cast<lua_Integer>(lua_rawlen(L, idx));
  if (n == 0) return false;
  std::vector<std::string> keys;
  std::size_t total = 0;
  lua_pushnil(L);
  while (lua_next(L, idx) != 0) {  // every key must be 1..n, every value a record
    ++total;
    if (!lua_isinteger(L, -2) || lua_type(L, -1) != LUA_TTABLE) {
      lua_pop(L, 2);
      return false;
    }
    lua_pushnil(L);
    while (lua_next(L, -2) != 0) {
      if (lua_type(L, -2) != LUA_TSTRING || !IsScalar(lua_type(L, -1))) {
        lua_pop(L, 4);
        return false;
      }
      const std::string k = lua_tostring(L, -2);
      if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
      lua_pop(L, 1);
    }
    lua_pop(L, 1);
  }
  if (total != static_cast<std::size_t>(n) || keys.empty() || keys.size() > 12) return false;
  // Identifying columns first, then the rest alphabetically.
  static const std::vector<std::string> kFirst = {"id",      "name",   "source", "dataset", "system",
                                                  "profile", "status", "n_docs", "created_at"};
  std::sort(keys.begin(), keys.end(), [](const std::string& a, const std::string& b) {
    const auto ra = std::find(kFirst.begin(), kFirst.end(), a) - kFirst.begin();
    const auto rb = std::find(kFirst.begin(), kFirst.end(), b) - kFirst.begin();
    return ra != rb ? ra < rb : a < b;
  });
  std::vector<std::vector<std::string>> rows;
  for (lua_Integer i = 1; i <= std::min<lua_Integer>(n, kMaxRecordRows); ++i) {
    lua_rawgeti(L, idx, i);
    std::vector<std::string> row;
    for (const auto& k : keys) {
      lua_pushlstring(L, k.data(), k.size());
      lua_rawget(L, -2);
      row.push_back(lua_isnil(L, -1) ? "" : ToString(L, -1));
      lua_pop(L, 1);
    }
    lua_pop(L, 1);
    rows.push_back(std::move(row));
  }
  *out = FormatTable(keys, rows);
  if (n > kMaxRecordRows) *out += fmt::format("... ({} more rows)\n", n - kMaxRecordRows);
  out->pop_back();
  return true;
}

std::string KeyText(lua_State* L, int idx) {
  if (lua_type(L, idx) == LUA_TSTRING) {
    const std::string k = lua_tostring(L, idx);
    return IsIdentifier(k) ? k : "[" + Quote(k) + "]";
  }
  return "[" + ToString(L, idx) + "]";
}

std::string RenderTable(lua_State* L, int idx, int depth, int indent, WalkDepth& walk) {
  idx = lua_absindex(L, idx);
  if (depth >= kMaxDepth) return "{...}";
  WalkLevel level(walk, L, 8);
  if (!level.ok()) luaL_error(L, "the value %s", level.error());
  if (std::string records; depth == 0 && RenderRecords(L, idx, &records)) return records;
  std::vector<std::string> items;
  const lua_Integer n = static_cast<lua_Integer>(lua_rawlen(L, idx));
  std::size_t total = 0;
  for (lua_Integer i = 1; i <= n; ++i, ++total) {
    if (static_cast<int>(items.size()) < kMaxEntries) {
      lua_rawgeti(L, idx, i);
      items.push_back(Render(L, -1, depth + 1, indent + 2, walk));
      lua_pop(L, 1);
    }
  }
  // The other keys, sorted by their text so the output is stable; a huge table is shown in traversal
  // order instead, so printing it stays cheap.
  std::size_t n_named = 0;
  lua_pushnil(L);
  while (lua_next(L, idx) != 0) {
    if (!(lua_isinteger(L, -2) && lua_tointeger(L, -2) >= 1 && lua_tointeger(L, -2) <= n)) ++n_named;
    lua_pop(L, 1);
  }
  total += n_named;
  const bool sorted = n_named <= kMaxSortedKeys;
  std::vector<std::pair<std::string, std::string>> named;
  lua_pushnil(L);
  while (lua_next(L, idx) != 0) {
    if (!(lua_isinteger(L, -2) && lua_tointeger(L, -2) >= 1 && lua_tointeger(L, -2) <= n) &&
        (sorted || static_cast<int>(named.size()) < kMaxEntries)) {
      std::string key = KeyText(L, -2);
      named.emplace_back(std::move(key), Render(L, -1, depth + 1, indent + 2, walk));
    }
    lua_pop(L, 1);
  }
  if (sorted) std::sort(named.begin(), named.end());
  for (auto& [k, v] : named) {
    if (static_cast<int>(items.size()) >= kMaxEntries) break;
    items.push_back(k + " = " + v);
  }
  if (items.empty()) return "{}";
  if (total > items.size()) items.push_back(fmt::format("... ({} more)", total - items.size()));
  std::string one = "{ ";
  bool multiline = false;
  for (std::size_t i = 0; i < items.size(); ++i) {
    one += (i ? ", " : "") + items[i];
    multiline = multiline || items[i].find('\n') != std::string::npos;
  }
  one += " }";
  if (!multiline && one.size() + static_cast<std::size_t>(indent) <= kLineWidth) return one;
  std::string out = "{\n";
  const std::string pad(static_cast<std::size_t>(indent + 2), ' ');
  for (const auto& it : items) out += pad + it + ",\n";
  return out + std::string(static_cast<std::size_t>(indent), ' ') + "}";
}

std::string Render(lua_State* L, int idx, int depth, int indent, WalkDepth& walk) {
  switch (lua_type(L, idx)) {
    case LUA_TSTRING:
      return depth == 0 ? std::string(lua_tostring(L, idx)) : Quote(lua_tostring(L, idx));
    case LUA_TTABLE:
      return RenderTable(L, idx, depth, indent, walk);
    case LUA_TUSERDATA: {
      const std::string type = TypeName(L, idx);
      if (depth == 0) {
        if (type == "kplab.KeyphraseList") return RenderList(L, idx);
        if (type == "kplab.Matrix") return RenderMatrix(L, idx);
        if (type == "kplab.Document") return RenderDocument(L, idx);
      }
      std::string s = ToString(L, idx);
      return depth == 0 ? s : s.substr(0, s.find('\n'));
    }
    default:
      return ToString(L, idx);
  }
}

int FormatThunk(lua_State* L) {
  WalkDepth walk;
  std::string s = Render(L, 1, 0, 0, walk);
  lua_pushlstring(L, s.data(), s.size());
  return 1;
}

}  // namespace

std::string PrettyValue(LuaVm& vm, int idx, const std::string& label) {
  lua_State* L = vm.state();
  idx = lua_absindex(L, idx);
  lua_pushcfunction(L, &Safe<FormatThunk>);
  lua_pushvalue(L, idx);
  if (std::optional<ScriptError> err = vm.Call(1, 1, label)) return "<error while printing: " + err->message + ">";
  std::string out = lua_tostring(L, -1);
  lua_pop(L, 1);
  return out;
}

std::string FormatTable(const std::vector<std::string>& header,
                        const std::vector<std::vector<std::string>>& rows) {
  auto cut = [](const std::string& s) { return s.size() > 60 ? s.substr(0, 57) + "..." : s; };
  std::vector<std::size_t> width(header.size());
  for (std::size_t c = 0; c < header.size(); ++c) width[c] = header[c].size();
  for (const auto& r : rows) {
    for (std::size_t c = 0; c < r.size() && c < width.size(); ++c) width[c] = std::max(width[c], cut(r[c]).size());
  }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string s;
    for (std::size_t c = 0; c < width.size(); ++c) {
      const std::string cell = c < cells.size() ? cut(cells[c]) : "";
      s += c + 1 < width.size() ? fmt::format("{:<{}}  ", cell, width[c]) : cell;
    }
    while (!s.empty() && s.back() == ' ') s.pop_back();
    return s + "\n";
  };
  std::string out = line(header);
  std::vector<std::string> rule;
  for (std::size_t w : width) rule.emplace_back(w, '-');
  out += line(rule);
  for (const auto& r : rows) out += line(r);
  return out;
}

}  // namespace kplab::host
