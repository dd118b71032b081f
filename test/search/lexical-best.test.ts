// Recall first: the fusion of BM25 and vectors ranks turns that share many of a question's
// common words above the one turn that shares its rare word; the best BM25 match must still be
// judged however the fusion ranks it, so that its support can lift it into the hits.
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SpanStore, type TurnInput } from '../../src/store.js';
import { realTurns, tmpDir } from '../helpers/data.js';

const EVIDENCE = 'The Zanzibar rollout went out behind a feature flag.';
const QUERY = 'How did the team handle the rollout for Zanzibar?';

let store: SpanStore;
let dir: string;
let evidenceTurn = 0;

beforeAll(async () => {
  dir = tmpDir('spanguard-lexical-best-');
  store = await SpanStore.open(dir, { durability: 'none' });
  const turns: TurnInput[] = [];
  for (const f of realTurns(200)) turns.push({ turn: turns.length + 1, role: f.role, text: f.text });
  // Turns worded like the question, each with another subject: near to it by vector, and by
  // BM25 below the turn that holds its rare word.
  for (let i = 0; i < 40; i++) turns.push({ turn: turns.length + 1, role: 'user', text: `how did the team handle the rollout of build ${i}?` });
  turns.push({ turn: turns.length + 1, role: 'assistant', text: EVIDENCE });
  evidenceTurn = turns.length;
  await store.appendMany(turns);
}, 60_000);

afterAll(async () => {
  await store?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

describe("the best BM25 match is always judged, whatever the fusion's order", () => {
  it('BM25 ranks the turn with the rare word first', () => {
    // The premise, measured: the lexical index alone puts the evidence first.
    const lex = store.lexical.search('team handle rollout zanzibar', 1, 1, Number.NaN, Number.NaN);
    expect(store.log.get(lex.ids[0]!)!.turnStart).toBe(evidenceTurn);
  });
  it('search returns it among its k hits', async () => {
    const r = await store.search(QUERY, { k: 3 });
    expect(r.miss).toBe(false);
    expect(r.hits.map((h) => h.turnStart)).toContain(evidenceTurn);
  });
});
