"use strict";
// The report's data (report.cc): {doc_metric, datasets: [{name, runs: [{id, system, seed}], a, b, docs}]},
// one entry per <section class="dataset" data-index=i>. A document: {id, title, has_text, text: tokens,
// refs: [{s, present, span}], runs: {run id: {preds: [{s, present, matched, span}], refs_matched, score}}}.
const DATA = JSON.parse(document.getElementById("kplab-data").textContent);
function el(tag, attrs, text) {
  const e = document.createElement(tag);
  for (const k in attrs || {}) e.setAttribute(k, attrs[k]);
  if (text !== undefined) e.textContent = text;
  return e;
}
// Per-document scores as `kplab runs docs` prints them: 4 decimals, "-" without a value.
function fmt(v) { return v === null || v === undefined || Number.isNaN(v) ? "-" : v.toFixed(4); }
function runLabel(r) { return "run " + r.id + ": " + r.system + (r.seed === null ? "" : " seed " + r.seed); }

function showDoc(section, ds, i) {
  const d = ds.docs[i];
  const a = section.querySelector(".runA").value, b = section.querySelector(".runB").value;
  const view = section.querySelector(".docview");
  view.innerHTML = "";
  view.appendChild(el("h4", {class: "doc-title"}, d.title === d.id ? "document " + d.id : d.title));
  if (d.title !== d.id) view.appendChild(el("p", {class: "note doc-id"}, "document " + d.id));
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
  view.appendChild(el("h4", {}, "references (" + d.refs.length + ")"));
  const refs = el("ol", {class: "refs"});
  d.refs.forEach((r, j) => {
    const cls = [d.runs[a].refs_matched[j] ? "matched" : "", d.has_text ? (r.present ? "present" : "absent") : ""];
    refs.appendChild(el("li", {class: cls.join(" ").trim()}, r.s));
  });
  view.appendChild(refs);
  [a, b].forEach((id, k) => {
    if (k === 1 && b === a) return;
    view.appendChild(el("h4", {}, "predictions of run " + id + " (" + ds.doc_metric + " " + fmt(d.runs[id].score) + ")"));
    const ol = el("ol", {class: "preds", "data-run": id});
    d.runs[id].preds.forEach(p => {
      const cls = [p.matched ? "matched" : "", d.has_text ? (p.present ? "present" : "absent") : ""];
      ol.appendChild(el("li", {class: cls.join(" ").trim()}, p.s));
    });
    view.appendChild(ol);
  });
}

function renderList(section, ds) {
  const a = section.querySelector(".runA").value, b = section.querySelector(".runB").value;
  const rows = ds.docs.map((d, i) => {
    const x = d.runs[a].score, y = d.runs[b].score;
    const diff = (x === null || y === null) ? -1 : Math.abs(x - y);
    return {i, x, y, diff};
  });
  rows.sort((p, q) => q.diff - p.diff || p.i - q.i);
  const body = section.querySelector(".doclist tbody");
  body.innerHTML = "";
  rows.slice(0, 200).forEach(r => {
    const d = ds.docs[r.i];
    const tr = el("tr", {"data-doc": d.id});
    tr.appendChild(el("td", {title: "document " + d.id}, d.title));
    tr.appendChild(el("td", {}, String(d.refs.length)));
    tr.appendChild(el("td", {}, fmt(r.x)));
    tr.appendChild(el("td", {}, fmt(r.y)));
    tr.appendChild(el("td", {}, r.diff < 0 ? "-" : r.diff.toFixed(4)));
    tr.addEventListener("click", () => {
      section.querySelectorAll(".doclist tr.selected").forEach(x => x.classList.remove("selected"));
      tr.classList.add("selected");
      showDoc(section, ds, r.i);
    });
    body.appendChild(tr);
  });
}

document.querySelectorAll("section.dataset").forEach(section => {
  const ds = DATA.datasets[Number(section.dataset.index)];
  ds.doc_metric = DATA.doc_metric;
  const selA = section.querySelector(".runA"), selB = section.querySelector(".runB");
  ds.runs.forEach(r => {
    selA.appendChild(el("option", {value: r.id}, runLabel(r)));
    selB.appendChild(el("option", {value: r.id}, runLabel(r)));
  });
  selA.value = String(ds.a);
  selB.value = String(ds.b);
  selA.addEventListener("change", () => renderList(section, ds));
  selB.addEventListener("change", () => renderList(section, ds));
  renderList(section, ds);
});
