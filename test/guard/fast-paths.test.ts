// The guard's shortcuts on a pass's hot path, each held to the answer of the long way:
// the divergence known without a measure, the session-wide probe queries kept with the
// probe set instead of gathered per pass, and the pass event's JSON written out directly.
import { describe, expect, it } from 'vitest';
import { knownDivergence, probeDivergence } from '../../src/guard/anchors.js';
import { SpanStore } from '../../src/index.js';
import { passEventJson, type PassEvent } from '../../src/events.js';
import { prng } from '../../src/prng.js';
import { tmpDir } from '../helpers/data.js';
import { open } from './helpers.js';

describe('guard: the divergence known without a measure', () => {
  it('null when not returned, 0 when the first hit is the anchor or states the probe, else left to the measure', async () => {
    expect(knownDivergence({ found: false, topId: 7, topHolds: true }, 7)).toBeNull();
    expect(knownDivergence({ found: true, topId: null, topHolds: false }, 7)).toBe(0);
    expect(knownDivergence({ found: true, topId: 7, topHolds: false }, 7)).toBe(0);
    expect(knownDivergence({ found: true, topId: 3, topHolds: true }, 7)).toBe(0);
    expect(knownDivergence({ found: true, topId: 3, topHolds: false }, 7)).toBeUndefined();
  });
  it('agrees with probeDivergence wherever it answers', async () => {
    const measure = async () => 0.42;
    for (const found of [false, true])
      for (const topId of [null, 3, 7])
        for (const topHolds of [false, true]) {
          const f = { found, topId, topHolds };
          const known = knownDivergence(f, 7);
          expect(await probeDivergence(f, 7, measure)).toBe(known === undefined ? 0.42 : known);
        }
  });
});

type GuardView = { probeSet: { query: string }[]; probeQueries: Set<string>; anchorsAtDraw: number; resetProbes(): void };
const guardOf = (s: SpanStore) => (s as unknown as { guard: GuardView }).guard;
const fact = (i: number) => `Pool ${['alpha', 'bravo', 'charlie', 'delta', 'echo', 'foxtrot'][i % 6]}${i} keeps ${100 + 7 * i} workers busy.`;

describe('guard: the session-wide probe queries are the probe set\'s, through every draw', () => {
  it('after the first draw, a redraw when the anchors double, and a reset', async () => {
    const s = await SpanStore.open(tmpDir(), { durability: 'none', hitRateProbes: 2 });
    open.push(s);
    let turn = 0;
    const add = (k: number) => s.appendMany(Array.from({ length: k }, () => ({ turn: ++turn, role: 'assistant', text: fact(turn) })));
    const ids = await add(4);
    const g = guardOf(s);
    const same = () => expect(g.probeQueries).toEqual(new Set(g.probeSet.map((p) => p.query)));
    await s.compact({ evict: [ids[0]!], summary: { text: 'summary of turn 1', turnStart: 1, turnEnd: 1 } });
    expect(g.probeSet.length).toBeGreaterThan(0);
    same();
    const first = new Set(g.probeQueries);
    await add(8);
    await s.compact({ evict: [ids[1]!], summary: { text: 'summary of turn 2', turnStart: 2, turnEnd: 2 } });
    expect(g.anchorsAtDraw).toBe(12);
    same();
    expect(g.probeQueries).not.toEqual(first);
    g.resetProbes();
    expect(g.probeQueries.size).toBe(0);
  });
});

describe("guard: a pass event's JSON is written out directly, the bytes JSON.stringify gives", () => {
  it('on random pass events: ranges, ids, rates null or not (non-finite ones too), values with quotes and any characters, optional fields absent', () => {
    const rand = prng(0x9a55);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
    const ids = () => Array.from({ length: Math.floor(rand() * 4) }, () => Math.floor(rand() * 1e6));
    const rate = () => pick([null, 0, 1, 0.5, 1 / 3, rand(), -0, Number.NaN, Number.POSITIVE_INFINITY, 1e21, 5e-7]);
    const chars = ['a', '"', '\\', '\n', '\u0001', 'é', '😀', '\ud800', '\u2028', '`', ' ', '40 req/s'];
    let withUngrounded = 0;
    for (let i = 0; i < 2000; i++) {
      const e: PassEvent = {
        type: 'pass',
        pass: Math.floor(rand() * 1e4),
        evicted: ids().map((a) => [a, a + Math.floor(rand() * 20)] as [number, number]),
        evictedSummaries: ids(),
        spilled: ids(),
        superseded: ids(),
        summaryId: Math.floor(rand() * 1e9),
        turnStart: Math.floor(rand() * 1e5),
        turnEnd: Math.floor(rand() * 1e5),
        anchorsChecked: Math.floor(rand() * 10),
        divergence: pick([0, rand(), 0.25]),
        hitRateBefore: rate(),
        hitRateAfter: rate(),
      };
      if (rand() < 0.4) {
        e.ungrounded = Array.from({ length: 1 + Math.floor(rand() * 3) }, () => Array.from({ length: 1 + Math.floor(rand() * 5) }, () => pick(chars)).join(''));
        withUngrounded++;
      }
      if (rand() < 0.8) e.localHitRateBefore = rate();
      if (rand() < 0.8) e.localHitRateAfter = rate();
      expect(passEventJson(e)).toBe(JSON.stringify(e));
    }
    expect(withUngrounded).toBeGreaterThan(500);
  });
});
