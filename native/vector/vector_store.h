// The append-only vectors file (docs/VECTOR_FORMAT.md): every vector ever added, both
// namespaces, with a CRC per record: version 2 holds each vector's direction as f16 (the unit
// vector), version 1 (older files, still read and appended to) the f32 as given. It is the authority on which vectors
// exist; the usearch indexes are snapshots derived from it, so any of them can be rebuilt without calling the embedder
// again.
//
// Records have a fixed size (dims is fixed per file), so record i lives at a computable
// offset and recovery is a linear scan that stops at the first bad record. Only (id, kind)
// of each record is kept in memory (12 bytes a vector); the vectors themselves stay on disk
// and are streamed back in chunks when an index is rebuilt or caught up, or read in place
// through a read-only mapping of the file (MapRecords): an f16 index reads its rows there
// instead of holding a copy of them (512 bytes a vector at 256 dims) in anonymous memory.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace spanguard {

/// fsync that reports failure as FSYNC_FAILED, never retried (see VECTOR_FORMAT.md).
void VectorFsyncOrThrow(int fd, const std::string& path);
/// fsync of a directory, so a rename or a created file is durable.
void VectorFsyncDir(const std::string& dir);

/// IEEE binary16 <-> binary32, round to nearest even (the vectors file's version-2 scalar).
uint16_t F32ToF16(float f) noexcept;
float F16ToF32(uint16_t h) noexcept;

class VectorStore {
 public:
  static constexpr size_t kHeaderBytes = 32;
  static constexpr uint8_t kKindRaw = 1;
  static constexpr uint8_t kKindSummary = 2;
  /// Record flag: this vector is the last of its span's (a span's vectors are contiguous).
  static constexpr uint8_t kFlagLast = 1;

  struct Recovery {
    std::string outcome = "clean";  ///< clean | torn-tail | corrupt
    uint64_t offset = 0;            ///< where the dropped bytes began (0 when clean)
    uint64_t dropped_bytes = 0;
  };

  /// Opens or creates `path` for `dims`-wide vectors; truncates a bad tail (see Recovery).
  /// Throws NativeError: IO_ERROR, CORRUPT (bad header), DIMENSION_MISMATCH.
  /// `read_only`: no lock, no writes, a damaged tail is ignored rather than cut (a reader
  /// beside a live writer must not touch its file); append() throws READ_ONLY.
  /// `stored_f32`: a new file stores f32 unit vectors (for an f32 index), else f16; an
  /// existing file keeps what it stores.
  VectorStore(std::string path, uint32_t dims, bool read_only = false, bool stored_f32 = false);
  ~VectorStore();
  VectorStore(const VectorStore&) = delete;
  VectorStore& operator=(const VectorStore&) = delete;

  uint32_t dims() const noexcept { return dims_; }
  /// 2 (unit vectors, f16 or f32: what a new file is written in) or 1 (f32 as given).
  uint32_t version() const noexcept { return version_; }
  /// Bytes per stored coordinate: 2 (f16) or 4 (f32).
  uint32_t stored_bytes() const noexcept { return stored_bytes_; }
  size_t record_bytes() const noexcept { return record_bytes_; }
  const std::string& path() const noexcept { return path_; }
  uint64_t size() const noexcept { return ids_.size(); }
  uint64_t bytes() const noexcept { return kHeaderBytes + ids_.size() * record_bytes_; }
  bool empty() const noexcept { return ids_.empty(); }
  uint64_t last_id() const noexcept { return ids_.empty() ? 0 : ids_.back(); }
  const Recovery& recovery() const noexcept { return recovery_; }
  /// CRC32C chained over the CRCs of the records held, in file order: names the file's
  /// content, so the store's identity can tell this file from another store's with the same
  /// ids (docs/FORMAT.md, "Index identity").
  uint32_t digest() const noexcept { return digest_; }

  /// Vectors of one kind held (kind 1 or 2).
  uint64_t count(uint8_t kind) const noexcept { return by_kind_[kind == kKindSummary].size(); }
  /// Spans of one kind held (a span with several windows counts once).
  uint64_t span_count(uint8_t kind) const noexcept { return spans_[kind == kKindSummary]; }
  /// Id of the `nth` vector of `kind` (0-based), in file order.
  uint64_t id_of(uint8_t kind, uint64_t nth) const noexcept { return ids_[by_kind_[kind == kKindSummary][nth]]; }
  /// Record number (file order, both kinds) of the `nth` vector of `kind`.
  uint32_t record_of(uint8_t kind, uint64_t nth) const noexcept { return by_kind_[kind == kKindSummary][nth]; }

  /// Maps the file read-only (MAP_SHARED) and keeps it mapped as it grows: every record held
  /// can then be read in place with mapped_vector(). The mapping reserves twice the file's
  /// bytes of address space (at least 64 MiB), so appends rarely map again; when they do, the
  /// earlier mapping stays valid (a reader on another thread may still hold its pointers)
  /// until the store is destroyed, its resident pages dropped. Pages are resident only once
  /// read: appends write with pwrite, not through the map. False when the file cannot be
  /// mapped (a reader that found no file): the caller keeps its own copy of the vectors then.
  bool MapRecords();
  bool mapped() const noexcept { return map_ != nullptr; }
  /// The stored vector of record `record` (its 2·dims or 4·dims bytes), in place in the
  /// mapping. Only for records held (record < size()) after MapRecords().
  const unsigned char* mapped_vector(uint64_t record) const noexcept {
    return map_ + kHeaderBytes + record * record_bytes_ + 16;
  }

  /// The vectors as this file holds them, read back as f32: version 2 the unit vector (rounded
  /// to f16 in an f16 file), version 1 the vector as given. The index indexes this form, so what it builds
  /// from an add and what it rebuilds from the file are the same.
  void Canonicalize(const float* in, float* out, size_t n) const noexcept;

  /// Appends a batch the caller has validated (and canonicalized) with one write. A span may own several
  /// consecutive vectors (windows of a long text): they share its id and only the last one
  /// has `last[i]` set (`last == nullptr`: every vector is its span's only one). Ids grow
  /// strictly from span to span, above last_id(); kinds are 1/2; vectors finite. On a short
  /// or failed write the file is cut back to its previous length and IO_ERROR is thrown.
  void Append(const uint64_t* ids, const uint8_t* kinds, const uint8_t* last, const float* vectors, size_t n);

  /// Streams the vectors of `kind` numbered [from_nth, to_nth) (to the end by default), in
  /// file order, calling `fn(ids, vectors, n)` per chunk (vectors row-major n x dims, in the
  /// canonical form). Reads are chunked so memory stays bounded whatever the file size.
  /// Re-checks each record's CRC.
  template <typename Fn>
  void ForEach(uint8_t kind, uint64_t from_nth, Fn&& fn, uint64_t to_nth = ~0ull) const;

  /// fsync the file (FSYNC_FAILED on failure; sticky: later appends are refused).
  void Sync();

 private:
  std::string path_;
  uint32_t dims_;
  uint32_t version_ = 2;
  uint32_t stored_bytes_ = 2;
  size_t record_bytes_;
  bool read_only_ = false;
  int fd_ = -1;
  bool failed_ = false;               ///< an fsync failed: the file's durable state is unknown
  std::vector<uint64_t> ids_;         ///< id of record i
  std::vector<uint32_t> by_kind_[2];  ///< record indices per namespace (raw, summary)
  uint64_t spans_[2] = {0, 0};        ///< records flagged last, per namespace
  Recovery recovery_;
  uint32_t digest_ = 0;  ///< see digest()
  std::vector<unsigned char> write_buf_;
  const unsigned char* map_ = nullptr;                                 ///< MapRecords(): the file, read-only
  size_t map_len_ = 0;                                                 ///< bytes of address space map_ covers
  std::vector<std::pair<const unsigned char*, size_t>> retired_maps_;  ///< earlier mappings, unmapped at destruction

  /// Maps again when the records held reach past the mapping.
  void GrowMap();

  void OpenAndRecover();
  void ReadChunk(uint64_t first_record, uint64_t count, unsigned char* out) const;
  /// The vector of a record, as f32 (the canonical form).
  void Decode(const unsigned char* record, float* out) const noexcept;
  [[noreturn]] void FailIo(const std::string& what, uint64_t offset, int err) const;
};

template <typename Fn>
void VectorStore::ForEach(uint8_t kind, uint64_t from_nth, Fn&& fn, uint64_t to_nth) const {
  const std::vector<uint32_t>& rec = by_kind_[kind == kKindSummary];
  const uint64_t end = std::min<uint64_t>(to_nth, rec.size());
  if (from_nth >= end) return;
  constexpr uint64_t kChunk = 4096;
  std::vector<unsigned char> raw;
  std::vector<uint64_t> ids;
  std::vector<float> vecs;
  uint64_t i = from_nth;
  while (i < end) {
    // One contiguous read spanning records [rec[i], rec[last]] of the file.
    uint64_t first = rec[i];
    uint64_t last_nth = i;
    while (last_nth + 1 < end && rec[last_nth + 1] - first < kChunk) ++last_nth;
    uint64_t span = rec[last_nth] - first + 1;
    raw.resize(span * record_bytes_);
    ReadChunk(first, span, raw.data());
    ids.clear();
    vecs.resize((last_nth - i + 1) * dims_);
    size_t out = 0;
    for (uint64_t t = i; t <= last_nth; ++t, ++out) {
      const unsigned char* r = raw.data() + (rec[t] - first) * record_bytes_;
      uint64_t id;
      std::memcpy(&id, r, 8);
      ids.push_back(id);
      Decode(r, vecs.data() + out * dims_);
    }
    fn(ids.data(), vecs.data(), static_cast<size_t>(out));
    i = last_nth + 1;
  }
}

}  // namespace spanguard
