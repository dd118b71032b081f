/**
 * The engine context: what the compaction guard and the auditor reach of a store. They
 * receive this narrow view, built by the store, instead of the store itself, so neither
 * depends on the store's module.
 */
import type { GuardEvent } from '../events.js';
import type { NativeLexicalIndex, NativeSpanLog, NativeVectorIndex } from '../native.js';
import type { SearchContext } from '../search.js';
import type { HitRateMonitor, VerdictState } from '../verdict.js';
import type { Resolved } from './options.js';
import type { GuardState } from './trail.js';
import type { Hit, SearchOptions, SearchResult } from './types.js';

export interface EngineContext {
  readonly log: NativeSpanLog;
  /** The indexes as they are now (a rebuild replaces them). */
  readonly lexical: NativeLexicalIndex;
  readonly vector: NativeVectorIndex;
  readonly state: GuardState;
  readonly options: Resolved;
  readonly hitRate: HitRateMonitor;
  /** Appends a guard event to the log and applies it; records a verdict change too. */
  recordEvent(e: GuardEvent): Promise<number>;
  /** Applies an event this store wrote to the log (with a summary); records a verdict change too. */
  applyRecorded(id: number, e: GuardEvent): Promise<void>;
  /** Appends a summary record and the event naming it in one append, indexes the summary; resolves with the event's id. */
  appendSummary(text: string, turnStart: number, turnEnd: number, tokens: number, event: { summaryId: number; text: string }): Promise<number>;
  /** The fact an anchor span pins (src/store/facts.ts FactCache). */
  anchorFactOf(id: number, text: string, role: number): string | null;
  findExact(phrase: string, options?: { limit?: number }): Hit[];
  embedQuery(texts: string[]): Promise<Float32Array>;
  search(query: string, options?: SearchOptions): Promise<SearchResult>;
}

/** What a store's engine context is built from: the store (its calls are bound here) and its indexes, read when used (a rebuild replaces them). */
type EngineSource = Omit<EngineContext, 'lexical' | 'vector' | 'embedQuery'>;

export function engineContextOf(
  store: EngineSource,
  indexes: { readonly lexical: NativeLexicalIndex; readonly vector: NativeVectorIndex; embedQuery(texts: string[]): Promise<Float32Array> },
): EngineContext {
  return {
    log: store.log,
    get lexical() {
      return indexes.lexical;
    },
    get vector() {
      return indexes.vector;
    },
    state: store.state,
    options: store.options,
    hitRate: store.hitRate,
    recordEvent: (e) => store.recordEvent(e),
    applyRecorded: (id, e) => store.applyRecorded(id, e),
    appendSummary: (text, turnStart, turnEnd, tokens, event) => store.appendSummary(text, turnStart, turnEnd, tokens, event),
    anchorFactOf: (id, text, role) => store.anchorFactOf(id, text, role),
    findExact: (phrase, options) => store.findExact(phrase, options),
    embedQuery: (texts) => indexes.embedQuery(texts),
    search: (query, options) => store.search(query, options),
  };
}

/** What hybrid search (src/search.ts) reads and records, from the engine context. */
export function searchContextOf(engine: EngineContext, verdictState: () => VerdictState): SearchContext {
  return {
    log: engine.log,
    lexical: engine.lexical,
    vector: engine.vector,
    embedQuery: (t) => engine.embedQuery(t),
    verdictState,
    superseded: engine.state.superseded,
    ungrounded: engine.state.ungrounded,
    passes: engine.state.passes,
    readOnly: engine.options.readOnly,
    recordEvent: (e) => engine.recordEvent(e),
    matchPolicy: engine.options.matchPolicy,
  };
}
