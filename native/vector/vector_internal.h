// Constants and small helpers the vector index's source files share. Private to native/vector/.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "common/crc32c.h"
#include "common/errors.h"
#include "common/hash.h"
#include "vector/vector_index.h"

namespace spanguard {
namespace vector_detail {

using unum::usearch::byte_t;
using unum::usearch::index_dense_config_t;
using unum::usearch::index_limits_t;
using unum::usearch::metric_kind_t;
using unum::usearch::metric_punned_t;
using unum::usearch::scalar_kind_t;

constexpr char kSnapMagic[8] = {'S', 'G', 'V', 'I', 'D', 'X', '0', '1'};
/// 2: byte 18 names the strategy (1 hnsw, 2 binary); version-1 files are rebuilt. `.usearch`
/// snapshots are written in version 2.
constexpr uint32_t kSnapVersion = 2;
/// `.flat` snapshots: 3 = row ordinals instead of rows, and the partition; version 2 (keys,
/// rows, signatures) is still loaded.
constexpr uint32_t kSnapVersionFlat = 3;
/// Partitions: the centroids a row's nearest list is chosen among (nearest by Hamming).
constexpr size_t kShortlist = 16;
/// Partitions: k-means rounds, and sampled rows per list.
constexpr int kKmeansRounds = 8;
constexpr size_t kSamplePerList = 64;
/// Seed of the randomized Hadamard signs (part of the format: signatures are stored).
constexpr uint64_t kRhtSeed = 0x5347524854303031ull;  // "SGRHT001"
/// Signature bits per vector: the rotations are repeated until they give at least this many
/// (256 dims: two rotations). Measured on real-turn embeddings at 10^6: 256 bits need a pool
/// of 16,384 for recall@10 0.97, 512 bits a pool of 4,096 for 0.976.
constexpr size_t kCodeBitsMin = 512;
/// Largest signature: 4096 dims pad to 4096, one rotation.
constexpr size_t kMaxCodeWords = 4096 / 64;
constexpr size_t kSnapHeader = 64;
constexpr uint64_t kNoId = ~0ull;

/// Threads used to build: the machine this was tuned on has 2 cores, and the JS thread is
/// blocked in the call anyway, so it is one of them.
constexpr size_t kBuildThreads = 2;
/// Below this many rows a batch is added on the calling thread (spawning is not free).
constexpr size_t kParallelMin = 512;
/// A partitioned search splits its lists over two threads from this many probed rows on:
/// about 0.4 ms of scanning on one core, against tens of microseconds to wake the helper.
constexpr size_t kSplitMinRows = 65536;
/// catchUp batch: spans per embed/store/index round, and a bound on the text bytes copied.
constexpr size_t kCatchUpSpans = 2048;
constexpr size_t kCatchUpBytes = 16u << 20;

/// The Hamming scan over blocks of 8 signatures (binary_scan.cpp): writes the distance of all
/// 8 * nb rows to `dist` and appends to `cand` (ascending) every row whose distance is <= tau;
/// returns how many it appended (`cand` must hold 8 * nb).
size_t ScanCodes(const uint64_t* blocks, size_t nb, size_t words, const uint64_t* q, uint16_t* dist, uint32_t tau,
                 uint32_t* cand) noexcept;

/// One scan kernel by name ("portable", "popcnt", "avx512"), Hamming or asymmetric (`q` is
/// then the kQueryPlanes planes), for tests that hold every kernel to the same answers;
/// false when the CPU lacks it.
bool ScanWith(const std::string& impl, bool asymmetric, const uint64_t* blocks, size_t nb, size_t words,
              const uint64_t* q, uint32_t bias, uint16_t* dist, uint32_t tau, uint32_t* cand, size_t* found) noexcept;

/// Where signatures are kept (Flat::codes/tails, and each list's codes/tails): the first
/// `lead` words of each in blocks of 8 rows, word-major inside a block (word w of rows 0..7
/// contiguous, so one 512-bit load compares a query word with 8 rows), and the other `tail`
/// words row-major (a row's in one cache line). A scan's first pass reads the lead words
/// only. A snapshot holds whole signatures in blocks of 8: Split on load, Join on save.
struct CodeLayout {
  size_t lead = 0;
  size_t tail = 0;

  /// Words of `codes` and of `tails` for `rows` rows.
  size_t CodeWords(size_t rows) const noexcept { return (rows + 7) / 8 * lead * 8; }
  size_t TailWords(size_t rows) const noexcept { return rows * tail; }
  /// Writes row r's signature (lead + tail words).
  void Put(uint64_t* codes, uint64_t* tails, size_t r, const uint64_t* code) const noexcept {
    uint64_t* block = codes + (r / 8) * lead * 8 + (r % 8);
    for (size_t w = 0; w < lead; ++w) block[w * 8] = code[w];
    std::memcpy(tails + r * tail, code + lead, tail * 8);
  }
  /// Reads row r's signature.
  void Get(const uint64_t* codes, const uint64_t* tails, size_t r, uint64_t* out) const noexcept {
    const uint64_t* block = codes + (r / 8) * lead * 8 + (r % 8);
    for (size_t w = 0; w < lead; ++w) out[w] = block[w * 8];
    std::memcpy(out + lead, tails + r * tail, tail * 8);
  }
  /// `rows` whole signatures in blocks of 8 (a file's bytes: read without alignment) into
  /// `codes` (CodeWords(rows)) and `tails` (TailWords(rows)).
  void Split(const unsigned char* blocks, size_t rows, uint64_t* codes, uint64_t* tails) const noexcept {
    const size_t words = lead + tail;
    for (size_t b = 0; b < (rows + 7) / 8; ++b) {
      const unsigned char* in = blocks + b * words * 64;
      std::memcpy(codes + b * lead * 8, in, lead * 64);
      for (size_t lane = 0; lane < 8 && b * 8 + lane < rows; ++lane)
        for (size_t w = 0; w < tail; ++w)
          std::memcpy(&tails[(b * 8 + lane) * tail + w], in + ((lead + w) * 8 + lane) * 8, 8);
    }
  }
  /// Blocks [b0, b0 + nb) of whole signatures in blocks of 8, from `rows` rows kept so
  /// (lanes past the last row: zero).
  void Join(const uint64_t* codes, const uint64_t* tails, size_t rows, size_t b0, size_t nb,
            uint64_t* out) const noexcept {
    const size_t words = lead + tail;
    for (size_t b = b0; b < b0 + nb; ++b) {
      uint64_t* o = out + (b - b0) * words * 8;
      std::memcpy(o, codes + b * lead * 8, lead * 64);
      for (size_t w = 0; w < tail; ++w)
        for (size_t lane = 0; lane < 8; ++lane) {
          const size_t r = b * 8 + lane;
          o[(lead + w) * 8 + lane] = r < rows ? tails[r * tail + w] : 0;
        }
    }
  }
};

/// The second pass of a partitioned search (binary_scan.cpp): for each of `n` rows, the
/// estimate its first pass began over the lead words (`lead_dist[j]`, against a query of
/// bias `lead_bias`) completed with its `tail` tail words at `tails[j]` against the query's
/// planes at those words (`planes` + k * stride for plane k); writes
/// (distance << 32 | rows[j]) with distance = full_bias - the whole score.
void FinishAt(const uint64_t* const* tails, size_t tail, const uint64_t* planes, size_t stride, const uint32_t* rows,
              size_t n, const uint16_t* lead_dist, int32_t lead_bias, int32_t full_bias, uint64_t* out) noexcept;

/// The scan's first pass (lead words only) keeps this many times the rerank pool for the
/// second (whole signatures): measured at 10^6 (docs/VECTOR_FORMAT.md).
constexpr size_t kLeadShortlist = 4;

/// The first pass's threshold sample (binary_scan.cpp SearchFlat): every kSampleStride-th
/// block at least, about kSampleBlocks blocks at most, and none below kSampleMinBlocks (a
/// smaller namespace keeps every row for the histogram instead).
constexpr size_t kSampleBlocks = 2048;
constexpr size_t kSampleStride = 32;
constexpr size_t kSampleMinBlocks = 64;

/// Bit planes of the query's quantized coordinates in the asymmetric scan (4 bits each).
constexpr size_t kQueryPlanes = 4;

/// A query as the signature scan compares it with the rows' signatures (binary_scan.cpp):
/// its rotated coordinates, quantized to kQueryPlanes-bit signed integers, as bit planes.
/// The distance it gives a row is an estimate of the row's cosine distance (smaller is
/// nearer), an integer in [0, max_dist].
struct ScanQuery {
  const uint64_t* planes = nullptr;  ///< plane k (bit k of each coordinate) at planes + k * stride
  size_t stride = 0;                 ///< words from one plane to the next
  uint32_t bias = 0;                 ///< (2^(kQueryPlanes-1) - 1) * bits
  uint32_t max_dist = 0;             ///< (2^kQueryPlanes - 1) * bits
  /// The query over the first `words` words of each plane (a signature's first `words`).
  static ScanQuery Over(const uint64_t* planes, size_t stride, size_t words) noexcept {
    constexpr uint32_t kHigh = (1u << (kQueryPlanes - 1)) - 1;
    const auto bits = static_cast<uint32_t>(words * 64);
    return {planes, stride, kHigh * bits, (2 * kHigh + 1) * bits};
  }
  /// The scan of blocks of 8 signatures of `words` words (as ScanCodes) against this query.
  size_t Scan(const uint64_t* blocks, size_t nb, size_t words, uint16_t* dist, uint32_t tau,
              uint32_t* cand) const noexcept;
};

inline scalar_kind_t ToUsearch(VectorScalar s) {
  switch (s) {
    case VectorScalar::kF32:
      return scalar_kind_t::f32_k;
    case VectorScalar::kF16:
      return scalar_kind_t::f16_k;
    case VectorScalar::kI8:
      return scalar_kind_t::i8_k;
  }
  return scalar_kind_t::f32_k;
}

inline std::string Where(const std::string& path, uint64_t offset) {
  return " [file=" + path + " offset=" + std::to_string(offset) + "]";
}

/// Runs fn(begin, end, thread) over [0, n) split in `threads` contiguous parts; the calling
/// thread takes part 0. Exceptions are not thrown across: fn must not throw.
template <typename Fn>
inline void ParallelFor(size_t n, size_t threads, Fn&& fn) {
  if (threads <= 1 || n < 2) {
    fn(size_t{0}, n, size_t{0});
    return;
  }
  std::vector<std::thread> pool;
  size_t per = (n + threads - 1) / threads;
  for (size_t t = 1; t < threads; ++t) {
    size_t b = std::min(n, t * per), e = std::min(n, (t + 1) * per);
    if (b < e) pool.emplace_back([&fn, b, e, t] { fn(b, e, t); });
  }
  fn(size_t{0}, std::min(n, per), size_t{0});
  for (auto& th : pool) th.join();
}

/// 64-bit content hash of a vector (FNV-style over its words, then fmix64). Two vectors
/// share a hash only if equal, up to a collision chance of about n^2 / 2^65.
inline uint64_t VectorHash(const float* v, size_t dims) noexcept {
  uint64_t h = 0xCBF29CE484222325ull ^ dims;
  const auto* w = reinterpret_cast<const uint32_t*>(v);
  size_t i = 0;
  for (; i + 2 <= dims; i += 2) {
    uint64_t x = static_cast<uint64_t>(w[i]) | (static_cast<uint64_t>(w[i + 1]) << 32);
    h = (h ^ x) * 0x100000001B3ull;
    h ^= h >> 29;
  }
  if (i < dims) h = (h ^ w[i]) * 0x100000001B3ull;
  return Fmix64(h);
}

/// Writes v / |v| to out (zero stays zero: it has no direction, every distance to it is 1).
inline void Normalize(const float* v, size_t dims, float* out) noexcept {
  double sum = 0.0;
  for (size_t d = 0; d < dims; ++d) sum += static_cast<double>(v[d]) * v[d];
  float inv = sum > 0.0 ? static_cast<float>(1.0 / std::sqrt(sum)) : 0.0f;
  for (size_t d = 0; d < dims; ++d) out[d] = v[d] * inv;
}

inline size_t ScalarBytes(VectorScalar s) {
  switch (s) {
    case VectorScalar::kF32:
      return 4;
    case VectorScalar::kF16:
      return 2;
    case VectorScalar::kI8:
      return 1;
  }
  return 4;
}

inline uint64_t SplitMix64(uint64_t& state) noexcept {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/// In-place unnormalized fast Walsh-Hadamard transform, n a power of two.
inline void Fwht(float* x, size_t n) noexcept {
  for (size_t h = 1; h < n; h <<= 1)
    for (size_t i = 0; i < n; i += h << 1)
      for (size_t j = i; j < i + h; ++j) {
        float a = x[j], b = x[j + h];
        x[j] = a + b;
        x[j + h] = a - b;
      }
}

}  // namespace vector_detail
}  // namespace spanguard
