// The append-only, segmented, memory-mapped span log: the store's source of truth.
//
// Byte layout and recovery rules are specified in docs/FORMAT.md; the constants and structs
// below mirror it, and every size and field offset is static_assert'ed.
//
// Threading: a SpanLog is owned by the JS main thread. The only calls allowed from another
// thread are SyncFiles() (group-commit worker; it touches no log state) and
// SyncAndCheckpointForClose() (close worker, while the binding refuses every other call);
// see napi/span_log_binding.cpp. The log owns one more thread (AppendHelper, append_helper.h): it
// encodes and writes part of a large Append()'s batch, touching only the staging buffer and
// the last segment's file, and only during that Append, which waits for it before returning.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "log/span_source.h"

namespace spanguard {

namespace format {

inline constexpr char kSegmentMagic[8] = {'S', 'P', 'G', 'L', 'O', 'G', '\0', '\0'};
/// Segment headers written now; version 1 (no log start, no tag) is still read.
inline constexpr uint32_t kVersion = 2;
inline constexpr uint32_t kVersionNoExtent = 1;
inline constexpr size_t kSegmentHeaderSize = 64;
inline constexpr size_t kRecordHeaderSize = 64;
inline constexpr size_t kAlign = 8;
inline constexpr uint32_t kRecordMarker = 0x53504731u;
/// Internal flag: more records of the same append batch follow this one.
inline constexpr uint8_t kFlagBatchContinues = 0x80;
/// Internal kind: a durability checkpoint written at clean close; carries no span and no id.
inline constexpr uint8_t kKindCheckpoint = 0;
inline constexpr uint8_t kKindMax = 3;
/// Largest id ever assigned: ids cross to JS as exact doubles.
inline constexpr uint64_t kMaxId = (uint64_t{1} << 53) - 1;
/// Meta JSON budget per record (text has its own, configurable budget).
inline constexpr uint32_t kMaxMetaBytes = 16u << 20;

/// Segment header, 64 bytes at offset 0. Invariant: crc == Crc32c(bytes 0..59).
struct SegmentHeader {
  char magic[8];
  uint32_t version;
  uint32_t header_size;
  uint64_t first_id;
  int64_t created_ms;
  /// 0: every record before this segment was durable when it was created. Otherwise the
  /// first id that was not (a `none` roll, which does not wait for the old segment's
  /// fdatasync): recovery may then find that id and later ones torn in an earlier segment.
  uint64_t unsynced_from;
  /// Version 2: the log's first id, and its random non-zero tag (the same in every segment
  /// and in EXTENT). Version 1: zero.
  uint64_t log_start;
  uint64_t log_tag;
  uint32_t reserved;
  uint32_t crc;
};
static_assert(sizeof(SegmentHeader) == kSegmentHeaderSize, "segment header is 64 bytes");
static_assert(offsetof(SegmentHeader, first_id) == 16, "FORMAT.md: first id at 16");
static_assert(offsetof(SegmentHeader, unsynced_from) == 32, "FORMAT.md: unsynced from at 32");
static_assert(offsetof(SegmentHeader, log_start) == 40, "FORMAT.md: log start at 40");
static_assert(offsetof(SegmentHeader, log_tag) == 48, "FORMAT.md: log tag at 48");
static_assert(offsetof(SegmentHeader, crc) == 60, "FORMAT.md: header crc at 60");

/// EXTENT: two slots, each in a page (and a sector) of its own, written alternately.
inline constexpr char kExtentMagic[8] = {'S', 'P', 'G', 'E', 'X', 'T', '\0', '\0'};
inline constexpr uint32_t kExtentVersion = 1;
inline constexpr size_t kExtentSlotStride = 4096;
inline constexpr size_t kExtentFileSize = 2 * kExtentSlotStride;
/// One EXTENT slot, 64 bytes. Invariant: crc == Crc32c(bytes 0..59).
struct ExtentSlot {
  char magic[8];
  uint32_t version;
  uint32_t reserved0;
  uint64_t log_tag;
  uint64_t log_start;
  uint64_t seq;
  uint64_t durable_next;
  uint8_t reserved[12];
  uint32_t crc;
};
static_assert(sizeof(ExtentSlot) == 64, "an extent slot is 64 bytes");
static_assert(offsetof(ExtentSlot, log_tag) == 16, "FORMAT.md: extent log tag at 16");
static_assert(offsetof(ExtentSlot, log_start) == 24, "FORMAT.md: extent log start at 24");
static_assert(offsetof(ExtentSlot, seq) == 32, "FORMAT.md: extent sequence at 32");
static_assert(offsetof(ExtentSlot, durable_next) == 40, "FORMAT.md: durable next at 40");
static_assert(offsetof(ExtentSlot, crc) == 60, "FORMAT.md: extent crc at 60");

/// Record header, 64 bytes, followed by `payload_len` bytes (text then meta) and zero
/// padding to 8. Invariant: crc == Crc32c(bytes 4 .. RecordSize(payload_len) - 1).
struct RecordHeader {
  uint32_t crc;
  uint32_t payload_len;
  uint64_t id;
  uint8_t kind;
  uint8_t flags;
  uint8_t role;
  uint8_t reserved;
  uint32_t text_len;
  int64_t turn_start;
  int64_t turn_end;
  int64_t timestamp_ms;
  uint32_t tokens;
  uint32_t marker;
  uint64_t synced_end;
};
static_assert(sizeof(RecordHeader) == kRecordHeaderSize, "record header is 64 bytes");
static_assert(offsetof(RecordHeader, payload_len) == 4, "FORMAT.md: payload length at 4");
static_assert(offsetof(RecordHeader, id) == 8, "FORMAT.md: id at 8");
static_assert(offsetof(RecordHeader, kind) == 16, "FORMAT.md: kind at 16");
static_assert(offsetof(RecordHeader, text_len) == 20, "FORMAT.md: text length at 20");
static_assert(offsetof(RecordHeader, turn_start) == 24, "FORMAT.md: turn start at 24");
static_assert(offsetof(RecordHeader, timestamp_ms) == 40, "FORMAT.md: timestamp at 40");
static_assert(offsetof(RecordHeader, tokens) == 48, "FORMAT.md: tokens at 48");
static_assert(offsetof(RecordHeader, marker) == 52, "FORMAT.md: marker at 52");
static_assert(offsetof(RecordHeader, synced_end) == 56, "FORMAT.md: synced end at 56");
static_assert(kRecordHeaderSize % kAlign == 0 && kSegmentHeaderSize % kAlign == 0, "records stay aligned");

/// Size on disk of a record with `payload_len` payload bytes.
constexpr uint64_t RecordSize(uint64_t payload_len) {
  return (kRecordHeaderSize + payload_len + (kAlign - 1)) & ~uint64_t{kAlign - 1};
}

}  // namespace format

enum class RecoveryOutcome : uint8_t { kClean, kTornTail, kCorrupt };
const char* RecoveryOutcomeName(RecoveryOutcome outcome);

/// What recovery found in one segment's bytes.
struct RecoveryResult {
  RecoveryOutcome outcome = RecoveryOutcome::kClean;
  /// End of the last valid, batch-complete record: what a writer truncates to.
  uint64_t valid_end = 0;
  /// Id-bearing records before valid_end.
  uint64_t records = 0;
  uint64_t first_id = 0;
  /// Where the problem starts (torn tail or corruption); -1 when clean.
  int64_t error_offset = -1;
  std::string message;
  /// Largest turn_start of a raw record in the segment (turn order carries across opens).
  bool has_raw = false;
  int64_t last_raw_turn_start = 0;
  /// The header's unsynced_from (0 when the header is bad).
  uint64_t unsynced_from = 0;
  /// A record before valid_end is a checkpoint or stamps a synced_end past the header: the
  /// writer fdatasynced this segment, which it does only once every earlier one is durable.
  bool durable_mark = false;
  /// The header's version, log start and tag (0 and 0 in version 1, or when it is bad).
  uint32_t version = 0;
  uint64_t log_start = 0;
  uint64_t log_tag = 0;
};

/// Recovery over one segment's bytes (docs/FORMAT.md, "Recovery"). Pure and total: reads
/// only [data, data + size), never throws, any byte string is a valid input. When
/// `offsets` is given it receives the offset of every id-bearing record up to valid_end.
RecoveryResult RecoverSegment(const uint8_t* data, size_t size, std::vector<uint64_t>* offsets = nullptr);

/// One segment as an open found it, for the decision across segments.
struct SegmentFinding {
  uint64_t first_id = 0;  ///< from the file name
  RecoveryResult result;  ///< RecoverSegment over the file's bytes
};

/// What an open does with the segments it found (docs/FORMAT.md, "Across segments").
struct LogRecoveryPlan {
  /// Segments [0, keep) stay, the last of them cut to its valid end when that is short of
  /// its file; segments [keep, n) are the torn tail of a `none` roll and go.
  size_t keep = 0;
  bool corrupt = false;
  size_t corrupt_segment = 0;
  uint64_t corrupt_offset = 0;
  /// The damage was found through EXTENT and concerns that file, not a segment.
  bool corrupt_extent = false;
  /// The log ends below EXTENT's durable next (records or segments after it are missing).
  bool durable_end_short = false;
  std::string message;
};

/// The decision across segments, pure over the findings in segment order: which segments
/// stay, or which damage is corruption. A segment other than the last may be short only
/// when every later segment was created by a `none` roll before the lost records were
/// durable (unsynced_from at or before them) and none of them proves a later fdatasync.
LogRecoveryPlan PlanLogRecovery(const std::vector<SegmentFinding>& segments);

/// EXTENT as read (docs/FORMAT.md, "Extent").
struct LogExtent {
  bool present = false;  ///< the file exists with a non-zero length
  bool valid = false;    ///< one of its slots checks out (the newest one is below)
  uint64_t log_tag = 0;
  uint64_t log_start = 0;
  uint64_t seq = 0;
  uint64_t durable_next = 0;
};
/// Decodes EXTENT's bytes: the valid slot with the larger sequence number. Pure and total.
LogExtent DecodeExtent(const uint8_t* data, size_t size);
/// Writes one 64-byte slot at `out`.
void EncodeExtentSlot(uint8_t* out, const LogExtent& x);
/// The extent checks over a plan PlanLogRecovery made (docs/FORMAT.md, "Extent"): `plan`
/// unchanged when they pass, else a corrupt plan naming the segment (or EXTENT) and offset.
/// Pure. A plan that is already corrupt is returned as it is.
LogRecoveryPlan CheckLogExtent(const LogExtent& extent, const std::vector<SegmentFinding>& segments,
                               const LogRecoveryPlan& plan);
enum class Durability : uint8_t { kNone = 0, kGroup = 1, kSync = 2 };

struct RecordInput;
class AppendHelper;
struct ParallelBatch;

/// Writes one record (header, payload, zero padding, CRC) at `out`, which must have
/// RecordSize(text_len + meta_len) bytes; returns that size. `internal_flags` carries
/// kFlagBatchContinues. Shared by SpanLog::Append and the fuzzers' segment builder.
uint64_t EncodeRecord(uint8_t* out, uint64_t id, const RecordInput& r, uint8_t internal_flags, uint64_t synced_end);
/// Writes a 64-byte checkpoint record (kind 0: id field = the next id, no payload) at `out`.
/// Shared by SpanLog and the fuzzers' log builder.
void EncodeCheckpoint(uint8_t* out, uint64_t next_id, uint64_t synced_end);
/// Writes a 64-byte segment header at `out`: version 2 with the log's start and tag, or
/// version 1 when `log_tag` is 0 (what logs written before EXTENT hold; tests build them).
void EncodeSegmentHeader(uint8_t* out, uint64_t first_id, int64_t created_ms, uint64_t unsynced_from = 0,
                         uint64_t log_start = 0, uint64_t log_tag = 0);

struct SpanLogOptions {
  bool read_only = false;
  Durability durability = Durability::kSync;
  /// Roll threshold; a batch never spans segments (a larger batch gets a segment of its own).
  uint64_t segment_bytes = 64u << 20;
  uint32_t max_text_bytes = 16u << 20;
};

/// One record to append. `text` and `meta` must be valid UTF-8: the binding guarantees it
/// while converting from UTF-16; bytes from the caller set `check_utf8`, and the log checks
/// them while copying them into the record. `meta` may be null/empty.
struct RecordInput {
  uint8_t kind = 1;
  uint8_t flags = 0;
  uint8_t role = 0;
  int64_t turn_start = 0;
  int64_t turn_end = 0;
  int64_t timestamp_ms = 0;
  uint32_t tokens = 0;
  const char* text = nullptr;
  uint64_t text_len = 0;
  const char* meta = nullptr;
  uint64_t meta_len = 0;
  /// Text and meta are caller bytes: Append/Stage refuse the batch (INVALID_UTF8, nothing
  /// written) unless both are valid UTF-8.
  bool check_utf8 = false;
};

/// A batch as JS hands it to the binding, column by column: numbers as JS holds them (turns
/// and timestamps are doubles) and, in the byte form, texts and metas as one UTF-8 buffer
/// each with n + 1 offsets (slice i is data[offsets[i], offsets[i + 1])). FillRows turns rows
/// of it into RecordInput. Why not convert it all up front: a large AppendColumns() has each
/// of its two threads fill the rows it encodes, so the conversion (~8 µs of a 1,000-span
/// batch's ~77 on the appending thread, before the other thread had anything to do) runs
/// while the other thread writes. Every pointer must stay valid, and its memory unchanged,
/// until the append returns.
struct BatchColumns {
  /// A byte column; offsets == nullptr means absent (texts: the string form, whose records
  /// carry their text already; metas: none).
  struct Bytes {
    const char* data = nullptr;
    size_t len = 0;
    const uint32_t* offsets = nullptr;  ///< n + 1 entries
    // For messages: the column, its offsets, and a record's field ("text" / "meta").
    const char* name = "texts";
    const char* offsets_name = "textOffsets";
    const char* field = "text";
  };
  const uint8_t* kinds = nullptr;
  const uint8_t* flags = nullptr;
  const uint8_t* roles = nullptr;
  const double* turn_start = nullptr;
  const double* turn_end = nullptr;
  const double* timestamps = nullptr;
  const uint32_t* tokens = nullptr;
  Bytes texts;
  Bytes metas;
};

/// Rows [from, to) of `cols` into records[from, to): the numbers, and in the byte form the
/// text and meta slices (check_utf8 set; meta cleared where there is no meta column). In the
/// string form only the numbers are written. Returns `to`, or the first row that does not
/// convert, whose error FillRowsOrThrow gives.
size_t FillRows(const BatchColumns& cols, RecordInput* records, size_t from, size_t to, uint32_t max_text_bytes);
/// FillRows over all n rows, throwing the first problem in the order the binding checked
/// before the conversion moved here: every row's numbers (INVALID_TURN, INVALID_ARGUMENT),
/// then every text slice (INVALID_ARGUMENT, TEXT_TOO_LARGE), then every meta slice.
void FillRowsOrThrow(const BatchColumns& cols, RecordInput* records, size_t n, uint32_t max_text_bytes);

/// 2^53 - 1: JS's largest safe integer, the bound of turns and timestamps.
inline constexpr double kMaxSafeDouble = 9007199254740991.0;
/// A turn number from JS: an integer in [0, 2^53 - 1]. NaN and ±Infinity fail the range
/// test, and a double in range is an integer exactly when it survives the round trip through
/// int64. (Not std::floor/isfinite: without SSE4.1 in the x86-64 baseline std::floor is a
/// libm call, two per record on the append path.)
inline bool TurnValue(double d, int64_t* out) {
  if (!(d >= 0 && d <= kMaxSafeDouble)) return false;
  const int64_t v = static_cast<int64_t>(d);
  if (static_cast<double>(v) != d) return false;
  *out = v;
  return true;
}
/// A timestamp from JS: finite and at most 2^53 - 1 in magnitude (NaN fails both
/// comparisons), truncated toward zero.
inline bool TimestampValue(double t, int64_t* out) {
  if (!(t >= -kMaxSafeDouble && t <= kMaxSafeDouble)) return false;
  *out = static_cast<int64_t>(t);
  return true;
}
/// INVALID_TURN naming the record and the value.
[[noreturn]] void ThrowBadTurn(size_t record, double d);
/// INVALID_ARGUMENT naming the record.
[[noreturn]] void ThrowBadTimestamp(size_t record);

/// UTF-8 as RFC 3629 defines it: no overlong forms, no surrogates (U+D800..U+DFFF), nothing
/// above U+10FFFF, no truncated sequence. False with *bad_at = offset of the first byte of
/// the first bad sequence.
bool ValidUtf8(const uint8_t* s, size_t n, size_t* bad_at);

/// A record read back: SpanView plus the meta bytes (same lifetime rules as SpanView).
struct RecordView {
  SpanView span;
  const char* meta = nullptr;
  uint32_t meta_len = 0;
};

struct TornTailRecovery {
  std::string file;
  uint64_t offset = 0;
  uint64_t dropped_bytes = 0;
  /// Every dropped byte was zero: no part of a record was cut (a `sync`/`group` writer's
  /// zero prefill, or a size extension whose data never reached the disk).
  bool zeros_only = false;
};

struct VerifyProblem {
  std::string file;
  uint64_t offset = 0;
  std::string outcome;
  std::string message;
};

struct VerifyResult {
  bool ok = true;
  uint64_t records = 0;
  uint64_t bytes = 0;
  std::vector<VerifyProblem> problems;
};

/// What a group-commit worker must fdatasync to make everything written so far durable.
struct SyncTarget {
  /// `none` after a roll: sealed segments not yet known durable, fdatasynced first, in
  /// order (a segment is synced only once every earlier one is durable: FORMAT.md).
  std::vector<int> sealed_fds;
  int fd = -1;
  uint64_t seq = 0;          ///< written_seq() at the time of the request
  size_t segment = 0;        ///< index of the segment the fd belongs to
  uint64_t segment_end = 0;  ///< bytes of that segment covered by the sync
};

class SpanLog final : public SpanSource {
 public:
  /// Opens (creating if needed) the log in `dir`. Writers take the LOCK flock, delete
  /// leftover *.tmp segments, recover every segment, truncate a torn tail of the last one.
  /// Throws NativeError (LOCKED, CORRUPT, IO_ERROR, INVALID_OPTIONS).
  SpanLog(std::string dir, const SpanLogOptions& options);
  ~SpanLog() override;
  SpanLog(const SpanLog&) = delete;
  SpanLog& operator=(const SpanLog&) = delete;

  /// Validates the whole batch (nothing is written if any record is bad), encodes it into
  /// one buffer and writes it with one pwrite. In `sync` mode also fdatasyncs before
  /// returning. Returns the first assigned id (next_id() when n == 0). Anything staged
  /// (below) is written first, in the same pwrite. A batch of kParallelBatchBytes or more,
  /// with nothing staged, is encoded on two threads and written chunk by chunk as it is
  /// encoded (WriteBatchParallel); a bad record or a failed write then cuts the file back,
  /// so the outcome is the same: all of the batch, or none of it.
  uint64_t Append(const RecordInput* records, size_t n);
  /// Append() of a batch still in column form: `rows` is scratch for n records, filled by
  /// FillRows. A large batch is filled, checked and encoded chunk by chunk on both threads
  /// (its sizes are read from the offsets first), and the first problem found sends it back
  /// through FillRowsOrThrow and ValidateBatch, so the error is the one Append() would give
  /// for the converted rows; otherwise the rows are converted first and Append()ed.
  uint64_t AppendColumns(const BatchColumns& cols, RecordInput* rows, size_t n);

  // Staging (group commit): a batch is validated, given its ids and encoded at Stage();
  // every staged batch is then written with one pwrite by WriteStaged(). Staged records
  // are not readable and not counted by next_id()/bytes() until written; staged_next_id()
  // is the id the next staged batch gets. Each staged batch stays a batch on disk (its own
  // "batch continues" flags), so recovery keeps or drops each one whole.

  /// Validates and encodes the batch into the staging buffer (nothing is staged if any
  /// record is bad). Precondition: !StageNeedsWrite(bytes of this batch) — a roll never
  /// happens with records staged; Stage writes them first if it must, and then throws
  /// IO_ERROR on a write failure (WriteStaged's rollback has run). Returns the first id.
  uint64_t Stage(const RecordInput* records, size_t n);
  /// True when a batch of `batch_bytes` encoded bytes would roll the segment while records
  /// are staged: the caller writes the staged records first (WriteStaged) and learns of
  /// their failure itself.
  bool StageNeedsWrite(uint64_t batch_bytes) const;
  /// Writes every staged record with one pwrite. 0 on success; on failure the file is
  /// truncated back, every staged record is dropped (ids, turn order, bytes: as if never
  /// staged), *message says why, and the errno is returned. No-op (0) when nothing is staged.
  int WriteStaged(std::string* message);
  uint64_t staged_bytes() const { return staged_len_; }
  uint64_t staged_next_id() const { return staged_next_id_; }
  /// written_seq() plus the staged bytes: the stream position a staged batch reaches.
  uint64_t staged_seq() const { return written_seq_ + staged_len_; }

  // SpanSource
  uint64_t first_id() const override { return first_id_; }
  uint64_t next_id() const override { return next_id_; }
  bool Read(uint64_t id, SpanView* out) const override;

  /// Like read() with meta. Throws NativeError CORRUPT if the record fails its CRC on the
  /// way out (so does read(): a damaged record is never handed to an index), CLOSED after
  /// Release().
  bool Read(uint64_t id, RecordView* out) const;

  /// Readers: map what another process appended since the last refresh. Returns next_id().
  uint64_t Refresh();
  VerifyResult Verify() const;

  // Group commit / close support.
  uint64_t written_seq() const { return written_seq_; }
  uint64_t synced_seq() const { return synced_seq_; }
  SyncTarget PrepareSync() const;
  /// `sync`/`group`: tops up the zeros kept past the last record (docs/FORMAT.md, "Zero
  /// prefill") unless the last write was large. `sync` calls it inside Append; the group
  /// binding calls it right after handing an fdatasync to the worker, so the zero writes
  /// (~1 MiB every ~30 bursts) run while the main thread would wait anyway. Never fails:
  /// a prefill that cannot be written only costs speed.
  void PrefillAhead();
  /// Worker-thread safe: fdatasyncs the target's files through the seam, in order, stopping
  /// at the first failure; returns 0 or errno.
  static int SyncFiles(const SyncTarget& target);
  /// Main thread, after SyncFiles: err == 0 advances the durable point, else the log fails.
  void FinishSync(const SyncTarget& target, int err);
  /// For close: fdatasync anything unsynced and, if this writer wrote records, append a
  /// checkpoint record and fdatasync again. Runs on a worker while the JS side refuses
  /// every other call. Returns 0 or errno (the log is then failed).
  int SyncAndCheckpointForClose();
  /// Unmaps, closes fds, releases the lock. Idempotent.
  void Release();

  bool read_only() const { return options_.read_only; }
  bool failed() const { return failed_; }
  Durability durability() const { return options_.durability; }
  size_t segment_count() const { return segments_.size(); }
  uint64_t bytes() const;
  /// Drops this process's resident pages of every mapped segment but the last
  /// (madvise MADV_DONTNEED on the read mappings). Reads map every record they touch, so a
  /// catch-up that reads a 10^6-span log leaves all of it resident (hundreds of MB of RSS);
  /// the pages stay in the page cache, and a later read faults its page back in. Spans read
  /// before stay valid (the mapping is kept: only its page-table entries go). Returns the
  /// bytes of mapping advised.
  uint64_t ReleaseResident() const;
  const std::vector<TornTailRecovery>& recoveries() const { return recoveries_; }
  const std::string& dir() const { return dir_; }

 private:
  struct Segment {
    std::string path;
    uint64_t first_id = 0;
    uint64_t records = 0;
    uint64_t size = 0;  ///< valid bytes (the write end for the writer)
    /// Bytes the file is known to hold; a mapping never goes past it. Writer: the records
    /// plus its zero prefill. Reader: the records only (a live writer may cut the rest).
    uint64_t file_size = 0;
    int fd = -1;
    // Mapping state changes on reads, which are logically const.
    mutable const uint8_t* map = nullptr;
    mutable size_t map_len = 0;
    bool has_raw = false;
    int64_t last_raw_turn_start = 0;
    /// `none` mode: blocks are reserved (fallocate, KEEP_SIZE) up to here (Preallocate).
    uint64_t allocated_end = 0;
    /// Zeros (a prefill) or reserved blocks past the last record: what a roll or close cuts.
    bool HasTail() const { return file_size > size || allocated_end > size; }
  };

  void OpenExisting();
  /// Writer: creates EXTENT (tmp, fdatasync, rename, directory fsync) for a log starting at
  /// `log_start` and durable below `durable_next`, with a fresh tag.
  void CreateExtent(uint64_t log_start, uint64_t durable_next);
  /// Writer: records `durable_next` in the next EXTENT slot when it moved past the current
  /// one; fdatasyncs EXTENT when `sync`. Returns 0 or errno; a failed write only leaves an
  /// older, lower claim on disk.
  int WriteExtent(uint64_t durable_next, bool sync);
  /// Writer, after a durable point: the first id not durable (unless a `none` roll left a
  /// sealed segment unsynced) goes to EXTENT.
  void NoteDurable();
  /// Creates, names and fsyncs a new last segment (header stamped with `unsynced_from`).
  void CreateSegment(uint64_t first_id, uint64_t unsynced_from);
  void FsyncDir();
  /// Seals the last segment before a roll: cuts what lies past its records, then in `sync`
  /// and `group` fdatasyncs it; in `none` only notes what is not yet durable (unsynced_from_).
  /// Returns the new segment's unsynced_from.
  uint64_t SealForRoll();
  /// fdatasyncs the sealed segments not known durable, oldest first (flush, close and a
  /// writer's open). 0 or errno (the log is then failed).
  int SyncSealed();
  /// The id of the first record of segment `seg` at or after byte `off` (the next segment's
  /// first id when none is).
  uint64_t IdAtOffset(size_t seg, uint64_t off) const;
  /// Appends a checkpoint record (kind 0) stamped `synced_end` after the last segment's
  /// records, without syncing it. 0 or errno (the bytes are then cut back).
  int WriteCheckpoint(uint64_t synced_end);
  /// Readers: the segment at `path` has a header saying its predecessor was not yet durable
  /// (or no readable header), so a recovering writer may cut that predecessor.
  static bool SuccessorMayBeUnsynced(const std::string& path);
  /// `sync`/`group`: keeps zeroed bytes written ahead of s.size (kPrefillChunk in
  /// log_internal.h says why), so a durable append overwrites allocated blocks instead of
  /// extending the file. Invariant: [s.size, s.file_size) is all zero.
  void Prefill(Segment& s);
  /// `none` mode: reserves the file's blocks ahead of a write ending at `end` (kPreallocChunk
  /// in log_internal.h says why). The file size does not change; a roll or close cuts what is
  /// left past the last record (TruncateTo). Never fails: without it a write is only slower.
  void Preallocate(Segment& s, uint64_t end);
  /// ftruncate to `size` (dropping a mapping that would reach past it). 0 or errno.
  int TruncateTo(Segment& s, uint64_t size);
  /// Maps at least [0, need) of segment `s` (need <= s.size); remaps to s.size when short.
  void EnsureMapped(const Segment& s, uint64_t need) const;
  void Unmap(Segment& s);
  /// Reader: re-scan the last segment from its known end, then pick up new segments.
  void ScanTail(Segment& s, bool must_be_clean);
  /// Reader: preads [from, to) of a segment a live writer may still be filling and scans
  /// it with `scan` (ScanLive in span_log.cpp says why a "corrupt" verdict is re-checked).
  template <typename Scan>
  RecoveryResult ScanLive(const Segment& s, uint64_t from, uint64_t to, Scan scan) const;
  [[noreturn]] void FailSync(int err, const std::string& what);
  void RequireWritable() const;
  std::string WhereSuffix(const std::string& file, uint64_t offset) const;

  std::string dir_;
  SpanLogOptions options_;
  int lock_fd_ = -1;
  /// Writer: EXTENT, open for its slot writes; extent_ is what its current slot says.
  int extent_fd_ = -1;
  LogExtent extent_;
  std::vector<Segment> segments_;
  /// Dense id -> (segment index << 40 | offset). O(1) get; 8 bytes per record.
  std::vector<uint64_t> offsets_;
  uint64_t first_id_ = 1;
  uint64_t next_id_ = 1;
  bool has_raw_ = false;
  int64_t last_raw_turn_start_ = 0;
  uint64_t written_seq_ = 0;
  uint64_t synced_seq_ = 0;
  /// Bytes of the last segment known durable; goes into each record's synced_end.
  uint64_t durable_end_ = 0;
  /// `none`: 0 when every sealed segment is durable; else the first id not known durable,
  /// which lies in segment unsynced_segment_ (stamped into the headers of new segments).
  uint64_t unsynced_from_ = 0;
  size_t unsynced_segment_ = 0;
  /// A segment header says "not yet durable" and no checkpoint written after every sealed
  /// segment became durable has followed it: flush (FinishSync), close and a writer's open
  /// write one.
  bool needs_mark_ = false;
  bool failed_ = false;
  bool wrote_this_session_ = false;
  bool released_ = false;
  std::vector<TornTailRecovery> recoveries_;
  /// Readers: the bytes of a tail scan (pread; see ReadRange in log_internal.h).
  mutable std::vector<uint8_t> tail_buf_;
  /// Bytes of the last WriteStaged (PrefillAhead skips the zeros after a large write).
  uint64_t last_write_bytes_ = 0;
  /// Throws the first problem of the batch; returns its encoded size. `has_raw`/`last_raw`
  /// carry the raw turn order in and out.
  uint64_t ValidateBatch(const RecordInput* records, size_t n, bool* has_raw, int64_t* last_raw) const;
  /// Stage()'s first half (n > 0): id space, ValidateBatch, and the roll when the batch
  /// does not fit the segment. Returns the batch's encoded size.
  uint64_t BeginBatch(const RecordInput* records, size_t n, bool* has_raw, int64_t* last_raw);
  /// Stage()'s second half: encodes the validated batch after what is staged, on this thread.
  void EncodeStaged(const RecordInput* records, size_t n, uint64_t total, bool has_raw, int64_t last_raw);
  /// Append() of a large batch with nothing staged: this thread and helper_ each encode a
  /// chunk and write it once every chunk before it is written (kParallelChunk in log_internal.h says why).
  /// With `columns`, each chunk's rows are filled and checked first (AppendColumns), and
  /// has_raw/last_raw are where the batch starts; without, the batch was validated and they
  /// are where it ends. Throws as Append() would, with the file cut back to where the batch
  /// began.
  void WriteBatchParallel(RecordInput* records, size_t n, uint64_t total, bool has_raw, int64_t last_raw,
                          const BatchColumns* columns);
  /// Append()'s end, once the batch is in the file: under `sync`, the fdatasync.
  void FinishAppend(size_t n);
  /// The encoded size of a batch in byte form, read from its offsets; false if a slice is
  /// out of bounds or over its limit (FillRowsOrThrow then says which).
  bool ColumnsTotal(const BatchColumns& cols, size_t n, uint64_t* total) const;
  /// A batch of `total` bytes does not fit the last segment: BeginBatch rolls first.
  bool NeedsRoll(uint64_t total) const;
  /// A validated, encoded batch of n records (`total` bytes) counts as staged.
  void MarkStaged(size_t n, uint64_t total, bool has_raw, int64_t last_raw);
  /// Forgets every staged record (ids, turn order, bytes) and, with cut_file, takes back what
  /// of them reached the file (the log turns read-only if that cut fails).
  void DropStaged(bool cut_file);
  /// The IO_ERROR message of a failed write at the end of the last segment.
  std::string WriteFailure(int err) const;
  /// WriteStaged()'s bookkeeping once `total` staged bytes are in the file at seg.size.
  /// `offsets_added`: AddStagedOffsets() already put the staged records in offsets_.
  void CommitStaged(uint64_t total, bool offsets_added = false);
  /// Appends the staged records' entries to offsets_, as they will be once the bytes are
  /// written at seg.size. No allocation if offsets_ has room for them.
  void AddStagedOffsets();
  /// The log's second thread (its share of large batches) and the batch's reusable state,
  /// made when a writer opens. Null if the thread cannot be made or would share the
  /// caller's only CPU.
  AppendHelper* Helper();
  std::unique_ptr<AppendHelper> helper_;
  std::unique_ptr<ParallelBatch> parallel_;
  bool helper_failed_ = false;
  /// The file system refused fallocate: Preallocate stops trying.
  bool preallocate_ok_ = true;
  /// More than one core: a large batch is worth splitting across two threads.
  const bool parallel_encode_ = std::thread::hardware_concurrency() > 1;
  /// Grows the staging buffer (no zero fill) to hold `extra` more bytes.
  void ReserveStaging(uint64_t extra);
  /// Room for `extra` more staged sizes, so recording a batch's sizes cannot throw midway.
  void ReserveSizes(size_t extra);
  /// Staged state back to the written log's (ids, raw-turn order), encode buffer prefaulted.
  void RestartStaging();

  // Staging buffer: encoded records not yet written, starting at segments_.back().size.
  // Reused across appends: no allocation per append once it has grown to the burst size.
  std::unique_ptr<uint8_t[]> staged_;
  uint64_t staged_len_ = 0;
  uint64_t staged_cap_ = 0;
  /// Size of each staged id-bearing record, in order.
  std::vector<uint64_t> staged_sizes_;
  /// AppendColumns' copy of a large batch's text and meta offsets (read once from the caller).
  std::vector<uint32_t> offsets_copy_;
  std::vector<uint32_t> meta_offsets_copy_;
  uint64_t staged_next_id_ = 1;
  bool staged_has_raw_ = false;
  int64_t staged_last_raw_ = 0;
};

/// Segment file name for a first id: seg-<20 digits>.log.
std::string SegmentFileName(uint64_t first_id);

}  // namespace spanguard
