// The guard does not trust caller data: summary ranges, anchor flags, refusals recorded,
// divergence bounded, and the agent's recall checked against summaries.
import { describe, expect, it } from 'vitest';
import { CompactionRefusedError, LosslessRetrievalBoundaryError, SpanStore } from '../../src/index.js';
import { ContextWindow } from '../../src/window.js';
import { judgeAnchors } from '../../src/guard.js';
import { tmpDir } from '../helpers/data.js';
import { FACT, factSession as session, open } from './helpers.js';

const refusals = (s: SpanStore) => s.events().flatMap((e) => (e.event.type === 'refusal' ? [e.event] : []));

describe("a summary's turn range must be the range of what it replaces", () => {
  it('a summary claiming turns 9000–9999 for evicted turns 1–10 is refused, recorded, nothing evicted', async () => {
    const { s, ids } = await session();
    const err = await s.compact({ evict: ids.slice(0, 10), summary: { text: 'x', turnStart: 9000, turnEnd: 9999 } }).catch((e) => e);
    expect(err).toMatchObject({ code: 'SUMMARY_RANGE' });
    expect(s.stats().evicted).toBe(0);
    expect(refusals(s)).toEqual([expect.objectContaining({ reason: 'summary-range' })]);
  });
  it('the exact range is accepted', async () => {
    const { s, ids } = await session();
    const r = await s.compact({ evict: ids.slice(0, 10), summary: { text: 'x', turnStart: 1, turnEnd: 10 } });
    expect(r.evicted).toHaveLength(10);
  });
});

describe('every refusal is an event', () => {
  it('an unknown id is refused as a boundary error and recorded', async () => {
    const { s } = await session();
    const err = await s.compact({ evict: [999_999], summary: { text: 'x', turnStart: 1, turnEnd: 1 } }).catch((e) => e);
    expect(err).toBeInstanceOf(LosslessRetrievalBoundaryError);
    expect(refusals(s)).toEqual([expect.objectContaining({ reason: 'invalid-request', spanIds: [999_999] })]);
  });
  it('an invalid request (a span evicted twice) is refused and recorded', async () => {
    const { s, ids } = await session();
    await s.compact({ evict: ids.slice(0, 2), summary: { text: 'x', turnStart: 1, turnEnd: 2 } });
    const err = await s.compact({ evict: [ids[0]!], summary: { text: 'y', turnStart: 1, turnEnd: 1 } }).catch((e) => e);
    expect(err).toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect(refusals(s)).toEqual([expect.objectContaining({ reason: 'invalid-request', spanIds: [ids[0]] })]);
  });
  it('an anchor refusal records the anchors and the reason', async () => {
    const { s, ids, factId } = await session();
    // Indexes that cover the same ids but were built from other text: no probe returns the anchor.
    const other = await SpanStore.open(tmpDir(), { durability: 'none' });
    open.push(other);
    await other.appendMany(Array.from({ length: 300 }, (_, i) => ({ turn: i + 1, role: 'user', text: `unrelated filler ${i}` })));
    s.lexical = other.lexical;
    s.vector = new Proxy(s.vector, {
      get: (t, p) => (p === 'search' || p === 'searchEnd' ? () => ({ ids: new Float64Array(0), distances: new Float32Array(0) }) : p === 'searchAsync' ? async () => ({ ids: new Float64Array(0), distances: new Float32Array(0) }) : p === 'searchBegin' ? () => undefined : typeof Reflect.get(t, p) === 'function' ? (Reflect.get(t, p) as () => unknown).bind(t) : Reflect.get(t, p)),
    });
    const err = await s.compact({ evict: ids.slice(95, 105), summary: { text: 'x', turnStart: 96, turnEnd: 105 } }).catch((e) => e);
    expect(err).toBeInstanceOf(CompactionRefusedError);
    expect(refusals(s).at(-1)).toMatchObject({ reason: 'anchor-not-retrievable' });
    expect(refusals(s).at(-1)!.anchors).toContain(factId);
  });
});

describe('anchors are detected over the whole text, whatever the host says', () => {
  it('a constraint after 70 KiB of output is an anchor', async () => {
    const s = await SpanStore.open(tmpDir(), { durability: 'none' });
    open.push(s);
    const id = await s.append({ turn: 1, role: 'tool', text: `${'log line without values\n'.repeat(3000)}${FACT}` });
    expect(s.get(id)!.anchor).toBe(true);
  });
  it('anchor: false on a detected anchor is overridden, recorded, and shown in the verdict', async () => {
    const s = await SpanStore.open(tmpDir(), { durability: 'none' });
    open.push(s);
    const id = await s.append({ turn: 1, role: 'user', text: FACT, anchor: false });
    expect(s.get(id)!.anchor).toBe(true);
    expect(s.events().some((e) => e.event.type === 'anchor-veto' && e.event.spanIds.includes(id))).toBe(true);
    expect(s.verdict().reasons.join(' ')).toMatch(/anchor: false that detection flags/);
  });
  it('a host may add an anchor detection would not flag', async () => {
    const s = await SpanStore.open(tmpDir(), { durability: 'none' });
    open.push(s);
    const id = await s.append({ turn: 1, role: 'assistant', text: 'ok', anchor: true });
    expect(s.get(id)!.anchor).toBe(true);
  });
});

describe('divergence is bounded by maxDivergence', () => {
  it('an anchor whose probe returned a span farther than maxDivergence is refused', () => {
    const r = judgeAnchors(
      [
        { id: 1, found: true, divergence: 0 },
        { id: 2, found: true, divergence: 0.3 },
        { id: 3, found: false, divergence: null },
      ],
      0.2,
    );
    expect(r).toEqual({ unverified: [3], diverged: [2], divergence: 0.3 });
    expect(judgeAnchors([{ id: 2, found: true, divergence: 0.3 }], 0.5).diverged).toEqual([]);
    expect(judgeAnchors([{ id: 2, found: true, divergence: 0.2 }], 0.2).diverged).toEqual([]);
  });
  it('maxDivergence is validated', async () => {
    await expect(SpanStore.open(tmpDir(), { maxDivergence: -0.1 })).rejects.toMatchObject({ code: 'INVALID_OPTIONS' });
    await expect(SpanStore.open(tmpDir(), { maxDivergence: Number.NaN })).rejects.toMatchObject({ code: 'INVALID_OPTIONS' });
  });
});

describe("ContextWindow.recall searches summaries too: only a summary answering degrades", () => {
  it('a query only a summary answers comes back not-in-transcript and the verdict turns degraded', async () => {
    const { s, ids } = await session();
    await s.compact({ evict: ids.slice(0, 5), summary: { text: 'zebra quartz summary-only-token', turnStart: 1, turnEnd: 5 } });
    const w = new ContextWindow(s, { budgetTokens: 1_000_000 });
    const r = await w.recall('zebra quartz summary-only-token');
    expect(r.status).toBe('not-in-transcript');
    expect(s.verdict().state).toBe('degraded');
    expect(s.verdict().reasons.join(' ')).toMatch(/expected-raw-got-summary/);
  });
});
