// repair() replaces the vector index without holding the event loop for the files' removal:
// the old files are unlinked and the empty index created on the thread pool (openVectorIndex),
// and the old index answers searches until the new one takes its place.
import { afterEach, describe, expect, it } from 'vitest';
import { SpanStore } from '../../src/index.js';
import { addon } from '../../src/native.js';
import { realTurns, tmpDir } from '../helpers/data.js';

const testing = (addon() as unknown as { _testing: { background(): { jobs: number; offThread: number } } })._testing;

const open: SpanStore[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close().catch(() => {});
});

describe("repair() creates the new vector index on the thread pool; searches go on through the replacement", () => {
  it('the empty vector index is made off the JS thread, no search fails meanwhile, and the rebuilt indexes agree with the log', async () => {
    const store = await SpanStore.open(tmpDir(), { durability: 'none' });
    open.push(store);
    const turns = realTurns(3000);
    await store.appendMany(turns.map((t) => ({ turn: t.turn, role: t.role, text: t.text })));
    const marker = await store.append({ turn: turns.length + 1, role: 'user', text: 'the okapi ledger lists the wombat invoices' });
    await store.checkpoint();
    const before = testing.background().offThread;
    let done = false;
    const repairing = store.repair().finally(() => (done = true));
    const failures: unknown[] = [];
    let searches = 0;
    while (!done) {
      try {
        await store.search('okapi ledger wombat invoices', { k: 3 });
        searches++;
      } catch (e) {
        failures.push(e);
      }
      await new Promise((res) => setImmediate(res));
    }
    const report = await repairing;
    expect(failures).toEqual([]);
    expect(searches).toBeGreaterThan(0);
    // prepareVectorIndex ran on the pool (a synchronous replacement queues no job).
    expect(testing.background().offThread - before).toBeGreaterThanOrEqual(1);
    expect(report.rebuilt).toEqual(['lexical', 'vector']);
    expect(await store.verifyIndexes()).toEqual([]);
    expect((await store.search('okapi ledger wombat invoices', { k: 3 })).hits[0]?.spanId).toBe(marker);
  }, 120_000);
});
