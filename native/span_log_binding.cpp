// Placeholder registration, replaced when the SpanLog part lands.
#include <napi.h>

namespace spanguard {
void InitSpanLog(Napi::Env, Napi::Object) {}
}  // namespace spanguard
