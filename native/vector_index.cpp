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

#include "crc32c.h"
#include "embedder.h"
#include "hash.h"
#include "errors.h"
#include "span_source.h"

namespace spanguard {

namespace {

using unum::usearch::index_dense_config_t;
using unum::usearch::index_limits_t;
using unum::usearch::metric_kind_t;
using unum::usearch::metric_punned_t;
using unum::usearch::scalar_kind_t;

constexpr char kSnapMagic[8] = {'S', 'G', 'V', 'I', 'D', 'X', '0', '1'};
constexpr uint32_t kSnapVersion = 1;
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

}  // namespace

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
  store_ = std::make_unique<VectorStore>(dir_ + "/vectors.bin", options_.dims, options_.read_only);
  raw_.kind = VectorStore::kKindRaw;
  summary_.kind = VectorStore::kKindSummary;
  for (Namespace* ns : {&raw_, &summary_}) {
    if (try_load_snapshot(*ns)) {
      ns->loaded_from = "file";
    } else {
      ns->index = make_index();
      ns->covered = 0;
      ns->by_content.clear();
      ns->aliases.clear();
      ns->duplicates = 0;
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
  return dir_ + (kind == VectorStore::kKindSummary ? "/index.summary.usearch" : "/index.raw.usearch");
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

  uint32_t version, dims, payload_crc, header_crc;
  uint64_t count, last_id, payload_len, usearch_len;
  std::memcpy(&version, bytes + 8, 4);
  std::memcpy(&dims, bytes + 12, 4);
  std::memcpy(&payload_crc, bytes + 20, 4);
  std::memcpy(&count, bytes + 24, 8);
  std::memcpy(&last_id, bytes + 32, 8);
  std::memcpy(&payload_len, bytes + 40, 8);
  std::memcpy(&usearch_len, bytes + 48, 8);
  std::memcpy(&header_crc, bytes + 60, 4);
  if (std::memcmp(bytes, kSnapMagic, 8) != 0 || header_crc != Crc32c(0, bytes, 60) || version != kSnapVersion) {
    return reject("bad header" + Where(path, 0));
  }
  if (dims != options_.dims || bytes[16] != static_cast<uint8_t>(options_.scalar) || bytes[17] != ns.kind) {
    return reject("built for other dims, scalar kind or namespace");
  }
  if (payload_len != file_size - kSnapHeader) return reject("length does not match its header" + Where(path, file_size));
  if (payload_crc != Crc32c(0, bytes + kSnapHeader, payload_len)) return reject("payload CRC mismatch" + Where(path, kSnapHeader));
  // The snapshot must be a prefix of the authoritative file: same count, same last id.
  if (count > store_->count(ns.kind)) return reject("covers vectors the vectors file does not hold");
  uint64_t expect_last = count == 0 ? kNoId : store_->id_of(ns.kind, count - 1);
  if (last_id != expect_last) return reject("its last id disagrees with the vectors file");

  if (usearch_len > payload_len) return reject("graph length exceeds the payload" + Where(path, 48));
  index_t loaded;
  uint64_t pos = kSnapHeader;
  const uint64_t graph_end = kSnapHeader + usearch_len;
  auto input = [&](void* out, size_t n) {
    if (n > graph_end - pos) return false;
    std::memcpy(out, bytes + pos, n);
    pos += n;
    return true;
  };
  auto result = loaded.load_from_stream(input);
  if (!result) return reject(std::string("usearch could not parse it: ") + result.error.what());
  if (pos != graph_end) return reject("graph shorter than its recorded length");
  // Duplicate table.
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
  if (loaded.size() + duplicates != count || by_content.size() != loaded.size() ||
      loaded.dimensions() != options_.dims) {
    return reject("index size disagrees with its header");
  }
  ns.by_content = std::move(by_content);
  ns.aliases = std::move(aliases);
  ns.duplicates = duplicates;
  loaded.change_expansion_add(options_.expansion_add);
  loaded.change_expansion_search(options_.expansion_search);
  ns.index = std::move(loaded);
  ns.covered = count;
  ns.snapshot_problem.clear();
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
  const size_t total = space.index.size();
  if (k == 0 || total == 0) return 0;
  // Windows of one span share its key, so ask for a little more than k and keep each span
  // once, at its best (first) window; widen only if duplicates ate the margin.
  size_t wanted = std::min(total, k + k / 2 + 8);
  unit_query_.resize(options_.dims);
  Normalize(query, options_.dims, unit_query_.data());
  for (;;) {
    // Thread slot 0: a single query runs on the calling thread, no pool, no lock contention.
    auto result = space.index.search(unit_query_.data(), wanted, 0, exact);
    if (!result) throw NativeError("IO_ERROR", std::string("vector search failed: ") + result.error.what());
    hits_keys_.resize(wanted);
    hits_dist_.resize(wanted);
    size_t got = result.dump_to(hits_keys_.data(), hits_dist_.data(), wanted);
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
  auto saved = ns.index.save_to_stream([&](const void* p, size_t n) { return writer.write(p, n); });
  const uint64_t usearch_len = writer.length();
  // The duplicate table follows the graph, under the same CRC: without it a loaded index
  // would not know which keys come back with which.
  bool ok = static_cast<bool>(saved);
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
  if (!saved || !ok || !writer.flush()) {
    throw NativeError("IO_ERROR", "cannot write snapshot: " +
                                      std::string(writer.error() ? std::strerror(writer.error()) : saved.error.what()) +
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
  std::memcpy(header + 20, &crc, 4);
  std::memcpy(header + 24, &count, 8);
  std::memcpy(header + 32, &last, 8);
  std::memcpy(header + 40, &len, 8);
  std::memcpy(header + 48, &usearch_len, 8);
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
  VectorFsyncDir(dir_);
}

}  // namespace spanguard
