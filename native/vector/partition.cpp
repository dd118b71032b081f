// The binary strategy's coarse partition (an inverted file over the signatures): k-means
// centroids, the rows' lists, list upkeep on add, and the search that scans only the nearest
// lists (docs/VECTOR_FORMAT.md, "Partitions").
//
// Why: the unpartitioned binary scan reads every row's 64-byte signature, about 3 ms at 10^6
// rows and ten times that at 10^7. A query's true neighbours sit near it, so they sit almost
// all in the lists whose centroids are nearest to it: scanning those lists' signatures (a
// fixed share of the namespace, a sequential read per list) and reranking the best of them
// exactly keeps the recall of the full scan at a fraction of its reads.

#include <algorithm>
#include <cmath>
#include <cstring>
#include <mutex>

#include "vector/vector_index.h"
#include "vector/vector_internal.h"

namespace spanguard {

using namespace vector_detail;

namespace {

/// Lists for n rows: the power of two nearest to sqrt(n), at least 16 and at most n / 4.
uint32_t ListsFor(uint64_t n) {
  const double e = std::round(std::log2(std::sqrt(static_cast<double>(std::max<uint64_t>(n, 1)))));
  uint64_t lists = uint64_t{1} << static_cast<int>(std::clamp(e, 4.0, 20.0));
  lists = std::min<uint64_t>(lists, std::max<uint64_t>(1, n / 4));
  return static_cast<uint32_t>(std::max<uint64_t>(lists, 1));
}

void NormalizeInPlace(float* v, size_t dims) {
  double sum = 0;
  for (size_t d = 0; d < dims; ++d) sum += static_cast<double>(v[d]) * v[d];
  const float inv = sum > 0 ? static_cast<float>(1.0 / std::sqrt(sum)) : 0.0f;
  for (size_t d = 0; d < dims; ++d) v[d] *= inv;
}

}  // namespace

bool VectorIndex::PartitionDue(const Namespace& ns) const {
  if (ns.hnsw) return false;
  const Flat& f = ns.flat;
  const uint64_t n = f.size();
  if (n < options_.partition_above || n < 16) return false;
  if (!f.part) return true;
  const Partition& p = *f.part;
  if (n >= 2 * p.built_rows) return true;  // grown: more lists are due
  const uint64_t mean = n / p.lists;
  return p.largest > std::max<uint64_t>(4 * mean, 2 * p.built_largest);  // drifted out of balance
}

void VectorIndex::PrepareCentroids(Partition& p) const {
  const size_t dims = options_.dims;
  const size_t words = code_words_;
  p.centroid_rows.assign(static_cast<size_t>(p.lists) * row_bytes_, 0);
  p.centroid_codes.assign((p.lists + 7) / 8 * words * 8, 0);
  std::vector<float> scratch(pad_);
  uint64_t code[kMaxCodeWords];
  for (uint32_t l = 0; l < p.lists; ++l) {
    const float* c = p.centroids.data() + static_cast<size_t>(l) * dims;
    unsigned char* row = p.centroid_rows.data() + static_cast<size_t>(l) * row_bytes_;
    if (!casts_.from.f32(reinterpret_cast<const byte_t*>(c), dims, reinterpret_cast<byte_t*>(row)))
      std::memcpy(row, c, row_bytes_);
    Encode(c, code, scratch.data());
    uint64_t* block = p.centroid_codes.data() + (l / 8) * words * 8 + (l % 8);
    for (size_t w = 0; w < words; ++w) block[w * 8] = code[w];
  }
}

uint32_t VectorIndex::NearestList(const Partition& p, const unsigned char* row, const uint64_t* code, uint16_t* ham,
                                  uint32_t* scratch) const {
  const uint32_t lists = p.lists;
  const size_t nb = (lists + 7) / 8;
  ScanCodes(p.centroid_codes.data(), nb, code_words_, code, ham, 0, scratch);
  // The kShortlist centroids nearest by Hamming distance, by (distance, list).
  uint32_t short_list[kShortlist];
  uint32_t short_key[kShortlist];  // their Hamming distances; equal ones keep the lower list first
  size_t have = 0;
  for (uint32_t l = 0; l < lists; ++l) {
    const uint32_t key = ham[l];
    if (have == kShortlist && key >= short_key[have - 1]) continue;
    size_t at = have < kShortlist ? have++ : kShortlist - 1;
    while (at > 0 && short_key[at - 1] > key) {
      short_key[at] = short_key[at - 1];
      short_list[at] = short_list[at - 1];
      --at;
    }
    short_key[at] = key;
    short_list[at] = l;
  }
  // The nearest of those by the kernel; ties to the lower list.
  uint32_t best = short_list[0];
  float best_d = 0;
  for (size_t i = 0; i < have; ++i) {
    const uint32_t l = short_list[i];
    const float d = static_cast<float>(
        metric_(reinterpret_cast<const byte_t*>(row),
                reinterpret_cast<const byte_t*>(p.centroid_rows.data() + static_cast<size_t>(l) * row_bytes_)));
    if (i == 0 || d < best_d || (d == best_d && l < best)) {
      best = l;
      best_d = d;
    }
  }
  return best;
}

void VectorIndex::AppendToList(Partition& p, uint32_t l, uint32_t r, const uint64_t* code, size_t words) {
  std::vector<uint32_t>& rows = p.rows[l];
  std::vector<uint64_t>& codes = p.codes[l];
  const size_t pos = rows.size();
  rows.push_back(r);
  if (pos % 8 == 0) codes.resize(codes.size() + words * 8, 0);
  uint64_t* block = codes.data() + (pos / 8) * words * 8 + (pos % 8);
  for (size_t w = 0; w < words; ++w) block[w * 8] = code[w];
  p.largest = std::max<uint64_t>(p.largest, rows.size());
}

std::unique_ptr<VectorIndex::Partition> VectorIndex::BuildPartition(const Namespace& ns) const {
  const Flat& f = ns.flat;
  const size_t n = f.size();
  const size_t dims = options_.dims;
  const size_t words = code_words_;
  auto p = std::make_unique<Partition>();
  p->lists = ListsFor(n);
  const uint32_t lists = p->lists;
  const auto to_f32 = casts_.to.f32;
  auto decode = [&](size_t r, float* out) {
    const unsigned char* row = Row(f, r);
    if (!to_f32(reinterpret_cast<const byte_t*>(row), dims, reinterpret_cast<byte_t*>(out)))
      std::memcpy(out, row, row_bytes_);
  };

  // The sample: rows at a fixed stride, and their signatures.
  const size_t sample = std::min<size_t>(n, kSamplePerList * lists);
  const size_t stride = std::max<size_t>(1, n / sample);
  std::vector<uint64_t> sample_codes(sample * words);
  ParallelFor(sample, kBuildThreads, [&](size_t b, size_t e, size_t) {
    std::vector<float> v(dims), scratch(pad_);
    for (size_t i = b; i < e; ++i) {
      decode(i * stride, v.data());
      Encode(v.data(), sample_codes.data() + i * words, scratch.data());
    }
  });
  // Seeds: every (sample / lists)-th sampled row.
  p->centroids.resize(static_cast<size_t>(lists) * dims);
  const size_t seed_step = std::max<size_t>(1, sample / lists);
  for (uint32_t l = 0; l < lists; ++l) {
    decode(std::min(sample - 1, l * seed_step) * stride, p->centroids.data() + static_cast<size_t>(l) * dims);
    NormalizeInPlace(p->centroids.data() + static_cast<size_t>(l) * dims, dims);
  }
  PrepareCentroids(*p);

  // Spherical k-means over the sample.
  std::vector<uint32_t> assign(sample);
  for (int round = 0; round < kKmeansRounds; ++round) {
    std::vector<double> sums[kBuildThreads];
    std::vector<uint32_t> counts[kBuildThreads];
    ParallelFor(sample, kBuildThreads, [&](size_t b, size_t e, size_t t) {
      std::vector<uint16_t> ham((lists + 7) / 8 * 8);
      std::vector<uint32_t> scratch(ham.size());
      std::vector<float> v(dims);
      sums[t].assign(static_cast<size_t>(lists) * dims, 0.0);
      counts[t].assign(lists, 0);
      for (size_t i = b; i < e; ++i) {
        const size_t r = i * stride;
        const uint32_t l = NearestList(*p, Row(f, r), sample_codes.data() + i * words, ham.data(), scratch.data());
        assign[i] = l;
        decode(r, v.data());
        double* s = sums[t].data() + static_cast<size_t>(l) * dims;
        for (size_t d = 0; d < dims; ++d) s[d] += v[d];
        ++counts[t][l];
      }
    });
    for (uint32_t l = 0; l < lists; ++l) {
      uint64_t count = 0;
      for (size_t t = 0; t < kBuildThreads; ++t) count += counts[t].empty() ? 0 : counts[t][l];
      if (count == 0) continue;  // an empty list keeps its centroid
      float* c = p->centroids.data() + static_cast<size_t>(l) * dims;
      for (size_t d = 0; d < dims; ++d) {
        double s = 0;
        for (size_t t = 0; t < kBuildThreads; ++t)
          if (!sums[t].empty()) s += sums[t][static_cast<size_t>(l) * dims + d];
        c[d] = static_cast<float>(s);
      }
      NormalizeInPlace(c, dims);
    }
    PrepareCentroids(*p);
  }

  // Every row to its nearest list, reading its signature where it is kept now.
  std::vector<uint32_t> row_list(n);
  const Partition* old = f.part.get();
  auto gather = [&](const uint64_t* blocks, size_t pos, uint64_t* code) {
    const uint64_t* block = blocks + (pos / 8) * words * 8 + (pos % 8);
    for (size_t w = 0; w < words; ++w) code[w] = block[w * 8];
  };
  auto assign_range = [&](size_t b, size_t e, size_t) {
    std::vector<uint16_t> ham((lists + 7) / 8 * 8);
    std::vector<uint32_t> scratch(ham.size());
    uint64_t code[kMaxCodeWords];
    if (!old) {
      for (size_t r = b; r < e; ++r) {
        RowCode(f, r, code);
        row_list[r] = NearestList(*p, Row(f, r), code, ham.data(), scratch.data());
      }
      return;
    }
    for (size_t l = b; l < e; ++l) {
      const auto& rows = old->rows[l];
      for (size_t pos = 0; pos < rows.size(); ++pos) {
        gather(old->codes[l].data(), pos, code);
        row_list[rows[pos]] = NearestList(*p, Row(f, rows[pos]), code, ham.data(), scratch.data());
      }
    }
  };
  ParallelFor(old ? old->lists : n, kBuildThreads, assign_range);

  // The lists, each allocated once at its size, filled in the order the rows are read.
  std::vector<uint64_t> sizes(lists, 0);
  for (uint32_t l : row_list) ++sizes[l];
  p->rows.resize(lists);
  p->codes.resize(lists);
  for (uint32_t l = 0; l < lists; ++l) {
    p->rows[l].reserve(sizes[l]);
    p->codes[l].reserve((sizes[l] + 7) / 8 * words * 8);
  }
  uint64_t code[kMaxCodeWords];
  if (!old) {
    for (size_t r = 0; r < n; ++r) {
      RowCode(f, r, code);
      AppendToList(*p, row_list[r], static_cast<uint32_t>(r), code, words);
    }
  } else {
    for (uint32_t l = 0; l < old->lists; ++l) {
      const auto& rows = old->rows[l];
      for (size_t pos = 0; pos < rows.size(); ++pos) {
        gather(old->codes[l].data(), pos, code);
        AppendToList(*p, row_list[rows[pos]], rows[pos], code, words);
      }
    }
  }
  p->built_rows = n;
  p->built_largest = p->largest;
  return p;
}

void VectorIndex::Repartition(Namespace& ns) {
  std::unique_ptr<Partition> fresh = BuildPartition(ns);
  std::unique_ptr<Partition> old;
  RowBuffer old_codes, old_tails;
  {
    std::lock_guard<std::mutex> lock(part_mu_);
    old = std::move(ns.flat.part);
    ns.flat.part = std::move(fresh);
    old_codes = std::move(ns.flat.codes);  // the lists hold the signatures now
    old_tails = std::move(ns.flat.tails);
  }
  ns.dirty = true;
  // `old`, `old_codes` and `old_tails` are freed here, outside the lock.
}

size_t VectorIndex::SearchPartitioned(const Flat& f, const ScanQuery& query, size_t wanted) const {
  const Partition& p = *f.part;
  const size_t n = f.size();
  const size_t words = code_words_;
  const size_t top = query.max_dist;
  const unsigned char* qrow = query_row_.data();
  const size_t probe = std::max<size_t>(options_.probe_min,
                                        static_cast<size_t>(std::ceil(static_cast<double>(n) * options_.probe_share)));

  // Lists by the distance of their centroid to the query.
  list_order_.resize(p.lists);
  for (uint32_t l = 0; l < p.lists; ++l) {
    list_order_[l] = {static_cast<float>(metric_(
                          reinterpret_cast<const byte_t*>(p.centroid_rows.data() + static_cast<size_t>(l) * row_bytes_),
                          reinterpret_cast<const byte_t*>(qrow))),
                      l};
  }
  // Sort only the head that is likely to be taken; the rest if the head falls short.
  const size_t mean = std::max<size_t>(1, n / p.lists);
  size_t sorted = std::min<size_t>(p.lists, 2 * (probe / mean) + 16);
  std::nth_element(list_order_.begin(), list_order_.begin() + sorted, list_order_.end());
  std::sort(list_order_.begin(), list_order_.begin() + sorted);

  // Estimated distances of the taken lists' rows: the nearest list, then the next ones while
  // their centroid lies within probe_margin of the nearest's and the cap is not reached.
  size_t probed = 0;
  size_t taken = 0;
  const double reach = static_cast<double>(list_order_[0].first) + options_.probe_margin;
  for (size_t i = 0; i < p.lists && probed < probe; ++i) {
    if (i == sorted) {
      std::sort(list_order_.begin() + sorted, list_order_.end());
      sorted = p.lists;
    }
    if (static_cast<double>(list_order_[i].first) > reach) break;
    const uint32_t l = list_order_[i].second;
    const auto& rows = p.rows[l];
    if (rows.empty()) continue;
    ++taken;
    const size_t nb = (rows.size() + 7) / 8;
    if (scan_dist_.size() < probed + nb * 8) scan_dist_.resize(std::max(probed + nb * 8, scan_dist_.size() * 2));
    if (cand_.size() < probed + nb * 8) cand_.resize(std::max(probed + nb * 8, cand_.size() * 2));
    if (scan_scratch_.size() < nb * 8) scan_scratch_.resize(nb * 8);
    query.Scan(p.codes[l].data(), nb, words, scan_dist_.data() + probed, 0, scan_scratch_.data());
    std::memcpy(cand_.data() + probed, rows.data(), rows.size() * 4);
    probed += rows.size();
  }
  ++probe_counts_.queries;
  probe_counts_.lists += taken;
  probe_counts_.rows += probed;

  // The pool: the `probe_rerank` smallest Hamming distances, ties at the cut by row order. Not
  // a share of the namespace: the rows probed are a share of it already, and the rerank's
  // random reads are the search's largest cost once few rows are probed.
  const size_t pool = std::max(options_.probe_rerank, wanted);
  size_t kept = probed;
  if (pool < probed) {
    std::vector<uint32_t>& hist = scan_scratch_;
    hist.assign(top + 1, 0);
    for (size_t j = 0; j < probed; ++j) ++hist[scan_dist_[j]];
    size_t below = 0;
    uint32_t t = 0;
    while (t < top && below + hist[t] < pool) below += hist[t++];
    size_t room = pool - below;
    kept = 0;
    size_t ties = probed;  // ties at t are moved to the end of cand_ (past `probed`)
    if (cand_.size() < probed * 2) cand_.resize(probed * 2);
    for (size_t j = 0; j < probed; ++j) {
      const uint16_t d = scan_dist_[j];
      if (d < t) cand_[kept++] = cand_[j];  // in place: kept <= j
      else if (d == t) cand_[ties++] = cand_[j];
    }
    std::sort(cand_.begin() + static_cast<std::ptrdiff_t>(probed), cand_.begin() + static_cast<std::ptrdiff_t>(ties));
    for (size_t j = probed; j < ties && room > 0; ++j, --room) cand_[kept++] = cand_[j];
  }
  // Ascending row order: the rerank's reads walk memory forward.
  std::sort(cand_.begin(), cand_.begin() + static_cast<std::ptrdiff_t>(kept));
  return Rerank(f, cand_.data(), kept, wanted);
}

}  // namespace spanguard
