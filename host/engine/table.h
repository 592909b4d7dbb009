// `kplab runs table` (docs/tables.md): a leaderboard of stored runs — rows are systems (runs of one
// system and dataset with different seeds grouped: mean, sample sd and n), columns are datasets x chosen
// metrics — with an optional significance marker per cell against a baseline system, as text, Markdown,
// LaTeX (booktabs), CSV or JSON.
//
// Threads: BuildTable uses its RunStore on the calling thread (one store per thread); the rendering functions
// are pure; the table types are plain values.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kplab/result.h"
#include "kplab/store.h"

namespace kplab::host {

struct TableOptions {
  std::vector<std::string> metrics;  // glob patterns over aggregate names, in column order (required)
  std::vector<std::int64_t> runs;    // the runs to use; empty = every stored run with status ok
  std::optional<std::string> system, dataset, profile;  // glob filters
  std::optional<std::string> baseline;                 // system to test every other system against
  int resamples = 9999;              // randomization resamples per tested cell
  std::uint64_t seed = 1;
  double alpha = 0.05;               // Holm-adjusted significance level of the marker
  // Called with the work done (documents x resamples) every 64 resamples of a test: a script's
  // kp.runs.table charges it to its instruction budget (a Lua error unwinds from here). Unset: nothing.
  std::function<void(double steps)> charge;
};

struct TableCell {
  bool present = false;
  double mean = 0, sd = 0;           // over the seeds (sd: sample standard deviation, 0 for one seed)
  int n = 0;                         // seeds (runs) in the cell
  std::vector<std::int64_t> run_ids;
  std::vector<std::optional<std::int64_t>> seeds;
  bool tested = false;               // a baseline test was possible (see docs/tables.md)
  std::size_t n_docs = 0;            // documents in the test
  double diff = 0, p = 1, p_holm = 1;  // statistic of this system minus the baseline's
  bool significant = false;          // p_holm < alpha
  bool best = false;                 // the best mean of its column (higher is better unless lower_better)
  std::string untested;              // with a baseline, why this cell has no test (empty when tested)
};

struct TableColumn {
  std::string dataset, metric;
  bool lower_better = false;
  bool fraction = true;  // every value in [0, 1]: shown as a percentage by default
};

struct Table {
  std::vector<std::string> systems;  // row order: the baseline first, then by name
  std::vector<TableColumn> columns;  // datasets by name, then the metrics in pattern order
  std::vector<std::vector<TableCell>> cells;  // [row][column]
  std::optional<std::string> baseline;
  std::size_t family = 0;            // tested cells (Holm's family)
  int resamples = 0;
  double alpha = 0.05;
  std::vector<std::string> warnings;  // e.g. runs under different profiles
};

Result<Table> BuildTable(RunStore& store, const TableOptions& options);

struct RenderOptions {
  std::string format = "table";  // table, markdown, latex, csv, json
  int decimals = 1;
  bool percent = true;  // columns whose values all lie in [0, 1] as percentages
  // --label KEY=TEXT: the printed name of a metric (its column label), a dataset or a subset (its
  // column group); every other name is worked out by ShortLabel / the subset's capitalized name.
  std::map<std::string, std::string> labels;
  std::string layout = "datasets";  // datasets over metrics, or "metrics" over datasets
  bool fit = false;                 // latex: shrink to \linewidth (docs/tables.md)
  std::string float_env = "table";  // latex: table, table* (both columns of a two-column page) or none
  std::string caption;              // latex: \caption text (none when empty)
};
// The render options as `kplab runs table` and kp.runs.table both set them (docs/tables.md): one setter
// per option with its own check, so both front-ends accept the same values with the same messages, an
// option spelled as its front-end spells it ("--layout" on the command line, "layout" in Lua).
struct OptionSpelling {
  std::string prefix = "--";         // before an option's name
  std::string format = "--output";   // the option that chooses the output format
};
// Errors: a --label key that is no metric, dataset or subset of the table.
Status CheckRenderOptions(const Table& table, const RenderOptions& options, const OptionSpelling& spell = {});

// A label NAME=TEXT (--label, or one entry of kp.runs.table's labels): neither empty, a name once.
Status SetLabel(RenderOptions& options, const std::string& name, const std::string& text, const OptionSpelling& spell);
Status SetLayout(RenderOptions& options, const std::string& layout, const OptionSpelling& spell);  // datasets, metrics
Status SetFloat(RenderOptions& options, const std::string& env, const OptionSpelling& spell);  // table, table*, none
// What holds between the options: a caption needs a float; fit, float and caption shape LaTeX only.
Status CheckRenderShape(const RenderOptions& options, const OptionSpelling& spell);
std::string RenderTable(const Table& table, const RenderOptions& options);

// The table's printed pieces as `runs table` (format "table") prints them, for a renderer of its own (the
// HTML report): the same labels, groups, column order, number format and note.
struct TableText {
  std::vector<std::size_t> order;                   // column indices in printed order
  std::vector<std::string> dataset, group, label;   // per column (table order)
  std::vector<std::vector<std::string>> cells;      // [row][column], table order
  std::string note;
};
TableText FormatTableText(const Table& table, const RenderOptions& options);

// The label papers print for an aggregate, from its structure <subset>.<measure>[@k][.<average>]
// (the subset is the column group): all.f1@5.macro_hm -> F1@5, present.r@10.macro -> R@10,
// all.map@M -> MAP@M, all.semf1 -> SemF1, all.f1@5.micro -> F1@5 (micro), f1@5.macro_doc -> F1@5 (doc).
std::string ShortLabel(const std::string& metric);

}  // namespace kplab::host
