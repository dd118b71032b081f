// CRC32C (Castagnoli), the checksum of every segment header and record (docs/FORMAT.md).
// SSE4.2 `crc32` instruction when the CPU has it (checked once), slicing-by-8 tables
// otherwise; both give the same value, which tests/fuzzing compare.
#pragma once

#include <cstddef>
#include <cstdint>

namespace spanguard {

/// Extends `crc` (0 to start) over `len` bytes. Standard CRC32C: Crc32c(0, "123456789", 9) == 0xE3069283.
uint32_t Crc32c(uint32_t crc, const void* data, size_t len) noexcept;

/// The portable path, exposed so tests can check it agrees with the hardware one.
uint32_t Crc32cPortable(uint32_t crc, const void* data, size_t len) noexcept;

}  // namespace spanguard
