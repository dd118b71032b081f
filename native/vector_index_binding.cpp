// Placeholder registration, replaced when the VectorIndex part lands.
#include <napi.h>

namespace spanguard {
void InitVectorIndex(Napi::Env, Napi::Object) {}
}  // namespace spanguard
