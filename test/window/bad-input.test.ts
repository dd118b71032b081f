// ContextWindow: a malformed turn or option is a typed SpanguardError, and a refused push
// leaves both the store and the window as they were.
import { describe, expect, it } from 'vitest';
import { ContextWindow, type WindowTurn } from '../../src/index.js';
import { storesClosedAfterEach } from '../store/helpers.js';

const openStore = storesClosedAfterEach();

async function expectPushRefused(turns: unknown, code: string, message?: RegExp): Promise<void> {
  const s = await openStore();
  const w = new ContextWindow(s, { budgetTokens: 1000 });
  await w.push({ turn: 2, role: 'user', text: 'kept' });
  const next = s.log.nextId();
  const before = w.snapshot();
  const err = await w.pushMany(turns as WindowTurn[]).then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toMatchObject({ name: 'SpanguardError', code });
  if (message) expect((err as Error).message).toMatch(message);
  expect(s.log.nextId()).toBe(next);
  expect(w.snapshot()).toEqual(before);
  expect(w.stats().pushedTokens).toBe(before[0]!.tokens);
}

describe('push and pushMany refuse malformed turns with a typed error, writing nothing', () => {
  const good = { turn: 3, role: 'user', text: 'fine' };
  for (const [name, turns, code, message] of [
    ['not an array', 5, 'INVALID_ARGUMENT', /expects an array/],
    ['a null turn', [good, null], 'INVALID_ARGUMENT', /index 1 is not an object/],
    ['a number for a turn', [7], 'INVALID_ARGUMENT', /index 0 is not an object/],
    ['text that is a number', [good, { turn: 3, role: 'user', text: 5 }], 'INVALID_ARGUMENT', /text must be a string/],
    ['text missing', [{ turn: 3, role: 'user' }], 'INVALID_ARGUMENT', /text must be a string/],
    ['a BigInt in meta', [{ ...good, meta: { n: 1n } }], 'INVALID_ARGUMENT', /BigInt/],
    ['attachToPrevious not a boolean', [{ ...good, attachToPrevious: 'yes' }], 'INVALID_ARGUMENT', /attachToPrevious must be a boolean/],
    ['a fractional turn', [{ ...good, turn: 3.5 }], 'INVALID_TURN', /turn must be a non-negative integer/],
  ] as [string, unknown, string, RegExp][]) {
    it(`${name} → ${code}`, async () => expectPushRefused(turns, code, message));
  }
  it('push(null) → INVALID_ARGUMENT', async () => {
    const s = await openStore();
    const w = new ContextWindow(s, { budgetTokens: 1000 });
    await expect(w.push(null as unknown as WindowTurn)).rejects.toMatchObject({ name: 'SpanguardError', code: 'INVALID_ARGUMENT' });
  });
  it('a host token counter returning a fraction → INVALID_ARGUMENT', async () => {
    const s = await openStore();
    const w = new ContextWindow(s, { budgetTokens: 1000, countTokens: () => 1.5 });
    const next = s.log.nextId();
    await expect(w.push({ turn: 2, role: 'user', text: 'x' })).rejects.toMatchObject({ name: 'SpanguardError', code: 'INVALID_ARGUMENT' });
    expect(s.log.nextId()).toBe(next);
    expect(w.snapshot()).toEqual([]);
  });
});

describe('malformed ContextWindow options are INVALID_OPTIONS', () => {
  for (const [name, options] of [
    ['no options', undefined],
    ['budgetTokens below 64', { budgetTokens: 63 }],
    ['budgetTokens a string', { budgetTokens: '1000' }],
    ['keepRecentTurns negative', { budgetTokens: 1000, keepRecentTurns: -1 }],
    ['policy unknown', { budgetTokens: 1000, policy: 'drop' }],
    ['summarize not a function', { budgetTokens: 1000, summarize: 'extractive' }],
    ['countTokens not a function', { budgetTokens: 1000, countTokens: 4 }],
    ['lowWater 0', { budgetTokens: 1000, lowWater: 0 }],
    ['lowWater above 1', { budgetTokens: 1000, lowWater: 1.5 }],
    ['maxSummaries 0', { budgetTokens: 1000, maxSummaries: 0 }],
  ] as [string, unknown][]) {
    it(name, async () => {
      const s = await openStore();
      expect(() => new ContextWindow(s, options as never)).toThrowError(expect.objectContaining({ name: 'SpanguardError', code: 'INVALID_OPTIONS' }));
    });
  }
});
