// SpanStore's public contract: options, append/get, bad input, durability, reopen.
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SpanStore, SpanguardError } from '../../src/index.js';
import { tmpDir } from '../helpers/data.js';

const open: SpanStore[] = [];
async function store(dir = tmpDir(), options = {}): Promise<SpanStore> {
  const s = await SpanStore.open(dir, options);
  open.push(s);
  return s;
}
afterEach(async () => {
  while (open.length) await open.pop()!.close();
});

describe('options are validated before anything is opened', () => {
  it.each([
    [{ durability: 'fast' }, /durability/],
    [{ policy: 'maybe' }, /policy/],
    [{ auditEvery: 0 }, /auditEvery/],
    [{ dims: 1.5 }, /dims/],
    [{ nope: true }, /unknown option "nope"/],
    [{ embedder: async () => [] }, /dims is required/],
  ])('%j', async (options, message) => {
    const dir = tmpDir();
    await expect(SpanStore.open(dir, options as never)).rejects.toMatchObject({ code: 'INVALID_OPTIONS', message: expect.stringMatching(message) });
  });
});

describe('retention outlives the horizon, or the store is best-effort', () => {
  it('refuses a raw TTL shorter than the horizon', async () => {
    await expect(SpanStore.open(tmpDir(), { horizonSeconds: 86400 * 30, rawTtlSeconds: 86400 })).rejects.toMatchObject({ code: 'RETENTION_TOO_SHORT' });
  });
  it('opens bestEffort, and the verdict can never be lossless', async () => {
    const s = await store(tmpDir(), { horizonSeconds: 86400 * 30, rawTtlSeconds: 86400, bestEffort: true });
    expect(s.verdict().state).toBe('unknown');
    expect(s.verdict().bestEffort).toBe(true);
  });
});

describe('append assigns monotonic ids and get returns the span verbatim', () => {
  it('round-trips text, role, turn range, tokens, meta and the anchor flag', async () => {
    const s = await store();
    const a = await s.append({ turn: 1, role: 'user', text: 'hello 👋 wörld', tokens: 5, meta: { k: 1 } });
    const [b, c] = await s.appendMany([
      { turn: 2, role: 'assistant', text: '' },
      { turn: 3, turnEnd: 5, role: 'narrator', text: 'the limit is 40 req/s' },
    ]);
    expect(b).toBe(a + 1);
    expect(c).toBe(a + 2);
    expect(s.get(a)).toMatchObject({ id: a, kind: 'raw', role: 'user', turnStart: 1, turnEnd: 1, tokens: 5, text: 'hello 👋 wörld', meta: { k: 1 }, anchor: false });
    expect(s.get(b!)!.text).toBe('');
    expect(s.get(c!)).toMatchObject({ role: 'narrator', turnStart: 3, turnEnd: 5, anchor: true });
    expect(s.get(c! + 100)).toBeUndefined();
  });
});

describe('bad input gets a typed error and nothing is written', () => {
  it.each([
    [{ turn: 1, role: 'user', text: 'a\ud800b' }, 'INVALID_UTF8'],
    [{ turn: -1, role: 'user', text: 'a' }, 'INVALID_TURN'],
    [{ turn: 1.5, role: 'user', text: 'a' }, 'INVALID_TURN'],
    [{ turn: 3, turnEnd: 2, role: 'user', text: 'a' }, 'INVALID_TURN'],
    [{ turn: 1, role: 'user', text: 42 }, 'INVALID_ARGUMENT'],
    [{ turn: 1, role: '', text: 'a' }, 'INVALID_ARGUMENT'],
  ])('%j -> %s', async (turn, code) => {
    const s = await store();
    await s.append({ turn: 0, role: 'user', text: 'first' });
    const before = s.stats().nextId;
    await expect(s.appendMany([{ turn: 1, role: 'user', text: 'ok' }, turn as never])).rejects.toMatchObject({ code });
    expect(s.stats().nextId).toBe(before);
  });
  it('turn numbers going backwards are refused', async () => {
    const s = await store();
    await s.append({ turn: 10, role: 'user', text: 'a' });
    await expect(s.append({ turn: 9, role: 'user', text: 'b' })).rejects.toMatchObject({ code: 'TURN_ORDER' });
  });
  it('text over maxTextBytes is refused', async () => {
    const s = await store(tmpDir(), { maxTextBytes: 1024 });
    const before = s.stats().nextId;
    await expect(
      s.appendMany([
        { turn: 1, role: 'tool', text: 'x'.repeat(1024) },
        { turn: 2, role: 'tool', text: 'x'.repeat(1025) },
      ]),
    ).rejects.toMatchObject({ code: 'TEXT_TOO_LARGE' });
    // Nothing of the batch was written, not even the record that fit.
    expect(s.stats().nextId).toBe(before);
    expect(s.get(before)).toBeUndefined();
  });
  it('errors are SpanguardError instances with a stable code', async () => {
    const s = await store();
    const err = await s.append({ turn: 1, role: 'user', text: '\udc00' }).catch((e) => e);
    expect(err).toBeInstanceOf(SpanguardError);
    expect(err.code).toBe('INVALID_UTF8');
  });
});

describe('close and reopen: every span and the verdict are back', () => {
  it.each(['sync', 'group', 'none'] as const)('durability %s', async (durability) => {
    const dir = tmpDir();
    const s = await SpanStore.open(dir, { durability });
    const ids = await s.appendMany(Array.from({ length: 50 }, (_, i) => ({ turn: i, role: 'user', text: `turn ${i} says ${i * 7}` })));
    await s.close();
    await s.close(); // idempotent
    await expect(s.search('x')).rejects.toMatchObject({ code: 'CLOSED' });
    const r = await store(dir, { durability });
    expect(r.get(ids[49]!)!.text).toBe('turn 49 says 343');
    expect(r.verdict().state).toBe('lossless');
    const again = await r.append({ turn: 50, role: 'user', text: 'after reopen' });
    // The first close recorded the store's id and its retention declaration: two event records between.
    expect(again).toBe(ids[49]! + 3);
    expect(r.events().map((e) => e.event.type)).toEqual(['store', 'retention']);
  });
  it('creates files 0600 inside 0700 directories', async () => {
    const dir = tmpDir();
    const s = await store(dir);
    await s.append({ turn: 1, role: 'user', text: 'x' });
    const files = fs.readdirSync(path.join(dir, 'log'));
    expect(files).toEqual(expect.arrayContaining(['EXTENT', 'LOCK', 'seg-00000000000000000001.log']));
    for (const f of files) expect(fs.statSync(path.join(dir, 'log', f)).mode & 0o777, f).toBe(0o600);
  });
});

describe('one writer: a second open of the same store is LOCKED; readers are not', () => {
  it('refuses a second writer and lets a reader open', async () => {
    const dir = tmpDir();
    const s = await store(dir);
    await s.append({ turn: 1, role: 'user', text: 'shared' });
    await s.checkpoint();
    await expect(SpanStore.open(dir)).rejects.toMatchObject({ code: 'LOCKED' });
    const r = await store(dir, { readOnly: true });
    expect(r.findExact('shared').length).toBe(1);
    await expect(r.append({ turn: 2, role: 'user', text: 'no' })).rejects.toMatchObject({ code: 'READ_ONLY' });
  });
});

describe('a torn log tail is truncated at open and the fact is recorded', () => {
  /** A closed sync store of n spans with `tail` appended to its last segment, as a crash leaves it; reopened. */
  async function reopenedWithTail(n: number, tail: Buffer) {
    const dir = tmpDir();
    const s = await SpanStore.open(dir, { durability: 'sync' });
    const ids = await s.appendMany(Array.from({ length: n }, (_, i) => ({ turn: i, role: 'user', text: `span ${i}` })));
    await s.close();
    const seg = fs.readdirSync(path.join(dir, 'log')).filter((f) => f.startsWith('seg-')).sort().pop()!;
    fs.appendFileSync(path.join(dir, 'log', seg), tail);
    const r = await store(dir);
    return { r, ids, recoveries: r.events().filter((e) => e.event.type === 'recovery').map((e) => e.event) };
  }

  it('keeps every acknowledged span and appends a recovery event', async () => {
    // Half a record header: what a crash in the middle of a write leaves behind.
    const { r, ids, recoveries } = await reopenedWithTail(20, Buffer.alloc(40, 0xab));
    expect(r.get(ids[19]!)!.text).toBe('span 19');
    // 0xab bytes: part of a would-be record was cut, not just zeros.
    expect(recoveries).toEqual([expect.objectContaining({ type: 'recovery', droppedBytes: 40, zerosOnly: false })]);
    expect(r.verdict().state).toBe('lossless');
  });

  it("a sync writer's zero prefill left by a crash is cut and recorded as zerosOnly", async () => {
    // What a killed sync/group writer leaves: zeros written past its last record.
    const { r, ids, recoveries } = await reopenedWithTail(5, Buffer.alloc(1 << 20));
    expect(r.get(ids[4]!)!.text).toBe('span 4');
    expect(recoveries).toEqual([expect.objectContaining({ droppedBytes: 1 << 20, zerosOnly: true })]);
    expect(r.stats().recoveries).toEqual([expect.objectContaining({ droppedBytes: 1 << 20, zerosOnly: true })]);
  });
});

describe('metadata is searchable, and phrases stay verbatim to the text', () => {
  it('ranks the span whose metadata the query names first among identical texts', async () => {
    const s = await store();
    const text = 'THOUGHT: run the query tests.\n```bash\n./tests/runtests.py queries\n```';
    const ids = await s.appendMany(
      ['django__django-11265', 'django__django-13297', 'django__django-13417'].map((episode, i) => ({ turn: i, role: 'assistant', text, meta: { episode } })),
    );
    const r = await s.search('In episode django__django-13297, what did `./tests/runtests.py queries` print?');
    expect(r.hits[0]!.spanId).toBe(ids[1]);
    expect(s.findExact('django__django-13297')).toEqual([]);
  });
});
