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
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out.push_back(c);
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

std::string LeaderboardHtml(const Table& t) {
  std::string h = "<table class=\"board\"><thead><tr><th>system</th>";
  for (const auto& c : t.columns) h += "<th>" + Html(c.dataset) + "<br>" + Html(c.metric) + "</th>";
  h += "</tr></thead><tbody>";
  for (std::size_t r = 0; r < t.systems.size(); ++r) {
    h += "<tr><td>" + Html(t.systems[r]) + "</td>";
    for (std::size_t c = 0; c < t.columns.size(); ++c) {
      const TableCell& cell = t.cells[r][c];
      if (!cell.present) {
        h += "<td>-</td>";
        continue;
      }
      std::string text = fmt::format("{:.4f}", cell.mean);
      if (cell.n > 1) text += fmt::format(" ± {:.4f} ({})", cell.sd, cell.n);
      if (cell.significant) text += "*";
      h += fmt::format("<td class=\"{}\" data-value=\"{}\">{}</td>", cell.best ? "best" : "", JsonNumber(cell.mean),
                       Html(text));
    }
    h += "</tr>";
  }
  h += "</tbody></table>";
  if (t.baseline) {
    h += fmt::format("<p class=\"note\">* differs from {} (paired approximate randomization over documents of the "
                     "seed means, {} resamples, Holm over {} cells, alpha {}).</p>",
                     Html(*t.baseline), t.resamples, t.family, t.alpha);
  }
  return h;
}

}  // namespace

Result<std::string> BuildReport(RunStore& store, const ReportOptions& opt) {
  if (opt.runs.empty()) return Error{"report needs at least one run id", ErrorKind::kUsage};
  std::vector<RunRecord> records;
  std::vector<ScoreColumns> scores;
  std::vector<std::vector<AggregateValue>> aggs;
  for (std::int64_t id : opt.runs) {
    auto r = store.GetRun(id);
    if (!r) return r.error();
    if (r->status != "ok") {
      return Error{fmt::format("run {} failed, so it has no scores to report (expected runs with status ok)", id),
                   ErrorKind::kStore};
    }
    auto s = store.GetScores(id);
    if (!s) return s.error();
    auto a = store.GetAggregates(id);
    if (!a) return a.error();
    records.push_back(std::move(*r));
    scores.push_back(std::move(*s));
    aggs.push_back(std::move(*a));
  }
  // Leaderboard over exactly these runs.
  TableOptions topt;
  topt.runs = opt.runs;
  topt.metrics = opt.metrics;
  if (topt.metrics.empty()) {
    for (const char* m : {"all.f1@5.macro_hm", "all.f1@M.macro_hm", "present.f1@M.macro_hm", "absent.r@10.macro"}) {
      for (const auto& a : aggs) {
        if (std::any_of(a.begin(), a.end(), [&](const AggregateValue& v) { return v.metric == m; })) {
          topt.metrics.emplace_back(m);
          break;
        }
      }
    }
    if (topt.metrics.empty()) topt.metrics.push_back(aggs.front().empty() ? "*" : aggs.front().front().metric);
  }
  if (!opt.baseline.empty()) topt.baseline = opt.baseline;
  topt.resamples = 1999;
  auto table = BuildTable(store, topt);
  if (!table) return table.error();

  // Figures: per-document distributions of doc_metric per run; correlations between the first run's
  // per-document metrics (Spearman).
  std::string figures;
  {
    svg::BoxplotSpec box;
    box.title = "per-document " + opt.doc_metric;
    box.ylabel = opt.doc_metric;
    box.width = 720;
    for (std::size_t i = 0; i < records.size(); ++i) {
      const auto& sc = scores[i];
      auto it = std::find(sc.metrics.begin(), sc.metrics.end(), opt.doc_metric);
      if (it == sc.metrics.end()) continue;
      svg::Group g;
      g.label = fmt::format("{} #{}", records[i].system, records[i].id);
      for (double v : sc.columns[static_cast<std::size_t>(it - sc.metrics.begin())]) {
        if (!std::isnan(v)) g.values.push_back(v);
      }
      if (!g.values.empty()) box.groups.push_back(std::move(g));
    }
    if (!box.groups.empty()) {
      auto s = svg::Boxplot(box);
      if (s) figures += "<figure>" + *s + "</figure>";
    }
    // Metrics of the first run that vary: all.* columns, at most 12.
    const auto& sc = scores.front();
    std::vector<std::size_t> cols;
    for (std::size_t c = 0; c < sc.metrics.size() && cols.size() < 12; ++c) {
      if (!sc.metrics[c].starts_with("all.")) continue;
      const auto& v = sc.columns[c];
      bool varies = false;
      for (double x : v) varies = varies || (!std::isnan(x) && x != v.front());
      if (varies) cols.push_back(c);
    }
    if (cols.size() >= 2) {
      svg::HeatmapSpec hm;
      hm.title = fmt::format("Spearman correlations between per-document metrics (run {})", records.front().id);
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
      if (s) figures += "<figure>" + *s + "</figure>";
    }
  }

  // Per-document data for the runs on the first run's dataset.
  std::string docs_json = "[]", runs_json = "[";
  {
    std::vector<std::size_t> same;
    for (std::size_t i = 0; i < records.size(); ++i) {
      if (records[i].dataset_hash == records.front().dataset_hash) same.push_back(i);
    }
    std::vector<Corpus> corpora;
    for (std::size_t i : same) {
      auto c = ReloadRunCorpus(records[i]);
      if (!c) return c.error();
      corpora.push_back(std::move(*c));
    }
    for (std::size_t k = 0; k < same.size(); ++k) {
      const RunRecord& r = records[same[k]];
      runs_json += fmt::format("{}{{\"id\": {}, \"system\": {}, \"seed\": {}}}", k ? ", " : "", r.id, JsonString(r.system),
                               r.seed ? std::to_string(*r.seed) : "null");
    }
    const Corpus& base = corpora.front();
    docs_json = "[";
    for (std::size_t d = 0; d < base.docs.size(); ++d) {
      const Document& doc = base.docs[d];
      std::string text = "[";
      for (std::size_t t = 0; t < doc.src_tokens().size(); ++t) {
        text += (t ? "," : "") + JsonString(base.lex.Str(doc.src_tokens()[t]));
      }
      text += "]";
      auto span = [](const Corpus& c, const Document& dd, const Keyphrase* kp) -> std::string {
        if (!dd.has_text) return "null";
        auto at = c.FirstOccurrence(dd, kp->stems());
        return at ? fmt::format("[{},{}]", *at, kp->stems().size()) : "null";
      };
      // References (from the first run's corpus) and whether any of the runs matched each.
      std::string refs = "[";
      for (std::size_t j = 0; j < doc.ref_view(0).size(); ++j) {
        const Keyphrase* kp = doc.ref_view(0)[j];
        refs += fmt::format("{}{{\"s\": {}, \"present\": {}, \"span\": {}}}", j ? "," : "", JsonString(kp->surface()),
                            kp->present() ? "true" : "false", span(base, doc, kp));
      }
      refs += "]";
      std::string per_run = "{";
      for (std::size_t k = 0; k < corpora.size(); ++k) {
        const Corpus& c = corpora[k];
        const Document& dd = c.docs[d];
        const auto& preds = dd.pred_view(0);
        const auto& rfs = dd.ref_view(0);
        const auto pairs = ExactMatchPairs(preds, rfs);
        std::string p = "[";
        for (std::size_t i = 0; i < preds.size(); ++i) {
          bool m = false;
          for (std::size_t j = 0; j < rfs.size(); ++j) m = m || pairs[i * rfs.size() + j];
          p += fmt::format("{}{{\"s\": {}, \"present\": {}, \"matched\": {}, \"span\": {}}}", i ? "," : "",
                           JsonString(preds[i]->surface()), preds[i]->present() ? "true" : "false", m ? "true" : "false",
                           span(c, dd, preds[i]));
        }
        p += "]";
        std::string matched_refs = "[";
        for (std::size_t j = 0; j < rfs.size(); ++j) {
          bool m = false;
          for (std::size_t i = 0; i < preds.size(); ++i) m = m || pairs[i * rfs.size() + j];
          matched_refs += (j ? "," : "") + std::string(m ? "1" : "0");
        }
        matched_refs += "]";
        const auto& sc = scores[same[k]];
        auto it = std::find(sc.metrics.begin(), sc.metrics.end(), opt.doc_metric);
        const double v = it == sc.metrics.end() ? std::nan("")
                                                : sc.columns[static_cast<std::size_t>(it - sc.metrics.begin())][d];
        per_run += fmt::format("{}\"{}\": {{\"preds\": {}, \"refs_matched\": {}, \"score\": {}}}", k ? "," : "",
                               records[same[k]].id, p, matched_refs, JsonNumber(v));
      }
      per_run += "}";
      docs_json += fmt::format("{}{{\"id\": {}, \"has_text\": {}, \"text\": {}, \"refs\": {}, \"runs\": {}}}",
                               d ? ",\n" : "", JsonString(doc.id), doc.has_text ? "true" : "false", text, refs, per_run);
    }
    docs_json += "]";
  }
  runs_json += "]";

  std::string runs_list = "<ul class=\"runs\">";
  for (const auto& r : records) {
    runs_list += fmt::format("<li>run {}: {} on {}{} (profile {}, {} documents)</li>", r.id, Html(r.system),
                             Html(r.dataset_name), r.seed ? fmt::format(", seed {}", *r.seed) : "", Html(r.profile),
                             r.doc_ids.size());
  }
  runs_list += "</ul>";

  std::string html = R"HTML(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>)HTML" + Html(opt.title) + R"HTML(</title>
<style>
body { font-family: sans-serif; margin: 1.5em; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: right; }
th:first-child, td:first-child { text-align: left; }
td.best { font-weight: bold; }
.note { font-size: 0.9em; color: #555; }
#doclist tbody tr { cursor: pointer; }
#doclist tbody tr:hover { background: #eef; }
#doclist tbody tr.selected { background: #dde; }
.text { line-height: 1.8; max-width: 60em; }
.ref { background: #d8f0d8; }
.pred-match { outline: 2px solid #2a7a2a; }
.pred-miss { background: #f7dcdc; }
li.matched { color: #1f6b1f; font-weight: bold; }
li.absent::after { content: " (absent)"; color: #888; }
li.present::after { content: " (present)"; color: #888; }
</style></head><body>
<h1>)HTML" + Html(opt.title) + R"HTML(</h1>
<h2>Runs</h2>)HTML" + runs_list + R"HTML(
<h2>Leaderboard</h2>)HTML" + LeaderboardHtml(*table) + R"HTML(
<h2>Figures</h2>)HTML" + figures + R"HTML(
<h2>Documents</h2>
<p>Runs A <select id="runA"></select> and B <select id="runB"></select>: documents where )HTML" +
                     Html(opt.doc_metric) + R"HTML( differs most first.</p>
<div style="display:flex; gap:2em; align-items:flex-start">
<table id="doclist"><thead><tr><th>document</th><th>A</th><th>B</th><th>|A - B|</th></tr></thead><tbody></tbody></table>
<div id="docview"><p>Click a document.</p></div>
</div>
<script id="kplab-runs" type="application/json">)HTML" + ScriptSafe(runs_json) + R"HTML(</script>
<script id="kplab-docs" type="application/json">)HTML" + ScriptSafe(docs_json) + R"HTML(</script>
<script>
"use strict";
const RUNS = JSON.parse(document.getElementById("kplab-runs").textContent);
const DOCS = JSON.parse(document.getElementById("kplab-docs").textContent);
const selA = document.getElementById("runA"), selB = document.getElementById("runB");
function el(tag, attrs, text) {
  const e = document.createElement(tag);
  for (const k in attrs || {}) e.setAttribute(k, attrs[k]);
  if (text !== undefined) e.textContent = text;
  return e;
}
function fmt(v) { return v === null || v === undefined || Number.isNaN(v) ? "-" : v.toFixed(4); }
RUNS.forEach((r, i) => {
  const label = "run " + r.id + ": " + r.system + (r.seed === null ? "" : " seed " + r.seed);
  selA.appendChild(el("option", {value: r.id}, label));
  selB.appendChild(el("option", {value: r.id}, label));
});
if (RUNS.length > 1) selB.selectedIndex = 1;
function showDoc(i) {
  const d = DOCS[i];
  const a = selA.value, b = selB.value;
  const view = document.getElementById("docview");
  view.innerHTML = "";
  view.appendChild(el("h3", {id: "doc-title"}, "document " + d.id));
  const marks = new Array(d.text.length).fill("");
  d.refs.forEach(r => { if (r.span) for (let t = r.span[0]; t < r.span[0] + r.span[1]; t++) marks[t] += " ref"; });
  d.runs[a].preds.forEach(p => {
    if (p.span) for (let t = p.span[0]; t < p.span[0] + p.span[1]; t++) marks[t] += p.matched ? " pred-match" : " pred-miss";
  });
  const text = el("p", {class: "text"});
  if (!d.has_text) text.textContent = "(no source text)";
  d.text.forEach((tok, t) => {
    if (t) text.appendChild(document.createTextNode(" "));
    text.appendChild(marks[t] ? el("span", {class: marks[t].trim()}, tok) : document.createTextNode(tok));
  });
  view.appendChild(text);
  view.appendChild(el("h4", {}, "references"));
  const refs = el("ol", {id: "refs"});
  d.refs.forEach((r, j) => {
    const cls = [d.runs[a].refs_matched[j] ? "matched" : "", d.has_text ? (r.present ? "present" : "absent") : ""];
    refs.appendChild(el("li", {class: cls.join(" ").trim()}, r.s));
  });
  view.appendChild(refs);
  [a, b].forEach((id, k) => {
    if (k === 1 && b === a) return;
    view.appendChild(el("h4", {}, "predictions of run " + id + " (" + fmt(d.runs[id].score) + ")"));
    const ol = el("ol", {class: "preds", "data-run": id});
    d.runs[id].preds.forEach(p => {
      const cls = [p.matched ? "matched" : "", d.has_text ? (p.present ? "present" : "absent") : ""];
      ol.appendChild(el("li", {class: cls.join(" ").trim()}, p.s));
    });
    view.appendChild(ol);
  });
}
function renderList() {
  const a = selA.value, b = selB.value;
  const rows = DOCS.map((d, i) => {
    const x = d.runs[a].score, y = d.runs[b].score;
    const diff = (x === null || y === null) ? -1 : Math.abs(x - y);
    return {i, x, y, diff};
  });
  rows.sort((p, q) => q.diff - p.diff || p.i - q.i);
  const body = document.querySelector("#doclist tbody");
  body.innerHTML = "";
  rows.slice(0, 200).forEach(r => {
    const tr = el("tr", {"data-doc": DOCS[r.i].id});
    tr.appendChild(el("td", {}, DOCS[r.i].id));
    tr.appendChild(el("td", {}, fmt(r.x)));
    tr.appendChild(el("td", {}, fmt(r.y)));
    tr.appendChild(el("td", {}, r.diff < 0 ? "-" : r.diff.toFixed(4)));
    tr.addEventListener("click", () => {
      document.querySelectorAll("#doclist tr.selected").forEach(x => x.classList.remove("selected"));
      tr.classList.add("selected");
      showDoc(r.i);
    });
    body.appendChild(tr);
  });
}
selA.addEventListener("change", renderList);
selB.addEventListener("change", renderList);
renderList();
</script>
</body></html>
)HTML";
  return html;
}

}  // namespace kplab::host
