// JS surface of the built-in embedder: `new Embedder(dims)`, `.dims`, `.embed(texts)`.
// One crossing per batch: the texts come in as one array, the vectors go out as one
// row-major Float32Array.
#include <napi.h>

#include <memory>
#include <string>

#include "common/errors.h"
#include "embed/embedder.h"
#include "napi/bindings.h"
#include "napi/guard.h"

namespace spanguard {

namespace {

constexpr napi_type_tag kEmbedderTag = {0x5350414E47554152ull, 0x454D424544444552ull};

class EmbedderWrap : public Napi::ObjectWrap<EmbedderWrap> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(env, "Embedder",
                       {InstanceAccessor<&EmbedderWrap::Dims>("dims"), InstanceMethod<&EmbedderWrap::Embed>("embed")});
  }

  explicit EmbedderWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<EmbedderWrap>(info) {
    Guard(info.Env(), [&] {
      Napi::Env env = info.Env();
      uint32_t dims = Embedder::kDefaultDims;
      if (info.Length() >= 1 && !info[0].IsUndefined()) {
        if (!info[0].IsNumber()) ThrowTyped(env, "INVALID_ARGUMENT", "Embedder: dims must be an integer");
        double d = info[0].As<Napi::Number>().DoubleValue();
        if (!(d >= Embedder::kMinDims && d <= Embedder::kMaxDims) ||
            d != static_cast<double>(static_cast<uint32_t>(d))) {
          ThrowTyped(env, "INVALID_ARGUMENT",
                     "Embedder: dims must be an integer in [" + std::to_string(Embedder::kMinDims) + ", " +
                         std::to_string(Embedder::kMaxDims) + "]");
        }
        dims = static_cast<uint32_t>(d);
      }
      embedder_ = std::make_unique<Embedder>(dims);
      info.This().As<Napi::Object>().TypeTag(&kEmbedderTag);
    });
  }

  const Embedder& engine() const { return *embedder_; }

 private:
  Napi::Value Dims(const Napi::CallbackInfo& info) {
    return Guard(info.Env(), [&]() -> Napi::Value { return Napi::Number::New(info.Env(), embedder_->dims()); });
  }

  Napi::Value Embed(const Napi::CallbackInfo& info) {
    return Guard(info.Env(), [&]() -> Napi::Value {
      Napi::Env env = info.Env();
      if (info.Length() < 1 || !info[0].IsArray())
        ThrowTyped(env, "INVALID_ARGUMENT", "embed: expected an array of strings");
      Napi::Array texts = info[0].As<Napi::Array>();
      const uint32_t n = texts.Length();
      const uint32_t dims = embedder_->dims();
      // Validate every element before doing any work: a bad element fails the whole batch.
      for (uint32_t i = 0; i < n; ++i) {
        if (!texts.Get(i).IsString()) {
          ThrowTyped(env, "INVALID_ARGUMENT", "embed: element " + std::to_string(i) + " is not a string");
        }
      }
      Napi::Float32Array out = Napi::Float32Array::New(env, static_cast<size_t>(n) * dims);
      float* dst = out.Data();
      for (uint32_t i = 0; i < n; ++i) {
        napi_value v = texts.Get(i);
        size_t len = 0;
        napi_get_value_string_utf8(env, v, nullptr, 0, &len);
        buffer_.resize(len + 1);
        napi_get_value_string_utf8(env, v, buffer_.data(), len + 1, &len);
        embedder_->Embed(std::string_view(buffer_.data(), len), dst + static_cast<size_t>(i) * dims, scratch_);
      }
      return out;
    });
  }

  std::unique_ptr<Embedder> embedder_;
  EmbedScratch scratch_;
  std::string buffer_;
};

}  // namespace

/// Used by VectorIndex.catchUp to get at the engine behind a JS Embedder. The type tag
/// (set in the constructor) makes a look-alike object a typed error instead of a bad cast.
const Embedder* UnwrapEmbedder(Napi::Env env, Napi::Value value) {
  if (value.IsObject()) {
    Napi::Object obj = value.As<Napi::Object>();
    if (obj.CheckTypeTag(&kEmbedderTag)) return &EmbedderWrap::Unwrap(obj)->engine();
  }
  ThrowTyped(env, "INVALID_ARGUMENT", "expected a built-in Embedder");
}

void InitEmbedder(Napi::Env env, Napi::Object exports) { exports.Set("Embedder", EmbedderWrap::Define(env)); }

}  // namespace spanguard
