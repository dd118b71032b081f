// Typed errors across the native boundary.
//
// The TypeScript side owns the error classes (src/errors.ts). At init it hands the addon a
// factory `(code, message, details) => Error`; every native failure is thrown through it,
// so a JS caller always sees an instance of a spanguard error class with a stable `code`.
// Native code never aborts the process on bad input: it throws `NativeError`, which the
// binding layer converts with `ThrowTyped`.
#pragma once

#include <napi.h>

#include <stdexcept>
#include <string>

namespace spanguard {

/// An error raised inside the engine, carrying the stable code the JS side exposes.
class NativeError : public std::runtime_error {
 public:
  NativeError(std::string code, const std::string& message)
      : std::runtime_error(message), code_(std::move(code)) {}
  const std::string& code() const noexcept { return code_; }

 private:
  std::string code_;
};

/// Builds a typed JS error through the factory registered at init (falls back to a plain
/// Error with a `code` property if init has not run, which only happens in misuse).
Napi::Error MakeTypedError(Napi::Env env, const std::string& code, const std::string& message);

/// Throws a typed JS error. With NAPI_CPP_EXCEPTIONS this throws a C++ Napi::Error.
[[noreturn]] void ThrowTyped(Napi::Env env, const std::string& code, const std::string& message);

/// Registers `setErrorFactory(fn)` on the exports.
void InitErrors(Napi::Env env, Napi::Object exports);

}  // namespace spanguard
