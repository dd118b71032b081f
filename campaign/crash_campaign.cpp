// Crash campaign over the span log: thousands of SIGKILLs of a writer, each followed by a
// check of what an opener finds. Run by `npm run campaign` (scripts/campaign.mjs builds this
// with -DSPANGUARD_CAMPAIGN=ON into build-campaign/); not part of `npm test`.
//
// One trial: the parent forks a child that opens the log in a trial directory (a writer's
// open: recovery of whatever the previous child left) and appends records until the parent
// SIGKILLs it after a random delay; the parent then opens the log itself and checks it.
//
// - Record content is a function of (directory seed, id) only (ExpectedFor), so the parent
//   knows the exact bytes any id must hold without seeing the child's data, whichever trial
//   wrote it.
// - The child publishes, in memory shared with the parent (mmap MAP_SHARED|MAP_ANONYMOUS,
//   made before the fork), the highest id whose write returned ("written") and the highest
//   id known durable ("acknowledged": after `sync`'s Append, after a group commit's
//   fdatasync, after an explicit flush in `none`, after a clean close). An id counts only
//   once published.
// - Checks after every kill, cumulative over the directory's life: every id up to the
//   highest acknowledged one, and up to the highest written one (a SIGKILL leaves the page
//   cache, so a record whose write returned survives in every mode: README.md, "Durability
//   contract"), is present; every record the log returns has exactly the expected content
//   for its id; ids run from 1 without a gap (the segment files' own chain of first ids and
//   record counts agrees with the log's next id); the log ends at the end of a batch (the
//   child marks each batch's last id before it appends it: a batch is all or nothing).
// - A child reopening a log whose next id is below what an earlier child wrote would hand
//   those ids out again with the same content and hide the loss: each child checks its
//   open against the floor the parent passes it.
// - Some trials kill the child while it opens (recovers) an existing log, or creates a new
//   one; a child also closes and reopens its log now and then, so kills land in close and
//   in reopen too.
// - Durability, segment size, batch shape and kill delay are drawn per trial from a PRNG
//   seeded by --seed: the trial sequence replays with the same seed (kill instants are
//   timing, and vary).
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <condition_variable>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/errors.h"
#include "log/span_log.h"

using namespace spanguard;
namespace fs = std::filesystem;

namespace {

// --- deterministic randomness -------------------------------------------------------------

uint64_t Mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

struct Rng {
  uint64_t s;
  explicit Rng(uint64_t seed) : s(seed) {}
  uint64_t Next() { return Mix(s += 0x9E3779B97F4A7C15ull); }
  uint64_t Below(uint64_t n) { return n == 0 ? 0 : Next() % n; }
  double Unit() { return static_cast<double>(Next() >> 11) * (1.0 / 9007199254740992.0); }
  bool Chance(double p) { return Unit() < p; }
};

// --- expected content ---------------------------------------------------------------------

constexpr int64_t kBaseTimestamp = 1700000000000;

struct Expected {
  uint8_t kind = 1;
  uint8_t flags = 0;
  uint8_t role = 0;
  int64_t turn_start = 0;
  int64_t turn_end = 0;
  int64_t timestamp_ms = 0;
  uint32_t tokens = 0;
  std::string text;
  std::string meta;
};

/// The record id `id` holds in a directory seeded `dir_seed`. Raw spans carry turn = id, so
/// turn order holds whichever ids a recovery leaves; one id in 64 is 1-6 KB (larger than a
/// 4 KiB segment: a batch of its own segment); texts hold multi-byte UTF-8.
void ExpectedFor(uint64_t dir_seed, uint64_t id, Expected* e) {
  const uint64_t h = Mix(dir_seed ^ (id * 0xD1B54A32D192ED03ull));
  e->kind = h % 11 == 0 ? 2 : h % 13 == 0 ? 3 : 1;
  e->flags = (h >> 40) % 5 == 0 ? 1 : 0;
  e->role = static_cast<uint8_t>((h >> 44) % 4);
  e->turn_start = e->kind == 2 ? std::max<int64_t>(0, static_cast<int64_t>(id) - 10) : static_cast<int64_t>(id);
  e->turn_end = static_cast<int64_t>(id);
  e->timestamp_ms = kBaseTimestamp + static_cast<int64_t>(id) * 1000;
  const size_t len = (h >> 8) % 64 == 0 ? 1000 + (h >> 16) % 5000 : (h >> 16) % 700;
  e->text.clear();
  char head[64];
  const int hl = std::snprintf(head, sizeof head, "span %" PRIu64 " \xC3\xA9\xE2\x9C\x93 ", id);  // "é✓"
  e->text.append(head, static_cast<size_t>(hl));
  static const char kAlphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789 .,:/=-_ABCDEFGHIJKLMNOPQRSTUVWXYZ";
  uint64_t r = h;
  while (e->text.size() < len) {
    if ((e->text.size() & 7) == 0) r = Mix(r);
    e->text.push_back(kAlphabet[(r & 0xFF) % (sizeof kAlphabet - 1)]);
    r >>= 8;
  }
  e->tokens = static_cast<uint32_t>(e->text.size() / 4 + 1);
  e->meta.clear();
  if ((h >> 52) % 3 == 0) {
    char m[96];
    const int ml = std::snprintf(m, sizeof m, "{\"id\":%" PRIu64 ",\"dir\":%" PRIu64 ",\"tag\":\"", id, dir_seed % 100000);
    e->meta.assign(m, static_cast<size_t>(ml));
    e->meta.append((h >> 56) % 50, 'm');
    e->meta.append("\"}");
  }
}

/// Empty when the record read back is the expected one, else what differs.
std::string Diff(const RecordView& v, uint64_t id, const Expected& e) {
  const SpanView& s = v.span;
  char buf[256];
  if (s.id != id) {
    std::snprintf(buf, sizeof buf, "id %" PRIu64 " read back as id %" PRIu64, id, s.id);
    return buf;
  }
  if (static_cast<uint8_t>(s.kind) != e.kind || s.flags != e.flags || s.role != e.role || s.turn_start != e.turn_start ||
      s.turn_end != e.turn_end || s.timestamp_ms != e.timestamp_ms || s.tokens != e.tokens) {
    std::snprintf(buf, sizeof buf, "id %" PRIu64 ": header fields differ (kind %u/%u, turn %" PRId64 "/%" PRId64 ")", id,
                  static_cast<unsigned>(s.kind), e.kind, s.turn_start, e.turn_start);
    return buf;
  }
  if (s.text_len != e.text.size() || std::memcmp(s.text, e.text.data(), e.text.size()) != 0) {
    std::snprintf(buf, sizeof buf, "id %" PRIu64 ": text differs (%u bytes, expected %zu)", id, s.text_len, e.text.size());
    return buf;
  }
  if (v.meta_len != e.meta.size() || std::memcmp(v.meta, e.meta.data(), e.meta.size()) != 0) {
    std::snprintf(buf, sizeof buf, "id %" PRIu64 ": meta differs (%u bytes, expected %zu)", id, v.meta_len, e.meta.size());
    return buf;
  }
  return {};
}

// --- parent/child shared state ------------------------------------------------------------

enum Phase : uint32_t { kStarting = 0, kOpening = 1, kAppending = 2, kClosing = 3, kIdle = 4 };
const char* const kPhaseNames[] = {"starting", "opening", "appending", "closing", "idle"};

struct Shared {
  std::atomic<uint32_t> phase;
  std::atomic<uint64_t> written;   ///< highest id whose write returned (0: none)
  std::atomic<uint64_t> acked;     ///< highest id known durable (0: none)
  std::atomic<uint64_t> open_us;   ///< duration of the child's first open, once completed
  std::atomic<uint64_t> opens;     ///< opens started
  std::atomic<uint64_t> batches;   ///< batches written
  std::atomic<uint64_t> records;   ///< records written
  std::atomic<uint64_t> large;     ///< batches of kLargeBatchBytes or more written
  std::atomic<uint64_t> syncs;     ///< group commits and explicit flushes completed
  std::atomic<uint64_t> marked;    ///< highest id marked in the batch ends
  std::atomic<uint32_t> in_large;  ///< a batch of kLargeBatchBytes or more is being appended or staged
  std::atomic<uint32_t> failed;
  char error[1024];
};
static_assert(std::atomic<uint64_t>::is_always_lock_free, "shared counters must be lock-free across processes");

/// Batch ends, shared like Shared: ends[id] = 1 once a child is about to append a batch
/// whose last id is `id` (ids of a directory's life; cleared when the directory is reset).
/// An id reassigned after a torn batch may leave a stale mark: it can hide a torn batch,
/// never report one that is not.
constexpr uint64_t kMarkedIds = uint64_t{1} << 22;

// The log's two-thread path starts at kParallelBatchBytes (256 KiB, native/log/log_internal.h).
constexpr uint64_t kLargeBatchBytes = uint64_t{256} << 10;

const char* DurabilityName(Durability d) { return d == Durability::kSync ? "sync" : d == Durability::kGroup ? "group" : "none"; }

// --- the child: a writer killed at a random moment ----------------------------------------

struct TrialPlan {
  std::string dir;
  uint64_t dir_seed = 0;
  uint64_t trial_seed = 0;
  Durability durability = Durability::kSync;
  uint64_t segment_bytes = 0;
  /// Highest id an earlier child wrote: the child's open must find at least this many.
  uint64_t floor = 0;
  /// Bytes the child writes before it closes cleanly and waits for its kill.
  uint64_t byte_budget = 0;
  double p_large = 0;       ///< per batch: a batch of kLargeBatchBytes or more
  double p_columns = 0;     ///< per batch (sync/none): AppendColumns rather than Append
  double p_reopen = 0;      ///< per batch: close and reopen the log
  double p_flush = 0;       ///< none, per batch: an explicit flush
  double p_main_sync = 0;   ///< group, per commit: fdatasync on the appending thread
};

[[noreturn]] void ChildFail(Shared* sh, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(sh->error, sizeof sh->error, fmt, ap);
  va_end(ap);
  sh->failed.store(1, std::memory_order_release);
  _exit(3);
}

/// A batch of records for ids [first, first + n), kept alive until the append returns.
struct Batch {
  std::vector<Expected> recs;
  std::vector<RecordInput> in;
  uint64_t bytes = 0;
  // Column form.
  std::vector<uint8_t> kinds, flags, roles;
  std::vector<double> turn_start, turn_end, timestamps;
  std::vector<uint32_t> tokens, text_offsets, meta_offsets;
  std::string texts, metas;
  std::vector<RecordInput> rows;

  void Build(uint64_t dir_seed, uint64_t first, size_t n, uint64_t min_bytes) {
    recs.clear();
    in.clear();
    bytes = 0;
    for (size_t i = 0; i < n || bytes < min_bytes; ++i) {
      recs.emplace_back();
      ExpectedFor(dir_seed, first + i, &recs.back());
      bytes += format::RecordSize(recs.back().text.size() + recs.back().meta.size());
    }
    in.resize(recs.size());
    for (size_t i = 0; i < recs.size(); ++i) {
      const Expected& e = recs[i];
      RecordInput& r = in[i];
      r = RecordInput{};
      r.kind = e.kind;
      r.flags = e.flags;
      r.role = e.role;
      r.turn_start = e.turn_start;
      r.turn_end = e.turn_end;
      r.timestamp_ms = e.timestamp_ms;
      r.tokens = e.tokens;
      r.text = e.text.data();
      r.text_len = e.text.size();
      r.meta = e.meta.empty() ? nullptr : e.meta.data();
      r.meta_len = e.meta.size();
      r.check_utf8 = true;
    }
  }

  BatchColumns Columns() {
    const size_t n = recs.size();
    kinds.resize(n);
    flags.resize(n);
    roles.resize(n);
    turn_start.resize(n);
    turn_end.resize(n);
    timestamps.resize(n);
    tokens.resize(n);
    text_offsets.assign(n + 1, 0);
    meta_offsets.assign(n + 1, 0);
    texts.clear();
    metas.clear();
    for (size_t i = 0; i < n; ++i) {
      const Expected& e = recs[i];
      kinds[i] = e.kind;
      flags[i] = e.flags;
      roles[i] = e.role;
      turn_start[i] = static_cast<double>(e.turn_start);
      turn_end[i] = static_cast<double>(e.turn_end);
      timestamps[i] = static_cast<double>(e.timestamp_ms);
      tokens[i] = e.tokens;
      texts += e.text;
      metas += e.meta;
      text_offsets[i + 1] = static_cast<uint32_t>(texts.size());
      meta_offsets[i + 1] = static_cast<uint32_t>(metas.size());
    }
    BatchColumns c;
    c.kinds = kinds.data();
    c.flags = flags.data();
    c.roles = roles.data();
    c.turn_start = turn_start.data();
    c.turn_end = turn_end.data();
    c.timestamps = timestamps.data();
    c.tokens = tokens.data();
    c.texts.data = texts.data();
    c.texts.len = texts.size();
    c.texts.offsets = text_offsets.data();
    c.metas.data = metas.data();
    c.metas.len = metas.size();
    c.metas.offsets = meta_offsets.data();
    c.metas.name = "metas";
    c.metas.offsets_name = "metaOffsets";
    c.metas.field = "meta";
    rows.resize(n);
    return c;
  }
};

/// The group-commit worker: fdatasyncs a SyncTarget off the appending thread, as the
/// binding's SyncWorker does on the libuv pool.
class SyncThread {
 public:
  SyncThread() : thread_([this] { Run(); }) {}
  ~SyncThread() {
    {
      std::lock_guard<std::mutex> g(m_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void Start(const SyncTarget& t) {
    {
      std::lock_guard<std::mutex> g(m_);
      target_ = t;
      state_ = 1;
    }
    cv_.notify_all();
  }
  bool busy() const { return state_.load(std::memory_order_acquire) != 0; }
  bool done() const { return state_.load(std::memory_order_acquire) == 2; }
  /// Waits for the sync to finish; returns its target and errno, and frees the worker.
  int Take(SyncTarget* t) {
    std::unique_lock<std::mutex> g(m_);
    cv_.wait(g, [&] { return state_.load() == 2; });
    *t = target_;
    state_.store(0);
    return err_;
  }

 private:
  void Run() {
    std::unique_lock<std::mutex> g(m_);
    for (;;) {
      cv_.wait(g, [&] { return stop_ || state_.load() == 1; });
      if (stop_) return;
      const SyncTarget t = target_;
      g.unlock();
      const int err = SpanLog::SyncFiles(t);
      g.lock();
      err_ = err;
      state_.store(2, std::memory_order_release);
      cv_.notify_all();
    }
  }
  std::mutex m_;
  std::condition_variable cv_;
  std::atomic<int> state_{0};  // 0 idle, 1 syncing, 2 done
  SyncTarget target_;
  int err_ = 0;
  bool stop_ = false;
  std::thread thread_;
};

uint64_t NowUs() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
}

void Publish(std::atomic<uint64_t>& slot, uint64_t id) {
  if (id > slot.load(std::memory_order_relaxed)) slot.store(id, std::memory_order_release);
}

[[noreturn]] void ChildMain(const TrialPlan& p, Shared* sh, uint8_t* ends) {
  Rng rng(p.trial_seed);
  SpanLogOptions opts;
  opts.durability = p.durability;
  opts.segment_bytes = p.segment_bytes;
  opts.max_text_bytes = 1u << 20;
  std::unique_ptr<SpanLog> log;
  std::unique_ptr<SyncThread> syncer;
  uint64_t floor = p.floor;
  uint64_t pending_hi = 0;  // group: the highest id the sync in flight covers
  uint64_t wrote = 0;
  Batch batch;

  const auto open = [&] {
    const bool first_open = sh->opens.fetch_add(1, std::memory_order_relaxed) == 0;
    sh->phase.store(kOpening, std::memory_order_release);
    const uint64_t t0 = NowUs();
    log = std::make_unique<SpanLog>(p.dir, opts);
    if (first_open) sh->open_us.store(NowUs() - t0, std::memory_order_relaxed);
    if (log->first_id() != 1 && log->next_id() > 1) ChildFail(sh, "open: the log starts at id %" PRIu64, log->first_id());
    if (log->next_id() - 1 < floor) {
      ChildFail(sh, "open: next id %" PRIu64 ", but ids up to %" PRIu64 " were written before (lost at open)", log->next_id(),
                floor);
    }
    sh->phase.store(kAppending, std::memory_order_release);
  };
  // Group commit: the finished sync's records are acknowledged; the next one starts with
  // whatever was staged meanwhile (written first, as the binding's FlushStaged does).
  const auto finish_sync = [&] {
    SyncTarget t;
    const int err = syncer->Take(&t);
    log->FinishSync(t, err);
    if (err != 0 || log->failed()) ChildFail(sh, "group commit: fdatasync failed: %s", std::strerror(err));
    Publish(sh->acked, pending_hi);
    sh->syncs.fetch_add(1, std::memory_order_relaxed);
  };
  const auto write_staged = [&] {
    std::string msg;
    if (log->WriteStaged(&msg) != 0) ChildFail(sh, "group commit: write failed: %s", msg.c_str());
    Publish(sh->written, log->next_id() - 1);
  };
  const auto start_sync = [&] {
    write_staged();
    if (log->synced_seq() == log->written_seq()) return;
    pending_hi = log->next_id() - 1;
    if (rng.Chance(p.p_main_sync)) {
      // The binding's path for a burst of 16 or more waiters: the fdatasync on this thread.
      const SyncTarget t = log->PrepareSync();
      const int err = SpanLog::SyncFiles(t);
      if (err == 0) log->PrefillAhead();
      log->FinishSync(t, err);
      if (err != 0 || log->failed()) ChildFail(sh, "group commit: fdatasync failed: %s", std::strerror(err));
      Publish(sh->acked, pending_hi);
      sh->syncs.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    syncer->Start(log->PrepareSync());
    log->PrefillAhead();  // while the worker syncs, as the binding does
  };
  const auto close = [&] {
    sh->phase.store(kClosing, std::memory_order_release);
    if (syncer && syncer->busy()) finish_sync();
    if (const int err = log->SyncAndCheckpointForClose(); err != 0) ChildFail(sh, "close: %s", std::strerror(err));
    Publish(sh->written, log->next_id() - 1);
    Publish(sh->acked, log->next_id() - 1);
    floor = std::max(floor, log->next_id() - 1);
    log->Release();
    log.reset();
  };

  try {
    if (p.durability == Durability::kGroup) syncer = std::make_unique<SyncThread>();
    open();
    for (;;) {
      if (wrote >= p.byte_budget) {
        // Enough for one trial (a fast `none` writer would otherwise grow the directory by
        // hundreds of MB before its kill): close cleanly and wait for the kill.
        close();
        sh->phase.store(kIdle, std::memory_order_release);
        for (;;) pause();
      }
      const bool large = rng.Chance(p.p_large);
      const uint64_t r = rng.Below(100);
      const size_t n = large ? 1 : r < 45 ? 1 : r < 85 ? 2 + rng.Below(7) : 9 + rng.Below(56);
      const uint64_t first = p.durability == Durability::kGroup ? log->staged_next_id() : log->next_id();
      batch.Build(p.dir_seed, first, n, large ? kLargeBatchBytes + rng.Below(kLargeBatchBytes) : 0);
      const size_t count = batch.recs.size();
      if (first + count - 1 < kMarkedIds) {
        Publish(sh->marked, first + count - 1);
        ends[first + count - 1] = 1;
      }
      uint64_t got;
      sh->in_large.store(batch.bytes >= kLargeBatchBytes, std::memory_order_relaxed);
      if (p.durability == Durability::kGroup) {
        if (log->StageNeedsWrite(batch.bytes)) write_staged();
        got = log->Stage(batch.in.data(), count);
      } else if (rng.Chance(p.p_columns)) {
        const BatchColumns cols = batch.Columns();
        got = log->AppendColumns(cols, batch.rows.data(), count);
      } else {
        got = log->Append(batch.in.data(), count);
      }
      sh->in_large.store(0, std::memory_order_relaxed);
      if (got != first) ChildFail(sh, "append: first id %" PRIu64 ", expected %" PRIu64, got, first);
      const uint64_t last = first + count - 1;
      switch (p.durability) {
        case Durability::kSync:
          Publish(sh->written, last);
          Publish(sh->acked, last);
          break;
        case Durability::kNone:
          Publish(sh->written, last);
          if (rng.Chance(p.p_flush)) {
            // flush(): the binding's path with nothing staged, on this thread.
            const SyncTarget t = log->PrepareSync();
            const int err = SpanLog::SyncFiles(t);
            log->FinishSync(t, err);
            if (err != 0 || log->failed()) ChildFail(sh, "flush: fdatasync failed: %s", std::strerror(err));
            Publish(sh->acked, last);
            sh->syncs.fetch_add(1, std::memory_order_relaxed);
          }
          break;
        case Durability::kGroup:
          if (syncer->done()) finish_sync();
          if (!syncer->busy()) {
            start_sync();
          } else if (log->staged_bytes() > (uint64_t{1} << 20)) {
            finish_sync();
            start_sync();
          }
          break;
      }
      wrote += batch.bytes;
      sh->batches.fetch_add(1, std::memory_order_relaxed);
      sh->records.fetch_add(count, std::memory_order_relaxed);
      if (batch.bytes >= kLargeBatchBytes) sh->large.fetch_add(1, std::memory_order_relaxed);
      if (rng.Chance(p.p_reopen)) {
        close();
        open();
      }
    }
  } catch (const NativeError& e) {
    ChildFail(sh, "%s: %s", e.code().c_str(), e.what());
  } catch (const std::exception& e) {
    ChildFail(sh, "exception: %s", e.what());
  }
}

// --- the parent's check -------------------------------------------------------------------

struct ModeStats {
  uint64_t trials = 0;
  uint64_t kills[5] = {0, 0, 0, 0, 0};  ///< by the phase the child was in
  uint64_t kills_in_large = 0;          ///< during the append of a batch of 256 KiB or more
  uint64_t kills_open_new = 0;          ///< of kills[kOpening]: while creating a new log
  uint64_t acked_checked = 0;     ///< acknowledged ids checked present and exact, summed over trials
  uint64_t written_checked = 0;   ///< written ids checked likewise
  uint64_t records_checked = 0;   ///< every record read back and compared
  uint64_t lost_acked = 0;
  uint64_t lost_written = 0;
  uint64_t lost_seen = 0;         ///< ids an earlier check found, gone
  uint64_t corrupt = 0;
  uint64_t gaps = 0;
  uint64_t torn_kept = 0;         ///< the log ended inside a batch
  uint64_t acked_by_child = 0;    ///< ids the killed child itself acknowledged, summed
  uint64_t child_failures = 0;    ///< the child's own checks, or an engine error in the child
  uint64_t open_failures = 0;     ///< the parent's open refused the log
  uint64_t batches = 0, records = 0, large = 0, syncs = 0, opens = 0;
  uint64_t writer_verifies = 0;
  double seconds = 0;
};

struct Failure {
  uint64_t trial;
  std::string mode;
  std::string what;
  std::string kept;
};

struct VerifyOutcome {
  uint64_t next = 1;
  uint64_t bytes = 0;
  size_t segments = 0;
  uint64_t records = 0;
  uint64_t lost_acked = 0;
  uint64_t lost_written = 0;
  uint64_t lost_seen = 0;
  uint64_t corrupt = 0;
  uint64_t gaps = 0;
  uint64_t torn_kept = 0;
  bool open_failed = false;
  std::vector<std::string> problems;
};

/// The segment files' own chain: the first one starts at id 1 and each starts where the one
/// before ends (RecoverSegment's record count over the file's bytes). A sealed segment is
/// cut to its records before its successor exists, so after a kill only the last may end
/// in a torn tail; the chain's end must be the log's next id.
void CheckChain(const std::string& dir, uint64_t next, VerifyOutcome* out) {
  std::vector<std::pair<uint64_t, std::string>> segs;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.size() == 28 && name.rfind("seg-", 0) == 0 && name.compare(24, 4, ".log") == 0) {
      segs.emplace_back(std::strtoull(name.c_str() + 4, nullptr, 10), entry.path().string());
    }
  }
  std::sort(segs.begin(), segs.end());
  uint64_t expect = 1;
  std::vector<uint8_t> buf;
  for (size_t i = 0; i < segs.size(); ++i) {
    const int fd = ::open(segs[i].second.c_str(), O_RDONLY);
    struct stat st;
    if (fd < 0 || ::fstat(fd, &st) != 0) {
      if (fd >= 0) ::close(fd);
      out->problems.push_back("cannot read " + segs[i].second);
      ++out->gaps;
      return;
    }
    buf.resize(static_cast<size_t>(st.st_size));
    size_t got = 0;
    while (got < buf.size()) {
      const ssize_t n = ::pread(fd, buf.data() + got, buf.size() - got, static_cast<off_t>(got));
      if (n <= 0) break;
      got += static_cast<size_t>(n);
    }
    ::close(fd);
    const RecoveryResult r = RecoverSegment(buf.data(), got, nullptr);
    if (segs[i].first != expect) {
      char msg[256];
      std::snprintf(msg, sizeof msg, "gap: %s starts at id %" PRIu64 ", the segments before end at %" PRIu64,
                    segs[i].second.c_str(), segs[i].first, expect);
      out->problems.push_back(msg);
      ++out->gaps;
      return;
    }
    if (i + 1 < segs.size() && r.outcome != RecoveryOutcome::kClean) {
      char msg[256];
      std::snprintf(msg, sizeof msg, "sealed segment %s is %s at offset %" PRId64 ": %s", segs[i].second.c_str(),
                    RecoveryOutcomeName(r.outcome), r.error_offset, r.message.c_str());
      out->problems.push_back(msg);
      ++out->gaps;
    }
    expect += r.records;
  }
  if (expect != next) {
    char msg[160];
    std::snprintf(msg, sizeof msg, "the segment files hold ids up to %" PRIu64 ", the log's next id is %" PRIu64, expect - 1, next);
    out->problems.push_back(msg);
    ++out->gaps;
  }
}

/// Opens the log as a reader (or, with `as_writer`, as a writer: its recovery cuts the torn
/// tail) and checks it against what the children published: `acked` and `written` ids, and
/// `seen`, the ids an earlier check found.
VerifyOutcome Verify(const std::string& dir, uint64_t dir_seed, uint64_t acked, uint64_t written, uint64_t seen,
                     const uint8_t* ends, bool as_writer) {
  VerifyOutcome out;
  SpanLogOptions opts;
  opts.read_only = !as_writer;
  opts.durability = Durability::kSync;
  try {
    SpanLog log(dir, opts);
    out.next = log.next_id();
    out.bytes = log.bytes();
    out.segments = log.segment_count();
    const uint64_t have = out.next - 1;
    if (log.first_id() != 1 && out.next > 1) {
      out.problems.push_back("the log starts at id " + std::to_string(log.first_id()));
      ++out.gaps;
    }
    if (have < acked) {
      out.lost_acked = acked - have;
      out.problems.push_back("acknowledged ids " + std::to_string(have + 1) + ".." + std::to_string(acked) + " lost");
    }
    if (have < written) {
      out.lost_written = written - have;
      out.problems.push_back("written ids " + std::to_string(have + 1) + ".." + std::to_string(written) + " lost");
    }
    if (have < seen) {
      out.lost_seen = seen - have;
      out.problems.push_back("ids " + std::to_string(have + 1) + ".." + std::to_string(seen) + ", found by an earlier open, lost");
    }
    if (have > 0 && have < kMarkedIds && ends[have] == 0) {
      out.torn_kept = 1;
      out.problems.push_back("the log ends at id " + std::to_string(have) + ", inside a batch (part of a batch kept)");
    }
    Expected e;
    for (uint64_t id = 1; id < out.next; ++id) {
      RecordView v;
      std::string diff;
      try {
        if (!log.Read(id, &v)) {
          diff = "id " + std::to_string(id) + " below the next id is not readable";
        } else {
          ExpectedFor(dir_seed, id, &e);
          diff = Diff(v, id, e);
        }
      } catch (const NativeError& err) {
        diff = "id " + std::to_string(id) + ": " + err.code() + ": " + err.what();
      }
      ++out.records;
      if (!diff.empty()) {
        ++out.corrupt;
        if (out.problems.size() < 8) out.problems.push_back("corrupt: " + diff);
      }
    }
    const VerifyResult vr = log.Verify();
    if (!vr.ok) {
      ++out.corrupt;
      for (const VerifyProblem& p : vr.problems) {
        out.problems.push_back("verify: " + p.file + " at " + std::to_string(p.offset) + ": " + p.outcome + ": " + p.message);
      }
    }
  } catch (const NativeError& err) {
    out.open_failed = true;
    out.problems.push_back(std::string(as_writer ? "writer" : "reader") + " open: " + err.code() + ": " + err.what());
    return out;
  }
  CheckChain(dir, out.next, &out);
  return out;
}

// --- the campaign -------------------------------------------------------------------------

struct Args {
  uint64_t seed = 0;
  bool seed_given = false;
  uint64_t trials = 10000;
  double budget_s = 0;
  std::string dir = "/tmp/spanguard-campaign";
  std::string json;
  uint64_t reset_every = 40;
  double open_kill = 0.15;
  double min_delay_us = 20;
  double max_delay_us = 20000;
  uint64_t max_dir_bytes = uint64_t{24} << 20;
  uint64_t max_segments = 1500;
  bool quiet = false;
};

void Usage() {
  std::fprintf(stderr,
               "usage: crash_campaign [--trials N] [--seed S] [--time-budget SECONDS] [--dir DIR] [--json FILE]\n"
               "                      [--reset-every N] [--open-kill FRACTION] [--max-delay-us US] [--quiet]\n");
}

bool ParseArgs(int argc, char** argv, Args* a) {
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    const auto val = [&](const char** out) {
      if (i + 1 >= argc) return false;
      *out = argv[++i];
      return true;
    };
    const char* v = nullptr;
    char* end = nullptr;
    if (k == "--quiet") {
      a->quiet = true;
      continue;
    }
    if (k == "--help" || k == "-h" || !val(&v)) return false;
    errno = 0;
    if (k == "--trials") {
      a->trials = std::strtoull(v, &end, 10);
    } else if (k == "--seed") {
      a->seed = std::strtoull(v, &end, 0);
      a->seed_given = true;
    } else if (k == "--time-budget") {
      a->budget_s = std::strtod(v, &end);
    } else if (k == "--dir") {
      a->dir = v;
      end = const_cast<char*>(v) + std::strlen(v);
    } else if (k == "--json") {
      a->json = v;
      end = const_cast<char*>(v) + std::strlen(v);
    } else if (k == "--reset-every") {
      a->reset_every = std::strtoull(v, &end, 10);
    } else if (k == "--open-kill") {
      a->open_kill = std::strtod(v, &end);
    } else if (k == "--max-delay-us") {
      a->max_delay_us = std::strtod(v, &end);
    } else {
      return false;
    }
    if (errno != 0 || end == v || *end != '\0') return false;
  }
  return a->trials > 0 && a->reset_every > 0 && a->open_kill >= 0 && a->open_kill <= 1 && a->max_delay_us > a->min_delay_us &&
         a->budget_s >= 0 && !a->dir.empty();
}

void SleepUs(double us) {
  if (us <= 0) return;
  struct timespec ts;
  ts.tv_sec = static_cast<time_t>(us / 1e6);
  ts.tv_nsec = static_cast<long>((us - static_cast<double>(ts.tv_sec) * 1e6) * 1000);
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

/// Waits until the child reaches `phase` or exits; false if it exited (reaped into *status).
bool AwaitPhase(pid_t pid, const Shared* sh, uint32_t phase, int* status, bool* reaped) {
  const uint64_t t0 = NowUs();
  while (sh->phase.load(std::memory_order_acquire) < phase) {
    const pid_t w = waitpid(pid, status, WNOHANG);
    if (w == pid) {
      *reaped = true;
      return false;
    }
    if (NowUs() - t0 > 30'000'000) return false;  // stuck: killed and reported by the caller
    SleepUs(20);
  }
  return true;
}

std::string JsonEscape(const std::string& s) {
  std::string o;
  for (const char c : s) {
    if (c == '"' || c == '\\') {
      o += '\\';
      o += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char b[8];
      std::snprintf(b, sizeof b, "\\u%04x", c);
      o += b;
    } else {
      o += c;
    }
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  if (!ParseArgs(argc, argv, &args)) {
    Usage();
    return 2;
  }
  if (!args.seed_given) args.seed = Mix(static_cast<uint64_t>(std::time(nullptr)) ^ (static_cast<uint64_t>(getpid()) << 32));
  signal(SIGPIPE, SIG_IGN);
  std::printf("crash campaign: seed %" PRIu64 ", %" PRIu64 " trials, directory %s (replay: --seed %" PRIu64 " --trials %" PRIu64
              ")\n",
              args.seed, args.trials, args.dir.c_str(), args.seed, args.trials);
  std::fflush(stdout);

  void* mem = mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) {
    std::perror("mmap");
    return 2;
  }
  Shared* sh = new (mem) Shared();
  void* marks = mmap(nullptr, kMarkedIds, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (marks == MAP_FAILED) {
    std::perror("mmap");
    return 2;
  }
  uint8_t* ends = static_cast<uint8_t*>(marks);

  const std::string trial_dir = args.dir + "/log";
  std::error_code ec;
  fs::create_directories(args.dir, ec);
  fs::remove_all(trial_dir, ec);

  Rng rng(args.seed);
  const Durability modes[3] = {Durability::kSync, Durability::kGroup, Durability::kNone};
  const uint64_t seg_sizes[] = {4096, 8192, 16384, 32768, 65536, uint64_t{1} << 20};
  ModeStats stats[3];
  std::vector<Failure> failures;
  uint64_t dir_seed = 0, acked = 0, written = 0, seen = 0, dir_bytes = 0, dir_segments = 0, since_reset = 0, resets = 0;
  // Measured open times (moving averages): of a new log (mkdir, EXTENT, first segment) and
  // of an existing one (recovery); a kill aimed into an open falls within 1.5x of them.
  double open_us_avg[2] = {2000, 2000};
  uint64_t max_bytes_seen = 0, max_segments_seen = 0, max_id_marked = kMarkedIds - 1;
  const uint64_t t_start = NowUs();
  uint64_t trial = 0;
  bool budget_hit = false;

  for (; trial < args.trials; ++trial) {
    if (args.budget_s > 0 && static_cast<double>(NowUs() - t_start) / 1e6 >= args.budget_s) {
      budget_hit = true;
      break;
    }
    Rng trng(Mix(args.seed ^ Mix(trial + 1)));
    if (dir_seed == 0 || since_reset >= args.reset_every || dir_bytes > args.max_dir_bytes || dir_segments > args.max_segments) {
      fs::remove_all(trial_dir, ec);
      dir_seed = trng.Next() | 1;
      acked = written = seen = dir_bytes = dir_segments = since_reset = 0;
      std::memset(ends, 0, std::min<uint64_t>(max_id_marked + 1, kMarkedIds));
      max_id_marked = 0;
      ++resets;
    }
    ++since_reset;
    const int mi = static_cast<int>(trial % 3);
    TrialPlan plan;
    plan.dir = trial_dir;
    plan.dir_seed = dir_seed;
    plan.trial_seed = trng.Next();
    plan.durability = modes[mi];
    plan.segment_bytes = seg_sizes[trng.Below(6)];
    plan.floor = std::max(written, seen);
    plan.byte_budget = uint64_t{2} << 20;
    // A third of the trials lean on large batches (the two-thread path), a third mix a few in.
    const uint64_t shape = trng.Below(3);
    plan.p_large = shape == 0 ? 0.3 + 0.3 * trng.Unit() : shape == 1 ? 0.05 + 0.15 * trng.Unit() : 0;
    plan.p_columns = 0.5;
    plan.p_reopen = trng.Chance(0.3) ? 0.02 : 0;
    plan.p_flush = 0.05 + 0.5 * trng.Unit();
    plan.p_main_sync = 0.3;
    // A new log is killed in its first open three times in four: the next trial opens what a
    // creation cut short (EXTENT without a segment, leftover .tmp files).
    const bool fresh = seen == 0;
    const bool open_kill = trng.Chance(fresh ? 0.75 : args.open_kill);
    const double delay_us = open_kill ? trng.Unit() * 1.5 * open_us_avg[fresh]
                                      : args.min_delay_us * std::pow(args.max_delay_us / args.min_delay_us, trng.Unit());
    const bool as_writer = trng.Below(8) == 0;

    sh->phase.store(kStarting);
    sh->written.store(0);
    sh->acked.store(0);
    sh->open_us.store(0);
    sh->opens.store(0);
    sh->batches.store(0);
    sh->records.store(0);
    sh->large.store(0);
    sh->syncs.store(0);
    sh->marked.store(0);
    sh->in_large.store(0);
    sh->failed.store(0);
    sh->error[0] = '\0';

    const uint64_t t0 = NowUs();
    std::fflush(stdout);
    const pid_t pid = fork();
    if (pid < 0) {
      std::perror("fork");
      return 2;
    }
    if (pid == 0) ChildMain(plan, sh, ends);

    int status = 0;
    bool reaped = false;
    if (AwaitPhase(pid, sh, open_kill ? kOpening : kAppending, &status, &reaped)) SleepUs(delay_us);
    if (!reaped) {
      kill(pid, SIGKILL);
      while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
    }
    const uint32_t phase = std::min<uint32_t>(sh->phase.load(), kIdle);
    ModeStats& ms = stats[mi];
    ++ms.trials;
    ++ms.kills[phase];
    ms.kills_in_large += phase == kAppending && sh->in_large.load() != 0;
    ms.batches += sh->batches.load();
    ms.records += sh->records.load();
    ms.large += sh->large.load();
    ms.syncs += sh->syncs.load();
    ms.opens += sh->opens.load();
    if (const uint64_t o = sh->open_us.load(); o > 0) {
      open_us_avg[fresh] = 0.8 * open_us_avg[fresh] + 0.2 * static_cast<double>(o);
    }
    ms.kills_open_new += fresh && phase == kOpening;
    ms.acked_by_child += sh->acked.load() > acked ? sh->acked.load() - acked : 0;
    acked = std::max(acked, sh->acked.load());
    written = std::max(written, sh->written.load());
    max_id_marked = std::max(max_id_marked, sh->marked.load());

    std::vector<std::string> problems;
    const bool killed = WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
    if (!killed) {
      ++ms.child_failures;
      char msg[1200];
      if (sh->failed.load()) {
        std::snprintf(msg, sizeof msg, "child (%s): %s", kPhaseNames[phase], sh->error);
      } else if (WIFSIGNALED(status)) {
        std::snprintf(msg, sizeof msg, "child died of signal %d in phase %s", WTERMSIG(status), kPhaseNames[phase]);
      } else {
        std::snprintf(msg, sizeof msg, "child exited with status %d in phase %s", WEXITSTATUS(status), kPhaseNames[phase]);
      }
      problems.push_back(msg);
    }

    ms.writer_verifies += as_writer;
    // A child killed before its first open made the directory leaves nothing to open.
    const bool nothing = seen == 0 && written == 0 && !fs::exists(trial_dir, ec);
    const VerifyOutcome v = nothing ? VerifyOutcome{} : Verify(trial_dir, dir_seed, acked, written, seen, ends, as_writer);
    ms.records_checked += v.records;
    ms.acked_checked += std::min(acked, v.next - 1);
    ms.written_checked += std::min(written, v.next - 1);
    ms.lost_acked += v.lost_acked;
    ms.lost_written += v.lost_written;
    ms.lost_seen += v.lost_seen;
    ms.corrupt += v.corrupt;
    ms.gaps += v.gaps;
    ms.torn_kept += v.torn_kept;
    ms.open_failures += v.open_failed;
    problems.insert(problems.end(), v.problems.begin(), v.problems.end());
    dir_bytes = v.bytes;
    dir_segments = v.segments;
    max_bytes_seen = std::max(max_bytes_seen, dir_bytes);
    max_segments_seen = std::max(max_segments_seen, dir_segments);
    // Every record an opener found stays: it was whole in the page cache, which a kill
    // leaves, so a later open, whatever it is killed in, may not take it back.
    seen = std::max(seen, v.next - 1);
    ms.seconds += static_cast<double>(NowUs() - t0) / 1e6;

    if (!problems.empty()) {
      Failure f;
      f.trial = trial;
      f.mode = DurabilityName(plan.durability);
      std::string what;
      for (const std::string& p : problems) what += (what.empty() ? "" : "; ") + p;
      f.what = what;
      // Keep the directory as the failure left it, and go on in a fresh one.
      f.kept = args.dir + "/failed-trial-" + std::to_string(trial);
      fs::remove_all(f.kept, ec);
      fs::rename(trial_dir, f.kept, ec);
      if (ec) f.kept.clear();
      std::printf("FAIL trial %" PRIu64 " (%s, segmentBytes %" PRIu64 ", killed while %s, seed %" PRIu64 "): %s%s%s\n", trial,
                  f.mode.c_str(), plan.segment_bytes, kPhaseNames[phase], args.seed, what.c_str(),
                  f.kept.empty() ? "" : "; log kept in ", f.kept.c_str());
      failures.push_back(std::move(f));
      dir_seed = 0;  // reset before the next trial
    }
    if (!args.quiet && (trial + 1) % 1000 == 0) {
      std::printf("  %" PRIu64 " trials, %.1f s, %zu failures\n", trial + 1, static_cast<double>(NowUs() - t_start) / 1e6,
                  failures.size());
      std::fflush(stdout);
    }
  }
  fs::remove_all(trial_dir, ec);
  const double wall = static_cast<double>(NowUs() - t_start) / 1e6;

  uint64_t bad = 0;
  std::printf("\n%-6s %6s %9s %11s %10s %10s %11s %11s %11s %4s %6s %6s %7s %4s %4s %6s\n", "mode", "trials", "kill:open",
              "kill:append", "kill:close", "new acked", "acked ids", "written ids", "records", "lost", "lost-w", "lost-s", "corrupt",
              "gaps", "torn", "wall s");
  for (int i = 0; i < 3; ++i) {
    const ModeStats& m = stats[i];
    std::printf("%-6s %6" PRIu64 " %9" PRIu64 " %11" PRIu64 " %10" PRIu64 " %10" PRIu64 " %11" PRIu64 " %11" PRIu64 " %11" PRIu64
                " %4" PRIu64 " %6" PRIu64 " %6" PRIu64 " %7" PRIu64 " %4" PRIu64 " %4" PRIu64 " %6.1f\n",
                DurabilityName(modes[i]), m.trials, m.kills[kOpening], m.kills[kAppending], m.kills[kClosing], m.acked_by_child,
                m.acked_checked, m.written_checked, m.records_checked, m.lost_acked, m.lost_written, m.lost_seen, m.corrupt, m.gaps,
                m.torn_kept, m.seconds);
    bad += m.lost_acked + m.lost_written + m.lost_seen + m.corrupt + m.gaps + m.torn_kept + m.child_failures + m.open_failures;
  }
  uint64_t total_trials = 0, batches = 0, records = 0, large = 0, idle = 0, in_large = 0, open_new = 0;
  for (const ModeStats& m : stats) {
    total_trials += m.trials;
    batches += m.batches;
    records += m.records;
    large += m.large;
    idle += m.kills[kIdle] + m.kills[kStarting];
    in_large += m.kills_in_large;
    open_new += m.kills_open_new;
  }
  std::printf("%" PRIu64 " trials in %.1f s (%.1f ms each)%s; the children wrote %" PRIu64 " batches (%" PRIu64
              " of 256 KiB or more; %" PRIu64 " kills during one), %" PRIu64 " records; %" PRIu64 " directory resets, up to %.1f MiB and %" PRIu64
              " segments; %" PRIu64 " kills during the creation of a new log, %" PRIu64
              " after a child's byte budget or before its open; %zu failures; seed %" PRIu64 "\n",
              total_trials, wall, total_trials ? wall * 1000 / static_cast<double>(total_trials) : 0.0,
              budget_hit ? " (time budget reached)" : "", batches, large, in_large, records, resets,
              static_cast<double>(max_bytes_seen) / (1 << 20), max_segments_seen, open_new, idle, failures.size(), args.seed);

  if (!args.json.empty()) {
    FILE* f = std::fopen(args.json.c_str(), "w");
    if (f == nullptr) {
      std::perror(args.json.c_str());
      return 2;
    }
    std::fprintf(f, "{\n  \"seed\": %" PRIu64 ",\n  \"trialsAsked\": %" PRIu64 ",\n  \"trials\": %" PRIu64
                    ",\n  \"timeBudgetSeconds\": %g,\n  \"timeBudgetReached\": %s,\n  \"wallSeconds\": %.1f,\n",
                 args.seed, args.trials, total_trials, args.budget_s, budget_hit ? "true" : "false", wall);
    std::fprintf(f, "  \"settings\": {\"resetEvery\": %" PRIu64 ", \"openKillFraction\": %g, \"killDelayUs\": [%g, %g], "
                    "\"segmentBytes\": [4096, 8192, 16384, 32768, 65536, 1048576], \"largeBatchBytes\": %" PRIu64
                    ", \"byteBudgetPerTrial\": %d},\n",
                 args.reset_every, args.open_kill, args.min_delay_us, args.max_delay_us, kLargeBatchBytes, 2 << 20);
    std::fprintf(f, "  \"directoryResets\": %" PRIu64 ",\n  \"maxLogBytes\": %" PRIu64 ",\n  \"maxSegments\": %" PRIu64 ",\n",
                 resets, max_bytes_seen, max_segments_seen);
    std::fprintf(f, "  \"modes\": {\n");
    for (int i = 0; i < 3; ++i) {
      const ModeStats& m = stats[i];
      std::fprintf(f,
                   "    \"%s\": {\"trials\": %" PRIu64 ", \"killsDuringOpen\": %" PRIu64 ", \"killsDuringAppend\": %" PRIu64
                   ", \"killsDuringOpenOfNewLog\": %" PRIu64 ", \"killsDuringClose\": %" PRIu64 ", \"killsDuringLargeBatch\": %" PRIu64 ", \"killsIdle\": %" PRIu64 ", \"newlyAcked\": %" PRIu64 ", \"ackedIdsChecked\": %" PRIu64
                   ", \"writtenIdsChecked\": %" PRIu64 ", \"recordsChecked\": %" PRIu64 ", \"lostAcked\": %" PRIu64
                   ", \"lostWritten\": %" PRIu64 ", \"lostSeen\": %" PRIu64 ", \"corrupt\": %" PRIu64 ", \"gaps\": %" PRIu64 ", \"tornBatchesKept\": %" PRIu64 ", \"childFailures\": %" PRIu64
                   ", \"openFailures\": %" PRIu64 ", \"batches\": %" PRIu64 ", \"records\": %" PRIu64 ", \"largeBatches\": %" PRIu64
                   ", \"syncs\": %" PRIu64 ", \"opens\": %" PRIu64 ", \"writerVerifies\": %" PRIu64 ", \"seconds\": %.1f}%s\n",
                   DurabilityName(modes[i]), m.trials, m.kills[kOpening], m.kills[kAppending], m.kills_open_new,
                   m.kills[kClosing], m.kills_in_large, m.kills[kIdle] + m.kills[kStarting], m.acked_by_child, m.acked_checked, m.written_checked, m.records_checked, m.lost_acked,
                   m.lost_written, m.lost_seen, m.corrupt, m.gaps, m.torn_kept, m.child_failures, m.open_failures, m.batches, m.records, m.large, m.syncs,
                   m.opens, m.writer_verifies, m.seconds, i < 2 ? "," : "");
    }
    std::fprintf(f, "  },\n  \"failures\": [");
    for (size_t i = 0; i < failures.size(); ++i) {
      const Failure& x = failures[i];
      std::fprintf(f, "%s\n    {\"trial\": %" PRIu64 ", \"mode\": \"%s\", \"what\": \"%s\", \"kept\": \"%s\"}", i ? "," : "",
                   x.trial, x.mode.c_str(), JsonEscape(x.what).c_str(), JsonEscape(x.kept).c_str());
    }
    std::fprintf(f, "%s]\n}\n", failures.empty() ? "" : "\n  ");
    std::fclose(f);
  }
  return bad == 0 && failures.empty() ? 0 : 1;
}
