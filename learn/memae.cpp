// MemAE forward, analytic backward, Adam training (see memae.hpp).
#include "learn/memae.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace scout::learn {

namespace {
constexpr double kShrinkEps = 1e-12;  // in the continuous hard shrinkage
constexpr double kNormEps = 1e-12;    // renormalisation and cosine norms
constexpr double kLogEps = 1e-12;     // entropy

void xavier(Mat& w, std::mt19937_64& rng) {
  const double a = std::sqrt(6.0 / static_cast<double>(w.rows() + w.cols()));
  std::uniform_real_distribution<double> u(-a, a);
  for (Eigen::Index i = 0; i < w.size(); ++i) w.data()[i] = u(rng);
}
}  // namespace

struct MemAE::Cache {
  Mat A1, H1, Z, Zn, Mn, S, W, U, What, Zhat, A3, H3, Xhat;
  Vec znorm, mnorm, usum;
};

MemAE::MemAE(MemAEShape s, MemAEOptions o, std::uint64_t seed) : shape_(s), opt_(o) {
  std::mt19937_64 rng(seed);
  W1.resize(s.hidden, s.input);
  W2.resize(s.code, s.hidden);
  W3.resize(s.hidden, s.code);
  W4.resize(s.input, s.hidden);
  xavier(W1, rng);
  xavier(W2, rng);
  xavier(W3, rng);
  xavier(W4, rng);
  b1 = Vec::Zero(s.hidden);
  b2 = Vec::Zero(s.code);
  b3 = Vec::Zero(s.hidden);
  b4 = Vec::Zero(s.input);
  M.resize(s.slots, s.code);
  std::normal_distribution<double> n(0, 1);
  for (Eigen::Index i = 0; i < M.size(); ++i) M.data()[i] = n(rng) / std::sqrt(static_cast<double>(s.code));
}

std::size_t MemAE::param_count() const {
  return static_cast<std::size_t>(W1.size() + b1.size() + W2.size() + b2.size() + M.size() + W3.size() +
                                  b3.size() + W4.size() + b4.size());
}

std::size_t MemAE::memory_offset() const {
  return static_cast<std::size_t>(W1.size() + b1.size() + W2.size() + b2.size());
}

Vec MemAE::params() const {
  Vec p(static_cast<Eigen::Index>(param_count()));
  Eigen::Index k = 0;
  for (const Mat* m : {&W1}) { p.segment(k, m->size()) = Eigen::Map<const Vec>(m->data(), m->size()); k += m->size(); }
  auto put = [&](const double* d, Eigen::Index n) { p.segment(k, n) = Eigen::Map<const Vec>(d, n); k += n; };
  put(b1.data(), b1.size());
  put(W2.data(), W2.size());
  put(b2.data(), b2.size());
  put(M.data(), M.size());
  put(W3.data(), W3.size());
  put(b3.data(), b3.size());
  put(W4.data(), W4.size());
  put(b4.data(), b4.size());
  return p;
}

void MemAE::set_params(const Vec& p) {
  Eigen::Index k = 0;
  auto get = [&](double* d, Eigen::Index n) { Eigen::Map<Vec>(d, n) = p.segment(k, n); k += n; };
  get(W1.data(), W1.size());
  get(b1.data(), b1.size());
  get(W2.data(), W2.size());
  get(b2.data(), b2.size());
  get(M.data(), M.size());
  get(W3.data(), W3.size());
  get(b3.data(), b3.size());
  get(W4.data(), W4.size());
  get(b4.data(), b4.size());
}

void MemAE::forward(const Mat& x, Cache& c) const {
  const double lam = lambda();
  c.A1 = (W1 * x).colwise() + b1;
  c.H1 = c.A1.array().tanh().matrix();
  c.Z = (W2 * c.H1).colwise() + b2;
  c.znorm = c.Z.colwise().norm().transpose().array() + kNormEps;
  c.Zn = c.Z * c.znorm.cwiseInverse().asDiagonal();
  c.mnorm = M.rowwise().norm().array() + kNormEps;
  c.Mn = c.mnorm.cwiseInverse().asDiagonal() * M;
  c.S = opt_.scale * (c.Mn * c.Zn);  // N x B
  c.W.resize(c.S.rows(), c.S.cols());
  for (Eigen::Index b = 0; b < c.S.cols(); ++b) {
    const double mx = c.S.col(b).maxCoeff();
    c.W.col(b) = (c.S.col(b).array() - mx).exp().matrix();
    c.W.col(b) /= c.W.col(b).sum();
  }
  c.U = c.W.unaryExpr([lam](double w) {
    const double d = w - lam;
    return d > 0 ? d * w / (d + kShrinkEps) : 0.0;
  });
  c.usum = c.U.colwise().sum().transpose().array() + kNormEps;
  c.What = c.U * c.usum.cwiseInverse().asDiagonal();
  c.Zhat = M.transpose() * c.What;
  c.A3 = (W3 * c.Zhat).colwise() + b3;
  c.H3 = c.A3.array().tanh().matrix();
  c.Xhat = (W4 * c.H3).colwise() + b4;
}

double MemAE::loss(const Mat& x, Vec* grad) const {
  Cache c;
  forward(x, c);
  const double B = static_cast<double>(x.cols()), D = static_cast<double>(x.rows());
  const Mat diff = c.Xhat - x;
  const Mat ent = -(c.What.array() * (c.What.array() + kLogEps).log()).matrix();
  const double L = diff.squaredNorm() / (D * B) + opt_.alpha * ent.sum() / B;
  if (!grad) return L;
  const double lam = lambda();
  const Mat dXhat = diff * (2.0 / (D * B));
  const Mat dW4 = dXhat * c.H3.transpose();
  const Vec db4 = dXhat.rowwise().sum();
  const Mat dA3 = ((W4.transpose() * dXhat).array() * (1.0 - c.H3.array().square())).matrix();
  const Mat dW3 = dA3 * c.Zhat.transpose();
  const Vec db3 = dA3.rowwise().sum();
  const Mat dZhat = W3.transpose() * dA3;
  Mat dM = c.What * dZhat.transpose();
  Mat dWhat = M * dZhat;
  dWhat.array() += (opt_.alpha / B) *
                   (-((c.What.array() + kLogEps).log() + c.What.array() / (c.What.array() + kLogEps)));
  // renormalisation
  Mat dU(dWhat.rows(), dWhat.cols());
  for (Eigen::Index b = 0; b < dWhat.cols(); ++b) {
    const double dot = dWhat.col(b).dot(c.What.col(b));
    dU.col(b) = (dWhat.col(b).array() - dot).matrix() / c.usum(b);
  }
  // shrinkage
  Mat dW(dU.rows(), dU.cols());
  for (Eigen::Index i = 0; i < dU.size(); ++i) {
    const double w = c.W.data()[i], d = w - lam;
    double g = 0;
    if (d > 0) {
      const double den = d + kShrinkEps;
      g = ((2 * w - lam) * den - d * w) / (den * den);
    }
    dW.data()[i] = dU.data()[i] * g;
  }
  // softmax
  Mat dS(dW.rows(), dW.cols());
  for (Eigen::Index b = 0; b < dW.cols(); ++b) {
    const double dot = dW.col(b).dot(c.W.col(b));
    dS.col(b) = (c.W.col(b).array() * (dW.col(b).array() - dot)).matrix();
  }
  // cosine similarity
  const Mat dZn = opt_.scale * (c.Mn.transpose() * dS);
  const Mat dMn = opt_.scale * (dS * c.Zn.transpose());
  Mat dZ(dZn.rows(), dZn.cols());
  for (Eigen::Index b = 0; b < dZn.cols(); ++b)
    dZ.col(b) = (dZn.col(b) - c.Zn.col(b) * c.Zn.col(b).dot(dZn.col(b))) / c.znorm(b);
  for (Eigen::Index i = 0; i < dMn.rows(); ++i)
    dM.row(i) += (dMn.row(i) - c.Mn.row(i) * c.Mn.row(i).dot(dMn.row(i))) / c.mnorm(i);
  const Mat dW2 = dZ * c.H1.transpose();
  const Vec db2 = dZ.rowwise().sum();
  const Mat dA1 = ((W2.transpose() * dZ).array() * (1.0 - c.H1.array().square())).matrix();
  const Mat dW1 = dA1 * x.transpose();
  const Vec db1 = dA1.rowwise().sum();
  MemAE g = *this;
  g.W1 = dW1;
  g.b1 = db1;
  g.W2 = dW2;
  g.b2 = db2;
  g.M = dM;
  g.W3 = dW3;
  g.b3 = db3;
  g.W4 = dW4;
  g.b4 = db4;
  *grad = g.params();
  return L;
}

Vec MemAE::score(const Mat& x) const {
  Cache c;
  forward(x, c);
  return (c.Xhat - x).colwise().squaredNorm().transpose() / static_cast<double>(x.rows());
}

Mat MemAE::reconstruct(const Mat& x) const {
  Cache c;
  forward(x, c);
  return c.Xhat;
}

Vec MemAE::usage(const Mat& x) const {
  Cache c;
  forward(x, c);
  return c.What.rowwise().mean();
}

Mat MemAE::encode(const Mat& x) const {
  const Mat h = ((W1 * x).colwise() + b1).array().tanh().matrix();
  return (W2 * h).colwise() + b2;
}

double train(MemAE& model, const Mat& data, const TrainOptions& o, Adam& adam, const Vec* anchor) {
  const Eigen::Index n = data.rows();
  if (n == 0) return 0;
  Vec p = model.params();
  if (adam.m.size() != p.size()) {
    adam.m = Vec::Zero(p.size());
    adam.v = Vec::Zero(p.size());
    adam.t = 0;
  }
  std::mt19937_64 rng(o.seed);
  std::vector<Eigen::Index> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  constexpr double b1 = 0.9, b2 = 0.999, eps = 1e-8;
  double last = 0;
  Vec g;
  Mat batch;
  const Eigen::Index mem_at = static_cast<Eigen::Index>(model.memory_offset()), mem_n = model.M.size();
  long steps = 0;
  for (int e = 0; e < o.epochs && (o.max_steps <= 0 || steps < o.max_steps); ++e) {
    std::shuffle(order.begin(), order.end(), rng);
    double sum = 0;
    long nb = 0;
    for (Eigen::Index s = 0; s < n && (o.max_steps <= 0 || steps < o.max_steps); s += o.batch, ++steps) {
      const Eigen::Index m = std::min<Eigen::Index>(o.batch, n - s);
      batch.resize(data.cols(), m);
      for (Eigen::Index k = 0; k < m; ++k) batch.col(k) = data.row(order[static_cast<std::size_t>(s + k)]).transpose();
      sum += model.loss(batch, &g);
      ++nb;
      if (o.prox_mu > 0 && anchor) g += o.prox_mu * (p - *anchor);
      if (o.memory_only) {
        g.head(mem_at).setZero();
        g.tail(g.size() - mem_at - mem_n).setZero();
      }
      ++adam.t;
      adam.m = b1 * adam.m + (1 - b1) * g;
      adam.v = b2 * adam.v + (1 - b2) * g.cwiseAbs2();
      const double c1 = 1 - std::pow(b1, static_cast<double>(adam.t)), c2 = 1 - std::pow(b2, static_cast<double>(adam.t));
      p.array() -= o.lr * (adam.m.array() / c1) / ((adam.v.array() / c2).sqrt() + eps);
      model.set_params(p);
    }
    last = sum / static_cast<double>(std::max(1L, nb));
  }
  return last;
}

std::vector<double> to_wire(const MemAE& m) {
  Vec p = m.params();
  return {p.data(), p.data() + p.size()};
}

void from_wire(MemAE& m, const std::vector<double>& w) {
  m.set_params(Eigen::Map<const Vec>(w.data(), static_cast<Eigen::Index>(w.size())));
}

}  // namespace scout::learn
