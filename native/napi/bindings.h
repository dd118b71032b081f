// The binding parts register their classes and functions on the module's exports, and hand
// engine objects to each other (an index catching up from a log, with an embedder).
#pragma once

#include <napi.h>

namespace spanguard {

class SpanSource;
class Embedder;

void InitSpanLog(Napi::Env env, Napi::Object exports);
void InitLexicalIndex(Napi::Env env, Napi::Object exports);
void InitVectorIndex(Napi::Env env, Napi::Object exports);
void InitEmbedder(Napi::Env env, Napi::Object exports);
void InitTesting(Napi::Env env, Napi::Object exports);

/// Returns the SpanSource behind a JS SpanLog object (its staged records written first);
/// throws a typed INVALID_ARGUMENT (or CLOSED) error otherwise.
SpanSource* UnwrapSpanSource(Napi::Env env, Napi::Value value);

/// The engine behind a JS Embedder; throws a typed INVALID_ARGUMENT error otherwise.
const Embedder* UnwrapEmbedder(Napi::Env env, Napi::Value value);

}  // namespace spanguard
