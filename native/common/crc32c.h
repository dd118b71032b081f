// CRC32C (Castagnoli), the checksum of every segment header and record (docs/FORMAT.md).
// Four implementations, all giving the same value (tests compare each with the tables on
// random lengths and alignments): slicing-by-8 tables; the SSE4.2 `crc32` instruction in
// three interleaved streams; PCLMULQDQ folding over 4 × 128-bit lanes; VPCLMULQDQ folding
// over 512-bit registers (AVX-512). The best the CPU supports is chosen once per process
// (__builtin_cpu_supports); SPANGUARD_CRC32C=table|sse42|clmul|vpclmul forces one (ignored
// if unsupported). The folding paths hand short inputs (< 64 / 128 bytes) to the next one down.
// With them, the copy the record encoder uses, which also reports non-ASCII bytes.
#pragma once

#include <cstddef>
#include <cstdint>

namespace spanguard {

/// Extends `crc` (0 to start) over `len` bytes. Standard CRC32C: Crc32c(0, "123456789", 9) == 0xE3069283.
uint32_t Crc32c(uint32_t crc, const void* data, size_t len) noexcept;

/// Copies `len` bytes from `src` to `dst` (no overlap) and tells whether any of them has
/// bit 7 set: false means all ASCII, which is valid UTF-8 with no further check. The record
/// encoder copies a text with this, then runs one Crc32c over the whole record: one CRC
/// per record, not one per part (header, text, meta, padding), each with its own fold set-up
/// and reduction — 41 vs 27 ns a ~450-byte record in cache (standalone loop).
bool CopyFindHigh(void* dst, const void* src, size_t len) noexcept;

/// The portable path, exposed so tests can check it agrees with the hardware one.
uint32_t Crc32cPortable(uint32_t crc, const void* data, size_t len) noexcept;

enum class Crc32cImpl : int { kTable = 0, kSse42 = 1, kClmul = 2, kVpclmul = 3 };
const char* Crc32cImplName(Crc32cImpl which) noexcept;
bool Crc32cImplSupported(Crc32cImpl which) noexcept;
/// The implementation Crc32c and CopyFindHigh use in this process.
Crc32cImpl Crc32cActiveImpl() noexcept;
/// One implementation explicitly (tests); an unsupported one falls back to the tables.
uint32_t Crc32cWith(Crc32cImpl which, uint32_t crc, const void* data, size_t len) noexcept;
/// The copy that goes with one implementation: AVX-512 with `vpclmul`, 8-byte words otherwise.
bool CopyFindHighWith(Crc32cImpl which, void* dst, const void* src, size_t len) noexcept;

}  // namespace spanguard
