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

void VectorIndex::AppendToList(Partition& p, uint32_t l, uint32_t r, const uint64_t* code) const {
  const CodeLayout layout{lead_words_, tail_words_};
  std::vector<uint32_t>& rows = p.rows[l];
  const size_t pos = rows.size();
  rows.push_back(r);
  if (pos % 8 == 0) p.codes[l].resize(layout.CodeWords(pos + 1), 0);
  p.tails[l].resize(layout.TailWords(pos + 1));
  layout.Put(p.codes[l].data(), p.tails[l].data(), pos, code);
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
  const CodeLayout layout{lead_words_, tail_words_};
  auto flat_code = [&](size_t r, uint64_t* code) {
    layout.Get(reinterpret_cast<const uint64_t*>(f.codes.data()), reinterpret_cast<const uint64_t*>(f.tails.data()), r,
               code);
  };
  auto list_code = [&](const Partition& q, size_t l, size_t pos, uint64_t* code) {
    layout.Get(q.codes[l].data(), q.tails[l].data(), pos, code);
  };
  std::vector<uint32_t> row_list(n);
  const Partition* old = f.part.get();
  auto assign_range = [&](size_t b, size_t e, size_t) {
    std::vector<uint16_t> ham((lists + 7) / 8 * 8);
    std::vector<uint32_t> scratch(ham.size());
    uint64_t code[kMaxCodeWords];
    if (!old) {
      for (size_t r = b; r < e; ++r) {
        flat_code(r, code);
        row_list[r] = NearestList(*p, Row(f, r), code, ham.data(), scratch.data());
      }
      return;
    }
    for (size_t l = b; l < e; ++l) {
      const auto& rows = old->rows[l];
      for (size_t pos = 0; pos < rows.size(); ++pos) {
        list_code(*old, l, pos, code);
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
  p->tails.resize(lists);
  for (uint32_t l = 0; l < lists; ++l) {
    p->rows[l].reserve(sizes[l]);
    p->codes[l].reserve(layout.CodeWords(sizes[l]));
    p->tails[l].reserve(layout.TailWords(sizes[l]));
  }
  uint64_t code[kMaxCodeWords];
  if (!old) {
    for (size_t r = 0; r < n; ++r) {
      flat_code(r, code);
      AppendToList(*p, row_list[r], static_cast<uint32_t>(r), code);
    }
  } else {
    for (uint32_t l = 0; l < old->lists; ++l) {
      const auto& rows = old->rows[l];
      for (size_t pos = 0; pos < rows.size(); ++pos) {
        list_code(*old, l, pos, code);
        AppendToList(*p, row_list[rows[pos]], rows[pos], code);
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

  // The lists taken: the nearest, then the next ones while their centroid lies within
  // probe_margin of the nearest's and the cap is not reached.
  size_t probed = 0;
  size_t largest = 0;
  taken_lists_.clear();
  const double reach = static_cast<double>(list_order_[0].first) + options_.probe_margin;
  for (size_t i = 0; i < p.lists && probed < probe; ++i) {
    if (i == sorted) {
      std::sort(list_order_.begin() + sorted, list_order_.end());
      sorted = p.lists;
    }
    if (static_cast<double>(list_order_[i].first) > reach) break;
    const uint32_t l = list_order_[i].second;
    if (p.rows[l].empty()) continue;
    taken_lists_.push_back(l);
    probed += p.rows[l].size();
    largest = std::max(largest, p.rows[l].size());
  }
  ++probe_counts_.queries;
  probe_counts_.lists += taken_lists_.size();
  probe_counts_.rows += probed;

  // Two halves of the taken lists, by rows, when the probe is large enough to pay for the
  // helper's wakes (helper_thread.h). Each half keeps, in its own range of the buffers below,
  // only the rows that can still enter the shortlist.
  const bool split = options_.search_threads > 1 && probed >= kSplitMinRows && taken_lists_.size() > 1;
  size_t cut = taken_lists_.size();  // lists [0, cut) to half 0, [cut, end) to half 1
  size_t rows0 = probed;
  if (split) {
    rows0 = 0;
    for (cut = 0; cut < taken_lists_.size() && 2 * rows0 < probed; ++cut) rows0 += p.rows[taken_lists_[cut]].size();
    if (cut == taken_lists_.size()) rows0 -= p.rows[taken_lists_[--cut]].size();  // the last list alone to half 1
  }
  const size_t begin[2] = {0, rows0};
  // The pool reranked: the `probe_rerank` rows nearest by the whole signature's estimate,
  // ties by row order, among the shortlist: every row whose first-pass estimate (the lead
  // words: half the bytes, and the scan is bound by reading them) is at most the
  // kLeadShortlist x pool-th smallest, ties included. Not a share of the namespace: the rows
  // probed are a share of it already, and the rerank's random reads are the search's largest
  // cost once few rows are probed.
  const size_t pool = std::max(options_.probe_rerank, wanted);
  const size_t shortlist = pool * kLeadShortlist;
  const ScanQuery lead = ScanQuery::Over(query_planes_.data(), words, lead_words_);
  const size_t top = lead.max_dist;
  // Everything the halves write, allocated before they run (a half must not throw).
  if (scan_dist_.size() < probed) scan_dist_.resize(std::max(probed, scan_dist_.size() * 2));
  if (cand_.size() < probed) cand_.resize(std::max(probed, cand_.size() * 2));
  if (tail_at_.size() < probed) tail_at_.resize(std::max(probed, tail_at_.size() * 2));
  if (shortlist_.size() < probed) shortlist_.resize(std::max(probed, shortlist_.size() * 2));
  const size_t block_rows = (largest + 7) / 8 * 8;
  if (scan_scratch_.size() < 2 * block_rows) scan_scratch_.resize(2 * block_rows);
  if (list_dist_.size() < 2 * block_rows) list_dist_.resize(2 * block_rows);
  scan_hist_.assign(2 * (top + 1), 0);

  // The first pass. A half scans its lists one at a time into a list-sized scratch and keeps
  // the rows whose estimate is at most `tau`: at first every row; once it holds 2 x
  // shortlist rows, tau drops to the smallest distance at which the half alone already has
  // `shortlist` rows, and the rows above it are dropped. No row dropped so is in the
  // shortlist: its cut, over both halves, is at most either half's own. So the probed rows
  // are read once, as they are scanned, and only the few that can still count are written.
  size_t kept_in[2] = {0, 0};
  auto first = [&](size_t h) noexcept {
    const size_t from = h == 0 ? 0 : cut, to = h == 0 ? cut : taken_lists_.size();
    uint16_t* out_dist = scan_dist_.data() + begin[h];
    uint32_t* out_rows = cand_.data() + begin[h];
    const uint64_t** out_tail = tail_at_.data() + begin[h];
    uint16_t* dist = list_dist_.data() + h * block_rows;
    uint32_t* pass = scan_scratch_.data() + h * block_rows;
    uint32_t* hist = scan_hist_.data() + h * (top + 1);
    uint32_t tau = static_cast<uint32_t>(top);
    size_t at = 0;
    for (size_t i = from; i < to; ++i) {
      const uint32_t l = taken_lists_[i];
      const auto& rows = p.rows[l];
      const uint64_t* tails = p.tails[l].data();
      const size_t found = lead.Scan(p.codes[l].data(), (rows.size() + 7) / 8, lead_words_, dist, tau, pass);
      for (size_t j = 0; j < found && pass[j] < rows.size(); ++j) {  // ascending; past the rows: padding
        const uint32_t pos = pass[j];
        const uint16_t d = dist[pos];
        out_dist[at] = d;
        out_rows[at] = rows[pos];
        out_tail[at++] = tails + static_cast<size_t>(pos) * tail_words_;
        ++hist[d];
      }
      if (at < 2 * shortlist) continue;
      size_t below = 0;
      uint32_t cutoff = 0;
      while (cutoff < tau && below + hist[cutoff] < shortlist) below += hist[cutoff++];
      if (cutoff == tau) continue;
      tau = cutoff;
      size_t kept = 0;
      for (size_t j = 0; j < at; ++j) {
        if (out_dist[j] > tau) continue;
        out_dist[kept] = out_dist[j];
        out_rows[kept] = out_rows[j];
        out_tail[kept++] = out_tail[j];
      }
      at = kept;
      std::fill(hist + tau + 1, hist + top + 1, 0u);
    }
    kept_in[h] = at;
  };
  if (split ? helper_.RunBeside(first) : (first(0), false)) ++probe_counts_.split;

  // The shortlist's cut over both halves.
  uint32_t t = static_cast<uint32_t>(top);
  if (kept_in[0] + kept_in[1] > shortlist) {
    const uint32_t* h0 = scan_hist_.data();
    const uint32_t* h1 = h0 + top + 1;
    size_t below = 0;
    t = 0;
    while (t < top && below + h0[t] + h1[t] < shortlist) below += h0[t] + h1[t], ++t;
  }
  // The second pass: each half's rows at most `t` completed with their tail words, as
  // (estimate << 32 | row) in its range of shortlist_.
  size_t done_in[2] = {0, 0};
  auto second = [&](size_t h) noexcept {
    uint16_t* d = scan_dist_.data() + begin[h];
    uint32_t* r = cand_.data() + begin[h];
    const uint64_t** x = tail_at_.data() + begin[h];
    size_t m = 0;
    for (size_t j = 0; j < kept_in[h]; ++j) {
      if (d[j] > t) continue;
      d[m] = d[j];
      r[m] = r[j];
      x[m++] = x[j];
    }
    FinishAt(x, tail_words_, query_planes_.data() + lead_words_, words, r, m, d, static_cast<int32_t>(lead.bias),
             static_cast<int32_t>(query.bias), shortlist_.data() + begin[h]);
    done_in[h] = m;
  };
  if (split) helper_.RunBeside(second);
  else second(0);
  if (split) std::memmove(shortlist_.data() + done_in[0], shortlist_.data() + begin[1], done_in[1] * 8);
  const size_t done = done_in[0] + done_in[1];
  probe_counts_.shortlisted += done;
  const size_t kept = std::min(pool, done);
  if (kept < done)
    std::nth_element(shortlist_.begin(), shortlist_.begin() + static_cast<std::ptrdiff_t>(kept),
                     shortlist_.begin() + static_cast<std::ptrdiff_t>(done));
  for (size_t j = 0; j < kept; ++j) cand_[j] = static_cast<uint32_t>(shortlist_[j]);
  // Ascending row order: the rerank's reads walk memory forward.
  std::sort(cand_.begin(), cand_.begin() + static_cast<std::ptrdiff_t>(kept));
  return Rerank(f, cand_.data(), kept, wanted, split);
}

}  // namespace spanguard
