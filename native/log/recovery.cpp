// Recovery as pure functions over bytes: one segment's scan (RecoverSegment), the plan over
// a log's segments (PlanLogRecovery) and its check against EXTENT (CheckLogExtent).
// docs/FORMAT.md states the rules.

#include "log/log_internal.h"

namespace spanguard {

using format::RecordHeader;
using format::RecordSize;
using format::SegmentHeader;
using namespace log_detail;

namespace log_detail {

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

}  // namespace log_detail

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
      return corrupt(
          i, 16, "holds first id " + std::to_string(r.first_id) + ", its name says " + std::to_string(seg.first_id));
    }
    if (i > 0 && seg.first_id != next) {
      return corrupt(i, 16,
                     "starts at id " + std::to_string(seg.first_id) + " but the previous segment ends before id " +
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
                   "is the first segment but starts at id " + std::to_string(segments[0].first_id) +
                       " while the log starts at id " + std::to_string(x.log_start) +
                       " (EXTENT): the segments holding the first ids are missing");
  }
  const size_t last = plan.keep - 1;
  const RecoveryResult& lr = segments[last].result;
  const uint64_t end = segments[last].first_id + lr.records;
  if (end < x.durable_next) {
    out.durable_end_short = true;
    return corrupt(last, lr.valid_end, false,
                   "ends the log at id " + std::to_string(end - 1) + " but ids up to " +
                       std::to_string(x.durable_next - 1) +
                       " were durable (EXTENT): durable records after this offset, or whole segments, are missing");
  }
  return out;
}

}  // namespace spanguard
