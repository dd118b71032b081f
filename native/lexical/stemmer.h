// Term normalization for the BM25 path: the Snowball English (Porter2) stemmer, Latin
// diacritic folding and leading-zero numbers.
//
// Why our own stemmer: there is no maintained C/C++ stemming library on npm (libstemmer,
// Snowball's C runtime, is not published there), Porter2 is about 300 lines, and the
// ingest path must not allocate per token. This one works in place in a caller-provided
// buffer: a step only ever shortens the word or re-adds the one letter it just removed,
// so it never needs more room than the input.
//
// Porter2 as published at https://snowballstem.org/algorithms/english/stemmer.html: y → Y
// marking, R1/R2 (R1 after the prefixes gener, commun, arsen), exception1 (skis skies dying
// lying tying idly gently ugly early only singly, and the invariants sky news howe atlas
// cosmos bias andes), steps 0 and 1a, exception2 (inning outing canning herring earring
// proceed exceed succeed), steps 1b, 1c, 2, 3, 4, 5. The input contract is lowercase ASCII
// letters only, so the prelude's leading-apostrophe removal and step 0 (the suffixes ' 's
// 's') never apply; a word holding anything else is returned unchanged.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace spanguard {

/// Stems `word[0, length)` in place (Porter2) and returns the stem's length (≤ length).
/// Words of length ≤ 2 and words with a byte outside a–z are left unchanged.
size_t Porter2Stem(char* word, size_t length);

/// The form a token is indexed and searched under beside itself (tokenizer version 4):
///  (a) Latin-1 Supplement and Latin Extended-A letters folded to their base letters
///      (é → e, ñ → n, ü → u, ç → c, ø → o, å → a, ß → ss, æ → ae, œ → oe, ł → l, þ → th,
///      ĳ → ij; capitals to the same lowercase letters, though tokens are already folded);
///  (b) if the result is all ASCII letters a–z, its Porter2 stem;
///  (c) a token of digits only loses its leading zeros ("012" → "12", "000" → "0").
/// Returns true when the normal form differs from `token`, and then `*out` holds it (never
/// longer than `token`; no allocation once `out` has that capacity). When false, the
/// normal form is `token` itself and `*out` is unspecified.
bool NormalizeTerm(std::string_view token, std::string* out);

}  // namespace spanguard
