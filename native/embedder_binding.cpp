// Placeholder registration, replaced when the Embedder part lands.
#include <napi.h>

namespace spanguard {
void InitEmbedder(Napi::Env, Napi::Object) {}
}  // namespace spanguard
