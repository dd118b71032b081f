// Helpers the span log's source files share: layout constants, the zero page, the record
// encoder and the scanner recovery and readers both walk with. Private to native/log/.
#pragma once

#include <sys/types.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "common/crc32c.h"
#include "common/errors.h"
#include "common/io_seam.h"
#include "log/span_log.h"

namespace spanguard {
namespace log_detail {

using format::RecordHeader;
using format::RecordSize;
using format::SegmentHeader;

constexpr uint64_t kOffsetBits = 40;
constexpr uint64_t kStagingPrefault = uint64_t{1} << 20;
// Entries of the id -> offset table a writer has room for from open (8 bytes each: 512 KiB
// of address space, committed as used).
constexpr size_t kOffsetsAhead = size_t{1} << 16;
constexpr uint64_t kOffsetMask = (uint64_t{1} << kOffsetBits) - 1;
// `sync`/`group` keep this many zero bytes written ahead of the last record. An fdatasync
// after a write that extends the file must also write the inode (its size) and, for fresh
// blocks, the allocation metadata; over blocks already allocated and zeroed it writes the
// data and flushes the cache, nothing else. The log bench records both cycles
// (info.group64Ceiling: 273-353 µs extending, 181-198 µs over zeros on a 2-vCPU VM,
// ext4 without a journal on virtio-blk). The chunk: in a standalone native loop of 26 KB
// writes + fdatasync, 256 KiB and 1 MiB ahead gave 175-185 µs a cycle, 4 MiB 250-265 µs
// (the fdatasync after each extension writes the zeros too).
constexpr uint64_t kPrefillChunk = uint64_t{1} << 20;
// `none` mode reserves a segment's blocks this far ahead of its writes (fallocate with
// KEEP_SIZE: unwritten extents past the end of the file). A buffered write into a reserved
// range skips ext4's delayed-allocation bookkeeping for every page it adds, and writeback
// finds the blocks already allocated. 32 MiB rather than 8: at 10^6 spans, 8 MiB calls cost
// 0.6-0.7 ms each (they wait on the writeback converting the range before them), 114 per
// two 400 MB runs, 64-74 ms; 32 MiB calls cost 4-7 ms for those runs and the appends ran
// at 2.04-2.08 GB/s instead of 1.81-1.90 (a standalone loop; no change at 10^5, where the
// calls are cheap either way).
constexpr uint64_t kPreallocChunk = uint64_t{32} << 20;
// Zero-initialized and never written, so it costs .bss, not bytes in the binary.
alignas(64) inline uint8_t g_zeros[kPrefillChunk];

inline bool AllZero(const uint8_t* p, size_t n) {
  // Word at a time: a crashed sync/group writer leaves up to kPrefillChunk zero bytes that
  // recovery and readers walk over.
  size_t i = 0;
  uint64_t acc = 0;
  for (; i + 64 <= n; i += 64) {
    for (size_t k = 0; k < 64; k += 8) {
      uint64_t w;
      std::memcpy(&w, p + i + k, 8);
      acc |= w;
    }
    if (acc != 0) return false;
  }
  for (; i < n; ++i) acc |= p[i];
  return acc == 0;
}

inline std::string ErrnoText(int err) { return std::string(std::strerror(err)); }

// Reads [from, to) of `fd` into *out with pread. Readers scan a segment the writer may cut
// back (its zero prefill, at a roll or close) this way: a read past the new end comes back
// short, where touching a mapping past it would raise SIGBUS. Returns the bytes read.
inline uint64_t ReadRange(int fd, uint64_t from, uint64_t to, std::vector<uint8_t>* out) {
  out->resize(static_cast<size_t>(to - from));
  uint64_t done = 0;
  while (from + done < to) {
    const ssize_t n =
        ::pread(fd, out->data() + done, static_cast<size_t>(to - from - done), static_cast<off_t>(from + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<uint64_t>(n);
  }
  out->resize(static_cast<size_t>(done));
  return done;
}

// Bytes [base, end) of a segment, held at `p` (p[0] is the byte at offset `base`): a whole
// mapping (base 0) or a tail read with pread (base = where the read began). Offsets stay
// absolute, so `synced end` and alignment checks mean the same either way.
struct SegmentBytes {
  const uint8_t* p;
  uint64_t base;
  uint64_t end;
  const uint8_t* at(uint64_t off) const { return p + (off - base); }
};

// Returns the record size when a structurally valid, CRC-correct record starts at `off`
// (its id is not checked here), else 0. Reads only [b.base, b.end); off >= b.base.
uint64_t ValidRecordAt(const SegmentBytes& b, uint64_t off, RecordHeader* h);

// The resumable part of recovery: walks records from `start` expecting `expected_id`.
// Fills r (records relative to start) and offsets; see FORMAT.md for the rules.
void ScanRecords(const SegmentBytes& b, uint64_t start, uint64_t expected_id, std::vector<uint64_t>* offsets,
                 RecoveryResult* r);

inline uint64_t EncodeRecordImpl(uint8_t* out, uint64_t id, const RecordInput& r, uint8_t internal_flags,
                                 uint64_t synced_end, const char** bad_what, size_t* bad_at) {
  const uint64_t payload = r.text_len + r.meta_len;
  const uint64_t rs = RecordSize(payload);
  RecordHeader h{};
  h.payload_len = static_cast<uint32_t>(payload);
  h.id = id;
  h.kind = r.kind;
  h.flags = static_cast<uint8_t>(r.flags | internal_flags);
  h.role = r.role;
  h.text_len = static_cast<uint32_t>(r.text_len);
  h.turn_start = r.turn_start;
  h.turn_end = r.turn_end;
  h.timestamp_ms = r.timestamp_ms;
  h.tokens = r.tokens;
  h.marker = format::kRecordMarker;
  h.synced_end = synced_end;
  // The zero padding (0..7 bytes) lies in the record's last 8 bytes: zero them first (the
  // header and payload then overwrite what is theirs) instead of a variable-length memset.
  const uint64_t zero = 0;
  std::memcpy(out + rs - 8, &zero, 8);
  std::memcpy(out, &h, sizeof h);
  // The copy tells whether the caller's bytes were all ASCII (then they are UTF-8 with no
  // more work); the CRC then runs once over the whole record, which is still in L1. The
  // UTF-8 check reads the copy, not the caller's bytes, which another thread may be
  // changing (a SharedArrayBuffer): what is checked is what is stored.
  if (r.text_len > 0 && CopyFindHigh(out + sizeof h, r.text, r.text_len) && r.check_utf8 &&
      !ValidUtf8(out + sizeof h, r.text_len, bad_at)) {
    *bad_what = "text";
    return 0;
  }
  if (r.meta_len > 0 && CopyFindHigh(out + sizeof h + r.text_len, r.meta, r.meta_len) && r.check_utf8 &&
      !ValidUtf8(out + sizeof h + r.text_len, r.meta_len, bad_at)) {
    *bad_what = "meta";
    return 0;
  }
  const uint32_t crc = Crc32c(0, out + 4, rs - 4);
  std::memcpy(out, &crc, sizeof crc);
  return rs;
}

/// What CheckRecord found wrong with a record; ThrowRecordFault says it.
enum class RecordFault : uint8_t {
  kNone,
  kKind,
  kReservedFlag,
  kTurnRange,
  kTurnSpan,
  kTurnOrder,
  kText,
  kMeta,
  kNoBytes
};

/// The checks every appended record passes, in the order their errors take precedence.
/// `has_raw`/`last_raw` carry the raw turn order in and out; on kTurnOrder *last_raw is still
/// the previous raw span's turn. No allocation, no throw: each chunk of a large batch runs it
/// on its own rows (ParallelBatch), and ValidateBatch turns its answer into the error.
inline RecordFault CheckRecord(const RecordInput& r, uint32_t max_text, bool* has_raw, int64_t* last_raw) {
  if (r.kind < 1 || r.kind > format::kKindMax) return RecordFault::kKind;
  if ((r.flags & format::kFlagBatchContinues) != 0) return RecordFault::kReservedFlag;
  if (r.turn_start < 0 || r.turn_end < 0 || r.turn_start > static_cast<int64_t>(format::kMaxId) ||
      r.turn_end > static_cast<int64_t>(format::kMaxId)) {
    return RecordFault::kTurnRange;
  }
  if (r.turn_start > r.turn_end) return RecordFault::kTurnSpan;
  if (r.kind == static_cast<uint8_t>(RecordKind::kRaw)) {
    if (*has_raw && r.turn_start < *last_raw) return RecordFault::kTurnOrder;
    *has_raw = true;
    *last_raw = r.turn_start;
  }
  if (r.text_len > max_text) return RecordFault::kText;
  if (r.meta_len > format::kMaxMetaBytes) return RecordFault::kMeta;
  if ((r.text_len > 0 && r.text == nullptr) || (r.meta_len > 0 && r.meta == nullptr)) return RecordFault::kNoBytes;
  return RecordFault::kNone;
}

/// The first record of a batch that failed its UTF-8 check, and where.
struct BadRecord {
  size_t record = 0;
  const char* what = nullptr;
  size_t at = 0;
};

/// Encodes records [from, to) of an n-record batch whose first id is `first_id`, record
/// `from` at `out`, each marked "batch continues" but the batch's last. False, with *bad,
/// at the first record that fails its UTF-8 check. Both the one-thread path (EncodeStaged)
/// and each chunk of a two-thread batch (ParallelBatch) encode through this.
inline bool EncodeRecords(uint8_t* out, const RecordInput* records, size_t from, size_t to, size_t n, uint64_t first_id,
                          uint64_t synced_end, BadRecord* bad) {
  for (size_t i = from; i < to; ++i) {
    const uint8_t internal = i + 1 < n ? format::kFlagBatchContinues : 0;
    const uint64_t rs = EncodeRecordImpl(out, first_id + i, records[i], internal, synced_end, &bad->what, &bad->at);
    if (rs == 0) {
      bad->record = i;
      return false;
    }
    out += rs;
  }
  return true;
}

inline NativeError InvalidUtf8(const BadRecord& bad) {
  return NativeError("INVALID_UTF8", "record " + std::to_string(bad.record) + ": " + bad.what +
                                         " is not valid UTF-8 (byte " + std::to_string(bad.at) + " of the record's " +
                                         bad.what + ")");
}

// A large Append() is split into chunks, cut at the first record boundary at or past each
// multiple of this in the file. Each of two threads claims a chunk, encodes it, waits until
// every chunk before it is in the file, and writes it itself (pwrite), up to that multiple,
// while the other thread encodes the next. Why the encoder writes: the kernel's copy then
// reads bytes from its own core's cache. Why the multiple: the page cache sizes a write's
// folios by its length and file alignment (ext4 has large folios since Linux 6.16), so
// writes cut at record boundaries get small folios at both ends, and a page split between
// two writes is zeroed by the first. A standalone C loop on a 2-vCPU VM (Linux 6.18, best of
// 300 rounds) wrote 4 MB as 10 batches of 412 KB copied into a staging buffer,
// each batch in pieces of up to 64 KiB: 638-708 µs in pieces that start where the batch
// starts, from a buffer the other core had filled; 479-486 µs in pieces cut at 64 KiB
// multiples of the file, from a buffer the writing core had filled (617-619 and 596-626 µs
// with only one of the two changes).
constexpr uint64_t kParallelChunk = uint64_t{64} << 10;
// Below this a batch is encoded on the appending thread alone: waking the second thread
// and splitting the write would cost more than they save.
constexpr uint64_t kParallelBatchBytes = uint64_t{256} << 10;
// How long the second thread polls for work before it sleeps. Between two batches of 1,000
// spans appended back to back the appender spends ~60 µs outside Append() (binding, JS);
// a sleeping thread took 40-70 µs to wake on a 2-vCPU VM, which is about one batch's whole
// encoding: with a 50 µs poll the helper slept before 90% of the batches of a 10^5-span run,
// with 300 µs before 2-18% (counted with debug counters, 4 runs).
constexpr auto kHelperSpin = std::chrono::microseconds(300);

/// pwrites buf[from, to) at file offset base + from, resuming short writes. 0 or errno (EIO
/// for a write that made no progress and set none). Both the one-thread and the two-thread
/// append write through this.
inline int PwriteRange(int fd, const uint8_t* buf, uint64_t from, uint64_t to, uint64_t base) {
  for (uint64_t at = from; at < to;) {
    const ssize_t w = Io().pwrite(fd, buf + at, static_cast<size_t>(to - at), static_cast<off_t>(base + at));
    if (w <= 0) return w < 0 && errno != 0 ? errno : EIO;
    at += static_cast<uint64_t>(w);
  }
  return 0;
}

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

}  // namespace log_detail
}  // namespace spanguard
