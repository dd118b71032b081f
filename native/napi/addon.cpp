// Module entry: each binding part registers its own classes (napi/bindings.h).
#include <napi.h>

#include "napi/bindings.h"
#include "napi/guard.h"

static Napi::Object Init(Napi::Env env, Napi::Object exports) {
  spanguard::InitErrors(env, exports);
  spanguard::InitSpanLog(env, exports);
  spanguard::InitLexicalIndex(env, exports);
  spanguard::InitVectorIndex(env, exports);
  spanguard::InitEmbedder(env, exports);
  spanguard::InitTesting(env, exports);
  return exports;
}

NODE_API_MODULE(spanguard, Init)
