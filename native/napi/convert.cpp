#include "napi/convert.h"

#include <cstdint>
#include <cstring>

namespace spanguard {

size_t Utf16ToUtf8(const char16_t* s, size_t units, char* o, size_t* bad_at) {
  char* const start = o;
  size_t i = 0;
  while (i < units) {
    // ASCII fast path, four units at a time.
    if (i + 4 <= units) {
      uint64_t quad;
      std::memcpy(&quad, s + i, 8);
      if ((quad & 0xFF80FF80FF80FF80ull) == 0) {
        o[0] = static_cast<char>(s[i]);
        o[1] = static_cast<char>(s[i + 1]);
        o[2] = static_cast<char>(s[i + 2]);
        o[3] = static_cast<char>(s[i + 3]);
        o += 4;
        i += 4;
        continue;
      }
    }
    uint32_t c = s[i];
    if (c < 0x80) {
      *o++ = static_cast<char>(c);
    } else if (c < 0x800) {
      *o++ = static_cast<char>(0xC0 | (c >> 6));
      *o++ = static_cast<char>(0x80 | (c & 0x3F));
    } else if (c >= 0xD800 && c <= 0xDFFF) {
      if (c > 0xDBFF || i + 1 >= units || s[i + 1] < 0xDC00 || s[i + 1] > 0xDFFF) {
        *bad_at = i;
        return SIZE_MAX;
      }
      uint32_t cp = 0x10000 + ((c - 0xD800) << 10) + (s[i + 1] - 0xDC00);
      ++i;
      *o++ = static_cast<char>(0xF0 | (cp >> 18));
      *o++ = static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      *o++ = static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      *o++ = static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      *o++ = static_cast<char>(0xE0 | (c >> 12));
      *o++ = static_cast<char>(0x80 | ((c >> 6) & 0x3F));
      *o++ = static_cast<char>(0x80 | (c & 0x3F));
    }
    ++i;
  }
  return static_cast<size_t>(o - start);
}

}  // namespace spanguard
