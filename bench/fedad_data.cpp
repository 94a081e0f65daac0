// bench/fedad's data: a labelled CSV, k-means clusters, the clients of each
// split (see fedad.hpp).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <map>
#include <mutex>
#include <numeric>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>
#include <fmt/format.h>

#include "bench/fedad.hpp"

namespace fedad {

std::vector<std::string> split_csv_line(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  bool q = false;
  for (char ch : line) {
    if (ch == '"') q = !q;
    else if (ch == ',' && !q) { out.push_back(cur); cur.clear(); }
    else if (ch != '\r') cur += ch;
  }
  out.push_back(cur);
  return out;
}

Dataset load_csv(const std::string& path, const std::string& label, const std::set<std::string>& normal,
                 const std::set<std::string>& outlier, const std::set<std::string>& drop, const std::string& client_col) {
  std::ifstream in(path);
  if (!in) usage("--csv " + path + ": cannot open");
  std::string line;
  if (!std::getline(in, line)) usage("--csv " + path + ": empty file; expected a header line");
  auto head = split_csv_line(line);
  int lc = -1, cc = -1;
  for (std::size_t i = 0; i < head.size(); ++i) {
    if (head[i] == label) lc = static_cast<int>(i);
    if (!client_col.empty() && head[i] == client_col) cc = static_cast<int>(i);
  }
  if (lc < 0) usage("--label-column " + label + ": no such column in " + path);
  if (!client_col.empty() && cc < 0) usage("--client-column " + client_col + ": no such column in " + path);
  if (cc == lc && cc >= 0) usage("--client-column: must differ from --label-column");
  Dataset d;
  for (std::size_t i = 0; i < head.size(); ++i)
    if (static_cast<int>(i) != lc && static_cast<int>(i) != cc) d.features.push_back(head[i]);
  std::map<std::string, int> groups;
  std::vector<std::vector<double>> rows;
  long lineno = 1, seen_normal = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.empty()) continue;
    auto f = split_csv_line(line);
    if (f.size() != head.size())
      usage(fmt::format("{}:{}: {} fields; expected {}", path, lineno, f.size(), head.size()));
    const std::string& lab = f[static_cast<std::size_t>(lc)];
    if (drop.count(lab)) continue;
    std::vector<double> r;
    for (std::size_t i = 0; i < f.size(); ++i) {
      if (static_cast<int>(i) == lc || static_cast<int>(i) == cc) continue;
      char* end = nullptr;
      double v = std::strtod(f[i].c_str(), &end);
      if (f[i].empty() || *end || !std::isfinite(v))
        usage(fmt::format("{}:{}: column {}: '{}' is not a number", path, lineno, head[i], f[i]));
      r.push_back(v);
    }
    rows.push_back(std::move(r));
    const bool is_normal = outlier.empty() ? normal.count(lab) > 0 : outlier.count(lab) == 0;
    d.outlier.push_back(is_normal ? 0 : 1);
    seen_normal += is_normal;
    if (cc >= 0) {
      auto [it, fresh] = groups.emplace(f[static_cast<std::size_t>(cc)], static_cast<int>(groups.size()));
      if (fresh) d.group_names.push_back(it->first);
      d.group.push_back(it->second);
    } else {
      d.group.push_back(-1);
    }
  }
  if (rows.empty()) usage("--csv " + path + ": no data rows");
  if (seen_normal == 0) usage(outlier.empty() ? "--normal: no row carries any of these labels" : "--outlier: every row is an outlier");
  if (seen_normal == static_cast<long>(rows.size()))
    usage(outlier.empty() ? "--normal: every row is normal; no outliers to score" : "--outlier: no row carries any of these labels");
  d.x.resize(static_cast<Eigen::Index>(rows.size()), static_cast<Eigen::Index>(d.features.size()));
  for (std::size_t i = 0; i < rows.size(); ++i)
    for (std::size_t j = 0; j < rows[i].size(); ++j) d.x(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j)) = rows[i][j];
  return d;
}

// AUROC (ties averaged) and average precision.
std::pair<double, double> metrics(const Vec& score, const std::vector<int>& y) {
  const std::size_t n = y.size();
  std::vector<std::size_t> idx(n);
  std::iota(idx.begin(), idx.end(), 0);
  std::sort(idx.begin(), idx.end(), [&](auto a, auto b) { return score(static_cast<Eigen::Index>(a)) < score(static_cast<Eigen::Index>(b)); });
  double pos = 0, rank_sum = 0;
  for (std::size_t i = 0; i < n;) {
    std::size_t j = i;
    while (j < n && score(static_cast<Eigen::Index>(idx[j])) == score(static_cast<Eigen::Index>(idx[i]))) ++j;
    const double r = (static_cast<double>(i) + static_cast<double>(j) + 1) / 2;  // 1-based mean rank
    for (std::size_t k = i; k < j; ++k)
      if (y[idx[k]]) { rank_sum += r; ++pos; }
    i = j;
  }
  const double neg = static_cast<double>(n) - pos;
  const double auroc = (rank_sum - pos * (pos + 1) / 2) / (pos * neg);
  double tp = 0, ap = 0;
  for (std::size_t k = 0; k < n; ++k) {
    const std::size_t i = idx[n - 1 - k];
    if (y[i]) {
      tp += 1;
      ap += tp / static_cast<double>(k + 1);
    }
  }
  return {auroc, ap / pos};
}

std::vector<int> kmeans(const Mat& x, int k, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  const Eigen::Index n = x.rows();
  Mat c(k, x.cols());
  std::uniform_int_distribution<Eigen::Index> pick(0, n - 1);
  for (int i = 0; i < k; ++i) c.row(i) = x.row(pick(rng));
  std::vector<int> a(static_cast<std::size_t>(n), 0);
  for (int it = 0; it < 15; ++it) {
    for (Eigen::Index r = 0; r < n; ++r) {
      Eigen::Index best = 0;
      (c.rowwise() - x.row(r)).rowwise().squaredNorm().minCoeff(&best);
      a[static_cast<std::size_t>(r)] = static_cast<int>(best);
    }
    Mat s = Mat::Zero(k, x.cols());
    Vec cnt = Vec::Zero(k);
    for (Eigen::Index r = 0; r < n; ++r) {
      s.row(a[static_cast<std::size_t>(r)]) += x.row(r);
      cnt(a[static_cast<std::size_t>(r)]) += 1;
    }
    for (int i = 0; i < k; ++i)
      if (cnt(i) > 0) c.row(i) = s.row(i) / cnt(i);
  }
  return a;
}

using Rows = std::vector<Eigen::Index>;

// Dirichlet over clusters, with quantity skew (log-normal client sizes);
// then every client is topped up to `min_rows` from the largest ones.
std::vector<Rows> partition(const std::vector<Eigen::Index>& items, const std::vector<int>& cluster, int k, int clients,
                            double alpha, std::size_t min_rows, std::mt19937_64& rng) {
  std::gamma_distribution<double> gam(alpha, 1.0);
  std::lognormal_distribution<double> size(0.0, 1.0);
  std::vector<double> q(static_cast<std::size_t>(clients));
  for (auto& v : q) v = size(rng);
  std::vector<Rows> by_cluster(static_cast<std::size_t>(k));
  for (std::size_t i = 0; i < items.size(); ++i) by_cluster[static_cast<std::size_t>(cluster[i])].push_back(items[i]);
  std::vector<Rows> out(static_cast<std::size_t>(clients));
  for (auto& rows : by_cluster) {
    std::shuffle(rows.begin(), rows.end(), rng);
    std::vector<double> p(static_cast<std::size_t>(clients));
    double s = 0;
    for (int j = 0; j < clients; ++j) s += p[static_cast<std::size_t>(j)] = std::max(1e-300, gam(rng)) * q[static_cast<std::size_t>(j)];
    double cum = 0;
    std::size_t start = 0;
    for (int j = 0; j < clients; ++j) {
      cum += p[static_cast<std::size_t>(j)] / s;
      const std::size_t end = j == clients - 1 ? rows.size() : static_cast<std::size_t>(std::llround(cum * static_cast<double>(rows.size())));
      for (std::size_t r = start; r < std::min(end, rows.size()); ++r) out[static_cast<std::size_t>(j)].push_back(rows[r]);
      start = std::max(start, end);
    }
  }
  min_rows = std::min(min_rows, items.size() / static_cast<std::size_t>(clients));
  for (auto& c : out)
    while (c.size() < min_rows) {
      auto big = std::max_element(out.begin(), out.end(), [](auto& a, auto& b) { return a.size() < b.size(); });
      std::uniform_int_distribution<std::size_t> pick(0, big->size() - 1);
      const std::size_t i = pick(rng);
      c.push_back((*big)[i]);
      (*big)[i] = big->back();
      big->pop_back();
    }
  return out;
}

Mat rows_of(const Mat& x, const Rows& idx) {
  Mat m(static_cast<Eigen::Index>(idx.size()), x.cols());
  for (std::size_t i = 0; i < idx.size(); ++i) m.row(static_cast<Eigen::Index>(i)) = x.row(idx[i]);
  return m;
}

// Builds the clients of one scenario and seed.
std::vector<Client> make_clients(const Dataset& d, const Mat& z, const std::vector<int>& cluster, const Scenario& sc,
                                 const Config& cfg, std::uint64_t seed, int k_clusters) {
  std::mt19937_64 rng(seed);
  std::vector<Eigen::Index> norm, outl;
  for (Eigen::Index i = 0; i < z.rows(); ++i) (d.outlier[static_cast<std::size_t>(i)] ? outl : norm).push_back(i);
  std::vector<Rows> nrm, out;
  std::vector<std::string> names;
  if (sc.kind == "natural") {
    nrm.resize(d.group_names.size());
    out.resize(d.group_names.size());
    for (auto i : norm) nrm[static_cast<std::size_t>(d.group[static_cast<std::size_t>(i)])].push_back(i);
    for (auto i : outl) out[static_cast<std::size_t>(d.group[static_cast<std::size_t>(i)])].push_back(i);
    names = d.group_names;
  } else {
    nrm = partition(norm, cluster, k_clusters, sc.clients, sc.alpha, cfg.min_rows, rng);
    out.resize(nrm.size());
    std::vector<double> w(nrm.size(), 1.0);
    if (cfg.outlier_split == "proportional")
      for (std::size_t c = 0; c < nrm.size(); ++c) w[c] = static_cast<double>(nrm[c].size());
    std::discrete_distribution<std::size_t> pick(w.begin(), w.end());
    for (auto i : outl) out[pick(rng)].push_back(i);
    for (std::size_t c = 0; c < nrm.size(); ++c) names.push_back(std::to_string(c));
  }
  std::vector<Client> cl;
  std::normal_distribution<double> gauss(0, 1);
  for (std::size_t c = 0; c < nrm.size(); ++c) {
    if (nrm[c].empty()) continue;  // a natural client with no normal rows cannot train
    Rows r = nrm[c];
    std::shuffle(r.begin(), r.end(), rng);
    const std::size_t nt = r.size() >= 2 ? std::max<std::size_t>(1, static_cast<std::size_t>(std::lround(0.2 * static_cast<double>(r.size())))) : 0;
    const std::size_t rest = r.size() - nt;
    const std::size_t nv = rest >= 10 ? static_cast<std::size_t>(std::lround(0.1 * static_cast<double>(rest))) : 0;
    Client k;
    k.name = names[c];
    k.test = rows_of(z, Rows(r.begin(), r.begin() + static_cast<long>(nt)));
    k.val = rows_of(z, Rows(r.begin() + static_cast<long>(nt), r.begin() + static_cast<long>(nt + nv)));
    k.train = rows_of(z, Rows(r.begin() + static_cast<long>(nt + nv), r.end()));
    Mat o = rows_of(z, out[c]);
    Mat t(k.test.rows() + o.rows(), z.cols());
    t << k.test, o;
    k.test = std::move(t);
    k.test_normals = static_cast<int>(nt);
    k.test_outliers = static_cast<int>(o.rows());
    k.y.assign(nt, 0);
    k.y.resize(nt + static_cast<std::size_t>(o.rows()), 1);
    if (sc.skew > 0) {
      Eigen::RowVectorXd a(z.cols()), b(z.cols());
      for (Eigen::Index j = 0; j < z.cols(); ++j) {
        a(j) = std::exp(sc.skew * gauss(rng));
        b(j) = sc.skew * gauss(rng);
      }
      for (Mat* m : {&k.train, &k.val, &k.test}) *m = ((m->array().rowwise() * a.array()).rowwise() + b.array()).matrix();
    }
    cl.push_back(std::move(k));
  }
  // The federated scaler: mean and variance of all clients' training rows.
  Eigen::RowVectorXd sum = Eigen::RowVectorXd::Zero(z.cols()), sq = sum;
  double n = 0;
  for (auto& k : cl) {
    sum += k.train.colwise().sum();
    sq += k.train.array().square().matrix().colwise().sum();
    n += static_cast<double>(k.train.rows());
  }
  const Eigen::RowVectorXd mean = sum / n;
  Eigen::RowVectorXd sd = (sq / n - mean.cwiseAbs2()).cwiseMax(0).cwiseSqrt();
  for (Eigen::Index j = 0; j < sd.size(); ++j) if (sd(j) < 1e-9) sd(j) = 1;
  for (auto& k : cl)
    for (Mat* m : {&k.train, &k.val, &k.test}) *m = ((m->rowwise() - mean).array().rowwise() / sd.array()).matrix();
  return cl;
}


}  // namespace fedad
