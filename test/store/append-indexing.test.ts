// Appends under group commit are indexed beside their fdatasync (Indexes.catchUpStaged): the
// catch-up of a burst starts in the check phase that starts the burst's sync, one round for
// the whole burst, so an append waits for the longer of the two instead of their sum, and
// the event loop turns once per append cycle fewer. An append still resolves indexed, and a
// save never captures an index ahead of the durable log. Counted in loop turns and calls,
// never timed.
import { afterEach, describe, expect, it } from 'vitest';
import { SpanStore } from '../../src/index.js';
import { tmpDir } from '../helpers/data.js';

const open: SpanStore[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close().catch(() => {});
});

async function groupStore(): Promise<SpanStore> {
  const s = await SpanStore.open(tmpDir(), { durability: 'group' });
  open.push(s);
  return s;
}

/** Shadows `method` on `target` (the addon's classes define theirs read-only on the prototype) with `around`. */
function shadow<T extends object>(target: T, method: string, around: (orig: (...a: unknown[]) => unknown, args: unknown[]) => unknown): void {
  const orig = (target as Record<string, unknown>)[method] as (...a: unknown[]) => unknown;
  Object.defineProperty(target, method, {
    configurable: true,
    writable: true,
    value: function (this: unknown, ...args: unknown[]) {
      return around((...a) => orig.apply(this, a), args);
    },
  });
}

const turn = (i: number) => ({ turn: i + 1, role: 'user' as const, text: `turn ${i} asks about the ledger of okapi number ${i}` });

describe('a burst of group appends is indexed beside its fdatasync', () => {
  it('the catch-up of a burst starts in the check phase that starts its sync, one job per index for the whole burst', async () => {
    const store = await groupStore();
    await store.append(turn(0));
    for (const n of [1, 32, 256]) {
      // Check phases that ran since the burst was staged, counted by a chain of immediates
      // whose first is queued after the burst's appends.
      let phases = 0;
      const startedAt: number[] = [];
      shadow(store.lexical, 'catchUpAsync', (orig, args) => (startedAt.push(phases), orig(...args)));
      shadow(store.vector, 'catchUpAsync', (orig, args) => (startedAt.push(phases), orig(...args)));
      const from = store.log.nextId();
      const burst = Array.from({ length: n }, (_, i) => store.append(turn(from + i)));
      let counting = true;
      const tick = () => {
        phases++;
        if (counting) setImmediate(tick);
      };
      setImmediate(tick);
      const ids = await Promise.all(burst);
      counting = false;
      delete (store.lexical as unknown as Record<string, unknown>).catchUpAsync;
      delete (store.vector as unknown as Record<string, unknown>).catchUpAsync;
      expect(ids).toEqual(Array.from({ length: n }, (_, i) => from + i));
      // Both indexes' jobs started before the first immediate queued after the burst ran:
      // in the phase that started the sync, not after the sync's completion (a later turn).
      expect(startedAt).toEqual([0, 0]);
      // Each append resolved indexed.
      expect(store.lexical.highWater()).toBeGreaterThan(ids.at(-1)!);
      expect(store.vector.highWater()).toBeGreaterThan(ids.at(-1)!);
    }
  });

  it('an append resolves with its span searchable, and appends made while a catch-up runs are caught up too', async () => {
    const store = await groupStore();
    const first = Array.from({ length: 40 }, (_, i) => store.append(turn(i)));
    // A second burst staged in the next turn, while the first one's round may still run.
    await new Promise((r) => setImmediate(r));
    const second = Array.from({ length: 40 }, (_, i) =>
      store.append({ turn: 100 + i, role: 'user', text: `the quokka manifest entry ${i} lists crate ${i * 7}` }),
    );
    const ids = await Promise.all([...first, ...second]);
    expect(store.lexical.highWater()).toBeGreaterThan(Math.max(...ids));
    const r = await store.search('quokka manifest entry 39', { k: 5 });
    expect(r.hits.map((h) => h.spanId)).toContain(ids.at(-1));
  });

  it('a save flushes the log after the indexing it waited for: no saved index is ahead of the durable log', async () => {
    const store = await groupStore();
    await store.append(turn(0));
    // The store's id is recorded by the first checkpoint: from the next one on, the
    // checkpoint's own flush is called in the turn it starts.
    await store.checkpoint();
    const events: string[] = [];
    shadow(store.log, 'flush', (orig, args) => (events.push('flush'), orig(...args)));
    shadow(store.lexical, 'catchUpAsync', (orig, args) => {
      const job = orig(...args) as Promise<unknown>;
      void job.then(() => events.push('indexed'));
      return job;
    });
    shadow(store.lexical, 'saveAsync', (orig, args) => (events.push('save'), orig(...args)));
    // Staged in the same turn as the checkpoint: its flush is called before the burst's
    // catch-up starts (next check phase), so the indexes the save waits for hold records
    // that flush did not cover.
    const burst = Array.from({ length: 8 }, (_, i) => store.append(turn(1 + i)));
    await store.checkpoint();
    await Promise.all(burst);
    for (const m of ['flush', 'catchUpAsync', 'saveAsync'])
      delete (m === 'flush' ? (store.log as unknown as Record<string, unknown>) : (store.lexical as unknown as Record<string, unknown>))[m];
    const save = events.indexOf('save');
    expect(events.slice(0, save)).toContain('indexed');
    // A flush between the last indexing before the save and the save.
    expect(events.slice(events.lastIndexOf('indexed', save), save)).toContain('flush');
  });
});

describe('a close that begins after a burst was staged starts no catch-up on released indexes', () => {
  it('a refused batch followed at once by close leaves no rejection behind', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (e: unknown) => unhandled.push(e);
    process.on('unhandledRejection', onUnhandled);
    try {
      const s = await SpanStore.open(tmpDir(), { durability: 'group', maxTextBytes: 1024 });
      const refused = s.appendMany([turn(0), { turn: 3, role: 'tool', text: 'x'.repeat(1025) }]);
      await expect(refused).rejects.toMatchObject({ code: 'TEXT_TOO_LARGE' });
      await s.close();
      // The staged catch-up's check phase, and a few turns after it.
      for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });
});
