// Eviction set ⊆ retention set, and the log and the indexes agree about which raw spans
// exist: the rules that make "lossless" mean something at the level of ids.
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { LosslessRetrievalBoundaryError, SpanStore } from '../../src/index.js';
import { probeDivergence } from '../../src/guard.js';
import { RecordKind } from '../../src/native.js';
import { realTurns, tmpDir } from '../helpers/data.js';

const open: SpanStore[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close().catch(() => {});
});

describe('an evicted raw span must be indexed (rule 2: eviction set ⊆ retention set)', () => {
  it('a raw span in the log but not yet in the indexes cannot leave the window: boundary breach, recorded, degraded', async () => {
    const s = await SpanStore.open(tmpDir(), { durability: 'none' });
    open.push(s);
    const ids = await s.appendMany(realTurns(20).map((t) => ({ turn: t.turn, role: t.role, text: t.text })));
    // Written to the log behind the indexes' back: the retention set does not hold it yet.
    const unindexed = await s.log.append({
      kinds: Uint8Array.of(RecordKind.raw), flags: Uint8Array.of(0), roles: Uint8Array.of(2),
      turnStart: Float64Array.of(21), turnEnd: Float64Array.of(21), timestamps: Float64Array.of(Date.now()),
      tokens: Uint32Array.of(0), texts: ['not indexed yet'], metas: [null],
    });
    const err = await s.compact({ evict: [ids[19]!, unindexed], summary: { text: 'x', turnStart: 20, turnEnd: 21 } }).catch((e) => e);
    expect(err).toBeInstanceOf(LosslessRetrievalBoundaryError);
    expect(err.spanIds).toEqual([unindexed]);
    expect(s.events().some((e) => e.event.type === 'boundary' && e.event.reason === 'evict-unretained')).toBe(true);
    expect(s.verdict().state).toBe('degraded');
  });
});

describe('the log and an index disagreeing at open is recorded and degrades', () => {
  it("an index this store's identity vouches for, covering ids the log does not hold: rebuilt, and the disagreement is an event and a verdict reason", async () => {
    const bigDir = tmpDir();
    const big = await SpanStore.open(bigDir, { durability: 'none' });
    await big.appendMany(realTurns(80).map((t) => ({ turn: t.turn, role: t.role, text: `${t.text}` })));
    await big.close();
    const smallDir = tmpDir();
    const small = await SpanStore.open(smallDir, { durability: 'none' });
    await small.appendMany(realTurns(30).map((t) => ({ turn: t.turn, role: t.role, text: t.text })));
    await small.close();
    fs.copyFileSync(path.join(bigDir, 'index', 'lexical.idx'), path.join(smallDir, 'index', 'lexical.idx'));
    // The identity names that file as this store's: the log, not the index, is what fell short.
    // (A file the identity does not name is rebuilt without a disagreement: test/store/fault-matrix.test.ts.)
    const identity = (d: string) => JSON.parse(fs.readFileSync(path.join(d, 'index', 'identity.json'), 'utf8'));
    fs.writeFileSync(path.join(smallDir, 'index', 'identity.json'), JSON.stringify({ ...identity(smallDir), lexical: identity(bigDir).lexical }));
    const s = await SpanStore.open(smallDir, { durability: 'none' });
    open.push(s);
    const degrade = s.events().find((e) => e.event.type === 'degrade' && e.event.reason === 'index-disagreement');
    expect(degrade).toBeDefined();
    expect(s.verdict().state).toBe('degraded');
    expect(s.verdict().reasons.join(' ')).toMatch(/index-disagreement/);
    // Rebuilt from the log: every raw span is found again by its own text.
    const t = realTurns(30)[12]!.text.split('\n').find((l) => l.trim().length > 12)!.trim();
    expect(s.findExact(t).some((h) => h.turnStart === 13)).toBe(true);
  });
});

describe("divergence is what the anchor's probe returned first, measured", () => {
  it('null when not returned, 0 for the anchor itself or a span stating the probe, the measured distance otherwise', async () => {
    const measure = async () => 0.42;
    expect(await probeDivergence({ found: false, topId: 3, topHolds: false }, 7, measure)).toBeNull();
    expect(await probeDivergence({ found: true, topId: 7, topHolds: true }, 7, measure)).toBe(0);
    expect(await probeDivergence({ found: true, topId: 3, topHolds: true }, 7, measure)).toBe(0);
    expect(await probeDivergence({ found: true, topId: 3, topHolds: false }, 7, measure)).toBe(0.42);
  });
});
