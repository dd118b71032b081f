// A search's vector lookups run on the read lane (native/napi/background.h ThreadLane), whose
// threads are kept off the core the JS thread runs on: a lookup woken onto that core would
// preempt the JS thread for its whole run, and the search would wait for the job it queued so
// as to go on beside it. A long BM25 walk, awaited at once, stays on the pool. The lane's jobs
// are probed with the addon's testing seam (readLaneProbe: the core its submission pointed the
// lane away from, the CPU it ran on, its thread's CPU mask, the JS thread's CPU count). With
// one CPU there is nowhere else to go: the mask is left as it was.
import { describe, expect, it } from 'vitest';
import { SpanStore } from '../../src/index.js';
import { addon } from '../../src/native.js';
import { tmpDir } from '../helpers/data.js';

interface Probe {
  steeredOff: number;
  jsCpus: number;
  ranOn: number;
  mask: number[];
}
const testing = (addon() as unknown as { _testing: { readLaneProbe(): Promise<Probe>; poolSleep(ms: number, lane?: 'read'): Promise<void>; background(): { readLaneThreads: number; readLaneQueued: number; queued: number } } })._testing;
const linux = process.platform === 'linux';
/** CPUs the JS thread may use (its affinity; a container's CPU quota does not narrow it). */
const cpus = linux ? (await testing.readLaneProbe()).jsCpus : 1;

describe('read lane: its threads never run on the JS thread’s core', () => {
  it.runIf(linux && cpus >= 2)('every job’s thread may use every CPU of the process but the one the JS thread queued it from', async () => {
    for (let i = 0; i < 40; i++) {
      const p = await testing.readLaneProbe();
      // The core the submission read for the JS thread.
      expect(p.steeredOff).toBeGreaterThanOrEqual(0);
      expect(p.mask).not.toContain(p.steeredOff);
      expect(p.mask.length).toBe(cpus - 1);
      expect(p.ranOn).not.toBe(p.steeredOff);
      // Jobs queued back to back, and after the lane has gone idle.
      if (i % 8 === 7) await new Promise((r) => setTimeout(r, 5));
    }
  });

  it.runIf(linux && cpus >= 2)('holds for every thread of a grown lane', async () => {
    // Sleepers hold threads, so the probes queued beside them are run by threads made for them.
    const sleeping = Array.from({ length: 3 }, () => testing.poolSleep(50, 'read'));
    const probes = await Promise.all(Array.from({ length: 4 }, () => testing.readLaneProbe()));
    await Promise.all(sleeping);
    expect(testing.background().readLaneThreads).toBeGreaterThan(1);
    for (const p of probes) {
      expect(p.steeredOff).toBeGreaterThanOrEqual(0);
      expect(p.mask).not.toContain(p.steeredOff);
      expect(p.mask.length).toBe(cpus - 1);
    }
  });

  it.runIf(linux && cpus < 2)('with one CPU the mask is the process’s', async () => {
    const p = await testing.readLaneProbe();
    expect(p.mask.length).toBe(cpus);
  });
});

describe('read lane: a search’s vector lookups are its jobs', () => {
  it('store.search queues its vector lookup on the read lane; a long BM25 walk goes to the pool', async () => {
    const store = await SpanStore.open(tmpDir(), { durability: 'none' });
    try {
      await store.appendMany(Array.from({ length: 300 }, (_, i) => ({ turn: i + 1, role: 'user', text: `deploy target ${i} is eu-west-${i % 7}` })));
      await store.catchUp();
      const before = testing.background().readLaneQueued;
      const res = await store.search('deploy target eu-west-3', { k: 3 });
      expect(res.hits[0]?.text).toContain('eu-west-3');
      // One vector lookup for the raw spans (a store of one namespace holding rows).
      expect(testing.background().readLaneQueued - before).toBeGreaterThanOrEqual(1);
      // A BM25 walk over more postings than the JS thread takes (searchWithin gives null) is
      // awaited at once: it runs on the pool, which may use the JS thread's core meanwhile.
      expect(store.lexical.searchWithin('deploy target', 10, 1, Number.NaN, Number.NaN, 0)).toBeNull();
      const walk = testing.background();
      const hits = await store.lexical.searchAsync('deploy target', 10, 1, Number.NaN, Number.NaN);
      expect(hits.ids.length).toBe(10);
      expect(testing.background().readLaneQueued).toBe(walk.readLaneQueued);
      expect(testing.background().queued).toBe(walk.queued + 1);
    } finally {
      await store.close();
    }
  });
});
