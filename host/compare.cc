#include "compare.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <thread>
#include <unordered_map>

#include <fmt/format.h>

#include "kplab/stats.h"

namespace kplab::host {

Result<Comparison> CompareRuns(RunStore& store, std::int64_t ida, std::int64_t idb, const CompareOptions& opt) {
  auto ra = store.GetRun(ida);
  if (!ra) return ra.error();
  auto rb = store.GetRun(idb);
  if (!rb) return rb.error();
  auto aa = store.GetAggregates(ida);
  if (!aa) return aa.error();
  auto ab = store.GetAggregates(idb);
  if (!ab) return ab.error();
  auto sa = store.GetScores(ida);
  if (!sa) return sa.error();
  auto sb = store.GetScores(idb);
  if (!sb) return sb.error();

  Comparison cmp;
  cmp.a = ida;
  cmp.b = idb;
  // Documents both runs scored, matched by id, in A's order.
  std::unordered_map<std::string, std::size_t> in_b;
  for (std::size_t i = 0; i < rb->doc_ids.size(); ++i) in_b.emplace(rb->doc_ids[i], i);
  std::vector<std::pair<std::size_t, std::size_t>> pairs;
  for (std::size_t i = 0; i < ra->doc_ids.size(); ++i) {
    auto it = in_b.find(ra->doc_ids[i]);
    if (it != in_b.end()) pairs.emplace_back(i, it->second);
  }
  cmp.shared_docs = pairs.size();

  std::map<std::string, double> bagg;
  for (const auto& x : *ab) bagg[x.metric] = x.value;
  std::map<std::string, std::size_t> bcol;
  for (std::size_t c = 0; c < sb->metrics.size(); ++c) bcol[sb->metrics[c]] = c;
  std::map<std::string, std::size_t> acol;
  for (std::size_t c = 0; c < sa->metrics.size(); ++c) acol[sa->metrics[c]] = c;

  // An aggregate can be tested when it is the mean of a per-document column: the column of the same
  // name, or of its name without a ".macro" / ".macro_doc" suffix (exact's "all.p@5.macro" is the mean
  // of "all.p@5"),
  // and the column's mean over its defined values is the stored aggregate in both runs (so micro
  // averages and other non-means are never tested as if they were).
  auto mean_of = [](const std::vector<double>& col) {
    double s = 0;
    std::size_t n = 0;
    for (double v : col) {
      if (!std::isnan(v)) {
        s += v;
        ++n;
      }
    }
    return n ? s / static_cast<double>(n) : std::nan("");
  };
  auto same = [](double x, double y) { return std::abs(x - y) <= 1e-9 * std::max(1.0, std::abs(x)); };
  std::vector<std::string> column_of;
  for (const auto& x : *aa) {
    auto it = bagg.find(x.metric);
    if (it == bagg.end()) continue;
    CompareRow row;
    row.metric = x.metric;
    row.a = x.value;
    row.b = it->second;
    std::string col = x.metric;
    if (!acol.count(col)) {
      const auto dot = col.rfind('.');
      const std::string suffix = dot == std::string::npos ? "" : col.substr(dot);
      col = suffix == ".macro" || suffix == ".macro_doc" ? col.substr(0, dot) : "";
    }
    row.paired = !col.empty() && acol.count(col) && bcol.count(col) &&
                 same(mean_of(sa->columns[acol[col]]), row.a) && same(mean_of(sb->columns[bcol[col]]), row.b);
    column_of.push_back(row.paired ? col : "");
    cmp.rows.push_back(row);
  }

  // The paired statistics, one metric per task, spread over threads (each metric has its own fixed
  // seed, so the result does not depend on the thread count).
  std::vector<std::size_t> todo;
  for (std::size_t r = 0; r < cmp.rows.size(); ++r) {
    if (cmp.rows[r].paired) todo.push_back(r);
  }
  std::vector<std::string> errors(cmp.rows.size());
  auto work = [&](std::size_t from, std::size_t step) {
    for (std::size_t t = from; t < todo.size(); t += step) {
      CompareRow& row = cmp.rows[todo[t]];
      const auto& ca = sa->columns[acol.at(column_of[todo[t]])];
      const auto& cb = sb->columns[bcol.at(column_of[todo[t]])];
      std::vector<double> xa, xb;
      for (auto [i, j] : pairs) {
        if (std::isnan(ca[i]) || std::isnan(cb[j])) continue;
        xa.push_back(ca[i]);
        xb.push_back(cb[j]);
      }
      row.n = xa.size();
      if (row.n < 2) {
        row.paired = false;
        continue;
      }
      double s = 0;
      for (std::size_t i = 0; i < row.n; ++i) s += xb[i] - xa[i];
      row.mean_diff = s / static_cast<double>(row.n);
      const std::uint64_t seed = opt.seed * 1000003u + todo[t];
      auto ci = stats::PairedBootstrapMeanCI(xb, xa, {opt.resamples, opt.confidence, seed});
      auto p = stats::ApproximateRandomization(xb, xa, {opt.resamples, seed});
      if (!ci || !p) {
        errors[todo[t]] = !ci ? ci.error().message : p.error().message;
        continue;
      }
      row.ci_low = ci->low;
      row.ci_high = ci->high;
      row.p = *p;
    }
  };
  const std::size_t n_threads =
      std::clamp<std::size_t>(opt.threads > 0 ? opt.threads : std::thread::hardware_concurrency(), 1, 8);
  std::vector<std::thread> pool;
  for (std::size_t t = 1; t < n_threads; ++t) pool.emplace_back(work, t, n_threads);
  work(0, n_threads);
  for (auto& th : pool) th.join();
  for (std::size_t r = 0; r < errors.size(); ++r) {
    if (!errors[r].empty()) return Error{fmt::format("{}: {}", cmp.rows[r].metric, errors[r])};
  }
  // Holm over the tested metrics.
  std::vector<double> ps;
  for (const auto& row : cmp.rows) {
    if (row.paired) ps.push_back(row.p);
  }
  if (!ps.empty()) {
    auto adj = stats::Holm(ps);
    if (!adj) return adj.error();
    std::size_t k = 0;
    for (auto& row : cmp.rows) {
      if (row.paired) row.p_holm = (*adj)[k++];
    }
  }
  return cmp;
}

}  // namespace kplab::host
