#include "testable.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "kplab/stats.h"

namespace kplab::host {
namespace {

double Hm(double p, double r) { return p + r > 0 ? 2 * p * r / (p + r) : 0; }

bool Same(double x, double y) { return std::abs(x - y) <= 1e-9 * std::max(1.0, std::abs(x)); }

// The form's value over one run's own documents (rows where an input is undefined are left out, as
// c:mean leaves them out; the ratio forms' slots are defined for every document).
double OwnValue(const TestPlan& plan, const RunEvidence& run, bool* missing) {
  std::vector<std::vector<double>> cols;
  for (const auto& name : plan.inputs) {
    cols.push_back(InputColumn(run, name));
    if (cols.back().empty()) *missing = true;
  }
  if (*missing) return std::nan("");
  std::vector<std::vector<double>> rows(cols.size());
  for (std::size_t d = 0; d < cols[0].size(); ++d) {
    bool ok = true;
    for (const auto& c : cols) ok = ok && d < c.size() && !std::isnan(c[d]);
    if (!ok) continue;
    for (std::size_t i = 0; i < cols.size(); ++i) rows[i].push_back(cols[i][d]);
  }
  return FormValue(plan.form, rows);
}

// The native form a corpus-level name follows, if any: <s>.f1@k.macro_hm, <s>.{p,r,f1}@k.micro.
TestPlan NativeForm(const std::string& metric) {
  TestPlan plan;
  plan.kind = TestPlan::Kind::kReaggregate;
  const auto dot = metric.find('.');
  const auto last = metric.rfind('.');
  const auto at = metric.find('@');
  if (dot == std::string::npos || last == dot || at == std::string::npos || at > last) return plan;
  const std::string subset = metric.substr(0, dot), measure = metric.substr(dot + 1, at - dot - 1);
  const std::string k = metric.substr(at + 1, last - at - 1), average = metric.substr(last + 1);
  const std::string s = subset + ".";
  if (average == "macro_hm" && measure == "f1") {
    plan.form = TestPlan::Form::kHarmonicOfMeans;
    plan.inputs = {s + "p@" + k, s + "r@" + k};
  } else if (average == "micro" && (measure == "p" || measure == "r")) {
    plan.form = TestPlan::Form::kRatioOfSums;
    plan.inputs = {s + "hits@" + k, s + (measure == "p" ? "pden@" : "rden@") + k};
  } else if (average == "micro" && measure == "f1") {
    plan.form = TestPlan::Form::kF1OfRatios;
    plan.inputs = {s + "hits@" + k, s + "pden@" + k, s + "rden@" + k};
  }
  return plan;
}

}  // namespace

std::vector<double> InputColumn(const RunEvidence& run, const std::string& name) {
  if (run.scores) {
    for (std::size_t c = 0; c < run.scores->metrics.size(); ++c) {
      if (run.scores->metrics[c] == name) return run.scores->columns[c];
    }
  }
  if (run.slots) {
    for (const SlotColumn& c : *run.slots) {
      if (c.subset.starts_with("#")) continue;  // units, not documents
      if ((c.subset.empty() ? c.name : c.subset + "." + c.name) == name) return c.values;
    }
  }
  return {};
}

double FormValue(TestPlan::Form form, const std::vector<std::vector<double>>& x) {
  auto sum = [&](std::size_t i) {
    double s = 0;
    for (double v : x[i]) s += v;
    return s;
  };
  const double n = x.empty() ? 0 : static_cast<double>(x[0].size());
  // c:ratio(name, num, den, 0): 0 when the denominator sums to 0.
  auto ratio = [](double num, double den) { return den != 0 ? num / den : 0.0; };
  switch (form) {
    case TestPlan::Form::kMean:
      return n ? sum(0) / n : std::nan("");
    case TestPlan::Form::kHarmonicOfMeans:
      return n ? Hm(sum(0) / n, sum(1) / n) : std::nan("");
    case TestPlan::Form::kRatioOfSums:
      return ratio(sum(0), sum(1));
    case TestPlan::Form::kF1OfRatios: {
      const double h = sum(0);
      return Hm(ratio(h, sum(1)), ratio(h, sum(2)));
    }
    case TestPlan::Form::kPlugin:
      break;
  }
  return std::nan("");
}

TestPlan PlanTest(const std::string& metric, const std::vector<RunEvidence>& runs) {
  // 1. The mean of a per-document column: the name itself, or without .macro / .macro_doc.
  std::vector<std::string> columns = {metric};
  for (const char* suffix : {".macro_doc", ".macro"}) {
    if (metric.ends_with(suffix)) columns.push_back(metric.substr(0, metric.size() - std::string(suffix).size()));
  }
  for (const auto& col : columns) {
    TestPlan plan;
    plan.kind = TestPlan::Kind::kDocumentMean;
    plan.form = TestPlan::Form::kMean;
    plan.inputs = {col};
    bool holds = !runs.empty();
    for (const auto& run : runs) {
      // A per-document column is a public one (a score column), never a hidden slot.
      const bool public_column = run.scores && std::find(run.scores->metrics.begin(), run.scores->metrics.end(), col) !=
                                                   run.scores->metrics.end();
      bool missing = !public_column;
      const double v = public_column ? OwnValue(plan, run, &missing) : std::nan("");
      holds = holds && !missing && Same(v, run.stored);
    }
    if (holds) return plan;
  }
  // 2. A native corpus-level form, checked against every run's stored value.
  TestPlan native = NativeForm(metric);
  if (!native.inputs.empty()) {
    bool holds = !runs.empty();
    for (const auto& run : runs) {
      bool missing = false;
      const double v = OwnValue(native, run, &missing);
      holds = holds && !missing && Same(v, run.stored);
    }
    if (holds) return native;
  }
  // 3. The plugin's own aggregation over stored slots.
  for (const auto& run : runs) {
    if (!run.slots || run.slots->empty()) {
      TestPlan none;
      none.reason = fmt::format(
          "run {} stored no slots to resample (a plugin of API 1 declares none; a run "
          "stored by an older kplab kept them only with `kplab eval --ci`: score it again)",
          run.id);
      return none;
    }
  }
  TestPlan plugin;
  plugin.kind = TestPlan::Kind::kReaggregate;
  plugin.form = TestPlan::Form::kPlugin;
  return plugin;
}

PairedResult PairedFormTest(TestPlan::Form form, const std::vector<std::vector<double>>& a,
                            const std::vector<std::vector<double>>& b, int resamples, std::uint64_t seed,
                            int stop_after, const std::function<void(double)>& charge) {
  PairedResult res;
  res.observed = FormValue(form, b) - FormValue(form, a);
  const std::size_t n = a.empty() ? 0 : a[0].size();
  // The statistic depends on each input's sum only: a swap of document d moves b - a of every input.
  std::vector<double> sa(a.size(), 0), sb(a.size(), 0);
  for (std::size_t i = 0; i < a.size(); ++i) {
    for (std::size_t d = 0; d < n; ++d) {
      sa[i] += a[i][d];
      sb[i] += b[i][d];
    }
  }
  auto value = [&](const std::vector<double>& sums) {
    std::vector<std::vector<double>> one(sums.size());
    for (std::size_t i = 0; i < sums.size(); ++i) one[i] = {sums[i]};
    // Sums as one row: kMean and kHarmonicOfMeans need the document count back.
    double v = FormValue(form, one);
    if (form == TestPlan::Form::kMean) v /= static_cast<double>(n);
    if (form == TestPlan::Form::kHarmonicOfMeans) v /= static_cast<double>(n);
    return v;
  };
  const double tol = 1e-12 * std::max(1.0, std::abs(res.observed));
  stats::Rng rng(seed);
  std::vector<std::uint64_t> words((n + 63) / 64);
  std::vector<double> ya(a.size()), yb(a.size());
  int hits = 0;
  for (int r = 0; r < resamples; ++r) {
    if (charge && r % 64 == 0) charge(64.0 * static_cast<double>(n + 1));
    for (auto& w : words) w = rng.Next();
    ya = sa;
    yb = sb;
    for (std::size_t d = 0; d < n; ++d) {
      if (!((words[d / 64] >> (d % 64)) & 1u)) continue;
      for (std::size_t i = 0; i < a.size(); ++i) {
        const double delta = b[i][d] - a[i][d];
        ya[i] += delta;
        yb[i] -= delta;
      }
    }
    ++res.drawn;
    const double d = value(yb) - value(ya);
    if (std::isnan(d) || std::abs(d) >= std::abs(res.observed) - tol) ++hits;
    if (stop_after > 0 && hits == stop_after) {
      res.p = static_cast<double>(stop_after) / res.drawn;
      return res;
    }
  }
  res.p = (1.0 + hits) / (1.0 + res.drawn);
  return res;
}

}  // namespace kplab::host
