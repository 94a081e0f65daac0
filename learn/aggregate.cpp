// FedAvg and attention-aware memory aggregation (see aggregate.hpp).
#include "learn/aggregate.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <stdexcept>

namespace scout::learn {

std::vector<int> hungarian(const Mat& cost) {
  // Jonker-Volgenant style potentials, 1-based internally.
  const int n = static_cast<int>(cost.rows());
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> u(static_cast<std::size_t>(n + 1)), v(static_cast<std::size_t>(n + 1));
  std::vector<int> p(static_cast<std::size_t>(n + 1)), way(static_cast<std::size_t>(n + 1));
  for (int i = 1; i <= n; ++i) {
    p[0] = i;
    int j0 = 0;
    std::vector<double> minv(static_cast<std::size_t>(n + 1), inf);
    std::vector<char> used(static_cast<std::size_t>(n + 1), 0);
    do {
      used[static_cast<std::size_t>(j0)] = 1;
      const int i0 = p[static_cast<std::size_t>(j0)];
      double delta = inf;
      int j1 = 0;
      for (int j = 1; j <= n; ++j) {
        if (used[static_cast<std::size_t>(j)]) continue;
        const double cur = cost(i0 - 1, j - 1) - u[static_cast<std::size_t>(i0)] - v[static_cast<std::size_t>(j)];
        if (cur < minv[static_cast<std::size_t>(j)]) {
          minv[static_cast<std::size_t>(j)] = cur;
          way[static_cast<std::size_t>(j)] = j0;
        }
        if (minv[static_cast<std::size_t>(j)] < delta) {
          delta = minv[static_cast<std::size_t>(j)];
          j1 = j;
        }
      }
      for (int j = 0; j <= n; ++j) {
        if (used[static_cast<std::size_t>(j)]) {
          u[static_cast<std::size_t>(p[static_cast<std::size_t>(j)])] += delta;
          v[static_cast<std::size_t>(j)] -= delta;
        } else {
          minv[static_cast<std::size_t>(j)] -= delta;
        }
      }
      j0 = j1;
    } while (p[static_cast<std::size_t>(j0)] != 0);
    do {
      const int j1 = way[static_cast<std::size_t>(j0)];
      p[static_cast<std::size_t>(j0)] = p[static_cast<std::size_t>(j1)];
      j0 = j1;
    } while (j0);
  }
  std::vector<int> row_to_col(static_cast<std::size_t>(n));
  for (int j = 1; j <= n; ++j) row_to_col[static_cast<std::size_t>(p[static_cast<std::size_t>(j)] - 1)] = j - 1;
  return row_to_col;
}

MemAE fedavg(const std::vector<ClientModel>& clients) {
  if (clients.empty()) throw std::invalid_argument("fedavg: no clients");
  double total = 0;
  for (auto& c : clients) total += c.samples;
  if (total <= 0) throw std::invalid_argument("fedavg: clients hold no samples");
  Vec p = Vec::Zero(static_cast<Eigen::Index>(clients.front().model->param_count()));
  for (auto& c : clients) p += (c.samples / total) * c.model->params();
  MemAE g = *clients.front().model;
  g.set_params(p);
  return g;
}

MemAE attention_aware(const MemAE& global, const std::vector<ClientModel>& clients, std::uint64_t seed) {
  MemAE g = fedavg(clients);  // every parameter but the memory
  const Eigen::Index N = global.M.rows(), C = global.M.cols();
  auto normalized = [](const Mat& m) {
    Mat r = m;
    for (Eigen::Index i = 0; i < r.rows(); ++i) {
      const double n = r.row(i).norm();
      if (n > 0) r.row(i) /= n;
    }
    return r;
  };
  const Mat gn = normalized(global.M);
  Mat acc = Mat::Zero(N, C);
  Vec weight = Vec::Zero(N);
  for (auto& c : clients) {
    const Mat cn = normalized(c.model->M);
    const Mat cost = -(cn * gn.transpose());  // client slot x global slot
    const auto match = hungarian(cost);
    for (Eigen::Index i = 0; i < N; ++i) {
      const double u = c.usage.size() == N ? c.usage(i) : 1.0 / static_cast<double>(N);
      const double w = c.samples * u;
      const Eigen::Index j = match[static_cast<std::size_t>(i)];
      acc.row(j) += w * c.model->M.row(i);
      weight(j) += w;
    }
  }
  Eigen::Index most = 0;
  weight.maxCoeff(&most);
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> noise(0, 1);
  for (Eigen::Index j = 0; j < N; ++j)
    if (weight(j) > 0) g.M.row(j) = acc.row(j) / weight(j);
  const double scale = weight(most) > 0 ? (acc.row(most) / weight(most)).norm() : 1.0;
  for (Eigen::Index j = 0; j < N; ++j)
    if (weight(j) <= 0) {  // nobody uses it: re-seed near the most used slot
      for (Eigen::Index k = 0; k < C; ++k)
        g.M(j, k) = g.M(most, k) + 0.1 * scale * noise(rng) / std::sqrt(static_cast<double>(C));
    }
  return g;
}

}  // namespace scout::learn

namespace scout::learn {

MemAE clustered_memory(const MemAE& global, const std::vector<ClientModel>& clients, std::uint64_t seed) {
  MemAE g = fedavg(clients);  // every parameter but the memory
  const Eigen::Index N = global.M.rows(), C = global.M.cols();
  // The points: every client's used slots, weighted by samples x usage.
  std::vector<Eigen::RowVectorXd> pts;
  std::vector<double> w;
  auto gather = [&](double floor) {
    for (auto& c : clients)
      for (Eigen::Index i = 0; i < N; ++i) {
        const double u = c.usage.size() == N ? c.usage(i) : 1.0 / static_cast<double>(N);
        if (u < floor || c.samples <= 0) continue;
        pts.push_back(c.model->M.row(i));
        w.push_back(c.samples * std::max(u, 1e-12));
      }
  };
  gather(0.1 / static_cast<double>(N));
  if (pts.empty()) gather(-1);
  const std::size_t P = pts.size();
  // Farthest-point initialisation (weight x squared distance), independent
  // of the order the slots come in: the heaviest point first.
  std::vector<Eigen::RowVectorXd> cen;
  std::vector<double> dmin(P, std::numeric_limits<double>::infinity());
  auto better = [&](std::size_t a, std::size_t b, double sa, double sb) {
    if (sa != sb) return sa > sb;
    // a total order on ties: lexicographic on the coordinates
    for (Eigen::Index k = 0; k < C; ++k)
      if (pts[a](k) != pts[b](k)) return pts[a](k) < pts[b](k);
    return false;
  };
  {
    std::size_t first = 0;
    for (std::size_t p = 1; p < P; ++p)
      if (better(p, first, w[p], w[first])) first = p;
    cen.push_back(pts[first]);
  }
  while (static_cast<Eigen::Index>(cen.size()) < N) {
    std::size_t best = P;
    double bs = 0;
    for (std::size_t p = 0; p < P; ++p) {
      dmin[p] = std::min(dmin[p], (pts[p] - cen.back()).squaredNorm());
      const double s = w[p] * dmin[p];
      if (s > 0 && (best == P || better(p, best, s, bs))) { best = p; bs = s; }
    }
    if (best == P) break;  // fewer distinct points than slots
    cen.push_back(pts[best]);
  }
  const Eigen::Index K = static_cast<Eigen::Index>(cen.size());
  std::vector<Eigen::Index> assign(P, -1);
  for (int it = 0; it < 30; ++it) {
    bool changed = false;
    for (std::size_t p = 0; p < P; ++p) {
      Eigen::Index b = 0;
      double bd = std::numeric_limits<double>::infinity();
      for (Eigen::Index k = 0; k < K; ++k) {
        const double d = (pts[p] - cen[static_cast<std::size_t>(k)]).squaredNorm();
        if (d < bd) { bd = d; b = k; }
      }
      if (assign[p] != b) { assign[p] = b; changed = true; }
    }
    if (!changed && it > 0) break;
    std::vector<Eigen::RowVectorXd> acc(static_cast<std::size_t>(K), Eigen::RowVectorXd::Zero(C));
    std::vector<double> aw(static_cast<std::size_t>(K), 0);
    for (std::size_t p = 0; p < P; ++p) {
      acc[static_cast<std::size_t>(assign[p])] += w[p] * pts[p];
      aw[static_cast<std::size_t>(assign[p])] += w[p];
    }
    for (Eigen::Index k = 0; k < K; ++k)
      if (aw[static_cast<std::size_t>(k)] > 0) cen[static_cast<std::size_t>(k)] = acc[static_cast<std::size_t>(k)] / aw[static_cast<std::size_t>(k)];
  }
  // Each centroid goes to the global slot it is nearest to (a Hungarian
  // assignment): slot j stays slot j from round to round, so a server
  // optimiser's momentum on the memory moves one pattern, not a mix. Slots
  // left over (fewer patterns than slots) are re-seeded below.
  Mat cost = Mat::Constant(N, N, 0.0);
  {
    double big = 0;
    for (Eigen::Index k = 0; k < K; ++k)
      for (Eigen::Index j = 0; j < N; ++j) big = std::max(big, cost(k, j) = (cen[static_cast<std::size_t>(k)] - global.M.row(j)).squaredNorm());
    for (Eigen::Index k = K; k < N; ++k) cost.row(k).setConstant(big + 1);  // dummies take what is left
  }
  const auto slot_of = hungarian(cost);
  std::vector<char> filled(static_cast<std::size_t>(N), 0);
  for (Eigen::Index k = 0; k < K; ++k) {
    const Eigen::Index j = slot_of[static_cast<std::size_t>(k)];
    g.M.row(j) = cen[static_cast<std::size_t>(k)];
    filled[static_cast<std::size_t>(j)] = 1;
  }
  Eigen::Index heaviest = slot_of[0];
  // Fewer distinct patterns than slots: the rest near the heaviest one.
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> noise(0, 1);
  const Eigen::RowVectorXd base = g.M.row(heaviest);
  const double scale = std::max(1e-6, base.norm());
  for (Eigen::Index j = 0; j < N; ++j)
    if (!filled[static_cast<std::size_t>(j)])
      for (Eigen::Index k = 0; k < C; ++k)
        g.M(j, k) = base(k) + 0.1 * scale * noise(rng) / std::sqrt(static_cast<double>(C));
  return g;
}

namespace {
void size_state(ServerState& s, Eigen::Index n) {
  if (s.m.size() != n) { s.m = Vec::Zero(n); s.v = Vec::Zero(n); s.t = 0; }
}
}  // namespace

Aggregate server_step(const MemAE& global, const MemAE& candidate, const ServerState& state, const ServerOptions& o,
                      ServerOptimiser how) {
  const Vec d = candidate.params() - global.params();
  Aggregate r{global, state};
  size_state(r.state, d.size());
  ++r.state.t;
  if (how == ServerOptimiser::kMomentum) {
    r.state.m = o.beta1 * r.state.m + d;
    r.model.set_params(global.params() + o.lr * r.state.m);
  } else {
    r.state.m = o.beta1 * r.state.m + (1 - o.beta1) * d;
    r.state.v = o.beta2 * r.state.v + (1 - o.beta2) * d.cwiseAbs2();
    r.model.set_params(global.params() + o.lr * (r.state.m.array() / (r.state.v.array().sqrt() + o.tau)).matrix());
  }
  return r;
}

Aggregate fedavgm(const MemAE& global, const std::vector<ClientModel>& clients, const ServerState& state,
                  const ServerOptions& o) {
  return server_step(global, fedavg(clients), state, o, ServerOptimiser::kMomentum);
}

Aggregate fedadam(const MemAE& global, const std::vector<ClientModel>& clients, const ServerState& state,
                  const ServerOptions& o) {
  return server_step(global, fedavg(clients), state, o, ServerOptimiser::kAdam);
}

MemAE personalise(const MemAE& global, const Mat& data, const PersonaliseOptions& o) {
  MemAE m = global;
  if (data.rows() == 0 || o.steps <= 0) return m;
  TrainOptions t;
  t.memory_only = true;
  t.epochs = 1 << 20;
  t.max_steps = o.steps;
  t.batch = o.batch;
  t.lr = o.lr;
  t.seed = o.seed;
  t.prox_mu = o.prox_mu;
  const Vec anchor = global.params();
  Adam a;
  train(m, data, t, a, &anchor);
  return m;
}

Aggregate aggregate(Aggregation how, const MemAE& global, const std::vector<ClientModel>& clients,
                    const ServerState& state, std::uint64_t seed, const ServerConfig& cfg) {
  switch (how) {
    case Aggregation::kFedAvgM: return fedavgm(global, clients, state, cfg.momentum);
    case Aggregation::kFedAdam: return fedadam(global, clients, state, cfg.adam);
    case Aggregation::kMatched: return {attention_aware(global, clients, seed), state};
    case Aggregation::kClustered: return {clustered_memory(global, clients, seed), state};
    case Aggregation::kPersonalised:
      return server_step(global, clustered_memory(global, clients, seed), state, cfg.adam, ServerOptimiser::kAdam);
    case Aggregation::kFedAvg: break;
  }
  return {fedavg(clients), state};
}

bool needs_usage(Aggregation how) noexcept {
  return how == Aggregation::kMatched || how == Aggregation::kClustered || how == Aggregation::kPersonalised;
}

}  // namespace scout::learn
