// What a question names that lives outside the turn's words: a day in the turn's fields, a
// value inside a single-quoted part. Neither may turn a stated answer into "not in transcript".
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SpanStore, type TurnInput } from '../../src/store.js';
import { realTurns, tmpDir } from '../helpers/data.js';

const FACTS: Omit<TurnInput, 'turn'>[] = [
  {
    role: 'assistant',
    text: "This proves the test is necessary: when the user runs 'list all', the CLI must call list_all_books.",
    meta: { source_file: 'day-021.md' },
  },
  { role: 'assistant', text: 'The `or 0` on reading progress is pointless: NULL > 0 is already FALSE in SQL.' },
];

let store: SpanStore;
let dir: string;
const turnOf = new Map<string, number>();

beforeAll(async () => {
  dir = tmpDir('spanguard-asked-fields-');
  store = await SpanStore.open(dir, { durability: 'none' });
  const turns: TurnInput[] = [];
  const add = (t: Omit<TurnInput, 'turn'>) => {
    turns.push({ ...t, turn: turns.length + 1 });
    turnOf.set(t.text, turns.length);
  };
  realTurns(200).forEach((f, i) => {
    add({ role: f.role, text: f.text });
    if (i % 100 === 50) add(FACTS[i >> 7]!);
  });
  await store.appendMany(turns);
}, 60_000);

afterAll(async () => {
  await store?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

const rankOf = async (q: string, i: number) => {
  const r = await store.search(q, { k: 10 });
  return { r, rank: r.hits.findIndex((h) => h.turnStart === turnOf.get(FACTS[i]!.text)) };
};

describe("a question's day is matched against the turn's fields, never required in its text", () => {
  it('"On day 21, … \'list all\' …" finds the turn of day-021.md that never says 21', async () => {
    const { r, rank } = await rankOf("On day 21, what did the experiment prove the 'list all' test verifies?", 0);
    expect(r.miss).toBe(false);
    expect(rank).toBe(0);
    expect(r.hits[0]!.support!.time).toEqual({ asked: 'day 21', match: true });
    expect(r.hits[0]!.support!.claim).toBe(true);
  });
});

describe('a value inside a single-quoted part is held with the quote, not next to the words outside it', () => {
  it('"the \'or 0\' fallback" is answered by a turn that says `or 0` and no "0 fallback"', async () => {
    const { r, rank } = await rankOf("Why was the 'or 0' fallback on reading progress deemed pointless?", 1);
    expect(r.miss).toBe(false);
    expect(rank).toBe(0);
  });
  it('a value the quote does not hold is still not in transcript', async () => {
    expect(await store.search("Why was the 'or 7' fallback on reading progress deemed pointless?")).toMatchObject({
      miss: true,
      missReason: 'value-not-stated',
    });
  });
});
