// The built-in embedder: deterministic, offline feature hashing into a fixed dimension.
//
// It exists so a store works with nothing downloaded, and it is tuned for the query a
// guard cares about most: a sentence copied, or lightly paraphrased, from one turn. Such a
// query shares that turn's words, numbers, identifiers and their character n-grams, so
// hashing those features into one space puts the two close together; a neural model is
// not needed for near-exact recall (the host plugs its own in for semantic recall).
//
// Features of one text, each hashed with a per-family salt into `dims` buckets with a
// hash-derived sign (signed hashing: colliding features cancel on average instead of
// piling up, which keeps the inner product an unbiased estimate of the feature overlap):
//   - word unigrams: maximal runs of [a-z0-9_] and UTF-8 bytes >= 0x80, ASCII lowercased;
//   - identifier parts: a word split on `_`, camelCase and letter/digit boundaries
//     (`snake_case_name` -> snake, case, name; `fooBar` -> foo, bar; `5ms` -> 5, ms);
//   - compound chunks: a whitespace/bracket/quote-delimited chunk that holds joiners
//     (`/ . - : = + @ # % ~ \ $`) or several words, kept whole (`req/s`, `3.5ms`, `a.b.c`);
//   - word bigrams, and chunk bigrams when either side is compound (`40 req/s`);
//   - character 3-, 4- and 5-grams of each word padded with boundary marks.
// Each distinct feature contributes weight(family) * (1 + ln tf) (sublinear tf), and the
// vector is L2-normalized. An empty text (no features) embeds to the zero vector.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace spanguard {

/// Per-thread working memory for the embedder: a feature -> weight table that is cleared by
/// walking the touched slots, so embedding a span allocates nothing once it has warmed up.
class EmbedScratch {
 public:
  EmbedScratch();

 private:
  friend class Embedder;
  struct Slot {
    uint64_t key;  ///< feature hash, 0 = empty (a real hash of 0 is remapped to 1)
    float weight;  ///< family weight of the feature
    uint32_t tf;   ///< occurrences in this text
  };
  std::vector<Slot> slots_;        ///< open addressing, power-of-two size
  std::vector<uint32_t> touched_;  ///< occupied slot indices, in insertion order
  void clear() noexcept;
  void grow();
  void insert(uint64_t key, float weight) noexcept;
};

class Embedder {
 public:
  static constexpr uint32_t kMinDims = 8;
  static constexpr uint32_t kMaxDims = 4096;
  static constexpr uint32_t kDefaultDims = 256;

  /// `dims` must be in [kMinDims, kMaxDims]; the binding validates it.
  explicit Embedder(uint32_t dims) noexcept : dims_(dims) {}
  uint32_t dims() const noexcept { return dims_; }

  /// Writes the L2-normalized embedding of `text` into `out[0, dims)`.
  void Embed(std::string_view text, float* out, EmbedScratch& scratch) const;

 private:
  uint32_t dims_;
  void Extract(std::string_view text, EmbedScratch& scratch) const;
};

}  // namespace spanguard
