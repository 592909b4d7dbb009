// Earth mover's distance with FastEMD's (pyemd's) arithmetic; see kplab/emd.h for the contract.
//
// FastEMD builds a flow network (sources, sinks, a "threshold" node that absorbs the heavier side's
// surplus at cost 0 and serves any sink at the largest cost, an artificial node for feasibility) and
// hands it to its own min-cost-flow solver. The same problem is solved here by successive shortest
// paths with potentials (Dijkstra over the dense residual graph), which is exact on integers: the
// optimal cost, and so the distance, is the same; the flow is one optimal flow.
#include "kplab/emd.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include <fmt/format.h>

namespace kplab {
namespace {

using Int = long long;  // FastEMD's CONVERT_TO_T

// FastEMD's conversion of a double to its integer scale (emd_hat_impl<double>).
Int ToInt(double x, double factor) { return static_cast<Int>(std::floor(x * factor + 0.5)); }

Status CheckInput(std::span<const double> p, std::span<const double> q, std::span<const double> cost) {
  if (p.size() != q.size()) {
    return Error::Usage(
        fmt::format("emd: the histograms have {} and {} bins (expected the same number)", p.size(), q.size()));
  }
  const std::size_t n = p.size();
  if (cost.size() != n * n) {
    return Error::Usage(
        fmt::format("emd: the cost matrix has {} entries (expected {} x {} = {})", cost.size(), n, n, n * n));
  }
  for (std::size_t i = 0; i < n; ++i) {
    for (const auto& [h, name] : {std::pair{p[i], "first"}, std::pair{q[i], "second"}}) {
      if (!std::isfinite(h) || h < 0) {
        return Error::Input(
            fmt::format("emd: bin {} of the {} histogram is {} (expected a finite mass >= 0)", i + 1, name, h));
      }
    }
  }
  for (std::size_t k = 0; k < cost.size(); ++k) {
    if (!std::isfinite(cost[k]) || cost[k] < 0) {
      return Error::Input(
          fmt::format("emd: cost ({}, {}) is {} (expected a finite distance >= 0)", k / n + 1, k % n + 1, cost[k]));
    }
  }
  return Status::Ok();
}

// The integer transportation problem: supply[i] >= 0 (total >= total demand), demand[j] >= 0, cost
// c[i * n + j]. Every unit of demand is served, directly from a source at c_ij when c_ij < cmax, or
// through the threshold node at cmax (FastEMD leaves the pairs at cmax out and serves them that way);
// surplus supply stays where it is. Returns the cost; flow[i * n + j] gets the direct flows.
class Transport {
 public:
  Transport(const std::vector<Int>& supply, const std::vector<Int>& demand, const std::vector<Int>& c, Int cmax,
            const std::function<void(double)>& checkpoint)
      : n_(supply.size()), c_(c), cmax_(cmax), checkpoint_(checkpoint) {
    for (std::size_t i = 0; i < n_; ++i) {
      if (supply[i] > 0) {
        src_.push_back(i);
        left_.push_back(supply[i]);
      }
      if (demand[i] > 0) {
        snk_.push_back(i);
        need_.push_back(demand[i]);
      }
    }
    f_.assign(src_.size() * snk_.size(), 0);
    to_thr_.assign(src_.size(), 0);
    from_thr_.assign(snk_.size(), 0);
  }

  Int Solve(std::vector<Int>& flow) {
    Int total = 0;
    pot_.assign(Nodes(), 0);
    while (true) {
      Int needed = 0;
      for (Int d : need_) needed += d;
      if (needed == 0) break;
      total += Augment();
    }
    for (std::size_t a = 0; a < src_.size(); ++a) {
      for (std::size_t b = 0; b < snk_.size(); ++b) flow[src_[a] * n_ + snk_[b]] += f_[a * snk_.size() + b];
    }
    return total;
  }

 private:
  static constexpr Int kInf = std::numeric_limits<Int>::max() / 4;
  // Node numbering: 0 = super source, 1..S = sources, S+1..S+T = sinks, S+T+1 = threshold, S+T+2 = sink.
  std::size_t Nodes() const { return src_.size() + snk_.size() + 3; }
  Int Cost(std::size_t a, std::size_t b) const { return c_[src_[a] * n_ + snk_[b]]; }

  // One shortest path from the super source to the super sink in the residual graph, then as much flow
  // along it as the path allows. Returns the cost of that flow.
  Int Augment() {
    const std::size_t S = src_.size(), T = snk_.size(), V = Nodes(), thr = S + T + 1, tgt = S + T + 2;
    std::vector<Int> dist(V, kInf);
    std::vector<std::size_t> prev(V, V);
    std::vector<char> done(V, 0);
    dist[0] = 0;
    auto relax = [&](std::size_t u, std::size_t v, Int cost) {
      const Int d = dist[u] + cost + pot_[u] - pot_[v];
      if (d < dist[v]) {
        dist[v] = d;
        prev[v] = u;
      }
    };
    double work = 0;
    while (true) {
      std::size_t u = V;
      for (std::size_t x = 0; x < V; ++x) {
        if (!done[x] && dist[x] < kInf && (u == V || dist[x] < dist[u])) u = x;
      }
      if (u == V || u == tgt) break;
      done[u] = 1;
      if (u == 0) {
        for (std::size_t a = 0; a < S; ++a) {
          if (left_[a] > 0) relax(0, 1 + a, 0);
        }
      } else if (u <= S) {
        const std::size_t a = u - 1;
        for (std::size_t b = 0; b < T; ++b) {
          if (Cost(a, b) < cmax_) relax(u, 1 + S + b, Cost(a, b));
        }
        relax(u, thr, 0);
        work += static_cast<double>(T);
      } else if (u <= S + T) {
        const std::size_t b = u - 1 - S;
        for (std::size_t a = 0; a < S; ++a) {
          if (f_[a * T + b] > 0) relax(u, 1 + a, -Cost(a, b));
        }
        if (from_thr_[b] > 0) relax(u, thr, -cmax_);
        if (need_[b] > 0) relax(u, tgt, 0);
        work += static_cast<double>(S);
      } else {  // threshold
        for (std::size_t b = 0; b < T; ++b) relax(u, 1 + S + b, cmax_);
        for (std::size_t a = 0; a < S; ++a) {
          if (to_thr_[a] > 0) relax(u, 1 + a, 0);
        }
        work += static_cast<double>(S + T);
      }
      work += static_cast<double>(V);
    }
    if (checkpoint_) checkpoint_(work);
    // Potentials stay feasible with min(dist, dist[target]) (nodes past the target keep the target's).
    for (std::size_t x = 0; x < V; ++x) pot_[x] += std::min(dist[x], dist[tgt]);
    // The path's capacity: the first source's supply, the last sink's demand, every reverse edge's flow.
    Int amount = kInf;
    for (std::size_t v = tgt; v != 0; v = prev[v]) {
      const std::size_t u = prev[v];
      if (u == 0) {
        amount = std::min(amount, left_[v - 1]);
      } else if (v == tgt) {
        amount = std::min(amount, need_[u - 1 - S]);
      } else if (u > S && u <= S + T && v >= 1 && v <= S) {
        amount = std::min(amount, f_[(v - 1) * T + (u - 1 - S)]);
      } else if (u > S && u <= S + T && v == thr) {
        amount = std::min(amount, from_thr_[u - 1 - S]);
      } else if (u == thr && v >= 1 && v <= S) {
        amount = std::min(amount, to_thr_[v - 1]);
      }
    }
    Int cost = 0;
    for (std::size_t v = tgt; v != 0; v = prev[v]) {
      const std::size_t u = prev[v];
      if (u == 0) {
        left_[v - 1] -= amount;
      } else if (v == tgt) {
        need_[u - 1 - S] -= amount;
      } else if (u >= 1 && u <= S && v > S && v <= S + T) {
        f_[(u - 1) * T + (v - 1 - S)] += amount;
        cost += amount * Cost(u - 1, v - 1 - S);
      } else if (u > S && u <= S + T && v >= 1 && v <= S) {
        f_[(v - 1) * T + (u - 1 - S)] -= amount;
        cost -= amount * Cost(v - 1, u - 1 - S);
      } else if (u >= 1 && u <= S && v == thr) {
        to_thr_[u - 1] += amount;
      } else if (u == thr && v >= 1 && v <= S) {
        to_thr_[v - 1] -= amount;
      } else if (u == thr) {
        from_thr_[v - 1 - S] += amount;
        cost += amount * cmax_;
      } else {  // sink -> threshold
        from_thr_[u - 1 - S] -= amount;
        cost -= amount * cmax_;
      }
    }
    return cost;
  }

  std::size_t n_;
  const std::vector<Int>& c_;
  Int cmax_;
  const std::function<void(double)>& checkpoint_;
  std::vector<std::size_t> src_, snk_;
  std::vector<Int> left_, need_, f_, to_thr_, from_thr_, pot_;
};

// FastEMD's transform_flow_to_regular: mass the recorded flow does not account for (what went through
// the threshold node, and the dropped surplus) is matched bin to bin in index order.
void FlowToRegular(std::vector<Int>& F, const std::vector<Int>& P, const std::vector<Int>& Q, std::size_t n) {
  std::vector<Int> out(P), in(Q);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      out[i] -= F[i * n + j];
      in[j] -= F[i * n + j];
    }
  }
  std::size_t i = 0, j = 0;
  while (true) {
    while (i < n && out[i] == 0) ++i;
    while (j < n && in[j] == 0) ++j;
    if (i == n || j == n) break;
    const Int m = std::min(out[i], in[j]);
    F[i * n + j] += m;
    out[i] -= m;
    in[j] -= m;
  }
}

}  // namespace

Result<EmdResult> EarthMoversDistance(std::span<const double> p, std::span<const double> q,
                                      std::span<const double> cost, const EmdOptions& options) {
  if (Status s = CheckInput(p, q, cost); !s.ok()) return s.error();
  const std::size_t n = p.size();
  EmdResult out;
  if (options.flow) out.flow.assign(n * n, 0.0);
  if (n == 0) return out;

  // emd_hat_gd_metric: a bin's mass present on both sides stays (cost 0 on the diagonal of a metric).
  std::vector<double> P(p.begin(), p.end()), Q(q.begin(), q.end()), F(n * n, 0.0);
  for (std::size_t i = 0; i < n; ++i) {
    const double stay = std::min(P[i], Q[i]);
    F[i * n + i] = stay;
    P[i] -= stay;
    Q[i] -= stay;
  }

  // emd_hat_impl<double>: scale to integers.
  double sum_p = 0, sum_q = 0, max_c = cost[0];
  for (std::size_t i = 0; i < n; ++i) {
    sum_p += p[i];
    sum_q += q[i];
    for (std::size_t j = 0; j < n; ++j) max_c = std::max(max_c, cost[i * n + j]);
  }
  const double min_sum = std::min(sum_p, sum_q), max_sum = std::max(sum_p, sum_q);
  const double penalty = options.extra_mass_penalty == -1 ? max_c : options.extra_mass_penalty;
  // FastEMD divides by these totals; at zero it converts NaN to integers (undefined). Nothing moves then:
  // with no mass on either side the distance is 0; with every cost 0 only the surplus is paid for.
  if (max_sum == 0) return out;
  if (max_c == 0) {
    out.distance = (max_sum - min_sum) * penalty;
    if (options.flow) {
      for (std::size_t i = 0; i < n; ++i) out.flow[i * n + i] = F[i * n + i];
    }
    return out;
  }
  const double pq_factor = 1000000.0 / max_sum, c_factor = 1000000.0 / max_c;
  std::vector<Int> iPo(n), iQo(n), iP(n), iQ(n), iC(n * n), iF(n * n);
  for (std::size_t i = 0; i < n; ++i) {
    iPo[i] = ToInt(p[i], pq_factor);
    iQo[i] = ToInt(q[i], pq_factor);
    iP[i] = ToInt(P[i], pq_factor);
    iQ[i] = ToInt(Q[i], pq_factor);
    for (std::size_t j = 0; j < n; ++j) {
      iC[i * n + j] = ToInt(cost[i * n + j], c_factor);
      iF[i * n + j] = ToInt(F[i * n + j], pq_factor);
    }
  }
  if (options.checkpoint) options.checkpoint(static_cast<double>(n) * static_cast<double>(n));

  // emd_hat_impl_integral_types: the heavier side supplies (the flow is swapped back when recorded).
  Int isum_p = 0, isum_q = 0;
  for (std::size_t i = 0; i < n; ++i) {
    isum_p += iP[i];
    isum_q += iQ[i];
  }
  const bool swap = isum_q > isum_p;
  std::vector<Int> c = iC;
  if (swap) {
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t j = 0; j < n; ++j) c[i * n + j] = iC[j * n + i];
    }
  }
  Int cmax = 0;
  for (Int x : c) cmax = std::max(cmax, x);
  std::vector<Int> moved(n * n, 0);
  Transport problem(swap ? iQ : iP, swap ? iP : iQ, c, cmax, options.checkpoint);
  const Int icost = problem.Solve(moved);

  // Distance without the extra-mass penalty, back in the caller's units, then the penalty.
  double dist = static_cast<double>(icost);
  dist = dist / pq_factor;
  dist = dist / c_factor;
  out.distance = dist + (max_sum - min_sum) * penalty;

  if (options.flow) {
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t j = 0; j < n; ++j) iF[i * n + j] += swap ? moved[j * n + i] : moved[i * n + j];
    }
    FlowToRegular(iF, iPo, iQo, n);
    for (std::size_t k = 0; k < n * n; ++k) out.flow[k] = static_cast<double>(iF[k]) / pq_factor;
  }
  return out;
}

}  // namespace kplab
