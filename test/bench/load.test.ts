// The load test's trend figure (bench/load.bench.ts, throughputSlope): flat, decaying and
// short-last-window throughput read as what they are.
import { describe, expect, it } from 'vitest';
import { throughputSlope } from '../../bench/load.bench.js';

const windows = (rates: number[], last?: { seconds: number; rate: number }) => {
  const out = rates.map((r, i) => ({ t: (i + 1) * 5, seconds: 5, appends: r * 5 }));
  if (last) out.push({ t: rates.length * 5 + last.seconds, seconds: last.seconds, appends: last.rate * last.seconds });
  return out;
};

describe('throughput slope is the per-minute trend as a share of the mean rate', () => {
  it('is 0 for flat throughput', () => {
    expect(throughputSlope(windows([1000, 1000, 1000, 1000]))).toBeCloseTo(0, 10);
  });

  it('is negative for a decay: 1000 → 700 over 15 s loses 20 per second, 1200 a minute, 1.41× the mean of 850', () => {
    expect(throughputSlope(windows([1000, 900, 800, 700]))).toBeCloseTo((-20 * 60) / 850, 6);
  });

  it('a short last window at the same rate is not read as decay', () => {
    expect(throughputSlope(windows([1000, 1000, 1000], { seconds: 1.5, rate: 1000 }))).toBeCloseTo(0, 10);
  });

  it('is not a number with one window', () => {
    expect(throughputSlope(windows([1000]))).toBeNaN();
  });
});
