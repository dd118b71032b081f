// ThreadSanitizer stress of SpanLog's two-thread large batches (WriteBatchParallel): the
// caller and the helper each encode and write chunks in file order — in column form
// (AppendColumns) each first fills and checks its chunk's rows, the turn order passing
// from chunk to chunk — and a failure in any chunk must leave nothing of the batch. The JS suite runs the same paths,
// but Node is not built with TSan, so the happens-before edges between the two threads (the turn counter, `stopped`,
// Begin/End) are checked here, in a plain process.
//
// Build and run (clang; see CMakeLists.txt, SPANGUARD_STRESS):
//   CC=clang CXX=clang++ cmake -S . -B build-stress -G Ninja -DSPANGUARD_STRESS=ON
//   cmake --build build-stress --target large_batch_stress
//   build-stress/large_batch_stress 200
// Exit 0 and no "WARNING: ThreadSanitizer" on stderr is a pass. With the turn counter's
// store made relaxed, TSan reported 15-16 races in 30 rounds.
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "common/errors.h"
#include "common/io_seam.h"
#include "log/span_log.h"

using namespace spanguard;

namespace {

int Fail(const std::string& what) {
  std::fprintf(stderr, "FAIL: %s\n", what.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 100;
  const std::string dir = "/tmp/spanguard-large-batch-stress";
  (void)std::system(("rm -rf " + dir).c_str());
  SpanLogOptions options;
  options.durability = Durability::kNone;
  options.segment_bytes = 8u << 20;  // rolls every few batches
  std::mt19937_64 rng(42);
  std::vector<std::string> stored;  // text of id i + 1
  int good = 0, bad_utf8 = 0, bad_order = 0, failed_writes = 0, from_columns = 0;
  {
    SpanLog log(dir, options);
    int64_t turn = 0;
    for (int r = 0; r < rounds; ++r) {
      // 500-3,000 records of 50-950 bytes: 25 KB to 2.9 MB, most past the 256 KiB at which
      // a batch goes to two threads.
      const size_t n = 500 + rng() % 2500;
      std::vector<std::string> texts(n);
      for (auto& t : texts) t.assign(50 + rng() % 900, static_cast<char>('a' + rng() % 26));
      // 0-1 good, 2 bad UTF-8, 3 failed write, 4 short then failed, 5 turn going backwards
      const int mode = static_cast<int>(rng() % 6);
      const bool columns = rng() % 2 == 0;
      const size_t bad_at = 1 + rng() % (n - 1);
      if (mode == 2) texts[bad_at][texts[bad_at].size() / 2] = '\xff';
      // Rows before bad_at a turn later than the rest: the step back at bad_at is the error
      // in mode 5; otherwise every row has the same turn.
      auto turn_of = [&](size_t i) { return turn + (mode == 5 && i < bad_at ? 1 : 0); };
      std::vector<RecordInput> in(n);
      for (size_t i = 0; i < n; ++i) {
        in[i].kind = 1;
        in[i].turn_start = in[i].turn_end = turn_of(i);
        in[i].text = texts[i].data();
        in[i].text_len = texts[i].size();
        in[i].check_utf8 = true;
      }
      // The same batch in column form.
      std::vector<uint8_t> ones(n, 1), zeros(n, 0);
      std::vector<double> turns(n), times(n, 0);
      std::vector<uint32_t> tokens(n, 0), offsets(n + 1, 0);
      std::string bytes;
      for (size_t i = 0; i < n; ++i) {
        turns[i] = static_cast<double>(turn_of(i));
        bytes += texts[i];
        offsets[i + 1] = static_cast<uint32_t>(bytes.size());
      }
      BatchColumns cols;
      cols.kinds = ones.data();
      cols.flags = cols.roles = zeros.data();
      cols.turn_start = cols.turn_end = turns.data();
      cols.timestamps = times.data();
      cols.tokens = tokens.data();
      cols.texts.data = bytes.data();
      cols.texts.len = bytes.size();
      cols.texts.offsets = offsets.data();
      std::vector<RecordInput> rows(n);
      if (mode == 3 || mode == 4) {
        FaultPlan plan;
        const int64_t at = 1 + static_cast<int64_t>(rng() % 8);
        plan.fail_write_at = mode == 3 ? at : at + 1;
        if (mode == 4) plan.short_write_at = at;
        SetFaults(plan);
      }
      try {
        const uint64_t first = columns ? log.AppendColumns(cols, rows.data(), n) : log.Append(in.data(), n);
        if (first != stored.size() + 1) return Fail("first id " + std::to_string(first));
        for (auto& t : texts) stored.push_back(t);
        turn += 2;
        ++good;
        from_columns += columns;
      } catch (const NativeError& e) {
        const std::string where = "record " + std::to_string(bad_at) + ":";
        if (mode == 2 && e.code() == "INVALID_UTF8" && std::string(e.what()).find(where) != std::string::npos) {
          ++bad_utf8;
        } else if (mode == 5 && e.code() == "TURN_ORDER" && std::string(e.what()).find(where) == 0) {
          ++bad_order;
        } else if ((mode == 3 || mode == 4) && e.code() == "IO_ERROR") {
          ++failed_writes;
        } else {
          return Fail("round " + std::to_string(r) + ", mode " + std::to_string(mode) + (columns ? " (columns)" : "") +
                      ": " + e.code() + ": " + e.what());
        }
      }
      if (mode == 3 || mode == 4) ClearFaults();
      if (log.next_id() != stored.size() + 1) return Fail("next id after round " + std::to_string(r));
    }
    for (size_t id = 1; id <= stored.size(); ++id) {
      SpanView v;
      if (!log.Read(id, &v) || std::string(v.text, v.text_len) != stored[id - 1])
        return Fail("read " + std::to_string(id));
    }
    if (!log.Verify().ok) return Fail("verify");
  }
  SpanLog again(dir, options);
  for (size_t id = 1; id <= stored.size(); ++id) {
    SpanView v;
    if (!again.Read(id, &v) || std::string(v.text, v.text_len) != stored[id - 1])
      return Fail("reopened read " + std::to_string(id));
  }
  std::printf(
      "%d batches stored (%d from columns), %d refused for bad UTF-8, %d for a turn going backwards, %d for a failed "
      "write; %zu records read back, also after reopening\n",
      good, from_columns, bad_utf8, bad_order, failed_writes, stored.size());
  (void)std::system(("rm -rf " + dir).c_str());
  return 0;
}
