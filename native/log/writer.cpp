// The append path of SpanLog: a batch's columns into rows, the checks every record passes,
// and the write of a batch, on one thread or (large batches) two.

#include <fcntl.h>
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <cstring>

#include "log/append_helper.h"
#include "log/log_internal.h"
#include "log/span_log.h"

namespace spanguard {

using format::RecordHeader;
using format::RecordSize;
using format::SegmentHeader;
using namespace log_detail;

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
      throw NativeError("INVALID_TURN",
                        at + "turnStart " + std::to_string(r.turn_start) + " > turnEnd " + std::to_string(r.turn_end));
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
                                            std::to_string(to - from) + " bytes, the maximum is " +
                                            std::to_string(max));
  }
  throw NativeError("INVALID_ARGUMENT", "record " + std::to_string(i) + ": " + b.offsets_name + "[" +
                                            std::to_string(i) + "] = " + std::to_string(from) + " .. [" +
                                            std::to_string(i + 1) + "] = " + std::to_string(to) +
                                            " is not a slice of the " + std::to_string(b.len) + "-byte " + b.name +
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
      throw NativeError("IO_ERROR", "cannot cut the bytes past the last record off " + old.path +
                                        " before rolling: " + ErrnoText(err) + WhereSuffix(old.path, old.size));
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
  const auto next_cut = [&seg](uint64_t at) {
    return ((seg.size + at + kParallelChunk) & ~(kParallelChunk - 1)) - seg.size;
  };
  uint64_t cut = next_cut(0);
  // Record sizes: from the offsets while the rows are still columns (ColumnsTotal checked them).
  const uint32_t* text_at = columns != nullptr ? columns->texts.offsets : nullptr;
  const uint32_t* meta_at = columns != nullptr ? columns->metas.offsets : nullptr;
  for (size_t i = 0; i < n; ++i) {
    const uint64_t payload = text_at == nullptr ? records[i].text_len + records[i].meta_len
                                                : uint64_t{text_at[i + 1] - text_at[i]} +
                                                      (meta_at != nullptr ? meta_at[i + 1] - meta_at[i] : 0);
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

}  // namespace spanguard
