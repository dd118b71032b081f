#include "embed/embedder.h"

#include "common/hash.h"

#include <cmath>
#include <cstring>

namespace spanguard {

namespace {

// Family salts: the same bytes as a word and as a char 3-gram are different features.
constexpr uint64_t kSaltWord = 0x9E3779B97F4A7C15ull;
constexpr uint64_t kSaltPart = 0xC2B2AE3D27D4EB4Full;
constexpr uint64_t kSaltChunk = 0x165667B19E3779F9ull;
constexpr uint64_t kSaltBigram = 0xD6E8FEB86659FD93ull;
constexpr uint64_t kSaltChunkBigram = 0xA0761D6478BD642Full;
constexpr uint64_t kSaltGram[6] = {0, 0, 0, 0xE7037ED1A0B428DBull, 0x8EBC6AF09C88C6E3ull, 0x589965CC75374CC3ull};

// Family weights. Words and compound chunks carry the meaning; identifier parts and
// bigrams refine it; char n-grams are many per word, so each weighs little, but together
// they make a lightly reworded or re-inflected query land near its source.
constexpr float kWeightWord = 1.0f;
constexpr float kWeightPart = 0.5f;
constexpr float kWeightChunk = 1.0f;
constexpr float kWeightBigram = 0.7f;
constexpr float kWeightChunkBigram = 0.7f;
constexpr float kWeightGram = 0.2f;

/// Char n-grams are taken from at most this many leading bytes of a word: long runs
/// (hashes, base64 blobs) would otherwise dominate both the cost and the vector.
constexpr size_t kMaxGramWord = 32;

constexpr uint64_t kFnvOffset = 0xCBF29CE484222325ull;
constexpr uint64_t kFnvPrime = 0x100000001B3ull;

/// FNV-1a is cheap per byte; its weak high-bit diffusion is fixed by the finalizer below
/// (murmur3's fmix64), which every feature goes through before it picks a bucket and sign.
inline uint64_t Fmix(uint64_t h) noexcept { return Fmix64(h); }

inline uint64_t HashBytes(const unsigned char* p, size_t n) noexcept {
  uint64_t h = kFnvOffset;
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * kFnvPrime;
  return h;
}

enum CharClass : uint8_t { kSep = 0, kWord = 1, kJoin = 2 };

struct ClassTable {
  uint8_t cls[256];
  uint8_t lower[256];
  constexpr ClassTable() : cls(), lower() {
    for (int c = 0; c < 256; ++c) {
      lower[c] = static_cast<uint8_t>((c >= 'A' && c <= 'Z') ? c + 32 : c);
      bool word = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c >= 0x80;
      bool join = c == '/' || c == '.' || c == '-' || c == ':' || c == '=' || c == '+' || c == '@' || c == '#' ||
                  c == '%' || c == '~' || c == '\\' || c == '$';
      cls[c] = word ? kWord : (join ? kJoin : kSep);
    }
  }
};
constexpr ClassTable kClass{};

inline bool IsUpper(unsigned char c) noexcept { return c >= 'A' && c <= 'Z'; }
inline bool IsDigit(unsigned char c) noexcept { return c >= '0' && c <= '9'; }
inline bool IsLowerish(unsigned char c) noexcept { return (c >= 'a' && c <= 'z') || c >= 0x80; }

/// 1 + ln(tf), tabulated for the common small counts.
struct TfTable {
  float v[64];
  TfTable() {
    v[0] = 0.0f;
    for (int i = 1; i < 64; ++i) v[i] = 1.0f + std::log(static_cast<float>(i));
  }
};
const TfTable kTf;

inline float Sublinear(uint32_t tf) noexcept { return tf < 64 ? kTf.v[tf] : 1.0f + std::log(static_cast<float>(tf)); }

}  // namespace

EmbedScratch::EmbedScratch() : slots_(4096, Slot{0, 0.0f, 0}) { touched_.reserve(2048); }

void EmbedScratch::clear() noexcept {
  for (uint32_t i : touched_) slots_[i].key = 0;
  touched_.clear();
}

void EmbedScratch::grow() {
  std::vector<Slot> old;
  old.swap(slots_);
  slots_.assign(old.size() * 2, Slot{0, 0.0f, 0});
  std::vector<uint32_t> old_touched;
  old_touched.swap(touched_);
  touched_.reserve(old_touched.size() * 2);
  size_t mask = slots_.size() - 1;
  for (uint32_t i : old_touched) {
    const Slot& s = old[i];
    size_t j = s.key & mask;
    while (slots_[j].key != 0) j = (j + 1) & mask;
    slots_[j] = s;
    touched_.push_back(static_cast<uint32_t>(j));
  }
}

void EmbedScratch::insert(uint64_t key, float weight) noexcept {
  if (key == 0) key = 1;
  size_t mask = slots_.size() - 1;
  size_t j = key & mask;
  for (;;) {
    Slot& s = slots_[j];
    if (s.key == key) {
      ++s.tf;
      return;
    }
    if (s.key == 0) {
      s.key = key;
      s.weight = weight;
      s.tf = 1;
      touched_.push_back(static_cast<uint32_t>(j));
      // Keep the load factor under 1/2 so probes stay short.
      if (touched_.size() * 2 > slots_.size()) grow();
      return;
    }
    j = (j + 1) & mask;
  }
}

void Embedder::Extract(std::string_view text, EmbedScratch& scratch) const {
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  // Lowercased copy of one word, padded with boundary marks for the char n-grams.
  unsigned char gram_buf[kMaxGramWord + 2];

  uint64_t prev_word = 0;
  bool have_prev_word = false;
  uint64_t prev_chunk = 0;
  bool prev_chunk_compound = false;
  bool have_prev_chunk = false;

  size_t i = 0;
  while (i < n) {
    // Skip separators to the start of a chunk.
    while (i < n && kClass.cls[p[i]] == kSep) ++i;
    size_t cs = i;
    while (i < n && kClass.cls[p[i]] != kSep) ++i;
    size_t ce = i;
    // Trailing and leading joiners are punctuation ("end.", "-flag" keeps "flag").
    while (cs < ce && kClass.cls[p[cs]] == kJoin) ++cs;
    while (ce > cs && kClass.cls[p[ce - 1]] == kJoin) --ce;
    if (cs >= ce) continue;

    uint64_t chunk_hash = kFnvOffset;
    size_t words_in_chunk = 0;
    size_t j = cs;
    while (j < ce) {
      if (kClass.cls[p[j]] == kJoin) {
        chunk_hash = (chunk_hash ^ p[j]) * kFnvPrime;
        ++j;
        continue;
      }
      // One word [ws, we).
      size_t ws = j;
      uint64_t wh = kFnvOffset;
      while (j < ce && kClass.cls[p[j]] == kWord) {
        unsigned char c = kClass.lower[p[j]];
        wh = (wh ^ c) * kFnvPrime;
        ++j;
      }
      size_t we = j;
      chunk_hash = (chunk_hash ^ 0x1F) * kFnvPrime;  // word boundary inside the chunk hash
      chunk_hash ^= wh;
      chunk_hash *= kFnvPrime;
      ++words_in_chunk;

      uint64_t word_feature = Fmix(wh ^ kSaltWord);
      scratch.insert(word_feature, kWeightWord);
      if (have_prev_word) scratch.insert(Fmix((prev_word * 0x9FB21C651E98DF25ull) ^ wh ^ kSaltBigram), kWeightBigram);
      prev_word = wh;
      have_prev_word = true;

      // Identifier parts: split on '_', lower->Upper, Upper->Upper+lower, letter<->digit.
      size_t part_start = ws;
      size_t parts = 0;
      uint64_t part_hashes[16];
      size_t part_count = 0;
      auto flush_part = [&](size_t a, size_t b) {
        if (b <= a) return;
        ++parts;
        if (part_count < 16) {
          uint64_t h = kFnvOffset;
          for (size_t t = a; t < b; ++t) h = (h ^ kClass.lower[p[t]]) * kFnvPrime;
          part_hashes[part_count++] = h;
        }
      };
      for (size_t t = ws; t < we; ++t) {
        unsigned char c = p[t];
        if (c == '_') {
          flush_part(part_start, t);
          part_start = t + 1;
          continue;
        }
        if (t > part_start) {
          unsigned char b = p[t - 1];
          bool split = (IsLowerish(b) && IsUpper(c)) || (IsDigit(b) != IsDigit(c) && b != '_') ||
                       (IsUpper(b) && IsUpper(c) && t + 1 < we && IsLowerish(p[t + 1]) && p[t + 1] < 0x80);
          if (split) {
            flush_part(part_start, t);
            part_start = t;
          }
        }
      }
      flush_part(part_start, we);
      if (parts > 1) {
        for (size_t t = 0; t < part_count; ++t) scratch.insert(Fmix(part_hashes[t] ^ kSaltPart), kWeightPart);
      }

      // Char 3/4/5-grams of "\x02word\x03".
      size_t wl = we - ws;
      if (wl > kMaxGramWord) wl = kMaxGramWord;
      gram_buf[0] = 0x02;
      for (size_t t = 0; t < wl; ++t) gram_buf[t + 1] = kClass.lower[p[ws + t]];
      gram_buf[wl + 1] = 0x03;
      size_t gl = wl + 2;
      for (size_t s = 0; s + 3 <= gl; ++s) {
        uint64_t h = kFnvOffset;
        size_t lim = gl - s < 5 ? gl - s : 5;
        for (size_t g = 0; g < lim; ++g) {
          h = (h ^ gram_buf[s + g]) * kFnvPrime;
          if (g >= 2) scratch.insert(Fmix(h ^ kSaltGram[g + 1]), kWeightGram);
        }
      }
    }

    bool compound = words_in_chunk > 1;
    if (compound) scratch.insert(Fmix(chunk_hash ^ kSaltChunk), kWeightChunk);
    if (have_prev_chunk && (compound || prev_chunk_compound)) {
      scratch.insert(Fmix((prev_chunk * 0x9FB21C651E98DF25ull) ^ chunk_hash ^ kSaltChunkBigram), kWeightChunkBigram);
    }
    prev_chunk = chunk_hash;
    prev_chunk_compound = compound;
    have_prev_chunk = true;
  }
}

void Embedder::Embed(std::string_view text, float* out, EmbedScratch& scratch) const {
  std::memset(out, 0, sizeof(float) * dims_);
  scratch.clear();
  Extract(text, scratch);
  const uint64_t d = dims_;
  for (uint32_t idx : scratch.touched_) {
    const EmbedScratch::Slot& s = scratch.slots_[idx];
    // High bits pick the bucket (multiply-shift: any dims, no modulo), bit 0 the sign.
    uint32_t bucket = static_cast<uint32_t>(((s.key >> 32) * d) >> 32);
    float w = s.weight * Sublinear(s.tf);
    out[bucket] += (s.key & 1) ? -w : w;
  }
  double norm = 0.0;
  for (uint32_t t = 0; t < dims_; ++t) norm += static_cast<double>(out[t]) * out[t];
  if (norm > 0.0) {
    float inv = static_cast<float>(1.0 / std::sqrt(norm));
    for (uint32_t t = 0; t < dims_; ++t) out[t] *= inv;
  }
}

}  // namespace spanguard
