// Porter2 (Snowball English) and the term normal form; see stemmer.h. Each step below
// quotes the published rule it implements. "Longest suffix among …" is literal: the
// longest listed suffix the word ends with is chosen, and when its condition fails the
// step does nothing (it never falls back to a shorter suffix).
#include "stemmer.h"

#include <cstdint>
#include <cstring>

namespace spanguard {

namespace {

// The working word: letters a–z plus 'Y' (a y marked as a consonant by the prelude).
struct Word {
  char* w;
  int len;
  int p1;  // R1 = [p1, len)
  int p2;  // R2 = [p2, len)

  static bool Vowel(char c) { return c == 'a' || c == 'e' || c == 'i' || c == 'o' || c == 'u' || c == 'y'; }

  bool Ends(const char* suffix, int n) const { return len >= n && std::memcmp(w + len - n, suffix, size_t(n)) == 0; }

  /// The longest of `suffixes` (listed longest first) the word ends with: its length, or 0.
  template <size_t N>
  int Longest(const char* const (&suffixes)[N]) const {
    for (const char* s : suffixes) {
      const int n = static_cast<int>(std::strlen(s));
      if (Ends(s, n)) return n;
    }
    return 0;
  }

  /// Replaces the last `n` letters by `repl`.
  void Replace(int n, const char* repl) {
    const int m = static_cast<int>(std::strlen(repl));
    std::memcpy(w + len - n, repl, size_t(m));
    len += m - n;
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

  /// The position just past the first non-vowel that follows a vowel, from `from`; -1 if none.
  int AfterVowelConsonant(int from) const {
    int i = from;
    while (i < len && !Vowel(w[i])) ++i;
    while (i < len && Vowel(w[i])) ++i;
    return i < len ? i + 1 : -1;
  }

  // Step 1a. sses → ss; ied, ies → i if preceded by more than one letter, else ie; s →
  // delete if the preceding word part contains a vowel not immediately before the s;
  // us, ss → nothing.
  void Step1a() {
    if (Ends("sses", 4)) {
      len -= 2;
    } else if (Ends("ied", 3) || Ends("ies", 3)) {
      len -= len - 3 > 1 ? 2 : 1;
    } else if (Ends("us", 2) || Ends("ss", 2)) {
      // unchanged
    } else if (Ends("s", 1)) {
      if (HasVowelBefore(len - 2)) len -= 1;
    }
  }

  // Step 1b. eed, eedly → ee if in R1; ed, edly, ing, ingly → delete if the preceding
  // part contains a vowel, and then: at, bl, iz → add e; a double (bb dd ff gg mm nn pp
  // rr tt) → drop its last letter; a short word (R1 empty, ends in a short syllable) →
  // add e.
  void Step1b() {
    static const char* const kSuffixes[] = {"eedly", "ingly", "edly", "eed", "ing", "ed"};
    const int n = Longest(kSuffixes);
    if (n == 0) return;
    const int start = len - n;
    if ((n == 5 && Ends("eedly", 5)) || (n == 3 && Ends("eed", 3))) {
      if (start >= p1) Replace(n, "ee");
      return;
    }
    if (!HasVowelBefore(start)) return;
    len = start;
    if (Ends("at", 2) || Ends("bl", 2) || Ends("iz", 2)) {
      w[len++] = 'e';
    } else if (len >= 2 && w[len - 1] == w[len - 2] &&
               std::strchr("bdfgmnprt", w[len - 1]) != nullptr) {
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
    if (len == 0) return;
    struct Rule {
      const char* suffix;
      const char* repl;
    };
    // By last letter, each group longest first.
    static const Rule kL[] = {{"ational", "ate"}, {"tional", "tion"}};
    static const Rule kI[] = {{"biliti", "ble"}, {"lessli", "less"}, {"aliti", "al"}, {"entli", "ent"},
                              {"fulli", "ful"},  {"iviti", "ive"},   {"ousli", "ous"}, {"abli", "able"},
                              {"alli", "al"},    {"anci", "ance"},   {"enci", "ence"}, {"bli", "ble"},
                              {"ogi", "og"},     {"li", ""}};
    static const Rule kN[] = {{"ization", "ize"}, {"ation", "ate"}};
    static const Rule kR[] = {{"izer", "ize"}, {"ator", "ate"}};
    static const Rule kM[] = {{"alism", "al"}};
    static const Rule kS[] = {{"fulness", "ful"}, {"iveness", "ive"}, {"ousness", "ous"}};
    const Rule* rules = nullptr;
    size_t count = 0;
    switch (w[len - 1]) {
      case 'l': rules = kL, count = sizeof(kL) / sizeof(Rule); break;
      case 'i': rules = kI, count = sizeof(kI) / sizeof(Rule); break;
      case 'n': rules = kN, count = sizeof(kN) / sizeof(Rule); break;
      case 'r': rules = kR, count = sizeof(kR) / sizeof(Rule); break;
      case 'm': rules = kM, count = sizeof(kM) / sizeof(Rule); break;
      case 's': rules = kS, count = sizeof(kS) / sizeof(Rule); break;
      default: return;
    }
    for (size_t r = 0; r < count; ++r) {
      const int n = static_cast<int>(std::strlen(rules[r].suffix));
      if (!Ends(rules[r].suffix, n)) continue;
      const int start = len - n;
      if (start < p1) return;
      if (std::strcmp(rules[r].suffix, "ogi") == 0) {
        if (start >= 1 && w[start - 1] == 'l') Replace(n, "og");
      } else if (std::strcmp(rules[r].suffix, "li") == 0) {
        if (start >= 1 && std::strchr("cdeghkmnrt", w[start - 1]) != nullptr) len = start;
      } else {
        Replace(n, rules[r].repl);
      }
      return;
    }
  }

  // Step 3, in R1: tional → tion; ational → ate; alize → al; icate, iciti, ical → ic;
  // ful, ness → delete; ative → delete if in R2.
  void Step3() {
    static const char* const kSuffixes[] = {"ational", "tional", "alize", "icate", "iciti", "ative", "ical", "ness", "ful"};
    const int n = Longest(kSuffixes);
    if (n == 0) return;
    const int start = len - n;
    if (start < p1) return;
    if (Ends("ational", 7)) {
      Replace(n, "ate");
    } else if (Ends("tional", 6)) {
      Replace(n, "tion");
    } else if (Ends("alize", 5)) {
      Replace(n, "al");
    } else if (Ends("ative", 5)) {
      if (start >= p2) len = start;
    } else if (Ends("icate", 5) || Ends("iciti", 5) || Ends("ical", 4)) {
      Replace(n, "ic");
    } else {
      len = start;  // ful, ness
    }
  }

  // Step 4, in R2: al ance ence er ic able ible ant ement ment ent ism ate iti ous ive ize →
  // delete; ion → delete if preceded by s or t.
  void Step4() {
    static const char* const kSuffixes[] = {"ement", "ance", "ence", "able", "ible", "ment", "ant", "ent", "ism",
                                            "ate",   "iti",  "ous",  "ive",  "ize",  "ion",  "al",  "er",  "ic"};
    const int n = Longest(kSuffixes);
    if (n == 0) return;
    const int start = len - n;
    if (start < p2) return;
    if (Ends("ion", 3)) {
      if (start >= 1 && (w[start - 1] == 's' || w[start - 1] == 't')) len = start;
    } else {
      len = start;
    }
  }

  // Step 5: e → delete if in R2, or in R1 and not preceded by a short syllable; l →
  // delete if in R2 and preceded by l.
  void Step5() {
    if (len == 0) return;
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
  struct Entry {
    const char* word;
    const char* stem;
  };
  static const Entry kEntries[] = {
      {"skis", "ski"},   {"skies", "sky"},   {"dying", "die"}, {"lying", "lie"},   {"tying", "tie"},
      {"idly", "idl"},   {"gently", "gentl"}, {"ugly", "ugli"}, {"early", "earli"}, {"only", "onli"},
      {"singly", "singl"}, {"sky", "sky"},   {"news", "news"}, {"howe", "howe"},   {"atlas", "atlas"},
      {"cosmos", "cosmos"}, {"bias", "bias"}, {"andes", "andes"},
  };
  if (length > 6) return -1;
  for (const Entry& e : kEntries) {
    if (std::strlen(e.word) == length && std::memcmp(w, e.word, length) == 0) {
      const size_t n = std::strlen(e.stem);
      std::memcpy(w, e.stem, n);
      return static_cast<int>(n);
    }
  }
  return -1;
}

/// exception2 (checked after step 1a): words left as they are.
bool Exception2(const char* w, int length) {
  static const char* const kWords[] = {"inning", "outing", "canning", "herring", "earring", "proceed", "exceed", "succeed"};
  if (length < 6 || length > 7) return false;
  for (const char* s : kWords) {
    if (std::strlen(s) == size_t(length) && std::memcmp(w, s, size_t(length)) == 0) return true;
  }
  return false;
}

// Base letters of U+00C0..U+017F (Latin-1 Supplement letters and Latin Extended-A), one or
// two ASCII letters each; "" for the two symbols × ÷. Capitals map to lowercase letters.
constexpr uint32_t kFoldFirst = 0xC0;
constexpr uint32_t kFoldLast = 0x17F;
const char* const kFold[] = {
    // U+00C0 À Á Â Ã Ä Å Æ Ç È É Ê Ë Ì Í Î Ï
    "a", "a", "a", "a", "a", "a", "ae", "c", "e", "e", "e", "e", "i", "i", "i", "i",
    // U+00D0 Ð Ñ Ò Ó Ô Õ Ö × Ø Ù Ú Û Ü Ý Þ ß
    "d", "n", "o", "o", "o", "o", "o", "", "o", "u", "u", "u", "u", "y", "th", "ss",
    // U+00E0 à á â ã ä å æ ç è é ê ë ì í î ï
    "a", "a", "a", "a", "a", "a", "ae", "c", "e", "e", "e", "e", "i", "i", "i", "i",
    // U+00F0 ð ñ ò ó ô õ ö ÷ ø ù ú û ü ý þ ÿ
    "d", "n", "o", "o", "o", "o", "o", "", "o", "u", "u", "u", "u", "y", "th", "y",
    // U+0100 Ā ā Ă ă Ą ą Ć ć Ĉ ĉ Ċ ċ Č č Ď ď
    "a", "a", "a", "a", "a", "a", "c", "c", "c", "c", "c", "c", "c", "c", "d", "d",
    // U+0110 Đ đ Ē ē Ĕ ĕ Ė ė Ę ę Ě ě Ĝ ĝ Ğ ğ
    "d", "d", "e", "e", "e", "e", "e", "e", "e", "e", "e", "e", "g", "g", "g", "g",
    // U+0120 Ġ ġ Ģ ģ Ĥ ĥ Ħ ħ Ĩ ĩ Ī ī Ĭ ĭ Į į
    "g", "g", "g", "g", "h", "h", "h", "h", "i", "i", "i", "i", "i", "i", "i", "i",
    // U+0130 İ ı Ĳ ĳ Ĵ ĵ Ķ ķ ĸ Ĺ ĺ Ļ ļ Ľ ľ Ŀ
    "i", "i", "ij", "ij", "j", "j", "k", "k", "k", "l", "l", "l", "l", "l", "l", "l",
    // U+0140 ŀ Ł ł Ń ń Ņ ņ Ň ň ŉ Ŋ ŋ Ō ō Ŏ ŏ
    "l", "l", "l", "n", "n", "n", "n", "n", "n", "n", "n", "n", "o", "o", "o", "o",
    // U+0150 Ő ő Œ œ Ŕ ŕ Ŗ ŗ Ř ř Ś ś Ŝ ŝ Ş ş
    "o", "o", "oe", "oe", "r", "r", "r", "r", "r", "r", "s", "s", "s", "s", "s", "s",
    // U+0160 Š š Ţ ţ Ť ť Ŧ ŧ Ũ ũ Ū ū Ŭ ŭ Ů ů
    "s", "s", "t", "t", "t", "t", "t", "t", "u", "u", "u", "u", "u", "u", "u", "u",
    // U+0170 Ű ű Ų ų Ŵ ŵ Ŷ ŷ Ÿ Ź ź Ż ż Ž ž ſ
    "u", "u", "u", "u", "w", "w", "y", "y", "y", "z", "z", "z", "z", "z", "z", "s",
};
static_assert(sizeof(kFold) / sizeof(kFold[0]) == kFoldLast - kFoldFirst + 1, "one entry per code point");

}  // namespace

size_t Porter2Stem(char* word, size_t length) {
  for (size_t i = 0; i < length; ++i) {
    if (word[i] < 'a' || word[i] > 'z') return length;
  }
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

bool NormalizeTerm(std::string_view token, std::string* out) {
  const size_t n = token.size();
  if (n == 0) return false;
  const auto* p = reinterpret_cast<const uint8_t*>(token.data());

  // (c) digits only: drop leading zeros, keeping one digit.
  if (p[0] >= '0' && p[0] <= '9') {
    size_t i = 0;
    while (i < n && p[i] >= '0' && p[i] <= '9') ++i;
    if (i < n || p[0] != '0' || n == 1) return false;
    size_t z = 0;
    while (z + 1 < n && p[z] == '0') ++z;
    out->assign(token.data() + z, n - z);
    return true;
  }

  // (a) fold diacritics, then (b) stem when only a–z remain.
  bool letters = true;
  bool non_ascii = false;
  for (size_t i = 0; i < n; ++i) {
    if (p[i] >= 0x80) non_ascii = true;
    else if (p[i] < 'a' || p[i] > 'z') letters = false;
  }
  if (!non_ascii && !letters) return false;
  out->resize(n);
  char* o = &(*out)[0];
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
  if (letters) m = Porter2Stem(o, m);
  out->resize(m);
  return folded || m != n || std::memcmp(o, token.data(), n) != 0;
}

}  // namespace spanguard
