// Small SVG chart writer for analysis scripts (kp.plot in Lua; docs/plots.md): box plots, histograms,
// heatmaps, grouped bars, lines/scatter. Output is one self-contained SVG 1.1 document (viewBox, width
// and height, font-family sans-serif, white background, no scripts, no external resources, no ids),
// and it is deterministic: the same spec gives byte-identical output (numbers are written with fmt, two
// decimals for coordinates). Every label is XML-escaped; non-ASCII UTF-8 is kept as is, invalid UTF-8
// is an error, control characters become U+FFFD.
//
// Bad input (NaN or infinite values, mismatched lengths, empty data, an empty range) is an Error whose
// message names the chart and the offending field with 1-based indices, as a Lua script or a data file
// would count, e.g. "heatmap: values[2] has 3 entries (expected 4, one per column)" or
// "boxplot: group 'k=2' (groups[2]): values[17] is NaN (expected a finite number)". The one exception is
// a heatmap cell: NaN there means "no value" (drawn grey and annotated with an en dash).
//
// Elements carry a class ("plot" for the plot area, "bar", "box", "median", "whisker", "outlier",
// "cell", "point", "line", "diagonal", "legend", ...) so tests and pages embedding a chart can find them.
// Threads: pure functions; safe to call from several threads at once.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kplab/result.h"

namespace kplab::svg {

// A closed interval of an axis; lo < hi, both finite.
struct Range {
  double lo = 0;
  double hi = 1;
};

// One distribution (box plot, histogram) or one series of bars. `color` is "#rrggbb" or empty for the
// palette's next colour (matplotlib's tab10).
struct Group {
  std::string label;
  std::vector<double> values;
  std::string color;
};

// Box plots side by side, one per group: box from the first to the third quartile (numpy 'linear'
// quantiles), median line, whiskers to the most extreme values within 1.5 IQR of the box, values beyond
// them as small dots. Outlier dots are thinned deterministically: distinct values only, at most
// `max_outliers` per group, evenly spaced in rank with both extremes kept. Each box's <title> (a
// tooltip) gives n, quartiles and the number of outliers drawn.
struct BoxplotSpec {
  std::string title, xlabel, ylabel;
  int width = 640, height = 400;
  std::vector<Group> groups;
  std::optional<Range> range;  // value axis; default: the data, widened to a grain (NiceAxis); integer
                               // ticks when every value is a whole number
  bool mark_median = false;    // writes the median's value beside each box
  int digits = 3;              // decimals of that value
  int max_outliers = 200;      // dots per group (0: none)
  bool show_n = false;         // "n=20000" under each group's label
};

enum class HistogramLayout { kOverlay, kSideBySide };

// Histograms of the groups over the same bins: `bins` equal bins over `range` (numpy.histogram
// semantics: the last bin includes its right edge, values outside the range are not counted); the count
// axis has integer ticks (the density axis does not). Overlay
// draws translucent bars with a step outline per group; side-by-side splits each bin between groups.
struct HistogramSpec {
  std::string title, xlabel, ylabel;  // ylabel default: "count" (or "density")
  int width = 640, height = 400;
  std::vector<Group> groups;
  int bins = 20;                      // 1..10000
  std::optional<Range> range;         // default: min..max of all values (±0.5 if they are all equal)
  HistogramLayout layout = HistogramLayout::kOverlay;
  bool density = false;               // count / (in-range count * bin width), as numpy density=True
  bool mark_median = false;           // dashed vertical line at each group's median; value in the legend
  int digits = 3;                     // decimals of the median in the legend
};

enum class Palette { kDiverging, kSequential };  // RdBu reversed (blue - white - red) / Blues

// A labelled matrix of coloured cells, values annotated; a colour legend on the right. Column labels
// are written below the cells, rotated by 45 degrees when one is wider than a cell. The size follows
// from the cell size and the labels (there is no width/height).
struct HeatmapSpec {
  std::string title, xlabel, ylabel;
  std::vector<std::string> rows, cols;
  std::vector<std::vector<double>> values;  // rows.size() rows of cols.size() entries; NaN = no value
  double min = -1, max = 1;                 // colour scale (values beyond it get the end colours)
  int digits = 2;                           // 0..6
  bool annotate = true;
  Palette palette = Palette::kDiverging;    // diverging: white at (min + max) / 2
  int cell = 0;                             // cell size in px; 0: fits the annotation, at least 44
  std::string legend;                       // title of the colour legend, e.g. "Spearman ρ"
};

// Grouped bars: one group per category, one bar per series in it, from a zero baseline (negative values
// go below it). A legend when there are two series or more.
struct BarsSpec {
  std::string title, xlabel, ylabel;
  int width = 640, height = 400;
  std::vector<std::string> categories;
  std::vector<Group> series;     // values: one per category
  std::optional<Range> range;    // value axis; default: the data and 0 (+10% for annotations), widened to a
                                 // grain (NiceAxis); integer ticks when every value is a whole number
  bool horizontal = false;       // categories top to bottom, values along x
  bool annotate = false;         // values written at the bar ends
  int digits = 2;
};

// One x/y series: a polyline and/or markers, or bars from y = 0 (e.g. bin counts under a reliability
// diagram).
struct LineSeries {
  std::string label;
  std::vector<double> x, y;
  bool line = true;
  bool markers = true;
  bool bars = false;      // vertical bars instead of line and markers
  double bar_width = 0;   // in x units; 0: 0.8 x the smallest gap between x values
  std::string color;
};

struct LinesSpec {
  std::string title, xlabel, ylabel;
  int width = 640, height = 400;
  std::vector<LineSeries> series;
  std::optional<Range> xrange, yrange;  // default: the data widened to a grain (NiceAxis); drawing is
                                        // clipped; integer ticks on an axis whose values are all whole
  bool diagonal = false;                // dashed reference line y = x
};

Result<std::string> Boxplot(const BoxplotSpec& spec);
Result<std::string> Histogram(const HistogramSpec& spec);
Result<std::string> Heatmap(const HeatmapSpec& spec);
Result<std::string> Bars(const BarsSpec& spec);
Result<std::string> Lines(const LinesSpec& spec);

// ---- Building blocks (exposed for tests and for callers that want the numbers) ----

// Axis ticks: multiples of a 1-2-5 step (1, 2, 5, 10, 20, ...) about `target` of them per range. With
// `integer` (counts) the step is at least 1, so every tick is a whole number.
struct Ticks {
  double step = 1;
  int decimals = 0;            // decimals that show the step exactly (0.2 -> 1, 0.05 -> 2)
  std::vector<double> values;  // ascending, inside [lo, hi] (a tolerance of 1e-9 steps)
};
// Ticks inside the fixed range [lo, hi] (lo < hi).
Ticks NiceTicks(double lo, double hi, int target = 5, bool integer = false);
// An automatic axis for data in [lo, hi] (lo == hi is widened first, by 0.5 or 10% of |lo|): the tick
// step is the 1-2-5 value nearest to span / target (Heckbert's "nice numbers": thresholds 1.5, 3, 7),
// and the range is the data's, each end rounded outwards
// only to a multiple of a finer grain — the 1-2-5 step for 4 x target ticks, about a twentieth of the
// span — so one value just beyond a tick does not stretch the axis by a whole step (data in [0.1, 0.9]
// with one -0.02 gives -0.05..0.9 with ticks 0, 0.2, ..., 0.8, not -0.2..1). The ticks are
// the multiples of the step inside the range (at least two; if fewer, the range is widened to steps).
// With `integer` the step and the grain are whole numbers.
struct Axis {
  Range range;
  Ticks ticks;
};
Axis NiceAxis(double lo, double hi, int target = 5, bool integer = false);
Range NiceRange(double lo, double hi, int target = 5, bool integer = false);  // NiceAxis(...).range

// True when every value is a whole number (an axis of counts gets integer ticks).
bool AllIntegers(std::span<const double> values);

// Box statistics: quartiles by stats::QuantileSorted (numpy's linear method).
struct BoxStats {
  std::size_t n = 0;
  double q1 = 0, median = 0, q3 = 0;
  double whisker_lo = 0, whisker_hi = 0;  // most extreme values within [q1 - 1.5 IQR, q3 + 1.5 IQR]
  std::vector<double> outliers;           // every value beyond the whiskers, ascending
};
// values must be finite and non-empty.
BoxStats ComputeBoxStats(std::vector<double> values);
// At most `max` of the distinct values of ascending `sorted`, evenly spaced in rank, first and last kept.
std::vector<double> ThinSorted(std::span<const double> sorted, int max);

// numpy.histogram(values, bins, range=(lo, hi)) counts.
std::vector<std::size_t> HistogramCounts(std::span<const double> values, int bins, Range range);

// The colour of t in [0, 1] on the palette, "#rrggbb" (t is clamped).
std::string PaletteColor(Palette palette, double t);

// XML text/attribute escaping of a valid UTF-8 string: & < > " ' as entities, control characters other
// than tab/newline as U+FFFD, tab and newline as spaces.
std::string Escape(std::string_view s);

// `decimals` fixed decimals; never "-0" (a negative number that rounds to zero is written unsigned).
std::string FormatFixed(double v, int decimals);

}  // namespace kplab::svg
