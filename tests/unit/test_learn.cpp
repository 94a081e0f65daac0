// MemAE gradients against finite differences, determinism, learning, and
// the aggregation invariants (FedAvg weights by samples; identical clients
// give back the same model; permuting a client's memory slots does not
// change the attention-aware result).
#include <doctest/doctest.h>

#include <algorithm>
#include <numeric>
#include <random>

#include "learn/aggregate.hpp"
#include "learn/memae.hpp"

using namespace scout::learn;

namespace {
Mat gaussian_data(int rows, int cols, std::uint64_t seed, double shift = 0) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> n(0, 1);
  Mat m(rows, cols);
  for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = n(rng) + shift;
  return m;
}
}  // namespace

TEST_CASE("analytic gradients match central finite differences") {
  for (double alpha : {0.0, 0.05}) {
    CAPTURE(alpha);
    MemAE m({5, 6, 4, 6}, {0.02, alpha, 3.0}, 7);
    const Mat x = gaussian_data(5, 8, 3);  // columns are samples
    Vec g;
    m.loss(x, &g);
    CHECK(g.norm() > 1e-3);
    CHECK(g.segment(static_cast<Eigen::Index>(m.memory_offset()), m.M.size()).norm() > 1e-6);
    const Vec p = m.params();
    double worst = 0;
    for (Eigen::Index i = 0; i < p.size(); ++i) {
      const double h = 1e-6;
      Vec a = p, b = p;
      a(i) += h;
      b(i) -= h;
      MemAE ma = m, mb = m;
      ma.set_params(a);
      mb.set_params(b);
      const double fd = (ma.loss(x, nullptr) - mb.loss(x, nullptr)) / (2 * h);
      const double err = std::abs(fd - g(i)) / std::max(1e-6, std::abs(fd) + std::abs(g(i)));
      worst = std::max(worst, err);
    }
    CHECK(worst < 1e-4);
  }
}

TEST_CASE("parameters round-trip; training is deterministic for a seed and learns") {
  MemAE m({6, 16, 4, 10}, {}, 11);
  Vec p = m.params();
  MemAE n({6, 16, 4, 10}, {}, 99);
  n.set_params(p);
  CHECK(n.params() == p);
  CHECK(to_wire(m).size() == m.param_count());

  const Mat data = gaussian_data(200, 6, 5).transpose().transpose();  // rows are samples
  MemAE a = m, b = m;
  Adam sa, sb;
  TrainOptions o;
  o.epochs = 3;
  o.seed = 4;
  train(a, data, o, sa);
  train(b, data, o, sb);
  CHECK(a.params() == b.params());
  const double before = m.loss(data.transpose(), nullptr);
  o.epochs = 30;
  Adam s2;
  train(a, data, o, s2);
  CHECK(a.loss(data.transpose(), nullptr) < 0.7 * before);
}

TEST_CASE("reconstruction error scores points far from the training data higher") {
  MemAE m({4, 16, 3, 10}, {}, 1);
  // Normal data on a line in 4-D plus small noise; outliers off it.
  std::mt19937_64 rng(2);
  std::normal_distribution<double> n(0, 1);
  Mat train_rows(400, 4);
  for (int i = 0; i < 400; ++i) {
    const double t = n(rng);
    train_rows.row(i) << t, 2 * t, -t, 0.5 * t;
    train_rows.row(i) += 0.05 * Eigen::RowVector4d(n(rng), n(rng), n(rng), n(rng));
  }
  Adam s;
  TrainOptions o;
  o.epochs = 60;
  o.lr = 3e-3;
  train(m, train_rows, o, s);
  Mat normal(4, 50), odd(4, 50);
  for (int i = 0; i < 50; ++i) {
    const double t = n(rng);
    normal.col(i) << t, 2 * t, -t, 0.5 * t;
    odd.col(i) << t, -2 * t, 2, -1;
  }
  CHECK(m.score(odd).mean() > 3 * m.score(normal).mean());
}

TEST_CASE("hungarian finds the minimum-cost assignment") {
  Mat c(4, 4);
  c << 4, 1, 3, 9,
       2, 0, 5, 8,
       3, 2, 2, 7,
       9, 8, 7, 1;
  auto a = hungarian(c);
  double best = 1e9;
  std::vector<int> perm = {0, 1, 2, 3};
  do {
    double s = 0;
    for (int i = 0; i < 4; ++i) s += c(i, perm[static_cast<std::size_t>(i)]);
    best = std::min(best, s);
  } while (std::next_permutation(perm.begin(), perm.end()));
  double got = 0;
  for (int i = 0; i < 4; ++i) got += c(i, a[static_cast<std::size_t>(i)]);
  CHECK(got == best);
}

TEST_CASE("FedAvg weights by samples") {
  MemAE a({3, 4, 2, 3}, {}, 1), b({3, 4, 2, 3}, {}, 2);
  auto g = fedavg({{&a, 1, {}}, {&b, 3, {}}});
  CHECK((g.params() - (0.25 * a.params() + 0.75 * b.params())).norm() < 1e-12);
}

TEST_CASE("identical clients give back the same model") {
  MemAE m({3, 8, 3, 6}, {}, 5);
  Vec usage = Vec::Constant(6, 1.0 / 6);
  std::vector<ClientModel> cs = {{&m, 10, usage}, {&m, 30, usage}, {&m, 5, usage}};
  CHECK((fedavg(cs).params() - m.params()).norm() < 1e-12);
  CHECK((attention_aware(m, cs, 1).params() - m.params()).norm() < 1e-12);
}

TEST_CASE("permuting a client's memory slots does not change the attention-aware result") {
  MemAE global({3, 8, 3, 6}, {}, 5);
  MemAE c1({3, 8, 3, 6}, {}, 6), c2({3, 8, 3, 6}, {}, 7);
  Vec u1(6), u2(6);
  u1 << 0.3, 0.2, 0.1, 0.2, 0.1, 0.1;
  u2 << 0.1, 0.1, 0.4, 0.1, 0.2, 0.1;
  auto g1 = attention_aware(global, {{&c1, 10, u1}, {&c2, 20, u2}}, 3);
  // Same client 2 with its slots (and usage) in another order.
  std::vector<int> perm = {4, 2, 0, 5, 1, 3};
  MemAE c2p = c2;
  Vec u2p(6);
  for (int i = 0; i < 6; ++i) {
    c2p.M.row(i) = c2.M.row(perm[static_cast<std::size_t>(i)]);
    u2p(i) = u2(perm[static_cast<std::size_t>(i)]);
  }
  auto g2 = attention_aware(global, {{&c1, 10, u1}, {&c2p, 20, u2p}}, 3);
  CHECK((g1.params() - g2.params()).norm() < 1e-12);
  // FedAvg is not invariant: it mixes unrelated slots.
  CHECK((fedavg({{&c1, 10, u1}, {&c2, 20, u2}}).M - fedavg({{&c1, 10, u1}, {&c2p, 20, u2p}}).M).norm() > 1e-3);
}

TEST_CASE("slots nobody uses are re-seeded near the most used one") {
  MemAE global({3, 8, 3, 4}, {}, 5);
  MemAE c = global;
  Vec u(4);
  u << 0.7, 0.3, 0, 0;
  auto g = attention_aware(global, {{&c, 10, u}}, 9);
  CHECK((g.M.row(0) - c.M.row(0)).norm() < 1e-12);
  CHECK((g.M.row(2) - g.M.row(0)).norm() < 0.5 * g.M.row(0).norm());
  CHECK((g.M.row(2) - g.M.row(3)).norm() > 0);
}
