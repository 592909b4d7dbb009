#include "table.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <unordered_map>

#include <fmt/format.h>

#include "compare.h"
#include "kplab/json.h"

namespace kplab::host {
namespace {

bool LowerIsBetter(const std::string& metric) {
  for (const char* m : {".ece", ".kpp", "dup_token_ratio", "self_embed_sim", "sem_diversity_index"}) {
    if (metric.find(m) != std::string::npos) return true;
  }
  return false;
}

double MeanOf(const std::vector<double>& v) {
  double s = 0;
  std::size_t n = 0;
  for (double x : v) {
    if (!std::isnan(x)) {
      s += x;
      ++n;
    }
  }
  return n ? s / static_cast<double>(n) : std::nan("");
}

double Hm(double p, double r) { return p + r > 0 ? 2 * p * r / (p + r) : 0; }

bool Same(double x, double y) { return std::abs(x - y) <= 1e-9 * std::max(1.0, std::abs(x)); }

// How a metric's run value comes from per-document columns, when it does in a way the test can redo:
// the mean of one column, or the harmonic mean of the means of a P and an R column (f1@k.macro_hm).
struct Form {
  enum Kind { kNone, kMean, kHm } kind = kNone;
  std::string a, b;  // column names (b for kHm's R)
};

Form FormOf(const std::string& metric) {
  Form f;
  const std::string hm = ".macro_hm";
  const auto at = metric.find(".f1@");
  if (metric.ends_with(hm) && at != std::string::npos) {
    const std::string subset = metric.substr(0, at);
    const std::string k = metric.substr(at + 4, metric.size() - hm.size() - at - 4);
    f.kind = Form::kHm;
    f.a = subset + ".p@" + k;
    f.b = subset + ".r@" + k;
    return f;
  }
  f.kind = Form::kMean;
  f.a = metric;
  for (const char* suffix : {".macro_doc", ".macro"}) {
    if (metric.ends_with(suffix)) f.a = metric.substr(0, metric.size() - std::string(suffix).size());
  }
  return f;
}

// A run's per-document values of `column` by document id (NaN = undefined); empty when it has none.
std::unordered_map<std::string, double> ColumnById(const RunRecord& run, const ScoreColumns& scores,
                                                   const std::string& column) {
  std::unordered_map<std::string, double> out;
  for (std::size_t c = 0; c < scores.metrics.size(); ++c) {
    if (scores.metrics[c] != column) continue;
    for (std::size_t i = 0; i < run.doc_ids.size() && i < scores.columns[c].size(); ++i) {
      out.emplace(run.doc_ids[i], scores.columns[c][i]);
    }
  }
  return out;
}

struct RunData {
  RunRecord record;
  std::vector<AggregateValue> aggregates;
  std::optional<ScoreColumns> scores;  // read when a test needs them
};

std::uint64_t SplitMix(std::uint64_t& x) {
  std::uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Paired approximate randomization over documents: each resample swaps the two systems' values of a
// document with probability 1/2 (all of its columns together) and recomputes the statistic's
// difference; p = (1 + #{|d_r| >= |d_obs|}) / (1 + R), two-sided.
double Randomization(const std::vector<double>& a1, const std::vector<double>& b1, const std::vector<double>& a2,
                     const std::vector<double>& b2, bool hm, int resamples, std::uint64_t seed, double* observed,
                     const std::function<void(double)>& charge) {
  const std::size_t n = a1.size();
  auto stat = [&](const std::vector<std::uint8_t>* swap) {
    double sa1 = 0, sb1 = 0, sa2 = 0, sb2 = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const bool s = swap && (*swap)[i];
      sa1 += s ? b1[i] : a1[i];
      sb1 += s ? a1[i] : b1[i];
      if (hm) {
        sa2 += s ? b2[i] : a2[i];
        sb2 += s ? a2[i] : b2[i];
      }
    }
    const double dn = static_cast<double>(n);
    return hm ? Hm(sa1 / dn, sa2 / dn) - Hm(sb1 / dn, sb2 / dn) : (sa1 - sb1) / dn;
  };
  const double obs = stat(nullptr);
  *observed = obs;
  const double tol = 1e-12 * std::max(1.0, std::abs(obs));
  std::vector<std::uint8_t> swap(n);
  std::uint64_t state = seed;
  int hits = 0;
  for (int r = 0; r < resamples; ++r) {
    if (charge && r % 64 == 0) charge(64.0 * static_cast<double>(n + 1));
    std::uint64_t bits = 0;
    for (std::size_t i = 0; i < n; ++i) {
      if (i % 64 == 0) bits = SplitMix(state);
      swap[i] = static_cast<std::uint8_t>((bits >> (i % 64)) & 1u);
    }
    if (std::abs(stat(&swap)) >= std::abs(obs) - tol) ++hits;
  }
  return (1.0 + hits) / (1.0 + resamples);
}

}  // namespace

Result<Table> BuildTable(RunStore& store, const TableOptions& opt) {
  if (opt.metrics.empty()) {
    return Error{"runs table needs --metrics (glob patterns over aggregate names, e.g. all.f1@5.macro_hm)",
                 ErrorKind::kUsage};
  }
  auto listed = store.ListRuns();  // newest first
  if (!listed) return listed.error();
  std::set<std::int64_t> wanted(opt.runs.begin(), opt.runs.end());
  for (std::int64_t id : opt.runs) {
    const bool exists = std::any_of(listed->begin(), listed->end(), [&](const RunSummary& r) { return r.id == id; });
    if (!exists) return Error{fmt::format("run {} not found", id), ErrorKind::kStore};
  }
  // (system, dataset) -> seed -> the newest run with that seed.
  std::map<std::pair<std::string, std::string>, std::map<std::optional<std::int64_t>, std::int64_t>> groups;
  std::set<std::string> profiles;
  std::vector<std::string> shadowed;
  for (const RunSummary& r : *listed) {
    if (!wanted.empty() && !wanted.count(r.id)) continue;
    if (r.status != "ok") {
      if (!wanted.empty()) {
        return Error{fmt::format("run {} failed, so it has no values for a table (expected runs with status ok)", r.id),
                     ErrorKind::kStore};
      }
      continue;
    }
    if (r.shard) {
      // A shard's values are over its own documents: not a leaderboard cell (`kplab runs merge` makes one).
      if (!wanted.empty()) {
        return Error{fmt::format("run {} is shard {}/{} of a run, with values over its own documents only (merge the "
                                 "shards with `kplab runs merge` and tabulate the merged run)",
                                 r.id, r.shard->index, r.shard->count),
                     ErrorKind::kUsage};
      }
      continue;
    }
    if ((opt.system && !GlobMatch(*opt.system, r.system)) || (opt.dataset && !GlobMatch(*opt.dataset, r.dataset_name)) ||
        (opt.profile && !GlobMatch(*opt.profile, r.profile))) {
      continue;
    }
    auto [it, fresh] = groups[{r.system, r.dataset_name}].emplace(r.seed, r.id);  // newest first: it stays
    if (!fresh) {
      shadowed.push_back(fmt::format("warning: run {} ({} on {}{}) is left out: run {} is newer with the same "
                                     "system, dataset and seed (choose with --runs)",
                                     r.id, r.system, r.dataset_name, r.seed ? ", seed " + std::to_string(*r.seed) : "",
                                     it->second));
    }
    profiles.insert(r.profile);
  }
  if (groups.empty()) return Error{"no stored run matches (expected runs with status ok)", ErrorKind::kUsage};

  Table t;
  t.alpha = opt.alpha;
  t.warnings = shadowed;
  if (profiles.size() > 1) {
    std::string list;
    for (const auto& p : profiles) list += (list.empty() ? "" : ", ") + p;
    t.warnings.push_back(fmt::format("warning: the table mixes runs scored under different profiles ({}); "
                                     "filter with --profile to compare like with like",
                                     list));
  }
  std::map<std::int64_t, RunData> runs;
  std::map<std::string, std::string> dataset_hash;  // a column's dataset must be one dataset
  std::vector<std::string> metric_names;            // union, in first-seen order
  std::set<std::string> systems, datasets;
  for (const auto& [key, by_seed] : groups) {
    systems.insert(key.first);
    datasets.insert(key.second);
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
        return Error{fmt::format("runs on two different datasets are both named '{}' (run {} has content sha256 "
                                 "{}...); choose the runs with --runs or --dataset",
                                 key.second, id, d.record.dataset_hash.substr(0, 12)),
                     ErrorKind::kUsage};
      }
      for (const auto& a : d.aggregates) {
        if (std::find(metric_names.begin(), metric_names.end(), a.metric) == metric_names.end()) {
          metric_names.push_back(a.metric);
        }
      }
      runs.emplace(id, std::move(d));
    }
  }
  std::vector<std::string> metrics;
  for (const std::string& pattern : opt.metrics) {
    bool any = false;
    for (const std::string& m : metric_names) {
      if (!GlobMatch(pattern, m)) continue;
      any = true;
      if (std::find(metrics.begin(), metrics.end(), m) == metrics.end()) metrics.push_back(m);
    }
    if (!any) {
      return Error{fmt::format("--metrics pattern '{}' matches no aggregate of the selected runs", pattern),
                   ErrorKind::kUsage};
    }
  }
  if (opt.baseline && !systems.count(*opt.baseline)) {
    return Error{fmt::format("baseline system '{}' has no selected run (systems: {})", *opt.baseline,
                             fmt::format("{}", fmt::join(systems, ", "))),
                 ErrorKind::kUsage};
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

  // Significance against the baseline: per cell, the seed-mean per-document values of both systems
  // (documents where every run of both has a value), tested by paired approximate randomization of the
  // metric's own statistic; Holm over the cells tested.
  if (opt.baseline) {
    t.resamples = opt.resamples;
    auto scores_of = [&](std::int64_t id) -> Result<const ScoreColumns*> {
      RunData& d = runs.at(id);
      if (!d.scores) {
        auto sc = store.GetScores(id);
        if (!sc) return sc.error();
        d.scores = std::move(*sc);
      }
      return &*d.scores;
    };
    struct Tested {
      std::size_t r, c;
    };
    std::vector<Tested> tested;
    for (std::size_t c = 0; c < t.columns.size(); ++c) {
      const TableCell& base = t.cells[0][c];
      if (!base.present) continue;
      const Form form = FormOf(t.columns[c].metric);
      // Per-document seed means of column `name` over `ids`; docs where some run has none are dropped.
      auto seed_means = [&](const std::vector<std::int64_t>& ids, const std::string& name,
                            std::unordered_map<std::string, double>* out) -> Result<bool> {
        std::unordered_map<std::string, std::pair<double, int>> acc;
        for (std::int64_t id : ids) {
          auto sc = scores_of(id);
          if (!sc) return sc.error();
          auto col = ColumnById(runs.at(id).record, **sc, name);
          if (col.empty()) return false;
          for (const auto& [doc, v] : col) {
            auto& a = acc[doc];
            if (std::isnan(v)) {
              a.second = -1000000;
            } else {
              a.first += v;
              a.second += 1;
            }
          }
        }
        for (const auto& [doc, a] : acc) {
          if (a.second == static_cast<int>(ids.size())) out->emplace(doc, a.first / static_cast<double>(ids.size()));
        }
        return true;
      };
      // The stored value must be what the form computes from the columns (else the test would test
      // something else: micro averages and custom aggregates are not tested).
      auto form_holds = [&](const std::vector<std::int64_t>& ids) -> Result<bool> {
        for (std::int64_t id : ids) {
          auto sc = scores_of(id);
          if (!sc) return sc.error();
          std::vector<double> a, b;
          for (std::size_t k = 0; k < (*sc)->metrics.size(); ++k) {
            if ((*sc)->metrics[k] == form.a) a = (*sc)->columns[k];
            if (form.kind == Form::kHm && (*sc)->metrics[k] == form.b) b = (*sc)->columns[k];
          }
          if (a.empty() || (form.kind == Form::kHm && b.empty())) return false;
          double stored = std::nan("");
          for (const auto& x : runs.at(id).aggregates) {
            if (x.metric == t.columns[c].metric) stored = x.value;
          }
          const double redone = form.kind == Form::kHm ? Hm(MeanOf(a), MeanOf(b)) : MeanOf(a);
          if (!Same(redone, stored)) return false;
        }
        return true;
      };
      auto base_ok = form_holds(base.run_ids);
      if (!base_ok) return base_ok.error();
      if (!*base_ok) continue;
      std::unordered_map<std::string, double> ba, bb;
      if (auto st = seed_means(base.run_ids, form.a, &ba); !st) return st.error();
      if (form.kind == Form::kHm) {
        if (auto st = seed_means(base.run_ids, form.b, &bb); !st) return st.error();
      }
      for (std::size_t r = 1; r < t.systems.size(); ++r) {
        TableCell& cell = t.cells[r][c];
        if (!cell.present) continue;
        auto ok = form_holds(cell.run_ids);
        if (!ok) return ok.error();
        if (!*ok) continue;
        std::unordered_map<std::string, double> sa, sb;
        if (auto st = seed_means(cell.run_ids, form.a, &sa); !st) return st.error();
        if (form.kind == Form::kHm) {
          if (auto st = seed_means(cell.run_ids, form.b, &sb); !st) return st.error();
        }
        std::vector<double> a1, b1, a2, b2;
        std::vector<std::string> docs;
        for (const auto& [doc, v] : sa) docs.push_back(doc);
        std::sort(docs.begin(), docs.end());  // a fixed order: the p-value does not depend on hashing
        for (const auto& doc : docs) {
          auto x = ba.find(doc);
          if (x == ba.end()) continue;
          if (form.kind == Form::kHm) {
            auto y = sb.find(doc);
            auto z = bb.find(doc);
            if (y == sb.end() || z == bb.end()) continue;
            a2.push_back(y->second);
            b2.push_back(z->second);
          }
          a1.push_back(sa.at(doc));
          b1.push_back(x->second);
        }
        if (a1.empty()) continue;
        cell.tested = true;
        cell.n_docs = a1.size();
        // Seeded by what the cell is, not where it sits: adding a column does not change its p-value.
        const std::uint64_t key = std::hash<std::string>{}(t.systems[r] + '\x1f' + t.columns[c].dataset + '\x1f' +
                                                           t.columns[c].metric);
        cell.p = Randomization(a1, b1, a2, b2, form.kind == Form::kHm, opt.resamples, opt.seed ^ (key * 0x9e3779b97f4a7c15ULL),
                               &cell.diff, opt.charge);
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
  }
  return t;
}

namespace {

// The escaping functions below first show controls and invalid bytes as escapes (kplab/safe_text.h,
// TerminalText): a cell is one line of safe text in every format.
std::string LatexEscape(const std::string& raw) {
  const std::string s = TerminalText(raw);
  std::string out;
  for (char ch : s) {
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

}  // namespace

std::string RenderTable(const Table& t, const RenderOptions& o) {
  auto scale = [&](const TableColumn& col) { return o.percent && col.fraction ? 100.0 : 1.0; };
  auto num = [&](double v) { return std::isnan(v) ? std::string("nan") : fmt::format("{:.{}f}", v, o.decimals); };
  const std::string marker = "*";
  std::string out;
  if (o.format == "json") {
    out += "{\"baseline\": " + (t.baseline ? JsonString(*t.baseline) : std::string("null")) +
           ", \"family\": " + std::to_string(t.family) + ", \"resamples\": " + std::to_string(t.resamples) +
           ", \"alpha\": " + JsonNumber(t.alpha) + ", \"columns\": [";
    for (std::size_t c = 0; c < t.columns.size(); ++c) {
      out += (c ? ", " : "") + fmt::format("{{\"dataset\": {}, \"metric\": {}, \"lower_better\": {}}}",
                                          JsonString(t.columns[c].dataset), JsonString(t.columns[c].metric),
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
          runs += (i ? ", " : "") + std::to_string(cell.run_ids[i]);
          seeds += (i ? ", " : "") + (cell.seeds[i] ? std::to_string(*cell.seeds[i]) : std::string("null"));
        }
        out += fmt::format("{{\"mean\": {}, \"sd\": {}, \"n\": {}, \"runs\": [{}], \"seeds\": [{}], \"best\": {}",
                           JsonNumber(cell.mean), JsonNumber(cell.sd), cell.n, runs, seeds, cell.best ? "true" : "false");
        if (cell.tested) {
          out += fmt::format(", \"diff\": {}, \"n_docs\": {}, \"p\": {}, \"p_holm\": {}, \"significant\": {}",
                             JsonNumber(cell.diff), cell.n_docs, JsonNumber(cell.p), JsonNumber(cell.p_holm),
                             cell.significant ? "true" : "false");
        }
        out += "}";
      }
      out += "]}";
    }
    return out + "]}\n";
  }
  if (o.format == "csv") {
    out += "system,dataset,metric,mean,sd,n,best,p,p_holm,significant\n";
    for (std::size_t r = 0; r < t.systems.size(); ++r) {
      for (std::size_t c = 0; c < t.columns.size(); ++c) {
        const TableCell& cell = t.cells[r][c];
        if (!cell.present) continue;
        out += fmt::format("{},{},{},{},{},{},{},{},{},{}\n", CsvQuote(t.systems[r]), CsvQuote(t.columns[c].dataset),
                           CsvQuote(t.columns[c].metric),
                           fmt::format("{}", cell.mean), fmt::format("{}", cell.sd), cell.n, cell.best ? 1 : 0,
                           cell.tested ? fmt::format("{}", cell.p) : "", cell.tested ? fmt::format("{}", cell.p_holm) : "",
                           cell.tested ? (cell.significant ? "1" : "0") : "");
      }
    }
    return out;
  }
  // Cell texts for table, markdown and latex.
  const bool latex = o.format == "latex", md = o.format == "markdown";
  auto cell_text = [&](std::size_t r, std::size_t c) {
    const TableCell& cell = t.cells[r][c];
    if (!cell.present) return std::string(latex ? "--" : "-");
    const double k = scale(t.columns[c]);
    std::string s = num(cell.mean * k);
    if (cell.n > 1) s += (latex ? " $\\pm$ " : " ± ") + num(cell.sd * k) + (latex ? "\\,$_{" : " (") +
                         std::to_string(cell.n) + (latex ? "}$" : ")");
    if (cell.significant) s += latex ? "$^{" + marker + "}$" : md ? "\\" + marker : marker;
    if (cell.best) s = latex ? "\\textbf{" + s + "}" : md ? "**" + s + "**" : s;
    return s;
  };
  auto header = [&](std::size_t c, bool esc) {
    const std::string unit = o.percent && t.columns[c].fraction ? " (%)" : "";
    const std::string text = t.columns[c].metric + unit;
    return esc ? (latex ? LatexEscape(text) : MdEscape(text)) : text;
  };
  std::string note;
  if (t.baseline) {
    note = fmt::format("{} significantly different from {} (paired approximate randomization over documents of the "
                       "seed means, {} resamples; Holm over the {} tested cells; alpha {})",
                       marker, *t.baseline, t.resamples, t.family, t.alpha);
  }
  if (latex) {
    out += "\\begin{tabular}{l" + std::string(t.columns.size(), 'r') + "}\n\\toprule\n";
    // Dataset header spanning its metrics.
    std::string line = "";
    for (std::size_t c = 0; c < t.columns.size();) {
      std::size_t e = c;
      while (e < t.columns.size() && t.columns[e].dataset == t.columns[c].dataset) ++e;
      line += fmt::format(" & \\multicolumn{{{}}}{{c}}{{{}}}", e - c, LatexEscape(t.columns[c].dataset));
      c = e;
    }
    out += line + " \\\\\n";
    for (std::size_t c = 0, col = 2; c < t.columns.size();) {
      std::size_t e = c;
      while (e < t.columns.size() && t.columns[e].dataset == t.columns[c].dataset) ++e;
      out += fmt::format("\\cmidrule(lr){{{}-{}}}", col, col + e - c - 1);
      col += e - c;
      c = e;
    }
    out += "\nSystem";
    for (std::size_t c = 0; c < t.columns.size(); ++c) out += " & " + header(c, true);
    out += " \\\\\n\\midrule\n";
    for (std::size_t r = 0; r < t.systems.size(); ++r) {
      out += LatexEscape(t.systems[r]);
      for (std::size_t c = 0; c < t.columns.size(); ++c) out += " & " + cell_text(r, c);
      out += " \\\\\n";
      if (t.baseline && r == 0 && t.systems.size() > 1) out += "\\midrule\n";
    }
    out += "\\bottomrule\n\\end{tabular}\n";
    if (!note.empty()) out += "% " + LatexEscape(note) + "\n";
    return out;
  }
  if (md) {
    out += "| system |";
    for (std::size_t c = 0; c < t.columns.size(); ++c) out += " " + MdEscape(t.columns[c].dataset) + " " + header(c, true) + " |";
    out += "\n|---|";
    for (std::size_t c = 0; c < t.columns.size(); ++c) out += "---:|";
    out += "\n";
    for (std::size_t r = 0; r < t.systems.size(); ++r) {
      out += "| " + MdEscape(t.systems[r]) + " |";
      for (std::size_t c = 0; c < t.columns.size(); ++c) out += " " + cell_text(r, c) + " |";
      out += "\n";
    }
    if (!note.empty()) out += "\n" + MdEscape(note) + "\n";
    return out;
  }
  // Plain aligned text: two header lines (dataset, metric).
  std::vector<std::size_t> width(t.columns.size() + 1, 6);
  for (const auto& s : t.systems) width[0] = std::max(width[0], s.size());
  for (std::size_t c = 0; c < t.columns.size(); ++c) {
    width[c + 1] = std::max({t.columns[c].dataset.size(), header(c, false).size()});
    for (std::size_t r = 0; r < t.systems.size(); ++r) width[c + 1] = std::max(width[c + 1], cell_text(r, c).size());
  }
  auto pad = [](const std::string& raw, std::size_t w, bool right) {
    const std::string s = TerminalText(raw);  // one line of safe text (kplab/safe_text.h)
    // Width in characters: "±" is two bytes.
    std::size_t len = 0;
    for (unsigned char ch : s) len += (ch & 0xC0) != 0x80;
    const std::string fill(w > len ? w - len : 0, ' ');
    return right ? fill + s : s + fill;
  };
  out += pad("", width[0], false);
  for (std::size_t c = 0; c < t.columns.size(); ++c) out += "  " + pad(t.columns[c].dataset, width[c + 1], true);
  out += "\n" + pad("system", width[0], false);
  for (std::size_t c = 0; c < t.columns.size(); ++c) out += "  " + pad(header(c, false), width[c + 1], true);
  out += "\n";
  for (std::size_t r = 0; r < t.systems.size(); ++r) {
    out += pad(t.systems[r], width[0], false);
    for (std::size_t c = 0; c < t.columns.size(); ++c) out += "  " + pad(cell_text(r, c), width[c + 1], true);
    out += "\n";
  }
  if (!note.empty()) out += TerminalText(note) + "\n";
  out += "mean ± sd (number of seeds) when a system has several; the best value of each column is marked in "
         "markdown and latex.\n";
  return out;
}

}  // namespace kplab::host
