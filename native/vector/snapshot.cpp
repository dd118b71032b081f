// Per-namespace snapshots of the vector index (docs/VECTOR_FORMAT.md): written to a
// temporary, fsynced and renamed into place; a snapshot that fails a check is rebuilt from the
// vectors file.

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <thread>
#include <unordered_set>

#include "common/io_seam.h"

#include "vector/vector_index.h"
#include "vector/vector_internal.h"

namespace spanguard {

using namespace vector_detail;

namespace {

class SnapshotWriter {
 public:
  // Writes from file offset `offset` on, through the I/O seam.
  SnapshotWriter(int fd, std::string path, uint64_t offset) : fd_(fd), path_(std::move(path)), offset_(offset) {
    buf_.reserve(kBuf);
  }
  bool Write(const void* data, size_t n) {
    const auto* p = static_cast<const unsigned char*>(data);
    crc_ = Crc32c(crc_, p, n);
    length_ += n;
    if (buf_.size() + n > kBuf && !Flush()) return false;
    if (n >= kBuf) return Put(p, n);
    buf_.insert(buf_.end(), p, p + n);
    return true;
  }
  bool Flush() {
    bool ok = Put(buf_.data(), buf_.size());
    buf_.clear();
    return ok;
  }
  uint32_t crc() const { return crc_; }
  uint64_t length() const { return length_; }
  int error() const { return error_; }

 private:
  static constexpr size_t kBuf = 1u << 20;
  bool Put(const unsigned char* p, size_t n) {
    while (n > 0) {
      ssize_t r = Io().pwrite(fd_, p, n, static_cast<off_t>(offset_));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) {
        error_ = r < 0 ? errno : ENOSPC;
        return false;
      }
      p += r;
      n -= static_cast<size_t>(r);
      offset_ += static_cast<uint64_t>(r);
    }
    return true;
  }
  int fd_;
  std::string path_;
  uint64_t offset_;
  std::vector<unsigned char> buf_;
  uint32_t crc_ = 0;
  uint64_t length_ = 0;
  int error_ = 0;
};

}  // namespace

bool VectorIndex::TryLoadSnapshot(Namespace& ns) {
  const std::string path = SnapshotPath(ns.kind);
  auto reject = [&](const std::string& why) {
    ns.snapshot_problem = why;
    return false;
  };
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return reject(errno == ENOENT ? "missing" : std::string("cannot open: ") + std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0 || static_cast<uint64_t>(st.st_size) < kSnapHeader) {
    ::close(fd);
    return reject("shorter than its header");
  }
  const uint64_t file_size = static_cast<uint64_t>(st.st_size);
  void* map = ::mmap(nullptr, file_size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) return reject(std::string("cannot map: ") + std::strerror(errno));
  struct Unmap {
    void* p;
    size_t n;
    ~Unmap() { ::munmap(p, n); }
  } unmap{map, file_size};
  const auto* bytes = static_cast<const unsigned char*>(map);

  uint32_t version, dims, payload_crc, snap_bits, header_crc;
  uint64_t count, last_id, payload_len, part_len;
  std::memcpy(&version, bytes + 8, 4);
  std::memcpy(&dims, bytes + 12, 4);
  std::memcpy(&payload_crc, bytes + 20, 4);
  std::memcpy(&count, bytes + 24, 8);
  std::memcpy(&last_id, bytes + 32, 8);
  std::memcpy(&payload_len, bytes + 40, 8);
  std::memcpy(&part_len, bytes + 48, 8);
  std::memcpy(&snap_bits, bytes + 56, 4);
  std::memcpy(&header_crc, bytes + 60, 4);
  if (std::memcmp(bytes, kSnapMagic, 8) != 0 || header_crc != Crc32c(0, bytes, 60)) {
    return reject("bad header" + Where(path, 0));
  }
  const bool flat = options_.ann == VectorAnn::kBinary;
  if (!(version == kSnapVersion || (flat && version == kSnapVersionFlat)))
    return reject("written by format version " + std::to_string(version));
  if (dims != options_.dims || bytes[16] != static_cast<uint8_t>(options_.scalar) || bytes[17] != ns.kind ||
      bytes[18] != static_cast<uint8_t>(options_.ann)) {
    return reject("built for other dims, scalar kind, namespace or strategy");
  }
  if (snap_bits != (flat ? static_cast<uint32_t>(code_bits()) : 0))
    return reject("built with other signatures" + Where(path, 56));
  if (payload_len != file_size - kSnapHeader)
    return reject("length does not match its header" + Where(path, file_size));
  if (payload_crc != Crc32c(0, bytes + kSnapHeader, payload_len))
    return reject("payload CRC mismatch" + Where(path, kSnapHeader));
  // The snapshot must be a prefix of the authoritative file: same count, same last id.
  if (count > store_->count(ns.kind)) return reject("covers vectors the vectors file does not hold");
  uint64_t expect_last = count == 0 ? kNoId : store_->id_of(ns.kind, count - 1);
  if (last_id != expect_last) return reject("its last id disagrees with the vectors file");
  if (part_len > payload_len) return reject("index part exceeds the payload" + Where(path, 48));

  // Duplicate table, after the index part.
  uint64_t pos = kSnapHeader + part_len;
  bool ok = true;
  auto get64 = [&]() -> uint64_t {
    uint64_t x = 0;
    if (!ok || 8 > file_size - pos) {
      ok = false;
      return 0;
    }
    std::memcpy(&x, bytes + pos, 8);
    pos += 8;
    return x;
  };
  std::unordered_map<uint64_t, uint64_t> by_content;
  std::unordered_map<uint64_t, std::vector<uint64_t>> aliases;
  uint64_t duplicates = get64();
  uint64_t n_content = get64();
  if (!ok || n_content > (file_size - pos) / 16) return reject("duplicate table truncated");
  by_content.reserve(n_content);
  for (uint64_t i = 0; i < n_content; ++i) {
    uint64_t h = get64();
    by_content.emplace(h, get64());
  }
  uint64_t n_lists = get64();
  if (!ok || n_lists > (file_size - pos) / 16) return reject("alias table truncated");
  for (uint64_t i = 0; i < n_lists && ok; ++i) {
    uint64_t key = get64();
    uint64_t len = get64();
    if (!ok || len > (file_size - pos) / 8) return reject("alias list truncated");
    auto& list = aliases[key];
    list.resize(len);
    std::memcpy(list.data(), bytes + pos, len * 8);
    pos += len * 8;
  }
  if (!ok || pos != file_size) return reject("duplicate table does not end the file");
  if (duplicates > count || by_content.size() != count - duplicates)
    return reject("duplicate table disagrees with its header");
  const uint64_t rows = count - duplicates;

  if (flat && version == kSnapVersion) {
    // Version 2: keys, rows, codes: sizes follow from the row count.
    const uint64_t blocks = (rows + 7) / 8;
    const uint64_t code_bytes = blocks * code_words_ * 64;
    if (part_len != rows * 8 + rows * row_bytes_ + code_bytes)
      return reject("index part length disagrees with its row count");
    const unsigned char* p = bytes + kSnapHeader;
    Flat loaded;
    loaded.keys.resize(rows);
    if (rows) std::memcpy(loaded.keys.data(), p, rows * 8);
    p += rows * 8;
    loaded.rows.resize(rows * row_bytes_);
    if (rows) std::memcpy(loaded.rows.data(), p, rows * row_bytes_);
    p += rows * row_bytes_;
    SplitCodes(loaded, p, rows);
    // The ordinals the next (version-3) save writes.
    std::string why;
    if (!RecoverOrdinals(ns, loaded, count, &why)) return reject(why);
    if (rows_mapped_) {
      // The same bytes are the file's records: read there, not kept twice.
      loaded.rows.clear();
      loaded.rec.resize(rows);
      for (uint64_t r = 0; r < rows; ++r) loaded.rec[r] = store_->record_of(ns.kind, loaded.nth[r]);
    }
    ns.flat = std::move(loaded);
  } else if (flat) {
    // Version 3: ordinals, the partition, signatures; the rows come from the vectors file.
    const unsigned char* p = bytes + kSnapHeader;
    const unsigned char* end = p + part_len;
    auto need = [&](uint64_t n) { return n <= static_cast<uint64_t>(end - p); };
    const size_t words = code_words_;
    if (rows > UINT32_MAX || !need(rows * 4 + 24))
      return reject("index part shorter than its ordinals" + Where(path, 64));
    Flat loaded;
    loaded.nth.resize(rows);
    if (rows) std::memcpy(loaded.nth.data(), p, rows * 4);
    p += rows * 4;
    for (uint64_t r = 0; r < rows; ++r) {
      if (loaded.nth[r] >= count || (r > 0 && loaded.nth[r] <= loaded.nth[r - 1]))
        return reject("row ordinals out of order or past the vectors held" + Where(path, kSnapHeader + r * 4));
    }
    uint32_t lists, reserved;
    uint64_t built, largest;
    std::memcpy(&lists, p, 4);
    std::memcpy(&reserved, p + 4, 4);
    std::memcpy(&built, p + 8, 8);
    std::memcpy(&largest, p + 16, 8);
    const uint64_t section = static_cast<uint64_t>(p - bytes);
    p += 24;
    if (reserved != 0 || (lists == 0 && (built != 0 || largest != 0)) || lists > rows || (lists > 0 && built == 0))
      return reject("partition header is not valid" + Where(path, section));
    if (lists == 0) {
      const uint64_t code_bytes = (rows + 7) / 8 * words * 64;
      if (static_cast<uint64_t>(end - p) != code_bytes) return reject("index part length disagrees with its row count");
      SplitCodes(loaded, p, rows);
    } else {
      auto part = std::make_unique<Partition>();
      part->lists = lists;
      part->built_rows = built;
      part->built_largest = largest;
      const uint64_t cbytes = static_cast<uint64_t>(lists) * options_.dims * 4;
      if (!need(cbytes)) return reject("partition centroids truncated" + Where(path, section));
      part->centroids.resize(static_cast<size_t>(lists) * options_.dims);
      std::memcpy(part->centroids.data(), p, cbytes);
      p += cbytes;
      for (float c : part->centroids)
        if (!std::isfinite(c)) return reject("partition centroid not finite" + Where(path, section));
      part->rows.resize(lists);
      part->codes.resize(lists);
      part->tails.resize(lists);
      std::vector<uint8_t> seen(rows, 0);
      uint64_t total = 0;
      for (uint32_t l = 0; l < lists; ++l) {
        uint64_t c;
        if (!need(8)) return reject("partition list truncated" + Where(path, static_cast<uint64_t>(p - bytes)));
        std::memcpy(&c, p, 8);
        p += 8;
        const uint64_t cb = (c + 7) / 8 * words * 64;
        if (c > rows - total || !need(c * 4 + cb))
          return reject("partition list truncated" + Where(path, static_cast<uint64_t>(p - bytes)));
        part->rows[l].resize(c);
        if (c) std::memcpy(part->rows[l].data(), p, c * 4);
        p += c * 4;
        for (uint32_t r : part->rows[l]) {
          if (r >= rows || seen[r]) return reject("partition lists do not hold every row once" + Where(path, section));
          seen[r] = 1;
        }
        const CodeLayout layout{lead_words_, tail_words_};
        part->codes[l].resize(layout.CodeWords(c));
        part->tails[l].resize(layout.TailWords(c));
        layout.Split(p, c, part->codes[l].data(), part->tails[l].data());
        p += cb;
        total += c;
        part->largest = std::max(part->largest, c);
      }
      if (total != rows || p != end) return reject("partition lists do not hold every row once" + Where(path, section));
      PrepareCentroids(*part);
      loaded.part = std::move(part);
    }
    std::string why;
    if (!LoadRowsFromStore(ns, loaded, count, &why)) return reject(why);
    ns.flat = std::move(loaded);
  } else {
    index_t loaded;
    uint64_t at = kSnapHeader;
    const uint64_t graph_end = kSnapHeader + part_len;
    auto input = [&](void* out, size_t n) {
      if (n > graph_end - at) return false;
      std::memcpy(out, bytes + at, n);
      at += n;
      return true;
    };
    auto result = loaded.load_from_stream(input);
    if (!result) return reject(std::string("usearch could not parse it: ") + result.error.what());
    if (at != graph_end) return reject("graph shorter than its recorded length");
    if (loaded.size() != rows || loaded.dimensions() != options_.dims)
      return reject("index size disagrees with its header");
    loaded.change_expansion_add(options_.expansion_add);
    loaded.change_expansion_search(options_.expansion_search);
    ns.index = std::move(loaded);
  }
  ns.by_content = std::move(by_content);
  ns.aliases = std::move(aliases);
  ns.RebuildAliasBits();
  ns.duplicates = duplicates;
  ns.covered = count;
  ns.snapshot_problem.clear();
  ns.file_crc = header_crc;
  return true;
}

bool VectorIndex::LoadRowsFromStore(Namespace& ns, Flat& f, uint64_t count, std::string* why) {
  const size_t n = f.nth.size();
  const size_t dims = options_.dims;
  if (rows_mapped_) {
    // Rows read in place: each row's key and record come from the store's own table (the
    // records passed their CRCs when the file was opened); nothing is read from the file.
    const uint64_t held = std::min<uint64_t>(count, store_->count(ns.kind));
    f.keys.resize(n);
    f.rec.resize(n);
    for (size_t r = 0; r < n; ++r) {
      if (f.nth[r] >= held || (r > 0 && f.nth[r] <= f.nth[r - 1])) {
        *why = "the vectors file does not hold the rows the snapshot names";
        return false;
      }
      f.keys[r] = store_->id_of(ns.kind, f.nth[r]);
      f.rec[r] = store_->record_of(ns.kind, f.nth[r]);
    }
    return true;
  }
  f.keys.resize(n);
  f.rows.resize(n * row_bytes_);
  size_t next = 0;
  uint64_t ordinal = 0;
  std::vector<std::pair<size_t, size_t>> picked;  // (index in the chunk, row)
  const auto cast = casts_.from.f32;
  std::vector<float> unit(kBuildThreads * dims);
  store_->ForEach(
      ns.kind, 0,
      [&](const uint64_t* ids, const float* vecs, size_t m) {
        picked.clear();
        for (size_t i = 0; i < m && next < n; ++i) {
          if (f.nth[next] != ordinal + i) continue;
          f.keys[next] = ids[i];
          picked.emplace_back(i, next++);
        }
        // The row exactly as an add of this vector makes it (IndexRowsFlat).
        ParallelFor(picked.size(), picked.size() >= kParallelMin ? kBuildThreads : 1,
                    [&](size_t b, size_t e, size_t t) {
                      float* u = unit.data() + t * dims;
                      for (size_t j = b; j < e; ++j) {
                        Normalize(vecs + picked[j].first * dims, dims, u);
                        unsigned char* row = f.rows.data() + picked[j].second * row_bytes_;
                        if (!cast(reinterpret_cast<const byte_t*>(u), dims, reinterpret_cast<byte_t*>(row)))
                          std::memcpy(row, u, row_bytes_);
                      }
                    });
        ordinal += m;
      },
      count);
  if (next != n) {
    *why = "the vectors file does not hold the rows the snapshot names";
    return false;
  }
  return true;
}

bool VectorIndex::RecoverOrdinals(Namespace& ns, Flat& f, uint64_t count, std::string* why) {
  // Rows are the first copies of distinct vectors, in file order: walking the file's vectors
  // of this kind, the r-th vector never seen before is row r.
  const size_t n = f.size();
  const size_t dims = options_.dims;
  f.nth.resize(n);
  std::unordered_set<uint64_t> seen;
  seen.reserve(n);
  size_t next = 0;
  uint64_t ordinal = 0;
  bool ok = true;
  store_->ForEach(
      ns.kind, 0,
      [&](const uint64_t* ids, const float* vecs, size_t m) {
        for (size_t i = 0; i < m && ok; ++i) {
          if (!seen.insert(VectorHash(vecs + i * dims, dims)).second) continue;
          if (next >= n || f.keys[next] != ids[i]) ok = false;
          else f.nth[next++] = static_cast<uint32_t>(ordinal + i);
        }
        ordinal += m;
      },
      count);
  if (!ok || next != n) {
    *why = "its rows do not match the vectors file";
    return false;
  }
  return true;
}

void VectorIndex::Save() {
  if (options_.read_only) throw NativeError("READ_ONLY", "the vector index was opened read-only" + Where(dir_, 0));
  // The vectors file first: a snapshot must never cover vectors that are not durable.
  store_->Sync();
  for (Namespace* ns : {&raw_, &summary_}) {
    // The checkpoint is where the partition is built or rebuilt (it runs on the thread pool
    // under saveAsync; searches meanwhile use the lists in use until the swap).
    if (PartitionDue(*ns)) Repartition(*ns);
    if (!ns->dirty) continue;
    SaveSnapshot(*ns);
    ns->dirty = false;
  }
}

void VectorIndex::SaveSnapshot(Namespace& ns) {
  const std::string path = SnapshotPath(ns.kind);
  const std::string tmp = path + ".tmp";
  int fd = Io().open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0)
    throw NativeError("IO_ERROR", "cannot create snapshot: " + std::string(std::strerror(errno)) + Where(tmp, 0));
  struct Closer {
    int& fd;
    const std::string& tmp;
    bool done = false;
    ~Closer() {
      if (fd >= 0) Io().close(fd);
      if (!done) Io().unlink(tmp.c_str());
    }
  } closer{fd, tmp};

  unsigned char header[kSnapHeader] = {0};
  if (Io().pwrite(fd, header, kSnapHeader, 0) != static_cast<ssize_t>(kSnapHeader)) {
    throw NativeError("IO_ERROR", "cannot write snapshot: " + std::string(std::strerror(errno)) + Where(tmp, 0));
  }
  SnapshotWriter writer(fd, tmp, kSnapHeader);
  std::string why;
  bool ok = true;
  if (ns.hnsw) {
    auto saved = ns.index.save_to_stream([&](const void* p, size_t n) { return writer.Write(p, n); });
    if (!saved) {
      ok = false;
      why = saved.error.what();
    }
  } else {
    // Version 3: row ordinals (the rows are read back from the vectors file), the partition,
    // the signatures (one array, or per list).
    const Flat& f = ns.flat;
    const size_t rows = f.size();
    const Partition* p = f.part.get();
    const uint32_t lists = p ? p->lists : 0;
    const uint32_t zero = 0;
    const uint64_t built = p ? p->built_rows : 0;
    const uint64_t largest = p ? p->built_largest : 0;
    ok = writer.Write(f.nth.data(), rows * 4) && writer.Write(&lists, 4) && writer.Write(&zero, 4) &&
         writer.Write(&built, 8) && writer.Write(&largest, 8);
    // Whole signatures in blocks of 8, joined again from the split layout a chunk at a time.
    const CodeLayout layout{lead_words_, tail_words_};
    std::vector<uint64_t> chunk;
    auto write_codes = [&](const uint64_t* codes, const uint64_t* tails, size_t count) {
      constexpr size_t kChunkBlocks = 1024;
      const size_t nb = (count + 7) / 8;
      chunk.resize(std::min(kChunkBlocks, nb) * code_words_ * 8);
      for (size_t b = 0; ok && b < nb; b += kChunkBlocks) {
        const size_t m = std::min(kChunkBlocks, nb - b);
        layout.Join(codes, tails, count, b, m, chunk.data());
        ok = writer.Write(chunk.data(), m * code_words_ * 64);
      }
    };
    if (ok && !p)
      write_codes(reinterpret_cast<const uint64_t*>(f.codes.data()), reinterpret_cast<const uint64_t*>(f.tails.data()),
                  rows);
    if (ok && p) ok = writer.Write(p->centroids.data(), static_cast<size_t>(lists) * options_.dims * 4);
    for (uint32_t l = 0; ok && l < lists; ++l) {
      const uint64_t count = p->rows[l].size();
      ok = writer.Write(&count, 8) && writer.Write(p->rows[l].data(), count * 4);
      if (ok) write_codes(p->codes[l].data(), p->tails[l].data(), count);
    }
  }
  const uint64_t part_len = writer.length();
  // The duplicate table follows the index part, under the same CRC: without it a loaded
  // index would not know which keys come back with which.
  auto put64 = [&](uint64_t x) { ok = ok && writer.Write(&x, 8); };
  if (ok) {
    put64(ns.duplicates);
    put64(ns.by_content.size());
    for (const auto& [hash, key] : ns.by_content) {
      put64(hash);
      put64(key);
    }
    put64(ns.aliases.size());
    for (const auto& [key, list] : ns.aliases) {
      put64(key);
      put64(list.size());
      if (ok && !list.empty()) ok = writer.Write(list.data(), list.size() * 8);
    }
  }
  if (!ok || !writer.Flush()) {
    throw NativeError("IO_ERROR", "cannot write snapshot: " +
                                      std::string(writer.error() ? std::strerror(writer.error()) : why.c_str()) +
                                      Where(tmp, kSnapHeader + writer.length()));
  }
  const uint64_t count = ns.covered;  // vectors of the file prefix, duplicates included
  const uint64_t last = count == 0 ? kNoId : store_->id_of(ns.kind, count - 1);
  const uint64_t len = writer.length();
  const uint32_t crc = writer.crc();
  std::memcpy(header, kSnapMagic, 8);
  const uint32_t version = ns.hnsw ? kSnapVersion : kSnapVersionFlat;
  std::memcpy(header + 8, &version, 4);
  std::memcpy(header + 12, &options_.dims, 4);
  header[16] = static_cast<uint8_t>(options_.scalar);
  header[17] = ns.kind;
  header[18] = static_cast<uint8_t>(options_.ann);
  const uint32_t bits = ns.hnsw ? 0 : static_cast<uint32_t>(code_bits());
  std::memcpy(header + 20, &crc, 4);
  std::memcpy(header + 24, &count, 8);
  std::memcpy(header + 32, &last, 8);
  std::memcpy(header + 40, &len, 8);
  std::memcpy(header + 48, &part_len, 8);
  std::memcpy(header + 56, &bits, 4);
  uint32_t hcrc = Crc32c(0, header, 60);
  std::memcpy(header + 60, &hcrc, 4);
  if (Io().pwrite(fd, header, kSnapHeader, 0) != static_cast<ssize_t>(kSnapHeader)) {
    throw NativeError("IO_ERROR", "cannot write snapshot header: " + std::string(std::strerror(errno)) + Where(tmp, 0));
  }
  VectorFsyncOrThrow(fd, tmp);
  Io().close(fd);
  fd = -1;
  if (Io().rename(tmp.c_str(), path.c_str()) != 0) {
    throw NativeError("IO_ERROR",
                      "cannot rename snapshot into place: " + std::string(std::strerror(errno)) + Where(path, 0));
  }
  closer.done = true;
  ns.file_crc = hcrc;
  VectorFsyncDir(dir_);
}

}  // namespace spanguard
