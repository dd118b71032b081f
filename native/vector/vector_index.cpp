// The vector index: options, ingest (host vectors or the built-in embedder over the log),
// search by strategy, and the namespaces' memory.

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <thread>

#include "embed/embedder.h"
#include "log/span_source.h"

#include "vector/vector_index.h"
#include "vector/vector_internal.h"

namespace spanguard {

using namespace vector_detail;

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
  void* p;
  if (data_) {
    // The kernel moves the pages instead of copying them: growing a 5 GB buffer never holds
    // two of it at once.
    p = ::mremap(data_, capacity_, cap, MREMAP_MAYMOVE);
  } else {
    p = ::mmap(nullptr, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  }
  if (p == MAP_FAILED) {
    throw NativeError("IO_ERROR",
                      "cannot reserve " + std::to_string(cap) + " bytes for vectors: " + std::strerror(errno));
  }
#ifdef MADV_HUGEPAGE
  ::madvise(p, cap, MADV_HUGEPAGE);  // advice only: without it the rerank is slower, not wrong
#endif
  data_ = static_cast<unsigned char*>(p);
  capacity_ = cap;
  size_ = bytes;
}

const char* VectorAnnName(VectorAnn a) noexcept { return a == VectorAnn::kHnsw ? "hnsw" : "binary"; }

const char* VectorScalarName(VectorScalar s) noexcept {
  switch (s) {
    case VectorScalar::kF32:
      return "f32";
    case VectorScalar::kF16:
      return "f16";
    case VectorScalar::kI8:
      return "i8";
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
  } kOrder[] = {{nk_cap_diamond_k, "diamond"},   {nk_cap_turin_k, "turin"},     {nk_cap_sapphire_k, "sapphire"},
                {nk_cap_genoa_k, "genoa"},       {nk_cap_icelake_k, "icelake"}, {nk_cap_skylake_k, "skylake"},
                {nk_cap_haswell_k, "haswell"},   {nk_cap_sve2_k, "sve2"},       {nk_cap_sve_k, "sve"},
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
      throw NativeError("IO_ERROR",
                        "cannot create index directory: " + std::string(std::strerror(errno)) + Where(part, 0));
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
  lead_words_ = code_words_ / 2;
  tail_words_ = code_words_ - lead_words_;
  rht_signs_.resize(rotations_ * pad_);
  uint64_t state = kRhtSeed;
  for (float& sign : rht_signs_) sign = (SplitMix64(state) >> 63) ? -1.0f : 1.0f;
  rht_scratch_.resize(kBuildThreads * pad_);

  // An f32 index keeps f32 unit vectors on file; f16 and i8 keep f16 (what they hold anyway).
  store_ = std::make_unique<VectorStore>(dir_ + "/vectors.bin", options_.dims, options_.read_only,
                                         options_.scalar == VectorScalar::kF32);
  rows_mapped_ = options_.map_rows && options_.ann == VectorAnn::kBinary && options_.scalar == VectorScalar::kF16 &&
                 store_->version() == 2 && store_->stored_bytes() == 2 && store_->MapRecords();
  raw_.kind = VectorStore::kKindRaw;
  summary_.kind = VectorStore::kKindSummary;
  for (Namespace* ns : {&raw_, &summary_}) {
    ns->hnsw = options_.ann == VectorAnn::kHnsw;
    if (TryLoadSnapshot(*ns)) {
      ns->loaded_from = "file";
    } else {
      ResetNamespace(*ns);
      ns->loaded_from = store_->count(ns->kind) > 0 ? "rebuilt" : "empty";
    }
    // Vectors the snapshot does not cover (all of them after a rebuild) come from the file.
    uint64_t before = ns->covered;
    store_->ForEach(ns->kind, ns->covered, [&](const uint64_t* ids, const float* vecs, size_t n) {
      IndexRows(*ns, ids, vecs, n);
      ns->covered += n;
    });
    ns->dirty = ns->covered != before || ns->loaded_from != "file";
    // A large namespace loaded without a partition (rebuilt, or from a version-2 snapshot), or
    // one whose lists are due: partitioned now (the open runs on the thread pool).
    if (PartitionDue(*ns)) Repartition(*ns);
  }
  high_water_ = store_->empty() ? 0 : store_->last_id() + 1;
}

std::string VectorIndex::SnapshotPath(uint8_t kind) const {
  const char* ext = options_.ann == VectorAnn::kHnsw ? ".usearch" : ".flat";
  return dir_ + (kind == VectorStore::kKindSummary ? "/index.summary" : "/index.raw") + ext;
}

void VectorIndex::ResetNamespace(Namespace& ns) {
  if (ns.hnsw) ns.index = MakeIndex();
  ns.flat.keys.clear();
  ns.flat.keys.shrink_to_fit();
  ns.flat.nth.clear();
  ns.flat.nth.shrink_to_fit();
  ns.flat.rows.clear();
  ns.flat.rec.clear();
  ns.flat.rec.shrink_to_fit();
  ns.flat.codes.clear();
  ns.flat.tails.clear();
  ns.flat.part.reset();
  ns.covered = 0;
  ns.by_content.clear();
  ns.aliases.clear();
  ns.alias_bits.clear();
  ns.duplicates = 0;
}

size_t VectorIndex::MemoryUsage() const {
  size_t total = 0;
  for (const Namespace* ns : {&raw_, &summary_}) {
    if (ns->hnsw) total += ns->index.memory_usage();
    total += ns->flat.keys.capacity() * 8 + ns->flat.nth.capacity() * 4 + ns->flat.rows.capacity() +
             ns->flat.rec.capacity() * 4 + ns->flat.codes.capacity() + ns->flat.tails.capacity();
    if (const Partition* p = ns->flat.part.get()) {
      total += p->centroids.capacity() * 4 + p->centroid_rows.capacity() + p->centroid_codes.capacity() * 8;
      for (uint32_t l = 0; l < p->lists; ++l)
        total += p->rows[l].capacity() * 4 + (p->codes[l].capacity() + p->tails[l].capacity()) * 8;
    }
  }
  // A search's scratch, kept between searches (a partitioned one's grows with the rows it probes).
  total += scan_dist_.capacity() * 2 + cand_.capacity() * 4 + shortlist_.capacity() * 8 +
           tail_at_.capacity() * sizeof(void*) + scan_scratch_.capacity() * 4 + list_dist_.capacity() * 2 +
           rerank_dist_.capacity() * 4 + scan_hist_.capacity() * 4;
  return total;
}

VectorIndex::index_t VectorIndex::MakeIndex() const {
  // Rows are L2-normalized before they enter the index (index_rows, search), so for f32 and
  // f16 cosine distance is 1 - dot and the inner-product kernel does it without computing
  // two norms per pair: measured 25% (f16) to 20% (f32) faster per distance on this CPU.
  // i8 keeps the angular kernel: usearch's f32 -> i8 cast truncates, which leaves the
  // quantized norms uneven, and only the angular kernel divides that back out.
  const metric_kind_t kind = options_.scalar == VectorScalar::kI8 ? metric_kind_t::cos_k : metric_kind_t::ip_k;
  metric_punned_t metric = metric_punned_t::builtin(options_.dims, kind, ToUsearch(options_.scalar));
  index_dense_config_t config(options_.connectivity, options_.expansion_add, options_.expansion_search);
  config.multi = true;  // windows of one span share its id
  auto made =
      index_t::make(metric, config, unum::usearch::default_free_value<uint64_t>(), index_limits_t(0, kBuildThreads));
  if (!made) throw NativeError("IO_ERROR", std::string("cannot create vector index: ") + made.error.what());
  return std::move(made.index);
}

void VectorIndex::EnsureCapacity(Namespace& ns, size_t extra) {
  size_t need = ns.index.size() + extra;
  if (need <= ns.index.capacity()) return;
  // Doubling keeps the number of usearch reallocations logarithmic in the size.
  size_t cap = std::max<size_t>({need, ns.index.capacity() * 2, 1024});
  if (!ns.index.try_reserve(index_limits_t(cap, kBuildThreads))) {
    throw NativeError("IO_ERROR", "cannot reserve memory for " + std::to_string(cap) + " vectors");
  }
}

void VectorIndex::IndexRows(Namespace& ns, const uint64_t* ids, const float* vectors, size_t n) {
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
      if (list.empty()) ns.NoteAlias(it->second);
      if (list.empty() || list.back() != ids[i]) list.push_back(ids[i]);
    }
  }
  const size_t m = fresh_.size();
  if (m == 0) return;
  if (!ns.hnsw) {
    IndexRowsFlat(ns, ids, vectors);
    return;
  }
  EnsureCapacity(ns, m);
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

void VectorIndex::StoreAndIndex(const uint64_t* ids, const uint8_t* kinds, const uint8_t* last, const float* vectors,
                                size_t n) {
  if (n == 0) return;
  // The index indexes the vectors as the file holds them (version 2: the f16 unit vector), so
  // an index rebuilt from the file is the one built here.
  if (store_->version() != 1) {
    canonical_.resize(n * options_.dims);
    store_->Canonicalize(vectors, canonical_.data(), n);
    vectors = canonical_.data();
  }
  store_->Append(ids, kinds, last, vectors, n);
  high_water_ = std::max(high_water_, ids[n - 1] + 1);
  const size_t dims = options_.dims;
  size_t n_summary = 0;
  for (size_t i = 0; i < n; ++i) n_summary += kinds[i] == VectorStore::kKindSummary;
  if (n_summary == 0 || n_summary == n) {
    Namespace& ns = ns_mut(kinds[0]);
    IndexRows(ns, ids, vectors, n);
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
    IndexRows(ns, kid.data(), kvec.data(), kid.size());
    ns.covered += kid.size();
    ns.dirty = true;
  }
}

void VectorIndex::Add(const uint64_t* ids, const uint8_t* kinds, const float* vectors, size_t n) {
  const size_t dims = options_.dims;
  // Validate everything first: a rejected batch stores nothing.
  for (size_t i = 0; i < n; ++i) {
    if (kinds[i] != VectorStore::kKindRaw && kinds[i] != VectorStore::kKindSummary) {
      throw NativeError("INVALID_ARGUMENT", "add: kind of row " + std::to_string(i) + " is " +
                                                std::to_string(kinds[i]) + ", expected 1 (raw) or 2 (summary)");
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
  StoreAndIndex(ids, kinds, nullptr, vectors, n);
}

void VectorIndex::CheckEmbedder(const Embedder& embedder) const {
  if (embedder.dims() != options_.dims) {
    throw NativeError("DIMENSION_MISMATCH", "catchUp: embedder makes " + std::to_string(embedder.dims()) +
                                                "-dim vectors, the index holds " + std::to_string(options_.dims));
  }
}

size_t VectorIndex::CatchUp(const SpanSource& source, const Embedder& embedder) {
  CheckEmbedder(embedder);
  const uint64_t end = source.next_id();
  uint64_t id = std::max(high_water_, source.first_id());
  size_t added = 0;
  Embedded batch;
  while (id < end) {
    EmbedBatch(source, embedder, id, &batch);
    added += Store(batch);
    id = batch.next;
  }
  return added;
}

void VectorIndex::EmbedBatch(const SpanSource& source, const Embedder& embedder, uint64_t from, Embedded* out) const {
  CheckEmbedder(embedder);
  const uint64_t end = source.next_id();
  const size_t dims = options_.dims;
  // Texts are copied out of the log's mapping so the embedding can run on two threads
  // without touching memory the log may remap.
  std::string& texts = out->texts;
  auto& windows = out->windows;  // (offset in texts, length)
  auto& ids = out->ids;
  auto& kinds = out->kinds;
  texts.clear();
  windows.clear();
  ids.clear();
  kinds.clear();
  uint64_t next = from;
  for (; next < end && windows.size() < kCatchUpSpans && texts.size() < kCatchUpBytes; ++next) {
    SpanView view;
    if (!source.Read(next, &view)) continue;
    if (view.kind != RecordKind::kRaw && view.kind != RecordKind::kSummary) continue;
    size_t base = texts.size();
    texts.append(view.text, view.text_len);
    SplitWindows(std::string_view(texts.data() + base, view.text_len), &out->cuts);
    for (const auto& c : out->cuts) {
      windows.emplace_back(base + c.first, c.second);
      ids.push_back(view.id);
      kinds.push_back(static_cast<uint8_t>(view.kind));
    }
  }
  const size_t n = windows.size();
  std::vector<float>& vecs = out->vecs;
  vecs.resize(n * dims);
  while (out->scratch.size() < kBuildThreads) out->scratch.push_back(std::make_unique<EmbedScratch>());
  ParallelFor(n, n >= 64 ? kBuildThreads : 1, [&](size_t b, size_t e, size_t thread) {
    for (size_t i = b; i < e; ++i) {
      embedder.Embed(std::string_view(texts.data() + windows[i].first, windows[i].second), vecs.data() + i * dims,
                     *out->scratch[thread]);
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
  ids.resize(m);
  kinds.resize(m);
  vecs.resize(m * dims);
  // A span's windows are contiguous; the last one kept closes it.
  out->last.resize(m);
  for (size_t i = 0; i < m; ++i) out->last[i] = (i + 1 == m || ids[i + 1] != ids[i]) ? 1 : 0;
  out->next = next;
}

size_t VectorIndex::Store(const Embedded& batch) {
  const size_t m = batch.ids.size();
  StoreAndIndex(batch.ids.data(), batch.kinds.data(), batch.last.data(), batch.vecs.data(), m);
  high_water_ = std::max(high_water_, batch.next);
  return m;
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

size_t VectorIndex::Search(const float* query, size_t k, uint8_t kind, uint64_t* ids, float* distances) const {
  return Search(query, k, kind, exact_for(kind), ids, distances);
}

size_t VectorIndex::Search(const float* query, size_t k, uint8_t kind, bool exact, uint64_t* ids,
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
      got = SearchFlat(space, unit_query_.data(), wanted, exact);
    }
    size_t out = 0;
    bool hashing = false;
    // At most k distinct keys are emitted, and no more than the namespace's rows and their
    // aliases hold: a table twice that (a wide k over a small namespace does not size it).
    const size_t most = std::min<size_t>(k, total + space.duplicates);
    size_t slots = 64;
    while (slots < 2 * most) slots *= 2;
    // Whether `key` was not in the table (it is now).
    auto fresh = [&](uint64_t key) {
      for (uint64_t h = Fmix64(key) & (slots - 1);; h = (h + 1) & (slots - 1)) {
        if (seen_[h] == key) return false;
        if (seen_[h] == kNoKey) {
          seen_[h] = key;
          return true;
        }
      }
    };
    auto emit = [&](uint64_t key, float distance) {
      bool dup = false;
      if (out < 32) {  // small k: a linear scan beats hashing
        for (size_t j = 0; j < out && !dup; ++j) dup = ids[j] == key;
      } else {
        if (!hashing) {
          seen_.assign(slots, kNoKey);
          for (size_t j = 0; j < out; ++j) fresh(ids[j]);
          hashing = true;
        }
        dup = !fresh(key);
      }
      if (dup) return;
      ids[out] = key;
      distances[out] = distance;
      ++out;
    };
    for (size_t i = 0; i < got && out < k; ++i) {
      emit(hits_keys_[i], hits_dist_[i]);
      if (!space.MayHaveAliases(hits_keys_[i])) continue;
      auto it = space.aliases.find(hits_keys_[i]);
      if (it == space.aliases.end()) continue;
      for (size_t j = 0; j < it->second.size() && out < k; ++j) emit(it->second[j], hits_dist_[i]);
    }
    if (out >= k || got < wanted || wanted >= total) return out;
    wanted = std::min(total, wanted * 2);
  }
}

void VectorIndex::SpanIds(uint8_t kind, std::vector<uint64_t>* out) const {
  CollectSpanIds(kind, out);
  std::sort(out->begin(), out->end());
  out->erase(std::unique(out->begin(), out->end()), out->end());
}

void VectorIndex::CollectSpanIds(uint8_t kind, std::vector<uint64_t>* out) const {
  out->clear();
  const Namespace& n = ns(kind);
  if (n.hnsw) {
    out->resize(n.index.size());
    if (!out->empty()) n.index.export_keys(out->data(), 0, out->size());
  } else {
    out->assign(n.flat.keys.begin(), n.flat.keys.end());
  }
  for (const auto& [canonical, later] : n.aliases) out->insert(out->end(), later.begin(), later.end());
}

}  // namespace spanguard
