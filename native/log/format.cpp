// The on-disk format of the span log (docs/FORMAT.md): record, checkpoint, segment header
// and extent encodings, segment names, and the UTF-8 check every stored text passes.

#include <cstdio>

#include "log/log_internal.h"

namespace spanguard {

using format::RecordHeader;
using format::RecordSize;
using format::SegmentHeader;
using namespace log_detail;

std::string SegmentFileName(uint64_t first_id) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "seg-%020llu.log", static_cast<unsigned long long>(first_id));
  return buf;
}

// UTF-8 as RFC 3629 defines it: no overlong forms, no surrogates (U+D800..U+DFFF), nothing
// above U+10FFFF, no truncated sequence. ASCII runs are skipped 16 bytes at a time. Returns
// false with *bad_at = offset of the first byte of the first bad sequence.
bool ValidUtf8(const uint8_t* s, size_t n, size_t* bad_at) {
  constexpr uint64_t kHigh = 0x8080808080808080ull;
  size_t i = 0;
  while (i < n) {
    while (i + 16 <= n) {
      uint64_t a, b;
      std::memcpy(&a, s + i, 8);
      std::memcpy(&b, s + i + 8, 8);
      if (((a | b) & kHigh) != 0) break;
      i += 16;
    }
    if (i + 8 <= n) {
      uint64_t a;
      std::memcpy(&a, s + i, 8);
      if ((a & kHigh) == 0) {
        i += 8;
        continue;
      }
    }
    if (i >= n) break;
    const uint8_t c = s[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len;
    uint8_t lo = 0x80, hi = 0xBF;  // allowed range of the second byte
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      if (c == 0xE0) lo = 0xA0;       // overlong
      else if (c == 0xED) hi = 0x9F;  // surrogates
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      if (c == 0xF0) lo = 0x90;       // overlong
      else if (c == 0xF4) hi = 0x8F;  // above U+10FFFF
    } else {
      *bad_at = i;
      return false;
    }
    if (n - i < len || s[i + 1] < lo || s[i + 1] > hi) {
      *bad_at = i;
      return false;
    }
    for (size_t k = 2; k < len; ++k) {
      if ((s[i + k] & 0xC0) != 0x80) {
        *bad_at = i;
        return false;
      }
    }
    i += len;
  }
  return true;
}

uint64_t EncodeRecord(uint8_t* out, uint64_t id, const RecordInput& r, uint8_t internal_flags, uint64_t synced_end) {
  const char* what = nullptr;
  size_t bad_at = 0;
  const uint64_t rs = EncodeRecordImpl(out, id, r, internal_flags, synced_end, &what, &bad_at);
  if (rs == 0) {
    throw NativeError("INVALID_UTF8", std::string(what) + " is not valid UTF-8 (byte " + std::to_string(bad_at) + ")");
  }
  return rs;
}

LogExtent DecodeExtent(const uint8_t* data, size_t size) {
  LogExtent best;
  best.present = data != nullptr && size > 0;
  for (size_t slot = 0; slot < 2 && best.present; ++slot) {
    const size_t at = slot * format::kExtentSlotStride;
    if (size < at + sizeof(format::ExtentSlot)) break;
    format::ExtentSlot x;
    std::memcpy(&x, data + at, sizeof x);
    if (std::memcmp(x.magic, format::kExtentMagic, sizeof x.magic) != 0) continue;
    if (Crc32c(0, data + at, offsetof(format::ExtentSlot, crc)) != x.crc) continue;
    if (x.version != format::kExtentVersion || x.log_tag == 0 || x.log_start == 0 || x.log_start > format::kMaxId ||
        x.seq == 0 || x.durable_next < x.log_start || x.durable_next > format::kMaxId + 1) {
      continue;
    }
    if (best.valid && x.seq <= best.seq) continue;
    best.valid = true;
    best.log_tag = x.log_tag;
    best.log_start = x.log_start;
    best.seq = x.seq;
    best.durable_next = x.durable_next;
  }
  return best;
}

void EncodeExtentSlot(uint8_t* out, const LogExtent& e) {
  format::ExtentSlot x{};
  std::memcpy(x.magic, format::kExtentMagic, sizeof x.magic);
  x.version = format::kExtentVersion;
  x.log_tag = e.log_tag;
  x.log_start = e.log_start;
  x.seq = e.seq;
  x.durable_next = e.durable_next;
  x.crc = Crc32c(0, &x, offsetof(format::ExtentSlot, crc));
  std::memcpy(out, &x, sizeof x);
}

void EncodeCheckpoint(uint8_t* out, uint64_t next_id, uint64_t synced_end) {
  RecordHeader h{};
  h.id = next_id;
  h.kind = format::kKindCheckpoint;
  h.marker = format::kRecordMarker;
  h.synced_end = synced_end;
  h.crc = Crc32c(0, reinterpret_cast<const uint8_t*>(&h) + 4, sizeof h - 4);
  std::memcpy(out, &h, sizeof h);
}

void EncodeSegmentHeader(uint8_t* out, uint64_t first_id, int64_t created_ms, uint64_t unsynced_from,
                         uint64_t log_start, uint64_t log_tag) {
  SegmentHeader sh{};
  sh.unsynced_from = unsynced_from;
  std::memcpy(sh.magic, format::kSegmentMagic, sizeof sh.magic);
  sh.version = log_tag == 0 ? format::kVersionNoExtent : format::kVersion;
  if (log_tag != 0) {
    sh.log_start = log_start;
    sh.log_tag = log_tag;
  }
  sh.header_size = format::kSegmentHeaderSize;
  sh.first_id = first_id;
  sh.created_ms = created_ms;
  sh.crc = Crc32c(0, &sh, offsetof(SegmentHeader, crc));
  std::memcpy(out, &sh, sizeof sh);
}

}  // namespace spanguard
