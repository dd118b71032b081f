// The explicitly test-named `_testing` export: I/O fault injection (io_seam.h explains why it
// ships in the default build), the CRC32C implementations one by one, a read through the
// SpanSource interface the indexes use, the vector scan's kernels one by one, and a way to
// make the error guard meet each kind of C++ exception.
#include <napi.h>

#include "napi/background.h"

#if defined(__linux__)
#include <sched.h>
#endif

#include <chrono>
#include <cstdint>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "common/crc32c.h"
#include "common/errors.h"
#include "common/io_seam.h"
#include "log/span_log.h"
#include "log/span_source.h"
#include "napi/bindings.h"
#include "napi/convert.h"
#include "napi/guard.h"
#include "vector/vector_internal.h"

namespace spanguard {

namespace {

Napi::Value SetFaultsJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return Guard(env, [&]() -> Napi::Value {
    if (info.Length() < 1 || !info[0].IsObject()) throw NativeError("INVALID_ARGUMENT", "setFaults expects an object");
    Napi::Object o = info[0].As<Napi::Object>();
    FaultPlan plan;
    auto num = [&](const char* k, double dflt) {
      Napi::Value v = o.Get(k);
      if (v.IsUndefined()) return dflt;
      if (!v.IsNumber()) throw NativeError("INVALID_ARGUMENT", std::string("setFaults: ") + k + " must be a number");
      return v.As<Napi::Number>().DoubleValue();
    };
    plan.fail_sync_at = static_cast<int64_t>(num("failSyncAt", -1));
    plan.crash_at_sync = static_cast<int64_t>(num("crashAtSync", -1));
    plan.fail_write_at = static_cast<int64_t>(num("failWriteAt", -1));
    plan.short_write_at = static_cast<int64_t>(num("shortWriteAt", -1));
    plan.drop = num("drop", 0.3);
    plan.garble = num("garble", 0.2);
    plan.seed = static_cast<uint64_t>(num("seed", 1));
    SetFaults(plan);
    return env.Undefined();
  });
}

Napi::Value ClearFaultsJs(const Napi::CallbackInfo& info) {
  return Guard(info.Env(), [&]() -> Napi::Value {
    ClearFaults();
    return info.Env().Undefined();
  });
}

Napi::Value FaultCountersJs(const Napi::CallbackInfo& info) {
  return Guard(info.Env(), [&]() -> Napi::Value {
    Napi::Env env = info.Env();
    FaultCounters c = GetFaultCounters();
    Napi::Object o = Napi::Object::New(env);
    o.Set("syncs", Napi::Number::New(env, static_cast<double>(c.syncs)));
    o.Set("writes", Napi::Number::New(env, static_cast<double>(c.writes)));
    o.Set("crashed", Napi::Boolean::New(env, c.crashed));
    o.Set("sectorsKept", Napi::Number::New(env, static_cast<double>(c.sectors_kept)));
    o.Set("sectorsDropped", Napi::Number::New(env, static_cast<double>(c.sectors_dropped)));
    o.Set("sectorsGarbled", Napi::Number::New(env, static_cast<double>(c.sectors_garbled)));
    o.Set("truncatedFiles", Napi::Number::New(env, static_cast<double>(c.truncated_files)));
    return o;
  });
}

Napi::Value Crc32cJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return Guard(env, [&]() -> Napi::Value {
    if (info.Length() < 1 || !info[0].IsTypedArray() ||
        info[0].As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array) {
      throw NativeError("INVALID_ARGUMENT", "crc32c expects a Uint8Array");
    }
    auto bytes = info[0].As<Napi::Uint8Array>();
    if (info.Length() > 1 && info[1].IsString() && info[1].As<Napi::String>().Utf8Value() == "copy") {
      // The path the log encodes with: the copy (exact, right ASCII answer), then the CRC of the copy.
      std::vector<uint8_t> dst(bytes.ByteLength() + 1, 0xA5);
      const bool high = CopyFindHigh(dst.data(), bytes.Data(), bytes.ByteLength());
      uint8_t want_high = 0;
      for (size_t i = 0; i < bytes.ByteLength(); ++i) want_high |= bytes.Data()[i];
      if ((bytes.ByteLength() > 0 && std::memcmp(dst.data(), bytes.Data(), bytes.ByteLength()) != 0) ||
          dst[bytes.ByteLength()] != 0xA5 || high != ((want_high & 0x80u) != 0)) {
        throw NativeError("IO_ERROR", "CopyFindHigh copied wrongly or misreported ASCII");
      }
      return Napi::Number::New(env, Crc32c(0, dst.data(), bytes.ByteLength()));
    }
    const bool portable = info.Length() > 1 && info[1].ToBoolean().Value();
    uint32_t c =
        portable ? Crc32cPortable(0, bytes.Data(), bytes.ByteLength()) : Crc32c(0, bytes.Data(), bytes.ByteLength());
    return Napi::Number::New(env, c);
  });
}

// One CRC32C implementation by name ('table' | 'sse42' | 'clmul' | 'vpclmul'), plain or with
// its copy first (into a destination `dstOffset` bytes into a fresh buffer, checked for an
// exact copy, untouched neighbours and the right ASCII answer; the CRC is then of the copy).
// Throws if the CPU lacks it.
Napi::Value Crc32cImplJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return Guard(env, [&]() -> Napi::Value {
    if (info.Length() < 2 || !info[0].IsTypedArray() ||
        info[0].As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array || !info[1].IsString()) {
      throw NativeError("INVALID_ARGUMENT", "crc32cImpl expects (Uint8Array, name, copy?, dstOffset?)");
    }
    auto bytes = info[0].As<Napi::Uint8Array>();
    const std::string name = info[1].As<Napi::String>().Utf8Value();
    Crc32cImpl which = Crc32cImpl::kTable;
    bool found = false;
    for (Crc32cImpl w : {Crc32cImpl::kTable, Crc32cImpl::kSse42, Crc32cImpl::kClmul, Crc32cImpl::kVpclmul}) {
      if (name == Crc32cImplName(w)) which = w, found = true;
    }
    if (!found || !Crc32cImplSupported(which))
      throw NativeError("INVALID_ARGUMENT", "crc32c implementation not available: " + name);
    const bool copy = info.Length() > 2 && info[2].ToBoolean().Value();
    if (!copy) return Napi::Number::New(env, Crc32cWith(which, 0, bytes.Data(), bytes.ByteLength()));
    const size_t off = info.Length() > 3 && info[3].IsNumber() ? info[3].As<Napi::Number>().Uint32Value() % 64 : 0;
    const size_t n = bytes.ByteLength();
    std::vector<uint8_t> dst(off + n + 1, 0xA5);
    const bool high = CopyFindHighWith(which, dst.data() + off, bytes.Data(), n);
    uint8_t want_high = 0;
    for (size_t i = 0; i < n; ++i) want_high |= bytes.Data()[i];
    bool untouched = dst[off + n] == 0xA5;
    for (size_t i = 0; i < off; ++i) untouched = untouched && dst[i] == 0xA5;
    if ((n > 0 && std::memcmp(dst.data() + off, bytes.Data(), n) != 0) || !untouched ||
        high != ((want_high & 0x80u) != 0)) {
      throw NativeError("IO_ERROR", std::string("CopyFindHigh (") + name + ") copied wrongly or misreported ASCII");
    }
    return Napi::Number::New(env, Crc32cWith(which, 0, dst.data() + off, n));
  });
}

Napi::Value Crc32cImplsJs(const Napi::CallbackInfo& info) {
  return Guard(info.Env(), [&]() -> Napi::Value {
    Napi::Env env = info.Env();
    Napi::Object o = Napi::Object::New(env);
    Napi::Array supported = Napi::Array::New(env);
    uint32_t n = 0;
    for (Crc32cImpl w : {Crc32cImpl::kTable, Crc32cImpl::kSse42, Crc32cImpl::kClmul, Crc32cImpl::kVpclmul}) {
      if (Crc32cImplSupported(w)) supported.Set(n++, Napi::String::New(env, Crc32cImplName(w)));
    }
    o.Set("supported", supported);
    o.Set("active", Napi::String::New(env, Crc32cImplName(Crc32cActiveImpl())));
    return o;
  });
}

// Reads one record the way an index does (UnwrapSpanSource + SpanSource::Read), so the
// contract the lexical and vector indexes build on is tested from JS.
Napi::Value ReadViaSourceJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return Guard(env, [&]() -> Napi::Value {
    SpanSource* src = UnwrapSpanSource(env, info.Length() > 0 ? info[0] : env.Undefined());
    const double id =
        ToInteger(info.Length() > 1 ? info[1] : env.Undefined(), "id", "INVALID_ARGUMENT", 0, kMaxSafeDouble);
    SpanView v;
    if (!src->Read(static_cast<uint64_t>(id), &v)) return env.Undefined();
    Napi::Object o = Napi::Object::New(env);
    o.Set("id", Napi::Number::New(env, static_cast<double>(v.id)));
    o.Set("kind", Napi::Number::New(env, static_cast<double>(v.kind)));
    o.Set("flags", Napi::Number::New(env, v.flags));
    o.Set("text", Napi::String::New(env, v.text, v.text_len));
    o.Set("firstId", Napi::Number::New(env, static_cast<double>(src->first_id())));
    o.Set("nextId", Napi::Number::New(env, static_cast<double>(src->next_id())));
    return o;
  });
}

// Throws the named kind of C++ exception inside Guard (or GuardAsync): "native" (a
// NativeError), "bad_alloc", "logic" (a std::exception of another type) or "other" (not a
// std::exception at all), so a test can see each leave as a typed JS error.
[[noreturn]] void ThrowKind(const std::string& kind) {
  if (kind == "native") throw NativeError("INVALID_ARGUMENT", "a native error");
  if (kind == "bad_alloc") throw std::bad_alloc();
  if (kind == "logic") throw std::logic_error("a logic error");
  if (kind == "other") throw 42;
  throw NativeError("INVALID_ARGUMENT", "throwInGuard: unknown kind " + kind);
}

std::string KindArg(const Napi::Value& kind) {
  if (!kind.IsString()) throw NativeError("INVALID_ARGUMENT", "throwInGuard expects a kind");
  return kind.As<Napi::String>().Utf8Value();
}

Napi::Value ThrowInGuardJs(const Napi::CallbackInfo& info) {
  return Guard(info.Env(), [&]() -> Napi::Value { ThrowKind(KindArg(info[0])); });
}

Napi::Value ThrowInGuardAsyncJs(const Napi::CallbackInfo& info) {
  return GuardAsync(info.Env(), [&]() -> Napi::Value { ThrowKind(KindArg(info[0])); });
}

// poolSleep(ms, lane?) → Promise<void>: a job that holds its thread for `ms` milliseconds, on
// the libuv pool or, with lane 'read', on the read lane (tests that need the pool or the lane
// busy: a job queued behind enough of these is not started meanwhile).
Napi::Value PoolSleepJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return GuardAsync(env, [&]() -> Napi::Value {
    const double ms = info.Length() >= 1 && info[0].IsNumber() ? info[0].As<Napi::Number>().DoubleValue() : -1;
    if (!(ms >= 0 && ms <= 60000)) ThrowTyped(env, "INVALID_ARGUMENT", "poolSleep: ms must be a number in [0, 60000]");
    Lane lane = Lane::kPool;
    if (info.Length() >= 2 && !info[1].IsUndefined()) {
      if (!info[1].IsString() || info[1].As<Napi::String>().Utf8Value() != "read")
        ThrowTyped(env, "INVALID_ARGUMENT", "poolSleep: lane must be 'read' or undefined");
      lane = Lane::kRead;
    }
    return BackgroundJob::Queue(
        env, "spanguard:poolSleep",
        [ms]() { std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(ms)); }, nullptr, nullptr,
        Napi::Object(), lane);
  });
}

// readLaneProbe() → Promise<{ steeredOff, jsCpus, ranOn, mask }>: a read-lane job that reports
// the CPU it ran on and the CPUs its thread may use, with the core its submission pointed the
// lane's threads away from and how many CPUs the JS thread may use (-1 and 0 where the
// platform does not tell).
Napi::Value ReadLaneProbeJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return GuardAsync(env, [&]() -> Napi::Value {
    struct Seen {
      int steered_off = -1;
      int js_cpus = 0;
      int ran_on = -1;
      std::vector<int> mask;
    };
    auto seen = std::make_shared<Seen>();
#if defined(__linux__)
    cpu_set_t js;
    CPU_ZERO(&js);
    if (sched_getaffinity(0, sizeof(js), &js) == 0) seen->js_cpus = CPU_COUNT(&js);
#endif
    Napi::Promise promise = BackgroundJob::Queue(
        env, "spanguard:readLaneProbe",
        [seen]() {
#if defined(__linux__)
          seen->ran_on = sched_getcpu();
          cpu_set_t set;
          CPU_ZERO(&set);
          if (sched_getaffinity(0, sizeof(set), &set) == 0)
            for (int c = 0; c < CPU_SETSIZE; ++c)
              if (CPU_ISSET(c, &set)) seen->mask.push_back(c);
#endif
        },
        [seen](Napi::Env e) -> Napi::Value {
          Napi::Object o = Napi::Object::New(e);
          o.Set("steeredOff", Napi::Number::New(e, seen->steered_off));
          o.Set("jsCpus", Napi::Number::New(e, seen->js_cpus));
          o.Set("ranOn", Napi::Number::New(e, seen->ran_on));
          Napi::Array mask = Napi::Array::New(e, seen->mask.size());
          for (size_t i = 0; i < seen->mask.size(); ++i) mask.Set(static_cast<uint32_t>(i), seen->mask[i]);
          o.Set("mask", mask);
          return o;
        },
        nullptr, Napi::Object(), Lane::kRead);
    // Read after the submission, on this thread: the core that submission steered away from.
    seen->steered_off = ThreadLane::Of(env, Lane::kRead).OffCpu();
    return promise;
  });
}

// background() → { queued, jobs, offThread, laneThreads, readLaneThreads, readLaneQueued }:
// background jobs queued and run so far (napi/background.h), how many ran on a thread other
// than the JS thread that queued them, the threads the environment's write and read lanes have
// made (they stay for its life), and the jobs queued on its read lane.
Napi::Value BackgroundJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return Guard(env, [&]() -> Napi::Value {
    Napi::Object o = Napi::Object::New(env);
    o.Set("queued", Napi::Number::New(env, static_cast<double>(Background().queued.load())));
    o.Set("jobs", Napi::Number::New(env, static_cast<double>(Background().jobs.load())));
    o.Set("offThread", Napi::Number::New(env, static_cast<double>(Background().off_thread.load())));
    o.Set("laneThreads", Napi::Number::New(env, static_cast<double>(ThreadLane::Of(env, Lane::kWrite).Threads())));
    ThreadLane& read = ThreadLane::Of(env, Lane::kRead);
    o.Set("readLaneThreads", Napi::Number::New(env, static_cast<double>(read.Threads())));
    o.Set("readLaneQueued", Napi::Number::New(env, static_cast<double>(read.Submitted())));
    return o;
  });
}

// vectorScan(blocks: BigUint64Array, words, query: BigUint64Array, impl, asymmetric, bias, tau)
// → { dist: Uint16Array, cand: Uint32Array } | null: one signature-scan kernel by name
// (native/vector/binary_scan.cpp) over blocks of 8 signatures; null when the CPU lacks it.
Napi::Value VectorScanJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return Guard(env, [&]() -> Napi::Value {
    if (info.Length() < 7 || !info[0].IsTypedArray() ||
        info[0].As<Napi::TypedArray>().TypedArrayType() != napi_biguint64_array || !info[1].IsNumber() ||
        !info[2].IsTypedArray() || info[2].As<Napi::TypedArray>().TypedArrayType() != napi_biguint64_array ||
        !info[3].IsString() || !info[5].IsNumber() || !info[6].IsNumber()) {
      throw NativeError("INVALID_ARGUMENT",
                        "vectorScan expects (BigUint64Array, words, BigUint64Array, impl, asymmetric, bias, tau)");
    }
    auto blocks = info[0].As<Napi::BigUint64Array>();
    const size_t words = info[1].As<Napi::Number>().Uint32Value();
    auto q = info[2].As<Napi::BigUint64Array>();
    const bool asym = info[4].ToBoolean().Value();
    if (words == 0 || words > 64 || blocks.ElementLength() % (words * 8) != 0 ||
        q.ElementLength() != (asym ? vector_detail::kQueryPlanes * words : words)) {
      throw NativeError("INVALID_ARGUMENT", "vectorScan: blocks of 8 x words, and a query of words (x planes)");
    }
    const size_t nb = blocks.ElementLength() / (words * 8);
    auto dist = Napi::Uint16Array::New(env, nb * 8);
    std::vector<uint32_t> cand(nb * 8);
    size_t found = 0;
    if (!vector_detail::ScanWith(info[3].As<Napi::String>().Utf8Value(), asym, blocks.Data(), nb, words, q.Data(),
                                 info[5].As<Napi::Number>().Uint32Value(), dist.Data(),
                                 info[6].As<Napi::Number>().Uint32Value(), cand.data(), &found)) {
      return env.Null();
    }
    auto out = Napi::Uint32Array::New(env, found);
    if (found) std::memcpy(out.Data(), cand.data(), found * 4);
    Napi::Object o = Napi::Object::New(env);
    o.Set("dist", dist);
    o.Set("cand", out);
    return o;
  });
}

}  // namespace

void InitTesting(Napi::Env env, Napi::Object exports) {
  Napi::Object testing = Napi::Object::New(env);
  testing.Set("setFaults", Napi::Function::New(env, SetFaultsJs, "setFaults"));
  testing.Set("clearFaults", Napi::Function::New(env, ClearFaultsJs, "clearFaults"));
  testing.Set("faultCounters", Napi::Function::New(env, FaultCountersJs, "faultCounters"));
  testing.Set("crc32c", Napi::Function::New(env, Crc32cJs, "crc32c"));
  testing.Set("crc32cImpl", Napi::Function::New(env, Crc32cImplJs, "crc32cImpl"));
  testing.Set("crc32cImpls", Napi::Function::New(env, Crc32cImplsJs, "crc32cImpls"));
  testing.Set("readViaSource", Napi::Function::New(env, ReadViaSourceJs, "readViaSource"));
  testing.Set("throwInGuard", Napi::Function::New(env, ThrowInGuardJs, "throwInGuard"));
  testing.Set("throwInGuardAsync", Napi::Function::New(env, ThrowInGuardAsyncJs, "throwInGuardAsync"));
  testing.Set("background", Napi::Function::New(env, BackgroundJs, "background"));
  testing.Set("poolSleep", Napi::Function::New(env, PoolSleepJs, "poolSleep"));
  testing.Set("readLaneProbe", Napi::Function::New(env, ReadLaneProbeJs, "readLaneProbe"));
  testing.Set("vectorScan", Napi::Function::New(env, VectorScanJs, "vectorScan"));
  exports.Set("_testing", testing);
}

}  // namespace spanguard
