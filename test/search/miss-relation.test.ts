// Rule 1d of src/support.ts: a yes/no question that says what a call evaluates to, with a
// literal of code for the value ("does Min() evaluate to -oo?"), claims the call and the value
// together: held where the value stands right after the call (`Min() = oo`, `Min() returns
// oo`), never by a line that names both apart ("return `oo` and `-oo` respectively") nor by
// the value next to another call (`Max() = -oo`). Without it the question has nothing specific
// in it and any span about Min() answers it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SpanStore, TurnInput } from '../../src/store.js';
import { claimRelation } from '../../src/query.js';
import { storeWithTask } from '../helpers/data.js';

const TASK: Omit<TurnInput, 'turn'>[] = [
  { role: 'user', text: 'Zero-argument Min() and Max() raise ValueError; they should return the identities instead.' },
  { role: 'assistant', text: 'I will allow `Min()` and `Max()` with no arguments and return `oo` and `-oo` respectively.' },
  { role: 'tool', text: 'Min() = oo\nMax() = -oo' },
  { role: 'tool', text: 'def test_Min():\n    assert Min(-oo, -oo) == -oo\n    assert Min(-oo, n) == -oo' },
  { role: 'assistant', text: 'The parser fix is in; `parse_header()` returns None for an empty line now.' },
];

let store: SpanStore;
let turnOf: Map<string, number>;

beforeAll(async () => {
  ({ store, turnOf } = await storeWithTask('spanguard-miss-relation-', TASK));
}, 60_000);

afterAll(async () => {
  await store?.close();
});

describe('rule 1d: what a yes/no question says a call evaluates to is part of its claim', () => {
  it('reads the call and a literal value of a yes/no question, and nothing else', () => {
    expect(claimRelation('In the sympy task, does Min() evaluate to -oo after the fix?')).toEqual({ key: 'min() = -oo', expr: 'min()', value: '-oo' });
    expect(claimRelation('Did `parse_header()` return None?')).toEqual({ key: 'parse_header() = none', expr: 'parse_header()', value: 'none' });
    // A plain word is no literal; a number is already a value of the claim; a wh-question asks.
    expect(claimRelation('Does f() return a list?')).toBeNull();
    expect(claimRelation('Did len(x) return 42?')).toBeNull();
    expect(claimRelation('What does Max() evaluate to after the fix?')).toBeNull();
  });
  it('a value the transcript gives only to another call, or names apart from the call, is not in transcript', async () => {
    const r = await store.search('Does Min() evaluate to -oo after the fix?');
    expect(r).toMatchObject({ miss: true, missReason: 'value-not-stated', missDetail: 'min() = -oo', hits: [] });
  });
  it('the value the call does evaluate to is answered, by the line that says so', async () => {
    for (const q of ['Does Min() evaluate to oo after the fix?', 'Does Max() return -oo now?']) {
      const r = await store.search(q);
      expect(r.miss).toBe(false);
      expect(r.hits[0]!.turnStart).toBe(turnOf.get(TASK[2]!.text));
      expect(r.hits[0]!.support!.claim).toBe(true);
    }
  });
  it('a sentence that joins them with a verb of result holds it too', async () => {
    const r = await store.search('Does parse_header() return None for an empty line?');
    expect(r.miss).toBe(false);
    expect(r.hits[0]!.turnStart).toBe(turnOf.get(TASK[4]!.text));
  });
});
