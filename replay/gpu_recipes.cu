// GPU replay recipes (see gpu.hpp). Compiled with -fmad=false so the device
// code has a fixed rounding order; every block computes the same result.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <unistd.h>
#include <mma.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <stdexcept>

#include "libc3/signature.hpp"
#include "replay/gpu.hpp"

namespace scout::replay::gpu {

const char* const kRecipes[] = {"gpu_gemm_f64", "gpu_gemm_f32", "gpu_fma_chain", "gpu_transcendental",
                                "gpu_int_bit",  "gpu_mem_march", "gpu_mma_f16",  "gpu_mma_bf16"};
const int kRecipeCount = 8;

namespace {

constexpr int kThreads = 128;
constexpr int kWords = 1024;  // 64-bit output words per block

__device__ __forceinline__ unsigned smid() {
  unsigned id;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
  return id;
}

// Every launch over-launches kOverLaunch blocks per SM; the first block to
// start on an SM claims it (claims[] is cleared before each launch) and the
// others exit at once, so each SM that got a block runs exactly one. The SM
// id is read at the start and again at the end: a block that was moved
// (preemption) marks itself invalid rather than blame the wrong SM.
constexpr int kOverLaunch = 4;
constexpr int kMaxSmIds = 1024;
constexpr unsigned kNoSm = 0xFFFFFFFFu;
__device__ __forceinline__ bool claim_sm(unsigned* claims, unsigned* sms, unsigned& sm0) {
  __shared__ int won;
  if (threadIdx.x == 0) {
    sm0 = smid();
    won = sm0 < kMaxSmIds && atomicCAS(&claims[sm0], 0u, 1u) == 0u;
    if (!won) sms[blockIdx.x] = kNoSm;
  }
  __syncthreads();
  return won != 0;
}
__device__ __forceinline__ void finish_sm(unsigned* sms, unsigned sm0) {
  if (threadIdx.x == 0) sms[blockIdx.x] = smid() == sm0 ? sm0 : kNoSm;
}

__host__ __device__ __forceinline__ unsigned long long mix(unsigned long long z) {
  z += 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}
__host__ __device__ __forceinline__ double unit(unsigned long long seed, unsigned long long i) {
  return static_cast<double>(mix(seed ^ (i * 0x632BE59BD9B4E019ULL)) >> 11) * 0x1.0p-53;
}

template <class T>
__global__ void k_gemm(unsigned long long seed, unsigned long long* out, unsigned* sms, unsigned* claims) {
  unsigned sm0 = 0;
  if (!claim_sm(claims, sms, sm0)) return;
  constexpr int n = 32;
  __shared__ T a[n * n], b[n * n];
  for (int i = threadIdx.x; i < n * n; i += blockDim.x) {
    a[i] = static_cast<T>(unit(seed, i) * 2 - 1);
    b[i] = static_cast<T>(unit(seed + 1, i) * 2 - 1);
  }
  __syncthreads();
  unsigned long long* o = out + static_cast<size_t>(blockIdx.x) * kWords;
  for (int e = threadIdx.x; e < n * n; e += blockDim.x) {
    const int i = e / n, j = e % n;
    T acc = 0;
    for (int k = 0; k < n; ++k) acc += a[i * n + k] * b[k * n + j];
    unsigned long long w = 0;
    memcpy(&w, &acc, sizeof acc);
    o[e] = w;
  }
  finish_sm(sms, sm0);
}

// x <- x*x + c with c in [-1.9, -1.85]: a bounded chaotic map (orbits stay
// in [-2, 2]), so a flipped bit anywhere in the chain changes the result
// (a contracting chain like x*a + c forgets it at its fixed point). fma is
// exactly rounded: the host computes the same bits (host_reference).
__host__ __device__ __forceinline__ double fma_chain(unsigned long long seed, int l) {
  double x = unit(seed, l) * 2 - 1;
  const double c = -1.9 + 0.05 * unit(seed + 3, l);
  for (int t = 0; t < 2048; ++t) x = fma(x, x, c);
  return x;
}

__global__ void k_fma(unsigned long long seed, unsigned long long* out, unsigned* sms, unsigned* claims) {
  unsigned sm0 = 0;
  if (!claim_sm(claims, sms, sm0)) return;
  unsigned long long* o = out + static_cast<size_t>(blockIdx.x) * kWords;
  for (int l = threadIdx.x; l < kWords; l += blockDim.x) {
    o[l] = __double_as_longlong(fma_chain(seed, l));
  }
  finish_sm(sms, sm0);
}

__global__ void k_trans(unsigned long long seed, unsigned long long* out, unsigned* sms, unsigned* claims) {
  unsigned sm0 = 0;
  if (!claim_sm(claims, sms, sm0)) return;
  unsigned long long* o = out + static_cast<size_t>(blockIdx.x) * kWords;
  for (int l = threadIdx.x; l < kWords; l += blockDim.x) {
    double x = unit(seed, l) * 40 - 20;
    double y = exp(x * 0.5) + log(fabs(x) + 1e-3) + sin(x * 7) + sqrt(fabs(x));
    float xf = static_cast<float>(x);
    float yf = expf(xf * 0.25f) + logf(fabsf(xf) + 1e-3f) + sinf(xf) + sqrtf(fabsf(xf));
    o[l] = __double_as_longlong(y) ^ (static_cast<unsigned long long>(__float_as_uint(yf)) << 7);
  }
  finish_sm(sms, sm0);
}

__host__ __device__ __forceinline__ unsigned long long popc64(unsigned long long w) {
#ifdef __CUDA_ARCH__
  return static_cast<unsigned long long>(__popcll(w));
#else
  return static_cast<unsigned long long>(__builtin_popcountll(w));
#endif
}
__host__ __device__ __forceinline__ unsigned long long brev64(unsigned long long w) {
#ifdef __CUDA_ARCH__
  return __brevll(w);
#else
  unsigned long long r = 0;
  for (int i = 0; i < 64; ++i) r |= ((w >> i) & 1ULL) << (63 - i);
  return r;
#endif
}
// CRC32-C, popcount, rotates and bit reversal over 64 words: exact integer
// work, the same bits on the host (host_reference).
__host__ __device__ __forceinline__ unsigned long long int_bits(unsigned long long seed, int l) {
  unsigned crc = 0xFFFFFFFFu;
  unsigned long long pop = 0, m = 0;
  for (int i = 0; i < 64; ++i) {
    unsigned long long w = mix(seed ^ (static_cast<unsigned long long>(l) << 20) ^ static_cast<unsigned long long>(i));
    for (int byte = 0; byte < 8; ++byte) {
      crc ^= static_cast<unsigned>((w >> (8 * byte)) & 0xFF);
      for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1u)));
    }
    pop += popc64(w);
    const unsigned r = (i % 63) + 1;
    m ^= (w << r) | (w >> (64 - r));
    m = (m >> 7) ^ (m << 3) ^ brev64(w);
  }
  return (static_cast<unsigned long long>(crc) << 32) ^ pop ^ m;
}

__global__ void k_int(unsigned long long seed, unsigned long long* out, unsigned* sms, unsigned* claims) {
  unsigned sm0 = 0;
  if (!claim_sm(claims, sms, sm0)) return;
  unsigned long long* o = out + static_cast<size_t>(blockIdx.x) * kWords;
  for (int l = threadIdx.x; l < kWords; l += blockDim.x) o[l] = int_bits(seed, l);
  finish_sm(sms, sm0);
}

// March C- over this block's own region of global memory.
__global__ void k_march(unsigned long long seed, unsigned long long* out, unsigned* sms, unsigned* claims,
                        unsigned long long* scratch, int words) {
  unsigned sm0 = 0;
  if (!claim_sm(claims, sms, sm0)) return;
  volatile unsigned long long* m = scratch + static_cast<size_t>(blockIdx.x) * words;
  const unsigned long long p0 = mix(seed), p1 = ~p0;
  unsigned long long err = 0, acc = 0;
  const int t = threadIdx.x, s = blockDim.x;
  for (int i = t; i < words; i += s) m[i] = p0;
  __syncthreads();
  for (int i = t; i < words; i += s) { err += m[i] != p0; m[i] = p1; }
  __syncthreads();
  for (int i = t; i < words; i += s) { err += m[i] != p1; m[i] = p0; }
  __syncthreads();
  for (int i = words - 1 - t; i >= 0; i -= s) { err += m[i] != p0; m[i] = p1; }
  __syncthreads();
  for (int i = words - 1 - t; i >= 0; i -= s) { err += m[i] != p1; m[i] = p0 ^ static_cast<unsigned long long>(i); }
  __syncthreads();
  for (int i = t; i < words; i += s) {
    err += m[i] != (p0 ^ static_cast<unsigned long long>(i));
    acc ^= m[i] * (2ULL * static_cast<unsigned long long>(i) + 1);
  }
  unsigned long long* o = out + static_cast<size_t>(blockIdx.x) * kWords;
  for (int l = t; l < kWords; l += s) o[l] = 0;
  __syncthreads();
  atomicAdd(&o[0], err);
  atomicXor(&o[1], acc);
  if (t == 0) o[2] = static_cast<unsigned long long>(words);
  finish_sm(sms, sm0);
}

// Tensor cores: one 16x16x16 MMA tile per warp, accumulated over 16 steps in
// fp32; every warp of every block computes the same tile.
template <class T>
__global__ void k_mma(unsigned long long seed, unsigned long long* out, unsigned* sms, unsigned* claims) {
  unsigned sm0 = 0;
  if (!claim_sm(claims, sms, sm0)) return;
  using namespace nvcuda;
  static_assert(kThreads == 4 * 32, "k_mma keeps one 16x16 tile per warp in c[4]");
  __shared__ __align__(32) T a[16 * 16 * 16];
  __shared__ __align__(32) T b[16 * 16 * 16];
  __shared__ __align__(32) float c[4][16 * 16];
  for (int i = threadIdx.x; i < 16 * 16 * 16; i += blockDim.x) {
    a[i] = static_cast<T>(static_cast<float>(unit(seed, i) * 2 - 1));
    b[i] = static_cast<T>(static_cast<float>(unit(seed + 5, i) * 2 - 1));
  }
  __syncthreads();
  const int warp = threadIdx.x / 32;
  wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::col_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
  wmma::fill_fragment(fc, 0.0f);
  for (int k = 0; k < 16; ++k) {
    wmma::load_matrix_sync(fa, a + k * 256, 16);
    wmma::load_matrix_sync(fb, b + k * 256, 16);
    wmma::mma_sync(fc, fa, fb, fc);
  }
  wmma::store_matrix_sync(c[warp], fc, 16, wmma::mem_row_major);
  __syncthreads();
  unsigned long long* o = out + static_cast<size_t>(blockIdx.x) * kWords;
  for (int l = threadIdx.x; l < kWords; l += blockDim.x) {
    const int w = l / 256, e = l % 256;
    o[l] = w < 4 ? static_cast<unsigned long long>(__float_as_uint(c[w][e])) : 0ULL;
  }
  finish_sm(sms, sm0);
}

struct Check {
  std::string* err;
  bool operator()(cudaError_t e, const char* what) const {
    if (e == cudaSuccess) return true;
    if (err->empty()) *err = std::string(what) + ": " + cudaGetErrorString(e);
    return false;
  }
};

}  // namespace

int device_count(std::string* error) noexcept {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e == cudaSuccess) return n;
  cudaGetLastError();  // clear
  if (e == cudaErrorNoDevice) return 0;  // CUDA says there is none
  // No NVIDIA kernel driver at all (no /proc/driver/nvidia, no
  // /dev/nvidiactl): a machine without a GPU, whatever the runtime says.
  if (e == cudaErrorInsufficientDriver && access("/proc/driver/nvidia", F_OK) != 0 &&
      access("/dev/nvidiactl", F_OK) != 0)
    return 0;
  if (error) *error = std::string("cudaGetDeviceCount: ") + cudaGetErrorString(e);
  return -1;  // a driver too old, no fabric manager, ...: GPUs that cannot be checked
}

std::uint64_t host_reference(const std::string& recipe, std::uint64_t seed) {
  int r = 0;
  while (r < kRecipeCount && recipe != kRecipes[r]) ++r;
  if (r == kRecipeCount) return 0;
  const unsigned long long s = seed ^ (0x1000ULL * static_cast<unsigned long long>(r + 1));
  std::vector<unsigned long long> o(kWords);
  if (recipe == "gpu_fma_chain") {
    for (int l = 0; l < kWords; ++l) {
      const double x = fma_chain(s, l);
      std::memcpy(&o[static_cast<size_t>(l)], &x, 8);
    }
  } else if (recipe == "gpu_int_bit") {
    for (int l = 0; l < kWords; ++l) o[static_cast<size_t>(l)] = int_bits(s, l);
  } else {
    return 0;  // not reproduced exactly on the host
  }
  const std::int64_t shape[1] = {kWords};
  c3::SignatureMeta meta{c3::kElemU64, std::span<const std::int64_t>(shape, 1)};
  return c3::detail::signature_generic(o.data(), kWords * 8, meta);
}

Cycle run_cycle(int device, std::uint64_t seed, int blocks_per_sm, const std::vector<Flip>& flips,
                const std::string& only) {
  Cycle cy;
  cy.device = device;
  Check ok{&cy.error};
  cudaDeviceProp prop{};
  if (!ok(cudaSetDevice(device), "cudaSetDevice") || !ok(cudaGetDeviceProperties(&prop, device), "properties"))
    return cy;
  cy.name = prop.name;
  cy.sm_count = prop.multiProcessorCount;
  (void)blocks_per_sm;  // one block per SM, claimed (see claim_sm)
  const int blocks = kOverLaunch * prop.multiProcessorCount;
  // Lowest priority: numerically the greatest ("least") priority.
  int least = 0, greatest = 0;
  cudaDeviceGetStreamPriorityRange(&least, &greatest);
  cudaStream_t stream = nullptr;
  if (!ok(cudaStreamCreateWithPriority(&stream, cudaStreamNonBlocking, least), "stream")) return cy;
  unsigned long long* d_out = nullptr;
  unsigned long long* d_scratch = nullptr;
  unsigned* d_sms = nullptr;
  unsigned* d_claims = nullptr;
  constexpr int kMarchWords = 8192;  // 64 KiB per block
  const size_t out_words = static_cast<size_t>(blocks) * kWords;
  std::vector<unsigned long long> h_out(out_words);
  std::vector<unsigned> h_sms(static_cast<size_t>(blocks));
  cudaEvent_t e0 = nullptr, e1 = nullptr;
  if (ok(cudaMalloc(&d_out, out_words * 8), "cudaMalloc") &&
      ok(cudaMalloc(&d_sms, static_cast<size_t>(blocks) * sizeof(unsigned)), "cudaMalloc") &&
      ok(cudaMalloc(&d_claims, kMaxSmIds * sizeof(unsigned)), "cudaMalloc") &&
      ok(cudaMalloc(&d_scratch, static_cast<size_t>(blocks) * kMarchWords * 8), "cudaMalloc") &&
      ok(cudaEventCreate(&e0), "event") && ok(cudaEventCreate(&e1), "event")) {
    const bool bf16 = prop.major >= 8;
    for (int r = 0; r < kRecipeCount && cy.error.empty(); ++r) {
      const std::string name = kRecipes[r];
      if (!only.empty() && only != name) continue;
      if (name == "gpu_mma_bf16" && !bf16) continue;
      const unsigned long long s = seed ^ (0x1000ULL * static_cast<unsigned long long>(r + 1));
      cudaMemsetAsync(d_claims, 0, kMaxSmIds * sizeof(unsigned), stream);
      cudaEventRecord(e0, stream);
      switch (r) {
        case 0: k_gemm<double><<<blocks, kThreads, 0, stream>>>(s, d_out, d_sms, d_claims); break;
        case 1: k_gemm<float><<<blocks, kThreads, 0, stream>>>(s, d_out, d_sms, d_claims); break;
        case 2: k_fma<<<blocks, kThreads, 0, stream>>>(s, d_out, d_sms, d_claims); break;
        case 3: k_trans<<<blocks, kThreads, 0, stream>>>(s, d_out, d_sms, d_claims); break;
        case 4: k_int<<<blocks, kThreads, 0, stream>>>(s, d_out, d_sms, d_claims); break;
        case 5: k_march<<<blocks, kThreads, 0, stream>>>(s, d_out, d_sms, d_claims, d_scratch, kMarchWords); break;
        case 6: k_mma<__half><<<blocks, kThreads, 0, stream>>>(s, d_out, d_sms, d_claims); break;
        case 7: k_mma<__nv_bfloat16><<<blocks, kThreads, 0, stream>>>(s, d_out, d_sms, d_claims); break;
      }
      cudaEventRecord(e1, stream);
      if (!ok(cudaGetLastError(), name.c_str()) ||
          !ok(cudaMemcpyAsync(h_out.data(), d_out, out_words * 8, cudaMemcpyDeviceToHost, stream), "copy") ||
          !ok(cudaMemcpyAsync(h_sms.data(), d_sms, h_sms.size() * sizeof(unsigned), cudaMemcpyDeviceToHost,
                              stream), "copy") ||
          !ok(cudaStreamSynchronize(stream), name.c_str()))
        break;
      RecipeRun run;
      run.recipe = name;
      float ms = 0;
      cudaEventElapsedTime(&ms, e0, e1);
      run.ms = ms;
      std::map<int, SmSig> by_sm;
      for (int b = 0; b < blocks; ++b) {
        unsigned long long* o = h_out.data() + static_cast<size_t>(b) * kWords;
        if (h_sms[static_cast<size_t>(b)] == kNoSm) continue;  // exited unclaimed, or moved
        const int sm = static_cast<int>(h_sms[static_cast<size_t>(b)]);
        for (auto& f : flips)
          if (f.sm == sm && f.recipe == name) {
            const int bit = f.bit % (kWords * 64);
            o[bit / 64] ^= 1ULL << (bit % 64);
          }
        const std::int64_t shape[1] = {kWords};
        c3::SignatureMeta meta{c3::kElemU64, std::span<const std::int64_t>(shape, 1)};
        const std::uint64_t sig = c3::detail::signature_generic(o, kWords * 8, meta);
        auto& e = by_sm[sm];
        if (e.blocks == 0) {
          e.sm = sm;
          e.signature = sig;
        } else if (e.signature != sig) {
          // Two blocks on one SM (a claim lost to a race): combined without
          // cancelling, so it differs from a healthy SM.
          e.blocks_agree = false;
          const std::uint64_t w[2] = {e.signature, sig};
          e.signature = c3::signature_words(w);
        }
        ++e.blocks;
      }
      for (auto& [sm, e] : by_sm) run.sms.push_back(e);
      run.covered = static_cast<int>(by_sm.size());
      cy.recipes.push_back(std::move(run));
    }
  }
  if (e0) cudaEventDestroy(e0);
  if (e1) cudaEventDestroy(e1);
  cudaFree(d_out);
  cudaFree(d_sms);
  cudaFree(d_claims);
  cudaFree(d_scratch);
  cudaStreamDestroy(stream);
  return cy;
}

}  // namespace scout::replay::gpu
