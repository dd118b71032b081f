// The decision boundary as a pure function of the event trail (SPEC "Decision boundary").
import { describe, expect, it } from 'vitest';
import { HitRateMonitor, VerdictMonitor } from '../../src/verdict.js';
import type { GuardEvent } from '../../src/events.js';

const cfg = { unknownAfter: 50, auditEvery: 50, bestEffort: false };
const pass = (n: number): GuardEvent => ({
  type: 'pass', pass: n, evicted: [[n, n]], evictedSummaries: [], spilled: [], superseded: [], summaryId: 1000 + n,
  turnStart: n, turnEnd: n, anchorsChecked: 0, divergence: 0, hitRateBefore: null, hitRateAfter: null,
});
const audit = (n: number, passed: boolean, checkedEvicted = 1, checked = 3): GuardEvent => ({
  type: 'audit', pass: n, checked, passed, failures: passed ? [] : [{ fact: 'x', spanId: 7, why: 'fact not verbatim in the span' }], sampledEvicted: 1, checkedEvicted,
});

describe('lossless: a store that has evicted nothing has nothing to vouch for', () => {
  it('starts lossless', () => {
    const v = new VerdictMonitor(cfg).verdict();
    expect(v.state).toBe('lossless');
    expect(v.trustExactRecall).toBe(true);
    expect(v.reasons.join(' ')).toMatch(/nothing has been evicted/);
  });
});

describe('creating a store is not an audit: evictions without a vouching audit are unknown', () => {
  it('ten passes that evicted spans, no audit ever run: unknown with lastAudit null', () => {
    const m = new VerdictMonitor(cfg);
    for (let i = 1; i <= 10; i++) m.apply(i, pass(i));
    const v = m.verdict();
    expect(v).toMatchObject({ state: 'unknown', lastAudit: null, trustExactRecall: false });
    expect(v.reasons.join(' ')).toMatch(/no audit has yet confirmed a fact from an evicted span/);
    expect(m.needsFirstAudit).toBe(true);
  });
  it('an audit that checked nothing neither passes nor vouches', () => {
    const m = new VerdictMonitor(cfg);
    m.apply(1, pass(1));
    m.apply(2, audit(1, true, 0, 0));
    expect(m.verdict().state).toBe('unknown');
    expect(m.needsFirstAudit).toBe(true);
  });
  it('an audit that passed without a fact from an evicted span does not vouch', () => {
    const m = new VerdictMonitor(cfg);
    m.apply(1, pass(1));
    m.apply(2, audit(1, true, 0));
    expect(m.verdict().state).toBe('unknown');
  });
  it('a passing audit with a fact from an evicted span vouches', () => {
    const m = new VerdictMonitor(cfg);
    m.apply(1, pass(1));
    m.apply(2, audit(1, true, 1));
    expect(m.verdict().state).toBe('lossless');
    expect(m.needsFirstAudit).toBe(false);
  });
  it('an audit event recorded before checkedEvicted existed does not vouch', () => {
    const m = new VerdictMonitor(cfg);
    m.apply(1, pass(1));
    const old = audit(1, true) as GuardEvent & { checkedEvicted?: number };
    delete old.checkedEvicted;
    m.apply(2, old);
    expect(m.verdict().state).toBe('unknown');
  });
});

describe('unknown: no vouching audit within the last N compactions', () => {
  it('is lossless 50 passes after the audit and unknown after 51; an audit brings back lossless', () => {
    const m = new VerdictMonitor(cfg);
    m.apply(1, pass(1));
    m.apply(2, audit(1, true));
    for (let i = 2; i <= 51; i++) m.apply(100 + i, pass(i));
    expect(m.verdict().state).toBe('lossless');
    m.apply(152, pass(52));
    const v = m.verdict();
    expect(v.state).toBe('unknown');
    expect(v.trustExactRecall).toBe(false);
    expect(v.compactionsSinceAudit).toBe(51);
    m.apply(153, audit(52, true));
    expect(m.verdict().state).toBe('lossless');
    expect(m.verdict().lastAudit?.eventId).toBe(153);
  });
  it('audits rarer than 1 per 500 compactions can never claim lossless', () => {
    const v = new VerdictMonitor({ ...cfg, auditEvery: 501 }).verdict();
    expect(v.state).toBe('unknown');
    expect(v.reasons.join(' ')).toMatch(/rarer than 1 per 500/);
  });
  it('a best-effort past is never forgotten: a later open without it stays unknown', () => {
    const m = new VerdictMonitor(cfg);
    m.apply(1, { type: 'retention', pass: 0, horizonSeconds: 20, rawTtlSeconds: 10, bestEffort: true });
    m.apply(2, { type: 'retention', pass: 0, horizonSeconds: 20, rawTtlSeconds: null, bestEffort: false });
    const v = m.verdict();
    expect(v.state).toBe('unknown');
    expect(v.bestEffort).toBe(true);
    expect(v.reasons.join(' ')).toMatch(/declared best-effort retention/);
  });
  it('best-effort retention is never lossless', () => {
    const v = new VerdictMonitor({ ...cfg, bestEffort: true, bestEffortReason: 'raw TTL 10s is shorter than the horizon 20s' }).verdict();
    expect(v.state).toBe('unknown');
    expect(v.bestEffort).toBe(true);
    expect(v.reasons.join(' ')).toMatch(/best-effort/);
  });
});

describe('degraded is sticky until a repair with a passing audit', () => {
  it('a boundary breach degrades, a later passing audit does not clear it, a repair does', () => {
    const m = new VerdictMonitor(cfg);
    m.apply(1, pass(1));
    m.apply(6, audit(1, true));
    m.apply(2, { type: 'boundary', pass: 2, reason: 'rewrite-raw', spanIds: [5] });
    expect(m.verdict().state).toBe('degraded');
    expect(m.verdict().evidence.some((e) => e.eventId === 2 && e.spanIds.includes(5))).toBe(true);
    m.apply(3, audit(1, true));
    expect(m.verdict().state).toBe('degraded');
    m.apply(4, { type: 'repair', pass: 1, rebuilt: ['lexical', 'vector'], auditPassed: false });
    expect(m.verdict().state).toBe('degraded');
    m.apply(5, { type: 'repair', pass: 1, rebuilt: ['lexical', 'vector'], auditPassed: true });
    expect(m.verdict().state).toBe('lossless');
  });
  it.each([
    ['a failed audit', audit(1, false)],
    ['a hit-rate rise', { type: 'degrade', pass: 1, reason: 'hit-rate-rise', detail: 'x', spanIds: [] } as GuardEvent],
    ['an expect-raw retrieval that got a summary', { type: 'degrade', pass: 1, reason: 'expected-raw-got-summary', detail: 'x', spanIds: [9] } as GuardEvent],
    ['a log/index disagreement', { type: 'degrade', pass: 1, reason: 'index-disagreement', detail: 'x', spanIds: [] } as GuardEvent],
  ])('%s degrades', (_name, e) => {
    const m = new VerdictMonitor(cfg);
    m.apply(1, e);
    expect(m.verdict().state).toBe('degraded');
    expect(m.verdict().trustExactRecall).toBe(false);
  });
});

describe('hit rate rising more than 15% over one pass is a red flag', () => {
  it('flags a jump and not a stable or falling rate', () => {
    const h = new HitRateMonitor(0.15);
    expect(h.observe(1, 16, 32).rise).toBeNull();
    expect(h.observe(2, 17, 32).rise).toBeNull(); // +6%
    expect(h.observe(3, 12, 32).rise).toBeNull(); // falls
    expect(h.observe(4, 20, 32).rise).toMatch(/rose from 0.375 to 0.625/);
  });
});
