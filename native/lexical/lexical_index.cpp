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
  for (Scratch* sc : spare_) delete sc;
  delete raw_;
  delete summary_;
}

LexicalIndex::Scratch* LexicalIndex::TakeScratch() {
  {
    std::lock_guard<std::mutex> held(spare_mu_);
    if (!spare_.empty()) {
      Scratch* sc = spare_.back();
      spare_.pop_back();
      return sc;
    }
  }
  return new Scratch();
}

void LexicalIndex::ReturnScratch(Scratch* sc) {
  std::lock_guard<std::mutex> held(spare_mu_);
  spare_.push_back(sc);
}

void LexicalIndex::Reset() {
  delete raw_;
  delete summary_;
  raw_ = new Namespace(RecordKind::kRaw);
  summary_ = new Namespace(RecordKind::kSummary);
  high_water_ = 0;
}

LexicalIndex::Namespace& LexicalIndex::ns(RecordKind kind) { return kind == RecordKind::kSummary ? *summary_ : *raw_; }

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
                                            std::to_string(in.turn_end) + "] of span " + std::to_string(in.span_id) +
                                            " is reversed");
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
    if (!source.Read(id, &view)) {
      throw NativeError("CORRUPT", "the log holds no record for span id " + std::to_string(id) + " below its next id " +
                                       std::to_string(next_id));
    }
    const auto k = static_cast<uint8_t>(view.kind);
    if (k < 1 || k > 3 || view.turn_start > view.turn_end) {
      throw NativeError("CORRUPT", "log record " + std::to_string(id) + " has kind " + std::to_string(k) +
                                       " or a reversed turn range");
    }
    IndexInput in{id,
                  view.kind,
                  view.turn_start,
                  view.turn_end,
                  std::string_view(view.text, view.text_len),
                  std::string_view(view.meta, view.meta_len)};
    Add(in);
    if (view.kind != RecordKind::kEvent) ++indexed;
  }
  if (next_id > high_water_) high_water_ = next_id;
  return indexed;
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
  s.memory_bytes = raw_->MemoryBytes() + summary_->MemoryBytes() + scratch_->accumulators.capacity() * sizeof(double) +
                   scratch_->touched.capacity() * sizeof(uint32_t);
  {
    std::lock_guard<std::mutex> held(spare_mu_);
    for (const Scratch* sc : spare_)
      s.memory_bytes += sc->accumulators.capacity() * sizeof(double) + sc->touched.capacity() * sizeof(uint32_t);
  }
  for (const Namespace* n : {raw_, summary_}) {
    const Namespace::Memory m = n->MemorySplit();
    s.memory_documents += m.documents;
    s.memory_dictionary += m.dictionary;
    s.memory_postings += m.postings;
    s.inline_streams += m.inline_streams;
  }
  s.phrase_fallback_scans = phrase_fallback_scans_;
  s.phrase_scans_cut = phrase_scans_cut_;
  s.phrase_postings_decoded = phrase_postings_decoded_;
  s.phrase_positions_decoded = phrase_positions_decoded_;
  s.bm25_accumulated = bm25_accumulated_;
  s.bm25_pauses = bm25_pauses_;
  s.affix_sorted_terms = uint64_t(raw_->affix_sorted) + summary_->affix_sorted;
  return s;
}

}  // namespace spanguard
