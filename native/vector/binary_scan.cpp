// The binary strategy and the exact scan: vectors' SimHash signatures (a randomized Hadamard
// rotation), the scans over them with their SIMD kernels (Hamming between two signatures, and
// the asymmetric estimate a query scans with), and the exact rerank.

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "vector/vector_index.h"
#include "vector/vector_internal.h"

namespace spanguard {

using namespace vector_detail;

namespace {

// ---- the Hamming scan (a row's nearest centroids, partition.cpp) -----------------------------
// Codes are blocks of 8 rows x `words` u64, word-major. Each kernel writes the Hamming
// distance of all 8 * nb rows to `dist` and appends to `cand` (ascending) every row whose
// distance is <= tau; returns how many it appended. Rows past the real count are zero
// padding: the caller drops them.

__attribute__((always_inline)) inline size_t ScanBody(const uint64_t* blocks, size_t nb, size_t words,
                                                      const uint64_t* q, uint16_t* dist, uint32_t tau,
                                                      uint32_t* cand) noexcept {
  size_t found = 0;
  for (size_t b = 0; b < nb; ++b) {
    const uint64_t* p = blocks + b * words * 8;
    for (size_t lane = 0; lane < 8; ++lane) {
      uint32_t d = 0;
      for (size_t w = 0; w < words; ++w) d += static_cast<uint32_t>(__builtin_popcountll(p[w * 8 + lane] ^ q[w]));
      dist[b * 8 + lane] = static_cast<uint16_t>(d);
      if (d <= tau) cand[found++] = static_cast<uint32_t>(b * 8 + lane);
    }
  }
  return found;
}

size_t ScanPortable(const uint64_t* blocks, size_t nb, size_t words, const uint64_t* q, uint16_t* dist, uint32_t tau,
                    uint32_t* cand) noexcept {
  return ScanBody(blocks, nb, words, q, dist, tau, cand);
}

#if defined(__x86_64__)
__attribute__((target("popcnt"))) size_t ScanPopcnt(const uint64_t* blocks, size_t nb, size_t words, const uint64_t* q,
                                                    uint16_t* dist, uint32_t tau, uint32_t* cand) noexcept {
  return ScanBody(blocks, nb, words, q, dist, tau, cand);
}

/// A block's 8 distances (`d`, u64 lanes) written as u16 to `dist`, and the rows whose
/// distance is <= tau appended to `cand` (row numbers `idx`, which then move to the next block).
__attribute__((target("avx512f,avx512bw,avx512vl,avx512vpopcntdq"), always_inline)) inline void EmitBlock(
    __m512i d, __m512i tau_v, uint16_t* dist, uint32_t* cand, size_t* found, __m256i* idx) noexcept {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(dist), _mm512_cvtepi64_epi16(d));
  const __mmask8 m = _mm512_cmple_epu64_mask(d, tau_v);
  if (m) {
    _mm256_mask_compressstoreu_epi32(cand + *found, m, *idx);
    *found += static_cast<size_t>(__builtin_popcount(m));
  }
  *idx = _mm256_add_epi32(*idx, _mm256_set1_epi32(8));
}

/// AVX-512 VPOPCNTDQ: one 512-bit load compares a query word with 8 rows.
__attribute__((target("avx512f,avx512bw,avx512vl,avx512vpopcntdq"))) size_t ScanAvx512(const uint64_t* blocks,
                                                                                       size_t nb, size_t words,
                                                                                       const uint64_t* q,
                                                                                       uint16_t* dist, uint32_t tau,
                                                                                       uint32_t* cand) noexcept {
  size_t found = 0;
  const __m512i tau_v = _mm512_set1_epi64(tau);
  __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  for (size_t b = 0; b < nb; ++b) {
    const uint64_t* p = blocks + b * words * 8;
    __m512i acc = _mm512_setzero_si512();
    for (size_t w = 0; w < words; ++w) {
      __m512i x = _mm512_xor_si512(_mm512_loadu_si512(p + w * 8), _mm512_set1_epi64(static_cast<long long>(q[w])));
      acc = _mm512_add_epi64(acc, _mm512_popcnt_epi64(x));
    }
    EmitBlock(acc, tau_v, dist + b * 8, cand, &found, &idx);
  }
  return found;
}
#endif

// ---- the asymmetric scan ------------------------------------------------------------------
// The query keeps its rotated coordinates as signed integers of `B` bits (B bit planes of
// their two's complement, word-major like a signature); a row keeps its signs. The estimate
// of <q, x> is sum_i q_i * s_i with s_i = +-1, that is 2 * sum_{bit i set} q_i - sum_i q_i, and
// the last sum is the query's own: rows are ranked by S = sum_{bit i set} v_i, which the
// planes give as sum_{k<B-1} 2^k popcount(x & plane_k) - 2^(B-1) popcount(x & plane_(B-1)).
// The distance written is bias - S with bias = (2^(B-1) - 1) * bits: at least 0, at most
// (2^B - 1) * bits, which fits the u16 distances for the largest signature (4,096 bits). Only the
// query is quantized, so the order is much nearer the true one than the Hamming distance
// between two signatures, for the same bytes read.

template <int B>
__attribute__((always_inline)) inline size_t AsymBody(const uint64_t* blocks, size_t nb, size_t words,
                                                      const uint64_t* planes, size_t stride, uint32_t bias,
                                                      uint16_t* dist, uint32_t tau, uint32_t* cand) noexcept {
  size_t found = 0;
  for (size_t b = 0; b < nb; ++b) {
    const uint64_t* p = blocks + b * words * 8;
    for (size_t lane = 0; lane < 8; ++lane) {
      int32_t s = 0;
      for (size_t w = 0; w < words; ++w) {
        const uint64_t x = p[w * 8 + lane];
        for (int k = 0; k < B - 1; ++k) s += __builtin_popcountll(x & planes[k * stride + w]) << k;
        s -= __builtin_popcountll(x & planes[(B - 1) * stride + w]) << (B - 1);
      }
      const uint32_t d = static_cast<uint32_t>(static_cast<int32_t>(bias) - s);
      dist[b * 8 + lane] = static_cast<uint16_t>(d);
      if (d <= tau) cand[found++] = static_cast<uint32_t>(b * 8 + lane);
    }
  }
  return found;
}

size_t AsymPortable(const uint64_t* blocks, size_t nb, size_t words, const uint64_t* planes, size_t stride,
                    uint32_t bias, uint16_t* dist, uint32_t tau, uint32_t* cand) noexcept {
  return AsymBody<kQueryPlanes>(blocks, nb, words, planes, stride, bias, dist, tau, cand);
}

#if defined(__x86_64__)
__attribute__((target("popcnt"))) size_t AsymPopcnt(const uint64_t* blocks, size_t nb, size_t words,
                                                    const uint64_t* planes, size_t stride, uint32_t bias,
                                                    uint16_t* dist, uint32_t tau, uint32_t* cand) noexcept {
  return AsymBody<kQueryPlanes>(blocks, nb, words, planes, stride, bias, dist, tau, cand);
}

__attribute__((target("avx512f,avx512bw,avx512vl,avx512vpopcntdq"))) size_t AsymAvx512(
    const uint64_t* blocks, size_t nb, size_t words, const uint64_t* planes, size_t stride, uint32_t bias,
    uint16_t* dist, uint32_t tau, uint32_t* cand) noexcept {
  constexpr int B = static_cast<int>(kQueryPlanes);
  size_t found = 0;
  const __m512i tau_v = _mm512_set1_epi64(tau);
  const __m512i bias_v = _mm512_set1_epi64(bias);
  __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  for (size_t b = 0; b < nb; ++b) {
    const uint64_t* p = blocks + b * words * 8;
    __m512i acc[B];
    for (int k = 0; k < B; ++k) acc[k] = _mm512_setzero_si512();
    for (size_t w = 0; w < words; ++w) {
      const __m512i x = _mm512_loadu_si512(p + w * 8);
      for (int k = 0; k < B; ++k) {
        const __m512i plane = _mm512_set1_epi64(static_cast<long long>(planes[k * stride + w]));
        acc[k] = _mm512_add_epi64(acc[k], _mm512_popcnt_epi64(_mm512_and_si512(x, plane)));
      }
    }
    __m512i s = acc[0];
    for (int k = 1; k < B - 1; ++k) s = _mm512_add_epi64(s, _mm512_slli_epi64(acc[k], k));
    s = _mm512_sub_epi64(s, _mm512_slli_epi64(acc[B - 1], B - 1));
    const __m512i d = _mm512_sub_epi64(bias_v, s);
    EmitBlock(d, tau_v, dist + b * 8, cand, &found, &idx);
  }
  return found;
}
#endif

using AsymFn = size_t (*)(const uint64_t*, size_t, size_t, const uint64_t*, size_t, uint32_t, uint16_t*, uint32_t,
                          uint32_t*) noexcept;

// ---- the second pass: the tail words of the rows the first kept ---------------------------
// For each row of `rows` (its tail words row-major in `tails`, `tail` of them), completes
// the estimate the first pass began over its lead words: S = (lead_bias - lead_dist[row])
// plus the tail words' share with the query's planes (`planes` + k * stride for plane k, at
// the tail's words), and writes (distance << 32 | row) with distance = full_bias - S.

__attribute__((always_inline)) inline void FinishBody(const uint64_t* tails, size_t tail, const uint64_t* planes,
                                                      size_t stride, const uint32_t* rows, size_t n,
                                                      const uint16_t* lead_dist, int32_t lead_bias, int32_t full_bias,
                                                      uint64_t* out) noexcept {
  constexpr size_t kAhead = 8;
  for (size_t j = 0; j < n; ++j) {
    if (j + kAhead < n) __builtin_prefetch(tails + static_cast<size_t>(rows[j + kAhead]) * tail);
    const uint32_t r = rows[j];
    const uint64_t* x = tails + static_cast<size_t>(r) * tail;
    int32_t score = lead_bias - static_cast<int32_t>(lead_dist[r]);
    for (size_t w = 0; w < tail; ++w) {
      for (size_t k = 0; k + 1 < kQueryPlanes; ++k) score += __builtin_popcountll(x[w] & planes[k * stride + w]) << k;
      score -= __builtin_popcountll(x[w] & planes[(kQueryPlanes - 1) * stride + w]) << (kQueryPlanes - 1);
    }
    out[j] = static_cast<uint64_t>(static_cast<uint32_t>(full_bias - score)) << 32 | r;
  }
}

void FinishPortable(const uint64_t* tails, size_t tail, const uint64_t* planes, size_t stride, const uint32_t* rows,
                    size_t n, const uint16_t* lead_dist, int32_t lead_bias, int32_t full_bias, uint64_t* out) noexcept {
  FinishBody(tails, tail, planes, stride, rows, n, lead_dist, lead_bias, full_bias, out);
}

#if defined(__x86_64__)
__attribute__((target("popcnt"))) void FinishPopcnt(const uint64_t* tails, size_t tail, const uint64_t* planes,
                                                    size_t stride, const uint32_t* rows, size_t n,
                                                    const uint16_t* lead_dist, int32_t lead_bias, int32_t full_bias,
                                                    uint64_t* out) noexcept {
  FinishBody(tails, tail, planes, stride, rows, n, lead_dist, lead_bias, full_bias, out);
}
#endif

using FinishFn = void (*)(const uint64_t*, size_t, const uint64_t*, size_t, const uint32_t*, size_t, const uint16_t*,
                          int32_t, int32_t, uint64_t*) noexcept;

// The same for rows whose tail words lie apart (a partitioned search's, in their lists):
// row j's tail words at tails[j], its first pass's distance at lead_dist[j].
__attribute__((always_inline)) inline void FinishAtBody(const uint64_t* const* tails, size_t tail,
                                                        const uint64_t* planes, size_t stride, const uint32_t* rows,
                                                        size_t n, const uint16_t* lead_dist, int32_t lead_bias,
                                                        int32_t full_bias, uint64_t* out) noexcept {
  constexpr size_t kAhead = 8;
  for (size_t j = 0; j < n; ++j) {
    if (j + kAhead < n) __builtin_prefetch(tails[j + kAhead]);
    const uint64_t* x = tails[j];
    int32_t score = lead_bias - static_cast<int32_t>(lead_dist[j]);
    for (size_t w = 0; w < tail; ++w) {
      for (size_t k = 0; k + 1 < kQueryPlanes; ++k) score += __builtin_popcountll(x[w] & planes[k * stride + w]) << k;
      score -= __builtin_popcountll(x[w] & planes[(kQueryPlanes - 1) * stride + w]) << (kQueryPlanes - 1);
    }
    out[j] = static_cast<uint64_t>(static_cast<uint32_t>(full_bias - score)) << 32 | rows[j];
  }
}

void FinishAtPortable(const uint64_t* const* tails, size_t tail, const uint64_t* planes, size_t stride,
                      const uint32_t* rows, size_t n, const uint16_t* lead_dist, int32_t lead_bias, int32_t full_bias,
                      uint64_t* out) noexcept {
  FinishAtBody(tails, tail, planes, stride, rows, n, lead_dist, lead_bias, full_bias, out);
}

#if defined(__x86_64__)
__attribute__((target("popcnt"))) void FinishAtPopcnt(const uint64_t* const* tails, size_t tail, const uint64_t* planes,
                                                      size_t stride, const uint32_t* rows, size_t n,
                                                      const uint16_t* lead_dist, int32_t lead_bias, int32_t full_bias,
                                                      uint64_t* out) noexcept {
  FinishAtBody(tails, tail, planes, stride, rows, n, lead_dist, lead_bias, full_bias, out);
}
#endif

using FinishAtFn = void (*)(const uint64_t* const*, size_t, const uint64_t*, size_t, const uint32_t*, size_t,
                            const uint16_t*, int32_t, int32_t, uint64_t*) noexcept;

using ScanFn = size_t (*)(const uint64_t*, size_t, size_t, const uint64_t*, uint16_t*, uint32_t, uint32_t*) noexcept;

/// The kernels of one CPU level; the best this CPU has is picked once, at load.
enum class Isa : uint8_t { kPortable, kPopcnt, kAvx512 };
struct Kernels {
  ScanFn hamming;
  AsymFn asym;
  FinishFn finish;
  FinishAtFn finish_at;
};

bool Supported(Isa isa) noexcept {
#if defined(__x86_64__)
  __builtin_cpu_init();
  switch (isa) {
    case Isa::kPortable:
      return true;
    case Isa::kPopcnt:
      return __builtin_cpu_supports("popcnt");
    case Isa::kAvx512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vpopcntdq");
  }
  return false;
#else
  return isa == Isa::kPortable;
#endif
}

Kernels KernelsOf(Isa isa) noexcept {
#if defined(__x86_64__)
  if (isa == Isa::kAvx512) return {&ScanAvx512, &AsymAvx512, &FinishPopcnt, &FinishAtPopcnt};
  if (isa == Isa::kPopcnt) return {&ScanPopcnt, &AsymPopcnt, &FinishPopcnt, &FinishAtPopcnt};
#endif
  return {&ScanPortable, &AsymPortable, &FinishPortable, &FinishAtPortable};
}

Kernels Best() noexcept {
  for (Isa isa : {Isa::kAvx512, Isa::kPopcnt})
    if (Supported(isa)) return KernelsOf(isa);
  return KernelsOf(Isa::kPortable);
}

const Kernels kBest = Best();

}  // namespace

size_t vector_detail::ScanCodes(const uint64_t* blocks, size_t nb, size_t words, const uint64_t* q, uint16_t* dist,
                                uint32_t tau, uint32_t* cand) noexcept {
  return kBest.hamming(blocks, nb, words, q, dist, tau, cand);
}

void vector_detail::FinishAt(const uint64_t* const* tails, size_t tail, const uint64_t* planes, size_t stride,
                             const uint32_t* rows, size_t n, const uint16_t* lead_dist, int32_t lead_bias,
                             int32_t full_bias, uint64_t* out) noexcept {
  kBest.finish_at(tails, tail, planes, stride, rows, n, lead_dist, lead_bias, full_bias, out);
}

size_t vector_detail::ScanQuery::Scan(const uint64_t* blocks, size_t nb, size_t words, uint16_t* dist, uint32_t tau,
                                      uint32_t* cand) const noexcept {
  return kBest.asym(blocks, nb, words, planes, stride, bias, dist, tau, cand);
}

bool vector_detail::ScanWith(const std::string& impl, bool asymmetric, const uint64_t* blocks, size_t nb, size_t words,
                             const uint64_t* q, uint32_t bias, uint16_t* dist, uint32_t tau, uint32_t* cand,
                             size_t* found) noexcept {
  const Isa isa = impl == "avx512" ? Isa::kAvx512 : impl == "popcnt" ? Isa::kPopcnt : Isa::kPortable;
  if ((impl != "portable" && isa == Isa::kPortable) || !Supported(isa)) return false;
  const Kernels k = KernelsOf(isa);
  *found = asymmetric ? k.asym(blocks, nb, words, q, words, bias, dist, tau, cand)
                      : k.hamming(blocks, nb, words, q, dist, tau, cand);
  return true;
}

void VectorIndex::Rotate(const float* v, size_t r, float* t) const {
  const size_t dims = options_.dims;
  const float* sign = rht_signs_.data() + r * pad_;
  for (size_t d = 0; d < dims; ++d) t[d] = v[d] * sign[d];
  for (size_t d = dims; d < pad_; ++d) t[d] = 0.0f;
  Fwht(t, pad_);
}

void VectorIndex::Encode(const float* v, uint64_t* out, float* t) const {
  for (size_t r = 0; r < rotations_; ++r) {
    Rotate(v, r, t);
    uint64_t* o = out + r * (pad_ / 64);
    for (size_t w = 0; w < pad_ / 64; ++w) {
      uint64_t bits = 0;
      for (size_t b = 0; b < 64; ++b) bits |= static_cast<uint64_t>(t[w * 64 + b] > 0.0f) << b;
      o[w] = bits;
    }
  }
}

ScanQuery VectorIndex::EncodeQuery(const float* unit_query) const {
  const size_t words = code_words_;
  const size_t bits = words * 64;
  // The rotations' outputs, as Encode computes them, kept whole.
  std::vector<float>& t = query_coords_;
  t.resize(rotations_ * pad_);
  for (size_t r = 0; r < rotations_; ++r) Rotate(unit_query, r, t.data() + r * pad_);
  // Each coordinate as a signed integer in [-kHigh - 1, kHigh], scaled by the largest.
  float top = 0.0f;
  for (float v : t) top = std::max(top, std::fabs(v));
  constexpr long kHigh = (1L << (kQueryPlanes - 1)) - 1;
  query_planes_.assign(kQueryPlanes * words, 0);
  for (size_t i = 0; i < bits; ++i) {
    const long v = top > 0.0f ? std::clamp<long>(std::lround(t[i] / top * kHigh), -kHigh - 1, kHigh) : 0;
    const auto twos = static_cast<uint64_t>(v);  // two's complement: plane k holds bit k
    for (size_t k = 0; k < kQueryPlanes; ++k) query_planes_[k * words + i / 64] |= ((twos >> k) & 1) << (i % 64);
  }
  return ScanQuery::Over(query_planes_.data(), words, words);
}

void VectorIndex::SplitCodes(Flat& f, const unsigned char* blocks, size_t rows) const {
  const CodeLayout layout{lead_words_, tail_words_};
  f.codes.resize(layout.CodeWords(rows) * 8);
  f.tails.resize(layout.TailWords(rows) * 8);
  layout.Split(blocks, rows, reinterpret_cast<uint64_t*>(f.codes.data()), reinterpret_cast<uint64_t*>(f.tails.data()));
}

void VectorIndex::IndexRowsFlat(Namespace& ns, const uint64_t* ids, const float* vectors) {
  const size_t dims = options_.dims;
  const size_t m = fresh_.size();
  Flat& f = ns.flat;
  Partition* part = f.part.get();
  const size_t n0 = f.size();
  const size_t n1 = n0 + m;
  if (f.keys.capacity() < n1) f.keys.reserve(std::max<size_t>({n1, f.keys.capacity() * 2, 1024}));
  if (f.nth.capacity() < n1) f.nth.reserve(std::max<size_t>({n1, f.nth.capacity() * 2, 1024}));
  f.keys.resize(n1);
  f.nth.resize(n1);
  if (rows_mapped_) {
    // The rows are the records themselves (written before they are indexed).
    if (f.rec.capacity() < n1) f.rec.reserve(std::max<size_t>({n1, f.rec.capacity() * 2, 1024}));
    f.rec.resize(n1);
    for (size_t j = 0; j < m; ++j) f.rec[n0 + j] = store_->record_of(ns.kind, ns.covered + fresh_[j]);
  } else {
    f.rows.resize(n1 * row_bytes_);
  }
  const size_t words = code_words_;
  if (part) {
    // Partitioned: signatures go to the rows' nearest lists, not to one array.
    fresh_codes_.resize(m * words);
    fresh_lists_.resize(m);
  } else {
    f.codes.resize((n1 + 7) / 8 * lead_words_ * 64);
    f.tails.resize(n1 * tail_words_ * 8);
  }
  if (unit_rows_.size() < kBuildThreads * dims) unit_rows_.resize(kBuildThreads * dims);
  const auto cast = casts_.from.f32;
  auto* codes = reinterpret_cast<uint64_t*>(f.codes.data());
  auto* tails = reinterpret_cast<uint64_t*>(f.tails.data());
  const CodeLayout layout{lead_words_, tail_words_};
  ParallelFor(m, m >= kParallelMin ? kBuildThreads : 1, [&](size_t b, size_t e, size_t thread) {
    float* unit = unit_rows_.data() + thread * dims;
    float* scratch = rht_scratch_.data() + thread * pad_;
    uint64_t code[kMaxCodeWords];
    std::vector<uint16_t> ham;
    std::vector<uint32_t> cand;
    if (part) {
      ham.resize((part->lists + 7) / 8 * 8);
      cand.resize(ham.size());
    }
    for (size_t j = b; j < e; ++j) {
      const size_t i = fresh_[j];
      const size_t r = n0 + j;
      Normalize(vectors + i * dims, dims, unit);
      const unsigned char* row = Row(f, r);
      if (!rows_mapped_) {
        unsigned char* own = f.rows.data() + r * row_bytes_;
        if (!cast(reinterpret_cast<const byte_t*>(unit), dims, reinterpret_cast<byte_t*>(own)))
          std::memcpy(own, unit, row_bytes_);
      }
      Encode(unit, code, scratch);
      if (part) {
        std::memcpy(fresh_codes_.data() + j * words, code, words * 8);
        fresh_lists_[j] = NearestList(*part, row, code, ham.data(), cand.data());
      } else {
        layout.Put(codes, tails, r, code);
      }
      f.keys[r] = ids[i];
      f.nth[r] = static_cast<uint32_t>(ns.covered + i);
    }
  });
  if (part) {
    for (size_t j = 0; j < m; ++j)
      AppendToList(*part, fresh_lists_[j], static_cast<uint32_t>(n0 + j), fresh_codes_.data() + j * words);
  }
}

size_t VectorIndex::SearchFlat(const Namespace& space, const float* unit_query, size_t wanted, bool exact) const {
  // A checkpoint on the thread pool may swap a new partition in meanwhile.
  std::lock_guard<std::mutex> lock(part_mu_);
  const Flat& f = space.flat;
  const size_t n = f.size();
  const size_t dims = options_.dims;
  // The query in the rows' scalar kind.
  query_row_.resize(row_bytes_);
  if (!casts_.from.f32(reinterpret_cast<const byte_t*>(unit_query), dims,
                       reinterpret_cast<byte_t*>(query_row_.data()))) {
    std::memcpy(query_row_.data(), unit_query, row_bytes_);
  }
  if (!exact && f.part) return SearchPartitioned(f, EncodeQuery(unit_query), wanted);

  // Candidates: every row (exact), or the `pool` nearest by the estimate, in two passes.
  const uint32_t* cand = nullptr;
  size_t n_cand = n;
  size_t pool = std::max<size_t>(options_.rerank_min,
                                 static_cast<size_t>(std::ceil(static_cast<double>(n) * options_.rerank_share)));
  pool = std::max(pool, wanted);
  if (!exact && pool < n) {
    const ScanQuery full = EncodeQuery(unit_query);
    const size_t words = code_words_, lead = lead_words_;
    // The first pass: every row's lead words (half the bytes: the scan is bound by memory),
    // against the query's planes at those words.
    const ScanQuery query = ScanQuery::Over(query_planes_.data(), words, lead);
    // It keeps kLeadShortlist x pool rows: half a signature orders rows less well, and the
    // second pass, over few rows, restores the whole signature's order.
    const size_t target = std::min(n, pool * kLeadShortlist);
    const size_t nb = (n + 7) / 8;
    const size_t top = query.max_dist;
    scan_dist_.resize(nb * 8);
    cand_.resize(nb * 8);
    const auto* codes = reinterpret_cast<const uint64_t*>(f.codes.data());
    // Threshold from a sample of blocks spread over the namespace (every kSampleStride-th at
    // least, at most about kSampleBlocks): the histogram of its distances, scaled up, says at
    // which distance ~1.5 x target rows will pass. The full scan then collects the passing
    // rows as it goes; if the estimate fell short, the exact threshold comes from the full
    // histogram (one more pass over the distances). The sample is read block by block, each
    // a kernel call of its own: at 1/kSampleStride of the blocks it costs a few percent of the
    // scan (one block in six, at 10^5 rows, cost a sixth of the search).
    uint32_t tau = static_cast<uint32_t>(top);
    std::vector<uint32_t>& hist = scan_hist_;
    hist.assign(top + 1, 0);
    const size_t stride = std::max(nb / kSampleBlocks, kSampleStride);
    if (nb / stride >= kSampleMinBlocks) {
      size_t sampled = 0;
      uint16_t d8[8];
      uint32_t c8[8];
      for (size_t b = 0; b < nb; b += stride) {
        query.Scan(codes + b * lead * 8, 1, lead, d8, 0, c8);
        for (size_t l = 0; l < 8 && b * 8 + l < n; ++l, ++sampled) ++hist[d8[l]];
      }
      const double want = 1.5 * static_cast<double>(target) * static_cast<double>(sampled) / static_cast<double>(n) + 4;
      double cum = 0;
      for (tau = 0; tau < top; ++tau) {
        cum += hist[tau];
        if (cum >= want) break;
      }
    }
    size_t found = query.Scan(codes, nb, lead, scan_dist_.data(), tau, cand_.data());
    while (found > 0 && cand_[found - 1] >= n) --found;  // padding lanes of the last block
    std::fill(hist.begin(), hist.end(), 0);
    if (found < target) {
      for (size_t i = 0; i < n; ++i) ++hist[scan_dist_[i]];
    } else {
      for (size_t j = 0; j < found; ++j) ++hist[scan_dist_[cand_[j]]];
    }
    // Keep exactly `target`: every row below distance t, then rows at t in row order.
    size_t below = 0;
    uint32_t t = 0;
    while (t < top && below + hist[t] < target) below += hist[t++];
    size_t room = target - below;
    size_t kept = 0;
    auto keep = [&](uint32_t i) {
      uint16_t d = scan_dist_[i];
      if (d < t || (d == t && room > 0)) {
        if (d == t) --room;
        cand_[kept++] = i;
      }
    };
    if (found < target) {
      for (size_t i = 0; i < n; ++i) keep(static_cast<uint32_t>(i));
    } else {
      for (size_t j = 0; j < found; ++j) keep(cand_[j]);  // in place: kept <= j
    }
    // The second pass: the kept rows' tail words complete their estimates; the `pool` best
    // by (estimate, row) go to the rerank in row order (its reads then walk memory forward).
    shortlist_.resize(kept);
    kBest.finish(reinterpret_cast<const uint64_t*>(f.tails.data()), tail_words_, query_planes_.data() + lead, words,
                 cand_.data(), kept, scan_dist_.data(), static_cast<int32_t>(query.bias),
                 static_cast<int32_t>(full.bias), shortlist_.data());
    const size_t take = std::min(pool, kept);
    if (take < kept) std::nth_element(shortlist_.begin(), shortlist_.begin() + take, shortlist_.end());
    for (size_t j = 0; j < take; ++j) cand_[j] = static_cast<uint32_t>(shortlist_[j]);
    std::sort(cand_.begin(), cand_.begin() + take);
    cand = cand_.data();
    n_cand = take;
  }

  return Rerank(f, cand, n_cand, wanted);
}

void VectorIndex::RowDistances(const Flat& f, const uint32_t* cand, size_t b, size_t e, float* out) const {
  const unsigned char* qrow = query_row_.data();
  constexpr size_t kAhead = 8;
  for (size_t j = b; j < e; ++j) {
    // Mapped rows: the record number of a later candidate first (one more dependent load),
    // and the row's last byte (a record's vector need not start on a cache line).
    if (rows_mapped_ && j + 2 * kAhead < e) __builtin_prefetch(&f.rec[cand[j + 2 * kAhead]]);
    if (j + kAhead < e) {
      const unsigned char* next = Row(f, cand[j + kAhead]);
      for (size_t o = 0; o < row_bytes_; o += 64) __builtin_prefetch(next + o);
      if (rows_mapped_) __builtin_prefetch(next + row_bytes_ - 1);
    }
    out[j] = static_cast<float>(
        metric_(reinterpret_cast<const byte_t*>(Row(f, cand[j])), reinterpret_cast<const byte_t*>(qrow)));
  }
}

size_t VectorIndex::Rerank(const Flat& f, const uint32_t* cand, size_t n_cand, size_t wanted, bool split) const {
  // Exact distances for the candidates (ascending row order: the reads walk memory forward),
  // best `wanted` kept in a max-heap on (distance, row). Candidates: their distances first,
  // on two threads when `split` (a partitioned search's, helper_thread.h); every row: as read.
  heap_.clear();
  auto worse = [](const std::pair<float, uint32_t>& a, const std::pair<float, uint32_t>& b) { return a < b; };
  auto offer = [&](float d, uint32_t r) {
    if (heap_.size() < wanted) {
      heap_.emplace_back(d, r);
      std::push_heap(heap_.begin(), heap_.end(), worse);
    } else if (std::make_pair(d, r) < heap_.front()) {
      std::pop_heap(heap_.begin(), heap_.end(), worse);
      heap_.back() = {d, r};
      std::push_heap(heap_.begin(), heap_.end(), worse);
    }
  };
  if (cand) {
    rerank_dist_.resize(n_cand);
    auto half = [&](size_t h) noexcept {
      const size_t mid = split ? n_cand / 2 : n_cand;
      if (h == 0) RowDistances(f, cand, 0, mid, rerank_dist_.data());
      else RowDistances(f, cand, mid, n_cand, rerank_dist_.data());
    };
    if (split) helper_.RunBeside(half);
    else half(0);
    for (size_t j = 0; j < n_cand; ++j) offer(rerank_dist_[j], cand[j]);
  } else {
    const unsigned char* qrow = query_row_.data();
    for (size_t r = 0; r < n_cand; ++r)
      offer(static_cast<float>(
                metric_(reinterpret_cast<const byte_t*>(Row(f, r)), reinterpret_cast<const byte_t*>(qrow))),
            static_cast<uint32_t>(r));
  }
  std::sort_heap(heap_.begin(), heap_.end(), worse);
  for (size_t i = 0; i < heap_.size(); ++i) {
    hits_keys_[i] = f.keys[heap_[i].second];
    hits_dist_[i] = heap_[i].first;
  }
  return heap_.size();
}

}  // namespace spanguard
