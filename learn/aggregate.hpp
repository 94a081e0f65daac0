// Federated aggregation of MemAE client models into a global model.
//   fedavg:          sample-weighted average of every parameter;
//   attention_aware: memory slots are unordered and addressed by attention,
//                    so slot i of one client is not slot i of another: each
//                    client's slots are matched to the global memory by a
//                    Hungarian assignment on cosine similarity, then averaged
//                    weighted by samples x usage; slots nobody uses are
//                    re-seeded from the most used one (plus noise); the other
//                    parameters are averaged as in FedAvg.
//   clustered_memory: the memory is a weighted k-means (k = N) of the used
//                    slots of all clients (weight samples x usage), so the
//                    global memory can hold more distinct normal patterns
//                    than any one client uses; deterministic farthest-point
//                    initialisation (order-free), Lloyd iterations; the other
//                    parameters are averaged as in FedAvg;
//   fedavgm/fedadam: server momentum (Hsu et al. 2019) and server Adam
//                    (Reddi et al. 2021) on the FedAvg pseudo-gradient
//                    (average client model - global); the state is passed
//                    in and returned, so the functions stay pure;
//   personalise:     a node's own copy: the shared encoder and decoder, the
//                    memory adapted to its own data for a few steps from the
//                    global memory (only the slots move), so each node's
//                    memory holds its own normal prototypes.
// (FedProx is FedAvg aggregation with a proximal term in local training.)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "learn/aggregation.hpp"
#include "learn/memae.hpp"

namespace scout::learn {

struct ClientModel {
  const MemAE* model = nullptr;
  double samples = 0;
  Vec usage;  // per slot, mean attention over the client's data (size N)
};

MemAE fedavg(const std::vector<ClientModel>& clients);
MemAE attention_aware(const MemAE& global, const std::vector<ClientModel>& clients, std::uint64_t seed);
MemAE clustered_memory(const MemAE& global, const std::vector<ClientModel>& clients, std::uint64_t seed);

struct ServerState {  // server optimiser state (FedAvgM: m; FedAdam: m, v, t)
  Vec m, v;
  long t = 0;
};
struct ServerOptions {
  double lr = 1.0;      // FedAvgM: 1; FedAdam: ~0.01-0.1
  double beta1 = 0.9;   // momentum
  double beta2 = 0.99;  // FedAdam second moment
  double tau = 1e-3;    // FedAdam adaptivity
};
struct Aggregate {
  MemAE model;
  ServerState state;
};
enum class ServerOptimiser { kMomentum, kAdam };
// One server step from `global` towards `candidate` (the pseudo-gradient is
// candidate - global): FedAvgM is fedavg + kMomentum, FedAdam fedavg +
// kAdam; any aggregation whose slots keep their place (matched, clustered)
// can be the candidate.
Aggregate server_step(const MemAE& global, const MemAE& candidate, const ServerState& state, const ServerOptions& o,
                      ServerOptimiser how);
Aggregate fedavgm(const MemAE& global, const std::vector<ClientModel>& clients, const ServerState& state,
                  const ServerOptions& o);
Aggregate fedadam(const MemAE& global, const std::vector<ClientModel>& clients, const ServerState& state,
                  const ServerOptions& o);

struct PersonaliseOptions {
  long steps = 20;  // Adam steps on the memory only
  int batch = 64;
  double lr = 3e-3;
  double prox_mu = 0;  // > 0: mu/2 ||M - M_global||^2 keeps the memory near the global one (Ditto)
  std::uint64_t seed = 1;
};
// The node's model: `global` with its memory adapted to `data` (rows are
// samples). No data: the global model unchanged.
MemAE personalise(const MemAE& global, const Mat& data, const PersonaliseOptions& o);

struct ServerConfig {
  ServerOptions momentum{1.0, 0.9, 0.99, 1e-3};  // FedAvgM
  ServerOptions adam{0.03, 0.9, 0.99, 1e-3};     // FedAdam and the personalised server
};
// One server round of `how`: the new global model and server state.
// kPersonalised's server is clustered memory stepped by the server Adam
// (the nodes then personalise() the memory of what it broadcasts).
Aggregate aggregate(Aggregation how, const MemAE& global, const std::vector<ClientModel>& clients,
                    const ServerState& state, std::uint64_t seed, const ServerConfig& cfg = {});
// Whether `how` needs the clients' slot usage.
bool needs_usage(Aggregation how) noexcept;

// Minimum-cost assignment (Hungarian, O(n^3)) of a square cost matrix:
// result[row] = column.
std::vector<int> hungarian(const Mat& cost);

}  // namespace scout::learn
