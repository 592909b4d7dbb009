// The SVG chart writer: ticks, numpy-compatible statistics, escaping, determinism, geometry worked out
// by hand from the documented layout, and error messages.
//
// Layout facts the geometry tests rely on: without a title the plot area starts 14 px from the top;
// without an x label, the area below it is 8 + 18 px (straight category/tick labels); so a chart of
// height 240 has a plot area of height 200. Coordinates are written with at most two decimals.
#include "kplab/stats.h"
#include "kplab/svg.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace kplab::svg {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr double kSvgNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// The attributes of every element `tag` whose class attribute starts with `cls`.
std::vector<std::map<std::string, std::string>> Elements(const std::string& svg, const std::string& tag,
                                                         const std::string& cls) {
  std::vector<std::map<std::string, std::string>> out;
  const std::regex element("<" + tag + "\\b([^>]*)>");
  const std::regex attr("([a-zA-Z0-9-]+)=\"([^\"]*)\"");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), element); it != std::sregex_iterator(); ++it) {
    std::map<std::string, std::string> attrs;
    const std::string body = (*it)[1];
    for (auto a = std::sregex_iterator(body.begin(), body.end(), attr); a != std::sregex_iterator(); ++a) {
      attrs[(*a)[1]] = (*a)[2];
    }
    if (attrs["class"].rfind(cls, 0) == 0) out.push_back(attrs);
  }
  return out;
}

double Num(const std::map<std::string, std::string>& e, const std::string& key) {
  const auto it = e.find(key);
  EXPECT_NE(it, e.end()) << key;
  return it == e.end() ? kSvgNaN : std::stod(it->second);
}

struct Area {
  double x, y, w, h;
};
Area PlotArea(const std::string& svg) {
  const auto plots = Elements(svg, "svg", "plot");
  EXPECT_EQ(plots.size(), 1u);
  if (plots.empty()) return {};
  return {Num(plots[0], "x"), Num(plots[0], "y"), Num(plots[0], "width"), Num(plots[0], "height")};
}

std::size_t CountOf(const std::string& s, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

// ---- Ticks ----

TEST(SvgTicks, OneTwoFiveSteps) {
  Ticks t = NiceTicks(0, 1);
  EXPECT_EQ(t.step, 0.2);
  EXPECT_EQ(t.decimals, 1);
  EXPECT_THAT(t.values, ElementsAre(0, 0.2, 0.4, 0.6, 0.8, 1.0));  // exact: k * 2 / 10, rounded once

  t = NiceTicks(-1, 1);
  EXPECT_EQ(t.step, 0.5);
  EXPECT_THAT(t.values, ElementsAre(-1, -0.5, 0, 0.5, 1));

  t = NiceTicks(0.13, 0.87);  // 0.148 per tick -> 0.2
  EXPECT_THAT(t.values, ElementsAre(0.2, 0.4, 0.6, 0.8));

  t = NiceTicks(0, 100);
  EXPECT_EQ(t.step, 20);
  EXPECT_EQ(t.decimals, 0);

  t = NiceTicks(0, 0.003);  // 0.0006 -> 0.001
  EXPECT_EQ(t.step, 0.001);
  EXPECT_EQ(t.decimals, 3);
  EXPECT_EQ(t.values.size(), 4u);

  t = NiceTicks(0, 23000);  // 4600 -> 5000
  EXPECT_EQ(t.step, 5000);
  EXPECT_THAT(t.values, ElementsAre(0, 5000, 10000, 15000, 20000));
}

TEST(SvgTicks, NiceAxisRoundsTheEndsToAGrain) {
  // [0.13, 0.87]: span 0.74; step: 0.74 / 5 = 0.148, nearest 1-2-5 value 0.1 (1.48 < 1.5); grain:
  // 0.74 / 20 = 0.037, next 1-2-5 value 0.05; ends floor(0.13 / 0.05) = 2 -> 0.1, ceil(0.87 / 0.05) = 18 -> 0.9.
  Axis a = NiceAxis(0.13, 0.87);
  EXPECT_DOUBLE_EQ(a.range.lo, 0.1);
  EXPECT_DOUBLE_EQ(a.range.hi, 0.9);
  EXPECT_EQ(a.ticks.step, 0.1);
  EXPECT_THAT(a.ticks.values, ElementsAre(0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9));
  // [-0.34, 0.71]: span 1.05; step 0.21 -> 0.2 (2.1 < 3); grain 0.0525 -> 0.1: -0.4 .. 0.8.
  a = NiceAxis(-0.34, 0.71);
  EXPECT_DOUBLE_EQ(a.range.lo, -0.4);
  EXPECT_DOUBLE_EQ(a.range.hi, 0.8);
  EXPECT_THAT(a.ticks.values, ElementsAre(-0.4, -0.2, 0, 0.2, 0.4, 0.6, 0.8));
  // 3..3 is widened to 2.7..3.3 first: span 0.6, grain 0.03 -> 0.05, step 0.12 -> 0.1.
  a = NiceAxis(3, 3);
  EXPECT_DOUBLE_EQ(a.range.lo, 2.7);
  EXPECT_DOUBLE_EQ(a.range.hi, 3.3);
  EXPECT_EQ(a.ticks.values.size(), 7u);
  // 0..0 -> -0.5..0.5: grain 0.05, step 0.2.
  a = NiceAxis(0, 0);
  EXPECT_DOUBLE_EQ(a.range.lo, -0.5);
  EXPECT_DOUBLE_EQ(a.range.hi, 0.5);
  EXPECT_THAT(a.ticks.values, ElementsAre(-0.4, -0.2, 0, 0.2, 0.4));
  // 0..9137: grain 456.85 -> 500, ceil(18.27) = 19 -> 9500; step 1827.4 -> 2000.
  const Range r = NiceRange(0, 9137);
  EXPECT_EQ(r.lo, 0);
  EXPECT_EQ(r.hi, 9500);
  EXPECT_THAT(NiceAxis(0, 9137).ticks.values, ElementsAre(0, 2000, 4000, 6000, 8000));
}

TEST(SvgTicks, OneOutlierDoesNotStretchTheAxis) {
  // Scores in [0.1, 0.9] and one of -0.02: span 0.92, step 0.184 -> 0.2, grain 0.046 -> 0.05, so the
  // axis starts at floor(-0.02 / 0.05) * 0.05 = -0.05 (widening to whole steps would give -0.2).
  Axis a = NiceAxis(-0.02, 0.9);
  EXPECT_DOUBLE_EQ(a.range.lo, -0.05);
  EXPECT_DOUBLE_EQ(a.range.hi, 0.9);
  EXPECT_THAT(a.ticks.values, ElementsAre(0, 0.2, 0.4, 0.6, 0.8));
  // Scores in [0, 1] and -0.02: span 1.02, grain 0.051 -> 0.1, step 0.204 -> 0.2: -0.1 .. 1, not -0.5.
  a = NiceAxis(-0.02, 1);
  EXPECT_DOUBLE_EQ(a.range.lo, -0.1);
  EXPECT_DOUBLE_EQ(a.range.hi, 1);
  EXPECT_THAT(a.ticks.values, ElementsAre(0, 0.2, 0.4, 0.6, 0.8, 1));
  // The box plot of such scores: its value axis ends there too (the plot's y ticks are its labels).
  BoxplotSpec s;
  s.groups.push_back({"semrp", {0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.5, 0.5, -0.02}, ""});
  const std::string svg = *Boxplot(s);
  EXPECT_NE(svg.find(">0.8</text>"), std::string::npos);
  EXPECT_EQ(svg.find(">-0.2</text>"), std::string::npos);
  EXPECT_EQ(svg.find(">-0.5</text>"), std::string::npos);
  EXPECT_EQ(svg.find(">1.0</text>"), std::string::npos);
}

TEST(SvgTicks, CountsGetIntegerTicks) {
  // A tallest bin of 2: span 2, step 0.4 would be 0.5 -> with integer ticks 1; ticks 0, 1, 2.
  Axis a = NiceAxis(0, 2, 5, true);
  EXPECT_EQ(a.ticks.step, 1);
  EXPECT_EQ(a.ticks.decimals, 0);
  EXPECT_THAT(a.ticks.values, ElementsAre(0, 1, 2));
  EXPECT_THAT(NiceAxis(0, 2).ticks.values, ElementsAre(0, 0.5, 1, 1.5, 2));  // not counts: halves
  // 13: step 2.6 -> 2, grain 0.65 -> 1 (whole): 0..13, ticks 0, 2, ..., 12.
  a = NiceAxis(0, 13, 5, true);
  EXPECT_EQ(a.range.hi, 13);
  EXPECT_THAT(a.ticks.values, ElementsAre(0, 2, 4, 6, 8, 10, 12));
  // All equal (3): widened to 2.7..3.3, then to whole numbers 2..4.
  a = NiceAxis(3, 3, 5, true);
  EXPECT_EQ(a.range.lo, 2);
  EXPECT_EQ(a.range.hi, 4);
  EXPECT_THAT(a.ticks.values, ElementsAre(2, 3, 4));
  EXPECT_THAT(NiceTicks(0, 1, 5, true).values, ElementsAre(0, 1));
  EXPECT_TRUE(AllIntegers(std::vector<double>{0, 3, -7, 1e6}));
  EXPECT_FALSE(AllIntegers(std::vector<double>{0, 3, 0.5}));

  // Every tick label of a histogram's count axis is a whole number: 5 values in 4 bins, the tallest
  // holding 2 (1, 1.2 | 2 | - | 3.9, 4).
  HistogramSpec h;
  h.groups.push_back({"", {1, 1.2, 2, 3.9, 4}, ""});
  h.bins = 4;
  std::string svg = *Histogram(h);
  EXPECT_NE(svg.find(">2</text>"), std::string::npos) << svg;
  EXPECT_EQ(svg.find(">0.5</text>"), std::string::npos);
  EXPECT_EQ(svg.find(">1.5</text>"), std::string::npos);
  // The density axis is not a count: fractional ticks stay.
  h.density = true;
  svg = *Histogram(h);
  EXPECT_NE(svg.find(">0.1</text>"), std::string::npos) << svg;
  // Bars of whole numbers: counts 1, 2, 2 -> ticks 0, 1, 2 (span 2 would give a step of 0.5).
  BarsSpec b;
  b.categories = {"a", "b", "c"};
  b.series.push_back({"n", {1, 2, 2}, ""});
  svg = *Bars(b);
  for (const char* t : {">0</text>", ">1</text>", ">2</text>"}) EXPECT_NE(svg.find(t), std::string::npos) << t;
  EXPECT_EQ(svg.find(">0.5</text>"), std::string::npos);
  EXPECT_EQ(svg.find(">1.5</text>"), std::string::npos);
  b.series[0].values = {1, 2, 1.5};  // not counts: halves
  EXPECT_NE(Bars(b)->find(">0.5</text>"), std::string::npos);
}

// ---- Statistics ----

TEST(SvgStats, QuantilesAreNumpyLinear) {
  const std::vector<double> a = {1, 2, 3, 4};
  EXPECT_EQ(kplab::stats::QuantileSorted(a, 0.25), 1.75);  // numpy.quantile([1,2,3,4], .25)
  EXPECT_EQ(kplab::stats::QuantileSorted(a, 0.5), 2.5);
  EXPECT_EQ(kplab::stats::QuantileSorted(a, 0.75), 3.25);
  EXPECT_EQ(kplab::stats::QuantileSorted(a, 0), 1);
  EXPECT_EQ(kplab::stats::QuantileSorted(a, 1), 4);
  const std::vector<double> b = {0.1, 0.5, 0.7, 0.9, 1.3};
  EXPECT_DOUBLE_EQ(kplab::stats::QuantileSorted(b, 0.3), 0.54);  // index 1.2
  const std::vector<double> one = {7};
  EXPECT_EQ(kplab::stats::QuantileSorted(one, 0.25), 7);
}

TEST(SvgStats, BoxStatsWhiskersAndOutliers) {
  const BoxStats s = ComputeBoxStats({100, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  EXPECT_EQ(s.n, 10u);
  EXPECT_EQ(s.q1, 3.25);  // index 2.25
  EXPECT_EQ(s.median, 5.5);
  EXPECT_EQ(s.q3, 7.75);  // index 6.75
  EXPECT_EQ(s.whisker_lo, 1);  // fence 3.25 - 6.75 = -3.5
  EXPECT_EQ(s.whisker_hi, 9);  // fence 7.75 + 6.75 = 14.5
  EXPECT_THAT(s.outliers, ElementsAre(100));

  // matplotlib's rule: q3 = 27.25 is above every value inside the fence, so the whisker stays at q3.
  const BoxStats t = ComputeBoxStats({1, 2, 3, 100});
  EXPECT_EQ(t.q3, 27.25);
  EXPECT_EQ(t.whisker_hi, 27.25);
  EXPECT_THAT(t.outliers, ElementsAre(100));
}

TEST(SvgStats, ThinningIsDeterministicAndKeepsExtremes) {
  std::vector<double> v;
  for (int i = 0; i < 1000; ++i) v.push_back(i);
  EXPECT_THAT(ThinSorted(v, 5), ElementsAre(0, 250, 500, 749, 999));
  EXPECT_THAT(ThinSorted(std::vector<double>{1, 1, 1, 2, 2}, 5), ElementsAre(1, 2));  // distinct values
  EXPECT_TRUE(ThinSorted(v, 0).empty());
  EXPECT_THAT(ThinSorted(v, 1), ElementsAre(0));
}

TEST(SvgStats, HistogramCountsAreNumpys) {
  const std::vector<double> v = {0, 0.1, 0.5, 0.99, 1.0, 1.5, -0.1};
  EXPECT_THAT(HistogramCounts(v, 2, {0, 1}), ElementsAre(2, 3));  // last bin closed, outside not counted
  // numpy's edges come from linspace: edge 3 of 10 over [0, 1] is 3 * 0.1 = 0.30000000000000004, so
  // numpy.histogram([0.3], 10, (0, 1)) counts 0.3 in bin 2.
  const std::vector<double> w = {0.3};
  EXPECT_THAT(HistogramCounts(w, 10, {0, 1}), ElementsAre(0, 0, 1, 0, 0, 0, 0, 0, 0, 0));
}

TEST(SvgStats, PaletteEnds) {
  EXPECT_EQ(PaletteColor(Palette::kDiverging, 0), "#053061");
  EXPECT_EQ(PaletteColor(Palette::kDiverging, 0.5), "#f7f7f7");
  EXPECT_EQ(PaletteColor(Palette::kDiverging, 1), "#67001f");
  EXPECT_EQ(PaletteColor(Palette::kDiverging, 2), "#67001f");  // clamped
  EXPECT_EQ(PaletteColor(Palette::kDiverging, 0.05), "#134b87");  // halfway 053061 -> 2166ac
  EXPECT_EQ(PaletteColor(Palette::kSequential, 0), "#f7fbff");
  EXPECT_EQ(PaletteColor(Palette::kSequential, 1), "#08306b");
}

// ---- Text ----

TEST(SvgText, EscapeAndFormat) {
  EXPECT_EQ(Escape("a&b<c>\"d'e"), "a&amp;b&lt;c&gt;&quot;d&apos;e");
  EXPECT_EQ(Escape("Spearman \xCF\x81 \xE2\x80\x93 \xE6\x97\xA5"), "Spearman \xCF\x81 \xE2\x80\x93 \xE6\x97\xA5");
  EXPECT_EQ(Escape(std::string("x\x01y\tz\n", 6)), "x\xEF\xBF\xBDy z ");
  EXPECT_EQ(Escape("\xEF\xBF\xBF"), "\xEF\xBF\xBD");  // U+FFFF is not an XML character
  EXPECT_EQ(FormatFixed(-0.0001, 2), "0.00");
  EXPECT_EQ(FormatFixed(-0.5, 1), "-0.5");
  EXPECT_EQ(FormatFixed(1234.5678, 2), "1234.57");
  EXPECT_EQ(FormatFixed(0.125, 0), "0");
}

// ---- Charts ----

BarsSpec OneBar(double v, Range r) {
  BarsSpec s;
  s.width = 400;
  s.height = 240;
  s.categories = {"a"};
  s.series = {{"s", {v}, ""}};
  s.range = r;
  return s;
}

TEST(SvgBars, BarOfHalfOnAUnitAxisIsHalfThePlotHigh) {
  auto svg = Bars(OneBar(0.5, {0, 1}));
  ASSERT_TRUE(svg.ok()) << svg.error().message;
  const Area a = PlotArea(*svg);
  EXPECT_EQ(a.y, 14);
  EXPECT_EQ(a.h, 200);
  const auto bars = Elements(*svg, "rect", "bar");
  ASSERT_EQ(bars.size(), 1u);
  EXPECT_EQ(Num(bars[0], "height"), 100);
  EXPECT_EQ(Num(bars[0], "y"), 114);                              // from the baseline at the bottom
  EXPECT_NEAR(Num(bars[0], "width"), a.w * 0.8, 0.01);            // one category: 80% of the band
  EXPECT_NEAR(Num(bars[0], "x"), a.x + a.w * 0.1, 0.01);
  EXPECT_THAT(*svg, HasSubstr("fill=\"#1f77b4\""));               // first tab10 colour
  EXPECT_THAT(*svg, Not(HasSubstr("class=\"legend\"")));          // one series: no legend
}

TEST(SvgBars, NegativeValuesHangFromTheZeroBaseline) {
  auto svg = Bars(OneBar(-0.5, {-1, 1}));
  ASSERT_TRUE(svg.ok()) << svg.error().message;
  const auto bars = Elements(*svg, "rect", "bar");
  ASSERT_EQ(bars.size(), 1u);
  EXPECT_EQ(Num(bars[0], "y"), 114);  // zero is in the middle of 14..214
  EXPECT_EQ(Num(bars[0], "height"), 50);
  const auto zero = Elements(*svg, "line", "zero");
  ASSERT_EQ(zero.size(), 1u);
  EXPECT_EQ(Num(zero[0], "y1"), 114);
}

TEST(SvgBars, GroupedAndHorizontal) {
  BarsSpec s;
  s.categories = {"KP20k", "Inspec", "SemEval"};
  s.series = {{"F1@5", {0.3, 0.25, 0.1}, ""}, {"F1@M", {0.35, -0.2, 0.15}, "#AA0000"}};
  s.range = Range{-0.5, 0.5};
  s.annotate = true;
  auto svg = Bars(s);
  ASSERT_TRUE(svg.ok()) << svg.error().message;
  const Area a = PlotArea(*svg);
  const auto bars = Elements(*svg, "rect", "bar");
  ASSERT_EQ(bars.size(), 6u);
  const double band = a.w / 3;
  EXPECT_NEAR(Num(bars[0], "width"), band * 0.4, 0.01);
  EXPECT_NEAR(Num(bars[4], "x"), a.x + band * 1.1 + band * 0.4, 0.01);  // series 2, category 2
  EXPECT_NEAR(Num(bars[4], "height"), a.h * 0.2, 0.01);
  EXPECT_THAT(*svg, HasSubstr("fill=\"#aa0000\""));
  EXPECT_THAT(*svg, HasSubstr(">-0.20</text>"));
  EXPECT_THAT(*svg, HasSubstr("class=\"legend\""));

  s.horizontal = true;
  svg = Bars(s);
  ASSERT_TRUE(svg.ok()) << svg.error().message;
  const Area h = PlotArea(*svg);
  const auto hb = Elements(*svg, "rect", "bar");
  ASSERT_EQ(hb.size(), 6u);
  EXPECT_NEAR(Num(hb[0], "width"), h.w * 0.3, 0.01);             // 0.3 on -0.5..0.5
  EXPECT_NEAR(Num(hb[0], "x"), h.x + h.w / 2, 0.01);              // from zero
  EXPECT_NEAR(Num(hb[0], "height"), h.h / 3 * 0.4, 0.01);
  EXPECT_NEAR(Num(hb[4], "x"), h.x + h.w * 0.3, 0.01);            // -0.2 ends left of zero
}

TEST(SvgBoxplot, BoxFromQuartilesWithMedianAndThinnedOutliers) {
  BoxplotSpec s;
  s.height = 240;
  std::vector<double> values = {1, 2, 3, 4, 5};
  s.groups = {{"k=1", values, ""}};
  s.range = Range{0, 10};
  auto svg = Boxplot(s);
  ASSERT_TRUE(svg.ok()) << svg.error().message;
  const Area a = PlotArea(*svg);
  ASSERT_EQ(a.h, 200);
  const auto box = Elements(*svg, "rect", "box");
  ASSERT_EQ(box.size(), 1u);
  EXPECT_EQ(Num(box[0], "y"), 14 + 120);  // q3 = 4
  EXPECT_EQ(Num(box[0], "height"), 40);   // q1 = 2
  const auto median = Elements(*svg, "line", "median");
  ASSERT_EQ(median.size(), 1u);
  EXPECT_EQ(Num(median[0], "y1"), 14 + 140);
  EXPECT_THAT(*svg, HasSubstr("<title>k=1: n=5, median=3, q1=2, q3=4, whiskers 1..5, 0 outliers (0 drawn)</title>"));

  // 20,000 values, 2,000 of them distinct outliers: at most max_outliers dots, the extremes among them.
  std::vector<double> big;
  for (int i = 0; i < 18000; ++i) big.push_back((i % 100) / 100.0);
  for (int i = 0; i < 2000; ++i) big.push_back(10 + i);
  s.groups = {{"many", big, ""}, {"few", values, ""}};
  s.range.reset();
  s.max_outliers = 50;
  s.mark_median = true;
  s.show_n = true;
  svg = Boxplot(s);
  ASSERT_TRUE(svg.ok()) << svg.error().message;
  EXPECT_EQ(Elements(*svg, "circle", "outlier").size(), 50u);
  EXPECT_THAT(*svg, HasSubstr("2000 outliers (50 drawn)"));
  EXPECT_THAT(*svg, HasSubstr(">n=20000</text>"));
  EXPECT_THAT(*svg, HasSubstr(">3.000</text>"));  // the median of "few", digits = 3
}

TEST(SvgHistogram, BarsFollowCounts) {
  HistogramSpec s;
  s.height = 240;
  s.groups = {{"", {0.1, 0.2, 0.3, 0.7}, ""}};
  s.bins = 2;
  s.range = Range{0, 1};
  auto svg = Histogram(s);
  ASSERT_TRUE(svg.ok()) << svg.error().message;
  const Area a = PlotArea(*svg);
  ASSERT_EQ(a.h, 200);
  const auto bars = Elements(*svg, "rect", "bar");
  ASSERT_EQ(bars.size(), 2u);
  // counts 3 and 1 on a count axis 0..3 (step 1)
  EXPECT_EQ(Num(bars[0], "height"), 200);
  EXPECT_NEAR(Num(bars[1], "height"), 200.0 / 3, 0.01);
  EXPECT_NEAR(Num(bars[1], "x"), a.x + a.w / 2, 0.01);
  EXPECT_THAT(*svg, HasSubstr(">count</text>"));

  s.groups.push_back({"b", {0.9}, ""});
  s.groups[0].label = "a";
  s.layout = HistogramLayout::kSideBySide;
  s.mark_median = true;
  s.density = true;
  svg = Histogram(s);
  ASSERT_TRUE(svg.ok()) << svg.error().message;
  EXPECT_EQ(Elements(*svg, "line", "median").size(), 2u);
  EXPECT_THAT(*svg, HasSubstr(">a (median 0.250)</text>"));
  EXPECT_THAT(*svg, HasSubstr(">density</text>"));
}

TEST(SvgHeatmap, CellsColoursAnnotationsAndNoValue) {
  HeatmapSpec s;
  s.rows = {"SemR-p", "F1@5"};
  s.cols = {"a", "b", "c"};
  s.values = {{1, 0, -1}, {0.5, kSvgNaN, -0.25}};
  auto svg = Heatmap(s);
  ASSERT_TRUE(svg.ok()) << svg.error().message;
  const auto cells = Elements(*svg, "rect", "cell");
  ASSERT_EQ(cells.size(), 6u);
  EXPECT_EQ(cells[0].at("fill"), "#67001f");
  EXPECT_EQ(cells[1].at("fill"), "#f7f7f7");
  EXPECT_EQ(cells[2].at("fill"), "#053061");
  EXPECT_EQ(cells[4].at("class"), "cell nan");
  EXPECT_EQ(cells[4].at("fill"), "#d0d0d0");
  EXPECT_EQ(Num(cells[1], "x") - Num(cells[0], "x"), 44);  // default cell size
  EXPECT_THAT(*svg, HasSubstr(">1.00</text>"));
  EXPECT_THAT(*svg, HasSubstr(">-0.25</text>"));
  EXPECT_THAT(*svg, HasSubstr(">\xE2\x80\x93</text>"));  // "–" for no value
  EXPECT_THAT(*svg, HasSubstr("class=\"legend colorbar\""));
  EXPECT_THAT(*svg, Not(HasSubstr("rotate(-45")));  // short column labels stay straight

  s.cols = {"present.f1@5.macro", "absent.r@10.macro", "all.ndcg@5"};
  s.digits = 1;
  s.legend = "Spearman \xCF\x81";
  svg = Heatmap(s);
  ASSERT_TRUE(svg.ok()) << svg.error().message;
  EXPECT_THAT(*svg, HasSubstr("rotate(-45"));
  EXPECT_THAT(*svg, HasSubstr(">-0.2</text>"));  // -0.25 with one decimal (fmt rounds half to even)
  EXPECT_THAT(*svg, HasSubstr(">Spearman \xCF\x81</text>"));
}

TEST(SvgLines, PointsDiagonalAndBars) {
  LinesSpec s;
  s.height = 240;
  s.xrange = Range{0, 1};
  s.yrange = Range{0, 1};
  s.diagonal = true;
  s.series = {{"model", {0.25, 0.5, 0.75}, {0.2, 0.5, 0.9}, true, true, false, 0, ""},
              {"share", {0.25, 0.5, 0.75}, {0.5, 0.3, 0.2}, true, true, true, 0, ""}};
  auto svg = Lines(s);
  ASSERT_TRUE(svg.ok()) << svg.error().message;
  const Area a = PlotArea(*svg);
  ASSERT_EQ(a.h, 200);
  const auto diag = Elements(*svg, "line", "diagonal");
  ASSERT_EQ(diag.size(), 1u);
  EXPECT_EQ(Num(diag[0], "x1"), a.x);
  EXPECT_EQ(Num(diag[0], "y1"), a.y + a.h);
  EXPECT_EQ(Num(diag[0], "x2"), a.x + a.w);
  EXPECT_EQ(Num(diag[0], "y2"), a.y);
  const auto points = Elements(*svg, "circle", "point");
  ASSERT_EQ(points.size(), 3u);
  EXPECT_NEAR(Num(points[1], "cx"), a.x + a.w / 2, 0.01);
  EXPECT_EQ(Num(points[1], "cy"), 114);
  const auto bars = Elements(*svg, "rect", "bar");
  ASSERT_EQ(bars.size(), 3u);
  EXPECT_NEAR(Num(bars[0], "width"), a.w * 0.2, 0.01);  // 0.8 x the 0.25 gap
  EXPECT_EQ(Num(bars[0], "height"), 100);
  EXPECT_EQ(Elements(*svg, "polyline", "line").size(), 1u);
  EXPECT_THAT(*svg, HasSubstr(">model</text>"));
}

// ---- Every chart: well-formed, escaped, deterministic ----

std::vector<std::string> AllCharts(const std::string& label) {
  std::vector<std::string> out;
  BoxplotSpec box;
  box.title = label;
  box.xlabel = label;
  box.ylabel = label;
  box.groups = {{label, {1, 2, 3, 40}, ""}};
  HistogramSpec hist;
  hist.title = label;
  hist.groups = {{label, {1, 2, 2, 3}, ""}};
  hist.mark_median = true;
  HeatmapSpec heat;
  heat.title = label;
  heat.rows = {label};
  heat.cols = {label, "x"};
  heat.values = {{0.1, -0.9}};
  heat.legend = label;
  BarsSpec bars;
  bars.title = label;
  bars.categories = {label, "b"};
  bars.series = {{label, {1, 2}, ""}, {"t", {3, -4}, ""}};
  LinesSpec lines;
  lines.title = label;
  lines.series = {{label, {0, 1}, {1, 0}, true, true, false, 0, ""}};
  for (auto r : {Boxplot(box), Histogram(hist), Heatmap(heat), Bars(bars), Lines(lines)}) {
    EXPECT_TRUE(r.ok()) << r.error().message;
    out.push_back(r.ok() ? *r : "");
  }
  return out;
}

TEST(SvgCharts, LabelsAreEscapedAndNonAsciiKept) {
  const std::string hostile = "<script>alert(\"x\") & 'y'</script> \xCF\x81\xE6\x97\xA5";
  for (const std::string& svg : AllCharts(hostile)) {
    EXPECT_THAT(svg, Not(HasSubstr("<script")));
    EXPECT_THAT(svg, HasSubstr("&lt;script&gt;alert(&quot;x&quot;) &amp; &apos;y&apos;&lt;/script&gt; \xCF\x81\xE6\x97\xA5"));
    EXPECT_EQ(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"", 0), 0u);
    EXPECT_THAT(svg, HasSubstr("viewBox=\"0 0 "));
    EXPECT_THAT(svg, HasSubstr("font-family=\"sans-serif\""));
    EXPECT_THAT(svg, Not(HasSubstr("href")));
    EXPECT_THAT(svg, Not(HasSubstr("url(")));
    EXPECT_THAT(svg, Not(HasSubstr(" id=")));
    EXPECT_EQ(CountOf(svg, "<svg"), CountOf(svg, "</svg>"));
    EXPECT_EQ(CountOf(svg, "<g"), CountOf(svg, "</g>"));
    EXPECT_EQ(CountOf(svg, "<text"), CountOf(svg, "</text>"));
    EXPECT_THAT(svg, Not(HasSubstr("nan")));
    EXPECT_THAT(svg, Not(HasSubstr("\"-0\"")));
  }
}

TEST(SvgCharts, OutputIsDeterministic) {
  const auto a = AllCharts("k=1"), b = AllCharts("k=1");
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i], b[i]) << i;
}

TEST(SvgCharts, ExtremeFiniteValuesStillDraw) {
  LinesSpec s;
  s.series = {{"", {-1e308, 1e308}, {1e-310, 2e-310}, true, true, false, 0, ""}};
  auto svg = Lines(s);
  ASSERT_TRUE(svg.ok()) << svg.error().message;
  EXPECT_THAT(*svg, Not(HasSubstr("inf")));
  EXPECT_THAT(*svg, Not(HasSubstr("nan")));
  BoxplotSpec b;
  // A flat box on an axis widened by 10%: 0.45..0.55 (a multiple of the 0.005 grain), ticks every
  // 0.1 / 5 = 0.02 inside it.
  b.groups = {{"same", {0.5, 0.5, 0.5}, ""}};
  svg = Boxplot(b);
  ASSERT_TRUE(svg.ok()) << svg.error().message;
  EXPECT_THAT(*svg, HasSubstr(">0.46</text>"));
  EXPECT_THAT(*svg, HasSubstr(">0.54</text>"));
  EXPECT_THAT(*svg, Not(HasSubstr(">0.44</text>")));
}

// ---- Errors ----

std::string ErrorOf(const Result<std::string>& r) { return r.ok() ? "(no error)" : r.error().message; }

TEST(SvgErrors, NamesChartSeriesAndIndex) {
  BoxplotSpec box;
  box.groups = {{"k=1", {1, 2}, ""}, {"k=2", {1, 2, kSvgNaN}, ""}};
  EXPECT_EQ(ErrorOf(Boxplot(box)), "boxplot: group 'k=2' (groups[2]): values[3] is NaN (expected a finite number)");
  box.groups = {{"", {}, ""}};
  EXPECT_EQ(ErrorOf(Boxplot(box)), "boxplot: groups[1] has no values");
  box.groups = {};
  EXPECT_EQ(ErrorOf(Boxplot(box)), "boxplot: no groups (expected at least one)");
  box.groups = {{"a", {1}, "red"}};
  EXPECT_EQ(ErrorOf(Boxplot(box)), "boxplot: group 'a' (groups[1]): color 'red' is not a colour (expected \"#rrggbb\")");

  HistogramSpec hist;
  hist.groups = {{"a", {1, kInf}, ""}};
  EXPECT_EQ(ErrorOf(Histogram(hist)), "histogram: group 'a' (groups[1]): values[2] is inf (expected a finite number)");
  hist.groups = {{"a", {1}, ""}};
  hist.bins = 0;
  EXPECT_EQ(ErrorOf(Histogram(hist)), "histogram: bins must be in 1..10000 (got 0)");
  hist.bins = 10;
  hist.range = Range{1, 1};
  EXPECT_EQ(ErrorOf(Histogram(hist)), "histogram: range must be two finite numbers lo < hi (got 1, 1)");
  hist.range = Range{-1e308, 1e308};  // the span overflows
  EXPECT_EQ(ErrorOf(Histogram(hist)), "histogram: range must be two finite numbers lo < hi (got -1e+308, 1e+308)");
  hist.range.reset();
  hist.groups = {{"a", {-1e308, 1e308}, ""}};
  EXPECT_EQ(ErrorOf(Histogram(hist)),
            "histogram: the values span -1e+308 to 1e+308, too wide to bin (give range = {lo, hi})");

  HeatmapSpec heat;
  heat.rows = {"a", "b"};
  heat.cols = {"w", "x", "y", "z"};
  heat.values = {{1, 2, 3, 4}, {1, 2, 3}};
  EXPECT_EQ(ErrorOf(Heatmap(heat)), "heatmap: values[2] has 3 entries (expected 4, one per column)");
  heat.values = {{1, 2, 3, 4}};
  EXPECT_EQ(ErrorOf(Heatmap(heat)), "heatmap: values has 1 rows (expected 2, one per row label)");
  heat.values = {{1, 2, 3, 4}, {1, 2, -kInf, kSvgNaN}};
  EXPECT_EQ(ErrorOf(Heatmap(heat)),
            "heatmap: values[2][3] is -inf (expected a finite number, or NaN for no value)");
  heat.values = {{1, 2, 3, 4}, {1, 2, 3, kSvgNaN}};
  heat.min = 1;
  heat.max = 1;
  EXPECT_EQ(ErrorOf(Heatmap(heat)), "heatmap: min must be below max, both finite (got 1, 1)");
  heat.min = -1;
  heat.rows[1] = "bad \xC3(";
  EXPECT_EQ(ErrorOf(Heatmap(heat)), "heatmap: rows[2] is not valid UTF-8 (byte 5)");

  BarsSpec bars;
  bars.categories = {"a", "b"};
  bars.series = {{"F1", {1, 2}, ""}, {"P", {1}, ""}};
  EXPECT_EQ(ErrorOf(Bars(bars)), "bars: series 'P' (series[2]) has 1 values (expected 2, one per category)");
  bars.series = {{"F1", {1, kSvgNaN}, ""}};
  EXPECT_EQ(ErrorOf(Bars(bars)), "bars: series 'F1' (series[1]): values[2] is NaN (expected a finite number)");
  bars.series = {{"F1", {1, 2}, ""}};
  bars.width = 50;
  EXPECT_EQ(ErrorOf(Bars(bars)), "bars: size 50x400 out of range (expected width and height in 100..10000)");

  LinesSpec lines;
  lines.series = {{"cal", {0, 1}, {0}, true, true, false, 0, ""}};
  EXPECT_EQ(ErrorOf(Lines(lines)), "lines: series 'cal' (series[1]) has 2 x values and 1 y values (expected as many)");
  lines.series = {{"", {0, kSvgNaN}, {0, 1}, true, true, false, 0, ""}};
  EXPECT_EQ(ErrorOf(Lines(lines)), "lines: series[1]: x[2] is NaN (expected a finite number)");
  lines.series = {{"cal", {}, {}, true, true, false, 0, ""}};
  EXPECT_EQ(ErrorOf(Lines(lines)), "lines: series 'cal' (series[1]) has no points");
  lines.series = {};
  EXPECT_EQ(ErrorOf(Lines(lines)), "lines: no series (expected at least one)");
  lines.title = "\xFF";
  EXPECT_EQ(ErrorOf(Lines(lines)), "lines: title is not valid UTF-8 (byte 1)");
}

}  // namespace
}  // namespace kplab::svg
