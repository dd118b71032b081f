/**
 * The event trail. Every guard decision is appended to the log as an `event` record whose
 * payload is one of these JSON objects, so the verdict survives a restart and can explain
 * itself: replaying the events in id order rebuilds the guard's whole state.
 */

/** Inclusive id ranges: evicted sets are long runs of consecutive ids. */
export type IdRanges = [number, number][];

export interface PassEvent {
  type: 'pass';
  pass: number;
  evicted: IdRanges;
  evictedSummaries: number[];
  spilled: number[];
  superseded: number[];
  summaryId: number;
  turnStart: number;
  turnEnd: number;
  anchorsChecked: number;
  divergence: number;
  hitRateBefore: number | null;
  hitRateAfter: number | null;
  /** Values the summary states that nothing it replaced states (grounding 'mark'): it is never evidence for them. */
  ungrounded?: string[];
  /** The same over the probes of the turns this pass's summary speaks for alone (absent in older events). */
  localHitRateBefore?: number | null;
  localHitRateAfter?: number | null;
}

export interface RefusalEvent {
  type: 'refusal';
  pass: number;
  /** Anchors refused (empty for a refusal of the request itself). */
  anchors: number[];
  /** The largest divergence measured (0 when none was). */
  divergence: number;
  /**
   * Absent in refusals recorded before the field existed (anchor-not-retrievable). `io-error`:
   * the pass's append failed on the disk (IO_ERROR, FSYNC_FAILED), not a fault of the request.
   */
  reason?: 'anchor-not-retrievable' | 'divergence' | 'invalid-request' | 'io-error' | 'summary-range' | 'ungrounded';
  detail?: string;
  spanIds?: number[];
}

/** A breach of the lossless boundary (rule 1 or 2): sticky degradation. */
export interface BoundaryEvent {
  type: 'boundary';
  pass: number;
  reason: 'rewrite-raw' | 'evict-unretained';
  spanIds: number[];
}

export interface PinEvent {
  type: 'pin';
  fact: string;
  spanId: number;
  auto: boolean;
}

export interface AuditEvent {
  type: 'audit';
  pass: number;
  checked: number;
  passed: boolean;
  failures: { fact: string; spanId: number; why: string }[];
  sampledEvicted: number;
  /** Facts checked that belong to evicted spans; absent in audits recorded before the field existed (read as 0). */
  checkedEvicted?: number;
}

/** The retention a store was opened with, recorded when it differs from the last one recorded. */
export interface RetentionEvent {
  type: 'retention';
  pass: number;
  horizonSeconds: number;
  /** null: raw spans are kept forever. */
  rawTtlSeconds: number | null;
  bestEffort: boolean;
}

/** A degradation that is not a boundary breach: hit-rate jump, expect-raw miss, log/index disagreement. */
export interface DegradeEvent {
  type: 'degrade';
  pass: number;
  reason: 'hit-rate-rise' | 'expected-raw-got-summary' | 'index-disagreement' | 'audit-failed' | 'replica-gap';
  detail: string;
  spanIds: number[];
}

export interface RepairEvent {
  type: 'repair';
  pass: number;
  rebuilt: string[];
  auditPassed: boolean;
}

/** A torn log tail truncated at open: records that were never acknowledged, dropped. */
export interface RecoveryEvent {
  type: 'recovery';
  pass: number;
  file: string;
  offset: number;
  droppedBytes: number;
  /** Every cut byte was zero: no record was cut into (a sync/group writer's zero prefill). Absent in events recorded before the field existed. */
  zerosOnly?: boolean;
}

/** The store's id, recorded once in its life: derived index files name it (src/store/identity.ts). */
export interface StoreEvent {
  type: 'store';
  storeId: string;
}

/** An index file was damaged, missing, or not this store's (another store, log history or content): rebuilt from the log at open; `reason` says which file and why. */
export interface IndexRebuiltEvent {
  type: 'index-rebuilt';
  pass: number;
  index: string;
  reason: string;
}

/** The host appended spans with `anchor: false` that detection flags: they were protected anyway. */
export interface AnchorVetoEvent {
  type: 'anchor-veto';
  spanIds: number[];
}

export interface VerdictEvent {
  type: 'verdict';
  pass: number;
  from: string;
  to: string;
  reasons: string[];
}

export type GuardEvent =
  | PassEvent
  | RefusalEvent
  | BoundaryEvent
  | PinEvent
  | AuditEvent
  | DegradeEvent
  | RepairEvent
  | RecoveryEvent
  | RetentionEvent
  | AnchorVetoEvent
  | StoreEvent
  | IndexRebuiltEvent
  | VerdictEvent;

/** Compresses sorted ids into inclusive ranges. */
export function toRanges(ids: readonly number[]): IdRanges {
  const sorted = [...ids].sort((a, b) => a - b);
  const out: IdRanges = [];
  for (const id of sorted) {
    const last = out[out.length - 1];
    if (last && id === last[1] + 1) last[1] = id;
    else if (!last || id > last[1]) out.push([id, id]);
  }
  return out;
}
