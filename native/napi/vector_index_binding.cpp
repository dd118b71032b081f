// JS surface of the vector index (src/native.ts NativeVectorIndex) and `simdIsa()`.
// Every call validates its arguments before touching the engine; engine failures arrive as
// NativeError and leave as typed JS errors. Batches cross the boundary as typed arrays.
#include <napi.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/errors.h"
#include "embed/embedder.h"
#include "log/span_source.h"
#include "napi/background.h"
#include "napi/bindings.h"
#include "napi/guard.h"
#include "vector/vector_index.h"

namespace spanguard {

namespace {

constexpr double kMaxSafeInteger = 9007199254740991.0;
/// From bench/vector-crossover.bench.ts on the 2-core Sapphire Rapids box, 256-dim real-turn
/// embeddings, top-10 p50, f16: the binary strategy (rerank pool 1,024) overtakes the exact
/// scan between 2,000 and 3,000 vectors (2,000: scan 36 us, binary 45 us; 3,000: 60 vs
/// 48 us; its recall@10 against the scan is 1.000 up to 6,000 and 0.999 at 8,000 and
/// 16,000); f32 crosses between 1,000 and 2,000. (HNSW crossed between 1,000 and 2,000.)
constexpr uint64_t kDefaultExactBelow = 2500;
// One locked step of a pool catch-up: text bytes embedded and indexed (~1 ms), the longest a
// search on the JS thread waits for it.
constexpr size_t kVectorStepBytes = 16 << 10;
// Marks the handle prepareVectorIndex resolves with (an index opened on the thread pool).
constexpr napi_type_tag kPreparedVectorTag = {0xc248e61f95a03d7bULL, 0x17f3b8d04a6e92c5ULL};

[[noreturn]] void Invalid(Napi::Env env, const std::string& msg) { ThrowTyped(env, "INVALID_ARGUMENT", msg); }

uint8_t KindArg(Napi::Env env, const Napi::Value& v, const char* what) {
  if (!v.IsNumber()) Invalid(env, std::string(what) + ": kind must be 1 (raw) or 2 (summary)");
  double k = v.As<Napi::Number>().DoubleValue();
  if (k != 1 && k != 2) Invalid(env, std::string(what) + ": kind must be 1 (raw) or 2 (summary)");
  return static_cast<uint8_t>(k);
}

class VectorIndexWrap : public Napi::ObjectWrap<VectorIndexWrap> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(
        env, "VectorIndex",
        {InstanceAccessor<&VectorIndexWrap::Dims>("dims"), InstanceMethod<&VectorIndexWrap::HighWater>("highWater"),
         InstanceMethod<&VectorIndexWrap::CatchUp>("catchUp"),
         InstanceMethod<&VectorIndexWrap::CatchUpAsync>("catchUpAsync"), InstanceMethod<&VectorIndexWrap::Add>("add"),
         InstanceMethod<&VectorIndexWrap::Search>("search"),
         InstanceMethod<&VectorIndexWrap::SearchBegin>("searchBegin"),
         InstanceMethod<&VectorIndexWrap::SearchEnd>("searchEnd"),
         InstanceMethod<&VectorIndexWrap::SearchAsync>("searchAsync"),
         InstanceMethod<&VectorIndexWrap::SearchTake>("searchTake"),
         InstanceMethod<&VectorIndexWrap::HoldAsync>("_holdAsync"), InstanceMethod<&VectorIndexWrap::Save>("save"),
         InstanceMethod<&VectorIndexWrap::SaveAsync>("saveAsync"), InstanceMethod<&VectorIndexWrap::Stats>("stats"),
         InstanceMethod<&VectorIndexWrap::Ids>("ids"), InstanceMethod<&VectorIndexWrap::IdsAsync>("idsAsync"),
         InstanceMethod<&VectorIndexWrap::Close>("close"), InstanceMethod<&VectorIndexWrap::CloseAsync>("closeAsync")});
  }

  /// (dir, options) as the constructor and prepareVectorIndex take them.
  static VectorIndexOptions ParseOptions(const Napi::CallbackInfo& info, std::string* dir_out) {
    Napi::Env env = info.Env();
    if (info.Length() < 1 || !info[0].IsString()) Invalid(env, "VectorIndex: dir must be a string");
    std::string dir = info[0].As<Napi::String>().Utf8Value();
    if (dir.empty()) Invalid(env, "VectorIndex: dir must not be empty");
    VectorIndexOptions opts;
    opts.exact_below = kDefaultExactBelow;
    if (info.Length() >= 2 && !info[1].IsUndefined()) {
      if (!info[1].IsObject()) Invalid(env, "VectorIndex: options must be an object");
      Napi::Object o = info[1].As<Napi::Object>();
      Napi::Value dims = o.Get("dims");
      if (!dims.IsUndefined()) {
        double d = dims.IsNumber() ? dims.As<Napi::Number>().DoubleValue() : -1;
        if (!(d >= Embedder::kMinDims && d <= Embedder::kMaxDims) || d != std::floor(d)) {
          Invalid(env, "VectorIndex: dims must be an integer in [8, 4096]");
        }
        opts.dims = static_cast<uint32_t>(d);
      }
      Napi::Value scalar = o.Get("scalar");
      if (!scalar.IsUndefined()) {
        std::string s = scalar.IsString() ? scalar.As<Napi::String>().Utf8Value() : "";
        if (s == "f32") opts.scalar = VectorScalar::kF32;
        else if (s == "f16") opts.scalar = VectorScalar::kF16;
        else if (s == "i8") opts.scalar = VectorScalar::kI8;
        else Invalid(env, "VectorIndex: scalar must be 'f32', 'f16' or 'i8'");
      }
      Napi::Value eb = o.Get("exactBelow");
      if (!eb.IsUndefined()) {
        double e = eb.IsNumber() ? eb.As<Napi::Number>().DoubleValue() : -1;
        if (!(e >= 0) || (std::isfinite(e) && e != std::floor(e))) {
          Invalid(env, "VectorIndex: exactBelow must be a non-negative integer (or Infinity)");
        }
        opts.exact_below = std::isfinite(e) && e < 1.8e19 ? static_cast<uint64_t>(e) : ~0ull;
      }
      auto size_opt = [&](const char* name, size_t* out, double lo, double hi) {
        Napi::Value v = o.Get(name);
        if (v.IsUndefined()) return;
        double x = v.IsNumber() ? v.As<Napi::Number>().DoubleValue() : -1;
        if (!(x >= lo && x <= hi) || x != std::floor(x)) {
          Invalid(env, std::string("VectorIndex: ") + name + " must be an integer in [" + std::to_string((int)lo) +
                           ", " + std::to_string((int)hi) + "]");
        }
        *out = static_cast<size_t>(x);
      };
      Napi::Value ro = o.Get("readOnly");
      if (!ro.IsUndefined()) {
        if (!ro.IsBoolean()) Invalid(env, "VectorIndex: readOnly must be a boolean");
        opts.read_only = ro.As<Napi::Boolean>().Value();
      }
      Napi::Value mr = o.Get("mapRows");
      if (!mr.IsUndefined()) {
        if (!mr.IsBoolean()) Invalid(env, "VectorIndex: mapRows must be a boolean");
        opts.map_rows = mr.As<Napi::Boolean>().Value();
      }
      Napi::Value ann = o.Get("ann");
      if (!ann.IsUndefined()) {
        std::string a = ann.IsString() ? ann.As<Napi::String>().Utf8Value() : "";
        if (a == "binary") opts.ann = VectorAnn::kBinary;
        else if (a == "hnsw") opts.ann = VectorAnn::kHnsw;
        else Invalid(env, "VectorIndex: ann must be 'binary' or 'hnsw'");
      }
      size_opt("rerankMin", &opts.rerank_min, 1, 1e7);
      Napi::Value share = o.Get("rerankShare");
      if (!share.IsUndefined()) {
        double x = share.IsNumber() ? share.As<Napi::Number>().DoubleValue() : -1;
        if (!(x >= 0 && x <= 1)) Invalid(env, "VectorIndex: rerankShare must be a number in [0, 1]");
        opts.rerank_share = x;
      }
      Napi::Value pa = o.Get("partitionAbove");
      if (!pa.IsUndefined()) {
        double e = pa.IsNumber() ? pa.As<Napi::Number>().DoubleValue() : -1;
        if (!(e >= 64) || (std::isfinite(e) && e != std::floor(e))) {
          Invalid(env, "VectorIndex: partitionAbove must be an integer >= 64 (or Infinity: never partition)");
        }
        opts.partition_above = std::isfinite(e) && e < 1.8e19 ? static_cast<uint64_t>(e) : ~0ull;
      }
      size_opt("probeMin", &opts.probe_min, 1, 1e9);
      Napi::Value probe_share = o.Get("probeShare");
      if (!probe_share.IsUndefined()) {
        double x = probe_share.IsNumber() ? probe_share.As<Napi::Number>().DoubleValue() : -1;
        if (!(x >= 0 && x <= 1)) Invalid(env, "VectorIndex: probeShare must be a number in [0, 1]");
        opts.probe_share = x;
      }
      Napi::Value probe_margin = o.Get("probeMargin");
      if (!probe_margin.IsUndefined()) {
        double x = probe_margin.IsNumber() ? probe_margin.As<Napi::Number>().DoubleValue() : -1;
        if (!(x >= 0)) Invalid(env, "VectorIndex: probeMargin must be a number >= 0 (or Infinity)");
        opts.probe_margin = x;
      }
      size_opt("probeRerank", &opts.probe_rerank, 1, 1e9);
      size_opt("searchThreads", &opts.search_threads, 1, 2);
      size_opt("connectivity", &opts.connectivity, 2, 256);
      size_opt("expansionAdd", &opts.expansion_add, 1, 4096);
      size_opt("expansionSearch", &opts.expansion_search, 1, 4096);
    }
    *dir_out = std::move(dir);
    return opts;
  }

  ~VectorIndexWrap() { StopHelper(); }

  explicit VectorIndexWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<VectorIndexWrap>(info) {
    Guard(info.Env(), [&] {
      Napi::Env env = info.Env();
      std::string dir;
      const VectorIndexOptions opts = ParseOptions(info, &dir);
      // An index opened on the thread pool (prepareVectorIndex) is adopted, not opened again.
      index_ = AdoptPrepared<VectorIndex>(env, info.Length() > 2 ? info[2] : env.Undefined(), kPreparedVectorTag,
                                          "VectorIndex");
      if (index_ && index_->dims() != opts.dims)
        Invalid(env, "VectorIndex: the handle was prepared with other options");
      if (!index_) index_ = std::make_unique<VectorIndex>(dir, opts);
      dims_ = opts.dims;
      high_water_.store(index_->high_water(), std::memory_order_release);
    });
  }

  static Napi::Value Prepare(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    return GuardAsync(env, [&]() -> Napi::Value {
      std::string dir;
      const VectorIndexOptions opts = ParseOptions(info, &dir);
      auto slot = std::make_shared<std::unique_ptr<VectorIndex>>();
      return BackgroundJob::Queue(
          env, "spanguard:openVector", [slot, dir, opts]() { *slot = std::make_unique<VectorIndex>(dir, opts); },
          [slot](Napi::Env e) { return MakePrepared<VectorIndex>(e, std::move(*slot), kPreparedVectorTag); });
    });
  }

 private:
  std::unique_ptr<VectorIndex> index_;
  uint32_t dims_ = 0;
  std::vector<uint64_t> ids_;
  std::vector<uint64_t> out_ids_;
  std::vector<float> out_dist_;

  /// The engine, or a typed CLOSED error after close(). A search begun by searchBegin is
  /// finished first (its result kept for searchEnd): the engine runs one call at a time.
  VectorIndex& live(Napi::Env env) {
    Settle();
    if (!index_) ThrowTyped(env, "CLOSED", "the vector index is closed");
    return *index_;
  }

  // ---- a search overlapped with the caller's other work ----------------------------------
  // searchBegin hands one search to a helper thread and returns; the caller goes on (hybrid
  // search runs its exact-phrase and BM25 lookups meanwhile) and searchEnd returns the hits.
  // The signature scan reads every row's 64 bytes (memory-bound, ~2 ms at 10^6 rows) while
  // BM25 walks postings: on two cores the two overlap. If the helper has not started when
  // searchEnd (or any other call) comes, the calling thread runs the search itself, so a busy
  // machine costs the overlap, not a wait for a core. Every other call finishes a begun search
  // first (live()), so the engine never runs two calls at once.
  enum class Job : uint8_t { kIdle, kQueued, kRunning, kDone };
  struct Pending {
    std::vector<float> query;
    size_t k = 0;
    uint8_t kind = 0;
    bool exact = false;
    std::vector<uint64_t> ids;
    std::vector<float> dist;
    size_t got = 0;
    std::exception_ptr error;
  };
  std::mutex job_mu_;
  std::condition_variable job_cv_;
  Job job_ = Job::kIdle;
  bool stop_ = false;
  Pending pending_;
  std::thread helper_;

  void RunPending() {
    try {
      // Under the JS-thread side of the lock: a pool catch-up's steps change the namespace meanwhile.
      auto held = lock_.JsThread();
      pending_.got = index_->Search(pending_.query.data(), pending_.k, pending_.kind, pending_.exact,
                                    pending_.ids.data(), pending_.dist.data());
    } catch (...) {
      pending_.error = std::current_exception();
    }
  }

  void HelperLoop() {
    std::unique_lock<std::mutex> lock(job_mu_);
    for (;;) {
      job_cv_.wait(lock, [&] { return stop_ || job_ == Job::kQueued; });
      if (stop_) return;
      job_ = Job::kRunning;
      lock.unlock();
      RunPending();
      lock.lock();
      job_ = Job::kDone;
      job_cv_.notify_all();
    }
  }

  /// Finishes a begun search: runs it here if the helper has not taken it, else waits.
  void Settle() {
    std::unique_lock<std::mutex> lock(job_mu_);
    if (job_ == Job::kQueued) {
      job_ = Job::kRunning;
      lock.unlock();
      RunPending();
      lock.lock();
      job_ = Job::kDone;
      return;
    }
    job_cv_.wait(lock, [&] { return job_ != Job::kRunning; });
  }

  void StopHelper() {
    Settle();
    if (!helper_.joinable()) return;
    {
      std::lock_guard<std::mutex> lock(job_mu_);
      stop_ = true;
    }
    job_cv_.notify_all();
    helper_.join();
  }

  bool saving_ = false;    ///< a saveAsync is running (on the write lane)
  bool catching_ = false;  ///< a catchUpAsync is running (on the write lane)
  uint32_t reading_ = 0;   ///< idsAsync reads (pool) and searchAsync searches (read lane) running

  /// One searchAsync: its arguments and hits, and who runs it (the read lane, or searchTake on
  /// the JS thread, whichever takes it from kQueued first).
  struct AsyncSearch {
    enum : uint8_t { kQueued, kRunning, kDone, kFailed };
    std::atomic<uint8_t> state{kQueued};
    std::vector<float> query;
    size_t k = 0;
    uint8_t kind = 0;
    bool exact = false;
    bool chosen = false;  ///< the caller named a strategy
    std::vector<uint64_t> ids;
    std::vector<float> dist;
    size_t got = 0;
    std::exception_ptr error;  ///< searchTake's run failed (the promise rejects with it)
    /// Under the index's lock (either side).
    void Run(const VectorIndex& ix) {
      ids.resize(k);
      dist.resize(k);
      const bool ex = chosen ? exact : ix.exact_for(kind);
      got = ix.Search(query.data(), k, kind, ex, ids.data(), dist.data());
    }
  };
  struct InFlight {
    Napi::ObjectReference promise;
    std::shared_ptr<AsyncSearch> job;
  };
  /// searchAsync searches not yet settled on the JS thread (searchTake finds its job here).
  std::vector<InFlight> in_flight_;
  IndexLock lock_;  ///< between a catchUpAsync's steps and reads on the JS thread or the pool
  /// The index's high water as its writers leave it (highWater() reads it without lock_).
  std::atomic<uint64_t> high_water_{0};
  /// Copies the index's high water into the mirror when a write ends, however it ends.
  struct MirrorHighWater {
    const VectorIndex* ix;
    std::atomic<uint64_t>* to;
    ~MirrorHighWater() { to->store(ix->high_water(), std::memory_order_release); }
  };
  /// The embedder a catchUpAsync embeds with, kept alive until it settles.
  Napi::ObjectReference embedder_ref_;

  /// The engine for a call that changes it (or closes it): refused while a save or a pool
  /// catch-up runs.
  VectorIndex& writable(Napi::Env env) {
    VectorIndex& ix = live(env);
    if (saving_)
      ThrowTyped(env, "INVALID_ARGUMENT", "the vector index is being saved; it cannot change until the save settles");
    if (catching_)
      ThrowTyped(env, "INVALID_ARGUMENT",
                 "the vector index is being caught up on the thread pool; it cannot change until that settles");
    return ix;
  }

  Napi::Value Dims(const Napi::CallbackInfo& info) {
    return Guard(info.Env(), [&]() -> Napi::Value { return Napi::Number::New(info.Env(), dims_); });
  }

  // highWater() reads the mirror the writers keep (high_water_), not the index under lock_: a
  // lane search holds the lock for its whole scan (tens of ms at 10^7 rows), a catch-up step
  // for its store (longer when a column outgrows its block), and the catch-up loop asks for
  // the high water on the JS thread after every job.
  Napi::Value HighWater(const Napi::CallbackInfo& info) {
    return Guard(info.Env(), [&]() -> Napi::Value {
      live(info.Env());  // it may finish a begun search
      return Napi::Number::New(info.Env(), static_cast<double>(high_water_.load(std::memory_order_acquire)));
    });
  }

  // ids(kind) → Float64Array of the span ids with a vector in that namespace, ascending.
  Napi::Value Ids(const Napi::CallbackInfo& info) {
    return Guard(info.Env(), [&]() -> Napi::Value {
      Napi::Env env = info.Env();
      if (info.Length() < 1 || !info[0].IsNumber()) {
        ThrowTyped(env, "INVALID_ARGUMENT", "ids(kind) expects a record kind");
        return env.Undefined();
      }
      std::vector<uint64_t> ids;
      VectorIndex& ix = live(env);  // before the lock: it may finish a begun search
      auto held = lock_.JsThread();
      ix.SpanIds(static_cast<uint8_t>(info[0].As<Napi::Number>().Uint32Value()), &ids);
      Napi::Float64Array out = Napi::Float64Array::New(env, ids.size());
      for (size_t i = 0; i < ids.size(); ++i) out[i] = static_cast<double>(ids[i]);
      return out;
    });
  }

  // idsAsync(kind) → Promise<Float64Array>: ids(kind) read on the thread pool (at 10^6 spans
  // the walk over duplicates' aliases and the sort take tens of ms). The index is read under
  // lock_ (a catch-up's steps wait for it, and it for them), sorted after the lock is let go;
  // close and closeAsync throw INVALID_ARGUMENT until it settles.
  Napi::Value IdsAsync(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    return GuardAsync(env, [&]() -> Napi::Value {
      if (info.Length() < 1 || !info[0].IsNumber()) Invalid(env, "idsAsync(kind) expects a record kind");
      const uint8_t kind = static_cast<uint8_t>(info[0].As<Napi::Number>().Uint32Value());
      const VectorIndex* ix = &live(env);  // before the lock: it may finish a begun search
      return QueueIdsRead(
          env, "spanguard:idsVector", &lock_, &reading_, Value(),
          [ix, kind](std::vector<uint64_t>* ids) { ix->CollectSpanIds(kind, ids); },
          [](std::vector<uint64_t>* ids) {
            // Aliases of duplicate vectors name a span more than once, in no order.
            std::sort(ids->begin(), ids->end());
            ids->erase(std::unique(ids->begin(), ids->end()), ids->end());
          });
    });
  }

  /// Refuses to close the engine while an idsAsync or a searchAsync reads it off this thread.
  void RefuseWhileRead(Napi::Env env) const {
    if (reading_ > 0)
      ThrowTyped(env, "INVALID_ARGUMENT",
                 "the vector index is being read off the JS thread; it cannot close until that settles");
  }

  /// Releases the vectors file (and its lock) and the memory. Does not save. Idempotent.
  Napi::Value Close(const Napi::CallbackInfo& info) {
    return Guard(info.Env(), [&]() -> Napi::Value {
      RefuseWhileRead(info.Env());
      if (index_) writable(info.Env());
      StopHelper();
      index_.reset();
      return info.Env().Undefined();
    });
  }

  // closeAsync() → Promise<boolean>: close() with the engine destroyed on the thread pool
  // (at 10^6 vectors, hundreds of MB of rows, signatures and graph freed and the vectors
  // file unmapped: tens of ms on the JS thread). Later calls throw CLOSED at once; the
  // vectors file's lock is released when the promise settles. Resolves true when this call
  // released the engine, false when it was closed already. Refused like close() while a
  // save or a pool catch-up runs.
  Napi::Value CloseAsync(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    return GuardAsync(env, [&]() -> Napi::Value {
      RefuseWhileRead(env);
      if (index_) writable(env);
      StopHelper();
      auto engine = std::make_shared<std::unique_ptr<VectorIndex>>(std::move(index_));
      auto released = std::make_shared<bool>(false);
      return BackgroundJob::Queue(
          env, "spanguard:closeVector",
          [engine, released]() {
            *released = *engine != nullptr;
            engine->reset();
          },
          [released](Napi::Env e) { return Napi::Boolean::New(e, *released); });
    });
  }

  Napi::Value CatchUp(const Napi::CallbackInfo& info) {
    return Guard(info.Env(), [&]() -> Napi::Value {
      Napi::Env env = info.Env();
      if (info.Length() < 2) Invalid(env, "catchUp(log, embedder): two arguments expected");
      SpanSource* source = UnwrapSpanSource(env, info[0]);
      const Embedder* embedder = UnwrapEmbedder(env, info[1]);
      VectorIndex& ix = writable(env);
      // catchUp(log, embedder, limit, maxBytes): one slice of a backlog (SliceEnd).
      const uint64_t end = SliceEnd(env, info.Length() > 2 ? info[2] : env.Undefined(),
                                    info.Length() > 3 ? info[3] : env.Undefined(), ix.high_water(), *source);
      const SliceSource slice(*source, end);
      auto held = lock_.JsThread();               // an idsAsync may be reading on the pool
      MirrorHighWater mirror{&ix, &high_water_};  // also when it throws part way
      size_t n = ix.CatchUp(slice, *embedder);
      return Napi::Number::New(env, static_cast<double>(n));
    });
  }

  // catchUpAsync(log, embedder, limit, maxBytes) → Promise<number>: catchUp's slice, embedded
  // and indexed on the thread pool. The slice's records are copied out of the log here, on
  // the JS thread; the pool indexes the copy in steps under lock_ (searches meanwhile wait at
  // most one step). Until it settles add, catchUp, catchUpAsync, save and close throw
  // INVALID_ARGUMENT. Resolves with the vectors added; a failure rejects with its code.
  Napi::Value CatchUpAsync(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    return GuardAsync(env, [&]() -> Napi::Value {
      if (info.Length() < 2) Invalid(env, "catchUpAsync(log, embedder): two arguments expected");
      SpanSource* source = UnwrapSpanSource(env, info[0]);
      const Embedder* embedder = UnwrapEmbedder(env, info[1]);
      VectorIndex* ix = &writable(env);
      auto slice = CopySlice(env, info.Length() > 2 ? info[2] : env.Undefined(),
                             info.Length() > 3 ? info[3] : env.Undefined(), ix->high_water(), *source);
      auto added = std::make_shared<size_t>(0);
      catching_ = true;
      embedder_ref_ = Napi::Persistent(info[1].As<Napi::Object>());
      IndexLock* lock = &lock_;
      return BackgroundJob::Queue(
          env, "spanguard:catchUpVector",
          [ix, embedder, lock, slice, added, high_water = &high_water_]() {
            // Each step's records are embedded before the step takes the lock (only this job
            // moves the high water meanwhile: add and catchUp are refused until it settles).
            ix->CheckEmbedder(*embedder);
            std::vector<VectorIndex::Embedded> ready;
            size_t ready_count = 0;
            CatchUpInSteps(
                *slice, kVectorStepBytes, *lock,
                [&](uint64_t cut) {
                  const SliceSource source(*slice, cut);
                  uint64_t from = std::max(ix->high_water(), source.first_id());
                  ready_count = 0;
                  while (from < cut) {
                    if (ready.size() <= ready_count) ready.emplace_back();
                    ix->EmbedBatch(source, *embedder, from, &ready[ready_count]);
                    from = ready[ready_count++].next;
                  }
                },
                [&](uint64_t) {
                  MirrorHighWater mirror{ix, high_water};
                  for (size_t i = 0; i < ready_count; ++i) *added += ix->Store(ready[i]);
                });
          },
          [added](Napi::Env e) { return Napi::Number::New(e, static_cast<double>(*added)); },
          [this]() {
            catching_ = false;
            embedder_ref_.Reset();
          },
          Value(), Lane::kWrite);
    });
  }

  Napi::Value Add(const Napi::CallbackInfo& info) {
    return Guard(info.Env(), [&]() -> Napi::Value {
      Napi::Env env = info.Env();
      VectorIndex& ix = writable(env);
      if (info.Length() < 3 || !info[0].IsTypedArray() || !info[1].IsTypedArray() || !info[2].IsTypedArray()) {
        Invalid(env, "add(ids: Float64Array, kinds: Uint8Array, vectors: Float32Array)");
      }
      auto ids = info[0].As<Napi::TypedArray>();
      auto kinds = info[1].As<Napi::TypedArray>();
      auto vecs = info[2].As<Napi::TypedArray>();
      if (ids.TypedArrayType() != napi_float64_array) Invalid(env, "add: ids must be a Float64Array");
      if (kinds.TypedArrayType() != napi_uint8_array) Invalid(env, "add: kinds must be a Uint8Array");
      if (vecs.TypedArrayType() != napi_float32_array) Invalid(env, "add: vectors must be a Float32Array");
      const size_t n = ids.ElementLength();
      if (kinds.ElementLength() != n) Invalid(env, "add: ids and kinds differ in length");
      const size_t dims = ix.dims();
      if (vecs.ElementLength() != n * dims) {
        ThrowTyped(env, "DIMENSION_MISMATCH",
                   "add: expected " + std::to_string(n) + " x " + std::to_string(dims) + " = " +
                       std::to_string(n * dims) + " floats, got " + std::to_string(vecs.ElementLength()));
      }
      const double* id_d = ids.As<Napi::Float64Array>().Data();
      ids_.resize(n);
      for (size_t i = 0; i < n; ++i) {
        double d = id_d[i];
        if (!(d >= 0 && d <= kMaxSafeInteger) || d != std::floor(d)) {
          Invalid(env, "add: ids[" + std::to_string(i) + "] is not a span id (a non-negative safe integer)");
        }
        ids_[i] = static_cast<uint64_t>(d);
      }
      const uint8_t* k = kinds.As<Napi::Uint8Array>().Data();
      const float* v = vecs.As<Napi::Float32Array>().Data();
      auto held = lock_.JsThread();  // an idsAsync may be reading on the pool
      MirrorHighWater mirror{&ix, &high_water_};
      ix.Add(ids_.data(), k, v, n);
      return env.Undefined();
    });
  }

  /// The arguments of search / searchBegin (query, k, kind, strategy?), validated.
  struct SearchArgs {
    const float* query;
    size_t k;
    uint8_t kind;
    bool exact;
  };
  /// `size_rule` false: without a strategy, `exact` is left false for the caller to decide
  /// under the lock (exact_for reads the namespace's size, which a pool catch-up changes).
  SearchArgs ParseSearch(const Napi::CallbackInfo& info, VectorIndex& ix, bool size_rule = true) {
    Napi::Env env = info.Env();
    if (info.Length() < 3 || !info[0].IsTypedArray()) Invalid(env, "search(query: Float32Array, k, kind)");
    auto q = info[0].As<Napi::TypedArray>();
    if (q.TypedArrayType() != napi_float32_array) Invalid(env, "search: query must be a Float32Array");
    if (q.ElementLength() != ix.dims()) {
      ThrowTyped(env, "DIMENSION_MISMATCH",
                 "search: query has " + std::to_string(q.ElementLength()) + " values, the index holds " +
                     std::to_string(ix.dims()) + "-dim vectors");
    }
    const float* qv = q.As<Napi::Float32Array>().Data();
    for (size_t d = 0; d < ix.dims(); ++d) {
      if (!std::isfinite(qv[d]))
        ThrowTyped(env, "NON_FINITE_VECTOR", "search: query has a non-finite value at dimension " + std::to_string(d));
    }
    if (!info[1].IsNumber()) Invalid(env, "search: k must be a non-negative integer");
    double kd = info[1].As<Napi::Number>().DoubleValue();
    if (!(kd >= 0 && kd <= 1e6) || kd != std::floor(kd)) Invalid(env, "search: k must be an integer in [0, 1e6]");
    uint8_t kind = KindArg(env, info[2], "search");
    bool exact = size_rule && ix.exact_for(kind);
    if (info.Length() >= 4 && !info[3].IsUndefined()) {
      std::string s = info[3].IsString() ? info[3].As<Napi::String>().Utf8Value() : "";
      const std::string ann = VectorAnnName(ix.options().ann);
      if (s == "exact") exact = true;
      else if (s == ann) exact = false;
      else if (s == "hnsw" || s == "binary")
        Invalid(env, "search: strategy '" + s + "' is not this index's (ann: '" + ann + "')");
      else Invalid(env, "search: strategy must be 'exact', 'binary' or 'hnsw'");
    }
    return {qv, static_cast<size_t>(kd), kind, exact};
  }

  static Napi::Object Hits(Napi::Env env, const uint64_t* ids_in, const float* dist_in, size_t got) {
    Napi::Float64Array ids = Napi::Float64Array::New(env, got);
    Napi::Float32Array dist = Napi::Float32Array::New(env, got);
    for (size_t i = 0; i < got; ++i) {
      ids[i] = static_cast<double>(ids_in[i]);
      dist[i] = dist_in[i];
    }
    Napi::Object out = Napi::Object::New(env);
    out.Set("ids", ids);
    out.Set("distances", dist);
    return out;
  }

  /// search(query, k, kind, strategy?) — 'exact', or the index's ann ('binary' | 'hnsw'),
  /// forces one path.
  Napi::Value Search(const Napi::CallbackInfo& info) {
    return Guard(info.Env(), [&]() -> Napi::Value {
      Napi::Env env = info.Env();
      VectorIndex& ix = live(env);
      // After live() (it finishes a begun search, which takes the lock itself), before
      // ParseSearch (exact_for): the namespace's size changes under a pool catch-up's steps.
      auto held = lock_.JsThread();
      const SearchArgs a = ParseSearch(info, ix);
      out_ids_.resize(a.k);
      out_dist_.resize(a.k);
      size_t got = ix.Search(a.query, a.k, a.kind, a.exact, out_ids_.data(), out_dist_.data());
      return Hits(env, out_ids_.data(), out_dist_.data(), got);
    });
  }

  /// searchBegin(query, k, kind, strategy?): search's arguments; the search runs on a helper
  /// thread (the query is copied) until searchEnd() collects it. A later searchBegin drops
  /// an uncollected result.
  Napi::Value SearchBegin(const Napi::CallbackInfo& info) {
    return Guard(info.Env(), [&]() -> Napi::Value {
      Napi::Env env = info.Env();
      VectorIndex& ix = live(env);
      SearchArgs a;
      {
        auto held = lock_.JsThread();  // exact_for reads the namespace's size
        a = ParseSearch(info, ix);
      }
      pending_.query.assign(a.query, a.query + ix.dims());
      pending_.k = a.k;
      pending_.kind = a.kind;
      pending_.exact = a.exact;
      pending_.ids.resize(a.k);
      pending_.dist.resize(a.k);
      pending_.got = 0;
      pending_.error = nullptr;
      if (!helper_.joinable()) helper_ = std::thread([this] { HelperLoop(); });
      {
        std::lock_guard<std::mutex> lock(job_mu_);
        job_ = Job::kQueued;
      }
      job_cv_.notify_one();
      return env.Undefined();
    });
  }

  /// searchEnd() → the hits of the search searchBegin started, as search returns them;
  /// INVALID_ARGUMENT when none was begun (or it was collected already).
  Napi::Value SearchEnd(const Napi::CallbackInfo& info) {
    return Guard(info.Env(), [&]() -> Napi::Value {
      Napi::Env env = info.Env();
      live(env);
      {
        std::lock_guard<std::mutex> lock(job_mu_);
        if (job_ != Job::kDone) Invalid(env, "searchEnd: no search was begun (searchBegin) since the last searchEnd");
        job_ = Job::kIdle;
      }
      if (pending_.error) std::rethrow_exception(pending_.error);
      return Hits(env, pending_.ids.data(), pending_.dist.data(), pending_.got);
    });
  }

  /// searchAsync(query, k, kind, strategy?) → Promise<{ ids, distances }>: search's
  /// arguments, checked here (a bad one rejects with its code; the query is copied); the
  /// search runs on the read lane (napi/background.h ThreadLane: threads kept off the JS
  /// thread's core) under lock_'s pool side, with buffers of its own, so the
  /// event loop turns meanwhile and any number may be in flight (unlike searchBegin's one
  /// slot). Without a strategy, exact or not is decided in the job, under the lock, as search
  /// decides it. Until it settles close and closeAsync throw INVALID_ARGUMENT.
  Napi::Value SearchAsync(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    return GuardAsync(env, [&]() -> Napi::Value {
      VectorIndex* ix = &live(env);
      auto job = std::make_shared<AsyncSearch>();
      // Not under lock_: the arguments need only the dimensions (fixed at open); the size rule
      // is applied in the job. This thread never waits here for a catch-up step on the pool.
      const SearchArgs a = ParseSearch(info, *ix, /*size_rule=*/false);
      job->query.assign(a.query, a.query + ix->dims());
      job->k = a.k;
      job->kind = a.kind;
      job->exact = a.exact;
      job->chosen = info.Length() >= 4 && !info[3].IsUndefined();
      IndexLock* lock = &lock_;
      ++reading_;
      Napi::Promise promise = BackgroundJob::Queue(
          env, "spanguard:searchVector",
          [ix, lock, job]() {
            // A search searchTake took first (it ran on the JS thread) is not run again.
            uint8_t queued = AsyncSearch::kQueued;
            if (!job->state.compare_exchange_strong(queued, AsyncSearch::kRunning, std::memory_order_acq_rel)) return;
            try {
              auto held = lock->PoolJob();
              job->Run(*ix);
            } catch (...) {
              job->state.store(AsyncSearch::kFailed, std::memory_order_release);
              throw;
            }
            job->state.store(AsyncSearch::kDone, std::memory_order_release);
          },
          [job](Napi::Env e) -> Napi::Value {
            if (job->error) std::rethrow_exception(job->error);  // searchTake's run failed: the same error
            return Hits(e, job->ids.data(), job->dist.data(), job->got);
          },
          [this, job]() {
            --reading_;
            for (size_t i = 0; i < in_flight_.size(); ++i) {
              if (in_flight_[i].job != job) continue;
              in_flight_[i] = std::move(in_flight_.back());
              in_flight_.pop_back();
              break;
            }
          },
          Value(), Lane::kRead);
      in_flight_.push_back({Napi::Persistent(Napi::Object(env, promise)), job});
      return promise;
    });
  }

  /// searchTake(promise, stealRows, spinMicros?) → the hits of a searchAsync still in flight,
  /// when they can be had on this thread now; null when they cannot (await the promise then,
  /// which settles with the same hits either way):
  ///   - the read lane has finished it: its hits (the promise's completion has not reached this
  ///     thread yet, and need not be waited for);
  ///   - the read lane has not started it, no one holds the index (this thread never waits for its
  ///     lock here) and the namespace holds at most `stealRows` vectors: it is run here, now,
  ///     and the lane's turn does nothing (a lane thread's wake can cost more than a small
  ///     search; `stealRows` bounds how long this thread is held);
  ///   - otherwise (running, or not started in a larger namespace): this thread waits up to
  ///     `spinMicros` (default 0) for the lane to finish it, without sleeping (the wake that
  ///     would end a sleep costs tens of microseconds too).
  /// A promise that is not an unsettled searchAsync of this index gives null.
  Napi::Value SearchTake(const Napi::CallbackInfo& info) {
    return Guard(info.Env(), [&]() -> Napi::Value {
      Napi::Env env = info.Env();
      VectorIndex& ix = live(env);
      if (info.Length() < 2 || !info[1].IsNumber()) Invalid(env, "searchTake(promise, stealRows, spinMicros?)");
      const double steal_rows = info[1].As<Napi::Number>().DoubleValue();
      const double spin = info.Length() >= 3 && info[2].IsNumber() ? info[2].As<Napi::Number>().DoubleValue() : 0;
      if (!(steal_rows >= 0)) Invalid(env, "searchTake: stealRows must be a number >= 0");
      if (!(spin >= 0 && spin <= 1e6)) Invalid(env, "searchTake: spinMicros must be a number in [0, 1e6]");
      std::shared_ptr<AsyncSearch> job;
      if (info[0].IsObject()) {
        for (const auto& f : in_flight_) {
          if (f.promise.Value().StrictEquals(info[0])) {
            job = f.job;
            break;
          }
        }
      }
      if (!job) return env.Null();
      uint8_t state = job->state.load(std::memory_order_acquire);
      if (state == AsyncSearch::kQueued) {
        // Only if the index is free now: a pool job or a catch-up step that holds it would make
        // this thread wait, and the namespace's size is read under it (a catch-up grows it).
        auto held = lock_.TryJsThread();
        if (held.owns_lock() && static_cast<double>(ix.ns(job->kind).size()) <= steal_rows &&
            job->state.compare_exchange_strong(state, AsyncSearch::kRunning, std::memory_order_acq_rel)) {
          try {
            job->Run(ix);
          } catch (...) {
            job->error = std::current_exception();
            job->state.store(AsyncSearch::kFailed, std::memory_order_release);
            throw;
          }
          job->state.store(AsyncSearch::kDone, std::memory_order_release);
          return Hits(env, job->ids.data(), job->dist.data(), job->got);
        }
        // Not taken here (the lock released before any wait): `state` holds what the CAS saw, or
        // the state read above; the wait below reads it again.
      }
      if (state < AsyncSearch::kDone && spin > 0) {
        const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double, std::micro>(spin);
        while ((state = job->state.load(std::memory_order_acquire)) < AsyncSearch::kDone &&
               std::chrono::steady_clock::now() < until) {
#if defined(__x86_64__)
          __builtin_ia32_pause();
#endif
        }
      }
      if (state != AsyncSearch::kDone) return env.Null();
      return Hits(env, job->ids.data(), job->dist.data(), job->got);
    });
  }

  /// _holdAsync(ms) → Promise<void> (a test seam): a pool job that holds this index's lock, as
  /// a read-lane search does for its scan, for `ms` milliseconds.
  Napi::Value HoldAsync(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    return GuardAsync(env, [&]() -> Napi::Value {
      live(env);
      const double ms = info.Length() >= 1 && info[0].IsNumber() ? info[0].As<Napi::Number>().DoubleValue() : -1;
      if (!(ms >= 0 && ms <= 60000)) Invalid(env, "_holdAsync: ms must be a number in [0, 60000]");
      IndexLock* lock = &lock_;
      ++reading_;
      return BackgroundJob::Queue(
          env, "spanguard:holdVector",
          [lock, ms]() {
            auto held = lock->PoolJob();
            std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(ms));
          },
          nullptr, [this]() { --reading_; }, Value());
    });
  }

  Napi::Value Save(const Napi::CallbackInfo& info) {
    return Guard(info.Env(), [&]() -> Napi::Value {
      VectorIndex& ix = writable(info.Env());
      ix.Save();
      return info.Env().Undefined();
    });
  }

  // saveAsync() → Promise<void>: Save on the write lane (as the lexical index's saveAsync).
  // Until it settles the index may be searched but not changed or closed (add, catchUp, save, close throw
  // INVALID_ARGUMENT).
  Napi::Value SaveAsync(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    return GuardAsync(env, [&]() -> Napi::Value {
      VectorIndex* ix = &writable(env);
      saving_ = true;
      return BackgroundJob::Queue(
          env, "spanguard:saveVector", [ix]() { ix->Save(); }, nullptr, [this]() { saving_ = false; }, Value(),
          Lane::kWrite);
    });
  }

  Napi::Value Stats(const Napi::CallbackInfo& info) {
    return Guard(info.Env(), [&]() -> Napi::Value {
      Napi::Env env = info.Env();
      Napi::Object s = Napi::Object::New(env);
      const VectorIndex& ix = live(env);
      auto held = lock_.JsThread();
      auto name = [](uint8_t kind) { return kind == 1 ? std::string("Raw") : std::string("Summary"); };
      bool any_rebuilt = false, any_file = false;
      for (uint8_t kind : {uint8_t{1}, uint8_t{2}}) {
        const auto& ns = ix.ns(kind);
        // count: vectors held (windows and duplicates included); spans: distinct span ids;
        // graph: vectors in the usearch graph (duplicates are aliases, not nodes).
        s.Set("count" + name(kind), Napi::Number::New(env, static_cast<double>(ns.covered)));
        s.Set("spans" + name(kind), Napi::Number::New(env, static_cast<double>(ix.store().span_count(kind))));
        s.Set("graph" + name(kind), Napi::Number::New(env, static_cast<double>(ns.size())));
        s.Set("strategy" + name(kind), Napi::String::New(env, ix.strategy(kind)));
        // lists: coarse partitions of a binary namespace (0: not partitioned); partitionedRows:
        // its rows when the partition was built.
        s.Set("lists" + name(kind), Napi::Number::New(env, ix.lists(kind)));
        s.Set("partitionedRows" + name(kind), Napi::Number::New(env, static_cast<double>(ix.partitioned_rows(kind))));
        s.Set("loadedFrom" + name(kind), Napi::String::New(env, ns.loaded_from));
        s.Set("snapshotProblem" + name(kind), Napi::String::New(env, ns.snapshot_problem));
        s.Set("snapshotCrc" + name(kind), Napi::Number::New(env, ns.file_crc));
        any_rebuilt = any_rebuilt || ns.loaded_from == "rebuilt";
        any_file = any_file || ns.loaded_from == "file";
      }
      s.Set("loadedFrom", Napi::String::New(env, any_rebuilt ? "rebuilt" : any_file ? "file" : "empty"));
      s.Set("dims", Napi::Number::New(env, ix.dims()));
      s.Set("scalar", Napi::String::New(env, VectorScalarName(ix.options().scalar)));
      s.Set("exactBelow", Napi::Number::New(env, static_cast<double>(ix.options().exact_below)));
      s.Set("ann", Napi::String::New(env, VectorAnnName(ix.options().ann)));
      s.Set("rerankMin", Napi::Number::New(env, static_cast<double>(ix.options().rerank_min)));
      s.Set("rerankShare", Napi::Number::New(env, ix.options().rerank_share));
      s.Set("codeBits", Napi::Number::New(env, static_cast<double>(ix.code_bits())));
      const double pa = static_cast<double>(ix.options().partition_above);
      s.Set("partitionAbove", Napi::Number::New(env, pa >= 1.8e19 ? INFINITY : pa));
      s.Set("probeMin", Napi::Number::New(env, static_cast<double>(ix.options().probe_min)));
      s.Set("probeShare", Napi::Number::New(env, ix.options().probe_share));
      s.Set("probeRerank", Napi::Number::New(env, static_cast<double>(ix.options().probe_rerank)));
      s.Set("probeMargin", Napi::Number::New(env, ix.options().probe_margin));
      s.Set("searchThreads", Napi::Number::New(env, static_cast<double>(ix.options().search_threads)));
      const VectorIndex::ProbeCounts probes = ix.probe_counts();
      s.Set("probedQueries", Napi::Number::New(env, static_cast<double>(probes.queries)));
      s.Set("probedLists", Napi::Number::New(env, static_cast<double>(probes.lists)));
      s.Set("probedRows", Napi::Number::New(env, static_cast<double>(probes.rows)));
      s.Set("probedShortlisted", Napi::Number::New(env, static_cast<double>(probes.shortlisted)));
      s.Set("probedSplit", Napi::Number::New(env, static_cast<double>(probes.split)));
      s.Set("connectivity", Napi::Number::New(env, static_cast<double>(ix.options().connectivity)));
      s.Set("expansionAdd", Napi::Number::New(env, static_cast<double>(ix.options().expansion_add)));
      s.Set("expansionSearch", Napi::Number::New(env, static_cast<double>(ix.options().expansion_search)));
      s.Set("isa", Napi::String::New(env, ix.isa_name()));
      s.Set("simdIsa", Napi::String::New(env, SimdIsaName()));
      s.Set("highWater", Napi::Number::New(env, static_cast<double>(ix.high_water())));
      s.Set("memoryBytes", Napi::Number::New(env, static_cast<double>(ix.MemoryUsage())));
      s.Set("rowsMapped", Napi::Boolean::New(env, ix.rows_mapped()));
      s.Set("rowsHeapBytes", Napi::Number::New(env, static_cast<double>(ix.rows_heap_bytes())));
      s.Set("vectorsBytes", Napi::Number::New(env, static_cast<double>(ix.store().bytes())));
      s.Set("vectorsVersion", Napi::Number::New(env, ix.store().version()));
      s.Set("vectorsRecordBytes", Napi::Number::New(env, static_cast<double>(ix.store().record_bytes())));
      const auto& rec = ix.store().recovery();
      s.Set("vectorsRecovery", Napi::String::New(env, rec.outcome));
      s.Set("vectorsRecoveryOffset", Napi::Number::New(env, static_cast<double>(rec.offset)));
      s.Set("vectorsDroppedBytes", Napi::Number::New(env, static_cast<double>(rec.dropped_bytes)));
      s.Set("vectorsRecords", Napi::Number::New(env, static_cast<double>(ix.store().size())));
      s.Set("vectorsDigest", Napi::Number::New(env, ix.store().digest()));
      return s;
    });
  }
};

Napi::Value SimdIsa(const Napi::CallbackInfo& info) {
  return Guard(info.Env(), [&]() -> Napi::Value { return Napi::String::New(info.Env(), SimdIsaName()); });
}

}  // namespace

void InitVectorIndex(Napi::Env env, Napi::Object exports) {
  exports.Set("prepareVectorIndex", Napi::Function::New(env, VectorIndexWrap::Prepare, "prepareVectorIndex"));
  exports.Set("VectorIndex", VectorIndexWrap::Define(env));
  exports.Set("simdIsa", Napi::Function::New(env, SimdIsa, "simdIsa"));
}

}  // namespace spanguard
