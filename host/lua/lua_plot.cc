// kp.plot: SVG charts (kplab/svg.h) from Lua option tables; each function returns the SVG document as a
// string (docs/plots.md). The binding reads and type-checks the tables (unknown fields are errors, so a
// typo does not pass silently); core checks the values (NaN, lengths, ranges). Every error is a Lua
// error "kp.plot.<chart>: <what is wrong>".
#include <fmt/format.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bindings.h"
#include "kplab/svg.h"
#include "lua_util.h"

namespace kplab::host {

namespace {

// Reads fields of option tables for one kp.plot function; every failure raises "<fn>: <message>".
class Reader {
 public:
  Reader(lua_State* L, const char* fn) : L_(L), fn_(fn) {}

  [[noreturn]] void Fail(const std::string& message) {
    luaL_error(L_, "%s: %s", fn_, message.c_str());
    __builtin_unreachable();  // luaL_error raises
  }

  // The options table must be argument 1.
  int Options() {
    if (lua_type(L_, 1) != LUA_TTABLE) {
      Fail(fmt::format("expected a table of options (got {})", luaL_typename(L_, 1)));
    }
    return 1;
  }

  // Raises on any key of table t that is not one of `allowed`.
  void OnlyFields(int t, std::string_view path, const std::vector<std::string_view>& allowed) {
    t = lua_absindex(L_, t);
    lua_pushnil(L_);
    while (lua_next(L_, t) != 0) {
      lua_pop(L_, 1);  // [key]
      std::string where = path.empty() ? "" : std::string(path) + ": ";
      if (lua_type(L_, -1) != LUA_TSTRING) {
        lua_pop(L_, 1);
        Fail(where + "unexpected positional entry (fields are named, e.g. title = \"...\")");
      }
      const std::string_view key = lua_tostring(L_, -1);
      bool ok = false;
      for (auto a : allowed) ok = ok || a == key;
      if (!ok) {
        std::string list;
        for (auto a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
        Fail(fmt::format("{}unknown field '{}' (expected one of: {})", where, key, list));
      }
    }
  }

  // Pushes t[key] (raw) and returns its type.
  int Get(int t, const char* key) {
    t = lua_absindex(L_, t);
    lua_pushstring(L_, key);
    return lua_rawget(L_, t);
  }

  // A label: a string, or a number written as Lua's tostring writes it.
  bool ToLabel(int idx, std::string* out) {
    const int type = lua_type(L_, idx);
    if (type != LUA_TSTRING && type != LUA_TNUMBER) return false;
    lua_pushvalue(L_, idx);  // lua_tolstring converts a number in place: convert a copy
    std::size_t n = 0;
    const char* s = lua_tolstring(L_, -1, &n);
    out->assign(s, n);
    lua_pop(L_, 1);
    return true;
  }

  void String(int t, const char* key, std::string* out, std::string_view path = {}) {
    const int type = Get(t, key);
    if (type != LUA_TNIL && !ToLabel(-1, out)) {
      Fail(fmt::format("{}{} must be a string (got {})", Prefix(path), key, lua_typename(L_, type)));
    }
    lua_pop(L_, 1);
  }

  void Number(int t, const char* key, double* out) {
    const int type = Get(t, key);
    if (type == LUA_TNUMBER) {
      *out = lua_tonumber(L_, -1);
    } else if (type != LUA_TNIL) {
      Fail(fmt::format("{} must be a number (got {})", key, lua_typename(L_, type)));
    }
    lua_pop(L_, 1);
  }

  void Int(int t, const char* key, int* out, std::string_view path = {}) {
    const int type = Get(t, key);
    if (type != LUA_TNIL) {
      int integral = 0;
      const lua_Integer v = type == LUA_TNUMBER ? lua_tointegerx(L_, -1, &integral) : 0;
      if (!integral) {
        Fail(fmt::format("{}{} must be an integer (got {})", Prefix(path), key,
                         type == LUA_TNUMBER ? fmt::format("{}", lua_tonumber(L_, -1)) : lua_typename(L_, type)));
      }
      if (v < -1000000000 || v > 1000000000) Fail(fmt::format("{}{} is out of range (got {})", Prefix(path), key, v));
      *out = static_cast<int>(v);
    }
    lua_pop(L_, 1);
  }

  void Bool(int t, const char* key, bool* out, std::string_view path = {}) {
    const int type = Get(t, key);
    if (type == LUA_TBOOLEAN) {
      *out = lua_toboolean(L_, -1) != 0;
    } else if (type != LUA_TNIL) {
      Fail(fmt::format("{}{} must be a boolean (got {})", Prefix(path), key, lua_typename(L_, type)));
    }
    lua_pop(L_, 1);
  }

  // key = {lo, hi}
  void RangeField(int t, const char* key, std::optional<svg::Range>* out) {
    const int type = Get(t, key);
    if (type != LUA_TNIL) {
      bool ok = type == LUA_TTABLE && lua_rawlen(L_, -1) == 2;
      double v[2] = {0, 0};
      for (int i = 0; ok && i < 2; ++i) {
        ok = lua_rawgeti(L_, -1, i + 1) == LUA_TNUMBER;
        v[i] = lua_tonumber(L_, -1);
        lua_pop(L_, 1);
      }
      if (!ok) Fail(fmt::format("{} must be a table {{lo, hi}} of two numbers", key));
      *out = svg::Range{v[0], v[1]};
    }
    lua_pop(L_, 1);
  }

  // The array at stack index idx, as numbers; `path` names it in errors ("groups[2].values").
  std::vector<double> Numbers(int idx, const std::string& path) {
    idx = lua_absindex(L_, idx);
    const lua_Unsigned n = lua_rawlen(L_, idx);
    std::vector<double> out;
    out.reserve(n);
    for (lua_Unsigned i = 1; i <= n; ++i) {
      const int type = lua_rawgeti(L_, idx, static_cast<lua_Integer>(i));
      if (type != LUA_TNUMBER) {
        Fail(fmt::format("{}[{}] is {} (expected a number)", path, i, Article(type)));
      }
      out.push_back(lua_tonumber(L_, -1));
      lua_pop(L_, 1);
    }
    return out;
  }

  // t[key], required, an array of numbers.
  std::vector<double> NumberField(int t, const char* key, const std::string& path) {
    const int type = Get(t, key);
    if (type != LUA_TTABLE) Fail(fmt::format("{} must be a table of numbers (got {})", path, lua_typename(L_, type)));
    std::vector<double> out = Numbers(-1, path);
    lua_pop(L_, 1);
    return out;
  }

  // t[key], required, an array of labels.
  std::vector<std::string> LabelField(int t, const char* key) {
    const int type = Get(t, key);
    if (type != LUA_TTABLE) Fail(fmt::format("{} must be a table of strings (got {})", key, lua_typename(L_, type)));
    const lua_Unsigned n = lua_rawlen(L_, -1);
    std::vector<std::string> out(n);
    for (lua_Unsigned i = 1; i <= n; ++i) {
      const int et = lua_rawgeti(L_, -1, static_cast<lua_Integer>(i));
      if (!ToLabel(-1, &out[i - 1])) Fail(fmt::format("{}[{}] is {} (expected a string)", key, i, Article(et)));
      lua_pop(L_, 1);
    }
    lua_pop(L_, 1);
    return out;
  }

  // t[key], required: an array of {label=, values=, color=} tables.
  std::vector<svg::Group> Groups(int t, const char* key) {
    const int type = Get(t, key);
    if (type != LUA_TTABLE) {
      Fail(fmt::format("{} must be a table of {{label = ..., values = {{...}}}} (got {})", key, lua_typename(L_, type)));
    }
    const lua_Unsigned n = lua_rawlen(L_, -1);
    std::vector<svg::Group> out(n);
    for (lua_Unsigned i = 1; i <= n; ++i) {
      const std::string path = fmt::format("{}[{}]", key, i);
      if (lua_rawgeti(L_, -1, static_cast<lua_Integer>(i)) != LUA_TTABLE) {
        Fail(fmt::format("{} is {} (expected a table {{label = ..., values = {{...}}}})", path, Article(lua_type(L_, -1))));
      }
      OnlyFields(-1, path, {"label", "values", "color"});
      String(-1, "label", &out[i - 1].label, path);
      String(-1, "color", &out[i - 1].color, path);
      out[i - 1].values = NumberField(-1, "values", path + ".values");
      lua_pop(L_, 1);
    }
    lua_pop(L_, 1);
    return out;
  }

  // title, xlabel, ylabel (and width, height when the chart has them).
  template <class Spec>
  void Common(int t, Spec* s, bool sized = true) {
    String(t, "title", &s->title);
    String(t, "xlabel", &s->xlabel);
    String(t, "ylabel", &s->ylabel);
    if constexpr (requires { s->width; }) {
      if (sized) {
        Int(t, "width", &s->width);
        Int(t, "height", &s->height);
      }
    }
  }

  // Returns the SVG as a Lua string, or raises core's error prefixed with "kp.plot.".
  int Push(const Result<std::string>& r) {
    if (!r.ok()) luaL_error(L_, "kp.plot.%s", r.error().message.c_str());
    lua_pushlstring(L_, r->data(), r->size());
    return 1;
  }

  lua_State* state() const { return L_; }

 private:
  static std::string Prefix(std::string_view path) { return path.empty() ? "" : std::string(path) + "."; }
  const char* Article(int type) const {
    switch (type) {
      case LUA_TNIL: return "nil";
      case LUA_TBOOLEAN: return "a boolean";
      case LUA_TSTRING: return "a string";
      case LUA_TTABLE: return "a table";
      case LUA_TFUNCTION: return "a function";
      case LUA_TNUMBER: return "a number";
      default: return "a value of another type";
    }
  }

  lua_State* L_;
  const char* fn_;
};

const std::vector<std::string_view> kCommon = {"title", "xlabel", "ylabel", "width", "height"};

std::vector<std::string_view> With(std::vector<std::string_view> more) {
  more.insert(more.begin(), kCommon.begin(), kCommon.end());
  return more;
}

// kp.plot.boxplot{title=, xlabel=, ylabel=, width=, height=, groups={{label=, values={...}, color=}, ...},
//                 range={lo, hi}, mark_median=false, digits=3, max_outliers=200, show_n=false}
int Boxplot(lua_State* L) {
  Reader r(L, "kp.plot.boxplot");
  const int t = r.Options();
  r.OnlyFields(t, "", With({"groups", "range", "mark_median", "digits", "max_outliers", "show_n"}));
  svg::BoxplotSpec s;
  r.Common(t, &s);
  s.groups = r.Groups(t, "groups");
  r.RangeField(t, "range", &s.range);
  r.Bool(t, "mark_median", &s.mark_median);
  r.Int(t, "digits", &s.digits);
  r.Int(t, "max_outliers", &s.max_outliers);
  r.Bool(t, "show_n", &s.show_n);
  return r.Push(svg::Boxplot(s));
}

// kp.plot.histogram{..., groups=, bins=20, range={lo, hi}, layout="overlay"|"side", density=false,
//                   mark_median=false, digits=3}
int Histogram(lua_State* L) {
  Reader r(L, "kp.plot.histogram");
  const int t = r.Options();
  r.OnlyFields(t, "", With({"groups", "bins", "range", "layout", "density", "mark_median", "digits"}));
  svg::HistogramSpec s;
  r.Common(t, &s);
  s.groups = r.Groups(t, "groups");
  r.Int(t, "bins", &s.bins);
  r.RangeField(t, "range", &s.range);
  std::string layout = "overlay";
  r.String(t, "layout", &layout);
  if (layout == "overlay") {
    s.layout = svg::HistogramLayout::kOverlay;
  } else if (layout == "side") {
    s.layout = svg::HistogramLayout::kSideBySide;
  } else {
    r.Fail(fmt::format("layout must be \"overlay\" or \"side\" (got \"{}\")", layout));
  }
  r.Bool(t, "density", &s.density);
  r.Bool(t, "mark_median", &s.mark_median);
  r.Int(t, "digits", &s.digits);
  return r.Push(svg::Histogram(s));
}

// kp.plot.heatmap{title=, xlabel=, ylabel=, rows={...}, cols={...}, values={{...}, ...}, min=-1, max=1,
//                 digits=2, annotate=true, palette="diverging"|"sequential", cell=0, legend=""}
int Heatmap(lua_State* L) {
  Reader r(L, "kp.plot.heatmap");
  const int t = r.Options();
  r.OnlyFields(t, "", {"title", "xlabel", "ylabel", "rows", "cols", "values", "min", "max", "digits", "annotate",
                       "palette", "cell", "legend"});
  svg::HeatmapSpec s;
  r.Common(t, &s, false);
  s.rows = r.LabelField(t, "rows");
  s.cols = r.LabelField(t, "cols");
  const int type = r.Get(t, "values");
  if (type != LUA_TTABLE) r.Fail(fmt::format("values must be a table of rows (got {})", lua_typename(L, type)));
  const lua_Unsigned n = lua_rawlen(L, -1);
  for (lua_Unsigned i = 1; i <= n; ++i) {
    const std::string path = fmt::format("values[{}]", i);
    if (lua_rawgeti(L, -1, static_cast<lua_Integer>(i)) != LUA_TTABLE) {
      r.Fail(fmt::format("{} is not a table (expected a row of numbers)", path));
    }
    s.values.push_back(r.Numbers(-1, path));
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  r.Number(t, "min", &s.min);
  r.Number(t, "max", &s.max);
  r.Int(t, "digits", &s.digits);
  r.Bool(t, "annotate", &s.annotate);
  std::string palette = "diverging";
  r.String(t, "palette", &palette);
  if (palette == "diverging") {
    s.palette = svg::Palette::kDiverging;
  } else if (palette == "sequential") {
    s.palette = svg::Palette::kSequential;
  } else {
    r.Fail(fmt::format("palette must be \"diverging\" or \"sequential\" (got \"{}\")", palette));
  }
  r.Int(t, "cell", &s.cell);
  r.String(t, "legend", &s.legend);
  return r.Push(svg::Heatmap(s));
}

// kp.plot.bars{..., categories={...}, series={{label=, values={...}, color=}, ...}, range={lo, hi},
//              horizontal=false, annotate=false, digits=2}
int Bars(lua_State* L) {
  Reader r(L, "kp.plot.bars");
  const int t = r.Options();
  r.OnlyFields(t, "", With({"categories", "series", "range", "horizontal", "annotate", "digits"}));
  svg::BarsSpec s;
  r.Common(t, &s);
  s.categories = r.LabelField(t, "categories");
  s.series = r.Groups(t, "series");
  r.RangeField(t, "range", &s.range);
  r.Bool(t, "horizontal", &s.horizontal);
  r.Bool(t, "annotate", &s.annotate);
  r.Int(t, "digits", &s.digits);
  return r.Push(svg::Bars(s));
}

// kp.plot.lines{..., series={{label=, x={...}, y={...}, line=true, markers=true, bars=false, bar_width=0,
//               color=}, ...}, xrange={lo, hi}, yrange={lo, hi}, diagonal=false}
int Lines(lua_State* L) {
  Reader r(L, "kp.plot.lines");
  const int t = r.Options();
  r.OnlyFields(t, "", With({"series", "xrange", "yrange", "diagonal"}));
  svg::LinesSpec s;
  r.Common(t, &s);
  const int type = r.Get(t, "series");
  if (type != LUA_TTABLE) {
    r.Fail(fmt::format("series must be a table of {{label = ..., x = {{...}}, y = {{...}}}} (got {})",
                       lua_typename(L, type)));
  }
  const lua_Unsigned n = lua_rawlen(L, -1);
  for (lua_Unsigned i = 1; i <= n; ++i) {
    const std::string path = fmt::format("series[{}]", i);
    if (lua_rawgeti(L, -1, static_cast<lua_Integer>(i)) != LUA_TTABLE) {
      r.Fail(fmt::format("{} is not a table (expected {{label = ..., x = {{...}}, y = {{...}}}})", path));
    }
    r.OnlyFields(-1, path, {"label", "x", "y", "line", "markers", "bars", "bar_width", "color"});
    svg::LineSeries sr;
    r.String(-1, "label", &sr.label, path);
    r.String(-1, "color", &sr.color, path);
    sr.x = r.NumberField(-1, "x", path + ".x");
    sr.y = r.NumberField(-1, "y", path + ".y");
    r.Bool(-1, "line", &sr.line, path);
    r.Bool(-1, "markers", &sr.markers, path);
    r.Bool(-1, "bars", &sr.bars, path);
    const int bt = r.Get(-1, "bar_width");
    if (bt == LUA_TNUMBER) {
      sr.bar_width = lua_tonumber(L, -1);
    } else if (bt != LUA_TNIL) {
      r.Fail(fmt::format("{}.bar_width must be a number (got {})", path, lua_typename(L, bt)));
    }
    lua_pop(L, 1);
    s.series.push_back(std::move(sr));
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  r.RangeField(t, "xrange", &s.xrange);
  r.RangeField(t, "yrange", &s.yrange);
  r.Bool(t, "diagonal", &s.diagonal);
  return r.Push(svg::Lines(s));
}

const luaL_Reg kFunctions[] = {
    {"boxplot", Safe<Boxplot>},
    {"histogram", Safe<Histogram>},
    {"heatmap", Safe<Heatmap>},
    {"bars", Safe<Bars>},
    {"lines", Safe<Lines>},
    {nullptr, nullptr},
};

}  // namespace

void InstallPlot(lua_State* L) {  // [kp]
  lua_newtable(L);
  luaL_setfuncs(L, kFunctions, 0);
  lua_setfield(L, -2, "plot");
}

}  // namespace kplab::host
