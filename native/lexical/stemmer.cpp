// Porter2 (Snowball English) and the term normal form; see stemmer.h. Each step below
// quotes the published rule it implements. "Longest suffix among …" is literal: the
// longest listed suffix the word ends with is chosen, and when its condition fails the
// step does nothing (it never falls back to a shorter suffix).
#include "lexical/stemmer.h"

#include <cstdint>
#include <cstring>

namespace spanguard {

namespace {

// The working word: letters a–z plus 'Y' (a y marked as a consonant by the prelude).
// Suffixes are string literals, so every comparison has a compile-time length; each step
// dispatches on the last letter and tries its suffixes longest first.
struct Word {
  char* w;
  int len;
  int p1;  // R1 = [p1, len)
  int p2;  // R2 = [p2, len)

  // a e i o u y (not the marked Y): bits 0, 4, 8, 14, 20, 24 of the letter index.
  static bool Vowel(char c) {
    const unsigned i = static_cast<unsigned>(c - 'a');
    return i < 26 && ((0x1104111u >> i) & 1) != 0;
  }

  template <size_t N>
  bool Ends(const char (&suffix)[N]) const {
    constexpr int n = static_cast<int>(N - 1);
    return len >= n && std::memcmp(w + len - n, suffix, N - 1) == 0;
  }

  /// The step's rule for `suffix`: false when the word does not end with it (try the next,
  /// shorter suffix); else the step is decided, and the suffix is replaced by `repl` when it
  /// starts at or after `region`.
  template <size_t N, size_t M>
  bool Rule(const char (&suffix)[N], const char (&repl)[M], int region) {
    if (!Ends(suffix)) return false;
    const int start = len - static_cast<int>(N - 1);
    if (start >= region) {
      std::memcpy(w + start, repl, M - 1);
      len = start + static_cast<int>(M - 1);
    }
    return true;
  }

  /// Whether w[0, k) ends in a short syllable: (a) a vowel followed by a non-vowel other
  /// than w, x or Y and preceded by a non-vowel, or (b) a vowel at the beginning of the
  /// word followed by a non-vowel.
  bool ShortSyllableAt(int k) const {
    if (k >= 3 && !Vowel(w[k - 3]) && Vowel(w[k - 2]) && !Vowel(w[k - 1]) && w[k - 1] != 'w' && w[k - 1] != 'x' &&
        w[k - 1] != 'Y') {
      return true;
    }
    return k == 2 && Vowel(w[0]) && !Vowel(w[1]);
  }

  bool HasVowelBefore(int k) const {
    for (int i = 0; i < k; ++i) {
      if (Vowel(w[i])) return true;
    }
    return false;
  }

  /// The position just past the first non-vowel that follows a vowel, from `from`; -1 if none.
  int AfterVowelConsonant(int from) const {
    int i = from;
    while (i < len && !Vowel(w[i])) ++i;
    while (i < len && Vowel(w[i])) ++i;
    return i < len ? i + 1 : -1;
  }

  // R1 is the region after the first non-vowel following a vowel (or the end of the word);
  // for words beginning with gener, commun or arsen it is the rest after that prefix. R2 is
  // the region after the first non-vowel following a vowel in R1.
  void MarkRegions() {
    p1 = p2 = len;
    int i;
    if (len >= 5 && (std::memcmp(w, "gener", 5) == 0 || std::memcmp(w, "arsen", 5) == 0)) {
      i = 5;
    } else if (len >= 6 && std::memcmp(w, "commun", 6) == 0) {
      i = 6;
    } else {
      i = AfterVowelConsonant(0);
      if (i < 0) return;
    }
    p1 = i;
    const int j = AfterVowelConsonant(p1);
    if (j >= 0) p2 = j;
  }

  // Step 1a. sses → ss; ied, ies → i if preceded by more than one letter, else ie; s →
  // delete if the preceding word part contains a vowel not immediately before the s;
  // us, ss → nothing.
  void Step1a() {
    const char last = w[len - 1];
    if (last == 's') {
      if (Ends("sses")) {
        len -= 2;
      } else if (Ends("ies")) {
        len -= len - 3 > 1 ? 2 : 1;
      } else if (Ends("us") || Ends("ss")) {
        // unchanged
      } else if (HasVowelBefore(len - 2)) {
        len -= 1;
      }
    } else if (last == 'd' && Ends("ied")) {
      len -= len - 3 > 1 ? 2 : 1;
    }
  }

  // Step 1b. eed, eedly → ee if in R1; ed, edly, ing, ingly → delete if the preceding
  // part contains a vowel, and then: at, bl, iz → add e; a double (bb dd ff gg mm nn pp
  // rr tt) → drop its last letter; a short word (R1 empty, ends in a short syllable) →
  // add e.
  void Step1b() {
    int n;
    switch (w[len - 1]) {
      case 'y':
        if (Ends("eedly")) {
          if (len - 5 >= p1) len -= 3;
          return;
        }
        if (Ends("ingly")) n = 5;
        else if (Ends("edly")) n = 4;
        else return;
        break;
      case 'd':
        if (Ends("eed")) {
          if (len - 3 >= p1) len -= 1;
          return;
        }
        if (Ends("ed")) n = 2;
        else return;
        break;
      case 'g':
        if (Ends("ing")) n = 3;
        else return;
        break;
      default:
        return;
    }
    const int start = len - n;
    if (!HasVowelBefore(start)) return;
    len = start;
    const char last = w[len - 1];
    if (Ends("at") || Ends("bl") || Ends("iz")) {
      w[len++] = 'e';
    } else if (len >= 2 && last == w[len - 2] &&
               (last == 'b' || last == 'd' || last == 'f' || last == 'g' || last == 'm' || last == 'n' || last == 'p' ||
                last == 'r' || last == 't')) {
      len -= 1;
    } else if (len == p1 && ShortSyllableAt(len)) {
      w[len++] = 'e';
    }
  }

  // Step 1c. y or Y → i if preceded by a non-vowel which is not the first letter.
  void Step1c() {
    if (len >= 3 && (w[len - 1] == 'y' || w[len - 1] == 'Y') && !Vowel(w[len - 2])) w[len - 1] = 'i';
  }

  // Step 2, in R1: tional → tion; enci → ence; anci → ance; abli → able; entli → ent;
  // izer, ization → ize; ational, ation, ator → ate; alism, aliti, alli → al; fulness →
  // ful; ousli, ousness → ous; iveness, iviti → ive; biliti, bli → ble; ogi → og if
  // preceded by l; fulli → ful; lessli → less; li → delete if preceded by a valid li-ending
  // (c d e g h k m n r t).
  void Step2() {
    switch (w[len - 1]) {
      case 'l':
        Rule("ational", "ate", p1) || Rule("tional", "tion", p1);
        return;
      case 'n':
        Rule("ization", "ize", p1) || Rule("ation", "ate", p1);
        return;
      case 'r':
        Rule("izer", "ize", p1) || Rule("ator", "ate", p1);
        return;
      case 'm':
        Rule("alism", "al", p1);
        return;
      case 's':
        Rule("fulness", "ful", p1) || Rule("iveness", "ive", p1) || Rule("ousness", "ous", p1);
        return;
      case 'i':
        break;
      default:
        return;
    }
    if (Rule("biliti", "ble", p1) || Rule("lessli", "less", p1) || Rule("aliti", "al", p1) ||
        Rule("entli", "ent", p1) || Rule("fulli", "ful", p1) || Rule("iviti", "ive", p1) || Rule("ousli", "ous", p1) ||
        Rule("abli", "able", p1) || Rule("alli", "al", p1) || Rule("anci", "ance", p1) || Rule("enci", "ence", p1) ||
        Rule("bli", "ble", p1)) {
      return;
    }
    if (Ends("ogi")) {
      const int start = len - 3;
      if (start >= p1 && start >= 1 && w[start - 1] == 'l') len -= 1;
    } else if (Ends("li")) {
      const int start = len - 2;
      if (start >= p1 && start >= 1) {
        const char c = w[start - 1];
        if (c == 'c' || c == 'd' || c == 'e' || c == 'g' || c == 'h' || c == 'k' || c == 'm' || c == 'n' || c == 'r' ||
            c == 't') {
          len = start;
        }
      }
    }
  }

  // Step 3, in R1: tional → tion; ational → ate; alize → al; icate, iciti, ical → ic;
  // ful, ness → delete; ative → delete if in R2.
  void Step3() {
    switch (w[len - 1]) {
      case 'l':
        Rule("ational", "ate", p1) || Rule("tional", "tion", p1) || Rule("ical", "ic", p1) || Rule("ful", "", p1);
        return;
      case 'e':
        if (Ends("ative")) {
          if (len - 5 >= p1 && len - 5 >= p2) len -= 5;
          return;
        }
        Rule("alize", "al", p1) || Rule("icate", "ic", p1);
        return;
      case 'i':
        Rule("iciti", "ic", p1);
        return;
      case 's':
        Rule("ness", "", p1);
        return;
      default:
        return;
    }
  }

  // Step 4, in R2: al ance ence er ic able ible ant ement ment ent ism ate iti ous ive ize →
  // delete; ion → delete if preceded by s or t.
  void Step4() {
    switch (w[len - 1]) {
      case 'l':
        Rule("al", "", p2);
        return;
      case 'e':
        Rule("ance", "", p2) || Rule("ence", "", p2) || Rule("able", "", p2) || Rule("ible", "", p2) ||
            Rule("ate", "", p2) || Rule("ive", "", p2) || Rule("ize", "", p2);
        return;
      case 'r':
        Rule("er", "", p2);
        return;
      case 'c':
        Rule("ic", "", p2);
        return;
      case 't':
        Rule("ement", "", p2) || Rule("ment", "", p2) || Rule("ant", "", p2) || Rule("ent", "", p2);
        return;
      case 'm':
        Rule("ism", "", p2);
        return;
      case 'i':
        Rule("iti", "", p2);
        return;
      case 's':
        Rule("ous", "", p2);
        return;
      case 'n':
        if (Ends("ion")) {
          const int start = len - 3;
          if (start >= p2 && start >= 1 && (w[start - 1] == 's' || w[start - 1] == 't')) len = start;
        }
        return;
      default:
        return;
    }
  }

  // Step 5: e → delete if in R2, or in R1 and not preceded by a short syllable; l →
  // delete if in R2 and preceded by l.
  void Step5() {
    const int start = len - 1;
    if (w[start] == 'e') {
      if (start >= p2 || (start >= p1 && !ShortSyllableAt(start))) len = start;
    } else if (w[start] == 'l') {
      if (start >= p2 && start >= 1 && w[start - 1] == 'l') len = start;
    }
  }
};

/// exception1: whole words with a fixed stem (itself for the invariant forms). Returns the
/// stem's length, or -1 when `w` is not one of them.
int Exception1(char* w, size_t length) {
  auto is = [&](const char* word, size_t n) { return length == n && std::memcmp(w, word, n) == 0; };
  auto set = [&](const char* stem, size_t n) {
    std::memcpy(w, stem, n);
    return static_cast<int>(n);
  };
  switch (length) {
    case 3:
      if (is("sky", 3)) return 3;
      return -1;
    case 4:
      if (is("skis", 4)) return set("ski", 3);
      if (is("idly", 4)) return set("idl", 3);
      if (is("ugly", 4)) return set("ugli", 4);
      if (is("only", 4)) return set("onli", 4);
      if (is("news", 4) || is("howe", 4) || is("bias", 4)) return 4;
      return -1;
    case 5:
      if (is("skies", 5)) return set("sky", 3);
      if (is("dying", 5)) return set("die", 3);
      if (is("lying", 5)) return set("lie", 3);
      if (is("tying", 5)) return set("tie", 3);
      if (is("early", 5)) return set("earli", 5);
      if (is("atlas", 5) || is("andes", 5)) return 5;
      return -1;
    case 6:
      if (is("gently", 6)) return set("gentl", 5);
      if (is("singly", 6)) return set("singl", 5);
      if (is("cosmos", 6)) return 6;
      return -1;
    default:
      return -1;
  }
}

/// exception2 (checked after step 1a): words left as they are.
bool Exception2(const char* w, int length) {
  if (length == 6) {
    return std::memcmp(w, "inning", 6) == 0 || std::memcmp(w, "outing", 6) == 0 || std::memcmp(w, "exceed", 6) == 0;
  }
  if (length == 7) {
    return std::memcmp(w, "canning", 7) == 0 || std::memcmp(w, "herring", 7) == 0 ||
           std::memcmp(w, "earring", 7) == 0 || std::memcmp(w, "proceed", 7) == 0 || std::memcmp(w, "succeed", 7) == 0;
  }
  return false;
}

// Base letters of U+00C0..U+017F (Latin-1 Supplement letters and Latin Extended-A), one or
// two ASCII letters each; "" for the two symbols × ÷. Capitals map to lowercase letters.
constexpr uint32_t kFoldFirst = 0xC0;
constexpr uint32_t kFoldLast = 0x17F;
const char* const kFold[] = {
    // U+00C0 À Á Â Ã Ä Å Æ Ç È É Ê Ë Ì Í Î Ï
    "a",
    "a",
    "a",
    "a",
    "a",
    "a",
    "ae",
    "c",
    "e",
    "e",
    "e",
    "e",
    "i",
    "i",
    "i",
    "i",
    // U+00D0 Ð Ñ Ò Ó Ô Õ Ö × Ø Ù Ú Û Ü Ý Þ ß
    "d",
    "n",
    "o",
    "o",
    "o",
    "o",
    "o",
    "",
    "o",
    "u",
    "u",
    "u",
    "u",
    "y",
    "th",
    "ss",
    // U+00E0 à á â ã ä å æ ç è é ê ë ì í î ï
    "a",
    "a",
    "a",
    "a",
    "a",
    "a",
    "ae",
    "c",
    "e",
    "e",
    "e",
    "e",
    "i",
    "i",
    "i",
    "i",
    // U+00F0 ð ñ ò ó ô õ ö ÷ ø ù ú û ü ý þ ÿ
    "d",
    "n",
    "o",
    "o",
    "o",
    "o",
    "o",
    "",
    "o",
    "u",
    "u",
    "u",
    "u",
    "y",
    "th",
    "y",
    // U+0100 Ā ā Ă ă Ą ą Ć ć Ĉ ĉ Ċ ċ Č č Ď ď
    "a",
    "a",
    "a",
    "a",
    "a",
    "a",
    "c",
    "c",
    "c",
    "c",
    "c",
    "c",
    "c",
    "c",
    "d",
    "d",
    // U+0110 Đ đ Ē ē Ĕ ĕ Ė ė Ę ę Ě ě Ĝ ĝ Ğ ğ
    "d",
    "d",
    "e",
    "e",
    "e",
    "e",
    "e",
    "e",
    "e",
    "e",
    "e",
    "e",
    "g",
    "g",
    "g",
    "g",
    // U+0120 Ġ ġ Ģ ģ Ĥ ĥ Ħ ħ Ĩ ĩ Ī ī Ĭ ĭ Į į
    "g",
    "g",
    "g",
    "g",
    "h",
    "h",
    "h",
    "h",
    "i",
    "i",
    "i",
    "i",
    "i",
    "i",
    "i",
    "i",
    // U+0130 İ ı Ĳ ĳ Ĵ ĵ Ķ ķ ĸ Ĺ ĺ Ļ ļ Ľ ľ Ŀ
    "i",
    "i",
    "ij",
    "ij",
    "j",
    "j",
    "k",
    "k",
    "k",
    "l",
    "l",
    "l",
    "l",
    "l",
    "l",
    "l",
    // U+0140 ŀ Ł ł Ń ń Ņ ņ Ň ň ŉ Ŋ ŋ Ō ō Ŏ ŏ
    "l",
    "l",
    "l",
    "n",
    "n",
    "n",
    "n",
    "n",
    "n",
    "n",
    "n",
    "n",
    "o",
    "o",
    "o",
    "o",
    // U+0150 Ő ő Œ œ Ŕ ŕ Ŗ ŗ Ř ř Ś ś Ŝ ŝ Ş ş
    "o",
    "o",
    "oe",
    "oe",
    "r",
    "r",
    "r",
    "r",
    "r",
    "r",
    "s",
    "s",
    "s",
    "s",
    "s",
    "s",
    // U+0160 Š š Ţ ţ Ť ť Ŧ ŧ Ũ ũ Ū ū Ŭ ŭ Ů ů
    "s",
    "s",
    "t",
    "t",
    "t",
    "t",
    "t",
    "t",
    "u",
    "u",
    "u",
    "u",
    "u",
    "u",
    "u",
    "u",
    // U+0170 Ű ű Ų ų Ŵ ŵ Ŷ ŷ Ÿ Ź ź Ż ż Ž ž ſ
    "u",
    "u",
    "u",
    "u",
    "w",
    "w",
    "y",
    "y",
    "y",
    "z",
    "z",
    "z",
    "z",
    "z",
    "z",
    "s",
};
static_assert(sizeof(kFold) / sizeof(kFold[0]) == kFoldLast - kFoldFirst + 1, "one entry per code point");

}  // namespace

namespace {

/// Porter2Stem for a word known to be letters a–z only.
size_t StemLetters(char* word, size_t length) {
  const int special = Exception1(word, length);
  if (special >= 0) return static_cast<size_t>(special);
  if (length <= 2) return length;

  Word s{word, static_cast<int>(length), 0, 0};
  // Prelude: an initial y, and a y just after a vowel, are consonants: marked Y.
  if (s.w[0] == 'y') s.w[0] = 'Y';
  for (int i = 1; i < s.len; ++i) {
    if (s.w[i] == 'y' && Word::Vowel(s.w[i - 1])) s.w[i] = 'Y';
  }
  s.MarkRegions();
  s.Step1a();
  if (!Exception2(s.w, s.len)) {
    s.Step1b();
    s.Step1c();
    s.Step2();
    s.Step3();
    s.Step4();
    s.Step5();
  }
  for (int i = 0; i < s.len; ++i) {
    if (s.w[i] == 'Y') s.w[i] = 'y';
  }
  return static_cast<size_t>(s.len);
}

}  // namespace

size_t Porter2Stem(char* word, size_t length) {
  for (size_t i = 0; i < length; ++i) {
    if (word[i] < 'a' || word[i] > 'z') return length;
  }
  return StemLetters(word, length);
}

bool NormalizeTerm(std::string_view token, std::string* out) {
  const size_t n = token.size();
  if (n == 0) return false;
  const auto* p = reinterpret_cast<const uint8_t*>(token.data());

  // (c) digits only: drop leading zeros, keeping one digit.
  if (p[0] >= '0' && p[0] <= '9') {
    if (p[0] != '0' || n == 1) return false;
    for (size_t i = 1; i < n; ++i) {
      if (p[i] < '0' || p[i] > '9') return false;
    }
    size_t z = 0;
    while (z + 1 < n && p[z] == '0') ++z;
    out->assign(token.data() + z, n - z);
    return true;
  }

  // (a) fold diacritics, then (b) stem when only a–z remain. The work happens in a stack
  // buffer (tokens are at most 96 bytes; a longer string uses `out`), and `out` is written
  // only when the form differs.
  bool letters = true;
  bool non_ascii = false;
  for (size_t i = 0; i < n; ++i) {
    if (p[i] >= 0x80) non_ascii = true;
    else if (p[i] < 'a' || p[i] > 'z') letters = false;
  }
  if (!non_ascii && (!letters || n <= 2)) return false;
  char stack[128];
  char* o = stack;
  if (n > sizeof(stack)) {
    out->resize(n);
    o = &(*out)[0];
  }
  size_t m = 0;
  bool folded = false;
  if (non_ascii) {
    for (size_t i = 0; i < n;) {
      const uint8_t b = p[i];
      // U+00C0..U+017F are the two-byte sequences C3 80 .. C5 BF.
      if (b >= 0xC3 && b <= 0xC5 && i + 1 < n && (p[i + 1] & 0xC0) == 0x80) {
        const uint32_t cp = (uint32_t(b & 0x1F) << 6) | (p[i + 1] & 0x3F);
        const char* base = kFold[cp - kFoldFirst];
        if (base[0] != '\0') {
          for (; *base != '\0'; ++base) o[m++] = *base;  // one or two letters for two bytes
          folded = true;
          i += 2;
          continue;
        }
      }
      o[m++] = static_cast<char>(b);
      ++i;
    }
    if (!folded) return false;
    letters = true;
    for (size_t i = 0; i < m; ++i) {
      if (o[i] < 'a' || o[i] > 'z') {
        letters = false;
        break;
      }
    }
  } else {
    std::memcpy(o, token.data(), n);
    m = n;
  }
  if (letters) m = StemLetters(o, m);
  if (!folded && m == n && std::memcmp(o, token.data(), n) == 0) return false;
  if (o == stack) {
    out->assign(o, m);
  } else {
    out->resize(m);
  }
  return true;
}

}  // namespace spanguard
