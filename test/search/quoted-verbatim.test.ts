// A quoted part of the query is a candidate path of its own (every span holding it verbatim
// ranks above the lexical and vector candidates) only while the whole query is held verbatim
// nowhere: once it is, its matches hold every quoted part, and a span holding only a fragment
// is a candidate by its words and vector like any other, not an exact match of the query.
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SpanStore, type TurnInput } from '../../src/store.js';
import { realTurns, tmpDir } from '../helpers/data.js';

const QUOTE = 'The runner printed `prune_hidden_dirs` twice before the loop ended in the worker.';

let store: SpanStore;
let dir: string;
const ids = new Map<string, number>();

beforeAll(async () => {
  dir = tmpDir('spanguard-quoted-verbatim-');
  store = await SpanStore.open(dir, { durability: 'none' });
  const turns: TurnInput[] = realTurns(120).map((t, i) => ({ turn: i + 1, role: t.role, text: t.text }));
  const add = (name: string, text: string) => {
    turns.push({ turn: turns.length + 1, role: 'assistant', text });
    ids.set(name, turns.length - 1);
  };
  add('verbatim', `Next step. ${QUOTE} Then it exited.`);
  for (let i = 0; i < 5; i++) add(`fragment${i}`, `def prune_hidden_dirs(root${i}): return [d for d in root${i}]`);
  const out = await store.appendMany(turns);
  for (const [k, v] of ids) ids.set(k, out[v]!);
}, 60_000);

afterAll(async () => {
  await store?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

describe('a query held verbatim does not look its quoted parts up', () => {
  it('the verbatim span is the one exact hit; spans holding a fragment are found by their words', async () => {
    const r = await store.search(QUOTE, { k: 10 });
    expect(r.hits[0]?.spanId).toBe(ids.get('verbatim'));
    expect(r.hits[0]?.via).toBe('exact');
    const rest = r.hits.slice(1);
    expect(rest.map((h) => h.spanId)).toContain(ids.get('fragment0'));
    expect(rest.filter((h) => h.via === 'exact')).toEqual([]);
  });

  it('a query held nowhere verbatim still gets every span holding its quoted part', async () => {
    const r = await store.search('did the runner print `prune_hidden_dirs` after the loop?', { k: 10 });
    const fragments = [0, 1, 2, 3, 4].map((i) => ids.get(`fragment${i}`));
    for (const id of fragments) expect(r.hits.map((h) => h.spanId)).toContain(id);
  });
});
