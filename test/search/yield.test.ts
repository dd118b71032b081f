// A search judges its candidates on the JS thread (support: which query terms and values a
// candidate states); a long quote against many long candidates takes a while, so the event
// loop runs between candidates once SLICE_MS (src/catchup.ts) has gone by.
//
// What is observed is the judging itself: supportOf (called once per candidate) is wrapped to
// note, at each call, the time and how many loop turns have run so far. Turns while the search
// waits for its pool jobs (BM25, the vector tier) are not evidence: the loop turns then anyway.
import { afterAll, describe, expect, it, vi } from 'vitest';
import { SpanStore } from '../../src/index.js';
import { SLICE_MS } from '../../src/catchup.js';
import { realTurns, tmpDir } from '../helpers/data.js';
import { turnCounter } from '../helpers/loop.js';

const judged: { at: number; ticks: number }[] = [];
let loop: ReturnType<typeof turnCounter> | undefined;
vi.mock('../../src/support.js', async (importOriginal) => {
  const real = await importOriginal<typeof import('../../src/support.js')>();
  return {
    ...real,
    supportOf: (...args: Parameters<typeof real.supportOf>) => {
      judged.push({ at: performance.now(), ticks: loop?.now() ?? 0 });
      return real.supportOf(...args);
    },
  };
});

describe('a long search lets the event loop run between candidates', () => {
  let store: SpanStore | undefined;
  afterAll(async () => {
    await store?.close();
  });

  it('the loop turns between candidates once a slice has gone by, and the answer is the same', async () => {
    store = await SpanStore.open(tmpDir(), { durability: 'none' });
    // Many long spans that all share the quote's words: every one is a candidate to judge.
    const filler = realTurns(800).map((t) => t.text).join(' ').slice(0, 48_000);
    const query = `the shared pipeline reported status ok for stage 7 after run 7 and ${filler.slice(0, 150)}`;
    // The premise: judging that lasts several slices. k = 100 judges up to 2k candidates (the
    // judge depth is bounded by k, not by the store: at k = 10 a sharper vector ranking left
    // too few distinct candidates to outlast two slices); more spans are added until it does
    // (the duration is measured, not assumed).
    let judging = 0;
    let turned = 0;
    for (let round = 0, n = 0; round < 24 && judging <= 2 * SLICE_MS; round++) {
      const turns = Array.from({ length: 300 }, (_, i) => ({ turn: n + i + 1, role: 'tool', text: `${filler} run ${n + i} of the shared pipeline reported status ok for stage ${n + i}` }));
      n += turns.length;
      await store.appendMany(turns);
      const quiet = await store.search(query, { k: 100 });
      loop = turnCounter();
      judged.length = 0;
      const got = await store.search(query, { k: 100 });
      loop.stop();
      const first = judged[0];
      const last = judged.at(-1);
      judging = first && last ? last.at - first.at : 0;
      turned = first && last ? last.ticks - first.ticks : 0;
      expect(got.hits.map((h) => h.spanId)).toEqual(quiet.hits.map((h) => h.spanId));
    }
    expect(judging).toBeGreaterThan(2 * SLICE_MS);
    expect(turned).toBeGreaterThan(0);
  }, 60_000);
});
