// JS binding of the span log: class SpanLog (src/native.ts NativeSpanLog) and recoverSegment.
// The JS side of append (reading the columns, making and settling the promises of group
// commit) is TypeScript: src/native.ts installs it on this class's prototype.
//
// Group commit: an append is validated, given its ids and encoded into the log's staging buffer on the main thread;
// it waits in `pending_` (log/sync_waiters.h; its promise made and kept by the JS append wrapper, or a napi deferred
// for flush() and the native-only form). In the next check phase (setImmediate) every staged append of the burst is
// written with one pwrite and one fdatasync starts on the write lane (napi/background.h ThreadLane: never queued behind
// searches on the libuv pool; it keeps the event loop alive while promises wait), whatever the burst's size, so the
// event loop runs searches, compactions and the host's own work while the disk flushes (a sync on the loop's thread
// saves two thread hops per burst, but holds every other turn for the flush: milliseconds on a shared disk). Its one
// completion settles every append it covers (one JS call for a run of wrapper-made promises). At most one fdatasync is
// in flight per log; appends that land while it runs share the next one. Every read path (ReadLog, UnwrapSpanSource)
// writes staged records first, so reads see every assigned id. `sync` mode fdatasyncs on the main thread inside append:
// lowest latency, no thread hop, and a failure surfaces on the very call that wrote.
#include <napi.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "common/errors.h"
#include "log/span_log.h"
#include "log/span_source.h"
#include "log/sync_waiters.h"
#include "napi/background.h"
#include "napi/bindings.h"
#include "napi/convert.h"
#include "napi/guard.h"

namespace spanguard {

namespace {

// Marks JS objects that are SpanLogs, so UnwrapSpanSource can refuse anything else
// without a per-environment constructor registry.
constexpr napi_type_tag kSpanLogTag = {0x7a1c5b0e9d3f4a21ULL, 0xb6e8c4d2f0a19357ULL};
// Marks the handle prepareSpanLog resolves with (an engine opened on the thread pool).
constexpr napi_type_tag kPreparedSpanLogTag = {0x3e91d04c7b2a6f15ULL, 0x8c5f17a0d3e2b964ULL};

enum Key { kId, kKind, kFlags, kRole, kTurnStart, kTurnEnd, kTimestamp, kTokens, kText, kMeta, kKeyCount };
const char* const kKeyNames[kKeyCount] = {"id",      "kind",      "flags",  "role", "turnStart",
                                          "turnEnd", "timestamp", "tokens", "text", "meta"};

class SpanLogWrap;

// A burst's fdatasync, on the write lane (napi/background.h): never queued behind searches
// on the libuv pool.
class SyncTask final : public ThreadLane::Task {
 public:
  SyncTask(Napi::Env env, SpanLogWrap* wrap, SyncTarget target)
      : ThreadLane::Task(env, "spanguard:fdatasync"), wrap_(wrap), target_(target) {}
  void Run() override { err_ = SpanLog::SyncFiles(target_); }
  void Complete(Napi::Env env) override;

 private:
  SpanLogWrap* wrap_;
  SyncTarget target_;
  int err_ = 0;
};

class CloseWorker : public Napi::AsyncWorker {
 public:
  CloseWorker(Napi::Env env, SpanLogWrap* wrap, SpanLog* log)
      : Napi::AsyncWorker(env, "spanguard:close"), wrap_(wrap), log_(log) {}
  void Execute() override { err_ = log_->SyncAndCheckpointForClose(); }
  void OnOK() override;

 private:
  SpanLogWrap* wrap_;
  SpanLog* log_;
  int err_ = 0;
};

class SpanLogWrap : public Napi::ObjectWrap<SpanLogWrap> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(env, "SpanLog",
                       {
                           // Writable and configurable (as a JS class method is) so src/native.ts can wrap it.
                           InstanceMethod<&SpanLogWrap::Append>("append", napi_default_method),
                           InstanceMethod<&SpanLogWrap::AppendOne>("_appendOne"),
                           InstanceMethod<&SpanLogWrap::Get>("get"),
                           InstanceMethod<&SpanLogWrap::GetMany>("getMany"),
                           InstanceMethod<&SpanLogWrap::Scan>("scan"),
                           InstanceMethod<&SpanLogWrap::ScanIds>("scanIds"),
                           InstanceMethod<&SpanLogWrap::FirstId>("firstId"),
                           InstanceMethod<&SpanLogWrap::NextId>("nextId"),
                           InstanceMethod<&SpanLogWrap::Refresh>("refresh"),
                           InstanceMethod<&SpanLogWrap::Flush>("flush"),
                           InstanceMethod<&SpanLogWrap::Verify>("verify"),
                           InstanceMethod<&SpanLogWrap::Stats>("stats"),
                           InstanceMethod<&SpanLogWrap::ReleaseResident>("releaseResident"),
                           InstanceMethod<&SpanLogWrap::Close>("close"),
                       });
  }

  /// (dir, options) as the constructor and prepareSpanLog take them.
  static SpanLogOptions ParseOptions(const Napi::CallbackInfo& info, std::string* dir) {
    if (info.Length() < 2 || !info[0].IsString() || !info[1].IsObject()) {
      throw NativeError("INVALID_OPTIONS", "SpanLog(dir: string, options: object)");
    }
    *dir = info[0].As<Napi::String>().Utf8Value();
    if (dir->empty()) throw NativeError("INVALID_OPTIONS", "dir must not be empty");
    Napi::Object o = info[1].As<Napi::Object>();
    SpanLogOptions opts;
    Napi::Value ro = o.Get("readOnly");
    if (!ro.IsBoolean()) throw NativeError("INVALID_OPTIONS", "readOnly must be a boolean");
    opts.read_only = ro.As<Napi::Boolean>().Value();
    opts.durability = static_cast<Durability>(ToInteger(o.Get("durability"), "durability", "INVALID_OPTIONS", 0, 2));
    opts.segment_bytes = static_cast<uint64_t>(
        ToInteger(o.Get("segmentBytes"), "segmentBytes", "INVALID_OPTIONS", 4096, 274877906944.0));
    opts.max_text_bytes =
        static_cast<uint32_t>(ToInteger(o.Get("maxTextBytes"), "maxTextBytes", "INVALID_OPTIONS", 1, 2147483647.0));
    return opts;
  }

  explicit SpanLogWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<SpanLogWrap>(info) {
    Napi::Env env = info.Env();
    Guard(env, [&]() -> Napi::Value {
      std::string dir;
      const SpanLogOptions opts = ParseOptions(info, &dir);
      // A log prepared on the thread pool (prepareSpanLog) is adopted, not opened again.
      std::unique_ptr<SpanLog> prepared =
          AdoptPrepared<SpanLog>(env, info.Length() > 2 ? info[2] : env.Undefined(), kPreparedSpanLogTag, "SpanLog");
      max_text_bytes_cached_ = opts.max_text_bytes;
      BuildSpanFactory(env, info.This().As<Napi::Object>());
      BuildColumnKeys(env);
      Napi::Value set_immediate = env.Global().Get("setImmediate");
      if (!set_immediate.IsFunction()) throw NativeError("IO_ERROR", "setImmediate is not available");
      set_immediate_ = Napi::Persistent(set_immediate.As<Napi::Function>());
      start_sync_cb_ = Napi::Persistent(Napi::Function::New(env, [this](const Napi::CallbackInfo& cb) -> Napi::Value {
        OnScheduledSync(cb.Env());
        return cb.Env().Undefined();
      }));
      log_ = prepared ? std::move(prepared) : std::make_unique<SpanLog>(std::move(dir), opts);
      // The JS append wrapper's waiter queue for this log (src/native.ts, `attach`); absent
      // when the class is used without it (then every append gets a native promise).
      // Its one-row scratch too: the wrapper writes a one-row append's seven numbers there
      // (an ArrayBuffer made here, so its bytes never move) and passes only text and meta.
      Napi::Value attach = info.This().As<Napi::Object>().Get("_attachWaiters");
      if (attach.IsFunction()) {
        Napi::Float64Array row = Napi::Float64Array::New(env, kRowSlots);
        Napi::Value settle = attach.As<Napi::Function>().Call({info.This(), row});
        if (settle.IsFunction()) {
          settle_ = Napi::Persistent(settle.As<Napi::Function>());
          row_ref_ = Napi::Persistent(row);
          row_ = row.Data();
        }
      }
      napi_type_tag_object(env, info.This(), &kSpanLogTag);
      return env.Undefined();
    });
  }

  // A waiter on group commit. Its handle is null for a waiter whose promise the JS append
  // wrapper made and keeps in its queue (settled through settle_, in order); the native
  // promise form (the class without the wrapper) and flush() keep a napi_deferred there.
  using Pending = SyncWaiters::Waiter;
  static napi_deferred Deferred(const Pending& p) { return static_cast<napi_deferred>(p.handle); }

  SpanLog* LiveLog(Napi::Env env) {
    if (closing_ || !log_) ThrowTyped(env, "CLOSED", "the span log is closed");
    return log_.get();
  }

  /// Drops the reference a background job took on this object when the completion handler
  /// returns (last, so the object cannot become collectable while the handler runs).
  struct UnrefOnExit {
    SpanLogWrap* w;
    ~UnrefOnExit() {
      try {
        w->Unref();
      } catch (...) {
      }
    }
  };

  void OnSyncDone(Napi::Env env, const SyncTarget& target, int err) {
    sync_in_flight_ = false;
    // Dropped last, so the object cannot become collectable while this runs.
    UnrefOnExit drop{this};
    if (log_) log_->FinishSync(target, err);
    if (err != 0 || (log_ && log_->failed())) {
      std::string msg = "fdatasync failed";
      if (err != 0) msg += std::string(" (") + std::strerror(err) + ")";
      msg += "; the log is now read-only";
      // Rare: one call per waiter, each with its own error object.
      pending_.TakeAll([&](const Pending& p) {
        RejectOne(env, p, MakeTypedError(env, "FSYNC_FAILED", msg).Value(), /*from_tail=*/false);
      });
    } else {
      // One JS call resolves a whole run of JS-queued waiters (each with its own first id,
      // which the JS side kept): a burst of 64 one-span appends costs one crossing, not 64
      // napi_resolve_deferred calls.
      const uint64_t synced = log_->synced_seq();
      int32_t run = 0;
      pending_.TakeDurable(synced, [&](const Pending& p) {
        if (p.handle == nullptr) {
          ++run;
          return;
        }
        if (run > 0) SettleJs(env, run, nullptr);
        run = 0;
        napi_value v = std::isnan(p.first) ? env.Undefined() : Napi::Number::New(env, p.first);
        napi_resolve_deferred(env, Deferred(p), v);
      });
      if (run > 0) SettleJs(env, run, nullptr);
    }
    if (!pending_.empty()) {
      ScheduleSync(env);
    } else if (closing_) {
      StartClose(env);
    }
  }

  /// Settles JS-queued waiters (the queue of src/native.ts's `attach`): k > 0 with no error resolves
  /// the first k with their ids; k = 1 with an error rejects the first; k = -1 with an error
  /// rejects the last (a failed staged write rejects the newest appends).
  void SettleJs(Napi::Env env, int32_t k, napi_value err) {
    if (settle_.IsEmpty()) return;
    napi_value argv[2] = {Napi::Number::New(env, k), err != nullptr ? err : static_cast<napi_value>(env.Null())};
    napi_value out;
    napi_call_function(env, env.Undefined(), settle_.Value(), 2, argv, &out);
  }

  void RejectOne(Napi::Env env, const Pending& p, napi_value err, bool from_tail) {
    if (p.handle == nullptr) {
      SettleJs(env, from_tail ? -1 : 1, err);
    } else {
      napi_reject_deferred(env, Deferred(p), err);
    }
  }

  void OnCloseDone(Napi::Env env, int err) {
    close_running_ = false;
    UnrefOnExit drop{this};
    if (log_) log_->Release();
    closed_ = true;
    // The append scratch goes back to the allocator now, not when the collector finalizes
    // this object: the next log opened takes it warm instead of faulting in fresh pages
    // (a 1,000-row batch's rows are 80 KB; the first batch of a fresh 10^4-span log
    // otherwise spends ~25 µs of its ~140 in the binding faulting them in).
    std::vector<RecordInput>().swap(inputs_);
    std::vector<std::pair<size_t, size_t>>().swap(text_at_);
    std::vector<char16_t>().swap(u16_);
    arena_.release();
    for (auto& d : close_waiters_) {
      if (err != 0) {
        d.Reject(MakeTypedError(env, "FSYNC_FAILED",
                                std::string("final fdatasync at close failed (") + std::strerror(err) + ")")
                     .Value());
      } else {
        d.Resolve(env.Undefined());
      }
    }
    close_waiters_.clear();
  }

 private:
  // Group commit: the sync starts in the next check phase (setImmediate), after every
  // append of the current macrotask and of the promise continuations it triggers has been
  // written, so one fdatasync covers the whole burst instead of just its first append.
  void ScheduleSync(Napi::Env env) {
    if (sync_in_flight_ || sync_scheduled_ || !log_) return;
    sync_scheduled_ = true;
    Ref();
    set_immediate_.Call({start_sync_cb_.Value()});
    (void)env;
  }

  void OnScheduledSync(Napi::Env env) {
    sync_scheduled_ = false;
    UnrefOnExit drop{this};
    FlushStaged(env);
    if (!pending_.empty()) {
      StartSync(env);
    } else if (closing_) {
      StartClose(env);
    }
  }

  void StartSync(Napi::Env env) {
    if (sync_in_flight_ || !log_) return;
    sync_in_flight_ = true;
    // The JS object must outlive the worker: a strong reference until OnSyncDone.
    Ref();
    ThreadLane::Of(env, Lane::kWrite).Submit(std::make_unique<SyncTask>(env, this, log_->PrepareSync()));
    // While the worker syncs: the zeros the next bursts will overwrite (span_log.h).
    log_->PrefillAhead();
  }

  void StartClose(Napi::Env env) {
    if (close_running_ || closed_) return;
    FlushStaged(env);
    close_running_ = true;
    Ref();
    auto* w = new CloseWorker(env, this, log_.get());
    w->Queue();
  }

  // Spans are built by a tiny JS function taking the ten fields as arguments (src/native.ts,
  // `makeSpan`, on the prototype as `_makeSpan`): one call that V8 turns into an object of a
  // fixed shape beats ten napi_set_named_property calls (each of which re-creates and
  // internalizes its key string) — bench/append.bench.ts (`get`) measures reads. Without it,
  // MakeSpan sets the properties one by one.
  void BuildSpanFactory(Napi::Env env, Napi::Object self) {
    Napi::Value fn = self.Get("_makeSpan");
    if (fn.IsFunction()) span_factory_ = Napi::Persistent(fn.As<Napi::Function>());
    (void)env;
  }

  Napi::Value MakeSpan(Napi::Env env, const RecordView& v) {
    const SpanView& s = v.span;
    // String::New copies: no JS value keeps a pointer into the mapping.
    napi_value argv[kKeyCount] = {
        Napi::Number::New(env, static_cast<double>(s.id)),
        Napi::Number::New(env, static_cast<double>(s.kind)),
        Napi::Number::New(env, s.flags),
        Napi::Number::New(env, s.role),
        Napi::Number::New(env, static_cast<double>(s.turn_start)),
        Napi::Number::New(env, static_cast<double>(s.turn_end)),
        Napi::Number::New(env, static_cast<double>(s.timestamp_ms)),
        Napi::Number::New(env, s.tokens),
        Napi::String::New(env, s.text, s.text_len),
        v.meta_len > 0 ? static_cast<napi_value>(Napi::String::New(env, v.meta, v.meta_len))
                       : static_cast<napi_value>(env.Null()),
    };
    if (!span_factory_.IsEmpty()) {
      napi_value out;
      if (napi_call_function(env, env.Undefined(), span_factory_.Value(), kKeyCount, argv, &out) != napi_ok) {
        throw Napi::Error::New(env);
      }
      return Napi::Value(env, out);
    }
    Napi::Object o = Napi::Object::New(env);
    for (int k = 0; k < kKeyCount; ++k) o.Set(kKeyNames[k], Napi::Value(env, argv[k]));
    return o;
  }

  // Column keys, in the order Append reads them. The first nine are always read; the
  // offsets only for the byte form.
  enum Col {
    kKinds,
    kFlags,
    kRoles,
    kTurnStart,
    kTurnEnd,
    kTimestamps,
    kTokens,
    kTexts,
    kMetas,
    kTextOffsets,
    kMetaOffsets,
    kColCount
  };

  // Property keys created once and kept in a persistent array (Node-API before version 10
  // cannot reference a string directly): napi_get_named_property re-creates its key and
  // looks it up in V8's string table on every call (measured: the largest single cost of a
  // one-span append after the write itself). V8 internalizes each key on its first lookup.
  void BuildColumnKeys(Napi::Env env) {
    static const char* const kNames[kColCount] = {"kinds",  "flags", "roles", "turnStart",   "turnEnd",    "timestamps",
                                                  "tokens", "texts", "metas", "textOffsets", "metaOffsets"};
    Napi::Array keys = Napi::Array::New(env, kColCount);
    for (int k = 0; k < kColCount; ++k) keys.Set(static_cast<uint32_t>(k), Napi::String::New(env, kNames[k]));
    col_keys_ = Napi::Persistent(keys);
  }

  napi_value GetColumn(napi_env env, napi_value keys, napi_value cols, Col k) {
    napi_value key, v;
    if (napi_get_element(env, keys, static_cast<uint32_t>(k), &key) != napi_ok ||
        napi_get_property(env, cols, key, &v) != napi_ok) {
      throw Napi::Error::New(env);
    }
    return v;
  }

  // A byte column with its n + 1 offsets: slice i is bytes[off[i], off[i+1]). The slices'
  // bounds and sizes are checked by the log as it converts the rows (FillRows), their UTF-8
  // as it copies the bytes (RecordInput::check_utf8), all before anything is written.
  BatchColumns::Bytes ByteColumn(napi_env env, napi_value bytes_v, napi_value offsets_v, const char* what,
                                 const char* offsets_name, const char* field, size_t n) {
    bool is_typed = false;
    napi_typedarray_type type;
    size_t byte_len = 0;
    void* data = nullptr;
    if (napi_is_typedarray(env, bytes_v, &is_typed) != napi_ok || !is_typed ||
        napi_get_typedarray_info(env, bytes_v, &type, &byte_len, &data, nullptr, nullptr) != napi_ok ||
        type != napi_uint8_array) {
      throw NativeError("INVALID_ARGUMENT", std::string("append: ") + what + " must be a string array or a Uint8Array");
    }
    size_t rows = n + 1;
    BatchColumns::Bytes b;
    b.offsets = TypedColumn<uint32_t>(env, offsets_v, offsets_name, napi_uint32_array, &rows, false);
    b.data = static_cast<const char*>(data);
    b.len = byte_len;
    b.name = what;
    b.offsets_name = offsets_name;
    b.field = field;
    return b;
  }

  Napi::Value Append(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    return GuardAsync(env, [&]() -> Napi::Value {
      SpanLog* log = LiveLog(env);
      RefuseWhileAppending("append");
      AppendingScope appending(&appending_);
      // Two call forms: the JS `append(cols)` of src/native.ts reads the columns in
      // JIT-compiled code and passes all kColCount of them positionally (no Node-API property
      // lookups); without it, `append` is this method itself and reads the properties here.
      const bool positional = info.Length() == kColCount;
      if (!positional && (info.Length() < 1 || !info[0].IsObject())) {
        throw NativeError("INVALID_ARGUMENT", "append expects a columns object");
      }
      // Every property read that can run user JS (getters, proxies) happens before any
      // typed-array data pointer is taken, and the numeric columns are copied out before the
      // string loop can run more JS: a getter that detaches a buffer cannot leave us holding
      // a dangling pointer. (The byte form runs no JS after its property reads.)
      napi_value col[kColCount];
      napi_value keys = nullptr;
      napi_value cols = nullptr;
      if (positional) {
        for (int k = 0; k < kColCount; ++k) col[k] = info[k];
      } else {
        cols = info[0];
        keys = col_keys_.Value();
        for (int k = 0; k <= kMetas; ++k) col[k] = GetColumn(env, keys, cols, static_cast<Col>(k));
      }
      // napi_get_array_length fails on anything but an array: one call checks and measures.
      uint32_t texts_len = 0, metas_len = 0;
      const bool texts_are_array = napi_get_array_length(env, col[kTexts], &texts_len) == napi_ok;
      const bool metas_are_array = napi_get_array_length(env, col[kMetas], &metas_len) == napi_ok;
      bool texts_are_bytes = false, metas_are_bytes = false;
      if (!texts_are_array) napi_is_typedarray(env, col[kTexts], &texts_are_bytes);
      napi_valuetype metas_type = napi_undefined;
      if (!metas_are_array) {
        napi_is_typedarray(env, col[kMetas], &metas_are_bytes);
        napi_typeof(env, col[kMetas], &metas_type);
      }
      if (!texts_are_array && !texts_are_bytes) {
        throw NativeError("INVALID_ARGUMENT",
                          "append: texts must be an array of strings or a Uint8Array with textOffsets");
      }
      const bool metas_absent =
          !metas_are_array && !metas_are_bytes && (metas_type == napi_null || metas_type == napi_undefined);
      if (!metas_are_array && !metas_are_bytes && !metas_absent) {
        throw NativeError("INVALID_ARGUMENT", "append: metas must be an array, a Uint8Array with metaOffsets, or null");
      }
      if (!texts_are_bytes && !metas_are_array) {
        throw NativeError("INVALID_ARGUMENT", "append: string texts take metas as an array of strings or nulls");
      }
      if (!positional && texts_are_bytes) col[kTextOffsets] = GetColumn(env, keys, cols, kTextOffsets);
      if (!positional && metas_are_bytes) col[kMetaOffsets] = GetColumn(env, keys, cols, kMetaOffsets);
      size_t n = 0;
      const auto* kinds = TypedColumn<uint8_t>(env, col[kKinds], "kinds", napi_uint8_array, &n, true);
      const auto* flags = TypedColumn<uint8_t>(env, col[kFlags], "flags", napi_uint8_array, &n, false);
      const auto* roles = TypedColumn<uint8_t>(env, col[kRoles], "roles", napi_uint8_array, &n, false);
      const auto* ts = TypedColumn<double>(env, col[kTurnStart], "turnStart", napi_float64_array, &n, false);
      const auto* te = TypedColumn<double>(env, col[kTurnEnd], "turnEnd", napi_float64_array, &n, false);
      const auto* times = TypedColumn<double>(env, col[kTimestamps], "timestamps", napi_float64_array, &n, false);
      const auto* tokens = TypedColumn<uint32_t>(env, col[kTokens], "tokens", napi_uint32_array, &n, false);
      if (texts_are_array && texts_len != n) {
        throw NativeError("INVALID_ARGUMENT", "append: texts must be an array of " + std::to_string(n) + " strings");
      }
      if (metas_are_array && metas_len != n) {
        throw NativeError("INVALID_ARGUMENT", "append: metas must be an array of " + std::to_string(n) + " entries");
      }
      const uint32_t max_text = max_text_bytes();
      inputs_.resize(n);
      BatchColumns bc;
      bc.kinds = kinds;
      bc.flags = flags;
      bc.roles = roles;
      bc.turn_start = ts;
      bc.turn_end = te;
      bc.timestamps = times;
      bc.tokens = tokens;
      if (texts_are_bytes) {
        // Byte form: the texts are already UTF-8; the log converts the rows, validates the
        // bytes and copies them once, straight from the caller's buffer into the records.
        bc.texts = ByteColumn(env, col[kTexts], col[kTextOffsets], "texts", "textOffsets", "text", n);
        if (metas_are_bytes) {
          bc.metas = ByteColumn(env, col[kMetas], col[kMetaOffsets], "metas", "metaOffsets", "meta", n);
        } else if (metas_are_array) {
          throw NativeError("INVALID_ARGUMENT",
                            "append: byte texts take metas as a Uint8Array with metaOffsets, or null");
        }
        return Submit(env, log, n, positional, &bc);
      } else {
        // The numbers first, so their errors come before any text's, as in the byte form.
        FillRowsOrThrow(bc, inputs_.data(), n, max_text);
        arena_.clear();
        text_at_.resize(n * 2);
        napi_value texts = col[kTexts];
        napi_value metas = col[kMetas];
        for (size_t i = 0; i < n; ++i) {
          napi_value text;
          if (napi_get_element(env, texts, static_cast<uint32_t>(i), &text) != napi_ok) throw Napi::Error::New(env);
          EncodeString(env, &arena_, &u16_, text, i, "text", max_text, &text_at_[2 * i]);
          napi_value meta;
          if (napi_get_element(env, metas, static_cast<uint32_t>(i), &meta) != napi_ok) throw Napi::Error::New(env);
          napi_valuetype mt;
          napi_typeof(env, meta, &mt);
          if (mt == napi_null || mt == napi_undefined) {
            text_at_[2 * i + 1] = {arena_.size(), 0};
          } else if (mt == napi_string) {
            EncodeString(env, &arena_, &u16_, meta, i, "meta", format::kMaxMetaBytes, &text_at_[2 * i + 1]);
          } else {
            throw NativeError("INVALID_ARGUMENT", "record " + std::to_string(i) + ": meta must be a string or null");
          }
        }
        // The arena is complete, so pointers into it are stable now.
        for (size_t i = 0; i < n; ++i) {
          inputs_[i].text = arena_.data() + text_at_[2 * i].first;
          inputs_[i].text_len = text_at_[2 * i].second;
          inputs_[i].meta = arena_.data() + text_at_[2 * i + 1].first;
          inputs_[i].meta_len = text_at_[2 * i + 1].second;
          inputs_[i].check_utf8 = false;
        }
      }
      return Submit(env, log, n, positional, nullptr);
    });
  }

  /// Appends inputs_[0, n): staged under group commit, written (and synced under `sync`) now
  /// otherwise. `js_promise`: the caller is the JS append wrapper, which makes the promise
  /// itself: a plain number comes back — the first id when the append is already settled
  /// (none, sync, empty batch), minus the first id when it waits for group commit (the
  /// wrapper queues a promise for it, settled through settle_). Otherwise a promise.
  Napi::Value Submit(Napi::Env env, SpanLog* log, size_t n, bool js_promise, const BatchColumns* columns) {
    napi_value result;
    if (n > 0 && log->durability() == Durability::kGroup) {
      if (columns != nullptr) FillRowsOrThrow(*columns, inputs_.data(), n, max_text_bytes());
      // Group commit: stage now (ids assigned, batch validated); the staged bytes of the
      // whole burst go out in one pwrite right before the shared fdatasync.
      uint64_t bytes = 0;
      for (size_t i = 0; i < n; ++i) bytes += format::RecordSize(inputs_[i].text_len + inputs_[i].meta_len);
      if (log->StageNeedsWrite(bytes)) FlushStaged(env);
      const uint64_t first = log->Stage(inputs_.data(), n);
      napi_deferred d = nullptr;
      if (js_promise && !settle_.IsEmpty()) {
        result = Napi::Number::New(env, -static_cast<double>(first));
      } else if (napi_create_promise(env, &d, &result) != napi_ok) {
        throw Napi::Error::New(env);
      }
      pending_.Push(log->staged_seq(), static_cast<double>(first), d);
      ScheduleSync(env);
    } else {
      const uint64_t first =
          columns != nullptr ? log->AppendColumns(*columns, inputs_.data(), n) : log->Append(inputs_.data(), n);
      result = Napi::Number::New(env, static_cast<double>(first));
      if (!js_promise) {
        napi_deferred d;
        napi_value promise;
        if (napi_create_promise(env, &d, &promise) != napi_ok) throw Napi::Error::New(env);
        napi_resolve_deferred(env, d, result);
        result = promise;
      }
    }
    constexpr size_t kKeepScratch = size_t{8} << 20;
    arena_.shrink_if_over(kKeepScratch);
    if (u16_.capacity() > kKeepScratch / 2) std::vector<char16_t>().swap(u16_);
    return Napi::Value(env, result);
  }

  // One-row fast path, called by the JS `append` wrapper when every numeric column is a
  // typed array of the right type holding exactly one row and texts/metas are arrays of
  // one: the wrapper writes the seven numbers (read in JIT-compiled code) into this log's
  // scratch row_ and passes the text and meta values, saving the typed-array lookups, seven
  // number conversions and two array reads a one-span append would otherwise make (64
  // concurrent one-span appenders are the group-commit case). Everything is checked exactly as Append checks it.
  Napi::Value AppendOne(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    return GuardAsync(env, [&]() -> Napi::Value {
      SpanLog* log = LiveLog(env);
      RefuseWhileAppending("append");
      AppendingScope appending(&appending_);
      if (info.Length() != 4 || row_ == nullptr) {
        throw NativeError("INVALID_ARGUMENT", "append: internal one-row form takes 4 arguments and the row scratch");
      }
      // The wrapper read texts[0] and metas[0] after Array.isArray and length === 1; what
      // the general path refuses as not an array (a Proxy) is refused here too.
      bool texts_array = false, metas_array = false;
      napi_is_array(env, info[2], &texts_array);
      napi_is_array(env, info[3], &metas_array);
      if (!texts_array) throw NativeError("INVALID_ARGUMENT", "append: texts must be an array of 1 strings");
      if (!metas_array) throw NativeError("INVALID_ARGUMENT", "append: metas must be an array of 1 entries");
      double v[7];
      std::memcpy(v, row_, sizeof v);
      // The wrapper copies these from typed arrays of the right types, but the scratch is
      // reachable from JS: range-check before any cast, as before.
      auto small = [](double d, double max) { return d >= 0 && d <= max && std::floor(d) == d; };
      if (!small(v[0], 255) || !small(v[1], 255) || !small(v[2], 255) || !small(v[6], 4294967295.0)) {
        throw NativeError("INVALID_ARGUMENT", "append: kind, flags, role and tokens must be column values");
      }
      inputs_.resize(1);
      RecordInput& r = inputs_[0];
      r = RecordInput{};
      r.kind = static_cast<uint8_t>(v[0]);
      r.flags = static_cast<uint8_t>(v[1]);
      r.role = static_cast<uint8_t>(v[2]);
      if (!TurnValue(v[3], &r.turn_start)) ThrowBadTurn(0, v[3]);
      if (!TurnValue(v[4], &r.turn_end)) ThrowBadTurn(0, v[4]);
      if (!TimestampValue(v[5], &r.timestamp_ms)) ThrowBadTimestamp(0);
      r.tokens = static_cast<uint32_t>(v[6]);
      arena_.clear();
      text_at_.resize(2);
      napi_value text = info[0], meta = info[1];
      EncodeString(env, &arena_, &u16_, text, 0, "text", max_text_bytes(), &text_at_[0]);
      napi_valuetype mt;
      napi_typeof(env, meta, &mt);
      if (mt == napi_null || mt == napi_undefined) {
        text_at_[1] = {arena_.size(), 0};
      } else if (mt == napi_string) {
        EncodeString(env, &arena_, &u16_, meta, 0, "meta", format::kMaxMetaBytes, &text_at_[1]);
      } else {
        throw NativeError("INVALID_ARGUMENT", "record 0: meta must be a string or null");
      }
      r.text = arena_.data() + text_at_[0].first;
      r.text_len = text_at_[0].second;
      r.meta = arena_.data() + text_at_[1].first;
      r.meta_len = text_at_[1].second;
      return Submit(env, log, 1, true, nullptr);
    });
  }

  /// Writes whatever group commit has staged, so a read sees every assigned id. A failed
  /// write rejects exactly the waiters whose bytes were staged (the log drops them whole).
  void FlushStaged(Napi::Env env) {
    if (!log_ || log_->staged_bytes() == 0) return;
    // A log that an fsync failure already turned read-only drops staged records unwritten
    // (FSYNC_FAILED); otherwise a failure here is the write's own (IO_ERROR).
    const bool was_failed = log_->failed();
    std::string msg;
    if (log_->WriteStaged(&msg) == 0) return;
    const char* code = was_failed ? "FSYNC_FAILED" : "IO_ERROR";
    const uint64_t written = log_->written_seq();
    // Newest first: JS-queued waiters are rejected from the tail of their queue.
    pending_.TakeUnwritten(written, [&](const Pending& p) {
      RejectOne(env, p, MakeTypedError(env, code, msg).Value(), /*from_tail=*/true);
    });
  }

  /// LiveLog for the read paths: staged records are written first.
  SpanLog* ReadLog(Napi::Env env) {
    SpanLog* log = LiveLog(env);
    FlushStaged(env);
    return log;
  }

  uint32_t max_text_bytes() const { return max_text_bytes_cached_ ? max_text_bytes_cached_ : (16u << 20); }

  double IdArg(const Napi::CallbackInfo& info, size_t k, const char* what) {
    if (info.Length() <= k) throw NativeError("INVALID_ARGUMENT", std::string(what) + " is required");
    return ToInteger(info[k], what, "INVALID_ARGUMENT", 0, kMaxSafeDouble);
  }

  Napi::Value Get(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    return Guard(env, [&]() -> Napi::Value {
      SpanLog* log = ReadLog(env);
      const double id = IdArg(info, 0, "id");
      RecordView v;
      if (!log->Read(static_cast<uint64_t>(id), &v)) return env.Undefined();
      return MakeSpan(env, v);
    });
  }

  Napi::Value GetMany(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    return Guard(env, [&]() -> Napi::Value {
      SpanLog* log = ReadLog(env);
      if (info.Length() < 1 || !info[0].IsTypedArray() ||
          info[0].As<Napi::TypedArray>().TypedArrayType() != napi_float64_array) {
        throw NativeError("INVALID_ARGUMENT", "getMany expects a Float64Array of ids");
      }
      auto ids = info[0].As<Napi::Float64Array>();
      const size_t n = ids.ElementLength();
      Napi::Array out = Napi::Array::New(env, n);
      RecordView v;
      for (size_t i = 0; i < n; ++i) {
        const double id = ids[i];
        if (!std::isfinite(id) || std::floor(id) != id || id < 0 || id > kMaxSafeDouble) {
          throw NativeError("INVALID_ARGUMENT", "getMany: ids[" + std::to_string(i) + "] is not a span id");
        }
        if (log->Read(static_cast<uint64_t>(id), &v)) out.Set(static_cast<uint32_t>(i), MakeSpan(env, v));
      }
      return out;
    });
  }

  Napi::Value Scan(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    return Guard(env, [&]() -> Napi::Value {
      SpanLog* log = ReadLog(env);
      const double from = IdArg(info, 0, "fromId");
      const double limit = IdArg(info, 1, "limit");
      uint64_t lo = std::max<uint64_t>(static_cast<uint64_t>(from), log->first_id());
      uint64_t hi = log->next_id();
      if (static_cast<double>(lo) + limit < static_cast<double>(hi)) hi = lo + static_cast<uint64_t>(limit);
      if (lo > hi) lo = hi;
      // Optional kind mask (bit k = kind k): the store replays only its event records at
      // open, and skipping the rest here avoids copying every text into a JS string.
      const uint32_t mask = info.Length() > 2 && !info[2].IsUndefined()
                                ? static_cast<uint32_t>(ToInteger(info[2], "kindMask", "INVALID_ARGUMENT", 0, 255))
                                : 0xFFu;
      Napi::Array out = Napi::Array::New(env);
      RecordView v;
      uint32_t k = 0;
      for (uint64_t id = lo; id < hi; ++id) {
        if (!log->Read(id, &v)) continue;
        if ((mask & (1u << static_cast<uint32_t>(v.span.kind))) == 0) continue;
        out.Set(k++, MakeSpan(env, v));
      }
      return out;
    });
  }

  /// Ids in [fromId, fromId + limit) whose kind is in `kindMask` and whose flags include all
  /// of `flags`: the anchors of a session, say, without materializing a single text.
  Napi::Value ScanIds(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    return Guard(env, [&]() -> Napi::Value {
      SpanLog* log = ReadLog(env);
      const double from = IdArg(info, 0, "fromId");
      const double limit = IdArg(info, 1, "limit");
      const uint32_t mask = static_cast<uint32_t>(ToInteger(info[2], "kindMask", "INVALID_ARGUMENT", 0, 255));
      const uint32_t flags = static_cast<uint32_t>(ToInteger(info[3], "flags", "INVALID_ARGUMENT", 0, 255));
      uint64_t lo = std::max<uint64_t>(static_cast<uint64_t>(from), log->first_id());
      uint64_t hi = log->next_id();
      if (static_cast<double>(lo) + limit < static_cast<double>(hi)) hi = lo + static_cast<uint64_t>(limit);
      std::vector<double> ids;
      RecordView v;
      for (uint64_t id = lo; id < hi; ++id) {
        if (!log->Read(id, &v)) continue;
        if ((mask & (1u << static_cast<uint32_t>(v.span.kind))) == 0) continue;
        if ((v.span.flags & flags) != flags) continue;
        ids.push_back(static_cast<double>(id));
      }
      Napi::Float64Array out = Napi::Float64Array::New(env, ids.size());
      if (!ids.empty()) std::memcpy(out.Data(), ids.data(), ids.size() * sizeof(double));
      return out;
    });
  }

  Napi::Value ReleaseResident(const Napi::CallbackInfo& info) {  // SpanLog::ReleaseResident: the bytes advised
    Napi::Env env = info.Env();
    return Guard(env, [&]() -> Napi::Value { return Napi::Number::New(env, double(LiveLog(env)->ReleaseResident())); });
  }

  Napi::Value FirstId(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    return Guard(
        env, [&]() -> Napi::Value { return Napi::Number::New(env, static_cast<double>(LiveLog(env)->first_id())); });
  }

  Napi::Value NextId(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    return Guard(env, [&]() -> Napi::Value {
      return Napi::Number::New(env, static_cast<double>(LiveLog(env)->staged_next_id()));
    });
  }

  Napi::Value Refresh(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    return Guard(env,
                 [&]() -> Napi::Value { return Napi::Number::New(env, static_cast<double>(ReadLog(env)->Refresh())); });
  }

  Napi::Value Flush(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    return GuardAsync(env, [&]() -> Napi::Value {
      SpanLog* log = LiveLog(env);
      RefuseWhileAppending("flush");
      if (!log->read_only() && log->failed()) {
        throw NativeError("FSYNC_FAILED", "an earlier fsync failed; the log refuses every write");
      }
      napi_value promise;
      napi_deferred d;
      if (napi_create_promise(env, &d, &promise) != napi_ok) throw Napi::Error::New(env);
      if (log->read_only() || (log->synced_seq() == log->written_seq() && pending_.empty())) {
        napi_resolve_deferred(env, d, env.Undefined());
      } else {
        // NaN marks a flush: it resolves with undefined, not an id.
        pending_.Push(log->staged_seq(), std::nan(""), d);
        ScheduleSync(env);
      }
      return Napi::Value(env, promise);
    });
  }

  Napi::Value Verify(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    return Guard(env, [&]() -> Napi::Value {
      VerifyResult r = ReadLog(env)->Verify();
      Napi::Object o = Napi::Object::New(env);
      o.Set("ok", Napi::Boolean::New(env, r.ok));
      o.Set("records", Napi::Number::New(env, static_cast<double>(r.records)));
      o.Set("bytes", Napi::Number::New(env, static_cast<double>(r.bytes)));
      Napi::Array problems = Napi::Array::New(env, r.problems.size());
      for (size_t i = 0; i < r.problems.size(); ++i) {
        Napi::Object p = Napi::Object::New(env);
        p.Set("file", r.problems[i].file);
        p.Set("offset", Napi::Number::New(env, static_cast<double>(r.problems[i].offset)));
        p.Set("outcome", r.problems[i].outcome);
        p.Set("message", r.problems[i].message);
        problems.Set(static_cast<uint32_t>(i), p);
      }
      o.Set("problems", problems);
      return o;
    });
  }

  Napi::Value Stats(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    return Guard(env, [&]() -> Napi::Value {
      SpanLog* log = ReadLog(env);
      Napi::Object o = Napi::Object::New(env);
      o.Set("firstId", Napi::Number::New(env, static_cast<double>(log->first_id())));
      o.Set("nextId", Napi::Number::New(env, static_cast<double>(log->next_id())));
      o.Set("segments", Napi::Number::New(env, static_cast<double>(log->segment_count())));
      o.Set("bytes", Napi::Number::New(env, static_cast<double>(log->bytes())));
      o.Set("durability", Napi::Number::New(env, static_cast<double>(log->durability())));
      o.Set("readOnly", Napi::Boolean::New(env, log->read_only()));
      o.Set("failed", Napi::Boolean::New(env, log->failed()));
      Napi::Array rec = Napi::Array::New(env, log->recoveries().size());
      for (size_t i = 0; i < log->recoveries().size(); ++i) {
        const TornTailRecovery& t = log->recoveries()[i];
        Napi::Object r = Napi::Object::New(env);
        r.Set("file", t.file);
        r.Set("offset", Napi::Number::New(env, static_cast<double>(t.offset)));
        r.Set("droppedBytes", Napi::Number::New(env, static_cast<double>(t.dropped_bytes)));
        r.Set("zerosOnly", Napi::Boolean::New(env, t.zeros_only));
        rec.Set(static_cast<uint32_t>(i), r);
      }
      o.Set("recoveries", rec);
      return o;
    });
  }

  Napi::Value Close(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    return GuardAsync(env, [&]() -> Napi::Value {
      RefuseWhileAppending("close");
      auto d = Napi::Promise::Deferred::New(env);
      if (closed_ || !log_) {
        d.Resolve(env.Undefined());
        return d.Promise();
      }
      close_waiters_.push_back(d);
      if (!closing_) {
        closing_ = true;
        if (!sync_in_flight_ && !sync_scheduled_) StartClose(env);
      }
      return d.Promise();
    });
  }

  std::unique_ptr<SpanLog> log_;
  // Set while append runs. Reading a batch of strings can run user JS (an element getter, a
  // Proxy's trap), and an append nested in it would reuse this log's scratch (inputs_,
  // arena_) under the outer one, which then stored the inner batch's bytes as its own
  // records; a close or flush nested in it would sync and release the log
  // under the outer append. Those nested calls are refused; reads are not.
  bool appending_ = false;
  struct AppendingScope {
    explicit AppendingScope(bool* flag) : flag_(flag) { *flag_ = true; }
    ~AppendingScope() { *flag_ = false; }
    AppendingScope(const AppendingScope&) = delete;
    AppendingScope& operator=(const AppendingScope&) = delete;
    bool* flag_;
  };
  void RefuseWhileAppending(const char* what) const {
    if (appending_) {
      throw NativeError("INVALID_ARGUMENT",
                        std::string(what) +
                            ": called while an append on this log reads its batch (from a getter or "
                            "Proxy in that batch); the nested call is refused");
    }
  }
  bool closing_ = false;
  bool closed_ = false;
  bool close_running_ = false;
  bool sync_in_flight_ = false;
  bool sync_scheduled_ = false;
  Napi::FunctionReference set_immediate_;
  Napi::FunctionReference span_factory_;
  Napi::FunctionReference start_sync_cb_;
  Napi::FunctionReference settle_;
  // The JS wrapper's one-row scratch (kind, flags, role, turnStart, turnEnd, timestamp, tokens).
  static constexpr size_t kRowSlots = 8;
  Napi::Reference<Napi::Float64Array> row_ref_;
  const double* row_ = nullptr;
  SyncWaiters pending_;
  Napi::Reference<Napi::Array> col_keys_;
  std::vector<Napi::Promise::Deferred> close_waiters_;
  // Reused per append: no allocation on the hot path once grown.
  std::vector<RecordInput> inputs_;
  std::vector<std::pair<size_t, size_t>> text_at_;
  ByteArena arena_;
  std::vector<char16_t> u16_;
  uint32_t max_text_bytes_cached_ = 0;

  friend class SyncTask;
  friend class CloseWorker;
  friend SpanSource* spanguard::UnwrapSpanSource(Napi::Env env, Napi::Value value);
};

void SyncTask::Complete(Napi::Env env) {
  try {
    wrap_->OnSyncDone(env, target_, err_);
  } catch (...) {
    // Never let an exception escape a libuv callback; the promises stay rejected/resolved as far as they got.
  }
}

void CloseWorker::OnOK() {
  try {
    wrap_->OnCloseDone(Env(), err_);
  } catch (...) {
  }
}

Napi::Value RecoverSegmentJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return Guard(env, [&]() -> Napi::Value {
    if (info.Length() < 1 || !info[0].IsTypedArray() ||
        info[0].As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array) {
      throw NativeError("INVALID_ARGUMENT", "recoverSegment expects a Uint8Array");
    }
    auto bytes = info[0].As<Napi::Uint8Array>();
    RecoveryResult r = RecoverSegment(bytes.Data(), bytes.ByteLength(), nullptr);
    Napi::Object o = Napi::Object::New(env);
    o.Set("outcome", RecoveryOutcomeName(r.outcome));
    o.Set("validEnd", Napi::Number::New(env, static_cast<double>(r.valid_end)));
    o.Set("records", Napi::Number::New(env, static_cast<double>(r.records)));
    o.Set("firstId", Napi::Number::New(env, static_cast<double>(r.first_id)));
    o.Set("errorOffset", Napi::Number::New(env, static_cast<double>(r.error_offset)));
    o.Set("message", r.message);
    return o;
  });
}

}  // namespace

SpanSource* UnwrapSpanSource(Napi::Env env, Napi::Value value) {
  bool is_log = false;
  if (value.IsObject()) napi_check_object_type_tag(env, value, &kSpanLogTag, &is_log);
  if (!is_log) ThrowTyped(env, "INVALID_ARGUMENT", "expected a SpanLog");
  SpanLogWrap* wrap = SpanLogWrap::Unwrap(value.As<Napi::Object>());
  if (wrap == nullptr || wrap->closing_ || !wrap->log_) ThrowTyped(env, "CLOSED", "the span log is closed");
  wrap->FlushStaged(env);
  return wrap->log_.get();
}

// prepareSpanLog(dir, options) → Promise<handle>: opens the log on the thread pool (the
// writer lock, the recovery scan of every segment, the mappings), for `new SpanLog(dir,
// options, handle)` to adopt. The options are checked here, before anything is queued.
static Napi::Value PrepareSpanLogJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return GuardAsync(env, [&]() -> Napi::Value {
    std::string dir;
    const SpanLogOptions opts = SpanLogWrap::ParseOptions(info, &dir);
    auto slot = std::make_shared<std::unique_ptr<SpanLog>>();
    return BackgroundJob::Queue(
        env, "spanguard:openLog", [slot, dir, opts]() { *slot = std::make_unique<SpanLog>(dir, opts); },
        [slot](Napi::Env e) { return MakePrepared<SpanLog>(e, std::move(*slot), kPreparedSpanLogTag); });
  });
}

void InitSpanLog(Napi::Env env, Napi::Object exports) {
  exports.Set("SpanLog", SpanLogWrap::Define(env));
  exports.Set("prepareSpanLog", Napi::Function::New(env, PrepareSpanLogJs, "prepareSpanLog"));
  exports.Set("recoverSegment", Napi::Function::New(env, RecoverSegmentJs, "recoverSegment"));
}

}  // namespace spanguard
