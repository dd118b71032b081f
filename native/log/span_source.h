// The read interface the indexes consume. SpanLog implements it; the lexical and vector
// indexes are derived data that catch up from it, so "index from the log" is the only
// path by which anything gets indexed (normal ingest, reopen catch-up and repair alike).
#pragma once

#include <cstdint>

namespace spanguard {

/// Kinds and flags as stored in a record header (docs/FORMAT.md).
enum class RecordKind : uint8_t { kRaw = 1, kSummary = 2, kEvent = 3 };
constexpr uint8_t kFlagAnchor = 1;

/// A borrowed view of one record. `text` points into mapped memory: valid only until the
/// next call that writes to or remaps the source, and only on the thread that owns it
/// (the JS main thread). Copy before keeping.
struct SpanView {
  uint64_t id = 0;
  RecordKind kind = RecordKind::kRaw;
  uint8_t flags = 0;
  uint8_t role = 0;
  int64_t turn_start = 0;
  int64_t turn_end = 0;
  int64_t timestamp_ms = 0;
  uint32_t tokens = 0;
  const char* text = nullptr;  ///< UTF-8, not NUL-terminated
  uint32_t text_len = 0;
  const char* meta = nullptr;  ///< the record's metadata (JSON bytes), empty when none
  uint32_t meta_len = 0;
};

class SpanSource {
 public:
  virtual ~SpanSource() = default;
  /// Lowest id held (ids below it were never written in this store).
  virtual uint64_t first_id() const = 0;
  /// One past the highest id written.
  virtual uint64_t next_id() const = 0;
  /// Fills `out` for `id`; false if the id is not held.
  virtual bool Read(uint64_t id, SpanView* out) const = 0;
};

}  // namespace spanguard
