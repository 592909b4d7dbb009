#include "compare.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <thread>
#include <unordered_map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kplab/profile.h"
#include "kplab/stats.h"
#include "bootstrap.h"
#include "columns.h"
#include "evaluate.h"
#include "lua_util.h"
#include "merge.h"
#include "runner.h"
#include "testable.h"

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

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// One run's slots of plugin `pi` as SlotValues over the shared documents (rows in `pairs` order,
// taking side `first` or second of each pair); subsets as the plugin lists them.
SlotValues SharedSlots(const std::vector<SlotColumn>& slots, std::size_t pi, const MetricPlugin& plugin,
                       std::size_t n_slots, const std::vector<std::pair<std::size_t, std::size_t>>& pairs,
                       bool first) {
  const std::size_t n_sub = plugin.subsets.empty() ? 1 : plugin.subsets.size();
  SlotValues out(n_sub, std::vector<std::vector<double>>(n_slots));
  for (const SlotColumn& c : slots) {
    if (c.plugin != static_cast<int64_t>(pi) || c.slot < 1 || static_cast<std::size_t>(c.slot) > n_slots) continue;
    std::size_t s = 0;
    if (!plugin.subsets.empty()) {
      auto it = std::find(plugin.subsets.begin(), plugin.subsets.end(), c.subset);
      if (it == plugin.subsets.end()) continue;
      s = static_cast<std::size_t>(it - plugin.subsets.begin());
    }
    auto& col = out[s][static_cast<std::size_t>(c.slot - 1)];
    col.resize(pairs.size());
    for (std::size_t i = 0; i < pairs.size(); ++i) {
      const std::size_t d = first ? pairs[i].first : pairs[i].second;
      col[i] = d < c.values.size() ? c.values[d] : kNaN;
    }
  }
  return out;
}

// A subset one run allocated and the other did not: the other's columns NaN, so both have one shape
// and a swap of rows moves whole rows.
void SameShape(SlotValues& x, SlotValues& y, std::size_t rows) {
  for (std::size_t s = 0; s < x.size(); ++s) {
    const bool xs = std::any_of(x[s].begin(), x[s].end(), [](const auto& c) { return !c.empty(); });
    const bool ys = std::any_of(y[s].begin(), y[s].end(), [](const auto& c) { return !c.empty(); });
    if (!xs && !ys) continue;
    for (auto* v : {&x, &y}) {
      for (auto& col : (*v)[s]) {
        if (col.empty()) col.assign(rows, kNaN);
      }
    }
  }
}

// Units (c:units): the two runs' rows of plugin `pi` / `pj` matched by (document id, key), over the
// shared documents; a unit one run has and the other has not (homogeneity: a pair whose two lists are
// empty in one run) is a row of NaN there. Returns why the units cannot be compared, or "".
std::string MatchUnits(const RunRecord& ra, const RunRecord& rb, const std::vector<SlotColumn>& sa,
                       const std::vector<SlotColumn>& sb, std::size_t pi, std::size_t pj, const MetricPlugin& plugin,
                       const DeclaredColumns& decl, const std::vector<std::pair<std::size_t, std::size_t>>& pairs,
                       SlotValues& xa, SlotValues& xb, std::size_t& n_rows) {
  StoredUnits ua = ReadUnits(sa, static_cast<int64_t>(pi), plugin, decl.slots.size());
  StoredUnits ub = ReadUnits(sb, static_cast<int64_t>(pj), plugin, decl.slots.size());
  if (ua.ids.empty() || ub.ids.empty()) {
    return fmt::format("run {} stored no {} of plugin '{}' to resample (score it with `kplab eval --ci`)",
                       ua.ids.empty() ? ra.id : rb.id, decl.units, plugin.name);
  }
  std::unordered_map<std::string, std::size_t> shared_a, shared_b;  // doc id -> its index in the run
  for (auto [i, j] : pairs) {
    shared_a.emplace(ra.doc_ids[i], i);
    shared_b.emplace(rb.doc_ids[j], j);
  }
  std::map<std::pair<std::string, double>, std::pair<long, long>> rows_of;  // -> row in A, row in B
  std::vector<std::pair<std::string, double>> order;
  auto add = [&](const StoredUnits& u, const RunRecord& run, const auto& shared, bool is_a) {
    for (std::size_t r = 0; r < u.ids.size(); ++r) {
      if (u.ids[r].first >= run.doc_ids.size() || !shared.count(run.doc_ids[u.ids[r].first])) continue;
      const std::pair<std::string, double> id{run.doc_ids[u.ids[r].first], u.ids[r].second};
      auto [it, fresh] = rows_of.emplace(id, std::pair<long, long>{-1, -1});
      if (fresh) order.push_back(id);
      (is_a ? it->second.first : it->second.second) = static_cast<long>(r);
    }
  };
  add(ua, ra, shared_a, true);
  add(ub, rb, shared_b, false);
  n_rows = order.size();
  auto build = [&](const StoredUnits& u, bool is_a) {
    SlotValues x(u.values.size(), std::vector<std::vector<double>>(decl.slots.size(), std::vector<double>(n_rows, kNaN)));
    for (std::size_t k = 0; k < n_rows; ++k) {
      const auto& rr = rows_of.at(order[k]);
      const long r = is_a ? rr.first : rr.second;
      if (r < 0) continue;
      for (std::size_t s2 = 0; s2 < x.size(); ++s2) {
        for (std::size_t j = 0; j < x[s2].size(); ++j) x[s2][j][k] = u.values[s2][j][static_cast<std::size_t>(r)];
      }
    }
    return x;
  };
  xa = build(ua, true);
  xb = build(ub, false);
  return "";
}

// One plugin's resampling: its VM, declaration and context, the two runs' slot rows (the same rows in
// both) and the metrics by name.
struct Resampling {
  LuaVm& vm;
  const MetricPlugin& plugin;
  const DeclaredColumns& decl;
  const std::function<void(lua_State*)>& ctx;
  const SlotValues &xa, &xb;
  std::size_t n_rows;
  const std::vector<std::string>& names;
};

// Paired bootstrap: the same resampled rows for both runs; boot[k] collects B - A of each live metric k
// where both are defined.
Status BootstrapDiffs(const Resampling& rs, const std::vector<std::size_t>& live, int ci_resamples,
                      std::uint64_t seed, std::vector<std::vector<double>>& boot) {
  BootstrapDraws draws(rs.n_rows, seed);
  SlotValues pa_rows, pb_rows;
  std::vector<double> ga, gb;
  for (int r = 0; r < ci_resamples; ++r) {
    const auto& idx = draws.Next();
    PickRows(rs.xa, idx, pa_rows);
    PickRows(rs.xb, idx, pb_rows);
    if (Status st = AggregateByName(rs.vm, rs.plugin, rs.decl, pa_rows, rs.ctx, rs.names, ga); !st.ok()) return st;
    if (Status st = AggregateByName(rs.vm, rs.plugin, rs.decl, pb_rows, rs.ctx, rs.names, gb); !st.ok()) return st;
    for (std::size_t k : live) {
      if (!std::isnan(gb[k] - ga[k])) boot[k].push_back(gb[k] - ga[k]);
    }
  }
  return Status::Ok();
}

struct RandomizationCounts {
  std::vector<int> hits, seen;
  std::vector<bool> stopped;
};

// Approximate randomization: each shared row's slot values swapped between the runs with probability
// 1/2 (bit i mod 64 of the (i div 64)-th word, as stats::ApproximateRandomization). Besag-Clifford
// stopping per metric after 50 resamples reach the observed |B - A|; a resample where either value is
// undefined counts as reaching it (conservative).
Status Randomize(const Resampling& rs, const std::vector<std::size_t>& live, const std::vector<double>& d_obs,
                 int resamples, std::uint64_t seed, RandomizationCounts& c) {
  stats::Rng rng(seed * 1000003u + 999983u);
  const SlotValues &xa = rs.xa, &xb = rs.xb;
  SlotValues ya = xa, yb = xb;
  std::vector<double> ga, gb;
  std::vector<std::uint64_t> words((rs.n_rows + 63) / 64);
  for (int r = 0; r < resamples; ++r) {
    if (std::all_of(live.begin(), live.end(), [&](std::size_t k) { return c.stopped[k]; })) break;
    for (auto& w : words) w = rng.Next();
    for (std::size_t s = 0; s < xa.size(); ++s) {
      for (std::size_t j = 0; j < xa[s].size(); ++j) {
        if (xa[s][j].empty()) continue;
        for (std::size_t i = 0; i < rs.n_rows; ++i) {
          const bool swap = (words[i / 64] >> (i % 64)) & 1u;
          ya[s][j][i] = swap ? xb[s][j][i] : xa[s][j][i];
          yb[s][j][i] = swap ? xa[s][j][i] : xb[s][j][i];
        }
      }
    }
    if (Status st = AggregateByName(rs.vm, rs.plugin, rs.decl, ya, rs.ctx, rs.names, ga); !st.ok()) return st;
    if (Status st = AggregateByName(rs.vm, rs.plugin, rs.decl, yb, rs.ctx, rs.names, gb); !st.ok()) return st;
    for (std::size_t k : live) {
      if (c.stopped[k]) continue;
      const double d = gb[k] - ga[k];
      const double tol = 1e-9 * std::max(1.0, std::abs(d_obs[k]));
      ++c.seen[k];
      if (std::isnan(d) || std::abs(d) >= std::abs(d_obs[k]) - tol) ++c.hits[k];
      if (c.hits[k] == 50) c.stopped[k] = true;
    }
  }
  return Status::Ok();
}

// Which of the plugin's rows (`mine`, metrics `names`) are tested: not a count fixed by the run's units,
// re-aggregating the stored slots gives the stored values (when every document is shared), and B - A
// is defined; the others get `untested`. d_obs[k]: the observed B - A. Returns indices into `mine`.
std::vector<std::size_t> LiveRows(const DeclaredColumns& decl, const std::vector<std::string>& names,
                                  const std::vector<double>& obs_a, const std::vector<double>& obs_b, bool all_shared,
                                  const std::vector<std::size_t>& mine, Comparison& cmp, std::vector<double>& d_obs) {
  std::vector<std::size_t> live;
  for (std::size_t k = 0; k < mine.size(); ++k) {
    CompareRow& row = cmp.rows[mine[k]];
    if (decl.UnitFixed(names[k])) {
      row.untested = fmt::format("a count of the run, not of its {}: not resampled (c:units fixed)", decl.units);
      continue;
    }
    auto same = [](double x, double y) { return std::abs(x - y) <= 1e-9 * std::max(1.0, std::abs(x)); };
    if (all_shared && (!same(obs_a[k], row.a) || !same(obs_b[k], row.b))) {
      row.untested = fmt::format("re-aggregating the stored slots gives {} and {}, not the stored {} and {}",
                                 obs_a[k], obs_b[k], row.a, row.b);
      continue;
    }
    d_obs[k] = obs_b[k] - obs_a[k];
    if (std::isnan(d_obs[k])) {
      row.untested = "undefined over the shared documents in one of the runs";
      continue;
    }
    live.push_back(k);
  }
  return live;
}

// A tested row: the observed difference, the bootstrap CI and the randomization p of metric k.
Status WriteRow(const CompareOptions& opt, const DeclaredColumns& decl, std::size_t n_rows, double d_obs,
                const std::vector<double>& boot, const RandomizationCounts& c, std::size_t k, CompareRow& row) {
  const double qs[2] = {(1 - opt.confidence) / 2, (1 + opt.confidence) / 2};
  row.paired = row.resampled = true;
  row.n = n_rows;
  row.unit = decl.units.empty() ? "documents" : decl.units;
  row.mean_diff = d_obs;
  if (!boot.empty()) {
    auto q = stats::Quantiles(boot, qs);
    if (!q) return q.error();
    row.ci_low = (*q)[0];
    row.ci_high = (*q)[1];
  } else {
    row.ci_low = row.ci_high = kNaN;
  }
  row.p = c.stopped[k] ? 50.0 / c.seen[k] : (1.0 + c.hits[k]) / (1.0 + c.seen[k]);
  return Status::Ok();
}

// The rows of `rows` not yet done that this plugin produces (its declaration's names, per subset): into
// `mine`, their names into `names`, and marked done.
void PluginRows(const MetricPlugin& plugin, const DeclaredColumns& decl, const std::vector<std::size_t>& rows,
                const Comparison& cmp, std::vector<bool>& done, std::vector<std::size_t>& mine,
                std::vector<std::string>& names) {
  std::vector<std::string> full;
  for (const auto& agg : decl.aggregates) {
    if (plugin.subsets.empty()) full.push_back(agg.name);
    for (const auto& sub : plugin.subsets) full.push_back(sub + "." + agg.name);
  }
  for (std::size_t r : rows) {
    if (done[r]) continue;
    for (const auto& f : full) {
      if (f == cmp.rows[r].metric) {
        mine.push_back(r);
        names.push_back(f);
        done[r] = true;
      }
    }
  }
}

// The corpus-level rows of `cmp` (indices `rows`, none a mean of a per-document column) that both runs
// can re-aggregate from their stored slots: observed difference, paired bootstrap CI and randomization p.
// Rows that cannot be tested get `untested`. Errors: a plugin that fails to load or aggregate.
Status CompareResampled(const RunRecord& ra, const RunRecord& rb, const std::vector<SlotColumn>* sa,
                        const std::vector<SlotColumn>* sb,
                        const std::vector<std::pair<std::size_t, std::size_t>>& pairs, const CompareOptions& opt,
                        int resamples, const std::vector<std::size_t>& rows, Comparison& cmp) {
  if (rows.empty()) return Status::Ok();
  const RunRecord* bare = sa->empty() ? &ra : sb->empty() ? &rb : nullptr;
  if (bare) {
    for (std::size_t r : rows) {
      cmp.rows[r].untested = fmt::format(
          "run {} stored no slots to resample (a plugin of API 1 declares none; a run stored by an older kplab kept "
          "them only with `kplab eval --ci`: score it again)",
          bare->id);
    }
    return Status::Ok();
  }
  auto pa = ParsePluginParams(ra.params_json);
  if (!pa) return pa.error();
  auto pb = ParsePluginParams(rb.params_json);
  if (!pb) return pb.error();
  std::vector<bool> done(cmp.rows.size(), false);
  std::vector<std::string> problems;  // plugins that could not be loaded for re-aggregation
  for (std::size_t pi = 0; pi < ra.plugins.size(); ++pi) {
    if (std::all_of(rows.begin(), rows.end(), [&](std::size_t r) { return done[r]; })) break;
    const PluginRecord& rec = ra.plugins[pi];
    std::size_t pj = rb.plugins.size();
    for (std::size_t k = 0; k < rb.plugins.size(); ++k) {
      if (rb.plugins[k].name == rec.name) pj = k;
    }
    if (pj == rb.plugins.size()) continue;
    const PluginRecord& recb = rb.plugins[pj];
    auto params_of = [](const auto& all, const std::string& name) {
      auto it = all.find(name);
      return it == all.end() ? std::map<std::string, std::string>{} : it->second;
    };
    const auto params = params_of(*pa, rec.name);
    std::string differ;
    if (rec.sha256 != recb.sha256) {
      differ = fmt::format("the runs ran different files of plugin '{}' (sha256 {} and {})", rec.name, Short(rec.sha256),
                           Short(recb.sha256));
    } else if (params != params_of(*pb, rec.name)) {
      differ = fmt::format("the runs ran plugin '{}' with different parameters", rec.name);
    }
    LuaVm vm(opt.limits);
    InstallAll(vm);
    DefineColumnTypes(vm.state());
    // A plugin that cannot be loaded as the run ran it (its file changed, say) leaves its metrics untested
    // with the reason; the other metrics are still compared.
    auto file = FindPluginFile(rec, opt.plugin_dirs, fmt::format("run {}", ra.id));
    if (!file) {
      problems.push_back(file.error().message);
      continue;
    }
    auto plugin = LoadMetricPlugin(vm, *file);
    if (!plugin) {
      problems.push_back(plugin.error().message);
      continue;
    }
    struct Release {
      LuaVm& vm;
      MetricPlugin& p;
      ~Release() { ReleaseMetricPlugin(vm, p); }
    } release{vm, *plugin};
    if (Status st = ApplyParams(*plugin, params); !st.ok()) {
      problems.push_back(fmt::format("plugin '{}': {}", rec.name, st.error().message));
      continue;
    }
    if (std::string why = NotResampleable(*plugin); !why.empty() && differ.empty()) differ = why;
    auto re = Reaggregation::Open(vm, *plugin);
    if (!re) {
      problems.push_back(re.error().message);
      continue;
    }
    const DeclaredColumns& decl = (*re)->decl();
    SlotValues xa, xb;
    std::size_t n_rows = pairs.size();
    if (decl.units.empty()) {
      xa = SharedSlots(*sa, pi, *plugin, decl.slots.size(), pairs, true);
      xb = SharedSlots(*sb, pj, *plugin, decl.slots.size(), pairs, false);
      SameShape(xa, xb, pairs.size());
    } else if (differ.empty()) {
      differ = MatchUnits(ra, rb, *sa, *sb, pi, pj, *plugin, decl, pairs, xa, xb, n_rows);
    }
    const std::size_t n_docs = ra.doc_ids.size();
    auto profile = FindProfile(ra.profile);
    if (!profile) {
      return Error::Usage(fmt::format("run {} used profile '{}', which this kplab does not know", ra.id, ra.profile));
    }
    auto ctx = [&](lua_State* L) { PushMergeCtx(L, *profile, n_docs, ra.dataset_name, ra.system); };
    std::vector<std::size_t> mine;  // the rows this plugin produces, and their metric names
    std::vector<std::string> names;
    PluginRows(*plugin, decl, rows, cmp, done, mine, names);
    if (mine.empty()) continue;
    if (differ.empty() && n_rows == 0) differ = fmt::format("no {} to resample over the shared documents", decl.units);
    if (!differ.empty()) {
      for (std::size_t r : mine) cmp.rows[r].untested = differ;
      continue;
    }
    std::vector<double> obs_a, obs_b;
    if (Status st = AggregateByName(vm, *plugin, decl, xa, ctx, names, obs_a); !st.ok()) return st;
    if (Status st = AggregateByName(vm, *plugin, decl, xb, ctx, names, obs_b); !st.ok()) return st;
    const bool all_shared = pairs.size() == ra.doc_ids.size() && pairs.size() == rb.doc_ids.size();
    std::vector<double> d_obs(mine.size());
    const std::vector<std::size_t> live = LiveRows(decl, names, obs_a, obs_b, all_shared, mine, cmp, d_obs);
    if (live.empty()) continue;
    // Subsets aggregate independently (columns.h): one no tested metric belongs to is not resampled.
    for (std::size_t s2 = 0; s2 < plugin->subsets.size(); ++s2) {
      const std::string prefix = plugin->subsets[s2] + ".";
      if (std::any_of(live.begin(), live.end(), [&](std::size_t k) { return names[k].starts_with(prefix); })) continue;
      for (auto* x : {&xa, &xb}) {
        for (auto& col : (*x)[s2]) col.clear();
      }
    }
    const std::function<void(lua_State*)> push_ctx = ctx;
    const Resampling rs{vm, *plugin, decl, push_ctx, xa, xb, n_rows, names};
    std::vector<std::vector<double>> boot(mine.size());
    if (Status st = BootstrapDiffs(rs, live, opt.ci_resamples, opt.seed, boot); !st.ok()) return st;
    RandomizationCounts counts{std::vector<int>(mine.size(), 0), std::vector<int>(mine.size(), 0),
                               std::vector<bool>(mine.size(), false)};
    if (Status st = Randomize(rs, live, d_obs, resamples, opt.seed, counts); !st.ok()) return st;
    for (std::size_t k : live) {
      if (Status st = WriteRow(opt, decl, n_rows, d_obs[k], boot[k], counts, k, cmp.rows[mine[k]]); !st.ok()) return st;
    }
  }
  for (std::size_t r : rows) {
    if (!done[r] && cmp.rows[r].untested.empty()) {
      cmp.rows[r].untested = problems.empty() ? "no plugin of both runs declares it"
                                              : fmt::format("cannot re-aggregate: {}", fmt::join(problems, "; "));
    }
  }
  return Status::Ok();
}

// A corpus-level row of a native form (PlanTest): its inputs over the shared documents where both runs
// define every input; B - A of the form, the paired bootstrap CI (BootstrapDraws(n, --seed), the draws
// the plugin path uses) and PairedFormTest's p (Besag-Clifford after 50 exceedances).
Status CompareNative(const RunRecord& ra, const RunRecord& rb, const ScoreColumns* sa, const ScoreColumns* sb,
                     const std::vector<SlotColumn>* la, const std::vector<SlotColumn>* lb,
                     const std::vector<std::pair<std::size_t, std::size_t>>& pairs, const TestPlan& plan,
                     const CompareOptions& opt, int resamples, std::uint64_t seed, CompareRow& row) {
  const RunEvidence ea{ra.id, row.a, &ra, sa, la}, eb{rb.id, row.b, &rb, sb, lb};
  std::vector<std::vector<double>> ca, cb, xa(plan.inputs.size()), xb(plan.inputs.size());
  for (const auto& name : plan.inputs) {
    ca.push_back(InputColumn(ea, name));
    cb.push_back(InputColumn(eb, name));
  }
  for (auto [i, j] : pairs) {
    bool ok = true;
    for (std::size_t k = 0; k < ca.size(); ++k) {
      ok = ok && i < ca[k].size() && j < cb[k].size() && !std::isnan(ca[k][i]) && !std::isnan(cb[k][j]);
    }
    if (!ok) continue;
    for (std::size_t k = 0; k < ca.size(); ++k) {
      xa[k].push_back(ca[k][i]);
      xb[k].push_back(cb[k][j]);
    }
  }
  const std::size_t n = xa[0].size();
  if (n < 2) {
    row.untested = fmt::format("{} shared document(s) with values in both runs", n);
    return Status::Ok();
  }
  const PairedResult res = PairedFormTest(plan.form, xa, xb, resamples, seed, 50);
  std::vector<double> boot;
  BootstrapDraws draws(n, opt.seed);
  std::vector<std::vector<double>> pa(xa.size(), std::vector<double>(n)), pb = pa;
  for (int r = 0; r < opt.ci_resamples; ++r) {
    const auto& idx = draws.Next();
    for (std::size_t k = 0; k < xa.size(); ++k) {
      for (std::size_t d = 0; d < n; ++d) {
        pa[k][d] = xa[k][idx[d]];
        pb[k][d] = xb[k][idx[d]];
      }
    }
    const double diff = FormValue(plan.form, pb) - FormValue(plan.form, pa);
    if (!std::isnan(diff)) boot.push_back(diff);
  }
  row.paired = row.resampled = true;
  row.unit = "documents";
  row.n = n;
  row.mean_diff = res.observed;
  row.p = res.p;
  row.ci_low = row.ci_high = kNaN;
  if (!boot.empty()) {
    const double qs[2] = {(1 - opt.confidence) / 2, (1 + opt.confidence) / 2};
    auto q = stats::Quantiles(boot, qs);
    if (!q) return q.error();
    row.ci_low = (*q)[0];
    row.ci_high = (*q)[1];
  }
  return Status::Ok();
}

}  // namespace

// The rows: each aggregate both runs have (those --metrics selects), with whether and how it is tested
// (PlanTest, the rule `runs table` uses too); column_of[r]: a per-document row's column. A --metrics
// pattern matching nothing is an error.
Status PlanRows(const CompareOptions& opt, const RunEvidence& ea, const RunEvidence& eb,
                const std::vector<AggregateValue>& aa, const std::map<std::string, double>& bagg, Comparison& cmp,
                std::vector<TestPlan>& plans, std::vector<std::string>& column_of) {
  std::vector<bool> pattern_used(opt.metrics.size(), false);
  for (const auto& x : aa) {
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
    RunEvidence a = ea, b = eb;
    a.stored = row.a;
    b.stored = row.b;
    TestPlan plan = PlanTest(x.metric, {a, b});
    row.paired = plan.kind == TestPlan::Kind::kDocumentMean;
    if (plan.kind == TestPlan::Kind::kNone) row.untested = plan.reason;
    column_of.push_back(row.paired ? plan.inputs[0] : "");
    plans.push_back(std::move(plan));
    cmp.rows.push_back(row);
  }
  for (std::size_t k = 0; k < opt.metrics.size(); ++k) {
    if (!pattern_used[k]) {
      return Error::Usage(
          fmt::format("--metrics pattern '{}' matches no metric both runs have (expected a glob over the "
                      "aggregate names, e.g. 'all.f1@*.macro_hm')",
                      opt.metrics[k]));
    }
  }
  return Status::Ok();
}

// The paired values of each per-document row over the shared documents (xa, xb); a row with fewer
// than two is not paired, and a row whose values equal an earlier row's is that test again (same_as).
// Returns the rows to test.
std::vector<std::size_t> PairDocumentRows(const ScoreColumns& sa, const ScoreColumns& sb,
                                          const std::vector<std::pair<std::size_t, std::size_t>>& pairs,
                                          const std::vector<std::string>& column_of, Comparison& cmp,
                                          std::vector<std::vector<double>>& xa, std::vector<std::vector<double>>& xb) {
  std::map<std::string, std::size_t> acol, bcol;
  for (std::size_t c = 0; c < sa.metrics.size(); ++c) acol[sa.metrics[c]] = c;
  for (std::size_t c = 0; c < sb.metrics.size(); ++c) bcol[sb.metrics[c]] = c;
  std::vector<std::size_t> todo;
  for (std::size_t r = 0; r < cmp.rows.size(); ++r) {
    CompareRow& row = cmp.rows[r];
    if (!row.paired) continue;
    const auto& ca = sa.columns[acol.at(column_of[r])];
    const auto& cb = sb.columns[bcol.at(column_of[r])];
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
  return todo;
}

// The paired statistics of the per-document rows `todo`, one metric per task, spread over threads (each
// metric has its own fixed seed, so the result does not depend on the thread count).
Status TestDocumentRows(const CompareOptions& opt, const std::vector<std::size_t>& todo,
                        const std::vector<std::vector<double>>& xa, const std::vector<std::vector<double>>& xb,
                        Comparison& cmp) {
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
    if (!errors[r].empty()) return Error::Internal(fmt::format("{}: {}", cmp.rows[r].metric, errors[r]));
  }
  return Status::Ok();
}

// Holm over the distinct tests (`todo`) of the shown metrics; a duplicate row takes its original's values.
Status AdjustHolm(const std::vector<std::size_t>& todo, Comparison& cmp) {
  cmp.family = todo.size();
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
  return Status::Ok();
}

Result<Comparison> CompareRuns(RunStore& store, std::int64_t ida, std::int64_t idb, const CompareOptions& opt) {
  auto ra = store.GetRun(ida);
  if (!ra) return ra.error();
  auto rb = store.GetRun(idb);
  if (!rb) return rb.error();
  for (const RunRecord* r : {&*ra, &*rb}) {
    if (r->status != "ok") {
      return Error::Store(
          fmt::format("run {} failed ({}), so it has no scores to compare (expected two runs with status ok)", r->id,
                      r->error.substr(0, r->error.find('\n'))));
    }
  }
  if (ra->dataset_hash != rb->dataset_hash && !opt.force) {
    return Error::Usage(
        fmt::format("runs {} and {} are on different datasets ({} sha256 {}... vs {} sha256 {}...), so their documents "
                    "cannot be paired (expected two runs of one dataset; --force pairs documents by id anyway)",
                    ida, idb, ra->dataset_name, Short(ra->dataset_hash), rb->dataset_name, Short(rb->dataset_hash)));
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
    return Error::Usage(
        fmt::format("runs {} and {} share no document id (expected runs on the same documents)", ida, idb));
  }

  std::map<std::string, double> bagg;
  for (const auto& x : *ab) bagg[x.metric] = x.value;

  // Whether and how each shown metric is tested: PlanTest, the rule `runs table` uses too.
  auto sl_a = store.GetSlots(ida);
  if (!sl_a) return sl_a.error();
  auto sl_b = store.GetSlots(idb);
  if (!sl_b) return sl_b.error();
  std::vector<std::string> column_of;
  std::vector<TestPlan> plans;
  if (Status st = PlanRows(opt, RunEvidence{ida, 0, &*ra, &*sa, &*sl_a}, RunEvidence{idb, 0, &*rb, &*sb, &*sl_b}, *aa,
                           bagg, cmp, plans, column_of);
      !st.ok()) {
    return st.error();
  }

  std::vector<std::vector<double>> xa(cmp.rows.size()), xb(cmp.rows.size());
  std::vector<std::size_t> todo = PairDocumentRows(*sa, *sb, pairs, column_of, cmp, xa, xb);
  // Corpus-level rows: a native form (macro_hm, micro) is tested here over the shared documents; any
  // other is re-aggregated by its plugin from both runs' stored slots (CompareResampled).
  std::vector<std::size_t> corpus_rows, native_rows;
  for (std::size_t r = 0; r < cmp.rows.size(); ++r) {
    if (plans[r].kind != TestPlan::Kind::kReaggregate) continue;
    (plans[r].form == TestPlan::Form::kPlugin ? corpus_rows : native_rows).push_back(r);
  }
  std::vector<SlotColumn> slots_a = std::move(*sl_a), slots_b = std::move(*sl_b);
  cmp.family = todo.size();
  cmp.resamples = opt.resamples > 0 ? opt.resamples
                                    : std::max<int>(kMinResamples, static_cast<int>(40 * (todo.size() + corpus_rows.size() +
                                                                                          native_rows.size())));
  for (std::size_t r : native_rows) {
    if (Status st = CompareNative(*ra, *rb, &*sa, &*sb, &slots_a, &slots_b, pairs, plans[r], opt, cmp.resamples,
                                  opt.seed * 1000003u + r, cmp.rows[r]);
        !st.ok()) {
      return st.error();
    }
  }
  if (Status st = CompareResampled(*ra, *rb, &slots_a, &slots_b, pairs, opt, cmp.resamples, corpus_rows, cmp);
      !st.ok()) {
    return st.error();
  }

  if (Status st = TestDocumentRows(opt, todo, xa, xb, cmp); !st.ok()) return st.error();
  // Holm over the distinct tests of the shown metrics; a duplicate row takes its original's values.
  for (std::size_t r : corpus_rows) {
    if (cmp.rows[r].resampled) todo.push_back(r);
  }
  for (std::size_t r : native_rows) {
    if (cmp.rows[r].resampled) todo.push_back(r);
  }
  if (Status st = AdjustHolm(todo, cmp); !st.ok()) return st.error();
  return cmp;
}

}  // namespace kplab::host
