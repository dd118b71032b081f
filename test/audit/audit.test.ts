// Audits: what they check and when they pass.
import { afterEach, describe, expect, it } from 'vitest';
import { SpanStore } from '../../src/index.js';
import { realTurns, tmpDir } from '../helpers/data.js';

const open: SpanStore[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close().catch(() => {});
});

describe('audits check the anchors, sampled across the session', () => {
  it('an audit of a store with anchors and nothing evicted checks every anchor (under the sample size)', async () => {
    const s = await SpanStore.open(tmpDir(), { durability: 'none', auditSample: 512 });
    open.push(s);
    await s.appendMany(realTurns(120).map((t) => ({ turn: t.turn, role: t.role, text: t.text })));
    const anchors = s.stats().anchors;
    expect(anchors).toBeGreaterThan(5);
    const r = await s.audit();
    expect(r.checked).toBeGreaterThanOrEqual(anchors - 2); // an anchor with no usable line is not a fact
    expect(r.passed).toBe(true);
  });
});

describe('an audit that checks nothing does not pass', () => {
  it('an empty store: checked 0, passed false, and the verdict does not turn degraded', async () => {
    const s = await SpanStore.open(tmpDir(), { durability: 'none' });
    open.push(s);
    const r = await s.audit();
    expect(r).toMatchObject({ checked: 0, passed: false, failures: [] });
    expect(s.verdict().state).toBe('lossless');
  });
});

describe('a statement with two values is held only when both are stated together', () => {
  it('one value stated, the other never: not in transcript', async () => {
    const s = await SpanStore.open(tmpDir(), { durability: 'none' });
    open.push(s);
    await s.appendMany([
      ...realTurns(60).map((t) => ({ turn: t.turn, role: t.role, text: t.text })),
      { turn: 61, role: 'user', text: 'The gateway allows 40 req/s per token and bursts of 120 requests.' },
    ]);
    expect((await s.search('allows 40 req/s per token and bursts of 120 requests')).miss).toBe(false);
    expect((await s.search('allows 40 req/s per token and bursts of 170 requests')).miss).toBe(true);
    // Values with no words beside them: only the values rule can tell.
    await s.append({ turn: 62, role: 'user', text: 'The limit is 40 or 120 for bursts.' });
    expect((await s.search('The limit is 40 or 120 for bursts')).miss).toBe(false);
    expect((await s.search('The limit is 40 or 170 for bursts')).miss).toBe(true);
  });
});
