// Tokenizer for agent transcripts (kTokenizerVersion below: the version of these rules plus
// what the index derives from their output).
//
// Agent transcripts are full of identifiers, paths, shell and markdown punctuation,
// numbers with units and error codes. A prose tokenizer either glues `` `fooBar` `` into
// one unfindable token or shreds `3.5ms`/`v2.26.2` into meaningless pieces. This one keeps
// each "word" whole AND emits its parts, so a query for the whole identifier and a query
// for one of its parts both land.
//
// Rules (each one has a describe() of the same name in test/lexical/tokenizer.test.ts):
//
// | rule               | input                                   | tokens (folded) |
// |--------------------|-----------------------------------------|---------------------------------------------------------------------|
// | separators         | `` `fooBar` `` "a=b" x|y $HOME [1];     | whitespace, control, ` ' " ( ) [ ] { } < > $ | ; = ,
// ! ? * & ^ % ~  | |                    |                                         | split words and are never part of a
// token                          | | case folding       | ÉCOLE Straße ΣΟΦΊΑ МОСКВА               | école straße σοφία
// москва (simple folding, see limits below)        | | joiners trimmed    | "--verbose", "end.", "::x"              |
// verbose, end, x  (joiners . / \ : - _ @ # + at a word's ends)      | | camelCase          | fooBar, HTTPServer,
// parseJSON           | foobar foo bar · httpserver http server · parsejson parse json     | | snake/kebab        |
// test_sampled, foo-bar                   | test_sampled test sampled · foo-bar foo bar                         | |
// dotted             | astropy.timeseries, std::vector         | whole + astropy timeseries · std::vector std vector |
// | paths              | astropy/timeseries/tests/test_sampled.py| whole, each path component with inner joiners
// (test_sampled.py),   | |                    |                                         | and the atoms astropy
// timeseries tests test sampled py             | | decimals           | 3.5, 1.479, 2.26.2                      | kept
// whole: a '.' between two digits is not a joiner               | | number+unit        | 3.5ms, 1.479s, 40k, 100MB
// | 3.5ms 3.5 ms · 1.479s 1.479 s · 40k 40 k · 100mb 100 mb            | | ratios             | 40 req/s | 40 · req/s
// req s                                                    | | hex                | 0x1f, 0xDEADbeef | 0x1f ·
// 0xdeadbeef (one atom; no camel or digit split)              | | version            | v2.26.2 | v2.26.2 2.26.2 (a
// leading v/V before a digit is split off, v dropped)| | error codes        | E0425, ENOENT, HTTP 404, ERR_X | e0425
// (letter→digit is not a boundary) · enoent · http 404          | | long tokens        | a 300-byte base64 blob |
// truncated to 96 bytes at a code point boundary                      |
//
// Normal forms (version 4) are not this tokenizer's output: the lexical index adds, beside
// each token, its NormalizeTerm form (native/stemmer.h: enjoying → enjoy, café → cafe,
// 012 → 12) at the token's position, and BM25 looks query tokens up by that form. Phrases
// use the tokens only (test/lexical/stemmer.test.ts).
//
// Positions: every *atom* (the finest piece) takes the next position; a whole word, a path
// component or a segment is emitted at the position of its first atom. Word boundaries
// depend only on the separator characters themselves, so a word that lies strictly inside
// a phrase is tokenized identically inside any text that contains the phrase, and the
// atom-count distance between two such words is the same too. The exact-phrase path relies
// on this (see LexicalIndex::Phrase).
//
// Case folding limits: simple (1:1, CaseFolding.txt status C+S) folding for ASCII,
// Latin-1, Latin Extended-A and -B (pairs and the irregular capitals Ɓ Ɔ Ə …), Latin
// Extended Additional, Greek and Coptic (accented capitals, final sigma → σ, ϐ ϑ ϕ ϖ ϰ ϱ ϵ
// variants), Cyrillic and Cyrillic Supplement (U+0400–U+052F) and fullwidth A–Z. Not
// covered: full folding (ß stays ß, no ligature expansion), Greek Extended (polytonic),
// Latin Extended-C/D/E, Armenian, Georgian, Cherokee, Deseret and other scripts (their
// letters are word characters but are not folded), and Unicode normalization (é
// precomposed ≠ e + combining acute). Non-ASCII code points are word
// characters, except the Unicode spaces and the General Punctuation (U+2000–U+206F),
// Latin-1 punctuation (U+00A0–U+00BF, U+00D7, U+00F7) and CJK punctuation (U+3000–U+303F)
// blocks, which separate. Invalid UTF-8 bytes separate (the log never stores them).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace spanguard {

// 2: irregular Latin Extended-B / Greek foldings; 3: metadata indexed;
// 4: normal forms (Porter2 stems, diacritics folded, leading zeros dropped) indexed beside each token
constexpr uint32_t kTokenizerVersion = 4;
/// Tokens longer than this (folded UTF-8 bytes) are cut at a code point boundary.
constexpr size_t kMaxTokenBytes = 96;

/// Folds one code point (simple case folding, limits above).
uint32_t FoldCodePoint(uint32_t cp);

/// One emitted token; its bytes are `TokenStream::arena[offset, offset + length)`.
struct TokenRef {
  uint32_t offset;
  uint32_t length;
  uint32_t position;
  bool truncated;  ///< cut at kMaxTokenBytes
};

/// One word (a maximal run between separators), for the phrase path.
struct WordRef {
  uint32_t byte_begin;  ///< in the input text, before trimming joiners
  uint32_t byte_end;
  uint32_t first_atom;     ///< position of its first atom
  uint32_t atom_count;     ///< 0 when the word is joiners only
  int32_t whole_token;     ///< index into tokens of the whole word, -1 if none
  uint32_t trimmed_begin;  ///< the run without leading/trailing joiners, in input bytes
  uint32_t trimmed_end;
};

/// One code point of the word being split (tokenizer working state).
struct WordChar {
  uint32_t byte_offset;  ///< in the input
  uint32_t folded_end;   ///< arena offset just past its folded bytes
  uint8_t cls;
  uint8_t ascii;  ///< the original byte if ASCII, else 0
};

/// Reusable output buffers: tokenizing clears them but keeps their capacity, so the ingest
/// hot path allocates nothing once the buffers have grown to the largest span seen.
struct TokenStream {
  std::string arena;
  std::vector<TokenRef> tokens;
  std::vector<WordRef> words;  ///< filled only when asked (phrase queries)
  uint32_t atom_count = 0;
  std::vector<WordChar> chars;  ///< working state: the current word's code points

  std::string_view token(size_t i) const { return std::string_view(arena.data() + tokens[i].offset, tokens[i].length); }
};

/// Tokenizes UTF-8 `text` into `out` (cleared first). `with_words` also fills out->words.
void Tokenize(std::string_view text, TokenStream* out, bool with_words = false);

/// Folds `text` code point by code point (no splitting), appending to `out`.
void FoldText(std::string_view text, std::string* out);

}  // namespace spanguard
