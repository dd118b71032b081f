// The event-loop stall figures (bench/lib.ts, withLoopDelay) see a stall that ends with the
// operation: the monitor records it only once the loop turns again.
import { describe, expect, it } from 'vitest';
import { withLoopDelay } from '../../bench/lib.js';

const busy = (ms: number) => {
  const until = performance.now() + ms;
  while (performance.now() < until);
};

describe('withLoopDelay reports the longest stall of the operation', () => {
  it('a 150 ms synchronous stretch at the end of the operation is reported', async () => {
    const [r, d] = await withLoopDelay(async () => {
      await new Promise((res) => setTimeout(res, 1));
      busy(150);
      return 7;
    });
    expect(r).toBe(7);
    expect(d.wallMs).toBeGreaterThanOrEqual(150);
    expect(d.maxMs).toBeGreaterThanOrEqual(140);
  });
});
