// Structure-aware libFuzzer target: builds a segment the way the writer does (batches,
// batch-continues flags, synced_end stamps, syncs at random batch boundaries) from the
// fuzzer's choices, damages it one way, and checks RecoverSegment against a model of what
// docs/FORMAT.md promises:
//   - an undamaged segment is clean with every record;
//   - a truncation anywhere is never corrupt and keeps exactly the whole batches before it;
//   - a flipped bit is never missed: corrupt at the damaged record when a later record
//     proves it was durable, else a torn tail cut back to the batch start;
//   - zero-fill after the end is a torn tail that keeps everything;
//   - "power loss": zeroing, garbling or cutting bytes only after the writer's last durable
//     point is never corrupt and keeps every record before that point.
// Garbage comes from a PRNG seeded by the input, not from the input bytes, so the fuzzer's
// comparison tracing cannot steer it into forging a CRC (a real power loss cannot either).
//
// Build and run (see recover_fuzz.cpp for the toolchain):
//   clang++ -std=c++17 -O1 -g -fsanitize=fuzzer,address,undefined \
//     -Inative \
//     fuzz/recover_model_fuzz.cpp native/log/*.cpp native/common/crc32c.cpp native/common/io_seam.cpp \
//     -o build/recover_model_fuzz
//   mkdir -p build/model-corpus && build/recover_model_fuzz -max_total_time=120 build/model-corpus
#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "log/span_log.h"

using spanguard::RecordInput;
using spanguard::RecoverSegment;
using spanguard::RecoveryOutcome;
using spanguard::RecoveryResult;

static void Check(bool ok) {
  if (!ok) __builtin_trap();
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  const uint64_t first_id = 1 + in.ConsumeIntegralInRange<uint64_t>(0, 1000);
  std::vector<uint8_t> seg(64);
  spanguard::EncodeSegmentHeader(seg.data(), first_id, 0);

  uint64_t durable = 64;
  uint64_t id = first_id;
  std::vector<uint64_t> batch_end{64}, batch_records{0};
  std::vector<uint64_t> rec_start, rec_synced;
  std::string text, meta;
  const int batches = in.ConsumeIntegralInRange(0, 8);
  for (int b = 0; b < batches; ++b) {
    const int k = in.ConsumeIntegralInRange(1, 4);
    for (int j = 0; j < k; ++j) {
      RecordInput r;
      r.kind = static_cast<uint8_t>(1 + in.ConsumeIntegralInRange(0, 2));
      r.flags = in.ConsumeBool() ? 1 : 0;
      r.role = in.ConsumeIntegral<uint8_t>();
      r.turn_start = static_cast<int64_t>(id);
      r.turn_end = static_cast<int64_t>(id + in.ConsumeIntegralInRange(0, 3));
      r.timestamp_ms = in.ConsumeIntegral<int32_t>();
      r.tokens = in.ConsumeIntegral<uint16_t>();
      // Letters only: payloads can never contain a record marker ("1GPS").
      text.assign(in.ConsumeIntegralInRange<size_t>(0, 40), static_cast<char>('a' + (id % 26)));
      meta.assign(in.ConsumeBool() ? in.ConsumeIntegralInRange<size_t>(1, 12) : 0, 'z');
      r.text = text.data();
      r.text_len = text.size();
      r.meta = meta.data();
      r.meta_len = meta.size();
      const uint64_t at = seg.size();
      seg.resize(at + spanguard::format::RecordSize(text.size() + meta.size()));
      spanguard::EncodeRecord(seg.data() + at, id, r, j + 1 < k ? spanguard::format::kFlagBatchContinues : 0, durable);
      rec_start.push_back(at);
      rec_synced.push_back(durable);
      ++id;
    }
    batch_end.push_back(seg.size());
    batch_records.push_back(id - first_id);
    if (in.ConsumeBool()) durable = seg.size();  // an fdatasync completed after this batch
  }
  const uint64_t total = id - first_id;
  const uint64_t full = seg.size();
  // The last whole batch ending at or before `end`.
  auto committed = [&](uint64_t end) {
    size_t i = batch_end.size() - 1;
    while (batch_end[i] > end) --i;
    return i;
  };

  const RecoveryResult clean = RecoverSegment(seg.data(), seg.size());
  Check(clean.outcome == RecoveryOutcome::kClean && clean.records == total && clean.valid_end == full);
  Check(clean.first_id == first_id);

  std::mt19937_64 rng(in.ConsumeIntegral<uint64_t>());
  switch (in.ConsumeIntegralInRange(0, 3)) {
    case 0: {  // truncation
      const uint64_t len = in.ConsumeIntegralInRange<uint64_t>(64, full);
      const RecoveryResult r = RecoverSegment(seg.data(), len);
      const size_t c = committed(len);
      Check(r.outcome != RecoveryOutcome::kCorrupt);
      Check(r.valid_end == batch_end[c] && r.records == batch_records[c]);
      Check((r.outcome == RecoveryOutcome::kClean) == (len == batch_end[c]));
      break;
    }
    case 1: {  // one flipped bit in the record area
      if (full == 64) break;
      const uint64_t p = in.ConsumeIntegralInRange<uint64_t>(64, full - 1);
      seg[p] ^= static_cast<uint8_t>(1u << in.ConsumeIntegralInRange(0, 7));
      const size_t k =
          static_cast<size_t>(std::upper_bound(rec_start.begin(), rec_start.end(), p) - rec_start.begin()) - 1;
      const uint64_t x = rec_start[k];
      bool proven = false;
      for (size_t j = k + 1; j < rec_start.size(); ++j) proven |= rec_synced[j] > x;
      const RecoveryResult r = RecoverSegment(seg.data(), seg.size());
      if (proven) {
        Check(r.outcome == RecoveryOutcome::kCorrupt && r.error_offset == static_cast<int64_t>(x));
      } else {
        const size_t c = committed(x);
        Check(r.outcome == RecoveryOutcome::kTornTail);
        Check(r.valid_end == batch_end[c] && r.records == batch_records[c]);
      }
      break;
    }
    case 2: {  // zero-fill past the end
      seg.resize(full + in.ConsumeIntegralInRange<size_t>(1, 300), 0);
      const RecoveryResult r = RecoverSegment(seg.data(), seg.size());
      Check(r.outcome == RecoveryOutcome::kTornTail && r.records == total && r.valid_end == full);
      break;
    }
    default: {  // power loss: damage only after the last durable point
      if (durable == full) break;
      const int pieces = in.ConsumeIntegralInRange(1, 4);
      for (int i = 0; i < pieces; ++i) {
        const uint64_t from = in.ConsumeIntegralInRange<uint64_t>(durable, full - 1);
        const uint64_t to = std::min<uint64_t>(full, from + in.ConsumeIntegralInRange<uint64_t>(1, 600));
        const bool garble = in.ConsumeBool();
        for (uint64_t q = from; q < to; ++q) seg[q] = garble ? static_cast<uint8_t>(rng()) : 0;
      }
      uint64_t len = full;
      if (in.ConsumeBool()) len = in.ConsumeIntegralInRange<uint64_t>(durable, full);
      const RecoveryResult r = RecoverSegment(seg.data(), len);
      const size_t c = committed(durable);
      Check(r.outcome != RecoveryOutcome::kCorrupt);
      Check(r.valid_end >= durable && r.records >= batch_records[c]);
      break;
    }
  }
  return 0;
}
