#include "table.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <unordered_map>

#include <fmt/format.h>

#include "compare.h"
#include "kplab/json.h"
#include "kplab/vecfile.h"  // Fnv1a64
#include "testable.h"

namespace kplab::host {
namespace {

bool LowerIsBetter(const std::string& metric) {
  for (const char* m : {".ece", ".kpp", "dup_token_ratio", "self_embed_sim", "sem_diversity_index"}) {
    if (metric.find(m) != std::string::npos) return true;
  }
  return false;
}

struct RunData {
  RunRecord record;
  std::vector<AggregateValue> aggregates;
  std::optional<ScoreColumns> scores;  // read when a test needs them, with the slots
  std::vector<SlotColumn> slots;
};

// Per side of a test: each document's seed means of the plan's inputs, over the documents where every
// run of the side has every input defined. Empty when a run lacks an input (PlanTest then said so).
std::map<std::string, std::vector<double>> SeedMeans(const std::vector<RunEvidence>& side, const TestPlan& plan) {
  std::map<std::string, std::vector<double>> sums;  // doc id -> input sums
  std::map<std::string, std::size_t> seen;          // doc id -> runs that defined every input
  for (const RunEvidence& run : side) {
    std::vector<std::vector<double>> cols;
    for (const auto& name : plan.inputs) cols.push_back(InputColumn(run, name));
    for (std::size_t d = 0; d < run.record->doc_ids.size(); ++d) {
      bool ok = true;
      for (const auto& col : cols) ok = ok && d < col.size() && !std::isnan(col[d]);
      if (!ok) continue;
      auto& acc = sums[run.record->doc_ids[d]];
      acc.resize(cols.size(), 0.0);
      for (std::size_t i = 0; i < cols.size(); ++i) acc[i] += cols[i][d];
      ++seen[run.record->doc_ids[d]];
    }
  }
  std::map<std::string, std::vector<double>> out;
  for (auto& [doc, acc] : sums) {
    if (seen[doc] != side.size()) continue;
    for (double& v : acc) v /= static_cast<double>(side.size());
    out.emplace(doc, std::move(acc));
  }
  return out;
}

// Significance against the baseline (t.cells[0]): per cell, PlanTest over the runs of both cells decides
// whether and how (the rule `runs compare` uses); the plan's inputs are averaged per document over each
// side's seeds, paired by document id, and tested by PairedFormTest; Holm over the cells tested.
Status TestAgainstBaseline(RunStore& store, const TableOptions& opt, std::map<std::int64_t, RunData>& runs, Table& t) {
  auto evidence = [&](std::int64_t id, const std::string& metric) -> Result<RunEvidence> {
    RunData& d = runs.at(id);
    if (!d.scores) {
      auto sc = store.GetScores(id);
      if (!sc) return sc.error();
      d.scores = std::move(*sc);
      auto sl = store.GetSlots(id);
      if (!sl) return sl.error();
      d.slots = std::move(*sl);
    }
    RunEvidence e{id, std::nan(""), &d.record, &*d.scores, &d.slots};
    for (const auto& a : d.aggregates) {
      if (a.metric == metric) e.stored = a.value;
    }
    return e;
  };
  struct Tested {
    std::size_t r, c;
  };
  std::vector<Tested> tested;
  for (std::size_t c = 0; c < t.columns.size(); ++c) {
    const std::string& metric = t.columns[c].metric;
    const TableCell& base = t.cells[0][c];
    if (!base.present) continue;
    std::vector<RunEvidence> side_a;
    for (std::int64_t id : base.run_ids) {
      auto e = evidence(id, metric);
      if (!e) return e.error();
      side_a.push_back(*e);
    }
    for (std::size_t r = 1; r < t.systems.size(); ++r) {
      TableCell& cell = t.cells[r][c];
      if (!cell.present) continue;
      std::vector<RunEvidence> side_b, all = side_a;
      for (std::int64_t id : cell.run_ids) {
        auto e = evidence(id, metric);
        if (!e) return e.error();
        side_b.push_back(*e);
        all.push_back(*e);
      }
      const TestPlan plan = PlanTest(metric, all);
      if (plan.kind == TestPlan::Kind::kNone) {
        cell.untested = plan.reason;
        continue;
      }
      if (plan.form == TestPlan::Form::kPlugin) {
        cell.untested = "a corpus-level value only its plugin can recompute: `kplab runs compare` tests it between "
                        "two runs, a table does not";
        continue;
      }
      const auto ma = SeedMeans(side_a, plan), mb = SeedMeans(side_b, plan);
      std::vector<std::vector<double>> xa(plan.inputs.size()), xb(plan.inputs.size());
      for (const auto& [doc, vb] : mb) {  // by document id: the p-value does not depend on run order
        auto it = ma.find(doc);
        if (it == ma.end()) continue;
        for (std::size_t i = 0; i < vb.size(); ++i) {
          xa[i].push_back(it->second[i]);
          xb[i].push_back(vb[i]);
        }
      }
      if (xa[0].empty()) {
        cell.untested = "no document has values in every run of both systems";
        continue;
      }
      cell.tested = true;
      cell.n_docs = xa[0].size();
      // Seeded by what the cell is, not where it sits: adding a column does not change its p-value.
      // FNV-1a, not std::hash: the same table gives the same p-values under every standard library.
      const std::uint64_t key = Fnv1a64(t.systems[r] + '\x1f' + t.columns[c].dataset + '\x1f' + metric);
      const PairedResult res =
          PairedFormTest(plan.form, xa, xb, opt.resamples, opt.seed ^ (key * 0x9e3779b97f4a7c15ULL), 0, opt.charge);
      cell.diff = res.observed;
      cell.p = res.p;
      tested.push_back({r, c});
    }
  }
  // Holm's step-down adjustment over the tested cells.
  t.family = tested.size();
  std::vector<std::size_t> order(tested.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) {
    return t.cells[tested[x].r][tested[x].c].p < t.cells[tested[y].r][tested[y].c].p;
  });
  double running = 0;
  for (std::size_t k = 0; k < order.size(); ++k) {
    TableCell& cell = t.cells[tested[order[k]].r][tested[order[k]].c];
    running = std::max(running, std::min(1.0, cell.p * static_cast<double>(order.size() - k)));
    cell.p_holm = running;
    cell.significant = cell.p_holm < opt.alpha;
  }
  return Status::Ok();
}

// The runs a table uses, as (system, dataset) -> seed -> the newest run with that seed.
using Groups = std::map<std::pair<std::string, std::string>, std::map<std::optional<std::int64_t>, std::int64_t>>;

struct Selection {
  Groups groups;
  std::set<std::string> profiles;
  std::vector<std::string> shadowed;  // warnings: runs left out for a newer one with the same seed
};

// Which stored runs the table uses: --runs (each must exist, be ok and not a shard) or every ok, whole
// run matching the filters; of two runs with the same system, dataset and seed the newer.
Result<Selection> SelectRuns(RunStore& store, const TableOptions& opt) {
  auto listed = store.ListRuns();  // newest first
  if (!listed) return listed.error();
  std::set<std::int64_t> wanted(opt.runs.begin(), opt.runs.end());
  for (std::int64_t id : opt.runs) {
    const bool exists = std::any_of(listed->begin(), listed->end(), [&](const RunSummary& r) { return r.id == id; });
    if (!exists) return Error::Store(fmt::format("run {} not found", id));
  }
  Selection sel;
  for (const RunSummary& r : *listed) {
    if (!wanted.empty() && !wanted.count(r.id)) continue;
    if (r.status != "ok") {
      if (!wanted.empty()) {
        return Error::Store(
            fmt::format("run {} failed, so it has no values for a table (expected runs with status ok)", r.id));
      }
      continue;
    }
    if (r.shard) {
      // A shard's values are over its own documents: not a leaderboard cell (`kplab runs merge` makes one).
      if (!wanted.empty()) {
        return Error::Usage(
            fmt::format("run {} is shard {}/{} of a run, with values over its own documents only (merge the "
                        "shards with `kplab runs merge` and tabulate the merged run)",
                        r.id, r.shard->index, r.shard->count));
      }
      continue;
    }
    if ((opt.system && !GlobMatch(*opt.system, r.system)) || (opt.dataset && !GlobMatch(*opt.dataset, r.dataset_name)) ||
        (opt.profile && !GlobMatch(*opt.profile, r.profile))) {
      continue;
    }
    auto [it, fresh] = sel.groups[{r.system, r.dataset_name}].emplace(r.seed, r.id);  // newest first: it stays
    if (!fresh) {
      sel.shadowed.push_back(fmt::format("warning: run {} ({} on {}{}) is left out: run {} is newer with the same "
                                         "system, dataset and seed (choose with --runs)",
                                         r.id, r.system, r.dataset_name,
                                         r.seed ? ", seed " + std::to_string(*r.seed) : "", it->second));
    }
    sel.profiles.insert(r.profile);
  }
  if (sel.groups.empty()) return Error::Usage("no stored run matches (expected runs with status ok)");
  return sel;
}

// Every selected run's record and aggregates; a dataset name must name one dataset (one content hash).
// metric_names: the union of the aggregates' names, in first-seen order.
Status LoadRuns(RunStore& store, const Groups& groups, std::map<std::int64_t, RunData>& runs,
                std::vector<std::string>& metric_names) {
  std::map<std::string, std::string> dataset_hash;
  for (const auto& [key, by_seed] : groups) {
    for (const auto& [seed, id] : by_seed) {
      RunData d;
      auto rec = store.GetRun(id);
      if (!rec) return rec.error();
      auto ag = store.GetAggregates(id);
      if (!ag) return ag.error();
      d.record = std::move(*rec);
      d.aggregates = std::move(*ag);
      auto [it, fresh] = dataset_hash.emplace(key.second, d.record.dataset_hash);
      if (!fresh && it->second != d.record.dataset_hash) {
        return Error::Usage(
            fmt::format("runs on two different datasets are both named '{}' (run {} has content sha256 "
                        "{}...); choose the runs with --runs or --dataset",
                        key.second, id, d.record.dataset_hash.substr(0, 12)));
      }
      for (const auto& a : d.aggregates) {
        if (std::find(metric_names.begin(), metric_names.end(), a.metric) == metric_names.end()) {
          metric_names.push_back(a.metric);
        }
      }
      runs.emplace(id, std::move(d));
    }
  }
  return Status::Ok();
}

// The metric names the patterns match, in pattern order; a pattern matching nothing is an error.
Result<std::vector<std::string>> ResolveMetrics(const TableOptions& opt, const std::vector<std::string>& metric_names) {
  std::vector<std::string> metrics;
  for (const std::string& pattern : opt.metrics) {
    bool any = false;
    for (const std::string& m : metric_names) {
      if (!GlobMatch(pattern, m)) continue;
      any = true;
      if (std::find(metrics.begin(), metrics.end(), m) == metrics.end()) metrics.push_back(m);
    }
    if (!any) {
      return Error::Usage(fmt::format("--metrics pattern '{}' matches no aggregate of the selected runs", pattern));
    }
  }
  return metrics;
}

// Rows (the baseline first, then the systems by name) and columns (datasets by name, then the metrics
// in pattern order, each only where some system has it).
Status LayOut(const TableOptions& opt, const Groups& groups, const std::map<std::int64_t, RunData>& runs,
              const std::vector<std::string>& metrics, Table& t) {
  std::set<std::string> systems, datasets;
  for (const auto& [key, by_seed] : groups) {
    systems.insert(key.first);
    datasets.insert(key.second);
  }
  if (opt.baseline && !systems.count(*opt.baseline)) {
    return Error::Usage(fmt::format("baseline system '{}' has no selected run (systems: {})", *opt.baseline,
                                    fmt::format("{}", fmt::join(systems, ", "))));
  }
  t.baseline = opt.baseline;
  if (opt.baseline) t.systems.push_back(*opt.baseline);
  for (const auto& s : systems) {
    if (!opt.baseline || s != *opt.baseline) t.systems.push_back(s);
  }
  for (const auto& d : datasets) {
    for (const auto& m : metrics) {
      bool has = false;
      for (const auto& s : t.systems) {
        auto g = groups.find({s, d});
        if (g == groups.end()) continue;
        for (const auto& [seed, id] : g->second) {
          for (const auto& a : runs.at(id).aggregates) has = has || a.metric == m;
        }
      }
      if (has) t.columns.push_back({d, m, LowerIsBetter(m), true});
    }
  }
  return Status::Ok();
}

// Each cell's mean, sample sd and n over its seeds; a column is a fraction when every value is in [0, 1];
// then the best mean of each column.
void FillCells(const Groups& groups, const std::map<std::int64_t, RunData>& runs, Table& t) {
  t.cells.assign(t.systems.size(), std::vector<TableCell>(t.columns.size()));
  for (std::size_t r = 0; r < t.systems.size(); ++r) {
    for (std::size_t c = 0; c < t.columns.size(); ++c) {
      auto g = groups.find({t.systems[r], t.columns[c].dataset});
      if (g == groups.end()) continue;
      TableCell& cell = t.cells[r][c];
      std::vector<double> values;
      for (const auto& [seed, id] : g->second) {
        for (const auto& a : runs.at(id).aggregates) {
          if (a.metric != t.columns[c].metric) continue;
          values.push_back(a.value);
          cell.run_ids.push_back(id);
          cell.seeds.push_back(seed);
        }
      }
      if (values.empty()) continue;
      cell.present = true;
      cell.n = static_cast<int>(values.size());
      double s = 0;
      for (double v : values) s += v;
      cell.mean = s / static_cast<double>(values.size());
      double ss = 0;
      for (double v : values) ss += (v - cell.mean) * (v - cell.mean);
      cell.sd = values.size() > 1 ? std::sqrt(ss / static_cast<double>(values.size() - 1)) : 0;
      for (double v : values) t.columns[c].fraction = t.columns[c].fraction && v >= 0 && v <= 1;
    }
  }
  for (std::size_t c = 0; c < t.columns.size(); ++c) {
    std::optional<double> best;
    for (std::size_t r = 0; r < t.systems.size(); ++r) {
      const TableCell& cell = t.cells[r][c];
      if (!cell.present || std::isnan(cell.mean)) continue;
      if (!best || (t.columns[c].lower_better ? cell.mean < *best : cell.mean > *best)) best = cell.mean;
    }
    for (std::size_t r = 0; r < t.systems.size(); ++r) {
      TableCell& cell = t.cells[r][c];
      cell.best = best && cell.present && cell.mean == *best;
    }
  }
}

}  // namespace

Result<Table> BuildTable(RunStore& store, const TableOptions& opt) {
  if (opt.metrics.empty()) {
    return Error::Usage("runs table needs --metrics (glob patterns over aggregate names, e.g. all.f1@5.macro_hm)");
  }
  auto sel = SelectRuns(store, opt);
  if (!sel) return sel.error();
  Table t;
  t.alpha = opt.alpha;
  t.warnings = sel->shadowed;
  if (sel->profiles.size() > 1) {
    t.warnings.push_back(fmt::format("warning: the table mixes runs scored under different profiles ({}); "
                                     "filter with --profile to compare like with like",
                                     fmt::join(sel->profiles, ", ")));
  }
  std::map<std::int64_t, RunData> runs;
  std::vector<std::string> metric_names;
  if (Status st = LoadRuns(store, sel->groups, runs, metric_names); !st.ok()) return st.error();
  auto metrics = ResolveMetrics(opt, metric_names);
  if (!metrics) return metrics.error();
  if (Status st = LayOut(opt, sel->groups, runs, *metrics, t); !st.ok()) return st.error();
  FillCells(sel->groups, runs, t);
  if (opt.baseline) {
    t.resamples = opt.resamples;
    if (Status st = TestAgainstBaseline(store, opt, runs, t); !st.ok()) return st.error();
  }
  return t;
}

namespace {

// The escaping functions below first show controls and invalid bytes as escapes (kplab/safe_text.h,
// TerminalText): a cell is one line of safe text in every format.
std::string LatexEscape(const std::string& raw) {
  const std::string s = TerminalText(raw);
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char ch = s[i];
    // The two non-ASCII characters kplab itself prints (pdflatex's fonts have neither).
    if (s.compare(i, 2, "\xce\xb1") == 0) {  // α
      out += "$\\alpha$";
      ++i;
      continue;
    }
    if (s.compare(i, 2, "\xc2\xb1") == 0) {  // ±
      out += "$\\pm$";
      ++i;
      continue;
    }
    switch (ch) {
      case '_': out += "\\_"; break;
      case '%': out += "\\%"; break;
      case '&': out += "\\&"; break;
      case '#': out += "\\#"; break;
      case '$': out += "\\$"; break;
      case '{': out += "\\{"; break;
      case '}': out += "\\}"; break;
      case '~': out += "\\textasciitilde{}"; break;
      case '^': out += "\\textasciicircum{}"; break;
      case '\\': out += "\\textbackslash{}"; break;
      case '<': out += "\\textless{}"; break;
      case '>': out += "\\textgreater{}"; break;
      case '|': out += "\\textbar{}"; break;
      case '\n':
      case '\r':
      case '\t': out += " "; break;
      default: out.push_back(ch);
    }
  }
  return out;
}

// Markdown table cells: one line, no HTML.
std::string MdEscape(const std::string& raw) {
  const std::string s = TerminalText(raw);
  std::string out;
  for (char ch : s) {
    if (ch == '\n' || ch == '\r' || ch == '\t') {
      out.push_back(' ');
      continue;
    }
    if (ch == '<') {
      out += "&lt;";
      continue;
    }
    if (ch == '>') {
      out += "&gt;";
      continue;
    }
    if (ch == '|' || ch == '*' || ch == '_' || ch == '\\' || ch == '`' || ch == '[' || ch == ']') out.push_back('\\');
    out.push_back(ch);
  }
  return out;
}

// A CSV field: quoted (doubled quotes) when it holds a comma, quote or line break.
std::string CsvQuote(const std::string& raw) {
  const std::string s = TerminalText(raw);
  if (s.find_first_of(",\"") == std::string::npos) return s;
  std::string out = "\"";
  for (char ch : s) {
    if (ch == '"') out.push_back('"');
    out.push_back(ch);
  }
  return out + "\"";
}

// "<subset>.<rest>": the subset when the name has one (a metric without a dot has none).
std::string SubsetOf(const std::string& metric) {
  const auto dot = metric.find('.');
  return dot == std::string::npos ? "" : metric.substr(0, dot);
}

// The printed name of a subset's column group: none for "all" (papers print no group for it).
std::string GroupName(const std::string& subset) {
  if (subset.empty() || subset == "all") return "";
  std::string g = subset;
  g[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(g[0])));
  return g;
}

// How every printed header is worked out (labels, groups, order, units), shared by all formats.
struct Heads {
  std::vector<std::size_t> order;  // column indices in printed order
  std::vector<std::string> dataset, group, label;  // per column (table order)
  bool all_percent = false;  // every column scaled: the unit goes to the note instead of each label
};

Heads MakeHeads(const Table& t, const RenderOptions& o) {
  Heads h;
  const std::size_t n = t.columns.size();
  auto relabel = [&](const std::string& key, const std::string& fallback) {
    auto it = o.labels.find(key);
    return it == o.labels.end() ? fallback : it->second;
  };
  bool any_scaled = false;
  h.all_percent = o.percent;
  for (const auto& col : t.columns) {
    any_scaled = any_scaled || (o.percent && col.fraction);
    h.all_percent = h.all_percent && col.fraction;
  }
  h.all_percent = h.all_percent && any_scaled;
  for (const auto& col : t.columns) {
    h.dataset.push_back(relabel(col.dataset, col.dataset));
    const std::string subset = SubsetOf(col.metric);
    h.group.push_back(relabel(subset, GroupName(subset)));
    h.label.push_back(ShortLabel(col.metric));
  }
  // Two columns under one dataset and group with one short label (e.g. a metric with and without
  // .macro): both keep their full ids, so no column is ambiguous.
  for (std::size_t c = 0; c < n; ++c) {
    for (std::size_t d = c + 1; d < n; ++d) {
      if (h.label[c] == h.label[d] && h.dataset[c] == h.dataset[d] && h.group[c] == h.group[d] &&
          t.columns[c].metric != t.columns[d].metric) {
        h.label[c] = t.columns[c].metric;
        h.label[d] = t.columns[d].metric;
      }
    }
  }
  for (std::size_t c = 0; c < n; ++c) {
    h.label[c] = relabel(t.columns[c].metric, h.label[c]);
    if (!h.all_percent && o.percent && t.columns[c].fraction) h.label[c] += " (%)";
    h.order.push_back(c);
  }
  if (o.layout == "metrics") {
    // Metrics over datasets: by metric (in the table's metric order), then dataset.
    std::vector<std::string> metric_order;
    for (const auto& col : t.columns) {
      if (std::find(metric_order.begin(), metric_order.end(), col.metric) == metric_order.end()) {
        metric_order.push_back(col.metric);
      }
    }
    auto rank = [&](std::size_t c) {
      return std::find(metric_order.begin(), metric_order.end(), t.columns[c].metric) - metric_order.begin();
    };
    std::stable_sort(h.order.begin(), h.order.end(), [&](std::size_t a, std::size_t b) { return rank(a) < rank(b); });
  }
  return h;
}

// The header levels, top first: datasets > group > label, or group > label > datasets.
std::vector<const std::vector<std::string>*> Levels(const Heads& h, const RenderOptions& o) {
  std::vector<const std::vector<std::string>*> all =
      o.layout == "metrics" ? std::vector{&h.group, &h.label, &h.dataset} : std::vector{&h.dataset, &h.group, &h.label};
  std::vector<const std::vector<std::string>*> used;
  for (const auto* level : all) {
    if (std::any_of(level->begin(), level->end(), [](const std::string& s) { return !s.empty(); })) {
      used.push_back(level);
    }
  }
  return used;
}

struct Span {
  std::size_t from, to;  // positions in printed order, [from, to)
  std::string text;
};

// Level `k`'s spans: neighbouring columns merge when they agree on this level and every level above
// it; the last level never merges (one label per column).
std::vector<Span> SpansOf(const Heads& h, const std::vector<const std::vector<std::string>*>& levels, std::size_t k) {
  std::vector<Span> spans;
  const std::size_t n = h.order.size();
  for (std::size_t i = 0; i < n;) {
    std::size_t e = i + 1;
    while (k + 1 < levels.size() && e < n) {
      bool same = true;
      for (std::size_t j = 0; j <= k; ++j) same = same && (*levels[j])[h.order[e]] == (*levels[j])[h.order[i]];
      if (!same) break;
      ++e;
    }
    spans.push_back({i, e, (*levels[k])[h.order[i]]});
    i = e;
  }
  return spans;
}

struct Texts {
  std::vector<std::vector<std::string>> cells;  // [row][column], table order
  std::string note;  // the table's note, one paragraph, for this format
};

Texts CellTexts(const Table& t, const RenderOptions& o, const Heads& h) {
  const bool latex = o.format == "latex", md = o.format == "markdown";
  auto num = [&](double v) { return std::isnan(v) ? std::string("nan") : fmt::format("{:.{}f}", v, o.decimals); };
  Texts x;
  bool seeds = false, best = false;
  x.cells.assign(t.systems.size(), std::vector<std::string>(t.columns.size()));
  for (std::size_t r = 0; r < t.systems.size(); ++r) {
    for (std::size_t c = 0; c < t.columns.size(); ++c) {
      const TableCell& cell = t.cells[r][c];
      std::string& s = x.cells[r][c];
      if (!cell.present) {
        s = latex ? "--" : "-";
        continue;
      }
      const double k = o.percent && t.columns[c].fraction ? 100.0 : 1.0;
      s = num(cell.mean * k);
      if (cell.n > 1) {
        seeds = true;
        s += (latex ? " $\\pm$ " : " ± ") + num(cell.sd * k) + (latex ? "\\,$_{" : " (") + std::to_string(cell.n) +
             (latex ? "}$" : ")");
      }
      if (cell.significant) s += latex ? "$^{*}$" : md ? "\\*" : "*";
      if (cell.best && (latex || md)) {
        s = latex ? "\\textbf{" + s + "}" : "**" + s + "**";
        best = true;
      }
    }
  }
  // The note, as sentences a paper prints under its table.
  std::vector<std::string> parts;
  if (h.all_percent) parts.push_back(latex ? "Values in \\%." : "Values in %.");
  if (seeds) {
    parts.push_back(latex ? "Systems with several seeds: mean $\\pm$ sample standard deviation, the number of seeds "
                            "as a subscript."
                          : "Systems with several seeds: mean ± sample standard deviation (number of seeds).");
  }
  if (best) parts.push_back("The best value of each column is in bold.");
  if (t.baseline) {
    const std::string base = latex ? LatexEscape(*t.baseline) : md ? MdEscape(*t.baseline) : *t.baseline;
    parts.push_back(fmt::format(
        "{} significantly different from {} (paired approximate randomization over documents, {} resamples; Holm "
        "over the {} tested cells, {}).",
        latex ? "$^{*}$:" : md ? "\\*:" : "*:", base, t.resamples, t.family,
        latex ? fmt::format("$\\alpha = {}$", t.alpha) : fmt::format("alpha = {}", t.alpha)));
  }
  for (const auto& p : parts) x.note += (x.note.empty() ? "" : " ") + p;
  return x;
}

// The tabular itself, with header rows per level and \cmidrule under each spanning cell.
std::string LatexTabular(const Table& t, const RenderOptions& o, const Heads& h, const Texts& x) {
  const auto levels = Levels(h, o);
  std::string out = "\\begin{tabular}{l" + std::string(t.columns.size(), 'r') + "}\n\\toprule\n";
  for (std::size_t k = 0; k < levels.size(); ++k) {
    const bool last = k + 1 == levels.size();
    std::string line = last ? "System" : "", rules;
    for (const Span& s : SpansOf(h, levels, k)) {
      line += fmt::format(" & \\multicolumn{{{}}}{{c}}{{{}}}", s.to - s.from, LatexEscape(s.text));
      if (!last && !s.text.empty()) rules += fmt::format("\\cmidrule(lr){{{}-{}}}", s.from + 2, s.to + 1);
    }
    out += line + " \\\\\n";
    if (!rules.empty()) out += rules + "\n";
  }
  out += "\\midrule\n";
  for (std::size_t r = 0; r < t.systems.size(); ++r) {
    out += LatexEscape(t.systems[r]);
    for (std::size_t c : h.order) out += " & " + x.cells[r][c];
    out += " \\\\\n";
    if (t.baseline && r == 0 && t.systems.size() > 1) out += "\\midrule\n";
  }
  return out + "\\bottomrule\n\\end{tabular}";
}

// --fit: LaTeX measures the table and keeps the largest text that fits \linewidth: the table as it is;
// \tabcolsep 3pt; then \small, \footnotesize, \scriptsize (with narrower \tabcolsep) — unless scaling
// the normal-size table down with \resizebox keeps its text larger than that size (compared by the width
// of "0123456789" in each size); and \resizebox when nothing else fits. Needs graphicx for \resizebox.
std::string LatexFit(const std::string& tabular) {
  return "\\begingroup\n"
         "\\def\\kplabTab{" + tabular + "}%\n"
         "\\def\\kplabChoice{as it is}%\n"
         "\\setbox0\\hbox{\\kplabTab}%\n"
         "\\ifdim\\wd0>\\linewidth\n"
         "  \\setbox0\\hbox{\\setlength\\tabcolsep{3pt}\\kplabTab}\\def\\kplabChoice{tabcolsep 3pt}%\n"
         "\\fi\n"
         "\\ifdim\\wd0>\\linewidth\n"
         "  \\edef\\kplabW{\\number\\wd0}%\n"
         "  \\setbox2\\hbox{0123456789}\\edef\\kplabR{\\number\\wd2}%\n"
         "  \\def\\kplabTry#1#2{\\ifdim\\wd0>\\linewidth\n"
         "    \\setbox2\\hbox{#1\\setlength\\tabcolsep{#2}\\kplabTab}%\n"
         "    \\ifdim\\wd2>\\linewidth\\else\n"
         "      \\setbox4\\hbox{#10123456789}%\n"
         "      \\ifdim\\dimexpr\\linewidth*\\kplabR/\\wd4\\relax>\\kplabW sp\n"
         "        \\setbox0\\hbox{\\resizebox{\\linewidth}{!}{\\setlength\\tabcolsep{3pt}\\kplabTab}}%\n"
         "        \\def\\kplabChoice{resizebox}%\n"
         "      \\else \\setbox0\\box2 \\def\\kplabChoice{\\string#1, tabcolsep #2}\\fi\n"
         "    \\fi\\fi}%\n"
         "  \\kplabTry\\small{3pt}\\kplabTry\\footnotesize{2pt}\\kplabTry\\scriptsize{1.5pt}%\n"
         "  \\ifdim\\wd0>\\linewidth\n"
         "    \\setbox0\\hbox{\\resizebox{\\linewidth}{!}{\\setlength\\tabcolsep{3pt}\\kplabTab}}%\n"
         "    \\def\\kplabChoice{resizebox}%\n"
         "  \\fi\n"
         "\\fi\n"
         "\\typeout{kplab runs table --fit: \\kplabChoice}%\n"
         "\\leavevmode\\box0\n"
         "\\endgroup\n";
}

std::string RenderLatex(const Table& t, const RenderOptions& o, const Heads& h, const Texts& x) {
  const std::string tabular = LatexTabular(t, o, h, x);
  std::string out = "% kplab runs table: needs \\usepackage{booktabs}" +
                    std::string(o.fit ? " and \\usepackage{graphicx} (for --fit's \\resizebox)" : "") + "\n";
  const bool floating = o.float_env != "none";
  if (floating) out += "\\begin{" + o.float_env + "}[t]\n\\centering\n";
  if (!o.caption.empty()) out += "\\caption{" + LatexEscape(o.caption) + "}\n";
  out += o.fit ? LatexFit(tabular) : tabular + "\n";
  // The note: a paragraph as wide as the text block under the table, in \footnotesize.
  if (!x.note.empty()) out += "\\par\\smallskip\\parbox{\\linewidth}{\\footnotesize\\raggedright " + x.note + "}\n";
  if (floating) out += "\\end{" + o.float_env + "}\n";
  return out;
}

std::string RenderMarkdown(const Table& t, const RenderOptions& o, const Heads& h, const Texts& x) {
  // One header row: each column's levels joined, top first.
  const auto levels = Levels(h, o);
  std::string out = "| system |";
  for (std::size_t c : h.order) {
    std::string head;
    for (const auto* level : levels) {
      if (!(*level)[c].empty()) head += (head.empty() ? "" : " ") + (*level)[c];
    }
    out += " " + MdEscape(head) + " |";
  }
  out += "\n|---|";
  for (std::size_t i = 0; i < h.order.size(); ++i) out += "---:|";
  out += "\n";
  for (std::size_t r = 0; r < t.systems.size(); ++r) {
    out += "| " + MdEscape(t.systems[r]) + " |";
    for (std::size_t c : h.order) out += " " + x.cells[r][c] + " |";
    out += "\n";
  }
  if (!x.note.empty()) out += "\n" + x.note + "\n";
  return out;
}

std::string RenderText(const Table& t, const RenderOptions& o, const Heads& h, const Texts& x) {
  // Every name, label and cell is shown as one line of safe text (kplab/safe_text.h, TerminalText);
  // width in characters of that text: "±" is two bytes.
  auto len = [](const std::string& raw) {
    std::size_t n = 0;
    for (unsigned char ch : TerminalText(raw)) n += (ch & 0xC0) != 0x80;
    return n;
  };
  auto pad = [&](const std::string& raw, std::size_t w, bool right) {
    const std::string s = TerminalText(raw);
    const std::size_t n = len(raw);
    const std::string fill(w > n ? w - n : 0, ' ');
    return right ? fill + s : s + fill;
  };
  const auto levels = Levels(h, o);
  std::size_t stub = 6;
  for (const auto& s : t.systems) stub = std::max(stub, len(s));
  // Each printed column is as wide as its cells and its last-level label; a spanning head wider than
  // its columns widens the last of them.
  std::vector<std::size_t> width(h.order.size(), 1);
  for (std::size_t i = 0; i < h.order.size(); ++i) {
    for (std::size_t r = 0; r < t.systems.size(); ++r) width[i] = std::max(width[i], len(x.cells[r][h.order[i]]));
  }
  for (std::size_t k = 0; k < levels.size(); ++k) {
    for (const Span& s : SpansOf(h, levels, k)) {
      std::size_t have = 2 * (s.to - s.from - 1);
      for (std::size_t i = s.from; i < s.to; ++i) have += width[i];
      if (len(s.text) > have) width[s.to - 1] += len(s.text) - have;
    }
  }
  std::string out;
  for (std::size_t k = 0; k < levels.size(); ++k) {
    out += pad(k + 1 == levels.size() ? "system" : "", stub, false);
    for (const Span& s : SpansOf(h, levels, k)) {
      std::size_t w = 2 * (s.to - s.from - 1);
      for (std::size_t i = s.from; i < s.to; ++i) w += width[i];
      out += "  " + pad(s.text, w, true);
    }
    out += "\n";
  }
  for (std::size_t r = 0; r < t.systems.size(); ++r) {
    out += pad(t.systems[r], stub, false);
    for (std::size_t i = 0; i < h.order.size(); ++i) out += "  " + pad(x.cells[r][h.order[i]], width[i], true);
    out += "\n";
  }
  if (!x.note.empty()) out += TerminalText(x.note) + "\n";
  return out;
}

std::string RenderCsv(const Table& t, const Heads& h) {
  std::string out = "system,dataset,metric,group,label,mean,sd,n,best,p,p_holm,significant\n";
  for (std::size_t r = 0; r < t.systems.size(); ++r) {
    for (std::size_t c : h.order) {
      const TableCell& cell = t.cells[r][c];
      if (!cell.present) continue;
      out += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{}\n", CsvQuote(t.systems[r]), CsvQuote(t.columns[c].dataset),
                         CsvQuote(t.columns[c].metric), CsvQuote(h.group[c]), CsvQuote(h.label[c]),
                         fmt::format("{}", cell.mean), fmt::format("{}", cell.sd), cell.n, cell.best ? 1 : 0,
                         cell.tested ? fmt::format("{}", cell.p) : "", cell.tested ? fmt::format("{}", cell.p_holm) : "",
                         cell.tested ? (cell.significant ? "1" : "0") : "");
    }
  }
  return out;
}

std::string RenderJson(const Table& t, const Heads& h) {
  std::string out = "{\"baseline\": " + (t.baseline ? JsonString(*t.baseline) : std::string("null")) +
                    ", \"family\": " + std::to_string(t.family) + ", \"resamples\": " + std::to_string(t.resamples) +
                    ", \"alpha\": " + JsonNumber(t.alpha) + ", \"columns\": [";
  for (std::size_t c = 0; c < t.columns.size(); ++c) {
    out += (c ? ", " : "") + fmt::format("{{\"dataset\": {}, \"metric\": {}, \"group\": {}, \"label\": {}, "
                                        "\"lower_better\": {}}}",
                                        JsonString(t.columns[c].dataset), JsonString(t.columns[c].metric),
                                        JsonString(h.group[c]), JsonString(h.label[c]),
                                        t.columns[c].lower_better ? "true" : "false");
  }
  out += "], \"rows\": [";
  for (std::size_t r = 0; r < t.systems.size(); ++r) {
    out += (r ? ", " : "") + std::string("{\"system\": ") + JsonString(t.systems[r]) + ", \"cells\": [";
    for (std::size_t c = 0; c < t.columns.size(); ++c) {
      const TableCell& cell = t.cells[r][c];
      out += c ? ", " : "";
      if (!cell.present) {
        out += "null";
        continue;
      }
      std::string runs, seeds;
      for (std::size_t i = 0; i < cell.run_ids.size(); ++i) {
        runs += i ? ", " : "";
        runs += std::to_string(cell.run_ids[i]);
        seeds += i ? ", " : "";
        seeds += cell.seeds[i] ? std::to_string(*cell.seeds[i]) : "null";
      }
      out += fmt::format("{{\"mean\": {}, \"sd\": {}, \"n\": {}, \"runs\": [{}], \"seeds\": [{}], \"best\": {}",
                         JsonNumber(cell.mean), JsonNumber(cell.sd), cell.n, runs, seeds, cell.best ? "true" : "false");
      if (cell.tested) {
        out += fmt::format(", \"diff\": {}, \"n_docs\": {}, \"p\": {}, \"p_holm\": {}, \"significant\": {}",
                           JsonNumber(cell.diff), cell.n_docs, JsonNumber(cell.p), JsonNumber(cell.p_holm),
                           cell.significant ? "true" : "false");
      } else if (!cell.untested.empty()) {
        out += ", \"untested\": " + JsonString(cell.untested);
      }
      out += "}";
    }
    out += "]}";
  }
  return out + "]}\n";
}

}  // namespace

std::string ShortLabel(const std::string& metric) {
  std::string rest = metric;
  if (const auto dot = metric.find('.'); dot != std::string::npos) rest = metric.substr(dot + 1);
  std::string average;
  if (const auto dot = rest.rfind('.'); dot != std::string::npos) {
    average = rest.substr(dot + 1);
    rest = rest.substr(0, dot);
  }
  std::string measure = rest, k;
  if (const auto at = rest.find('@'); at != std::string::npos) {
    measure = rest.substr(0, at);
    k = rest.substr(at);
  }
  static const std::map<std::string, std::string> kNames = {
      {"p", "P"},           {"r", "R"},
      {"f1", "F1"},         {"ap", "AP"},
      {"map", "MAP"},       {"ndcg", "nDCG"},
      {"alpha_ndcg", "\xce\xb1-nDCG"},
      {"mrr", "MRR"},       {"rprec_substr", "R-Prec"},
      {"rprec_zg", "R-Prec (ZG)"},
      {"substr_precision", "Substr P"},
      {"substr_recall", "Substr R"},
      {"substr_f1", "Substr F1"},
      {"semp", "SemP"},     {"semr", "SemR"},
      {"semf1", "SemF1"},   {"semrp", "SemR-p"},
      {"bertscore_p", "BERTScore P"},
      {"bertscore_r", "BERTScore R"},
      {"bertscore_f1", "BERTScore F1"},
      {"meteor", "METEOR"}, {"self_bleu", "Self-BLEU"},
      {"kpp", "KPP"},       {"ece", "ECE"},
      {"rouge1_f1", "ROUGE-1"},
      {"rouge2_f1", "ROUGE-2"},
      {"rougel_f1", "ROUGE-L"},
      {"cp_hooper", "CP"},  {"semcp_hooper", "SemCP"},
      {"vcp_hooper", "VCP"},
  };
  auto it = kNames.find(measure);
  // A measure without a printed name keeps its own (e.g. unique_phrase_ratio); the average is named
  // unless it is the one papers print without a word (macro, macro_hm).
  std::string label = (it == kNames.end() ? measure : it->second) + k;
  if (average == "micro") label += " (micro)";
  if (average == "macro_doc") label += " (doc)";
  if (!average.empty() && average != "micro" && average != "macro_doc" && average != "macro" && average != "macro_hm") {
    label += " (" + average + ")";
  }
  return label;
}

Status CheckRenderOptions(const Table& t, const RenderOptions& o, const OptionSpelling& sp) {
  std::set<std::string> keys;
  for (const auto& col : t.columns) {
    keys.insert(col.metric);
    keys.insert(col.dataset);
    if (!SubsetOf(col.metric).empty()) keys.insert(SubsetOf(col.metric));
  }
  for (const auto& [key, text] : o.labels) {
    if (!keys.count(key)) {
      return Error::Usage(
          fmt::format("{}label {}=...: '{}' is no metric, dataset or subset of the table (expected one of: {})",
                      sp.prefix, key, key, fmt::join(keys, ", ")));
    }
  }
  return Status::Ok();
}

Status SetLabel(RenderOptions& o, const std::string& name, const std::string& text, const OptionSpelling& sp) {
  if (name.empty() || text.empty()) {
    return Error::Usage(
        fmt::format("{}label '{}={}': expected NAME=TEXT (a metric, dataset or subset, and its printed name, "
                    "e.g. all.f1@5.macro_hm=F1@5)",
                    sp.prefix, name, text));
  }
  if (!o.labels.emplace(name, text).second) {
    return Error::Usage(fmt::format("{}label names '{}' twice", sp.prefix, name));
  }
  return Status::Ok();
}

Status SetLayout(RenderOptions& o, const std::string& layout, const OptionSpelling& sp) {
  if (layout != "datasets" && layout != "metrics") {
    return Error::Usage(
        fmt::format("{}layout must be datasets (datasets over metrics) or metrics (metrics over datasets) "
                    "(got '{}')",
                    sp.prefix, layout));
  }
  o.layout = layout;
  return Status::Ok();
}

Status SetFloat(RenderOptions& o, const std::string& env, const OptionSpelling& sp) {
  if (env != "table" && env != "table*" && env != "none") {
    return Error::Usage(fmt::format("{}float must be table, table* or none (got '{}')", sp.prefix, env));
  }
  o.float_env = env;
  return Status::Ok();
}

Status CheckRenderShape(const RenderOptions& o, const OptionSpelling& sp) {
  if (!o.caption.empty() && o.float_env == "none") {
    return Error::Usage(
        fmt::format("{0}caption needs a float (LaTeX allows \\caption only in one): drop {0}float none", sp.prefix));
  }
  if (o.format != "latex" && (o.fit || o.float_env != "table" || !o.caption.empty())) {
    return Error::Usage(
        fmt::format("{0}fit, {0}float and {0}caption shape LaTeX only (add {1} latex)", sp.prefix, sp.format));
  }
  return Status::Ok();
}

TableText FormatTableText(const Table& t, const RenderOptions& o) {
  Heads h = MakeHeads(t, o);
  Texts x = CellTexts(t, o, h);
  return TableText{std::move(h.order), std::move(h.dataset), std::move(h.group), std::move(h.label), std::move(x.cells),
                   std::move(x.note)};
}

std::string RenderTable(const Table& t, const RenderOptions& o) {
  const Heads h = MakeHeads(t, o);
  if (o.format == "json") return RenderJson(t, h);
  if (o.format == "csv") return RenderCsv(t, h);
  const Texts x = CellTexts(t, o, h);
  if (o.format == "latex") return RenderLatex(t, o, h, x);
  if (o.format == "markdown") return RenderMarkdown(t, o, h, x);
  return RenderText(t, o, h, x);
}

}  // namespace kplab::host
