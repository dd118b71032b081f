// Value conversion for the span log binding: integer arguments, typed-array columns, the
// append scratch buffer, and UTF-16 to UTF-8 that sees lone surrogates.
#pragma once

#include <napi.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/errors.h"

namespace spanguard {

inline double ToInteger(const Napi::Value& v, const char* what, const char* code, double min, double max) {
  if (!v.IsNumber()) throw NativeError(code, std::string(what) + " must be a number");
  double d = v.As<Napi::Number>().DoubleValue();
  if (!std::isfinite(d) || std::floor(d) != d || d < min || d > max) {
    throw NativeError(code, std::string(what) + " must be an integer in [" + std::to_string(static_cast<int64_t>(min)) +
                                ", " + std::to_string(static_cast<int64_t>(max)) + "]");
  }
  return d;
}

// One napi_get_typedarray_info per column: node-addon-api's TypedArrayOf would ask three
// times, and each ask costs a type dispatch (measured ~12% of a single-span append).
template <typename T>
const T* TypedColumn(napi_env env, napi_value v, const char* name, napi_typedarray_type type, size_t* n, bool first) {
  // napi_get_typedarray_info refuses anything that is not a typed array itself, so one
  // call both checks and reads the column (each Node-API call costs a type dispatch).
  napi_typedarray_type got_type;
  size_t length = 0;
  void* data = nullptr;
  if (napi_get_typedarray_info(env, v, &got_type, &length, &data, nullptr, nullptr) != napi_ok || got_type != type) {
    throw NativeError("INVALID_ARGUMENT", std::string("append: column ") + name + " has the wrong type");
  }
  if (first) {
    *n = length;
  } else if (length != *n) {
    throw NativeError("INVALID_ARGUMENT", std::string("append: column ") + name + " has " + std::to_string(length) +
                                              " rows, expected " + std::to_string(*n));
  }
  return static_cast<const T*>(data);
}

// Growable byte buffer that does not zero what it grows into (std::string::resize does,
// which showed up at ~10% of an append of 330-byte texts).
class ByteArena {
 public:
  size_t size() const { return size_; }
  char* data() { return buf_.get(); }
  void clear() { size_ = 0; }
  // Makes room for `extra` more bytes and returns where they go.
  char* reserve_tail(size_t extra) {
    if (size_ + extra > cap_) {
      size_t cap = std::max(cap_ * 2, size_ + extra);
      std::unique_ptr<char[]> next(new char[cap]);
      if (size_ > 0) std::memcpy(next.get(), buf_.get(), size_);
      buf_ = std::move(next);
      cap_ = cap;
    }
    return buf_.get() + size_;
  }
  void commit(size_t n) { size_ += n; }
  // Gives back a buffer that one huge batch grew, so a log does not pin it forever.
  void shrink_if_over(size_t keep) {
    if (cap_ > keep) release();
  }
  void release() {
    buf_.reset();
    cap_ = 0;
    size_ = 0;
  }

 private:
  std::unique_ptr<char[]> buf_;
  size_t size_ = 0;
  size_t cap_ = 0;
};

// Encodes `units` UTF-16 code units as UTF-8 into `o` (room for 3 bytes per unit). Reads
// the string as UTF-16 because that is the only way to see lone surrogates (the UTF-8
// getter silently turns them into U+FFFD, which would store text the host never sent).
// Returns bytes written, or SIZE_MAX with *bad_at = UTF-16 index of a lone surrogate.
size_t Utf16ToUtf8(const char16_t* s, size_t units, char* o, size_t* bad_at);

// Whether UTF-8 bytes hold U+FFFD (EF BF BD).
inline bool HasReplacementChar(const char* p, size_t n) {
  const char* end = p + n;
  while (p < end) {
    const void* hit = std::memchr(p, 0xEF, static_cast<size_t>(end - p));
    if (hit == nullptr) return false;
    const auto* h = static_cast<const unsigned char*>(hit);
    if (end - reinterpret_cast<const char*>(h) >= 3 && h[1] == 0xBF && h[2] == 0xBD) return true;
    p = reinterpret_cast<const char*>(h) + 1;
  }
  return false;
}

// Encodes the JS string `v` (record i's `what`) as UTF-8 at the tail of *arena and sets *at to
// its (offset, length) there. Fast path: V8 writes UTF-8 itself (vectorised for one-byte strings). It turns a lone
// surrogate into U+FFFD silently, so any U+FFFD in the output sends the string through
// the UTF-16 path, which tells a real U+FFFD from a replaced surrogate. Real text rarely
// holds U+FFFD, so the exact check costs one memchr pass in the common case.
//
// One conversion call per string: the UTF-16 length is free, UTF-8 takes at most 3 bytes
// per UTF-16 unit, so a 3×units buffer always fits (and V8 skips its per-character
// capacity checks when the buffer is that large) — no separate Utf8Length pass.
inline void EncodeString(Napi::Env env, ByteArena* arena, std::vector<char16_t>* u16, napi_value v, size_t i,
                         const char* what, uint32_t max_bytes, std::pair<size_t, size_t>* at) {
  size_t units = 0;
  if (napi_get_value_string_utf16(env, v, nullptr, 0, &units) != napi_ok) {
    throw NativeError("INVALID_ARGUMENT", "record " + std::to_string(i) + ": " + what + " must be a string");
  }
  auto too_large = [&](size_t len) {
    return NativeError("TEXT_TOO_LARGE", "record " + std::to_string(i) + ": " + what + " is " + std::to_string(len) +
                                             " bytes, the maximum is " + std::to_string(max_bytes));
  };
  if (units > max_bytes) {
    size_t len = 0;
    napi_get_value_string_utf8(env, v, nullptr, 0, &len);
    throw too_large(len);
  }
  const size_t start = arena->size();
  char* out = arena->reserve_tail(units * 3 + 1);
  size_t got = 0;
  napi_get_value_string_utf8(env, v, out, units * 3 + 1, &got);
  if (got > max_bytes) throw too_large(got);
  if (HasReplacementChar(out, got)) {
    // Re-encode from UTF-16 over the same bytes (the exact encoding has the same length).
    if (u16->size() < units + 1) u16->resize(units + 1);
    napi_get_value_string_utf16(env, v, u16->data(), units + 1, &units);
    size_t bad_at = 0;
    got = Utf16ToUtf8(u16->data(), units, out, &bad_at);
    if (got == SIZE_MAX) {
      throw NativeError("INVALID_UTF8", "record " + std::to_string(i) + ": " + what +
                                            " is not valid Unicode (lone surrogate at UTF-16 index " +
                                            std::to_string(bad_at) + ")");
    }
  }
  arena->commit(got);
  *at = {start, got};
}

}  // namespace spanguard
