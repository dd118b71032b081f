// Reading postings: a cursor over one term's doc stream (and positions) with skips, and the
// query-time scratch that BM25 and phrase queries reuse.
#pragma once

#include <algorithm>
#include <cstring>
#include <vector>

#include "lexical/dictionary.h"

namespace spanguard {

namespace lexical_detail {

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
  // Positions of the postings passed since pos_p was last placed, not decoded: a walk that
  // reads the positions of few of its docs (a phrase's words, most docs ruled out by the
  // doc stream alone) skips them in one pass when it next needs some (SkipVarints).
  uint64_t pos_pending = 0;
  uint32_t decoded_count = 0;  // postings decoded so far (the current one is decoded_count - 1)
  // Work done, for stats(): postings and positions this cursor actually decoded (postings
  // passed by a skip jump and positions passed by SkipVarints are not counted).
  uint64_t postings_decoded = 0;
  uint64_t positions_decoded = 0;
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
    docs_base = p = t.docs.data();
    end = t.docs.data() + t.docs.size;
    pos_base = pos_p = t.pos.data();
    pos_end = t.pos.data() + t.pos.size;
    if (t.skip_list != kNoSkips) {
      skips = ns.skip_lists[t.skip_list].data();
      skip_count = static_cast<uint32_t>(ns.skip_lists[t.skip_list].size());
    }
    doc_limit = ns.doc_count();
    with_positions = positions;
    decoded = kEnd;
    Next();
  }

  // Where a paused walk stood in the streams (Unpin), as offsets: the streams may move while
  // the index grows (a stream kept inline moves with its term; a heap block is reallocated).
  size_t off_p = 0, off_end = 0, off_pos_p = 0, off_pos_end = 0;

  /// Before a pause (WalkPause): the read positions and ends as offsets into the streams.
  void Unpin() {
    off_p = static_cast<size_t>(p - docs_base);
    off_end = static_cast<size_t>(end - docs_base);
    off_pos_p = static_cast<size_t>(pos_p - pos_base);
    off_pos_end = static_cast<size_t>(pos_end - pos_base);
  }
  /// After a pause: the same offsets in the streams as they lie now. Postings appended meanwhile
  /// lie past the end taken at Open and stay unread; so do skip entries appended since (the
  /// count taken at Open is kept; the entries before it never change).
  void Repin(const LexicalIndex::Namespace& ns) {
    const Term& t = ns.terms[term_id];
    docs_base = t.docs.data();
    p = docs_base + off_p;
    end = docs_base + off_end;
    pos_base = t.pos.data();
    pos_p = pos_base + off_pos_p;
    pos_end = pos_base + off_pos_end;
    if (skip_count > 0) skips = ns.skip_lists[t.skip_list].data();
  }

  /// Moves pos_p past `n` varints without decoding them: a varint ends at each byte below
  /// 0x80, so 8 bytes at a time are passed by counting those. False when the stream ends
  /// first (pos_p is then left at pos_end).
  bool SkipVarints(uint64_t n) {
    const uint8_t* q = pos_p;
    while (n > 0 && pos_end - q >= 8) {
      uint64_t w;
      std::memcpy(&w, q, 8);
      // The bytes that end a varint, counted without a popcount instruction (a library
      // call on a baseline x86-64 build): each such byte gives one low bit, the multiply
      // sums the eight bytes into the top one.
      const uint64_t ends = (((~w & 0x8080808080808080ULL) >> 7) * 0x0101010101010101ULL) >> 56;
      if (ends >= n) break;  // the n-th end is in this word: finish byte by byte
      n -= ends;
      q += 8;
    }
    for (; n > 0 && q < pos_end; ++q) {
      if (*q < 0x80) --n;
    }
    pos_p = q;
    return n == 0;
  }

  bool Next() {
    if (with_positions) {
      pos_pending += pos_unread;
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
    ++postings_decoded;
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
    SeekBlock(target);
    while (doc < target && Next()) {
    }
  }

  /// The skip part of Advance: when a later block may hold `target`, places the streams at
  /// the start of the block before it (nothing decoded yet); the doc stays where it was.
  /// A batch of cursors (PhraseHasMany) seeks every block first, so their reads overlap.
  void SeekBlock(uint32_t target) {
    if (doc >= target) return;
    uint32_t s = next_skip;
    // Skips are ordered by doc: bisect, so a seek far ahead (a probe of one span on a
    // posting list of 10^5 docs) costs log(blocks), not a walk over every block. The
    // bisection has no data-dependent branch (the step is a select, the trip count depends
    // on the length only): the next cursor's loads of a batch start before this one's end.
    if (s < skip_count && skips[s].doc_before < target) {
      // The last skip before target, in [base, base + n): skips[s] is one.
      const Skip* base = skips + s;
      uint32_t n = skip_count - s;
      while (n > 1) {
        const uint32_t half = n / 2;
        base = base[half].doc_before < target ? base + half : base;
        n -= half;
      }
      s = static_cast<uint32_t>(base - skips) + 1;
    }
    if (s > next_skip) {
      const Skip& k = skips[s - 1];
      next_skip = s;
      if (docs_base + k.docs_off > p && k.docs_off <= end - docs_base && k.pos_off <= pos_end - pos_base) {
        p = docs_base + k.docs_off;
        pos_p = pos_base + k.pos_off;
        pos_unread = 0;
        pos_pending = 0;
        decoded = k.doc_before;
        decoded_count = s * kSkipEvery;  // skips[s - 1] sits at posting s * 64
      }
    }
  }

  /// Hints the cache that the next decode reads here (the doc stream and the positions).
  void PrefetchStreams() const {
    __builtin_prefetch(p);
    if (with_positions) __builtin_prefetch(pos_p);
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
        block_bound =
            idf * max_tf * (kK1 + 1) / (max_tf + norm_a + norm_b * static_cast<float>(s.block_min_doc_len)) * 1.0001f;
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
    if (pos_pending > 0) {
      const bool ok = SkipVarints(pos_pending);
      pos_pending = 0;
      if (!ok) {
        pos_unread = 0;
        Finish();
        return false;
      }
    }
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
    positions_decoded += pos_unread;
    pos_unread = 0;
    return true;
  }
};

// A min-heap entry ordering: the "worst" hit is on top (lowest score, then highest id).
inline bool Worse(const LexicalHit& a, const LexicalHit& b) {
  return a.score > b.score || (a.score == b.score && a.span_id < b.span_id);
}

// Offers `hit` to a top-k heap ordered by Worse: kept while the heap holds fewer than k, or
// in place of the current worst when it ranks above it. Whether it was kept.
inline bool OfferTopK(std::vector<LexicalHit>& heap, size_t k, const LexicalHit& hit) {
  if (heap.size() < k) {
    heap.push_back(hit);
    std::push_heap(heap.begin(), heap.end(), Worse);
    return true;
  }
  if (!Worse(hit, heap.front())) return false;
  std::pop_heap(heap.begin(), heap.end(), Worse);
  heap.back() = hit;
  std::push_heap(heap.begin(), heap.end(), Worse);
  return true;
}

/// A whole word strictly inside a phrase: its term, its atom offset from the phrase's
/// start, and its document frequency (the rarest drives the intersection).
struct PhraseConstraint {
  uint32_t term;
  uint32_t offset;
  uint32_t df;
};

}  // namespace lexical_detail

using namespace lexical_detail;

struct LexicalIndex::Scratch {
  std::vector<uint32_t> query_terms;
  std::vector<PostingCursor> cursors;
  std::vector<float> prefix_bounds;
  std::vector<float> contrib;               // per query term, for the current doc
  std::vector<PostingCursor> seed_cursors;  // threshold seed over the rarest terms
  std::vector<float> seed_scores;
  std::vector<double> accumulators;  // term-at-a-time BM25: one per doc, zero between queries
  std::vector<uint32_t> touched;     // term-at-a-time BM25: the docs whose accumulator is set
  std::vector<PostingCursor> phrase_cursors;
  std::vector<std::vector<uint32_t>> phrase_positions;
  std::vector<uint32_t> phrase_starts;  // phrase starts the interior words checked so far agree on
  std::vector<PhraseConstraint> phrase_constraints;
  // PhraseHasMany: every phrase's constraints in one list, with each one's doc, and whether
  // its cursor reached that doc with its positions.
  // Cursors and positions of their own, apart from phrase_cursors and phrase_positions
  // (PhraseHas and Phrase): a phrase answered alone in between never disturbs them.
  std::vector<PhraseConstraint> batch_constraints;
  std::vector<uint32_t> batch_docs;
  std::vector<uint8_t> batch_ok;
  std::vector<PostingCursor> batch_cursors;
  std::vector<std::vector<uint32_t>> batch_positions;
  std::vector<uint32_t> batch_first;  // per phrase: its first constraint in batch_constraints
  std::vector<uint32_t> batch_count;  // per phrase: how many
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

}  // namespace spanguard
