#include "span_log.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <random>
#include <thread>

#include "crc32c.h"
#include "errors.h"
#include "io_seam.h"

namespace spanguard {

using format::RecordHeader;
using format::RecordSize;
using format::SegmentHeader;

namespace {

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
// (info.group64Ceiling: 273-353 µs extending, 181-198 µs over zeros on the build machine,
// ext4 without a journal on virtio-blk). The chunk: in a throwaway native loop of 26 KB
// writes + fdatasync, 256 KiB and 1 MiB ahead gave 175-185 µs a cycle, 4 MiB 250-265 µs
// (the fdatasync after each extension writes the zeros too).
constexpr uint64_t kPrefillChunk = uint64_t{1} << 20;
// `none` mode reserves a segment's blocks this far ahead of its writes (fallocate with
// KEEP_SIZE: unwritten extents past the end of the file). A buffered write into a reserved
// range skips ext4's delayed-allocation bookkeeping for every page it adds, and writeback
// finds the blocks already allocated. 32 MiB rather than 8: at 10^6 spans, 8 MiB calls cost
// 0.6-0.7 ms each (they wait on the writeback converting the range before them), 114 per
// two 400 MB runs, 64-74 ms; 32 MiB calls cost 4-7 ms for those runs and the appends ran
// at 2.04-2.08 GB/s instead of 1.81-1.90 (a throwaway loop; no change at 10^5, where the
// calls are cheap either way).
constexpr uint64_t kPreallocChunk = uint64_t{32} << 20;
// Zero-initialized and never written, so it costs .bss, not bytes in the binary.
alignas(64) uint8_t g_zeros[kPrefillChunk];

bool AllZero(const uint8_t* p, size_t n) {
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

std::string ErrnoText(int err) { return std::string(std::strerror(err)); }

// Reads [from, to) of `fd` into *out with pread. Readers scan a segment the writer may cut
// back (its zero prefill, at a roll or close) this way: a read past the new end comes back
// short, where touching a mapping past it would raise SIGBUS. Returns the bytes read.
uint64_t ReadRange(int fd, uint64_t from, uint64_t to, std::vector<uint8_t>* out) {
  out->resize(static_cast<size_t>(to - from));
  uint64_t done = 0;
  while (from + done < to) {
    const ssize_t n = ::pread(fd, out->data() + done, static_cast<size_t>(to - from - done), static_cast<off_t>(from + done));
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
uint64_t ValidRecordAt(const SegmentBytes& b, uint64_t off, RecordHeader* h) {
  const uint64_t size = b.end;
  if (off % format::kAlign != 0 || off > size || size - off < format::kRecordHeaderSize) return 0;
  std::memcpy(h, b.at(off), sizeof(RecordHeader));
  if (h->marker != format::kRecordMarker) return 0;
  if (h->kind > format::kKindMax || h->reserved != 0) return 0;
  if (h->text_len > h->payload_len) return 0;
  const uint64_t rs = RecordSize(h->payload_len);
  if (rs > size - off) return 0;
  if (h->synced_end > off) return 0;
  if (h->turn_start < 0 || h->turn_start > h->turn_end) return 0;
  if (h->kind == format::kKindCheckpoint && (h->payload_len != 0 || h->flags != 0)) return 0;
  const uint64_t pad_at = off + format::kRecordHeaderSize + h->payload_len;
  if (!AllZero(b.at(pad_at), off + rs - pad_at)) return 0;
  if (Crc32c(0, b.at(off) + 4, rs - 4) != h->crc) return 0;
  return rs;
}

// The resumable part of recovery: walks records from `start` expecting `expected_id`.
// Fills r (records relative to start) and offsets; see FORMAT.md for the rules.
void ScanRecords(const SegmentBytes& b, uint64_t start, uint64_t expected_id, std::vector<uint64_t>* offsets,
                 RecoveryResult* r) {
  const uint64_t size = b.end;
  const size_t offsets_base = offsets != nullptr ? offsets->size() : 0;
  uint64_t off = start;
  uint64_t id = expected_id;
  uint64_t records = 0;
  bool has_raw = false;
  int64_t last_raw = 0;
  // The batch-complete point: what survives if the tail turns out torn.
  uint64_t commit_off = start, commit_records = 0;
  bool durable_mark = false, commit_durable_mark = false;
  bool commit_has_raw = false;
  int64_t commit_last_raw = 0;
  bool wrong_id = false;
  RecordHeader h;
  while (off < size) {
    const uint64_t rs = ValidRecordAt(b, off, &h);
    if (rs == 0) break;
    if (h.id != id) {
      wrong_id = true;
      break;
    }
    if (h.kind == format::kKindCheckpoint || h.synced_end > format::kSegmentHeaderSize) durable_mark = true;
    if (h.kind != format::kKindCheckpoint) {
      if (offsets != nullptr) offsets->push_back(off);
      ++records;
      ++id;
      if (h.kind == static_cast<uint8_t>(RecordKind::kRaw)) {
        has_raw = true;
        last_raw = h.turn_start;
      }
    }
    off += rs;
    if ((h.flags & format::kFlagBatchContinues) == 0) {
      commit_off = off;
      commit_records = records;
      commit_has_raw = has_raw;
      commit_last_raw = last_raw;
      commit_durable_mark = durable_mark;
    }
  }
  auto keep_committed = [&]() {
    r->valid_end = commit_off;
    r->records = commit_records;
    r->has_raw = commit_has_raw;
    r->last_raw_turn_start = commit_last_raw;
    r->durable_mark = r->durable_mark || commit_durable_mark;
    if (offsets != nullptr) offsets->resize(offsets_base + commit_records);
  };
  keep_committed();
  if (off == size && commit_off == size) {
    r->outcome = RecoveryOutcome::kClean;
    r->error_offset = -1;
    r->message = "clean";
    return;
  }
  r->error_offset = static_cast<int64_t>(off);
  if (wrong_id) {
    r->outcome = RecoveryOutcome::kCorrupt;
    r->message = "record with id " + std::to_string(h.id) + " where id " + std::to_string(id) +
                 " was expected (ids must be contiguous)";
    return;
  }
  if (off == size) {
    r->outcome = RecoveryOutcome::kTornTail;
    r->error_offset = static_cast<int64_t>(commit_off);
    r->message = "torn tail: the last batch is incomplete";
    return;
  }
  if (AllZero(b.at(off), size - off)) {
    r->outcome = RecoveryOutcome::kTornTail;
    r->message = "torn tail: " + std::to_string(size - off) + " zero bytes after the last record";
    return;
  }
  // A later valid record that was written when the bytes at `off` were already durable
  // proves the damage hit acknowledged data.
  for (uint64_t y = (off + format::kAlign) & ~uint64_t{format::kAlign - 1}; y + format::kRecordHeaderSize <= size;
       y += format::kAlign) {
    uint32_t marker;
    std::memcpy(&marker, b.at(y) + offsetof(RecordHeader, marker), sizeof marker);
    if (marker != format::kRecordMarker) continue;
    RecordHeader later;
    if (ValidRecordAt(b, y, &later) != 0 && later.synced_end > off) {
      r->outcome = RecoveryOutcome::kCorrupt;
      r->message = "invalid record followed by a valid record at offset " + std::to_string(y) +
                   " written after this one was durable";
      return;
    }
  }
  r->outcome = RecoveryOutcome::kTornTail;
  r->message = "torn tail: invalid bytes after the last durable record";
}

}  // namespace

const char* RecoveryOutcomeName(RecoveryOutcome outcome) {
  switch (outcome) {
    case RecoveryOutcome::kClean:
      return "clean";
    case RecoveryOutcome::kTornTail:
      return "torn-tail";
    case RecoveryOutcome::kCorrupt:
      return "corrupt";
  }
  return "corrupt";
}

RecoveryResult RecoverSegment(const uint8_t* data, size_t size, std::vector<uint64_t>* offsets) {
  RecoveryResult r;
  r.valid_end = 0;
  r.error_offset = 0;
  r.outcome = RecoveryOutcome::kCorrupt;
  if (data == nullptr || size < format::kSegmentHeaderSize) {
    r.message = "segment is shorter than its 64-byte header";
    return r;
  }
  SegmentHeader sh;
  std::memcpy(&sh, data, sizeof sh);
  if (std::memcmp(sh.magic, format::kSegmentMagic, sizeof sh.magic) != 0) {
    r.message = "bad segment magic";
    return r;
  }
  if (Crc32c(0, data, offsetof(SegmentHeader, crc)) != sh.crc) {
    r.message = "segment header fails its CRC";
    return r;
  }
  if ((sh.version != format::kVersion && sh.version != format::kVersionNoExtent) ||
      sh.header_size != format::kSegmentHeaderSize) {
    r.message = "unsupported segment version " + std::to_string(sh.version);
    return r;
  }
  if (sh.first_id == 0 || sh.first_id > format::kMaxId) {
    r.message = "segment first id out of range";
    return r;
  }
  if (sh.unsynced_from > sh.first_id) {
    r.message = "segment header's unsynced-from id is past its first id";
    return r;
  }
  if (sh.version == format::kVersion &&
      (sh.log_tag == 0 || sh.log_start == 0 || sh.log_start > sh.first_id || sh.reserved != 0)) {
    r.message = "segment header's log start or tag is out of range";
    return r;
  }
  r.first_id = sh.first_id;
  r.unsynced_from = sh.unsynced_from;
  r.version = sh.version;
  if (sh.version == format::kVersion) {
    r.log_start = sh.log_start;
    r.log_tag = sh.log_tag;
  }
  ScanRecords(SegmentBytes{data, 0, size}, format::kSegmentHeaderSize, sh.first_id, offsets, &r);
  return r;
}

LogRecoveryPlan PlanLogRecovery(const std::vector<SegmentFinding>& segments) {
  LogRecoveryPlan plan;
  const size_t n = segments.size();
  auto corrupt = [&](size_t i, int64_t offset, std::string message) {
    plan.keep = 0;
    plan.corrupt = true;
    plan.corrupt_segment = i;
    plan.corrupt_offset = offset < 0 ? 0 : static_cast<uint64_t>(offset);
    plan.message = std::move(message);
    return plan;
  };
  // Every segment after `i` was created while id `lost` was not yet durable, and none of
  // them shows an fdatasync made after its creation: nothing from `lost` on was ever
  // acknowledged as durable, so losing it is a torn tail, not damage.
  auto unsynced_after = [&](size_t i, uint64_t lost) {
    for (size_t j = i + 1; j < n; ++j) {
      const RecoveryResult& later = segments[j].result;
      // A later segment corrupt by its own rules had a durable record proven damaged: it was
      // fdatasynced, so everything before it was durable too.
      if (later.outcome == RecoveryOutcome::kCorrupt || later.unsynced_from == 0 || later.unsynced_from > lost ||
          later.durable_mark) {
        return false;
      }
    }
    return true;
  };
  uint64_t next = 0;
  for (size_t i = 0; i < n; ++i) {
    const SegmentFinding& seg = segments[i];
    const RecoveryResult& r = seg.result;
    if (r.outcome == RecoveryOutcome::kCorrupt) return corrupt(i, r.error_offset, "is corrupt: " + r.message);
    if (r.first_id != seg.first_id) {
      return corrupt(i, 16, "holds first id " + std::to_string(r.first_id) + ", its name says " + std::to_string(seg.first_id));
    }
    if (i > 0 && seg.first_id != next) {
      return corrupt(i, 16, "starts at id " + std::to_string(seg.first_id) + " but the previous segment ends before id " +
                                std::to_string(next));
    }
    next = seg.first_id + r.records;
    if (i + 1 == n) break;
    const uint64_t successor = segments[i + 1].first_id;
    if (next == successor) {
      if (r.outcome == RecoveryOutcome::kClean) continue;
      // Every record is there; past them, bytes no record vouches for (RecoverSegment said
      // torn): a `none` roll's cut — of reserved blocks, or of a failed write's bytes — that
      // never reached the disk. Cut again; the later segments stay.
      if (unsynced_after(i, next)) continue;
      return corrupt(i, r.error_offset, "is a sealed segment with invalid bytes after its last record: " + r.message);
    }
    if (next < successor && unsynced_after(i, next)) {
      plan.keep = i + 1;
      return plan;
    }
    if (r.outcome == RecoveryOutcome::kTornTail) {
      // Segments are fdatasynced before the log rolls past them (or a later one says they
      // were): damage there is never a torn write.
      return corrupt(i, r.error_offset, "is a sealed segment with invalid bytes: " + r.message);
    }
    // Clean but short of (or past) the next segment's first id: the next segment's
    // contiguity check says so.
  }
  plan.keep = n;
  return plan;
}

std::string SegmentFileName(uint64_t first_id) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "seg-%020llu.log", static_cast<unsigned long long>(first_id));
  return buf;
}

namespace {

// Parses "seg-<20 digits>.log"; returns 0 if the name is not a segment.
uint64_t ParseSegmentName(const char* name) {
  if (std::strlen(name) != 28 || std::strncmp(name, "seg-", 4) != 0 || std::strcmp(name + 24, ".log") != 0) return 0;
  uint64_t v = 0;
  for (int i = 4; i < 24; ++i) {
    if (name[i] < '0' || name[i] > '9') return 0;
    v = v * 10 + static_cast<uint64_t>(name[i] - '0');
  }
  return v;
}

bool EndsWith(const std::string& s, const char* suffix) {
  size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

struct DirListing {
  std::vector<std::pair<uint64_t, std::string>> segments;
  std::vector<std::string> temps;
};

DirListing ListDir(const std::string& dir) {
  DirListing out;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) throw NativeError("IO_ERROR", "cannot list " + dir + ": " + ErrnoText(errno));
  while (dirent* e = ::readdir(d)) {
    uint64_t id = ParseSegmentName(e->d_name);
    if (id != 0) {
      out.segments.emplace_back(id, e->d_name);
    } else {
      std::string name = e->d_name;
      if (name.rfind("seg-", 0) == 0 && EndsWith(name, ".log.tmp")) out.temps.push_back(name);
    }
  }
  ::closedir(d);
  std::sort(out.segments.begin(), out.segments.end());
  return out;
}

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

// UTF-8 as RFC 3629 defines it: no overlong forms, no surrogates (U+D800..U+DFFF), nothing
// above U+10FFFF, no truncated sequence. ASCII runs are skipped 16 bytes at a time. Returns
// false with *bad_at = offset of the first byte of the first bad sequence.
bool ValidUtf8(const uint8_t* s, size_t n, size_t* bad_at) {
  constexpr uint64_t kHigh = 0x8080808080808080ull;
  size_t i = 0;
  while (i < n) {
    while (i + 16 <= n) {
      uint64_t a, b;
      std::memcpy(&a, s + i, 8);
      std::memcpy(&b, s + i + 8, 8);
      if (((a | b) & kHigh) != 0) break;
      i += 16;
    }
    if (i + 8 <= n) {
      uint64_t a;
      std::memcpy(&a, s + i, 8);
      if ((a & kHigh) == 0) {
        i += 8;
        continue;
      }
    }
    if (i >= n) break;
    const uint8_t c = s[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len;
    uint8_t lo = 0x80, hi = 0xBF;  // allowed range of the second byte
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      if (c == 0xE0) lo = 0xA0;        // overlong
      else if (c == 0xED) hi = 0x9F;   // surrogates
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      if (c == 0xF0) lo = 0x90;        // overlong
      else if (c == 0xF4) hi = 0x8F;   // above U+10FFFF
    } else {
      *bad_at = i;
      return false;
    }
    if (n - i < len || s[i + 1] < lo || s[i + 1] > hi) {
      *bad_at = i;
      return false;
    }
    for (size_t k = 2; k < len; ++k) {
      if ((s[i + k] & 0xC0) != 0x80) {
        *bad_at = i;
        return false;
      }
    }
    i += len;
  }
  return true;
}

namespace {

uint64_t EncodeRecordImpl(uint8_t* out, uint64_t id, const RecordInput& r, uint8_t internal_flags, uint64_t synced_end,
                          const char** bad_what, size_t* bad_at) {
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
enum class RecordFault : uint8_t { kNone, kKind, kReservedFlag, kTurnRange, kTurnSpan, kTurnOrder, kText, kMeta, kNoBytes };

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
bool EncodeRecords(uint8_t* out, const RecordInput* records, size_t from, size_t to, size_t n, uint64_t first_id,
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

NativeError InvalidUtf8(const BadRecord& bad) {
  return NativeError("INVALID_UTF8", "record " + std::to_string(bad.record) + ": " + bad.what +
                                         " is not valid UTF-8 (byte " + std::to_string(bad.at) + " of the record's " +
                                         bad.what + ")");
}

}  // namespace

uint64_t EncodeRecord(uint8_t* out, uint64_t id, const RecordInput& r, uint8_t internal_flags, uint64_t synced_end) {
  const char* what = nullptr;
  size_t bad_at = 0;
  const uint64_t rs = EncodeRecordImpl(out, id, r, internal_flags, synced_end, &what, &bad_at);
  if (rs == 0) {
    throw NativeError("INVALID_UTF8", std::string(what) + " is not valid UTF-8 (byte " + std::to_string(bad_at) + ")");
  }
  return rs;
}

LogExtent DecodeExtent(const uint8_t* data, size_t size) {
  LogExtent best;
  best.present = data != nullptr && size > 0;
  for (size_t slot = 0; slot < 2 && best.present; ++slot) {
    const size_t at = slot * format::kExtentSlotStride;
    if (size < at + sizeof(format::ExtentSlot)) break;
    format::ExtentSlot x;
    std::memcpy(&x, data + at, sizeof x);
    if (std::memcmp(x.magic, format::kExtentMagic, sizeof x.magic) != 0) continue;
    if (Crc32c(0, data + at, offsetof(format::ExtentSlot, crc)) != x.crc) continue;
    if (x.version != format::kExtentVersion || x.log_tag == 0 || x.log_start == 0 || x.log_start > format::kMaxId ||
        x.seq == 0 || x.durable_next < x.log_start || x.durable_next > format::kMaxId + 1) {
      continue;
    }
    if (best.valid && x.seq <= best.seq) continue;
    best.valid = true;
    best.log_tag = x.log_tag;
    best.log_start = x.log_start;
    best.seq = x.seq;
    best.durable_next = x.durable_next;
  }
  return best;
}

void EncodeExtentSlot(uint8_t* out, const LogExtent& e) {
  format::ExtentSlot x{};
  std::memcpy(x.magic, format::kExtentMagic, sizeof x.magic);
  x.version = format::kExtentVersion;
  x.log_tag = e.log_tag;
  x.log_start = e.log_start;
  x.seq = e.seq;
  x.durable_next = e.durable_next;
  x.crc = Crc32c(0, &x, offsetof(format::ExtentSlot, crc));
  std::memcpy(out, &x, sizeof x);
}

LogRecoveryPlan CheckLogExtent(const LogExtent& x, const std::vector<SegmentFinding>& segments,
                               const LogRecoveryPlan& plan) {
  if (plan.corrupt) return plan;
  LogRecoveryPlan out = plan;
  auto corrupt = [&](size_t i, uint64_t offset, bool extent, std::string message) {
    out.keep = 0;
    out.corrupt = true;
    out.corrupt_segment = i;
    out.corrupt_offset = offset;
    out.corrupt_extent = extent;
    out.message = std::move(message);
    return out;
  };
  const size_t n = segments.size();
  if (!x.present) {
    for (size_t i = 0; i < n; ++i) {
      if (segments[i].result.version == format::kVersion) {
        return corrupt(i, 48, false,
                       "belongs to a log whose EXTENT is missing: where the log starts and how far it was durable "
                       "cannot be checked");
      }
    }
    return out;  // a log written before EXTENT existed, or a new one
  }
  if (!x.valid) return corrupt(0, 0, true, "has no valid slot (both fail their checks)");
  for (size_t i = 0; i < n; ++i) {
    const RecoveryResult& r = segments[i].result;
    if (r.version == format::kVersion && (r.log_tag != x.log_tag || r.log_start != x.log_start)) {
      return corrupt(i, 40, false, "belongs to another log (its log start or tag differs from EXTENT's)");
    }
  }
  if (n == 0 || plan.keep == 0) {
    if (x.durable_next > x.log_start) {
      return corrupt(0, 0, true,
                     "says ids " + std::to_string(x.log_start) + ".." + std::to_string(x.durable_next - 1) +
                         " were durable, but no segment of the log remains");
    }
    return out;
  }
  if (segments[0].first_id != x.log_start) {
    return corrupt(0, 16, false,
                   "is the first segment but starts at id " + std::to_string(segments[0].first_id) + " while the log starts at id " +
                       std::to_string(x.log_start) + " (EXTENT): the segments holding the first ids are missing");
  }
  const size_t last = plan.keep - 1;
  const RecoveryResult& lr = segments[last].result;
  const uint64_t end = segments[last].first_id + lr.records;
  if (end < x.durable_next) {
    out.durable_end_short = true;
    return corrupt(last, lr.valid_end, false,
                   "ends the log at id " + std::to_string(end - 1) + " but ids up to " + std::to_string(x.durable_next - 1) +
                       " were durable (EXTENT): durable records after this offset, or whole segments, are missing");
  }
  return out;
}

void EncodeCheckpoint(uint8_t* out, uint64_t next_id, uint64_t synced_end) {
  RecordHeader h{};
  h.id = next_id;
  h.kind = format::kKindCheckpoint;
  h.marker = format::kRecordMarker;
  h.synced_end = synced_end;
  h.crc = Crc32c(0, reinterpret_cast<const uint8_t*>(&h) + 4, sizeof h - 4);
  std::memcpy(out, &h, sizeof h);
}

void EncodeSegmentHeader(uint8_t* out, uint64_t first_id, int64_t created_ms, uint64_t unsynced_from,
                         uint64_t log_start, uint64_t log_tag) {
  SegmentHeader sh{};
  sh.unsynced_from = unsynced_from;
  std::memcpy(sh.magic, format::kSegmentMagic, sizeof sh.magic);
  sh.version = log_tag == 0 ? format::kVersionNoExtent : format::kVersion;
  if (log_tag != 0) {
    sh.log_start = log_start;
    sh.log_tag = log_tag;
  }
  sh.header_size = format::kSegmentHeaderSize;
  sh.first_id = first_id;
  sh.created_ms = created_ms;
  sh.crc = Crc32c(0, &sh, offsetof(SegmentHeader, crc));
  std::memcpy(out, &sh, sizeof sh);
}

// ---- SpanLog ---------------------------------------------------------------------------

namespace {

// A large Append() is split into chunks, cut at the first record boundary at or past each
// multiple of this in the file. Each of two threads claims a chunk, encodes it, waits until
// every chunk before it is in the file, and writes it itself (pwrite), up to that multiple,
// while the other thread encodes the next. Why the encoder writes: the kernel's copy then
// reads bytes from its own core's cache. Why the multiple: the page cache sizes a write's
// folios by its length and file alignment (ext4 has large folios since Linux 6.16), so
// writes cut at record boundaries get small folios at both ends, and a page split between
// two writes is zeroed by the first. A throwaway C loop on the build VM (Linux 6.18, best of
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
// a sleeping thread took 40-70 µs to wake on the build VM, which is about one batch's whole
// encoding: with a 50 µs poll the helper slept before 90% of the batches of a 10^5-span run,
// with 300 µs before 2-18% (debug counters in a scratch build, 4 runs).
constexpr auto kHelperSpin = std::chrono::microseconds(300);

/// pwrites buf[from, to) at file offset base + from, resuming short writes. 0 or errno (EIO
/// for a write that made no progress and set none). Both the one-thread and the two-thread
/// append write through this.
int PwriteRange(int fd, const uint8_t* buf, uint64_t from, uint64_t to, uint64_t base) {
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

}  // namespace

/// One large batch being encoded and written by two threads. Main thread: plans the
/// chunks, publishes the job (AppendHelper::Begin, a mutex: everything planned
/// happens-before the helper reads it), works on it, and waits until it is finished. Either
/// thread claims a chunk with next.fetch_add and encodes it; then the chunk waits for its
/// turn: `turn` counts the chunks handed to the file, stored by the thread that wrote the
/// last one and loaded by the next (sequentially consistent, which the sleep below needs;
/// release/acquire would do for the rest), so the writes, and `wrote` and the failure
/// fields, pass from one chunk's owner to the next in file order.
struct ParallelBatch {
  struct Chunk {
    size_t from = 0, to = 0;      ///< records [from, to)
    uint64_t begin = 0, end = 0;  ///< bytes [begin, end) of the encoded batch
    BadRecord bad;                ///< the first bad record of the chunk, if its encoding failed
    /// Raw spans in the chunk, and the first and last one's turn (filled chunks only).
    bool has_raw = false;
    int64_t first_raw = 0, last_raw = 0;
  };
  RecordInput* records = nullptr;
  size_t n = 0;
  /// The batch in column form: each chunk fills and checks its rows before it encodes them
  /// (null: the rows were filled and validated before the job began).
  const BatchColumns* columns = nullptr;
  uint32_t max_text = 0;
  uint8_t* out = nullptr;
  uint64_t first_id = 0;
  uint64_t synced_end = 0;
  int fd = -1;
  uint64_t file_at = 0;  ///< file offset of out[0]
  std::unique_ptr<Chunk[]> chunks;
  size_t count = 0;
  size_t capacity = 0;
  std::atomic<size_t> next{0};
  std::atomic<size_t> turn{0};
  /// A chunk failed (stored after the failure fields): no later chunk is written, and no
  /// thread claims another.
  std::atomic<bool> stopped{false};
  /// Threads asleep in Await(), and what they sleep on. A wait is usually one chunk's
  /// pwrite (~10 µs), but that pwrite can block for milliseconds (dirty-page throttling),
  /// and a core spinning through it burns: a throwaway script that delayed every pwrite by
  /// 5 ms saw 41,235 sched_yield calls in 534 ms with a spin-then-yield wait.
  std::atomic<uint32_t> sleepers{0};
  std::mutex mu;
  std::condition_variable cv;
  // Written only by the chunk whose turn it is.
  bool has_raw = false;           ///< raw turn order up to the last chunk written (filled
  int64_t last_raw = 0;           ///< chunks only), as ValidateBatch carries it
  uint64_t wrote = 0;             ///< bytes of the batch in the file
  size_t failed = SIZE_MAX;       ///< the chunk that stopped the batch
  int err = 0;                    ///< its write's errno, or 0 for a bad record

  void Reserve(size_t want) {
    if (want <= capacity) return;
    chunks = std::make_unique<Chunk[]>(want);
    capacity = want;
  }
  /// Claims chunks until none is left or the batch stopped; encodes each and writes it in
  /// its turn. Both threads run this.
  void Work() {
    for (size_t c; !stopped.load(std::memory_order_acquire) && (c = next.fetch_add(1, std::memory_order_relaxed)) < count;) {
      Chunk& k = chunks[c];
      const bool ok = Prepare(k) && EncodeRecords(out + k.begin, records, k.from, k.to, n, first_id, synced_end, &k.bad);
      if (!WaitTurn(c)) return;
      if (!ok || !ContinuesTurnOrder(k)) {
        Stop(c, 0);
        return;
      }
      // Up to the multiple of kParallelChunk that the chunk's cut passed; the sliver of its
      // last record past it goes with the next chunk. The last chunk writes to the end.
      uint64_t to = k.end;
      if (c + 1 < count) {
        const uint64_t aligned = (file_at + k.end) & ~(kParallelChunk - 1);
        to = aligned > file_at + wrote ? aligned - file_at : wrote;
      }
      if (const int e = PwriteRange(fd, out, wrote, to, file_at); e != 0) {
        Stop(c, e);
        return;
      }
      wrote = to;
      turn.store(c + 1);
      Wake();
    }
  }
  /// Waits until every chunk before c is in the file. False if the batch stopped first.
  bool WaitTurn(size_t c) {
    Await([&] { return turn.load() == c || stopped.load(); });
    return turn.load() == c;
  }
  /// Done: every chunk written, or one stopped the batch.
  bool Finished() const { return turn.load() == count || stopped.load(); }
  /// Returns once ready() holds: spins for up to kAwaitSpin, then sleeps on cv. Whoever
  /// makes it hold calls Wake() after the store. No lost wake-up: the sleeper counts itself
  /// and then checks ready(), the waker stores and then reads the count, all sequentially
  /// consistent, so at least one of them sees the other; a waker that sees a sleeper takes
  /// mu, which the sleeper holds from its last check until cv.wait releases it.
  template <typename Ready>
  void Await(Ready ready) {
    if (ready()) return;
    const auto until = std::chrono::steady_clock::now() + kAwaitSpin;
    do {
      for (int i = 0; i < 64; ++i) {
        if (ready()) return;
        CpuRelax();
      }
    } while (std::chrono::steady_clock::now() < until);
    std::unique_lock<std::mutex> lock(mu);
    sleepers.fetch_add(1);
    while (!ready()) cv.wait(lock);
    sleepers.fetch_sub(1);
  }

 private:
  /// Fills the chunk's rows from the columns and checks them as ValidateBatch would, turn
  /// order within the chunk included. False at the first problem, which the appender then
  /// finds again with its message (AppendColumns).
  bool Prepare(Chunk& k) {
    if (columns == nullptr) return true;
    if (FillRows(*columns, records, k.from, k.to, max_text) != k.to) return false;
    k.has_raw = false;
    for (size_t i = k.from; i < k.to; ++i) {
      const bool had = k.has_raw;
      if (CheckRecord(records[i], max_text, &k.has_raw, &k.last_raw) != RecordFault::kNone) return false;
      if (!had && k.has_raw) k.first_raw = k.last_raw;
    }
    return true;
  }
  /// In turn: the chunk's first raw span does not go back behind the batch so far's last.
  bool ContinuesTurnOrder(const Chunk& k) {
    if (columns == nullptr || !k.has_raw) return true;
    if (has_raw && k.first_raw < last_raw) return false;
    has_raw = true;
    last_raw = k.last_raw;
    return true;
  }
  // A turn usually comes within one chunk's pwrite and encoding (10-30 µs on the build VM),
  // and a sleeping thread took 40-70 µs to wake there: spinning 1,024 pauses (~10 µs) before
  // sleeping made 10^4-span appends 7-11% slower (bench --only log, 3 alternations). A
  // pwrite blocked for milliseconds costs at most this much spinning per wait.
  static constexpr auto kAwaitSpin = std::chrono::microseconds(200);
  void Stop(size_t c, int error) {
    failed = c;
    err = error;
    stopped.store(true);
    Wake();
  }
  void Wake() {
    if (sleepers.load() == 0) return;
    { std::lock_guard<std::mutex> lock(mu); }
    cv.notify_all();
  }
};

/// The log's second thread: its share of a large Append()'s chunks (encode and write), only
/// between Begin() and End() on the appending thread. End() returns once the thread is out
/// of the job, so the job's records, staging buffer and chunk table are the appender's again.
class AppendHelper {
 public:
  ~AppendHelper() { Stop(); }
  /// Starts the thread. False if it cannot be made, or if the caller may run on one CPU
  /// only (two threads would take turns on it): the caller then works alone.
  bool Start() {
    pthread_attr_t attr;
    if (pthread_attr_init(&attr) != 0) return false;
    // Placement: a new thread is queued on its creator's CPU, where it waits behind the
    // appender (which does not block) until the periodic load balancer moves it. On the
    // 2-vCPU build VM that took ~2 ms with the other CPU idle, longer than a whole 10^4-span
    // append: the helper joined no batch at all in 2 of 3 fresh logs (scheduler trace,
    // sched_wakeup_new target_cpu = the appender's). So it starts on any allowed CPU but
    // this one, and takes back the mask it inherited as soon as it runs (Run()).
    place_ = false;
    if (pthread_getaffinity_np(pthread_self(), sizeof inherited_, &inherited_) == 0) {
      if (CPU_COUNT(&inherited_) < 2) {
        pthread_attr_destroy(&attr);
        return false;
      }
      cpu_set_t elsewhere = inherited_;
      const int here = sched_getcpu();
      if (here >= 0 && here < CPU_SETSIZE) CPU_CLR(here, &elsewhere);
      place_ = CPU_COUNT(&elsewhere) > 0 && pthread_attr_setaffinity_np(&attr, sizeof elsewhere, &elsewhere) == 0;
    }
    int rc = pthread_create(&thread_, &attr, &AppendHelper::Main, this);
    pthread_attr_destroy(&attr);
    if (rc != 0 && place_) {
      // glibc applies the attribute's mask inside pthread_create, which then fails if that
      // is refused (a seccomp filter on sched_setaffinity): the hint is not worth the thread.
      place_ = false;
      rc = pthread_create(&thread_, nullptr, &AppendHelper::Main, this);
    }
    if (rc != 0) return false;
    running_ = true;
    // Named here, not in Run(), so the name is there as soon as Start() returns. Shown by
    // top -H, /proc/<pid>/task/*/comm and debuggers (15 characters at most).
    (void)pthread_setname_np(thread_, "spanguard-help");
    return true;
  }
  void Begin(ParallelBatch* job) {
    bool wake;
    {
      std::lock_guard<std::mutex> lock(mu_);
      job_ = job;
      open_.store(true, std::memory_order_relaxed);
      gen_.fetch_add(1, std::memory_order_release);
      wake = sleeping_;
    }
    // A polling thread sees gen_ move; only a sleeping one needs the futex.
    if (wake) cv_.notify_one();
  }
  void End() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      open_.store(false, std::memory_order_release);
    }
    // The thread leaves a job as soon as no chunk is left to claim. After a finished batch it
    // has at most a fetch_add left; after a stopped one, at most the encoding of the chunk
    // it holds (the batch stopped while it encoded), which a 16 MiB record makes long.
    for (unsigned spins = 0; active_.load(std::memory_order_acquire); ++spins) {
      if (spins < 4096) CpuRelax();
      else std::this_thread::yield();
    }
  }
  /// Joins the thread. Idempotent.
  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopped_ = true;
    }
    cv_.notify_one();
    if (running_) {
      (void)pthread_join(thread_, nullptr);
      running_ = false;
    }
  }

 private:
  /// Nothing to do: no new job.
  bool Idle(uint64_t seen) const { return gen_.load(std::memory_order_acquire) == seen; }
  static void* Main(void* self) {
    static_cast<AppendHelper*>(self)->Run();
    return nullptr;
  }
  void Run() {
    // Start() placed this thread away from the appender's CPU; from here on it may run
    // wherever its creator could when it was made. A failure leaves it on the other CPUs,
    // which only narrows where it runs.
    if (place_) (void)pthread_setaffinity_np(pthread_self(), sizeof inherited_, &inherited_);
    uint64_t seen = 0;
    for (;;) {
      // Poll before sleeping: an appender sending large batches back to back calls Begin()
      // again within tens of microseconds, less than a sleeping thread takes to wake here.
      const auto until = std::chrono::steady_clock::now() + kHelperSpin;
      while (Idle(seen) && std::chrono::steady_clock::now() < until) CpuRelax();
      ParallelBatch* job = nullptr;
      {
        std::unique_lock<std::mutex> lock(mu_);
        while (Idle(seen) && !stopped_) {
          sleeping_ = true;
          cv_.wait(lock);
          sleeping_ = false;
        }
        if (stopped_) return;
        if (gen_.load(std::memory_order_relaxed) != seen) {
          seen = gen_.load(std::memory_order_relaxed);
          // A job that already ended (the appender did it alone) is not entered.
          if (open_.load(std::memory_order_relaxed)) {
            job = job_;
            active_.store(true, std::memory_order_relaxed);
          }
        }
      }
      if (job != nullptr) {
        job->Work();
        active_.store(false, std::memory_order_release);
      }
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::atomic<uint64_t> gen_{0};
  std::atomic<bool> active_{false};
  std::atomic<bool> open_{false};  ///< written under mu_; read without it only to poll
  bool sleeping_ = false;
  bool stopped_ = false;
  ParallelBatch* job_ = nullptr;
  pthread_t thread_{};
  bool running_ = false;     ///< thread_ was created and not yet joined
  cpu_set_t inherited_{};    ///< the creator's CPU mask, taken back by Run()
  bool place_ = false;       ///< Start() narrowed the new thread's mask
};

std::string SpanLog::WhereSuffix(const std::string& file, uint64_t offset) const {
  return " [file=" + file + " offset=" + std::to_string(offset) + "]";
}

SpanLog::SpanLog(std::string dir, const SpanLogOptions& options) : dir_(std::move(dir)), options_(options) {
  if (options_.segment_bytes < 4096 || options_.segment_bytes > (uint64_t{1} << 38)) {
    throw NativeError("INVALID_OPTIONS", "segmentBytes must be between 4096 and 2^38");
  }
  if (options_.max_text_bytes == 0 || options_.max_text_bytes > 0x7FFFFFFFu) {
    throw NativeError("INVALID_OPTIONS", "maxTextBytes must be between 1 and 2^31 - 1");
  }
  try {
    if (!options_.read_only) {
      if (::mkdir(dir_.c_str(), 0700) != 0 && errno != EEXIST) {
        throw NativeError("IO_ERROR", "cannot create " + dir_ + ": " + ErrnoText(errno));
      }
      const std::string lock_path = dir_ + "/LOCK";
      lock_fd_ = Io().open(lock_path.c_str(), O_RDWR | O_CREAT, 0600);
      if (lock_fd_ < 0) throw NativeError("IO_ERROR", "cannot open " + lock_path + ": " + ErrnoText(errno));
      // flock locks belong to the open file description, so a second open() in this same
      // process conflicts exactly like another process would (test/log/lock.test.ts).
      if (::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
        int err = errno;
        if (err == EWOULDBLOCK) {
          throw NativeError("LOCKED", "another writer holds " + lock_path + WhereSuffix(lock_path, 0));
        }
        throw NativeError("IO_ERROR", "cannot lock " + lock_path + ": " + ErrnoText(err));
      }
    } else {
      struct stat st;
      if (::stat(dir_.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
        throw NativeError("IO_ERROR", "no log directory at " + dir_);
      }
    }
    OpenExisting();
    if (!options_.read_only && segments_.empty()) CreateSegment(extent_.log_start, 0);
    RestartStaging();
    if (!options_.read_only) {
      // Room in the id -> offset table for the design scale without growing it: each
      // doubling copies the table, and from 128 KiB on glibc maps fresh pages for it. At
      // 10^4 spans in batches of 1,000 the doubling to 16,000 entries made its batch take
      // ~100 µs instead of ~67 (median of 300 fresh logs).
      // Reserved, not touched: memory is committed as entries are written. A larger table
      // (an existing log) is left as recovery sized it, rather than copied here.
      if (offsets_.capacity() < kOffsetsAhead) offsets_.reserve(kOffsetsAhead);
      // The second thread starts with the writer rather than at its first large batch:
      // made there, it cost that batch ~45 µs (210 -> 165 µs, same loop), and a host that
      // appends large batches wants it from the first.
      if (parallel_encode_) (void)Helper();
    }
  } catch (...) {
    Release();
    throw;
  }
}

SpanLog::~SpanLog() { Release(); }

namespace {

// EXTENT's bytes (at most its two slots); `present` false when there is no file. Read before
// the segments are listed: a live writer only ever raises what it claims, for records it
// wrote before, so a reader that lists after reading sees every record the claim covers.
LogExtent ReadExtentFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return LogExtent{};
    throw NativeError("IO_ERROR", "cannot open " + path + ": " + std::strerror(errno));
  }
  std::vector<uint8_t> bytes;
  const uint64_t got = ReadRange(fd, 0, format::kExtentFileSize, &bytes);
  ::close(fd);
  return DecodeExtent(bytes.data(), static_cast<size_t>(got));
}

uint64_t RandomTag() {
  uint64_t tag = 0;
  while (tag == 0) {
    if (::getrandom(&tag, sizeof tag, 0) != static_cast<ssize_t>(sizeof tag)) {
      std::random_device rd;
      tag = (uint64_t{rd()} << 32) ^ rd();
    }
  }
  return tag;
}

}  // namespace

void SpanLog::OpenExisting() {
  const std::string extent_path = dir_ + "/EXTENT";
  if (!options_.read_only) (void)Io().unlink((extent_path + ".tmp").c_str());
  LogExtent extent = ReadExtentFile(extent_path);
  DirListing listing = ListDir(dir_);
  // A reader racing a writer that creates the log: EXTENT comes first, so a segment listed
  // after an absent EXTENT may be that writer's first; read it again.
  if (!extent.present && options_.read_only && !listing.segments.empty()) extent = ReadExtentFile(extent_path);
  if (!options_.read_only) {
    for (const std::string& t : listing.temps) (void)Io().unlink((dir_ + "/" + t).c_str());
  }
  size_t count = listing.segments.size();
  // First every segment's own recovery, then the decision across them (PlanLogRecovery).
  std::vector<SegmentFinding> findings(count);
  std::vector<size_t> offsets_base(count);
  std::vector<uint64_t> local;
  for (size_t i = 0; i < count; ++i) {
    const bool last = i + 1 == count;
    Segment s;
    s.path = dir_ + "/" + listing.segments[i].second;
    s.first_id = listing.segments[i].first;
    s.fd = Io().open(s.path.c_str(), options_.read_only ? O_RDONLY : O_RDWR, 0600);
    if (s.fd < 0 && options_.read_only && errno == ENOENT && i > 0) {
      // A writer recovering a crashed `none` log deletes the segments after its torn tail
      // (and only those): the log ends before this one.
      count = i;
      findings.resize(count);
      break;
    }
    if (s.fd < 0) throw NativeError("IO_ERROR", "cannot open " + s.path + ": " + ErrnoText(errno));
    segments_.push_back(s);
    Segment& seg = segments_.back();
    struct stat st;
    if (::fstat(seg.fd, &st) != 0) throw NativeError("IO_ERROR", "cannot stat " + seg.path + ": " + ErrnoText(errno));
    seg.file_size = static_cast<uint64_t>(st.st_size);
    // Blocks past the end (a killed `none` writer's Preallocate): this writer's first roll
    // or close cuts them, as it cuts its own.
    if (!options_.read_only && last && static_cast<uint64_t>(st.st_blocks) * 512 > seg.file_size + 4096) {
      seg.allocated_end = static_cast<uint64_t>(st.st_blocks) * 512;
    }
    local.clear();
    SegmentFinding& f = findings[i];
    f.first_id = seg.first_id;
    // A live writer may cut the last segment's zero prefill off at any moment (a roll, its
    // close), and a writer recovering a crashed `none` log cuts the sealed segment whose
    // successor's header says "not yet durable": read those rather than map them, and map
    // only what holds records (touching a mapping past a file's end is SIGBUS).
    if (options_.read_only && (last || SuccessorMayBeUnsynced(dir_ + "/" + listing.segments[i + 1].second))) {
      f.result = ScanLive(seg, 0, seg.file_size, [&](const SegmentBytes& b) {
        local.clear();
        return RecoverSegment(b.p, static_cast<size_t>(b.end), &local);
      });
      seg.file_size = std::max<uint64_t>(f.result.valid_end, format::kSegmentHeaderSize);
      std::vector<uint8_t>().swap(tail_buf_);
    } else {
      EnsureMapped(seg, seg.file_size);
      f.result = RecoverSegment(seg.map, seg.file_size, &local);
    }
    offsets_base[i] = offsets_.size();
    for (uint64_t off : local) offsets_.push_back((uint64_t{i} << kOffsetBits) | off);
  }

  const LogRecoveryPlan plan = CheckLogExtent(extent, findings, PlanLogRecovery(findings));
  std::vector<TornTailRecovery> dropped;  // reported after the cut of the segment they follow
  if (plan.corrupt && plan.corrupt_extent) {
    throw NativeError("CORRUPT", "log extent " + extent_path + " " + plan.message + WhereSuffix(extent_path, plan.corrupt_offset));
  }
  if (plan.corrupt) {
    const Segment& seg = segments_[plan.corrupt_segment];
    throw NativeError("CORRUPT", "segment " + seg.path + " " + plan.message + WhereSuffix(seg.path, plan.corrupt_offset));
  }
  extent_ = extent;
  if (plan.keep < count) {
    // The torn tail of a `none` roll: whole segments written after records that never
    // became durable. A writer deletes them (reported like any torn tail); a reader stops
    // before them.
    offsets_.resize(offsets_base[plan.keep]);
    for (size_t j = plan.keep; j < count; ++j) {
      Segment& seg = segments_[j];
      if (!options_.read_only) {
        const bool zeros = seg.map != nullptr && AllZero(seg.map, static_cast<size_t>(seg.file_size));
        dropped.push_back({seg.path, 0, seg.file_size, zeros});
        if (Io().unlink(seg.path.c_str()) != 0) {
          throw NativeError("IO_ERROR", "cannot delete " + seg.path + ", written after records lost in a crash: " +
                                            ErrnoText(errno) + WhereSuffix(seg.path, 0));
        }
      }
      Unmap(seg);
      Io().close(seg.fd);
    }
    segments_.resize(plan.keep);
    if (!options_.read_only) FsyncDir();
  }

  for (size_t i = 0; i < segments_.size(); ++i) {
    Segment& seg = segments_[i];
    const RecoveryResult& r = findings[i].result;
    const bool last = i + 1 == segments_.size();
    if (i == 0) {
      first_id_ = seg.first_id;
      next_id_ = seg.first_id;
    }
    seg.records = r.records;
    seg.size = r.valid_end;
    if (r.has_raw) {
      seg.has_raw = true;
      has_raw_ = true;
      last_raw_turn_start_ = r.last_raw_turn_start;
    }
    if (r.outcome == RecoveryOutcome::kTornTail && options_.read_only && last) {
      // Never past the records: a reader maps what it has scanned, nothing torn.
      seg.file_size = std::max<uint64_t>(r.valid_end, format::kSegmentHeaderSize);
      Unmap(seg);
    }
    if (r.outcome == RecoveryOutcome::kTornTail && !options_.read_only) {
      const uint64_t dropped = seg.file_size - r.valid_end;
      const bool zeros_only = AllZero(seg.map + r.valid_end, static_cast<size_t>(dropped));
      Unmap(seg);
      if (Io().ftruncate(seg.fd, static_cast<off_t>(r.valid_end)) != 0) {
        throw NativeError("IO_ERROR", "cannot truncate the torn tail of " + seg.path + ": " + ErrnoText(errno) +
                                          WhereSuffix(seg.path, r.valid_end));
      }
      if (Io().fdatasync(seg.fd) != 0) {
        failed_ = true;
        throw NativeError("FSYNC_FAILED", "fdatasync failed after truncating " + seg.path + ": " +
                                              ErrnoText(errno) + WhereSuffix(seg.path, r.valid_end));
      }
      seg.file_size = r.valid_end;
      recoveries_.push_back({seg.path, r.valid_end, dropped, zeros_only});
    }
    next_id_ += r.records;
  }
  recoveries_.insert(recoveries_.end(), dropped.begin(), dropped.end());
  if (!options_.read_only && !segments_.empty()) {
    // Whatever a killed writer left in the page cache becomes durable now, so the
    // synced_end we stamp on new records is honest: first the sealed segments a `none`
    // roll left unsynced (every one after the oldest segment a later header names), then
    // the last.
    for (size_t i = 1; i < segments_.size(); ++i) {
      if (findings[i].result.unsynced_from != 0) {
        unsynced_from_ = findings[i].result.unsynced_from;
        unsynced_segment_ = i - 1;
        break;
      }
    }
    const size_t oldest = unsynced_segment_;
    if (const int err = SyncSealed(); err != 0) {
      throw NativeError("FSYNC_FAILED", "fdatasync failed at open of the sealed segments from " + segments_[oldest].path +
                                            ": " + ErrnoText(err) + WhereSuffix(segments_[oldest].path, 0));
    }
    Segment& tail = segments_.back();
    if (Io().fdatasync(tail.fd) != 0) {
      failed_ = true;
      throw NativeError("FSYNC_FAILED", "fdatasync failed at open of " + tail.path + ": " + ErrnoText(errno) +
                                            WhereSuffix(tail.path, tail.size));
    }
    durable_end_ = tail.size;
    // A header still says "not yet durable" and nothing from it on proves a sync: now that
    // everything is, a checkpoint says so (else damage in those segments would pass for a
    // torn write until this writer's first flush or close).
    size_t stamped = 0;
    for (size_t i = 1; i < segments_.size(); ++i) {
      if (findings[i].result.unsynced_from != 0) stamped = i;
    }
    bool proven = stamped == 0;
    for (size_t i = stamped; !proven && i < segments_.size(); ++i) proven = findings[i].result.durable_mark;
    // A failed write of it (a full disk) costs only that evidence until this writer's first
    // flush or close writes one: the open goes on, as it did before checkpoints were written here.
    needs_mark_ = !proven;
    if (!proven && WriteCheckpoint(tail.size) == 0) {
      needs_mark_ = false;
      if (Io().fdatasync(tail.fd) != 0) {
        failed_ = true;
        throw NativeError("FSYNC_FAILED", "fdatasync failed at open of " + tail.path + ": " + ErrnoText(errno) +
                                              WhereSuffix(tail.path, tail.size));
      }
      durable_end_ = tail.size;
    }
  }
  if (!options_.read_only) {
    if (!extent_.valid) {
      // A new log, or one written before EXTENT existed: from here on it knows its extent.
      CreateExtent(segments_.empty() ? 1 : first_id_, next_id_);
    } else {
      const int fd = Io().open(extent_path.c_str(), O_RDWR, 0600);
      if (fd < 0) throw NativeError("IO_ERROR", "cannot open " + extent_path + ": " + ErrnoText(errno));
      extent_fd_ = fd;
      // Everything recovered is durable now (synced above): say so, durably.
      if (const int err = WriteExtent(next_id_, true); err != 0) {
        throw NativeError("IO_ERROR", "cannot write " + extent_path + ": " + ErrnoText(err) + WhereSuffix(extent_path, 0));
      }
    }
  }
}

void SpanLog::CreateExtent(uint64_t log_start, uint64_t durable_next) {
  const std::string path = dir_ + "/EXTENT";
  const std::string tmp = path + ".tmp";
  LogExtent x;
  x.present = x.valid = true;
  x.log_tag = RandomTag();
  x.log_start = log_start;
  x.seq = 1;
  x.durable_next = durable_next;
  uint8_t bytes[format::kExtentFileSize] = {};
  EncodeExtentSlot(bytes, x);
  const int fd = Io().open(tmp.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) throw NativeError("IO_ERROR", "cannot create " + tmp + ": " + ErrnoText(errno));
  if (Io().pwrite(fd, bytes, sizeof bytes, 0) != static_cast<ssize_t>(sizeof bytes)) {
    const int err = errno;
    Io().close(fd);
    (void)Io().unlink(tmp.c_str());
    throw NativeError("IO_ERROR", "cannot write " + tmp + ": " + ErrnoText(err));
  }
  if (Io().fdatasync(fd) != 0) {
    const int err = errno;
    Io().close(fd);
    (void)Io().unlink(tmp.c_str());
    throw NativeError("FSYNC_FAILED", "fdatasync of " + tmp + " failed: " + ErrnoText(err));
  }
  if (Io().rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    Io().close(fd);
    (void)Io().unlink(tmp.c_str());
    throw NativeError("IO_ERROR", "cannot rename " + tmp + ": " + ErrnoText(err));
  }
  extent_fd_ = fd;
  extent_ = x;
  FsyncDir();
}

int SpanLog::WriteExtent(uint64_t durable_next, bool sync) {
  if (extent_fd_ < 0 || durable_next <= extent_.durable_next) {
    if (!sync || extent_fd_ < 0) return 0;
  } else {
    LogExtent x = extent_;
    x.seq += 1;
    x.durable_next = durable_next;
    uint8_t slot[sizeof(format::ExtentSlot)];
    EncodeExtentSlot(slot, x);
    // Plain syscalls, not the I/O seam: the seam's fault plans count and damage the log's
    // own writes and syncs, and a slot write only ever lowers nothing (see FORMAT.md).
    const off_t at = static_cast<off_t>(((x.seq - 1) % 2) * format::kExtentSlotStride);
    if (::pwrite(extent_fd_, slot, sizeof slot, at) != static_cast<ssize_t>(sizeof slot)) return errno == 0 ? EIO : errno;
    extent_ = x;
  }
  if (sync && ::fdatasync(extent_fd_) != 0) return errno;
  return 0;
}

void SpanLog::NoteDurable() {
  if (unsynced_from_ != 0 || segments_.empty() || extent_fd_ < 0) return;
  (void)WriteExtent(IdAtOffset(segments_.size() - 1, durable_end_), false);
}

int SpanLog::SyncSealed() {
  if (unsynced_from_ == 0) return 0;
  SyncTarget sealed = PrepareSync();
  sealed.fd = -1;  // the callers sync the last segment themselves
  if (const int err = SyncFiles(sealed); err != 0) {
    failed_ = true;
    return err;
  }
  unsynced_from_ = 0;
  return 0;
}

bool SpanLog::SuccessorMayBeUnsynced(const std::string& path) {
  const int fd = Io().open(path.c_str(), O_RDONLY, 0);
  if (fd < 0) return true;
  uint8_t h[format::kSegmentHeaderSize];
  const bool whole = ::pread(fd, h, sizeof h, 0) == static_cast<ssize_t>(sizeof h);
  Io().close(fd);
  if (!whole) return true;
  const RecoveryResult r = RecoverSegment(h, sizeof h, nullptr);
  return r.outcome == RecoveryOutcome::kCorrupt || r.unsynced_from != 0;
}

uint64_t SpanLog::IdAtOffset(size_t seg, uint64_t off) const {
  const uint64_t key = (uint64_t{seg} << kOffsetBits) | off;
  // offsets_ ascends: segment index in the high bits, offset below.
  const auto it = std::lower_bound(offsets_.begin(), offsets_.end(), key);
  return first_id_ + static_cast<uint64_t>(it - offsets_.begin());
}

void SpanLog::FsyncDir() {
  int fd = Io().open(dir_.c_str(), O_RDONLY | O_DIRECTORY, 0);
  if (fd < 0) throw NativeError("IO_ERROR", "cannot open directory " + dir_ + ": " + ErrnoText(errno));
  int rc = Io().fsync(fd);
  int err = errno;
  Io().close(fd);
  if (rc != 0) FailSync(err, "fsync of directory " + dir_);
}

void SpanLog::CreateSegment(uint64_t first_id, uint64_t unsynced_from) {
  const std::string final_path = dir_ + "/" + SegmentFileName(first_id);
  const std::string tmp_path = final_path + ".tmp";
  int fd = Io().open(tmp_path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) throw NativeError("IO_ERROR", "cannot create " + tmp_path + ": " + ErrnoText(errno));
  uint8_t sh[format::kSegmentHeaderSize];
  EncodeSegmentHeader(sh, first_id, NowMs(), unsynced_from, extent_.log_start, extent_.log_tag);
  if (Io().pwrite(fd, sh, sizeof sh, 0) != static_cast<ssize_t>(sizeof sh)) {
    int err = errno;
    Io().close(fd);
    (void)Io().unlink(tmp_path.c_str());
    throw NativeError("IO_ERROR", "cannot write the header of " + tmp_path + ": " + ErrnoText(err));
  }
  if (Io().fdatasync(fd) != 0) {
    int err = errno;
    Io().close(fd);
    FailSync(err, "fdatasync of new segment " + tmp_path);
  }
  if (Io().rename(tmp_path.c_str(), final_path.c_str()) != 0) {
    int err = errno;
    Io().close(fd);
    throw NativeError("IO_ERROR", "cannot rename " + tmp_path + ": " + ErrnoText(err));
  }
  Segment s;
  s.path = final_path;
  s.first_id = first_id;
  s.size = format::kSegmentHeaderSize;
  s.file_size = s.size;
  s.fd = fd;
  segments_.push_back(s);
  durable_end_ = format::kSegmentHeaderSize;
  FsyncDir();
}

AppendHelper* SpanLog::Helper() {
  if (!helper_ && !helper_failed_) {
    auto helper = std::make_unique<AppendHelper>();
    if (helper->Start()) {
      helper_ = std::move(helper);
      parallel_ = std::make_unique<ParallelBatch>();
    } else {
      helper_failed_ = true;
    }
  }
  return helper_.get();
}

void SpanLog::PrefillAhead() {
  if (released_ || failed_ || options_.read_only || segments_.empty()) return;
  // Zeros ahead pay off for small durable writes (one metadata write saved per fdatasync);
  // a write this large amortizes its own and would only write the zeros to disk as well.
  if (last_write_bytes_ >= kPrefillChunk / 8) return;
  Prefill(segments_.back());
}

void SpanLog::Preallocate(Segment& s, uint64_t end) {
#if defined(__linux__)
  if (options_.durability != Durability::kNone || !preallocate_ok_ || end <= s.allocated_end) return;
  uint64_t to = (end + kPreallocChunk) & ~(kPreallocChunk - 1);
  to = std::min(to, std::max(options_.segment_bytes, end));
  const uint64_t from = std::max(s.allocated_end, s.size);
  // Not through the seam: it changes neither the file's size nor a byte of its contents.
  if (::fallocate(s.fd, FALLOC_FL_KEEP_SIZE, static_cast<off_t>(from), static_cast<off_t>(to - from)) != 0) {
    preallocate_ok_ = false;
    return;
  }
  s.allocated_end = to;
#else
  (void)s;
  (void)end;
#endif
}

void SpanLog::Prefill(Segment& s) {
  if (options_.durability == Durability::kNone || s.file_size >= s.size + kPrefillChunk / 4) return;
  // Up to the next chunk boundary past one chunk ahead, never past the roll threshold (the
  // zeros are cut off at the roll anyway; a batch bigger than a segment gets none).
  const uint64_t limit = std::max(s.size, options_.segment_bytes);
  const uint64_t want = std::min(limit, (s.size + 2 * kPrefillChunk - 1) & ~(kPrefillChunk - 1));
  uint64_t at = std::max(s.size, s.file_size);
  while (at < want) {
    const ssize_t n = Io().pwrite(s.fd, g_zeros, static_cast<size_t>(std::min(want - at, kPrefillChunk)), static_cast<off_t>(at));
    // A failed prefill costs speed, never data: the next write extends the file as before.
    if (n <= 0) break;
    at += static_cast<uint64_t>(n);
  }
  s.file_size = std::max(s.file_size, at);
}

int SpanLog::TruncateTo(Segment& s, uint64_t size) {
  // A mapping that reaches past the new end would raise SIGBUS where touched: drop it (reads
  // map again, lazily). Called from appends, close, and a failed write of staged records
  // (which a read can trigger, before it takes any SpanView).
  if (s.map != nullptr && s.map_len > size) Unmap(s);
  // On ext4 this also frees blocks reserved past the end (Preallocate), even at the same size.
  if (Io().ftruncate(s.fd, static_cast<off_t>(size)) != 0) return errno;
  s.file_size = size;
  s.allocated_end = std::min(s.allocated_end, size);
  return 0;
}

void SpanLog::EnsureMapped(const Segment& s, uint64_t need) const {
  if (s.map_len >= need && s.map != nullptr) return;
  if (need > s.file_size) {
    throw NativeError("CORRUPT", "read past the end of " + s.path + WhereSuffix(s.path, need));
  }
  // Map exactly what the file holds (never past EOF: touching a page beyond it is SIGBUS).
  const size_t len = static_cast<size_t>(s.file_size);
  if (len == 0) return;
  void* p;
  if (s.map == nullptr) {
    p = ::mmap(nullptr, len, PROT_READ, MAP_SHARED, s.fd, 0);
  } else {
    p = ::mremap(const_cast<uint8_t*>(s.map), s.map_len, len, MREMAP_MAYMOVE);
  }
  if (p == MAP_FAILED) throw NativeError("IO_ERROR", "cannot map " + s.path + ": " + ErrnoText(errno));
  s.map = static_cast<const uint8_t*>(p);
  s.map_len = len;
}

void SpanLog::Unmap(Segment& s) {
  if (s.map != nullptr) ::munmap(const_cast<uint8_t*>(s.map), s.map_len);
  s.map = nullptr;
  s.map_len = 0;
}

void SpanLog::FailSync(int err, const std::string& what) {
  // Never retried: after a failed fsync the kernel may have dropped the dirty pages and
  // cleared the error, so a retry that "succeeds" would lie (the PostgreSQL fsyncgate lesson).
  failed_ = true;
  const std::string file = segments_.empty() ? dir_ : segments_.back().path;
  throw NativeError("FSYNC_FAILED", what + " failed (" + ErrnoText(err) + "); the log is now read-only" +
                                        WhereSuffix(file, segments_.empty() ? 0 : segments_.back().size));
}

void SpanLog::RequireWritable() const {
  if (released_) throw NativeError("CLOSED", "the span log is closed");
  if (options_.read_only) throw NativeError("READ_ONLY", "the span log was opened read-only");
  if (failed_) throw NativeError("FSYNC_FAILED", "an earlier fsync failed; the log refuses every write");
}

namespace {

[[noreturn]] __attribute__((cold, noinline)) void ThrowRecordFault(RecordFault f, size_t i, const RecordInput& r,
                                                                   int64_t last_raw, uint32_t max_text) {
  const std::string at = "record " + std::to_string(i) + ": ";
  switch (f) {
    case RecordFault::kKind:
      throw NativeError("UNKNOWN_KIND", at + "unknown kind " + std::to_string(r.kind));
    case RecordFault::kReservedFlag:
      throw NativeError("INVALID_ARGUMENT", at + "flag bit 7 is reserved");
    case RecordFault::kTurnRange:
      throw NativeError("INVALID_TURN", at + "turn numbers must be integers in [0, 2^53 - 1]");
    case RecordFault::kTurnSpan:
      throw NativeError("INVALID_TURN", at + "turnStart " + std::to_string(r.turn_start) + " > turnEnd " +
                                            std::to_string(r.turn_end));
    case RecordFault::kTurnOrder:
      throw NativeError("TURN_ORDER", at + "turn " + std::to_string(r.turn_start) +
                                          " goes backwards (the previous raw span starts at turn " +
                                          std::to_string(last_raw) + ")");
    case RecordFault::kText:
      throw NativeError("TEXT_TOO_LARGE", at + "text is " + std::to_string(r.text_len) + " bytes, the maximum is " +
                                              std::to_string(max_text));
    case RecordFault::kMeta:
      throw NativeError("TEXT_TOO_LARGE", at + "meta is " + std::to_string(r.meta_len) + " bytes, the maximum is " +
                                              std::to_string(format::kMaxMetaBytes));
    case RecordFault::kNoBytes:
    case RecordFault::kNone:
      break;
  }
  throw NativeError("INVALID_ARGUMENT", at + "missing text bytes");
}

/// Row i's numbers into r. False if a turn or the timestamp is not a value JS may pass.
inline bool FillNumbers(const BatchColumns& c, size_t i, RecordInput* r) {
  r->kind = c.kinds[i];
  r->flags = c.flags[i];
  r->role = c.roles[i];
  r->tokens = c.tokens[i];
  return TurnValue(c.turn_start[i], &r->turn_start) && TurnValue(c.turn_end[i], &r->turn_end) &&
         TimestampValue(c.timestamps[i], &r->timestamp_ms);
}

/// Slice [from, to) of a byte column, if it lies inside the buffer and within `max` bytes.
inline bool SliceOk(const BatchColumns::Bytes& b, uint32_t from, uint32_t to, uint64_t max) {
  return from <= to && to <= b.len && to - from <= max;
}

[[noreturn]] __attribute__((cold, noinline)) void ThrowBadSlice(const BatchColumns::Bytes& b, size_t i, uint64_t max) {
  const uint32_t from = b.offsets[i], to = b.offsets[i + 1];
  if (from <= to && to <= b.len) {
    throw NativeError("TEXT_TOO_LARGE", "record " + std::to_string(i) + ": " + b.field + " is " +
                                            std::to_string(to - from) + " bytes, the maximum is " + std::to_string(max));
  }
  throw NativeError("INVALID_ARGUMENT", "record " + std::to_string(i) + ": " + b.offsets_name + "[" + std::to_string(i) +
                                            "] = " + std::to_string(from) + " .. [" + std::to_string(i + 1) +
                                            "] = " + std::to_string(to) + " is not a slice of the " +
                                            std::to_string(b.len) + "-byte " + b.name +
                                            " (offsets must be non-decreasing and at most its length)");
}

}  // namespace

void ThrowBadTurn(size_t record, double d) {
  throw NativeError("INVALID_TURN", "record " + std::to_string(record) + ": turn " + std::to_string(d) +
                                        " is not an integer in [0, 2^53 - 1]");
}

void ThrowBadTimestamp(size_t record) {
  throw NativeError("INVALID_ARGUMENT",
                    "record " + std::to_string(record) + ": timestamp must be a finite number within ±(2^53 - 1)");
}

size_t FillRows(const BatchColumns& cols, RecordInput* records, size_t from, size_t to, uint32_t max_text) {
  const bool bytes = cols.texts.offsets != nullptr;
  const bool metas = cols.metas.offsets != nullptr;
  for (size_t i = from; i < to; ++i) {
    RecordInput& r = records[i];
    if (!FillNumbers(cols, i, &r)) return i;
    if (!bytes) continue;
    // Each offset read once: the caller's memory may change under us (a SharedArrayBuffer
    // another thread writes), and a slice checked is then the slice used.
    const uint32_t t0 = cols.texts.offsets[i], t1 = cols.texts.offsets[i + 1];
    if (!SliceOk(cols.texts, t0, t1, max_text)) return i;
    r.text = cols.texts.data + t0;
    r.text_len = t1 - t0;
    r.check_utf8 = true;
    if (metas) {
      const uint32_t m0 = cols.metas.offsets[i], m1 = cols.metas.offsets[i + 1];
      if (!SliceOk(cols.metas, m0, m1, format::kMaxMetaBytes)) return i;
      r.meta = cols.metas.data + m0;
      r.meta_len = m1 - m0;
    } else {
      r.meta = nullptr;
      r.meta_len = 0;
    }
  }
  return to;
}

void FillRowsOrThrow(const BatchColumns& cols, RecordInput* records, size_t n, uint32_t max_text) {
  if (FillRows(cols, records, 0, n, max_text) == n) return;
  for (size_t i = 0; i < n; ++i) {
    if (!FillNumbers(cols, i, &records[i])) {
      if (!TurnValue(cols.turn_start[i], &records[i].turn_start)) ThrowBadTurn(i, cols.turn_start[i]);
      if (!TurnValue(cols.turn_end[i], &records[i].turn_end)) ThrowBadTurn(i, cols.turn_end[i]);
      ThrowBadTimestamp(i);
    }
  }
  for (size_t i = 0; cols.texts.offsets != nullptr && i < n; ++i) {
    if (!SliceOk(cols.texts, cols.texts.offsets[i], cols.texts.offsets[i + 1], max_text)) {
      ThrowBadSlice(cols.texts, i, max_text);
    }
  }
  for (size_t i = 0; cols.metas.offsets != nullptr && i < n; ++i) {
    if (!SliceOk(cols.metas, cols.metas.offsets[i], cols.metas.offsets[i + 1], format::kMaxMetaBytes)) {
      ThrowBadSlice(cols.metas, i, format::kMaxMetaBytes);
    }
  }
}

uint64_t SpanLog::ValidateBatch(const RecordInput* records, size_t n, bool* has_raw_io, int64_t* last_raw_io) const {
  uint64_t total = 0;
  bool has_raw = *has_raw_io;
  int64_t last_raw = *last_raw_io;
  for (size_t i = 0; i < n; ++i) {
    const RecordInput& r = records[i];
    const RecordFault f = CheckRecord(r, options_.max_text_bytes, &has_raw, &last_raw);
    if (f != RecordFault::kNone) ThrowRecordFault(f, i, r, last_raw, options_.max_text_bytes);
    total += RecordSize(r.text_len + r.meta_len);
  }
  *has_raw_io = has_raw;
  *last_raw_io = last_raw;
  return total;
}

bool SpanLog::ColumnsTotal(const BatchColumns& cols, size_t n, uint64_t* total_out) const {
  const uint32_t* t = cols.texts.offsets;
  const uint32_t* m = cols.metas.offsets;
  uint64_t total = 0;
  bool ok = true;
  // Branch-free over the rows: one pass, and the answer is only needed at the end.
  for (size_t i = 0; i < n; ++i) {
    const uint64_t text = uint64_t{t[i + 1]} - t[i];
    const uint64_t meta = m != nullptr ? uint64_t{m[i + 1]} - m[i] : 0;
    ok &= t[i] <= t[i + 1] && text <= options_.max_text_bytes;
    if (m != nullptr) ok &= m[i] <= m[i + 1] && meta <= format::kMaxMetaBytes;
    total += RecordSize(text + meta);
  }
  ok &= t[n] <= cols.texts.len && (m == nullptr || m[n] <= cols.metas.len);
  *total_out = total;
  return ok;
}

bool SpanLog::NeedsRoll(uint64_t total) const {
  const Segment& last = segments_.back();
  return (last.records > 0 || staged_len_ > 0) && last.size + staged_len_ + total > options_.segment_bytes;
}

void SpanLog::ReserveStaging(uint64_t extra) {
  const uint64_t need = staged_len_ + extra;
  if (need <= staged_cap_) return;
  const uint64_t cap = std::max(need, staged_cap_ * 2);
  std::unique_ptr<uint8_t[]> next(new uint8_t[cap]);
  if (staged_len_ > 0) std::memcpy(next.get(), staged_.get(), staged_len_);
  staged_ = std::move(next);
  staged_cap_ = cap;
}

void SpanLog::ReserveSizes(size_t extra) {
  // Geometric, as push_back would grow it: group commit stages many small batches.
  const size_t need = staged_sizes_.size() + extra;
  if (need > staged_sizes_.capacity()) staged_sizes_.reserve(std::max(need, 2 * staged_sizes_.capacity()));
}

bool SpanLog::StageNeedsWrite(uint64_t batch_bytes) const {
  if (staged_len_ == 0 || segments_.empty()) return false;
  return segments_.back().size + staged_len_ + batch_bytes > options_.segment_bytes;
}

uint64_t SpanLog::BeginBatch(const RecordInput* records, size_t n, bool* has_raw, int64_t* last_raw) {
  if (n > format::kMaxId || staged_next_id_ + n - 1 > format::kMaxId) {
    throw NativeError("IO_ERROR", "span id space exhausted (ids stop at 2^53 - 1)");
  }
  // Validate the whole batch before a single byte is staged.
  const uint64_t total = ValidateBatch(records, n, has_raw, last_raw);

  if (NeedsRoll(total)) {
    if (staged_len_ > 0) {
      std::string msg;
      if (WriteStaged(&msg) != 0) throw NativeError("IO_ERROR", msg);
    }
    CreateSegment(next_id_, SealForRoll());
  }
  return total;
}

uint64_t SpanLog::SealForRoll() {
  Segment& old = segments_.back();
  // A sealed segment ends at its last record: its zero prefill (or, in `none`, its reserved
  // blocks) goes before the last fdatasync.
  const bool cut = old.HasTail();
  if (cut) {
    if (const int err = TruncateTo(old, old.size); err != 0) {
      throw NativeError("IO_ERROR", "cannot cut the bytes past the last record off " + old.path + " before rolling: " +
                                        ErrnoText(err) + WhereSuffix(old.path, old.size));
    }
  }
  if (options_.durability != Durability::kNone) {
    if (Io().fdatasync(old.fd) != 0) FailSync(errno, "fdatasync of " + old.path + " before rolling");
    synced_seq_ = written_seq_;
    return 0;
  }
  // `none` does not wait for the old segment's writeback (an fdatasync of 64 MiB): the new
  // header names the first id not yet durable, and recovery may lose it and everything
  // after it, whole segments included (docs/FORMAT.md, "Across segments"). flush() and
  // close() sync the sealed segments, oldest first, before the last one.
  if (unsynced_from_ == 0) {
    if (durable_end_ >= old.size) {
      // Every record is durable (a flush just before): sync the cut too — of reserved
      // blocks, or of a failed write's bytes (DropStaged) — which writes no data, so the
      // sealed segment is whole on disk and the new header can say so.
      if (Io().fdatasync(old.fd) != 0) FailSync(errno, "fdatasync of " + old.path + " before rolling");
      return 0;
    }
    unsynced_from_ = IdAtOffset(segments_.size() - 1, durable_end_);
    unsynced_segment_ = segments_.size() - 1;
  }
  needs_mark_ = true;
  return unsynced_from_;
}

int SpanLog::WriteCheckpoint(uint64_t synced_end) {
  Segment& seg = segments_.back();
  uint8_t h[format::kRecordHeaderSize];
  EncodeCheckpoint(h, next_id_, synced_end);
  if (Io().pwrite(seg.fd, h, sizeof h, static_cast<off_t>(seg.size)) != static_cast<ssize_t>(sizeof h)) {
    const int err = errno;
    // Part of it may have landed past the last record: if it cannot be cut off, the
    // invariant that the file ends at its last record is gone, as in DropStaged.
    if (TruncateTo(seg, seg.size) != 0) failed_ = true;
    return err == 0 ? EIO : err;
  }
  seg.size += sizeof h;
  seg.file_size = std::max(seg.file_size, seg.size);
  return 0;
}

uint64_t SpanLog::Stage(const RecordInput* records, size_t n) {
  RequireWritable();
  if (n == 0) return staged_next_id_;
  bool has_raw = staged_has_raw_;
  int64_t last_raw = staged_last_raw_;
  const uint64_t total = BeginBatch(records, n, &has_raw, &last_raw);
  const uint64_t first = staged_next_id_;
  EncodeStaged(records, n, total, has_raw, last_raw);
  return first;
}

void SpanLog::EncodeStaged(const RecordInput* records, size_t n, uint64_t total, bool has_raw, int64_t last_raw) {
  ReserveStaging(total);
  // So that push_back below cannot throw with part of the batch's sizes recorded.
  ReserveSizes(n);
  BadRecord bad;
  if (!EncodeRecords(staged_.get() + staged_len_, records, 0, n, n, staged_next_id_, durable_end_, &bad)) {
    // Nothing of this batch counts as staged: its bytes past staged_len_ are scratch.
    throw InvalidUtf8(bad);
  }
  for (size_t i = 0; i < n; ++i) staged_sizes_.push_back(RecordSize(records[i].text_len + records[i].meta_len));
  MarkStaged(n, total, has_raw, last_raw);
}

void SpanLog::MarkStaged(size_t n, uint64_t total, bool has_raw, int64_t last_raw) {
  staged_len_ += total;
  staged_next_id_ += n;
  staged_has_raw_ = has_raw;
  staged_last_raw_ = last_raw;
}

void SpanLog::RestartStaging() {
  staged_next_id_ = next_id_;
  staged_has_raw_ = has_raw_;
  staged_last_raw_ = last_raw_turn_start_;
  if (!options_.read_only) {
    // A writer's encode buffer, touched once now so the first appends do not page-fault
    // it in (the faults showed in profiles of batches appended to a freshly opened log).
    ReserveStaging(kStagingPrefault);
    std::memset(staged_.get(), 0, kStagingPrefault);
  }
}

int SpanLog::WriteStaged(std::string* message) {
  if (staged_len_ == 0) return 0;
  if (released_ || failed_) {
    // The log failed (or closed) between staging and writing: nothing staged may land.
    DropStaged(false);
    *message = failed_ ? "an earlier fsync failed; the log refuses every write" : "the span log is closed";
    return EIO;
  }
  Segment& seg = segments_.back();
  const uint64_t total = staged_len_;
  Preallocate(seg, seg.size + total);
  if (const int err = PwriteRange(seg.fd, staged_.get(), 0, total, seg.size); err != 0) {
    DropStaged(true);
    *message = WriteFailure(err);
    return err;
  }
  CommitStaged(total);
  return 0;
}

void SpanLog::DropStaged(bool cut_file) {
  // Take back whatever of it reached the file, so the file ends on a record boundary again.
  if (cut_file && TruncateTo(segments_.back(), segments_.back().size) != 0) failed_ = true;
  staged_len_ = 0;
  staged_sizes_.clear();
  RestartStaging();
}

std::string SpanLog::WriteFailure(int err) const {
  const Segment& seg = segments_.back();
  return "write to " + seg.path + " failed: " + ErrnoText(err) + WhereSuffix(seg.path, seg.size);
}

void SpanLog::AddStagedOffsets() {
  const Segment& seg = segments_.back();
  const uint64_t seg_index = segments_.size() - 1;
  uint64_t off = seg.size;
  // No exact reserve here: it would reallocate (and copy) the whole table on every write;
  // push_back's doubling keeps the growth amortized.
  for (uint64_t rs : staged_sizes_) {
    offsets_.push_back((seg_index << kOffsetBits) | off);
    off += rs;
  }
}

void SpanLog::CommitStaged(uint64_t total, bool offsets_added) {
  Segment& seg = segments_.back();
  if (!offsets_added) AddStagedOffsets();
  seg.records += staged_sizes_.size();
  seg.size += total;
  seg.file_size = std::max(seg.file_size, seg.size);
  last_write_bytes_ = total;
  next_id_ = staged_next_id_;
  has_raw_ = staged_has_raw_;
  last_raw_turn_start_ = staged_last_raw_;
  written_seq_ += total;
  wrote_this_session_ = true;
  staged_len_ = 0;
  staged_sizes_.clear();
  // One huge batch should not pin its buffer for the log's life.
  if (staged_cap_ > (uint64_t{32} << 20)) {
    staged_.reset();
    staged_cap_ = 0;
  }
  // Grow an existing mapping now rather than on a later read, so a read never moves the
  // mapping: a SpanView stays valid until the next append (span_source.h), even across a
  // catch-up loop that reads many records. A failure here is retried by the read path.
  if (seg.map != nullptr) {
    try {
      EnsureMapped(seg, seg.size);
    } catch (const NativeError&) {
    }
  }
}

void SpanLog::WriteBatchParallel(RecordInput* records, size_t n, uint64_t total, bool has_raw, int64_t last_raw,
                                 const BatchColumns* columns) {
  ReserveStaging(total);
  Segment& seg = segments_.back();
  ParallelBatch& b = *parallel_;
  b.records = records;
  b.n = n;
  b.columns = columns;
  b.max_text = options_.max_text_bytes;
  b.out = staged_.get();
  b.first_id = staged_next_id_;
  b.synced_end = durable_end_;
  b.fd = seg.fd;
  b.file_at = seg.size;
  // Plan: chunks cut at the first record boundary at or past each multiple of
  // kParallelChunk in the file, and every record's size for CommitStaged. Everything that
  // can throw (bad_alloc) happens before any state changes.
  b.Reserve(static_cast<size_t>(total / kParallelChunk) + 2);
  ReserveSizes(n);
  // Room for the batch's offsets now, so filling them in while the helper finishes its last
  // chunk (below) cannot throw. Doubling, as push_back would grow the table.
  const size_t offsets_before = offsets_.size();
  if (offsets_.capacity() < offsets_before + n) offsets_.reserve(std::max(offsets_before + n, 2 * offsets_.capacity()));
  b.count = 0;
  uint64_t at = 0;
  size_t from = 0;
  uint64_t begin = 0;
  // The batch offset of the first kParallelChunk multiple of the file past batch offset `at`.
  const auto next_cut = [&seg](uint64_t at) { return ((seg.size + at + kParallelChunk) & ~(kParallelChunk - 1)) - seg.size; };
  uint64_t cut = next_cut(0);
  // Record sizes: from the offsets while the rows are still columns (ColumnsTotal checked them).
  const uint32_t* text_at = columns != nullptr ? columns->texts.offsets : nullptr;
  const uint32_t* meta_at = columns != nullptr ? columns->metas.offsets : nullptr;
  for (size_t i = 0; i < n; ++i) {
    const uint64_t payload = text_at == nullptr
                                 ? records[i].text_len + records[i].meta_len
                                 : uint64_t{text_at[i + 1] - text_at[i]} + (meta_at != nullptr ? meta_at[i + 1] - meta_at[i] : 0);
    const uint64_t rs = RecordSize(payload);
    staged_sizes_.push_back(rs);
    at += rs;
    if (at >= cut || i + 1 == n) {
      ParallelBatch::Chunk& k = b.chunks[b.count++];
      k.from = from;
      k.to = i + 1;
      k.begin = begin;
      k.end = at;
      k.bad = BadRecord{};
      from = i + 1;
      begin = at;
      cut = next_cut(at);
    }
  }
  b.next.store(0, std::memory_order_relaxed);
  b.turn.store(0, std::memory_order_relaxed);
  b.stopped.store(false, std::memory_order_relaxed);
  b.sleepers.store(0, std::memory_order_relaxed);
  b.has_raw = has_raw;
  b.last_raw = last_raw;
  b.wrote = 0;
  b.failed = SIZE_MAX;
  b.err = 0;
  Preallocate(seg, seg.size + total);
  helper_->Begin(&b);
  b.Work();
  // The helper may still be encoding or writing the last chunks it claimed: meanwhile, the
  // offset table (taken back if the batch fails).
  AddStagedOffsets();
  b.Await([&] { return b.Finished(); });
  // No chunk may be claimed after this; End() waits for the helper to leave the job.
  b.next.store(b.count, std::memory_order_relaxed);
  helper_->End();

  if (!b.stopped.load()) {
    if (columns != nullptr) {
      has_raw = b.has_raw;
      last_raw = b.last_raw;
    }
    MarkStaged(n, total, has_raw, last_raw);
    CommitStaged(total, /*offsets_added=*/true);
    return;
  }
  offsets_.resize(offsets_before);
  // All of the batch or none of it: cut back what was written (as WriteStaged does).
  DropStaged(b.wrote > 0 || b.err != 0);
  if (columns != nullptr) {
    // A chunk stopped at a row that does not convert or check, or at a bad byte or a failed
    // write: the first two are found again here, over the whole batch in order, so the
    // error is the one a sequential check gives (every row's conversion before any record
    // check, and either before any UTF-8 check or write), whichever chunk saw its problem first.
    FillRowsOrThrow(*columns, records, n, options_.max_text_bytes);
    (void)ValidateBatch(records, n, &has_raw, &last_raw);
  }
  if (b.err != 0) throw NativeError("IO_ERROR", WriteFailure(b.err));
  if (b.chunks[b.failed].bad.what == nullptr) {
    // Unreachable: a chunk stops at a row only where the checks above throw.
    throw NativeError("INVALID_ARGUMENT", "record " + std::to_string(b.chunks[b.failed].from) + ": refused");
  }
  throw InvalidUtf8(b.chunks[b.failed].bad);
}

uint64_t SpanLog::Append(const RecordInput* records, size_t n) {
  uint64_t first;
  if (n > 1 && staged_len_ == 0) {
    RequireWritable();
    bool has_raw = staged_has_raw_;
    int64_t last_raw = staged_last_raw_;
    const uint64_t total = BeginBatch(records, n, &has_raw, &last_raw);
    first = staged_next_id_;
    if (total >= kParallelBatchBytes && parallel_encode_ && Helper() != nullptr) {
      // Validated already: the chunks only encode (the records are not written to).
      WriteBatchParallel(const_cast<RecordInput*>(records), n, total, has_raw, last_raw, nullptr);
    } else {
      EncodeStaged(records, n, total, has_raw, last_raw);
      std::string msg;
      if (WriteStaged(&msg) != 0) throw NativeError("IO_ERROR", msg);
    }
  } else {
    first = Stage(records, n);
    std::string msg;
    if (WriteStaged(&msg) != 0) throw NativeError("IO_ERROR", msg);
  }
  FinishAppend(n);
  return first;
}

void SpanLog::FinishAppend(size_t n) {
  if (n > 0 && options_.durability == Durability::kSync) {
    Segment& seg = segments_.back();
    PrefillAhead();
    if (Io().fdatasync(seg.fd) != 0) FailSync(errno, "fdatasync of " + seg.path);
    synced_seq_ = written_seq_;
    durable_end_ = seg.size;
    NoteDurable();
  }
}

uint64_t SpanLog::AppendColumns(const BatchColumns& caller_cols, RecordInput* rows, size_t n) {
  if (n > 1 && staged_len_ == 0 && caller_cols.texts.offsets != nullptr && parallel_encode_ && !options_.read_only &&
      !failed_ && staged_next_id_ + n - 1 <= format::kMaxId) {
    // The offsets are read three times from here (sizes, chunk plan, each chunk's rows), so
    // they are copied once first: were the caller's memory to change meanwhile (a
    // SharedArrayBuffer another thread writes), rows would no longer match the planned
    // sizes, and a chunk would encode past its end of the staging buffer (a heap
    // overflow under ASan). 4 bytes a row.
    BatchColumns cols = caller_cols;
    offsets_copy_.assign(caller_cols.texts.offsets, caller_cols.texts.offsets + n + 1);
    cols.texts.offsets = offsets_copy_.data();
    if (caller_cols.metas.offsets != nullptr) {
      meta_offsets_copy_.assign(caller_cols.metas.offsets, caller_cols.metas.offsets + n + 1);
      cols.metas.offsets = meta_offsets_copy_.data();
    }
    // A batch that rolls the segment is checked whole first (below): a refused batch leaves
    // no new segment behind.
    uint64_t total = 0;
    if (ColumnsTotal(cols, n, &total) && total >= kParallelBatchBytes && !NeedsRoll(total) && Helper() != nullptr) {
      const uint64_t first = staged_next_id_;
      WriteBatchParallel(rows, n, total, staged_has_raw_, staged_last_raw_, &cols);
      FinishAppend(n);
      return first;
    }
  }
  FillRowsOrThrow(caller_cols, rows, n, options_.max_text_bytes);
  return Append(rows, n);
}

bool SpanLog::read(uint64_t id, SpanView* out) const {
  RecordView v;
  if (!Read(id, &v)) return false;
  *out = v.span;
  return true;
}

bool SpanLog::Read(uint64_t id, RecordView* out) const {
  if (released_) throw NativeError("CLOSED", "the span log is closed");
  if (id < first_id_ || id >= next_id_) return false;
  const uint64_t entry = offsets_[id - first_id_];
  const Segment& s = segments_[entry >> kOffsetBits];
  const uint64_t off = entry & kOffsetMask;
  EnsureMapped(s, off + format::kRecordHeaderSize);
  RecordHeader h;
  std::memcpy(&h, s.map + off, sizeof h);
  const uint64_t rs = RecordSize(h.payload_len);
  if (off + rs > s.size || h.id != id || h.text_len > h.payload_len) {
    throw NativeError("CORRUPT", "record " + std::to_string(id) + " changed on disk" + WhereSuffix(s.path, off));
  }
  EnsureMapped(s, off + rs);
  if (Crc32c(0, s.map + off + 4, rs - 4) != h.crc) {
    throw NativeError("CORRUPT", "record " + std::to_string(id) + " fails its CRC" + WhereSuffix(s.path, off));
  }
  SpanView& v = out->span;
  v.id = id;
  v.kind = static_cast<RecordKind>(h.kind);
  v.flags = static_cast<uint8_t>(h.flags & ~format::kFlagBatchContinues);
  v.role = h.role;
  v.turn_start = h.turn_start;
  v.turn_end = h.turn_end;
  v.timestamp_ms = h.timestamp_ms;
  v.tokens = h.tokens;
  v.text = reinterpret_cast<const char*>(s.map + off + format::kRecordHeaderSize);
  v.text_len = h.text_len;
  out->meta = v.text + h.text_len;
  out->meta_len = h.payload_len - h.text_len;
  out->span.meta = out->meta;
  out->span.meta_len = out->meta_len;
  return true;
}

// A reader scans bytes a live writer may still be landing: with a sync/group writer's zeros
// inside the file size, one pread can copy the page of record X before X lands and a later
// page after record Y lands, and Y (stamped with `synced end` past X, as X was durable when
// Y was written) then makes X's zeros look like damage to acknowledged data. The writer
// wrote X before it staged any record whose `synced end` passes X, so a pread that starts
// after one that saw Y sees X: scan again while the corrupt offset moves forward; the same
// offset twice is real damage. Each pass needs a new race, and the offset only grows.
template <typename Scan>
RecoveryResult SpanLog::ScanLive(const Segment& s, uint64_t from, uint64_t to, Scan scan) const {
  int64_t last_error = -1;
  for (;;) {
    const uint64_t got = ReadRange(s.fd, from, to, &tail_buf_);
    RecoveryResult r = scan(SegmentBytes{tail_buf_.data(), from, from + got});
    if (r.outcome != RecoveryOutcome::kCorrupt || r.error_offset <= last_error) return r;
    last_error = r.error_offset;
  }
}

void SpanLog::ScanTail(Segment& s, bool must_be_clean) {
  struct stat st;
  if (::fstat(s.fd, &st) != 0) throw NativeError("IO_ERROR", "cannot stat " + s.path + ": " + ErrnoText(errno));
  const uint64_t file_size = static_cast<uint64_t>(st.st_size);
  if (file_size < s.size) {
    throw NativeError("CORRUPT", "segment " + s.path + " shrank below records already read" + WhereSuffix(s.path, file_size));
  }
  if (file_size == s.size) return;
  if (!must_be_clean) {
    // A sync/group writer's file holds zeros past its last record, so the size no longer
    // says whether anything was appended: when no record has begun at the known end,
    // nothing is new (and a refresh stays a 64-byte read, not a scan of the prefill).
    uint8_t head[format::kRecordHeaderSize];
    const ssize_t n = ::pread(s.fd, head, sizeof head, static_cast<off_t>(s.size));
    if (n < static_cast<ssize_t>(sizeof head) || AllZero(head, sizeof head)) return;
  }
  // pread, not the mapping: the writer may cut its zero prefill off while this runs.
  std::vector<uint64_t> local;
  const RecoveryResult r = ScanLive(s, s.size, file_size, [&](const SegmentBytes& b) {
    RecoveryResult out;
    local.clear();
    ScanRecords(b, s.size, s.first_id + s.records, &local, &out);
    return out;
  });
  if (r.outcome == RecoveryOutcome::kCorrupt ||
      (must_be_clean && r.outcome != RecoveryOutcome::kClean)) {
    throw NativeError("CORRUPT", "segment " + s.path + ": " + r.message +
                                     WhereSuffix(s.path, static_cast<uint64_t>(r.error_offset)));
  }
  const uint64_t seg_index = static_cast<uint64_t>(&s - segments_.data());
  for (uint64_t off : local) offsets_.push_back((seg_index << kOffsetBits) | off);
  s.records += r.records;
  s.size = r.valid_end;
  // Mapped lazily by reads, and never past the records: bytes beyond may be cut off.
  s.file_size = r.valid_end;
  if (tail_buf_.capacity() > (uint64_t{4} << 20)) std::vector<uint8_t>().swap(tail_buf_);
  next_id_ += r.records;
  if (r.has_raw) {
    has_raw_ = true;
    last_raw_turn_start_ = r.last_raw_turn_start;
  }
}

uint64_t SpanLog::Refresh() {
  if (released_) throw NativeError("CLOSED", "the span log is closed");
  if (!options_.read_only) return next_id_;
  if (!segments_.empty()) ScanTail(segments_.back(), false);
  DirListing listing = ListDir(dir_);
  const uint64_t known = segments_.empty() ? 0 : segments_.back().first_id;
  for (const auto& [first, name] : listing.segments) {
    if (first <= known) continue;
    if (!segments_.empty() && first != next_id_ && SuccessorMayBeUnsynced(dir_ + "/" + name)) {
      // Records before this segment are missing and its header says they may never have
      // become durable: the torn tail of a crashed `none` writer that no writer has
      // recovered yet (it will delete this segment), or a live writer's roll whose last
      // records this refresh has not read yet (the next one will). Either way the log
      // ends here for now.
      break;
    }
    // A newer segment exists, so the writer sealed the one before it: it must be whole.
    if (!segments_.empty()) ScanTail(segments_.back(), true);
    Segment s;
    s.path = dir_ + "/" + name;
    s.first_id = first;
    s.size = format::kSegmentHeaderSize;
    s.fd = Io().open(s.path.c_str(), O_RDONLY, 0);
    if (s.fd < 0 && errno == ENOENT) break;  // deleted by a writer's recovery since the listing
    if (s.fd < 0) throw NativeError("IO_ERROR", "cannot open " + s.path + ": " + ErrnoText(errno));
    segments_.push_back(s);
    Segment& seg = segments_.back();
    struct stat st;
    if (::fstat(seg.fd, &st) != 0 || static_cast<uint64_t>(st.st_size) < format::kSegmentHeaderSize) {
      throw NativeError("CORRUPT", "segment " + seg.path + " has no header" + WhereSuffix(seg.path, 0));
    }
    seg.file_size = format::kSegmentHeaderSize;
    EnsureMapped(seg, format::kSegmentHeaderSize);
    RecoveryResult hr = RecoverSegment(seg.map, format::kSegmentHeaderSize, nullptr);
    if (hr.outcome == RecoveryOutcome::kCorrupt || hr.first_id != first) {
      throw NativeError("CORRUPT", "segment " + seg.path + ": bad header" + WhereSuffix(seg.path, 0));
    }
    if (segments_.size() == 1) {
      first_id_ = first;
      next_id_ = first;
    } else if (first != next_id_) {
      throw NativeError("CORRUPT", "segment " + seg.path + " starts at id " + std::to_string(first) + ", expected " +
                                       std::to_string(next_id_) + WhereSuffix(seg.path, 16));
    }
    ScanTail(seg, false);
  }
  staged_next_id_ = next_id_;
  return next_id_;
}

VerifyResult SpanLog::Verify() const {
  if (released_) throw NativeError("CLOSED", "the span log is closed");
  VerifyResult out;
  const std::string extent_path = dir_ + "/EXTENT";
  // Read first, as at open: every record it vouches for was written before it.
  const LogExtent extent = ReadExtentFile(extent_path);
  std::vector<SegmentFinding> findings;
  for (const Segment& s : segments_) {
    struct stat st;
    if (::fstat(s.fd, &st) != 0) {
      out.ok = false;
      out.problems.push_back({s.path, 0, "corrupt", "cannot stat: " + ErrnoText(errno)});
      continue;
    }
    size_t len = static_cast<size_t>(st.st_size);
    const bool last = &s == &segments_.back();
    // The bytes as they are now, not as this log last mapped them: a fresh whole-file
    // mapping, or for a reader's last segment (which a live writer may cut back) a pread.
    void* p = nullptr;
    RecoveryResult live;
    const size_t idx = static_cast<size_t>(&s - segments_.data());
    const bool reader_tail = options_.read_only && (last || SuccessorMayBeUnsynced(segments_[idx + 1].path));
    if (reader_tail) {
      live = ScanLive(s, 0, len, [&](const SegmentBytes& b) { return RecoverSegment(b.p, static_cast<size_t>(b.end), nullptr); });
      len = tail_buf_.size();  // what the last read returned (ScanLive leaves it there)
    } else if (len > 0) {
      p = ::mmap(nullptr, len, PROT_READ, MAP_SHARED, s.fd, 0);
      if (p == MAP_FAILED) {
        out.ok = false;
        out.problems.push_back({s.path, 0, "corrupt", "cannot map: " + ErrnoText(errno)});
        continue;
      }
    }
    const uint8_t* bytes = p != nullptr ? static_cast<const uint8_t*>(p) : tail_buf_.data();
    size_t checked = len;
    if (!options_.read_only && last && len > s.size) {
      // The writer's own zero prefill (sync/group): zeros, and not part of any record.
      checked = static_cast<size_t>(s.size);
      if (!AllZero(bytes + checked, len - checked)) {
        out.ok = false;
        out.problems.push_back({s.path, s.size, "corrupt", "non-zero bytes after the last record"});
      }
    }
    const RecoveryResult r = reader_tail ? live : RecoverSegment(bytes, checked, nullptr);
    if (p != nullptr) ::munmap(p, len);
    if (tail_buf_.capacity() > (uint64_t{4} << 20)) std::vector<uint8_t>().swap(tail_buf_);
    // Bytes that hold records (a live writer's zeros past them are not "checked" data).
    out.bytes += reader_tail ? r.valid_end : checked;
    out.records += r.records;
    findings.push_back({s.first_id, r});
    const bool lost_known = r.valid_end < s.size || r.records < s.records;
    if (r.outcome == RecoveryOutcome::kCorrupt || lost_known ||
        (r.outcome == RecoveryOutcome::kTornTail && !options_.read_only)) {
      out.ok = false;
      out.problems.push_back({s.path, static_cast<uint64_t>(r.error_offset < 0 ? 0 : r.error_offset),
                              RecoveryOutcomeName(r.outcome), r.message});
    }
  }
  // A segment's own damage is the problem to report; what EXTENT adds is the damage that
  // leaves every segment clean (a segment or durable records missing, a foreign segment).
  if (out.ok && findings.size() == segments_.size()) {
    LogRecoveryPlan whole;
    whole.keep = findings.size();
    const LogRecoveryPlan x = CheckLogExtent(extent, findings, whole);
    // A reader knows the segments of its last open or refresh; a live writer may have rolled
    // past them since, and EXTENT vouches for what it wrote there. Short only if none exists.
    bool newer = false;
    if (x.corrupt && x.durable_end_short && options_.read_only) {
      const DirListing listing = ListDir(dir_);
      for (const auto& seg : listing.segments) newer = newer || seg.first > segments_.back().first_id;
    }
    if (x.corrupt && !newer) {
      out.ok = false;
      out.problems.push_back({x.corrupt_extent ? extent_path : segments_[x.corrupt_segment].path, x.corrupt_offset,
                              "corrupt", x.message});
    }
  }
  return out;
}

SyncTarget SpanLog::PrepareSync() const {
  SyncTarget t;
  if (segments_.empty()) return t;
  if (unsynced_from_ != 0) {
    for (size_t i = unsynced_segment_; i + 1 < segments_.size(); ++i) t.sealed_fds.push_back(segments_[i].fd);
  }
  t.fd = segments_.back().fd;
  t.seq = written_seq_;
  t.segment = segments_.size() - 1;
  t.segment_end = segments_.back().size;
  return t;
}

int SpanLog::SyncFiles(const SyncTarget& target) {
  for (const int fd : target.sealed_fds) {
    if (Io().fdatasync(fd) != 0) return errno;
  }
  if (target.fd < 0) return 0;
  return Io().fdatasync(target.fd) == 0 ? 0 : errno;
}

void SpanLog::FinishSync(const SyncTarget& target, int err) {
  if (err != 0) {
    failed_ = true;
    return;
  }
  synced_seq_ = std::max(synced_seq_, target.seq);
  if (target.segment + 1 == segments_.size()) {
    durable_end_ = std::max(durable_end_, target.segment_end);
    unsynced_from_ = 0;
    NoteDurable();
    if (needs_mark_ && !read_only() && !failed_) {
      // Every sealed segment is durable now: a checkpoint says so to recovery, which would
      // otherwise take damage in them for a torn write (FORMAT.md, "Across segments"). It
      // vouches only for what the sync covered, and is durable with the next fdatasync. A
      // failed write of it costs only that evidence.
      if (WriteCheckpoint(durable_end_) == 0) needs_mark_ = false;
    }
  }
  // Rolled since the request: what the sync covered is durable, but unsynced_from_ stays
  // where the roll put it (an older id: recovery is only more lenient than it need be).
}

int SpanLog::SyncAndCheckpointForClose() {
  if (options_.read_only || failed_ || released_ || segments_.empty()) return 0;
  {
    // The binding writes staged records before closing; this keeps close whole regardless.
    std::string msg;
    if (int err = WriteStaged(&msg); err != 0) return err;
  }
  // Sealed segments first: the checkpoint below says everything before it is durable.
  if (const int err = SyncSealed(); err != 0) return err;
  Segment& seg = segments_.back();
  // A closed segment ends at its checkpoint: the zero prefill goes first (the fdatasync
  // after the checkpoint makes the cut durable too). Should the cut fail, the zeros stay and
  // the next open cuts them as a torn tail; nothing written is lost either way.
  if (seg.HasTail()) (void)TruncateTo(seg, seg.size);
  if (synced_seq_ != written_seq_ || durable_end_ != seg.size) {
    if (Io().fdatasync(seg.fd) != 0) {
      failed_ = true;
      return errno;
    }
    synced_seq_ = written_seq_;
    durable_end_ = seg.size;
  }
  if (!wrote_this_session_ && !needs_mark_) return WriteExtent(next_id_, true);
  if (const int err = WriteCheckpoint(seg.size); err != 0) return err;
  if (Io().fdatasync(seg.fd) != 0) {
    failed_ = true;
    return errno;
  }
  durable_end_ = seg.size;
  wrote_this_session_ = false;
  needs_mark_ = false;
  return WriteExtent(next_id_, true);
}

void SpanLog::Release() {
  if (released_) return;
  released_ = true;
  if (helper_) helper_->Stop();
  for (Segment& s : segments_) {
    Unmap(s);
    if (s.fd >= 0) Io().close(s.fd);
    s.fd = -1;
  }
  if (extent_fd_ >= 0) {
    Io().close(extent_fd_);
    extent_fd_ = -1;
  }
  if (lock_fd_ >= 0) {
    Io().close(lock_fd_);  // closing the last fd of the description drops the flock
    lock_fd_ = -1;
  }
}

uint64_t SpanLog::bytes() const {
  uint64_t b = 0;
  for (const Segment& s : segments_) b += s.size;
  return b;
}

}  // namespace spanguard
