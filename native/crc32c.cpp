#include "crc32c.h"

#include <cstring>

#if defined(__x86_64__)
#include <cpuid.h>
#include <nmmintrin.h>
#endif

namespace spanguard {

namespace {

constexpr uint32_t kPoly = 0x82F63B78u;  // reflected Castagnoli polynomial

struct Tables {
  uint32_t t[8][256];
  Tables() {
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c >> 1) ^ ((c & 1u) ? kPoly : 0u);
      t[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; ++i) {
      for (int s = 1; s < 8; ++s) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xFF];
    }
  }
};

const Tables& tables() {
  static const Tables k;
  return k;
}

#if defined(__x86_64__)
// Three independent crc32 streams hide the instruction's 3-cycle latency (it issues one
// per cycle): blocks A, B, C of `kBlock` bytes are summed at once, then combined as
// crc(A B C) = shift(shift(crc(A), |B|) ^ crc0(B), |C|) ^ crc0(C), where crc0 starts from 0
// and shift(x, n) appends n zero bytes — a linear map, applied with four 256-entry tables.
// Two block sizes: kLong for long texts, kShort so a ~500-byte record gets the speedup too.
constexpr size_t kLong = 1024;
constexpr size_t kShort = 128;

struct ShiftTables {
  uint32_t t[4][256];
  // Raw CRC register (no pre/post inversion) extended by `len` zero bytes, the same update
  // the crc32 instruction performs.
  // The map is linear over GF(2): shift the 32 one-bit registers (32 × 8·len steps), then
  // each entry is the XOR of the images of its set bits (microseconds, not milliseconds:
  // this runs on a log's first append).
  explicit ShiftTables(size_t len) {
    uint32_t basis[32];
    for (int b = 0; b < 32; ++b) {
      uint32_t r = uint32_t{1} << b;
      for (size_t i = 0; i < len * 8; ++i) r = (r >> 1) ^ ((r & 1u) ? kPoly : 0u);
      basis[b] = r;
    }
    for (int k = 0; k < 4; ++k) {
      for (uint32_t v = 0; v < 256; ++v) {
        uint32_t r = 0;
        for (int b = 0; b < 8; ++b) {
          if ((v >> b) & 1u) r ^= basis[8 * k + b];
        }
        t[k][v] = r;
      }
    }
  }
  uint32_t shift(uint32_t crc) const {
    return t[0][crc & 0xFF] ^ t[1][(crc >> 8) & 0xFF] ^ t[2][(crc >> 16) & 0xFF] ^ t[3][crc >> 24];
  }
};

const ShiftTables& long_shift() {
  static const ShiftTables k(kLong);
  return k;
}
const ShiftTables& short_shift() {
  static const ShiftTables k(kShort);
  return k;
}

template <size_t kBlock>
__attribute__((target("sse4.2"), always_inline)) inline uint64_t crc_3way(uint64_t c0, const uint8_t*& p, size_t& len,
                                                                          const ShiftTables& sh) noexcept {
  while (len >= 3 * kBlock) {
    uint64_t c1 = 0, c2 = 0;
    for (size_t i = 0; i < kBlock; i += 8) {
      uint64_t a, b, c;
      std::memcpy(&a, p + i, 8);
      std::memcpy(&b, p + kBlock + i, 8);
      std::memcpy(&c, p + 2 * kBlock + i, 8);
      c0 = _mm_crc32_u64(c0, a);
      c1 = _mm_crc32_u64(c1, b);
      c2 = _mm_crc32_u64(c2, c);
    }
    c0 = sh.shift(static_cast<uint32_t>(c0)) ^ c1;
    c0 = sh.shift(static_cast<uint32_t>(c0)) ^ c2;
    p += 3 * kBlock;
    len -= 3 * kBlock;
  }
  return c0;
}

__attribute__((target("sse4.2"))) uint32_t crc_hw(uint32_t crc, const uint8_t* p, size_t len) noexcept {
  uint64_t c = crc;
  if (len >= 3 * kShort) {
    c = crc_3way<kLong>(c, p, len, long_shift());
    c = crc_3way<kShort>(c, p, len, short_shift());
  }
  while (len >= 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    c = _mm_crc32_u64(c, v);
    p += 8;
    len -= 8;
  }
  // At most three more steps (4, 2, 1 bytes) instead of up to seven single bytes: a record's
  // header (60 bytes) and its zero padding end here.
  uint32_t c32 = static_cast<uint32_t>(c);
  if (len >= 4) {
    uint32_t v;
    std::memcpy(&v, p, 4);
    c32 = _mm_crc32_u32(c32, v);
    p += 4;
    len -= 4;
  }
  if (len >= 2) {
    uint16_t v;
    std::memcpy(&v, p, 2);
    c32 = _mm_crc32_u16(c32, v);
    p += 2;
    len -= 2;
  }
  if (len > 0) c32 = _mm_crc32_u8(c32, *p);
  return c32;
}

// The same 3-way scheme, copying each word to `dst` as it is summed and OR-ing it into
// `acc` (the caller's ASCII check): the copy rides along with the crc32 instructions.
template <size_t kBlock>
__attribute__((target("sse4.2"), always_inline)) inline uint64_t crc_copy_3way(uint64_t c0, uint8_t*& d, const uint8_t*& p,
                                                                               size_t& len, uint64_t& acc,
                                                                               const ShiftTables& sh) noexcept {
  while (len >= 3 * kBlock) {
    uint64_t c1 = 0, c2 = 0;
    for (size_t i = 0; i < kBlock; i += 8) {
      uint64_t a, b, c;
      std::memcpy(&a, p + i, 8);
      std::memcpy(&b, p + kBlock + i, 8);
      std::memcpy(&c, p + 2 * kBlock + i, 8);
      std::memcpy(d + i, &a, 8);
      std::memcpy(d + kBlock + i, &b, 8);
      std::memcpy(d + 2 * kBlock + i, &c, 8);
      acc |= a | b | c;
      c0 = _mm_crc32_u64(c0, a);
      c1 = _mm_crc32_u64(c1, b);
      c2 = _mm_crc32_u64(c2, c);
    }
    c0 = sh.shift(static_cast<uint32_t>(c0)) ^ c1;
    c0 = sh.shift(static_cast<uint32_t>(c0)) ^ c2;
    p += 3 * kBlock;
    d += 3 * kBlock;
    len -= 3 * kBlock;
  }
  return c0;
}

__attribute__((target("sse4.2"))) uint32_t crc_copy_hw(uint32_t crc, uint8_t* d, const uint8_t* p, size_t len,
                                                       uint8_t* high) noexcept {
  uint64_t c = crc;
  uint64_t acc = 0;
  if (len >= 3 * kShort) {
    c = crc_copy_3way<kLong>(c, d, p, len, acc, long_shift());
    c = crc_copy_3way<kShort>(c, d, p, len, acc, short_shift());
  }
  while (len >= 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    std::memcpy(d, &v, 8);
    acc |= v;
    c = _mm_crc32_u64(c, v);
    p += 8;
    d += 8;
    len -= 8;
  }
  uint32_t c32 = static_cast<uint32_t>(c);
  uint8_t tail = 0;
  while (len > 0) {
    tail |= *p;
    *d++ = *p;
    c32 = _mm_crc32_u8(c32, *p++);
    --len;
  }
  acc |= acc >> 32;
  acc |= acc >> 16;
  acc |= acc >> 8;
  *high = static_cast<uint8_t>(acc) | tail;
  return c32;
}

bool has_sse42() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(1, &a, &b, &c, &d) == 0) return false;
  return (c & bit_SSE4_2) != 0;
}
#endif

}  // namespace

uint32_t Crc32cPortable(uint32_t crc, const void* data, size_t len) noexcept {
  const Tables& tb = tables();
  const auto* p = static_cast<const uint8_t*>(data);
  uint32_t c = ~crc;
  while (len >= 8) {
    uint32_t lo, hi;
    std::memcpy(&lo, p, 4);
    std::memcpy(&hi, p + 4, 4);
    lo ^= c;
    c = tb.t[7][lo & 0xFF] ^ tb.t[6][(lo >> 8) & 0xFF] ^ tb.t[5][(lo >> 16) & 0xFF] ^ tb.t[4][lo >> 24] ^
        tb.t[3][hi & 0xFF] ^ tb.t[2][(hi >> 8) & 0xFF] ^ tb.t[1][(hi >> 16) & 0xFF] ^ tb.t[0][hi >> 24];
    p += 8;
    len -= 8;
  }
  while (len > 0) {
    c = (c >> 8) ^ tb.t[0][(c ^ *p++) & 0xFF];
    --len;
  }
  return ~c;
}

uint32_t Crc32cCopy(uint32_t crc, void* dst, const void* src, size_t len, uint8_t* high) noexcept {
#if defined(__x86_64__)
  static const bool hw = has_sse42();
  if (hw) return ~crc_copy_hw(~crc, static_cast<uint8_t*>(dst), static_cast<const uint8_t*>(src), len, high);
#endif
  if (len > 0) std::memcpy(dst, src, len);
  uint8_t h = 0;
  const auto* s = static_cast<const uint8_t*>(src);
  for (size_t i = 0; i < len; ++i) h |= s[i];
  *high = h;
  return Crc32cPortable(crc, dst, len);
}

uint32_t Crc32c(uint32_t crc, const void* data, size_t len) noexcept {
#if defined(__x86_64__)
  static const bool hw = has_sse42();
  if (hw) return ~crc_hw(~crc, static_cast<const uint8_t*>(data), len);
#endif
  return Crc32cPortable(crc, data, len);
}

}  // namespace spanguard
