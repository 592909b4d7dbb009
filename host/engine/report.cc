#include "report.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "compare.h"
#include "drill.h"
#include "kplab/json.h"
#include "kplab/match.h"
#include "kplab/stats.h"
#include "kplab/svg.h"
#include "report_assets.h"  // generated from report_assets/ (host/CMakeLists.txt)
#include "table.h"

namespace kplab::host {
namespace {

// Text as HTML: controls and invalid bytes first shown as escapes (kplab/safe_text.h), then the markup
// characters as entities.
std::string Html(std::string_view raw) {
  const std::string s = TerminalText(raw);
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out.push_back(c);
    }
  }
  return out;
}

// JSON for a <script> block: no '<', '>' or '&' at all (they only occur inside strings, where \u003c is
// the same character), so neither "</script>" nor "<!--" can change how the HTML parser reads it.
std::string ScriptSafe(std::string json) {
  std::string out;
  for (char ch : json) {
    if (ch == '<') {
      out += "\\u003c";
    } else if (ch == '>') {
      out += "\\u003e";
    } else if (ch == '&') {
      out += "\\u0026";
    } else {
      out.push_back(ch);
    }
  }
  return out;
}

template <std::size_t N>
std::string_view Asset(const unsigned char (&bytes)[N]) {
  return {reinterpret_cast<const char*>(bytes), N - 1};
}

// The template with each {{name}} replaced by values[name], in one pass (a value is never scanned for
// placeholders). A placeholder without a value, or a value without its placeholder, is kplab's own
// mistake: an internal error rather than a page with a hole.
Result<std::string> Fill(std::string_view tmpl, const std::map<std::string, std::string>& values) {
  std::string out;
  std::map<std::string, int> used;
  std::size_t at = 0;
  while (true) {
    const std::size_t open = tmpl.find("{{", at);
    if (open == std::string_view::npos) break;
    const std::size_t close = tmpl.find("}}", open);
    if (close == std::string_view::npos) break;
    const std::string name(tmpl.substr(open + 2, close - open - 2));
    auto it = values.find(name);
    if (it == values.end()) return Error::Internal("report template: no value for {{" + name + "}}");
    out.append(tmpl.substr(at, open - at));
    out += it->second;
    ++used[name];
    at = close + 2;
  }
  out.append(tmpl.substr(at));
  for (const auto& [name, value] : values) {
    if (!used.count(name)) return Error::Internal("report template: no place for {{" + name + "}}");
  }
  return out;
}

struct LoadedRun {
  RunRecord record;
  ScoreColumns scores;
  std::vector<AggregateValue> aggregates;
};

Result<std::vector<LoadedRun>> LoadRuns(RunStore& store, const std::vector<std::int64_t>& ids) {
  std::vector<LoadedRun> runs;
  for (std::int64_t id : ids) {
    auto r = store.GetRun(id);
    if (!r) return r.error();
    if (r->status != "ok") {
      return Error::Store(
          fmt::format("run {} failed, so it has no scores to report (expected runs with status ok)", id));
    }
    auto s = store.GetScores(id);
    if (!s) return s.error();
    auto a = store.GetAggregates(id);
    if (!a) return a.error();
    runs.push_back({std::move(*r), std::move(*s), std::move(*a)});
  }
  return runs;
}

// --metrics, else the usual F1 columns that some run has, else the first run's first aggregate.
std::vector<std::string> LeaderboardMetrics(const ReportOptions& opt, const std::vector<LoadedRun>& runs) {
  if (!opt.metrics.empty()) return opt.metrics;
  std::vector<std::string> metrics;
  for (const char* m : {"all.f1@5.macro_hm", "all.f1@M.macro_hm", "present.f1@M.macro_hm", "absent.r@10.macro"}) {
    for (const auto& r : runs) {
      if (std::any_of(r.aggregates.begin(), r.aggregates.end(),
                      [&](const AggregateValue& v) { return v.metric == m; })) {
        metrics.emplace_back(m);
        break;
      }
    }
  }
  if (metrics.empty())
    metrics.push_back(runs.front().aggregates.empty() ? "*" : runs.front().aggregates.front().metric);
  return metrics;
}

// The leaderboard as `kplab runs table` prints it (labels, groups, percentages, decimals, ± sd (n), *),
// the best value of each column in bold; data-value holds the stored mean.
std::string LeaderboardHtml(const Table& t, const TableText& x) {
  std::string h = "<table class=\"board\"><thead>";
  // Header rows as the text table's: a head spans the neighbouring columns that agree on it and on every
  // level above it; the labels (the last level) never span.
  std::vector<const std::vector<std::string>*> levels;
  for (const auto* level : {&x.dataset, &x.group, &x.label}) {
    if (std::any_of(level->begin(), level->end(), [](const std::string& s) { return !s.empty(); })) {
      levels.push_back(level);
    }
  }
  for (std::size_t k = 0; k < levels.size(); ++k) {
    const bool last = k + 1 == levels.size();
    h += "<tr><th>" + std::string(last ? "system" : "") + "</th>";
    for (std::size_t i = 0; i < x.order.size();) {
      std::size_t e = i + 1;
      while (!last && e < x.order.size() && std::all_of(levels.begin(), levels.begin() + k + 1, [&](const auto* l) {
        return (*l)[x.order[e]] == (*l)[x.order[i]];
      })) {
        ++e;
      }
      h += fmt::format("<th colspan=\"{}\">{}</th>", e - i, Html((*levels[k])[x.order[i]]));
      i = e;
    }
    h += "</tr>";
  }
  h += "</thead><tbody>";
  bool any_best = false;
  for (std::size_t r = 0; r < t.systems.size(); ++r) {
    h += "<tr><td>" + Html(t.systems[r]) + "</td>";
    for (std::size_t c : x.order) {
      const TableCell& cell = t.cells[r][c];
      if (!cell.present) {
        h += "<td>" + Html(x.cells[r][c]) + "</td>";
        continue;
      }
      any_best = any_best || cell.best;
      h += fmt::format("<td class=\"{}\" data-value=\"{}\">{}</td>", cell.best ? "best" : "", JsonNumber(cell.mean),
                       Html(x.cells[r][c]));
    }
    h += "</tr>";
  }
  h += "</tbody></table>";
  std::string note = x.note;
  if (any_best) note += std::string(note.empty() ? "" : " ") + "The best value of each column is in bold.";
  if (!note.empty()) h += "<p class=\"note\">" + Html(note) + "</p>";
  return h;
}

// The runs on one dataset (one content hash), in the order given, and the two compared by default.
struct DatasetRuns {
  std::string name, hash;
  std::vector<std::size_t> runs;  // indices into the loaded runs
  std::size_t a = 0, b = 0;       // the default runs A and B (indices into the loaded runs)
  std::string defaults;           // why A and B, one sentence
};

std::vector<DatasetRuns> GroupByDataset(const std::vector<LoadedRun>& runs) {
  std::vector<DatasetRuns> groups;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const RunRecord& r = runs[i].record;
    auto it =
        std::find_if(groups.begin(), groups.end(), [&](const DatasetRuns& g) { return g.hash == r.dataset_hash; });
    if (it == groups.end()) it = groups.insert(groups.end(), DatasetRuns{r.dataset_name, r.dataset_hash, {}, 0, 0, ""});
    it->runs.push_back(i);
  }
  return groups;
}

// The runs compared by default (docs/report.md): A is the baseline — the first run (in the order given)
// of the --baseline system when it has one on this dataset, else the dataset's first run; B is the first
// run of the best other system by the headline metric (the leaderboard's first metric with a value on
// this dataset; its mean over the system's runs, higher is better unless the metric is lower-better;
// ties go to the system given first). Without another system B is the baseline system's next run, or A.
void ChooseDefaults(DatasetRuns& g, const std::vector<LoadedRun>& runs, const Table& t, const TableText& x,
                    const ReportOptions& opt) {
  auto first_of = [&](const std::string& system) -> std::optional<std::size_t> {
    for (std::size_t i : g.runs) {
      if (runs[i].record.system == system) return i;
    }
    return std::nullopt;
  };
  const auto named = opt.baseline.empty() ? std::nullopt : first_of(opt.baseline);
  g.a = named ? *named : g.runs.front();
  const std::string& base_system = runs[g.a].record.system;
  std::string why_a =
      named ? fmt::format("run {} of the baseline {} (--baseline)", runs[g.a].record.id, base_system)
            : fmt::format("run {} ({}), the first run given on {}", runs[g.a].record.id, base_system, g.name);
  std::optional<std::size_t> column;
  for (std::size_t c : x.order) {
    if (!column && t.columns[c].dataset == g.name) column = c;
  }
  std::optional<std::size_t> best, best_row;
  for (std::size_t i : g.runs) {
    const std::string& system = runs[i].record.system;
    if (system == base_system || first_of(system) != i) continue;
    if (!best) best = i;
    if (!column) continue;
    const auto row =
        static_cast<std::size_t>(std::find(t.systems.begin(), t.systems.end(), system) - t.systems.begin());
    const TableCell& cell = t.cells[row][*column];
    if (!cell.present || std::isnan(cell.mean)) continue;
    const TableCell* held = best_row ? &t.cells[*best_row][*column] : nullptr;
    if (!held || (t.columns[*column].lower_better ? cell.mean < held->mean : cell.mean > held->mean)) {
      best = i;
      best_row = row;
    }
  }
  std::string why_b;
  if (best) {
    g.b = *best;
    why_b = best_row ? fmt::format("run {} of {}, the best other system by {} ({}: {})", runs[g.b].record.id,
                                   runs[g.b].record.system, t.columns[*column].metric, x.label[*column],
                                   x.cells[*best_row][*column])
                     : fmt::format("run {} of {}, the first other system given (no headline value to rank by)",
                                   runs[g.b].record.id, runs[g.b].record.system);
  } else {
    g.b = g.a;
    for (std::size_t i : g.runs) {
      if (g.b == g.a && i != g.a && runs[i].record.system == base_system) g.b = i;
    }
    why_b = g.b == g.a ? "the same run (no other run on this dataset)"
                       : fmt::format("run {}, another run of {} (no other system on this dataset)", runs[g.b].record.id,
                                     base_system);
  }
  g.defaults = "By default A is " + why_a + " and B is " + why_b + ".";
}

// One colour per system, the same in every figure: matplotlib's tab10 in the leaderboard's system order.
std::string SystemColor(const Table& t, const std::string& system) {
  static const char* const kTab10[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                       "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
  const auto i = static_cast<std::size_t>(std::find(t.systems.begin(), t.systems.end(), system) - t.systems.begin());
  return kTab10[i % 10];
}

std::string Swatch(const std::string& color, const std::string& label) {
  return fmt::format("<span class=\"swatch\" style=\"background:{}\"></span>{}", color, Html(label));
}

// Per-document distributions of the document metric, one box per run on this dataset, coloured by system.
std::string BoxplotFigure(const DatasetRuns& g, const std::vector<LoadedRun>& runs, const Table& t,
                          const ReportOptions& opt) {
  svg::BoxplotSpec box;
  box.title = fmt::format("per-document {} on {}", opt.doc_metric, g.name);
  box.ylabel = opt.doc_metric;
  box.width = 720;
  std::vector<std::string> systems;
  for (std::size_t i : g.runs) {
    const auto& sc = runs[i].scores;
    auto it = std::find(sc.metrics.begin(), sc.metrics.end(), opt.doc_metric);
    if (it == sc.metrics.end()) continue;
    svg::Group group;
    group.label = fmt::format("{} #{}", runs[i].record.system, runs[i].record.id);
    group.color = SystemColor(t, runs[i].record.system);
    for (double v : sc.columns[static_cast<std::size_t>(it - sc.metrics.begin())]) {
      if (!std::isnan(v)) group.values.push_back(v);
    }
    if (group.values.empty()) continue;
    box.groups.push_back(std::move(group));
    if (std::find(systems.begin(), systems.end(), runs[i].record.system) == systems.end()) {
      systems.push_back(runs[i].record.system);
    }
  }
  if (box.groups.empty()) return "";
  auto s = svg::Boxplot(box);
  if (!s) return "";
  std::string legend;
  for (const auto& system : systems) legend += Swatch(SystemColor(t, system), system);
  return "<figure class=\"boxplot\">" + *s + "<figcaption><div class=\"legend\">Colour: the system" + legend +
         "</div>One box per run on " + Html(g.name) +
         " (named under it, with its run id): the box spans the first "
         "to the third quartile of the documents' " +
         Html(opt.doc_metric) +
         ", the dark line is the median, the "
         "whiskers reach the most extreme values within 1.5 times the box's height, and the circles are the values "
         "beyond them.</figcaption></figure>";
}

// Spearman correlations between the per-document all.* metrics of one run (those that vary, at most 12).
std::string HeatmapFigure(const DatasetRuns& g, const LoadedRun& run) {
  const auto& sc = run.scores;
  std::vector<std::size_t> cols;
  for (std::size_t c = 0; c < sc.metrics.size() && cols.size() < 12; ++c) {
    if (!sc.metrics[c].starts_with("all.")) continue;
    const auto& v = sc.columns[c];
    bool varies = false;
    for (double x : v) varies = varies || (!std::isnan(x) && x != v.front());
    if (varies) cols.push_back(c);
  }
  if (cols.size() < 2) return "";
  svg::HeatmapSpec hm;
  hm.title = fmt::format("Spearman correlations between per-document metrics: run {} ({} on {})", run.record.id,
                         run.record.system, g.name);
  hm.legend = "Spearman ρ";
  for (std::size_t c : cols) {
    hm.rows.push_back(sc.metrics[c]);
    hm.cols.push_back(sc.metrics[c]);
  }
  for (std::size_t a : cols) {
    std::vector<double> row;
    for (std::size_t b : cols) {
      std::vector<double> x, y;
      for (std::size_t i = 0; i < sc.columns[a].size(); ++i) {
        if (std::isnan(sc.columns[a][i]) || std::isnan(sc.columns[b][i])) continue;
        x.push_back(sc.columns[a][i]);
        y.push_back(sc.columns[b][i]);
      }
      auto r = stats::Spearman(x, y);
      row.push_back(r ? r->r : std::nan(""));
    }
    hm.values.push_back(std::move(row));
  }
  auto s = svg::Heatmap(hm);
  if (!s) return "";
  const std::string legend = Swatch(svg::PaletteColor(hm.palette, 0), "ρ = −1") +
                             Swatch(svg::PaletteColor(hm.palette, 0.5), "ρ = 0") +
                             Swatch(svg::PaletteColor(hm.palette, 1), "ρ = 1");
  return "<figure class=\"heatmap\">" + *s + "<figcaption><div class=\"legend\">Colour: Spearman's ρ" + legend +
         " (the scale at the right)</div>Each cell is the rank correlation over the documents of " + Html(g.name) +
         " between two per-document metrics of run " + std::to_string(run.record.id) +
         " (run A by default), with its value written in it.</figcaption></figure>";
}

// A phrase's first occurrence in the text as [start, length], or null.
std::string Span(const Corpus& c, const Document& d, const Keyphrase* kp) {
  if (!d.has_text) return "null";
  auto at = c.FirstOccurrence(d, kp->stems());
  return at ? fmt::format("[{},{}]", *at, kp->stems().size()) : "null";
}

// One run's view of document d: its predictions (matched or not), which references it matched, its score.
std::string RunDocJson(const Corpus& c, std::size_t d, const LoadedRun& run, const std::string& doc_metric) {
  const Document& doc = c.docs[d];
  const auto& preds = doc.pred_view(0);
  const auto& refs = doc.ref_view(0);
  const auto pairs = ExactMatchPairs(preds, refs);
  std::string p = "[";
  for (std::size_t i = 0; i < preds.size(); ++i) {
    bool m = false;
    for (std::size_t j = 0; j < refs.size(); ++j) m = m || pairs[i * refs.size() + j];
    p += fmt::format("{}{{\"s\": {}, \"present\": {}, \"matched\": {}, \"span\": {}}}", i ? "," : "",
                     JsonString(preds[i]->surface()), preds[i]->present() ? "true" : "false", m ? "true" : "false",
                     Span(c, doc, preds[i]));
  }
  p += "]";
  std::string matched = "[";
  for (std::size_t j = 0; j < refs.size(); ++j) {
    bool m = false;
    for (std::size_t i = 0; i < preds.size(); ++i) m = m || pairs[i * refs.size() + j];
    matched += (j ? "," : "") + std::string(m ? "1" : "0");
  }
  matched += "]";
  const auto& sc = run.scores;
  auto it = std::find(sc.metrics.begin(), sc.metrics.end(), doc_metric);
  const double v =
      it == sc.metrics.end() ? std::nan("") : sc.columns[static_cast<std::size_t>(it - sc.metrics.begin())][d];
  return fmt::format("{{\"preds\": {}, \"refs_matched\": {}, \"score\": {}}}", p, matched, JsonNumber(v));
}

// The document's title as the dataset gives it (the source's title section, as the profile tokenized it),
// else its id.
std::string Title(const Corpus& c, const Document& doc) {
  std::string title;
  for (std::uint32_t t = 0; t < doc.title_end(); ++t) {
    if (t) title += ' ';
    title += c.lex.Str(doc.src_tokens()[t]);
  }
  return title.empty() ? doc.id : title;
}

// Document d of the dataset: its text, references and every run's view of it.
std::string DocJson(const std::vector<Corpus>& corpora, std::size_t d, const DatasetRuns& g,
                    const std::vector<LoadedRun>& runs, const std::string& doc_metric) {
  const Corpus& base = corpora.front();
  const Document& doc = base.docs[d];
  std::string text = "[";
  for (std::size_t t = 0; t < doc.src_tokens().size(); ++t) {
    text += (t ? "," : "") + JsonString(base.lex.Str(doc.src_tokens()[t]));
  }
  text += "]";
  std::string refs = "[";
  for (std::size_t j = 0; j < doc.ref_view(0).size(); ++j) {
    const Keyphrase* kp = doc.ref_view(0)[j];
    refs += fmt::format("{}{{\"s\": {}, \"present\": {}, \"span\": {}}}", j ? "," : "", JsonString(kp->surface()),
                        kp->present() ? "true" : "false", Span(base, doc, kp));
  }
  refs += "]";
  std::string per_run = "{";
  for (std::size_t k = 0; k < g.runs.size(); ++k) {
    const LoadedRun& run = runs[g.runs[k]];
    per_run += fmt::format("{}\"{}\": {}", k ? "," : "", run.record.id, RunDocJson(corpora[k], d, run, doc_metric));
  }
  per_run += "}";
  return fmt::format("{{\"id\": {}, \"title\": {}, \"has_text\": {}, \"text\": {}, \"refs\": {}, \"runs\": {}}}",
                     JsonString(doc.id), JsonString(Title(base, doc)), doc.has_text ? "true" : "false", text, refs,
                     per_run);
}

// The dataset's entry of the page's data: its runs, the default pair and every document.
Result<std::string> DatasetJson(const DatasetRuns& g, const std::vector<LoadedRun>& runs,
                                const std::string& doc_metric) {
  std::vector<Corpus> corpora;
  for (std::size_t i : g.runs) {
    auto c = ReloadRunCorpus(runs[i].record);
    if (!c) return c.error();
    corpora.push_back(std::move(*c));
  }
  std::string list = "[";
  for (std::size_t k = 0; k < g.runs.size(); ++k) {
    const RunRecord& r = runs[g.runs[k]].record;
    list += fmt::format("{}{{\"id\": {}, \"system\": {}, \"seed\": {}}}", k ? ", " : "", r.id, JsonString(r.system),
                        r.seed ? std::to_string(*r.seed) : "null");
  }
  list += "]";
  std::string docs = "[";
  for (std::size_t d = 0; d < corpora.front().docs.size(); ++d) {
    docs += (d ? ",\n" : "") + DocJson(corpora, d, g, runs, doc_metric);
  }
  docs += "]";
  return fmt::format("{{\"name\": {}, \"runs\": {}, \"a\": {}, \"b\": {}, \"docs\": {}}}", JsonString(g.name), list,
                     runs[g.a].record.id, runs[g.b].record.id, docs);
}

std::string RunsListHtml(const std::vector<LoadedRun>& runs) {
  std::string h = "<ul class=\"runs\">";
  for (const auto& run : runs) {
    const RunRecord& r = run.record;
    h += fmt::format("<li>run {}: {} on {}{} (profile {}, {} documents)</li>", r.id, Html(r.system),
                     Html(r.dataset_name), r.seed ? fmt::format(", seed {}", *r.seed) : "", Html(r.profile),
                     r.doc_ids.size());
  }
  return h + "</ul>";
}

}  // namespace

Result<std::string> BuildReport(RunStore& store, const ReportOptions& opt) {
  if (opt.runs.empty()) return Error::Usage("report needs at least one run id");
  auto runs = LoadRuns(store, opt.runs);
  if (!runs) return runs.error();
  // The leaderboard over exactly these runs, printed as `kplab runs table` prints it.
  TableOptions topt;
  topt.runs = opt.runs;
  topt.metrics = LeaderboardMetrics(opt, *runs);
  if (!opt.baseline.empty()) topt.baseline = opt.baseline;
  topt.resamples = 1999;
  auto table = BuildTable(store, topt);
  if (!table) return table.error();
  const TableText text = FormatTableText(*table, RenderOptions{});

  // One section per dataset (its figures and documents), in the order the runs were given.
  std::vector<DatasetRuns> groups = GroupByDataset(*runs);
  std::string sections, data = "{\"doc_metric\": " + JsonString(opt.doc_metric) + ", \"datasets\": [";
  for (std::size_t k = 0; k < groups.size(); ++k) {
    DatasetRuns& g = groups[k];
    ChooseDefaults(g, *runs, *table, text, opt);
    auto json = DatasetJson(g, *runs, opt.doc_metric);
    if (!json) return json.error();
    data += (k ? ",\n" : "") + *json;
    auto section = Fill(Asset(report_assets::k_dataset_html),
                        {{"index", std::to_string(k)},
                         {"heading", Html("Dataset: " + g.name)},
                         {"dataset", Html(g.name)},
                         {"doc_metric", Html(opt.doc_metric)},
                         {"defaults", Html(g.defaults)},
                         {"figures", BoxplotFigure(g, *runs, *table, opt) + HeatmapFigure(g, (*runs)[g.a])}});
    if (!section) return section.error();
    sections += *section;
  }
  data += "]}";
  return Fill(Asset(report_assets::k_report_html), {{"title", Html(opt.title)},
                                                    {"css", std::string(Asset(report_assets::k_report_css))},
                                                    {"runs", RunsListHtml(*runs)},
                                                    {"leaderboard", LeaderboardHtml(*table, text)},
                                                    {"datasets", sections},
                                                    {"data", ScriptSafe(data)},
                                                    {"js", std::string(Asset(report_assets::k_report_js))}});
}

}  // namespace kplab::host
