#include "vector/vector_store.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>

#include "common/crc32c.h"
#include "common/errors.h"
#include "common/io_seam.h"

namespace spanguard {

namespace {

constexpr char kMagic[8] = {'S', 'G', 'V', 'E', 'C', 'T', '0', '1'};
/// Version written by this code (f16 unit vectors); version 1 (f32 as given) is still read.
constexpr uint32_t kVersion = 2;
/// Header byte 16 of a version-2 file: the stored scalar (1 = f32, 2 = f16).
constexpr uint8_t kStoredF32 = 1;
constexpr uint8_t kStoredF16 = 2;

std::string Where(const std::string& path, uint64_t offset) {
  return " [file=" + path + " offset=" + std::to_string(offset) + "]";
}

bool ReadFull(int fd, void* buf, size_t n, uint64_t offset) {
  auto* p = static_cast<unsigned char*>(buf);
  while (n > 0) {
    ssize_t r = ::pread(fd, p, n, static_cast<off_t>(offset));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
    offset += static_cast<uint64_t>(r);
  }
  return true;
}

bool WriteFull(int fd, const void* buf, size_t n, uint64_t offset) {
  auto* p = static_cast<const unsigned char*>(buf);
  while (n > 0) {
    ssize_t r = Io().pwrite(fd, p, n, static_cast<off_t>(offset));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
    offset += static_cast<uint64_t>(r);
  }
  return true;
}

}  // namespace

namespace {
/// True when no record after `from` passes its CRC: everything past the last good record
/// is debris of an interrupted write. If any later record is intact, the bad bytes sit in
/// the middle of the file and the damage is corruption, not a crash.
bool TailIsTorn(int fd, uint64_t from, uint64_t file_size, size_t record_bytes, uint32_t dims) {
  std::vector<unsigned char> r(record_bytes);
  for (uint64_t off = from + record_bytes; off + record_bytes <= file_size; off += record_bytes) {
    if (!ReadFull(fd, r.data(), record_bytes, off)) return true;
    uint32_t crc, rdims;
    std::memcpy(&crc, r.data() + record_bytes - 4, 4);
    std::memcpy(&rdims, r.data() + 12, 4);
    if (rdims == dims && crc == Crc32c(0, r.data(), record_bytes - 4)) return false;
  }
  return true;
}
}  // namespace

uint16_t F32ToF16(float value) noexcept {
  // Round to nearest even, subnormals included (F. Giesen's float_to_half_fast3_rtne).
  uint32_t f;
  std::memcpy(&f, &value, 4);
  const uint32_t sign = f & 0x80000000u;
  f ^= sign;
  uint16_t o;
  if (f >= (143u << 23)) {  // at or above 65536: infinity, or NaN
    o = f > (255u << 23) ? 0x7E00 : 0x7C00;
  } else if (f < (113u << 23)) {  // below 2^-14: a subnormal half (or zero)
    const uint32_t magic_bits = 126u << 23;
    float x, magic;
    std::memcpy(&x, &f, 4);
    std::memcpy(&magic, &magic_bits, 4);
    x += magic;
    uint32_t xb;
    std::memcpy(&xb, &x, 4);
    o = static_cast<uint16_t>(xb - magic_bits);
  } else {
    const uint32_t odd = (f >> 13) & 1u;
    f += (static_cast<uint32_t>(15 - 127) << 23) + 0xFFFu;
    f += odd;
    o = static_cast<uint16_t>(f >> 13);
  }
  return static_cast<uint16_t>(o | (sign >> 16));
}

float F16ToF32(uint16_t h) noexcept {
  const uint32_t shifted_exp = 0x7C00u << 13;
  uint32_t o = (static_cast<uint32_t>(h) & 0x7FFFu) << 13;
  const uint32_t exp = shifted_exp & o;
  o += static_cast<uint32_t>(127 - 15) << 23;
  float f;
  if (exp == shifted_exp) {
    o += static_cast<uint32_t>(128 - 16) << 23;  // infinity / NaN
    std::memcpy(&f, &o, 4);
  } else if (exp == 0) {
    o += 1u << 23;  // subnormal: renormalize
    std::memcpy(&f, &o, 4);
    const uint32_t magic_bits = 113u << 23;
    float magic;
    std::memcpy(&magic, &magic_bits, 4);
    f -= magic;
  } else {
    std::memcpy(&f, &o, 4);
  }
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  bits |= (static_cast<uint32_t>(h) & 0x8000u) << 16;
  std::memcpy(&f, &bits, 4);
  return f;
}

void VectorFsyncOrThrow(int fd, const std::string& path) {
  if (Io().fsync(fd) != 0) {
    throw NativeError("FSYNC_FAILED", "fsync failed (" + std::string(std::strerror(errno)) +
                                          "); not retried, the data's durability is unknown" + Where(path, 0));
  }
}

void VectorFsyncDir(const std::string& dir) {
  int fd = Io().open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
  if (fd < 0)
    throw NativeError("IO_ERROR", "cannot open directory: " + std::string(std::strerror(errno)) + Where(dir, 0));
  int rc = Io().fsync(fd);
  int err = errno;
  Io().close(fd);
  if (rc != 0) {
    throw NativeError("FSYNC_FAILED",
                      "directory fsync failed (" + std::string(std::strerror(err)) + "); not retried" + Where(dir, 0));
  }
}

void VectorStore::FailIo(const std::string& what, uint64_t offset, int err) const {
  throw NativeError("IO_ERROR", what + ": " + std::string(std::strerror(err)) + Where(path_, offset));
}

VectorStore::VectorStore(std::string path, uint32_t dims, bool read_only, bool stored_f32)
    : path_(std::move(path)),
      dims_(dims),
      stored_bytes_(stored_f32 ? 4 : 2),
      record_bytes_(20 + static_cast<size_t>(stored_bytes_) * dims),
      read_only_(read_only) {
  // A throwing constructor runs no destructor: release the descriptor (and its lock) here.
  try {
    OpenAndRecover();
  } catch (...) {
    if (fd_ >= 0) Io().close(fd_);
    fd_ = -1;
    throw;
  }
}

void VectorStore::OpenAndRecover() {
  if (read_only_) {
    fd_ = Io().open(path_.c_str(), O_RDONLY | O_CLOEXEC, 0);
    if (fd_ < 0 && errno == ENOENT) return;  // nothing persisted yet: an empty store
    if (fd_ < 0) FailIo("cannot open vectors file", 0, errno);
  } else {
    fd_ = Io().open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd_ < 0) FailIo("cannot open vectors file", 0, errno);
  }
  if (!read_only_) {
    // One writer per vectors file: a second index over the same directory, in this process or
    // another, would interleave appends. flock is per open file description, so this also
    // catches a second open in the same process.
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      int err = errno;
      Io().close(fd_);
      fd_ = -1;
      if (err == EWOULDBLOCK)
        throw NativeError("LOCKED", "another vector index holds the vectors file" + Where(path_, 0));
      FailIo("cannot lock vectors file", 0, err);
    }
  }
  struct stat st;
  if (::fstat(fd_, &st) != 0) FailIo("cannot stat vectors file", 0, errno);
  uint64_t file_size = static_cast<uint64_t>(st.st_size);

  unsigned char header[kHeaderBytes];
  if (file_size < kHeaderBytes && read_only_) return;  // the writer has not finished creating it
  if (file_size < kHeaderBytes) {
    // New file, or a crash before the header was complete: nothing was ever appended after
    // an incomplete header, so starting over loses nothing.
    std::memset(header, 0, sizeof(header));
    std::memcpy(header, kMagic, 8);
    std::memcpy(header + 8, &kVersion, 4);
    std::memcpy(header + 12, &dims_, 4);
    header[16] = stored_bytes_ == 4 ? kStoredF32 : kStoredF16;
    uint32_t crc = Crc32c(0, header, 28);
    std::memcpy(header + 28, &crc, 4);
    if (Io().ftruncate(fd_, 0) != 0) FailIo("cannot reset vectors file", 0, errno);
    if (!WriteFull(fd_, header, sizeof(header), 0)) FailIo("cannot write vectors header", 0, errno);
    VectorFsyncOrThrow(fd_, path_);
    std::string dir = path_.substr(0, path_.find_last_of('/'));
    VectorFsyncDir(dir.empty() ? "." : dir);
    return;
  }

  if (!ReadFull(fd_, header, sizeof(header), 0)) FailIo("cannot read vectors header", 0, errno);
  uint32_t stored_crc, version, file_dims;
  std::memcpy(&stored_crc, header + 28, 4);
  std::memcpy(&version, header + 8, 4);
  std::memcpy(&file_dims, header + 12, 4);
  const bool known =
      version == 1 ? header[16] == 0 : version == 2 && (header[16] == kStoredF16 || header[16] == kStoredF32);
  if (std::memcmp(header, kMagic, 8) != 0 || stored_crc != Crc32c(0, header, 28) || !known) {
    Io().close(fd_);
    fd_ = -1;
    throw NativeError("CORRUPT",
                      "vectors file header is not valid (magic, version, stored scalar or CRC)" + Where(path_, 0));
  }
  version_ = version;
  stored_bytes_ = version == 1 || header[16] == kStoredF32 ? 4 : 2;
  record_bytes_ = 20 + static_cast<size_t>(stored_bytes_) * dims_;
  if (file_dims != dims_) {
    Io().close(fd_);
    fd_ = -1;
    throw NativeError("DIMENSION_MISMATCH", "vectors file holds " + std::to_string(file_dims) +
                                                "-dim vectors, the index was opened with dims " +
                                                std::to_string(dims_) + Where(path_, 12));
  }

  // Walk records; stop at the first one that is incomplete or fails a check.
  const uint64_t body = file_size - kHeaderBytes;
  const uint64_t whole = body / record_bytes_;
  ids_.reserve(whole);
  constexpr uint64_t kChunk = 4096;
  std::vector<unsigned char> buf;
  uint64_t good = 0;
  bool bad = false;
  bool prev_last = true;  // the previous record closed its span
  uint8_t prev_kind = 0;
  uint64_t span_start = 0;   // record index where the open span began
  uint32_t digest = 0;       // digest() of the records accepted so far
  uint32_t span_digest = 0;  // digest() before the open span began
  for (uint64_t first = 0; first < whole && !bad; first += kChunk) {
    uint64_t n = std::min<uint64_t>(kChunk, whole - first);
    buf.resize(n * record_bytes_);
    if (!ReadFull(fd_, buf.data(), buf.size(), kHeaderBytes + first * record_bytes_)) {
      FailIo("cannot read vectors file", kHeaderBytes + first * record_bytes_, errno);
    }
    for (uint64_t i = 0; i < n; ++i) {
      const unsigned char* r = buf.data() + i * record_bytes_;
      uint64_t id;
      uint32_t rdims, crc;
      std::memcpy(&id, r, 8);
      std::memcpy(&rdims, r + 12, 4);
      std::memcpy(&crc, r + record_bytes_ - 4, 4);
      uint8_t kind = r[8];
      uint8_t flags = r[9];
      // Within a span: same id, same kind. Across spans: strictly greater id.
      bool order_ok = ids_.empty() ? true : prev_last ? id > ids_.back() : (id == ids_.back() && kind == prev_kind);
      bool ok = rdims == dims_ && (kind == kKindRaw || kind == kKindSummary) && (flags & ~kFlagLast) == 0 && order_ok &&
                crc == Crc32c(0, r, record_bytes_ - 4);
      if (!ok) {
        bad = true;
        break;
      }
      if (prev_last) {
        span_start = good;
        span_digest = digest;
      }
      digest = Crc32c(digest, r + record_bytes_ - 4, 4);
      prev_last = (flags & kFlagLast) != 0;
      prev_kind = kind;
      by_kind_[kind == kKindSummary].push_back(static_cast<uint32_t>(ids_.size()));
      ids_.push_back(id);
      ++good;
    }
  }
  const uint64_t scan_end = kHeaderBytes + good * record_bytes_;
  if (!prev_last) {
    // The file ends inside a span (its last window never made it): drop the whole span so
    // it is either complete or absent, and the high-water mark lets catchUp redo it.
    good = span_start;
    digest = span_digest;
    ids_.resize(good);
    for (auto& v : by_kind_)
      while (!v.empty() && v.back() >= good) v.pop_back();
  }
  digest_ = digest;
  for (int k = 0; k < 2; ++k) {
    // A span's windows are consecutive records: count id changes.
    const auto& rec = by_kind_[k];
    spans_[k] = 0;
    for (size_t i = 0; i < rec.size(); ++i) spans_[k] += (i + 1 == rec.size() || ids_[rec[i + 1]] != ids_[rec[i]]);
  }
  uint64_t valid_end = kHeaderBytes + good * record_bytes_;
  if (valid_end < file_size) {
    // Everything from the first bad record on is cut so the store opens. A torn tail is at most the records of one
    // batch write that did not all reach the disk with valid content; a bad record followed by good ones is corruption,
    // reported as such with the offset so the caller can record it.
    recovery_.outcome = TailIsTorn(fd_, scan_end, file_size, record_bytes_, dims_) ? "torn-tail" : "corrupt";
    (void)bad;
    recovery_.offset = valid_end;
    recovery_.dropped_bytes = file_size - valid_end;
    if (read_only_) return;  // a reader reports what it skipped and leaves the file alone
    if (Io().ftruncate(fd_, static_cast<off_t>(valid_end)) != 0)
      FailIo("cannot truncate vectors file", valid_end, errno);
    VectorFsyncOrThrow(fd_, path_);
  }
}

VectorStore::~VectorStore() {
  if (map_ != nullptr) ::munmap(const_cast<unsigned char*>(map_), map_len_);
  for (const auto& [p, len] : retired_maps_) ::munmap(const_cast<unsigned char*>(p), len);
  if (fd_ >= 0) Io().close(fd_);
}

bool VectorStore::MapRecords() {
  if (map_ != nullptr) return true;
  if (fd_ < 0) return false;
  GrowMap();
  return true;
}

void VectorStore::GrowMap() {
  const uint64_t need = bytes();
  if (map_ != nullptr && need <= map_len_) return;
  // Address space only: a page is resident once read, and the part past the file's end is
  // never touched (only records held are read).
  constexpr uint64_t kMinMap = 64ull << 20;
  const size_t len = static_cast<size_t>(std::max<uint64_t>(kMinMap, need * 2));
  void* p = ::mmap(nullptr, len, PROT_READ, MAP_SHARED, fd_, 0);
  if (p == MAP_FAILED) FailIo("cannot map vectors file", 0, errno);
  if (map_ != nullptr) {
    // Still valid for a reader holding its pointers; its resident pages are dropped (they
    // stay in the page cache and fault back in if read).
    ::madvise(const_cast<unsigned char*>(map_), map_len_, MADV_DONTNEED);
    retired_maps_.emplace_back(map_, map_len_);
  }
  map_ = static_cast<const unsigned char*>(p);
  map_len_ = len;
}

void VectorStore::Append(const uint64_t* ids, const uint8_t* kinds, const uint8_t* last, const float* vectors,
                         size_t n) {
  if (n == 0) return;
  if (read_only_) throw NativeError("READ_ONLY", "the vector index was opened read-only" + Where(path_, 0));
  if (failed_)
    throw NativeError("FSYNC_FAILED",
                      "an earlier fsync of the vectors file failed; writes are refused" + Where(path_, bytes()));
  if (ids_.size() + n > UINT32_MAX)
    throw NativeError("INVALID_ARGUMENT", "vectors file is full (2^32 records)" + Where(path_, bytes()));
  write_buf_.resize(n * record_bytes_);
  uint32_t digest = digest_;
  for (size_t i = 0; i < n; ++i) {
    unsigned char* r = write_buf_.data() + i * record_bytes_;
    std::memcpy(r, &ids[i], 8);
    r[8] = kinds[i];
    r[9] = (last == nullptr || last[i]) ? kFlagLast : 0;
    r[10] = r[11] = 0;
    std::memcpy(r + 12, &dims_, 4);
    const float* v = vectors + i * dims_;
    if (stored_bytes_ == 4) {
      std::memcpy(r + 16, v, sizeof(float) * dims_);
    } else {
      for (size_t d = 0; d < dims_; ++d) {
        const uint16_t h = F32ToF16(v[d]);
        std::memcpy(r + 16 + 2 * d, &h, 2);
      }
    }
    uint32_t crc = Crc32c(0, r, record_bytes_ - 4);
    std::memcpy(r + record_bytes_ - 4, &crc, 4);
    digest = Crc32c(digest, r + record_bytes_ - 4, 4);
  }
  const uint64_t at = bytes();
  if (!WriteFull(fd_, write_buf_.data(), write_buf_.size(), at)) {
    int err = errno;
    // Cut the partial batch so the file never holds half of a rejected write.
    if (Io().ftruncate(fd_, static_cast<off_t>(at)) != 0) failed_ = true;
    FailIo("cannot append to vectors file", at, err == 0 ? ENOSPC : err);
  }
  digest_ = digest;
  for (size_t i = 0; i < n; ++i) {
    by_kind_[kinds[i] == kKindSummary].push_back(static_cast<uint32_t>(ids_.size()));
    ids_.push_back(ids[i]);
    if (last == nullptr || last[i]) ++spans_[kinds[i] == kKindSummary];
  }
  if (map_ != nullptr) GrowMap();
}

void VectorStore::Sync() {
  if (failed_) throw NativeError("FSYNC_FAILED", "an earlier fsync of the vectors file failed" + Where(path_, 0));
  if (Io().fsync(fd_) != 0) {
    failed_ = true;
    throw NativeError("FSYNC_FAILED", "fsync of the vectors file failed (" + std::string(std::strerror(errno)) +
                                          "); not retried, later writes are refused" + Where(path_, 0));
  }
}

void VectorStore::Canonicalize(const float* in, float* out, size_t n) const noexcept {
  if (version_ == 1) {
    if (out != in) std::memcpy(out, in, sizeof(float) * dims_ * n);
    return;
  }
  for (size_t i = 0; i < n; ++i) {
    const float* v = in + i * dims_;
    float* o = out + i * dims_;
    double sum = 0.0;
    for (size_t d = 0; d < dims_; ++d) sum += static_cast<double>(v[d]) * v[d];
    const float inv = sum > 0.0 ? static_cast<float>(1.0 / std::sqrt(sum)) : 0.0f;
    if (stored_bytes_ == 4) {
      for (size_t d = 0; d < dims_; ++d) o[d] = v[d] * inv;
    } else {
      for (size_t d = 0; d < dims_; ++d) o[d] = F16ToF32(F32ToF16(v[d] * inv));
    }
  }
}

void VectorStore::Decode(const unsigned char* r, float* out) const noexcept {
  if (stored_bytes_ == 4) {
    std::memcpy(out, r + 16, sizeof(float) * dims_);
    return;
  }
  for (size_t d = 0; d < dims_; ++d) {
    uint16_t h;
    std::memcpy(&h, r + 16 + 2 * d, 2);
    out[d] = F16ToF32(h);
  }
}

void VectorStore::ReadChunk(uint64_t first_record, uint64_t count, unsigned char* out) const {
  uint64_t offset = kHeaderBytes + first_record * record_bytes_;
  if (!ReadFull(fd_, out, count * record_bytes_, offset))
    FailIo("cannot read vectors file", offset, errno ? errno : EIO);
  // The file was checked at open; a record that fails now changed under us.
  for (uint64_t i = 0; i < count; ++i) {
    const unsigned char* r = out + i * record_bytes_;
    uint32_t crc;
    std::memcpy(&crc, r + record_bytes_ - 4, 4);
    if (crc != Crc32c(0, r, record_bytes_ - 4)) {
      throw NativeError("CORRUPT",
                        "vector record failed its CRC after open" + Where(path_, offset + i * record_bytes_));
    }
  }
}

}  // namespace spanguard
