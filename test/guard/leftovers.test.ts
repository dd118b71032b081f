// Two guard records that must say what happened and stay bounded: a pass whose append fails
// on the disk is recorded as an I/O failure (`io-error`), not as a request the guard could not
// take; and the hit-rate monitor keeps a bounded history of its passes while the verdict and
// the extremes still read every pass.
import { describe, expect, it, vi } from 'vitest';
import { ErrorCode, SpanguardError } from '../../src/errors.js';
import { RecordKind } from '../../src/native.js';
import { HIT_RATE_HISTORY, HitRateMonitor } from '../../src/verdict.js';
import { factSession } from './helpers.js';

const refusals = (s: Awaited<ReturnType<typeof factSession>>['s']) => s.events().flatMap((e) => (e.event.type === 'refusal' ? [e.event] : []));

describe('a pass whose append fails on the disk', () => {
  for (const code of [ErrorCode.IO_ERROR, ErrorCode.FSYNC_FAILED]) {
    it(`is recorded as an io-error refusal (${code}), and the same pass succeeds once the disk does`, async () => {
      const { s, ids } = await factSession({}, 40, 20);
      const log = (s as unknown as { log: { append(cols: unknown): Promise<unknown> } }).log;
      const real = log.append.bind(log);
      let failed = 0;
      // The pass's own append (its summary and its event) fails once; the refusal's record does not.
      const spy = vi.spyOn(log, 'append').mockImplementation((cols) => {
        if (failed === 0 && Array.from((cols as { kinds: Uint8Array }).kinds).includes(RecordKind.summary)) {
          failed++;
          return Promise.reject(new SpanguardError(code, 'write failed: no space left on device'));
        }
        return real(cols);
      });
      const req = { evict: ids.slice(0, 5), summary: { text: 'setup of the repository and the first test run', turnStart: 1, turnEnd: 5 } };
      await expect(s.compact(req)).rejects.toMatchObject({ code });
      expect(failed).toBe(1);
      expect(refusals(s)).toMatchObject([{ reason: 'io-error', anchors: [], divergence: 0 }]);
      expect(refusals(s)[0]!.detail).toContain(code);
      spy.mockRestore();
      const r = await s.compact(req);
      expect(r.evicted).toEqual(ids.slice(0, 5));
    });
  }

  it('a malformed request is still an invalid-request refusal', async () => {
    const { s, ids } = await factSession({}, 40, 20);
    await expect(s.compact({ evict: ids.slice(0, 2), summary: { text: 'x', turnStart: 3, turnEnd: 1 } })).rejects.toMatchObject({ code: ErrorCode.INVALID_TURN });
    expect(refusals(s)).toMatchObject([{ reason: 'invalid-request' }]);
  });
});

describe('HitRateMonitor.history is bounded', () => {
  it('keeps the newest HIT_RATE_HISTORY passes, and the verdict still compares each pass with the one before', () => {
    const h = new HitRateMonitor(0.15);
    const passes = HIT_RATE_HISTORY * 2 + 10;
    for (let p = 1; p <= passes; p++) {
      // A high first pass, a rate that drifts down, then one rise at the very end.
      const rate = p === 1 ? 0.95 : p === passes ? 0.9 : 0.5 - p / (passes * 10);
      const r = h.observe(p, Math.round(rate * 1000), 1000);
      if (p === passes) expect(r.rise).not.toBeNull();
      else if (p > 1) expect(r.rise).toBeNull();
    }
    expect(h.history.length).toBe(HIT_RATE_HISTORY);
    expect(h.history[0]!.pass).toBe(passes - HIT_RATE_HISTORY + 1);
    expect(h.history.at(-1)).toEqual({ pass: passes, hitRate: 0.9 });
    // The extremes read every pass, the dropped ones included.
    expect(h.highest).toBe(0.95);
    expect(h.lowest).toBe(Math.round((0.5 - (passes - 1) / (passes * 10)) * 1000) / 1000);
    expect(h.history.some((x) => x.hitRate === 0.95)).toBe(false);
  });

  it('restoring replayed passes keeps the same bound, and a live pass is not counted twice', () => {
    const h = new HitRateMonitor();
    for (let p = 1; p <= HIT_RATE_HISTORY + 5; p++) h.restore(p, 0.25);
    h.restore(HIT_RATE_HISTORY + 5, 0.25);
    expect(h.history.length).toBe(HIT_RATE_HISTORY);
    expect(h.history.at(-1)!.pass).toBe(HIT_RATE_HISTORY + 5);
    expect([h.lowest, h.highest]).toEqual([0.25, 0.25]);
  });
});
