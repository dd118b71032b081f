// Placeholder registration, replaced when the LexicalIndex part lands.
#include <napi.h>

namespace spanguard {
void InitLexicalIndex(Napi::Env, Napi::Object) {}
}  // namespace spanguard
