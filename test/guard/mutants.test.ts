// Rules of the audit (src/audit.ts) and of the compaction guard (src/guard.ts) that the
// other guard tests leave unchecked: found by `npm run mutate` (docs/MUTATION.md). One
// describe per rule. The audit's sampling and checks run against a stub store (only what
// Auditor and agentFinds read), so each rule is seen without ranking noise.
import { describe, expect, it, vi } from 'vitest';
import { anchorFact, distinctiveLine } from '../../src/anchors.js';
import { agentFinds, Auditor, type AuditReport } from '../../src/audit.js';
import { prng } from '../../src/prng.js';
import { lineAround } from '../../src/anchors.js';
import { RecordKind, ROLE_CODES } from '../../src/native.js';
import { RECALL_K } from '../../src/search.js';
import type { SpanStore } from '../../src/store.js';
import { IdSet } from '../../src/store/trail.js';
import { CompactionRefusedError, LosslessRetrievalBoundaryError, SpanStore as Store, type SpanStoreOptions } from '../../src/index.js';
import { CompactionGuard, judgeAnchors, probeDivergence } from '../../src/guard.js';
import { perturb, valuePhrases } from '../../src/anchors.js';
import { ErrorCode, SpanguardError } from '../../src/errors.js';
import { analyzeQuery } from '../../src/query.js';
import { answersText } from '../../src/support.js';
import { DEFAULT_MATCH_POLICY } from '../../src/match.js';
import { holdsRequired, requiredDigits, requiredParts } from '../../src/guard/probes.js';
import { tmpDir } from '../helpers/data.js';
import { open } from './helpers.js';

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
  const calls = { phrase: [] as { text: string; limit: number }[], phraseHas: [] as { texts: string[]; ids: number[] }[], search: [] as { q: string; opts: unknown }[], events: [] as unknown[] };
  const store = {
    state: { pins: o.pins ?? [], anchors: o.anchors ?? [], evicted, passes: o.passes ?? 0 },
    options: { auditSample: o.auditSample ?? 8 },
    log: { nextId: () => o.next ?? 1000, getMany: (ids: Float64Array) => [...ids].map(span) },
    lexical: {
      phrase: (_log: unknown, text: string, _kind: number, limit: number) => {
        calls.phrase.push({ text, limit });
        return (o.phrase?.(text) ?? []).slice(0, limit);
      },
      // Membership in the same answers, over every answer (not cut at a limit).
      phraseHas: (_log: unknown, texts: string[], ids: Float64Array, _kind: number) => {
        calls.phraseHas.push({ texts, ids: [...ids] });
        return Uint8Array.from(texts, (t, i) => ((o.phrase?.(t) ?? []).includes(ids[i]!) ? 1 : 0));
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
  it("the span among the trimmed fact's exact-phrase answers: found, every fact asked in one batch, no other lookup", async () => {
    const { r, calls } = await finds({ phrase: () => [3, 7] });
    expect(r).toEqual({ found: true, topId: 7, topHolds: true });
    expect(calls.phraseHas).toEqual([{ texts: ['the fact here'], ids: [7] }]);
    expect(calls.phrase).toEqual([]);
    expect(calls.search).toEqual([]);
    const many = stub({ phrase: (t) => (t === 'b fact' ? [] : [Number(/\d+/.exec(t)![0])]) });
    const r2 = await agentFinds(many.store, [
      { fact: ' fact 4 ', spanId: 4 },
      { fact: 'ab', spanId: 5 },
      { fact: 'b fact', spanId: 6 },
      { fact: 'fact 8', spanId: 9 },
    ]);
    expect(many.calls.phraseHas).toEqual([{ texts: ['fact 4', 'b fact', 'fact 8'], ids: [4, 6, 9] }]);
    expect(r2.map((x) => x.found)).toEqual([true, false, false, false]);
    // Only those the batch did not vouch for take the long way, one more than RECALL_K deep.
    expect(many.calls.phrase).toEqual([{ text: 'b fact', limit: RECALL_K + 1 }, { text: 'fact 8', limit: RECALL_K + 1 }]);
    expect(many.calls.search.map((c) => c.q)).toEqual(['ab', 'b fact', 'fact 8']);
  });
  it('no fact of 3+ chars: no batch is asked', async () => {
    const { calls } = await finds({ phrase: () => [7] }, ' ab ');
    expect(calls.phraseHas).toEqual([]);
  });
  it('more than RECALL_K spans stating it, this one among them: found', async () => {
    const { r, calls } = await finds({ phrase: () => [11, 12, 7, 13, 14, 15, 16, 17] });
    expect(r).toEqual({ found: true, topId: 7, topHolds: true });
    expect(calls.search).toEqual([]);
  });
  it('this span not among the answers, at most RECALL_K answers: search decides; more: found, the first of them on top', async () => {
    const few = await finds({ phrase: () => range(20, 20 + RECALL_K - 1) });
    expect(few.calls.phrase).toEqual([{ text: 'the fact here', limit: RECALL_K + 1 }]);
    expect(few.calls.search).toHaveLength(1);
    const { r, calls } = await finds({ phrase: () => [11, 12, 13, 14, 15, 16, 17] });
    expect(r).toEqual({ found: true, topId: 11, topHolds: true });
    expect(calls.search).toEqual([]);
  });
  it('a span the batch does not vouch for is still found when the lookup returns it among at most RECALL_K answers', async () => {
    // Both read the same answers, so this needs them to disagree: the lookup then decides.
    const { store } = stub({ phrase: (t) => (t === 'the fact here' ? [7] : []) });
    (store as unknown as { lexical: { phraseHas: () => Uint8Array } }).lexical.phraseHas = () => new Uint8Array([0]);
    const [r] = await agentFinds(store, [{ fact: 'the fact here', spanId: 7 }]);
    expect(r).toEqual({ found: true, topId: 7, topHolds: true });
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
    expect(three.calls.phraseHas).toHaveLength(1);
    expect(three.calls.search).toEqual([]);
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

// ------------------------------------------------------------------ the compaction guard

const NAMES = ['alpha', 'bravo', 'charlie', 'delta', 'echo', 'foxtrot', 'golf', 'hotel'];
const NUMS = [37, 52, 68, 81, 94, 46, 73, 29];
const QUEUES = ['amber', 'azure', 'beige', 'black', 'blue', 'bronze', 'brown', 'coral', 'cream', 'crimson', 'cyan', 'ebony', 'emerald', 'fuchsia', 'gold', 'gray', 'green', 'indigo', 'ivory', 'jade', 'khaki', 'lavender', 'lemon', 'lilac', 'lime', 'magenta', 'maroon', 'mint', 'navy', 'ochre', 'olive', 'orange', 'peach', 'pink', 'plum', 'purple', 'red', 'rose', 'ruby', 'rust'];
const WORDS = ['one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine', 'ten', 'eleven', 'twelve'];
/** An anchor: a quantity, with a never-stated perturbation (the number shifted). */
const poolFact = (i: number) => `The ${NAMES[i]} pool keeps ${NUMS[i]} workers busy.`;
/** A summary line that answers a statement of the pool's size without restating it verbatim. */
const poolLine = (i: number, n: number | string) => `${NAMES[i]} pool: keeps ${n} workers`;
const wrong = (i: number) => /\d+/.exec(perturb(poolFact(i), 0))![0];
const filler = (i: number) => ({ role: 'assistant', text: `We talked about the weather and the lunch plans, part ${WORDS[i % WORDS.length]}.` });

interface Probe { query: string; positive: boolean; digits: readonly string[] | null; required?: { numbers: string[]; quoted: string[] }; raw: boolean; summary: boolean }
interface GuardInternals {
  probeSet: Probe[];
  anchorsAtDraw: number;
  pairs: Map<number, { fact: string; negative: string; digits: readonly string[] | null } | null>;
  anchorTurns: Map<number, number>;
  localProbes(turnStart: number, turnEnd: number, evictedNow: ReadonlySet<number>, facts?: ReadonlyMap<number, string>): Probe[];
  neverStated(perturbed: string): boolean;
  distance(anchorText: string, topId: number): Promise<number>;
  resetProbes(): void;
  compact: Store['compact'];
}
const guardOf = (s: Store) => (s as unknown as { guard: GuardInternals }).guard;
const eventsOf = (s: Store, type: string) => s.events().flatMap((e) => (e.event.type === type ? [e.event as unknown as Record<string, unknown>] : []));

/** Turns: filler, anchor, filler, anchor… for `n` pools, then four fillers; turn = index + 1. */
async function pools(n = 6, options: SpanStoreOptions = {}, extra: { role: string; text: string; anchor?: boolean }[] = []) {
  const s = await Store.open(tmpDir(), { durability: 'none', hitRateProbes: 1, ...options });
  open.push(s);
  const turns: { role: string; text: string; anchor?: boolean }[] = [];
  for (let i = 0; i < n; i++) turns.push(filler(i), { role: 'assistant', text: poolFact(i) });
  turns.push(...extra);
  for (let i = 0; i < 4; i++) turns.push(filler(n + i));
  const ids = await s.appendMany(turns.map((t, i) => ({ ...t, turn: i + 1 })));
  return { s, ids, anchorIds: Array.from({ length: n }, (_, i) => ids[2 * i + 1]!) };
}
const summary = (a: number, b: number, text = `summary of turns ${a}-${b}`) => ({ text, turnStart: a, turnEnd: b });
const dot = (v: Float32Array) => {
  const d = v.length / 2;
  let x = 0;
  for (let i = 0; i < d; i++) x += v[i]! * v[d + i]!;
  return x;
};

describe('guard: a malformed request is refused, and recorded as an invalid request of the next pass', () => {
  const refuse = async (req: unknown, message: string | RegExp, code = 'INVALID_ARGUMENT') => {
    const { s } = await pools(1);
    await expect(s.compact(req as never)).rejects.toMatchObject({ code, message });
    return eventsOf(s, 'refusal');
  };
  it('a request that is not an object', async () => {
    for (const req of [null, 'x']) {
      expect(await refuse(req, 'compact expects { evict, rewrite, summary }')).toEqual([
        { type: 'refusal', pass: 1, anchors: [], divergence: 0, reason: 'invalid-request', detail: 'INVALID_ARGUMENT: compact expects { evict, rewrite, summary }', spanIds: [] },
      ]);
    }
  });
  it('ids that are not an array of distinct non-negative integers', async () => {
    await refuse({ evict: 'x', summary: summary(1, 1) }, 'evict must be an array of span ids');
    await refuse({ evict: [], rewrite: 'x', summary: summary(1, 1) }, 'rewrite must be an array of span ids');
    await refuse({ evict: [1.5], summary: summary(1, 1) }, 'evict contains 1.5, which is not a span id');
    await refuse({ evict: ['3'], summary: summary(1, 1) }, 'evict contains 3, which is not a span id');
    await refuse({ evict: [-1], summary: summary(1, 1) }, 'evict contains -1, which is not a span id');
    await refuse({ evict: [2, 2], summary: summary(2, 2) }, 'evict names an id twice');
    await refuse({ evict: [0], summary: summary(1, 1) }, /^span id\(s\) 0 are not in the store/, 'LOSSLESS_BOUNDARY');
  });
  it("the refusal's detail keeps the first 300 chars of the message", async () => {
    const [r] = await refuse({ evict: ['x'.repeat(400)], summary: summary(1, 1) }, /^evict contains x+, which is not a span id$/);
    expect(r!.detail).toBe(`INVALID_ARGUMENT: evict contains ${'x'.repeat(285)}`);
  });
  it('a summary without text, or a turn range that is not one', async () => {
    await refuse({ evict: [] }, 'compact needs summary: { text, turnStart, turnEnd }');
    await refuse({ evict: [], summary: { text: 5, turnStart: 1, turnEnd: 1 } }, 'compact needs summary: { text, turnStart, turnEnd }');
    for (const [a, b] of [[1.5, 2], [1, '2'], [-1, 0], [5, 4]] as const) {
      const [r] = await refuse({ evict: [], summary: { text: 'x', turnStart: a, turnEnd: b } }, `summary turn range ${a}..${b} is not a valid range`, 'INVALID_TURN');
      expect(r).toMatchObject({ reason: 'invalid-request', spanIds: [] });
    }
  });
  it('a pass that evicts nothing may start at turn 0; the refusal after it belongs to pass 2', async () => {
    const { s } = await pools(1);
    const r = await s.compact({ evict: [], summary: summary(0, 0, 'nothing yet') });
    expect(r).toMatchObject({ pass: 1, evicted: [], evictedSummaries: [], spilled: [], superseded: [], refused: [] });
    await expect(s.compact(null as never)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect(eventsOf(s, 'refusal')).toEqual([expect.objectContaining({ pass: 2 })]);
  });
});

describe('guard rules 1 and 2: a breach or an unknown id halts the pass, names the spans, and says which pass', () => {
  it('rewriting raw spans: every one named', async () => {
    const { s, ids } = await pools(2);
    const err = await s.compact({ evict: ids.slice(0, 2), rewrite: [ids[0]!, ids[1]!], summary: summary(1, 2) }).catch((e) => e);
    expect(err).toBeInstanceOf(LosslessRetrievalBoundaryError);
    expect(err.message).toBe(`compaction attempted to rewrite indexed raw span(s) ${ids[0]}, ${ids[1]}; raw spans are immutable (eviction set is not a subset of the retention set). The pass was halted and the verdict is degraded.`);
    expect(err.details).toMatchObject({ pass: 1 });
    expect(eventsOf(s, 'boundary')).toEqual([{ type: 'boundary', pass: 1, reason: 'rewrite-raw', spanIds: [ids[0], ids[1]] }]);
  });
  it('unknown ids, in evict or rewrite: ten named in the message, 64 in the record, all in the error', async () => {
    const { s, ids } = await pools(1);
    const unknown = range(0, 70).map((i) => 100_000 + i);
    const err = await s.compact({ evict: [ids[0]!], rewrite: unknown, summary: summary(1, 1) }).catch((e) => e);
    expect(err).toBeInstanceOf(LosslessRetrievalBoundaryError);
    expect(err.spanIds).toEqual(unknown);
    expect(err.details).toMatchObject({ pass: 1 });
    expect(err.message).toBe(`span id(s) ${unknown.slice(0, 10).join(', ')} are not in the store: the eviction set must be a subset of the retention set`);
    expect(eventsOf(s, 'refusal')).toEqual([{ type: 'refusal', pass: 1, anchors: [], divergence: 0, reason: 'invalid-request', detail: `unknown span id(s) ${unknown.slice(0, 10).join(', ')}`, spanIds: unknown.slice(0, 64) }]);
  });
  it('an event record is no window entry; a superseded or evicted summary cannot be re-summarized again', async () => {
    const { s, ids } = await pools(2);
    const first = await s.compact({ evict: ids.slice(0, 2), summary: summary(1, 2) });
    const eventId = s.events()[0]!.id;
    await expect(s.compact({ evict: [eventId], summary: summary(1, 1) })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', message: `span ${eventId} is an event record, not a window entry` });
    expect(eventsOf(s, 'refusal').at(-1)).toMatchObject({ reason: 'invalid-request', spanIds: [eventId] });
    const again = await s.compact({ evict: [first.summaryId], rewrite: [first.summaryId], summary: summary(1, 2) });
    expect(again).toMatchObject({ evicted: [], evictedSummaries: [first.summaryId], superseded: [first.summaryId] });
    await expect(s.compact({ evict: [], rewrite: [first.summaryId], summary: summary(1, 2) })).rejects.toMatchObject({ message: `summary ${first.summaryId} was already superseded by an earlier pass` });
    expect(eventsOf(s, 'refusal').at(-1)).toMatchObject({ spanIds: [first.summaryId] });
    await expect(s.compact({ evict: [first.summaryId], summary: summary(1, 2) })).rejects.toMatchObject({ message: `summary ${first.summaryId} is not in the live window (already evicted or superseded)` });
    expect(eventsOf(s, 'refusal').at(-1)).toMatchObject({ spanIds: [first.summaryId] });
  });
  it('a raw span that either index has not reached yet is unretained', async () => {
    for (const index of ['lexical', 'vector'] as const) {
      const { s, ids } = await pools(6);
      const target = s[index];
      const lag = ids[5]!;
      (s as unknown as Record<string, unknown>)[index] = new Proxy(target, {
        get: (t, p) => (p === 'highWater' ? () => lag : typeof Reflect.get(t, p) === 'function' ? (Reflect.get(t, p) as () => unknown).bind(t) : Reflect.get(t, p)),
      });
      const err = await s.compact({ evict: ids.slice(0, 10), summary: summary(1, 10) }).catch((e) => e);
      const unretained = ids.slice(5, 10);
      expect(err).toBeInstanceOf(LosslessRetrievalBoundaryError);
      expect(err.spanIds).toEqual(unretained);
      expect(err.details).toMatchObject({ pass: 1 });
      expect(err.message).toBe(`raw span(s) ${unretained.join(', ')} would leave the window without an index entry: eviction set is not a subset of the retention set`);
      expect(eventsOf(s, 'boundary')).toEqual([{ type: 'boundary', pass: 1, reason: 'evict-unretained', spanIds: unretained }]);
    }
  });
  it('the message names at most ten unretained spans', async () => {
    const { s, ids } = await pools(6);
    const lex = s.lexical;
    s.lexical = new Proxy(lex, { get: (t, p) => (p === 'highWater' ? () => ids[0]! : typeof Reflect.get(t, p) === 'function' ? (Reflect.get(t, p) as () => unknown).bind(t) : Reflect.get(t, p)) });
    const err = await s.compact({ evict: ids.slice(0, 12), summary: summary(1, 12) }).catch((e) => e);
    expect(err.message).toBe(`raw span(s) ${ids.slice(0, 10).join(', ')} would leave the window without an index entry: eviction set is not a subset of the retention set`);
  });
  it('a summary range off at either end is refused with both ranges', async () => {
    const { s, ids } = await pools(5);
    for (const [a, b] of [[1, 11], [2, 10]]) {
      const err = await s.compact({ evict: ids.slice(0, 10), summary: summary(a!, b!) }).catch((e) => e);
      expect(err).toMatchObject({ code: 'SUMMARY_RANGE', message: `summary claims turns ${a}..${b} but replaces turns 1..10: a summary covers exactly what it evicts` });
      expect(err.details).toEqual({ turnStart: a, turnEnd: b, evictedStart: 1, evictedEnd: 10 });
    }
    expect(eventsOf(s, 'refusal').map((r) => r.reason)).toEqual(['summary-range', 'summary-range']);
  });
});

describe('guard: a receipt says where the pass spent its time, in microseconds', () => {
  it('every phase took some time, and together no more than the pass', async () => {
    const { s, ids } = await pools(5);
    const t0 = performance.now();
    const r = await guardOf(s).compact({ evict: ids.slice(0, 10), summary: summary(1, 10, poolLine(0, 37)), tokens: 42 } as never);
    const elapsed = (performance.now() - t0) * 1000;
    for (const phase of ['check', 'anchors', 'grounding', 'monitor', 'summary', 'record'] as const) expect(r.timing[phase]).toBeGreaterThan(0);
    const sum = Object.values(r.timing).reduce((a, b) => a + b, 0);
    expect(sum).toBeLessThanOrEqual(elapsed + 1);
    expect(sum).toBeGreaterThan(elapsed / 2);
  });
  it("the summary's token count is stored with it", async () => {
    const { s, ids } = await pools(1);
    const r = await s.compact({ evict: ids.slice(0, 2), summary: { ...summary(1, 2), tokens: 42 } });
    expect(s.get(r.summaryId)!.tokens).toBe(42);
  });
});

/** The exact-phrase path finds nothing (both its lookups): the agent's search alone decides. */
const blindPhrase = (s: Store) => {
  const lex = s.lexical;
  const blind: Record<string, unknown> = { phrase: () => new Float64Array(0), phraseHas: (_l: unknown, ps: string[]) => new Uint8Array(ps.length) };
  s.lexical = new Proxy(lex, { get: (t, p) => (typeof p === 'string' && p in blind ? blind[p] : typeof Reflect.get(t, p) === 'function' ? (Reflect.get(t, p) as () => unknown).bind(t) : Reflect.get(t, p)) });
};

describe('guard rule 4: each evicted anchor is probed; a divergent first hit is refused or spilled', () => {
  it('only anchors are probed; an anchor with no text holds no value to lose', async () => {
    const { s, ids } = await pools(5, {}, [{ role: 'user', text: '', anchor: true }]);
    const r = await s.compact({ evict: ids.slice(0, 11), summary: summary(1, 11) });
    expect(r.anchorsChecked).toBe(6);
  });
  const divergent = async (policy: 'refuse' | 'spill') => {
    const { s, ids, anchorIds } = await pools(2, { maxDivergence: 0, policy });
    const other = ids[0]!;
    blindPhrase(s);
    s.search = (async () => ({ miss: false, hits: [{ spanId: other, text: s.get(other)!.text }, { spanId: anchorIds[0]!, text: poolFact(0) }] })) as never;
    const d = 1 - dot(await s.embedQuery([poolFact(0), s.get(other)!.text]));
    return { s, ids, anchor: anchorIds[0]!, d, run: () => guardOf(s).compact({ evict: ids.slice(0, 2), summary: summary(1, 2) }) };
  };
  it('refuse: the refusal gives the divergence measured against the first hit', async () => {
    const { s, anchor, d, run } = await divergent('refuse');
    expect(d).toBeGreaterThan(0);
    const err = await run().catch((e) => e);
    expect(err).toBeInstanceOf(CompactionRefusedError);
    expect(err.message).toBe(`compaction refused: for anchor span(s) ${anchor} the probe returned a span at divergence ${d.toFixed(3)} > maxDivergence 0`);
    expect(err.details).toMatchObject({ pass: 1 });
    const [r] = eventsOf(s, 'refusal');
    expect(r).toMatchObject({ reason: 'divergence', anchors: [anchor] });
    expect(r!.divergence).toBeCloseTo(d, 6);
  });
  it('spill: the anchor stays in the window, the rest is evicted', async () => {
    const { ids, anchor, d, run } = await divergent('spill');
    const r = await run();
    expect(r.spilled).toEqual([anchor]);
    expect(r.evicted).toEqual([ids[0]]);
    expect(r.divergence).toBeCloseTo(d, 6);
  });
  it('an unverified anchor is named in the refusal, ten at most', async () => {
    const { s, ids, anchorIds } = await pools(6);
    blindPhrase(s);
    s.search = (async () => ({ miss: true, hits: [] })) as never;
    const err = await guardOf(s).compact({ evict: ids.slice(0, 12), summary: summary(1, 12) }).catch((e) => e);
    expect(err).toBeInstanceOf(CompactionRefusedError);
    expect(err.message).toBe(`compaction refused: anchor span(s) ${anchorIds.join(', ')} are not returned by the agent's retrieval for a probe of their own content`);
    expect(eventsOf(s, 'refusal')).toEqual([expect.objectContaining({ reason: 'anchor-not-retrievable', anchors: anchorIds })]);
  });
  it("the distance is the cosine distance of the embeddings; an unknown span's text is empty", async () => {
    const { s, ids } = await pools(1);
    const g = guardOf(s);
    expect(await g.distance(poolFact(0), ids[1]!)).toBeLessThan(1e-5);
    const toFiller = await g.distance(poolFact(0), ids[0]!);
    expect(toFiller).toBeCloseTo(1 - dot(await s.embedQuery([poolFact(0), s.get(ids[0]!)!.text])), 6);
    expect(toFiller).toBeGreaterThan(0);
    expect(await g.distance(poolFact(0), 999_999)).toBeCloseTo(Math.max(0, 1 - dot(await s.embedQuery([poolFact(0), '']))), 6);
  });
});

describe("guard rule 4's acceptance: returned by its own probe, and what came first within maxDivergence", () => {
  it('probeDivergence: null when not returned, 0 when the first hit is the anchor or states the probe, else measured', async () => {
    const measure = vi.fn(async () => 0.42);
    expect(await probeDivergence({ found: false, topId: 3, topHolds: false }, 7, measure)).toBeNull();
    expect(await probeDivergence({ found: true, topId: null, topHolds: false }, 7, measure)).toBe(0);
    expect(await probeDivergence({ found: true, topId: 7, topHolds: false }, 7, measure)).toBe(0);
    expect(await probeDivergence({ found: true, topId: 3, topHolds: true }, 7, measure)).toBe(0);
    expect(measure).not.toHaveBeenCalled();
    expect(await probeDivergence({ found: true, topId: 3, topHolds: false }, 7, measure)).toBe(0.42);
    expect(measure).toHaveBeenCalledWith(3);
  });
  it('judgeAnchors: not found or not measured is unverified; over the limit is diverged; the largest is reported', () => {
    expect(
      judgeAnchors(
        [
          { id: 1, found: false, divergence: 0.5 },
          { id: 2, found: true, divergence: null },
          { id: 3, found: true, divergence: 0.05 },
          { id: 4, found: true, divergence: 0.3 },
        ],
        0.1,
      ),
    ).toEqual({ unverified: [1, 2], diverged: [4], divergence: 0.3 });
  });
});

describe('guard grounding: a summary value nothing it replaces states is named', () => {
  it('refused: ten values in the message and the record, all in the error', async () => {
    const { s, ids } = await pools(1, { grounding: 'refuse' });
    const values = range(0, 12).map((i) => 101 + i * 7);
    const err = await s.compact({ evict: ids.slice(0, 2), summary: summary(1, 2, `counted ${values.join(' then ')} items`) }).catch((e) => e);
    expect(err).toMatchObject({ code: 'UNGROUNDED_SUMMARY' });
    const named = (err.details.values as string[]).slice(0, 10).join(', ');
    expect(err.details.values).toHaveLength(12);
    expect(err.message).toBe(`compaction refused: the summary states ${named}, which none of the spans it replaces states`);
    expect(eventsOf(s, 'refusal')[0]).toEqual({ type: 'refusal', pass: 1, anchors: [], divergence: 0, reason: 'ungrounded', detail: `summary states ${named}, which nothing it replaces states`, spanIds: [] });
  });
  it('marked: the pass records at most 64 of them', async () => {
    const { s, ids } = await pools(1);
    const values = range(0, 70).map((i) => 1000 + i * 7);
    await s.compact({ evict: ids.slice(0, 2), summary: summary(1, 2, `counted ${values.join(' then ')} items`) });
    expect(eventsOf(s, 'pass')[0]!.ungrounded).toHaveLength(64);
  });
});

describe('guard monitor: the session-wide probe set is drawn at the first pass and again when the anchors double', () => {
  it('one anchor is enough for a first draw', async () => {
    const { s, ids } = await pools(1);
    await s.compact({ evict: ids.slice(0, 1), summary: summary(1, 1) });
    expect(guardOf(s).anchorsAtDraw).toBe(1);
    expect(guardOf(s).probeSet).toHaveLength(2);
  });
  it('not redrawn before the anchors double, redrawn when they do; forgotten on reset', async () => {
    const { s, ids } = await pools(3);
    const g = guardOf(s);
    await s.compact({ evict: ids.slice(0, 1), summary: summary(1, 1) });
    expect(g.anchorsAtDraw).toBe(3);
    let turn = ids.length;
    const add = async (k: number) => {
      const more = await s.appendMany(range(0, k).map((i) => ({ turn: ++turn, role: 'assistant', text: `The spare pool ${WORDS[turn % 12]} keeps ${200 + turn} workers busy.` })));
      return more;
    };
    await add(2);
    await s.compact({ evict: [ids[1]!], summary: summary(2, 2) });
    expect(g.anchorsAtDraw).toBe(3);
    await add(1);
    await s.compact({ evict: [ids[2]!], summary: summary(3, 3) });
    expect(g.anchorsAtDraw).toBe(6);
    g.resetProbes();
    expect(g.probeSet).toEqual([]);
    expect(g.anchorsAtDraw).toBe(0);
  });
  it('one pair per slice of the anchors, in order: the fact and its first perturbation the transcript never states', async () => {
    const { s, ids, anchorIds } = await pools(8, { hitRateProbes: 4 });
    await s.compact({ evict: ids.slice(0, 1), summary: summary(1, 1) });
    const set = guardOf(s).probeSet;
    expect(set).toHaveLength(8);
    for (let k = 0; k < 4; k++) {
      const fact = set[2 * k]!.query;
      const i = NAMES.findIndex((n) => fact.includes(n));
      expect([2 * k, 2 * k + 1]).toContain(i);
      expect(set[2 * k]).toEqual({ query: poolFact(i), positive: true, digits: null, raw: true, summary: false });
      expect(set[2 * k + 1]).toEqual({ query: perturb(poolFact(i), 0), positive: false, digits: [wrong(i)], raw: false, summary: false });
    }
    expect(anchorIds).toHaveLength(8);
  });
  it('facts under 8 chars, repeated facts and facts of no text make no pair; a perturbation stated elsewhere is passed over', async () => {
    const bravo53 = perturb(poolFact(1), 0);
    const { s, ids } = await pools(2, { hitRateProbes: 7 }, [
      { role: 'assistant', text: '47 ms' },
      { role: 'assistant', text: '47 ms ok' },
      { role: 'assistant', text: poolFact(0) },
      { role: 'user', text: 'ok\nyes', anchor: true },
      { role: 'assistant', text: bravo53 },
    ]);
    await s.compact({ evict: ids.slice(0, 1), summary: summary(1, 1) });
    const queries = guardOf(s).probeSet.map((p) => p.query);
    expect(queries).toEqual([poolFact(0), perturb(poolFact(0), 0), poolFact(1), perturb(poolFact(1), 1), '47 ms ok', perturb('47 ms ok', 0), bravo53, perturb(bravo53, 0)]);
  });
});

describe('guard monitor: a perturbation is never stated when no span states it, nor each of its value phrases', () => {
  it('weak, stated, near-true and never-stated perturbations', async () => {
    const { s } = await pools(2);
    const g = guardOf(s);
    expect(g.neverStated('table_id = 1')).toBe(false);
    expect(g.neverStated(poolFact(0))).toBe(false);
    expect(g.neverStated(perturb(poolFact(0), 0))).toBe(true);
    expect(g.neverStated('The alpha pool keeps 52 workers busy.')).toBe(false);
    expect(g.neverStated('The alpha pool keeps 52 workers busy and 99 threads idle.')).toBe(true);
  });
});

describe('guard monitor: the local probes are the anchors the summary speaks for — evicted, in its turn range, not in the session-wide set', () => {
  it('the evicted anchors of the range, each as its fact (a raw hit) and its perturbation', async () => {
    const { s, ids, anchorIds } = await pools(6);
    await s.compact({ evict: ids.slice(0, 10), summary: summary(1, 10) });
    const g = guardOf(s);
    const global = new Set(g.probeSet.map((p) => p.query));
    const expected = [0, 1, 2, 3, 4]
      .filter((i) => !global.has(poolFact(i)))
      .flatMap((i) => [
        { query: poolFact(i), positive: true, digits: null, raw: true, summary: false },
        { query: perturb(poolFact(i), 0), positive: false, digits: [wrong(i)], raw: false, summary: false },
      ]);
    expect(expected.length).toBeGreaterThanOrEqual(8);
    expect(g.localProbes(1, 10, new Set())).toEqual(expected);
    expect(g.localProbes(1, 9, new Set())).toEqual(expected.slice(0, -2));
    // Anchor 6 (turn 12) is in the window: spoken for only if this pass evicts it.
    expect(g.localProbes(11, 12, new Set())).toEqual([]);
    expect(g.localProbes(11, 12, new Set([anchorIds[5]!]))).toEqual([
      { query: poolFact(5), positive: true, digits: null, raw: true, summary: false },
      { query: perturb(poolFact(5), 0), positive: false, digits: [wrong(5)], raw: false, summary: false },
    ]);
  });
  it('an anchor whose fact is short or holds no distinctive value gives no pair', async () => {
    const { s, ids } = await pools(0, {}, [
      { role: 'assistant', text: '47 ms' },
      { role: 'user', text: 'We must never push to main' },
      { role: 'assistant', text: '47 ms ok' },
      // Digits, but a single bare one (2: every variant stays one digit): no distinctive value either.
      { role: 'user', text: 'We must never run 2 jobs' },
    ]);
    await s.compact({ evict: ids.slice(0, 4), summary: summary(1, 4) });
    const g = guardOf(s);
    const global = new Set(g.probeSet.map((p) => p.query));
    expect(g.localProbes(1, 4, new Set()).map((p) => p.query)).toEqual(global.has('47 ms ok') ? [] : ['47 ms ok', perturb('47 ms ok', 0)]);
  });
});

describe("guard monitor: the hit rate over the session-wide set and over the pass's own probes", () => {
  it('a summary that writes wrong values for the turns it replaces raises both, and the pass degrades naming both', async () => {
    const { s, ids } = await pools(6);
    const r = await guardOf(s).compact({ evict: ids.slice(0, 10), summary: summary(1, 10, [0, 1, 2, 3, 4].map((i) => poolLine(i, wrong(i))).join('\n')) } as never);
    expect(r.refused).toEqual([]);
    expect(r.spilled).toEqual([]);
    const [p] = eventsOf(s, 'pass');
    expect(p).toMatchObject({ hitRateBefore: 0.5, hitRateAfter: 1, localHitRateBefore: 0.5, localHitRateAfter: 1 });
    expect(eventsOf(s, 'degrade')).toEqual([
      {
        type: 'degrade',
        pass: 1,
        reason: 'hit-rate-rise',
        detail: 'hit rate rose from 0.500 to 1.000 over one pass (limit +15%); hit rate over the 8 probes of the turns this summary speaks for rose from 0.500 to 1.000 (limit +15%)',
        spanIds: [r.summaryId],
      },
    ]);
  });
  it('a faithful summary moves neither', async () => {
    const { s, ids } = await pools(6);
    await guardOf(s).compact({ evict: ids.slice(0, 10), summary: summary(1, 10, [0, 1, 2, 3, 4].map((i) => poolLine(i, NUMS[i]!)).join('\n')) } as never);
    expect(eventsOf(s, 'pass')[0]).toMatchObject({ hitRateBefore: 0.5, hitRateAfter: 0.5, localHitRateBefore: 0.5, localHitRateAfter: 0.5 });
    expect(eventsOf(s, 'degrade')).toEqual([]);
  });
  it('fewer than four local pairs are not judged on their own', async () => {
    // 40 queues, 16 of them in the session-wide set (one of the first two): the pass's own
    // pair moves the whole rate by less than 15%, and its own rate is not judged.
    const s = await Store.open(tmpDir(), { durability: 'none' });
    open.push(s);
    const queue = (i: number) => `The ${QUEUES[i]} queue keeps ${100 + 13 * i} workers busy.`;
    const ids = await s.appendMany([...QUEUES.map((_, i) => ({ role: 'assistant', text: queue(i) })), filler(0), filler(1)].map((t, i) => ({ ...t, turn: i + 1 })));
    const lines = [0, 1].map((i) => `${QUEUES[i]} queue: keeps ${/\d+/.exec(perturb(queue(i), 0))![0]} workers`);
    await guardOf(s).compact({ evict: ids.slice(0, 2), summary: summary(1, 2, lines.join('\n')) } as never);
    const [p] = eventsOf(s, 'pass');
    expect(p).toMatchObject({ localHitRateBefore: 0.5, localHitRateAfter: 1 });
    expect(p!.hitRateAfter as number).toBeGreaterThan(p!.hitRateBefore as number);
    expect(eventsOf(s, 'degrade')).toEqual([]);
  });
  it('no anchors, no rates', async () => {
    const { s, ids } = await pools(0);
    const r = await s.compact({ evict: ids.slice(0, 2), summary: summary(1, 2) });
    expect(eventsOf(s, 'pass')[0]).toMatchObject({ hitRateBefore: null, hitRateAfter: null, localHitRateBefore: null, localHitRateAfter: null });
    // The receipt says so too, and the monitor has no point for a pass it did not measure.
    expect(r).toMatchObject({ hitRateBefore: null, hitRateAfter: null });
    expect(s.hitRate.history).toEqual([]);
  });
  it('a perturbation a later turn states is a raw hit before the pass as much as after it', async () => {
    const { s, ids } = await pools(6);
    const g = guardOf(s);
    const first = await g.compact({ evict: ids.slice(0, 10), summary: summary(1, 10, [0, 1, 2, 3, 4].map((i) => poolLine(i, NUMS[i]!)).join('\n')) } as never);
    const global = new Set(g.probeSet.map((p) => p.query));
    const i = [0, 2, 3, 4].find((k) => !global.has(poolFact(k)))!;
    await s.appendMany([{ turn: ids.length + 1, role: 'assistant', text: perturb(poolFact(i), 0) }]);
    await g.compact({ evict: [first.summaryId], rewrite: [first.summaryId], summary: summary(1, 10, poolLine(i, wrong(i))) } as never);
    const local = g.localProbes(1, 10, new Set()).length;
    const all = local + g.probeSet.length;
    const second = eventsOf(s, 'pass')[1]!;
    expect(second.localHitRateBefore).toBeCloseTo((local / 2 + 1) / local, 12);
    expect(second.localHitRateAfter).toBeCloseTo((local / 2 + 1) / local, 12);
    expect(second.hitRateBefore).toBeCloseTo((all / 2 + 1) / all, 12);
    expect(second.hitRateAfter).toBeCloseTo((all / 2 + 1) / all, 12);
    expect(eventsOf(s, 'degrade')).toEqual([]);
  });
});

describe("guard monitor: a pass evicting raw spans bounds its local probes' range by their ids, checked by one turn at each edge", () => {
  const pair = (i: number) => [
    { query: poolFact(i), positive: true, digits: null, raw: true, summary: false },
    { query: perturb(poolFact(i), 0), positive: false, digits: [wrong(i)], raw: false, summary: false },
  ];
  /** Turns 1 filler; 2: pools 0 and 1, a filler; 3: pools 2 and 3; 4 to 7: fillers. */
  const shared = async () => {
    const s = await Store.open(tmpDir(), { durability: 'none', hitRateProbes: 1 });
    open.push(s);
    const turns = [
      { turn: 1, ...filler(0) },
      { turn: 2, role: 'assistant', text: poolFact(0) },
      { turn: 2, role: 'assistant', text: poolFact(1) },
      { turn: 2, ...filler(1) },
      { turn: 3, role: 'assistant', text: poolFact(2) },
      { turn: 3, role: 'assistant', text: poolFact(3) },
      ...[4, 5, 6, 7].map((turn, i) => ({ turn, ...filler(2 + i) })),
    ];
    const ids = await s.appendMany(turns);
    return { s, ids, g: guardOf(s) };
  };
  it('an anchor evicted earlier with the same first turn, before the first evicted id, is spoken for', async () => {
    const { s, ids, g } = await shared();
    await s.compact({ evict: [ids[1]!], summary: summary(2, 2) });
    g.resetProbes(); // no session-wide set: every anchor spoken for gives its pair
    const evict = [ids[2]!, ids[3]!];
    const local = g.localProbes(2, 2, new Set(evict), new Map(), evict);
    expect(local).toEqual([0, 1].flatMap(pair));
    expect(local).toEqual(g.localProbes(2, 2, new Set(evict)));
  });
  it('an anchor evicted earlier with the same last turn, past the last evicted id, is spoken for', async () => {
    const { s, ids, g } = await shared();
    await s.compact({ evict: [ids[5]!], summary: summary(3, 3) });
    g.resetProbes(); // no session-wide set: every anchor spoken for gives its pair
    const evict = [ids[4]!];
    const local = g.localProbes(3, 3, new Set(evict), new Map(), evict);
    expect(local).toEqual([2, 3].flatMap(pair));
    expect(local).toEqual(g.localProbes(3, 3, new Set(evict)));
  });
  it('bounded by ids, the range costs one turn read at each edge, not a bisection over every anchor', async () => {
    // 40 anchors, each after a filler: anchor k at turn 2k + 2.
    const many = async () => {
      const s = await Store.open(tmpDir(), { durability: 'none', hitRateProbes: 1 });
      open.push(s);
      const turns = QUEUES.flatMap((q, k) => [filler(k), { role: 'assistant', text: `The ${q} pool keeps ${20 + k} workers busy.` }]);
      const ids = await s.appendMany(turns.map((t, i) => ({ ...t, turn: i + 1 })));
      return { s, ids, g: guardOf(s) };
    };
    const reads = async (hinted: boolean) => {
      const { s, ids, g } = await many();
      // Anchors 20 and 21 (turns 42 and 44) and the filler between them.
      const evict = ids.slice(41, 44);
      const get = vi.spyOn(s.log, 'get');
      const local = g.localProbes(42, 44, new Set(evict), new Map(), hinted ? evict : undefined);
      expect(local.filter((p) => p.positive).map((p) => p.query)).toEqual([`The ${QUEUES[20]} pool keeps 40 workers busy.`, `The ${QUEUES[21]} pool keeps 41 workers busy.`]);
      return get.mock.calls.filter(([id]) => !evict.includes(id as number)).length;
    };
    expect(await reads(true)).toBe(2);
    expect(await reads(false)).toBeGreaterThan(4);
    // A pass before the first anchor: both bounds at index 0, from the one read of that anchor.
    const { s, ids, g } = await many();
    const get = vi.spyOn(s.log, 'get');
    expect(g.localProbes(1, 1, new Set([ids[0]!]), new Map(), [ids[0]!])).toEqual([]);
    expect(get.mock.calls.filter(([id]) => id !== ids[0]).length).toBe(1);
    // No raw id (a re-summary): the bounds hold only if one read shows every anchor outside.
    get.mockClear();
    expect(g.localProbes(1, 1, new Set(), new Map(), [])).toEqual([]);
    expect(g.localProbes(200, 300, new Set(), new Map(), [])).toEqual([]);
    expect(g.localProbes(42, 44, new Set(), new Map(), []).length).toBe(0);
  });
});

// ------------------------------------------------------------------ the guard's whole run
// Rules `npm run mutate:guard` (src/guard.ts whole, docs/MUTATION.md) found unchecked, one
// describe per rule. Its surviving mutants that no test can tell apart from the code, and why:
//
// - compact()'s `known !== undefined ? known : await probeDivergence(…)` forced false:
//   probeDivergence returns knownDivergence's answer whenever it has one (src/guard/anchors.ts),
//   so asking it again gives the same divergence after a wait; the shortcut is cost only.
// - compact()'s catch: `e.code !== CLOSED` / `!== READ_ONLY` forced true. Recording the refusal
//   on a closed or read-only store throws the same error (recordEvent asserts writable), with
//   the same code and message: skipping the attempt is a shortcut, not a rule. `e.details?.`
//   as `e.details.`: a SpanguardError always has details (default {}).
// - The local rates' null guards (`local.length === 0 ? null` forced false, and
//   `localBefore !== null && localAfter !== null` forced true or `||`): without a local probe
//   the rate is 0/0, NaN, which the event's JSON writes as null and which no comparison of
//   the local rule takes (it also needs `local.length >= 2 * MIN_LOCAL_PAIRS`, false then).
//   `total === 0 ? { rise: null }` as `{}`: `hr.rise` is then undefined, as falsy as null.
// - The check's shortcuts for a pass that re-summarizes nothing: `rewrite.length === 0 ? evict`
//   forced false (the set of ids checkIds found distinct is those ids), `covered`'s
//   `[...evict, ...rewrite]` taken always (rewrite is empty), `i < all.length` as `<=` (a
//   key `undefined` no id looks up), and the hull's `<` / `>` as `<=` / `>=` (an equal turn
//   is the same bound).
// - The monitor's pre-checks (`answers`): `digits.every` as `some`, and the `holdsRequired`
//   test forced false: each only rules a probe out before search's own rule (answersText)
//   is asked, and each requires no more than that rule does (test/guard/required-parts.test.ts:
//   every part and digit run they require is held by every answer), so answersText gives
//   the same answer at a cost.
// - localProbes: `out.length < 2 * LOCAL_PROBES` forced true or `<=` — the step n / LOCAL_PROBES
//   gives at most LOCAL_PROBES iterations of two probes each (checked for every n up to
//   200,000), so the cap never binds. `store.log.get(id)?.turnStart ?? -1`: an anchor is a
//   record of the append-only log, which never drops one while the store is open (same for
//   drawProbeSet's `if (!s) continue`).
// - `negative !== fact` (localProbes) and `candidate !== fact` (drawProbeSet) forced true:
//   perturb() always changes its input (a number shifted by at least 1, a letter by 1-25
//   places in its case, or a suffix appended), so the test is always true.
// - neverStated's `{ limit: 1 }` as `{}`: only whether a span exists is read; the limit is cost.
// - drawProbeSet: `if (anchors.length === 0) return` forced false (the slice loop breaks at
//   once: lo 0 >= length 0); `slice < want` as `<=` and `if (lo >= anchors.length) break`
//   forced false or `>` (each makes the other the loop's bound: for slice < want, lo < length
//   always, and slice = want gives lo = length); `Math.max(lo + 1, …)` as `lo - 1` (a slice
//   of width 0 or 1 picks lo either way: floor(rand × 1) is 0); `Math.min(anchors.length - 1,
//   …)` as `+ 1` (lo + floor(rand × (hi - lo)) < hi <= length already).
// - drawProbeSet's `attempt < 4` as `<= 4`: harmless — a fifth try in the same slice; the
//   number of tries is a cost bound, no rule of the verdict.

/** `n` anchors, one per turn: `The <colour> queue keeps <100 + 13i> workers busy.` */
const queueFact = (i: number) => `The ${QUEUES[i]} queue keeps ${100 + 13 * i} workers busy.`;
async function queues(n: number, options: SpanStoreOptions = {}, before: { role: string; text: string }[] = []) {
  const s = await Store.open(tmpDir(), { durability: 'none', hitRateProbes: 1, ...options });
  open.push(s);
  const turns = [...before, ...range(0, n).map((i) => ({ role: 'assistant', text: queueFact(i) }))];
  const ids = await s.appendMany(turns.map((t, i) => ({ ...t, turn: i + 1 })));
  return { s, ids, anchorIds: ids.slice(before.length) };
}

describe('guard: any other refusal is recorded with the span ids its error names, 64 at most', () => {
  it('an error naming 70 spans is recorded with the first 64', async () => {
    const { s, ids } = await pools(1);
    blindPhrase(s);
    const named = range(0, 70).map((i) => 500 + i);
    s.search = (async () => {
      throw new SpanguardError(ErrorCode.INVALID_ARGUMENT, 'the search refused', { spanIds: named });
    }) as never;
    await expect(s.compact({ evict: ids.slice(0, 2), summary: summary(1, 2) })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', message: 'the search refused' });
    expect(eventsOf(s, 'refusal')).toEqual([{ type: 'refusal', pass: 1, anchors: [], divergence: 0, reason: 'invalid-request', detail: 'INVALID_ARGUMENT: the search refused', spanIds: named.slice(0, 64) }]);
  });
});

describe('guard rule 4: a refusal names ten anchors in its message, every one in the error and the record', () => {
  it('twelve unverified anchors', async () => {
    const { s, ids } = await queues(12);
    blindPhrase(s);
    s.search = (async () => ({ miss: true, hits: [] })) as never;
    const err = await s.compact({ evict: ids, summary: summary(1, 12) }).catch((e) => e);
    expect(err).toBeInstanceOf(CompactionRefusedError);
    expect(err.message).toBe(`compaction refused: anchor span(s) ${ids.slice(0, 10).join(', ')} are not returned by the agent's retrieval for a probe of their own content`);
    expect(err.spanIds).toEqual(ids);
    expect(eventsOf(s, 'refusal')).toEqual([expect.objectContaining({ reason: 'anchor-not-retrievable', anchors: ids })]);
  });
  it('twelve diverged anchors: the largest divergence is the one reported', async () => {
    const { s, ids, anchorIds } = await queues(12, { maxDivergence: 0 }, [filler(0)]);
    const other = ids[0]!;
    blindPhrase(s);
    // Each probe returns its anchor, but a filler first: every anchor diverges.
    s.search = (async (q: string) => ({ miss: false, hits: [{ spanId: other, text: s.get(other)!.text }, { spanId: anchorIds[range(0, 12).findIndex((i) => queueFact(i) === q)]!, text: q }] })) as never;
    const err = await s.compact({ evict: ids, summary: summary(1, 13) }).catch((e) => e);
    expect(err).toBeInstanceOf(CompactionRefusedError);
    const [r] = eventsOf(s, 'refusal');
    expect(r).toMatchObject({ reason: 'divergence', anchors: anchorIds });
    const d = r!.divergence as number;
    const each = await Promise.all(range(0, 12).map(async (i) => 1 - dot(await s.embedQuery([queueFact(i), s.get(other)!.text]))));
    expect(d).toBeCloseTo(Math.max(...each), 6);
    expect(err.message).toBe(`compaction refused: for anchor span(s) ${anchorIds.slice(0, 10).join(', ')} the probe returned a span at divergence ${d.toFixed(3)} > maxDivergence 0`);
    expect(err.spanIds).toEqual(anchorIds);
  });
});

describe('guard monitor: a degrade names the rates that rose, and only those', () => {
  it('the session-wide rate alone', async () => {
    // Two anchors: one in the session-wide set, one local pair (fewer than four: not judged).
    const { s, ids } = await pools(2);
    const r = await s.compact({ evict: ids.slice(0, 4), summary: summary(1, 4, [0, 1].map((i) => poolLine(i, wrong(i))).join('\n')) });
    expect(eventsOf(s, 'pass')[0]).toMatchObject({ hitRateBefore: 0.5, hitRateAfter: 1, localHitRateBefore: 0.5, localHitRateAfter: 1 });
    expect(eventsOf(s, 'degrade')).toEqual([{ type: 'degrade', pass: 1, reason: 'hit-rate-rise', detail: 'hit rate rose from 0.500 to 1.000 over one pass (limit +15%)', spanIds: [r.summaryId] }]);
  });
});

describe('guard monitor: the local rate rises only by more than 15%; a rise of exactly 15% is within the limit', () => {
  it('20 local pairs, 3 of them answered by the summary: 0.500 to 0.575, no degrade', async () => {
    const { s, anchorIds } = await queues(24);
    await s.compact({ evict: [], summary: summary(0, 0, 'nothing yet') }); // draws the session-wide pair
    const drawn = guardOf(s).probeSet[0]!.query;
    const spoken = range(0, 24).filter((i) => queueFact(i) !== drawn).slice(0, 20);
    const lines = spoken.slice(0, 3).map((i) => `${QUEUES[i]} queue: keeps ${/\d+/.exec(perturb(queueFact(i), 0))![0]} workers`);
    const turns = spoken.map((i) => i + 1);
    await s.compact({ evict: spoken.map((i) => anchorIds[i]!), summary: summary(Math.min(...turns), Math.max(...turns), lines.join('\n')) });
    const p = eventsOf(s, 'pass')[1]!;
    expect(p.localHitRateBefore).toBe(0.5);
    expect(p.localHitRateAfter).toBe(23 / 40);
    expect(p.localHitRateAfter).toBe(0.5 * (1 + 0.15));
    expect(eventsOf(s, 'degrade')).toEqual([]);
  });
});

describe("guard monitor: a session-wide probe a later turn states counts on both sides of the whole rate, not in the pass's own", () => {
  it("the pass's own rate is unmoved", async () => {
    const { s, ids } = await pools(6);
    const g = guardOf(s);
    const first = await g.compact({ evict: ids.slice(0, 10), summary: summary(1, 10, [0, 1, 2, 3, 4].map((i) => poolLine(i, NUMS[i]!)).join('\n')) } as never);
    const i = range(0, 6).find((k) => g.probeSet[0]!.query === poolFact(k))!;
    expect(g.probeSet[1]!.query).toBe(perturb(poolFact(i), 0));
    await s.appendMany([{ turn: ids.length + 1, role: 'assistant', text: perturb(poolFact(i), 0) }]);
    await g.compact({ evict: [first.summaryId], rewrite: [first.summaryId], summary: summary(1, 10, poolLine(i, wrong(i))) } as never);
    const local = g.localProbes(1, 10, new Set()).length;
    const all = local + g.probeSet.length;
    expect(local).toBeGreaterThanOrEqual(8);
    const second = eventsOf(s, 'pass')[1]!;
    expect(second.localHitRateBefore).toBe(0.5);
    expect(second.localHitRateAfter).toBe(0.5);
    expect(second.hitRateBefore).toBeCloseTo((all / 2 + 1) / all, 12);
    expect(second.hitRateAfter).toBeCloseTo((all / 2 + 1) / all, 12);
  });
});

describe('guard monitor: a perturbation stated verbatim is never a never-stated probe, whatever its value phrases', () => {
  it('a stated perturbation with no value phrase', async () => {
    const stated = 'checksum   =    (4821)';
    expect(valuePhrases(stated)).toBeNull();
    const { s } = await pools(1, {}, [{ role: 'assistant', text: stated }]);
    expect(guardOf(s).neverStated(stated)).toBe(false);
    expect(guardOf(s).neverStated('checksum   =    (4822)')).toBe(true);
  });
});

describe("guard monitor: the session-wide draw is seeded by the anchors' count", () => {
  it('each slice gives the anchor prng(count × 2654435761) picks in it', async () => {
    const { s, ids } = await pools(8, { hitRateProbes: 2 });
    await s.compact({ evict: ids.slice(0, 1), summary: summary(1, 1) });
    const rand = prng(8 * 2654435761);
    const picks = [0, 4].map((lo) => lo + Math.floor(rand() * 4));
    expect(guardOf(s).probeSet.map((p) => p.query)).toEqual(picks.flatMap((i) => [poolFact(i), perturb(poolFact(i), 0)]));
  });
});

describe('guard monitor: an anchor gets eight perturbations to find a never-stated one', () => {
  it('a fact whose first eight perturbations are all stated makes no pair', async () => {
    const fact = 'The main pool keeps 537 workers busy.';
    const variants = range(0, 8).map((v) => perturb(fact, v));
    expect(new Set([...variants, perturb(fact, 8)]).size).toBe(9);
    const { s, ids } = await pools(0, { hitRateProbes: 16 }, [fact, ...variants].map((text) => ({ role: 'assistant', text })));
    await s.compact({ evict: ids.slice(0, 1), summary: summary(1, 1) });
    const queries = guardOf(s).probeSet.map((p) => p.query);
    expect(queries).toContain(variants[0]);
    expect(queries).not.toContain(fact);
  });
});

/** One anchor whose fact, cut from a line over 160 chars, starts and ends with a blank. */
const PADDED = `${'ab '.repeat(30)} the build took 4821 ms ${'cd '.repeat(40)}end`;

describe('guard monitor: an anchor fact is trimmed wherever a probe is made of it, so the session-wide and local sets agree', () => {
  it('the anchor in the session-wide set is no local probe: as evicted now, and as evicted earlier', async () => {
    const { s, ids } = await pools(0, {}, [{ role: 'assistant', text: PADDED }]);
    const fact = s.engine.anchorFactOf(ids[0]!, PADDED, ROLE_CODES.assistant!)!;
    expect(fact).not.toBe(fact.trim());
    const first = await s.compact({ evict: ids.slice(0, 2), summary: summary(1, 2) });
    expect(guardOf(s).probeSet[0]!.query).toBe(fact.trim());
    expect(eventsOf(s, 'pass')[0]).toMatchObject({ localHitRateBefore: null, localHitRateAfter: null });
    // A new guard (a reopened store) re-summarizing: the fact is read back from the log.
    (s as unknown as { guard: CompactionGuard }).guard = new CompactionGuard(s.engine);
    await s.compact({ evict: [first.summaryId], rewrite: [first.summaryId], summary: summary(1, 2) });
    expect(guardOf(s).probeSet[0]!.query).toBe(fact.trim());
    expect(eventsOf(s, 'pass')[1]).toMatchObject({ localHitRateBefore: null, localHitRateAfter: null });
  });
});

describe("guard monitor: an anchor's fact and turn are read once — the pass's own facts from rule 4, the rest cached", () => {
  it('a pass reads no evicted anchor from the log again', async () => {
    const { s, ids, anchorIds } = await pools(6);
    await s.compact({ evict: ids.slice(0, 1), summary: summary(1, 1) }); // draws the session-wide set
    const get = vi.spyOn(s.log, 'get');
    await s.compact({ evict: ids.slice(1, 10), summary: summary(2, 10) });
    const evictedAnchors = anchorIds.slice(0, 5);
    expect(get.mock.calls.filter(([id]) => evictedAnchors.includes(id as number))).toEqual([]);
  });
  it('asking for the same local probes again reads nothing from the log', async () => {
    const { s, ids } = await pools(6);
    await s.compact({ evict: ids.slice(0, 10), summary: summary(1, 10) });
    const g = guardOf(s);
    g.resetProbes();
    // The pass kept its anchors' turns and pairs: forgotten, the first ask reads them again.
    g.anchorTurns.clear();
    g.pairs.clear();
    const get = vi.spyOn(s.log, 'get');
    const once = g.localProbes(1, 10, new Set());
    expect(get).toHaveBeenCalled();
    get.mockClear();
    expect(g.localProbes(1, 10, new Set())).toEqual(once);
    expect(get).not.toHaveBeenCalled();
  });
});

// src/guard/probes.ts (`npm run mutate:anchors`): requiredParts reads quoted parts only from a
// query holding a backtick or a double quote. Its three survivors make that test always true
// (the condition forced true; either quote character as '', which every string includes):
// quotedParts then runs on every query and finds nothing in one without a quote character —
// the same parts, at a cost. test/guard/required-parts.test.ts checks the parts against
// quotedParts over random queries of every kind of quote (a test narrower than the pattern
// fails it).
describe('guard monitor: the new summary answers a probe exactly when search would take it as the one candidate', () => {
  it('a summary lacking a digit identifier the quoted statement names outside its quote still answers it', async () => {
    const stated = 'ran `npm run build` with 4822 errors';
    const { s, ids } = await pools(1, {}, [{ role: 'assistant', text: stated }]);
    const g = guardOf(s);
    const query = 'ran `npm run build` on node18 with 4822 errors';
    // Search's rule for one candidate: the quoted part held, nothing contradicted.
    expect(answersText(analyzeQuery(query), stated)).toBe(true);
    // The first pass draws the session-wide set (two anchors: the pool's and this turn's);
    // the probe joins it after, so no redraw replaces it.
    await s.compact({ evict: [ids[0]!], summary: summary(1, 1) });
    const probe: Probe = { query, positive: false, digits: requiredDigits(query, DEFAULT_MATCH_POLICY), raw: false, summary: false };
    g.probeSet.push(probe);
    await s.compact({ evict: [ids[2]!, ids[3]!], summary: summary(3, 4, stated) });
    expect(probe.summary).toBe(true);
  });
  it('what a probe is pre-checked for is held by every text search takes as its answer', () => {
    // Each text answers its query by search's rule without one of the query's digit runs: a
    // quoted statement's identifier outside the quote, a question's day, year or turn number.
    const cases: [string, string][] = [
      ['ran `npm run build` on node18 with 4822 errors', 'ran `npm run build` with 4822 errors'],
      ['the "proxy config v2" sets 40 workers', 'the "proxy config v2" sets 40 workers here'],
      // A quoted part held only case-folded: the quote's words in another case.
      ['the "Proxy Config v2" sets 40 workers', 'The proxy config v2 sets 40 workers'],
      ['ran `NPM RUN BUILD` with 4822 errors', 'Ran `npm run build` with 4822 errors.'],
      ['On day 12, which port did the proxy listen on?', 'The proxy listens on port 8080.'],
      ['Which port did the proxy listen on in 2023?', 'The proxy listens on port 8080.'],
      ['Did the proxy listen on port 8080 on day 3?', 'The proxy listens on port 8080.'],
      // And plain statements, whose every digit run an answer holds.
      ['The blue pool keeps 120 workers busy.', 'blue pool: keeps 120 workers'],
      ['The blue pool keeps 120 workers busy.', 'The blue pool keeps 120 workers busy.'],
    ];
    for (const [query, text] of cases) {
      expect(answersText(analyzeQuery(query), text), query).toBe(true);
      expect(holdsRequired(requiredParts(query, DEFAULT_MATCH_POLICY), text, text.toLowerCase()), query).toBe(true);
    }
    // A plain statement is still ruled out by its digits, a quoted one by its quoted parts,
    // before any analysis.
    expect(requiredParts('The blue pool keeps 120 workers busy for 3 days.', DEFAULT_MATCH_POLICY)).toEqual({ numbers: ['120', '3'], quoted: [] });
    expect(requiredParts('ran `npm run build` on node18 with 4822 errors', DEFAULT_MATCH_POLICY)).toEqual({ numbers: [], quoted: ['npm run build'] });
    expect(requiredParts('The blue pool keeps 120 workers busy.', { ...DEFAULT_MATCH_POLICY, minValueCoverage: 0.5 })).toEqual({ numbers: [], quoted: [] });
    expect(requiredParts('The blue pool keeps its workers busy.', DEFAULT_MATCH_POLICY)).toEqual({ numbers: [], quoted: [] });
    expect(answersText(analyzeQuery('ran `npm run build` with 4822 errors'), 'ran npm run test with 4822 errors')).toBe(false);
    expect(holdsRequired(requiredParts('ran `npm run build` with 4822 errors', DEFAULT_MATCH_POLICY), 'ran npm run test with 4822 errors', 'ran npm run test with 4822 errors')).toBe(false);
  });
});

describe('guard: a pass writes its summary and its event in one append, and changes nothing before they are in the log', () => {
  const summaries = (s: Store) => Array.from(s.log.scanIds(s.log.firstId(), s.log.nextId() - s.log.firstId(), 1 << RecordKind.summary, 0));
  it('an append that fails writes neither and leaves no trace in the monitor: the same pass again still finds the rise', async () => {
    const { s, ids } = await pools(6);
    const g = guardOf(s);
    const wrongValues = summary(1, 10, [0, 1, 2, 3, 4].map((i) => poolLine(i, wrong(i))).join('\n'));
    const real = s.log.append.bind(s.log);
    // The first append that carries an event record fails (a full disk).
    let failed = 0;
    const append = vi.spyOn(s.log, 'append').mockImplementation((cols) => {
      if (failed === 0 && Array.from((cols as { kinds: Uint8Array }).kinds).includes(RecordKind.event)) {
        failed++;
        return Promise.reject(new Error('no space left on device'));
      }
      return real(cols);
    });
    const next = s.log.nextId();
    await expect(g.compact({ evict: ids.slice(0, 10), summary: wrongValues } as never)).rejects.toThrow(/no space left/);
    expect(failed).toBe(1);
    expect(s.log.nextId()).toBe(next);
    expect(summaries(s)).toEqual([]);
    expect(eventsOf(s, 'pass')).toEqual([]);
    expect(g.probeSet.filter((p) => p.summary || p.raw !== p.positive)).toEqual([]);
    expect(s.hitRate.history).toEqual([]);
    append.mockRestore();
    const r = await g.compact({ evict: ids.slice(0, 10), summary: wrongValues } as never);
    // One record for the summary, the next for its event, which names it.
    expect(summaries(s)).toEqual([r.summaryId]);
    expect(r.eventId).toBe(r.summaryId + 1);
    expect(s.log.get(r.eventId)!.kind).toBe(RecordKind.event);
    expect(eventsOf(s, 'pass')).toMatchObject([{ summaryId: r.summaryId, hitRateBefore: 0.5, hitRateAfter: 1 }]);
    expect(eventsOf(s, 'degrade')).toMatchObject([{ reason: 'hit-rate-rise', spanIds: [r.summaryId] }]);
  });
  it("the summary takes the id its event names, or nothing is written", async () => {
    const { s } = await pools(1);
    const next = s.log.nextId();
    const e = await s.appendSummary('x', 1, 1, 0, { summaryId: next + 1, text: '{}' }).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(SpanguardError);
    expect((e as SpanguardError).code).toBe(ErrorCode.INVALID_ARGUMENT);
    expect(s.log.nextId()).toBe(next);
  });
});

describe('guard: the summary covers the hull of what it replaces, however the ids are named', () => {
  it('evicted ids named newest first: the hull is still the first turn to the last', async () => {
    const { s, ids } = await pools(2);
    const r = await s.compact({ evict: [ids[3]!, ids[2]!, ids[0]!, ids[1]!], summary: summary(1, 4) });
    expect(r.evicted.sort((a, b) => a - b)).toEqual(ids.slice(0, 4));
    await expect(s.compact({ evict: [ids[6]!, ids[5]!, ids[4]!], summary: summary(6, 7) })).rejects.toMatchObject({ code: ErrorCode.SUMMARY_RANGE });
  });
  it('a summary rewritten without being evicted is replaced too: the new summary covers its turns', async () => {
    const { s, ids } = await pools(2);
    const first = await s.compact({ evict: ids.slice(0, 2), summary: summary(1, 2) });
    // Rewriting the first summary and evicting turns 3-4: the new summary covers 1-4.
    await expect(s.compact({ evict: ids.slice(2, 4), rewrite: [first.summaryId], summary: summary(3, 4) })).rejects.toMatchObject({ code: ErrorCode.SUMMARY_RANGE });
    const r = await s.compact({ evict: ids.slice(2, 4), rewrite: [first.summaryId], summary: summary(1, 4) });
    expect(r.superseded).toEqual([first.summaryId]);
  });
});

describe('guard monitor: a session-wide perturbation a later turn states stays a raw hit once a summary restates it', () => {
  it('kept on the probe: the next pass, whose summary says nothing of it, still counts it a hit', async () => {
    const { s, ids } = await pools(6);
    const g = guardOf(s);
    const first = await g.compact({ evict: ids.slice(0, 1), summary: summary(1, 1) } as never);
    const negative = g.probeSet.find((p) => !p.positive)!;
    const i = NAMES.findIndex((_, k) => perturb(poolFact(k), 0) === negative.query);
    expect(i).toBeGreaterThanOrEqual(0);
    // A later turn states the perturbation: it is true now, and a summary restating it restates a turn.
    await s.appendMany([{ turn: ids.length + 1, role: 'assistant', text: negative.query }]);
    await g.compact({ evict: [first.summaryId], rewrite: [first.summaryId], summary: summary(1, 1, poolLine(i, wrong(i))) } as never);
    expect(negative).toMatchObject({ raw: true, summary: false });
    const all = g.probeSet.length;
    // A filler's turn: no local probe, the session-wide set alone.
    const third = await g.compact({ evict: ids.slice(2, 3), summary: summary(3, 3) } as never);
    expect(third.hitRateBefore).toBeCloseTo((all / 2 + 1) / all, 12);
    expect(third.hitRateAfter).toBe(third.hitRateBefore);
  });
});
