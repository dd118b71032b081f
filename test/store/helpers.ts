// Shared helpers for the store's bad-input tests: a store closed after each test, and a check
// that a refused append wrote nothing (no id handed out, no byte in the log).
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, expect } from 'vitest';
import { SpanStore, type TurnInput } from '../../src/index.js';
import { tmpDir } from '../helpers/data.js';

/** For a test file: returns an opener whose stores are closed after each test (call at the top level). */
export function storesClosedAfterEach(): () => Promise<SpanStore> {
  const open: SpanStore[] = [];
  afterEach(async () => {
    for (const s of open.splice(0)) await s.close().catch(() => {});
  });
  return async () => {
    const s = await SpanStore.open(tmpDir(), { durability: 'none' });
    open.push(s);
    await s.append({ turn: 1, role: 'user', text: 'the first turn' });
    return s;
  };
}

/** Bytes of the log's segment files. */
export function logBytes(store: SpanStore): number {
  const dir = path.join(store.dir, 'log');
  return fs.readdirSync(dir).filter((f) => f.endsWith('.log')).reduce((n, f) => n + fs.statSync(path.join(dir, f)).size, 0);
}

/**
 * `appendMany` of a good turn, the bad one, and another good turn: rejects with `code`
 * (a SpanguardError, never a raw TypeError or RangeError), hands out no id and writes no byte.
 */
export async function expectRefused(store: SpanStore, bad: Partial<TurnInput> | Record<string, unknown>, code: string, message?: RegExp): Promise<void> {
  const next = store.log.nextId();
  await store.log.flush();
  const bytes = logBytes(store);
  const turn = (store.state.lastTurn ?? 0) + 1;
  const batch = [
    { turn, role: 'user', text: 'good before' },
    { turn, role: 'user', text: 'the bad one', ...bad } as TurnInput,
    { turn, role: 'user', text: 'good after' },
  ];
  const err = await store.appendMany(batch).then(
    () => null,
    (e: unknown) => e,
  );
  expect(err, 'the batch must be refused').not.toBeNull();
  expect((err as Error).name).toBe('SpanguardError');
  expect(err).toMatchObject({ code });
  if (message) expect((err as Error).message).toMatch(message);
  expect(store.log.nextId()).toBe(next);
  await store.log.flush();
  expect(logBytes(store)).toBe(bytes);
}
