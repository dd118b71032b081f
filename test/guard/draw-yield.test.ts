// The hit-rate monitor draws its probe set across the whole session (and again each time the
// anchors double): up to eight verbatim lookups per probe, milliseconds each on a large store.
// The event loop runs between them once SLICE_MS has gone by, and the set drawn is the same.
import { afterAll, describe, expect, it } from 'vitest';
import { SpanStore } from '../../src/index.js';
import { SLICE_MS } from '../../src/catchup.js';
import { tmpDir } from '../helpers/data.js';
import { slowMethod, turnCounter } from '../helpers/loop.js';

type Guard = { drawProbeSet(want: number): Promise<void>; probeSet: { query: string }[] };

describe('drawing the probe set lets the event loop run between its lookups', () => {
  let store: SpanStore | undefined;
  afterAll(async () => {
    await store?.close();
  });

  it('slowed lookups: the loop turns between them, and the probes drawn are the same', async () => {
    store = await SpanStore.open(tmpDir(), { durability: 'none' });
    await store.appendMany(
      Array.from({ length: 64 }, (_, i) => ({ turn: i + 1, role: 'tool', text: `configured the worker with --port=${8100 + i * 7} and --retries=${30 + i}` })),
    );
    const guard = (store as unknown as { guard: Guard }).guard;
    await guard.drawProbeSet(16);
    const quiet = guard.probeSet.map((p) => p.query);
    expect(quiet.length).toBeGreaterThanOrEqual(8);

    // Each verbatim lookup made slower than half a slice (the store's own method, wrapped).
    const turnsAt: number[] = [];
    let loop = turnCounter();
    const restore = slowMethod(store, 'findExact', SLICE_MS / 2 + 1, () => turnsAt.push(loop.now()));
    try {
      loop.stop();
      loop = turnCounter();
      await guard.drawProbeSet(16);
      loop.stop();
    } finally {
      restore();
    }
    expect(guard.probeSet.map((p) => p.query)).toEqual(quiet);
    expect(turnsAt.length).toBeGreaterThanOrEqual(8);
    // More than half a slice each: the loop ran at least every other lookup.
    expect(turnsAt.at(-1)! - turnsAt[0]!).toBeGreaterThanOrEqual(Math.floor(turnsAt.length / 2) - 1);
  });
});
