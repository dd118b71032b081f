// A large group-commit burst settles its waiters in runs of at most SETTLE_RUN per turn of the
// event loop (src/log-append.ts): each settled append resumes its caller in the turn that
// settles it, so settling hundreds at once held the loop for all of their callers. Turns are
// counted (setImmediate hops), not timed.
import { afterEach, describe, expect, it } from 'vitest';
import { SETTLE_RUN } from '../../src/log-append.js';
import { columns, durabilities, openLog, rowsFor, testing, tmpDir } from './helpers.js';
import { turnCounter } from '../helpers/loop.js';

afterEach(() => testing.clearFaults());

describe('a group-commit burst settles in runs of at most SETTLE_RUN waiters per turn', () => {
  it(`a burst of ${4 * SETTLE_RUN} one-span appends settles over at least 4 turns, in submission order, each with its own id`, async () => {
    const log = openLog(tmpDir('settle-runs'), { durability: durabilities.group });
    const n = 4 * SETTLE_RUN;
    const turns = turnCounter();
    const order: number[] = [];
    const at: number[] = [];
    const waits = Array.from({ length: n }, (_, i) =>
      log.append(columns(rowsFor(i, 1))).then((id) => {
        order.push(i);
        at.push(turns.now());
        return id;
      }),
    );
    expect(await Promise.all(waits)).toEqual(Array.from({ length: n }, (_, i) => i + 1));
    turns.stop();
    expect(order).toEqual(Array.from({ length: n }, (_, i) => i));
    // No turn settles more than SETTLE_RUN of them.
    const perTurn = new Map<number, number>();
    for (const t of at) perTurn.set(t, (perTurn.get(t) ?? 0) + 1);
    expect(Math.max(...perTurn.values())).toBeLessThanOrEqual(SETTLE_RUN);
    expect(perTurn.size).toBeGreaterThanOrEqual(4);
    await log.close();
  });

  it('a burst of at most SETTLE_RUN settles in one turn, the one its fdatasync completes in', async () => {
    const log = openLog(tmpDir('settle-small'), { durability: durabilities.group });
    const turns = turnCounter();
    const at: number[] = [];
    const small = Array.from({ length: SETTLE_RUN }, (_, i) => log.append(columns(rowsFor(i, 1))).then((id) => (at.push(turns.now()), id)));
    expect(await Promise.all(small)).toEqual(Array.from({ length: SETTLE_RUN }, (_, i) => i + 1));
    turns.stop();
    expect(new Set(at).size).toBe(1);
    await log.close();
  });
});
