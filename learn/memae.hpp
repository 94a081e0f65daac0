// MemAE: a memory-augmented autoencoder for unsupervised outlier detection
// (Gong et al., ICCV 2019), small and dependency-light (Eigen).
//   encoder  x (D) -> tanh(W1 x + b1) (H) -> z = W2 h + b2 (C)
//   memory   M (N x C); w = softmax(scale * cos(z, m_i)); hard shrinkage
//            u_i = relu(w_i - lambda) w_i / (|w_i - lambda| + eps), w^ = u / sum(u)
//            z^ = M^T w^
//   decoder  z^ -> tanh(W3 z^ + b3) (H) -> x^ = W4 h + b4 (D)
//   loss     mean over the batch of ||x^ - x||^2 / D + alpha * H(w^)
// Anomaly score = reconstruction error. Gradients are analytic (checked
// against finite differences in the tests); training is deterministic for
// a seed; Adam; an optional proximal term (FedProx).
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <Eigen/Dense>

namespace scout::learn {

using Mat = Eigen::MatrixXd;
using Vec = Eigen::VectorXd;

struct MemAEShape {
  int input = 9;       // D
  int hidden = 32;     // H
  int code = 8;        // C
  int slots = 20;      // N
};

struct MemAEOptions {
  double lambda = -1;      // shrinkage threshold; < 0: 1/N
  double alpha = 2e-4;     // entropy weight
  double scale = 1.0;      // cosine similarity scale before the softmax
};

class MemAE {
 public:
  MemAE() = default;
  MemAE(MemAEShape s, MemAEOptions o, std::uint64_t seed);

  const MemAEShape& shape() const { return shape_; }
  const MemAEOptions& options() const { return opt_; }
  double lambda() const { return opt_.lambda < 0 ? 1.0 / shape_.slots : opt_.lambda; }

  // Parameters, flat (W1,b1,W2,b2,M,W3,b3,W4,b4; column-major matrices).
  Vec params() const;
  void set_params(const Vec& p);
  std::size_t param_count() const;
  // Offset and size of the memory block inside params().
  std::size_t memory_offset() const;

  // Loss of a batch (columns are samples) and, when grad != nullptr, its
  // gradient with respect to params().
  double loss(const Mat& x, Vec* grad) const;
  // Per-sample reconstruction error (the anomaly score).
  Vec score(const Mat& x) const;
  // The reconstructions (columns are samples).
  Mat reconstruct(const Mat& x) const;
  // Mean attention (after shrinkage) per slot over x: slot usage.
  Vec usage(const Mat& x) const;
  // The codes z (C x B) of x: what the memory is addressed with.
  Mat encode(const Mat& x) const;

  // Parameters as matrices (read/write).
  Mat W1, W2, M, W3, W4;
  Vec b1, b2, b3, b4;

 private:
  struct Cache;
  void forward(const Mat& x, Cache& c) const;
  MemAEShape shape_;
  MemAEOptions opt_;
};

struct TrainOptions {
  int epochs = 1;
  int batch = 64;
  double lr = 1e-3;
  double prox_mu = 0;        // FedProx: mu/2 ||theta - anchor||^2
  std::uint64_t seed = 1;
  bool memory_only = false;  // update the memory slots only (personalisation)
  long max_steps = 0;        // > 0: stop after this many batches
};

// Adam state that persists across calls (one per client in FL it is reset
// each round, as local optimisers usually are).
struct Adam {
  Vec m, v;
  long t = 0;
};

// Trains on the rows of `data` (rows are samples). Returns the mean loss of
// the last epoch. `anchor` (same size as params) is used when prox_mu > 0.
double train(MemAE& model, const Mat& data, const TrainOptions& o, Adam& adam, const Vec* anchor = nullptr);

// Serialisation of the parameters for the wire (doubles, little endian).
std::vector<double> to_wire(const MemAE& m);
void from_wire(MemAE& m, const std::vector<double>& w);

}  // namespace scout::learn
