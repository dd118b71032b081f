// A search judges its candidates on the JS thread (support: which query terms and values a
// candidate states); a long quote against many long candidates takes a while, so the event
// loop runs between candidates once SLICE_MS (src/catchup.ts) has gone by.
import { afterAll, describe, expect, it } from 'vitest';
import { SpanStore } from '../../src/index.js';
import { SLICE_MS } from '../../src/catchup.js';
import { realTurns, tmpDir } from '../helpers/data.js';

describe('a long search lets the event loop run between candidates', () => {
  let store: SpanStore | undefined;
  afterAll(async () => {
    await store?.close();
  });

  it('immediates queued during a search run before it resolves, and the answer is the same', async () => {
    store = await SpanStore.open(tmpDir(), { durability: 'none' });
    // Many long spans that all share the quote's words: every one is a candidate to judge.
    const filler = realTurns(800).map((t) => t.text).join(' ').slice(0, 48_000);
    const query = `the shared pipeline reported status ok for stage 7 after run 7 and ${filler.slice(0, 150)}`;
    // The premise: a search long enough to cross several slices. A fast machine gets more
    // candidates until it is (the answer is measured, not assumed).
    let ms = 0;
    let during = 0;
    for (let round = 0, n = 0; round < 24 && ms <= 2 * SLICE_MS; round++) {
      const turns = Array.from({ length: 300 }, (_, i) => ({ turn: n + i + 1, role: 'tool', text: `${filler} run ${n + i} of the shared pipeline reported status ok for stage ${n + i}` }));
      n += turns.length;
      await store.appendMany(turns);
      const quiet = await store.search(query, { k: 10 });
      let ticks = 0;
      let stop = false;
      const spin = () => {
        if (stop) return;
        ticks++;
        setImmediate(spin);
      };
      setImmediate(spin);
      const t0 = performance.now();
      const got = await store.search(query, { k: 10 });
      ms = performance.now() - t0;
      during = ticks;
      stop = true;
      expect(got.hits.map((h) => h.spanId)).toEqual(quiet.hits.map((h) => h.spanId));
    }
    expect(ms).toBeGreaterThan(2 * SLICE_MS);
    expect(during).toBeGreaterThan(0);
  }, 60_000);
});
