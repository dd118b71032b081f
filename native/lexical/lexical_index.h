// The lexical index: an inverted index with positions over two namespaces (raw spans and
// summaries), BM25 top-k with MaxScore, exact phrases verified against the log's raw text,
// and crash-safe persistence (docs/LEXICAL_FORMAT.md).
//
// It is derived data. Every document enters through Add(), which both the log catch-up
// and the direct `add()` binding call, and the only thing that persists besides the
// postings is the high-water span id, so a missing or rejected file means "catch up from
// id 0" and nothing else.
//
// Threading: single-threaded, owned by the JS main thread like the log it reads.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "lexical/tokenizer.h"
#include "log/span_source.h"

namespace spanguard {

struct LexicalHit {
  uint64_t span_id;
  float score;
};

struct LexicalStats {
  uint64_t high_water = 0;
  std::string loaded_from;  ///< "file" or "rebuilt"
  std::string load_error;   ///< why the file was not used ("" when loaded)
  /// CRC32C in the header (offset 60) of the file this index last loaded or saved, 0 when
  /// neither happened: it names the file's whole content (the header holds the body's CRC),
  /// so the store's identity can tell this file from another store's of the same shape.
  uint32_t file_crc = 0;
  uint64_t raw_docs = 0, summary_docs = 0;
  uint64_t raw_terms = 0, summary_terms = 0;
  uint64_t raw_tokens = 0, summary_tokens = 0;
  uint64_t postings_bytes = 0;  ///< doc + position streams, bytes used
  uint64_t memory_bytes = 0;    ///< heap held by the index (capacities), approximate
  /// memory_bytes by part (both namespaces; query scratch is in the total only): document
  /// columns, dictionary (terms, hash slots, normal forms, affix arrays), postings (stream
  /// heap blocks, skip lists); and the streams kept inline in their term (no heap block).
  uint64_t memory_documents = 0, memory_dictionary = 0, memory_postings = 0, inline_streams = 0;
  uint64_t phrase_fallback_scans = 0;  ///< phrase queries answered by a linear scan
  uint64_t phrase_scans_cut = 0;       ///< linear scans that stopped at their byte budget
  /// Postings and positions of phrases' interior words decoded by phrase queries (the work
  /// the positional intersection does: postings skipped over and positions passed unread
  /// are not counted).
  uint64_t phrase_postings_decoded = 0;
  uint64_t phrase_positions_decoded = 0;
  uint64_t bm25_accumulated = 0;  ///< BM25 queries answered term at a time (PreferAccumulate)
  uint64_t bm25_pauses = 0;       ///< times a BM25 walk let another thread at the index (WalkPause)
  /// Terms (both namespaces) covered by the phrase path's sorted affix arrays: all of them
  /// after a save or a load of a version 3 file, 0 until the first phrase query otherwise.
  uint64_t affix_sorted_terms = 0;
};

/// A growable byte buffer of 16 bytes (a std::vector is 24 and there is one per term and
/// stream, up to 10^7 of them). Up to kInline bytes are kept in place of the pointer
/// (capacity 0): most terms occur in one or two documents (ids, numbers, hashes), and their
/// two streams then need no heap block of their own — two blocks of 32 bytes a term
/// otherwise, measured at 10^6 spans the larger part of the lexical index's memory.
struct ByteVec {
  static constexpr uint32_t kInline = 8;
  alignas(8) uint8_t bytes[kInline] = {};  ///< the bytes themselves (inline), or the heap pointer
  uint32_t size = 0;
  uint32_t capacity = 0;  ///< bytes of the heap block; 0 while the bytes are inline

  bool is_inline() const { return capacity == 0; }
  uint8_t* heap() const {
    uint8_t* p;
    std::memcpy(&p, bytes, sizeof p);
    return p;
  }
  void set_heap(uint8_t* p) { std::memcpy(bytes, &p, sizeof p); }
  uint8_t* data() { return is_inline() ? bytes : heap(); }
  const uint8_t* data() const { return is_inline() ? bytes : heap(); }
  /// Releases the heap block, if any (ByteVec has no destructor: it lives in trivially
  /// copied Term records, freed by their namespace).
  void Free() {
    if (!is_inline()) std::free(heap());
    *this = ByteVec{};
  }
};

/// One span id's record as the index sees it.
struct IndexInput {
  uint64_t span_id;
  RecordKind kind;
  int64_t turn_start;
  int64_t turn_end;
  std::string_view text;
  /// The record's metadata (JSON). Its tokens are indexed after the text's, so a query can
  /// name an episode or a tool; phrases are still verified against the text alone.
  std::string_view meta = {};
};

/// What a long BM25 walk asks between stretches of postings (LexicalIndex::Search): whether
/// to let another thread at the index now, and then to do so. The caller holds the index's
/// lock around the walk; Pause() releases it until those waiting have had it, and returns
/// with it held again. Meanwhile documents may have been added (never removed): the walk
/// re-reads where the streams it reads now lie, and keeps answering for the documents, the
/// statistics and the stream ends it started with, so its answer is the index's as it stood
/// when the walk began.
class WalkPause {
 public:
  virtual ~WalkPause() = default;
  virtual bool Due() = 0;
  virtual void Pause() = 0;
};

class LexicalIndex {
 public:
  /// Opens `file`: loads it when it is complete and checks out, else starts empty
  /// (stats().loaded_from == "rebuilt"). Never throws for a bad file.
  explicit LexicalIndex(std::string file);
  ~LexicalIndex();
  LexicalIndex(const LexicalIndex&) = delete;
  LexicalIndex& operator=(const LexicalIndex&) = delete;

  /// One past the highest span id seen (indexed, or skipped as an event).
  uint64_t high_water() const { return high_water_; }

  /// Validates a batch as a whole (ids strictly increasing and ≥ high_water, known kinds,
  /// turn_start ≤ turn_end); throws NativeError(INVALID_ARGUMENT/UNKNOWN_KIND/INVALID_TURN)
  /// before indexing anything.
  void CheckBatch(const IndexInput* inputs, size_t count) const;
  /// Indexes one record (kinds raw and summary; events only advance the high water).
  /// The caller has checked it (CheckBatch). This is the single ingest path.
  /// Each token whose normal form (NormalizeTerm: Porter2 stem, diacritics folded, leading
  /// zeros dropped) differs is also indexed as that form, at the token's own position; the
  /// document's length stays its count of tokens.
  void Add(const IndexInput& input);

  /// Indexes records [max(high_water, first_id), next_id) from `source`. Returns the number
  /// of raw and summary records indexed.
  uint64_t CatchUp(const SpanSource& source);

  /// BM25 top-k (k1 = 1.2, b = 0.75) in one namespace; `turn_min`/`turn_max` NaN = open.
  /// Each query token is looked up by its normal form ("enjoying" → "enjoy"). A query of 6+
  /// distinct terms leaves out the terms held by more than 1/16 of the documents when a rarer
  /// term remains (docs/LEXICAL_FORMAT.md, "Query-term selection").
  /// Hits are by descending score, ties by ascending span id.
  /// With `max_postings` set, a query whose terms (those the selection keeps) hold more
  /// postings than that in all is not searched: returns false with `hits` empty. The sum is
  /// the most documents the walk can decode, so it bounds the call's cost before it starts
  /// (a caller on the JS thread runs the small ones there and sends the rest to the pool).
  /// With `pause`, the walk polls it every few hundred postings (WalkPause) and runs on
  /// buffers of its own, so calls that take the index while it is paused (another search, a
  /// phrase lookup) do not touch them.
  bool Search(std::string_view query, uint32_t k, RecordKind kind, double turn_min, double turn_max,
              std::vector<LexicalHit>* hits, uint64_t max_postings = UINT64_MAX, WalkPause* pause = nullptr);

  /// Span ids (ascending) of `kind` whose text contains `phrase` byte for byte, at most
  /// `limit`. Candidates come from the index; each is verified against source's text.
  /// Only the phrase's own tokens are looked up, never normal forms: a normal form indexed
  /// under a token's bytes only adds candidates, which the text verification rejects.
  /// Words cut by the phrase's ends are matched by prefix/suffix against two sorted
  /// term-id arrays (8 bytes per term, saved with the index and read back at open, built on
  /// first need otherwise; see docs/LEXICAL_FORMAT.md "Exact phrase").
  /// A phrase the index cannot narrow (no word character: `───╮`, `|  |`) is verified against
  /// every text of the namespace, oldest first; with `scan_bytes` set, against the newest
  /// texts only, until `scan_bytes` bytes of text have been read (the text that crosses the
  /// budget is still read) or `limit` newest matches are found, and `*complete` is false when
  /// the budget left older texts unread. Every other phrase is answered in full and sets
  /// `*complete` true.
  void Phrase(const SpanSource& source, std::string_view phrase, RecordKind kind, uint64_t limit,
              std::vector<uint64_t>* ids, uint64_t scan_bytes = UINT64_MAX, bool* complete = nullptr);

  /// Whether span `span_id` of `kind` is among Phrase(`phrase`)'s answers: the question an
  /// anchor probe asks ("does the index return this very span for its own words?"). The
  /// phrase's posting lists are seeked to that one document instead of walked, so the cost
  /// does not grow with how many other spans share the phrase; the text is still verified.
  bool PhraseHas(const SpanSource& source, std::string_view phrase, RecordKind kind, uint64_t span_id);

  /// PhraseHas for each (phrases[i], span_ids[i]), answers in `out` (1 or 0): the same
  /// answers, and the same error as the first phrase that would throw. The posting lists of
  /// all the phrases are read in stages (every cursor opened, then every block sought, then
  /// every doc decoded), so the cache misses of one word's lists overlap with the others'
  /// instead of following one another.
  void PhraseHasMany(const SpanSource& source, const std::vector<std::string>& phrases, RecordKind kind,
                     const std::vector<uint64_t>& span_ids, uint8_t* out);

  /// Writes <file>.tmp, fsyncs, renames over <file>, fsyncs the directory.
  /// Throws NativeError(IO_ERROR / FSYNC_FAILED).
  void Save();

  LexicalStats Stats() const;

  /// The span ids of `kind` held, in indexing (ascending) order: what `verify` compares with
  /// the log, id by id.
  void SpanIds(RecordKind kind, std::vector<uint64_t>* out) const;
  const std::string& file() const { return file_; }

  struct Namespace;  // one namespace's dictionary, postings and documents (dictionary.h)

 private:
  struct Scratch;     // query-time buffers (postings.h)
  class PhraseQuery;  // one Phrase() call in named steps (phrase.cpp)

  // BM25 term at a time, for queries pruning cannot help (bm25.cpp).
  static bool PreferAccumulate(const Namespace& n, const Scratch& sc, size_t first_essential);
  // `docs`: the documents the walk began with (a pause before it may have added more).
  static void Accumulate(const Namespace& n, uint32_t docs, Scratch& sc, uint32_t k, float norm_a, float norm_b,
                         double turn_min, double turn_max, std::vector<LexicalHit>* hits, WalkPause* pause,
                         uint64_t* pauses);
  // A query-time buffer set of its own for a pausing walk (taken from and returned to `spare_`).
  Scratch* TakeScratch();
  void ReturnScratch(Scratch* sc);

  void Load();
  void Reset();
  Namespace& ns(RecordKind kind);
  bool namespace_full(RecordKind kind) const;

  std::string file_;
  uint64_t high_water_ = 0;
  std::string loaded_from_;
  std::string load_error_;
  uint32_t file_crc_ = 0;  ///< header CRC of the file last loaded or saved (see LexicalStats)
  Namespace* raw_ = nullptr;
  Namespace* summary_ = nullptr;
  uint64_t phrase_fallback_scans_ = 0;
  uint64_t phrase_scans_cut_ = 0;
  uint64_t phrase_postings_decoded_ = 0;
  uint64_t phrase_positions_decoded_ = 0;
  uint64_t bm25_accumulated_ = 0;
  uint64_t bm25_pauses_ = 0;

  // Reused scratch (no allocation on the hot path once grown).
  TokenStream stream_;
  std::vector<uint64_t> pairs_;      // (term id << 32 | position) of the doc being added
  std::vector<uint32_t> positions_;  // one term's positions in that doc
  std::vector<uint64_t> hashes_;     // token hashes of that doc
  std::string with_meta_;            // text + "\n" + meta of the doc being added, when it has meta
  std::string norm_;                 // one term's normal form (NormalizeTerm), ingest and query
  Scratch* scratch_ = nullptr;
  // Buffer sets of pausing walks (several may be paused at once, each on a pool thread).
  mutable std::mutex spare_mu_;
  std::vector<Scratch*> spare_;
};

}  // namespace spanguard
