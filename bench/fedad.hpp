// bench/fedad's parts (see fedad.cpp for what it measures): the data and its
// splits (fedad_data.cpp), training and scoring one method (fedad_run.cpp).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "learn/aggregate.hpp"
#include "learn/memae.hpp"

namespace fedad {

using namespace scout::learn;

// Prints what was expected and the usage, exits 2 ("help": the usage, exit 0).
[[noreturn]] void usage(const std::string& msg);

struct Dataset {
  Mat x;                      // rows are samples
  std::vector<int> outlier;   // 1 outlier, 0 normal
  std::vector<int> group;     // natural client index, -1 without --client-column
  std::vector<std::string> group_names;
  std::vector<std::string> features;
};

std::vector<std::string> split_csv_line(const std::string& line);
Dataset load_csv(const std::string& path, const std::string& label, const std::set<std::string>& normal,
                 const std::set<std::string>& outlier, const std::set<std::string>& drop, const std::string& client_col);
// AUROC and AUPRC of `score` against labels `y` (1: outlier).
std::pair<double, double> metrics(const Vec& score, const std::vector<int>& y);
std::vector<int> kmeans(const Mat& x, int k, std::uint64_t seed);
using Rows = std::vector<Eigen::Index>;
std::vector<Rows> partition(const std::vector<Eigen::Index>& items, const std::vector<int>& cluster, int k, int clients,
                            double alpha, std::size_t min_rows, std::mt19937_64& rng);
Mat rows_of(const Mat& x, const Rows& idx);

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

struct RunResult {
  std::map<Method, Eval> equal, converged;
};


Aggregation aggregation_of(Method m);
Eval evaluate(const std::vector<Client>& cl, const std::vector<const MemAE*>& model_of);
double val_loss(const MemAE& m, const std::vector<Client>& cl);
RunResult run_method(Method m, const Config& cfg, const Scenario& sc, const std::vector<Client>& cl, std::uint64_t seed);
// Builds the clients of one scenario and seed.
std::vector<Client> make_clients(const Dataset& d, const Mat& z, const std::vector<int>& cluster, const Scenario& sc,
                                 const Config& cfg, std::uint64_t seed, int k_clusters);

}  // namespace fedad
