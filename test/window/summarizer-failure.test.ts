// A summarizer that throws or returns a non-string: push rejects with SUMMARIZER_FAILED
// naming the summarizer and the stored ids, the turn is stored once, no pass is applied,
// and the next push runs the pass again.
import { describe, expect, it } from 'vitest';
import { ContextWindow, SpanguardError, type Summarizer } from '../../src/index.js';
import { storesClosedAfterEach } from '../store/helpers.js';
import { toolSessionTurns } from './helpers.js';

const openStore = storesClosedAfterEach();

/** Pushes turns until one push rejects; returns the error and the turn it was pushing. */
async function pushUntilFailure(window: ContextWindow) {
  const turns = toolSessionTurns(80);
  for (let i = 0; i < turns.length; i++) {
    const err = await window.push(turns[i]!).then(
      () => null,
      (e: unknown) => e,
    );
    if (err) return { err: err as SpanguardError, turn: turns[i]!, rest: turns.slice(i + 1) };
  }
  throw new Error('no push failed');
}

async function failing(summarize: Summarizer) {
  const store = await openStore();
  const window = new ContextWindow(store, { budgetTokens: 3000, summarize });
  const { err, turn, rest } = await pushUntilFailure(window);
  return { store, window, err, turn, rest };
}

describe('a summarizer that throws: SUMMARIZER_FAILED, the turn stored once, no pass applied', () => {
  it('names the summarizer and the stored ids; the store and the window hold the turn once, no pass was recorded', async () => {
    let calls = 0;
    const { store, window, err, turn } = await failing(async function flakySummarizer() {
      calls++;
      throw new Error('model timed out');
    });
    expect(err).toBeInstanceOf(SpanguardError);
    expect(err.code).toBe('SUMMARIZER_FAILED');
    expect(err.message).toMatch(/^summarizer flakySummarizer threw: model timed out; the turns are stored \(span ids \d+\)/);
    const id = (err.details.ids as number[])[0]!;
    expect(err.details).toMatchObject({ summarizer: 'flakySummarizer', ids: [id] });
    expect(store.get(id)!.text).toBe(turn.text);
    expect(window.snapshot().at(-1)!.id).toBe(id);
    expect(store.state.passes).toBe(0);
    expect(store.events().filter((e) => e.event.type === 'pass' || e.event.type === 'refusal')).toEqual([]);
    expect(calls).toBe(1);
    expect(window.stats().passes).toBe(0);
  });
  it('the next push runs the pass again, and it is applied once the summarizer answers', async () => {
    let fail = true;
    const { store, window, turn, rest } = await failing(async () => {
      if (fail) throw new Error('rate limited');
      return 'earlier steps ran the tests';
    });
    fail = false;
    const r = await window.push(rest[0]!);
    expect(r.overflow).toBeNull();
    expect(window.stats().passes).toBe(1);
    expect(store.state.passes).toBe(1);
    expect(window.stats().tokens).toBeLessThanOrEqual(3000);
    // Nothing was stored twice: the failed push's turn is in the log once.
    expect(store.findExact(turn.text.slice(0, 200)).filter((h) => h.turnStart === turn.turn)).toHaveLength(1);
  });
});

describe('a summarizer that returns a non-string: SUMMARIZER_FAILED, not a TypeError', () => {
  for (const [name, value] of [
    ['undefined', undefined],
    ['null', null],
    ['a number', 42],
    ['an object', { text: 'summary' }],
  ] as [string, unknown][]) {
    it(`returning ${name}`, async () => {
      const { store, err } = await failing(async function objectSummarizer() {
        return value as string;
      });
      expect(err).toMatchObject({ name: 'SpanguardError', code: 'SUMMARIZER_FAILED', details: { summarizer: 'objectSummarizer' } });
      expect(err.message).toMatch(new RegExp(`^summarizer objectSummarizer returned ${name === 'null' ? 'null' : typeof value}, not a string`));
      expect(store.state.passes).toBe(0);
    });
  }
});
