// Module entry: each engine part registers its own classes. One file pair per part:
// log (span_log), lexical index (lexical_index), vector index (vector_index), embedder.
#include <napi.h>

#include "errors.h"

namespace spanguard {
void InitSpanLog(Napi::Env env, Napi::Object exports);
void InitLexicalIndex(Napi::Env env, Napi::Object exports);
void InitVectorIndex(Napi::Env env, Napi::Object exports);
void InitEmbedder(Napi::Env env, Napi::Object exports);
}  // namespace spanguard

static Napi::Object Init(Napi::Env env, Napi::Object exports) {
  spanguard::InitErrors(env, exports);
  spanguard::InitSpanLog(env, exports);
  spanguard::InitLexicalIndex(env, exports);
  spanguard::InitVectorIndex(env, exports);
  spanguard::InitEmbedder(env, exports);
  return exports;
}

NODE_API_MODULE(spanguard, Init)
