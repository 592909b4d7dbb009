#include "kplab/svg.h"

#include "kplab/stats.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <optional>
#include <utility>

#include "kplab/text.h"
#include "kplab/utf8.h"

namespace kplab::svg {

namespace {

// matplotlib's tab10.
constexpr const char* kTab10[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                  "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
// ColorBrewer RdBu (11 classes), reversed: blue for low, red for high.
constexpr std::uint32_t kDiverging[] = {0x053061, 0x2166ac, 0x4393c3, 0x92c5de, 0xd1e5f0, 0xf7f7f7,
                                        0xfddbc7, 0xf4a582, 0xd6604d, 0xb2182b, 0x67001f};
// ColorBrewer Blues (9 classes).
constexpr std::uint32_t kSequential[] = {0xf7fbff, 0xdeebf7, 0xc6dbef, 0x9ecae1, 0x6baed6,
                                         0x4292c6, 0x2171b5, 0x08519c, 0x08306b};

constexpr double kTitleSize = 16;
constexpr double kLabelSize = 13;  // axis labels
constexpr double kTickSize = 11;   // tick labels, annotations (the root's font-size)
constexpr double kNameSize = 12;   // legend entries, category and heatmap labels
constexpr const char* kAxisColor = "#333333";
constexpr const char* kGridColor = "#e6e6e6";
constexpr const char* kTextColor = "#222222";
constexpr const char* kNoValueColor = "#d0d0d0";
constexpr const char* kEnDash = "\xE2\x80\x93";

// Coordinates and lengths: two decimals, trailing zeros dropped, never "-0". Points far outside the
// chart (data beyond a given range) are pulled in to +-1e7 px: they are clipped anyway.
std::string Num(double v) {
  std::string s = fmt::format("{:.2f}", std::clamp(v, -1e7, 1e7));
  while (s.back() == '0') s.pop_back();
  if (s.back() == '.') s.pop_back();
  if (s == "-0") s = "0";
  return s;
}

// Estimated advance width of a label: 0.6 em per code point, 1 em for wide (CJK, emoji) ones.
double TextWidth(std::string_view s, double size) {
  double em = 0;
  for (std::size_t i = 0; i < s.size();) {
    const auto b = static_cast<unsigned char>(s[i]);
    const std::size_t len = Utf8SequenceLength(b);  // labels are checked to be valid UTF-8
    bool wide = len == 4;
    if (len == 3 && i + 1 < s.size()) {
      const unsigned cp = ((b & 0x0Fu) << 12) | ((static_cast<unsigned char>(s[i + 1]) & 0x3Fu) << 6);
      wide = cp >= 0x2E80 && !(cp >= 0xFE00 && cp < 0xFE70);
    }
    em += wide ? 1.0 : 0.6;
    i += len;
  }
  return em * size;
}

double MaxWidth(const std::vector<std::string>& labels, double size) {
  double w = 0;
  for (const auto& s : labels) w = std::max(w, TextWidth(s, size));
  return w;
}

std::string Rgb(std::uint32_t c) { return fmt::format("#{:06x}", c); }

std::uint32_t Interpolate(const std::uint32_t* stops, int n, double t) {
  if (!(t > 0)) t = 0;  // also NaN
  if (t > 1) t = 1;
  const double seg = t * (n - 1);
  const int i = std::min(static_cast<int>(seg), n - 2);
  const double f = seg - i;
  std::uint32_t out = 0;
  for (int shift = 16; shift >= 0; shift -= 8) {
    const double a = (stops[i] >> shift) & 0xFF, b = (stops[i + 1] >> shift) & 0xFF;
    const auto ch = static_cast<std::uint32_t>(std::lround(a + (b - a) * f));
    out |= ch << shift;
  }
  return out;
}

std::uint32_t PaletteRgb(Palette p, double t) {
  return p == Palette::kDiverging ? Interpolate(kDiverging, 11, t) : Interpolate(kSequential, 9, t);
}

// Dark text on light cells, white on dark ones.
const char* TextOn(std::uint32_t c) {
  const double lum =
      (0.2126 * ((c >> 16) & 0xFF) + 0.7152 * ((c >> 8) & 0xFF) + 0.0722 * (c & 0xFF)) / 255.0;
  return lum < 0.5 ? "#ffffff" : kTextColor;
}

// ---- Validation ----

using Check = std::optional<Error>;

Error Fail(std::string_view chart, const std::string& what) { return Error::Usage(fmt::format("{}: {}", chart, what)); }

Check CheckLabel(std::string_view chart, const std::string& what, std::string_view s) {
  std::size_t bad = 0;
  if (!ValidUtf8(s, &bad)) return Fail(chart, fmt::format("{} is not valid UTF-8 (byte {})", what, bad + 1));
  return std::nullopt;
}

Check CheckLabels(std::string_view chart, std::string_view field, const std::vector<std::string>& labels) {
  for (std::size_t i = 0; i < labels.size(); ++i) {
    if (auto e = CheckLabel(chart, fmt::format("{}[{}]", field, i + 1), labels[i])) return e;
  }
  return std::nullopt;
}

std::string Describe(double v) { return std::isnan(v) ? "NaN" : v > 0 ? "inf" : "-inf"; }

// "group 'k=1' (groups[1])", or "groups[1]" for an unlabelled one.
std::string Who(std::string_view field, std::size_t i, const std::string& label) {
  if (label.empty()) return fmt::format("{}[{}]", field, i + 1);
  std::string noun(field);
  if (noun.size() > 1 && noun.back() == 's' && noun != "series") noun.pop_back();
  return fmt::format("{} '{}' ({}[{}])", noun, label, field, i + 1);
}

Check CheckFinite(std::string_view chart, const std::string& who, std::string_view name,
                  std::span<const double> values) {
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (!std::isfinite(values[i])) {
      return Fail(chart, fmt::format("{}: {}[{}] is {} (expected a finite number)", who, name, i + 1,
                                     Describe(values[i])));
    }
  }
  return std::nullopt;
}

Check CheckCommon(std::string_view chart, const std::string& title, const std::string& xlabel,
                  const std::string& ylabel, int width, int height) {
  if (auto e = CheckLabel(chart, "title", title)) return e;
  if (auto e = CheckLabel(chart, "xlabel", xlabel)) return e;
  if (auto e = CheckLabel(chart, "ylabel", ylabel)) return e;
  if (width < 100 || width > 10000 || height < 100 || height > 10000) {
    return Fail(chart, fmt::format("size {}x{} out of range (expected width and height in 100..10000)",
                                   width, height));
  }
  return std::nullopt;
}

Check CheckRange(std::string_view chart, std::string_view name, const std::optional<Range>& r) {
  if (!r) return std::nullopt;
  if (!std::isfinite(r->lo) || !std::isfinite(r->hi) || !(r->lo < r->hi) || !std::isfinite(r->hi - r->lo)) {
    return Fail(chart, fmt::format("{} must be two finite numbers lo < hi (got {}, {})", name, r->lo, r->hi));
  }
  return std::nullopt;
}

Check CheckDigits(std::string_view chart, int digits) {
  if (digits < 0 || digits > 10) return Fail(chart, fmt::format("digits must be in 0..10 (got {})", digits));
  return std::nullopt;
}

Check CheckColor(std::string_view chart, const std::string& who, const std::string& color) {
  if (color.empty()) return std::nullopt;
  bool ok = color.size() == 7 && color[0] == '#';
  for (std::size_t i = 1; ok && i < color.size(); ++i) ok = std::isxdigit(static_cast<unsigned char>(color[i])) != 0;
  if (!ok) {
    return Fail(chart, fmt::format("{}: color '{}' is not a colour (expected \"#rrggbb\")", who, color));
  }
  return std::nullopt;
}

Check CheckGroups(std::string_view chart, std::string_view field, const std::vector<Group>& groups) {
  if (groups.empty()) return Fail(chart, fmt::format("no {} (expected at least one)", field));
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const Group& gr = groups[g];
    if (auto e = CheckLabel(chart, fmt::format("{}[{}].label", field, g + 1), gr.label)) return e;
    const std::string who = Who(field, g, gr.label);
    if (auto e = CheckColor(chart, who, gr.color)) return e;
    if (auto e = CheckFinite(chart, who, "values", gr.values)) return e;
  }
  return std::nullopt;
}

std::string ColorOf(const std::string& color, std::size_t i) {
  if (!color.empty()) {
    std::string c = color;
    for (char& ch : c) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    return c;
  }
  return kTab10[i % 10];
}

// ---- Ticks ----

struct Step {
  int mantissa = 1;  // 1, 2 or 5
  int exponent = 0;  // step = mantissa * 10^exponent
  double value() const { return Value(1); }
  // k * step, rounded once (0.6, not 0.6000000000000001).
  double Value(double k) const {
    return exponent < 0 ? (k * mantissa) / std::pow(10.0, -exponent) : k * mantissa * std::pow(10.0, exponent);
  }
};

// The 1-2-5 step for span / target: the next one up, or with `nearest` the nearest one (Heckbert's
// "nice numbers" thresholds 1.5, 3 and 7, Graphics Gems 1990).
Step PickStep(double span, int target, bool integer = false, bool nearest = false) {
  double raw = span / std::max(1, target);
  if (!(raw >= 1e-300)) raw = 1e-300;  // degenerate spans (and NaN): keep the exponent finite
  if (!(raw <= 1e307)) raw = 1e307;
  int e = static_cast<int>(std::floor(std::log10(raw) + 1e-12));
  const double f = raw / std::pow(10.0, e);
  int m = nearest ? (f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10)
                  : (f <= 1 + 1e-9 ? 1 : f <= 2 + 1e-9 ? 2 : f <= 5 + 1e-9 ? 5 : 10);
  if (m == 10) {
    m = 1;
    ++e;
  }
  if (integer && e < 0) return {1, 0};  // counts: no step below 1
  return {m, e};
}

Ticks TicksWith(double lo, double hi, Step st) {
  Ticks t;
  t.step = st.value();
  t.decimals = std::max(0, -st.exponent);
  const double first = std::ceil(lo / t.step - 1e-9), last = std::floor(hi / t.step + 1e-9);
  for (double k = first; k <= last && t.values.size() < 1000; ++k) {
    const double v = st.Value(k);
    t.values.push_back(v == 0 ? 0.0 : v);
  }
  return t;
}

// A fixed range with ticks inside it, or the data range widened to nice ticks.
Axis AxisFor(const std::optional<Range>& fixed, double lo, double hi, bool integer) {
  if (fixed) return {*fixed, NiceTicks(fixed->lo, fixed->hi, 5, integer)};
  return NiceAxis(lo, hi, 5, integer);
}

// ---- Drawing ----

class Doc {
 public:
  Doc(double width, double height, const std::string& title) {
    w_ = std::ceil(width);
    h_ = std::ceil(height);
    fmt::format_to(std::back_inserter(out_),
                   "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"{0}\" height=\"{1}\" "
                   "viewBox=\"0 0 {0} {1}\" font-family=\"sans-serif\" font-size=\"{2}\">\n",
                   Num(w_), Num(h_), Num(kTickSize));
    if (!title.empty()) out_ += "<title>" + Escape(title) + "</title>\n";
    Rect(0, 0, w_, h_, "class=\"background\" fill=\"#ffffff\"");
    if (!title.empty()) {
      Text(w_ / 2, 26, title,
           fmt::format("class=\"title\" text-anchor=\"middle\" font-size=\"{}\" font-weight=\"bold\"", Num(kTitleSize)));
    }
  }
  double width() const { return w_; }
  double height() const { return h_; }

  void Raw(std::string_view s) { out_ += s; }
  void Rect(double x, double y, double w, double h, std::string_view attrs, std::string_view tooltip = {}) {
    fmt::format_to(std::back_inserter(out_), "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" {}", Num(x), Num(y),
                   Num(std::max(0.0, w)), Num(std::max(0.0, h)), attrs);
    if (tooltip.empty()) {
      out_ += "/>\n";
    } else {
      out_ += "><title>" + Escape(tooltip) + "</title></rect>\n";
    }
  }
  void Line(double x1, double y1, double x2, double y2, std::string_view attrs) {
    fmt::format_to(std::back_inserter(out_), "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" {}/>\n", Num(x1),
                   Num(y1), Num(x2), Num(y2), attrs);
  }
  void Circle(double cx, double cy, double r, std::string_view attrs) {
    fmt::format_to(std::back_inserter(out_), "<circle cx=\"{}\" cy=\"{}\" r=\"{}\" {}/>\n", Num(cx), Num(cy),
                   Num(r), attrs);
  }
  // `label` is escaped here.
  void Text(double x, double y, std::string_view label, std::string_view attrs) {
    fmt::format_to(std::back_inserter(out_), "<text x=\"{}\" y=\"{}\"{}{}>{}</text>\n", Num(x), Num(y),
                   attrs.empty() ? "" : " ", attrs, Escape(label));
  }
  // Text rotated by `degrees` about its anchor point.
  void RotatedText(double x, double y, double degrees, std::string_view label, std::string_view attrs) {
    fmt::format_to(std::back_inserter(out_), "<text x=\"{0}\" y=\"{1}\" transform=\"rotate({2} {0} {1})\"{3}{4}>{5}</text>\n",
                   Num(x), Num(y), Num(degrees), attrs.empty() ? "" : " ", attrs, Escape(label));
  }
  void Polyline(const std::vector<std::pair<double, double>>& pts, std::string_view attrs) {
    out_ += "<polyline points=\"";
    for (std::size_t i = 0; i < pts.size(); ++i) {
      if (i) out_ += ' ';
      out_ += Num(pts[i].first);
      out_ += ',';
      out_ += Num(pts[i].second);
    }
    fmt::format_to(std::back_inserter(out_), "\" fill=\"none\" {}/>\n", attrs);
  }
  // A nested viewport with the same coordinates: what is drawn until EndClip is clipped to the box.
  void BeginClip(double x, double y, double w, double h) {
    fmt::format_to(std::back_inserter(out_),
                   "<svg class=\"plot\" x=\"{0}\" y=\"{1}\" width=\"{2}\" height=\"{3}\" viewBox=\"{0} {1} {2} {3}\" "
                   "overflow=\"hidden\">\n",
                   Num(x), Num(y), Num(w), Num(h));
  }
  void EndClip() { out_ += "</svg>\n"; }
  void Open(std::string_view attrs) { fmt::format_to(std::back_inserter(out_), "<g {}>\n", attrs); }
  void Close() { out_ += "</g>\n"; }

  std::string Finish() {
    out_ += "</svg>\n";
    return std::move(out_);
  }

 private:
  double w_ = 0, h_ = 0;
  std::string out_;
};

struct Box {
  double left = 0, top = 0, right = 0, bottom = 0;
  double w() const { return right - left; }
  double h() const { return bottom - top; }
};

// Maps [d0, d1] to [p0, p1].
struct Scale {
  double d0 = 0, d1 = 1, p0 = 0, p1 = 1;
  double operator()(double v) const { return p0 + (v - d0) / (d1 - d0) * (p1 - p0); }
};

enum class Swatch { kRect, kLine, kLineMarker, kMarker, kDashed };

struct LegendEntry {
  std::string label;
  std::string color;
  Swatch swatch = Swatch::kRect;
};

constexpr double kLegendRow = 18;

double LegendWidth(const std::vector<LegendEntry>& entries, double chart_width) {
  if (entries.empty()) return 0;
  double w = 0;
  for (const auto& e : entries) w = std::max(w, TextWidth(e.label, kNameSize));
  return std::min(14 + 22 + w, 0.4 * chart_width);
}

void DrawLegend(Doc& doc, double x, double y, const std::vector<LegendEntry>& entries) {
  if (entries.empty()) return;
  doc.Open("class=\"legend\"");
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const LegendEntry& e = entries[i];
    const double cy = y + kLegendRow * i + kLegendRow / 2;
    switch (e.swatch) {
      case Swatch::kRect:
        doc.Rect(x, cy - 6, 12, 12, fmt::format("fill=\"{}\" fill-opacity=\"0.7\" stroke=\"{}\"", e.color, e.color));
        break;
      case Swatch::kLine:
      case Swatch::kLineMarker:
        doc.Line(x - 2, cy, x + 14, cy, fmt::format("stroke=\"{}\" stroke-width=\"2\"", e.color));
        if (e.swatch == Swatch::kLineMarker) doc.Circle(x + 6, cy, 3, fmt::format("fill=\"{}\"", e.color));
        break;
      case Swatch::kMarker:
        doc.Circle(x + 6, cy, 3.5, fmt::format("fill=\"{}\"", e.color));
        break;
      case Swatch::kDashed:
        doc.Line(x - 2, cy, x + 14, cy,
                 fmt::format("stroke=\"{}\" stroke-width=\"2\" stroke-dasharray=\"5 3\"", e.color));
        break;
    }
    doc.Text(x + 20, cy + 4, e.label, fmt::format("font-size=\"{}\"", Num(kNameSize)));
  }
  doc.Close();
}

// Margins of a chart with a plot area: room for the title, axis labels, tick labels and a legend.
struct Margins {
  bool title = false, xlabel = false, ylabel = false;
  double ytick_width = 0;    // widest label left of the plot
  double xaxis_height = 18;  // room below the plot for tick/category labels
  double legend_width = 0;
  double min_left = 0;       // e.g. for rotated category labels reaching left
};

Box Layout(double width, double height, const Margins& m) {
  Box b;
  b.top = m.title ? 40 : 14;
  b.left = std::max(10 + (m.ylabel ? 22 : 0) + m.ytick_width + 9, m.min_left);
  b.right = width - (m.legend_width > 0 ? m.legend_width + 24 : 18);
  b.bottom = height - (8 + m.xaxis_height + (m.xlabel ? 22 : 0));
  // Keep a usable plot area whatever the labels ask for.
  b.left = std::min(b.left, 0.45 * width);
  b.right = std::max(b.right, b.left + 40);
  b.bottom = std::max(b.bottom, b.top + 40);
  return b;
}

// The y label sits 10 px left of the labels along the y axis (`ytick_width` wide), wherever the plot starts.
void DrawAxisLabels(Doc& doc, const Box& b, double ytick_width, const std::string& xlabel, const std::string& ylabel) {
  const std::string attrs = fmt::format("class=\"axis-label\" text-anchor=\"middle\" font-size=\"{}\"", Num(kLabelSize));
  if (!xlabel.empty()) doc.Text((b.left + b.right) / 2, doc.height() - 10, xlabel, attrs);
  if (!ylabel.empty()) doc.RotatedText(std::max(22.0, b.left - 19 - ytick_width), (b.top + b.bottom) / 2, -90, ylabel, attrs);
}

// Horizontal grid lines, tick marks and labels of a vertical value axis.
void DrawYAxis(Doc& doc, const Box& b, const Scale& y, const Ticks& ticks) {
  doc.Open(fmt::format("class=\"y-axis\" stroke=\"{}\"", kAxisColor));
  for (double t : ticks.values) {
    const double py = y(t);
    doc.Line(b.left, py, b.right, py, fmt::format("class=\"grid\" stroke=\"{}\"", kGridColor));
    doc.Line(b.left - 5, py, b.left, py, "class=\"tick\"");
  }
  doc.Line(b.left, b.top, b.left, b.bottom, "class=\"axis\"");
  doc.Close();
  doc.Open(fmt::format("class=\"y-ticks\" text-anchor=\"end\" fill=\"{}\"", kTextColor));
  for (double t : ticks.values) doc.Text(b.left - 8, y(t) + 4, FormatFixed(t, ticks.decimals), "");
  doc.Close();
}

// Vertical grid lines, tick marks and labels of a horizontal value axis.
void DrawXAxis(Doc& doc, const Box& b, const Scale& x, const Ticks& ticks, bool grid) {
  doc.Open(fmt::format("class=\"x-axis\" stroke=\"{}\"", kAxisColor));
  for (double t : ticks.values) {
    const double px = x(t);
    if (grid) doc.Line(px, b.top, px, b.bottom, fmt::format("class=\"grid\" stroke=\"{}\"", kGridColor));
    doc.Line(px, b.bottom, px, b.bottom + 5, "class=\"tick\"");
  }
  doc.Line(b.left, b.bottom, b.right, b.bottom, "class=\"axis\"");
  doc.Close();
  doc.Open(fmt::format("class=\"x-ticks\" text-anchor=\"middle\" fill=\"{}\"", kTextColor));
  for (double t : ticks.values) doc.Text(x(t), b.bottom + 17, FormatFixed(t, ticks.decimals), "");
  doc.Close();
}

double TickWidth(const Ticks& t) {
  double w = 0;
  for (double v : t.values) w = std::max(w, TextWidth(FormatFixed(v, t.decimals), kTickSize));
  return w;
}

// Category labels below a horizontal band axis: straight when they fit their band, else rotated by
// -45 degrees (anchored at their end). `sub` (e.g. "n=123") goes on a second line when straight.
struct CategoryAxis {
  bool rotated = false;
  double height = 18;
  double min_left = 0;
};

CategoryAxis PlanCategories(const std::vector<std::string>& labels, bool has_sub, double band, double chart_height) {
  CategoryAxis a;
  const double w = MaxWidth(labels, kNameSize);
  if (w <= band - 6) {
    a.height = has_sub ? 32 : 18;
    return a;
  }
  a.rotated = true;
  a.height = std::min(w * 0.7071 + 16, 0.35 * chart_height);
  a.min_left = w * 0.7071 - band / 2 + 8;
  return a;
}

void DrawCategories(Doc& doc, const Box& b, const std::vector<std::string>& labels,
                    const std::vector<std::string>& subs, const CategoryAxis& a) {
  const double band = b.w() / static_cast<double>(labels.size());
  doc.Open(fmt::format("class=\"categories\" fill=\"{}\" font-size=\"{}\" text-anchor=\"{}\"", kTextColor,
                       Num(kNameSize), a.rotated ? "end" : "middle"));
  for (std::size_t i = 0; i < labels.size(); ++i) {
    const double cx = b.left + band * (static_cast<double>(i) + 0.5);
    const std::string sub = i < subs.size() ? subs[i] : "";
    if (a.rotated) {
      doc.RotatedText(cx + 4, b.bottom + 12, -45, sub.empty() ? labels[i] : labels[i] + " (" + sub + ")", "");
    } else {
      doc.Text(cx, b.bottom + 17, labels[i], "");
      if (!sub.empty()) doc.Text(cx, b.bottom + 31, sub, "font-size=\"10\"");
    }
  }
  doc.Close();
}

std::string Fmt4(double v) { return fmt::format("{:.4g}", v); }

}  // namespace

// ---- Building blocks ----

std::string Escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      case '\t': case '\n': case '\r': out += ' '; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += "\xEF\xBF\xBD";
        } else if (static_cast<unsigned char>(c) == 0xEF && i + 2 < s.size() &&
                   static_cast<unsigned char>(s[i + 1]) == 0xBF &&
                   (static_cast<unsigned char>(s[i + 2]) == 0xBE || static_cast<unsigned char>(s[i + 2]) == 0xBF)) {
          out += "\xEF\xBF\xBD";  // U+FFFE, U+FFFF are not XML characters
          i += 2;
        } else {
          out += c;
        }
    }
  }
  return out;
}

std::string FormatFixed(double v, int decimals) {
  std::string s = fmt::format("{:.{}f}", v, decimals);
  if (s[0] == '-' && s.find_first_not_of("-0.") == std::string::npos) s.erase(0, 1);
  return s;
}

Ticks NiceTicks(double lo, double hi, int target, bool integer) {
  if (!(hi > lo)) return TicksWith(lo, lo, {1, 0});
  return TicksWith(lo, hi, PickStep(hi - lo, target, integer));
}

Axis NiceAxis(double lo, double hi, int target, bool integer) {
  if (lo == hi) {
    const double d = lo == 0 ? 0.5 : std::abs(lo) * 0.1;
    lo -= d;
    hi += d;
  }
  // Beyond +-1e300 the span would overflow: such values are drawn as if they were +-1e300.
  lo = std::clamp(lo, -1e300, 1e300);
  hi = std::clamp(hi, -1e300, 1e300);
  const Step st = PickStep(hi - lo, target, integer, /*nearest=*/true);
  // The ends move out to the grain, not to the step: a value just past a tick costs a twentieth of the
  // span, not a whole step.
  const Step grain = PickStep(hi - lo, 4 * std::max(1, target), integer);
  const double g = grain.value();
  Axis a;
  double klo = std::floor(lo / g + 1e-9), khi = std::ceil(hi / g - 1e-9);
  if (khi <= klo) khi = klo + 1;  // spans far below the smallest step
  a.range.lo = grain.Value(klo);
  a.range.hi = grain.Value(khi);
  a.ticks = TicksWith(a.range.lo, a.range.hi, st);
  if (a.ticks.values.size() < 2) {  // few ticks asked for: the ends go to whole steps after all
    const double s = st.value();
    klo = std::floor(lo / s + 1e-9);
    khi = std::ceil(hi / s - 1e-9);
    if (khi <= klo) khi = klo + 1;
    a.range.lo = st.Value(klo);
    a.range.hi = st.Value(khi);
    a.ticks = TicksWith(a.range.lo, a.range.hi, st);
  }
  if (a.range.lo == 0) a.range.lo = 0.0;  // no -0
  return a;
}

Range NiceRange(double lo, double hi, int target, bool integer) { return NiceAxis(lo, hi, target, integer).range; }

bool AllIntegers(std::span<const double> values) {
  for (double v : values) {
    if (!(std::isfinite(v) && v == std::floor(v))) return false;
  }
  return true;
}

BoxStats ComputeBoxStats(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  BoxStats s;
  s.n = values.size();
  if (values.empty()) return s;
  s.q1 = stats::QuantileSorted(values, 0.25);
  s.median = stats::QuantileSorted(values, 0.5);
  s.q3 = stats::QuantileSorted(values, 0.75);
  const double iqr = s.q3 - s.q1;
  const double lo = s.q1 - 1.5 * iqr, hi = s.q3 + 1.5 * iqr;
  // matplotlib's rule: the whisker reaches the most extreme value inside the fence, but never into the box.
  const auto first_in = std::lower_bound(values.begin(), values.end(), lo);
  const auto last_in = std::upper_bound(values.begin(), values.end(), hi);
  s.whisker_lo = (first_in == values.end() || *first_in > s.q1) ? s.q1 : *first_in;
  s.whisker_hi = (last_in == values.begin() || *(last_in - 1) < s.q3) ? s.q3 : *(last_in - 1);
  for (double v : values) {
    if (v < s.whisker_lo || v > s.whisker_hi) s.outliers.push_back(v);
  }
  return s;
}

std::vector<double> ThinSorted(std::span<const double> sorted, int max) {
  std::vector<double> distinct;
  for (double v : sorted) {
    if (distinct.empty() || distinct.back() != v) distinct.push_back(v);
  }
  if (max <= 0) return {};
  const std::size_t k = static_cast<std::size_t>(max);
  if (distinct.size() <= k) return distinct;
  if (k == 1) return {distinct.front()};
  std::vector<double> out;
  out.reserve(k);
  const std::size_t m = distinct.size() - 1;
  for (std::size_t i = 0; i < k; ++i) out.push_back(distinct[(i * m + (k - 1) / 2) / (k - 1)]);
  return out;
}

std::vector<std::size_t> HistogramCounts(std::span<const double> values, int bins, Range range) {
  std::vector<std::size_t> counts(static_cast<std::size_t>(std::max(bins, 0)), 0);
  if (bins <= 0) return counts;
  const double lo = range.lo, hi = range.hi;
  const double step = (hi - lo) / bins;
  auto edge = [&](int i) { return i == bins ? hi : i * step + lo; };  // numpy.linspace
  for (double v : values) {
    if (!(v >= lo && v <= hi)) continue;
    int i = static_cast<int>(((v - lo) / (hi - lo)) * bins);
    if (i >= bins) i = bins - 1;
    if (v < edge(i)) --i;
    if (i + 1 < bins && v >= edge(i + 1)) ++i;
    ++counts[static_cast<std::size_t>(std::clamp(i, 0, bins - 1))];
  }
  return counts;
}

std::string PaletteColor(Palette palette, double t) { return Rgb(PaletteRgb(palette, t)); }

// ---- Box plots ----

Result<std::string> Boxplot(const BoxplotSpec& s) {
  constexpr std::string_view kChart = "boxplot";
  if (auto e = CheckCommon(kChart, s.title, s.xlabel, s.ylabel, s.width, s.height)) return *e;
  if (auto e = CheckGroups(kChart, "groups", s.groups)) return *e;
  for (std::size_t g = 0; g < s.groups.size(); ++g) {
    if (s.groups[g].values.empty()) {
      return Fail(kChart, fmt::format("{} has no values", Who("groups", g, s.groups[g].label)));
    }
  }
  if (auto e = CheckRange(kChart, "range", s.range)) return *e;
  if (auto e = CheckDigits(kChart, s.digits)) return *e;
  if (s.max_outliers < 0) return Fail(kChart, fmt::format("max_outliers must be >= 0 (got {})", s.max_outliers));

  std::vector<BoxStats> stats;
  double lo = 0, hi = 0;
  for (std::size_t g = 0; g < s.groups.size(); ++g) {
    stats.push_back(ComputeBoxStats(s.groups[g].values));
    const BoxStats& b = stats.back();
    const double mn = b.outliers.empty() ? b.whisker_lo : std::min(b.whisker_lo, b.outliers.front());
    const double mx = b.outliers.empty() ? b.whisker_hi : std::max(b.whisker_hi, b.outliers.back());
    lo = g == 0 ? mn : std::min(lo, mn);
    hi = g == 0 ? mx : std::max(hi, mx);
  }
  bool counts = true;
  for (const Group& g : s.groups) counts = counts && AllIntegers(g.values);
  const Axis ya = AxisFor(s.range, lo, hi, counts);
  const Range yr = ya.range;
  const Ticks& yt = ya.ticks;

  std::vector<std::string> labels, subs;
  for (std::size_t g = 0; g < s.groups.size(); ++g) {
    labels.push_back(s.groups[g].label);
    if (s.show_n) subs.push_back(fmt::format("n={}", stats[g].n));
  }
  Margins m{.title = !s.title.empty(), .xlabel = !s.xlabel.empty(), .ylabel = !s.ylabel.empty(),
            .ytick_width = TickWidth(yt)};
  Box b = Layout(s.width, s.height, m);
  const CategoryAxis ca = PlanCategories(labels, s.show_n, b.w() / static_cast<double>(labels.size()), s.height);
  m.xaxis_height = ca.height;
  m.min_left = ca.min_left;
  b = Layout(s.width, s.height, m);

  Doc doc(s.width, s.height, s.title);
  const Scale y{yr.lo, yr.hi, b.bottom, b.top};
  DrawYAxis(doc, b, y, yt);
  const double band = b.w() / static_cast<double>(s.groups.size());
  const double bw = std::min(band * 0.5, 80.0);
  doc.BeginClip(b.left, b.top, b.w(), b.h());
  for (std::size_t g = 0; g < s.groups.size(); ++g) {
    const BoxStats& st = stats[g];
    const std::string color = ColorOf(s.groups[g].color, g);
    const std::vector<double> dots = ThinSorted(st.outliers, s.max_outliers);
    const double cx = b.left + band * (static_cast<double>(g) + 0.5);
    doc.Open(fmt::format("class=\"group\" stroke=\"{}\"", color));
    doc.Raw(fmt::format("<title>{}</title>\n",
                        Escape(fmt::format("{}: n={}, median={}, q1={}, q3={}, whiskers {}..{}, {} outliers ({} drawn)",
                                           s.groups[g].label, st.n, Fmt4(st.median), Fmt4(st.q1), Fmt4(st.q3),
                                           Fmt4(st.whisker_lo), Fmt4(st.whisker_hi), st.outliers.size(),
                                           dots.size()))));
    doc.Line(cx, y(st.q3), cx, y(st.whisker_hi), "class=\"whisker\"");
    doc.Line(cx, y(st.q1), cx, y(st.whisker_lo), "class=\"whisker\"");
    doc.Line(cx - bw / 4, y(st.whisker_hi), cx + bw / 4, y(st.whisker_hi), "class=\"cap\"");
    doc.Line(cx - bw / 4, y(st.whisker_lo), cx + bw / 4, y(st.whisker_lo), "class=\"cap\"");
    doc.Rect(cx - bw / 2, y(st.q3), bw, y(st.q1) - y(st.q3),
             fmt::format("class=\"box\" fill=\"{}\" fill-opacity=\"0.3\"", color));
    doc.Line(cx - bw / 2, y(st.median), cx + bw / 2, y(st.median),
             fmt::format("class=\"median\" stroke=\"{}\" stroke-width=\"2\"", kTextColor));
    for (double v : dots) doc.Circle(cx, y(v), 2, "class=\"outlier\" fill=\"none\"");
    doc.Close();
  }
  doc.EndClip();
  if (s.mark_median) {
    doc.Open(fmt::format("class=\"median-values\" fill=\"{}\" font-size=\"10\"", kTextColor));
    for (std::size_t g = 0; g < s.groups.size(); ++g) {
      const double cx = b.left + band * (static_cast<double>(g) + 0.5);
      doc.Text(cx + bw / 2 + 3, y(stats[g].median) + 3.5, FormatFixed(stats[g].median, s.digits), "");
    }
    doc.Close();
  }
  doc.Line(b.left, b.bottom, b.right, b.bottom, fmt::format("class=\"axis\" stroke=\"{}\"", kAxisColor));
  DrawCategories(doc, b, labels, subs, ca);
  DrawAxisLabels(doc, b, m.ytick_width, s.xlabel, s.ylabel);
  return doc.Finish();
}

// ---- Histograms ----

Result<std::string> Histogram(const HistogramSpec& s) {
  constexpr std::string_view kChart = "histogram";
  if (auto e = CheckCommon(kChart, s.title, s.xlabel, s.ylabel, s.width, s.height)) return *e;
  if (auto e = CheckGroups(kChart, "groups", s.groups)) return *e;
  if (s.bins < 1 || s.bins > 10000) return Fail(kChart, fmt::format("bins must be in 1..10000 (got {})", s.bins));
  if (auto e = CheckRange(kChart, "range", s.range)) return *e;
  if (auto e = CheckDigits(kChart, s.digits)) return *e;
  for (std::size_t g = 0; g < s.groups.size(); ++g) {
    if (s.groups[g].values.empty()) {
      return Fail(kChart, fmt::format("{} has no values", Who("groups", g, s.groups[g].label)));
    }
  }

  Range xr;
  if (s.range) {
    xr = *s.range;
  } else {
    bool first = true;
    for (const Group& g : s.groups) {
      for (double v : g.values) {
        xr.lo = first ? v : std::min(xr.lo, v);
        xr.hi = first ? v : std::max(xr.hi, v);
        first = false;
      }
    }
    if (xr.lo == xr.hi) {  // numpy: (a - 0.5, a + 0.5)
      xr.lo -= 0.5;
      xr.hi += 0.5;
    }
    if (!std::isfinite(xr.hi - xr.lo)) {
      return Fail(kChart, fmt::format("the values span {} to {}, too wide to bin (give range = {{lo, hi}})", xr.lo, xr.hi));
    }
  }
  const std::size_t ng = s.groups.size();
  const double binw = (xr.hi - xr.lo) / s.bins;
  std::vector<std::vector<double>> heights(ng);
  std::vector<double> medians(ng, 0);
  double top = 0;
  for (std::size_t g = 0; g < ng; ++g) {
    const auto counts = HistogramCounts(s.groups[g].values, s.bins, xr);
    std::size_t total = 0;
    for (auto c : counts) total += c;
    for (auto c : counts) {
      double h = static_cast<double>(c);
      if (s.density) h = total ? h / (static_cast<double>(total) * binw) : 0;
      heights[g].push_back(h);
      top = std::max(top, h);
    }
    if (s.mark_median) {
      std::vector<double> sorted = s.groups[g].values;
      std::sort(sorted.begin(), sorted.end());
      medians[g] = stats::QuantileSorted(sorted, 0.5);
    }
  }
  const Axis ya = NiceAxis(0, top > 0 ? top : 1, 5, !s.density);  // counts: integer ticks
  const Range yr = ya.range;
  const Ticks& yt = ya.ticks;
  bool whole = true;
  for (const Group& g : s.groups) whole = whole && AllIntegers(g.values);
  const Ticks xt = NiceTicks(xr.lo, xr.hi, 5, whole);

  std::vector<LegendEntry> legend;
  bool any_label = false;
  for (const Group& g : s.groups) any_label = any_label || !g.label.empty();
  if (any_label || s.mark_median) {
    for (std::size_t g = 0; g < ng; ++g) {
      std::string label = s.groups[g].label;
      if (s.mark_median) {
        label += (label.empty() ? "median " : " (median ") + FormatFixed(medians[g], s.digits) + (label.empty() ? "" : ")");
      }
      legend.push_back({label, ColorOf(s.groups[g].color, g), Swatch::kRect});
    }
  }
  const std::string ylabel = !s.ylabel.empty() ? s.ylabel : s.density ? "density" : "count";
  Margins m{.title = !s.title.empty(), .xlabel = !s.xlabel.empty(), .ylabel = true, .ytick_width = TickWidth(yt)};
  m.legend_width = LegendWidth(legend, s.width);
  const Box b = Layout(s.width, s.height, m);

  Doc doc(s.width, s.height, s.title);
  const Scale x{xr.lo, xr.hi, b.left, b.right};
  const Scale y{yr.lo, yr.hi, b.bottom, b.top};
  DrawYAxis(doc, b, y, yt);
  doc.BeginClip(b.left, b.top, b.w(), b.h());
  const double binpx = b.w() / s.bins;
  for (std::size_t g = 0; g < ng; ++g) {
    const std::string color = ColorOf(s.groups[g].color, g);
    const auto& hs = heights[g];
    if (s.layout == HistogramLayout::kOverlay) {
      doc.Open(fmt::format("class=\"histogram\" fill=\"{}\" fill-opacity=\"0.4\"", color));
      for (int i = 0; i < s.bins; ++i) {
        if (hs[i] <= 0) continue;
        doc.Rect(b.left + binpx * i, y(hs[i]), binpx, b.bottom - y(hs[i]), "class=\"bar\"");
      }
      std::vector<std::pair<double, double>> pts{{b.left, b.bottom}};
      for (int i = 0; i < s.bins; ++i) {
        pts.emplace_back(b.left + binpx * i, y(hs[i]));
        pts.emplace_back(b.left + binpx * (i + 1), y(hs[i]));
      }
      pts.emplace_back(b.right, b.bottom);
      doc.Polyline(pts, fmt::format("class=\"outline\" stroke=\"{}\" stroke-width=\"1.5\"", color));
      doc.Close();
    } else {
      const double sub = binpx * 0.9 / static_cast<double>(ng);
      doc.Open(fmt::format("class=\"histogram\" fill=\"{}\"", color));
      for (int i = 0; i < s.bins; ++i) {
        if (hs[i] <= 0) continue;
        doc.Rect(b.left + binpx * i + binpx * 0.05 + sub * static_cast<double>(g), y(hs[i]), sub,
                 b.bottom - y(hs[i]), "class=\"bar\"");
      }
      doc.Close();
    }
  }
  if (s.mark_median) {
    for (std::size_t g = 0; g < ng; ++g) {
      doc.Line(x(medians[g]), b.top, x(medians[g]), b.bottom,
               fmt::format("class=\"median\" stroke=\"{}\" stroke-width=\"1.5\" stroke-dasharray=\"5 3\"",
                           ColorOf(s.groups[g].color, g)));
    }
  }
  doc.EndClip();
  DrawXAxis(doc, b, x, xt, false);
  DrawLegend(doc, b.right + 14, b.top, legend);
  DrawAxisLabels(doc, b, m.ytick_width, s.xlabel, ylabel);
  return doc.Finish();
}

// ---- Heatmaps ----

Result<std::string> Heatmap(const HeatmapSpec& s) {
  constexpr std::string_view kChart = "heatmap";
  if (auto e = CheckCommon(kChart, s.title, s.xlabel, s.ylabel, 100, 100)) return *e;
  if (auto e = CheckLabel(kChart, "legend", s.legend)) return *e;
  if (s.rows.empty() || s.cols.empty()) {
    return Fail(kChart, fmt::format("needs at least one row and one column (got {} rows, {} cols)", s.rows.size(),
                                    s.cols.size()));
  }
  if (auto e = CheckLabels(kChart, "rows", s.rows)) return *e;
  if (auto e = CheckLabels(kChart, "cols", s.cols)) return *e;
  if (s.values.size() != s.rows.size()) {
    return Fail(kChart, fmt::format("values has {} rows (expected {}, one per row label)", s.values.size(),
                                    s.rows.size()));
  }
  for (std::size_t r = 0; r < s.values.size(); ++r) {
    if (s.values[r].size() != s.cols.size()) {
      return Fail(kChart, fmt::format("values[{}] has {} entries (expected {}, one per column)", r + 1,
                                      s.values[r].size(), s.cols.size()));
    }
    for (std::size_t c = 0; c < s.values[r].size(); ++c) {
      if (std::isinf(s.values[r][c])) {
        return Fail(kChart, fmt::format("values[{}][{}] is {} (expected a finite number, or NaN for no value)", r + 1,
                                        c + 1, Describe(s.values[r][c])));
      }
    }
  }
  if (!std::isfinite(s.min) || !std::isfinite(s.max) || !(s.min < s.max)) {
    return Fail(kChart, fmt::format("min must be below max, both finite (got {}, {})", s.min, s.max));
  }
  if (s.digits < 0 || s.digits > 6) return Fail(kChart, fmt::format("digits must be in 0..6 (got {})", s.digits));
  if (s.cell != 0 && (s.cell < 10 || s.cell > 400)) {
    return Fail(kChart, fmt::format("cell must be 0 (automatic) or in 10..400 px (got {})", s.cell));
  }

  const std::size_t nr = s.rows.size(), nc = s.cols.size();
  auto text_of = [&](double v) { return std::isnan(v) ? std::string(kEnDash) : FormatFixed(v, s.digits); };
  double annot_w = 0;
  if (s.annotate) {
    for (const auto& row : s.values) {
      for (double v : row) annot_w = std::max(annot_w, TextWidth(text_of(v), kTickSize));
    }
  }
  const double cell = s.cell ? s.cell : std::max(44.0, std::ceil(annot_w + 10));
  const double row_w = MaxWidth(s.rows, kNameSize);
  const double col_w = MaxWidth(s.cols, kNameSize);
  const bool rotate = col_w > cell - 6;

  const double top = s.title.empty() ? 14 : 40;
  double left = 10 + (s.ylabel.empty() ? 0 : 22) + row_w + 8;
  if (rotate) left = std::max(left, col_w * 0.7071 - cell / 2 + 10);
  const double gw = cell * static_cast<double>(nc), gh = cell * static_cast<double>(nr);
  const Ticks lt = NiceTicks(s.min, s.max);
  const double legend_top = s.legend.empty() ? 0 : 20;
  const double lh = std::min(std::max(gh, 120.0), 320.0);
  const double lx = left + gw + 20;
  const double legend_w = std::max(14 + 6 + TickWidth(lt), TextWidth(s.legend, kNameSize));
  const double body_h = std::max(gh, legend_top + lh);
  const double labels_h = rotate ? (col_w + kNameSize) * 0.7071 + 12 : 20;
  const double width = lx + legend_w + 14;
  const double height = top + body_h + labels_h + (s.xlabel.empty() ? 6 : 28);

  Doc doc(std::max(width, s.title.empty() ? 0.0 : TextWidth(s.title, kTitleSize) * 1.1 + 20), height, s.title);
  const double x0 = left, y0 = top;
  doc.Open("class=\"cells\" stroke=\"#ffffff\"");
  for (std::size_t r = 0; r < nr; ++r) {
    for (std::size_t c = 0; c < nc; ++c) {
      const double v = s.values[r][c];
      const double x = x0 + cell * static_cast<double>(c), y = y0 + cell * static_cast<double>(r);
      const std::string tip = fmt::format("{} / {}: {}", s.rows[r], s.cols[c], text_of(v));
      if (std::isnan(v)) {
        doc.Rect(x, y, cell, cell, fmt::format("class=\"cell nan\" fill=\"{}\"", kNoValueColor), tip);
      } else {
        doc.Rect(x, y, cell, cell,
                 fmt::format("class=\"cell\" fill=\"{}\"", Rgb(PaletteRgb(s.palette, (v - s.min) / (s.max - s.min)))),
                 tip);
      }
    }
  }
  doc.Close();
  if (s.annotate) {
    doc.Open("class=\"values\" text-anchor=\"middle\"");
    for (std::size_t r = 0; r < nr; ++r) {
      for (std::size_t c = 0; c < nc; ++c) {
        const double v = s.values[r][c];
        const char* fill = std::isnan(v) ? kTextColor : TextOn(PaletteRgb(s.palette, (v - s.min) / (s.max - s.min)));
        doc.Text(x0 + cell * (static_cast<double>(c) + 0.5), y0 + cell * (static_cast<double>(r) + 0.5) + 4,
                 text_of(v), fmt::format("fill=\"{}\"", fill));
      }
    }
    doc.Close();
  }
  doc.Open(fmt::format("class=\"row-labels\" text-anchor=\"end\" font-size=\"{}\" fill=\"{}\"", Num(kNameSize), kTextColor));
  for (std::size_t r = 0; r < nr; ++r) doc.Text(x0 - 6, y0 + cell * (static_cast<double>(r) + 0.5) + 4, s.rows[r], "");
  doc.Close();
  doc.Open(fmt::format("class=\"col-labels\" text-anchor=\"{}\" font-size=\"{}\" fill=\"{}\"", rotate ? "end" : "middle",
                       Num(kNameSize), kTextColor));
  for (std::size_t c = 0; c < nc; ++c) {
    const double cx = x0 + cell * (static_cast<double>(c) + 0.5);
    if (rotate) {
      doc.RotatedText(cx + 4, y0 + gh + 12, -45, s.cols[c], "");
    } else {
      doc.Text(cx, y0 + gh + 16, s.cols[c], "");
    }
  }
  doc.Close();

  // Colour legend: 64 slices from max (top) to min (bottom), ticks on the right.
  doc.Open("class=\"legend colorbar\"");
  if (!s.legend.empty()) doc.Text(lx, y0 + 12, s.legend, fmt::format("font-size=\"{}\"", Num(kNameSize)));
  const double ly = y0 + legend_top;
  constexpr int kSlices = 64;
  const double sh = lh / kSlices;
  for (int i = 0; i < kSlices; ++i) {
    const double t = 1.0 - (i + 0.5) / kSlices;
    doc.Rect(lx, ly + sh * i, 14, i + 1 < kSlices ? sh + 0.5 : sh, fmt::format("fill=\"{}\"", PaletteColor(s.palette, t)));
  }
  doc.Rect(lx, ly, 14, lh, "fill=\"none\" stroke=\"#888888\"");
  const Scale ls{s.min, s.max, ly + lh, ly};
  for (double t : lt.values) {
    doc.Line(lx + 14, ls(t), lx + 18, ls(t), "stroke=\"#888888\"");
    doc.Text(lx + 20, ls(t) + 4, FormatFixed(t, lt.decimals), fmt::format("fill=\"{}\"", kTextColor));
  }
  doc.Close();

  const std::string attrs = fmt::format("class=\"axis-label\" text-anchor=\"middle\" font-size=\"{}\"", Num(kLabelSize));
  if (!s.xlabel.empty()) doc.Text(x0 + gw / 2, doc.height() - 10, s.xlabel, attrs);
  if (!s.ylabel.empty()) doc.RotatedText(std::max(22.0, x0 - 18 - row_w), y0 + gh / 2, -90, s.ylabel, attrs);
  return doc.Finish();
}

// ---- Grouped bars ----

Result<std::string> Bars(const BarsSpec& s) {
  constexpr std::string_view kChart = "bars";
  if (auto e = CheckCommon(kChart, s.title, s.xlabel, s.ylabel, s.width, s.height)) return *e;
  if (s.categories.empty()) return Fail(kChart, "no categories (expected at least one)");
  if (auto e = CheckLabels(kChart, "categories", s.categories)) return *e;
  if (auto e = CheckGroups(kChart, "series", s.series)) return *e;
  for (std::size_t j = 0; j < s.series.size(); ++j) {
    if (s.series[j].values.size() != s.categories.size()) {
      return Fail(kChart, fmt::format("{} has {} values (expected {}, one per category)",
                                      Who("series", j, s.series[j].label), s.series[j].values.size(),
                                      s.categories.size()));
    }
  }
  if (auto e = CheckRange(kChart, "range", s.range)) return *e;
  if (auto e = CheckDigits(kChart, s.digits)) return *e;

  double lo = 0, hi = 0;
  for (const Group& g : s.series) {
    for (double v : g.values) {
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
  }
  if (s.annotate) {  // room for the values written beyond the bar ends
    const double pad = 0.1 * (hi - lo);
    if (hi > 0) hi += pad;
    if (lo < 0) lo -= pad;
  }
  bool counts = true;
  for (const Group& g : s.series) counts = counts && AllIntegers(g.values);
  const Axis va = AxisFor(s.range, lo, hi, counts);
  const Range vr = va.range;
  const Ticks& vt = va.ticks;
  std::vector<LegendEntry> legend;
  if (s.series.size() > 1) {
    for (std::size_t j = 0; j < s.series.size(); ++j) {
      legend.push_back({s.series[j].label, ColorOf(s.series[j].color, j), Swatch::kRect});
    }
  }
  const std::size_t nc = s.categories.size(), ns = s.series.size();
  Margins m{.title = !s.title.empty(), .xlabel = !s.xlabel.empty(), .ylabel = !s.ylabel.empty()};
  m.legend_width = LegendWidth(legend, s.width);
  CategoryAxis ca;
  if (s.horizontal) {
    m.ytick_width = MaxWidth(s.categories, kNameSize);
  } else {
    m.ytick_width = TickWidth(vt);
    const Box b0 = Layout(s.width, s.height, m);
    ca = PlanCategories(s.categories, false, b0.w() / static_cast<double>(nc), s.height);
    m.xaxis_height = ca.height;
    m.min_left = ca.min_left;
  }
  const Box b = Layout(s.width, s.height, m);

  Doc doc(s.width, s.height, s.title);
  // v: the value scale; the band axis runs along the other direction.
  const Scale v = s.horizontal ? Scale{vr.lo, vr.hi, b.left, b.right} : Scale{vr.lo, vr.hi, b.bottom, b.top};
  if (s.horizontal) {
    DrawXAxis(doc, b, v, vt, true);
  } else {
    DrawYAxis(doc, b, v, vt);
  }
  const double band = (s.horizontal ? b.h() : b.w()) / static_cast<double>(nc);
  const double bar = band * 0.8 / static_cast<double>(ns);
  const double base = v(std::clamp(0.0, vr.lo, vr.hi));
  doc.BeginClip(b.left, b.top, b.w(), b.h());
  for (std::size_t j = 0; j < ns; ++j) {
    doc.Open(fmt::format("class=\"series\" fill=\"{}\"", ColorOf(s.series[j].color, j)));
    for (std::size_t i = 0; i < nc; ++i) {
      const double val = s.series[j].values[i];
      const double start = band * (static_cast<double>(i) + 0.1) + bar * static_cast<double>(j);
      const double end = v(val);
      const std::string tip = fmt::format("{}{}{}: {}", s.series[j].label, s.series[j].label.empty() ? "" : " / ",
                                          s.categories[i], Fmt4(val));
      if (s.horizontal) {
        doc.Rect(std::min(base, end), b.top + start, std::abs(end - base), bar, "class=\"bar\"", tip);
      } else {
        doc.Rect(b.left + start, std::min(base, end), bar, std::abs(end - base), "class=\"bar\"", tip);
      }
    }
    doc.Close();
  }
  doc.EndClip();
  if (s.annotate) {
    doc.Open(fmt::format("class=\"values\" fill=\"{}\" font-size=\"10\"", kTextColor));
    for (std::size_t j = 0; j < ns; ++j) {
      for (std::size_t i = 0; i < nc; ++i) {
        const double val = s.series[j].values[i];
        const double mid = band * (static_cast<double>(i) + 0.1) + bar * (static_cast<double>(j) + 0.5);
        const std::string text = FormatFixed(val, s.digits);
        if (s.horizontal) {
          doc.Text(v(val) + (val < 0 ? -3 : 3), b.top + mid + 3.5, text,
                   val < 0 ? "text-anchor=\"end\"" : "text-anchor=\"start\"");
        } else {
          doc.Text(b.left + mid, v(val) + (val < 0 ? 11 : -3), text, "text-anchor=\"middle\"");
        }
      }
    }
    doc.Close();
  }
  if (vr.lo <= 0 && 0 <= vr.hi) {
    if (s.horizontal) {
      doc.Line(base, b.top, base, b.bottom, fmt::format("class=\"zero\" stroke=\"{}\"", kAxisColor));
    } else {
      doc.Line(b.left, base, b.right, base, fmt::format("class=\"zero\" stroke=\"{}\"", kAxisColor));
    }
  }
  if (s.horizontal) {
    doc.Line(b.left, b.top, b.left, b.bottom, fmt::format("class=\"axis\" stroke=\"{}\"", kAxisColor));
    doc.Open(fmt::format("class=\"categories\" text-anchor=\"end\" font-size=\"{}\" fill=\"{}\"", Num(kNameSize), kTextColor));
    for (std::size_t i = 0; i < nc; ++i) {
      doc.Text(b.left - 8, b.top + band * (static_cast<double>(i) + 0.5) + 4, s.categories[i], "");
    }
    doc.Close();
  } else {
    doc.Line(b.left, b.bottom, b.right, b.bottom, fmt::format("class=\"axis\" stroke=\"{}\"", kAxisColor));
    DrawCategories(doc, b, s.categories, {}, ca);
  }
  DrawLegend(doc, b.right + 14, b.top, legend);
  DrawAxisLabels(doc, b, m.ytick_width, s.xlabel, s.ylabel);
  return doc.Finish();
}

// ---- Lines and scatter ----

Result<std::string> Lines(const LinesSpec& s) {
  constexpr std::string_view kChart = "lines";
  if (auto e = CheckCommon(kChart, s.title, s.xlabel, s.ylabel, s.width, s.height)) return *e;
  if (s.series.empty()) return Fail(kChart, "no series (expected at least one)");
  if (auto e = CheckRange(kChart, "xrange", s.xrange)) return *e;
  if (auto e = CheckRange(kChart, "yrange", s.yrange)) return *e;
  std::vector<double> widths(s.series.size(), 0);
  double xlo = 0, xhi = 0, ylo = 0, yhi = 0;
  bool first = true;
  auto extend = [&](double x0, double x1, double y0, double y1) {
    xlo = first ? x0 : std::min(xlo, x0);
    xhi = first ? x1 : std::max(xhi, x1);
    ylo = first ? y0 : std::min(ylo, y0);
    yhi = first ? y1 : std::max(yhi, y1);
    first = false;
  };
  for (std::size_t j = 0; j < s.series.size(); ++j) {
    const LineSeries& sr = s.series[j];
    if (auto e = CheckLabel(kChart, fmt::format("series[{}].label", j + 1), sr.label)) return *e;
    const std::string who = Who("series", j, sr.label);
    if (auto e = CheckColor(kChart, who, sr.color)) return *e;
    if (sr.x.size() != sr.y.size()) {
      return Fail(kChart, fmt::format("{} has {} x values and {} y values (expected as many)", who, sr.x.size(),
                                      sr.y.size()));
    }
    if (sr.x.empty()) return Fail(kChart, fmt::format("{} has no points", who));
    if (auto e = CheckFinite(kChart, who, "x", sr.x)) return *e;
    if (auto e = CheckFinite(kChart, who, "y", sr.y)) return *e;
    if (!std::isfinite(sr.bar_width) || sr.bar_width < 0) {
      return Fail(kChart, fmt::format("{}: bar_width must be a finite number >= 0 (got {})", who, sr.bar_width));
    }
    if (sr.bars) {
      double w = sr.bar_width;
      if (w == 0) {
        std::vector<double> xs = sr.x;
        std::sort(xs.begin(), xs.end());
        double gap = 0;
        for (std::size_t i = 1; i < xs.size(); ++i) {
          if (xs[i] > xs[i - 1] && (gap == 0 || xs[i] - xs[i - 1] < gap)) gap = xs[i] - xs[i - 1];
        }
        w = gap > 0 ? 0.8 * gap : 0.8;
      }
      widths[j] = w;
    }
    for (std::size_t i = 0; i < sr.x.size(); ++i) {
      if (sr.bars) {
        extend(sr.x[i] - widths[j] / 2, sr.x[i] + widths[j] / 2, std::min(0.0, sr.y[i]), std::max(0.0, sr.y[i]));
      } else {
        extend(sr.x[i], sr.x[i], sr.y[i], sr.y[i]);
      }
    }
  }
  bool xwhole = true, ywhole = true;
  for (const LineSeries& l : s.series) {
    xwhole = xwhole && AllIntegers(l.x);
    ywhole = ywhole && AllIntegers(l.y);
  }
  const Axis xa = AxisFor(s.xrange, xlo, xhi, xwhole), ya = AxisFor(s.yrange, ylo, yhi, ywhole);
  const Range xr = xa.range, yr = ya.range;
  const Ticks &xt = xa.ticks, &yt = ya.ticks;

  std::vector<LegendEntry> legend;
  for (std::size_t j = 0; j < s.series.size(); ++j) {
    const LineSeries& sr = s.series[j];
    if (sr.label.empty()) continue;
    const Swatch sw = sr.bars ? Swatch::kRect : !sr.line ? Swatch::kMarker : sr.markers ? Swatch::kLineMarker : Swatch::kLine;
    legend.push_back({sr.label, ColorOf(sr.color, j), sw});
  }
  Margins m{.title = !s.title.empty(), .xlabel = !s.xlabel.empty(), .ylabel = !s.ylabel.empty(),
            .ytick_width = TickWidth(yt)};
  m.legend_width = LegendWidth(legend, s.width);
  const Box b = Layout(s.width, s.height, m);

  Doc doc(s.width, s.height, s.title);
  const Scale x{xr.lo, xr.hi, b.left, b.right};
  const Scale y{yr.lo, yr.hi, b.bottom, b.top};
  DrawYAxis(doc, b, y, yt);
  DrawXAxis(doc, b, x, xt, true);
  doc.BeginClip(b.left, b.top, b.w(), b.h());
  if (s.diagonal) {
    const double d0 = std::max(xr.lo, yr.lo), d1 = std::min(xr.hi, yr.hi);
    if (d0 < d1) {
      doc.Line(x(d0), y(d0), x(d1), y(d1), "class=\"diagonal\" stroke=\"#888888\" stroke-dasharray=\"5 4\"");
    }
  }
  for (std::size_t j = 0; j < s.series.size(); ++j) {  // bars first, under the lines
    const LineSeries& sr = s.series[j];
    if (!sr.bars) continue;
    const double base = y(std::clamp(0.0, yr.lo, yr.hi));
    doc.Open(fmt::format("class=\"series bars\" fill=\"{}\" fill-opacity=\"0.35\"", ColorOf(sr.color, j)));
    for (std::size_t i = 0; i < sr.x.size(); ++i) {
      const double x0 = x(sr.x[i] - widths[j] / 2), x1 = x(sr.x[i] + widths[j] / 2), py = y(sr.y[i]);
      doc.Rect(x0, std::min(base, py), x1 - x0, std::abs(base - py), "class=\"bar\"",
               fmt::format("{}{}({}, {})", sr.label, sr.label.empty() ? "" : " ", Fmt4(sr.x[i]), Fmt4(sr.y[i])));
    }
    doc.Close();
  }
  for (std::size_t j = 0; j < s.series.size(); ++j) {
    const LineSeries& sr = s.series[j];
    if (sr.bars || (!sr.line && !sr.markers)) continue;
    const std::string color = ColorOf(sr.color, j);
    doc.Open("class=\"series\"");
    if (sr.line && sr.x.size() > 1) {
      std::vector<std::pair<double, double>> pts;
      for (std::size_t i = 0; i < sr.x.size(); ++i) pts.emplace_back(x(sr.x[i]), y(sr.y[i]));
      doc.Polyline(pts, fmt::format("class=\"line\" stroke=\"{}\" stroke-width=\"2\" stroke-linejoin=\"round\"", color));
    }
    if (sr.markers) {
      doc.Open(fmt::format("class=\"points\" fill=\"{}\" stroke=\"#ffffff\" stroke-width=\"0.8\"", color));
      for (std::size_t i = 0; i < sr.x.size(); ++i) doc.Circle(x(sr.x[i]), y(sr.y[i]), 3.5, "class=\"point\"");
      doc.Close();
    }
    doc.Close();
  }
  doc.EndClip();
  DrawLegend(doc, b.right + 14, b.top, legend);
  DrawAxisLabels(doc, b, m.ytick_width, s.xlabel, s.ylabel);
  return doc.Finish();
}

}  // namespace kplab::svg
