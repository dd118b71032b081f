// Lexical index implementation. Layout of the in-memory structures (per namespace):
//
//   term dictionary   open-addressing table of u64 slots (hash tag << 32 | term id + 1)
//                     over one contiguous byte arena of term strings
//   postings          per term two streams (ByteVec): docs = varint(doc delta), varint(tf);
//                     pos = tf varint position deltas per doc; a skip entry every 64 docs
//   documents         span id, turn range, token count per local doc number
//
// Local doc numbers are dense per namespace and increase with the span id, so postings are
// appended at the tail only and every list is sorted by construction.
#include "lexical_index.h"

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

#include "crc32c.h"
#include "hash.h"
#include "errors.h"
#include "io_seam.h"
#include "stemmer.h"

namespace spanguard {

namespace {

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

void Reserve(ByteVec* v, uint32_t extra) {
  const uint64_t need = uint64_t(v->size) + extra;
  if (need <= v->capacity) return;
  if (need > std::numeric_limits<uint32_t>::max()) {
    throw NativeError("TEXT_TOO_LARGE", "a posting list would exceed 4 GiB");
  }
  uint64_t cap = std::max<uint64_t>(16, uint64_t(v->capacity) + v->capacity / 2);
  if (cap < need) cap = need;
  if (cap > std::numeric_limits<uint32_t>::max()) cap = std::numeric_limits<uint32_t>::max();
  void* p = std::realloc(v->data, cap);
  if (p == nullptr) throw std::bad_alloc();
  v->data = static_cast<uint8_t*>(p);
  v->capacity = static_cast<uint32_t>(cap);
}

inline void PutVarintUnchecked(ByteVec* v, uint32_t x) {
  while (x >= 0x80) {
    v->data[v->size++] = static_cast<uint8_t>(x | 0x80);
    x >>= 7;
  }
  v->data[v->size++] = static_cast<uint8_t>(x);
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
constexpr float kB = 0.75f;

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
constexpr uint32_t kFormatVersion = 2;  // 2: block-max skip entries, per-term min_doc_len
constexpr uint32_t kHeaderBytes = 64;

void StoreU32(uint8_t* p, uint32_t v) { std::memcpy(p, &v, 4); }
void StoreU64(uint8_t* p, uint64_t v) { std::memcpy(p, &v, 8); }
uint32_t LoadU32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
uint64_t LoadU64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

std::string Where(const std::string& file, uint64_t offset) {
  return " [file=" + file + " offset=" + std::to_string(offset) + "]";
}

}  // namespace

// ---- namespace ---------------------------------------------------------------------------

struct LexicalIndex::Namespace {
  RecordKind kind;
  // Documents, by local doc number.
  std::vector<uint64_t> span_ids;
  std::vector<int64_t> turn_start;
  std::vector<int64_t> turn_end;
  std::vector<uint32_t> doc_len;
  std::vector<uint32_t> long_docs;  // docs holding a truncated token
  uint64_t total_tokens = 0;

  // Dictionary.
  std::string term_bytes;
  std::vector<uint32_t> term_offsets{0};
  std::vector<Term> terms;
  std::vector<std::vector<Skip>> skip_lists;
  std::vector<uint64_t> slots;  // (hash >> 32) << 32 | (term id + 1); 0 = empty
  uint64_t slot_mask = 0;

  explicit Namespace(RecordKind k) : kind(k) {
    slots.assign(1024, 0);
    slot_mask = slots.size() - 1;
  }
  ~Namespace() {
    for (Term& t : terms) {
      std::free(t.docs.data);
      std::free(t.pos.data);
    }
  }
  Namespace(const Namespace&) = delete;
  Namespace& operator=(const Namespace&) = delete;

  uint32_t doc_count() const { return static_cast<uint32_t>(span_ids.size()); }

  std::string_view term(uint32_t id) const {
    return std::string_view(term_bytes.data() + term_offsets[id], term_offsets[id + 1] - term_offsets[id]);
  }

  uint32_t Find(std::string_view s) const { return FindHashed(s, HashBytes(s.data(), s.size())); }

  uint32_t FindHashed(std::string_view s, uint64_t h) const {
    const uint64_t tag = h >> 32;
    for (uint64_t i = h & slot_mask;; i = (i + 1) & slot_mask) {
      const uint64_t slot = slots[i];
      if (slot == 0) return kNotFound;
      if ((slot >> 32) == tag) {
        const uint32_t id = static_cast<uint32_t>(slot) - 1;
        if (term(id) == s) return id;
      }
    }
  }

  uint32_t Intern(std::string_view s) { return InternHashed(s, HashBytes(s.data(), s.size())); }

  uint32_t InternHashed(std::string_view s, uint64_t h) {
    const uint64_t tag = h >> 32;
    uint64_t i = h & slot_mask;
    for (;; i = (i + 1) & slot_mask) {
      const uint64_t slot = slots[i];
      if (slot == 0) break;
      if ((slot >> 32) == tag) {
        const uint32_t id = static_cast<uint32_t>(slot) - 1;
        if (term(id) == s) return id;
      }
    }
    const uint32_t id = static_cast<uint32_t>(terms.size());
    if (term_bytes.size() + s.size() > std::numeric_limits<uint32_t>::max()) {
      throw NativeError("TEXT_TOO_LARGE", "lexical term dictionary would exceed 4 GiB");
    }
    term_bytes.append(s.data(), s.size());
    term_offsets.push_back(static_cast<uint32_t>(term_bytes.size()));
    terms.emplace_back();
    slots[i] = (tag << 32) | (uint64_t(id) + 1);
    // Keep the load factor under 0.7 so probes stay short.
    if (uint64_t(terms.size()) * 10 > slots.size() * 7) Rehash(slots.size() * 2);
    return id;
  }

  // The normal form of each term as a token (tokenizer version 4): the term id of
  // NormalizeTerm(term) when that differs, kSameForm when it does not, kFormUnknown until
  // first needed. A term's form depends on its bytes only, so ingest stems each distinct
  // term once instead of every occurrence. In memory only (4 bytes per term): a loaded
  // index fills it again as its terms recur.
  std::vector<uint32_t> normal_of;

  /// The term id of `id`'s normal form, or kSameForm. May intern the form (a new term).
  uint32_t NormalOf(uint32_t id, std::string* scratch) {
    if (id >= normal_of.size()) normal_of.resize(terms.size(), kFormUnknown);
    uint32_t form = normal_of[id];
    if (form == kFormUnknown) {
      // NormalizeTerm has copied the form out of term_bytes before Intern may grow it.
      form = NormalizeTerm(term(id), scratch) ? Intern(*scratch) : kSameForm;
      normal_of[id] = form;
    }
    return form;
  }

  void Rehash(size_t size) {
    slots.assign(size, 0);
    slot_mask = size - 1;
    for (uint32_t id = 0; id < terms.size(); ++id) {
      const std::string_view s = term(id);
      const uint64_t h = HashBytes(s.data(), s.size());
      uint64_t i = h & slot_mask;
      while (slots[i] != 0) i = (i + 1) & slot_mask;
      slots[i] = ((h >> 32) << 32) | (uint64_t(id) + 1);
    }
  }

  /// Appends one posting; `positions` strictly increasing.
  void AddPosting(uint32_t term_id, uint32_t doc, uint32_t doc_length, const uint32_t* positions, uint32_t count) {
    Term& t = terms[term_id];
    if (t.df > 0 && t.df % kSkipEvery == 0) CloseBlock(t);
    const uint32_t delta = t.df == 0 ? doc + 1 : doc - t.last_doc;
    Reserve(&t.docs, 10);
    PutVarintUnchecked(&t.docs, delta);
    PutVarintUnchecked(&t.docs, count);
    Reserve(&t.pos, count * 5);
    uint32_t previous = 0;
    for (uint32_t i = 0; i < count; ++i) {
      PutVarintUnchecked(&t.pos, positions[i] - previous);
      previous = positions[i];
    }
    t.df += 1;
    t.last_doc = doc;
    if (count > t.max_tf) t.max_tf = count;
    if (doc_length < t.min_doc_len) t.min_doc_len = doc_length;
  }

  // Appends the skip entry for the block of 64 postings that just filled, decoding it once
  // for its max tf and shortest doc (amortized: one extra decode per posting).
  void CloseBlock(Term& t) {
    if (t.skip_list == kNoSkips) {
      t.skip_list = static_cast<uint32_t>(skip_lists.size());
      skip_lists.emplace_back();
    }
    std::vector<Skip>& skips = skip_lists[t.skip_list];
    uint32_t doc = skips.empty() ? kEnd : skips.back().doc_before;
    const uint8_t* p = t.docs.data + (skips.empty() ? 0 : skips.back().docs_off);
    const uint8_t* end = t.docs.data + t.docs.size;
    Skip s{t.last_doc, t.docs.size, t.pos.size, 0, kEnd};
    while (p < end) {
      uint32_t delta, tf;
      if (!GetVarint(p, end, &delta) || !GetVarint(p, end, &tf)) break;
      doc += delta;
      s.block_max_tf = std::max(s.block_max_tf, tf);
      if (doc < doc_len.size()) s.block_min_doc_len = std::min(s.block_min_doc_len, doc_len[doc]);
    }
    skips.push_back(s);
  }

  // ---- affix lookup for the phrase path (in memory only, never saved) ----------------
  // Term ids sorted by their bytes (by_prefix) and by their reversed bytes (by_suffix), so
  // "terms starting with X" / "ending with X" is a bisected range instead of a scan of the
  // whole dictionary. Built on the first phrase query that needs them; terms interned since
  // (ids >= affix_sorted) form an unsorted tail that is scanned linearly and merged in once
  // it grows past 1/8 of the sorted part. Memory: 8 bytes per term (two uint32 arrays).
  std::vector<uint32_t> by_prefix;
  std::vector<uint32_t> by_suffix;
  uint32_t affix_sorted = 0;  // terms [0, affix_sorted) are in the arrays

  static bool ReverseLess(std::string_view a, std::string_view b) {
    const size_t n = std::min(a.size(), b.size());
    for (size_t i = 1; i <= n; ++i) {
      const uint8_t x = static_cast<uint8_t>(a[a.size() - i]);
      const uint8_t y = static_cast<uint8_t>(b[b.size() - i]);
      if (x != y) return x < y;
    }
    return a.size() < b.size();
  }

  // Bytes [at, at + 8) of the term (reversed: counted from its end), big-endian and zero
  // padded: two of them make a sort key whose order agrees with the full comparison
  // whenever two keys differ (most terms are at most 16 bytes, so ties are rare).
  uint64_t AffixKey(uint32_t id, size_t at, bool reversed) const {
    const std::string_view s = term(id);
    uint64_t k = 0;
    for (size_t i = at; i < at + 8; ++i) {
      k = (k << 8) | (i < s.size() ? static_cast<uint8_t>(reversed ? s[s.size() - 1 - i] : s[i]) : 0);
    }
    return k;
  }

  struct AffixEntry {
    uint64_t hi, lo;
    uint32_t id;
  };

  // Most-significant-digit sort, 16 bytes a round: entries [begin, end) share their first
  // `depth` bytes; sorted by the next 16 without touching the terms again, then each run
  // still tied (terms sharing a long prefix: generated names, paths) by the 16 after.
  void SortAffixRun(AffixEntry* begin, AffixEntry* end, size_t depth, bool reversed) const {
    for (AffixEntry* e = begin; e != end; ++e) {
      e->hi = AffixKey(e->id, depth, reversed);
      e->lo = AffixKey(e->id, depth + 8, reversed);
    }
    std::sort(begin, end, [](const AffixEntry& a, const AffixEntry& b) {
      return a.hi != b.hi ? a.hi < b.hi : a.lo < b.lo;
    });
    for (AffixEntry* i = begin; i != end;) {
      AffixEntry* j = i + 1;
      while (j != end && j->hi == i->hi && j->lo == i->lo) ++j;
      // Tied keys: equal bytes [depth, depth + 16), or zero padding (a term that ended
      // sorts first: it is shorter). Only terms longer than depth + 16 need another round.
      if (j - i > 1) {
        AffixEntry* longer = std::stable_partition(i, j, [&](const AffixEntry& e) { return term(e.id).size() <= depth + 16; });
        // The ≤ depth + 16 ones are ordered by length among equal padded keys (a term of
        // real zero bytes never occurs: the tokenizer emits no NUL).
        std::sort(i, longer, [&](const AffixEntry& a, const AffixEntry& b) { return term(a.id).size() < term(b.id).size(); });
        if (j - longer > 1) SortAffixRun(longer, j, depth + 16, reversed);
      }
      i = j;
    }
  }

  void SortAffix(std::vector<uint32_t>* ids, bool reversed) const {
    std::vector<AffixEntry> e(ids->size());
    for (size_t i = 0; i < ids->size(); ++i) e[i].id = (*ids)[i];
    SortAffixRun(e.data(), e.data() + e.size(), 0, reversed);
    for (size_t i = 0; i < ids->size(); ++i) (*ids)[i] = e[i].id;
  }

  /// Brings the sorted arrays up to date when the unsorted tail has grown past 1/8.
  void RefreshAffix() {
    const uint32_t total = static_cast<uint32_t>(terms.size());
    const uint32_t tail = total - affix_sorted;
    if (tail == 0 || (affix_sorted > 0 && tail <= affix_sorted / 8)) return;
    std::vector<uint32_t> fresh(tail);
    for (uint32_t i = 0; i < tail; ++i) fresh[i] = affix_sorted + i;
    for (int r = 0; r < 2; ++r) {
      const bool reversed = r == 1;
      std::vector<uint32_t>& arr = reversed ? by_suffix : by_prefix;
      std::vector<uint32_t> add = fresh;
      SortAffix(&add, reversed);
      const size_t mid = arr.size();
      arr.insert(arr.end(), add.begin(), add.end());
      std::inplace_merge(arr.begin(), arr.begin() + static_cast<std::ptrdiff_t>(mid), arr.end(),
                         [&](uint32_t a, uint32_t b) {
                           return reversed ? ReverseLess(term(a), term(b)) : term(a) < term(b);
                         });
    }
    affix_sorted = total;
  }

  /// Calls f(term id) for every term that starts with (suffix = false) or ends with
  /// (suffix = true) `x`. Stops early, returning false, when f returns false.
  template <typename F>
  bool ForEachAffix(std::string_view x, bool suffix, F&& f) {
    RefreshAffix();
    const std::vector<uint32_t>& arr = suffix ? by_suffix : by_prefix;
    auto has = [&](std::string_view s) {
      return s.size() >= x.size() &&
             std::memcmp(s.data() + (suffix ? s.size() - x.size() : 0), x.data(), x.size()) == 0;
    };
    auto it = std::partition_point(arr.begin(), arr.end(), [&](uint32_t id) {
      return suffix ? ReverseLess(term(id), x) : term(id) < x;
    });
    for (; it != arr.end() && has(term(*it)); ++it) {
      if (!f(*it)) return false;
    }
    const uint32_t total = static_cast<uint32_t>(terms.size());
    for (uint32_t id = affix_sorted; id < total; ++id) {
      if (has(term(id)) && !f(id)) return false;
    }
    return true;
  }

  uint64_t MemoryBytes() const {
    uint64_t bytes = span_ids.capacity() * 8 + turn_start.capacity() * 8 + turn_end.capacity() * 8 +
                     doc_len.capacity() * 4 + long_docs.capacity() * 4 + term_bytes.capacity() +
                     term_offsets.capacity() * 4 + terms.capacity() * sizeof(Term) + slots.capacity() * 8 +
                     skip_lists.capacity() * sizeof(std::vector<Skip>) + by_prefix.capacity() * 4 +
                     by_suffix.capacity() * 4 + normal_of.capacity() * 4;
    for (const Term& t : terms) bytes += t.docs.capacity + t.pos.capacity;
    for (const auto& s : skip_lists) bytes += s.capacity() * sizeof(Skip);
    return bytes;
  }

  uint64_t PostingsBytes() const {
    uint64_t bytes = 0;
    for (const Term& t : terms) bytes += t.docs.size + t.pos.size;
    return bytes;
  }
};

namespace {

/// Walks one term's doc stream (and optionally its positions) in doc order, with skips.
/// Every read is bounds-checked; a malformed stream ends the cursor, never overruns.
struct PostingCursor {
  const uint8_t* docs_base = nullptr;
  const uint8_t* p = nullptr;
  const uint8_t* end = nullptr;
  const uint8_t* pos_base = nullptr;
  const uint8_t* pos_p = nullptr;
  const uint8_t* pos_end = nullptr;
  const Skip* skips = nullptr;
  uint32_t skip_count = 0;
  uint32_t next_skip = 0;
  uint32_t doc_limit = 0;   // docs in the namespace: anything ≥ is treated as corrupt → end
  uint32_t decoded = kEnd;  // last decoded doc (-1 before the first)
  uint32_t doc = kEnd;      // current doc, kEnd when exhausted
  uint32_t tf = 0;
  uint32_t pos_unread = 0;  // positions of the current doc not consumed yet
  uint32_t decoded_count = 0;  // postings decoded so far (the current one is decoded_count - 1)
  bool with_positions = false;
  // BM25 per-term constants.
  float idf = 0;
  float upper_bound = 0;
  uint32_t term_id = 0;
  // Block-max: the bound of the block holding the current posting, cached per block.
  uint32_t cached_block = kEnd;
  uint32_t block_last_doc = kEnd;
  float block_bound = 0;

  void Open(const LexicalIndex::Namespace& ns, uint32_t term_id, bool positions) {
    const Term& t = ns.terms[term_id];
    this->term_id = term_id;
    docs_base = p = t.docs.data;
    end = t.docs.data + t.docs.size;
    pos_base = pos_p = t.pos.data;
    pos_end = t.pos.data + t.pos.size;
    if (t.skip_list != kNoSkips) {
      skips = ns.skip_lists[t.skip_list].data();
      skip_count = static_cast<uint32_t>(ns.skip_lists[t.skip_list].size());
    }
    doc_limit = ns.doc_count();
    with_positions = positions;
    decoded = kEnd;
    Next();
  }

  bool SkipPositions(uint32_t n) {
    while (n-- > 0) {
      uint32_t ignored;
      if (!GetVarint(pos_p, pos_end, &ignored)) return false;
    }
    return true;
  }

  bool Next() {
    if (with_positions && pos_unread > 0) {
      if (!SkipPositions(pos_unread)) return Finish();
      pos_unread = 0;
    }
    if (p >= end) return Finish();
    uint32_t delta, count;
    if (end - p >= 2 && p[0] < 0x80 && p[1] < 0x80) {
      // Common case: a small doc gap and a small tf, one byte each.
      delta = p[0];
      count = p[1];
      p += 2;
      if (delta == 0 || count == 0) return Finish();
    } else if (!GetVarint(p, end, &delta) || !GetVarint(p, end, &count) || delta == 0 || count == 0) {
      return Finish();
    }
    decoded += delta;
    if (decoded >= doc_limit) return Finish();
    doc = decoded;
    tf = count;
    pos_unread = count;
    ++decoded_count;
    return true;
  }

  bool Finish() {
    doc = kEnd;
    p = end;
    return false;
  }

  /// Moves to the first doc ≥ target.
  void Advance(uint32_t target) {
    if (doc >= target) return;  // includes kEnd
    uint32_t s = next_skip;
    // Skips are ordered by doc: bisect, so a seek far ahead (a probe of one span on a
    // posting list of 10^5 docs) costs log(blocks), not a walk over every block.
    if (s < skip_count && skips[s].doc_before < target) {
      s = static_cast<uint32_t>(std::partition_point(skips + s, skips + skip_count,
                                                     [target](const Skip& k) { return k.doc_before < target; }) -
                                skips);
    }
    if (s > next_skip) {
      const Skip& k = skips[s - 1];
      next_skip = s;
      if (docs_base + k.docs_off > p && k.docs_off <= end - docs_base && k.pos_off <= pos_end - pos_base) {
        p = docs_base + k.docs_off;
        pos_p = pos_base + k.pos_off;
        pos_unread = 0;
        decoded = k.doc_before;
        decoded_count = s * kSkipEvery;  // skips[s - 1] sits at posting s * 64
      }
    }
    while (doc < target && Next()) {
    }
  }

  /// The largest BM25 contribution of any posting in the current posting's block, and the
  /// block's last doc (kEnd - 1 for the open tail block, bounded by the term's own bound).
  float BlockBound(float norm_a, float norm_b) {
    const uint32_t block = (decoded_count - 1) / kSkipEvery;
    if (block != cached_block) {
      cached_block = block;
      if (block < skip_count) {
        const Skip& s = skips[block];
        const float max_tf = static_cast<float>(s.block_max_tf);
        block_last_doc = s.doc_before;
        block_bound = idf * max_tf * (kK1 + 1) / (max_tf + norm_a + norm_b * static_cast<float>(s.block_min_doc_len)) *
                      1.0001f;
      } else {
        block_last_doc = kEnd - 1;
        block_bound = upper_bound;
      }
    }
    return block_bound;
  }

  /// Decodes the current doc's positions into `out` (replaces its contents).
  bool ReadPositions(std::vector<uint32_t>* out) {
    out->clear();
    uint32_t position = 0;
    for (uint32_t i = 0; i < pos_unread; ++i) {
      uint32_t delta;
      if (!GetVarint(pos_p, pos_end, &delta)) {
        pos_unread = 0;
        Finish();
        return false;
      }
      position += delta;
      out->push_back(position);
    }
    pos_unread = 0;
    return true;
  }
};

// A min-heap entry ordering: the "worst" hit is on top (lowest score, then highest id).
inline bool Worse(const LexicalHit& a, const LexicalHit& b) {
  return a.score > b.score || (a.score == b.score && a.span_id < b.span_id);
}

/// A whole word strictly inside a phrase: its term, its atom offset from the phrase's
/// start, and its document frequency (the rarest drives the intersection).
struct PhraseConstraint {
  uint32_t term;
  uint32_t offset;
  uint32_t df;
};

/// Tokenizes `phrase` into `stream`. Words strictly inside the phrase (a separator on both
/// sides) are tokenized the same in any text containing the phrase, and so are the atom
/// distances between them (tokenizer.h, "Positions"): their whole-word tokens at those
/// distances are a necessary condition for a match, which the text verification decides.
/// `out` gets them rarest first; `best_partial` the longest word the phrase cuts (-1: none).
/// False when an interior word is in no document: nothing can match.
bool PhraseConstraints(const LexicalIndex::Namespace& n, std::string_view phrase, TokenStream* stream,
                       std::vector<PhraseConstraint>* out, int* best_partial);

/// Whether one document's positions (`positions[i]` for `constraints[i]`) put every
/// constraint's word at its offset from one common start.
/// With `tail` (sorted), the start must also have one of its positions at `tail_offset`.
bool Aligned(const std::vector<PhraseConstraint>& constraints, const std::vector<std::vector<uint32_t>>& positions,
             const std::vector<uint32_t>* tail = nullptr, uint32_t tail_offset = 0) {
  for (const uint32_t p : positions[0]) {
    if (p < constraints[0].offset) continue;
    const uint32_t base = p - constraints[0].offset;
    bool aligned = true;
    for (size_t i = 1; i < constraints.size() && aligned; ++i) {
      aligned = std::binary_search(positions[i].begin(), positions[i].end(), base + constraints[i].offset);
    }
    if (aligned && tail != nullptr) aligned = std::binary_search(tail->begin(), tail->end(), base + tail_offset);
    if (aligned) return true;
  }
  return false;
}

}  // namespace

struct LexicalIndex::Scratch {
  std::vector<uint32_t> query_terms;
  std::vector<PostingCursor> cursors;
  std::vector<float> prefix_bounds;
  std::vector<float> contrib;  // per query term, for the current doc
  std::vector<PostingCursor> seed_cursors;  // threshold seed over the rarest terms
  std::vector<float> seed_scores;
  std::vector<PostingCursor> phrase_cursors;
  std::vector<std::vector<uint32_t>> phrase_positions;
  std::vector<PhraseConstraint> phrase_constraints;
  std::vector<uint64_t> bitmap;
  std::vector<uint64_t> bitmap2;
  std::vector<uint32_t> affix_terms;
  std::vector<PostingCursor> tail_cursors;
  std::vector<uint32_t> tail_positions;
  std::vector<uint32_t> tail_scratch;
  std::vector<uint32_t> tail_all;
  std::vector<uint64_t> tail_cand;
  std::vector<uint8_t> tail_cand_ok;
};

// ---- construction, ingest --------------------------------------------------------------

LexicalIndex::LexicalIndex(std::string file) : file_(std::move(file)) {
  norm_.reserve(kMaxTokenBytes);  // a normal form is never longer than its token
  raw_ = new Namespace(RecordKind::kRaw);
  summary_ = new Namespace(RecordKind::kSummary);
  scratch_ = new Scratch();
  Load();
}

LexicalIndex::~LexicalIndex() {
  delete scratch_;
  delete raw_;
  delete summary_;
}

void LexicalIndex::Reset() {
  delete raw_;
  delete summary_;
  raw_ = new Namespace(RecordKind::kRaw);
  summary_ = new Namespace(RecordKind::kSummary);
  high_water_ = 0;
}

LexicalIndex::Namespace& LexicalIndex::ns(RecordKind kind) {
  return kind == RecordKind::kSummary ? *summary_ : *raw_;
}

void LexicalIndex::CheckBatch(const IndexInput* inputs, size_t count) const {
  uint64_t next = high_water_;
  for (size_t i = 0; i < count; ++i) {
    const IndexInput& in = inputs[i];
    if (in.span_id < next) {
      throw NativeError("INVALID_ARGUMENT", "span id " + std::to_string(in.span_id) +
                                                " is not above the last id indexed (high water " +
                                                std::to_string(next) + "); ids must strictly increase");
    }
    const auto k = static_cast<uint8_t>(in.kind);
    if (k < 1 || k > 3) {
      throw NativeError("UNKNOWN_KIND", "kind " + std::to_string(k) + " at index " + std::to_string(i) +
                                            " is not raw (1), summary (2) or event (3)");
    }
    if (in.turn_start > in.turn_end) {
      throw NativeError("INVALID_TURN", "turn range [" + std::to_string(in.turn_start) + ", " +
                                            std::to_string(in.turn_end) + "] of span " +
                                            std::to_string(in.span_id) + " is reversed");
    }
    if (in.text.size() > std::numeric_limits<int32_t>::max()) {
      throw NativeError("TEXT_TOO_LARGE", "text of span " + std::to_string(in.span_id) + " exceeds 2 GiB");
    }
    if (namespace_full(in.kind)) {
      throw NativeError("INVALID_ARGUMENT", "lexical namespace is full (2^32 - 2 documents)");
    }
    next = in.span_id + 1;
  }
}

bool LexicalIndex::namespace_full(RecordKind kind) const {
  if (kind == RecordKind::kEvent) return false;
  const Namespace& n = kind == RecordKind::kSummary ? *summary_ : *raw_;
  return n.doc_count() >= kEnd - 1;
}

void LexicalIndex::Add(const IndexInput& in) {
  if (in.kind != RecordKind::kRaw && in.kind != RecordKind::kSummary) {
    high_water_ = in.span_id + 1;  // events are seen, not indexed
    return;
  }
  Namespace& n = ns(in.kind);
  const uint32_t doc = n.doc_count();
  if (in.meta.empty()) {
    Tokenize(in.text, &stream_);
  } else {
    with_meta_.assign(in.text);
    with_meta_.push_back('\n');
    with_meta_.append(in.meta);
    Tokenize(with_meta_, &stream_);
  }

  // (term id << 32 | position), sorted: groups each term's positions in increasing order.
  // Hash every token first and prefetch its slot: the dictionary is far larger than the
  // cache, and issuing the misses together overlaps them instead of paying them in series.
  const size_t ntokens = stream_.tokens.size();
  hashes_.resize(ntokens);
  for (size_t i = 0; i < ntokens; ++i) {
    const std::string_view t = stream_.token(i);
    hashes_[i] = HashBytes(t.data(), t.size());
    __builtin_prefetch(&n.slots[hashes_[i] & n.slot_mask]);
  }
  // Normal forms beside the tokens (tokenizer version 4): a token whose NormalizeTerm
  // differs is also filed under that form at its own position, so BM25 finds "enjoyed" for
  // "enjoying" while positions, and so the phrase path's alignments, stay the tokens'. A
  // form equal to another token at the same position collapses with it below.
  pairs_.clear();
  bool has_truncated = false;
  for (size_t i = 0; i < ntokens; ++i) {
    const TokenRef& t = stream_.tokens[i];
    has_truncated |= t.truncated;
    const uint32_t id = n.InternHashed(stream_.token(i), hashes_[i]);
    pairs_.push_back((uint64_t(id) << 32) | t.position);
    const uint32_t form = n.NormalOf(id, &norm_);
    if (form != kSameForm) pairs_.push_back((uint64_t(form) << 32) | t.position);
  }
  std::sort(pairs_.begin(), pairs_.end());
  pairs_.erase(std::unique(pairs_.begin(), pairs_.end()), pairs_.end());

  for (size_t i = 0; i < pairs_.size(); i += 4) __builtin_prefetch(&n.terms[pairs_[i] >> 32]);
  positions_.clear();
  for (size_t i = 0; i < pairs_.size();) {
    const uint32_t term_id = static_cast<uint32_t>(pairs_[i] >> 32);
    positions_.clear();
    size_t j = i;
    while (j < pairs_.size() && static_cast<uint32_t>(pairs_[j] >> 32) == term_id) {
      positions_.push_back(static_cast<uint32_t>(pairs_[j]));
      ++j;
    }
    // The document's length is its token count: normal forms do not change BM25's length
    // normalization (nor the block bounds derived from it).
    n.AddPosting(term_id, doc, static_cast<uint32_t>(ntokens), positions_.data(),
                 static_cast<uint32_t>(positions_.size()));
    i = j;
  }

  const auto length = static_cast<uint32_t>(ntokens);
  n.span_ids.push_back(in.span_id);
  n.turn_start.push_back(in.turn_start);
  n.turn_end.push_back(in.turn_end);
  n.doc_len.push_back(length);
  n.total_tokens += length;
  if (has_truncated) n.long_docs.push_back(doc);
  high_water_ = in.span_id + 1;
}

uint64_t LexicalIndex::CatchUp(const SpanSource& source) {
  const uint64_t next_id = source.next_id();
  if (high_water_ > next_id) {
    throw NativeError("CORRUPT", "lexical index covers span ids up to " + std::to_string(high_water_ - 1) +
                                     " but the log ends at " + std::to_string(next_id) +
                                     ": the index is not derived from this log" + Where(file_, 16));
  }
  const uint64_t from = std::max(high_water_, source.first_id());
  uint64_t indexed = 0;
  SpanView view;
  for (uint64_t id = from; id < next_id; ++id) {
    if (!source.read(id, &view)) {
      throw NativeError("CORRUPT", "the log holds no record for span id " + std::to_string(id) +
                                       " below its next id " + std::to_string(next_id));
    }
    const auto k = static_cast<uint8_t>(view.kind);
    if (k < 1 || k > 3 || view.turn_start > view.turn_end) {
      throw NativeError("CORRUPT", "log record " + std::to_string(id) + " has kind " + std::to_string(k) +
                                       " or a reversed turn range");
    }
    IndexInput in{id, view.kind, view.turn_start, view.turn_end, std::string_view(view.text, view.text_len),
                  std::string_view(view.meta, view.meta_len)};
    Add(in);
    if (view.kind != RecordKind::kEvent) ++indexed;
  }
  if (next_id > high_water_) high_water_ = next_id;
  return indexed;
}

// ---- BM25 (MaxScore, document at a time) ---------------------------------------------

void LexicalIndex::Search(std::string_view query, uint32_t k, RecordKind kind, double turn_min, double turn_max,
                          std::vector<LexicalHit>* hits) {
  hits->clear();
  Scratch& sc = *scratch_;
  Namespace& n = ns(kind);
  const uint32_t docs = n.doc_count();
  if (docs == 0 || k == 0) return;

  // Distinct query terms that exist in this namespace (a missing term scores nothing). Each
  // token is looked up by its normal form, which every document holding the token, or
  // another word of the same form, was indexed under (Add).
  Tokenize(query, &stream_);
  sc.query_terms.clear();
  for (size_t i = 0; i < stream_.tokens.size(); ++i) {
    std::string_view term = stream_.token(i);
    if (NormalizeTerm(term, &norm_)) term = norm_;
    const uint32_t id = n.Find(term);
    if (id != kNotFound) sc.query_terms.push_back(id);
  }
  std::sort(sc.query_terms.begin(), sc.query_terms.end());
  sc.query_terms.erase(std::unique(sc.query_terms.begin(), sc.query_terms.end()), sc.query_terms.end());
  if (sc.query_terms.empty()) return;

  const float avgdl = static_cast<float>(double(n.total_tokens) / double(docs));
  const float norm_a = kK1 * (1 - kB);
  const float norm_b = avgdl > 0 ? kK1 * kB / avgdl : 0;

  sc.cursors.resize(sc.query_terms.size());
  for (size_t i = 0; i < sc.query_terms.size(); ++i) {
    PostingCursor& c = sc.cursors[i];
    c = PostingCursor();
    c.Open(n, sc.query_terms[i], false);
    const Term& t = n.terms[sc.query_terms[i]];
    const double df = t.df;
    c.idf = static_cast<float>(std::log(1.0 + (double(docs) - df + 0.5) / (df + 0.5)));
    const float max_tf = static_cast<float>(t.max_tf);
    // The largest contribution this term can make: its highest tf in the shortest doc that
    // holds it (tf/(tf + norm) grows with tf and shrinks with the doc length).
    const float min_norm = norm_a + norm_b * static_cast<float>(t.min_doc_len);
    c.upper_bound = c.idf * max_tf * (kK1 + 1) / (max_tf + min_norm) * 1.0001f;
  }
  // MaxScore: terms sorted by upper bound; a prefix whose bounds sum to at most the k-th
  // score so far cannot put a document into the top k on its own ("non-essential").
  std::sort(sc.cursors.begin(), sc.cursors.end(),
            [](const PostingCursor& a, const PostingCursor& b) { return a.upper_bound < b.upper_bound; });
  const size_t nterms = sc.cursors.size();
  sc.prefix_bounds.resize(nterms);
  float sum = 0;
  for (size_t i = 0; i < nterms; ++i) sc.prefix_bounds[i] = (sum += sc.cursors[i].upper_bound);
  sc.contrib.assign(nterms, 0.0f);

  const bool filter_min = !std::isnan(turn_min);
  const bool filter_max = !std::isnan(turn_max);
  auto& heap = *hits;
  heap.reserve(k);

  // Threshold seed: MaxScore only prunes once it knows a k-th score, and on a long query
  // the common terms stay essential (and fully decoded) until then. The rarest terms'
  // short lists give partial scores, which are lower bounds of full scores: if k docs
  // reach θ0 on those terms alone, no doc below θ0 can be in the top k, so pruning may
  // start at θ0 (shaved by 1e-5 against summation-order rounding; ties at θ0 still enter).
  float threshold = 0;
  if (nterms >= 2) {
    size_t rare_begin = nterms - 1;
    uint64_t budget = n.terms[sc.cursors[nterms - 1].term_id].df;
    while (rare_begin > 1 && budget + n.terms[sc.cursors[rare_begin - 1].term_id].df <= 4096) {
      budget += n.terms[sc.cursors[--rare_begin].term_id].df;
    }
    sc.seed_cursors.resize(nterms - rare_begin);
    for (size_t i = rare_begin; i < nterms; ++i) {
      PostingCursor& c = sc.seed_cursors[i - rare_begin];
      c = PostingCursor();
      c.Open(n, sc.cursors[i].term_id, false);
      c.idf = sc.cursors[i].idf;
    }
    auto& seed = sc.seed_scores;  // min-heap of the k best partial scores
    seed.clear();
    for (;;) {
      uint32_t d = kEnd;
      for (const PostingCursor& c : sc.seed_cursors) d = std::min(d, c.doc);
      if (d == kEnd) break;
      const bool keep =
          !((filter_min && double(n.turn_end[d]) < turn_min) || (filter_max && double(n.turn_start[d]) > turn_max));
      const float norm = norm_a + norm_b * static_cast<float>(n.doc_len[d]);
      float score = 0;
      for (PostingCursor& c : sc.seed_cursors) {
        if (c.doc != d) continue;
        const float tf = static_cast<float>(c.tf);
        score += c.idf * tf * (kK1 + 1) / (tf + norm);
        c.Next();
      }
      if (!keep) continue;
      if (seed.size() < k) {
        seed.push_back(score);
        std::push_heap(seed.begin(), seed.end(), std::greater<float>());
      } else if (score > seed.front()) {
        std::pop_heap(seed.begin(), seed.end(), std::greater<float>());
        seed.back() = score;
        std::push_heap(seed.begin(), seed.end(), std::greater<float>());
      }
    }
    if (seed.size() == k) threshold = seed.front() * (1 - 1e-5f);
  }
  size_t first_essential = 0;
  while (first_essential < nterms && sc.prefix_bounds[first_essential] <= threshold) ++first_essential;

  for (;;) {
    uint32_t d = kEnd;
    for (size_t i = first_essential; i < nterms; ++i) d = std::min(d, sc.cursors[i].doc);
    if (d == kEnd) break;
    if ((filter_min && double(n.turn_end[d]) < turn_min) || (filter_max && double(n.turn_start[d]) > turn_max)) {
      for (size_t i = first_essential; i < nterms; ++i) {
        if (sc.cursors[i].doc == d) sc.cursors[i].Next();
      }
      continue;
    }
    const bool pruning = heap.size() == k || threshold > 0;
    if (pruning) {
      // Block-max: bound d by the blocks of the essential terms present at d. If even that
      // cannot beat the threshold, neither can any doc up to the first block end or the next doc of
      // another essential term, so all of them are skipped in one jump.
      float bound = first_essential > 0 ? sc.prefix_bounds[first_essential - 1] : 0;
      uint32_t boundary = kEnd - 1;
      for (size_t i = first_essential; i < nterms; ++i) {
        PostingCursor& c = sc.cursors[i];
        if (c.doc == d) {
          bound += c.BlockBound(norm_a, norm_b);
          boundary = std::min(boundary, c.block_last_doc);
        } else {
          boundary = std::min(boundary, c.doc - 1);
        }
      }
      if (bound <= threshold) {
        for (size_t i = first_essential; i < nterms; ++i) {
          if (sc.cursors[i].doc <= boundary) sc.cursors[i].Advance(boundary + 1);
        }
        continue;
      }
    }
    const float norm = norm_a + norm_b * static_cast<float>(n.doc_len[d]);
    // Contributions are kept per term and summed in one fixed order at the end, so a
    // document's score does not depend on which terms were essential when it was reached
    // (otherwise equal scores could differ by an ulp and break the id tie order).
    std::fill(sc.contrib.begin(), sc.contrib.end(), 0.0f);
    float partial = 0;
    for (size_t i = first_essential; i < nterms; ++i) {
      PostingCursor& c = sc.cursors[i];
      if (c.doc == d) {
        const float tf = static_cast<float>(c.tf);
        sc.contrib[i] = c.idf * tf * (kK1 + 1) / (tf + norm);
        partial += sc.contrib[i];
        c.Next();
      }
    }
    const bool full = heap.size() == k;
    bool pruned = false;
    for (size_t i = first_essential; i-- > 0;) {
      // Bounds carry a 1e-4 relative margin, so rounding never prunes a true top-k doc.
      if (pruning && partial + sc.prefix_bounds[i] <= threshold) {
        pruned = true;
        break;
      }
      PostingCursor& c = sc.cursors[i];
      c.Advance(d);
      if (c.doc == d) {
        const float tf = static_cast<float>(c.tf);
        sc.contrib[i] = c.idf * tf * (kK1 + 1) / (tf + norm);
        partial += sc.contrib[i];
      }
    }
    if (pruned) continue;
    double total = 0;
    for (size_t i = 0; i < nterms; ++i) total += sc.contrib[i];
    const LexicalHit hit{n.span_ids[d], static_cast<float>(total)};
    if (!full) {
      heap.push_back(hit);
      std::push_heap(heap.begin(), heap.end(), Worse);
    } else if (Worse(hit, heap.front())) {
      // hit ranks above the current worst: replace it.
      std::pop_heap(heap.begin(), heap.end(), Worse);
      heap.back() = hit;
      std::push_heap(heap.begin(), heap.end(), Worse);
    } else {
      continue;
    }
    if (heap.size() == k) {
      threshold = std::max(threshold, heap.front().score);
      while (first_essential < nterms && sc.prefix_bounds[first_essential] <= threshold) ++first_essential;
    }
  }
  std::sort_heap(heap.begin(), heap.end(), Worse);
}

// ---- exact phrase ------------------------------------------------------------------------

void LexicalIndex::Phrase(const SpanSource& source, std::string_view phrase, RecordKind kind, uint64_t limit,
                          std::vector<uint64_t>* ids) {
  ids->clear();
  Scratch& sc = *scratch_;
  if (phrase.empty()) throw NativeError("INVALID_ARGUMENT", "phrase is empty (it would match every span)");
  Namespace& n = ns(kind);
  const uint32_t docs = n.doc_count();
  if (docs == 0 || limit == 0) return;

  // Verifies local doc `d` against the log's bytes; true when the limit is reached.
  SpanView view;
  auto verify = [&](uint32_t d) -> bool {
    const uint64_t span_id = n.span_ids[d];
    if (!source.read(span_id, &view) || view.kind != kind) {
      throw NativeError("CORRUPT", "lexical index holds span id " + std::to_string(span_id) +
                                       " that the log does not hold as this kind");
    }
    if (view.text_len >= phrase.size() &&
        memmem(view.text, view.text_len, phrase.data(), phrase.size()) != nullptr) {
      ids->push_back(span_id);
    }
    return ids->size() >= limit;
  };
  // Verifies every doc marked in sc.bitmap, in doc order, until the limit is reached.
  auto verify_marked = [&]() {
    for (size_t w = 0; w < sc.bitmap.size(); ++w) {
      uint64_t bits = sc.bitmap[w];
      while (bits != 0) {
        const uint32_t d = static_cast<uint32_t>(w * 64 + __builtin_ctzll(bits));
        bits &= bits - 1;
        if (verify(d)) return;
      }
    }
  };

  std::vector<PhraseConstraint>& constraints = sc.phrase_constraints;
  int best_partial = -1;
  if (!PhraseConstraints(n, phrase, &stream_, &constraints, &best_partial)) return;

  // The words touching the phrase's ends ("partial": the text's word may be longer) that a
  // sorted affix range can answer: the first word's text token ENDS with its token, the
  // last word's STARTS with it. A word touching both ends, or cut at kMaxTokenBytes, is
  // left to the dictionary scan below.
  struct Affix {
    std::string_view token;
    bool suffix;
    uint64_t postings;  // sum of the matching terms' df
  };
  Affix affixes[2];
  size_t affix_count = 0;
  for (const WordRef& word : stream_.words) {
    if (word.whole_token < 0) continue;
    const bool open_left = word.byte_begin == 0;
    const bool open_right = word.byte_end == phrase.size();
    if (open_left == open_right) continue;  // interior, or the whole phrase
    if (stream_.tokens[static_cast<size_t>(word.whole_token)].truncated || affix_count == 2) continue;
    affixes[affix_count++] = Affix{stream_.token(static_cast<size_t>(word.whole_token)), open_left, 0};
  }
  // Sums an affix's postings, giving up (returns false) past `budget`.
  std::vector<uint32_t>& affix_terms = sc.affix_terms;
  auto measure = [&](Affix& a, uint64_t budget) {
    a.postings = 0;
    return n.ForEachAffix(a.token, a.suffix, [&](uint32_t t) {
      a.postings += n.terms[t].df;
      return a.postings <= budget;
    });
  };
  // ORs the docs of every term matching `a`, and every long doc, into `bits` (cleared first).
  auto fill = [&](const Affix& a, std::vector<uint64_t>* bits) {
    bits->assign((docs + 63) / 64, 0);
    affix_terms.clear();
    n.ForEachAffix(a.token, a.suffix, [&](uint32_t t) {
      affix_terms.push_back(t);
      return true;
    });
    for (const uint32_t t : affix_terms) {
      PostingCursor c;
      c.Open(n, t, false);
      for (; c.doc != kEnd; c.Next()) (*bits)[c.doc >> 6] |= uint64_t(1) << (c.doc & 63);
    }
    for (const uint32_t d : n.long_docs) {
      if (d < docs) (*bits)[d >> 6] |= uint64_t(1) << (d & 63);
    }
  };

  if (!constraints.empty()) {
    const size_t m = constraints.size();
    sc.phrase_cursors.resize(m);
    sc.phrase_positions.resize(m);
    for (size_t i = 0; i < m; ++i) {
      sc.phrase_cursors[i] = PostingCursor();
      sc.phrase_cursors[i].Open(n, constraints[i].term, true);
    }
    // The last word, when the phrase's end cuts it, is in the text a word whose whole token
    // STARTS with its token, at the same atom distance from the interior words (the atoms
    // between are the interior words' own). When few terms start with it, their positions
    // join the alignment. A doc with a token cut at kMaxTokenBytes skips this check.
    size_t tail_terms = 0;
    uint32_t tail_offset = 0;
    bool deferred = false;
    for (const WordRef& word : stream_.words) {
      if (word.whole_token < 0 || word.byte_begin == 0 || word.byte_end != phrase.size()) continue;
      if (stream_.tokens[static_cast<size_t>(word.whole_token)].truncated) break;
      affix_terms.clear();
      const bool few = n.ForEachAffix(stream_.token(static_cast<size_t>(word.whole_token)), false, [&](uint32_t t) {
        affix_terms.push_back(t);
        return affix_terms.size() <= kMaxTailTerms;
      });
      if (!few) {
        // Many terms start with it: when their postings are not many more than the
        // driver's, check positions afterwards, in one walk of those terms over the
        // candidates the interior words leave (see below), instead of a cursor per term.
        const uint64_t budget = uint64_t(constraints[0].df) * 2;
        uint64_t postings = 0;
        std::vector<uint32_t>& all = sc.tail_all;
        all.clear();
        deferred = constraints[0].df >= kAffixFilterMinDf &&
                   n.ForEachAffix(stream_.token(static_cast<size_t>(word.whole_token)), false, [&](uint32_t t) {
                     all.push_back(t);
                     postings += n.terms[t].df;
                     return postings <= budget;
                   });
        tail_offset = word.first_atom;
        break;
      }
      tail_terms = affix_terms.size();
      tail_offset = word.first_atom;
      sc.tail_cursors.resize(tail_terms);
      for (size_t i = 0; i < tail_terms; ++i) {
        sc.tail_cursors[i] = PostingCursor();
        sc.tail_cursors[i].Open(n, affix_terms[i], true);
      }
      break;
    }
    auto aligned = [&](uint32_t d) {
      if (tail_terms == 0 || std::binary_search(n.long_docs.begin(), n.long_docs.end(), d)) {
        return Aligned(constraints, sc.phrase_positions);
      }
      std::vector<uint32_t>& tail = sc.tail_positions;
      tail.clear();
      for (size_t i = 0; i < tail_terms; ++i) {
        PostingCursor& c = sc.tail_cursors[i];
        c.Advance(d);
        if (c.doc == d && c.ReadPositions(&sc.tail_scratch)) tail.insert(tail.end(), sc.tail_scratch.begin(), sc.tail_scratch.end());
      }
      if (tail.empty()) return false;
      std::sort(tail.begin(), tail.end());
      return Aligned(constraints, sc.phrase_positions, &tail, tail_offset);
    };
    // Deferred: every aligned start becomes (doc << 32 | the last word's position).
    std::vector<uint64_t>& cand = sc.tail_cand;
    std::vector<uint8_t>& cand_ok = sc.tail_cand_ok;
    cand.clear();
    cand_ok.clear();
    auto collect = [&](uint32_t d) {
      const bool long_doc = std::binary_search(n.long_docs.begin(), n.long_docs.end(), d);
      for (const uint32_t p : sc.phrase_positions[0]) {
        if (p < constraints[0].offset) continue;
        const uint32_t base = p - constraints[0].offset;
        bool ok = true;
        for (size_t i = 1; i < m && ok; ++i) {
          ok = std::binary_search(sc.phrase_positions[i].begin(), sc.phrase_positions[i].end(), base + constraints[i].offset);
        }
        if (!ok) continue;
        cand.push_back(uint64_t(d) << 32 | (base + tail_offset));
        cand_ok.push_back(long_doc ? 1 : 0);
        if (long_doc) break;
      }
    };
    // True when the limit is reached.
    auto accept = [&](uint32_t d) {
      if (!deferred) return aligned(d) && verify(d);
      collect(d);
      return false;
    };
    // A common rarest word (a short phrase around "in", "the"): narrow its docs first by a
    // partial end word whose matching terms hold fewer postings than the driver.
    const uint64_t driver_df = constraints[0].df;
    // Each usable affix's doc set costs a walk of its terms' postings (a few ns each) and
    // spares the text verification (~200 ns) of every driver doc it rules out: worth it
    // while its postings are not much more than the driver's. Both are ANDed when both fit.
    size_t filters = 0;
    uint64_t filter_postings = 0;
    if (driver_df >= kAffixFilterMinDf) {
      for (size_t i = 0; i < affix_count; ++i) {
        if (measure(affixes[i], driver_df * 2)) affixes[filters++] = affixes[i];
      }
      if (filters == 2 && affixes[1].postings < affixes[0].postings) std::swap(affixes[0], affixes[1]);
    }
    const bool filter = filters > 0;
    if (filter) filter_postings = affixes[0].postings;
    auto walk = [&]() {
      if (filter) {
        fill(affixes[0], &sc.bitmap);
        if (filters == 2) {
          fill(affixes[1], &sc.bitmap2);
          for (size_t w = 0; w < sc.bitmap.size(); ++w) sc.bitmap[w] &= sc.bitmap2[w];
        }
        // Few candidates: seek every cursor to them. Else walk the driver and test the bit.
        if (filter_postings * 8 < driver_df) {
          uint32_t target = 0;
          while (true) {
            // Next candidate ≥ target.
            size_t w = target >> 6;
            if (w >= sc.bitmap.size()) return;
            uint64_t bits = sc.bitmap[w] & (~uint64_t(0) << (target & 63));
            while (bits == 0) {
              if (++w >= sc.bitmap.size()) return;
              bits = sc.bitmap[w];
            }
            const uint32_t d = static_cast<uint32_t>(w * 64 + __builtin_ctzll(bits));
            uint32_t next = d + 1;
            bool all = true;
            for (size_t i = 0; i < m; ++i) {
              PostingCursor& c = sc.phrase_cursors[i];
              c.Advance(d);
              if (c.doc == kEnd) return;
              if (c.doc != d) {
                all = false;
                next = std::max(next, c.doc);
              }
            }
            target = next;
            if (!all) continue;
            bool ok = true;
            for (size_t i = 0; i < m && ok; ++i) ok = sc.phrase_cursors[i].ReadPositions(&sc.phrase_positions[i]);
            if (ok && accept(d)) return;
          }
        }
      }
      PostingCursor& driver = sc.phrase_cursors[0];
      for (; driver.doc != kEnd; driver.Next()) {
        if (filter && ((sc.bitmap[driver.doc >> 6] >> (driver.doc & 63)) & 1) == 0) continue;
        const uint32_t d = driver.doc;
        bool all = true;
        for (size_t i = 1; i < m; ++i) {
          sc.phrase_cursors[i].Advance(d);
          if (sc.phrase_cursors[i].doc != d) {
            all = false;
            if (sc.phrase_cursors[i].doc == kEnd) return;
            break;
          }
        }
        if (!all) continue;
        bool ok = true;
        for (size_t i = 0; i < m && ok; ++i) ok = sc.phrase_cursors[i].ReadPositions(&sc.phrase_positions[i]);
        if (!ok) continue;
        if (accept(d)) return;
      }
    };
    walk();
    if (deferred) {
      // One walk of the last word's terms over the candidates' docs marks the starts it
      // has a token at; those docs are verified, in doc order.
      std::vector<uint64_t>& bits = sc.bitmap2;
      bits.assign((docs + 63) / 64, 0);
      for (const uint64_t c : cand) bits[c >> 38] |= uint64_t(1) << ((c >> 32) & 63);
      for (const uint32_t t : sc.tail_all) {
        PostingCursor c;
        c.Open(n, t, true);
        for (; c.doc != kEnd; c.Next()) {
          if (((bits[c.doc >> 6] >> (c.doc & 63)) & 1) == 0) continue;
          if (!c.ReadPositions(&sc.tail_scratch)) break;
          size_t k = static_cast<size_t>(std::lower_bound(cand.begin(), cand.end(), uint64_t(c.doc) << 32) - cand.begin());
          for (; k < cand.size() && (cand[k] >> 32) == c.doc; ++k) {
            if (cand_ok[k] == 0 && std::binary_search(sc.tail_scratch.begin(), sc.tail_scratch.end(), static_cast<uint32_t>(cand[k]))) {
              cand_ok[k] = 1;
            }
          }
        }
      }
      uint32_t last = kEnd;
      for (size_t k = 0; k < cand.size(); ++k) {
        const uint32_t d = static_cast<uint32_t>(cand[k] >> 32);
        if (cand_ok[k] == 0 || d == last) continue;
        last = d;
        if (verify(d)) return;
      }
    }
    return;
  }

  if (affix_count > 0) {
    // Only partial words, each answered by a sorted affix range: the union of the rarer
    // one's terms' docs, intersected with the other's when that is not much larger.
    if (affix_count == 2) {
      measure(affixes[0], UINT64_MAX);
      measure(affixes[1], UINT64_MAX);
      if (affixes[1].postings < affixes[0].postings) std::swap(affixes[0], affixes[1]);
    }
    fill(affixes[0], &sc.bitmap);
    if (affix_count == 2 && affixes[1].postings <= uint64_t(docs) * 4) {
      fill(affixes[1], &sc.bitmap2);
      for (size_t w = 0; w < sc.bitmap.size(); ++w) sc.bitmap[w] &= sc.bitmap2[w];
    }
    verify_marked();
    return;
  }

  if (best_partial >= 0) {
    // Only partial words (touching the phrase's ends): the word the phrase cuts is, in the
    // text, a longer word whose whole token ends with (first word), starts with (last
    // word) or contains (both) the phrase word's token. Scan the dictionary for those terms.
    const WordRef& word = stream_.words[static_cast<size_t>(best_partial)];
    const TokenRef& tref = stream_.tokens[static_cast<size_t>(word.whole_token)];
    const std::string_view needle = stream_.token(static_cast<size_t>(word.whole_token));
    const bool open_left = word.byte_begin == 0;
    const bool open_right = word.byte_end == phrase.size();
    enum { kPrefix, kSuffix, kContains } mode =
        (open_left && open_right) || tref.truncated ? kContains : open_left ? kSuffix : kPrefix;
    sc.bitmap.assign((docs + 63) / 64, 0);
    const uint32_t nterms = static_cast<uint32_t>(n.terms.size());
    for (uint32_t t = 0; t < nterms; ++t) {
      const std::string_view s = n.term(t);
      if (s.size() < needle.size()) continue;
      bool match;
      if (mode == kPrefix) {
        match = std::memcmp(s.data(), needle.data(), needle.size()) == 0;
      } else if (mode == kSuffix) {
        match = std::memcmp(s.data() + s.size() - needle.size(), needle.data(), needle.size()) == 0;
      } else {
        match = memmem(s.data(), s.size(), needle.data(), needle.size()) != nullptr;
      }
      if (!match) continue;
      PostingCursor c;
      c.Open(n, t, false);
      for (; c.doc != kEnd; c.Next()) sc.bitmap[c.doc >> 6] |= uint64_t(1) << (c.doc & 63);
    }
    // A doc whose own token was cut at kMaxTokenBytes may hold the needle past the cut.
    for (const uint32_t d : n.long_docs) {
      if (d < docs) sc.bitmap[d >> 6] |= uint64_t(1) << (d & 63);
    }
    verify_marked();
    return;
  }

  // No word characters at all ("===", "  "): nothing the index holds can narrow it down.
  // Exact answer by a linear scan of this namespace's texts.
  ++phrase_fallback_scans_;
  for (uint32_t d = 0; d < docs; ++d) {
    if (verify(d)) return;
  }
}

namespace {

bool PhraseConstraints(const LexicalIndex::Namespace& n, std::string_view phrase, TokenStream* stream,
                       std::vector<PhraseConstraint>* out, int* best_partial) {
  out->clear();
  *best_partial = -1;
  Tokenize(phrase, stream, true);
  size_t best_partial_len = 0;
  for (size_t w = 0; w < stream->words.size(); ++w) {
    const WordRef& word = stream->words[w];
    if (word.whole_token < 0) continue;  // joiners only: no token, no atoms
    const std::string_view token = stream->token(static_cast<size_t>(word.whole_token));
    const bool interior = word.byte_begin > 0 && word.byte_end < phrase.size();
    if (interior) {
      const uint32_t term = n.Find(token);
      if (term == kNotFound) return false;  // no document holds this whole word
      out->push_back(PhraseConstraint{term, word.first_atom, n.terms[term].df});
    } else if (token.size() > best_partial_len) {
      *best_partial = static_cast<int>(w);
      best_partial_len = token.size();
    }
  }
  std::sort(out->begin(), out->end(), [](const PhraseConstraint& a, const PhraseConstraint& b) { return a.df < b.df; });
  return true;
}

}  // namespace

bool LexicalIndex::PhraseHas(const SpanSource& source, std::string_view phrase, RecordKind kind, uint64_t span_id) {
  if (phrase.empty()) throw NativeError("INVALID_ARGUMENT", "phrase is empty (it would match every span)");
  Namespace& n = ns(kind);
  // Local doc numbers follow span ids, so the span's doc is found by bisection.
  const auto it = std::lower_bound(n.span_ids.begin(), n.span_ids.end(), span_id);
  if (it == n.span_ids.end() || *it != span_id) return false;  // not indexed as this kind
  const uint32_t d = static_cast<uint32_t>(it - n.span_ids.begin());
  Scratch& sc = *scratch_;
  std::vector<PhraseConstraint>& constraints = sc.phrase_constraints;
  int best_partial = -1;
  if (!PhraseConstraints(n, phrase, &stream_, &constraints, &best_partial)) return false;
  const size_t m = constraints.size();
  if (m == 0) {
    // No interior word (a phrase that cuts its only words, or has none): Phrase finds its
    // candidates by a dictionary scan, with nothing to seek. Rare for a probe (a sentence or
    // a line); answered by Phrase itself, so the index, not just the text, still decides.
    std::vector<uint64_t> all;
    Phrase(source, phrase, kind, UINT64_MAX, &all);
    return std::binary_search(all.begin(), all.end(), span_id);
  }
  {
    sc.phrase_cursors.resize(m);
    sc.phrase_positions.resize(m);
    for (size_t i = 0; i < m; ++i) {
      PostingCursor& c = sc.phrase_cursors[i];
      c = PostingCursor();
      c.Open(n, constraints[i].term, true);
      c.Advance(d);
      if (c.doc != d || !c.ReadPositions(&sc.phrase_positions[i])) return false;
    }
    if (!Aligned(constraints, sc.phrase_positions)) return false;
  }
  // The postings put the phrase's words in this span at the right distances; its bytes
  // decide, as they do for every candidate of Phrase.
  SpanView view;
  if (!source.read(span_id, &view) || view.kind != kind) {
    throw NativeError("CORRUPT", "lexical index holds span id " + std::to_string(span_id) +
                                     " that the log does not hold as this kind");
  }
  return view.text_len >= phrase.size() && memmem(view.text, view.text_len, phrase.data(), phrase.size()) != nullptr;
}

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

}  // namespace

void LexicalIndex::Save() {
  const std::string tmp = file_ + ".tmp";
  uint32_t saved_crc = 0;
  const IoOps& io = Io();
  // Every call that changes the disk goes through the I/O seam (io_seam.h), so the fault
  // tests exercise this exact path.
  const int fd = io.open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    throw NativeError("IO_ERROR", std::string("cannot create lexical index temp file: ") + std::strerror(errno) +
                                      Where(tmp, 0));
  }
  try {
    uint8_t header[kHeaderBytes] = {};
    // Placeholder header; the real one is written once the body checksum is known.
    if (io.pwrite(fd, header, kHeaderBytes, 0) != static_cast<ssize_t>(kHeaderBytes)) {
      throw NativeError("IO_ERROR", std::string("write failed: ") + std::strerror(errno) + Where(tmp, 0));
    }
    BodyWriter w(fd, tmp);
    for (Namespace* n : {raw_, summary_}) {
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
        w.Bytes(term.docs.data, term.docs.size);
        w.U32(term.pos.size);
        w.Bytes(term.pos.data, term.pos.size);
        if (term.skip_list == kNoSkips) {
          w.U32(0);
        } else {
          const auto& skips = n->skip_lists[term.skip_list];
          w.U32(static_cast<uint32_t>(skips.size()));
          w.Bytes(skips.data(), skips.size() * sizeof(Skip));
        }
      }
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
      throw NativeError("FSYNC_FAILED", std::string("fsync of lexical index failed: ") + std::strerror(errno) +
                                            Where(tmp, 0));
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
    throw NativeError("IO_ERROR", std::string("rename over the lexical index failed: ") + std::strerror(e) +
                                      Where(file_, 0));
  }
  const size_t slash = file_.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : file_.substr(0, slash));
  const int dfd = io.open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
  if (dfd < 0) {
    throw NativeError("IO_ERROR", std::string("cannot open the index directory to fsync it: ") +
                                      std::strerror(errno) + Where(dir, 0));
  }
  // The file in place is the one just written, whether or not the directory fsync below
  // succeeds.
  file_crc_ = saved_crc;
  const int rc = io.fsync(dfd);
  const int e = errno;
  io.close(dfd);
  if (rc != 0) {
    throw NativeError("FSYNC_FAILED", std::string("fsync of the index directory failed: ") + std::strerror(e) +
                                          Where(dir, 0));
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
    if (LoadU32(bytes + 8) != kFormatVersion) {
      throw NativeError("CORRUPT", "unsupported format version " + std::to_string(LoadU32(bytes + 8)) +
                                       Where(file_, 8));
    }
    if (LoadU32(bytes + 12) != kHeaderBytes) throw NativeError("CORRUPT", "bad header size" + Where(file_, 12));
    if (LoadU32(bytes + 36) != kTokenizerVersion) {
      throw NativeError("CORRUPT", "written by tokenizer version " + std::to_string(LoadU32(bytes + 36)) +
                                       Where(file_, 36));
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
          if (term.df == 0 || term.df > docs || term.last_doc >= docs || term.max_tf == 0 ||
              term.min_doc_len == 0) {
            r.Fail("bad term statistics");
          }
          const uint32_t docs_bytes = r.U32();
          const uint8_t* docs_data = r.Take(docs_bytes);
          const uint32_t pos_bytes = r.U32();
          const uint8_t* pos_data = r.Take(pos_bytes);
          Reserve(&term.docs, docs_bytes);
          if (docs_bytes > 0) std::memcpy(term.docs.data, docs_data, docs_bytes);
          term.docs.size = docs_bytes;
          Reserve(&term.pos, pos_bytes);
          if (pos_bytes > 0) std::memcpy(term.pos.data, pos_data, pos_bytes);
          term.pos.size = pos_bytes;
          const uint32_t skip_count = r.U32();
          if (skip_count > term.df / kSkipEvery) r.Fail("too many skip entries");
          if (skip_count > 0) {
            term.skip_list = static_cast<uint32_t>(n->skip_lists.size());
            n->skip_lists.emplace_back(skip_count);
            std::memcpy(n->skip_lists.back().data(), r.Take(uint64_t(skip_count) * sizeof(Skip)),
                        size_t(skip_count) * sizeof(Skip));
            for (const Skip& s : n->skip_lists.back()) {
              if (s.docs_off > docs_bytes || s.pos_off > pos_bytes || s.doc_before >= docs ||
                  s.block_max_tf == 0 || s.block_max_tf > term.max_tf || s.block_min_doc_len < term.min_doc_len) {
                r.Fail("skip entry out of range");
              }
            }
          }
        }
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

void LexicalIndex::SpanIds(RecordKind kind, std::vector<uint64_t>* out) const {
  out->clear();
  if (kind != RecordKind::kRaw && kind != RecordKind::kSummary) return;
  const Namespace& n = kind == RecordKind::kSummary ? *summary_ : *raw_;
  out->assign(n.span_ids.begin(), n.span_ids.end());
}

LexicalStats LexicalIndex::Stats() const {
  LexicalStats s;
  s.high_water = high_water_;
  s.loaded_from = loaded_from_;
  s.load_error = load_error_;
  s.file_crc = file_crc_;
  s.raw_docs = raw_->doc_count();
  s.summary_docs = summary_->doc_count();
  s.raw_terms = raw_->terms.size();
  s.summary_terms = summary_->terms.size();
  s.raw_tokens = raw_->total_tokens;
  s.summary_tokens = summary_->total_tokens;
  s.postings_bytes = raw_->PostingsBytes() + summary_->PostingsBytes();
  s.memory_bytes = raw_->MemoryBytes() + summary_->MemoryBytes();
  s.phrase_fallback_scans = phrase_fallback_scans_;
  return s;
}

}  // namespace spanguard
