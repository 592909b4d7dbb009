#include "compare.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <thread>
#include <unordered_map>

#include <fmt/format.h>

#include "kplab/stats.h"

namespace kplab::host {

bool GlobMatch(std::string_view p, std::string_view s) {
  // Iterative matcher with one backtrack point for the last '*' (linear in practice).
  std::size_t pi = 0, si = 0, star = std::string_view::npos, mark = 0;
  while (si < s.size()) {
    if (pi < p.size() && (p[pi] == '?' || p[pi] == s[si])) {
      ++pi;
      ++si;
    } else if (pi < p.size() && p[pi] == '*') {
      star = pi++;
      mark = si;
    } else if (star != std::string_view::npos) {
      pi = star + 1;
      si = ++mark;
    } else {
      return false;
    }
  }
  while (pi < p.size() && p[pi] == '*') ++pi;
  return pi == p.size();
}

namespace {

std::string Short(const std::string& hash) { return hash.substr(0, 12); }

}  // namespace

Result<Comparison> CompareRuns(RunStore& store, std::int64_t ida, std::int64_t idb, const CompareOptions& opt) {
  auto ra = store.GetRun(ida);
  if (!ra) return ra.error();
  auto rb = store.GetRun(idb);
  if (!rb) return rb.error();
  for (const RunRecord* r : {&*ra, &*rb}) {
    if (r->status != "ok") {
      return Error{fmt::format("run {} failed ({}), so it has no scores to compare (expected two runs with status ok)",
                               r->id, r->error.substr(0, r->error.find('\n'))),
                   ErrorKind::kStore};
    }
  }
  if (ra->dataset_hash != rb->dataset_hash && !opt.force) {
    return Error{fmt::format(
        "runs {} and {} are on different datasets ({} sha256 {}... vs {} sha256 {}...), so their documents "
        "cannot be paired (expected two runs of one dataset; --force pairs documents by id anyway)",
        ida, idb, ra->dataset_name, Short(ra->dataset_hash), rb->dataset_name, Short(rb->dataset_hash)),
                 ErrorKind::kUsage};
  }
  auto aa = store.GetAggregates(ida);
  if (!aa) return aa.error();
  auto ab = store.GetAggregates(idb);
  if (!ab) return ab.error();
  auto sa = store.GetScores(ida);
  if (!sa) return sa.error();
  auto sb = store.GetScores(idb);
  if (!sb) return sb.error();

  Comparison cmp;
  cmp.a = *ra;
  cmp.b = *rb;
  cmp.ci_resamples = opt.ci_resamples;
  if (ra->profile != rb->profile) {
    cmp.warnings.push_back(fmt::format("warning: run {} is scored under profile '{}' and run {} under '{}': a "
                                       "difference may come from the conventions, not the systems",
                                       ida, ra->profile, idb, rb->profile));
  }
  // Documents both runs scored, matched by id, in A's order.
  std::unordered_map<std::string, std::size_t> in_b;
  for (std::size_t i = 0; i < rb->doc_ids.size(); ++i) in_b.emplace(rb->doc_ids[i], i);
  std::vector<std::pair<std::size_t, std::size_t>> pairs;
  for (std::size_t i = 0; i < ra->doc_ids.size(); ++i) {
    auto it = in_b.find(ra->doc_ids[i]);
    if (it != in_b.end()) pairs.emplace_back(i, it->second);
  }
  cmp.shared_docs = pairs.size();
  if (pairs.empty()) {
    return Error{fmt::format("runs {} and {} share no document id (expected runs on the same documents)", ida, idb),
                 ErrorKind::kUsage};
  }

  std::map<std::string, double> bagg;
  for (const auto& x : *ab) bagg[x.metric] = x.value;
  std::map<std::string, std::size_t> bcol;
  for (std::size_t c = 0; c < sb->metrics.size(); ++c) bcol[sb->metrics[c]] = c;
  std::map<std::string, std::size_t> acol;
  for (std::size_t c = 0; c < sa->metrics.size(); ++c) acol[sa->metrics[c]] = c;

  // An aggregate can be tested when it is the mean of a per-document column: the column of the same
  // name, or of its name without a ".macro" / ".macro_doc" suffix (exact's "all.p@5.macro" is the mean
  // of "all.p@5"), and the column's mean over its defined values is the stored aggregate in both runs
  // (so micro averages and other non-means are never tested as if they were).
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
  std::vector<bool> pattern_used(opt.metrics.size(), false);
  std::vector<std::string> column_of;
  for (const auto& x : *aa) {
    auto it = bagg.find(x.metric);
    if (it == bagg.end()) continue;
    if (!opt.metrics.empty()) {
      bool selected = false;
      for (std::size_t k = 0; k < opt.metrics.size(); ++k) {
        if (GlobMatch(opt.metrics[k], x.metric)) selected = pattern_used[k] = true;
      }
      if (!selected) continue;
    }
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
  for (std::size_t k = 0; k < opt.metrics.size(); ++k) {
    if (!pattern_used[k]) {
      return Error{fmt::format("--metrics pattern '{}' matches no metric both runs have (expected a glob over the "
                               "aggregate names, e.g. 'all.f1@*.macro_hm')",
                               opt.metrics[k]),
                   ErrorKind::kUsage};
    }
  }

  // The paired values of each tested row; a row whose values equal an earlier row's is that test again.
  std::vector<std::vector<double>> xa(cmp.rows.size()), xb(cmp.rows.size());
  std::vector<std::size_t> todo;
  for (std::size_t r = 0; r < cmp.rows.size(); ++r) {
    CompareRow& row = cmp.rows[r];
    if (!row.paired) continue;
    const auto& ca = sa->columns[acol.at(column_of[r])];
    const auto& cb = sb->columns[bcol.at(column_of[r])];
    for (auto [i, j] : pairs) {
      if (std::isnan(ca[i]) || std::isnan(cb[j])) continue;
      xa[r].push_back(ca[i]);
      xb[r].push_back(cb[j]);
    }
    row.n = xa[r].size();
    if (row.n < 2) {
      row.paired = false;
      continue;
    }
    for (std::size_t t : todo) {
      if (xa[t] == xa[r] && xb[t] == xb[r]) {
        row.same_as = cmp.rows[t].metric;
        break;
      }
    }
    if (row.same_as.empty()) todo.push_back(r);
  }
  cmp.family = todo.size();
  cmp.resamples = opt.resamples > 0 ? opt.resamples
                                    : std::max<int>(kMinResamples, static_cast<int>(40 * cmp.family));

  // The paired statistics, one metric per task, spread over threads (each metric has its own fixed
  // seed, so the result does not depend on the thread count).
  std::vector<std::string> errors(cmp.rows.size());
  auto work = [&](std::size_t from, std::size_t step) {
    for (std::size_t t = from; t < todo.size(); t += step) {
      const std::size_t r = todo[t];
      CompareRow& row = cmp.rows[r];
      double s = 0;
      for (std::size_t i = 0; i < row.n; ++i) s += xb[r][i] - xa[r][i];
      row.mean_diff = s / static_cast<double>(row.n);
      const std::uint64_t seed = opt.seed * 1000003u + r;
      auto ci = stats::PairedBootstrapMeanCI(xb[r], xa[r], {opt.ci_resamples, opt.confidence, seed});
      // Besag-Clifford stopping: a metric that is clearly not different stops after 50 exceedances.
      auto p = stats::ApproximateRandomization(xb[r], xa[r], {cmp.resamples, seed, 50});
      if (!ci || !p) {
        errors[r] = !ci ? ci.error().message : p.error().message;
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
    if (!errors[r].empty()) return Error{fmt::format("{}: {}", cmp.rows[r].metric, errors[r]), ErrorKind::kInternal};
  }
  // Holm over the distinct tests of the shown metrics; a duplicate row takes its original's values.
  std::vector<double> ps;
  for (std::size_t t : todo) ps.push_back(cmp.rows[t].p);
  if (!ps.empty()) {
    auto adj = stats::Holm(ps);
    if (!adj) return adj.error();
    std::map<std::string, const CompareRow*> by_name;
    for (std::size_t k = 0; k < todo.size(); ++k) {
      cmp.rows[todo[k]].p_holm = (*adj)[k];
      by_name[cmp.rows[todo[k]].metric] = &cmp.rows[todo[k]];
    }
    for (auto& row : cmp.rows) {
      if (!row.paired || row.same_as.empty()) continue;
      const CompareRow& o = *by_name.at(row.same_as);
      row.mean_diff = o.mean_diff;
      row.ci_low = o.ci_low;
      row.ci_high = o.ci_high;
      row.p = o.p;
      row.p_holm = o.p_holm;
    }
  }
  return cmp;
}

}  // namespace kplab::host
