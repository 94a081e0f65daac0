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
#include "bench/fedad.hpp"

using namespace scout::learn;
using namespace fedad;

namespace fedad {

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

}  // namespace fedad

namespace {

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
