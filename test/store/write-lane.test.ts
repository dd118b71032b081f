// The jobs an append waits for run on the write lane (native/napi/background.h ThreadLane), not
// on the libuv thread pool: group commit's fdatasync and the indexes' catch-up of the burst.
// Here every pool thread is held (each blocked opening a FIFO no one writes yet) while a
// `group` append is made: it resolves durable and indexed all the same, and a pool job queued
// before it is still waiting when it does. On the pool the append would wait for the held
// threads, which are let go only after it resolved: the test would never end.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SpanStore } from '../../src/index.js';
import { tmpDir } from '../helpers/data.js';

const POOL = Number(process.env.UV_THREADPOOL_SIZE ?? 4);

const open: SpanStore[] = [];
let fifos: string[] = [];
/** Opens each FIFO for writing, which lets the pool thread blocked opening it for reading go. */
function release(): void {
  for (const f of fifos.splice(0)) {
    try {
      fs.closeSync(fs.openSync(f, fs.constants.O_WRONLY | fs.constants.O_NONBLOCK));
    } catch {
      // No reader is blocked on it (its open already returned).
    }
  }
}
afterEach(async () => {
  release();
  for (const s of open.splice(0)) await s.close().catch(() => {});
});

/** Holds every thread of the libuv pool: each blocks opening a FIFO for reading until release(). */
function holdPool(dir: string): Promise<fs.promises.FileHandle[]> {
  fifos = Array.from({ length: POOL }, (_, i) => path.join(dir, `hold-${i}`));
  for (const f of fifos) execFileSync('mkfifo', [f]);
  return Promise.all(fifos.map((f) => fs.promises.open(f, 'r')));
}

describe('write lane: an append does not wait for the thread pool', () => {
  it('a group append resolves durable and indexed while every pool thread is held', { timeout: 20_000 }, async () => {
    const dir = tmpDir();
    const store = await SpanStore.open(path.join(dir, 'store'), { durability: 'group' });
    open.push(store);
    await store.append({ turn: 1, role: 'user', text: 'the deploy target is eu-west-3' });
    const held = holdPool(dir);
    // Queued after the held opens: it runs only once a pool thread is free.
    let statDone = false;
    const stat = fs.promises.stat(dir).then(() => (statDone = true));
    const ids = await Promise.all([
      store.append({ turn: 2, role: 'assistant', text: 'noted: eu-west-3 for the deploy' }),
      store.append({ turn: 3, role: 'user', text: 'and the replica count is 5' }),
    ]);
    expect(statDone).toBe(false);
    expect(store.lexical.highWater()).toBeGreaterThan(ids[1]!);
    expect(store.vector.highWater()).toBeGreaterThan(ids[1]!);
    release();
    for (const h of await held) await h.close();
    await stat;
    const found = await store.search('replica count', { k: 3 });
    expect(found.hits.map((h) => h.turnStart)).toContain(3);
  });
});
