/**
 * The event trail: guard events are records of kind `event` in the log (JSON text). One
 * parser reads them and one function applies them, at open (the replay), on a reader's
 * refresh, and after each record the store writes, so the guard state and the verdict are
 * always what the trail says.
 */
import { RecordFlag, RecordKind, type AppendColumns, type NativeSpan, type NativeSpanLog } from '../native.js';
import type { GuardEvent, RetentionEvent } from '../events.js';
import type { HitRateMonitor, VerdictMonitor } from '../verdict.js';
import type { Resolved } from './options.js';
import { ScanSlicer } from '../catchup.js';

/** Records read from the log per scan. */
export const SCAN_CHUNK = 4096;

/** A growable bitset over span ids. */
export class IdSet {
  private bits = new Uint8Array(1024);
  size = 0;
  has(id: number): boolean {
    const byte = id >>> 3;
    return byte < this.bits.length && (this.bits[byte]! & (1 << (id & 7))) !== 0;
  }
  /** The ids held, ascending (a scan of the bitset that skips empty bytes). */
  *ids(): Generator<number> {
    const bits = this.bits;
    for (let byte = 0; byte < bits.length; byte++) {
      const b = bits[byte]!;
      if (b === 0) continue;
      for (let bit = 0; bit < 8; bit++) if (b & (1 << bit)) yield byte * 8 + bit;
    }
  }
  add(id: number): void {
    const byte = id >>> 3;
    if (byte >= this.bits.length) {
      const next = new Uint8Array(Math.max(this.bits.length * 2, byte + 1));
      next.set(this.bits);
      this.bits = next;
    }
    if ((this.bits[byte]! & (1 << (id & 7))) === 0) {
      this.bits[byte]! |= 1 << (id & 7);
      this.size++;
    }
  }
}

/** Guard state rebuilt from the log at open; the guard and auditor share it. */
export interface GuardState {
  /** Raw ids evicted from the live window by accepted passes. */
  evicted: IdSet;
  /** Raw ids flagged as anchors, in id order. */
  anchors: number[];
  /** Summaries that are in the window (not evicted, not superseded). */
  liveSummaries: Set<number>;
  superseded: Set<number>;
  /** Host-pinned facts. */
  pins: { fact: string; spanId: number }[];
  passes: number;
  lastTurn: number;
  /** Summaries accepted with values nothing they replaced states: never evidence for those values. */
  ungrounded: Map<number, string[]>;
}

export function newGuardState(): GuardState {
  return { evicted: new IdSet(), anchors: [], liveSummaries: new Set(), superseded: new Set(), pins: [], passes: 0, lastTurn: -1, ungrounded: new Map() };
}

/** What an event changes: the guard state, the verdict monitor and the hit-rate history. */
export interface TrailTarget {
  readonly state: GuardState;
  readonly monitor: VerdictMonitor;
  readonly hitRate: HitRateMonitor;
}

/** One event record of the log: its event, or why it could not be read. */
export type TrailRecord = { id: number; event: GuardEvent; error?: undefined } | { id: number; event?: undefined; error: string };

/** The one parser of an event record. */
export function parseEvent(r: Pick<NativeSpan, 'id' | 'text'>): TrailRecord {
  try {
    return { id: r.id, event: JSON.parse(r.text) as GuardEvent };
  } catch {
    return { id: r.id, error: `event record ${r.id} is not valid JSON` };
  }
}

/** The event records with ids in [from, to), oldest first. */
export function* readTrail(log: NativeSpanLog, from = log.firstId(), to = log.nextId()): Generator<TrailRecord> {
  for (let at = from; at < to; at += SCAN_CHUNK) for (const r of log.scan(at, Math.min(SCAN_CHUNK, to - at), 1 << RecordKind.event)) yield parseEvent(r);
}

/** Applies one event to the in-memory guard state and the verdict monitor. */
export function applyEvent(t: TrailTarget, id: number, e: GuardEvent): void {
  const state = t.state;
  switch (e.type) {
    case 'pass':
      for (const [a, b] of e.evicted) for (let x = a; x <= b; x++) state.evicted.add(x);
      for (const s of e.evictedSummaries) state.liveSummaries.delete(s);
      for (const s of e.superseded) {
        state.superseded.add(s);
        state.liveSummaries.delete(s);
      }
      state.liveSummaries.add(e.summaryId);
      if (e.ungrounded && e.ungrounded.length > 0) state.ungrounded.set(e.summaryId, e.ungrounded);
      state.passes = Math.max(state.passes, e.pass);
      t.hitRate.restore(e.pass, e.hitRateAfter);
      break;
    case 'pin':
      if (!e.auto) state.pins.push({ fact: e.fact, spanId: e.spanId });
      break;
    default:
      break;
  }
  t.monitor.apply(id, e);
}

/**
 * Applies records another process appended ([from, to)): anchors join the guard state,
 * events are applied; an event record that cannot be read is skipped, as at open.
 */
export function applyRecords(t: TrailTarget, log: NativeSpanLog, from: number, to: number): void {
  for (const r of log.scan(from, to - from)) {
    if (r.kind === RecordKind.raw && r.flags & RecordFlag.anchor) t.state.anchors.push(r.id);
    if (r.kind === RecordKind.event) {
      const read = parseEvent(r);
      if (read.event) applyEvent(t, r.id, read.event);
    }
  }
}

/**
 * The open-time part of the guard state the events do not hold: the anchors (ids only; no
 * raw text is copied) and the last turn. Turns never go backwards, so the last raw record
 * holds the highest turn. The anchors' scan reads every record of the log: it goes in
 * slices that let the event loop run (src/catchup.ts ScanSlicer).
 */
export async function restoreSpans(state: GuardState, log: NativeSpanLog, slicer = new ScanSlicer()): Promise<void> {
  const next = log.nextId();
  const first = log.firstId();
  await slicer.run(first, next, (at, n) => {
    for (const id of log.scanIds(at, n, 1 << RecordKind.raw, RecordFlag.anchor)) state.anchors.push(id);
  });
  for (let hi = next; hi > first && state.lastTurn < 0; hi -= SCAN_CHUNK) {
    const lo = Math.max(first, hi - SCAN_CHUNK);
    const ids = log.scanIds(lo, hi - lo, 1 << RecordKind.raw, 0);
    if (ids.length > 0) state.lastTurn = log.get(ids[ids.length - 1]!)!.turnEnd;
    await slicer.pause();
  }
}

/** The whole event trail, oldest first, read in slices that let the event loop run (the open's replay). */
export async function readTrailInSlices(log: NativeSpanLog, slicer = new ScanSlicer()): Promise<TrailRecord[]> {
  const out: TrailRecord[] = [];
  await slicer.run(log.firstId(), log.nextId(), (at, n) => {
    for (const r of log.scan(at, n, 1 << RecordKind.event)) out.push(parseEvent(r));
  });
  return out;
}

/**
 * The retention this store is opened with, as a declaration: returned when it differs from
 * the last one recorded (so a best-effort past is never forgotten on reopen), else null.
 */
export function retentionChange(events: readonly TrailRecord[], o: Resolved, passes: number): RetentionEvent | null {
  let declared: RetentionEvent | undefined;
  for (const r of events) if (r.event?.type === 'retention') declared = r.event;
  const ttl = Number.isFinite(o.rawTtlSeconds) ? o.rawTtlSeconds : null;
  const bestEffort = o.bestEffort || (ttl !== null && ttl < o.horizonSeconds);
  const changed = !declared || declared.horizonSeconds !== o.horizonSeconds || declared.rawTtlSeconds !== ttl || declared.bestEffort !== bestEffort;
  return changed ? { type: 'retention', pass: passes, horizonSeconds: o.horizonSeconds, rawTtlSeconds: ttl, bestEffort } : null;
}

/** An event as the one record the log appends for it, stamped with the last turn. */
export function eventColumns(e: GuardEvent, lastTurn: number): AppendColumns {
  return {
    kinds: Uint8Array.of(RecordKind.event),
    flags: Uint8Array.of(0),
    roles: Uint8Array.of(0),
    turnStart: Float64Array.of(Math.max(0, lastTurn)),
    turnEnd: Float64Array.of(Math.max(0, lastTurn)),
    timestamps: Float64Array.of(Date.now()),
    tokens: Uint32Array.of(0),
    texts: [JSON.stringify(e)],
    metas: [null],
  };
}
