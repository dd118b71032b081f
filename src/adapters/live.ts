/**
 * What every framework adapter shares: a host's conversation items kept as turns of a
 * store (each item verbatim in its span's metadata, its text indexed), a ContextWindow over
 * them, and the live view a framework asks for — the window's items, oldest first, with
 * summaries standing for what left.
 *
 * Frameworks also ask a session to forget (pop the last item, clear the session). An
 * append-only log must not: `hide` takes items out of the live view and records that as a
 * turn of its own (role `spanguard`, never an anchor), so the log shows what was withdrawn
 * and when, and every withdrawn item stays retrievable by `recall` and `get`.
 */
import { ContextWindow, type ContextWindowOptions, type RecallResult } from '../window.js';
import { ErrorCode, SpanguardError } from '../errors.js';
import type { SpanStore } from '../store.js';

/** The metadata key that holds a host item verbatim. */
export const ITEM_KEY = 'item';
/** The role of the turns that record a withdrawal from the live view. */
export const WITHDRAWAL_ROLE = 'spanguard';

/** One host item, as a turn: its role, the text indexed for it, and the item itself (plain JSON). */
export interface ItemTurn {
  role: string;
  text: string;
  item: unknown;
  /** Keep with the previous item (a tool result with its call); default: role `tool`. */
  attachToPrevious?: boolean;
  speaker?: string;
}

/** An entry of the live view: a host item (raw), or a summary of items that left the window. */
export type LiveEntry =
  | { kind: 'raw'; spanId: number; role: string; text: string; item: unknown }
  | { kind: 'summary'; spanId: number; role: 'system'; text: string; turnStart: number; turnEnd: number };

export class LiveTranscript {
  readonly window: ContextWindow;
  private readonly hidden = new Set<number>();
  private turn: number;

  /** A new live view; with `restored` (ContextWindow.open's), the one a reopened store had. */
  constructor(
    readonly store: SpanStore,
    options: ContextWindowOptions,
    restored?: ContextWindow,
  ) {
    this.window = restored ?? new ContextWindow(store, options);
    // One turn per item, after whatever the store already holds.
    this.turn = store.state.lastTurn + 1;
    if (restored) for (const id of withdrawnIn(store)) this.hidden.add(id);
  }

  /**
   * The live view of a reopened store as it was: the window restored from the event trail
   * (ContextWindow.open), and the items withdrawn from it (the withdrawal turns) left out.
   */
  static async open(store: SpanStore, options: ContextWindowOptions): Promise<LiveTranscript> {
    return new LiveTranscript(store, options, await ContextWindow.open(store, options));
  }

  /** Appends items as turns (one store batch) and compacts the window if it went over budget. Returns their span ids. */
  async add(turns: ItemTurn[]): Promise<number[]> {
    if (turns.length === 0) return [];
    const first = this.turn;
    const batch = turns.map((t, i) => ({
      turn: first + i,
      role: t.role,
      text: t.text,
      meta: { [ITEM_KEY]: plainJson(t.item) },
      ...(t.attachToPrevious !== undefined ? { attachToPrevious: t.attachToPrevious } : {}),
      ...(t.speaker !== undefined ? { speaker: t.speaker } : {}),
    }));
    const { ids } = await this.window.pushMany(batch);
    this.turn = first + turns.length;
    return ids;
  }

  /** The live view, oldest first: the window's entries less those withdrawn. */
  live(): LiveEntry[] {
    const snap = this.window.snapshot().filter((e) => !this.hidden.has(e.id));
    const spans = this.store.getMany(snap.map((e) => e.id));
    return snap.map((e, i): LiveEntry => {
      const s = spans[i]!;
      if (e.kind === 'summary')
        return {
          kind: 'summary',
          spanId: e.id,
          role: 'system',
          text: `[summary of turns ${e.turnStart}–${e.turnEnd}; not authoritative for exact values — use recall] ${s.text}`,
          turnStart: e.turnStart,
          turnEnd: e.turnEnd,
        };
      return { kind: 'raw', spanId: e.id, role: s.role, text: s.text, item: s.meta?.[ITEM_KEY] };
    });
  }

  /**
   * Takes span ids out of the live view. The withdrawal is a turn of the log (role
   * `spanguard`, meta `{ withdrawn: { op, spanIds } }`); the spans themselves stay in the
   * log, indexed, and recall can still find them.
   */
  async hide(spanIds: number[], op: string): Promise<void> {
    if (spanIds.length === 0) return;
    const turn = this.turn++;
    await this.store.append({
      turn,
      role: WITHDRAWAL_ROLE,
      text: `${op}: span${spanIds.length > 1 ? 's' : ''} ${spanIds.join(', ')} left the live view; the log keeps ${spanIds.length > 1 ? 'them' : 'it'}`,
      anchor: false,
      meta: { withdrawn: { op, spanIds } },
    });
    for (const id of spanIds) this.hidden.add(id);
  }

  recall(query: string, options: { k?: number } = {}): Promise<RecallResult> {
    return this.window.recall(query, options);
  }
}

/**
 * The item as plain JSON (what the span's metadata can hold): undefined fields dropped, a
 * Uint8Array or Buffer as base64, a Date or URL as its string. Anything else JSON cannot
 * carry (a BigInt, a cycle) is the store's typed INVALID_ARGUMENT.
 */
export function plainJson(v: unknown): unknown {
  const seen = new Set<unknown>();
  const walk = (x: unknown): unknown => {
    if (x === null || typeof x !== 'object') return typeof x === 'function' || typeof x === 'symbol' ? undefined : x;
    if (x instanceof Uint8Array) return Buffer.from(x.buffer, x.byteOffset, x.byteLength).toString('base64');
    if (x instanceof URL) return x.href;
    if (x instanceof Date) return x.toISOString();
    if (seen.has(x)) throw new SpanguardError(ErrorCode.INVALID_ARGUMENT, 'an item refers back to an object that contains it (items must not be cyclic)');
    seen.add(x);
    let out: unknown;
    if (Array.isArray(x)) out = x.map((e) => walk(e) ?? null);
    else {
      const o: Record<string, unknown> = {};
      for (const [k, val] of Object.entries(x)) {
        const w = walk(val);
        if (w !== undefined) o[k] = w;
      }
      out = o;
    }
    seen.delete(x);
    return out;
  };
  return walk(v);
}

/** The text of a JSON value for the index: a string as is, anything else as JSON. */
export const asText = (v: unknown): string => (typeof v === 'string' ? v : v === undefined ? '' : JSON.stringify(v));

/** Every withdrawal turn of the log and the span ids it names (one scan of its raw spans). */
function withdrawnIn(store: SpanStore): number[] {
  const out: number[] = [];
  const first = store.log.firstId();
  const next = store.log.nextId();
  for (let from = first; from < next; from += 4096) {
    for (const r of store.log.scan(from, Math.min(4096, next - from), 1 << 1)) {
      if (!r.meta || !r.meta.includes(WITHDRAWAL_ROLE)) continue;
      const meta = JSON.parse(r.meta) as { role?: unknown; withdrawn?: { spanIds?: unknown } };
      if (meta.role !== WITHDRAWAL_ROLE || !Array.isArray(meta.withdrawn?.spanIds)) continue;
      // The withdrawal turn itself was never part of the live view either.
      out.push(r.id);
      for (const id of meta.withdrawn.spanIds) if (typeof id === 'number') out.push(id);
    }
  }
  return out;
}
