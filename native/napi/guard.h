// Errors across the Node-API boundary: the typed-error factory, and the one guard every
// binding entry point runs its body in.
//
// The TypeScript side owns the error classes (src/errors.ts). At init it hands the addon a
// factory `(code, message) => Error`; every native failure is thrown (or rejected) through
// it, so a JS caller always sees an instance of a spanguard error class with a stable code.
// Nothing thrown inside the engine may escape into Node-API as a C++ exception of another
// type: Guard and GuardAsync convert whatever was thrown (ConvertCurrentException).
#pragma once

#include <napi.h>

#include <string>

#include "common/errors.h"

namespace spanguard {

/// Builds a typed JS error through the factory registered at init (falls back to a plain
/// Error with a `code` property if init has not run, which only happens in misuse).
Napi::Error MakeTypedError(Napi::Env env, const std::string& code, const std::string& message);

/// Throws a typed JS error. With NAPI_CPP_EXCEPTIONS this throws a C++ Napi::Error.
[[noreturn]] void ThrowTyped(Napi::Env env, const std::string& code, const std::string& message);

/// The JS error for the exception being handled; call only inside a catch block. A
/// Napi::Error (a JS exception already made) passes as is; NativeError keeps its code;
/// std::bad_alloc is IO_ERROR "out of memory"; any other std::exception is IO_ERROR with its
/// message; anything else is IO_ERROR "unknown native failure".
Napi::Error ConvertCurrentException(Napi::Env env);

/// Runs `body` and returns what it returns; any exception leaves as a typed JS error.
template <typename F>
auto Guard(Napi::Env env, F&& body) -> decltype(body()) {
  try {
    return body();
  } catch (...) {
    throw ConvertCurrentException(env);
  }
}

/// For promise-returning entry points: `body` returns the promise; any exception becomes a
/// promise rejected with the typed JS error, so such a method never throws synchronously.
template <typename F>
Napi::Value GuardAsync(Napi::Env env, F&& body) {
  try {
    return body();
  } catch (...) {
    Napi::Error err = ConvertCurrentException(env);
    auto d = Napi::Promise::Deferred::New(env);
    d.Reject(err.Value());
    return d.Promise();
  }
}

/// Registers `setErrorFactory(fn)` on the exports.
void InitErrors(Napi::Env env, Napi::Object exports);

}  // namespace spanguard
