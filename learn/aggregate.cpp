// FedAvg and attention-aware memory aggregation (see aggregate.hpp).
#include "learn/aggregate.hpp"

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
