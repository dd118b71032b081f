// The compaction guard's rules, one describe per rule, on a small real store.
import { afterEach, describe, expect, it } from 'vitest';
import { CompactionRefusedError, LosslessRetrievalBoundaryError, SpanStore, type SpanStoreOptions } from '../../src/index.js';
import { realTurns, tmpDir } from '../helpers/data.js';

const open: SpanStore[] = [];
afterEach(async () => {
  while (open.length) await open.pop()!.close();
});

const FACT = 'The upstream API enforces a rate limit of 40 req/s per token.';

/** 300 real turns with the rate-limit fact at turn 150. */
async function session(options: SpanStoreOptions = {}, dir = tmpDir()) {
  const s = await SpanStore.open(dir, { durability: 'none', ...options });
  open.push(s);
  const turns = realTurns(300).map((t) => (t.turn === 150 ? { ...t, role: 'user', text: FACT } : t));
  const ids = await s.appendMany(turns.map((t) => ({ turn: t.turn, role: t.role, text: t.text })));
  return { s, ids, dir, factId: ids[149]! };
}

const summary = (a: number, b: number, text = `summary of turns ${a}-${b}`) => ({ text, turnStart: a, turnEnd: b });

/** The vector index with its search answering nothing: the agent's path loses what BM25 and phrases lost too. */
const blindVectors = (v: SpanStore['vector']): SpanStore['vector'] =>
  new Proxy(v, {
    get(target, prop) {
      // search, its pool form (what hybrid search calls), and the begin/end pair.
      if (prop === 'search' || prop === 'searchEnd') return () => ({ ids: new Float64Array(0), distances: new Float32Array(0) });
      if (prop === 'searchAsync') return async () => ({ ids: new Float64Array(0), distances: new Float32Array(0) });
      if (prop === 'searchBegin') return () => undefined;
      const value = Reflect.get(target, prop) as unknown;
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });

describe('rule 1: raw entries are immutable and keyed by span id', () => {
  it('a pass that names a raw span in rewrite throws, is recorded, and degrades the verdict', async () => {
    const { s, ids } = await session();
    const err = await s.compact({ evict: ids.slice(0, 10), rewrite: [ids[3]!], summary: summary(1, 10) }).catch((e) => e);
    expect(err).toBeInstanceOf(LosslessRetrievalBoundaryError);
    expect(err.code).toBe('LOSSLESS_BOUNDARY');
    expect(err.spanIds).toEqual([ids[3]]);
    const v = s.verdict();
    expect(v.state).toBe('degraded');
    expect(v.evidence.some((e) => e.type === 'boundary' && e.spanIds.includes(ids[3]!))).toBe(true);
    expect(s.get(ids[3]!)!.text).toBe(realTurns(4)[3]!.text); // untouched
    // Nothing was evicted by the halted pass.
    expect(s.stats().evicted).toBe(0);
  });
});

describe('rule 2: eviction set ⊆ retention set, checked by id on every pass', () => {
  it('unknown ids are refused with the ids named', async () => {
    const { s, ids } = await session();
    const bogus = ids[ids.length - 1]! + 1000;
    await expect(s.compact({ evict: [ids[0]!, bogus], summary: summary(1, 1) })).rejects.toMatchObject({ code: 'LOSSLESS_BOUNDARY', spanIds: [bogus] });
  });
  it('ids already out of the window are refused', async () => {
    const { s, ids } = await session();
    await s.compact({ evict: ids.slice(0, 5), summary: summary(1, 5) });
    await expect(s.compact({ evict: [ids[2]!], summary: summary(3, 3) })).rejects.toThrow(/already out of the window/);
  });
  it('malformed requests are typed errors', async () => {
    const { s, ids } = await session();
    await expect(s.compact({ evict: 'x' as never, summary: summary(1, 1) })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(s.compact({ evict: [ids[0]!, ids[0]!], summary: summary(1, 1) })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(s.compact({ evict: [ids[0]!], summary: summary(5, 1) })).rejects.toMatchObject({ code: 'INVALID_TURN' });
  });
});

describe('rule 3: re-summarization adds a summary and supersedes; raw spans are never touched', () => {
  it('a value in a twice-re-summarized range still comes back raw and verbatim', async () => {
    const { s, ids, factId } = await session();
    const r1 = await s.compact({ evict: ids.slice(99, 199), summary: summary(100, 199, 'work on the API client') });
    const r2 = await s.compact({ evict: ids.slice(199, 250), summary: summary(200, 250, 'more client work') });
    const r3 = await s.compact({ evict: [r1.summaryId, r2.summaryId], rewrite: [r1.summaryId, r2.summaryId], summary: summary(100, 250, 'client work, coarse') });
    expect(r3.superseded).toEqual([r1.summaryId, r2.summaryId]);
    const r4 = await s.compact({ evict: [r3.summaryId], rewrite: [r3.summaryId], summary: summary(100, 250, 'everything, coarser') });
    expect(r4.superseded).toEqual([r3.summaryId]);
    const found = await s.search('rate limit req/s upstream API', { kinds: ['raw', 'summary'] });
    expect(found.miss).toBe(false);
    expect(found.hits[0]).toMatchObject({ spanId: factId, kind: 'raw', turnStart: 150, turnEnd: 150, text: FACT });
    // Superseded summaries stay in the log.
    expect(s.get(r1.summaryId)!.kind).toBe('summary');
    // Rewriting an already superseded summary is refused.
    await expect(s.compact({ evict: [], rewrite: [r1.summaryId], summary: summary(1, 2) })).rejects.toThrow(/already superseded/);
  });
});

describe('rule 4: anchors leave only when a probe from their own content returns them', () => {
  it('an indexed anchor passes its probe, divergence 0', async () => {
    const { s, ids, factId } = await session();
    expect(s.get(factId)!.anchor).toBe(true);
    const r = await s.compact({ evict: ids.slice(140, 160), summary: summary(141, 160) });
    expect(r.evicted).toContain(factId);
    expect(r.anchorsChecked).toBeGreaterThan(0);
    expect(r.divergence).toBe(0);
  });
  it('an anchor the index cannot return is refused (refuse) or kept in the window (spill)', async () => {
    for (const policy of ['refuse', 'spill'] as const) {
      const { s, ids, factId } = await session({ policy });
      // Break the pre-compaction index on purpose: swap in a lexical index that covers the
      // same ids but was built from other text, so no probe of the anchor can return it.
      const other = await SpanStore.open(tmpDir(), { durability: 'none' });
      open.push(other);
      await other.appendMany(Array.from({ length: 300 }, (_, i) => ({ turn: i + 1, role: 'user', text: `unrelated filler ${i}` })));
      s.lexical = other.lexical;
      s.vector = blindVectors(s.vector);
      const req = { evict: ids.slice(140, 160), summary: summary(141, 160) };
      if (policy === 'refuse') {
        const err = await s.compact(req).catch((e) => e);
        expect(err).toBeInstanceOf(CompactionRefusedError);
        expect(err.spanIds).toContain(factId);
        expect(s.stats().evicted).toBe(0);
      } else {
        const r = await s.compact(req);
        expect(r.spilled).toContain(factId);
        expect(r.evicted).not.toContain(factId);
      }
    }
  });
});

describe('rule 5: the rehydration index is never rebuilt from post-compaction text', () => {
  it('summaries live in their own namespace and say so', async () => {
    const { s, ids } = await session();
    const r = await s.compact({ evict: ids.slice(0, 20), summary: summary(1, 20, 'zebra quartz summary-only-token') });
    const rawOnly = await s.search('zebra quartz summary-only-token');
    expect(rawOnly.miss).toBe(true);
    const both = await s.search('zebra quartz summary-only-token', { kinds: ['raw', 'summary'] });
    expect(both.hits[0]).toMatchObject({ spanId: r.summaryId, kind: 'summary' });
  });
});

describe('rule 6: audits check pinned facts verbatim; the scheduler runs them', () => {
  it('a pinned fact passes; a fact that is not verbatim in its span fails and degrades', async () => {
    const { s, factId, ids } = await session();
    await s.pin('40 req/s', factId);
    const ok = await s.audit();
    expect(ok.passed).toBe(true);
    expect(s.verdict().state).toBe('lossless');
    // A pin its span does not state is refused now; one recorded by an earlier version
    // (the event itself, as it sits in an old log) still fails the audit.
    await expect(s.pin('41 req/s', factId)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await s.recordEvent({ type: 'pin', fact: '41 req/s', spanId: factId, auto: false });
    const bad = await s.audit();
    expect(bad.passed).toBe(false);
    expect(bad.failures[0]).toMatchObject({ spanId: factId, why: 'fact not verbatim in the span' });
    expect(s.verdict().state).toBe('degraded');
    await expect(s.pin('x', ids[ids.length - 1]! + 99)).rejects.toMatchObject({ code: 'UNKNOWN_SPAN' });
  });
  it('a fact that is verbatim in its span but that the index does not return fails', async () => {
    const { s, factId } = await session();
    await s.pin('rate limit of 40 req/s', factId);
    expect((await s.audit()).passed).toBe(true);
    // The same ids indexed from other text: the log still holds the fact, the index does not.
    const other = await SpanStore.open(tmpDir(), { durability: 'none' });
    open.push(other);
    await other.appendMany(Array.from({ length: 300 }, (_, i) => ({ turn: i + 1, role: 'user', text: `unrelated filler ${i}` })));
    s.lexical = other.lexical;
    s.vector = blindVectors(s.vector);
    const bad = await s.audit();
    expect(bad.passed).toBe(false);
    expect(bad.failures).toContainEqual(expect.objectContaining({ spanId: factId, why: 'retrieval did not return the span' }));
    expect(s.verdict().state).toBe('degraded');
  });
  it('audits run every auditEvery passes and sample evicted spans', async () => {
    const { s, ids } = await session({ auditEvery: 3 });
    for (let i = 0; i < 6; i++) await s.compact({ evict: ids.slice(i * 10, i * 10 + 10), summary: summary(i * 10 + 1, i * 10 + 10) });
    const audits = s.events().filter((e) => e.event.type === 'audit');
    // The first at the first eviction (pass 1), then at passes 3 and 6.
    expect(audits.map((a) => (a.event.type === 'audit' ? a.event.pass : -1))).toEqual([1, 3, 6]);
    expect(audits.every((a) => a.event.type === 'audit' && a.event.passed && a.event.sampledEvicted > 0)).toBe(true);
  });
});

describe('rule 7: verdict — unknown after N passes without an audit; degraded flags every result', () => {
  it('51 passes without an audit give unknown; an audit brings back lossless', async () => {
    const { s, ids } = await session({ auditEvery: 500, unknownAfter: 50, hitRateProbes: 1 });
    // Pass 1 evicts, so it runs the first audit itself; 51 passes later the verdict is unknown.
    for (let i = 0; i < 52; i++) await s.compact({ evict: [ids[i]!], summary: summary(i + 1, i + 1) });
    expect(s.verdict()).toMatchObject({ state: 'unknown', compactionsSinceAudit: 51 });
    const r = await s.search('rate limit req/s');
    expect(r.trustExactRecall).toBe(false);
    expect(r.hits.every((h) => h.trustExactRecall === false)).toBe(true);
    await s.audit();
    expect(s.verdict().state).toBe('lossless');
  });
  it('an expect-raw retrieval that resolves only to a summary degrades', async () => {
    const { s, ids } = await session();
    await s.compact({ evict: ids.slice(0, 5), summary: summary(1, 5, 'zebra quartz summary-only-token') });
    const r = await s.search('zebra quartz summary-only-token', { kinds: ['raw', 'summary'], expect: 'raw' });
    expect(r.miss).toBe(true);
    expect(r.trustExactRecall).toBe(false);
    expect(s.verdict().state).toBe('degraded');
  });
});

type ProbeView = { query: string; positive: boolean; raw: boolean; summary: boolean };
const probesOf = (s: SpanStore) => (s as unknown as { guard: { probeSet: ProbeView[] } }).guard.probeSet;

describe('rule 7: a hit-rate rise of more than 15% over one pass degrades', () => {
  it('a summary stating a never-stated value makes its probe hit, and the verdict turns degraded', async () => {
    const { s, ids } = await session({ hitRateProbes: 1 });
    const first = await s.compact({ evict: ids.slice(0, 5), summary: summary(1, 5) });
    expect(first.hitRateAfter).toBe(first.hitRateBefore);
    const negative = probesOf(s).find((p) => !p.positive)!;
    expect((await s.search(negative.query, { kinds: ['raw', 'summary'] })).hits).toHaveLength(0);
    // A summarizer that invents the perturbed value: the seed's plausible wrong neighbour.
    const bad = await s.compact({ evict: ids.slice(5, 10), summary: summary(6, 10, `Summary: ${negative.query}`) });
    expect(bad.hitRateAfter!).toBeGreaterThan(bad.hitRateBefore! * 1.15);
    const v = s.verdict();
    expect(v.state).toBe('degraded');
    expect(v.reasons.join(' ')).toMatch(/hit-rate-rise|hit rate rose/);
  });
  it('the monitor counts a probe as hit exactly when search over raw and summaries answers it', async () => {
    const { s, ids } = await session({ hitRateProbes: 4 });
    for (let i = 0; i < 20; i++) {
      const out = ids.slice(10 * i, 10 * i + 10).map((id) => s.get(id)!.text.split('\n')[0]!);
      await s.compact({ evict: ids.slice(10 * i, 10 * i + 10), summary: summary(10 * i + 1, 10 * i + 10, out.join('\n')) });
    }
    const probes = probesOf(s);
    expect(probes.length).toBeGreaterThanOrEqual(4);
    for (const p of probes) {
      const r = await s.search(p.query, { k: 1, kinds: ['raw', 'summary'] });
      expect(p.raw || p.summary, p.query).toBe(r.hits.length > 0);
    }
  });
  it('every receipt says where the pass spent its time', async () => {
    const { s, ids } = await session();
    const r = await s.compact({ evict: ids.slice(0, 10), summary: summary(1, 10) });
    for (const phase of ['check', 'anchors', 'monitor', 'record', 'summary'] as const) expect(r.timing[phase]).toBeGreaterThanOrEqual(0);
    expect(r.timing.summary).toBeGreaterThan(0);
  });
});

describe('rule 9: every decision is an event; the verdict survives a restart', () => {
  it('close and reopen gives the same verdict, reasons and evidence', async () => {
    const { s, ids, dir } = await session();
    await s.compact({ evict: ids.slice(0, 10), summary: summary(1, 10) });
    await s.compact({ evict: ids.slice(10, 20), rewrite: [ids[12]!], summary: summary(11, 20) }).catch(() => {});
    const before = s.verdict();
    const types = s.events().map((e) => e.event.type);
    expect(types).toEqual(expect.arrayContaining(['pass', 'boundary', 'verdict']));
    await s.close();
    open.pop();
    const r = await SpanStore.open(dir, { durability: 'none' });
    open.push(r);
    expect(r.verdict()).toEqual(before);
    // After a repair and a passing audit the verdict returns to lossless, recorded.
    const rep = await r.repair();
    expect(rep.audit.passed).toBe(true);
    expect(r.verdict().state).toBe('lossless');
    expect(r.events().some((e) => e.event.type === 'repair')).toBe(true);
  });
});
