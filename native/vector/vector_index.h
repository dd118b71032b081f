// The vector index: two namespaces (raw, summary) keyed by span id, fed from the
// append-only vectors file (vector_store.h), snapshotted crash-safely.
//
// Why the shape:
//   - Keys are span ids, never content hashes; the vectors file refuses an id that is not
//     above every id it holds, so a key can never be re-pointed at new content.
//   - Raw spans and summaries never share an index: a summary can never outrank the raw span
//     a query was about inside the raw namespace, and the caller always knows which it got.
//   - Three search strategies, picked by size and by `ann`:
//       exact   below `exact_below` vectors: the NumKong kernel over every stored vector,
//               which at that size is both faster than any index and exact;
//       binary  (the default above it): every vector also keeps a 512-bit signature, the
//               signs of two randomized Hadamard rotations of it (SimHash). A query is
//               rotated the same way, its coordinates kept at 4 bits, and scans all
//               signatures by popcount (64 bytes a vector: 64 MB at 10^6, a few ms) for an
//               estimate of its distance to each row (asymmetric: the query is not reduced
//               to signs, so the estimate orders rows far better than the Hamming distance
//               between signatures), keeps the `max(rerank_min, size * rerank_share)`
//               nearest by it, and reranks them exactly with the stored vectors. Inserting is
//               O(1) (a rotation and a copy), results are deterministic. Measured on real-turn
//               embeddings (bench/README.md): recall@10 0.98 at 10^6 where HNSW at ef 512
//               gave 0.68, and ingest is not dominated by graph inserts. From
//               `partition_above` rows on, the rows are split into coarse lists around
//               k-means centroids (an inverted file over the same signatures) and a query
//               scans only the nearest lists' signatures: sublinear, the list a vector goes
//               to is chosen when it is added, the partition is rebuilt at a checkpoint
//               when the namespace has doubled or a list has grown out of balance;
//       hnsw    (`ann = kHnsw`): usearch's graph, kept as an option.
//   - Capacity is reserved ahead, doubling, so nothing reallocates per add.
//   - The vectors file is the authority; an index snapshot is trusted only if its checksum
//     and its (count, last id) agree with that file (docs/VECTOR_FORMAT.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include <usearch/index_dense.hpp>

#include "common/hash.h"
#include "vector/helper_thread.h"
#include "vector/vector_store.h"

namespace spanguard {

class Embedder;
class EmbedScratch;
class SpanSource;
namespace vector_detail {
struct ScanQuery;
}

enum class VectorScalar : uint8_t { kF32 = 1, kF16 = 2, kI8 = 3 };
/// The strategy above `exact_below` (the value is the snapshot header's byte 18).
enum class VectorAnn : uint8_t { kHnsw = 1, kBinary = 2 };

struct VectorIndexOptions {
  uint32_t dims = 256;
  VectorScalar scalar = VectorScalar::kF16;
  /// Namespaces with fewer vectors than this are searched exactly.
  uint64_t exact_below = 0;
  VectorAnn ann = VectorAnn::kBinary;
  /// binary: candidates reranked exactly per query = max(rerank_min, size * rerank_share).
  size_t rerank_min = 512;
  double rerank_share = 1.0 / 512;
  /// binary: namespaces of at least this many rows are partitioned (an inverted file).
  /// Default: never. On the bench's generated vectors the nearest lists must hold a fifth of
  /// the rows for 0.95 of a quote's exact top-10 (natural questions: 0.89 at 10^7), against
  /// the full signature scan's 0.99: the partitioned search is a speed option a host
  /// chooses, not the default's trade.
  uint64_t partition_above = ~0ull;
  /// binary, partitioned: a query scans the nearest lists until it has taken
  /// max(probe_min, size * probe_share) rows, and reranks the `probe_rerank` of them nearest
  /// by the estimated distance exactly (docs/VECTOR_FORMAT.md, "Partitions", for the sweep).
  /// A fifth: on the bench's generated vectors at 10^7 the nearest lists to 1/16 of the rows
  /// hold 0.86 of a quote's exact top-10, to 1/8 0.94, to 1/5 0.97.
  size_t probe_min = 16384;
  double probe_share = 1.0 / 5;
  /// binary, partitioned: past the nearest list, a list is taken only while its centroid
  /// lies within this cosine distance of the nearest centroid's (and the rows taken are
  /// under the cap above). A query inside a cluster takes the few lists around it; a query
  /// between clusters, or on data with none, takes more, up to the cap. Infinity: the cap
  /// alone decides.
  double probe_margin = std::numeric_limits<double>::infinity();
  /// binary, partitioned: the pool reranked per query, whatever the namespace's size: the
  /// rerank reads one row at random per candidate, so a pool that grows with the namespace
  /// makes the search linear again (at 10^7, size / 128 is 78,125 random rows a query).
  size_t probe_rerank = 4096;
  /// binary, partitioned: threads a search scans its lists on, the caller's and a helper
  /// (helper_thread.h), once it probes at least kSplitMinRows rows. 1: the caller alone.
  /// The answer is the same either way.
  size_t search_threads = 2;
  /// hnsw graph parameters (unused by the binary strategy).
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
  /// binary, f16: read the rows in place from the vectors file's mapping instead of holding
  /// a copy in anonymous memory (same bytes, same answers). False keeps the copy (tests
  /// compare the two).
  bool map_rows = true;
};

const char* VectorScalarName(VectorScalar s) noexcept;
const char* VectorAnnName(VectorAnn a) noexcept;
/// The best SIMD target NumKong dispatches to on this CPU (e.g. "sapphire", "skylake").
const char* SimdIsaName() noexcept;

/// Growable zero-filled byte buffer on anonymous memory advised for transparent huge pages:
/// the binary strategy's rerank reads rows at random, and with 4 KiB pages nearly every row
/// is a TLB miss. Grows by doubling (a new mapping, one copy).
class RowBuffer {
 public:
  RowBuffer() = default;
  ~RowBuffer();
  RowBuffer(RowBuffer&& o) noexcept;
  RowBuffer& operator=(RowBuffer&& o) noexcept;
  RowBuffer(const RowBuffer&) = delete;
  RowBuffer& operator=(const RowBuffer&) = delete;
  unsigned char* data() noexcept { return data_; }
  const unsigned char* data() const noexcept { return data_; }
  size_t size() const noexcept { return size_; }
  size_t capacity() const noexcept { return capacity_; }
  /// Grows to `bytes` (new bytes are zero); throws NativeError IO_ERROR when out of memory.
  void resize(size_t bytes);
  void clear() noexcept;

 private:
  unsigned char* data_ = nullptr;
  size_t size_ = 0;
  size_t capacity_ = 0;
};

class VectorIndex {
 public:
  using index_t = unum::usearch::index_dense_gt<uint64_t, uint32_t>;

  /// The coarse partition of a binary namespace (docs/VECTOR_FORMAT.md, "Partitions").
  struct Partition {
    uint32_t lists = 0;
    uint64_t built_rows = 0;                   ///< rows when it was built
    uint64_t built_largest = 0;                ///< the largest list then
    uint64_t largest = 0;                      ///< the largest list now
    std::vector<float> centroids;              ///< lists x dims, unit f32
    std::vector<unsigned char> centroid_rows;  ///< the centroids in the scalar kind (search)
    std::vector<uint64_t> centroid_codes;      ///< the centroids' signatures, blocks of 8
    std::vector<std::vector<uint32_t>> rows;   ///< per list: row numbers
    /// Per list, its rows' signatures kept as Flat's are (vector_internal.h CodeLayout): a
    /// search's first pass reads only the lead words of the lists it takes, the tails only
    /// for the few rows it keeps.
    std::vector<std::vector<uint64_t>> codes;
    std::vector<std::vector<uint64_t>> tails;
  };

  /// The binary strategy's storage: one row per distinct vector, in file order.
  struct Flat {
    std::vector<uint64_t> keys;  ///< row -> span id
    std::vector<uint32_t> nth;   ///< row -> which vector of its kind in the vectors file
    /// row_bytes() per row: the unit vector in the scalar kind. Empty when the rows are read
    /// in place from the vectors file (rows_mapped_): then `rec` says where.
    RowBuffer rows;
    std::vector<uint32_t> rec;  ///< rows_mapped_: row -> record number in the vectors file
    /// Signatures, split so that the scan's first pass reads half their bytes: `codes` holds
    /// each signature's first lead_words_ words in blocks of 8 rows, word-major inside a
    /// block (word w of rows 0..7 is contiguous), so one 512-bit load compares a query word
    /// against 8 rows; `tails` holds the other tail_words_ words row-major (a row's in one
    /// cache line), read only for the rows the first pass keeps. A snapshot holds whole
    /// signatures in blocks of 8 (docs/VECTOR_FORMAT.md): they are split on load and joined
    /// on save. Both empty while the namespace is partitioned: the lists hold the signatures.
    RowBuffer codes;
    RowBuffer tails;
    std::unique_ptr<Partition> part;  ///< null: not partitioned
    size_t size() const noexcept { return keys.size(); }
  };

  struct Namespace {
    uint8_t kind = 0;                   ///< 1 raw, 2 summary
    bool hnsw = false;                  ///< which of the two below is in use
    index_t index;                      ///< hnsw only (a default index_t must not be touched)
    Flat flat;                          ///< binary only
    uint64_t covered = 0;               ///< vectors of this kind in the index (prefix of the file)
    bool dirty = false;                 ///< changed since the last snapshot
    std::string loaded_from = "empty";  ///< file | rebuilt | empty
    std::string snapshot_problem;       ///< why a snapshot was not trusted (empty if it was)
    /// Header CRC (offset 60) of the snapshot file this namespace last loaded or saved, 0
    /// when neither: it names the snapshot's content (the header holds the payload's CRC).
    uint32_t file_crc = 0;
    // Identical vectors are kept out of the graph. Agent transcripts repeat themselves (the
    // same tool output, the same instruction, hundreds of times), and an HNSW graph full of
    // zero-distance duplicates loses its way: measured on real turns, recall@10 fell from
    // 0.96 to 0.78. The first copy is indexed; later copies become aliases of its key and
    // come back with it, at the same distance.
    std::unordered_map<uint64_t, uint64_t> by_content;            ///< vector hash -> canonical key
    std::unordered_map<uint64_t, std::vector<uint64_t>> aliases;  ///< canonical key -> later keys
    /// One bit per canonical key of `aliases` (by Fmix64 of the key; at least 16 bits per key):
    /// a search reads it before the map, so a hit without aliases (nearly every one) costs a
    /// bit read in a cache-resident array, not a lookup that misses the cache twice.
    std::vector<uint64_t> alias_bits;
    bool MayHaveAliases(uint64_t key) const {
      if (alias_bits.empty()) return false;
      const uint64_t b = Fmix64(key) & (alias_bits.size() * 64 - 1);
      return (alias_bits[b >> 6] >> (b & 63)) & 1;
    }
    /// After `key` gained an alias: its bit, or the whole set again when it is too small.
    void NoteAlias(uint64_t key) {
      if (alias_bits.size() * 64 < aliases.size() * 16) {
        RebuildAliasBits();
        return;
      }
      const uint64_t b = Fmix64(key) & (alias_bits.size() * 64 - 1);
      alias_bits[b >> 6] |= uint64_t(1) << (b & 63);
    }
    void RebuildAliasBits() {
      size_t words = 1;
      while (words * 64 < aliases.size() * 32) words *= 2;
      alias_bits.assign(aliases.empty() ? 0 : words, 0);
      for (const auto& entry : aliases) {
        const uint64_t b = Fmix64(entry.first) & (words * 64 - 1);
        alias_bits[b >> 6] |= uint64_t(1) << (b & 63);
      }
    }
    uint64_t duplicates = 0;  ///< vectors covered but not in the graph
    /// Distinct vectors held (graph nodes for hnsw, rows for binary).
    size_t size() const { return hnsw ? index.size() : flat.size(); }
  };

  /// Opens (or creates) the vectors file and both namespaces in `dir`.
  VectorIndex(std::string dir, const VectorIndexOptions& options);

  const VectorIndexOptions& options() const noexcept { return options_; }
  uint32_t dims() const noexcept { return options_.dims; }

  /// One past the highest span id processed (embedded, or seen and skipped by catchUp).
  uint64_t high_water() const noexcept { return high_water_; }

  /// Every span id of `kind` (1 raw, 2 summary) that has a vector, duplicates' aliases
  /// included, ascending: what `verify` compares with the log, id by id.
  void SpanIds(uint8_t kind, std::vector<uint64_t>* out) const;
  /// SpanIds' ids in no order, with repeats: the part that reads the index (idsAsync takes
  /// it under the index's lock and sorts after releasing it).
  void CollectSpanIds(uint8_t kind, std::vector<uint64_t>* out) const;

  /// Validates the whole batch (kinds, ids strictly increasing and >= high_water, finite)
  /// and only then appends it to the vectors file and adds it to the indexes.
  void Add(const uint64_t* ids, const uint8_t* kinds, const float* vectors, size_t n);

  /// Embeds records [max(high_water, first_id), next_id) of kinds raw/summary in batches,
  /// stores and indexes them, advances high_water. Returns the number of vectors added.
  size_t CatchUp(const SpanSource& source, const Embedder& embedder);

  /// One batch of a catch-up, embedded apart from storing it: a catch-up off the JS thread
  /// embeds (most of its work) without the index's lock, while searches read the index, and
  /// takes the lock only to store and index the vectors (Store). Reused from batch to batch.
  struct Embedded {
    std::vector<uint64_t> ids;
    std::vector<uint8_t> kinds;
    std::vector<uint8_t> last;  ///< 1 on a span's last window
    std::vector<float> vecs;
    uint64_t next = 0;  ///< one past the last record read: the high water once stored
    std::string texts;
    std::vector<std::pair<size_t, size_t>> windows, cuts;
    std::vector<std::unique_ptr<EmbedScratch>> scratch;
  };
  /// Embeds the next batch of records from `from` (at most kCatchUpSpans windows or
  /// kCatchUpBytes of text) below source.next_id() into `out`; out->next says where it
  /// stopped. Reads only the options: safe beside searches, not beside a change of the index.
  void EmbedBatch(const SpanSource& source, const Embedder& embedder, uint64_t from, Embedded* out) const;
  /// Throws DIMENSION_MISMATCH unless `embedder` makes vectors of the index's dimensions.
  void CheckEmbedder(const Embedder& embedder) const;
  /// Stores and indexes a batch EmbedBatch made from the high water, and advances the high
  /// water past it. Returns the number of vectors added.
  size_t Store(const Embedded& batch);

  /// Top-k spans by cosine distance in namespace `kind` (a span with several windows counts
  /// once, at its best window); returns how many were written.
  size_t Search(const float* query, size_t k, uint8_t kind, uint64_t* ids, float* distances) const;
  /// The same with the strategy forced: `exact`, or the index's `ann` (benchmarks and the
  /// agreement tests).
  size_t Search(const float* query, size_t k, uint8_t kind, bool exact, uint64_t* ids, float* distances) const;

  /// fsyncs the vectors file, then snapshots every changed namespace crash-safely.
  void Save();

  const Namespace& ns(uint8_t kind) const { return kind == VectorStore::kKindSummary ? summary_ : raw_; }
  const VectorStore& store() const { return *store_; }
  bool exact_for(uint8_t kind) const { return ns(kind).size() < options_.exact_below; }
  /// "exact", "binary" or "hnsw": what search() uses now for `kind`.
  const char* strategy(uint8_t kind) const { return exact_for(kind) ? "exact" : VectorAnnName(options_.ann); }
  size_t MemoryUsage() const;
  /// Lists of a partitioned binary namespace (0: not partitioned).
  uint32_t lists(uint8_t kind) const noexcept {
    const auto& p = ns(kind).flat.part;
    return p ? p->lists : 0;
  }
  uint64_t partitioned_rows(uint8_t kind) const noexcept {
    const auto& p = ns(kind).flat.part;
    return p ? p->built_rows : 0;
  }
  /// Signature bits per vector (binary strategy).
  size_t code_bits() const noexcept { return code_words_ * 64; }
  /// Whether the binary strategy reads its rows in place from the vectors file's mapping.
  bool rows_mapped() const noexcept { return rows_mapped_; }
  /// Bytes of rows held in anonymous memory (0 when they are read from the mapped file).
  size_t rows_heap_bytes() const noexcept { return raw_.flat.rows.capacity() + summary_.flat.rows.capacity(); }
  const char* isa_name() const noexcept { return metric_.isa_name(); }
  /// Partitioned searches since the open, the lists and rows they probed in all, the rows
  /// their first pass kept for the second, and how many searches scanned on two threads.
  struct ProbeCounts {
    uint64_t queries = 0;
    uint64_t lists = 0;
    uint64_t rows = 0;
    uint64_t shortlisted = 0;
    uint64_t split = 0;
  };
  ProbeCounts probe_counts() const noexcept { return probe_counts_; }

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
  /// Keys a search has emitted, past the first 32: open addressing, kNoKey empty (a span id
  /// is below 2^53), so a search allocates nothing for it once warm.
  static constexpr uint64_t kNoKey = ~uint64_t(0);
  mutable std::vector<uint64_t> seen_;
  std::vector<size_t> fresh_;     ///< index_rows: rows with new content
  std::vector<float> unit_rows_;  ///< index_rows: one normalized row per build thread
  mutable std::vector<float> unit_query_;
  std::vector<float> canonical_;  ///< StoreAndIndex: the batch as the vectors file holds it

  // Binary strategy. Rows are compared by `metric_` (the scalar kind's NumKong kernel, the
  // same one usearch uses); signatures are `rotations_` randomized Hadamard rotations of
  // the unit vector zero-padded to `pad_` dimensions, one bit per rotated coordinate.
  unum::usearch::metric_punned_t metric_;
  unum::usearch::casts_punned_t casts_;
  size_t row_bytes_ = 0;
  /// The rows are the vectors file's own bytes, read through its mapping, not a copy: an f16
  /// index over an f16 file (version 2), whose row of a vector is exactly the record's bytes
  /// (the record holds the f16 unit vector; normalizing it again moves no coordinate by half
  /// an f16 step, so it rounds back to the same half). f32 rows (normalized again, they differ
  /// from the file in the last bits) and i8 rows are kept in a RowBuffer.
  bool rows_mapped_ = false;
  /// Row `r` of a binary namespace, wherever it is held.
  const unsigned char* Row(const Flat& f, size_t r) const noexcept {
    return rows_mapped_ ? store_->mapped_vector(f.rec[r]) : f.rows.data() + r * row_bytes_;
  }
  size_t pad_ = 0;
  size_t rotations_ = 0;
  size_t code_words_ = 0;
  size_t lead_words_ = 0;                    ///< code_words_ / 2: the words of Flat::codes and Partition::codes
  size_t tail_words_ = 0;                    ///< the rest: the words of Flat::tails
  std::vector<float> rht_signs_;             ///< rotations_ x pad_, +1 / -1
  std::vector<float> rht_scratch_;           ///< pad_ per build thread, then one for queries
  mutable std::vector<uint16_t> scan_dist_;  ///< a search's estimated distances (ScanQuery)
  mutable std::vector<uint32_t> scan_hist_;  ///< their histogram
  mutable std::vector<uint32_t> cand_;
  mutable std::vector<unsigned char> query_row_;
  mutable std::vector<uint64_t> query_planes_;  ///< kQueryPlanes x code_words_
  mutable std::vector<uint64_t> shortlist_;     ///< (distance << 32 | row) of the rows the first pass kept
  mutable std::vector<float> query_coords_;     ///< the query's rotated coordinates (EncodeQuery)
  mutable std::vector<std::pair<float, uint32_t>> heap_;
  mutable std::vector<std::pair<float, uint32_t>> list_order_;
  mutable std::vector<uint32_t> taken_lists_;     ///< a partitioned search's lists, nearest first
  mutable std::vector<uint16_t> list_dist_;       ///< one list's estimated distances, per half
  mutable std::vector<float> rerank_dist_;        ///< the rerank's exact distances, per candidate
  mutable std::vector<const uint64_t*> tail_at_;  ///< a partitioned search's kept rows: their tail words
  mutable HelperThread helper_;                   ///< the second thread of a partitioned search
  mutable std::vector<uint32_t> scan_scratch_;
  mutable ProbeCounts probe_counts_;
  std::vector<uint64_t> fresh_codes_;  ///< index_rows: signatures of the fresh rows (partitioned)
  std::vector<uint32_t> fresh_lists_;  ///< index_rows: their lists
  /// Held by a search for its length and by a checkpoint while it swaps a new partition in:
  /// saveAsync runs on the thread pool while the JS thread may search.
  mutable std::mutex part_mu_;

  void SplitWindows(std::string_view text, std::vector<std::pair<size_t, size_t>>* out) const;
  Namespace& ns_mut(uint8_t kind) { return kind == VectorStore::kKindSummary ? summary_ : raw_; }
  std::string SnapshotPath(uint8_t kind) const;
  index_t MakeIndex() const;
  bool TryLoadSnapshot(Namespace& ns);
  void ResetNamespace(Namespace& ns);
  /// Writes rotation `r` of unit vector `v` to `out` (pad_ floats).
  void Rotate(const float* v, size_t r, float* out) const;
  /// Writes the signature of unit vector `v` (code_words_ words) using `scratch` (pad_ floats).
  void Encode(const float* v, uint64_t* out, float* scratch) const;
  /// Encodes the unit query for the signature scan: its rotations' coordinates into
  /// query_coords_, quantized as bit planes into query_planes_.
  vector_detail::ScanQuery EncodeQuery(const float* unit_query) const;
  void IndexRowsFlat(Namespace& ns, const uint64_t* ids, const float* vectors);
  /// Splits `rows` whole signatures in blocks of 8 (the snapshot's layout) into f.codes and
  /// f.tails (vector_internal.h CodeLayout).
  void SplitCodes(Flat& f, const unsigned char* blocks, size_t rows) const;
  /// Best `wanted` rows of the binary namespace, ascending by distance, into hits_*.
  size_t SearchFlat(const Namespace& ns, const float* unit_query, size_t wanted, bool exact) const;
  void EnsureCapacity(Namespace& ns, size_t extra);
  /// Adds rows to one namespace (parallel over 2 threads for big batches).
  void IndexRows(Namespace& ns, const uint64_t* ids, const float* vectors, size_t n);
  void SaveSnapshot(Namespace& ns);
  // Partitions (partition.cpp).
  bool PartitionDue(const Namespace& ns) const;
  /// Builds a partition of the namespace's rows beside the one in use, then swaps it in.
  void Repartition(Namespace& ns);
  std::unique_ptr<Partition> BuildPartition(const Namespace& ns) const;
  /// Fills `centroid_rows` and `centroid_codes` from `centroids`.
  void PrepareCentroids(Partition& p) const;
  /// Nearest list of a row (`row` in the scalar kind, `code` its signature): among the
  /// kShortlist centroids nearest by Hamming distance, the nearest by the kernel.
  uint32_t NearestList(const Partition& p, const unsigned char* row, const uint64_t* code, uint16_t* ham,
                       uint32_t* scratch) const;
  /// Appends row `r` with signature `code` (code_words_ words) to list `l`.
  void AppendToList(Partition& p, uint32_t l, uint32_t r, const uint64_t* code) const;
  size_t SearchPartitioned(const Flat& f, const vector_detail::ScanQuery& query, size_t wanted) const;
  /// Exact distances of the candidate rows (all rows when `cand` is null) to query_row_; the
  /// best `wanted`, ascending by (distance, row), into hits_*.
  /// `split`: the candidates' distances on two threads (a partitioned search's).
  size_t Rerank(const Flat& f, const uint32_t* cand, size_t n_cand, size_t wanted, bool split = false) const;
  /// Exact distances to query_row_ of rows cand[b..e) into out[b..e).
  void RowDistances(const Flat& f, const uint32_t* cand, size_t b, size_t e, float* out) const;
  /// Reads the rows (and keys) of a namespace loaded from a version-3 snapshot back from the
  /// vectors file; false (with `why`) when the file does not hold them.
  bool LoadRowsFromStore(Namespace& ns, Flat& f, uint64_t count, std::string* why);
  /// For a version-2 snapshot (rows, no ordinals): the ordinal of each row's vector.
  bool RecoverOrdinals(Namespace& ns, Flat& f, uint64_t count, std::string* why);
  void StoreAndIndex(const uint64_t* ids, const uint8_t* kinds, const uint8_t* last, const float* vectors, size_t n);
};

}  // namespace spanguard
