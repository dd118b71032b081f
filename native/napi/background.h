// Work that runs off the JS thread and settles a promise on it: opening a log (recovery,
// mapping), loading an index file, reading its ids (on the libuv thread pool), saving an index,
// catching it up and group commit's fdatasync (on the write lane), and the lookups a search
// awaits (on the read lane: ThreadLane below). The event loop keeps serving timers and
// sockets while it runs; only the short hand-over runs on the JS thread.
//
// Opening has two halves: `prepare*` builds the engine object on the pool and resolves with
// an opaque handle (a type-tagged napi External), and the class constructor called with that
// handle as its last argument adopts the engine instead of building one (src/native.ts
// `openSpanLog` & co. do both). A handle is adopted at most once; one never adopted is freed
// by the collector with the engine it holds (closing its files and locks).
#pragma once

#include <napi.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/errors.h"
#include "log/span_source.h"
#include "napi/guard.h"

namespace spanguard {

/// How many background jobs were queued, how many ran, and how many of those ran on a thread
/// other than the one that queued them (every one, unless the pool is broken):
/// `_testing.background()`. A job is counted as queued when its call returns its promise; it
/// runs later (a vector search taken on the JS thread first still runs, doing nothing).
struct BackgroundCounters {
  std::atomic<uint64_t> queued{0};
  std::atomic<uint64_t> jobs{0};
  std::atomic<uint64_t> off_thread{0};
};
BackgroundCounters& Background();

/// Where a background job runs.
enum class Lane {
  /// The libuv thread pool: opens, loads, the audits' reads and the long BM25 walks.
  kPool,
  /// The write lane: the jobs an append waits for, group commit's fdatasync and the indexes'
  /// catch-up; and the indexes' saves (a catch-up waits for them).
  kWrite,
  /// The read lane: the vector lookups a search queues and goes on working beside.
  kRead,
};

/// Threads of the addon's own, one set per JS environment and lane, each lane for one kind of
/// job (a job never queues behind another kind), made when every thread of the lane is busy
/// (at most kMaxThreads; past that jobs queue among themselves, in order). A finished job is
/// handed back to the JS thread through a thread-safe function and settled there inside a
/// callback scope of its own (microtasks run after it, as after an AsyncWorker); the function
/// keeps the event loop alive only while a job is in the lane.
///
/// The write lane runs the jobs an append waits for: group commit's fdatasync, the indexes'
/// catch-up, and the indexes' saves (a catch-up waits for a save). Its threads run below the
/// JS thread's scheduling priority (background.cpp): their jobs are long and CPU-bound, the
/// JS thread's are short and late timers are what a host sees. On the libuv pool (four
/// threads unless the host set UV_THREADPOOL_SIZE, first come first served) those queued
/// behind whatever else the pool was given: a searcher's vector and BM25 lookups, whose cost
/// grows with the store, so the appends' cycle grew with it.
///
/// The read lane runs the vector lookups a search queues while its JS thread goes on with the
/// rest of the search (src/search.ts). A BM25 walk too long for the JS thread stays on the
/// pool: the search awaits it at once, leaving the JS thread's core to it. The read lane's
/// threads are kept off the core the JS thread was on when a job was queued, whenever the
/// process may use another (Linux: each submission points their CPU mask away from that core
/// when the JS thread has moved). A pool thread woken for such a lookup was often placed on the
/// JS thread's own core (a virtual machine's idle vCPU counts as busy to the guest's
/// scheduler) and preempted the JS thread for the whole lookup: the search waited for the job
/// it had queued so as to go on beside it.
class ThreadLane {
 public:
  /// A job: Run() on a lane thread, then Complete() on the JS thread.
  class Task {
   public:
    explicit Task(Napi::Env env, const char* name) : context_(env, name) {}
    virtual ~Task() = default;
    virtual void Run() = 0;
    virtual void Complete(Napi::Env env) = 0;

   private:
    friend class ThreadLane;
    Napi::AsyncContext context_;
  };

  /// Most threads a lane makes (a store keeps at most three jobs in the write lane at once: its
  /// log's sync and its two indexes' catch-up or save; the read lane's jobs wait for one
  /// another past this).
  static constexpr size_t kMaxThreads = 4;

  /// The environment's lane `lane` (kWrite or kRead), made on the first call (on the JS thread).
  static ThreadLane& Of(Napi::Env env, Lane lane);
  /// Queues `task`; on the JS thread.
  void Submit(std::unique_ptr<Task> task);
  /// Threads the lane has made (they stay until the environment's cleanup): a test that
  /// counts the process's threads leaves them out.
  size_t Threads() const;
  /// Jobs submitted to the lane so far (JS thread): a test seam.
  uint64_t Submitted() const { return submitted_; }
  /// The core the read lane's threads were last pointed away from (-1: none): a test seam.
  int OffCpu() const {
    std::lock_guard<std::mutex> lock(mu_);
    return off_cpu_;
  }

  ~ThreadLane();

 private:
  ThreadLane(Napi::Env env, Lane lane);
  void Loop();
  /// Read lane: points the threads' CPU mask away from the JS thread's core (`SetUp` applies
  /// it to a new thread). On the JS thread, under mu_.
  void SteerOffJsCpu();
  /// Run first by a lane thread: its priority (write) or its CPU mask (read).
  void SetUp();
  static void CallJs(napi_env env, napi_value, void* context, void* data);
  void Complete(Napi::Env env, Task* task);
  static void Cleanup(void* self);

  napi_env env_;
  Lane lane_;
  /// Hands a finished job to the JS thread; referenced (keeping the loop alive) only while a
  /// job is in the lane.
  napi_threadsafe_function tsfn_ = nullptr;
  size_t in_lane_ = 0;      ///< submitted, not yet completed (JS thread only)
  uint64_t submitted_ = 0;  ///< submitted so far (JS thread only)
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::unique_ptr<Task>> queued_;
  std::vector<std::thread> threads_;
  size_t idle_ = 0;
  bool stopping_ = false;
  /// Read lane (Linux): the CPUs the JS thread may use (read when the lane is made), the core
  /// the threads are kept off (-1: none yet), and their thread ids.
  std::vector<int> js_cpus_;
  int off_cpu_ = -1;
  std::vector<long> tids_;
};

/// What a background job does and how it settles, wherever it runs: `work` off the JS thread
/// (a typed NativeError, or any other failure as IO_ERROR, is kept), then on the JS thread
/// `settled` and the promise resolved with `done(env)` or rejected with the typed error.
class JobBody {
 public:
  using Work = std::function<void()>;
  using Done = std::function<Napi::Value(Napi::Env)>;
  using Settled = std::function<void()>;

  JobBody(Napi::Env env, Work work, Done done, Settled settled, Napi::Object receiver)
      : deferred_(Napi::Promise::Deferred::New(env)),
        work_(std::move(work)),
        done_(std::move(done)),
        settled_(std::move(settled)),
        queued_on_(std::this_thread::get_id()) {
    if (!receiver.IsEmpty()) receiver_ = Napi::Persistent(receiver);
    Background().queued.fetch_add(1, std::memory_order_relaxed);
  }
  Napi::Promise Promise() const { return deferred_.Promise(); }

  /// Off the JS thread.
  void Execute() {
    Background().jobs.fetch_add(1, std::memory_order_relaxed);
    if (std::this_thread::get_id() != queued_on_) Background().off_thread.fetch_add(1, std::memory_order_relaxed);
    try {
      work_();
    } catch (const NativeError& e) {
      code_ = e.code();
      message_ = e.what();
    } catch (const std::bad_alloc&) {
      code_ = "IO_ERROR";
      message_ = "out of memory";
    } catch (const std::exception& e) {
      code_ = "IO_ERROR";
      message_ = e.what();
    } catch (...) {
      code_ = "IO_ERROR";
      message_ = "unknown native failure";
    }
  }

  /// On the JS thread, once Execute returned.
  void Settle(Napi::Env env) {
    if (settled_) settled_();
    if (!code_.empty()) {
      deferred_.Reject(MakeTypedError(env, code_, message_).Value());
      return;
    }
    try {
      deferred_.Resolve(done_ ? done_(env) : env.Undefined());
    } catch (...) {
      deferred_.Reject(ConvertCurrentException(env).Value());
    }
  }

  /// On the JS thread, for a job the pool could not run.
  void Fail(const Napi::Error& e) {
    if (settled_) settled_();
    deferred_.Reject(e.Value());
  }

 private:
  Napi::Promise::Deferred deferred_;
  Napi::ObjectReference receiver_;
  Work work_;
  Done done_;
  Settled settled_;
  std::thread::id queued_on_;
  std::string code_;
  std::string message_;
};

/// Runs `work` on the pool (or on the write or read lane: ThreadLane); on the JS thread
/// afterwards resolves with `done(env)`, or rejects with the typed error `work` (or `done`)
/// threw. `receiver`, when given, is kept alive until the job settles (a wrap whose engine
/// the work uses). `settled` runs on the JS thread in either case, before the promise settles
/// (a wrap clears its busy flag there).
class BackgroundJob : public Napi::AsyncWorker {
 public:
  using Work = JobBody::Work;
  using Done = JobBody::Done;
  using Settled = JobBody::Settled;

  static Napi::Promise Queue(Napi::Env env, const char* name, Work work, Done done, Settled settled = nullptr,
                             Napi::Object receiver = Napi::Object(), Lane lane = Lane::kPool) {
    if (lane != Lane::kPool) {
      auto task = std::make_unique<LaneJob>(env, name, std::move(work), std::move(done), std::move(settled), receiver);
      Napi::Promise promise = task->body.Promise();
      ThreadLane::Of(env, lane).Submit(std::move(task));
      return promise;
    }
    auto* job = new BackgroundJob(env, name, std::move(work), std::move(done), std::move(settled), receiver);
    Napi::Promise promise = job->body_.Promise();
    job->Napi::AsyncWorker::Queue();
    return promise;
  }

 protected:
  void Execute() override { body_.Execute(); }
  void OnOK() override { body_.Settle(Env()); }
  void OnError(const Napi::Error& e) override { body_.Fail(e); }

 private:
  BackgroundJob(Napi::Env env, const char* name, Work work, Done done, Settled settled, Napi::Object receiver)
      : Napi::AsyncWorker(env, name), body_(env, std::move(work), std::move(done), std::move(settled), receiver) {}

  struct LaneJob final : ThreadLane::Task {
    LaneJob(Napi::Env env, const char* name, Work work, Done done, Settled settled, Napi::Object receiver)
        : ThreadLane::Task(env, name), body(env, std::move(work), std::move(done), std::move(settled), receiver) {}
    void Run() override { body.Execute(); }
    void Complete(Napi::Env env) override { body.Settle(env); }
    JobBody body;
  };

  JobBody body_;
};

/// An engine built on the pool, waiting for its class constructor to adopt it.
template <typename T>
struct Prepared {
  std::unique_ptr<T> engine;
};

/// Wraps `engine` in a handle tagged with `tag` (one tag per engine type, so a constructor
/// never adopts another type's handle).
template <typename T>
Napi::Value MakePrepared(Napi::Env env, std::unique_ptr<T> engine, const napi_type_tag& tag) {
  auto ext = Napi::External<Prepared<T>>::New(env, new Prepared<T>{std::move(engine)},
                                              [](Napi::Env, Prepared<T>* p) { delete p; });
  napi_type_tag_object(env, ext, &tag);
  return ext;
}

/// The engine a handle holds, taken out of it; null when `v` is undefined (build one here).
/// Throws INVALID_ARGUMENT for anything else, or a handle already adopted.
template <typename T>
std::unique_ptr<T> AdoptPrepared(Napi::Env env, const Napi::Value& v, const napi_type_tag& tag, const char* what) {
  if (v.IsUndefined()) return nullptr;
  bool ok = false;
  if (!v.IsExternal() || napi_check_object_type_tag(env, v, &tag, &ok) != napi_ok || !ok) {
    ThrowTyped(env, "INVALID_ARGUMENT",
               std::string(what) + ": the last argument must be a handle from its prepare call");
  }
  Prepared<T>* p = v.As<Napi::External<Prepared<T>>>().Data();
  if (!p->engine) ThrowTyped(env, "INVALID_ARGUMENT", std::string(what) + ": this handle was adopted already");
  return std::move(p->engine);
}

}  // namespace spanguard

namespace spanguard {

/// A source cut at `end` (at most the source's own next id): a catch-up over it indexes one
/// slice of the backlog, so a long catch-up can yield to the event loop between slices.
class SliceSource final : public SpanSource {
 public:
  SliceSource(const SpanSource& source, uint64_t end) : source_(source), end_(std::min(end, source.next_id())) {}
  uint64_t first_id() const override { return source_.first_id(); }
  uint64_t next_id() const override { return end_; }
  bool Read(uint64_t id, SpanView* out) const override { return id < end_ && source_.Read(id, out); }

 private:
  const SpanSource& source_;
  uint64_t end_;
};

/// A catch-up bound (limit, maxBytes): a positive integer or Infinity; undefined is Infinity.
inline double SliceBound(Napi::Env env, const Napi::Value& v, const char* name) {
  if (v.IsUndefined()) return INFINITY;
  const double l = v.IsNumber() ? v.As<Napi::Number>().DoubleValue() : -1;
  if (!(l >= 1) || (l != std::floor(l) && l != INFINITY)) {
    ThrowTyped(env, "INVALID_ARGUMENT", std::string("catchUp: ") + name + " must be a positive integer or Infinity");
  }
  return l;
}

/// Where a catch-up slice starts (the index's high water, or the source's first id), where
/// `limit` lets it end at most, and the bytes of text and metadata it may take (`maxBytes`).
/// Undefined means no bound; a bad bound is INVALID_ARGUMENT.
struct SliceRange {
  uint64_t from;
  uint64_t end;
  double max_bytes;
};
inline SliceRange SliceRangeOf(Napi::Env env, const Napi::Value& limit, const Napi::Value& max_bytes,
                               uint64_t high_water, const SpanSource& source) {
  const double l = SliceBound(env, limit, "limit");
  const double b = SliceBound(env, max_bytes, "maxBytes");
  const uint64_t from = std::max(high_water, source.first_id());
  const uint64_t end =
      l >= 9007199254740991.0 ? source.next_id() : std::min(source.next_id(), from + static_cast<uint64_t>(l));
  return {from, end, b};
}

/// The end of a catch-up slice: SliceRangeOf's range, cut after the record that reaches its
/// bytes (at least one record: indexing costs grow with the bytes, and one long tool output
/// costs what hundreds of short turns do).
inline uint64_t SliceEnd(Napi::Env env, const Napi::Value& limit, const Napi::Value& max_bytes, uint64_t high_water,
                         const SpanSource& source) {
  const SliceRange r = SliceRangeOf(env, limit, max_bytes, high_water, source);
  uint64_t end = r.end;
  if (std::isfinite(r.max_bytes)) {
    double bytes = 0;
    SpanView view;
    for (uint64_t id = r.from; id < end; ++id) {
      if (source.Read(id, &view)) bytes += static_cast<double>(view.text_len) + view.meta_len;
      if (bytes >= r.max_bytes) {
        end = id + 1;
        break;
      }
    }
  }
  return end;
}

}  // namespace spanguard

namespace spanguard {

/// A slice of a source's records, copied out of it on the thread that owns the source (the
/// JS thread, for a SpanLog: its mappings and id table change under appends and are read
/// nowhere else) so a catch-up can index it on the pool. Ids from `from` up to `end`, cut
/// after the record that reaches `max_bytes` of text and metadata (at least one record: as
/// SliceEnd cuts, in the same one pass over the records that copies them). An id the source
/// did not hold reads as absent here too (the index's catch-up says CORRUPT).
class CopiedSlice final : public SpanSource {
 public:
  CopiedSlice(const SpanSource& source, uint64_t from, uint64_t end, double max_bytes = INFINITY)
      // A source whose end lies below `from` (an index ahead of its log) keeps that end, so
      // the catch-up over this slice sees the index ahead and says CORRUPT.
      : from_(std::min(from, end)), end_(from_) {
    double bytes = 0;
    while (end_ < end && bytes < max_bytes) {
      Record r;
      r.present = source.Read(end_, &r.view);
      if (r.present) {
        r.text_at = bytes_.size();
        bytes_.append(r.view.text, r.view.text_len);
        r.meta_at = bytes_.size();
        bytes_.append(r.view.meta == nullptr ? "" : r.view.meta, r.view.meta == nullptr ? 0 : r.view.meta_len);
        bytes += static_cast<double>(r.view.text_len) + r.view.meta_len;
      }
      records_.push_back(r);
      ++end_;
    }
  }
  uint64_t first_id() const override { return from_; }
  uint64_t next_id() const override { return end_; }
  bool Read(uint64_t id, SpanView* out) const override {
    if (id < from_ || id >= end_) return false;
    const Record& r = records_[id - from_];
    if (!r.present) return false;
    *out = r.view;
    out->text = bytes_.data() + r.text_at;
    out->meta = bytes_.data() + r.meta_at;
    return true;
  }
  /// Text and metadata bytes of records [id, id + 1).
  size_t bytes_of(uint64_t id) const {
    const Record& r = records_[id - from_];
    return r.present ? r.view.text_len + r.view.meta_len : 0;
  }

 private:
  struct Record {
    SpanView view;  ///< text and meta pointers are rebased onto bytes_ when read
    bool present = false;
    size_t text_at = 0;
    size_t meta_at = 0;
  };
  uint64_t from_;
  uint64_t end_;
  std::string bytes_;
  std::vector<Record> records_;
};

/// catchUpAsync's slice: SliceRangeOf's range, copied out of `source` in one pass on the
/// calling thread (cut by bytes as SliceEnd cuts).
inline std::shared_ptr<CopiedSlice> CopySlice(Napi::Env env, const Napi::Value& limit, const Napi::Value& max_bytes,
                                              uint64_t high_water, const SpanSource& source) {
  const SliceRange r = SliceRangeOf(env, limit, max_bytes, high_water, source);
  return std::make_shared<CopiedSlice>(source, r.from, r.end, r.max_bytes);
}

/// The lock between an index's jobs off the JS thread (a catch-up's steps on the write lane, which
/// write; searchAsync's and idsAsync's reads on the pool)
/// and the JS thread's calls (search, phrase, ids, stats, high water, and the synchronous
/// add/catchUp). A catch-up holds it for one step at a time (a few KiB of text: about a
/// millisecond of indexing), and before each step lets the JS thread go first when it waits,
/// so a call on the JS thread waits at most one step and always sees the index as it stands
/// between records: every id below its high water indexed, none above. A long read on the pool
/// (a BM25 walk over millions of postings) polls Contended() and, once it has run kReadTurn,
/// lets the waiting side in (Pause): an append's catch-up then waits for a turn of a walk,
/// not for the whole walk, however long the store has grown. Sides are named by thread, not by
/// access: each side may read or write.
class IndexLock {
 public:
  /// How long a pausing read runs before it lets a waiting side in, and again after each pause:
  /// a walk keeps going (a turn between two steps) while a long catch-up's steps queue behind it.
  static constexpr std::chrono::microseconds kReadTurn{500};

  /// The JS thread, around a call on the index.
  std::unique_lock<std::mutex> JsThread() {
    waiting_.fetch_add(1, std::memory_order_acq_rel);
    std::unique_lock<std::mutex> held(mu_);
    waiting_.fetch_sub(1, std::memory_order_acq_rel);
    return held;
  }
  /// The JS thread, only when no one holds the lock now (owns_lock() false otherwise): a call
  /// that would rather not wait, such as a vector search it may run itself or leave to the pool.
  std::unique_lock<std::mutex> TryJsThread() { return std::unique_lock<std::mutex>(mu_, std::try_to_lock); }
  /// A read off the JS thread (on the pool), around its work.
  std::unique_lock<std::mutex> PoolJob() {
    while (waiting_.load(std::memory_order_acquire) > 0) std::this_thread::yield();
    return std::unique_lock<std::mutex>(mu_);
  }
  /// A catch-up step (on the write lane), around one step of its work: the JS thread first,
  /// then the step; counted while it waits, so a pausing read lets it in.
  std::unique_lock<std::mutex> Writer() {
    writers_.fetch_add(1, std::memory_order_acq_rel);
    while (waiting_.load(std::memory_order_acquire) > 0) std::this_thread::yield();
    std::unique_lock<std::mutex> held(mu_);
    granted_.fetch_add(1, std::memory_order_acq_rel);
    writers_.fetch_sub(1, std::memory_order_acq_rel);
    return held;
  }
  /// Whether the JS thread or a catch-up step waits for the lock.
  bool Contended() const noexcept {
    return waiting_.load(std::memory_order_relaxed) > 0 || writers_.load(std::memory_order_relaxed) > 0;
  }
  /// Releases `held` until those waiting have had it once (the JS thread's call, one catch-up
  /// step), then takes it back. The caller re-reads whatever it holds pointers into.
  void Pause(std::unique_lock<std::mutex>& held) {
    const uint64_t granted = granted_.load(std::memory_order_acquire);
    const bool writer = writers_.load(std::memory_order_acquire) > 0;
    held.unlock();
    while (writer && granted_.load(std::memory_order_acquire) == granted) std::this_thread::yield();
    while (waiting_.load(std::memory_order_acquire) > 0) std::this_thread::yield();
    held.lock();
  }

 private:
  std::mutex mu_;
  std::atomic<uint32_t> waiting_{0};
  std::atomic<uint32_t> writers_{0};
  std::atomic<uint64_t> granted_{0};  ///< catch-up steps that took the lock
};

/// A pausing read's clock (IndexLock::Pause): whether the reader has run its turn and another
/// side waits. Polled every few hundred postings; the clock is read only when someone waits.
class ReadTurn {
 public:
  explicit ReadTurn(IndexLock* lock) : lock_(lock), since_(std::chrono::steady_clock::now()) {}
  bool Due() const { return lock_->Contended() && std::chrono::steady_clock::now() - since_ >= IndexLock::kReadTurn; }
  void Pause(std::unique_lock<std::mutex>& held) {
    lock_->Pause(held);
    since_ = std::chrono::steady_clock::now();
  }

 private:
  IndexLock* lock_;
  std::chrono::steady_clock::time_point since_;
};

/// An index's idsAsync: on the pool, `collect(&ids)` under `lock`'s pool side, then
/// `finish(&ids)` outside it (a sort, for an index that keeps its ids unordered) and the
/// conversion to doubles; the promise resolves with a Float64Array (one copy on the JS
/// thread). `*reading` counts the job until it settles (the wrap refuses release and close
/// meanwhile); `receiver` is kept alive until then.
template <typename Collect, typename Finish>
Napi::Promise QueueIdsRead(Napi::Env env, const char* name, IndexLock* lock, uint32_t* reading, Napi::Object receiver,
                           Collect collect, Finish finish) {
  auto ids = std::make_shared<std::vector<double>>();
  ++*reading;
  return BackgroundJob::Queue(
      env, name,
      [lock, ids, collect, finish]() {
        std::vector<uint64_t> held_ids;
        {
          auto held = lock->PoolJob();
          collect(&held_ids);
        }
        finish(&held_ids);
        ids->assign(held_ids.begin(), held_ids.end());
      },
      [ids](Napi::Env e) -> Napi::Value {
        Napi::Float64Array out = Napi::Float64Array::New(e, ids->size());
        if (!ids->empty()) std::memcpy(out.Data(), ids->data(), ids->size() * sizeof(double));
        return out;
      },
      [reading]() { --*reading; }, receiver);
}

/// Runs a catch-up over `slice` in steps of about `step_bytes` of text and metadata (at least
/// one record each): for each step, `prepare(end)` without the lock, then `apply(end)` under
/// `lock`'s writer side (Writer), which indexes the slice's records below `end` (a catch-up
/// over SliceSource(slice, end)). The vector index prepares by embedding the step's records
/// (most of its work, and it reads nothing a search changes), so a search holding the lock
/// costs its catch-up only the wait past that; the lexical index does all of a step under the
/// lock (CatchUpInSteps with one callable). Pool side of catchUpAsync.
template <typename Prepare, typename Apply>
void CatchUpInSteps(const CopiedSlice& slice, size_t step_bytes, IndexLock& lock, Prepare prepare, Apply apply) {
  uint64_t id = slice.first_id();
  const uint64_t end = slice.next_id();
  do {
    size_t bytes = 0;
    uint64_t cut = id;
    while (cut < end && (cut == id || bytes < step_bytes)) bytes += slice.bytes_of(cut++);
    prepare(cut);
    auto held = lock.Writer();
    apply(cut);
    id = cut;
  } while (id < end);
}

template <typename Step>
void CatchUpInSteps(const CopiedSlice& slice, size_t step_bytes, IndexLock& lock, Step step) {
  CatchUpInSteps(
      slice, step_bytes, lock, [](uint64_t) {}, step);
}

}  // namespace spanguard
