// JS binding of the lexical index: `new LexicalIndex(file)`.
//
// Every method validates its arguments fully before touching the index, so a bad call
// throws a typed error (INVALID_ARGUMENT, UNKNOWN_KIND, INVALID_TURN, …) and changes
// nothing. Results cross the boundary once per call, as typed arrays.
#include <napi.h>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <atomic>
#include <cmath>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "common/errors.h"
#include "lexical/lexical_index.h"
#include "lexical/stemmer.h"
#include "log/span_source.h"
#include "napi/background.h"
#include "napi/bindings.h"
#include "napi/guard.h"

namespace spanguard {

namespace {

constexpr double kMaxSafeInteger = 9007199254740991.0;  // 2^53 - 1: span ids are exact doubles
constexpr uint32_t kMaxK = 100000;
// One locked step of a pool catch-up: text and metadata bytes (~1 ms of indexing), the
// longest a search on the JS thread waits for it.
constexpr size_t kLexicalStepBytes = 32 << 10;
// Marks the handle prepareLexicalIndex resolves with (an index loaded on the thread pool).
constexpr napi_type_tag kPreparedLexicalTag = {0x51d7a3e90c4b2f68ULL, 0x9a0e6c13b7f54d22ULL};

/// A SpanSource over texts handed in from JS ({ ids: Float64Array, kinds: Uint8Array,
/// texts: string[] }), for hosts that keep their own text store and for tests. Owns copies.
class MemorySource final : public SpanSource {
 public:
  MemorySource(Napi::Env env, Napi::Object object) {
    const Napi::Value ids_value = object.Get("ids");
    const Napi::Value kinds_value = object.Get("kinds");
    const Napi::Value texts_value = object.Get("texts");
    if (!ids_value.IsTypedArray() || ids_value.As<Napi::TypedArray>().TypedArrayType() != napi_float64_array ||
        !kinds_value.IsTypedArray() || kinds_value.As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array ||
        !texts_value.IsArray()) {
      ThrowTyped(env, "INVALID_ARGUMENT",
                 "source must be a SpanLog or { ids: Float64Array, kinds: Uint8Array, texts: string[] }");
    }
    const auto ids = ids_value.As<Napi::Float64Array>();
    const auto kinds = kinds_value.As<Napi::Uint8Array>();
    const auto texts = texts_value.As<Napi::Array>();
    if (ids.ElementLength() != kinds.ElementLength() || ids.ElementLength() != texts.Length()) {
      ThrowTyped(env, "INVALID_ARGUMENT", "source ids, kinds and texts differ in length");
    }
    const size_t n = ids.ElementLength();
    records_.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      const double id = ids[i];
      if (!(id >= 0 && id <= kMaxSafeInteger) || std::floor(id) != id || (i > 0 && id != records_.back().id + 1)) {
        ThrowTyped(env, "INVALID_ARGUMENT", "source ids must be consecutive non-negative integers");
      }
      const Napi::Value text = texts.Get(static_cast<uint32_t>(i));
      if (!text.IsString()) ThrowTyped(env, "INVALID_ARGUMENT", "source texts must be strings");
      records_.push_back(Record{static_cast<uint64_t>(id), kinds[i], text.As<Napi::String>().Utf8Value()});
    }
    first_id_ = n > 0 ? records_.front().id : 0;
  }

  uint64_t first_id() const override { return first_id_; }
  uint64_t next_id() const override { return first_id_ + records_.size(); }
  bool Read(uint64_t id, SpanView* out) const override {
    if (id < first_id_ || id >= next_id()) return false;
    const Record& r = records_[id - first_id_];
    *out = SpanView();
    out->id = r.id;
    out->kind = static_cast<RecordKind>(r.kind);
    out->text = r.text.data();
    out->text_len = static_cast<uint32_t>(r.text.size());
    return true;
  }

 private:
  struct Record {
    uint64_t id;
    uint8_t kind;
    std::string text;
  };
  std::vector<Record> records_;
  uint64_t first_id_ = 0;
};

RecordKind KindArg(Napi::Env env, const Napi::Value& value) {
  if (!value.IsNumber()) ThrowTyped(env, "INVALID_ARGUMENT", "kind must be a number (1 raw, 2 summary)");
  const double k = value.As<Napi::Number>().DoubleValue();
  if (k != 1 && k != 2) {
    ThrowTyped(env, "UNKNOWN_KIND", "kind " + std::to_string(k) + " is not searchable: use 1 (raw) or 2 (summary)");
  }
  return static_cast<RecordKind>(static_cast<uint8_t>(k));
}

double TurnBoundArg(Napi::Env env, const Napi::Value& value, const char* name) {
  if (value.IsUndefined()) return std::nan("");
  if (!value.IsNumber()) ThrowTyped(env, "INVALID_ARGUMENT", std::string(name) + " must be a number (NaN = open)");
  return value.As<Napi::Number>().DoubleValue();
}

// A BM25 walk on the pool lets a waiting catch-up step or JS-thread call at the index once it
// has run its turn (ReadTurn), releasing and retaking the lock the job holds.
class LockPause final : public WalkPause {
 public:
  LockPause(IndexLock* lock, std::unique_lock<std::mutex>& held) : turn_(lock), held_(held) {}
  bool Due() override { return turn_.Due(); }
  void Pause() override { turn_.Pause(held_); }

 private:
  ReadTurn turn_;
  std::unique_lock<std::mutex>& held_;
};

class LexicalIndexWrap : public Napi::ObjectWrap<LexicalIndexWrap> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(env, "LexicalIndex",
                       {
                           InstanceMethod<&LexicalIndexWrap::HighWater>("highWater"),
                           InstanceMethod<&LexicalIndexWrap::Add>("add"),
                           InstanceMethod<&LexicalIndexWrap::CatchUp>("catchUp"),
                           InstanceMethod<&LexicalIndexWrap::CatchUpAsync>("catchUpAsync"),
                           InstanceMethod<&LexicalIndexWrap::Search>("search"),
                           InstanceMethod<&LexicalIndexWrap::SearchAsync>("searchAsync"),
                           InstanceMethod<&LexicalIndexWrap::SearchWithin>("searchWithin"),
                           InstanceMethod<&LexicalIndexWrap::SearchPausing>("_searchPausing"),
                           InstanceMethod<&LexicalIndexWrap::Phrase>("phrase"),
                           InstanceMethod<&LexicalIndexWrap::PhraseWithin>("phraseWithin"),
                           InstanceMethod<&LexicalIndexWrap::PhraseHas>("phraseHas"),
                           InstanceMethod<&LexicalIndexWrap::Tokenize>("tokenize"),
                           InstanceMethod<&LexicalIndexWrap::Save>("save"),
                           InstanceMethod<&LexicalIndexWrap::SaveAsync>("saveAsync"),
                           InstanceMethod<&LexicalIndexWrap::Stats>("stats"),
                           InstanceMethod<&LexicalIndexWrap::Ids>("ids"),
                           InstanceMethod<&LexicalIndexWrap::IdsAsync>("idsAsync"),
                           InstanceMethod<&LexicalIndexWrap::ReleaseAsync>("releaseAsync"),
                       });
  }

  explicit LexicalIndexWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<LexicalIndexWrap>(info) {
    Guard(info.Env(), [&] {
      Napi::Env env = info.Env();
      if (info.Length() < 1 || !info[0].IsString() || info[0].As<Napi::String>().Utf8Value().empty()) {
        ThrowTyped(env, "INVALID_ARGUMENT", "LexicalIndex expects a file path");
      }
      // An index loaded on the thread pool (prepareLexicalIndex) is adopted, not loaded again.
      index_ = AdoptPrepared<LexicalIndex>(env, info.Length() > 1 ? info[1] : env.Undefined(), kPreparedLexicalTag,
                                           "LexicalIndex");
      if (!index_) index_ = std::make_unique<LexicalIndex>(info[0].As<Napi::String>().Utf8Value());
      high_water_.store(index_->high_water(), std::memory_order_release);
    });
  }

  static Napi::Value Prepare(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    return GuardAsync(env, [&]() -> Napi::Value {
      if (info.Length() < 1 || !info[0].IsString() || info[0].As<Napi::String>().Utf8Value().empty()) {
        ThrowTyped(env, "INVALID_ARGUMENT", "prepareLexicalIndex expects a file path");
      }
      auto slot = std::make_shared<std::unique_ptr<LexicalIndex>>();
      std::string file = info[0].As<Napi::String>().Utf8Value();
      return BackgroundJob::Queue(
          env, "spanguard:loadLexical", [slot, file]() { *slot = std::make_unique<LexicalIndex>(file); },
          [slot](Napi::Env e) { return MakePrepared<LexicalIndex>(e, std::move(*slot), kPreparedLexicalTag); });
    });
  }

 private:
  // highWater() reads the mirror the writers keep (high_water_), not the index under lock_: a
  // pool search holds the lock for its whole run, and the catch-up loop asks for the high
  // water after every job.
  Napi::Value HighWater(const Napi::CallbackInfo& info) {
    return Guard(info.Env(), [&]() -> Napi::Value {
      Live(info.Env());
      return Napi::Number::New(info.Env(), static_cast<double>(high_water_.load(std::memory_order_acquire)));
    });
  }

  // add(ids: Float64Array, kinds: Uint8Array, turnStart: Float64Array, turnEnd: Float64Array,
  //     texts: string[]) → records indexed. The direct path for hosts and tests; the same
  // LexicalIndex::Add as catchUp. The whole batch is checked before anything is indexed.
  Napi::Value Add(const Napi::CallbackInfo& info) {
    return Guard(info.Env(), [&]() -> Napi::Value {
      Napi::Env env = info.Env();
      auto is = [&](size_t i, napi_typedarray_type type) {
        return info.Length() > i && info[i].IsTypedArray() && info[i].As<Napi::TypedArray>().TypedArrayType() == type;
      };
      if (!is(0, napi_float64_array) || !is(1, napi_uint8_array) || !is(2, napi_float64_array) ||
          !is(3, napi_float64_array) || info.Length() < 5 || !info[4].IsArray()) {
        ThrowTyped(env, "INVALID_ARGUMENT",
                   "add(ids: Float64Array, kinds: Uint8Array, turnStart: Float64Array, turnEnd: Float64Array, "
                   "texts: string[])");
      }
      const auto ids = info[0].As<Napi::Float64Array>();
      const auto kinds = info[1].As<Napi::Uint8Array>();
      const auto starts = info[2].As<Napi::Float64Array>();
      const auto ends = info[3].As<Napi::Float64Array>();
      const auto texts = info[4].As<Napi::Array>();
      const size_t n = ids.ElementLength();
      if (kinds.ElementLength() != n || starts.ElementLength() != n || ends.ElementLength() != n ||
          texts.Length() != n) {
        ThrowTyped(env, "INVALID_ARGUMENT", "add: ids, kinds, turnStart, turnEnd and texts differ in length");
      }
      std::vector<std::string> owned(n);
      std::vector<IndexInput> inputs(n);
      for (size_t i = 0; i < n; ++i) {
        const double id = ids[i];
        if (!(id >= 0 && id <= kMaxSafeInteger) || std::floor(id) != id) {
          ThrowTyped(env, "INVALID_ARGUMENT", "add: ids[" + std::to_string(i) + "] is not a span id");
        }
        for (const double t : {starts[i], ends[i]}) {
          if (!std::isfinite(t) || std::floor(t) != t || std::fabs(t) > kMaxSafeInteger) {
            ThrowTyped(env, "INVALID_TURN", "add: turn of ids[" + std::to_string(i) + "] is not an integer");
          }
        }
        const Napi::Value text = texts.Get(static_cast<uint32_t>(i));
        if (!text.IsString())
          ThrowTyped(env, "INVALID_ARGUMENT", "add: texts[" + std::to_string(i) + "] is not a string");
        owned[i] = text.As<Napi::String>().Utf8Value();
        inputs[i] = IndexInput{static_cast<uint64_t>(id), static_cast<RecordKind>(kinds[i]),
                               static_cast<int64_t>(starts[i]), static_cast<int64_t>(ends[i]), owned[i]};
      }
      double indexed = 0;
      LexicalIndex& index = Writable(env);
      auto held = lock_.JsThread();  // an idsAsync may be reading on the pool
      index.CheckBatch(inputs.data(), n);
      for (const IndexInput& in : inputs) {
        index.Add(in);
        if (in.kind != RecordKind::kEvent) ++indexed;
      }
      high_water_.store(index.high_water(), std::memory_order_release);
      return Napi::Number::New(env, indexed);
    });
  }

  Napi::Value CatchUp(const Napi::CallbackInfo& info) {
    return Guard(info.Env(), [&]() -> Napi::Value {
      Napi::Env env = info.Env();
      if (info.Length() < 1 || !info[0].IsObject()) ThrowTyped(env, "INVALID_ARGUMENT", "catchUp expects a SpanLog");
      SpanSource* source = UnwrapSpanSource(env, info[0]);
      LexicalIndex& index = Writable(env);
      // catchUp(log, limit, maxBytes): one slice of a backlog (SliceEnd).
      const uint64_t end = SliceEnd(env, info.Length() > 1 ? info[1] : env.Undefined(),
                                    info.Length() > 2 ? info[2] : env.Undefined(), index.high_water(), *source);
      const SliceSource slice(*source, end);
      auto held = lock_.JsThread();  // an idsAsync may be reading on the pool
      const uint64_t indexed = index.CatchUp(slice);
      high_water_.store(index.high_water(), std::memory_order_release);
      return Napi::Number::New(env, static_cast<double>(indexed));
    });
  }

  // catchUpAsync(log, limit, maxBytes) → Promise<number>: catchUp's slice, indexed on the
  // thread pool. The slice's records are copied out of the log here, on the JS thread (the
  // log is read nowhere else); the pool indexes the copy in steps under lock_, so searches
  // and phrases meanwhile wait at most one step and see every id below the high water as it
  // stands. Until it settles add, catchUp, catchUpAsync and save throw INVALID_ARGUMENT.
  // Resolves with the raw and summary records indexed; a failure rejects with its code.
  Napi::Value CatchUpAsync(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    return GuardAsync(env, [&]() -> Napi::Value {
      if (info.Length() < 1 || !info[0].IsObject())
        ThrowTyped(env, "INVALID_ARGUMENT", "catchUpAsync expects a SpanLog");
      SpanSource* source = UnwrapSpanSource(env, info[0]);
      LexicalIndex* index = &Writable(env);
      auto slice = CopySlice(env, info.Length() > 1 ? info[1] : env.Undefined(),
                             info.Length() > 2 ? info[2] : env.Undefined(), index->high_water(), *source);
      auto indexed = std::make_shared<uint64_t>(0);
      catching_ = true;
      IndexLock* lock = &lock_;
      std::atomic<uint64_t>* high_water = &high_water_;
      return BackgroundJob::Queue(
          env, "spanguard:catchUpLexical",
          [index, lock, slice, indexed, high_water]() {
            CatchUpInSteps(*slice, kLexicalStepBytes, *lock, [&](uint64_t cut) {
              *indexed += index->CatchUp(SliceSource(*slice, cut));
              high_water->store(index->high_water(), std::memory_order_release);
            });
          },
          [indexed](Napi::Env e) { return Napi::Number::New(e, static_cast<double>(*indexed)); },
          [this]() { catching_ = false; }, Value(), Lane::kWrite);
    });
  }

  /// The arguments of search / searchAsync (query, k, kind, turnMin, turnMax), validated.
  struct SearchArgs {
    std::string query;
    uint32_t k;
    RecordKind kind;
    double turn_min;
    double turn_max;
  };
  static SearchArgs ParseSearch(Napi::Env env, const Napi::CallbackInfo& info) {
    if (info.Length() < 3 || !info[0].IsString()) ThrowTyped(env, "INVALID_ARGUMENT", "search: query must be a string");
    if (!info[1].IsNumber()) ThrowTyped(env, "INVALID_ARGUMENT", "search: k must be a number");
    const double k = info[1].As<Napi::Number>().DoubleValue();
    if (!(k >= 1 && k <= kMaxK) || std::floor(k) != k) {
      ThrowTyped(env, "INVALID_ARGUMENT", "search: k must be an integer in [1, " + std::to_string(kMaxK) + "]");
    }
    const RecordKind kind = KindArg(env, info[2]);
    const double turn_min = TurnBoundArg(env, info[3], "turnMin");
    const double turn_max = TurnBoundArg(env, info[4], "turnMax");
    if (!std::isnan(turn_min) && !std::isnan(turn_max) && turn_min > turn_max) {
      ThrowTyped(env, "INVALID_ARGUMENT", "search: turnMin is above turnMax");
    }
    return {info[0].As<Napi::String>().Utf8Value(), static_cast<uint32_t>(k), kind, turn_min, turn_max};
  }

  /// Hits as search returns them: { ids: Float64Array, scores: Float32Array }.
  static Napi::Object HitsObject(Napi::Env env, const std::vector<LexicalHit>& hits) {
    auto ids = Napi::Float64Array::New(env, hits.size());
    auto scores = Napi::Float32Array::New(env, hits.size());
    for (size_t i = 0; i < hits.size(); ++i) {
      ids[i] = static_cast<double>(hits[i].span_id);
      scores[i] = hits[i].score;
    }
    Napi::Object out = Napi::Object::New(env);
    out.Set("ids", ids);
    out.Set("scores", scores);
    return out;
  }

  // search(query, k, kind, turnMin, turnMax) → { ids: Float64Array, scores: Float32Array }
  Napi::Value Search(const Napi::CallbackInfo& info) {
    return Guard(info.Env(), [&]() -> Napi::Value {
      Napi::Env env = info.Env();
      const SearchArgs a = ParseSearch(env, info);
      auto held = lock_.JsThread();
      Live(env).Search(a.query, a.k, a.kind, a.turn_min, a.turn_max, &hits_);
      return HitsObject(env, hits_);
    });
  }

  // searchWithin(query, k, kind, turnMin, turnMax, maxPostings) → { ids, scores } | null:
  // search on this thread when the query's terms (those the selection keeps) hold at most
  // `maxPostings` postings in all (an integer ≥ 0), else null with nothing searched. The bound
  // caps the walk before it starts: a caller runs a small search here, where a pool job would
  // cost more in hand-overs than the walk, and sends the rest to searchAsync.
  Napi::Value SearchWithin(const Napi::CallbackInfo& info) {
    return Guard(info.Env(), [&]() -> Napi::Value {
      Napi::Env env = info.Env();
      const SearchArgs a = ParseSearch(env, info);
      const double bound = info.Length() >= 6 && info[5].IsNumber() ? info[5].As<Napi::Number>().DoubleValue() : -1;
      if (!(bound >= 0 && bound <= kMaxSafeInteger) || std::floor(bound) != bound) {
        ThrowTyped(env, "INVALID_ARGUMENT", "searchWithin: maxPostings must be an integer in [0, 2^53)");
      }
      auto held = lock_.JsThread();
      if (!Live(env).Search(a.query, a.k, a.kind, a.turn_min, a.turn_max, &hits_, static_cast<uint64_t>(bound))) {
        return env.Null();
      }
      return HitsObject(env, hits_);
    });
  }

  // searchAsync(query, k, kind, turnMin, turnMax) → Promise<{ ids, scores }>: search's
  // arguments, checked here (a bad one rejects with its code); the BM25 top-k runs on the
  // thread pool under lock_'s pool side, so the event loop turns while it walks the postings.
  // Not on the read lane (napi/background.h ThreadLane), whose threads keep off the JS
  // thread's core: a search awaits this walk as soon as it is queued, so that core is free for
  // it, and at 10^6 spans the walk and the vector lookup each need a core of their own.
  // The answer is search's for the index as it stood when the job took the lock. A long walk
  // lets a waiting catch-up step or JS-thread call in once it has run its turn
  // (IndexLock::kReadTurn), then goes on where it was (LockPause): an append's catch-up waits
  // for a turn of a walk, not for the whole walk. Until it
  // settles releaseAsync throws INVALID_ARGUMENT.
  Napi::Value SearchAsync(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    return GuardAsync(env, [&]() -> Napi::Value {
      auto args = std::make_shared<SearchArgs>(ParseSearch(env, info));
      LexicalIndex* index = &Live(env);
      auto hits = std::make_shared<std::vector<LexicalHit>>();
      IndexLock* lock = &lock_;
      ++reading_;
      return BackgroundJob::Queue(
          env, "spanguard:searchLexical",
          [index, lock, args, hits]() {
            auto held = lock->PoolJob();
            LockPause pause(lock, held);
            index->Search(args->query, args->k, args->kind, args->turn_min, args->turn_max, hits.get(), UINT64_MAX,
                          &pause);
          },
          [hits](Napi::Env e) -> Napi::Value { return HitsObject(e, *hits); }, [this]() { --reading_; }, Value());
    });
  }

  // _searchPausing(query, k, kind, turnMin, turnMax, texts, perPause = 1) → { ids, scores,
  // pauses }: a seam for the tests of the pausing walk (searchAsync's). The BM25 walk runs on
  // this thread and pauses at every poll; each pause adds the next `perPause` of `texts` as raw
  // documents (the next span ids, their turns the same), as a catch-up step that took the index
  // meanwhile would, until none are left.
  // The answer must be search()'s before the additions.
  Napi::Value SearchPausing(const Napi::CallbackInfo& info) {
    return Guard(info.Env(), [&]() -> Napi::Value {
      Napi::Env env = info.Env();
      const SearchArgs a = ParseSearch(env, info);
      if (info.Length() < 6 || !info[5].IsArray())
        ThrowTyped(env, "INVALID_ARGUMENT", "_searchPausing(query, k, kind, turnMin, turnMax, texts)");
      const Napi::Array list = info[5].As<Napi::Array>();
      std::vector<std::string> texts;
      for (uint32_t i = 0; i < list.Length(); ++i) {
        if (!list.Get(i).IsString()) ThrowTyped(env, "INVALID_ARGUMENT", "_searchPausing: texts must be strings");
        texts.push_back(list.Get(i).As<Napi::String>().Utf8Value());
      }
      const double per = info.Length() > 6 && info[6].IsNumber() ? info[6].As<Napi::Number>().DoubleValue() : 1;
      if (!(per >= 1 && per <= 1e9) || std::floor(per) != per)
        ThrowTyped(env, "INVALID_ARGUMENT", "_searchPausing: perPause must be an integer >= 1");
      LexicalIndex& index = Writable(env);
      auto held = lock_.JsThread();
      struct Adding final : WalkPause {
        LexicalIndex* index;
        const std::vector<std::string>* texts;
        size_t per = 1;
        size_t next = 0;
        size_t pauses = 0;
        bool Due() override { return next < texts->size(); }
        void Pause() override {
          ++pauses;
          for (size_t i = 0; i < per && next < texts->size(); ++i) {
            const uint64_t id = index->high_water();
            const IndexInput in{id, RecordKind::kRaw, static_cast<int64_t>(id), static_cast<int64_t>(id),
                                (*texts)[next++]};
            index->CheckBatch(&in, 1);
            index->Add(in);
          }
        }
      } pause;
      pause.index = &index;
      pause.texts = &texts;
      pause.per = static_cast<size_t>(per);
#if defined(__GLIBC__)
      // Freed blocks are overwritten meanwhile (glibc's M_PERTURB), so a walk that kept
      // reading a stream or a column the additions moved reads garbage, not the old bytes.
      mallopt(M_PERTURB, 0xA5);
      struct Unperturb {
        ~Unperturb() { mallopt(M_PERTURB, 0); }
      } unperturb;
#endif
      index.Search(a.query, a.k, a.kind, a.turn_min, a.turn_max, &hits_, UINT64_MAX, &pause);
      high_water_.store(index.high_water(), std::memory_order_release);
      Napi::Object out = HitsObject(env, hits_);
      out.Set("pauses", Napi::Number::New(env, static_cast<double>(pause.pauses)));
      return out;
    });
  }

  // The texts a phrase is verified against: a SpanLog, or a MemorySource-shaped object
  // ({ ids, kinds, texts }) that `memory` then owns.
  static const SpanSource* SourceArg(Napi::Env env, const Napi::Object& object, std::unique_ptr<MemorySource>* memory) {
    if (object.Has("texts") && object.Get("texts").IsArray()) {
      *memory = std::make_unique<MemorySource>(env, object);
      return memory->get();
    }
    return UnwrapSpanSource(env, object);
  }

  // phrase(source, phrase, kind, limit) → Float64Array of span ids, ascending. `source` is
  // the SpanLog (or a MemorySource-shaped object); `limit` ≥ 1 or Infinity.
  Napi::Value Phrase(const Napi::CallbackInfo& info) {
    return Guard(info.Env(), [&]() -> Napi::Value {
      bool complete = true;
      return PhraseIds(info, UINT64_MAX, &complete);
    });
  }

  // phraseWithin(source, phrase, kind, limit, scanBytes) → { ids, complete }: phrase, where
  // a phrase the index cannot narrow reads at most scanBytes bytes of the newest texts
  // (LexicalIndex::Phrase); complete is false when older texts went unread.
  Napi::Value PhraseWithin(const Napi::CallbackInfo& info) {
    return Guard(info.Env(), [&]() -> Napi::Value {
      Napi::Env env = info.Env();
      if (info.Length() < 5 || !info[4].IsNumber()) {
        ThrowTyped(env, "INVALID_ARGUMENT", "phraseWithin(source, phrase, kind, limit, scanBytes)");
      }
      const double budget = info[4].As<Napi::Number>().DoubleValue();
      if (!(budget >= 0) || (std::isfinite(budget) && std::floor(budget) != budget)) {
        ThrowTyped(env, "INVALID_ARGUMENT", "phraseWithin: scanBytes must be a non-negative integer or Infinity");
      }
      bool complete = true;
      const Napi::Value ids =
          PhraseIds(info, std::isfinite(budget) ? static_cast<uint64_t>(budget) : UINT64_MAX, &complete);
      Napi::Object out = Napi::Object::New(env);
      out.Set("ids", ids);
      out.Set("complete", Napi::Boolean::New(env, complete));
      return out;
    });
  }

  // The arguments phrase and phraseWithin share, converted, and the answer as a Float64Array.
  Napi::Value PhraseIds(const Napi::CallbackInfo& info, uint64_t scan_bytes, bool* complete) {
    Napi::Env env = info.Env();
    if (info.Length() < 4 || !info[0].IsObject()) {
      ThrowTyped(env, "INVALID_ARGUMENT", "phrase(source, phrase, kind, limit)");
    }
    if (!info[1].IsString()) ThrowTyped(env, "INVALID_ARGUMENT", "phrase: phrase must be a string");
    const RecordKind kind = KindArg(env, info[2]);
    if (!info[3].IsNumber()) ThrowTyped(env, "INVALID_ARGUMENT", "phrase: limit must be a number");
    const double limit = info[3].As<Napi::Number>().DoubleValue();
    if (!(limit >= 1) || (std::isfinite(limit) && std::floor(limit) != limit)) {
      ThrowTyped(env, "INVALID_ARGUMENT", "phrase: limit must be a positive integer or Infinity");
    }
    const std::string phrase = info[1].As<Napi::String>().Utf8Value();
    std::unique_ptr<MemorySource> memory;
    const SpanSource* source = SourceArg(env, info[0].As<Napi::Object>(), &memory);
    const uint64_t max = std::isfinite(limit) ? static_cast<uint64_t>(limit) : UINT64_MAX;
    std::vector<uint64_t> ids;
    auto held = lock_.JsThread();
    Live(env).Phrase(*source, phrase, kind, max, &ids, scan_bytes, complete);
    auto out = Napi::Float64Array::New(env, ids.size());
    for (size_t i = 0; i < ids.size(); ++i) out[i] = static_cast<double>(ids[i]);
    return out;
  }

  // phraseHas(source, phrases, ids, kind) → Uint8Array: 1 where span ids[i] is among
  // phrase(phrases[i])'s answers. One crossing for all the anchors of a compaction pass.
  Napi::Value PhraseHas(const Napi::CallbackInfo& info) {
    return Guard(info.Env(), [&]() -> Napi::Value {
      Napi::Env env = info.Env();
      if (info.Length() < 4 || !info[0].IsObject() || !info[1].IsArray() || !info[2].IsTypedArray()) {
        ThrowTyped(env, "INVALID_ARGUMENT", "phraseHas(source, phrases: string[], ids: Float64Array, kind)");
      }
      const Napi::Array phrases = info[1].As<Napi::Array>();
      const Napi::TypedArray typed = info[2].As<Napi::TypedArray>();
      if (typed.TypedArrayType() != napi_float64_array)
        ThrowTyped(env, "INVALID_ARGUMENT", "phraseHas: ids must be a Float64Array");
      const Napi::Float64Array ids = info[2].As<Napi::Float64Array>();
      if (ids.ElementLength() != phrases.Length())
        ThrowTyped(env, "INVALID_ARGUMENT", "phraseHas: phrases and ids differ in length");
      const RecordKind kind = KindArg(env, info[3]);
      std::unique_ptr<MemorySource> memory;
      const SpanSource* source = SourceArg(env, info[0].As<Napi::Object>(), &memory);
      const size_t count = ids.ElementLength();
      std::vector<std::string> texts(count);
      std::vector<uint64_t> span_ids(count);
      for (size_t i = 0; i < count; ++i) {
        const Napi::Value v = phrases.Get(static_cast<uint32_t>(i));
        if (!v.IsString()) ThrowTyped(env, "INVALID_ARGUMENT", "phraseHas: phrases must be strings");
        texts[i] = v.As<Napi::String>().Utf8Value();
        const double id = ids[i];
        if (!(id >= 0) || std::floor(id) != id || id > 9007199254740991.0) {
          ThrowTyped(env, "INVALID_ARGUMENT", "phraseHas: ids must be non-negative integers");
        }
        span_ids[i] = static_cast<uint64_t>(id);
      }
      auto out = Napi::Uint8Array::New(env, count);
      auto held = lock_.JsThread();
      Live(env).PhraseHasMany(*source, texts, kind, span_ids, out.Data());
      return out;
    });
  }

  Napi::Value Tokenize(const Napi::CallbackInfo& info) {
    return Guard(info.Env(), [&]() -> Napi::Value {
      Napi::Env env = info.Env();
      if (info.Length() < 1 || !info[0].IsString()) ThrowTyped(env, "INVALID_ARGUMENT", "tokenize expects a string");
      const std::string text = info[0].As<Napi::String>().Utf8Value();
      TokenStream stream;
      spanguard::Tokenize(text, &stream);
      Napi::Array out = Napi::Array::New(env, stream.tokens.size());
      for (size_t i = 0; i < stream.tokens.size(); ++i) {
        const std::string_view t = stream.token(i);
        out.Set(static_cast<uint32_t>(i), Napi::String::New(env, t.data(), t.size()));
      }
      return out;
    });
  }

  Napi::Value Save(const Napi::CallbackInfo& info) {
    return Guard(info.Env(), [&]() -> Napi::Value {
      Writable(info.Env()).Save();
      return info.Env().Undefined();
    });
  }

  // saveAsync() → Promise<void>: Save on the write lane (its threads yield the CPU to the JS
  // thread: writing hundreds of MB at 10^6 spans kept a pool thread busy at the JS thread's
  // priority, and on two cores the loop ran late behind it). Until it settles the index may be
  // read (search, phrase, stats) but not changed: add, catchUp and save throw
  // INVALID_ARGUMENT, so the file written is the index as it stood at the call.
  Napi::Value SaveAsync(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    return GuardAsync(env, [&]() -> Napi::Value {
      LexicalIndex* index = &Writable(env);
      saving_ = true;
      return BackgroundJob::Queue(
          env, "spanguard:saveLexical", [index]() { index->Save(); }, nullptr, [this]() { saving_ = false; }, Value(),
          Lane::kWrite);
    });
  }

  /// The index, or a typed CLOSED error after releaseAsync().
  LexicalIndex& Live(Napi::Env env) const {
    if (!index_) ThrowTyped(env, "CLOSED", "the lexical index is released");
    return *index_;
  }

  /// The index for a call that changes it (or releases it): refused while a save or a pool
  /// catch-up runs.
  LexicalIndex& Writable(Napi::Env env) const {
    LexicalIndex& index = Live(env);
    if (saving_)
      ThrowTyped(env, "INVALID_ARGUMENT", "the lexical index is being saved; it cannot change until the save settles");
    if (catching_)
      ThrowTyped(env, "INVALID_ARGUMENT",
                 "the lexical index is being caught up on the thread pool; it cannot change until that settles");
    return index;
  }

  // releaseAsync() → Promise<boolean>: frees the index on the thread pool (at 10^6 spans its
  // dictionary, postings and documents are hundreds of MB: tens of ms on the JS thread, where
  // the collector would otherwise free it). Later calls throw CLOSED at once. Resolves true
  // when this call released the index, false when it was released already. Refused while a
  // save or a pool catch-up runs.
  Napi::Value ReleaseAsync(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    return GuardAsync(env, [&]() -> Napi::Value {
      if (reading_ > 0)
        ThrowTyped(env, "INVALID_ARGUMENT",
                   "the lexical index is being read on the thread pool; it cannot be released until that settles");
      if (index_) Writable(env);
      auto engine = std::make_shared<std::unique_ptr<LexicalIndex>>(std::move(index_));
      auto released = std::make_shared<bool>(false);
      return BackgroundJob::Queue(
          env, "spanguard:releaseLexical",
          [engine, released]() {
            *released = *engine != nullptr;
            engine->reset();
          },
          [released](Napi::Env e) { return Napi::Boolean::New(e, *released); });
    });
  }

  // idsAsync(kind) → Promise<Float64Array>: ids(kind) copied and converted on the thread pool,
  // under lock_ (a catch-up's steps wait for it, and it for them); releaseAsync throws
  // INVALID_ARGUMENT until it settles.
  Napi::Value IdsAsync(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    return GuardAsync(env, [&]() -> Napi::Value {
      if (info.Length() < 1 || !info[0].IsNumber())
        ThrowTyped(env, "INVALID_ARGUMENT", "idsAsync(kind) expects a record kind");
      const auto kind = static_cast<RecordKind>(info[0].As<Napi::Number>().Uint32Value());
      const LexicalIndex* index = &Live(env);
      return QueueIdsRead(
          env, "spanguard:idsLexical", &lock_, &reading_, Value(),
          [index, kind](std::vector<uint64_t>* ids) { index->SpanIds(kind, ids); },
          [](std::vector<uint64_t>*) {});  // SpanIds answers ascending
    });
  }

  // ids(kind) → Float64Array of the span ids held in that namespace, ascending.
  Napi::Value Ids(const Napi::CallbackInfo& info) {
    return Guard(info.Env(), [&]() -> Napi::Value {
      Napi::Env env = info.Env();
      if (info.Length() < 1 || !info[0].IsNumber()) {
        ThrowTyped(env, "INVALID_ARGUMENT", "ids(kind) expects a record kind");
        return env.Undefined();
      }
      std::vector<uint64_t> ids;
      auto held = lock_.JsThread();
      Live(env).SpanIds(static_cast<RecordKind>(info[0].As<Napi::Number>().Uint32Value()), &ids);
      Napi::Float64Array out = Napi::Float64Array::New(env, ids.size());
      for (size_t i = 0; i < ids.size(); ++i) out[i] = static_cast<double>(ids[i]);
      return out;
    });
  }

  Napi::Value Stats(const Napi::CallbackInfo& info) {
    return Guard(info.Env(), [&]() -> Napi::Value {
      Napi::Env env = info.Env();
      auto held = lock_.JsThread();
      const LexicalIndex& index = Live(env);
      const LexicalStats s = index.Stats();
      Napi::Object out = Napi::Object::New(env);
      auto num = [&](const char* name, uint64_t v) { out.Set(name, Napi::Number::New(env, static_cast<double>(v))); };
      out.Set("file", Napi::String::New(env, index.file()));
      num("highWater", s.high_water);
      out.Set("loadedFrom", Napi::String::New(env, s.loaded_from));
      out.Set("loadError", Napi::String::New(env, s.load_error));
      num("fileCrc", s.file_crc);
      num("rawDocs", s.raw_docs);
      num("summaryDocs", s.summary_docs);
      num("rawTerms", s.raw_terms);
      num("summaryTerms", s.summary_terms);
      num("rawTokens", s.raw_tokens);
      num("summaryTokens", s.summary_tokens);
      num("postingsBytes", s.postings_bytes);
      num("memoryBytes", s.memory_bytes);
      num("memoryDocumentsBytes", s.memory_documents);
      num("memoryDictionaryBytes", s.memory_dictionary);
      num("memoryPostingsBytes", s.memory_postings);
      num("inlineStreams", s.inline_streams);
      num("phraseFallbackScans", s.phrase_fallback_scans);
      num("phraseScansCut", s.phrase_scans_cut);
      num("phrasePostingsDecoded", s.phrase_postings_decoded);
      num("phrasePositionsDecoded", s.phrase_positions_decoded);
      num("bm25Accumulated", s.bm25_accumulated);
      num("bm25Pauses", s.bm25_pauses);
      num("affixSortedTerms", s.affix_sorted_terms);
      out.Set("tokenizerVersion", Napi::Number::New(env, kTokenizerVersion));
      return out;
    });
  }

  std::unique_ptr<LexicalIndex> index_;
  std::vector<LexicalHit> hits_;
  bool saving_ = false;    ///< a saveAsync is running (on the write lane)
  bool catching_ = false;  ///< a catchUpAsync is running (on the write lane)
  uint32_t reading_ = 0;   ///< idsAsync reads and searchAsync searches running on the pool
  IndexLock lock_;         ///< between a catchUpAsync's steps and reads on the JS thread or the pool
  /// The index's high water, kept by every call that moves it (add, catchUp, a catchUpAsync
  /// step, under lock_) so highWater() answers without taking lock_.
  std::atomic<uint64_t> high_water_{0};
};

// normalizeTerm(token) → the form the index files the token under beside itself (Porter2
// stem, diacritics folded, leading zeros dropped; the token itself when none applies).
// Expects one token as the tokenizer emits it (case-folded), for tests and debugging.
Napi::Value NormalizeTermJs(const Napi::CallbackInfo& info) {
  return Guard(info.Env(), [&]() -> Napi::Value {
    Napi::Env env = info.Env();
    if (info.Length() < 1 || !info[0].IsString()) ThrowTyped(env, "INVALID_ARGUMENT", "normalizeTerm expects a string");
    const std::string token = info[0].As<Napi::String>().Utf8Value();
    std::string out;
    if (!NormalizeTerm(token, &out)) return info[0];
    return Napi::String::New(env, out);
  });
}

}  // namespace

void InitLexicalIndex(Napi::Env env, Napi::Object exports) {
  exports.Set("LexicalIndex", LexicalIndexWrap::Define(env));
  exports.Set("prepareLexicalIndex", Napi::Function::New(env, LexicalIndexWrap::Prepare, "prepareLexicalIndex"));
  exports.Set("normalizeTerm", Napi::Function::New(env, NormalizeTermJs, "normalizeTerm"));
}

}  // namespace spanguard
