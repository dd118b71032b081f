// Exact phrases: candidates from the index (interior words aligned by position, words the
// phrase cuts by sorted affix ranges or a dictionary scan), each verified against the text.

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

#include "lexical/lexical_index.h"
#include "lexical/postings.h"

namespace spanguard {

using namespace lexical_detail;

namespace {

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
bool Aligned(const PhraseConstraint* constraints, const std::vector<uint32_t>* positions, size_t m,
             const std::vector<uint32_t>* tail = nullptr, uint32_t tail_offset = 0) {
  for (const uint32_t p : positions[0]) {
    if (p < constraints[0].offset) continue;
    const uint32_t base = p - constraints[0].offset;
    bool aligned = true;
    for (size_t i = 1; i < m && aligned; ++i) {
      aligned = std::binary_search(positions[i].begin(), positions[i].end(), base + constraints[i].offset);
    }
    if (aligned && tail != nullptr) aligned = std::binary_search(tail->begin(), tail->end(), base + tail_offset);
    if (aligned) return true;
  }
  return false;
}

bool Aligned(const std::vector<PhraseConstraint>& constraints, const std::vector<std::vector<uint32_t>>& positions,
             const std::vector<uint32_t>* tail = nullptr, uint32_t tail_offset = 0) {
  return Aligned(constraints.data(), positions.data(), constraints.size(), tail, tail_offset);
}

/// The span a posting list names, read from the log: CORRUPT when the log does not hold it
/// as this kind (the index names a span the log never had).
SpanView ReadIndexed(const SpanSource& source, uint64_t span_id, RecordKind kind) {
  SpanView view;
  if (!source.Read(span_id, &view) || view.kind != kind) {
    throw NativeError("CORRUPT", "lexical index holds span id " + std::to_string(span_id) +
                                     " that the log does not hold as this kind");
  }
  return view;
}

/// Whether the span's bytes hold the phrase: what decides every candidate the postings allow.
bool TextHolds(const SpanView& view, std::string_view phrase) {
  return view.text_len >= phrase.size() && memmem(view.text, view.text_len, phrase.data(), phrase.size()) != nullptr;
}

}  // namespace

// ---- exact phrase ------------------------------------------------------------------------

// One Phrase() call, in named steps. Phrase() tokenizes the phrase (PhraseConstraints) and
// picks the first strategy that applies:
//   ByPositions      interior words: their posting lists intersected, positions aligned
//   ByAffixes        only words the phrase cuts, answered by sorted affix ranges
//   ByDictionaryScan a cut word no affix range answers: every term scanned for it
//   ByLinearScan     no word characters at all: every text of the namespace verified
// Each candidate document is verified against the source's text (Verify), in doc order,
// until the limit is reached.
class LexicalIndex::PhraseQuery {
 public:
  PhraseQuery(Namespace& n, Scratch& sc, const TokenStream& stream, const SpanSource& source, std::string_view phrase,
              RecordKind kind, uint64_t limit, std::vector<uint64_t>* ids)
      : n_(n),
        sc_(sc),
        stream_(stream),
        source_(source),
        phrase_(phrase),
        kind_(kind),
        limit_(limit),
        ids_(ids),
        docs_(n.doc_count()),
        constraints_(sc.phrase_constraints) {}

  // The words touching the phrase's ends ("partial": the text's word may be longer) that a
  // sorted affix range can answer: the first word's text token ENDS with its token, the
  // last word's STARTS with it. A word touching both ends, or cut at kMaxTokenBytes, is
  // left to the dictionary scan.
  void FindAffixes() {
    for (const WordRef& word : stream_.words) {
      if (word.whole_token < 0) continue;
      const bool open_left = word.byte_begin == 0;
      const bool open_right = word.byte_end == phrase_.size();
      if (open_left == open_right) continue;  // interior, or the whole phrase
      if (stream_.tokens[static_cast<size_t>(word.whole_token)].truncated || affix_count_ == 2) continue;
      affixes_[affix_count_++] = Affix{stream_.token(static_cast<size_t>(word.whole_token)), open_left, 0};
    }
  }

  // Postings the affix ranges and the dictionary scan decoded (for stats()).
  uint64_t postings_decoded = 0;

  bool has_constraints() const { return !constraints_.empty(); }
  bool has_affixes() const { return affix_count_ > 0; }

  void ByPositions() {
    OpenCursors();
    PlanTail();
    ChooseFilters();
    Walk();
    if (deferred_) VerifyDeferredTail();
  }

  // Only partial words, each answered by a sorted affix range: the union of the rarer one's
  // terms' docs, intersected with the other's when that is not much larger.
  void ByAffixes() {
    if (affix_count_ == 2) {
      MeasureAffix(affixes_[0], UINT64_MAX);
      MeasureAffix(affixes_[1], UINT64_MAX);
      if (affixes_[1].postings < affixes_[0].postings) std::swap(affixes_[0], affixes_[1]);
    }
    FillAffix(affixes_[0], &sc_.bitmap);
    if (affix_count_ == 2 && affixes_[1].postings <= uint64_t(docs_) * 4) {
      FillAffix(affixes_[1], &sc_.bitmap2);
      for (size_t w = 0; w < sc_.bitmap.size(); ++w) sc_.bitmap[w] &= sc_.bitmap2[w];
    }
    VerifyMarked();
  }

  // Only partial words (touching the phrase's ends): the word the phrase cuts is, in the
  // text, a longer word whose whole token ends with (first word), starts with (last word)
  // or contains (both) the phrase word's token. Scan the dictionary for those terms.
  void ByDictionaryScan(int best_partial) {
    const WordRef& word = stream_.words[static_cast<size_t>(best_partial)];
    const TokenRef& tref = stream_.tokens[static_cast<size_t>(word.whole_token)];
    const std::string_view needle = stream_.token(static_cast<size_t>(word.whole_token));
    const bool open_left = word.byte_begin == 0;
    const bool open_right = word.byte_end == phrase_.size();
    enum {
      kPrefix,
      kSuffix,
      kContains
    } mode = (open_left && open_right) || tref.truncated ? kContains
             : open_left                                 ? kSuffix
                                                         : kPrefix;
    sc_.bitmap.assign((docs_ + 63) / 64, 0);
    const uint32_t nterms = static_cast<uint32_t>(n_.terms.size());
    for (uint32_t t = 0; t < nterms; ++t) {
      const std::string_view s = n_.term(t);
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
      c.Open(n_, t, false);
      for (; c.doc != kEnd; c.Next()) sc_.bitmap[c.doc >> 6] |= uint64_t(1) << (c.doc & 63);
      postings_decoded += c.postings_decoded;
    }
    // A doc whose own token was cut at kMaxTokenBytes may hold the needle past the cut.
    for (const uint32_t d : n_.long_docs) {
      if (d < docs_) sc_.bitmap[d >> 6] |= uint64_t(1) << (d & 63);
    }
    VerifyMarked();
  }

  // No word characters at all ("===", "  "): nothing the index holds can narrow it down.
  // Exact answer by a linear scan of this namespace's texts. With a byte budget, the newest
  // texts are read first and the scan stops once the budget is spent: true when every text
  // was read (the answer is exact), false when older ones were left unread.
  bool ByLinearScan(uint64_t scan_bytes) {
    if (scan_bytes == UINT64_MAX) {
      for (uint32_t d = 0; d < docs_; ++d) {
        if (Verify(d)) return true;
      }
      return true;
    }
    uint64_t read = 0;
    bool complete = true;
    for (uint32_t d = docs_; d-- > 0;) {
      if (read >= scan_bytes) {
        complete = false;
        break;
      }
      const uint64_t span_id = n_.span_ids[d];
      const SpanView view = ReadIndexed(source_, span_id, kind_);
      read += view.text_len;
      if (TextHolds(view, phrase_)) {
        ids_->push_back(span_id);
        if (ids_->size() >= limit_) break;
      }
    }
    std::reverse(ids_->begin(), ids_->end());
    return complete;
  }

 private:
  struct Affix {
    std::string_view token;
    bool suffix;
    uint64_t postings;  // sum of the matching terms' df
  };

  // Verifies local doc `d` against the source's bytes; true when the limit is reached.
  bool Verify(uint32_t d) {
    const uint64_t span_id = n_.span_ids[d];
    if (TextHolds(ReadIndexed(source_, span_id, kind_), phrase_)) ids_->push_back(span_id);
    return ids_->size() >= limit_;
  }

  // Verifies every doc marked in sc_.bitmap, in doc order, until the limit is reached.
  void VerifyMarked() {
    for (size_t w = 0; w < sc_.bitmap.size(); ++w) {
      uint64_t bits = sc_.bitmap[w];
      while (bits != 0) {
        const uint32_t d = static_cast<uint32_t>(w * 64 + __builtin_ctzll(bits));
        bits &= bits - 1;
        if (Verify(d)) return;
      }
    }
  }

  // Sums an affix's postings, giving up (returns false) past `budget`.
  bool MeasureAffix(Affix& a, uint64_t budget) {
    a.postings = 0;
    return n_.ForEachAffix(a.token, a.suffix, [&](uint32_t t) {
      a.postings += n_.terms[t].df;
      return a.postings <= budget;
    });
  }

  // ORs the docs of every term matching `a`, and every long doc, into `bits` (cleared first).
  void FillAffix(const Affix& a, std::vector<uint64_t>* bits) {
    std::vector<uint32_t>& affix_terms = sc_.affix_terms;
    bits->assign((docs_ + 63) / 64, 0);
    affix_terms.clear();
    n_.ForEachAffix(a.token, a.suffix, [&](uint32_t t) {
      affix_terms.push_back(t);
      return true;
    });
    for (const uint32_t t : affix_terms) {
      PostingCursor c;
      c.Open(n_, t, false);
      for (; c.doc != kEnd; c.Next()) (*bits)[c.doc >> 6] |= uint64_t(1) << (c.doc & 63);
      postings_decoded += c.postings_decoded;
    }
    for (const uint32_t d : n_.long_docs) {
      if (d < docs_) (*bits)[d >> 6] |= uint64_t(1) << (d & 63);
    }
  }

  // A cursor with positions per interior word, rarest (the driver) first; at most
  // kMaxPhraseCursors of them (the rarest), the other words left to the text verification.
  void OpenCursors() {
    m_ = std::min(constraints_.size(), kMaxPhraseCursors);
    sc_.phrase_cursors.resize(m_);
    sc_.phrase_positions.resize(m_);
    for (size_t i = 0; i < m_; ++i) {
      sc_.phrase_cursors[i] = PostingCursor();
      sc_.phrase_cursors[i].Open(n_, constraints_[i].term, true);
    }
  }

  // The last word, when the phrase's end cuts it, is in the text a word whose whole token
  // STARTS with its token, at the same atom distance from the interior words (the atoms
  // between are the interior words' own). When few terms start with it, their positions
  // join the alignment (a cursor each). A doc with a token cut at kMaxTokenBytes skips this
  // check.
  void PlanTail() {
    std::vector<uint32_t>& affix_terms = sc_.affix_terms;
    for (const WordRef& word : stream_.words) {
      if (word.whole_token < 0 || word.byte_begin == 0 || word.byte_end != phrase_.size()) continue;
      if (stream_.tokens[static_cast<size_t>(word.whole_token)].truncated) break;
      affix_terms.clear();
      const bool few = n_.ForEachAffix(stream_.token(static_cast<size_t>(word.whole_token)), false, [&](uint32_t t) {
        affix_terms.push_back(t);
        return affix_terms.size() <= kMaxTailTerms;
      });
      if (!few) {
        // Many terms start with it: when their postings are not many more than the
        // driver's, check positions afterwards, in one walk of those terms over the
        // candidates the interior words leave (VerifyDeferredTail), instead of a cursor
        // per term.
        const uint64_t budget = uint64_t(constraints_[0].df) * 2;
        uint64_t postings = 0;
        std::vector<uint32_t>& all = sc_.tail_all;
        all.clear();
        deferred_ = constraints_[0].df >= kAffixFilterMinDf &&
                    n_.ForEachAffix(stream_.token(static_cast<size_t>(word.whole_token)), false, [&](uint32_t t) {
                      all.push_back(t);
                      postings += n_.terms[t].df;
                      return postings <= budget;
                    });
        tail_offset_ = word.first_atom;
        break;
      }
      tail_terms_ = affix_terms.size();
      tail_offset_ = word.first_atom;
      sc_.tail_cursors.resize(tail_terms_);
      for (size_t i = 0; i < tail_terms_; ++i) {
        sc_.tail_cursors[i] = PostingCursor();
        sc_.tail_cursors[i].Open(n_, affix_terms[i], true);
      }
      break;
    }
    sc_.tail_cand.clear();
    sc_.tail_cand_ok.clear();
  }

  // A common rarest word (a short phrase around "in", "the"): narrow its docs first by a
  // partial end word whose matching terms hold fewer postings than the driver. Each usable
  // affix's doc set costs a walk of its terms' postings (a few ns each) and spares the text
  // verification (~200 ns) of every driver doc it rules out: worth it while its postings
  // are not much more than the driver's. Both are ANDed when both fit.
  void ChooseFilters() {
    const uint64_t driver_df = constraints_[0].df;
    if (driver_df >= kAffixFilterMinDf) {
      for (size_t i = 0; i < affix_count_; ++i) {
        if (MeasureAffix(affixes_[i], driver_df * 2)) affixes_[filters_++] = affixes_[i];
      }
      if (filters_ == 2 && affixes_[1].postings < affixes_[0].postings) std::swap(affixes_[0], affixes_[1]);
    }
    if (filters_ > 0) filter_postings_ = affixes_[0].postings;
  }

  // Whether doc `d`, whose interior words' positions are in sc_.phrase_positions, has them
  // aligned (and, with tail cursors, the cut last word's token where it belongs).
  bool AlignedAt(uint32_t d) {
    if (tail_terms_ == 0 || std::binary_search(n_.long_docs.begin(), n_.long_docs.end(), d)) {
      return Aligned(constraints_.data(), sc_.phrase_positions.data(), m_);
    }
    std::vector<uint32_t>& tail = sc_.tail_positions;
    tail.clear();
    for (size_t i = 0; i < tail_terms_; ++i) {
      PostingCursor& c = sc_.tail_cursors[i];
      c.Advance(d);
      if (c.doc == d && c.ReadPositions(&sc_.tail_scratch)) {
        tail.insert(tail.end(), sc_.tail_scratch.begin(), sc_.tail_scratch.end());
      }
    }
    if (tail.empty()) return false;
    std::sort(tail.begin(), tail.end());
    return Aligned(constraints_.data(), sc_.phrase_positions.data(), m_, &tail, tail_offset_);
  }

  // Deferred tail: every aligned start of doc `d` becomes (doc << 32 | the last word's
  // position), checked later by VerifyDeferredTail.
  void CollectStarts(uint32_t d) {
    const bool long_doc = std::binary_search(n_.long_docs.begin(), n_.long_docs.end(), d);
    for (const uint32_t p : sc_.phrase_positions[0]) {
      if (p < constraints_[0].offset) continue;
      const uint32_t base = p - constraints_[0].offset;
      bool ok = true;
      for (size_t i = 1; i < m_ && ok; ++i) {
        ok = std::binary_search(sc_.phrase_positions[i].begin(), sc_.phrase_positions[i].end(),
                                base + constraints_[i].offset);
      }
      if (!ok) continue;
      sc_.tail_cand.push_back(uint64_t(d) << 32 | (base + tail_offset_));
      sc_.tail_cand_ok.push_back(long_doc ? 1 : 0);
      if (long_doc) break;
    }
  }

  // A doc holding every interior word: true when the limit is reached.
  bool Accept(uint32_t d) {
    if (!deferred_) return AlignedAt(d) && Verify(d);
    CollectStarts(d);
    return false;
  }

  // Whether doc `d`, where the driver sits, holds every interior word at its offset from one
  // common start. The words are checked one at a time, rarest first: each cursor is moved
  // to d, its positions read, and the starts the words so far agree on are narrowed; the
  // first word absent or out of line ends the check. A phrase of common words thus seeks
  // the lists of its later words only at the few docs where the earlier ones line up, and
  // never decodes the rest of their postings or positions. On success every word's
  // positions are in sc_.phrase_positions. `*next` gets the lowest doc a match may still
  // be at (a cursor found past d: kEnd when one ran out).
  bool Holds(uint32_t d, uint32_t* next) {
    *next = d + 1;
    std::vector<uint32_t>& starts = sc_.phrase_starts;
    if (!sc_.phrase_cursors[0].ReadPositions(&sc_.phrase_positions[0])) return false;
    starts.clear();
    for (const uint32_t p : sc_.phrase_positions[0]) {
      if (p >= constraints_[0].offset) starts.push_back(p - constraints_[0].offset);
    }
    for (size_t i = 1; i < m_ && !starts.empty(); ++i) {
      PostingCursor& c = sc_.phrase_cursors[i];
      c.Advance(d);
      if (c.doc != d) {
        *next = c.doc;
        return false;
      }
      if (!c.ReadPositions(&sc_.phrase_positions[i])) return false;
      const std::vector<uint32_t>& pos = sc_.phrase_positions[i];
      const uint32_t offset = constraints_[i].offset;
      starts.erase(
          std::remove_if(starts.begin(), starts.end(),
                         [&](uint32_t base) { return !std::binary_search(pos.begin(), pos.end(), base + offset); }),
          starts.end());
    }
    return !starts.empty();
  }

  void Walk() {
    if (filters_ > 0) {
      FillAffix(affixes_[0], &sc_.bitmap);
      if (filters_ == 2) {
        FillAffix(affixes_[1], &sc_.bitmap2);
        for (size_t w = 0; w < sc_.bitmap.size(); ++w) sc_.bitmap[w] &= sc_.bitmap2[w];
      }
      // Few candidates: seek every cursor to them. Else walk the driver and test the bit.
      if (filter_postings_ * 8 < constraints_[0].df) {
        SeekCandidates();
        return;
      }
    }
    WalkDriver();
  }

  // Seeks every interior cursor to each candidate marked in sc_.bitmap, in doc order.
  void SeekCandidates() {
    uint32_t target = 0;
    while (true) {
      // Next candidate ≥ target.
      size_t w = target >> 6;
      if (w >= sc_.bitmap.size()) return;
      uint64_t bits = sc_.bitmap[w] & (~uint64_t(0) << (target & 63));
      while (bits == 0) {
        if (++w >= sc_.bitmap.size()) return;
        bits = sc_.bitmap[w];
      }
      const uint32_t d = static_cast<uint32_t>(w * 64 + __builtin_ctzll(bits));
      PostingCursor& driver = sc_.phrase_cursors[0];
      driver.Advance(d);
      if (driver.doc == kEnd) return;
      if (driver.doc != d) {
        target = driver.doc;
        continue;
      }
      uint32_t next;
      if (Holds(d, &next) && Accept(d)) return;
      if (next == kEnd) return;
      target = std::max(d + 1, next);
    }
  }

  // Walks the driver (rarest interior word) and checks each of its docs (Holds), jumping to
  // where a commoner word's cursor stands when that is further; with a filter, only docs
  // marked in sc_.bitmap.
  void WalkDriver() {
    const bool filter = filters_ > 0;
    PostingCursor& driver = sc_.phrase_cursors[0];
    while (driver.doc != kEnd) {
      const uint32_t d = driver.doc;
      if (filter && ((sc_.bitmap[d >> 6] >> (d & 63)) & 1) == 0) {
        driver.Next();
        continue;
      }
      uint32_t next;
      if (Holds(d, &next) && Accept(d)) return;
      if (next == kEnd) return;
      // A commoner word's cursor past d: no doc before it can match (leapfrog).
      if (next > d + 1) {
        driver.Advance(next);
      } else {
        driver.Next();
      }
    }
  }

  // One walk of the last word's terms over the collected candidates' docs marks the starts
  // it has a token at; those docs are verified, in doc order.
  void VerifyDeferredTail() {
    std::vector<uint64_t>& cand = sc_.tail_cand;
    std::vector<uint8_t>& cand_ok = sc_.tail_cand_ok;
    std::vector<uint64_t>& bits = sc_.bitmap2;
    bits.assign((docs_ + 63) / 64, 0);
    for (const uint64_t c : cand) bits[c >> 38] |= uint64_t(1) << ((c >> 32) & 63);
    for (const uint32_t t : sc_.tail_all) {
      PostingCursor c;
      c.Open(n_, t, true);
      for (; c.doc != kEnd; c.Next()) {
        if (((bits[c.doc >> 6] >> (c.doc & 63)) & 1) == 0) continue;
        if (!c.ReadPositions(&sc_.tail_scratch)) break;
        size_t k =
            static_cast<size_t>(std::lower_bound(cand.begin(), cand.end(), uint64_t(c.doc) << 32) - cand.begin());
        for (; k < cand.size() && (cand[k] >> 32) == c.doc; ++k) {
          if (cand_ok[k] == 0 &&
              std::binary_search(sc_.tail_scratch.begin(), sc_.tail_scratch.end(), static_cast<uint32_t>(cand[k]))) {
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
      if (Verify(d)) return;
    }
  }

  Namespace& n_;
  Scratch& sc_;
  const TokenStream& stream_;
  const SpanSource& source_;
  const std::string_view phrase_;
  const RecordKind kind_;
  const uint64_t limit_;
  std::vector<uint64_t>* const ids_;
  const uint32_t docs_;
  const std::vector<PhraseConstraint>& constraints_;
  Affix affixes_[2];
  size_t affix_count_ = 0;
  // ByPositions' plan.
  size_t m_ = 0;              // interior words
  size_t tail_terms_ = 0;     // tail cursors (terms starting with the cut last word)
  uint32_t tail_offset_ = 0;  // the cut last word's atom offset from the phrase's start
  bool deferred_ = false;     // the last word is checked after the walk (VerifyDeferredTail)
  size_t filters_ = 0;        // affix filters in use (affixes_[0, filters_))
  uint64_t filter_postings_ = 0;
};

void LexicalIndex::Phrase(const SpanSource& source, std::string_view phrase, RecordKind kind, uint64_t limit,
                          std::vector<uint64_t>* ids, uint64_t scan_bytes, bool* complete) {
  ids->clear();
  if (complete != nullptr) *complete = true;
  if (phrase.empty()) throw NativeError("INVALID_ARGUMENT", "phrase is empty (it would match every span)");
  Namespace& n = ns(kind);
  if (n.doc_count() == 0 || limit == 0) return;
  int best_partial = -1;
  if (!PhraseConstraints(n, phrase, &stream_, &scratch_->phrase_constraints, &best_partial)) return;
  PhraseQuery query(n, *scratch_, stream_, source, phrase, kind, limit, ids);
  query.FindAffixes();
  if (query.has_constraints()) {
    query.ByPositions();
    for (size_t i = 0; i < scratch_->phrase_cursors.size(); ++i) {
      phrase_postings_decoded_ += scratch_->phrase_cursors[i].postings_decoded;
      phrase_positions_decoded_ += scratch_->phrase_cursors[i].positions_decoded;
    }
  } else if (query.has_affixes()) {
    query.ByAffixes();
    phrase_postings_decoded_ += query.postings_decoded;
  } else if (best_partial >= 0) {
    query.ByDictionaryScan(best_partial);
    phrase_postings_decoded_ += query.postings_decoded;
  } else {
    ++phrase_fallback_scans_;
    if (!query.ByLinearScan(scan_bytes)) {
      ++phrase_scans_cut_;
      if (complete != nullptr) *complete = false;
    }
  }
}

namespace {

bool PhraseConstraints(const LexicalIndex::Namespace& n, std::string_view phrase, TokenStream* stream,
                       std::vector<PhraseConstraint>* out, int* best_partial) {
  out->clear();
  *best_partial = -1;
  Tokenize(phrase, stream, true);
  for (const WordRef& word : stream->words) {
    if (word.whole_token < 0 || word.byte_begin == 0 || word.byte_end >= phrase.size()) continue;
    const std::string_view token = stream->token(static_cast<size_t>(word.whole_token));
    n.PrefetchSlot(HashBytes(token.data(), token.size()));
  }
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

/// How far from an occurrence CutWordsHeld looks for the separator that starts or ends the
/// span's word around it (past kMaxTokenBytes: a word's token is cut there anyway).
constexpr size_t kCutWordWindow = 1024;

/// An ASCII byte that separates words wherever it stands (tokenizer.h, "separators"): not a
/// letter, a digit or a joiner. Bytes of multi-byte code points are >= 0x80.
inline bool AsciiSeparator(char ch) {
  const unsigned char c = static_cast<unsigned char>(ch);
  if (c >= 0x80) return false;
  if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return false;
  return std::strchr("./\\:-_@#+", c) == nullptr || c == 0;
}

/// Whether doc `d` of `n` holds, at the index, every word of its text `text` that the
/// occurrence [at, at + len) touches: each such word's whole token has a posting at `d`.
/// The words are tokenized from a window of the text that starts and ends at separators
/// (or the text's ends), so they are the words the index was given. 1 held, 0 not, -1
/// undecided (no ASCII separator within kCutWordWindow bytes of the occurrence). Adds the
/// postings its cursors decode to `*decoded`.
int CutWordsHeld(const LexicalIndex::Namespace& n, const char* text, size_t text_len, size_t at, size_t len, uint32_t d,
                 TokenStream* stream, uint64_t* decoded) {
  size_t begin = at;
  const size_t floor = at > kCutWordWindow ? at - kCutWordWindow : 0;
  while (begin > 0 && !AsciiSeparator(text[begin - 1])) {
    if (begin == floor) return -1;
    --begin;
  }
  size_t end = at + len;
  const size_t ceiling = std::min(text_len, at + len + kCutWordWindow);
  while (end < text_len && !AsciiSeparator(text[end])) {
    if (end == ceiling) return -1;
    ++end;
  }
  Tokenize(std::string_view(text + begin, end - begin), stream, true);
  for (const WordRef& word : stream->words) {
    if (word.whole_token < 0) continue;
    if (begin + word.byte_end <= at || begin + word.byte_begin >= at + len) continue;  // outside
    const uint32_t term = n.Find(stream->token(static_cast<size_t>(word.whole_token)));
    if (term == kNotFound) return 0;
    PostingCursor c;
    c.Open(n, term, false);
    c.Advance(d);
    *decoded += c.postings_decoded;
    if (c.doc != d) return 0;
  }
  return 1;
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
    // No interior word (`x = 1`, `ZSTATE = 3.`, `Date: 2025-06-23`): Phrase would gather
    // every doc of every term ending with the first word or starting with the last (for a
    // 1-2 character word or a number, thousands of terms). For one span the text finds the
    // occurrence, and the index is asked only for the words of the span that the occurrence
    // touches: each whole token must have a posting at this doc (a cursor seek per word).
    const SpanView view = ReadIndexed(source, span_id, kind);
    if (view.text_len < phrase.size()) return false;
    const void* hit = memmem(view.text, view.text_len, phrase.data(), phrase.size());
    if (hit == nullptr) return false;
    const size_t at = static_cast<size_t>(static_cast<const char*>(hit) - view.text);
    uint64_t decoded = 0;
    const int held = CutWordsHeld(n, view.text, view.text_len, at, phrase.size(), d, &stream_, &decoded);
    phrase_postings_decoded_ += decoded;
    if (held >= 0) return held == 1;
    // A word of the span runs past kCutWordWindow bytes with no ASCII separator: Phrase
    // itself answers.
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
  return TextHolds(ReadIndexed(source, span_id, kind), phrase);
}

}  // namespace spanguard

namespace spanguard {

void LexicalIndex::PhraseHasMany(const SpanSource& source, const std::vector<std::string>& phrases, RecordKind kind,
                                 const std::vector<uint64_t>& span_ids, uint8_t* out) {
  const size_t count = phrases.size();
  Namespace& n = ns(kind);
  Scratch& sc = *scratch_;
  // Per phrase: kDecided (its answer is 0 already), kAlone (PhraseHas answers it, in order,
  // in the last stage: an empty phrase, which throws, or one without interior words), or the
  // index of its first constraint.
  constexpr uint32_t kDecided = UINT32_MAX;
  constexpr uint32_t kAlone = UINT32_MAX - 1;
  std::vector<uint32_t>& first = sc.batch_first;
  std::vector<uint32_t>& size = sc.batch_count;
  std::vector<PhraseConstraint>& all = sc.batch_constraints;
  std::vector<uint32_t>& docs = sc.batch_docs;
  first.assign(count, kDecided);
  size.assign(count, 0);
  all.clear();
  docs.clear();
  // Stage 1, as PhraseHas begins: the span's doc and the phrase's interior words.
  for (size_t i = 0; i < count; ++i) {
    out[i] = 0;
    const std::string_view phrase = phrases[i];
    if (phrase.empty()) {
      first[i] = kAlone;
      continue;
    }
    const auto it = std::lower_bound(n.span_ids.begin(), n.span_ids.end(), span_ids[i]);
    if (it == n.span_ids.end() || *it != span_ids[i]) continue;  // not indexed as this kind
    const uint32_t d = static_cast<uint32_t>(it - n.span_ids.begin());
    int best_partial = -1;
    if (!PhraseConstraints(n, phrase, &stream_, &sc.phrase_constraints, &best_partial)) continue;
    if (sc.phrase_constraints.empty()) {
      first[i] = kAlone;
      continue;
    }
    first[i] = static_cast<uint32_t>(all.size());
    size[i] = static_cast<uint32_t>(sc.phrase_constraints.size());
    for (const PhraseConstraint& c : sc.phrase_constraints) {
      all.push_back(c);
      docs.push_back(d);
      __builtin_prefetch(&n.terms[c.term]);
    }
  }
  const size_t total = all.size();
  if (sc.batch_cursors.size() < total) sc.batch_cursors.resize(total);
  if (sc.batch_positions.size() < total) sc.batch_positions.resize(total);
  sc.batch_ok.assign(total, 0);
  // Stage 2: every cursor opened (each reads its term and its first posting).
  for (size_t k = 0; k < total; ++k) {
    PostingCursor& c = sc.batch_cursors[k];
    c = PostingCursor();
    c.Open(n, all[k].term, true);
    if (c.skip_count > 0) __builtin_prefetch(c.skips + c.skip_count / 2);
  }
  // Stage 3: every cursor placed at the block before its doc, the streams' next bytes asked for.
  for (size_t k = 0; k < total; ++k) {
    PostingCursor& c = sc.batch_cursors[k];
    c.SeekBlock(docs[k]);
    c.PrefetchStreams();
  }
  // Stage 4: every cursor at its doc, with that doc's positions (PhraseHas's per-word test).
  for (size_t k = 0; k < total; ++k) {
    PostingCursor& c = sc.batch_cursors[k];
    c.Advance(docs[k]);
    sc.batch_ok[k] = c.doc == docs[k] && c.ReadPositions(&sc.batch_positions[k]) ? 1 : 0;
    if (sc.batch_ok[k] == 0) sc.batch_positions[k].clear();  // no stale positions to align
  }
  // Stage 5, in phrase order: the alignment and the text, as PhraseHas ends.
  for (size_t i = 0; i < count; ++i) {
    if (first[i] == kDecided) continue;
    if (first[i] == kAlone) {
      out[i] = PhraseHas(source, phrases[i], kind, span_ids[i]) ? 1 : 0;
      continue;
    }
    const size_t f = first[i];
    const size_t m = size[i];
    bool held = true;
    for (size_t k = f; k < f + m && held; ++k) held = sc.batch_ok[k] == 1;
    if (!held || !Aligned(all.data() + f, sc.batch_positions.data() + f, m)) continue;
    out[i] = TextHolds(ReadIndexed(source, span_ids[i], kind), phrases[i]);
  }
}

}  // namespace spanguard
