#include "napi/guard.h"

#include <exception>
#include <new>
#include <stdexcept>

namespace spanguard {

namespace {
// One factory per environment (worker threads each load their own instance data).
struct ErrorFactory {
  Napi::FunctionReference make;
};
}  // namespace

Napi::Error MakeTypedError(Napi::Env env, const std::string& code, const std::string& message) {
  auto* factory = env.GetInstanceData<ErrorFactory>();
  if (factory != nullptr && !factory->make.IsEmpty()) {
    Napi::Value err = factory->make.Call({Napi::String::New(env, code), Napi::String::New(env, message)});
    if (err.IsObject()) return Napi::Error(env, err);
  }
  Napi::Error err = Napi::Error::New(env, message);
  err.Set("code", Napi::String::New(env, code));
  return err;
}

void ThrowTyped(Napi::Env env, const std::string& code, const std::string& message) {
  throw MakeTypedError(env, code, message);
}

Napi::Error ConvertCurrentException(Napi::Env env) {
  try {
    throw;
  } catch (const Napi::Error& e) {
    return e;
  } catch (const NativeError& e) {
    return MakeTypedError(env, e.code(), e.what());
  } catch (const std::bad_alloc&) {
    return MakeTypedError(env, "IO_ERROR", "out of memory");
  } catch (const std::exception& e) {
    return MakeTypedError(env, "IO_ERROR", e.what());
  } catch (...) {
    return MakeTypedError(env, "IO_ERROR", "unknown native failure");
  }
}

static Napi::Value SetErrorFactory(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return Guard(env, [&]() -> Napi::Value {
    if (info.Length() < 1 || !info[0].IsFunction()) {
      ThrowTyped(env, "INVALID_ARGUMENT", "setErrorFactory expects a function");
    }
    auto* factory = env.GetInstanceData<ErrorFactory>();
    if (factory == nullptr) {
      factory = new ErrorFactory();
      env.SetInstanceData(factory);
    }
    factory->make = Napi::Persistent(info[0].As<Napi::Function>());
    return env.Undefined();
  });
}

void InitErrors(Napi::Env env, Napi::Object exports) {
  exports.Set("setErrorFactory", Napi::Function::New(env, SetErrorFactory, "setErrorFactory"));
}

}  // namespace spanguard
