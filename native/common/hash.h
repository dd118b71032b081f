// The one 64-bit finalizer every engine part hashes with (murmur3's fmix64): it spreads
// the bits of an FNV-style running hash so the low bits pick buckets and signs evenly.
#pragma once

#include <cstdint>

namespace spanguard {

inline uint64_t Fmix64(uint64_t h) noexcept {
  h ^= h >> 33;
  h *= 0xFF51AFD7ED558CCDull;
  h ^= h >> 33;
  h *= 0xC4CEB9FE1A85EC53ull;
  h ^= h >> 33;
  return h;
}

}  // namespace spanguard
