// BM25 top-k over one namespace, document at a time with MaxScore pruning.

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

// How often a pausing walk (WalkPause) asks whether to let another thread at the index: every
// this many documents reached by the document-at-a-time pass, postings added by the term-at-a-
// time one. Either is some tens of microseconds of work: a catch-up step that waits for a walk
// waits for the walk's turn (IndexLock::kReadTurn) and at most one such stretch.
constexpr uint32_t kPausePollDocs = 256;
constexpr uint32_t kPausePollPostings = 4096;

// Lets another thread at the index: every cursor's place as offsets, the pause, the cursors
// re-pointed into the streams as they lie now.
// `seeds`: the threshold seed's cursors while it runs (null after: they are not read again).
static void PauseWalk(const LexicalIndex::Namespace& n, std::vector<PostingCursor>& cursors,
                      std::vector<PostingCursor>* seeds, WalkPause* pause, uint64_t* pauses) {
  for (PostingCursor& c : cursors) c.Unpin();
  if (seeds != nullptr)
    for (PostingCursor& c : *seeds) c.Unpin();
  pause->Pause();
  ++*pauses;
  for (PostingCursor& c : cursors) c.Repin(n);
  if (seeds != nullptr)
    for (PostingCursor& c : *seeds) c.Repin(n);
}

// ---- BM25 (MaxScore, document at a time) ---------------------------------------------

// Query-term selection for sentence-long queries. A quote of 20 words from a transcript
// holds a dozen words that half the documents share ("the", "value", "test"): every
// document scores on them, so no bound can prune their lists and the exact top k costs a
// walk of millions of postings. When the query has at least kSelectMinTerms (6) distinct
// terms, the namespace at least kSelectMinDocs (65,536) documents, and at least one of the
// terms is held by at most 1/kSelectCommonShare (1/16) of the documents, the terms held by
// more are left out: the rarer terms decide which documents match, and the top k is exact
// over them. Shorter queries, small namespaces and queries of common words only keep every
// term.
static void SelectTerms(const LexicalIndex::Namespace& n, std::vector<uint32_t>* terms) {
  const uint64_t docs = n.doc_count();
  if (terms->size() < kSelectMinTerms || docs < kSelectMinDocs) return;
  auto common = [&](uint32_t id) { return uint64_t(n.terms[id].df) * kSelectCommonShare > docs; };
  const size_t rare =
      static_cast<size_t>(std::count_if(terms->begin(), terms->end(), [&](uint32_t id) { return !common(id); }));
  if (rare < kSelectMinKept) return;
  terms->erase(std::remove_if(terms->begin(), terms->end(), common), terms->end());
}

// Whether the top k is cheaper term at a time (Accumulate) than document at a time. A doc
// the document-at-a-time pass reaches costs a step over every essential cursor, a block
// bound and a probe of every other term (tens of ns for a dozen terms); a posting added into
// an accumulator costs a few ns, and the final pass reads only the documents touched. MaxScore
// prunes by leaving terms out of the essential set, so when the terms still essential after
// the threshold seed hold a third or more of all the terms' postings, pruning cannot pay for
// its per-doc cost: a question of six words, each in a few hundred documents, reaches
// nearly every document of their lists whatever k is, and so does a quote made only of words
// a third of the documents share (no bound can exclude a doc holding eight of them). With
// fewer than 4 terms it does not: MaxScore soon leaves one of them out of the walk, which
// beats adding every posting.
bool LexicalIndex::PreferAccumulate(const Namespace& n, const Scratch& sc, size_t first_essential) {
  const size_t nterms = sc.cursors.size();
  if (nterms < kAccumulateMinTerms || n.doc_count() < kAccumulateMinDocs) return false;
  uint64_t all = 0, essential = 0;
  for (size_t i = 0; i < nterms; ++i) {
    const uint64_t df = n.terms[sc.cursors[i].term_id].df;
    all += df;
    if (i >= first_essential) essential += df;
  }
  // The sums are one double per document of the namespace, kept by the scratch: a walk of
  // fewer postings than 1/64 of the documents does not get them (at 10^6 documents, 8 MB for
  // a query of a few hundred postings, zeroed on the JS thread).
  return essential * kAccumulateShare >= all && all * kAccumulateMinShareOfDocs >= n.doc_count();
}

// Term at a time: every term's postings, in the fixed term order (the cursors' order, as the
// document-at-a-time pass sums them), added into one double per document, each document
// listed as it is first reached; then one pass over the documents listed keeps the top k (a
// bounded heap, whose order does not depend on the pass's: ties go by span id) and clears
// their accumulators for the next query. The pass reads what the terms touched, not the
// namespace's range of documents between them (at 10^5 documents, a range scan cost more
// than the sums). Scores are the same sums in the same order, so hits and ties are identical to
// the other pass. Turn filters are applied in the final pass.
void LexicalIndex::Accumulate(const Namespace& n, uint32_t docs, Scratch& sc, uint32_t k, float norm_a, float norm_b,
                              double turn_min, double turn_max, std::vector<LexicalHit>* hits, WalkPause* pause,
                              uint64_t* pauses) {
  std::vector<double>& acc = sc.accumulators;
  if (acc.size() < docs) acc.resize(docs, 0.0);  // zero between queries: the final pass clears what it read
  std::vector<uint32_t>& touched = sc.touched;
  touched.clear();
  // Room for every posting before any sum is set: a failed allocation midway would leave sums
  // set that no list names, and the next query would read them.
  uint64_t postings = 0;
  for (const PostingCursor& c : sc.cursors) postings += n.terms[c.term_id].df;
  touched.reserve(static_cast<size_t>(std::min<uint64_t>(postings, docs)));
  const uint32_t* doc_len = n.doc_len.data();
  double* sums = acc.data();
  for (const PostingCursor& c : sc.cursors) {
    // The whole doc stream from its start, decoded in place (the cursor's Next() also keeps
    // positions and skips, which a full walk does not need); bounds-checked as it is.
    const Term& t = n.terms[c.term_id];
    const uint8_t* base = t.docs.data();
    const uint8_t* p = base;
    const uint8_t* end = p + t.docs.size;  // postings past `docs` (added during a pause) end the walk below
    const float idf = c.idf;
    uint32_t d = kEnd;  // the first delta is doc + 1
    uint32_t until_poll = kPausePollPostings;
    while (p < end) {
      if (pause != nullptr && --until_poll == 0) {
        until_poll = kPausePollPostings;
        if (pause->Due()) {
          const size_t at = static_cast<size_t>(p - base);
          const size_t stop = static_cast<size_t>(end - base);
          pause->Pause();
          ++*pauses;
          // The index may have grown: the term (so a stream kept inline), its stream's heap
          // block and the document lengths may have moved.
          base = n.terms[c.term_id].docs.data();
          p = base + at;
          end = base + stop;
          doc_len = n.doc_len.data();
        }
      }
      uint32_t delta, tf;
      if (end - p >= 2 && p[0] < 0x80 && p[1] < 0x80) {
        delta = p[0];
        tf = p[1];
        p += 2;
      } else if (!GetVarint(p, end, &delta) || !GetVarint(p, end, &tf)) {
        break;
      }
      if (delta == 0 || tf == 0) break;
      d += delta;
      if (d >= docs) break;
      const float ftf = static_cast<float>(tf);
      if (sums[d] == 0) touched.push_back(d);  // every contribution is > 0: first reached here
      sums[d] += idf * ftf * (kK1 + 1) / (ftf + (norm_a + norm_b * static_cast<float>(doc_len[d])));
    }
  }
  const bool filter_min = !std::isnan(turn_min);
  const bool filter_max = !std::isnan(turn_max);
  auto& heap = *hits;
  heap.reserve(k);
  for (const uint32_t d : touched) {
    const double total = acc[d];
    acc[d] = 0;
    if ((filter_min && double(n.turn_end[d]) < turn_min) || (filter_max && double(n.turn_start[d]) > turn_max))
      continue;
    const float score = static_cast<float>(total);
    if (heap.size() == k && score < heap.front().score) continue;  // the span id is read only for a doc that can enter
    OfferTopK(heap, k, LexicalHit{n.span_ids[d], score});
  }
  std::sort_heap(heap.begin(), heap.end(), Worse);
}

bool LexicalIndex::Search(std::string_view query, uint32_t k, RecordKind kind, double turn_min, double turn_max,
                          std::vector<LexicalHit>* hits, uint64_t max_postings, WalkPause* pause) {
  hits->clear();
  // A pausing walk reads buffers of its own: whoever takes the index while it is paused may
  // search or look up a phrase with the shared ones.
  struct Taken {
    LexicalIndex* index;
    Scratch* sc;
    ~Taken() {
      if (sc != nullptr) index->ReturnScratch(sc);
    }
  } taken{this, pause != nullptr ? TakeScratch() : nullptr};
  Scratch& sc = taken.sc != nullptr ? *taken.sc : *scratch_;
  Namespace& n = ns(kind);
  const uint32_t docs = n.doc_count();
  if (docs == 0 || k == 0) return true;

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
  if (sc.query_terms.empty()) return true;
  SelectTerms(n, &sc.query_terms);
  if (max_postings != UINT64_MAX) {
    uint64_t postings = 0;
    for (uint32_t id : sc.query_terms) postings += n.terms[id].df;
    if (postings > max_postings) return false;
  }

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
  const uint32_t* doc_len = n.doc_len.data();

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
    uint32_t until_poll = kPausePollDocs;
    for (;;) {
      if (pause != nullptr && --until_poll == 0) {
        until_poll = kPausePollDocs;
        if (pause->Due()) PauseWalk(n, sc.cursors, &sc.seed_cursors, pause, &bm25_pauses_);
      }
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

  if (PreferAccumulate(n, sc, first_essential)) {
    ++bm25_accumulated_;
    Accumulate(n, docs, sc, k, norm_a, norm_b, turn_min, turn_max, hits, pause, &bm25_pauses_);
    return true;
  }

  doc_len = n.doc_len.data();  // a pause in the seed may have moved it
  uint32_t until_poll = kPausePollDocs;
  for (;;) {
    if (pause != nullptr && --until_poll == 0) {
      until_poll = kPausePollDocs;
      if (pause->Due()) {
        PauseWalk(n, sc.cursors, nullptr, pause, &bm25_pauses_);
        doc_len = n.doc_len.data();
      }
    }
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
    const float norm = norm_a + norm_b * static_cast<float>(doc_len[d]);
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
        // The next doc reached is one of the essential cursors' docs: its length (read for
        // its norm, a random read into a 4 MB array at 10^6 docs) is fetched while the
        // current doc is scored.
        if (c.doc < docs) __builtin_prefetch(doc_len + c.doc);
      }
    }
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
    const float score = static_cast<float>(total);
    // A full heap's worst is beaten only by a higher score, or an equal one with a lower span
    // id: below it, the doc's span id (a cache miss into an 8 MB array at 10^6 docs) is
    // never read.
    if (heap.size() == k && score < heap.front().score) continue;
    if (!OfferTopK(heap, k, LexicalHit{n.span_ids[d], score})) continue;
    if (heap.size() == k) {
      threshold = std::max(threshold, heap.front().score);
      while (first_essential < nterms && sc.prefix_bounds[first_essential] <= threshold) ++first_essential;
    }
  }
  std::sort_heap(heap.begin(), heap.end(), Worse);
  return true;
}

}  // namespace spanguard
