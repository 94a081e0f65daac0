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

TEST_CASE("permuting a client's memory slots changes neither the matched nor the clustered result") {
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
  auto k1 = clustered_memory(global, {{&c1, 10, u1}, {&c2, 20, u2}}, 3);
  auto k2 = clustered_memory(global, {{&c1, 10, u1}, {&c2p, 20, u2p}}, 3);
  CHECK((k1.params() - k2.params()).norm() < 1e-9);
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

namespace {
// Every row of `a` has a row of `b` within tol (memory equality up to order).
bool same_slots(const Mat& a, const Mat& b, double tol) {
  for (Eigen::Index i = 0; i < a.rows(); ++i) {
    double best = 1e300;
    for (Eigen::Index j = 0; j < b.rows(); ++j) best = std::min(best, (a.row(i) - b.row(j)).norm());
    if (best > tol) return false;
  }
  return true;
}
}  // namespace

TEST_CASE("clustered memory: identical clients give back the same model, up to the order of the slots") {
  MemAE m({3, 8, 3, 6}, {}, 5);
  Vec usage = Vec::Constant(6, 1.0 / 6);
  std::vector<ClientModel> cs = {{&m, 10, usage}, {&m, 30, usage}, {&m, 5, usage}};
  auto g = clustered_memory(m, cs, 1);
  CHECK(same_slots(g.M, m.M, 1e-12));
  CHECK(same_slots(m.M, g.M, 1e-12));
  const Mat x = gaussian_data(3, 20, 9);
  CHECK((g.score(x) - m.score(x)).norm() < 1e-9);  // the memory is addressed by content, not position
}

TEST_CASE("clustered memory holds the patterns of all clients; matching merges them") {
  // Two clients, each using two of four slots, on four distinct patterns.
  MemAE global({3, 8, 2, 4}, {}, 5);
  MemAE a = global, b = global;
  a.M << 1, 0, 0, 1, 0.1, 0.1, 0.1, 0.1;
  b.M << -1, 0, 0, -1, 0.1, 0.1, 0.1, 0.1;
  Vec u(4);
  u << 0.5, 0.5, 0, 0;
  std::vector<ClientModel> cs = {{&a, 10, u}, {&b, 10, u}};
  Mat want(4, 2);
  want << 1, 0, 0, 1, -1, 0, 0, -1;
  CHECK(same_slots(want, clustered_memory(global, cs, 1).M, 1e-9));
  CHECK_FALSE(same_slots(want, attention_aware(global, cs, 1).M, 0.1));
}

TEST_CASE("FedAvgM: the first round with identical clients gives their model; momentum carries over") {
  MemAE g({3, 8, 3, 6}, {}, 5), c({3, 8, 3, 6}, {}, 6);
  ServerOptions o;  // lr 1, beta 0.9
  std::vector<ClientModel> cs = {{&c, 10, {}}, {&c, 20, {}}};
  auto r1 = fedavgm(g, cs, ServerState{}, o);
  CHECK((r1.model.params() - c.params()).norm() < 1e-12);
  // Clients that come back unchanged: the momentum still moves the model.
  std::vector<ClientModel> same = {{&r1.model, 10, {}}};
  auto r2 = fedavgm(r1.model, same, r1.state, o);
  CHECK((r2.model.params() - (c.params() + 0.9 * (c.params() - g.params()))).norm() < 1e-9);
  // And a fresh state does not: the function keeps no state of its own.
  CHECK((fedavgm(r1.model, same, ServerState{}, o).model.params() - r1.model.params()).norm() < 1e-12);
}

TEST_CASE("FedAdam moves every parameter towards the clients by at most about lr") {
  MemAE g({3, 8, 3, 6}, {}, 5), c({3, 8, 3, 6}, {}, 6);
  ServerOptions o;
  o.lr = 0.01;
  auto r = fedadam(g, {{&c, 1, {}}}, ServerState{}, o);
  const Vec step = r.model.params() - g.params(), d = c.params() - g.params();
  for (Eigen::Index i = 0; i < d.size(); ++i) {
    CHECK(std::abs(step(i)) <= o.lr * (1 - o.beta1) / std::sqrt(1 - o.beta2) + 1e-12);
    if (std::abs(d(i)) > 1e-6) CHECK(step(i) * d(i) > 0);
  }
  CHECK((fedadam(g, {{&g, 1, {}}}, ServerState{}, o).model.params() - g.params()).norm() < 1e-12);
}

TEST_CASE("personalise moves only the memory and fits the node's own data better") {
  MemAE g({4, 8, 3, 6}, {}, 5);
  TrainOptions t;
  t.epochs = 20;
  Adam a;
  train(g, gaussian_data(200, 4, 1), t, a);  // the shared model
  const Mat node = gaussian_data(150, 4, 2, 1.5);  // a node whose normal is elsewhere
  PersonaliseOptions po;
  po.steps = 200;
  po.lr = 1e-2;
  MemAE p = personalise(g, node, po);
  const Vec gp = g.params(), pp = p.params();
  const auto off = static_cast<Eigen::Index>(g.memory_offset());
  CHECK((gp.head(off) - pp.head(off)).norm() == 0);
  CHECK((gp.tail(gp.size() - off - g.M.size()) - pp.tail(pp.size() - off - g.M.size())).norm() == 0);
  CHECK((g.M - p.M).norm() > 1e-3);
  CHECK(p.score(node.transpose()).mean() < g.score(node.transpose()).mean());
  CHECK((personalise(g, Mat(0, 4), po).params() - gp).norm() == 0);  // no data: the global model
  CHECK((personalise(g, node, po).params() - pp).norm() == 0);        // deterministic
  po.prox_mu = 10;  // Ditto's proximal term keeps the memory nearer the global one
  CHECK((personalise(g, node, po).M - g.M).norm() < (p.M - g.M).norm());
}

TEST_CASE("aggregation names round-trip") {
  for (auto a : {Aggregation::kFedAvg, Aggregation::kFedAvgM, Aggregation::kFedAdam, Aggregation::kMatched,
                 Aggregation::kClustered, Aggregation::kPersonalised}) {
    Aggregation b = Aggregation::kFedAvg;
    CHECK(parse_aggregation(aggregation_name(a), b));
    CHECK(b == a);
  }
  Aggregation b;
  CHECK_FALSE(parse_aggregation("attention", b));
  CHECK_FALSE(parse_aggregation("", b));
}

TEST_CASE("every aggregation keeps a global model its clients all came back with unchanged") {
  MemAE g({3, 8, 3, 6}, {}, 5);
  Vec usage = Vec::Constant(6, 1.0 / 6);
  std::vector<ClientModel> cs = {{&g, 10, usage}, {&g, 30, usage}};
  for (auto a : {Aggregation::kFedAvg, Aggregation::kFedAvgM, Aggregation::kFedAdam, Aggregation::kMatched,
                 Aggregation::kClustered, Aggregation::kPersonalised}) {
    CAPTURE(aggregation_name(a));
    auto r = aggregate(a, g, cs, ServerState{}, 1);
    CHECK((r.model.params() - g.params()).norm() < 1e-12);
    CHECK(needs_usage(a) == (a == Aggregation::kMatched || a == Aggregation::kClustered || a == Aggregation::kPersonalised));
  }
}

TEST_CASE("the personalised server is clustered memory stepped by the server Adam") {
  MemAE g({3, 8, 3, 6}, {}, 5), c1({3, 8, 3, 6}, {}, 6), c2({3, 8, 3, 6}, {}, 7);
  Vec u = Vec::Constant(6, 1.0 / 6);
  std::vector<ClientModel> cs = {{&c1, 10, u}, {&c2, 20, u}};
  ServerConfig sc;
  auto r = aggregate(Aggregation::kPersonalised, g, cs, ServerState{}, 3, sc);
  auto want = server_step(g, clustered_memory(g, cs, 3), ServerState{}, sc.adam, ServerOptimiser::kAdam);
  CHECK((r.model.params() - want.model.params()).norm() < 1e-12);
  CHECK(r.state.t == 1);
  // The state carries over: a second round from it differs from a fresh one.
  auto r2 = aggregate(Aggregation::kPersonalised, r.model, cs, r.state, 4, sc);
  auto fresh = aggregate(Aggregation::kPersonalised, r.model, cs, ServerState{}, 4, sc);
  CHECK((r2.model.params() - fresh.model.params()).norm() > 1e-6);
}
