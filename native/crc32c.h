// CRC32C (Castagnoli), the checksum of every segment header and record (docs/FORMAT.md).
// SSE4.2 `crc32` instruction when the CPU has it (checked once), slicing-by-8 tables
// otherwise; both give the same value, which tests/fuzzing compare.
#pragma once

#include <cstddef>
#include <cstdint>

namespace spanguard {

/// Extends `crc` (0 to start) over `len` bytes. Standard CRC32C: Crc32c(0, "123456789", 9) == 0xE3069283.
uint32_t Crc32c(uint32_t crc, const void* data, size_t len) noexcept;

/// Copies `len` bytes from `src` to `dst` and extends `crc` over them in the same pass
/// (one read of the source). Sets *high to the OR of every byte, so bit 7 clear means the
/// bytes were all ASCII. Same value as Crc32c over the copied bytes.
uint32_t Crc32cCopy(uint32_t crc, void* dst, const void* src, size_t len, uint8_t* high) noexcept;

/// The portable path, exposed so tests can check it agrees with the hardware one.
uint32_t Crc32cPortable(uint32_t crc, const void* data, size_t len) noexcept;

}  // namespace spanguard
