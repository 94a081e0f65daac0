// bench/fedad: federated unsupervised outlier detection with MemAE on real
// labelled data. Normal rows only for training (split over clients, non-IID:
// Dirichlet over feature-space clusters of the normal rows, with quantity
// skew); test = held-out normal rows + all outliers, no overlap. Methods:
// local-only, FedAvg, FedProx, ours (attention-aware memory aggregation),
// centralised. AUROC and AUPRC, mean and std over seeds. Prints a Markdown
// table and writes it (with the command) to --out.
//
//   fedad --csv PATH --label-column NAME --normal VALUE [VALUE...]
//         [--drop VALUE...] [--seeds 5] [--clients 10,50,100]
//         [--alphas 0.1,0.5,100] [--rounds 20] [--local-epochs 1]
//         [--threads N] [--out FILE]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
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

#include "learn/aggregate.hpp"
#include "learn/memae.hpp"

using namespace scout::learn;

namespace {

[[noreturn]] void usage(const std::string& msg) {
  std::fprintf(stderr,
               "fedad: %s\nusage: fedad --csv PATH --label-column NAME --normal VALUE [VALUE...] "
               "[--drop VALUE...] [--seeds N] [--clients LIST] [--alphas LIST] [--rounds R] "
               "[--local-epochs E] [--threads N] [--out FILE]\n",
               msg.c_str());
  std::exit(2);
}

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

struct Dataset {
  Mat x;                  // rows are samples
  std::vector<int> outlier;  // 1 outlier, 0 normal
  std::vector<std::string> features;
};

Dataset load_csv(const std::string& path, const std::string& label, const std::set<std::string>& normal,
                 const std::set<std::string>& drop) {
  std::ifstream in(path);
  if (!in) usage("--csv " + path + ": cannot open");
  std::string line;
  if (!std::getline(in, line)) usage("--csv " + path + ": empty file; expected a header line");
  auto head = split_csv_line(line);
  int lc = -1;
  for (std::size_t i = 0; i < head.size(); ++i)
    if (head[i] == label) lc = static_cast<int>(i);
  if (lc < 0) usage("--label-column " + label + ": no such column in " + path);
  Dataset d;
  for (std::size_t i = 0; i < head.size(); ++i)
    if (static_cast<int>(i) != lc) d.features.push_back(head[i]);
  std::vector<std::vector<double>> rows;
  long lineno = 1;
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
      if (static_cast<int>(i) == lc) continue;
      char* end = nullptr;
      double v = std::strtod(f[i].c_str(), &end);
      if (f[i].empty() || *end) usage(fmt::format("{}:{}: column {}: '{}' is not a number", path, lineno, head[i], f[i]));
      r.push_back(v);
    }
    rows.push_back(std::move(r));
    d.outlier.push_back(normal.count(lab) ? 0 : 1);
  }
  if (rows.empty()) usage("--csv " + path + ": no data rows");
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
  // average precision: descending scores
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

// Dirichlet over clusters, with quantity skew (log-normal client sizes).
std::vector<std::vector<Eigen::Index>> partition(const std::vector<int>& cluster, int k, int clients, double alpha,
                                                 std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::gamma_distribution<double> gam(alpha, 1.0);
  std::lognormal_distribution<double> size(0.0, 1.0);
  std::vector<double> q(static_cast<std::size_t>(clients));
  for (auto& v : q) v = size(rng);
  std::vector<std::vector<Eigen::Index>> by_cluster(static_cast<std::size_t>(k));
  for (std::size_t i = 0; i < cluster.size(); ++i) by_cluster[static_cast<std::size_t>(cluster[i])].push_back(static_cast<Eigen::Index>(i));
  std::vector<std::vector<Eigen::Index>> out(static_cast<std::size_t>(clients));
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
  return out;
}

struct Config {
  int rounds = 20, local_epochs = 1, batch = 64;
  double lr = 3e-3, mu = 0.01;
  MemAEShape shape;
  MemAEOptions mopt;
};

Mat rows_of(const Mat& x, const std::vector<Eigen::Index>& idx) {
  Mat m(static_cast<Eigen::Index>(idx.size()), x.cols());
  for (std::size_t i = 0; i < idx.size(); ++i) m.row(static_cast<Eigen::Index>(i)) = x.row(idx[i]);
  return m;
}

enum Method { kLocal, kFedAvg, kFedProx, kOurs, kCentral };

std::pair<double, double> run_method(Method m, const Config& cfg, const Mat& train, const std::vector<std::vector<Eigen::Index>>& parts,
                                     const Mat& test, const std::vector<int>& y, std::uint64_t seed) {
  MemAE init(cfg.shape, cfg.mopt, seed);
  TrainOptions to;
  to.batch = cfg.batch;
  to.lr = cfg.lr;
  if (m == kCentral) {
    MemAE g = init;
    Adam a;
    to.epochs = cfg.rounds * cfg.local_epochs;
    to.seed = seed;
    scout::learn::train(g, train, to, a);
    return metrics(g.score(test.transpose()), y);
  }
  std::vector<Mat> data;
  for (auto& p : parts) data.push_back(rows_of(train, p));
  if (m == kLocal) {
    double au = 0, ap = 0, n = 0;
    for (std::size_t c = 0; c < data.size(); ++c) {
      if (data[c].rows() == 0) continue;
      MemAE g = init;
      Adam a;
      to.epochs = cfg.rounds * cfg.local_epochs;
      to.seed = seed + c;
      scout::learn::train(g, data[c], to, a);
      auto [x1, x2] = metrics(g.score(test.transpose()), y);
      au += x1;
      ap += x2;
      n += 1;
    }
    return {au / n, ap / n};
  }
  MemAE global = init;
  for (int r = 0; r < cfg.rounds; ++r) {
    std::vector<MemAE> local(data.size(), global);
    std::vector<ClientModel> cms;
    const Vec anchor = global.params();
    for (std::size_t c = 0; c < data.size(); ++c) {
      if (data[c].rows() == 0) continue;
      Adam a;
      to.epochs = cfg.local_epochs;
      to.seed = seed * 1000003 + static_cast<std::uint64_t>(r) * 1009 + c;
      to.prox_mu = m == kFedProx ? cfg.mu : 0;
      scout::learn::train(local[c], data[c], to, a, &anchor);
      Vec usage = m == kOurs ? local[c].usage(data[c].transpose()) : Vec();
      cms.push_back({&local[c], static_cast<double>(data[c].rows()), usage});
    }
    global = m == kOurs ? attention_aware(global, cms, seed + static_cast<std::uint64_t>(r)) : fedavg(cms);
  }
  return metrics(global.score(test.transpose()), y);
}

std::vector<double> parse_list(const std::string& what, const std::string& v) {
  std::vector<double> out;
  std::stringstream ss(v);
  for (std::string t; std::getline(ss, t, ',');) {
    char* end = nullptr;
    double d = std::strtod(t.c_str(), &end);
    if (t.empty() || *end || !(d > 0)) usage(what + ": '" + v + "' is not a list of positive numbers");
    out.push_back(d);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::string csv, label, out_path;
  std::set<std::string> normal, drop;
  int seeds = 5, threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::vector<double> clients = {10, 50, 100}, alphas = {0.1, 0.5, 100};
  Config cfg;
  std::string cmdline = "fedad";
  for (int i = 1; i < argc; ++i) cmdline += std::string(" ") + argv[i];
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto val = [&]() -> std::string {
      if (i + 1 >= argc) usage(a + ": missing value");
      return argv[++i];
    };
    auto many = [&](std::set<std::string>& dst) {
      while (i + 1 < argc && argv[i + 1][0] != '-') dst.insert(argv[++i]);
      if (dst.empty()) usage(a + ": expected at least one value");
    };
    if (a == "--csv") csv = val();
    else if (a == "--label-column") label = val();
    else if (a == "--normal") many(normal);
    else if (a == "--drop") many(drop);
    else if (a == "--seeds") seeds = std::max(1, std::atoi(val().c_str()));
    else if (a == "--clients") clients = parse_list(a, val());
    else if (a == "--alphas") alphas = parse_list(a, val());
    else if (a == "--rounds") cfg.rounds = std::max(1, std::atoi(val().c_str()));
    else if (a == "--local-epochs") cfg.local_epochs = std::max(1, std::atoi(val().c_str()));
    else if (a == "--threads") threads = std::max(1, std::atoi(val().c_str()));
    else if (a == "--out") out_path = val();
    else if (a == "-h" || a == "--help") usage("help");
    else usage("unknown option '" + a + "'");
  }
  if (csv.empty() || label.empty() || normal.empty()) usage("--csv, --label-column and --normal are required");
  Dataset d = load_csv(csv, label, normal, drop);
  const long n_out = std::count(d.outlier.begin(), d.outlier.end(), 1);
  cfg.shape.input = static_cast<int>(d.features.size());
  std::printf("data: %s: %ld rows x %zu features, %ld outliers (normal: label in {", csv.c_str(),
              static_cast<long>(d.x.rows()), d.features.size(), n_out);
  for (auto& s : normal) std::printf(" %s", s.c_str());
  std::printf(" }%s)\n", drop.empty() ? "" : ", some labels dropped");

  struct Job {
    int seed;
    double alpha;
    int clients;
    Method m;
  };
  std::vector<Job> jobs;
  for (int s = 0; s < seeds; ++s) {
    jobs.push_back({s, 0, 0, kCentral});
    for (double a : alphas)
      for (double k : clients)
        for (Method m : {kLocal, kFedAvg, kFedProx, kOurs}) jobs.push_back({s, a, static_cast<int>(k), m});
  }
  // Per seed: the split, the scaler (federated: merged sums = the global
  // mean and variance of the training rows), the clusters.
  struct Split {
    Mat train, test;
    std::vector<int> y;
    std::vector<int> cluster;
  };
  std::vector<Split> splits(static_cast<std::size_t>(seeds));
  for (int s = 0; s < seeds; ++s) {
    std::mt19937_64 rng(1000 + static_cast<std::uint64_t>(s));
    std::vector<Eigen::Index> norm, outl;
    for (Eigen::Index i = 0; i < d.x.rows(); ++i) (d.outlier[static_cast<std::size_t>(i)] ? outl : norm).push_back(i);
    std::shuffle(norm.begin(), norm.end(), rng);
    const std::size_t ntrain = norm.size() * 8 / 10;
    std::vector<Eigen::Index> tr(norm.begin(), norm.begin() + static_cast<long>(ntrain)), te(norm.begin() + static_cast<long>(ntrain), norm.end());
    Split& sp = splits[static_cast<std::size_t>(s)];
    sp.train = rows_of(d.x, tr);
    const Eigen::RowVectorXd mean = sp.train.colwise().mean();
    Eigen::RowVectorXd sd = ((sp.train.rowwise() - mean).array().square().colwise().mean()).sqrt();
    for (Eigen::Index j = 0; j < sd.size(); ++j) if (sd(j) < 1e-12) sd(j) = 1;
    auto scale = [&](Mat m) { return Mat(((m.rowwise() - mean).array().rowwise() / sd.array()).matrix()); };
    sp.train = scale(sp.train);
    std::vector<Eigen::Index> all_te = te;
    all_te.insert(all_te.end(), outl.begin(), outl.end());
    sp.test = scale(rows_of(d.x, all_te));
    for (auto i : all_te) sp.y.push_back(d.outlier[static_cast<std::size_t>(i)]);
    sp.cluster = kmeans(sp.train, 10, 77 + static_cast<std::uint64_t>(s));
  }
  std::map<std::tuple<double, int, int>, std::vector<std::pair<double, double>>> results;  // (alpha, K, method)
  std::mutex mu;
  std::atomic<std::size_t> next{0};
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&] {
      for (std::size_t j; (j = next++) < jobs.size();) {
        const Job& job = jobs[j];
        const Split& sp = splits[static_cast<std::size_t>(job.seed)];
        std::vector<std::vector<Eigen::Index>> parts;
        if (job.m != kCentral)
          parts = partition(sp.cluster, 10, job.clients, job.alpha, 5000 + static_cast<std::uint64_t>(job.seed));
        auto r = run_method(job.m, cfg, sp.train, parts, sp.test, sp.y, 42 + static_cast<std::uint64_t>(job.seed));
        std::lock_guard lk(mu);
        results[{job.alpha, job.clients, job.m}].push_back(r);
      }
    });
  for (auto& t : pool) t.join();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  auto stat = [](const std::vector<std::pair<double, double>>& v, bool pr) {
    double m = 0, s = 0;
    for (auto& x : v) m += pr ? x.second : x.first;
    m /= static_cast<double>(v.size());
    for (auto& x : v) s += std::pow((pr ? x.second : x.first) - m, 2);
    s = v.size() > 1 ? std::sqrt(s / static_cast<double>(v.size() - 1)) : 0;
    return std::make_pair(m, s);
  };
  std::string md;
  const auto central = results[{0, 0, kCentral}];
  for (bool pr : {false, true}) {
    md += fmt::format("\n{} (mean ± std over {} seeds)\n\n", pr ? "AUPRC" : "AUROC", seeds);
    md += "| alpha | clients | local-only | FedAvg | FedProx | ours | centralised |\n|---|---|---|---|---|---|---|\n";
    for (double a : alphas)
      for (double k : clients) {
        md += fmt::format("| {} | {} ", a, static_cast<int>(k));
        for (Method m : {kLocal, kFedAvg, kFedProx, kOurs}) {
          auto [mm, ss] = stat(results[{a, static_cast<int>(k), m}], pr);
          md += fmt::format("| {:.4f} ± {:.4f} ", mm, ss);
        }
        auto [cm, cs] = stat(central, pr);
        md += fmt::format("| {:.4f} ± {:.4f} |\n", cm, cs);
      }
  }
  // Targets.
  md += "\nTargets (AUROC):\n\n";
  auto [cm, cs] = stat(central, false);
  (void)cs;
  for (double a : alphas)
    for (double k : clients) {
      if (a > 0.5 || k < 50) continue;
      const double ours = stat(results[{a, static_cast<int>(k), kOurs}], false).first;
      const double avg = stat(results[{a, static_cast<int>(k), kFedAvg}], false).first;
      md += fmt::format("- alpha {} / {} clients: ours − FedAvg = {:+.4f} (target ≥ +0.02: {}); "
                        "ours − centralised = {:+.4f} (target within 0.02: {})\n",
                        a, static_cast<int>(k), ours - avg, ours - avg >= 0.02 ? "met" : "missed", ours - cm,
                        std::abs(ours - cm) <= 0.02 ? "met" : "missed");
    }
  // Aggregation cost: one round of 100 clients of the default model.
  {
    MemAE g(cfg.shape, cfg.mopt, 1);
    std::vector<MemAE> cl;
    for (int c = 0; c < 100; ++c) cl.emplace_back(cfg.shape, cfg.mopt, 100 + static_cast<std::uint64_t>(c));
    std::vector<ClientModel> cms;
    for (auto& c : cl) cms.push_back({&c, 100, Vec::Constant(cfg.shape.slots, 1.0 / cfg.shape.slots)});
    auto time_ms = [&](auto fn) {
      std::vector<double> v;
      for (int i = 0; i < 15; ++i) {
        auto t = std::chrono::steady_clock::now();
        fn();
        v.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count());
      }
      std::sort(v.begin(), v.end());
      return v[v.size() / 2];
    };
    const double tf = time_ms([&] { auto x = fedavg(cms); (void)x; });
    const double to = time_ms([&] { auto x = attention_aware(g, cms, 1); (void)x; });
    md += fmt::format("\nAggregation of one round, 100 clients, {} parameters each ({} memory slots x {}): "
                      "FedAvg {:.2f} ms (baseline), ours {:.2f} ms ({:.1f}x; target < 100 ms: {}).\n",
                      g.param_count(), cfg.shape.slots, cfg.shape.code, tf, to, to / tf, to < 100 ? "met" : "missed");
  }
  md += fmt::format("\nModel: MemAE {}-{}-{} with {} memory slots, lambda 1/N, alpha {}; {} rounds x {} local epoch(s), "
                    "batch {}, Adam lr {}, FedProx mu {}; 10 k-means clusters of the normal training rows, Dirichlet(alpha) "
                    "over clients per cluster times log-normal client sizes; 80/20 split of the normal rows. {:.0f} s on {} thread(s).\n",
                    cfg.shape.input, cfg.shape.hidden, cfg.shape.code, cfg.shape.slots, cfg.mopt.alpha, cfg.rounds,
                    cfg.local_epochs, cfg.batch, cfg.lr, cfg.mu, secs, threads);
  std::fputs(md.c_str(), stdout);
  if (!out_path.empty()) {
    std::ofstream o(out_path);
    o << "# bench/fedad results\n\nCommand: `" << cmdline << "`\n" << md;
    std::printf("\nwritten to %s\n", out_path.c_str());
  }
  return 0;
}
