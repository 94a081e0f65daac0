// bench/fedad: federated unsupervised outlier detection with MemAE on real
// labelled data, measured the way scoutd uses it: every client (node) scores
// its own held-out rows with the model it would use.
//
// Splits (scenarios), each over clients that keep their own rows:
//   natural        --client-column NAME: one client per distinct value (the
//                  column is dropped from the features); outliers stay with
//                  their own client;
//   dirichlet      Dirichlet(alpha) over k-means clusters of the normal rows
//                  times log-normal client sizes (non-IID and unbalanced);
//                  every client gets at least --min-rows normal rows;
//   feature-skew   dirichlet(0.5) plus a per-client affine map of the
//                  features (scale exp(N(0,s)), shift N(0,s) per feature, in
//                  standard units): sensors and nodes that read differently;
//   participation  dirichlet(0.5) at the largest client count, a random
//                  fraction F of the clients trains in each round.
// Outliers of the synthetic splits go to clients by --outlier-split:
// uniform (default: each outlier to a client drawn uniformly) or
// proportional (to the client's normal rows). Each client's normal rows:
// 20% test, 10% of the rest validation (early stopping), the rest training.
// The scaler is federated (mean and variance of all clients' training rows).
//
// Methods: local-only, FedAvg, FedProx, FedAvgM, FedAdam, matched (Hungarian
// attention-aware memory), clustered (weighted k-means memory), personalised
// (clustered memory + a server Adam step; each node adapts the memory to
// its own training rows: learn::aggregate, as scoutd runs it),
// centralised. Each is compared at an equal number of rounds (--rounds) and
// at convergence (early stopping on the clients' validation loss, patience
// --patience, at most --max-rounds; the rounds taken are reported).
//
// Per client: AUROC and AUPRC of its own test rows (its held-out normals and
// its outliers), scored by the model it uses. A client with fewer than
// 3 test normals or 3 outliers cannot be scored: counted and listed.
// Reported per scenario and method, mean (± std over seeds): mean client
// AUROC, worst-decile client AUROC (mean of the lowest 10% of the scored
// clients), mean client AUPRC, the fraction of clients below 0.9 AUROC, and
// the pooled AUROC/AUPRC over the union of the test rows.
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

#include "learn/aggregate.hpp"
#include "learn/memae.hpp"

using namespace scout::learn;

namespace {

constexpr const char* kUsage =
    "usage: fedad --csv PATH --label-column NAME (--normal|--outlier) VALUE [VALUE...] [options]\n"
    "  --outlier VALUE...        instead of --normal: these labels are the outliers, all others normal\n"
    "  --drop VALUE...           labels whose rows are left out\n"
    "  --client-column NAME      natural split: one client per value (dropped from the features)\n"
    "  --clients LIST            client counts of the synthetic splits (default 50,100)\n"
    "  --alphas LIST             Dirichlet concentrations (default 0.1,0.5)\n"
    "  --feature-skew S          per-client affine skew strength, 0 = no such scenario (default 0.5)\n"
    "  --participation F         fraction of clients per round, 1 = no such scenario (default 0.2)\n"
    "  --outlier-split uniform|proportional   (default uniform)\n"
    "  --min-rows N              normal rows every synthetic client gets at least (default 30)\n"
    "  --no-synthetic            only the natural split\n"
    "  --rounds R                rounds of the equal-rounds comparison (default 20)\n"
    "  --max-rounds R            cap of the convergence run, 0 = none (default 100)\n"
    "  --patience P              rounds without a better validation loss (default 10)\n"
    "  --local-epochs E          (default 1)\n"
    "  --personalise-steps S     memory-only Adam steps of the personalised variant (default 200)\n"
    "  --personalise-lr L        their learning rate (default 0.01)\n"
    "  --personalise-mu MU       proximal weight towards the global memory (default 0)\n"
    "  --personalised-server S   the personalised variant under another server (exploration):\n"
    "                            fedavg, matched or clustered, with -m (momentum) or -a (Adam)\n"
    "  --methods LIST            of local,fedavg,fedprox,fedavgm,fedadam,matched,clustered,\n"
    "                            personalised,central (default all)\n"
    "  --seeds N                 (default 3)  --threads N  --out FILE  --help\n";

[[noreturn]] void usage(const std::string& msg) {
  if (msg == "help") {
    std::fputs(kUsage, stdout);
    std::exit(0);
  }
  std::fprintf(stderr, "fedad: %s\n%s", msg.c_str(), kUsage);
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
  Mat x;                      // rows are samples
  std::vector<int> outlier;   // 1 outlier, 0 normal
  std::vector<int> group;     // natural client index, -1 without --client-column
  std::vector<std::string> group_names;
  std::vector<std::string> features;
};

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

struct Client {
  std::string name;
  Mat train, val, test;   // rows are samples (test: held-out normals, then outliers)
  std::vector<int> y;     // of test
  int test_normals = 0, test_outliers = 0;
  bool scorable() const { return test_normals >= 3 && test_outliers >= 3; }
};

struct Scenario {
  std::string kind;  // natural, dirichlet, feature-skew, participation
  double alpha = 0;
  int clients = 0;
  double skew = 0, participation = 1;
  std::string label() const {
    if (kind == "natural") return fmt::format("natural ({} clients)", clients);
    if (kind == "dirichlet") return fmt::format("Dirichlet {} / {}", alpha, clients);
    if (kind == "feature-skew") return fmt::format("feature-skew {} (Dirichlet {}) / {}", skew, alpha, clients);
    return fmt::format("participation {} (Dirichlet {}) / {}", participation, alpha, clients);
  }
};

enum Method { kLocal, kFedAvg, kFedProx, kFedAvgM, kFedAdam, kMatched, kClustered, kPersonalised, kCentral, kMethods };
constexpr const char* kMethodNames[kMethods] = {"local",   "fedavg",    "fedprox",      "fedavgm", "fedadam",
                                                "matched", "clustered", "personalised", "central"};
constexpr const char* kMethodTitles[kMethods] = {"local-only", "FedAvg",    "FedProx",      "FedAvgM",    "FedAdam",
                                                 "matched",    "clustered", "personalised", "centralised"};

Aggregation aggregation_of(Method m) {
  switch (m) {
    case kFedAvgM: return Aggregation::kFedAvgM;
    case kFedAdam: return Aggregation::kFedAdam;
    case kMatched: return Aggregation::kMatched;
    case kClustered: return Aggregation::kClustered;
    case kPersonalised: return Aggregation::kPersonalised;
    default: return Aggregation::kFedAvg;  // FedAvg, FedProx
  }
}

struct Config {
  int rounds = 20, max_rounds = 100, patience = 10, local_epochs = 1, batch = 64;
  double lr = 3e-3, mu = 0.01;
  long personalise_steps = 200;
  std::string pers_server;  // --personalised-server: candidate [-m momentum | -a Adam]; empty: scoutd's
  ServerConfig server;
  double personalise_lr = 1e-2, personalise_mu = 0;
  std::string outlier_split = "uniform";
  std::size_t min_rows = 30;
  MemAEShape shape;
  MemAEOptions mopt;
};

// One evaluation: per client AUROC/AUPRC (NaN: not scorable), pooled.
struct Eval {
  std::vector<double> auroc, auprc;
  double pooled_auroc = 0, pooled_auprc = 0;
  int rounds = 0;
};

Eval evaluate(const std::vector<Client>& cl, const std::vector<const MemAE*>& model_of) {
  Eval e;
  std::vector<double> all_s;
  std::vector<int> all_y;
  for (std::size_t c = 0; c < cl.size(); ++c) {
    const Vec s = cl[c].test.rows() ? model_of[c]->score(cl[c].test.transpose()) : Vec();
    all_s.insert(all_s.end(), s.data(), s.data() + s.size());
    all_y.insert(all_y.end(), cl[c].y.begin(), cl[c].y.end());
    if (!cl[c].scorable()) {
      e.auroc.push_back(std::nan(""));
      e.auprc.push_back(std::nan(""));
      continue;
    }
    auto [a, p] = metrics(s, cl[c].y);
    e.auroc.push_back(a);
    e.auprc.push_back(p);
  }
  auto [a, p] = metrics(Eigen::Map<const Vec>(all_s.data(), static_cast<Eigen::Index>(all_s.size())), all_y);
  e.pooled_auroc = a;
  e.pooled_auprc = p;
  return e;
}

double val_loss(const MemAE& m, const std::vector<Client>& cl) {
  double s = 0, n = 0;
  for (auto& c : cl)
    if (c.val.rows()) {
      s += m.score(c.val.transpose()).sum();
      n += static_cast<double>(c.val.rows());
    }
  return n > 0 ? s / n : 0;
}

// Results of one training run: at equal rounds and at convergence, for the
// method (and, for the clustered run, its personalised variant).
struct RunResult {
  std::map<Method, Eval> equal, converged;
};

std::vector<MemAE> personalised_models(const MemAE& global, const std::vector<Client>& cl, const Config& cfg,
                                       std::uint64_t seed) {
  std::vector<MemAE> out;
  for (std::size_t c = 0; c < cl.size(); ++c) {
    PersonaliseOptions po;
    po.steps = cfg.personalise_steps;
    po.batch = cfg.batch;
    po.lr = cfg.personalise_lr;
    po.prox_mu = cfg.personalise_mu;
    po.seed = seed + c;
    out.push_back(personalise(global, cl[c].train, po));
  }
  return out;
}

Eval eval_one(const std::vector<Client>& cl, const MemAE& g) {
  return evaluate(cl, std::vector<const MemAE*>(cl.size(), &g));
}
Eval eval_many(const std::vector<Client>& cl, const std::vector<MemAE>& ms) {
  std::vector<const MemAE*> p;
  for (auto& m : ms) p.push_back(&m);
  return evaluate(cl, p);
}

// Trains with early stopping on `vloss` (called once per round/epoch);
// `step` advances one round. Keeps the model at `rounds` and the best.
template <class Step, class VLoss>
std::pair<std::pair<MemAE, int>, std::pair<MemAE, int>> run_rounds(const Config& cfg, MemAE model, Step step, VLoss vloss) {
  MemAE at_equal = model, best = model;
  double best_loss = std::numeric_limits<double>::infinity();
  int best_round = 0, since = 0;
  const int cap = std::max(cfg.rounds, cfg.max_rounds);
  bool stopped = cfg.max_rounds <= 0;
  for (int r = 1; r <= cap; ++r) {
    if (stopped && r > cfg.rounds) break;
    step(model, r - 1);
    if (r == cfg.rounds) at_equal = model;
    if (!stopped) {
      const double l = vloss(model);
      if (best_round == 0 || l < best_loss - 1e-9 * std::abs(best_loss)) {
        best_loss = l;
        best = model;
        best_round = r;
        since = 0;
      } else if (++since >= cfg.patience) {
        stopped = true;
      }
      if (r == cfg.max_rounds) stopped = true;
    }
  }
  if (cfg.max_rounds <= 0) { best = at_equal; best_round = cfg.rounds; }
  return {{at_equal, cfg.rounds}, {best, best_round}};
}

RunResult run_method(Method m, const Config& cfg, const Scenario& sc, const std::vector<Client>& cl, std::uint64_t seed) {
  const MemAE init(cfg.shape, cfg.mopt, seed);
  TrainOptions to;
  to.batch = cfg.batch;
  to.lr = cfg.lr;
  RunResult rr;
  if (m == kCentral) {
    Mat all(0, cfg.shape.input);
    for (auto& c : cl) {
      Mat t(all.rows() + c.train.rows(), all.cols());
      t << all, c.train;
      all = std::move(t);
    }
    Adam a;
    auto [eq, cv] = run_rounds(
        cfg, init,
        [&](MemAE& g, int r) {
          to.epochs = cfg.local_epochs;
          to.seed = seed * 7 + static_cast<std::uint64_t>(r);
          scout::learn::train(g, all, to, a);
        },
        [&](const MemAE& g) { return val_loss(g, cl); });
    rr.equal[m] = eval_one(cl, eq.first);
    rr.converged[m] = eval_one(cl, cv.first);
    rr.equal[m].rounds = eq.second;
    rr.converged[m].rounds = cv.second;
    return rr;
  }
  if (m == kLocal) {
    std::vector<MemAE> eqm, cvm;
    double rounds = 0;
    for (std::size_t c = 0; c < cl.size(); ++c) {
      Adam a;
      auto [eq, cv] = run_rounds(
          cfg, init,
          [&](MemAE& g, int r) {
            to.epochs = cfg.local_epochs;
            to.seed = seed + c * 131 + static_cast<std::uint64_t>(r) * 7;
            scout::learn::train(g, cl[c].train, to, a);
          },
          [&](const MemAE& g) {  // its own validation rows (its training rows when it has too few)
            const Mat& v = cl[c].val.rows() ? cl[c].val : cl[c].train;
            return v.rows() ? g.score(v.transpose()).mean() : 0.0;
          });
      eqm.push_back(eq.first);
      cvm.push_back(cv.first);
      rounds += cv.second;
    }
    rr.equal[m] = eval_many(cl, eqm);
    rr.converged[m] = eval_many(cl, cvm);
    rr.equal[m].rounds = cfg.rounds;
    rr.converged[m].rounds = static_cast<int>(std::lround(rounds / static_cast<double>(cl.size())));
    return rr;
  }
  ServerState state;
  std::mt19937_64 prng(seed * 31 + 5);
  const std::size_t K = cl.size();
  const std::size_t per_round = std::max<std::size_t>(1, static_cast<std::size_t>(std::lround(sc.participation * static_cast<double>(K))));
  std::vector<std::size_t> all_idx(K);
  std::iota(all_idx.begin(), all_idx.end(), 0);
  auto step = [&](MemAE& global, int r) {
    std::vector<std::size_t> who = all_idx;
    if (per_round < K) {
      std::shuffle(who.begin(), who.end(), prng);
      who.resize(per_round);
      std::sort(who.begin(), who.end());
    }
    std::vector<MemAE> local(who.size(), global);
    std::vector<ClientModel> cms;
    const Vec anchor = global.params();
    for (std::size_t i = 0; i < who.size(); ++i) {
      const Client& c = cl[who[i]];
      if (c.train.rows() == 0) continue;
      Adam a;
      to.epochs = cfg.local_epochs;
      to.seed = seed * 1000003 + static_cast<std::uint64_t>(r) * 1009 + who[i];
      to.prox_mu = m == kFedProx ? cfg.mu : 0;
      scout::learn::train(local[i], c.train, to, a, &anchor);
      Vec usage = needs_usage(aggregation_of(m)) ? local[i].usage(c.train.transpose()) : Vec();
      cms.push_back({&local[i], static_cast<double>(c.train.rows()), usage});
    }
    if (cms.empty()) return;
    const std::uint64_t s = seed + static_cast<std::uint64_t>(r);
    if (m == kPersonalised && !cfg.pers_server.empty()) {  // --personalised-server: another server under it
      const std::string& ps = cfg.pers_server;
      MemAE cand = ps.rfind("clustered", 0) == 0 ? clustered_memory(global, cms, s)
                   : ps.rfind("matched", 0) == 0 ? attention_aware(global, cms, s)
                                                 : fedavg(cms);
      const bool mom = ps.size() > 2 && ps.compare(ps.size() - 2, 2, "-m") == 0;
      const bool adam = ps.size() > 2 && ps.compare(ps.size() - 2, 2, "-a") == 0;
      if (!mom && !adam) {
        global = cand;
        return;
      }
      auto a = server_step(global, cand, state, mom ? cfg.server.momentum : cfg.server.adam,
                           mom ? ServerOptimiser::kMomentum : ServerOptimiser::kAdam);
      global = a.model;
      state = a.state;
      return;
    }
    auto a = aggregate(aggregation_of(m), global, cms, state, s, cfg.server);
    global = a.model;
    state = a.state;
  };
  auto [eq, cv] = run_rounds(cfg, init, step, [&](const MemAE& g) { return val_loss(g, cl); });
  rr.equal[m] = eval_one(cl, eq.first);
  rr.converged[m] = eval_one(cl, cv.first);
  rr.equal[m].rounds = eq.second;
  rr.converged[m].rounds = cv.second;
  if (m == kPersonalised) {
    rr.equal[kPersonalised] = eval_many(cl, personalised_models(eq.first, cl, cfg, seed));
    rr.converged[kPersonalised] = eval_many(cl, personalised_models(cv.first, cl, cfg, seed));
    rr.equal[kPersonalised].rounds = eq.second;
    rr.converged[kPersonalised].rounds = cv.second;
  }
  return rr;
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

double parse_num(const std::string& what, const std::string& v, double lo, double hi) {
  char* end = nullptr;
  const double d = std::strtod(v.c_str(), &end);
  if (v.empty() || *end || !(d >= lo && d <= hi)) usage(fmt::format("{}: '{}' is not a number in [{}, {}]", what, v, lo, hi));
  return d;
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

struct Summary {  // one seed's numbers for one (scenario, method, mode)
  double mean_auroc, worst_decile, mean_auprc, below_09, pooled_auroc, pooled_auprc, rounds;
  int unscorable;
};

Summary summarise(const Eval& e) {
  std::vector<double> a, p;
  for (std::size_t i = 0; i < e.auroc.size(); ++i)
    if (!std::isnan(e.auroc[i])) { a.push_back(e.auroc[i]); p.push_back(e.auprc[i]); }
  Summary s{};
  s.unscorable = static_cast<int>(e.auroc.size() - a.size());
  s.pooled_auroc = e.pooled_auroc;
  s.pooled_auprc = e.pooled_auprc;
  s.rounds = e.rounds;
  if (a.empty()) {
    s.mean_auroc = s.worst_decile = s.mean_auprc = s.below_09 = std::nan("");
    return s;
  }
  const double n = static_cast<double>(a.size());
  s.mean_auroc = std::accumulate(a.begin(), a.end(), 0.0) / n;
  s.mean_auprc = std::accumulate(p.begin(), p.end(), 0.0) / n;
  s.below_09 = static_cast<double>(std::count_if(a.begin(), a.end(), [](double v) { return v < 0.9; })) / n;
  std::sort(a.begin(), a.end());
  const std::size_t k = std::max<std::size_t>(1, static_cast<std::size_t>(std::ceil(0.1 * n)));
  s.worst_decile = std::accumulate(a.begin(), a.begin() + static_cast<long>(k), 0.0) / static_cast<double>(k);
  return s;
}

std::pair<double, double> mean_sd(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) m += x;
  m /= static_cast<double>(v.size());
  double s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return {m, v.size() > 1 ? std::sqrt(s / static_cast<double>(v.size() - 1)) : 0.0};
}

}  // namespace

int main(int argc, char** argv) {
  std::string csv, label, out_path, client_col;
  std::set<std::string> normal, outlier, drop;
  int seeds = 3, threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::vector<double> clients = {50, 100}, alphas = {0.1, 0.5};
  double skew = 0.5, participation = 0.2;
  bool synthetic = true;
  std::vector<Method> methods;
  Config cfg;
  std::string cmdline = "fedad";
  for (int i = 1; i < argc; ++i) {  // as a shell would take it back
    const std::string a = argv[i];
    if (a.find_first_of(" \t'\"$\\") == std::string::npos) {
      cmdline += " " + a;
      continue;
    }
    cmdline += " '";
    for (char ch : a) cmdline += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
    cmdline += "'";
  }
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
    else if (a == "--outlier") many(outlier);
    else if (a == "--drop") many(drop);
    else if (a == "--client-column") client_col = val();
    else if (a == "--seeds") seeds = static_cast<int>(parse_num(a, val(), 1, 1000));
    else if (a == "--clients") clients = parse_list(a, val());
    else if (a == "--alphas") alphas = parse_list(a, val());
    else if (a == "--feature-skew") skew = parse_num(a, val(), 0, 5);
    else if (a == "--participation") participation = parse_num(a, val(), 0.01, 1);
    else if (a == "--outlier-split") {
      cfg.outlier_split = val();
      if (cfg.outlier_split != "uniform" && cfg.outlier_split != "proportional")
        usage("--outlier-split: '" + cfg.outlier_split + "'; expected uniform or proportional");
    } else if (a == "--min-rows") cfg.min_rows = static_cast<std::size_t>(parse_num(a, val(), 0, 1e6));
    else if (a == "--no-synthetic") synthetic = false;
    else if (a == "--rounds") cfg.rounds = static_cast<int>(parse_num(a, val(), 1, 10000));
    else if (a == "--max-rounds") cfg.max_rounds = static_cast<int>(parse_num(a, val(), 0, 10000));
    else if (a == "--patience") cfg.patience = static_cast<int>(parse_num(a, val(), 1, 1000));
    else if (a == "--local-epochs") cfg.local_epochs = static_cast<int>(parse_num(a, val(), 1, 1000));
    else if (a == "--personalised-server") {
      cfg.pers_server = val();
      static const std::set<std::string> ok = {"fedavg", "fedavg-m", "fedavg-a", "matched", "matched-m", "matched-a",
                                               "clustered", "clustered-m", "clustered-a"};
      if (!ok.count(cfg.pers_server)) usage("--personalised-server: '" + cfg.pers_server + "'; expected fedavg, matched or clustered, optionally with -m (momentum) or -a (Adam)");
    } else if (a == "--personalise-mu") cfg.personalise_mu = parse_num(a, val(), 0, 1e6);
    else if (a == "--personalise-lr") cfg.personalise_lr = parse_num(a, val(), 1e-6, 1);
    else if (a == "--personalise-steps") cfg.personalise_steps = static_cast<long>(parse_num(a, val(), 0, 1e6));
    else if (a == "--methods") {
      std::stringstream ss(val());
      for (std::string t; std::getline(ss, t, ',');) {
        int k = 0;
        while (k < kMethods && t != kMethodNames[k]) ++k;
        if (k == kMethods) usage("--methods: '" + t + "' is not one of local,fedavg,fedprox,fedavgm,fedadam,matched,clustered,personalised,central");
        methods.push_back(static_cast<Method>(k));
      }
    } else if (a == "--threads") threads = static_cast<int>(parse_num(a, val(), 1, 1024));
    else if (a == "--out") out_path = val();
    else if (a == "-h" || a == "--help") usage("help");
    else usage("unknown option '" + a + "'");
  }
  if (csv.empty() || label.empty() || normal.empty() == outlier.empty())
    usage("--csv, --label-column and one of --normal or --outlier are required");
  if (!synthetic && client_col.empty()) usage("--no-synthetic needs --client-column");
  if (methods.empty())
    for (int k = 0; k < kMethods; ++k) methods.push_back(static_cast<Method>(k));
  std::set<Method> want(methods.begin(), methods.end());
  Dataset d = load_csv(csv, label, normal, outlier, drop, client_col);
  const long n_out = std::count(d.outlier.begin(), d.outlier.end(), 1);
  cfg.shape.input = static_cast<int>(d.features.size());
  std::printf("data: %s: %ld rows x %zu features, %ld outliers%s\n", csv.c_str(), static_cast<long>(d.x.rows()),
              d.features.size(), n_out,
              client_col.empty() ? "" : fmt::format(", {} clients by {}", d.group_names.size(), client_col).c_str());

  // Standard units over all normal rows (the skew is defined in them), and
  // the clusters the Dirichlet split draws from.
  std::vector<Eigen::Index> norm_idx;
  for (Eigen::Index i = 0; i < d.x.rows(); ++i)
    if (!d.outlier[static_cast<std::size_t>(i)]) norm_idx.push_back(i);
  const Mat xn = rows_of(d.x, norm_idx);
  const Eigen::RowVectorXd mean = xn.colwise().mean();
  Eigen::RowVectorXd sd = ((xn.rowwise() - mean).array().square().colwise().mean()).sqrt();
  for (Eigen::Index j = 0; j < sd.size(); ++j) if (sd(j) < 1e-12) sd(j) = 1;
  const Mat z = ((d.x.rowwise() - mean).array().rowwise() / sd.array()).matrix();
  constexpr int kClusters = 10;
  const std::vector<int> cluster = kmeans(rows_of(z, norm_idx), kClusters, 77);

  std::vector<Scenario> scen;
  if (!client_col.empty()) scen.push_back({"natural", 0, static_cast<int>(d.group_names.size()), 0, 1});
  if (synthetic) {
    for (double a : alphas)
      for (double k : clients) scen.push_back({"dirichlet", a, static_cast<int>(k), 0, 1});
    if (skew > 0)
      for (double k : clients) scen.push_back({"feature-skew", 0.5, static_cast<int>(k), skew, 1});
    if (participation < 1)
      scen.push_back({"participation", 0.5, static_cast<int>(*std::max_element(clients.begin(), clients.end())), 0, participation});
  }
  // The clients of every (scenario, seed).
  std::vector<std::vector<std::vector<Client>>> data(scen.size());
  for (std::size_t s = 0; s < scen.size(); ++s)
    for (int k = 0; k < seeds; ++k)
      data[s].push_back(make_clients(d, z, cluster, scen[s], cfg, 5000 + static_cast<std::uint64_t>(k) * 7 + s, kClusters));

  struct Job {
    std::size_t scen;
    int seed;
    Method m;
  };
  std::vector<Job> jobs;
  for (std::size_t s = 0; s < scen.size(); ++s)
    for (int k = 0; k < seeds; ++k)
      for (Method m : methods) {
        jobs.push_back({s, k, m});
      }
  // Longest first: the local-only and convergence runs of the big splits.
  std::stable_sort(jobs.begin(), jobs.end(), [&](auto& a, auto& b) { return scen[a.scen].clients > scen[b.scen].clients; });
  std::map<std::tuple<std::size_t, int, int, bool>, Summary> res;  // (scenario, method, seed, converged)
  std::map<std::pair<std::size_t, int>, std::string> unscorable_list;  // (scenario, seed) -> list
  std::mutex mu;
  std::atomic<std::size_t> next{0}, done{0};
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&] {
      for (std::size_t j; (j = next++) < jobs.size();) {
        const Job& job = jobs[j];
        const auto& cl = data[job.scen][static_cast<std::size_t>(job.seed)];
        RunResult r = run_method(job.m, cfg, scen[job.scen], cl, 42 + static_cast<std::uint64_t>(job.seed));
        std::lock_guard lk(mu);
        for (auto& [m, e] : r.equal)
          if (want.count(m)) res[{job.scen, m, job.seed, false}] = summarise(e);
        for (auto& [m, e] : r.converged)
          if (want.count(m)) res[{job.scen, m, job.seed, true}] = summarise(e);
        auto& ul = unscorable_list[{job.scen, job.seed}];
        if (ul.empty()) {
          int n = 0;
          for (auto& c : cl)
            if (!c.scorable()) ul += fmt::format("{}{} ({} normal, {} outliers)", n++ ? ", " : "", c.name, c.test_normals, c.test_outliers);
          if (n == 0) ul = "none";
        }
        std::fprintf(stderr, "\r%zu/%zu runs", ++done, jobs.size());
      }
    });
  for (auto& t : pool) t.join();
  std::fprintf(stderr, "\n");
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  std::string md;
  md += fmt::format("\nData: {} rows x {} features, {} outliers; {} seed(s). Per-client numbers: each client's own "
                    "held-out normal rows and its outliers, scored by the model that client uses.\n",
                    d.x.rows(), d.features.size(), n_out, seeds);
  for (bool conv : {false, true}) {
    if (conv && cfg.max_rounds <= 0) continue;
    md += conv ? fmt::format("\n### At convergence (early stopping: patience {}, at most {} rounds)\n\n", cfg.patience,
                             std::max(cfg.rounds, cfg.max_rounds))
               : fmt::format("\n### At {} rounds\n\n", cfg.rounds);
    md += "| split | method | mean client AUROC | worst-decile AUROC | mean client AUPRC | clients < 0.9 | pooled AUROC | "
          "pooled AUPRC | rounds | unscored |\n|---|---|---|---|---|---|---|---|---|---|\n";
    for (std::size_t s = 0; s < scen.size(); ++s)
      for (Method m : methods) {
        std::vector<double> ma, wd, mp, b9, pa, pp, rd;
        int un = 0;
        for (int k = 0; k < seeds; ++k) {
          auto it = res.find({s, m, k, conv});
          if (it == res.end()) continue;
          const Summary& x = it->second;
          ma.push_back(x.mean_auroc);
          wd.push_back(x.worst_decile);
          mp.push_back(x.mean_auprc);
          b9.push_back(x.below_09);
          pa.push_back(x.pooled_auroc);
          pp.push_back(x.pooled_auprc);
          rd.push_back(x.rounds);
          un = std::max(un, x.unscorable);
        }
        if (ma.empty()) continue;
        auto f = [](const std::vector<double>& v) { auto [a, b] = mean_sd(v); return fmt::format("{:.4f} ± {:.4f}", a, b); };
        md += fmt::format("| {} | {} | {} | {} | {:.4f} | {:.2f} | {:.4f} | {:.4f} | {:.0f} | {} |\n", scen[s].label(),
                          kMethodTitles[m], f(ma), f(wd), mean_sd(mp).first, mean_sd(b9).first, mean_sd(pa).first,
                          mean_sd(pp).first, mean_sd(rd).first, un);
      }
  }
  md += "\nClients that could not be scored (fewer than 3 held-out normals or 3 outliers), first seed:\n\n";
  for (std::size_t s = 0; s < scen.size(); ++s) md += fmt::format("- {}: {}\n", scen[s].label(), unscorable_list[{s, 0}]);

  // Targets: against FedAvg, on the Dirichlet alpha <= 0.5 splits at 50 and
  // 100 clients and on the natural split.
  if (want.count(kFedAvg)) {
    md += "\nTargets (per method, against FedAvg in the same run: worst-decile client AUROC >= FedAvg + 0.02 and "
          "mean client AUROC >= FedAvg - 0.005), cells met:\n\n";
    for (bool conv : {false, true}) {
      if (conv && cfg.max_rounds <= 0) continue;
      for (Method m : methods) {
        if (m == kFedAvg || m == kLocal || m == kCentral) continue;
        int met = 0, cells = 0;
        std::string detail;
        for (std::size_t s = 0; s < scen.size(); ++s) {
          const Scenario& sc = scen[s];
          if (!(sc.kind == "natural" || (sc.kind == "dirichlet" && sc.alpha <= 0.5 && (sc.clients == 50 || sc.clients == 100)))) continue;
          std::vector<double> dw, dm;
          for (int k = 0; k < seeds; ++k) {
            auto a = res.find({s, m, k, conv}), b = res.find({s, kFedAvg, k, conv});
            if (a == res.end() || b == res.end()) continue;
            dw.push_back(a->second.worst_decile - b->second.worst_decile);
            dm.push_back(a->second.mean_auroc - b->second.mean_auroc);
          }
          if (dw.empty()) continue;
          const double w = mean_sd(dw).first, mm = mean_sd(dm).first;
          const bool ok = w >= 0.02 && mm >= -0.005;
          ++cells;
          met += ok;
          detail += fmt::format("{}{}: {:+.4f} / {:+.4f}{}", detail.empty() ? "" : "; ", sc.label(), w, mm, ok ? " met" : "");
        }
        if (cells)
          md += fmt::format("- {} ({}): {} of {} ({})\n", kMethodTitles[m], conv ? "converged" : fmt::format("{} rounds", cfg.rounds), met,
                            cells, detail);
      }
    }
  }
  // Aggregation cost: one round of 100 clients of this model.
  {
    MemAE g(cfg.shape, cfg.mopt, 1);
    std::vector<MemAE> cl;
    for (int c = 0; c < 100; ++c) cl.emplace_back(cfg.shape, cfg.mopt, 100 + static_cast<std::uint64_t>(c));
    std::vector<ClientModel> cms;
    std::mt19937_64 rng(3);
    std::gamma_distribution<double> gam(0.3, 1.0);
    for (auto& c : cl) {
      Vec u(cfg.shape.slots);
      for (Eigen::Index i = 0; i < u.size(); ++i) u(i) = gam(rng);
      cms.push_back({&c, 100, u / u.sum()});
    }
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
    ServerState st;
    const double tf = time_ms([&] { auto x = fedavg(cms); (void)x; });
    const double tm = time_ms([&] { auto x = attention_aware(g, cms, 1); (void)x; });
    const double tc = time_ms([&] { auto x = clustered_memory(g, cms, 1); (void)x; });
    const double tv = time_ms([&] { auto x = fedavgm(g, cms, st, cfg.server.momentum); (void)x; });
    const double ta = time_ms([&] { auto x = fedadam(g, cms, st, cfg.server.adam); (void)x; });
    const double ts = time_ms([&] { auto x = aggregate(Aggregation::kPersonalised, g, cms, st, 1, cfg.server); (void)x; });
    Mat node = Mat::Random(200, cfg.shape.input);
    PersonaliseOptions po;
    po.steps = cfg.personalise_steps;
    const double tp = time_ms([&] { auto x = personalise(g, node, po); (void)x; });
    const double worst = std::max({tm, tc, tv, ta, ts});
    md += fmt::format("\nAggregation of one round, 100 clients, {} parameters each ({} memory slots x {}), median of 15: "
                      "FedAvg {:.2f} ms (baseline), FedAvgM {:.2f} ms ({:.1f}x), FedAdam {:.2f} ms ({:.1f}x), matched {:.2f} ms "
                      "({:.1f}x), clustered {:.2f} ms ({:.1f}x), personalised (server) {:.2f} ms ({:.1f}x); slowest {:.2f} ms (target < 100 ms: {}). A node's "
                      "personalisation ({} memory-only steps, 200 rows): {:.2f} ms.\n",
                      g.param_count(), cfg.shape.slots, cfg.shape.code, tf, tv, tv / tf, ta, ta / tf, tm, tm / tf, tc, tc / tf, ts, ts / tf,
                      worst, worst < 100 ? "met" : "missed", po.steps, tp);
  }
  md += fmt::format("\nModel: MemAE {}-{}-{} with {} memory slots, lambda 1/N, alpha {}; {} local epoch(s) per round, batch {}, "
                    "Adam lr {}; FedProx mu {}; FedAvgM server lr {} momentum {}; FedAdam server lr {} betas {}/{} tau {}; "
                    "personalised: {} server, {} memory-only steps per node; outliers of the synthetic splits: {}; at least {} normal rows "
                    "per synthetic client. {:.0f} s on {} thread(s).\n",
                    cfg.shape.input, cfg.shape.hidden, cfg.shape.code, cfg.shape.slots, cfg.mopt.alpha, cfg.local_epochs,
                    cfg.batch, cfg.lr, cfg.mu, cfg.server.momentum.lr, cfg.server.momentum.beta1, cfg.server.adam.lr, cfg.server.adam.beta1, cfg.server.adam.beta2,
                    cfg.server.adam.tau, cfg.pers_server.empty() ? "clustered + Adam" : cfg.pers_server, cfg.personalise_steps, cfg.outlier_split, cfg.min_rows, secs, threads);
  std::fputs(md.c_str(), stdout);
  if (!out_path.empty()) {
    std::ofstream o(out_path);
    o << "Command: `" << cmdline << "`\n" << md;
    if (!o) {
      std::fprintf(stderr, "fedad: --out %s: cannot write\n", out_path.c_str());
      return 1;
    }
    std::printf("\nwritten to %s\n", out_path.c_str());
  }
  return 0;
}
