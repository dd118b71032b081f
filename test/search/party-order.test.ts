// A question that attributes what it asks to a party ("what did the user remind the assistant
// to do?"): after the best evidence by content, the asked party's spans come before the other
// party's, which share more of the question's words (src/search.ts, pick).
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SpanStore, type TurnInput } from '../../src/store.js';
import { tmpDir } from '../helpers/data.js';

const ASKED = 'Reminder: always run the linter before pushing.';

let store: SpanStore;
let dir: string;
let askedTurn = 0;

beforeAll(async () => {
  dir = tmpDir('spanguard-party-order-');
  store = await SpanStore.open(dir, { durability: 'none' });
  const turns: TurnInput[] = [];
  // Filler of both parties that shares no word with the question.
  for (let i = 0; i < 150; i++)
    turns.push({ turn: turns.length + 1, role: i % 2 ? 'user' : 'assistant', text: `step ${i}: ran the build, ${i * 3} files changed.` });
  turns.push({ turn: turns.length + 1, role: 'user', text: ASKED });
  askedTurn = turns.length;
  // The agent side's outputs: they hold the question's name (GitHub), the user's turn does not.
  for (let i = 0; i < 10; i++)
    turns.push({ turn: turns.length + 1, role: 'tool', text: `assistant log ${i}: pushing to GitHub (git@github.com:acme/app.git), push ${i} of 10` });
  await store.appendMany(turns);
}, 60_000);

afterAll(async () => {
  await store?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

describe("a party's question lists that party's spans right after the best evidence", () => {
  it('the best evidence by content leads, whoever said it, and the user turn follows it', async () => {
    const r = await store.search('What did the user remind the assistant to always do before pushing to GitHub?', { k: 3 });
    expect(r.miss).toBe(false);
    expect(r.hits[0]!.support!.speaker).toMatchObject({ asked: 'user', match: false });
    expect(r.hits[1]!.turnStart).toBe(askedTurn);
    expect(r.hits[1]!.support!.speaker).toMatchObject({ asked: 'user', said: 'user', match: true });
  });
});
