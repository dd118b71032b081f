// The lexical index's small building blocks: term hashing, varints, the 16-byte growable
// byte vector its postings live in, and the file layout constants (docs/LEXICAL_FORMAT.md).
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <string>

#include "common/crc32c.h"
#include "common/errors.h"
#include "common/hash.h"
#include "lexical/lexical_index.h"

namespace spanguard {

namespace lexical_detail {

/// Incremental CRC32C (the log's implementation, hardware when the CPU has SSE4.2).
inline uint32_t Crc32cExtend(uint32_t crc, const void* data, size_t n) { return Crc32c(crc, data, n); }

// ---- hashing, varints, byte vectors ----------------------------------------------------

inline uint64_t Mix(uint64_t h) { return Fmix64(h); }

// Short keys dominate (a token is ~6 bytes): no memcpy call for the tail, one multiply per
// 8 bytes, one full mix at the end.
inline uint64_t HashBytes(const char* p, size_t n) {
  constexpr uint64_t kMul = 0x9E3779B97F4A7C15ULL;
  uint64_t h = kMul ^ (n * 0xff51afd7ed558ccdULL);
  auto load64 = [](const char* q) {
    uint64_t v;
    std::memcpy(&v, q, 8);
    return v;
  };
  auto load32 = [](const char* q) {
    uint32_t v;
    std::memcpy(&v, q, 4);
    return uint64_t(v);
  };
  if (n >= 8) {
    const char* last = p + n - 8;
    while (p < last) {
      h = (h ^ load64(p)) * kMul;
      h ^= h >> 29;
      p += 8;
    }
    h = (h ^ load64(last)) * kMul;  // the last 8 bytes, overlapping the previous chunk
  } else if (n >= 4) {
    h = (h ^ ((load32(p) << 32) | load32(p + n - 4))) * kMul;
  } else if (n > 0) {
    const uint64_t k = (uint64_t(uint8_t(p[0])) << 16) | (uint64_t(uint8_t(p[n >> 1])) << 8) | uint8_t(p[n - 1]);
    h = (h ^ k) * kMul;
  }
  return Mix(h);
}

/// Makes room for `extra` more bytes. Bytes that fit in ByteVec::kInline stay inline; past
/// that they move to a heap block that grows by half.
inline void Reserve(ByteVec* v, uint32_t extra) {
  const uint64_t need = uint64_t(v->size) + extra;
  if (v->is_inline() ? need <= ByteVec::kInline : need <= v->capacity) return;
  if (need > std::numeric_limits<uint32_t>::max()) {
    throw NativeError("TEXT_TOO_LARGE", "a posting list would exceed 4 GiB");
  }
  uint64_t cap = std::max<uint64_t>(16, uint64_t(v->capacity) + v->capacity / 2);
  if (cap < need) cap = need;
  if (cap > std::numeric_limits<uint32_t>::max()) cap = std::numeric_limits<uint32_t>::max();
  void* p;
  if (v->is_inline()) {
    p = std::malloc(cap);
    if (p != nullptr && v->size > 0) std::memcpy(p, v->bytes, v->size);
  } else {
    p = std::realloc(v->heap(), cap);
  }
  if (p == nullptr) throw std::bad_alloc();
  v->set_heap(static_cast<uint8_t*>(p));
  v->capacity = static_cast<uint32_t>(cap);
}

/// Bytes of x as a varint.
inline uint32_t VarintBytes(uint32_t x) {
  return x < (1u << 7) ? 1 : x < (1u << 14) ? 2 : x < (1u << 21) ? 3 : x < (1u << 28) ? 4 : 5;
}

/// Appends x as a varint; the caller has reserved its bytes.
inline void PutVarintUnchecked(ByteVec* v, uint32_t x) {
  uint8_t* d = v->data();
  while (x >= 0x80) {
    d[v->size++] = static_cast<uint8_t>(x | 0x80);
    x >>= 7;
  }
  d[v->size++] = static_cast<uint8_t>(x);
}

/// Bounds-checked decode: false on overrun or an over-long encoding (never reads past end).
inline bool GetVarint(const uint8_t*& p, const uint8_t* end, uint32_t* out) {
  uint32_t x = 0;
  for (int shift = 0; shift < 35; shift += 7) {
    if (p >= end) return false;
    const uint8_t b = *p++;
    x |= uint32_t(b & 0x7F) << shift;
    if (b < 0x80) {
      *out = x;
      return true;
    }
  }
  return false;
}

constexpr uint32_t kEnd = std::numeric_limits<uint32_t>::max();
constexpr uint32_t kNotFound = std::numeric_limits<uint32_t>::max();
constexpr uint32_t kSkipEvery = 64;
constexpr uint32_t kNoSkips = std::numeric_limits<uint32_t>::max();
// Namespace::normal_of entries besides a term id.
constexpr uint32_t kSameForm = std::numeric_limits<uint32_t>::max();
constexpr uint32_t kFormUnknown = std::numeric_limits<uint32_t>::max() - 1;
constexpr float kK1 = 1.2f;
// Phrase: a rarest interior word with fewer docs than this is walked without an affix filter.
constexpr uint32_t kAffixFilterMinDf = 512;
// Phrase: a cut last word whose prefix matches at most this many terms is position-checked.
constexpr size_t kMaxTailTerms = 32;
/// Interior words of a phrase whose postings are walked (the rarest): once that many of its
/// words line up in a document, the text verification (one memmem over the span) is cheaper
/// than seeking the commoner words' lists there, and it decides anyway. A 30-word quote of
/// words every trajectory's prompt shares would otherwise seek 30 lists at each of thousands
/// of documents.
constexpr size_t kMaxPhraseCursors = 4;
constexpr float kB = 0.75f;
// BM25 query-term selection (bm25.cpp SelectTerms, docs/LEXICAL_FORMAT.md "Query algorithms").
constexpr size_t kSelectMinTerms = 6;
constexpr uint64_t kSelectMinDocs = 65536;
constexpr uint64_t kSelectCommonShare = 16;
constexpr size_t kSelectMinKept = 1;
// BM25 term at a time (bm25.cpp PreferAccumulate): a query of at least kAccumulateMinTerms
// terms whose terms still essential after the threshold seed hold at least
// 1/kAccumulateShare of its postings, which are at least 1/kAccumulateMinShareOfDocs of the
// documents (the sums take 8 bytes per document of the namespace). With 2 or 3 terms MaxScore
// soon leaves one out of the walk and stays cheaper.
constexpr size_t kAccumulateMinTerms = 4;
constexpr uint64_t kAccumulateMinDocs = 4096;
constexpr uint64_t kAccumulateShare = 3;
constexpr uint64_t kAccumulateMinShareOfDocs = 64;

// Skip entry j sits at posting (j + 1) * 64: decoding resumes at docs_off/pos_off with
// doc_before as the previous doc. It also carries the statistics of the block it closes,
// postings [j * 64, (j + 1) * 64), so BM25 can bound a whole block ("block-max").
struct Skip {
  uint32_t doc_before;  // last doc of block j
  uint32_t docs_off;
  uint32_t pos_off;
  uint32_t block_max_tf;
  uint32_t block_min_doc_len;
};

struct Term {
  ByteVec docs;
  ByteVec pos;
  uint32_t df = 0;
  uint32_t max_tf = 0;
  uint32_t last_doc = 0;
  uint32_t min_doc_len = kEnd;  // shortest doc holding the term: tightens its BM25 bound
  uint32_t skip_list = kNoSkips;
};

// ---- file layout constants (docs/LEXICAL_FORMAT.md) ----------------------------------
constexpr char kMagic[8] = {'S', 'G', 'L', 'E', 'X', 'I', 'D', 'X'};
// 2: block-max skip entries, per-term min_doc_len; 3: the phrase path's sorted affix arrays
// after each namespace's terms. Version 2 files still load (the arrays are built on need).
constexpr uint32_t kFormatVersion = 3;
constexpr uint32_t kOldestFormatVersion = 2;
constexpr uint32_t kHeaderBytes = 64;

inline void StoreU32(uint8_t* p, uint32_t v) { std::memcpy(p, &v, 4); }
inline void StoreU64(uint8_t* p, uint64_t v) { std::memcpy(p, &v, 8); }
inline uint32_t LoadU32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
inline uint64_t LoadU64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

inline std::string Where(const std::string& file, uint64_t offset) {
  return " [file=" + file + " offset=" + std::to_string(offset) + "]";
}

}  // namespace lexical_detail

}  // namespace spanguard
