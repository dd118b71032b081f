// Rules of the audit (src/audit.ts) and of the compaction guard (src/guard.ts) that the
// other guard tests leave unchecked: found by `npm run mutate` (docs/MUTATION.md). One
// describe per rule. The audit's sampling and checks run against a stub store (only what
// Auditor and agentFinds read), so each rule is seen without ranking noise.
import { describe, expect, it, vi } from 'vitest';
import { agentFinds, anchorFact, Auditor, distinctiveLine, prng, type AuditReport } from '../../src/audit.js';
import { lineAround } from '../../src/anchors.js';
import { RecordKind, ROLE_CODES } from '../../src/native.js';
import { RECALL_K } from '../../src/search.js';
import { IdSet, type SpanStore } from '../../src/store.js';

interface StubSpan { kind: number; role: number; text: string }
interface Hit { spanId: number; text: string }
interface StubOptions {
  pins?: { fact: string; spanId: number }[];
  anchors?: number[];
  evicted?: number[];
  next?: number;
  passes?: number;
  auditSample?: number;
  /** Span by id; default: a raw assistant span stating `fact number <id> is stated here`. */
  span?: (id: number) => StubSpan | null;
  /** Ids the exact-phrase path returns for a text (before the limit). */
  phrase?: (text: string) => number[];
  search?: (q: string) => { miss: boolean; hits: Hit[] };
}

/** What Auditor and agentFinds read of a store, with the calls they make recorded. */
function stub(o: StubOptions = {}) {
  const evicted = new IdSet();
  for (const id of o.evicted ?? []) evicted.add(id);
  const span = o.span ?? ((id: number) => ({ kind: RecordKind.raw, role: ROLE_CODES.assistant!, text: `fact number ${id} is stated here` }));
  const calls = { phrase: [] as { text: string; limit: number }[], search: [] as { q: string; opts: unknown }[], events: [] as unknown[] };
  const store = {
    state: { pins: o.pins ?? [], anchors: o.anchors ?? [], evicted, passes: o.passes ?? 0 },
    options: { auditSample: o.auditSample ?? 8 },
    log: { nextId: () => o.next ?? 1000, getMany: (ids: Float64Array) => [...ids].map(span) },
    lexical: {
      phrase: (_log: unknown, text: string, _kind: number, limit: number) => {
        calls.phrase.push({ text, limit });
        return (o.phrase?.(text) ?? []).slice(0, limit);
      },
    },
    search: async (q: string, opts: unknown) => {
      calls.search.push({ q, opts });
      return o.search?.(q) ?? { miss: true, hits: [] };
    },
    recordEvent: async (e: unknown) => {
      calls.events.push(e);
      return 4242;
    },
  };
  return { store: store as unknown as SpanStore, calls };
}
const range = (a: number, b: number) => Array.from({ length: b - a }, (_, i) => a + i);

describe("audit: the sample's randomness is mulberry32, seeded, so an audit is reproducible from its seed", () => {
  it('the first draws of seed 1', () => {
    const r = prng(1);
    expect([r(), r(), r()]).toEqual([0.6270739405881613, 0.002735721180215478, 0.5274470399599522]);
  });
});

describe('audit: the fact of an anchor is what detection matched, else its longest line', () => {
  const text = 'We must use tabs\nsome much longer line of other content in this turn';
  it('a constraint without a number is an anchor fact when a user or the system states it', () => {
    expect(anchorFact(text, ROLE_CODES.user!)).toBe('We must use tabs');
    expect(anchorFact(text, ROLE_CODES.system!)).toBe('We must use tabs');
  });
  it('from the assistant, or an unknown role, it is the longest line', () => {
    expect(anchorFact(text, ROLE_CODES.assistant!)).toBe('some much longer line of other content in this turn');
    expect(anchorFact(text, 99)).toBe('some much longer line of other content in this turn');
  });
});

describe("audit: an evicted span's fact is its longest line of 8+ chars, trimmed, cut to 160 chars around its middle", () => {
  it('the longest trimmed line; the first of equal ones; none under 8 chars', () => {
    expect(distinctiveLine('short\n  a longer line here  \nmid line!')).toBe('a longer line here');
    expect(distinctiveLine('a longer line here\nshort line')).toBe('a longer line here');
    expect(distinctiveLine('aaaaaaaa\nbbbbbbbb')).toBe('aaaaaaaa');
    expect(distinctiveLine('12345678')).toBe('12345678');
    expect(distinctiveLine('abc\n1234567')).toBeNull();
    expect(distinctiveLine('')).toBeNull();
    expect(distinctiveLine('\nabcdefghij\nxy')).toBe('abcdefghij');
  });
  it('a line over 160 chars is cut around its middle, as detection cuts a match', () => {
    const line = `${'x'.repeat(100)} 40 req/s ${'y'.repeat(100)}`;
    const text = `short\n   ${line}`;
    const fact = distinctiveLine(text)!;
    expect(fact).toHaveLength(160);
    expect(fact).toBe(lineAround(text, 9, line.length));
    expect(text).toContain(fact);
  });
});

describe('audit sample: every pin, then anchors stratified over the session, then evicted spans stratified over the id space', () => {
  it('all anchors when they fit the budget; a full audit has a budget of 16 times the sample, at least 512', () => {
    const few = new Auditor(stub({ anchors: range(0, 5), auditSample: 10 }).store).sample(false, 1);
    expect(few.facts.map((f) => f.spanId)).toEqual(range(0, 5));
    const many = range(0, 600);
    expect(new Auditor(stub({ anchors: many, auditSample: 10 }).store).sample(true, 1).facts).toHaveLength(512);
    expect(new Auditor(stub({ anchors: many, auditSample: 40 }).store).sample(true, 1).facts).toHaveLength(600);
  });
  it('more anchors than the budget: one from each of budget equal slices, drawn by the seed', () => {
    const anchors = range(0, 100).map((i) => 10 + i * 3);
    const pick = (seed: number) => new Auditor(stub({ anchors, auditSample: 10 }).store).sample(false, seed).facts.map((f) => f.spanId);
    const a = pick(1);
    expect(a).toHaveLength(10);
    a.forEach((id, i) => expect(anchors.slice(i * 10, i * 10 + 10)).toContain(id));
    expect(a.some((id, i) => id !== anchors[i * 10])).toBe(true);
    expect(pick(1)).toEqual(a);
    expect(pick(2)).not.toEqual(a);
  });
  it('evicted spans: half the budget, one from each equal slice of the id space in turn, drawn by the seed', () => {
    const pick = (seed: number) => new Auditor(stub({ evicted: range(0, 1000), next: 1000, auditSample: 16 }).store).sample(false, seed);
    const a = pick(3);
    expect(a.sampledEvicted).toBe(8);
    const ids = a.facts.map((f) => f.spanId);
    ids.forEach((id, i) => {
      expect(id).toBeGreaterThanOrEqual(i * 125);
      expect(id).toBeLessThan((i + 1) * 125);
    });
    expect(ids.some((id, i) => id !== i * 125)).toBe(true);
    expect(a.facts.every((f) => f.source === 'evicted-sample')).toBe(true);
    expect(pick(3)).toEqual(a);
    expect(pick(4).facts).not.toEqual(a.facts);
  });
  it('evicted spans the draw cannot reach are picked evenly spaced among the evicted ids', () => {
    const r = new Auditor(stub({ evicted: range(500, 510), next: 100, auditSample: 8 }).store).sample(false, 1);
    expect(r.facts.map((f) => f.spanId)).toEqual([500, 502, 505, 507]);
    expect(r.sampledEvicted).toBe(4);
  });
  it("an anchor's fact is detection's, an evicted span's its longest line; a span missing or not raw gives an empty fact", () => {
    const text = 'We must use tabs\nsome much longer line of other content in this turn';
    const spans: Record<number, StubSpan | null> = {
      1: { kind: RecordKind.raw, role: ROLE_CODES.user!, text },
      2: null,
      3: { kind: RecordKind.summary, role: 0, text },
      500: { kind: RecordKind.raw, role: ROLE_CODES.user!, text },
      501: { kind: RecordKind.summary, role: 0, text },
      502: { kind: RecordKind.raw, role: ROLE_CODES.user!, text: '' },
    };
    const r = new Auditor(stub({ pins: [{ fact: 'pinned', spanId: 9 }], anchors: [1, 2, 3], evicted: [500, 501, 502], next: 100, auditSample: 8, span: (id) => spans[id] ?? null }).store).sample(false, 1);
    expect(r.facts).toEqual([
      { fact: 'pinned', spanId: 9, source: 'host' },
      { fact: 'We must use tabs', spanId: 1, source: 'anchor' },
      { fact: '', spanId: 2, source: 'anchor' },
      { fact: '', spanId: 3, source: 'anchor' },
      { fact: 'some much longer line of other content in this turn', spanId: 500, source: 'evicted-sample' },
      { fact: '', spanId: 501, source: 'evicted-sample' },
    ]);
    expect(r.sampledEvicted).toBe(3);
  });
});

describe('audit check: a fact passes only if it is verbatim in its raw span and the agent gets that span back', () => {
  it('why a fact fails, in order of the checks', async () => {
    const spans: Record<number, StubSpan | null> = { 1: null, 2: { kind: RecordKind.summary, role: 0, text: 'x' }, 3: { kind: RecordKind.raw, role: 2, text: 'the fact' } };
    const { store } = stub({ span: (id) => spans[id] ?? null, phrase: () => [3] });
    const why = await new Auditor(store).checkFacts([
      { fact: 'x', spanId: 1 },
      { fact: 'x', spanId: 2 },
      { fact: '', spanId: 3 },
      { fact: 'absent', spanId: 3 },
      { fact: 'the fact', spanId: 3 },
    ]);
    expect(why).toEqual(['span missing from the log', 'span is not raw', 'no fact to check', 'fact not verbatim in the span', null]);
  });
  it('an audit that checked nothing does not pass; facts of evicted spans are counted; a failure keeps 200 chars of its fact', async () => {
    expect(await new Auditor(stub().store).check(false)).toEqual({ passed: false, checked: 0, checkedEvicted: 0, failures: [], sampledEvicted: 0 });
    const long = `${'z'.repeat(250)} 40`;
    const { store } = stub({
      pins: [{ fact: long, spanId: 7 }],
      anchors: [1],
      evicted: [500, 501],
      next: 100,
      span: (id) => ({ kind: RecordKind.raw, role: 3, text: id === 7 ? long : `fact number ${id} is stated here` }),
      phrase: (t) => (t === long ? [] : [Number(/\d+/.exec(t)![0])]),
    });
    const r = await new Auditor(store).check(false);
    expect(r).toMatchObject({ passed: false, checked: 4, checkedEvicted: 2, sampledEvicted: 2 });
    expect(r.failures).toEqual([{ fact: long.slice(0, 200), spanId: 7, why: 'retrieval did not return the span' }]);
  });
  it('the sample is seeded by the pass: two passes sample differently, the same pass the same', async () => {
    const sampled = async (passes: number) => {
      const a = new Auditor(stub({ anchors: range(0, 200), passes, auditSample: 8, phrase: (t) => [Number(/\d+/.exec(t)![0])] }).store);
      const spy = vi.spyOn(a, 'sample');
      await a.check(false);
      return (spy.mock.results[0]!.value as ReturnType<Auditor['sample']>).facts.map((f) => f.spanId);
    };
    expect(await sampled(1)).toEqual(await sampled(1));
    expect(await sampled(1)).not.toEqual(await sampled(2));
  });
  it('the recorded audit keeps at most 50 failures', async () => {
    const { store, calls } = stub({ passes: 3 });
    const failures = range(0, 60).map((i) => ({ fact: `f${i}`, spanId: i, why: 'x' }));
    const report: AuditReport = { passed: false, checked: 60, checkedEvicted: 0, failures, sampledEvicted: 0 };
    expect((await new Auditor(store).record(report)).eventId).toBe(4242);
    expect(calls.events).toEqual([{ type: 'audit', pass: 3, checked: 60, passed: false, failures: failures.slice(0, 50), sampledEvicted: 0, checkedEvicted: 0 }]);
  });
});

describe("audit: the agent's recall — a fact stated in at most RECALL_K spans comes back by phrase, else search decides", () => {
  const finds = async (o: StubOptions, fact = '  the fact here  ', spanId = 7) => {
    const { store, calls } = stub(o);
    return { r: (await agentFinds(store, [{ fact, spanId }]))[0]!, calls };
  };
  const hit = (spanId: number, text = 'x the fact here y') => ({ spanId, text });
  it('the trimmed fact is looked up as a phrase, one more than RECALL_K deep', async () => {
    const { r, calls } = await finds({ phrase: () => [3, 7] });
    expect(r).toEqual({ found: true, topId: 7, topHolds: true });
    expect(calls.phrase).toEqual([{ text: 'the fact here', limit: RECALL_K + 1 }]);
    expect(calls.search).toEqual([]);
  });
  it('exactly RECALL_K spans stating it, this one among them: found by phrase', async () => {
    const { r, calls } = await finds({ phrase: () => range(3, 3 + RECALL_K - 1).concat([7]) });
    expect(r).toEqual({ found: true, topId: 7, topHolds: true });
    expect(calls.search).toEqual([]);
  });
  it('more than RECALL_K spans stating it: found, the first of them on top, whether or not this one is among them', async () => {
    const { r, calls } = await finds({ phrase: () => [11, 12, 7, 13, 14, 15, 16, 17] });
    expect(r).toEqual({ found: true, topId: 11, topHolds: true });
    expect(calls.search).toEqual([]);
  });
  it('RECALL_K spans stating it without this one: search decides', async () => {
    const { r, calls } = await finds({ phrase: () => range(20, 20 + RECALL_K) });
    expect(r).toEqual({ found: false, topId: null, topHolds: false });
    expect(calls.search).toEqual([{ q: 'the fact here', opts: { k: RECALL_K, kinds: ['raw'] } }]);
  });
  it('a fact under 3 chars skips the phrase path; 3 chars takes it', async () => {
    const short = await finds({ phrase: () => [7] }, 'ab');
    expect(short.calls.phrase).toEqual([]);
    expect(short.calls.search).toHaveLength(1);
    const three = await finds({ phrase: () => [7] }, 'abc');
    expect(three.calls.phrase).toHaveLength(1);
    expect(three.r.found).toBe(true);
  });
  it('search: found when not a miss and this span is a hit stating the fact', async () => {
    expect((await finds({ search: () => ({ miss: false, hits: [hit(3, 'other'), hit(7)] }) })).r).toEqual({ found: true, topId: 3, topHolds: false });
    expect((await finds({ search: () => ({ miss: true, hits: [hit(7)] }) })).r.found).toBe(false);
    expect((await finds({ search: () => ({ miss: false, hits: [hit(7, 'no such words')] }) })).r).toEqual({ found: false, topId: 7, topHolds: false });
    expect((await finds({ search: () => ({ miss: false, hits: [hit(3)] }) })).r).toEqual({ found: false, topId: 3, topHolds: true });
  });
  it('search: found when all RECALL_K hits state the fact, this span or not; fewer hits, or one not stating it, is not', async () => {
    const all = range(30, 30 + RECALL_K).map((id) => hit(id));
    expect((await finds({ search: () => ({ miss: false, hits: all }) })).r).toEqual({ found: true, topId: 30, topHolds: true });
    expect((await finds({ search: () => ({ miss: false, hits: all.slice(1) }) })).r.found).toBe(false);
    expect((await finds({ search: () => ({ miss: false, hits: [...all.slice(1), hit(99, 'other')] }) })).r.found).toBe(false);
  });
});
