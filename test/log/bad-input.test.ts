// Bad input gets a typed error with a stable code, and nothing is written: the whole batch
// is validated before the first byte goes to disk.
import fs from 'node:fs';
import { beforeEach, describe, expect, it } from 'vitest';
import { columns, native, openLog, segmentFiles, tmpDir, type Row } from './helpers.js';
import type { AppendColumns, NativeSpanLog } from '../../src/native.js';

let dir: string;
let log: NativeSpanLog;
beforeEach(async () => {
  dir = tmpDir('bad');
  log = openLog(dir, { maxTextBytes: 100 });
  await log.append(columns([{ turnStart: 10, text: 'first' }]));
  return async () => log.close();
});

/** Rows whose text fits in the 100-byte budget of this file's log. */
const shortRows = (from: number, n: number): Row[] =>
  Array.from({ length: n }, (_, i) => ({ turnStart: from + i, text: `turn ${from + i} ✓`, meta: i % 2 ? '{"k":1}' : null }));

const fileSize = () => segmentFiles(dir).reduce((s, f) => s + fs.statSync(f).size, 0);

async function expectRefused(cols: AppendColumns, code: string): Promise<void> {
  const size = fileSize();
  const next = log.nextId();
  await expect(log.append(cols)).rejects.toMatchObject({ code });
  expect(log.nextId()).toBe(next);
  expect(fileSize()).toBe(size);
  expect(log.verify().ok).toBe(true);
}

/** A valid batch of 4 whose record `at` is replaced by `bad`: one bad record refuses all. */
const batchWith = (bad: Partial<Row>, at = 2): AppendColumns =>
  columns(shortRows(20, 4).map((r, i) => (i === at ? { ...r, ...bad } : r)));

describe('text that is not valid Unicode is refused with INVALID_UTF8', () => {
  for (const [name, text] of [
    ['lone high surrogate', 'abc\ud800def'],
    ['lone low surrogate', 'abc\udc00'],
    ['reversed pair', '\udc00\ud800'],
    ['high surrogate at the end', 'x\udbff'],
  ] as const) {
    it(name, async () => expectRefused(batchWith({ text }), 'INVALID_UTF8'));
  }
  it('in meta too', async () => expectRefused(batchWith({ meta: '{"a":"\ud800"}' }), 'INVALID_UTF8'));
  it('a real U+FFFD is text, not a replaced surrogate; next to a lone one it still fails', async () => {
    expect(await log.append(columns([{ turnStart: 11, text: 'bad byte: \ufffd ok', meta: '{"r":"\ufffd"}' }]))).toBe(2);
    expect(log.get(2)).toMatchObject({ text: 'bad byte: \ufffd ok', meta: '{"r":"\ufffd"}' });
    await expectRefused(batchWith({ text: '\ufffd then \ud800' }), 'INVALID_UTF8');
  });
  it('a valid pair and empty text are fine', async () => {
    expect(await log.append(columns([{ turnStart: 11, text: '😀' }, { turnStart: 11, text: '' }]))).toBe(2);
    expect(log.get(2)?.text).toBe('😀');
  });
});

describe('text over maxTextBytes is refused with TEXT_TOO_LARGE (counted in UTF-8 bytes)', () => {
  it('101 ASCII bytes', async () => expectRefused(batchWith({ text: 'a'.repeat(101) }), 'TEXT_TOO_LARGE'));
  it('34 three-byte characters = 102 bytes', async () => expectRefused(batchWith({ text: '✓'.repeat(34) }), 'TEXT_TOO_LARGE'));
  it('exactly 100 bytes is accepted', async () => {
    expect(await log.append(columns([{ turnStart: 11, text: 'a'.repeat(100) }]))).toBe(2);
  });
});

describe('turn numbers must be non-negative integers, start <= end, raw turns non-decreasing', () => {
  for (const [name, bad] of [
    ['NaN', { turnStart: NaN }],
    ['negative', { turnStart: -1, turnEnd: 5 }],
    ['fractional', { turnStart: 21.5, turnEnd: 22 }],
    ['Infinity end', { turnEnd: Infinity }],
    ['above 2^53 - 1', { turnStart: 2 ** 53, turnEnd: 2 ** 53 }],
    ['start > end', { turnStart: 30, turnEnd: 29 }],
  ] as [string, Partial<Row>][]) {
    it(`${name} → INVALID_TURN`, async () => expectRefused(batchWith(bad), 'INVALID_TURN'));
  }
  it('a raw turn before the previous raw span (from an earlier batch) → TURN_ORDER', async () =>
    expectRefused(columns([{ turnStart: 9, text: 'late' }]), 'TURN_ORDER'));
  it('going backwards inside a batch → TURN_ORDER', async () =>
    expectRefused(columns([{ turnStart: 12, text: 'a' }, { turnStart: 11, text: 'b' }]), 'TURN_ORDER'));
  it('the order survives a reopen', async () => {
    await log.close();
    log = openLog(dir);
    await expectRefused(columns([{ turnStart: 9, text: 'late' }]), 'TURN_ORDER');
  });
  it('summaries and events may carry older turns', async () => {
    expect(await log.append(columns([{ kind: 2, turnStart: 0, turnEnd: 9, text: 's' }, { kind: 3, turnStart: 1, text: 'e' }]))).toBe(2);
  });
});

describe('unknown kinds, reserved flags and malformed columns are refused', () => {
  for (const kind of [0, 4, 255]) it(`kind ${kind} → UNKNOWN_KIND`, async () => expectRefused(batchWith({ kind }), 'UNKNOWN_KIND'));
  it('flag bit 7 (internal) → INVALID_ARGUMENT', async () => expectRefused(batchWith({ flags: 0x81 }), 'INVALID_ARGUMENT'));
  for (const timestamp of [NaN, -Infinity, Infinity, 2 ** 53, -(2 ** 53)]) {
    it(`timestamp ${timestamp} → INVALID_ARGUMENT`, async () => expectRefused(batchWith({ timestamp }), 'INVALID_ARGUMENT'));
  }
  it('timestamps are truncated toward zero; -0 is a turn like 0', async () => {
    const first = await log.append(
      columns([
        { turnStart: 11, turnEnd: 11, timestamp: 1.9, text: 'a' },
        { turnStart: 11, turnEnd: 11, timestamp: -1.9, text: 'b' },
        { kind: 3, turnStart: -0, turnEnd: -0, timestamp: 2 ** 53 - 1, text: 'c' },
      ]),
    );
    expect([0, 1, 2].map((k) => log.get(first + k)?.timestamp)).toEqual([1, -1, 2 ** 53 - 1]);
    expect(log.get(first + 2)?.turnStart).toBe(0);
  });
  const good = () => columns(shortRows(20, 3));
  const mutations: [string, (c: AppendColumns) => unknown][] = [
    ['short flags column', (c) => ({ ...c, flags: new Uint8Array(2) })],
    ['long turnEnd column', (c) => ({ ...c, turnEnd: new Float64Array(4).fill(25) })],
    ['texts missing an entry', (c) => ({ ...c, texts: c.texts.slice(1) })],
    ['metas not an array', (c) => ({ ...c, metas: null })],
    ['kinds as a plain array', (c) => ({ ...c, kinds: [1, 1, 1] })],
    ['tokens as Float64Array', (c) => ({ ...c, tokens: new Float64Array(3) })],
    ['a text that is a number', (c) => ({ ...c, texts: ['a', 5, 'c'] })],
    ['a meta that is an object', (c) => ({ ...c, metas: [null, { a: 1 }, null] })],
    ['no columns at all', () => undefined],
    ['a string instead of columns', () => 'x'],
  ];
  for (const [name, mutate] of mutations) {
    it(`${name} → INVALID_ARGUMENT`, async () => expectRefused(mutate(good()) as AppendColumns, 'INVALID_ARGUMENT'));
  }
});

describe('hostile columns (getters, proxies, detached buffers) get a typed error or a clean append, never a crash', () => {
  it('a column getter that detaches an earlier column buffer', async () => {
    const c = columns(shortRows(20, 3)) as unknown as Record<string, unknown>;
    const kinds = c.kinds as Uint8Array;
    const hostile = { ...c };
    Object.defineProperty(hostile, 'flags', {
      get() {
        structuredClone(kinds.buffer, { transfer: [kinds.buffer] });
        return c.flags;
      },
    });
    await expectRefused(hostile as unknown as AppendColumns, 'INVALID_ARGUMENT');
  });

  it('a texts element getter that detaches the numeric columns while strings are read', async () => {
    const c = columns(shortRows(20, 3));
    const texts = [...c.texts];
    const second = texts[1];
    Object.defineProperty(texts, '1', {
      get() {
        for (const col of [c.kinds, c.turnStart, c.tokens]) {
          if (col.buffer.byteLength) structuredClone(col.buffer, { transfer: [col.buffer] });
        }
        return second;
      },
    });
    // The numbers were copied before any string was read: the append goes through intact.
    const next = log.nextId();
    expect(await log.append({ ...c, texts })).toBe(next);
    expect(c.kinds.byteLength).toBe(0); // really detached
    expect(log.get(next + 2)).toMatchObject({ kind: 1, turnStart: 22, text: 'turn 22 ✓' });
  });

  it('a Proxy in place of an array is refused', async () => {
    const c = columns(shortRows(20, 2));
    await expectRefused({ ...c, texts: new Proxy(c.texts, {}) }, 'INVALID_ARGUMENT');
  });

  it('a texts element getter that appends to, flushes or closes the same log: refused; the outer batch is stored as given', async () => {
    const rows = shortRows(20, 3);
    const c = columns(rows);
    const texts = [...c.texts];
    const nested: Promise<unknown>[] = [];
    Object.defineProperty(texts, '1', {
      get() {
        // Before the guard, the nested append reused the log's scratch under the outer one,
        // which then stored the inner texts under its own first id.
        nested.push(log.append(columns([{ turnStart: 20, text: 'inner ✗ inner ✗ inner ✗' }])), log.flush(), log.close());
        return rows[1]!.text;
      },
    });
    const next = log.nextId();
    expect(await log.append({ ...c, texts })).toBe(next);
    const settled = await Promise.allSettled(nested);
    expect(settled.map((r) => (r.status === 'rejected' ? (r.reason as { code: string }).code : 'fulfilled'))).toEqual([
      'INVALID_ARGUMENT',
      'INVALID_ARGUMENT',
      'INVALID_ARGUMENT',
    ]);
    expect(log.nextId()).toBe(next + 3);
    rows.forEach((r, i) => expect(log.get(next + i)?.text).toBe(r.text));
    // Outside an append the same calls work.
    expect(await log.append(columns([{ turnStart: 30, text: 'after' }]))).toBe(next + 3);
  });

  it('a getter that throws rejects with that error and writes nothing', async () => {
    const c = columns(shortRows(20, 2)) as unknown as Record<string, unknown>;
    const hostile = { ...c };
    Object.defineProperty(hostile, 'metas', { get() { throw new RangeError('nope'); } });
    const next = log.nextId();
    await expect(log.append(hostile as unknown as AppendColumns)).rejects.toThrow('nope');
    expect(log.nextId()).toBe(next);
  });
});

describe('read arguments and options are checked', () => {
  it('ids must be non-negative integers', () => {
    for (const id of [-1, 1.5, NaN, '1', undefined]) {
      expect(() => log.get(id as number)).toThrowError(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    }
    expect(() => log.getMany([1, 2] as unknown as Float64Array)).toThrowError(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    expect(() => log.getMany(new Float64Array([1, NaN]))).toThrowError(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    expect(() => log.scan(1, -5)).toThrowError(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    expect(log.get(2 ** 53 - 1)).toBeUndefined();
  });

  it('malformed options → INVALID_OPTIONS, and no files are created', () => {
    const base = { readOnly: false, durability: 2, segmentBytes: 1 << 20, maxTextBytes: 1 << 20 };
    const target = tmpDir('bad-opts') + '/store';
    for (const bad of [
      { durability: 3 },
      { durability: 1.5 },
      { readOnly: 'no' },
      { segmentBytes: 100 },
      { segmentBytes: NaN },
      { maxTextBytes: 0 },
      { maxTextBytes: 2 ** 31 },
    ]) {
      expect(() => new native.SpanLog(target, { ...base, ...bad } as never), JSON.stringify(bad)).toThrowError(
        expect.objectContaining({ code: 'INVALID_OPTIONS' }),
      );
    }
    expect(() => new (native.SpanLog as unknown as new (...a: unknown[]) => unknown)(target)).toThrowError(
      expect.objectContaining({ code: 'INVALID_OPTIONS' }),
    );
    expect(fs.existsSync(target)).toBe(false);
  });

  it('recoverSegment wants bytes', () => {
    expect(() => native.recoverSegment('abc' as unknown as Uint8Array)).toThrowError(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
  });
});
