// The second thread of a large append (span_log.h, "Large batches"): the batch it shares with
// the appending thread (ParallelBatch) and the thread itself (AppendHelper).
#pragma once

#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "log/log_internal.h"

namespace spanguard {

using namespace log_detail;

/// One large batch being encoded and written by two threads. Main thread: plans the
/// chunks, publishes the job (AppendHelper::Begin, a mutex: everything planned
/// happens-before the helper reads it), works on it, and waits until it is finished. Either
/// thread claims a chunk with next.fetch_add and encodes it; then the chunk waits for its
/// turn: `turn` counts the chunks handed to the file, stored by the thread that wrote the
/// last one and loaded by the next (sequentially consistent, which the sleep below needs;
/// release/acquire would do for the rest), so the writes, and `wrote` and the failure
/// fields, pass from one chunk's owner to the next in file order.
struct ParallelBatch {
  struct Chunk {
    size_t from = 0, to = 0;      ///< records [from, to)
    uint64_t begin = 0, end = 0;  ///< bytes [begin, end) of the encoded batch
    BadRecord bad;                ///< the first bad record of the chunk, if its encoding failed
    /// Raw spans in the chunk, and the first and last one's turn (filled chunks only).
    bool has_raw = false;
    int64_t first_raw = 0, last_raw = 0;
  };
  RecordInput* records = nullptr;
  size_t n = 0;
  /// The batch in column form: each chunk fills and checks its rows before it encodes them
  /// (null: the rows were filled and validated before the job began).
  const BatchColumns* columns = nullptr;
  uint32_t max_text = 0;
  uint8_t* out = nullptr;
  uint64_t first_id = 0;
  uint64_t synced_end = 0;
  int fd = -1;
  uint64_t file_at = 0;  ///< file offset of out[0]
  std::unique_ptr<Chunk[]> chunks;
  size_t count = 0;
  size_t capacity = 0;
  std::atomic<size_t> next{0};
  std::atomic<size_t> turn{0};
  /// A chunk failed (stored after the failure fields): no later chunk is written, and no
  /// thread claims another.
  std::atomic<bool> stopped{false};
  /// Threads asleep in Await(), and what they sleep on. A wait is usually one chunk's
  /// pwrite (~10 µs), but that pwrite can block for milliseconds (dirty-page throttling),
  /// and a core spinning through it burns: a standalone script that delayed every pwrite by
  /// 5 ms saw 41,235 sched_yield calls in 534 ms with a spin-then-yield wait.
  std::atomic<uint32_t> sleepers{0};
  std::mutex mu;
  std::condition_variable cv;
  // Written only by the chunk whose turn it is.
  bool has_raw = false;      ///< raw turn order up to the last chunk written (filled
  int64_t last_raw = 0;      ///< chunks only), as ValidateBatch carries it
  uint64_t wrote = 0;        ///< bytes of the batch in the file
  size_t failed = SIZE_MAX;  ///< the chunk that stopped the batch
  int err = 0;               ///< its write's errno, or 0 for a bad record

  void Reserve(size_t want) {
    if (want <= capacity) return;
    chunks = std::make_unique<Chunk[]>(want);
    capacity = want;
  }
  /// Claims chunks until none is left or the batch stopped; encodes each and writes it in
  /// its turn. Both threads run this.
  void Work() {
    for (size_t c;
         !stopped.load(std::memory_order_acquire) && (c = next.fetch_add(1, std::memory_order_relaxed)) < count;) {
      Chunk& k = chunks[c];
      const bool ok =
          Prepare(k) && EncodeRecords(out + k.begin, records, k.from, k.to, n, first_id, synced_end, &k.bad);
      if (!WaitTurn(c)) return;
      if (!ok || !ContinuesTurnOrder(k)) {
        Stop(c, 0);
        return;
      }
      // Up to the multiple of kParallelChunk that the chunk's cut passed; the sliver of its
      // last record past it goes with the next chunk. The last chunk writes to the end.
      uint64_t to = k.end;
      if (c + 1 < count) {
        const uint64_t aligned = (file_at + k.end) & ~(kParallelChunk - 1);
        to = aligned > file_at + wrote ? aligned - file_at : wrote;
      }
      if (const int e = PwriteRange(fd, out, wrote, to, file_at); e != 0) {
        Stop(c, e);
        return;
      }
      wrote = to;
      turn.store(c + 1);
      Wake();
    }
  }
  /// Waits until every chunk before c is in the file. False if the batch stopped first.
  bool WaitTurn(size_t c) {
    Await([&] { return turn.load() == c || stopped.load(); });
    return turn.load() == c;
  }
  /// Done: every chunk written, or one stopped the batch.
  bool Finished() const { return turn.load() == count || stopped.load(); }
  /// Returns once ready() holds: spins for up to kAwaitSpin, then sleeps on cv. Whoever
  /// makes it hold calls Wake() after the store. No lost wake-up: the sleeper counts itself
  /// and then checks ready(), the waker stores and then reads the count, all sequentially
  /// consistent, so at least one of them sees the other; a waker that sees a sleeper takes
  /// mu, which the sleeper holds from its last check until cv.wait releases it.
  template <typename Ready>
  void Await(Ready ready) {
    if (ready()) return;
    const auto until = std::chrono::steady_clock::now() + kAwaitSpin;
    do {
      for (int i = 0; i < 64; ++i) {
        if (ready()) return;
        CpuRelax();
      }
    } while (std::chrono::steady_clock::now() < until);
    std::unique_lock<std::mutex> lock(mu);
    sleepers.fetch_add(1);
    while (!ready()) cv.wait(lock);
    sleepers.fetch_sub(1);
  }

 private:
  /// Fills the chunk's rows from the columns and checks them as ValidateBatch would, turn
  /// order within the chunk included. False at the first problem, which the appender then
  /// finds again with its message (AppendColumns).
  bool Prepare(Chunk& k) {
    if (columns == nullptr) return true;
    if (FillRows(*columns, records, k.from, k.to, max_text) != k.to) return false;
    k.has_raw = false;
    for (size_t i = k.from; i < k.to; ++i) {
      const bool had = k.has_raw;
      if (CheckRecord(records[i], max_text, &k.has_raw, &k.last_raw) != RecordFault::kNone) return false;
      if (!had && k.has_raw) k.first_raw = k.last_raw;
    }
    return true;
  }
  /// In turn: the chunk's first raw span does not go back behind the batch so far's last.
  bool ContinuesTurnOrder(const Chunk& k) {
    if (columns == nullptr || !k.has_raw) return true;
    if (has_raw && k.first_raw < last_raw) return false;
    has_raw = true;
    last_raw = k.last_raw;
    return true;
  }
  // A turn usually comes within one chunk's pwrite and encoding (10-30 µs on a 2-vCPU VM),
  // and a sleeping thread took 40-70 µs to wake there: spinning 1,024 pauses (~10 µs) before
  // sleeping made 10^4-span appends 7-11% slower (bench --only log, 3 alternations). A
  // pwrite blocked for milliseconds costs at most this much spinning per wait.
  static constexpr auto kAwaitSpin = std::chrono::microseconds(200);
  void Stop(size_t c, int error) {
    failed = c;
    err = error;
    stopped.store(true);
    Wake();
  }
  void Wake() {
    if (sleepers.load() == 0) return;
    { std::lock_guard<std::mutex> lock(mu); }
    cv.notify_all();
  }
};

/// The log's second thread: its share of a large Append()'s chunks (encode and write), only
/// between Begin() and End() on the appending thread. End() returns once the thread is out
/// of the job, so the job's records, staging buffer and chunk table are the appender's again.
class AppendHelper {
 public:
  ~AppendHelper() { Stop(); }
  /// Starts the thread. False if it cannot be made, or if the caller may run on one CPU
  /// only (two threads would take turns on it): the caller then works alone.
  bool Start() {
    pthread_attr_t attr;
    if (pthread_attr_init(&attr) != 0) return false;
    // Placement: a new thread is queued on its creator's CPU, where it waits behind the
    // appender (which does not block) until the periodic load balancer moves it. On the
    // 2-vCPU VM that took ~2 ms with the other CPU idle, longer than a whole 10^4-span
    // append: the helper joined no batch at all in 2 of 3 fresh logs (scheduler trace,
    // sched_wakeup_new target_cpu = the appender's). So it starts on any allowed CPU but
    // this one, and takes back the mask it inherited as soon as it runs (Run()).
    place_ = false;
    if (pthread_getaffinity_np(pthread_self(), sizeof inherited_, &inherited_) == 0) {
      if (CPU_COUNT(&inherited_) < 2) {
        pthread_attr_destroy(&attr);
        return false;
      }
      cpu_set_t elsewhere = inherited_;
      const int here = sched_getcpu();
      if (here >= 0 && here < CPU_SETSIZE) CPU_CLR(here, &elsewhere);
      place_ = CPU_COUNT(&elsewhere) > 0 && pthread_attr_setaffinity_np(&attr, sizeof elsewhere, &elsewhere) == 0;
    }
    int rc = pthread_create(&thread_, &attr, &AppendHelper::Main, this);
    pthread_attr_destroy(&attr);
    if (rc != 0 && place_) {
      // glibc applies the attribute's mask inside pthread_create, which then fails if that
      // is refused (a seccomp filter on sched_setaffinity): the hint is not worth the thread.
      place_ = false;
      rc = pthread_create(&thread_, nullptr, &AppendHelper::Main, this);
    }
    if (rc != 0) return false;
    running_ = true;
    // Named here, not in Run(), so the name is there as soon as Start() returns. Shown by
    // top -H, /proc/<pid>/task/*/comm and debuggers (15 characters at most).
    (void)pthread_setname_np(thread_, "spanguard-help");
    return true;
  }
  void Begin(ParallelBatch* job) {
    bool wake;
    {
      std::lock_guard<std::mutex> lock(mu_);
      job_ = job;
      open_.store(true, std::memory_order_relaxed);
      gen_.fetch_add(1, std::memory_order_release);
      wake = sleeping_;
    }
    // A polling thread sees gen_ move; only a sleeping one needs the futex.
    if (wake) cv_.notify_one();
  }
  void End() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      open_.store(false, std::memory_order_release);
    }
    // The thread leaves a job as soon as no chunk is left to claim. After a finished batch it
    // has at most a fetch_add left; after a stopped one, at most the encoding of the chunk
    // it holds (the batch stopped while it encoded), which a 16 MiB record makes long.
    for (unsigned spins = 0; active_.load(std::memory_order_acquire); ++spins) {
      if (spins < 4096) CpuRelax();
      else std::this_thread::yield();
    }
  }
  /// Joins the thread. Idempotent.
  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopped_ = true;
    }
    cv_.notify_one();
    if (running_) {
      (void)pthread_join(thread_, nullptr);
      running_ = false;
    }
  }

 private:
  /// Nothing to do: no new job.
  bool Idle(uint64_t seen) const { return gen_.load(std::memory_order_acquire) == seen; }
  static void* Main(void* self) {
    static_cast<AppendHelper*>(self)->Run();
    return nullptr;
  }
  void Run() {
    // Start() placed this thread away from the appender's CPU; from here on it may run
    // wherever its creator could when it was made. A failure leaves it on the other CPUs,
    // which only narrows where it runs.
    if (place_) (void)pthread_setaffinity_np(pthread_self(), sizeof inherited_, &inherited_);
    uint64_t seen = 0;
    for (;;) {
      // Poll before sleeping: an appender sending large batches back to back calls Begin()
      // again within tens of microseconds, less than a sleeping thread takes to wake here.
      const auto until = std::chrono::steady_clock::now() + kHelperSpin;
      while (Idle(seen) && std::chrono::steady_clock::now() < until) CpuRelax();
      ParallelBatch* job = nullptr;
      {
        std::unique_lock<std::mutex> lock(mu_);
        while (Idle(seen) && !stopped_) {
          sleeping_ = true;
          cv_.wait(lock);
          sleeping_ = false;
        }
        if (stopped_) return;
        if (gen_.load(std::memory_order_relaxed) != seen) {
          seen = gen_.load(std::memory_order_relaxed);
          // A job that already ended (the appender did it alone) is not entered.
          if (open_.load(std::memory_order_relaxed)) {
            job = job_;
            active_.store(true, std::memory_order_relaxed);
          }
        }
      }
      if (job != nullptr) {
        job->Work();
        active_.store(false, std::memory_order_release);
      }
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::atomic<uint64_t> gen_{0};
  std::atomic<bool> active_{false};
  std::atomic<bool> open_{false};  ///< written under mu_; read without it only to poll
  bool sleeping_ = false;
  bool stopped_ = false;
  ParallelBatch* job_ = nullptr;
  pthread_t thread_{};
  bool running_ = false;   ///< thread_ was created and not yet joined
  cpu_set_t inherited_{};  ///< the creator's CPU mask, taken back by Run()
  bool place_ = false;     ///< Start() narrowed the new thread's mask
};

}  // namespace spanguard
