// A search's verbatim lookups (the whole query, then each quoted part) and its BM25 walk run
// on the JS thread one after another; a long query's can each take milliseconds at 10^6 spans.
// The event loop runs between them once SLICE_MS has gone by, and the answer is the same.
import { afterAll, describe, expect, it } from 'vitest';
import { SpanStore } from '../../src/index.js';
import { SLICE_MS } from '../../src/catchup.js';
import { tmpDir } from '../helpers/data.js';
import { slowMethod, turnCounter } from '../helpers/loop.js';

describe('the lookups before the fusion let the event loop run between them', () => {
  let store: SpanStore | undefined;
  afterAll(async () => {
    await store?.close();
  });

  it('slowed lookups of six quoted parts: the loop turns between them, and the hits are the same', async () => {
    store = await SpanStore.open(tmpDir(), { durability: 'none' });
    const parts = ['alpha1', 'bravo2', 'charlie3', 'delta4', 'foxtrot6', 'hotel8'];
    await store.appendMany(parts.map((p, i) => ({ turn: i + 1, role: 'assistant', text: `ran ${p} and it printed ok` })));
    const query = `did the agent run ${parts.map((p) => `\`${p}\``).join(' ')}?`;
    const quiet = await store.search(query);
    // Each verbatim lookup made slower than half a slice (the store's own index, wrapped).
    const lexical = (store as unknown as { engine: { lexical: object } }).engine.lexical;
    const turnsAt: number[] = [];
    let loop = turnCounter();
    const restore = slowMethod(lexical, 'phraseWithin', SLICE_MS / 2 + 1, () => turnsAt.push(loop.now()));
    try {
      loop.stop();
      loop = turnCounter();
      const got = await store.search(query);
      loop.stop();
      expect(got.hits.map((h) => h.spanId)).toEqual(quiet.hits.map((h) => h.spanId));
    } finally {
      restore();
    }
    // The whole query, then the six parts: seven lookups of more than half a slice each.
    expect(turnsAt.length).toBe(1 + parts.length);
    expect(turnsAt.at(-1)! - turnsAt[0]!).toBeGreaterThanOrEqual(2);
  });
});
