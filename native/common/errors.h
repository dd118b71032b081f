// The engine's error type. Engine code (everything outside native/napi/) throws
// `NativeError` with a stable code and never touches Node-API; the binding layer
// (napi/guard.h) turns it into an instance of the spanguard error class the TypeScript side
// registered (src/errors.ts), so a JS caller always sees a typed error with that `code`.
// Native code never aborts the process on bad input.
#pragma once

#include <stdexcept>
#include <string>
#include <utility>

namespace spanguard {

/// An error raised inside the engine, carrying the stable code the JS side exposes.
class NativeError : public std::runtime_error {
 public:
  NativeError(std::string code, const std::string& message) : std::runtime_error(message), code_(std::move(code)) {}
  const std::string& code() const noexcept { return code_; }

 private:
  std::string code_;
};

}  // namespace spanguard
