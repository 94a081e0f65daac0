// bench/fedad's training and scoring of one method (see fedad.hpp).
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


}  // namespace fedad
