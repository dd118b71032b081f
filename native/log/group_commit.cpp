// Group commit inside SpanLog: appends staged in memory with their ids assigned, written by
// one pwrite per burst, and the sync that makes a burst durable (prepared on the owning
// thread, run on any, finished on the owning thread), and the final sync at close.

#include <fcntl.h>
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <cstring>

#include "log/log_internal.h"
#include "log/span_log.h"

namespace spanguard {

using format::RecordHeader;
using format::RecordSize;
using format::SegmentHeader;
using namespace log_detail;

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

}  // namespace spanguard
