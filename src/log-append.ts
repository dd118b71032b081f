/**
 * The JS side of the span log's append path, installed on the native SpanLog class when the
 * addon loads (src/native.ts `addon()`).
 */

// The native SpanLog class takes two functions from its prototype when a log is made:
// `_attachWaiters` (the waiter queue below) and `_makeSpan` (how a read builds a span).
// SpanLog.prototype.append is replaced by `append` below: it reads the columns here (property
// loads the JIT compiles, where the native method would make a Node-API lookup per column)
// and calls the native method with them as arguments, or, for one row held in typed arrays,
// calls `_appendOne` with the row's numbers written into a per-log Float64Array scratch and
// only the text and meta as arguments. Measured on a one-span group append: 1.6 µs per call
// with Node-API property reads, 0.83 µs with the columns passed positionally, 0.65 µs with
// the one-row form; it matters when 64 appenders each append one span.
//
// Under group commit the wrapper also makes the append's promise itself and keeps its
// resolvers in a per-log queue: the native completion of a burst calls `settle` once, and
// settle resolves the burst's waiters in a loop, each with its own first id (one crossing,
// where a native promise per waiter costs a napi_create_promise and a napi_resolve_deferred
// each). The native constructor asks the prototype for `_attachWaiters` (this file's
// `attach`) and hands it the log and its row scratch; it gets `settle` back.
//
// A burst's waiters are settled in runs of at most SETTLE_RUN per turn of the event loop,
// the rest in the turns after it (immediates): each settled append resumes its caller, and
// what the callers do next (256 appenders each appending again: validation, anchor
// detection, staging) runs in the turn that settled them. One turn that settles a whole
// burst of hundreds holds the loop for tens of milliseconds; the order stays submission
// order, and a waiter is only ever settled after its burst's fdatasync.
//
// The native method's answer: a promise (rejected, or the native promise form), a number
// >= 0 (the first id, already settled: none, sync, an empty batch), or minus the first id
// when the append waits for group commit (the wrapper queues a promise for it).

const WAITERS = Symbol('spanguard.waiters');

/** A log's waiting appends, oldest first from `head`, and its one-row scratch. */
interface WaiterQueue {
  res: (((id: number) => void) | undefined)[];
  rej: (((err: unknown) => void) | undefined)[];
  val: number[];
  head: number;
  row: Float64Array;
  /** Outcomes decided (durable, or failed) but not yet delivered, oldest first from `doneHead`. */
  done: (((v: never) => void) | undefined)[];
  doneVal: unknown[];
  doneHead: number;
  /** An immediate is queued to deliver the next run of `done`. */
  draining: boolean;
}

/**
 * Most waiters settled in one turn of the event loop. A one-span append's caller costs the
 * turn some tens of microseconds when it resumes (the store's own bookkeeping, the host's
 * next append): 64 of them, a few milliseconds.
 */
export const SETTLE_RUN = 64;

/** The native SpanLog methods the wrapper calls; `this` is the log. */
interface RawSpanLog {
  [WAITERS]?: WaiterQueue;
}
type NativeAppendColumns = (this: RawSpanLog, ...columns: unknown[]) => unknown;
type NativeAppendOne = (this: RawSpanLog, text: unknown, meta: unknown, texts: unknown, metas: unknown) => unknown;

/** Drops settled entries from the front once they are most of a large queue. */
const COMPACT_AFTER = 4096;

function oneRow(a: unknown, T: Uint8ArrayConstructor | Float64ArrayConstructor | Uint32ArrayConstructor): boolean {
  return ArrayBuffer.isView(a) && a instanceof T && a.length === 1;
}

/**
 * Gives `log` its waiter queue and returns the settle function the native side calls: k > 0
 * with err null resolves the first k waiters with their ids; k > 0 with an error rejects the
 * first; k < 0 with an error rejects the last (a failed staged write rejects the newest).
 */
function attach(log: RawSpanLog, row: Float64Array): (k: number, err: unknown) => void {
  const q: WaiterQueue = { res: [], rej: [], val: [], head: 0, row, done: [], doneVal: [], doneHead: 0, draining: false };
  Object.defineProperty(log, WAITERS, { value: q });
  const deliver = (r: ((v: never) => void) | undefined, v: unknown) => {
    q.done.push(r);
    q.doneVal.push(v);
  };
  // Delivers the next SETTLE_RUN outcomes; queues an immediate for the rest.
  const drain = (): void => {
    const done = q.done;
    const end = Math.min(done.length, q.doneHead + SETTLE_RUN);
    for (let i = q.doneHead; i < end; i++) {
      const r = done[i]!;
      done[i] = undefined;
      q.doneHead = i + 1;
      (r as (v: unknown) => void)(q.doneVal[i]);
    }
    if (q.doneHead < done.length) {
      q.draining = true;
      setImmediate(drain);
      return;
    }
    q.draining = false;
    done.length = 0;
    q.doneVal.length = 0;
    q.doneHead = 0;
  };
  return function settle(k: number, err: unknown): void {
    const res = q.res;
    const rej = q.rej;
    const val = q.val;
    if (err === null) {
      const end = q.head + k;
      for (let i = q.head; i < end; i++) {
        deliver(res[i]!, val[i]!);
        res[i] = rej[i] = undefined;
      }
      q.head = end;
    } else if (k > 0) {
      const i = q.head++;
      deliver(rej[i]!, err);
      res[i] = rej[i] = undefined;
    } else {
      val.pop();
      res.pop();
      deliver(rej.pop()!, err);
    }
    if (q.head === res.length) {
      res.length = 0;
      rej.length = 0;
      val.length = 0;
      q.head = 0;
    } else if (q.head >= COMPACT_AFTER && 2 * q.head >= res.length) {
      res.splice(0, q.head);
      rej.splice(0, q.head);
      val.splice(0, q.head);
      q.head = 0;
    }
    if (!q.draining) drain();
  };
}

function settled(log: RawSpanLog, r: unknown): Promise<number> {
  if (typeof r !== 'number') return r as Promise<number>;
  if (r >= 0) return Promise.resolve(r);
  const q = log[WAITERS]!;
  return new Promise<number>((res, rej) => {
    q.res.push(res);
    q.rej.push(rej);
    q.val.push(-r);
  });
}

function makeAppend(appendColumns: NativeAppendColumns, appendOne: NativeAppendOne) {
  return function append(this: RawSpanLog, c: unknown): Promise<number> {
    if (c === null || typeof c !== 'object') return appendColumns.call(this, c) as Promise<number>;
    let kinds: unknown, flags: unknown, roles: unknown, turnStart: unknown, turnEnd: unknown, timestamps: unknown;
    let tokens: unknown, texts: unknown, metas: unknown, textOffsets: unknown, metaOffsets: unknown;
    try {
      const cols = c as Record<string, unknown>;
      kinds = cols.kinds;
      flags = cols.flags;
      roles = cols.roles;
      turnStart = cols.turnStart;
      turnEnd = cols.turnEnd;
      timestamps = cols.timestamps;
      tokens = cols.tokens;
      texts = cols.texts;
      metas = cols.metas;
      textOffsets = cols.textOffsets;
      metaOffsets = cols.metaOffsets;
    } catch (e) {
      // A throwing getter rejects, as every append failure does.
      return Promise.reject(e);
    }
    const q = this[WAITERS];
    if (
      q !== undefined &&
      oneRow(kinds, Uint8Array) &&
      oneRow(flags, Uint8Array) &&
      oneRow(roles, Uint8Array) &&
      oneRow(turnStart, Float64Array) &&
      oneRow(turnEnd, Float64Array) &&
      oneRow(timestamps, Float64Array) &&
      oneRow(tokens, Uint32Array) &&
      Array.isArray(texts) &&
      texts.length === 1 &&
      Array.isArray(metas) &&
      metas.length === 1
    ) {
      let text: unknown;
      let meta: unknown;
      try {
        text = texts[0];
        meta = metas[0];
      } catch (e) {
        return Promise.reject(e);
      }
      const row = q.row;
      row[0] = (kinds as Uint8Array)[0]!;
      row[1] = (flags as Uint8Array)[0]!;
      row[2] = (roles as Uint8Array)[0]!;
      row[3] = (turnStart as Float64Array)[0]!;
      row[4] = (turnEnd as Float64Array)[0]!;
      row[5] = (timestamps as Float64Array)[0]!;
      row[6] = (tokens as Uint32Array)[0]!;
      return settled(this, appendOne.call(this, text, meta, texts, metas));
    }
    return settled(
      this,
      appendColumns.call(this, kinds, flags, roles, turnStart, turnEnd, timestamps, tokens, texts, metas, textOffsets, metaOffsets),
    );
  };
}

/**
 * Installs the append wrapper and the span builder on the native SpanLog class, once per class (the addon is one
 * module per process: every copy of this file that loads it sees the same class).
 */
export function installAppendWrapper(cls: { prototype: object }, makeSpan: (...fields: never[]) => unknown): void {
  const proto = cls.prototype as Record<string, unknown>;
  if (Object.hasOwn(proto, '_attachWaiters')) return;
  const native = proto.append;
  const one = proto._appendOne;
  if (typeof native !== 'function' || typeof one !== 'function') return;
  // attach first: a log whose prototype has the wrapper always has a waiter queue.
  Object.defineProperty(proto, '_attachWaiters', { value: attach });
  Object.defineProperty(proto, '_makeSpan', { value: makeSpan });
  Object.defineProperty(proto, 'append', {
    value: makeAppend(native as NativeAppendColumns, one as NativeAppendOne),
    writable: true,
    configurable: true,
  });
}
