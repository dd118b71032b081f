// SpanLog: opening a log (recovery of its segments and EXTENT), the segment files and their
// mappings, reads, refresh for readers, verify and release. The append path is in writer.cpp
// and group_commit.cpp.

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <random>

#include "log/append_helper.h"
#include "log/log_internal.h"
#include "log/span_log.h"

namespace spanguard {

using format::RecordHeader;
using format::RecordSize;
using format::SegmentHeader;
using namespace log_detail;

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
    throw NativeError("CORRUPT",
                      "log extent " + extent_path + " " + plan.message + WhereSuffix(extent_path, plan.corrupt_offset));
  }
  if (plan.corrupt) {
    const Segment& seg = segments_[plan.corrupt_segment];
    throw NativeError("CORRUPT",
                      "segment " + seg.path + " " + plan.message + WhereSuffix(seg.path, plan.corrupt_offset));
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
        throw NativeError("FSYNC_FAILED", "fdatasync failed after truncating " + seg.path + ": " + ErrnoText(errno) +
                                              WhereSuffix(seg.path, r.valid_end));
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
      throw NativeError("FSYNC_FAILED", "fdatasync failed at open of the sealed segments from " +
                                            segments_[oldest].path + ": " + ErrnoText(err) +
                                            WhereSuffix(segments_[oldest].path, 0));
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
        throw NativeError("IO_ERROR",
                          "cannot write " + extent_path + ": " + ErrnoText(err) + WhereSuffix(extent_path, 0));
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
    if (::pwrite(extent_fd_, slot, sizeof slot, at) != static_cast<ssize_t>(sizeof slot))
      return errno == 0 ? EIO : errno;
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
    const ssize_t n =
        Io().pwrite(s.fd, g_zeros, static_cast<size_t>(std::min(want - at, kPrefillChunk)), static_cast<off_t>(at));
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

bool SpanLog::Read(uint64_t id, SpanView* out) const {
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
    throw NativeError("CORRUPT",
                      "segment " + s.path + " shrank below records already read" + WhereSuffix(s.path, file_size));
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
  if (r.outcome == RecoveryOutcome::kCorrupt || (must_be_clean && r.outcome != RecoveryOutcome::kClean)) {
    throw NativeError(
        "CORRUPT", "segment " + s.path + ": " + r.message + WhereSuffix(s.path, static_cast<uint64_t>(r.error_offset)));
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
      live = ScanLive(s, 0, len,
                      [&](const SegmentBytes& b) { return RecoverSegment(b.p, static_cast<size_t>(b.end), nullptr); });
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
      out.problems.push_back(
          {x.corrupt_extent ? extent_path : segments_[x.corrupt_segment].path, x.corrupt_offset, "corrupt", x.message});
    }
  }
  return out;
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

uint64_t SpanLog::ReleaseResident() const {
  uint64_t advised = 0;
  for (size_t i = 0; i + 1 < segments_.size(); ++i) {
    const Segment& s = segments_[i];
    if (s.map == nullptr || s.map_len == 0) continue;
    if (::madvise(const_cast<uint8_t*>(s.map), s.map_len, MADV_DONTNEED) == 0) advised += s.map_len;
  }
  return advised;
}

uint64_t SpanLog::bytes() const {
  uint64_t b = 0;
  for (const Segment& s : segments_) b += s.size;
  return b;
}

}  // namespace spanguard
