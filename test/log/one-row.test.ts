// A one-row append takes a fast path (the JS `append` writes the row's numbers into a per-log
// scratch Float64Array and passes text and meta straight to native code). It must accept and refuse exactly what the general columns path does.
import { afterEach, describe, expect, it } from 'vitest';
import type { AppendColumns, NativeSpanLog } from '../../src/native.js';
import { columns, durabilities, expectSpanMatches, openLog, rowsFor, tmpDir } from './helpers.js';

const open: NativeSpanLog[] = [];
afterEach(async () => {
  for (const l of open.splice(0)) await l.close().catch(() => undefined);
});

function fresh(durability: number = durabilities.sync): NativeSpanLog {
  const l = openLog(tmpDir('one-row'), { durability, maxTextBytes: 100 });
  open.push(l);
  return l;
}

async function refused(log: NativeSpanLog, cols: unknown, code: string): Promise<void> {
  const next = log.nextId();
  await expect(log.append(cols as AppendColumns)).rejects.toMatchObject({ code });
  expect(log.nextId()).toBe(next);
}

describe('one-row appends', () => {
  it('store every field exactly, in each durability mode', async () => {
    for (const d of [durabilities.none, durabilities.group, durabilities.sync]) {
      const log = fresh(d);
      const rows = rowsFor(5, 4).map((r) => ({ ...r, text: r.text.slice(0, 60), role: 3, tokens: 7, kind: 1 }));
      for (const [i, r] of rows.entries()) expect(await log.append(columns([r]))).toBe(i + 1);
      rows.forEach((r, i) => expectSpanMatches(log.get(i + 1), r, i + 1));
    }
  });

  it('refuse what the general path refuses, with the same codes', async () => {
    const log = fresh();
    await log.append(columns([{ turnStart: 10, text: 'first' }]));
    const ok = () => columns([{ turnStart: 11, text: 'fine' }]);
    const cases: [string, (c: AppendColumns) => unknown, string][] = [
      ['lone surrogate', (c) => ({ ...c, texts: ['a\ud800'] }), 'INVALID_UTF8'],
      ['text over maxTextBytes', (c) => ({ ...c, texts: ['a'.repeat(101)] }), 'TEXT_TOO_LARGE'],
      ['text not a string', (c) => ({ ...c, texts: [42] }), 'INVALID_ARGUMENT'],
      ['meta not a string', (c) => ({ ...c, metas: [{}] }), 'INVALID_ARGUMENT'],
      ['turn going backwards', (c) => ({ ...c, turnStart: Float64Array.of(9), turnEnd: Float64Array.of(9) }), 'TURN_ORDER'],
      ['NaN turn', (c) => ({ ...c, turnStart: Float64Array.of(NaN) }), 'INVALID_TURN'],
      ['start > end', (c) => ({ ...c, turnStart: Float64Array.of(12), turnEnd: Float64Array.of(11) }), 'INVALID_TURN'],
      ['infinite timestamp', (c) => ({ ...c, timestamps: Float64Array.of(Infinity) }), 'INVALID_ARGUMENT'],
      ['unknown kind', (c) => ({ ...c, kinds: Uint8Array.of(9) }), 'UNKNOWN_KIND'],
      ['reserved flag bit 7', (c) => ({ ...c, flags: Uint8Array.of(0x80) }), 'INVALID_ARGUMENT'],
      ['kinds as a plain array', (c) => ({ ...c, kinds: [1] }), 'INVALID_ARGUMENT'],
      ['kinds as a Uint8ClampedArray', (c) => ({ ...c, kinds: Uint8ClampedArray.of(1) }), 'INVALID_ARGUMENT'],
      ['tokens as an Int32Array', (c) => ({ ...c, tokens: Int32Array.of(1) }), 'INVALID_ARGUMENT'],
      ['a Proxy typed array', (c) => ({ ...c, turnStart: new Proxy(c.turnStart, {}) }), 'INVALID_ARGUMENT'],
      ['a Proxy texts array', (c) => ({ ...c, texts: new Proxy(c.texts, {}) }), 'INVALID_ARGUMENT'],
      ['two texts for one row', (c) => ({ ...c, texts: ['a', 'b'] }), 'INVALID_ARGUMENT'],
      ['no metas', (c) => ({ ...c, metas: [] }), 'INVALID_ARGUMENT'],
    ];
    for (const [name, make, code] of cases) {
      await refused(log, make(ok()), code).catch((e: Error) => {
        throw new Error(`${name}: ${e.message}`);
      });
    }
    expect(await log.append(ok())).toBe(2);
  });

  it('an element getter that throws rejects with its error; numbers were read before it ran', async () => {
    const log = fresh();
    const c = columns([{ turnStart: 1, text: 'x' }]);
    const texts: string[] = [];
    Object.defineProperty(texts, '0', {
      get() {
        throw new RangeError('nope');
      },
    });
    await expect(log.append({ ...c, texts })).rejects.toThrow('nope');
    expect(log.nextId()).toBe(1);
  });

  it('the row scratch is range-checked natively: garbage written to it is refused, not cast', async () => {
    const log = fresh(durabilities.none);
    const internal = log as unknown as Record<symbol, { row: Float64Array }> & {
      _appendOne(text: unknown, meta: unknown, texts: unknown, metas: unknown): Promise<number> | number;
    };
    const sym = Object.getOwnPropertySymbols(log).find((k) => internal[k]?.row instanceof Float64Array);
    expect(sym).toBeDefined();
    const row = internal[sym!]!.row;
    for (const bad of [
      [1e300, 0, 2, 1, 1, 0, 1],
      [1, 0, 2, 1, 1, 0, NaN],
      [1, -1, 2, 1, 1, 0, 1],
      [1, 0, 2.5, 1, 1, 0, 1],
      [1, 0, 2, 1, 1, 0, 2 ** 32],
    ]) {
      row.set(bad);
      await expect(Promise.resolve().then(() => internal._appendOne('x', null, ['x'], [null]))).rejects.toMatchObject({
        code: 'INVALID_ARGUMENT',
      });
    }
    expect(log.nextId()).toBe(1);
    expect(await log.append(columns([{ turnStart: 1, text: 'fine' }]))).toBe(1);
  });
});
