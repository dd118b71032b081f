// Saving and loading the lexical index: one file, written to a temporary, fsynced and renamed
// into place (docs/LEXICAL_FORMAT.md); a file that fails any check is ignored and rebuilt.

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <new>

#include "common/io_seam.h"

#include "lexical/lexical_index.h"
#include "lexical/postings.h"

namespace spanguard {

using namespace lexical_detail;

// ---- persistence ---------------------------------------------------------------------------

namespace {

/// Buffered writer of the body (from offset kHeaderBytes), computing its CRC as it goes.
class BodyWriter {
 public:
  BodyWriter(int fd, const std::string& path) : fd_(fd), path_(path) { buffer_.reserve(1 << 20); }

  void Bytes(const void* data, size_t n) {
    crc_ = Crc32cExtend(crc_, data, n);
    written_ += n;
    const auto* p = static_cast<const uint8_t*>(data);
    if (buffer_.size() + n > (1u << 20)) Flush();
    if (n >= (1u << 20)) {
      WriteAll(p, n);
      return;
    }
    buffer_.insert(buffer_.end(), p, p + n);
  }
  void U32(uint32_t v) { Bytes(&v, 4); }
  void U64(uint64_t v) { Bytes(&v, 8); }

  void Flush() {
    if (!buffer_.empty()) WriteAll(buffer_.data(), buffer_.size());
    buffer_.clear();
  }

  uint32_t crc() const { return crc_; }
  uint64_t written() const { return written_; }

 private:
  void WriteAll(const uint8_t* p, size_t n) {
    while (n > 0) {
      const ssize_t w = Io().pwrite(fd_, p, n, static_cast<off_t>(kHeaderBytes + file_offset_));
      if (w < 0) {
        if (errno == EINTR) continue;
        throw NativeError("IO_ERROR", std::string("write failed: ") + std::strerror(errno) +
                                          Where(path_, kHeaderBytes + file_offset_));
      }
      p += w;
      n -= static_cast<size_t>(w);
      file_offset_ += static_cast<uint64_t>(w);
    }
  }

  int fd_;
  const std::string& path_;
  std::vector<uint8_t> buffer_;
  uint32_t crc_ = 0;
  uint64_t written_ = 0;
  uint64_t file_offset_ = 0;
};

/// Bounds-checked reader over the mapped body; every failure names the file offset.
struct BodyReader {
  const uint8_t* base;
  const uint8_t* p;
  const uint8_t* end;

  [[noreturn]] void Fail(const std::string& what) const {
    throw NativeError("CORRUPT", what + " at body offset " + std::to_string(p - base));
  }
  void Need(uint64_t n) const {
    if (n > static_cast<uint64_t>(end - p)) Fail("truncated body");
  }
  uint32_t U32() {
    Need(4);
    const uint32_t v = LoadU32(p);
    p += 4;
    return v;
  }
  uint64_t U64() {
    Need(8);
    const uint64_t v = LoadU64(p);
    p += 8;
    return v;
  }
  const uint8_t* Take(uint64_t n) {
    Need(n);
    const uint8_t* q = p;
    p += n;
    return q;
  }
};

uint64_t Position(const BodyReader& r) { return kHeaderBytes + static_cast<uint64_t>(r.p - r.base); }

// The sorted affix arrays of one namespace (version 3): a count A ≤ the term count, then
// two permutations of the term ids [0, A). Each id is checked to be in range and to occur
// once, so even a file with a forged checksum cannot make a lookup read past the
// dictionary. Terms past A (none in a file Save wrote) form the unsorted tail.
void LoadAffix(LexicalIndex::Namespace* n, BodyReader* r) {
  const uint32_t count = r->U32();
  if (count > n->terms.size()) r->Fail("affix array longer than the dictionary");
  std::vector<uint64_t> seen((size_t(count) + 63) / 64);
  for (std::vector<uint32_t>* arr : {&n->by_prefix, &n->by_suffix}) {
    arr->resize(count);
    if (count > 0) std::memcpy(arr->data(), r->Take(uint64_t(count) * 4), size_t(count) * 4);
    std::fill(seen.begin(), seen.end(), 0);
    for (const uint32_t id : *arr) {
      if (id >= count || (seen[id / 64] >> (id % 64) & 1) != 0)
        r->Fail("affix array is not a permutation of the terms");
      seen[id / 64] |= uint64_t(1) << (id % 64);
    }
  }
  n->affix_sorted = count;
}

}  // namespace

void LexicalIndex::Save() {
  const std::string tmp = file_ + ".tmp";
  uint32_t saved_crc = 0;
  const IoOps& io = Io();
  // Every call that changes the disk goes through the I/O seam (io_seam.h), so the fault
  // tests exercise this exact path.
  const int fd = io.open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    throw NativeError("IO_ERROR",
                      std::string("cannot create lexical index temp file: ") + std::strerror(errno) + Where(tmp, 0));
  }
  try {
    uint8_t header[kHeaderBytes] = {};
    // Placeholder header; the real one is written once the body checksum is known.
    if (io.pwrite(fd, header, kHeaderBytes, 0) != static_cast<ssize_t>(kHeaderBytes)) {
      throw NativeError("IO_ERROR", std::string("write failed: ") + std::strerror(errno) + Where(tmp, 0));
    }
    BodyWriter w(fd, tmp);
    for (Namespace* n : {raw_, summary_}) {
      // The phrase path's sorted arrays, completed over every term before they are written.
      n->RefreshAffix(true);
      const uint32_t docs = n->doc_count();
      w.U32(static_cast<uint32_t>(n->kind));
      w.U32(docs);
      w.U64(n->total_tokens);
      w.Bytes(n->span_ids.data(), size_t(docs) * 8);
      w.Bytes(n->turn_start.data(), size_t(docs) * 8);
      w.Bytes(n->turn_end.data(), size_t(docs) * 8);
      w.Bytes(n->doc_len.data(), size_t(docs) * 4);
      w.U32(static_cast<uint32_t>(n->long_docs.size()));
      w.Bytes(n->long_docs.data(), n->long_docs.size() * 4);
      const uint32_t nterms = static_cast<uint32_t>(n->terms.size());
      w.U32(nterms);
      for (uint32_t t = 0; t < nterms; ++t) {
        const std::string_view s = n->term(t);
        const Term& term = n->terms[t];
        w.U32(static_cast<uint32_t>(s.size()));
        w.Bytes(s.data(), s.size());
        w.U32(term.df);
        w.U32(term.max_tf);
        w.U32(term.last_doc);
        w.U32(term.min_doc_len);
        w.U32(term.docs.size);
        w.Bytes(term.docs.data(), term.docs.size);
        w.U32(term.pos.size);
        w.Bytes(term.pos.data(), term.pos.size);
        if (term.skip_list == kNoSkips) {
          w.U32(0);
        } else {
          const auto& skips = n->skip_lists[term.skip_list];
          w.U32(static_cast<uint32_t>(skips.size()));
          w.Bytes(skips.data(), skips.size() * sizeof(Skip));
        }
      }
      w.U32(n->affix_sorted);
      w.Bytes(n->by_prefix.data(), size_t(n->affix_sorted) * 4);
      w.Bytes(n->by_suffix.data(), size_t(n->affix_sorted) * 4);
    }
    w.Flush();
    std::memcpy(header, kMagic, 8);
    StoreU32(header + 8, kFormatVersion);
    StoreU32(header + 12, kHeaderBytes);
    StoreU64(header + 16, high_water_);
    StoreU64(header + 24, w.written());
    StoreU32(header + 32, w.crc());
    StoreU32(header + 36, kTokenizerVersion);
    StoreU32(header + 60, Crc32cExtend(0, header, 60));
    saved_crc = LoadU32(header + 60);
    if (io.pwrite(fd, header, kHeaderBytes, 0) != static_cast<ssize_t>(kHeaderBytes)) {
      throw NativeError("IO_ERROR", std::string("header write failed: ") + std::strerror(errno) + Where(tmp, 0));
    }
    // Never retry a failed fsync: the kernel may have dropped the dirty pages, and a second
    // fsync would report success for data that is gone.
    if (io.fsync(fd) != 0) {
      throw NativeError("FSYNC_FAILED",
                        std::string("fsync of lexical index failed: ") + std::strerror(errno) + Where(tmp, 0));
    }
  } catch (...) {
    io.close(fd);
    io.unlink(tmp.c_str());
    throw;
  }
  if (io.close(fd) != 0) {
    io.unlink(tmp.c_str());
    throw NativeError("IO_ERROR", std::string("close failed: ") + std::strerror(errno) + Where(tmp, 0));
  }
  if (io.rename(tmp.c_str(), file_.c_str()) != 0) {
    const int e = errno;
    io.unlink(tmp.c_str());
    throw NativeError("IO_ERROR",
                      std::string("rename over the lexical index failed: ") + std::strerror(e) + Where(file_, 0));
  }
  const size_t slash = file_.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : file_.substr(0, slash));
  const int dfd = io.open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
  if (dfd < 0) {
    throw NativeError("IO_ERROR", std::string("cannot open the index directory to fsync it: ") + std::strerror(errno) +
                                      Where(dir, 0));
  }
  // The file in place is the one just written, whether or not the directory fsync below
  // succeeds.
  file_crc_ = saved_crc;
  const int rc = io.fsync(dfd);
  const int e = errno;
  io.close(dfd);
  if (rc != 0) {
    throw NativeError("FSYNC_FAILED",
                      std::string("fsync of the index directory failed: ") + std::strerror(e) + Where(dir, 0));
  }
}

void LexicalIndex::Load() {
  loaded_from_ = "rebuilt";
  const int fd = ::open(file_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    load_error_ = errno == ENOENT ? "missing" : std::string("cannot open: ") + std::strerror(errno) + Where(file_, 0);
    return;
  }
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    load_error_ = std::string("cannot stat: ") + std::strerror(errno) + Where(file_, 0);
    ::close(fd);
    return;
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size < kHeaderBytes) {
    load_error_ = (size == 0 ? std::string("empty file") : std::string("truncated header")) + Where(file_, size);
    ::close(fd);
    return;
  }
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) {
    load_error_ = std::string("cannot map: ") + std::strerror(errno) + Where(file_, 0);
    return;
  }
  const auto* bytes = static_cast<const uint8_t*>(map);
  try {
    if (std::memcmp(bytes, kMagic, 8) != 0) throw NativeError("CORRUPT", "bad magic" + Where(file_, 0));
    if (LoadU32(bytes + 60) != Crc32cExtend(0, bytes, 60)) {
      throw NativeError("CORRUPT", "header checksum mismatch" + Where(file_, 60));
    }
    const uint32_t version = LoadU32(bytes + 8);
    if (version < kOldestFormatVersion || version > kFormatVersion) {
      throw NativeError("CORRUPT",
                        "unsupported format version " + std::to_string(LoadU32(bytes + 8)) + Where(file_, 8));
    }
    if (LoadU32(bytes + 12) != kHeaderBytes) throw NativeError("CORRUPT", "bad header size" + Where(file_, 12));
    if (LoadU32(bytes + 36) != kTokenizerVersion) {
      throw NativeError("CORRUPT",
                        "written by tokenizer version " + std::to_string(LoadU32(bytes + 36)) + Where(file_, 36));
    }
    const uint64_t high_water = LoadU64(bytes + 16);
    const uint64_t body_bytes = LoadU64(bytes + 24);
    if (body_bytes != size - kHeaderBytes) {
      throw NativeError("CORRUPT", "file is " + std::to_string(size) + " bytes, header says " +
                                       std::to_string(kHeaderBytes + body_bytes) + " (truncated or extended)" +
                                       Where(file_, std::min(size, kHeaderBytes + body_bytes)));
    }
    if (LoadU32(bytes + 32) != Crc32cExtend(0, bytes + kHeaderBytes, body_bytes)) {
      throw NativeError("CORRUPT", "body checksum mismatch" + Where(file_, kHeaderBytes));
    }
    BodyReader r{bytes + kHeaderBytes, bytes + kHeaderBytes, bytes + size};
    try {
      for (Namespace* n : {raw_, summary_}) {
        if (r.U32() != static_cast<uint32_t>(n->kind)) r.Fail("namespace kind out of order");
        const uint32_t docs = r.U32();
        if (docs >= kEnd - 1) r.Fail("doc count too large");
        n->total_tokens = r.U64();
        r.Need(uint64_t(docs) * 28);
        n->span_ids.resize(docs);
        n->turn_start.resize(docs);
        n->turn_end.resize(docs);
        n->doc_len.resize(docs);
        std::memcpy(n->span_ids.data(), r.Take(uint64_t(docs) * 8), size_t(docs) * 8);
        std::memcpy(n->turn_start.data(), r.Take(uint64_t(docs) * 8), size_t(docs) * 8);
        std::memcpy(n->turn_end.data(), r.Take(uint64_t(docs) * 8), size_t(docs) * 8);
        std::memcpy(n->doc_len.data(), r.Take(uint64_t(docs) * 4), size_t(docs) * 4);
        uint64_t total = 0;
        for (uint32_t d = 0; d < docs; ++d) {
          if (n->span_ids[d] >= high_water || (d > 0 && n->span_ids[d] <= n->span_ids[d - 1])) {
            r.Fail("span ids not increasing below the high water");
          }
          if (n->turn_start[d] > n->turn_end[d]) r.Fail("reversed turn range");
          total += n->doc_len[d];
        }
        if (total != n->total_tokens) r.Fail("token total does not match the doc lengths");
        const uint32_t long_count = r.U32();
        if (long_count > docs) r.Fail("long doc count exceeds doc count");
        n->long_docs.resize(long_count);
        std::memcpy(n->long_docs.data(), r.Take(uint64_t(long_count) * 4), size_t(long_count) * 4);
        for (uint32_t i = 0; i < long_count; ++i) {
          if (n->long_docs[i] >= docs || (i > 0 && n->long_docs[i] <= n->long_docs[i - 1])) {
            r.Fail("long doc list out of order");
          }
        }
        const uint32_t nterms = r.U32();
        if (uint64_t(nterms) * 24 > static_cast<uint64_t>(r.end - r.p)) r.Fail("term count exceeds the body");
        n->terms.reserve(nterms);
        n->term_offsets.reserve(size_t(nterms) + 1);
        size_t slot_size = 1024;
        while (slot_size * 7 < uint64_t(nterms) * 10 + 10) slot_size *= 2;
        n->Rehash(slot_size);
        for (uint32_t t = 0; t < nterms; ++t) {
          const uint32_t len = r.U32();
          if (len == 0 || len > kMaxTokenBytes) r.Fail("bad term length");
          const std::string_view s(reinterpret_cast<const char*>(r.Take(len)), len);
          if (n->Intern(s) != t) r.Fail("duplicate term");
          Term& term = n->terms[t];
          term.df = r.U32();
          term.max_tf = r.U32();
          term.last_doc = r.U32();
          term.min_doc_len = r.U32();
          if (term.df == 0 || term.df > docs || term.last_doc >= docs || term.max_tf == 0 || term.min_doc_len == 0) {
            r.Fail("bad term statistics");
          }
          const uint32_t docs_bytes = r.U32();
          const uint8_t* docs_data = r.Take(docs_bytes);
          const uint32_t pos_bytes = r.U32();
          const uint8_t* pos_data = r.Take(pos_bytes);
          Reserve(&term.docs, docs_bytes);
          if (docs_bytes > 0) std::memcpy(term.docs.data(), docs_data, docs_bytes);
          term.docs.size = docs_bytes;
          Reserve(&term.pos, pos_bytes);
          if (pos_bytes > 0) std::memcpy(term.pos.data(), pos_data, pos_bytes);
          term.pos.size = pos_bytes;
          const uint32_t skip_count = r.U32();
          if (skip_count > term.df / kSkipEvery) r.Fail("too many skip entries");
          if (skip_count > 0) {
            term.skip_list = static_cast<uint32_t>(n->skip_lists.size());
            n->skip_lists.emplace_back(skip_count);
            std::memcpy(n->skip_lists.back().data(), r.Take(uint64_t(skip_count) * sizeof(Skip)),
                        size_t(skip_count) * sizeof(Skip));
            for (const Skip& s : n->skip_lists.back()) {
              if (s.docs_off > docs_bytes || s.pos_off > pos_bytes || s.doc_before >= docs || s.block_max_tf == 0 ||
                  s.block_max_tf > term.max_tf || s.block_min_doc_len < term.min_doc_len) {
                r.Fail("skip entry out of range");
              }
            }
          }
        }
        if (version >= 3) LoadAffix(n, &r);
      }
      if (r.p != r.end) r.Fail("trailing bytes after the last namespace");
    } catch (const NativeError& e) {
      throw NativeError("CORRUPT", std::string(e.what()) + Where(file_, Position(r)));
    }
    high_water_ = high_water;
    loaded_from_ = "file";
    load_error_.clear();
    file_crc_ = LoadU32(bytes + 60);
  } catch (const NativeError& e) {
    Reset();
    loaded_from_ = "rebuilt";
    load_error_ = e.what();
  } catch (const std::bad_alloc&) {
    Reset();
    loaded_from_ = "rebuilt";
    load_error_ = "out of memory while loading" + Where(file_, 0);
  }
  ::munmap(map, size);
}

}  // namespace spanguard
