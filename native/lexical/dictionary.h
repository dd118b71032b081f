// One namespace of the lexical index (raw spans or summaries): the term dictionary (an
// open-addressing table over one arena of term strings), each term's postings streams and
// skips, the documents' span ids, turn ranges and lengths.
#pragma once

#include <algorithm>
#include <string_view>
#include <vector>

#include "lexical/codec.h"
#include "lexical/stemmer.h"

namespace spanguard {

using namespace lexical_detail;

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
      t.docs.Free();
      t.pos.Free();
    }
  }
  Namespace(const Namespace&) = delete;
  Namespace& operator=(const Namespace&) = delete;

  uint32_t doc_count() const { return static_cast<uint32_t>(span_ids.size()); }

  std::string_view term(uint32_t id) const {
    return std::string_view(term_bytes.data() + term_offsets[id], term_offsets[id + 1] - term_offsets[id]);
  }

  uint32_t Find(std::string_view s) const { return FindHashed(s, HashBytes(s.data(), s.size())); }

  /// Hints the cache that Find(s) will read the slot of hash `h` (a phrase looks up all its
  /// words: their slots' misses then overlap).
  void PrefetchSlot(uint64_t h) const { __builtin_prefetch(&slots[h & slot_mask]); }

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
    // Exactly the bytes written, so a term of one or two postings keeps them inline.
    Reserve(&t.docs, VarintBytes(delta) + VarintBytes(count));
    PutVarintUnchecked(&t.docs, delta);
    PutVarintUnchecked(&t.docs, count);
    uint32_t pos_bytes = 0;
    for (uint32_t i = 0, previous = 0; i < count; previous = positions[i++])
      pos_bytes += VarintBytes(positions[i] - previous);
    Reserve(&t.pos, pos_bytes);
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
    const uint8_t* p = t.docs.data() + (skips.empty() ? 0 : skips.back().docs_off);
    const uint8_t* end = t.docs.data() + t.docs.size;
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

  // ---- affix lookup for the phrase path (saved with the index, format version 3) -------
  // Term ids sorted by their bytes (by_prefix) and by their reversed bytes (by_suffix), so
  // "terms starting with X" / "ending with X" is a bisected range instead of a scan of the
  // whole dictionary. Save completes and writes them, Load reads them back, so the first
  // phrase query after an open does not sort the dictionary; an index without them (new,
  // or loaded from a version 2 file) builds them on the first phrase query that needs
  // them. Terms interned since (ids >= affix_sorted) form an unsorted tail that is scanned
  // linearly and merged in once it grows past 1/8 of the sorted part. Memory: 8 bytes per
  // term (two uint32 arrays).
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
    std::sort(begin, end,
              [](const AffixEntry& a, const AffixEntry& b) { return a.hi != b.hi ? a.hi < b.hi : a.lo < b.lo; });
    for (AffixEntry* i = begin; i != end;) {
      AffixEntry* j = i + 1;
      while (j != end && j->hi == i->hi && j->lo == i->lo) ++j;
      // Tied keys: equal bytes [depth, depth + 16), or zero padding (a term that ended
      // sorts first: it is shorter). Only terms longer than depth + 16 need another round.
      if (j - i > 1) {
        AffixEntry* longer =
            std::stable_partition(i, j, [&](const AffixEntry& e) { return term(e.id).size() <= depth + 16; });
        // The ≤ depth + 16 ones are ordered by length among equal padded keys (a term of
        // real zero bytes never occurs: the tokenizer emits no NUL).
        std::sort(i, longer,
                  [&](const AffixEntry& a, const AffixEntry& b) { return term(a.id).size() < term(b.id).size(); });
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

  /// Brings the sorted arrays up to date when the unsorted tail has grown past 1/8 (or has
  /// any term, when `complete`: Save writes arrays that cover every term).
  void RefreshAffix(bool complete = false) {
    const uint32_t total = static_cast<uint32_t>(terms.size());
    const uint32_t tail = total - affix_sorted;
    if (tail == 0 || (!complete && affix_sorted > 0 && tail <= affix_sorted / 8)) return;
    std::vector<uint32_t> fresh(tail);
    for (uint32_t i = 0; i < tail; ++i) fresh[i] = affix_sorted + i;
    for (int r = 0; r < 2; ++r) {
      const bool reversed = r == 1;
      std::vector<uint32_t>& arr = reversed ? by_suffix : by_prefix;
      std::vector<uint32_t> add = fresh;
      SortAffix(&add, reversed);
      const size_t mid = arr.size();
      arr.insert(arr.end(), add.begin(), add.end());
      std::inplace_merge(
          arr.begin(), arr.begin() + static_cast<std::ptrdiff_t>(mid), arr.end(),
          [&](uint32_t a, uint32_t b) { return reversed ? ReverseLess(term(a), term(b)) : term(a) < term(b); });
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
    auto it = std::partition_point(arr.begin(), arr.end(),
                                   [&](uint32_t id) { return suffix ? ReverseLess(term(id), x) : term(id) < x; });
    for (; it != arr.end() && has(term(*it)); ++it) {
      if (!f(*it)) return false;
    }
    const uint32_t total = static_cast<uint32_t>(terms.size());
    for (uint32_t id = affix_sorted; id < total; ++id) {
      if (has(term(id)) && !f(id)) return false;
    }
    return true;
  }

  /// Heap held, by part (capacities, approximate): the documents' columns; the dictionary
  /// (term records, their bytes and offsets, the hash slots, normal forms, affix arrays); the
  /// postings (the streams' heap blocks and the skip lists). `inline_streams`: streams kept
  /// inline in their term record (no heap block).
  struct Memory {
    uint64_t documents = 0, dictionary = 0, postings = 0, inline_streams = 0;
  };
  Memory MemorySplit() const {
    Memory m;
    m.documents = span_ids.capacity() * 8 + turn_start.capacity() * 8 + turn_end.capacity() * 8 +
                  doc_len.capacity() * 4 + long_docs.capacity() * 4;
    m.dictionary = term_bytes.capacity() + term_offsets.capacity() * 4 + terms.capacity() * sizeof(Term) +
                   slots.capacity() * 8 + by_prefix.capacity() * 4 + by_suffix.capacity() * 4 +
                   normal_of.capacity() * 4;
    m.postings = skip_lists.capacity() * sizeof(std::vector<Skip>);
    for (const Term& t : terms) {
      m.postings += t.docs.capacity + t.pos.capacity;
      m.inline_streams += uint64_t(t.docs.is_inline()) + t.pos.is_inline();
    }
    for (const auto& s : skip_lists) m.postings += s.capacity() * sizeof(Skip);
    return m;
  }

  uint64_t MemoryBytes() const {
    const Memory m = MemorySplit();
    return m.documents + m.dictionary + m.postings;
  }

  uint64_t PostingsBytes() const {
    uint64_t bytes = 0;
    for (const Term& t : terms) bytes += t.docs.size + t.pos.size;
    return bytes;
  }
};

}  // namespace spanguard
