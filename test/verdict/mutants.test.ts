// Rules of the verdict (src/verdict.ts) that test/verdict/verdict.test.ts leaves unchecked: found by
// `npm run mutate` (docs/MUTATION.md). One describe per rule; pure functions of the event trail.
import { describe, expect, it } from 'vitest';
import { HitRateMonitor, VerdictMonitor } from '../../src/verdict.js';
import type { GuardEvent } from '../../src/events.js';
import { prng } from '../../src/prng.js';

const cfg = { unknownAfter: 50, auditEvery: 50, bestEffort: false };
const pass = (n: number, evicted: [number, number][] = [[n, n]]): GuardEvent => ({
  type: 'pass', pass: n, evicted, evictedSummaries: [], spilled: [], superseded: [], summaryId: 1000 + n,
  turnStart: n, turnEnd: n, anchorsChecked: 0, divergence: 0, hitRateBefore: null, hitRateAfter: null,
});
const audit = (n: number, passed: boolean, checkedEvicted = 1, checked = 3, failures = passed ? [] : [{ fact: 'x', spanId: 7, why: 'fact not verbatim in the span' }]): GuardEvent => ({
  type: 'audit', pass: n, checked, passed, failures, sampledEvicted: 1, checkedEvicted,
});
const boundary = (reason: 'rewrite-raw' | 'evict-unretained', spanIds: number[]): GuardEvent => ({ type: 'boundary', pass: 2, reason, spanIds });
const monitor = (events: GuardEvent[], config = cfg) => {
  const m = new VerdictMonitor(config);
  events.forEach((e, i) => m.apply(i + 1, e));
  return m;
};
const reasons = (m: VerdictMonitor) => m.verdict().reasons.join('\n');

describe('an eviction is a pass that evicted raw spans: the first one starts the need for an audit', () => {
  it('a fresh store needs no audit, is not best-effort, and says only that nothing was evicted', () => {
    const m = new VerdictMonitor(cfg);
    expect(m.needsFirstAudit).toBe(false);
    const v = m.verdict();
    expect(v).toMatchObject({ state: 'lossless', bestEffort: false, evidence: [], passes: 0, compactionsSinceAudit: 0 });
    expect(v.reasons).toEqual(['nothing has been evicted: every turn is still in the window or the log']);
  });
  it('a pass that evicted no raw span (a re-summary) leaves the store lossless with nothing to vouch for', () => {
    const m = monitor([pass(1, []), pass(2, [])]);
    expect(m.needsFirstAudit).toBe(false);
    expect(m.verdict()).toMatchObject({ state: 'lossless', passes: 2 });
    expect(reasons(m)).toMatch(/nothing has been evicted/);
  });
  it('the reason names the first evicting pass, not a later one', () => {
    const m = monitor([pass(1, []), pass(2), pass(3), pass(4)]);
    expect(m.verdict().state).toBe('unknown');
    expect(reasons(m)).toMatch(/first at pass 2\)/);
  });
  it('the pass count is the highest pass seen, whatever the order events are replayed in', () => {
    const m = monitor([pass(3), pass(1)]);
    expect(m.verdict().passes).toBe(3);
    expect(m.compactions).toBe(3);
  });
});

describe('a passing audit that vouches for evicted turns says how long ago it ran', () => {
  it('lossless after a vouching audit names the compactions since it, not "nothing evicted"', () => {
    const m = monitor([pass(1), audit(1, true), pass(2), pass(3)]);
    const v = m.verdict();
    expect(v.state).toBe('lossless');
    expect(v.reasons).toEqual(['raw spans immutable and keyed by span id; last passing audit 2 compaction(s) ago']);
  });
  it('more than unknownAfter compactions since it: unknown, with the count and the limit', () => {
    const events = [pass(1), audit(1, true)];
    for (let i = 2; i <= 53; i++) events.push(pass(i));
    const m = monitor(events);
    expect(m.verdict().state).toBe('unknown');
    expect(reasons(m)).toMatch(/^52 compactions since the last passing audit \(more than 50\); retrieval status is unknown, not lossless$/m);
  });
  it('the last audit is evidence, and lastAudit carries its counts as recorded', () => {
    const m = monitor([pass(1), audit(1, true, 2, 5)]);
    const v = m.verdict();
    expect(v.lastAudit).toEqual({ eventId: 2, pass: 1, passed: true, checked: 5, checkedEvicted: 2 });
    expect(v.evidence).toEqual([{ eventId: 2, type: 'audit', summary: 'last audit at pass 1: passed (5 fact(s), 2 from evicted spans)', spanIds: [] }]);
  });
  it('an audit that checked nothing is reported as such, one that failed as failed', () => {
    const nothing = monitor([pass(1), audit(1, false, 0, 0, [])]).verdict();
    expect(nothing.state).toBe('unknown');
    expect(nothing.evidence).toEqual([expect.objectContaining({ type: 'audit', summary: 'last audit at pass 1: checked nothing (0 fact(s), 0 from evicted spans)' })]);
    const failed = monitor([pass(1), audit(1, false, 1, 3)]).verdict();
    expect(failed.evidence.at(-1)).toMatchObject({ type: 'audit', summary: 'last audit at pass 1: failed (3 fact(s), 1 from evicted spans)' });
  });
});

describe('degraded outranks unknown: no other finding turns a breach back into unknown', () => {
  const breach = boundary('rewrite-raw', [5]);
  it('best-effort retention, now or before, keeps a degraded store degraded', () => {
    expect(monitor([breach], { ...cfg, bestEffort: true }).verdict().state).toBe('degraded');
    expect(monitor([{ type: 'retention', pass: 0, horizonSeconds: 20, rawTtlSeconds: 10, bestEffort: true }, breach]).verdict().state).toBe('degraded');
  });
  it('audits rarer than 1 per 500 keep a degraded store degraded', () => {
    expect(monitor([breach], { ...cfg, auditEvery: 501 }).verdict().state).toBe('degraded');
  });
  it('evictions without a vouching audit, or too long ago, keep a degraded store degraded', () => {
    expect(monitor([pass(1), breach]).verdict().state).toBe('degraded');
    const events = [pass(1), audit(1, true), breach];
    for (let i = 2; i <= 60; i++) events.push(pass(i));
    expect(monitor(events).verdict().state).toBe('degraded');
  });
  it('a degraded or unknown verdict never gives the lossless reason', () => {
    for (const m of [monitor([breach]), monitor([pass(1)])]) {
      expect(reasons(m)).not.toMatch(/nothing has been evicted|raw spans immutable/);
    }
  });
});

describe('every breach is evidence that says what happened and to which spans', () => {
  it('a raw rewrite names the rewrite and the spans', () => {
    const v = monitor([boundary('rewrite-raw', [5, 6])]).verdict();
    expect(v.evidence).toEqual([{ eventId: 1, type: 'boundary', summary: 'pass 2: compaction attempted to rewrite indexed raw span(s) 5, 6', spanIds: [5, 6] }]);
    expect(v.reasons).toEqual(['pass 2: compaction attempted to rewrite indexed raw span(s) 5, 6']);
  });
  it('an unretained eviction names the retention set; at most 8 ids are listed, all are evidence', () => {
    const ids = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10];
    const v = monitor([boundary('evict-unretained', ids)]).verdict();
    expect(v.evidence).toEqual([{ eventId: 1, type: 'boundary', summary: 'pass 2: eviction set not a subset of the retention set 1, 2, 3, 4, 5, 6, 7, 8', spanIds: ids }]);
  });
  it('a failed audit lists at most three failures and points at every failed span', () => {
    const failures = [1, 2, 3, 4].map((spanId) => ({ fact: `f${spanId}`, spanId, why: 'retrieval did not return the span' }));
    const v = monitor([audit(1, false, 0, 4, failures)]).verdict();
    expect(v.state).toBe('degraded');
    expect(v.evidence[0]).toEqual({
      eventId: 1,
      type: 'audit',
      summary: 'pass 1: audit failed for 4 of 4 fact(s): span 1 (retrieval did not return the span); span 2 (retrieval did not return the span); span 3 (retrieval did not return the span)',
      spanIds: [1, 2, 3, 4],
    });
  });
  it('a repair is evidence with what it rebuilt and whether its audit passed', () => {
    const failed = monitor([boundary('rewrite-raw', [5]), { type: 'repair', pass: 1, rebuilt: ['lexical', 'vector'], auditPassed: false }]).verdict();
    expect(failed.state).toBe('degraded');
    expect(failed.evidence.at(-1)).toEqual({ eventId: 2, type: 'repair', summary: 'pass 1: repair rebuilt lexical, vector; audit failed', spanIds: [] });
    const passed = monitor([boundary('rewrite-raw', [5]), { type: 'repair', pass: 1, rebuilt: ['lexical', 'vector'], auditPassed: true }]).verdict();
    expect(passed.state).toBe('lossless');
    expect(passed.evidence).toEqual([{ eventId: 2, type: 'repair', summary: 'pass 1: repair rebuilt lexical, vector; audit passed', spanIds: [] }]);
  });
});

describe('best-effort retention says why it is never lossless', () => {
  it('the reason given at open is reported', () => {
    const v = new VerdictMonitor({ ...cfg, bestEffort: true, bestEffortReason: 'raw TTL 10s is shorter than the horizon 20s' }).verdict();
    expect(v.reasons[0]).toBe('best-effort retention: raw TTL 10s is shorter than the horizon 20s; never lossless');
  });
  it('without a reason, that it was opened best-effort', () => {
    const v = new VerdictMonitor({ ...cfg, bestEffort: true }).verdict();
    expect(v.reasons[0]).toBe('best-effort retention: opened bestEffort; never lossless');
  });
  it('a past declaration is reported from the first one, with its TTL and horizon', () => {
    const m = monitor([
      { type: 'retention', pass: 0, horizonSeconds: 20, rawTtlSeconds: 10, bestEffort: true },
      { type: 'retention', pass: 5, horizonSeconds: 30, rawTtlSeconds: null, bestEffort: true },
    ]);
    expect(m.verdict().reasons[0]).toMatch(/^declared best-effort retention at pass 0 \(raw TTL 10s, horizon 20s\); /);
    const noTtl = monitor([{ type: 'retention', pass: 3, horizonSeconds: 30, rawTtlSeconds: null, bestEffort: true }]);
    expect(noTtl.verdict().reasons[0]).toMatch(/^declared best-effort retention at pass 3 \(raw TTL nones, horizon 30s\); /);
  });
});

describe('anchor vetoes are reported only when there were some', () => {
  it('no veto, no veto reason; vetoes are counted by span', () => {
    expect(reasons(new VerdictMonitor(cfg))).not.toMatch(/anchor: false/);
    const m = monitor([{ type: 'anchor-veto', spanIds: [4, 9] }, { type: 'anchor-veto', spanIds: [12] }]);
    expect(reasons(m)).toMatch(/the host appended 3 span\(s\) with anchor: false that detection flags/);
  });
});

describe('the hit-rate monitor: a rate per pass, a rise judged against the rate before it', () => {
  it('records each observed pass in its history', () => {
    const h = new HitRateMonitor(0.15);
    h.observe(1, 1, 4);
    h.observe(2, 2, 4);
    expect(h.history).toEqual([{ pass: 1, hitRate: 0.25 }, { pass: 2, hitRate: 0.5 }]);
  });
  it('an empty probe set has rate 0 and never rises', () => {
    const h = new HitRateMonitor(0.15);
    expect(h.observe(1, 0, 0)).toEqual({ hitRate: 0, before: null, rise: null });
    expect(h.observe(2, 0, 0)).toEqual({ hitRate: 0, before: 0, rise: null });
  });
  it('from a rate of zero, a rise is more than the limit itself, in points', () => {
    const h = new HitRateMonitor(0.15);
    expect(h.observe(1, 0, 20).rise).toBeNull();
    expect(h.observe(2, 2, 20, 0).rise).toBeNull(); // 0 -> 0.10
    expect(h.observe(3, 3, 20, 0).rise).toBeNull(); // 0 -> 0.15: not more than the limit
    expect(h.observe(4, 4, 20, 0).rise).toBe('hit rate rose from 0.000 to 0.200 over one pass (limit +15%)');
  });
  it('exactly the limit is not a rise; the message gives the limit in percent', () => {
    const h = new HitRateMonitor(0.5);
    expect(h.observe(1, 3, 4, 0.5).rise).toBeNull(); // 0.5 -> 0.75 = before * 1.5
    expect(h.observe(2, 4, 4, 0.5).rise).toBe('hit rate rose from 0.500 to 1.000 over one pass (limit +50%)');
  });
  it('a replayed pass seeds the rate the next pass is compared to; a pass without a rate does not', () => {
    const h = new HitRateMonitor(0.15);
    h.restore(1, 0.5);
    h.restore(2, null);
    expect(h.history).toEqual([{ pass: 1, hitRate: 0.5 }]);
    expect(h.observe(3, 3, 4)).toMatchObject({ before: 0.5, rise: expect.stringMatching(/rose from 0.500 to 0.750/) });
  });
  it('replaying the event of a pass observed live does not count it twice', () => {
    const h = new HitRateMonitor(0.15);
    h.observe(1, 1, 4);
    h.restore(1, 0.25);
    h.restore(2, 0.5);
    expect(h.history).toEqual([{ pass: 1, hitRate: 0.25 }, { pass: 2, hitRate: 0.5 }]);
  });
});

// The store compares the state alone after every event it records (state()), and builds the
// reasons only when the state changed: the state is the verdict's, whatever the trail.
describe('state() is the verdict\'s state, by the same rules, on every trail', () => {
  it('over random trails of passes, audits, breaches, retention, repairs and vetoes, under every config', () => {
    const rand = prng(0x57a7e);
    const configs = [
      cfg,
      { ...cfg, bestEffort: true, bestEffortReason: 'raw TTL' },
      { ...cfg, auditEvery: 501 },
      { ...cfg, unknownAfter: 2 },
    ];
    const seen = new Set<string>();
    for (const config of configs)
      for (let trail = 0; trail < 200; trail++) {
        const m = new VerdictMonitor(config);
        let n = 0;
        for (let i = 0; i < 12; i++) {
          const r = rand();
          const e: GuardEvent =
            r < 0.4
              ? pass(++n, rand() < 0.8 ? [[n, n]] : [])
              : r < 0.6
                ? audit(n, rand() < 0.8, rand() < 0.7 ? 1 : 0, rand() < 0.9 ? 3 : 0)
                : r < 0.67
                  ? boundary(rand() < 0.5 ? 'rewrite-raw' : 'evict-unretained', [7])
                  : r < 0.74
                    ? { type: 'degrade', pass: n, reason: 'hit-rate-rise', detail: 'x', spanIds: [] }
                    : r < 0.8
                      ? { type: 'retention', pass: n, horizonSeconds: 60, rawTtlSeconds: 30, bestEffort: rand() < 0.5 }
                      : r < 0.87
                        ? { type: 'repair', pass: n, rebuilt: ['lexical'], auditPassed: rand() < 0.5 }
                        : r < 0.93
                          ? { type: 'anchor-veto', spanIds: [3] }
                          : pass(n, [[n, n]]);
          m.apply(i + 1, e);
          const v = m.verdict();
          expect(m.state()).toBe(v.state);
          seen.add(v.state);
        }
      }
    // Every state was reached, so each was compared.
    expect([...seen].sort()).toEqual(['degraded', 'lossless', 'unknown']);
  });
});
