// kp.plot: each function returns exactly what core's chart writer returns for the same spec (so the
// option tables are mapped field by field), and bad tables are Lua errors with exact messages.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include <lua.hpp>

#include "bindings.h"
#include "kplab/svg.h"
#include "sandbox.h"

namespace kplab::host {
namespace {

struct Ran {
  std::string value;  // the returned string
  std::string error;  // or the error message
};

// Runs `code` as plot.lua in a sandbox with every kp module.
Ran RunLua(const std::string& code) {
  LuaVm vm;
  for (const auto& m : AllModules()) vm.Install(m);
  vm.PushSandboxEnv("plot.lua");
  const auto err = vm.RunChunk(code, "plot.lua", 1);
  if (err) return {"", err->message};
  std::size_t n = 0;
  const char* s = lua_tolstring(vm.state(), -1, &n);
  Ran r{s ? std::string(s, n) : "(not a string)", ""};
  lua_pop(vm.state(), 1);
  return r;
}

std::string Svg(const Result<std::string>& r) { return r.ok() ? *r : "error: " + r.error().message; }

TEST(KpPlot, BoxplotMapsEveryField) {
  const Ran r = RunLua(R"(return kp.plot.boxplot{
      title = "SemR-p by k", xlabel = "k", ylabel = "SemR-p", width = 500, height = 300,
      groups = {{label = "k=1", values = {0.1, 0.5, 0.4, 2}}, {label = 2, values = {0.3, 0.2}, color = "#123456"}},
      range = {0, 3}, mark_median = true, digits = 2, max_outliers = 7, show_n = true})");
  ASSERT_EQ(r.error, "");
  svg::BoxplotSpec s;
  s.title = "SemR-p by k";
  s.xlabel = "k";
  s.ylabel = "SemR-p";
  s.width = 500;
  s.height = 300;
  s.groups = {{"k=1", {0.1, 0.5, 0.4, 2}, ""}, {"2", {0.3, 0.2}, "#123456"}};
  s.range = svg::Range{0, 3};
  s.mark_median = true;
  s.digits = 2;
  s.max_outliers = 7;
  s.show_n = true;
  EXPECT_EQ(r.value, Svg(svg::Boxplot(s)));
}

TEST(KpPlot, HistogramMapsEveryField) {
  const Ran r = RunLua(R"(return kp.plot.histogram{
      title = "t", groups = {{label = "a", values = {1, 2, 2, 3}}, {label = "b", values = {2.5}}},
      bins = 4, range = {0, 4}, layout = "side", density = true, mark_median = true, digits = 1})");
  ASSERT_EQ(r.error, "");
  svg::HistogramSpec s;
  s.title = "t";
  s.groups = {{"a", {1, 2, 2, 3}, ""}, {"b", {2.5}, ""}};
  s.bins = 4;
  s.range = svg::Range{0, 4};
  s.layout = svg::HistogramLayout::kSideBySide;
  s.density = true;
  s.mark_median = true;
  s.digits = 1;
  EXPECT_EQ(r.value, Svg(svg::Histogram(s)));
}

TEST(KpPlot, HeatmapMapsEveryFieldAndNaNIsNoValue) {
  const Ran r = RunLua(R"(return kp.plot.heatmap{
      title = "Spearman", xlabel = "x", ylabel = "y", rows = {"a", "b"}, cols = {"c", "d"},
      values = {{1, 0/0}, {-0.5, 0.25}}, min = 0, max = 2, digits = 1, annotate = false,
      palette = "sequential", cell = 30, legend = "ρ"})");
  ASSERT_EQ(r.error, "");
  svg::HeatmapSpec s;
  s.title = "Spearman";
  s.xlabel = "x";
  s.ylabel = "y";
  s.rows = {"a", "b"};
  s.cols = {"c", "d"};
  s.values = {{1, std::numeric_limits<double>::quiet_NaN()}, {-0.5, 0.25}};
  s.min = 0;
  s.max = 2;
  s.digits = 1;
  s.annotate = false;
  s.palette = svg::Palette::kSequential;
  s.cell = 30;
  s.legend = "ρ";
  EXPECT_EQ(r.value, Svg(svg::Heatmap(s)));
  EXPECT_NE(r.value.find("class=\"cell nan\""), std::string::npos);
}

TEST(KpPlot, BarsMapsEveryFieldAndNumberLabels) {
  const Ran r = RunLua(R"(return kp.plot.bars{
      title = "F1", ylabel = "F1@5", categories = {1, 2, "three"},
      series = {{label = "a", values = {0.1, -0.2, 0.3}}, {label = "b", values = {0.2, 0.1, 0}}},
      range = {-1, 1}, horizontal = true, annotate = true, digits = 3})");
  ASSERT_EQ(r.error, "");
  svg::BarsSpec s;
  s.title = "F1";
  s.ylabel = "F1@5";
  s.categories = {"1", "2", "three"};
  s.series = {{"a", {0.1, -0.2, 0.3}, ""}, {"b", {0.2, 0.1, 0}, ""}};
  s.range = svg::Range{-1, 1};
  s.horizontal = true;
  s.annotate = true;
  s.digits = 3;
  EXPECT_EQ(r.value, Svg(svg::Bars(s)));
}

TEST(KpPlot, LinesMapsEveryField) {
  const Ran r = RunLua(R"(return kp.plot.lines{
      title = "reliability", xlabel = "confidence", ylabel = "accuracy",
      series = {{label = "m", x = {0.1, 0.5, 0.9}, y = {0.2, 0.4, 0.95}, markers = false},
                {label = "n", x = {0.1, 0.5, 0.9}, y = {0.5, 0.3, 0.2}, bars = true, bar_width = 0.1, color = "#00ff00"},
                {x = {0.2}, y = {0.2}, line = false}},
      diagonal = true, xrange = {0, 1}, yrange = {0, 1}})");
  ASSERT_EQ(r.error, "");
  svg::LinesSpec s;
  s.title = "reliability";
  s.xlabel = "confidence";
  s.ylabel = "accuracy";
  s.series = {{"m", {0.1, 0.5, 0.9}, {0.2, 0.4, 0.95}, true, false, false, 0, ""},
              {"n", {0.1, 0.5, 0.9}, {0.5, 0.3, 0.2}, true, true, true, 0.1, "#00ff00"},
              {"", {0.2}, {0.2}, false, true, false, 0, ""}};
  s.diagonal = true;
  s.xrange = svg::Range{0, 1};
  s.yrange = svg::Range{0, 1};
  EXPECT_EQ(r.value, Svg(svg::Lines(s)));
}

std::string ErrorOf(const std::string& code) {
  const Ran r = RunLua(code);
  return r.error.empty() ? "(no error)" : r.error;
}

TEST(KpPlot, ErrorsNameTheFunctionAndTheField) {
  EXPECT_EQ(ErrorOf("return kp.plot.heatmap{rows = {'a', 'b'}, cols = {'w', 'x', 'y', 'z'},\n"
                    "  values = {{1, 2, 3, 4}, {1, 2, 3}}}"),
            "plot.lua:1: kp.plot.heatmap: values[2] has 3 entries (expected 4, one per column)");
  EXPECT_EQ(ErrorOf("return kp.plot.bars{categories = {'a'}, serie = {}}"),
            "plot.lua:1: kp.plot.bars: unknown field 'serie' (expected one of: title, xlabel, ylabel, width, "
            "height, categories, series, range, horizontal, annotate, digits)");
  EXPECT_EQ(ErrorOf("return kp.plot.boxplot{groups = {{label = 'a', values = {1, 'x'}}}}"),
            "plot.lua:1: kp.plot.boxplot: groups[1].values[2] is a string (expected a number)");
  EXPECT_EQ(ErrorOf("return kp.plot.boxplot{groups = {{label = 'k=1', values = {1, 0/0}}}}"),
            "plot.lua:1: kp.plot.boxplot: group 'k=1' (groups[1]): values[2] is NaN (expected a finite number)");
  EXPECT_EQ(ErrorOf("return kp.plot.boxplot{groups = {{label = 'a', value = {1}}}}"),
            "plot.lua:1: kp.plot.boxplot: groups[1]: unknown field 'value' (expected one of: label, values, color)");
  EXPECT_EQ(ErrorOf("return kp.plot.boxplot{groups = {{label = 'a'}}}"),
            "plot.lua:1: kp.plot.boxplot: groups[1].values must be a table of numbers (got nil)");
  EXPECT_EQ(ErrorOf("return kp.plot.boxplot{groups = {'a'}}"),
            "plot.lua:1: kp.plot.boxplot: groups[1] is a string (expected a table {label = ..., values = {...}})");
  EXPECT_EQ(ErrorOf("return kp.plot.boxplot{}"),
            "plot.lua:1: kp.plot.boxplot: groups must be a table of {label = ..., values = {...}} (got nil)");
  EXPECT_EQ(ErrorOf("return kp.plot.bars('x')"), "plot.lua:1: kp.plot.bars: expected a table of options (got string)");
  EXPECT_EQ(ErrorOf("return kp.plot.bars{'x'}"),
            "plot.lua:1: kp.plot.bars: unexpected positional entry (fields are named, e.g. title = \"...\")");
  EXPECT_EQ(ErrorOf("return kp.plot.histogram{groups = {{values = {1}}}, layout = 'stacked'}"),
            "plot.lua:1: kp.plot.histogram: layout must be \"overlay\" or \"side\" (got \"stacked\")");
  EXPECT_EQ(ErrorOf("return kp.plot.histogram{groups = {{values = {1}}}, bins = 2.5}"),
            "plot.lua:1: kp.plot.histogram: bins must be an integer (got 2.5)");
  EXPECT_EQ(ErrorOf("return kp.plot.histogram{groups = {{values = {1}}}, range = {1}}"),
            "plot.lua:1: kp.plot.histogram: range must be a table {lo, hi} of two numbers");
  EXPECT_EQ(ErrorOf("return kp.plot.histogram{groups = {{values = {1}}}, density = 1}"),
            "plot.lua:1: kp.plot.histogram: density must be a boolean (got number)");
  EXPECT_EQ(ErrorOf("return kp.plot.heatmap{rows = {'a'}, cols = {{}}, values = {{1}}}"),
            "plot.lua:1: kp.plot.heatmap: cols[1] is a table (expected a string)");
  EXPECT_EQ(ErrorOf("return kp.plot.heatmap{rows = {'a'}, cols = {'b'}, values = {{1}}, palette = 'rainbow'}"),
            "plot.lua:1: kp.plot.heatmap: palette must be \"diverging\" or \"sequential\" (got \"rainbow\")");
  EXPECT_EQ(ErrorOf("return kp.plot.lines{series = {{label = 'cal', x = {0, 1}, y = {0}}}}"),
            "plot.lua:1: kp.plot.lines: series 'cal' (series[1]) has 2 x values and 1 y values (expected as many)");
  EXPECT_EQ(ErrorOf("return kp.plot.lines{series = {{x = {0}, y = {1}, bar_width = 'w'}}}"),
            "plot.lua:1: kp.plot.lines: series[1].bar_width must be a number (got string)");
  EXPECT_EQ(ErrorOf("return kp.plot.lines{series = {{x = {0}, y = {1}, markers = 'yes'}}}"),
            "plot.lua:1: kp.plot.lines: series[1].markers must be a boolean (got string)");
  EXPECT_EQ(ErrorOf("return kp.plot.lines{title = 'x\\255', series = {{x = {0}, y = {1}}}}"),
            "plot.lua:1: kp.plot.lines: title is not valid UTF-8 (byte 2)");
}

TEST(KpPlot, IsReadOnly) {
  EXPECT_EQ(ErrorOf("kp.plot.bars = nil"), "plot.lua:1: attempt to modify read-only table 'kp.plot'");
}

}  // namespace
}  // namespace kplab::host
