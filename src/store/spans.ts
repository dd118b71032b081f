/**
 * Spans: the validation of what a host appends (a batch of turns, checked whole before
 * anything is written), idempotency keys, the anchor facts kept from append, and the
 * conversion of the log's records to the public `Span`.
 */
import { detectAnchor } from '../anchors.js';
import { ErrorCode, SpanguardError } from '../errors.js';
import { checkMeta, MAX_ROLE_CHARS, metaText as toMetaText } from '../meta.js';
import { KIND_NAMES, RecordFlag, RecordKind, ROLE_CODES, ROLE_NAMES, roleCodeOf, type AppendColumns, type NativeSpan, type NativeSpanLog } from '../native.js';
import { SCAN_CHUNK } from './trail.js';
import type { VerdictState } from '../verdict.js';
import type { Hit, Span, TurnInput } from './types.js';

/** A retry is recognized while its key is among the last KEY_WINDOW keyed raw spans. */
export const KEY_WINDOW = 65536;
const MAX_KEY_LENGTH = 256;

/**
 * Validates a batch of turns whole and lays it out as the log's append columns (raw spans).
 * `lastTurn`: the highest turn stored so far (turns never go backwards). Detected anchors
 * put their fact in `facts`; a host's veto of a detected anchor puts its index in `vetoed`.
 */
export function turnColumns(turns: readonly TurnInput[], lastTurn: number, vetoed: number[] = [], facts: (string | undefined)[] = []): AppendColumns {
  const n = turns.length;
  const cols: AppendColumns = {
    kinds: new Uint8Array(n).fill(RecordKind.raw),
    flags: new Uint8Array(n),
    roles: new Uint8Array(n),
    turnStart: new Float64Array(n),
    turnEnd: new Float64Array(n),
    timestamps: new Float64Array(n),
    tokens: new Uint32Array(n),
    texts: new Array<string>(n),
    metas: new Array<string | null>(n),
  };
  let prev = lastTurn;
  const now = Date.now();
  for (let i = 0; i < n; i++) {
    const t = turns[i];
    const where = `turn at index ${i}`;
    if (t === null || typeof t !== 'object') throw new SpanguardError(ErrorCode.INVALID_ARGUMENT, `${where} is not an object`);
    if (typeof t.turn !== 'number' || !Number.isSafeInteger(t.turn) || t.turn < 0)
      throw new SpanguardError(ErrorCode.INVALID_TURN, `${where}: turn must be a non-negative integer, got ${String(t.turn)}`);
    const end = t.turnEnd ?? t.turn;
    if (typeof end !== 'number' || !Number.isSafeInteger(end) || end < t.turn)
      throw new SpanguardError(ErrorCode.INVALID_TURN, `${where}: turnEnd must be an integer >= turn, got ${String(t.turnEnd)}`);
    if (t.turn < prev)
      throw new SpanguardError(ErrorCode.TURN_ORDER, `${where}: turn ${t.turn} goes backwards (previous span reached turn ${prev})`, {
        turn: t.turn,
        previous: prev,
      });
    prev = Math.max(prev, end);
    if (typeof t.text !== 'string') throw new SpanguardError(ErrorCode.INVALID_ARGUMENT, `${where}: text must be a string`);
    if (!t.text.isWellFormed())
      throw new SpanguardError(ErrorCode.INVALID_UTF8, `${where}: text is not valid UTF-8 (it contains a lone surrogate)`);
    if (typeof t.role !== 'string' || t.role.length === 0 || t.role.length > MAX_ROLE_CHARS)
      throw new SpanguardError(ErrorCode.INVALID_ARGUMENT, `${where}: role must be a non-empty string of at most ${MAX_ROLE_CHARS} characters`);
    if (t.timestamp !== undefined && (typeof t.timestamp !== 'number' || !Number.isSafeInteger(t.timestamp) || t.timestamp < 0))
      throw new SpanguardError(ErrorCode.INVALID_ARGUMENT, `${where}: timestamp must be an integer number of milliseconds since the epoch, >= 0, got ${typeof t.timestamp === 'number' ? t.timestamp : typeof t.timestamp}`);
    if (t.tokens !== undefined && (!Number.isInteger(t.tokens) || t.tokens < 0 || t.tokens > 0xffffffff))
      throw new SpanguardError(ErrorCode.INVALID_ARGUMENT, `${where}: tokens must be a non-negative integer`);
    if (t.anchor !== undefined && typeof t.anchor !== 'boolean')
      throw new SpanguardError(ErrorCode.INVALID_ARGUMENT, `${where}: anchor must be a boolean`);
    const roleCode = roleCodeOf(t.role);
    let meta: Record<string, unknown> | undefined = t.meta === undefined ? undefined : checkMeta(t.meta, where);
    if (roleCode === undefined) meta = { ...(meta ?? {}), role: t.role };
    if (t.speaker !== undefined) {
      if (typeof t.speaker !== 'string' || t.speaker.length === 0 || t.speaker.length > 256)
        throw new SpanguardError(ErrorCode.INVALID_ARGUMENT, `${where}: speaker must be a non-empty string of at most 256 characters`);
      meta = { ...(meta ?? {}), speaker: t.speaker };
    }
    // Checked by KeyIndex.stored before the batch got here.
    if (t.key !== undefined) meta = { ...(meta ?? {}), key: t.key };
    let metaText: string | null = null;
    if (meta !== undefined) {
      metaText = toMetaText(meta, where);
      if (!metaText.isWellFormed()) throw new SpanguardError(ErrorCode.INVALID_UTF8, `${where}: meta is not valid UTF-8`);
    }
    // Detection runs whatever the host says: a host may add anchors, not remove them. A
    // veto of a detected anchor is recorded (SpanStore.appendMany) and the anchor kept.
    const match = detectAnchor(t.text, t.role);
    const detected = match !== null;
    if (match) facts[i] = match.fact;
    const anchor = t.anchor === true || detected;
    if (t.anchor === false && detected) vetoed.push(i);
    cols.flags[i] = anchor ? RecordFlag.anchor : 0;
    cols.roles[i] = roleCode ?? 0;
    cols.turnStart[i] = t.turn;
    cols.turnEnd[i] = end;
    cols.timestamps[i] = t.timestamp ?? now;
    cols.tokens[i] = t.tokens ?? 0;
    cols.texts[i] = t.text;
    cols.metas[i] = metaText;
  }
  return cols;
}


/**
 * A summary as the record the log appends for it, followed by the event record of its pass
 * (JSON text, stamped with the last turn as every event record is: src/store/trail.ts
 * eventColumns), so one append writes both.
 */
export function summaryColumns(text: string, turnStart: number, turnEnd: number, tokens: number, event: { text: string; lastTurn: number }): AppendColumns {
  if (!text.isWellFormed()) throw new SpanguardError(ErrorCode.INVALID_UTF8, 'summary text is not valid UTF-8');
  const now = Date.now();
  const at = Math.max(0, event.lastTurn);
  return {
    kinds: Uint8Array.of(RecordKind.summary, RecordKind.event),
    flags: Uint8Array.of(0, 0),
    roles: Uint8Array.of(ROLE_CODES.system!, 0),
    turnStart: Float64Array.of(turnStart, at),
    turnEnd: Float64Array.of(turnEnd, at),
    timestamps: Float64Array.of(now, now),
    tokens: Uint32Array.of(tokens, 0),
    texts: [text, event.text],
    metas: [null, null],
  };
}

/** Idempotency keys of recent raw spans (read from the log on the first keyed append). */
export class KeyIndex {
  private keys: Map<string, number> | null = null;

  constructor(
    private readonly log: NativeSpanLog,
    private readonly get: (id: number) => Span | undefined,
  ) {}

  /**
   * A batch's keys checked against the keys already stored. null: store the batch. Ids: every
   * turn of the batch is keyed and already stored under its key with the same role and text
   * (a retry of an append whose outcome the host did not see): nothing is written again.
   */
  stored(turns: readonly TurnInput[]): number[] | null {
    let keyed = 0;
    const seen = new Set<string>();
    for (let i = 0; i < turns.length; i++) {
      const key = (turns[i] as TurnInput | null)?.key;
      if (key === undefined) continue;
      if (typeof key !== 'string' || key.length === 0 || key.length > MAX_KEY_LENGTH)
        throw new SpanguardError(ErrorCode.INVALID_ARGUMENT, `turn at index ${i}: key must be a non-empty string of at most ${MAX_KEY_LENGTH} characters`);
      if (seen.has(key)) throw new SpanguardError(ErrorCode.INVALID_ARGUMENT, `turn at index ${i}: key ${JSON.stringify(key)} appears twice in the batch`);
      seen.add(key);
      keyed++;
    }
    if (keyed === 0) return null;
    const keys = this.recent();
    const stored: number[] = [];
    const fresh: number[] = [];
    for (let i = 0; i < turns.length; i++) {
      const key = turns[i]!.key;
      const id = key === undefined ? undefined : keys.get(key);
      if (id === undefined) {
        fresh.push(i);
        continue;
      }
      const span = this.get(id);
      const t = turns[i]!;
      if (!span || span.text !== t.text || span.role !== t.role || span.turnStart !== t.turn)
        throw new SpanguardError(
          ErrorCode.INVALID_ARGUMENT,
          `turn at index ${i}: key ${JSON.stringify(key)} is already stored as span ${id} with another turn, role or text`,
          { spanId: id },
        );
      stored.push(id);
    }
    if (stored.length === 0) return null;
    if (fresh.length > 0)
      throw new SpanguardError(
        ErrorCode.INVALID_ARGUMENT,
        `${stored.length} turn(s) of the batch are already stored under their keys, but the turn at index ${fresh[0]} is not: a retry repeats the batch as it was appended`,
      );
    return stored;
  }

  /** The keys of the last KEY_WINDOW raw spans (read from the log once), plus those appended since. */
  private recent(): Map<string, number> {
    if (this.keys !== null) return this.keys;
    const keys = new Map<string, number>();
    const first = this.log.firstId();
    const found: [string, number][] = [];
    let raw = 0;
    for (let hi = this.log.nextId(); hi > first && raw < KEY_WINDOW; hi -= SCAN_CHUNK) {
      const lo = Math.max(first, hi - SCAN_CHUNK);
      const chunk = this.log.scan(lo, hi - lo, 1 << RecordKind.raw);
      for (let j = chunk.length - 1; j >= 0 && raw < KEY_WINDOW; j--, raw++) {
        const r = chunk[j]!;
        if (!r.meta || !r.meta.includes('"key"')) continue;
        const key = (JSON.parse(r.meta) as { key?: unknown }).key;
        if (typeof key === 'string') found.push([key, r.id]);
      }
    }
    for (let j = found.length - 1; j >= 0; j--) keys.set(found[j]![0], found[j]![1]);
    this.keys = keys;
    return keys;
  }

  remember(key: string, id: number): void {
    const keys = this.recent();
    keys.delete(key);
    keys.set(key, id);
    if (keys.size > KEY_WINDOW) keys.delete(keys.keys().next().value!);
  }
}

/** A span id from a caller: a non-negative integer. */
export function checkSpanId(id: unknown): asserts id is number {
  if (typeof id !== 'number' || !Number.isSafeInteger(id) || id < 0) throw new SpanguardError(ErrorCode.INVALID_ARGUMENT, `span id must be a non-negative integer, got ${String(id)}`);
}

/** Span ids from a caller: an array of non-negative integers. */
export function checkSpanIds(ids: unknown): asserts ids is number[] {
  if (!Array.isArray(ids)) throw new SpanguardError(ErrorCode.INVALID_ARGUMENT, 'getMany expects an array of span ids');
  for (const id of ids)
    if (typeof id !== 'number' || !Number.isSafeInteger(id) || id < 0)
      throw new SpanguardError(ErrorCode.INVALID_ARGUMENT, `span ids must be non-negative integers, got ${typeof id === 'number' ? id : typeof id}`);
}

/** @internal */
export function toSpan(r: NativeSpan): Span {
  let meta: Record<string, unknown> | null = null;
  if (r.meta) meta = JSON.parse(r.meta) as Record<string, unknown>;
  const role = (meta && typeof meta.role === 'string' && r.role === 0 ? meta.role : ROLE_NAMES[r.role]) ?? 'other';
  return {
    id: r.id,
    kind: KIND_NAMES[r.kind] ?? 'raw',
    role,
    turnStart: r.turnStart,
    turnEnd: r.turnEnd,
    timestamp: r.timestamp,
    tokens: r.tokens,
    anchor: (r.flags & RecordFlag.anchor) !== 0,
    text: r.text,
    ...(meta && typeof meta.speaker === 'string' ? { speaker: meta.speaker } : {}),
    meta,
  };
}


/** Exact-phrase hits: raw spans found verbatim, stamped with the verdict state. */
export function exactHits(records: readonly (NativeSpan | undefined)[], verdict: VerdictState): Hit[] {
  return records.flatMap((s) =>
    s
      ? [
          {
            spanId: s.id,
            kind: 'raw' as const,
            turnStart: s.turnStart,
            turnEnd: s.turnEnd,
            score: 1,
            via: 'exact' as const,
            text: s.text,
            verdict,
            trustExactRecall: verdict === 'lossless',
          },
        ]
      : [],
  );
}
