// The vector index: two usearch `index_dense_gt` namespaces (raw, summary) keyed by span id,
// fed from the append-only vectors file (vector_store.h), snapshotted crash-safely.
//
// Why the shape:
//   - Keys are span ids, never content hashes; the vectors file refuses an id that is not
//     above every id it holds, so a key can never be re-pointed at new content.
//   - Raw spans and summaries never share a graph: a summary can never outrank the raw span
//     a query was about inside the raw namespace, and the caller always knows which it got.
//   - Below `exact_below` vectors a namespace answers by an exact scan (usearch's exact
//     search: the NumKong kernel over every stored vector), which at that size is both
//     faster than walking the graph and exact; above it, by HNSW. The graph is maintained
//     from the first vector on, so crossing the threshold costs nothing.
//   - Capacity is reserved ahead, doubling, so usearch never reallocates inside an add.
//   - The vectors file is the authority; an index snapshot is trusted only if its checksum
//     and its (count, last id) agree with that file (docs/VECTOR_FORMAT.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include <usearch/index_dense.hpp>

#include "vector_store.h"

namespace spanguard {

class Embedder;
class SpanSource;

enum class VectorScalar : uint8_t { kF32 = 1, kF16 = 2, kI8 = 3 };

struct VectorIndexOptions {
  uint32_t dims = 256;
  VectorScalar scalar = VectorScalar::kF16;
  /// Namespaces with fewer vectors than this are searched exactly.
  uint64_t exact_below = 0;
  size_t connectivity = 16;
  size_t expansion_add = 128;
  size_t expansion_search = 64;
  /// catchUp embeds a text longer than 1.5x this many bytes as overlapping windows of about
  /// this size, all keyed by the span's id (0: one vector per span). A single vector of a
  /// long tool output is dominated by everything but the sentence a query quotes; measured
  /// on real turns, windows of 512 lift copied-sentence recall@10 from 0.89 to 0.96.
  size_t window_bytes = 512;
  size_t window_overlap = 64;
  /// A reader beside a live writer: the vectors file is opened without its lock and never
  /// written; snapshots are loaded but not saved.
  bool read_only = false;
};

const char* VectorScalarName(VectorScalar s) noexcept;
/// The best SIMD target NumKong dispatches to on this CPU (e.g. "sapphire", "skylake").
const char* SimdIsaName() noexcept;

class VectorIndex {
 public:
  using index_t = unum::usearch::index_dense_gt<uint64_t, uint32_t>;

  struct Namespace {
    uint8_t kind = 0;                 ///< 1 raw, 2 summary
    index_t index;
    uint64_t covered = 0;             ///< vectors of this kind in the index (prefix of the file)
    bool dirty = false;               ///< changed since the last snapshot
    std::string loaded_from = "empty";  ///< file | rebuilt | empty
    std::string snapshot_problem;     ///< why a snapshot was not trusted (empty if it was)
    // Identical vectors are kept out of the graph. Agent transcripts repeat themselves (the
    // same tool output, the same instruction, hundreds of times), and an HNSW graph full of
    // zero-distance duplicates loses its way: measured on real turns, recall@10 fell from
    // 0.96 to 0.78. The first copy is indexed; later copies become aliases of its key and
    // come back with it, at the same distance.
    std::unordered_map<uint64_t, uint64_t> by_content;          ///< vector hash -> canonical key
    std::unordered_map<uint64_t, std::vector<uint64_t>> aliases;  ///< canonical key -> later keys
    uint64_t duplicates = 0;          ///< vectors covered but not in the graph
  };

  /// Opens (or creates) the vectors file and both namespaces in `dir`.
  VectorIndex(std::string dir, const VectorIndexOptions& options);

  const VectorIndexOptions& options() const noexcept { return options_; }
  uint32_t dims() const noexcept { return options_.dims; }

  /// One past the highest span id processed (embedded, or seen and skipped by catchUp).
  uint64_t high_water() const noexcept { return high_water_; }

  /// Validates the whole batch (kinds, ids strictly increasing and >= high_water, finite)
  /// and only then appends it to the vectors file and adds it to the indexes.
  void add(const uint64_t* ids, const uint8_t* kinds, const float* vectors, size_t n);

  /// Embeds records [max(high_water, first_id), next_id) of kinds raw/summary in batches,
  /// stores and indexes them, advances high_water. Returns the number of vectors added.
  size_t catch_up(const SpanSource& source, const Embedder& embedder);

  /// Top-k spans by cosine distance in namespace `kind` (a span with several windows counts
  /// once, at its best window); returns how many were written.
  size_t search(const float* query, size_t k, uint8_t kind, uint64_t* ids, float* distances) const;
  /// The same with the strategy forced (benchmarks and the agreement test).
  size_t search(const float* query, size_t k, uint8_t kind, bool exact, uint64_t* ids, float* distances) const;

  /// fsyncs the vectors file, then snapshots every changed namespace crash-safely.
  void save();

  const Namespace& ns(uint8_t kind) const { return kind == VectorStore::kKindSummary ? summary_ : raw_; }
  const VectorStore& store() const { return *store_; }
  bool exact_for(uint8_t kind) const { return ns(kind).index.size() < options_.exact_below; }
  size_t memory_usage() const { return raw_.index.memory_usage() + summary_.index.memory_usage(); }

 private:
  std::string dir_;
  VectorIndexOptions options_;
  std::unique_ptr<VectorStore> store_;
  Namespace raw_, summary_;
  uint64_t high_water_ = 0;

  // Search scratch, reused so a query allocates nothing once warm (the JS thread is the
  // only caller; the index is not shared across threads).
  mutable std::vector<uint64_t> hits_keys_;
  mutable std::vector<float> hits_dist_;
  mutable std::unordered_set<uint64_t> seen_;
  std::vector<size_t> fresh_;  ///< index_rows: rows with new content
  std::vector<float> unit_rows_;  ///< index_rows: one normalized row per build thread
  mutable std::vector<float> unit_query_;

  void SplitWindows(std::string_view text, std::vector<std::pair<size_t, size_t>>* out) const;
  Namespace& ns_mut(uint8_t kind) { return kind == VectorStore::kKindSummary ? summary_ : raw_; }
  std::string snapshot_path(uint8_t kind) const;
  index_t make_index() const;
  bool try_load_snapshot(Namespace& ns);
  void ensure_capacity(Namespace& ns, size_t extra);
  /// Adds rows to one namespace (parallel over 2 threads for big batches).
  void index_rows(Namespace& ns, const uint64_t* ids, const float* vectors, size_t n);
  void save_snapshot(Namespace& ns);
  void store_and_index(const uint64_t* ids, const uint8_t* kinds, const uint8_t* last, const float* vectors, size_t n);
};

}  // namespace spanguard
