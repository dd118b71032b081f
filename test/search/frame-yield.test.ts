// Rule 1b's frame checks (src/search.ts frameClaims) look each of a question's names up near
// every candidate that holds its claim: a long question holds dozens of names, and each lookup
// is a lexical search over a turn range (up to a millisecond at 10^6 spans). The event loop
// runs between lookups once SLICE_MS has gone by, and the claims withdrawn are the same.
import { describe, expect, it } from 'vitest';
import { loopRan, SLICE_MS } from '../../src/catchup.js';
import { analyzeQuery } from '../../src/query.js';
import { frameClaims } from '../../src/search.js';
import { FRAME_TURNS, supportOf } from '../../src/support.js';
import { turnCounter } from '../helpers/loop.js';

const NAMES = ['URLValidator', 'FooBar', 'BazQux', 'QuuxCorge', 'GraultGarply', 'WaldoFred', 'PlughXyzzy', 'ThudAlpha', 'BravoCharlie', 'DeltaEcho'];
const a = analyzeQuery(`In the ${NAMES.join(', ')} tasks, was Python 3.6.8 installed?`);
const span = (text: string, turn: number) => ({ id: turn, text, role: 'assistant', timestamp: 0, meta: null, turnStart: turn, turnEnd: turn });
const judgedAt = (text: string, turn: number) => ({ c: { id: turn, kind: 1, exact: false, quoted: false, lex: 0, vec: Infinity, time: Infinity, score: 0 }, span: span(text, turn) as never, support: supportOf(a, span(text, turn)), score: 0 });

/** A lexical index whose every lookup takes `ms` and finds a name only in turns below 1,000. */
const slowIndex = (ms: number) =>
  ({
    lexical: {
      search: (_q: string, _k: number, _kind: number, lo: number) => {
        const until = performance.now() + ms;
        while (performance.now() < until);
        return { ids: lo < 1000 ? [1] : [], scores: [] };
      },
    },
  }) as never;

describe('frame checks of a question with many names', () => {
  it('let the event loop run between lookups once a slice has gone by, and withdraw the same claims', async () => {
    // One candidate holds every name; forty hold the claim alone, far from it, half of them
    // where the (fake) index finds the names and half where it does not.
    // The premise: every claim lies beyond FRAME_TURNS of the named span (turn 1).
    expect(FRAME_TURNS).toBeLessThan(199);
    const named = judgedAt(`The ${NAMES.join(' ')} tasks.`, 1);
    const claims = Array.from({ length: 40 }, (_, i) => judgedAt('Python 3.6.8 (default) on linux', i < 20 ? 200 + i * 10 : 5000 + i * 10));
    expect(claims.every((j) => j.support.claim)).toBe(true);
    const turns = turnCounter();
    const t0 = performance.now();
    const before = turns.now();
    await frameClaims(slowIndex(0.5), [named, ...claims], a);
    const took = performance.now() - t0;
    const turned = turns.now() - before;
    turns.stop();
    // The premise: lookups that outlast a few slices (40 candidates × 11 names × 0.5 ms).
    expect(took).toBeGreaterThan(3 * SLICE_MS);
    expect(turned).toBeGreaterThanOrEqual(2);
    // Near turn 1 (within FRAME_TURNS of the named span) or found by the index: the claim stands.
    for (const j of claims.slice(0, 20)) expect(j.support.claim).toBe(true);
    for (const j of claims.slice(20)) expect(j.support).toMatchObject({ claim: false });
    expect(claims[39]!.support.outOfFrame?.length).toBeGreaterThan(5);
  });

  it('count the slice the search began before them (judging): past it, the loop runs before their first lookup', async () => {
    const named = judgedAt(`The ${NAMES.join(' ')} tasks.`, 1);
    const claim = judgedAt('Python 3.6.8 (default) on linux', 5000);
    const turns = turnCounter();
    const seen: number[] = [];
    const index = { lexical: { search: () => (seen.push(turns.now()), { ids: [], scores: [] }) } } as never;
    // A slice of work with no pause, as judging ends one, then the frame checks in the same turn.
    loopRan();
    const at = turns.now();
    const until = performance.now() + SLICE_MS + 1;
    while (performance.now() < until);
    await frameClaims(index, [named, claim], a);
    turns.stop();
    expect(seen.length).toBeGreaterThan(0);
    expect(seen[0]).toBeGreaterThan(at);
  });
});
