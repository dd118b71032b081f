// A console that redraws its screen stores the same words turn after turn: copies of one turn
// must not fill the top k and push the other evidence out (src/search.ts, distinct).
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SpanStore, type TurnInput } from '../../src/store.js';
import { distinct } from '../../src/search.js';
import { realTurns, tmpDir } from '../helpers/data.js';

const SCREEN = (n: number) =>
  ` ╭──────────────────────────────╮\n │ deploy pipeline: staging green, production waiting │\n │ cache warm, 14 workers, queue empty │\n │ refreshed ${n} │\n ╰──────────────────────────────╯`;
const EVIDENCE = 'We paused the production deploy pipeline because the release notes were not approved.';

let store: SpanStore;
let dir: string;
let evidenceTurn = 0;

beforeAll(async () => {
  dir = tmpDir('spanguard-copies-');
  store = await SpanStore.open(dir, { durability: 'none' });
  const turns: TurnInput[] = [];
  for (const f of realTurns(120)) turns.push({ turn: turns.length + 1, role: f.role, text: f.text });
  for (let i = 0; i < 12; i++) turns.push({ turn: turns.length + 1, role: 'tool', text: SCREEN(i) });
  turns.push({ turn: turns.length + 1, role: 'assistant', text: EVIDENCE });
  evidenceTurn = turns.length;
  await store.appendMany(turns);
}, 60_000);

afterAll(async () => {
  await store?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

describe('copies of one turn are left for after the distinct evidence', () => {
  it('the redrawn screen shows once in the top 3, and the other turn that answers is there too', async () => {
    const r = await store.search('why was the production deploy pipeline waiting?', { k: 3 });
    expect(r.miss).toBe(false);
    expect(r.hits.filter((h) => h.text.includes('refreshed')).length).toBe(1);
    expect(r.hits.map((h) => h.turnStart)).toContain(evidenceTurn);
  });
  it('a copy that holds more of the query than the span above it is no copy', () => {
    const s = (terms: string[]) => ({
      terms: { matched: terms, missing: [] },
      values: { matched: [], missing: [], contradicted: false },
      names: { matched: [], missing: [] },
      claim: true,
    });
    const a = { span: { text: 'deploy pipeline green, cache warm' }, support: s(['deploy']) };
    const b = { span: { text: 'deploy pipeline green, cache warm' }, support: s(['deploy']) };
    const c = { span: { text: 'deploy pipeline green, cache warm, waiting' }, support: s(['deploy', 'waiting']) };
    const d = { span: { text: 'release notes not approved' }, support: s(['deploy']) };
    expect(distinct([a, b, c, d], 3, 0.7)).toEqual([a, c, d]);
    expect(distinct([a, b, d], 3, 0.7)).toEqual([a, d, b]);
  });
});
