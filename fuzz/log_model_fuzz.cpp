// Structure-aware libFuzzer target for recovery across segments (docs/FORMAT.md, "Across
// segments"): builds a whole log the way the writer does — batches, rolls at a small
// segment size, `none` rolls that stamp the new header with the first id not yet durable
// (or `sync`/`group` rolls that fdatasync first), flushes at random batch boundaries, a
// clean close's checkpoint — then simulates a power loss: in every file independently
// (the disk may reorder writes across files), bytes past that file's last fdatasync are
// kept, zeroed or garbled in random ranges and the file may lose its size extension.
// It then runs RecoverSegment on each file and PlanLogRecovery over them, and checks:
//   - the plan is never "corrupt": a power loss only ever damages unsynced bytes;
//   - the kept records are a prefix of what was written, ids contiguous, every kept byte
//     as written, and every record flushed before the crash is kept;
//   - segments are dropped only after the one whose records were lost.
// Undamaged, every segment is clean and the plan keeps all of them.
// Garbage comes from a PRNG seeded by the input (as in recover_model_fuzz.cpp).
//
// Build and run (see CMakeLists.txt, SPANGUARD_FUZZ):
//   cmake --build build-fuzz --target log_model_fuzz
//   mkdir -p build/log-model-corpus && build-fuzz/log_model_fuzz -max_total_time=120 build/log-model-corpus
#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "log/span_log.h"

using spanguard::LogRecoveryPlan;
using spanguard::PlanLogRecovery;
using spanguard::RecordInput;
using spanguard::RecoverSegment;
using spanguard::RecoveryOutcome;
using spanguard::SegmentFinding;

static void Check(bool ok) {
  if (!ok) __builtin_trap();
}

namespace {

struct ModelSegment {
  uint64_t first_id = 0;
  std::vector<uint8_t> bytes;
  /// Bytes of this file that an fdatasync has made durable (the header at creation).
  uint64_t synced = 64;
  std::vector<uint64_t> record_start;  ///< offset of each id-bearing record
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  const bool none = in.ConsumeBool();
  const uint64_t roll_at = 64 + in.ConsumeIntegralInRange<uint64_t>(100, 1200);
  std::vector<ModelSegment> segs(1);
  segs[0].first_id = 1;
  segs[0].bytes.resize(64);
  spanguard::EncodeSegmentHeader(segs[0].bytes.data(), 1, 0, 0);

  uint64_t id = 1;
  uint64_t durable_end = 64;  // of the last segment; stamped into records
  uint64_t unsynced_from = 0;
  bool needs_mark = false;    // SpanLog::needs_mark_
  uint64_t flushed_next = 1;  // every id below this was durable at the crash
  std::string text;

  // A checkpoint after the last segment's records, stamped `synced_end`, not synced.
  auto checkpoint = [&](uint64_t synced_end) {
    ModelSegment& last = segs.back();
    const uint64_t at = last.bytes.size();
    last.bytes.resize(at + spanguard::format::kRecordHeaderSize);
    spanguard::EncodeCheckpoint(last.bytes.data() + at, id, synced_end);
  };
  auto flush = [&]() {
    for (ModelSegment& s : segs) s.synced = s.bytes.size();
    durable_end = segs.back().bytes.size();
    unsynced_from = 0;
    flushed_next = id;
    // SpanLog::FinishSync: every sealed segment durable, so a checkpoint says so.
    if (needs_mark) checkpoint(durable_end);
    needs_mark = false;
  };
  auto id_at = [&](size_t seg, uint64_t off) {
    const ModelSegment& s = segs[seg];
    const auto it = std::lower_bound(s.record_start.begin(), s.record_start.end(), off);
    return s.first_id + static_cast<uint64_t>(it - s.record_start.begin());
  };

  const int batches = in.ConsumeIntegralInRange(0, 24);
  for (int b = 0; b < batches; ++b) {
    const int k = in.ConsumeIntegralInRange(1, 4);
    std::vector<std::string> texts(k);
    uint64_t batch_bytes = 0;
    for (int j = 0; j < k; ++j) {
      // Letters only: payloads can never contain a record marker ("1GPS").
      texts[j].assign(in.ConsumeIntegralInRange<size_t>(0, 120), static_cast<char>('a' + ((id + j) % 26)));
      batch_bytes += spanguard::format::RecordSize(texts[j].size());
    }
    ModelSegment* last = &segs.back();
    if (!last->record_start.empty() && last->bytes.size() + batch_bytes > roll_at) {
      // The roll (SpanLog::SealForRoll + CreateSegment).
      uint64_t stamp = 0;
      if (!none) {
        last->synced = last->bytes.size();
      } else {
        if (unsynced_from == 0 && durable_end < last->bytes.size()) {
          unsynced_from = id_at(segs.size() - 1, durable_end);
        }
        stamp = unsynced_from;
        if (stamp != 0) needs_mark = true;
      }
      ModelSegment next;
      next.first_id = id;
      next.bytes.resize(64);
      spanguard::EncodeSegmentHeader(next.bytes.data(), id, 0, stamp);
      segs.push_back(std::move(next));
      durable_end = 64;
      last = &segs.back();
    }
    for (int j = 0; j < k; ++j) {
      RecordInput r;
      r.kind = 1;
      r.turn_start = static_cast<int64_t>(id);
      r.turn_end = static_cast<int64_t>(id);
      r.text = texts[j].data();
      r.text_len = texts[j].size();
      const uint64_t at = last->bytes.size();
      last->bytes.resize(at + spanguard::format::RecordSize(texts[j].size()));
      spanguard::EncodeRecord(last->bytes.data() + at, id, r, j + 1 < k ? spanguard::format::kFlagBatchContinues : 0,
                              durable_end);
      last->record_start.push_back(at);
      ++id;
    }
    if (!none || in.ConsumeIntegralInRange(0, 5) == 0) flush();  // sync/group: each batch durable
  }
  if (in.ConsumeIntegralInRange(0, 3) == 0) {
    // A clean close: everything synced, then a checkpoint in the last segment.
    flush();
    checkpoint(segs.back().bytes.size());
    segs.back().synced = segs.back().bytes.size();
  }

  auto findings_of = [](const std::vector<std::vector<uint8_t>>& files, const std::vector<ModelSegment>& model) {
    std::vector<SegmentFinding> out(files.size());
    for (size_t i = 0; i < files.size(); ++i) {
      out[i].first_id = model[i].first_id;
      out[i].result = RecoverSegment(files[i].data(), files[i].size());
    }
    return out;
  };

  std::vector<std::vector<uint8_t>> files;
  for (const ModelSegment& s : segs) files.push_back(s.bytes);
  {
    const LogRecoveryPlan whole = PlanLogRecovery(findings_of(files, segs));
    Check(!whole.corrupt && whole.keep == segs.size());
  }

  // The power loss, file by file.
  std::mt19937_64 rng(in.ConsumeIntegral<uint64_t>());
  for (size_t i = 0; i < segs.size(); ++i) {
    std::vector<uint8_t>& f = files[i];
    const uint64_t synced = segs[i].synced;
    if (synced >= f.size()) continue;
    const int pieces = in.ConsumeIntegralInRange(0, 3);
    for (int p = 0; p < pieces; ++p) {
      const uint64_t from = in.ConsumeIntegralInRange<uint64_t>(synced, f.size() - 1);
      const uint64_t to = std::min<uint64_t>(f.size(), from + in.ConsumeIntegralInRange<uint64_t>(1, 600));
      const bool garble = in.ConsumeBool();
      for (uint64_t q = from; q < to; ++q) f[q] = garble ? static_cast<uint8_t>(rng()) : 0;
    }
    if (in.ConsumeBool()) f.resize(in.ConsumeIntegralInRange<uint64_t>(synced, f.size()));
  }

  const std::vector<SegmentFinding> found = findings_of(files, segs);
  const LogRecoveryPlan plan = PlanLogRecovery(found);
  Check(!plan.corrupt);
  Check(plan.keep >= 1 && plan.keep <= segs.size());
  uint64_t next = 1;
  for (size_t i = 0; i < plan.keep; ++i) {
    const spanguard::RecoveryResult& r = found[i].result;
    Check(r.outcome != RecoveryOutcome::kCorrupt && r.first_id == segs[i].first_id && segs[i].first_id == next);
    Check(r.records <= segs[i].record_start.size());
    // Every kept byte is what the writer wrote.
    Check(r.valid_end <= segs[i].bytes.size() && r.valid_end <= files[i].size());
    Check(std::memcmp(files[i].data(), segs[i].bytes.data(), static_cast<size_t>(r.valid_end)) == 0);
    next += r.records;
    // Every segment but the last kept one holds all its records.
    if (i + 1 < plan.keep) Check(r.records == segs[i].record_start.size());
  }
  Check(next >= flushed_next);
  return 0;
}
