// The guard's shortcuts on a pass's hot path, each held to the answer of the long way:
// the divergence known without a measure, and the session-wide probe queries kept with
// the probe set instead of gathered per pass.
import { describe, expect, it } from 'vitest';
import { knownDivergence, probeDivergence } from '../../src/guard/anchors.js';
import { SpanStore } from '../../src/index.js';
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
