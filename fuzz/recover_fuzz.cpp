// libFuzzer target over the recovery scanner and record decoder (RecoverSegment), the code
// that reads untrusted bytes at every open.
//
// Build and run (clang with libFuzzer; `apt-get install -y clang` on Debian):
//   clang++ -std=c++17 -O1 -g -fsanitize=fuzzer,address,undefined \
//     -Inative \
//     fuzz/recover_fuzz.cpp native/log/*.cpp native/common/crc32c.cpp native/common/io_seam.cpp \
//     -o build/recover_fuzz
//   mkdir -p build/fuzz-corpus && cp test/fixtures/recover-corpus/* build/fuzz-corpus/
//   build/recover_fuzz -max_len=8192 -max_total_time=120 build/fuzz-corpus
//   # shrink what it found back into the committed corpus:
//   build/recover_fuzz -merge=1 test/fixtures/recover-corpus build/fuzz-corpus
// The committed corpus is replayed through recoverSegment by test/log/fuzz-corpus.test.ts.
//
// Besides "no crash, no sanitizer report", it checks the invariants recovery promises:
// valid_end within the input, one offset per record, clean means every byte accounted for,
// and idempotence (the kept prefix recovers clean with the same records).
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "common/crc32c.h"
#include "log/span_log.h"

using spanguard::RecoveryOutcome;

static void Check(bool ok) {
  if (!ok) __builtin_trap();
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<uint64_t> offsets;
  const spanguard::RecoveryResult r = spanguard::RecoverSegment(data, size, &offsets);
  Check(r.valid_end <= size);
  Check(offsets.size() == r.records);
  for (uint64_t off : offsets) Check(off >= 64 && off + 64 <= r.valid_end && off % 8 == 0);
  if (r.outcome == RecoveryOutcome::kClean) Check(r.valid_end == size && r.error_offset == -1);
  if (r.outcome != RecoveryOutcome::kCorrupt) {
    const spanguard::RecoveryResult again = spanguard::RecoverSegment(data, r.valid_end, nullptr);
    Check(again.outcome == RecoveryOutcome::kClean);
    Check(again.records == r.records && again.valid_end == r.valid_end);
  }
  Check(spanguard::Crc32c(0, data, size) == spanguard::Crc32cPortable(0, data, size));
  return 0;
}
