// Tokenizer implementation. The rules and their rationale are in tokenizer.h.
//
// Shape: one pass over the UTF-8 bytes splits the text into words (runs between
// separators). Each word is decoded into a small reusable code point buffer, folded once
// into the arena, and every token of the word (whole, path components, segments, atoms) is
// a slice of that folded copy, so emitting a token is an append of two integers.
#include "lexical/tokenizer.h"

#include <cstring>

namespace spanguard {

namespace {

enum CharClass : uint8_t {
  kSep = 0,    // ends a word, never part of a token
  kJoin = 1,   // . / \ : - _ @ # +   inside words, trimmed at their ends
  kDigit = 2,  // 0-9
  kUpper = 3,  // a letter whose fold differs from itself
  kLower = 4,  // any other word character (lowercase, caseless, non-ASCII symbols kept)
};

// ASCII classes, built once at compile time.
struct AsciiTable {
  uint8_t cls[128];
  constexpr AsciiTable() : cls() {
    for (int c = 0; c < 128; ++c) cls[c] = kSep;
    for (int c = '0'; c <= '9'; ++c) cls[c] = kDigit;
    for (int c = 'A'; c <= 'Z'; ++c) cls[c] = kUpper;
    for (int c = 'a'; c <= 'z'; ++c) cls[c] = kLower;
    const char joiners[] = "./\\:-_@#+";
    for (int i = 0; joiners[i] != 0; ++i) cls[static_cast<unsigned char>(joiners[i])] = kJoin;
    // Everything else in ASCII (whitespace, controls, ` ' " ( ) [ ] { } < > $ | ; = , ! ? *
    // & ^ % ~ DEL) stays a separator.
  }
};
constexpr AsciiTable kAscii{};

bool IsNonAsciiSeparator(uint32_t cp) {
  if (cp < 0x80) return false;
  if (cp <= 0xBF) {
    // Latin-1 controls and punctuation separate, but µ ª º ² ³ ¹ are parts of tokens
    // ("3.5µs", "m²").
    return !(cp == 0xB5 || cp == 0xAA || cp == 0xBA || cp == 0xB2 || cp == 0xB3 || cp == 0xB9);
  }
  if (cp == 0xD7 || cp == 0xF7) return true;        // × ÷
  if (cp >= 0x2000 && cp <= 0x206F) return true;    // general punctuation, spaces
  if (cp >= 0x2190 && cp <= 0x21FF) return true;    // arrows (→ in model prose)
  if (cp >= 0x2200 && cp <= 0x22FF) return true;    // math operators
  if (cp >= 0x2500 && cp <= 0x27BF) return true;    // box drawing … dingbats (├── ✓)
  if (cp >= 0x3000 && cp <= 0x303F) return true;    // CJK punctuation
  if (cp == 0xFEFF) return true;                    // BOM
  if (cp >= 0x1F300 && cp <= 0x1FAFF) return true;  // emoji
  return false;
}

inline bool Even(uint32_t cp) { return (cp & 1u) == 0; }

// Decodes one code point at p (< end). Returns its byte length, 0 for an invalid sequence
// (the caller treats that byte as a separator).
inline uint32_t DecodeUtf8(const unsigned char* p, const unsigned char* end, uint32_t* cp) {
  const unsigned char c = p[0];
  if (c < 0x80) {
    *cp = c;
    return 1;
  }
  if (c < 0xC2) return 0;
  if (c < 0xE0) {
    if (end - p < 2 || (p[1] & 0xC0) != 0x80) return 0;
    *cp = (uint32_t(c & 0x1F) << 6) | (p[1] & 0x3F);
    return 2;
  }
  if (c < 0xF0) {
    if (end - p < 3 || (p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80) return 0;
    const uint32_t v = (uint32_t(c & 0x0F) << 12) | (uint32_t(p[1] & 0x3F) << 6) | (p[2] & 0x3F);
    if (v < 0x800 || (v >= 0xD800 && v <= 0xDFFF)) return 0;
    *cp = v;
    return 3;
  }
  if (c < 0xF5) {
    if (end - p < 4 || (p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80 || (p[3] & 0xC0) != 0x80) return 0;
    const uint32_t v =
        (uint32_t(c & 0x07) << 18) | (uint32_t(p[1] & 0x3F) << 12) | (uint32_t(p[2] & 0x3F) << 6) | (p[3] & 0x3F);
    if (v < 0x10000 || v > 0x10FFFF) return 0;
    *cp = v;
    return 4;
  }
  return 0;
}

inline void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

// Field stores into the vector's slot (a braced temporary is built on the stack and
// copied with a wide load that stalls on store-to-load forwarding: measured 10–40%).
inline void PushToken(TokenStream* out, uint32_t offset, uint32_t length, uint32_t position, bool truncated) {
  TokenRef& t = out->tokens.emplace_back();
  t.offset = offset;
  t.length = length;
  t.position = position;
  t.truncated = truncated;
}

inline bool IsHexDigit(uint8_t a) { return (a >= '0' && a <= '9') || (a >= 'a' && a <= 'f') || (a >= 'A' && a <= 'F'); }

// Per-call state over the caller's TokenStream (whose buffers keep their capacity, so no
// allocation once warmed up). Deliberately not thread_local: in a shared object every
// access to a TLS object is a __tls_get_addr call, measured at 6% of ingest.
struct WordBuilder {
  std::vector<WordChar>& chars;
  TokenStream* out;
  uint32_t word_arena_begin = 0;  // arena offset of the current word's folded bytes

  explicit WordBuilder(TokenStream* o) : chars(o->chars), out(o) {}

  // Emits the folded slice of chars [cb, ce) of the current word at `position`.
  void Emit(uint32_t cb, uint32_t ce, uint32_t position) {
    const uint32_t begin = cb == 0 ? word_arena_begin : chars[cb - 1].folded_end;
    const uint32_t end = chars[ce - 1].folded_end;
    uint32_t length = end - begin;
    bool truncated = false;
    if (length > kMaxTokenBytes) {
      // Cut at a code point boundary: back off over UTF-8 continuation bytes.
      length = kMaxTokenBytes;
      const char* base = out->arena.data() + begin;
      while (length > 0 && (static_cast<unsigned char>(base[length]) & 0xC0) == 0x80) --length;
      truncated = true;
    }
    PushToken(out, begin, length, position, truncated);
  }

  // Splits a segment (no joiners inside except decimal dots) into atoms; emits them and
  // returns how many atoms it had. `segment_emitted_whole` tells whether [cb, ce) itself
  // was already emitted (then a single atom equal to it is not emitted twice).
  uint32_t Atoms(uint32_t cb, uint32_t ce, uint32_t position, bool parent_is_same) {
    // Hex literal: 0x followed only by hex digits is one atom.
    if (ce - cb >= 3 && chars[cb].ascii == '0' && (chars[cb + 1].ascii == 'x' || chars[cb + 1].ascii == 'X')) {
      bool all_hex = true;
      for (uint32_t i = cb + 2; i < ce; ++i) {
        if (!IsHexDigit(chars[i].ascii)) {
          all_hex = false;
          break;
        }
      }
      if (all_hex) {
        if (!parent_is_same) Emit(cb, ce, position);
        return 1;
      }
    }
    uint32_t start = cb;
    // Version prefix: v2.26.2 → 2.26.2 (the 'v' itself is not an atom).
    if (ce - cb >= 2 && (chars[cb].ascii == 'v' || chars[cb].ascii == 'V') && chars[cb + 1].cls == kDigit) {
      start = cb + 1;
    }
    uint32_t atoms = 0;
    uint32_t atom_begin = start;
    for (uint32_t i = start + 1; i <= ce; ++i) {
      bool boundary = i == ce;
      if (!boundary) {
        const uint8_t prev = chars[i - 1].cls;
        const uint8_t cur = chars[i].cls;
        if (prev == kLower && cur == kUpper) {
          boundary = true;  // fooBar
        } else if (prev == kUpper && cur == kUpper && i + 1 < ce && chars[i + 1].cls == kLower) {
          boundary = true;  // HTTPServer: the last capital starts the next atom
        } else if (prev == kDigit && (cur == kUpper || cur == kLower)) {
          boundary = true;  // 3.5ms, 40k
        }
      }
      if (boundary) {
        const bool same = parent_is_same && atom_begin == cb && i == ce;
        if (!same) Emit(atom_begin, i, position + atoms);
        ++atoms;
        atom_begin = i;
      }
    }
    return atoms;
  }

  // A '.' between two digits is part of a number, not a joiner.
  bool IsJoinerAt(uint32_t i, uint32_t wb, uint32_t we) const {
    if (chars[i].cls != kJoin) return false;
    if (chars[i].ascii == '.' && i > wb && i + 1 < we && chars[i - 1].cls == kDigit && chars[i + 1].cls == kDigit) {
      return false;
    }
    return true;
  }

  // Splits [cb, ce) at joiners into segments and their atoms. Returns the atom count.
  uint32_t Segments(uint32_t cb, uint32_t ce, uint32_t position, bool parent_is_same) {
    uint32_t atoms = 0;
    uint32_t i = cb;
    while (i < ce) {
      while (i < ce && IsJoinerAt(i, cb, ce)) ++i;
      if (i >= ce) break;
      uint32_t j = i;
      while (j < ce && !IsJoinerAt(j, cb, ce)) ++j;
      const bool same = parent_is_same && i == cb && j == ce;
      if (!same) Emit(i, j, position + atoms);
      atoms += Atoms(i, j, position + atoms, true);
      i = j;
    }
    return atoms;
  }

  void Word(uint32_t word_byte_begin, uint32_t word_byte_end, bool with_words) {
    TokenStream& o = *out;
    const uint32_t n = static_cast<uint32_t>(chars.size());
    uint32_t wb = 0;
    uint32_t we = n;
    while (wb < we && chars[wb].cls == kJoin) ++wb;
    while (we > wb && chars[we - 1].cls == kJoin) --we;
    WordRef ref{word_byte_begin, word_byte_end, o.atom_count, 0, -1, word_byte_end, word_byte_end};
    // Fast path (most words of a transcript): lowercase letters and digits with no
    // digit→letter step and no version prefix are one atom, so the word is its only token.
    bool simple = n > 0;
    for (uint32_t i = 0; i < n && simple; ++i) {
      const uint8_t c = chars[i].cls;
      simple = c == kDigit || (c == kLower && (i == 0 || chars[i - 1].cls != kDigit));
    }
    if (simple && n >= 2 && (chars[0].ascii == 'v' || chars[0].ascii == 'V') && chars[1].cls == kDigit) simple = false;
    if (simple) {
      ref.trimmed_begin = word_byte_begin;
      ref.trimmed_end = word_byte_end;
      ref.whole_token = static_cast<int32_t>(o.tokens.size());
      ref.atom_count = 1;
      Emit(0, n, o.atom_count);
      o.atom_count += 1;
      if (with_words) o.words.push_back(ref);
      return;
    }
    if (wb < we) {
      ref.trimmed_begin = chars[wb].byte_offset;
      ref.trimmed_end = we < n ? chars[we].byte_offset : word_byte_end;
      const uint32_t position = o.atom_count;
      ref.whole_token = static_cast<int32_t>(o.tokens.size());
      Emit(wb, we, position);
      // Path components: split at / and \ (only if the word has one).
      bool has_slash = false;
      for (uint32_t i = wb; i < we; ++i) {
        if (chars[i].ascii == '/' || chars[i].ascii == '\\') {
          has_slash = true;
          break;
        }
      }
      uint32_t atoms = 0;
      if (has_slash) {
        uint32_t i = wb;
        while (i < we) {
          while (i < we && (chars[i].ascii == '/' || chars[i].ascii == '\\')) ++i;
          if (i >= we) break;
          uint32_t j = i;
          while (j < we && chars[j].ascii != '/' && chars[j].ascii != '\\') ++j;
          // Trim the component's own joiners ("https:" → "https").
          uint32_t cb = i, ce = j;
          while (cb < ce && chars[cb].cls == kJoin) ++cb;
          while (ce > cb && chars[ce - 1].cls == kJoin) --ce;
          if (cb < ce) {
            bool multi_segment = false;
            for (uint32_t k = cb; k < ce; ++k) {
              if (IsJoinerAt(k, cb, ce)) {
                multi_segment = true;
                break;
              }
            }
            // A one-segment component is emitted by Segments as that segment.
            if (multi_segment) Emit(cb, ce, position + atoms);
            atoms += Segments(cb, ce, position + atoms, false);
          }
          i = j;
        }
      } else {
        atoms = Segments(wb, we, position, true);
      }
      o.atom_count += atoms;
      ref.atom_count = atoms;
    }
    if (with_words) o.words.push_back(ref);
  }
};

// Irregular simple case foldings of Latin Extended-B and Greek (Unicode CaseFolding.txt,
// status C and S), sorted by code point for a binary search.
struct FoldPair {
  uint16_t from;
  uint16_t to;
};
constexpr FoldPair kIrregularFolds[] = {
    {0x181, 0x253},  {0x182, 0x183}, {0x184, 0x185}, {0x186, 0x254},  {0x187, 0x188}, {0x189, 0x256}, {0x18A, 0x257},
    {0x18B, 0x18C},  {0x18E, 0x1DD}, {0x18F, 0x259}, {0x190, 0x25B},  {0x191, 0x192}, {0x193, 0x260}, {0x194, 0x263},
    {0x196, 0x269},  {0x197, 0x268}, {0x198, 0x199}, {0x19C, 0x26F},  {0x19D, 0x272}, {0x19F, 0x275}, {0x1A0, 0x1A1},
    {0x1A2, 0x1A3},  {0x1A4, 0x1A5}, {0x1A6, 0x280}, {0x1A7, 0x1A8},  {0x1A9, 0x283}, {0x1AC, 0x1AD}, {0x1AE, 0x288},
    {0x1AF, 0x1B0},  {0x1B1, 0x28A}, {0x1B2, 0x28B}, {0x1B3, 0x1B4},  {0x1B5, 0x1B6}, {0x1B7, 0x292}, {0x1B8, 0x1B9},
    {0x1BC, 0x1BD},  {0x1F1, 0x1F3}, {0x1F2, 0x1F3}, {0x1F4, 0x1F5},  {0x1F6, 0x195}, {0x1F7, 0x1BF}, {0x220, 0x19E},
    {0x23A, 0x2C65}, {0x23B, 0x23C}, {0x23D, 0x19A}, {0x23E, 0x2C66}, {0x241, 0x242}, {0x243, 0x180}, {0x244, 0x289},
    {0x245, 0x28C},  {0x370, 0x371}, {0x372, 0x373}, {0x376, 0x377},  {0x37F, 0x3F3}, {0x3CF, 0x3D7}, {0x3D0, 0x3B2},
    {0x3D1, 0x3B8},  {0x3D5, 0x3C6}, {0x3D6, 0x3C0}, {0x3F0, 0x3BA},  {0x3F1, 0x3C1}, {0x3F4, 0x3B8}, {0x3F5, 0x3B5},
    {0x3F7, 0x3F8},  {0x3F9, 0x3F2}, {0x3FA, 0x3FB}, {0x3FD, 0x37B},  {0x3FE, 0x37C}, {0x3FF, 0x37D},
};

uint32_t IrregularFold(uint32_t cp) {
  size_t lo = 0, hi = sizeof(kIrregularFolds) / sizeof(kIrregularFolds[0]);
  while (lo < hi) {
    const size_t mid = (lo + hi) / 2;
    if (kIrregularFolds[mid].from < cp) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo < sizeof(kIrregularFolds) / sizeof(kIrregularFolds[0]) && kIrregularFolds[lo].from == cp
             ? kIrregularFolds[lo].to
             : cp;
}

// Lowercase variants that fold to another lowercase letter (final sigma, curly beta, …):
// they are not capitals, so they must not start a camelCase atom.
inline bool IsLowercaseVariant(uint32_t cp) {
  return cp == 0x3C2 || cp == 0x3D0 || cp == 0x3D1 || cp == 0x3D5 || cp == 0x3D6 || cp == 0x3F0 || cp == 0x3F1 ||
         cp == 0x3F5;
}

}  // namespace

uint32_t FoldCodePoint(uint32_t cp) {
  if (cp < 0x80) return (cp >= 'A' && cp <= 'Z') ? cp + 32 : cp;
  if (cp < 0x100) return (cp >= 0xC0 && cp <= 0xDE && cp != 0xD7) ? cp + 32 : cp;
  if (cp < 0x250) {
    if (cp <= 0x12F) return Even(cp) ? cp + 1 : cp;
    if (cp == 0x130) return 'i';
    if (cp >= 0x132 && cp <= 0x137) return Even(cp) ? cp + 1 : cp;
    if (cp >= 0x139 && cp <= 0x148) return Even(cp) ? cp : cp + 1;
    if (cp >= 0x14A && cp <= 0x177) return Even(cp) ? cp + 1 : cp;
    if (cp == 0x178) return 0xFF;
    if (cp >= 0x179 && cp <= 0x17E) return Even(cp) ? cp : cp + 1;
    if (cp == 0x1C4 || cp == 0x1C5) return 0x1C6;
    if (cp == 0x1C7 || cp == 0x1C8) return 0x1C9;
    if (cp == 0x1CA || cp == 0x1CB) return 0x1CC;
    if (cp >= 0x1CD && cp <= 0x1DC) return Even(cp) ? cp : cp + 1;
    if (cp >= 0x1DE && cp <= 0x1EF) return Even(cp) ? cp + 1 : cp;
    if (cp >= 0x1F8 && cp <= 0x21F) return Even(cp) ? cp + 1 : cp;
    if (cp >= 0x222 && cp <= 0x233) return Even(cp) ? cp + 1 : cp;
    if (cp >= 0x246 && cp <= 0x24F) return Even(cp) ? cp + 1 : cp;
    return IrregularFold(cp);
  }
  if (cp < 0x400) {
    if (cp == 0x386) return 0x3AC;
    if (cp >= 0x388 && cp <= 0x38A) return cp + 37;
    if (cp == 0x38C) return 0x3CC;
    if (cp == 0x38E || cp == 0x38F) return cp + 63;
    if (cp >= 0x391 && cp <= 0x3AB && cp != 0x3A2) return cp + 32;
    if (cp == 0x3C2) return 0x3C3;  // final sigma folds to σ
    if (cp >= 0x3D8 && cp <= 0x3EF) return Even(cp) ? cp + 1 : cp;
    return IrregularFold(cp);
  }
  if (cp < 0x530) {
    if (cp <= 0x40F) return cp + 80;
    if (cp <= 0x42F) return cp + 32;
    if (cp >= 0x460 && cp <= 0x481) return Even(cp) ? cp + 1 : cp;
    if (cp >= 0x48A && cp <= 0x4BF) return Even(cp) ? cp + 1 : cp;
    if (cp == 0x4C0) return 0x4CF;
    if (cp >= 0x4C1 && cp <= 0x4CE) return Even(cp) ? cp : cp + 1;
    if (cp >= 0x4D0) return Even(cp) ? cp + 1 : cp;
    return cp;
  }
  if (cp >= 0x1E00 && cp <= 0x1EFF) {
    if (cp == 0x1E9E) return 0xDF;  // ẞ → ß
    if (cp <= 0x1E95 || cp >= 0x1EA0) return Even(cp) ? cp + 1 : cp;
    return cp;
  }
  if (cp >= 0xFF21 && cp <= 0xFF3A) return cp + 32;
  return cp;
}

void FoldText(std::string_view text, std::string* out) {
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const auto* end = p + text.size();
  while (p < end) {
    uint32_t cp = 0;
    const uint32_t len = DecodeUtf8(p, end, &cp);
    if (len == 0) {
      out->push_back(static_cast<char>(*p));
      ++p;
      continue;
    }
    AppendUtf8(FoldCodePoint(cp), out);
    p += len;
  }
}

void Tokenize(std::string_view text, TokenStream* out, bool with_words) {
  WordBuilder b(out);
  out->arena.clear();
  out->tokens.clear();
  out->words.clear();
  out->atom_count = 0;
  // Folded text is never longer than ~the input (simple folding changes lengths by at most
  // one byte per code point, İ → i shrinks); reserve once.
  if (out->arena.capacity() < text.size() + 16) out->arena.reserve(text.size() + 16);

  const auto* base = reinterpret_cast<const unsigned char*>(text.data());
  const auto* end = base + text.size();
  const auto* p = base;
  uint32_t word_begin = 0;
  bool in_word = false;
  b.chars.clear();

  while (p < end) {
    const unsigned char c = *p;
    // Fast path for the common word: ASCII lowercase letters and digits, no digit→letter
    // step, ended by an ASCII separator. It is one atom and its own only token, so copy
    // the bytes and emit without building the per-character state.
    if (!in_word && c < 0x80 && (kAscii.cls[c] == kLower || kAscii.cls[c] == kDigit)) {
      const unsigned char* q = p;
      uint8_t prev = kSep;
      bool simple = true;
      while (q < end && *q < 0x80) {
        const uint8_t cl = kAscii.cls[*q];
        if (cl == kSep) break;
        if (cl == kJoin || cl == kUpper || (cl == kLower && prev == kDigit)) {
          simple = false;
          break;
        }
        prev = cl;
        ++q;
      }
      const bool version = (c == 'v') && q - p >= 2 && kAscii.cls[p[1]] == kDigit;
      if (simple && !version && (q == end || *q < 0x80)) {
        const uint32_t begin = static_cast<uint32_t>(p - base);
        const uint32_t length = static_cast<uint32_t>(q - p);
        const uint32_t arena_offset = static_cast<uint32_t>(out->arena.size());
        out->arena.append(reinterpret_cast<const char*>(p), length);
        const bool truncated = length > kMaxTokenBytes;
        if (with_words) {
          out->words.push_back(WordRef{begin, begin + length, out->atom_count, 1,
                                       static_cast<int32_t>(out->tokens.size()), begin, begin + length});
        }
        PushToken(out, arena_offset, truncated ? static_cast<uint32_t>(kMaxTokenBytes) : length, out->atom_count,
                  truncated);
        out->atom_count += 1;
        p = q;
        continue;
      }
    }
    uint32_t cp;
    uint32_t len;
    uint8_t cls;
    if (c < 0x80) {
      cp = c;
      len = 1;
      cls = kAscii.cls[c];
    } else {
      len = DecodeUtf8(p, end, &cp);
      if (len == 0) {
        cls = kSep;
        len = 1;
        cp = 0xFFFD;
      } else if (IsNonAsciiSeparator(cp)) {
        cls = kSep;
      } else {
        const uint32_t folded = FoldCodePoint(cp);
        cls = (folded != cp && !IsLowercaseVariant(cp)) ? kUpper : kLower;
        if (cp == 0xB2 || cp == 0xB3 || cp == 0xB9) cls = kLower;
      }
    }
    const uint32_t offset = static_cast<uint32_t>(p - base);
    if (cls == kSep) {
      if (in_word) {
        b.Word(word_begin, offset, with_words);
        b.chars.clear();
        in_word = false;
      }
    } else {
      if (!in_word) {
        in_word = true;
        word_begin = offset;
        b.word_arena_begin = static_cast<uint32_t>(out->arena.size());
      }
      if (c < 0x80) {
        out->arena.push_back(static_cast<char>(cls == kUpper ? c + 32 : c));
      } else {
        AppendUtf8(FoldCodePoint(cp), &out->arena);
      }
      // Field-by-field into the vector's slot: building a WordChar temporary and copying it
      // stalled on store-to-load forwarding (measured 40% of this function).
      WordChar& wc = b.chars.emplace_back();
      wc.byte_offset = offset;
      wc.folded_end = static_cast<uint32_t>(out->arena.size());
      wc.cls = cls;
      wc.ascii = static_cast<uint8_t>(c < 0x80 ? c : 0);
    }
    p += len;
  }
  if (in_word) b.Word(word_begin, static_cast<uint32_t>(text.size()), with_words);
}

}  // namespace spanguard
