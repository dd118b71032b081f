#include "vector_index.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <thread>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "crc32c.h"
#include "embedder.h"
#include "hash.h"
#include "errors.h"
#include "span_source.h"

namespace spanguard {

namespace {

using unum::usearch::byte_t;
using unum::usearch::index_dense_config_t;
using unum::usearch::index_limits_t;
using unum::usearch::metric_kind_t;
using unum::usearch::metric_punned_t;
using unum::usearch::scalar_kind_t;

constexpr char kSnapMagic[8] = {'S', 'G', 'V', 'I', 'D', 'X', '0', '1'};
/// 2: byte 18 names the strategy (1 hnsw, 2 binary); version-1 files are rebuilt.
constexpr uint32_t kSnapVersion = 2;
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
/// catchUp batch: spans per embed/store/index round, and a bound on the text bytes copied.
constexpr size_t kCatchUpSpans = 2048;
constexpr size_t kCatchUpBytes = 16u << 20;

scalar_kind_t ToUsearch(VectorScalar s) {
  switch (s) {
    case VectorScalar::kF32: return scalar_kind_t::f32_k;
    case VectorScalar::kF16: return scalar_kind_t::f16_k;
    case VectorScalar::kI8: return scalar_kind_t::i8_k;
  }
  return scalar_kind_t::f32_k;
}

std::string Where(const std::string& path, uint64_t offset) {
  return " [file=" + path + " offset=" + std::to_string(offset) + "]";
}

/// Runs fn(begin, end, thread) over [0, n) split in `threads` contiguous parts; the calling
/// thread takes part 0. Exceptions are not thrown across: fn must not throw.
template <typename Fn>
void ParallelFor(size_t n, size_t threads, Fn&& fn) {
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

class SnapshotWriter {
 public:
  SnapshotWriter(int fd, std::string path) : fd_(fd), path_(std::move(path)) { buf_.reserve(kBuf); }
  bool write(const void* data, size_t n) {
    const auto* p = static_cast<const unsigned char*>(data);
    crc_ = Crc32c(crc_, p, n);
    length_ += n;
    if (buf_.size() + n > kBuf && !flush()) return false;
    if (n >= kBuf) return put(p, n);
    buf_.insert(buf_.end(), p, p + n);
    return true;
  }
  bool flush() {
    bool ok = put(buf_.data(), buf_.size());
    buf_.clear();
    return ok;
  }
  uint32_t crc() const { return crc_; }
  uint64_t length() const { return length_; }
  int error() const { return error_; }

 private:
  static constexpr size_t kBuf = 1u << 20;
  bool put(const unsigned char* p, size_t n) {
    while (n > 0) {
      ssize_t r = ::write(fd_, p, n);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) {
        error_ = r < 0 ? errno : ENOSPC;
        return false;
      }
      p += r;
      n -= static_cast<size_t>(r);
    }
    return true;
  }
  int fd_;
  std::string path_;
  std::vector<unsigned char> buf_;
  uint32_t crc_ = 0;
  uint64_t length_ = 0;
  int error_ = 0;
};

/// 64-bit content hash of a vector (FNV-style over its words, then fmix64). Two vectors
/// share a hash only if equal, up to a collision chance of about n^2 / 2^65.
uint64_t VectorHash(const float* v, size_t dims) noexcept {
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
void Normalize(const float* v, size_t dims, float* out) noexcept {
  double sum = 0.0;
  for (size_t d = 0; d < dims; ++d) sum += static_cast<double>(v[d]) * v[d];
  float inv = sum > 0.0 ? static_cast<float>(1.0 / std::sqrt(sum)) : 0.0f;
  for (size_t d = 0; d < dims; ++d) out[d] = v[d] * inv;
}

size_t ScalarBytes(VectorScalar s) {
  switch (s) {
    case VectorScalar::kF32: return 4;
    case VectorScalar::kF16: return 2;
    case VectorScalar::kI8: return 1;
  }
  return 4;
}

uint64_t SplitMix64(uint64_t& state) noexcept {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/// In-place unnormalized fast Walsh-Hadamard transform, n a power of two.
void Fwht(float* x, size_t n) noexcept {
  for (size_t h = 1; h < n; h <<= 1)
    for (size_t i = 0; i < n; i += h << 1)
      for (size_t j = i; j < i + h; ++j) {
        float a = x[j], b = x[j + h];
        x[j] = a + b;
        x[j + h] = a - b;
      }
}

// ---- the signature scan -------------------------------------------------------------------
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
__attribute__((target("popcnt"))) size_t ScanPopcnt(const uint64_t* blocks, size_t nb, size_t words,
                                                     const uint64_t* q, uint16_t* dist, uint32_t tau,
                                                     uint32_t* cand) noexcept {
  return ScanBody(blocks, nb, words, q, dist, tau, cand);
}

/// AVX-512 VPOPCNTDQ: one 512-bit load compares a query word with 8 rows.
__attribute__((target("avx512f,avx512bw,avx512vl,avx512vpopcntdq"))) size_t ScanAvx512(
    const uint64_t* blocks, size_t nb, size_t words, const uint64_t* q, uint16_t* dist, uint32_t tau,
    uint32_t* cand) noexcept {
  size_t found = 0;
  const __m512i tau_v = _mm512_set1_epi64(tau);
  __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256i eight = _mm256_set1_epi32(8);
  for (size_t b = 0; b < nb; ++b) {
    const uint64_t* p = blocks + b * words * 8;
    __m512i acc = _mm512_setzero_si512();
    for (size_t w = 0; w < words; ++w) {
      __m512i x = _mm512_xor_si512(_mm512_loadu_si512(p + w * 8), _mm512_set1_epi64(static_cast<long long>(q[w])));
      acc = _mm512_add_epi64(acc, _mm512_popcnt_epi64(x));
    }
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dist + b * 8), _mm512_cvtepi64_epi16(acc));
    __mmask8 m = _mm512_cmple_epu64_mask(acc, tau_v);
    if (m) {
      _mm256_mask_compressstoreu_epi32(cand + found, m, idx);
      found += static_cast<size_t>(__builtin_popcount(m));
    }
    idx = _mm256_add_epi32(idx, eight);
  }
  return found;
}
#endif

using ScanFn = size_t (*)(const uint64_t*, size_t, size_t, const uint64_t*, uint16_t*, uint32_t, uint32_t*) noexcept;

ScanFn PickScan() noexcept {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("avx512vpopcntdq")) {
    return &ScanAvx512;
  }
  if (__builtin_cpu_supports("popcnt")) return &ScanPopcnt;
#endif
  return &ScanPortable;
}

const ScanFn kScan = PickScan();

}  // namespace

RowBuffer::~RowBuffer() { clear(); }

RowBuffer::RowBuffer(RowBuffer&& o) noexcept : data_(o.data_), size_(o.size_), capacity_(o.capacity_) {
  o.data_ = nullptr;
  o.size_ = o.capacity_ = 0;
}

RowBuffer& RowBuffer::operator=(RowBuffer&& o) noexcept {
  if (this != &o) {
    clear();
    std::swap(data_, o.data_);
    std::swap(size_, o.size_);
    std::swap(capacity_, o.capacity_);
  }
  return *this;
}

void RowBuffer::clear() noexcept {
  if (data_) ::munmap(data_, capacity_);
  data_ = nullptr;
  size_ = capacity_ = 0;
}

void RowBuffer::resize(size_t bytes) {
  if (bytes <= capacity_) {
    if (bytes < size_) std::memset(data_ + bytes, 0, size_ - bytes);  // keep "past size is zero"
    size_ = bytes;
    return;
  }
  constexpr size_t kHuge = 2u << 20;
  size_t cap = std::max({bytes, capacity_ * 2, size_t{kHuge}});
  cap = (cap + kHuge - 1) / kHuge * kHuge;
  void* p = ::mmap(nullptr, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    throw NativeError("IO_ERROR", "cannot reserve " + std::to_string(cap) + " bytes for vectors: " + std::strerror(errno));
  }
#ifdef MADV_HUGEPAGE
  ::madvise(p, cap, MADV_HUGEPAGE);  // advice only: without it the rerank is slower, not wrong
#endif
  auto* d = static_cast<unsigned char*>(p);
  if (size_) std::memcpy(d, data_, size_);
  if (data_) ::munmap(data_, capacity_);
  data_ = d;
  capacity_ = cap;
  size_ = bytes;
}

const char* VectorAnnName(VectorAnn a) noexcept { return a == VectorAnn::kHnsw ? "hnsw" : "binary"; }

const char* VectorScalarName(VectorScalar s) noexcept {
  switch (s) {
    case VectorScalar::kF32: return "f32";
    case VectorScalar::kF16: return "f16";
    case VectorScalar::kI8: return "i8";
  }
  return "f32";
}

const char* SimdIsaName() noexcept {
  // nk_capabilities_available() = what the CPU supports AND what was compiled in; the
  // first hit in this best-first list is what dense kernels dispatch to.
  unum::usearch::nk_cached_capabilities();
  nk_capability_t caps = nk_capabilities_available();
  static const struct {
    nk_capability_t cap;
    const char* name;
  } kOrder[] = {{nk_cap_diamond_k, "diamond"}, {nk_cap_turin_k, "turin"},     {nk_cap_sapphire_k, "sapphire"},
                {nk_cap_genoa_k, "genoa"},     {nk_cap_icelake_k, "icelake"}, {nk_cap_skylake_k, "skylake"},
                {nk_cap_haswell_k, "haswell"}, {nk_cap_sve2_k, "sve2"},       {nk_cap_sve_k, "sve"},
                {nk_cap_neonhalf_k, "neonhalf"}, {nk_cap_neon_k, "neon"}};
  for (const auto& e : kOrder)
    if (caps & e.cap) return e.name;
  return "serial";
}

VectorIndex::VectorIndex(std::string dir, const VectorIndexOptions& options) : dir_(std::move(dir)), options_(options) {
  // mkdir -p: the index may live in a subdirectory of a store that is being created.
  for (size_t slash = dir_.find('/', 1); !options_.read_only; slash = dir_.find('/', slash + 1)) {
    std::string part = dir_.substr(0, slash);
    if (!part.empty() && ::mkdir(part.c_str(), 0755) != 0 && errno != EEXIST) {
      throw NativeError("IO_ERROR", "cannot create index directory: " + std::string(std::strerror(errno)) + Where(part, 0));
    }
    if (slash == std::string::npos) break;
  }
  // The scalar kind's distance (NumKong) and f32 -> scalar cast, as usearch uses them.
  // Rows are L2-normalized first, so for f32 and f16 cosine distance is 1 - dot and the
  // inner-product kernel does it without two norms per pair (measured 20-25% faster); i8
  // keeps the angular kernel: usearch's f32 -> i8 cast truncates, which leaves the quantized
  // norms uneven, and only the angular kernel divides that back out.
  metric_ = unum::usearch::metric_punned_t::builtin(
      options_.dims, options_.scalar == VectorScalar::kI8 ? metric_kind_t::cos_k : metric_kind_t::ip_k,
      ToUsearch(options_.scalar));
  casts_ = unum::usearch::casts_punned_t::make(ToUsearch(options_.scalar));
  row_bytes_ = options_.dims * ScalarBytes(options_.scalar);
  pad_ = 64;
  while (pad_ < options_.dims) pad_ <<= 1;
  rotations_ = std::max<size_t>(1, (kCodeBitsMin + pad_ - 1) / pad_);
  code_words_ = rotations_ * pad_ / 64;
  rht_signs_.resize(rotations_ * pad_);
  uint64_t state = kRhtSeed;
  for (float& sign : rht_signs_) sign = (SplitMix64(state) >> 63) ? -1.0f : 1.0f;
  rht_scratch_.resize(kBuildThreads * pad_);

  store_ = std::make_unique<VectorStore>(dir_ + "/vectors.bin", options_.dims, options_.read_only);
  raw_.kind = VectorStore::kKindRaw;
  summary_.kind = VectorStore::kKindSummary;
  for (Namespace* ns : {&raw_, &summary_}) {
    ns->hnsw = options_.ann == VectorAnn::kHnsw;
    if (try_load_snapshot(*ns)) {
      ns->loaded_from = "file";
    } else {
      reset_namespace(*ns);
      ns->loaded_from = store_->count(ns->kind) > 0 ? "rebuilt" : "empty";
    }
    // Vectors the snapshot does not cover (all of them after a rebuild) come from the file.
    uint64_t before = ns->covered;
    store_->for_each(ns->kind, ns->covered, [&](const uint64_t* ids, const float* vecs, size_t n) {
      index_rows(*ns, ids, vecs, n);
      ns->covered += n;
    });
    ns->dirty = ns->covered != before || ns->loaded_from != "file";
  }
  high_water_ = store_->empty() ? 0 : store_->last_id() + 1;
}

std::string VectorIndex::snapshot_path(uint8_t kind) const {
  const char* ext = options_.ann == VectorAnn::kHnsw ? ".usearch" : ".flat";
  return dir_ + (kind == VectorStore::kKindSummary ? "/index.summary" : "/index.raw") + ext;
}

void VectorIndex::reset_namespace(Namespace& ns) {
  if (ns.hnsw) ns.index = make_index();
  ns.flat.keys.clear();
  ns.flat.keys.shrink_to_fit();
  ns.flat.rows.clear();
  ns.flat.codes.clear();
  ns.covered = 0;
  ns.by_content.clear();
  ns.aliases.clear();
  ns.duplicates = 0;
}

size_t VectorIndex::memory_usage() const {
  size_t total = 0;
  for (const Namespace* ns : {&raw_, &summary_}) {
    if (ns->hnsw) total += ns->index.memory_usage();
    total += ns->flat.keys.capacity() * 8 + ns->flat.rows.capacity() + ns->flat.codes.capacity();
  }
  return total;
}

void VectorIndex::encode(const float* v, uint64_t* out, float* t) const {
  const size_t dims = options_.dims;
  for (size_t r = 0; r < rotations_; ++r) {
    const float* sign = rht_signs_.data() + r * pad_;
    for (size_t d = 0; d < dims; ++d) t[d] = v[d] * sign[d];
    for (size_t d = dims; d < pad_; ++d) t[d] = 0.0f;
    Fwht(t, pad_);
    uint64_t* o = out + r * (pad_ / 64);
    for (size_t w = 0; w < pad_ / 64; ++w) {
      uint64_t bits = 0;
      for (size_t b = 0; b < 64; ++b) bits |= static_cast<uint64_t>(t[w * 64 + b] > 0.0f) << b;
      o[w] = bits;
    }
  }
}

VectorIndex::index_t VectorIndex::make_index() const {
  // Rows are L2-normalized before they enter the index (index_rows, search), so for f32 and
  // f16 cosine distance is 1 - dot and the inner-product kernel does it without computing
  // two norms per pair: measured 25% (f16) to 20% (f32) faster per distance on this CPU.
  // i8 keeps the angular kernel: usearch's f32 -> i8 cast truncates, which leaves the
  // quantized norms uneven, and only the angular kernel divides that back out.
  const metric_kind_t kind = options_.scalar == VectorScalar::kI8 ? metric_kind_t::cos_k : metric_kind_t::ip_k;
  metric_punned_t metric = metric_punned_t::builtin(options_.dims, kind, ToUsearch(options_.scalar));
  index_dense_config_t config(options_.connectivity, options_.expansion_add, options_.expansion_search);
  config.multi = true;  // windows of one span share its id
  auto made = index_t::make(metric, config, unum::usearch::default_free_value<uint64_t>(),
                            index_limits_t(0, kBuildThreads));
  if (!made) throw NativeError("IO_ERROR", std::string("cannot create vector index: ") + made.error.what());
  return std::move(made.index);
}

bool VectorIndex::try_load_snapshot(Namespace& ns) {
  const std::string path = snapshot_path(ns.kind);
  auto reject = [&](const std::string& why) {
    ns.snapshot_problem = why;
    return false;
  };
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return reject(errno == ENOENT ? "missing" : std::string("cannot open: ") + std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0 || static_cast<uint64_t>(st.st_size) < kSnapHeader) {
    ::close(fd);
    return reject("shorter than its header");
  }
  const uint64_t file_size = static_cast<uint64_t>(st.st_size);
  void* map = ::mmap(nullptr, file_size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) return reject(std::string("cannot map: ") + std::strerror(errno));
  struct Unmap {
    void* p;
    size_t n;
    ~Unmap() { ::munmap(p, n); }
  } unmap{map, file_size};
  const auto* bytes = static_cast<const unsigned char*>(map);

  uint32_t version, dims, payload_crc, snap_bits, header_crc;
  uint64_t count, last_id, payload_len, part_len;
  std::memcpy(&version, bytes + 8, 4);
  std::memcpy(&dims, bytes + 12, 4);
  std::memcpy(&payload_crc, bytes + 20, 4);
  std::memcpy(&count, bytes + 24, 8);
  std::memcpy(&last_id, bytes + 32, 8);
  std::memcpy(&payload_len, bytes + 40, 8);
  std::memcpy(&part_len, bytes + 48, 8);
  std::memcpy(&snap_bits, bytes + 56, 4);
  std::memcpy(&header_crc, bytes + 60, 4);
  if (std::memcmp(bytes, kSnapMagic, 8) != 0 || header_crc != Crc32c(0, bytes, 60)) {
    return reject("bad header" + Where(path, 0));
  }
  if (version != kSnapVersion) return reject("written by format version " + std::to_string(version));
  if (dims != options_.dims || bytes[16] != static_cast<uint8_t>(options_.scalar) || bytes[17] != ns.kind ||
      bytes[18] != static_cast<uint8_t>(options_.ann)) {
    return reject("built for other dims, scalar kind, namespace or strategy");
  }
  const bool flat = options_.ann == VectorAnn::kBinary;
  if (snap_bits != (flat ? static_cast<uint32_t>(code_bits()) : 0)) return reject("built with other signatures" + Where(path, 56));
  if (payload_len != file_size - kSnapHeader) return reject("length does not match its header" + Where(path, file_size));
  if (payload_crc != Crc32c(0, bytes + kSnapHeader, payload_len)) return reject("payload CRC mismatch" + Where(path, kSnapHeader));
  // The snapshot must be a prefix of the authoritative file: same count, same last id.
  if (count > store_->count(ns.kind)) return reject("covers vectors the vectors file does not hold");
  uint64_t expect_last = count == 0 ? kNoId : store_->id_of(ns.kind, count - 1);
  if (last_id != expect_last) return reject("its last id disagrees with the vectors file");
  if (part_len > payload_len) return reject("index part exceeds the payload" + Where(path, 48));

  // Duplicate table, after the index part.
  uint64_t pos = kSnapHeader + part_len;
  bool ok = true;
  auto get64 = [&]() -> uint64_t {
    uint64_t x = 0;
    if (!ok || 8 > file_size - pos) {
      ok = false;
      return 0;
    }
    std::memcpy(&x, bytes + pos, 8);
    pos += 8;
    return x;
  };
  std::unordered_map<uint64_t, uint64_t> by_content;
  std::unordered_map<uint64_t, std::vector<uint64_t>> aliases;
  uint64_t duplicates = get64();
  uint64_t n_content = get64();
  if (!ok || n_content > (file_size - pos) / 16) return reject("duplicate table truncated");
  by_content.reserve(n_content);
  for (uint64_t i = 0; i < n_content; ++i) {
    uint64_t h = get64();
    by_content.emplace(h, get64());
  }
  uint64_t n_lists = get64();
  if (!ok || n_lists > (file_size - pos) / 16) return reject("alias table truncated");
  for (uint64_t i = 0; i < n_lists && ok; ++i) {
    uint64_t key = get64();
    uint64_t len = get64();
    if (!ok || len > (file_size - pos) / 8) return reject("alias list truncated");
    auto& list = aliases[key];
    list.resize(len);
    std::memcpy(list.data(), bytes + pos, len * 8);
    pos += len * 8;
  }
  if (!ok || pos != file_size) return reject("duplicate table does not end the file");
  if (duplicates > count || by_content.size() != count - duplicates) return reject("duplicate table disagrees with its header");
  const uint64_t rows = count - duplicates;

  if (flat) {
    // keys, rows, codes: sizes follow from the row count.
    const uint64_t blocks = (rows + 7) / 8;
    const uint64_t code_bytes = blocks * code_words_ * 64;
    if (part_len != rows * 8 + rows * row_bytes_ + code_bytes) return reject("index part length disagrees with its row count");
    const unsigned char* p = bytes + kSnapHeader;
    Flat loaded;
    loaded.keys.resize(rows);
    if (rows) std::memcpy(loaded.keys.data(), p, rows * 8);
    p += rows * 8;
    loaded.rows.resize(rows * row_bytes_);
    if (rows) std::memcpy(loaded.rows.data(), p, rows * row_bytes_);
    p += rows * row_bytes_;
    loaded.codes.resize(code_bytes);
    if (code_bytes) std::memcpy(loaded.codes.data(), p, code_bytes);
    ns.flat = std::move(loaded);
  } else {
    index_t loaded;
    uint64_t at = kSnapHeader;
    const uint64_t graph_end = kSnapHeader + part_len;
    auto input = [&](void* out, size_t n) {
      if (n > graph_end - at) return false;
      std::memcpy(out, bytes + at, n);
      at += n;
      return true;
    };
    auto result = loaded.load_from_stream(input);
    if (!result) return reject(std::string("usearch could not parse it: ") + result.error.what());
    if (at != graph_end) return reject("graph shorter than its recorded length");
    if (loaded.size() != rows || loaded.dimensions() != options_.dims) return reject("index size disagrees with its header");
    loaded.change_expansion_add(options_.expansion_add);
    loaded.change_expansion_search(options_.expansion_search);
    ns.index = std::move(loaded);
  }
  ns.by_content = std::move(by_content);
  ns.aliases = std::move(aliases);
  ns.duplicates = duplicates;
  ns.covered = count;
  ns.snapshot_problem.clear();
  ns.file_crc = header_crc;
  return true;
}

void VectorIndex::ensure_capacity(Namespace& ns, size_t extra) {
  size_t need = ns.index.size() + extra;
  if (need <= ns.index.capacity()) return;
  // Doubling keeps the number of usearch reallocations logarithmic in the size.
  size_t cap = std::max<size_t>({need, ns.index.capacity() * 2, 1024});
  if (!ns.index.try_reserve(index_limits_t(cap, kBuildThreads))) {
    throw NativeError("IO_ERROR", "cannot reserve memory for " + std::to_string(cap) + " vectors");
  }
}

void VectorIndex::index_rows(Namespace& ns, const uint64_t* ids, const float* vectors, size_t n) {
  if (n == 0) return;
  const size_t dims = options_.dims;
  // Serial pass: decide which rows are new content; the graph only gets those.
  fresh_.clear();
  for (size_t i = 0; i < n; ++i) {
    uint64_t h = VectorHash(vectors + i * dims, dims);
    auto [it, inserted] = ns.by_content.try_emplace(h, ids[i]);
    if (inserted) {
      fresh_.push_back(i);
      continue;
    }
    ++ns.duplicates;
    if (it->second != ids[i]) {  // a window repeating its own span needs no alias
      auto& list = ns.aliases[it->second];
      if (list.empty() || list.back() != ids[i]) list.push_back(ids[i]);
    }
  }
  const size_t m = fresh_.size();
  if (m == 0) return;
  if (!ns.hnsw) {
    index_rows_flat(ns, ids, vectors);
    return;
  }
  ensure_capacity(ns, m);
  std::string errors[kBuildThreads];
  if (unit_rows_.size() < kBuildThreads * dims) unit_rows_.resize(kBuildThreads * dims);
  ParallelFor(m, m >= kParallelMin ? kBuildThreads : 1, [&](size_t b, size_t e, size_t thread) {
    float* unit = unit_rows_.data() + thread * dims;  // usearch copies it inside add()
    for (size_t j = b; j < e; ++j) {
      size_t i = fresh_[j];
      Normalize(vectors + i * dims, dims, unit);
      auto r = ns.index.add(ids[i], unit, thread);
      if (!r) {
        errors[thread] = r.error.what();
        return;
      }
    }
  });
  for (const auto& err : errors)
    if (!err.empty()) throw NativeError("IO_ERROR", "vector index add failed: " + err);
}

void VectorIndex::index_rows_flat(Namespace& ns, const uint64_t* ids, const float* vectors) {
  const size_t dims = options_.dims;
  const size_t m = fresh_.size();
  Flat& f = ns.flat;
  const size_t n0 = f.size();
  const size_t n1 = n0 + m;
  if (f.keys.capacity() < n1) f.keys.reserve(std::max<size_t>({n1, f.keys.capacity() * 2, 1024}));
  f.keys.resize(n1);
  f.rows.resize(n1 * row_bytes_);
  f.codes.resize((n1 + 7) / 8 * code_words_ * 64);
  if (unit_rows_.size() < kBuildThreads * dims) unit_rows_.resize(kBuildThreads * dims);
  const auto cast = casts_.from.f32;
  auto* codes = reinterpret_cast<uint64_t*>(f.codes.data());
  const size_t words = code_words_;
  ParallelFor(m, m >= kParallelMin ? kBuildThreads : 1, [&](size_t b, size_t e, size_t thread) {
    float* unit = unit_rows_.data() + thread * dims;
    float* scratch = rht_scratch_.data() + thread * pad_;
    uint64_t code[kMaxCodeWords];
    for (size_t j = b; j < e; ++j) {
      const size_t i = fresh_[j];
      const size_t r = n0 + j;
      Normalize(vectors + i * dims, dims, unit);
      unsigned char* row = f.rows.data() + r * row_bytes_;
      if (!cast(reinterpret_cast<const byte_t*>(unit), dims, reinterpret_cast<byte_t*>(row))) std::memcpy(row, unit, row_bytes_);
      encode(unit, code, scratch);
      uint64_t* block = codes + (r / 8) * words * 8 + (r % 8);
      for (size_t w = 0; w < words; ++w) block[w * 8] = code[w];
      f.keys[r] = ids[i];
    }
  });
}

void VectorIndex::store_and_index(const uint64_t* ids, const uint8_t* kinds, const uint8_t* last,
                                  const float* vectors, size_t n) {
  if (n == 0) return;
  store_->append(ids, kinds, last, vectors, n);
  high_water_ = std::max(high_water_, ids[n - 1] + 1);
  const size_t dims = options_.dims;
  size_t n_summary = 0;
  for (size_t i = 0; i < n; ++i) n_summary += kinds[i] == VectorStore::kKindSummary;
  if (n_summary == 0 || n_summary == n) {
    Namespace& ns = ns_mut(kinds[0]);
    index_rows(ns, ids, vectors, n);
    ns.covered += n;
    ns.dirty = true;
    return;
  }
  // Mixed batch: split per namespace, keeping file order within each.
  for (uint8_t kind : {VectorStore::kKindRaw, VectorStore::kKindSummary}) {
    std::vector<uint64_t> kid;
    std::vector<float> kvec;
    for (size_t i = 0; i < n; ++i) {
      if (kinds[i] != kind) continue;
      kid.push_back(ids[i]);
      kvec.insert(kvec.end(), vectors + i * dims, vectors + (i + 1) * dims);
    }
    Namespace& ns = ns_mut(kind);
    index_rows(ns, kid.data(), kvec.data(), kid.size());
    ns.covered += kid.size();
    ns.dirty = true;
  }
}

void VectorIndex::add(const uint64_t* ids, const uint8_t* kinds, const float* vectors, size_t n) {
  const size_t dims = options_.dims;
  // Validate everything first: a rejected batch stores nothing.
  for (size_t i = 0; i < n; ++i) {
    if (kinds[i] != VectorStore::kKindRaw && kinds[i] != VectorStore::kKindSummary) {
      throw NativeError("INVALID_ARGUMENT", "add: kind of row " + std::to_string(i) + " is " + std::to_string(kinds[i]) +
                                                ", expected 1 (raw) or 2 (summary)");
    }
    uint64_t floor = i == 0 ? high_water_ : ids[i - 1] + 1;
    if (ids[i] < floor) {
      throw NativeError("INVALID_ARGUMENT", "add: id " + std::to_string(ids[i]) + " at row " + std::to_string(i) +
                                                " is not above every id already added (next allowed " +
                                                std::to_string(floor) + "); span ids are never re-keyed");
    }
    const float* v = vectors + i * dims;
    for (size_t d = 0; d < dims; ++d) {
      if (!std::isfinite(v[d])) {
        throw NativeError("NON_FINITE_VECTOR", "add: row " + std::to_string(i) + " (id " + std::to_string(ids[i]) +
                                                   ") has a non-finite value at dimension " + std::to_string(d));
      }
    }
  }
  store_and_index(ids, kinds, nullptr, vectors, n);
}

size_t VectorIndex::catch_up(const SpanSource& source, const Embedder& embedder) {
  if (embedder.dims() != options_.dims) {
    throw NativeError("DIMENSION_MISMATCH", "catchUp: embedder makes " + std::to_string(embedder.dims()) +
                                                "-dim vectors, the index holds " + std::to_string(options_.dims));
  }
  const uint64_t end = source.next_id();
  uint64_t id = std::max(high_water_, source.first_id());
  const size_t dims = options_.dims;
  size_t added = 0;

  // Reused across batches. Texts are copied out of the log's mapping so the embedding can
  // run on two threads without touching memory the log may remap.
  std::string texts;
  std::vector<std::pair<size_t, size_t>> windows;  // (offset in texts, length)
  std::vector<uint64_t> ids;
  std::vector<uint8_t> kinds;
  std::vector<uint8_t> last;
  std::vector<float> vecs;
  std::vector<std::pair<size_t, size_t>> cuts;
  EmbedScratch scratch[kBuildThreads];

  while (id < end) {
    texts.clear();
    windows.clear();
    ids.clear();
    kinds.clear();
    uint64_t next = id;
    for (; next < end && windows.size() < kCatchUpSpans && texts.size() < kCatchUpBytes; ++next) {
      SpanView view;
      if (!source.read(next, &view)) continue;
      if (view.kind != RecordKind::kRaw && view.kind != RecordKind::kSummary) continue;
      size_t base = texts.size();
      texts.append(view.text, view.text_len);
      SplitWindows(std::string_view(texts.data() + base, view.text_len), &cuts);
      for (const auto& c : cuts) {
        windows.emplace_back(base + c.first, c.second);
        ids.push_back(view.id);
        kinds.push_back(static_cast<uint8_t>(view.kind));
      }
    }
    const size_t n = windows.size();
    vecs.resize(n * dims);
    ParallelFor(n, n >= 64 ? kBuildThreads : 1, [&](size_t b, size_t e, size_t thread) {
      for (size_t i = b; i < e; ++i) {
        embedder.embed(std::string_view(texts.data() + windows[i].first, windows[i].second), vecs.data() + i * dims,
                       scratch[thread]);
      }
    });
    // An empty text has no features and embeds to zero: it has no direction to find it by,
    // so it is not indexed (the lexical side still holds it).
    size_t m = 0;
    for (size_t i = 0; i < n; ++i) {
      const float* v = vecs.data() + i * dims;
      bool zero = std::all_of(v, v + dims, [](float x) { return x == 0.0f; });
      if (zero) continue;
      if (m != i) {
        ids[m] = ids[i];
        kinds[m] = kinds[i];
        std::memmove(vecs.data() + m * dims, v, sizeof(float) * dims);
      }
      ++m;
    }
    // A span's windows are contiguous; the last one kept closes it.
    last.resize(m);
    for (size_t i = 0; i < m; ++i) last[i] = (i + 1 == m || ids[i + 1] != ids[i]) ? 1 : 0;
    store_and_index(ids.data(), kinds.data(), last.data(), vecs.data(), m);
    added += m;
    id = next;
    high_water_ = std::max(high_water_, next);
  }
  return added;
}

void VectorIndex::SplitWindows(std::string_view t, std::vector<std::pair<size_t, size_t>>* out) const {
  out->clear();
  const size_t w = options_.window_bytes;
  if (w == 0 || t.size() <= w + w / 2) {
    out->emplace_back(0, t.size());
    return;
  }
  const size_t overlap = std::min(options_.window_overlap, w / 2);
  auto space = [&](size_t i) { return t[i] == ' ' || t[i] == '\n' || t[i] == '\t' || t[i] == '\r'; };
  auto utf8_start = [&](size_t i) { return i >= t.size() || (static_cast<unsigned char>(t[i]) & 0xC0) != 0x80; };
  size_t s = 0;
  for (;;) {
    if (t.size() - s <= w + w / 4) {
      out->emplace_back(s, t.size() - s);
      return;
    }
    // Cut after a whitespace in the window's last eighth so words stay whole; else at a
    // UTF-8 character boundary.
    size_t e = s + w;
    size_t lo = s + w - w / 8;
    size_t c = e;
    while (c > lo && !space(c - 1)) --c;
    if (c > lo) e = c;
    else
      while (e > s + 1 && !utf8_start(e)) --e;
    out->emplace_back(s, e - s);
    // The next window starts `overlap` bytes back, at a word start when there is one, so a
    // sentence on the cut is whole in at least one window.
    size_t ns = e - std::min(overlap, e - s - 1);
    size_t c2 = ns;
    while (c2 < e && !space(c2)) ++c2;
    if (c2 < e) ns = c2 + 1;
    else
      while (ns < e && !utf8_start(ns)) ++ns;
    s = ns > s ? ns : e;
  }
}

size_t VectorIndex::search(const float* query, size_t k, uint8_t kind, uint64_t* ids, float* distances) const {
  return search(query, k, kind, exact_for(kind), ids, distances);
}

size_t VectorIndex::search(const float* query, size_t k, uint8_t kind, bool exact, uint64_t* ids,
                           float* distances) const {
  const Namespace& space = ns(kind);
  const size_t total = space.size();
  if (k == 0 || total == 0) return 0;
  // Windows of one span share its key, so ask for a little more than k and keep each span
  // once, at its best (first) window; widen only if duplicates ate the margin.
  size_t wanted = std::min(total, k + k / 2 + 8);
  unit_query_.resize(options_.dims);
  Normalize(query, options_.dims, unit_query_.data());
  for (;;) {
    hits_keys_.resize(wanted);
    hits_dist_.resize(wanted);
    size_t got;
    if (space.hnsw) {
      // Thread slot 0: a single query runs on the calling thread, no pool, no lock contention.
      auto result = space.index.search(unit_query_.data(), wanted, 0, exact);
      if (!result) throw NativeError("IO_ERROR", std::string("vector search failed: ") + result.error.what());
      got = result.dump_to(hits_keys_.data(), hits_dist_.data(), wanted);
    } else {
      got = search_flat(space, unit_query_.data(), wanted, exact);
    }
    size_t out = 0;
    seen_.clear();
    auto emit = [&](uint64_t key, float distance) {
      bool dup = false;
      if (out < 32) {  // small k: a linear scan beats hashing
        for (size_t j = 0; j < out && !dup; ++j) dup = ids[j] == key;
      } else {
        if (seen_.empty()) seen_.insert(ids, ids + out);
        dup = !seen_.insert(key).second;
      }
      if (dup) return;
      ids[out] = key;
      distances[out] = distance;
      ++out;
    };
    for (size_t i = 0; i < got && out < k; ++i) {
      emit(hits_keys_[i], hits_dist_[i]);
      if (space.aliases.empty()) continue;
      auto it = space.aliases.find(hits_keys_[i]);
      if (it == space.aliases.end()) continue;
      for (size_t j = 0; j < it->second.size() && out < k; ++j) emit(it->second[j], hits_dist_[i]);
    }
    if (out >= k || got < wanted || wanted >= total) return out;
    wanted = std::min(total, wanted * 2);
  }
}

size_t VectorIndex::search_flat(const Namespace& space, const float* unit_query, size_t wanted, bool exact) const {
  const Flat& f = space.flat;
  const size_t n = f.size();
  const size_t dims = options_.dims;
  // The query in the rows' scalar kind.
  query_row_.resize(row_bytes_);
  if (!casts_.from.f32(reinterpret_cast<const byte_t*>(unit_query), dims, reinterpret_cast<byte_t*>(query_row_.data()))) {
    std::memcpy(query_row_.data(), unit_query, row_bytes_);
  }
  const unsigned char* qrow = query_row_.data();
  const unsigned char* rows = f.rows.data();

  // Candidates: every row (exact), or the `pool` nearest by signature.
  const uint32_t* cand = nullptr;
  size_t n_cand = n;
  size_t pool = std::max<size_t>(options_.rerank_min, static_cast<size_t>(std::ceil(static_cast<double>(n) * options_.rerank_share)));
  pool = std::max(pool, wanted);
  if (!exact && pool < n) {
    const size_t words = code_words_;
    const size_t nb = (n + 7) / 8;
    const size_t bits = words * 64;
    query_code_.resize(words);
    query_rht_.resize(pad_);
    encode(unit_query, query_code_.data(), query_rht_.data());
    hamming_.resize(nb * 8);
    cand_.resize(nb * 8);
    const auto* codes = reinterpret_cast<const uint64_t*>(f.codes.data());
    // Threshold from a sample of about 2,048 blocks spread over the namespace: its Hamming
    // histogram, scaled up, says at which distance ~1.5 x pool rows will pass. The full
    // scan then collects the passing rows as it goes; if the estimate fell short, the exact
    // threshold comes from the full histogram (one more pass over the distances).
    uint32_t tau = static_cast<uint32_t>(bits);
    std::vector<uint32_t> hist(bits + 1);
    const size_t stride = nb / 2048;
    if (stride >= 2) {
      size_t sampled = 0;
      uint16_t d8[8];
      uint32_t c8[8];
      for (size_t b = 0; b < nb; b += stride) {
        kScan(codes + b * words * 8, 1, words, query_code_.data(), d8, 0, c8);
        for (size_t l = 0; l < 8 && b * 8 + l < n; ++l, ++sampled) ++hist[d8[l]];
      }
      const double want = 1.5 * static_cast<double>(pool) * static_cast<double>(sampled) / static_cast<double>(n) + 4;
      double cum = 0;
      for (tau = 0; tau < bits; ++tau) {
        cum += hist[tau];
        if (cum >= want) break;
      }
    }
    size_t found = kScan(codes, nb, words, query_code_.data(), hamming_.data(), tau, cand_.data());
    while (found > 0 && cand_[found - 1] >= n) --found;  // padding lanes of the last block
    std::fill(hist.begin(), hist.end(), 0);
    if (found < pool) {
      for (size_t i = 0; i < n; ++i) ++hist[hamming_[i]];
    } else {
      for (size_t j = 0; j < found; ++j) ++hist[hamming_[cand_[j]]];
    }
    // Keep exactly `pool`: every row below distance t, then rows at t in row order.
    size_t below = 0;
    uint32_t t = 0;
    while (t < bits && below + hist[t] < pool) below += hist[t++];
    size_t room = pool - below;
    size_t kept = 0;
    auto keep = [&](uint32_t i) {
      uint16_t d = hamming_[i];
      if (d < t || (d == t && room > 0)) {
        if (d == t) --room;
        cand_[kept++] = i;
      }
    };
    if (found < pool) {
      for (size_t i = 0; i < n; ++i) keep(static_cast<uint32_t>(i));
    } else {
      for (size_t j = 0; j < found; ++j) keep(cand_[j]);  // in place: kept <= j
    }
    cand = cand_.data();
    n_cand = kept;
  }

  // Exact distances for the candidates (ascending row order: the reads walk memory forward),
  // best `wanted` kept in a max-heap on (distance, row).
  heap_.clear();
  auto worse = [](const std::pair<float, uint32_t>& a, const std::pair<float, uint32_t>& b) { return a < b; };
  constexpr size_t kAhead = 8;
  for (size_t j = 0; j < n_cand; ++j) {
    const uint32_t r = cand ? cand[j] : static_cast<uint32_t>(j);
    if (cand && j + kAhead < n_cand) {
      const unsigned char* next = rows + static_cast<size_t>(cand[j + kAhead]) * row_bytes_;
      for (size_t o = 0; o < row_bytes_; o += 64) __builtin_prefetch(next + o);
    }
    const float d = static_cast<float>(metric_(reinterpret_cast<const byte_t*>(rows + static_cast<size_t>(r) * row_bytes_), reinterpret_cast<const byte_t*>(qrow)));
    if (heap_.size() < wanted) {
      heap_.emplace_back(d, r);
      std::push_heap(heap_.begin(), heap_.end(), worse);
    } else if (std::make_pair(d, r) < heap_.front()) {
      std::pop_heap(heap_.begin(), heap_.end(), worse);
      heap_.back() = {d, r};
      std::push_heap(heap_.begin(), heap_.end(), worse);
    }
  }
  std::sort_heap(heap_.begin(), heap_.end(), worse);
  for (size_t i = 0; i < heap_.size(); ++i) {
    hits_keys_[i] = f.keys[heap_[i].second];
    hits_dist_[i] = heap_[i].first;
  }
  return heap_.size();
}

void VectorIndex::save() {
  if (options_.read_only) throw NativeError("READ_ONLY", "the vector index was opened read-only" + Where(dir_, 0));
  // The vectors file first: a snapshot must never cover vectors that are not durable.
  store_->sync();
  for (Namespace* ns : {&raw_, &summary_}) {
    if (!ns->dirty) continue;
    save_snapshot(*ns);
    ns->dirty = false;
  }
}

void VectorIndex::save_snapshot(Namespace& ns) {
  const std::string path = snapshot_path(ns.kind);
  const std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) throw NativeError("IO_ERROR", "cannot create snapshot: " + std::string(std::strerror(errno)) + Where(tmp, 0));
  struct Closer {
    int& fd;
    const std::string& tmp;
    bool done = false;
    ~Closer() {
      if (fd >= 0) ::close(fd);
      if (!done) ::unlink(tmp.c_str());
    }
  } closer{fd, tmp};

  unsigned char header[kSnapHeader] = {0};
  if (::write(fd, header, kSnapHeader) != static_cast<ssize_t>(kSnapHeader)) {
    throw NativeError("IO_ERROR", "cannot write snapshot: " + std::string(std::strerror(errno)) + Where(tmp, 0));
  }
  SnapshotWriter writer(fd, tmp);
  std::string why;
  bool ok = true;
  if (ns.hnsw) {
    auto saved = ns.index.save_to_stream([&](const void* p, size_t n) { return writer.write(p, n); });
    if (!saved) {
      ok = false;
      why = saved.error.what();
    }
  } else {
    // keys, rows, signatures (whole blocks of 8 rows).
    const Flat& f = ns.flat;
    const size_t rows = f.size();
    ok = writer.write(f.keys.data(), rows * 8) && writer.write(f.rows.data(), rows * row_bytes_) &&
         writer.write(f.codes.data(), (rows + 7) / 8 * code_words_ * 64);
  }
  const uint64_t part_len = writer.length();
  // The duplicate table follows the index part, under the same CRC: without it a loaded
  // index would not know which keys come back with which.
  auto put64 = [&](uint64_t x) { ok = ok && writer.write(&x, 8); };
  if (ok) {
    put64(ns.duplicates);
    put64(ns.by_content.size());
    for (const auto& [hash, key] : ns.by_content) {
      put64(hash);
      put64(key);
    }
    put64(ns.aliases.size());
    for (const auto& [key, list] : ns.aliases) {
      put64(key);
      put64(list.size());
      if (ok && !list.empty()) ok = writer.write(list.data(), list.size() * 8);
    }
  }
  if (!ok || !writer.flush()) {
    throw NativeError("IO_ERROR", "cannot write snapshot: " +
                                      std::string(writer.error() ? std::strerror(writer.error()) : why.c_str()) +
                                      Where(tmp, kSnapHeader + writer.length()));
  }
  const uint64_t count = ns.covered;  // vectors of the file prefix, duplicates included
  const uint64_t last = count == 0 ? kNoId : store_->id_of(ns.kind, count - 1);
  const uint64_t len = writer.length();
  const uint32_t crc = writer.crc();
  std::memcpy(header, kSnapMagic, 8);
  std::memcpy(header + 8, &kSnapVersion, 4);
  std::memcpy(header + 12, &options_.dims, 4);
  header[16] = static_cast<uint8_t>(options_.scalar);
  header[17] = ns.kind;
  header[18] = static_cast<uint8_t>(options_.ann);
  const uint32_t bits = ns.hnsw ? 0 : static_cast<uint32_t>(code_bits());
  std::memcpy(header + 20, &crc, 4);
  std::memcpy(header + 24, &count, 8);
  std::memcpy(header + 32, &last, 8);
  std::memcpy(header + 40, &len, 8);
  std::memcpy(header + 48, &part_len, 8);
  std::memcpy(header + 56, &bits, 4);
  uint32_t hcrc = Crc32c(0, header, 60);
  std::memcpy(header + 60, &hcrc, 4);
  if (::pwrite(fd, header, kSnapHeader, 0) != static_cast<ssize_t>(kSnapHeader)) {
    throw NativeError("IO_ERROR", "cannot write snapshot header: " + std::string(std::strerror(errno)) + Where(tmp, 0));
  }
  VectorFsyncOrThrow(fd, tmp);
  ::close(fd);
  fd = -1;
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    throw NativeError("IO_ERROR", "cannot rename snapshot into place: " + std::string(std::strerror(errno)) + Where(path, 0));
  }
  closer.done = true;
  ns.file_crc = hcrc;
  VectorFsyncDir(dir_);
}

}  // namespace spanguard

namespace spanguard {

void VectorIndex::SpanIds(uint8_t kind, std::vector<uint64_t>* out) const {
  out->clear();
  const Namespace& n = ns(kind);
  if (n.hnsw) {
    out->resize(n.index.size());
    if (!out->empty()) n.index.export_keys(out->data(), 0, out->size());
  } else {
    out->assign(n.flat.keys.begin(), n.flat.keys.end());
  }
  for (const auto& [canonical, later] : n.aliases) out->insert(out->end(), later.begin(), later.end());
  std::sort(out->begin(), out->end());
  out->erase(std::unique(out->begin(), out->end()), out->end());
}

}  // namespace spanguard
