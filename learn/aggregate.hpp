// Federated aggregation of MemAE client models into a global model.
//   fedavg:          sample-weighted average of every parameter;
//   attention_aware: memory slots are unordered and addressed by attention,
//                    so slot i of one client is not slot i of another: each
//                    client's slots are matched to the global memory by a
//                    Hungarian assignment on cosine similarity, then averaged
//                    weighted by samples x usage; slots nobody uses are
//                    re-seeded from the most used one (plus noise); the other
//                    parameters are averaged as in FedAvg.
// (FedProx is FedAvg aggregation with a proximal term in local training.)
#pragma once

#include <cstdint>
#include <vector>

#include "learn/memae.hpp"

namespace scout::learn {

struct ClientModel {
  const MemAE* model = nullptr;
  double samples = 0;
  Vec usage;  // per slot, mean attention over the client's data (size N)
};

MemAE fedavg(const std::vector<ClientModel>& clients);
MemAE attention_aware(const MemAE& global, const std::vector<ClientModel>& clients, std::uint64_t seed);

// Minimum-cost assignment (Hungarian, O(n^3)) of a square cost matrix:
// result[row] = column.
std::vector<int> hungarian(const Mat& cost);

}  // namespace scout::learn
