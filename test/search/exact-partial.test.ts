// A query the index cannot narrow (no letter, digit or identifier: a rule of box drawing or of
// `=`) is checked verbatim against the newest texts only, EXACT_SCAN_BYTES of them; past that
// the search says so (`exactPartial`) instead of reading every stored text. findExact reads all.
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SpanStore, type TurnInput } from '../../src/store.js';
import { EXACT_SCAN_BYTES } from '../../src/search.js';
import { tmpDir } from '../helpers/data.js';

const RULE = `| ${'='.repeat(40)} |`;
/** Held only by the oldest span with a rule, past the budget. */
const OLD_RULE = `+${'-'.repeat(40)}+`;
const FILLER = 4096;

let store: SpanStore;
let dir: string;
let oldId = -1;
let newId = -1;

beforeAll(async () => {
  dir = tmpDir('spanguard-exact-partial-');
  store = await SpanStore.open(dir, { durability: 'none' });
  // More text than the budget: the first rule lies past it, counted from the newest span.
  const n = Math.ceil((1.5 * EXACT_SCAN_BYTES) / FILLER);
  const turns: TurnInput[] = [];
  for (let i = 0; i < n; i++) {
    const head = `step ${i}: the build log of module m${i} follows`;
    const text = i === 3 ? `${head}\n${RULE}\n${OLD_RULE}\n` : i === n - 5 ? `${head}\n${RULE}\n` : `${head}\n`;
    turns.push({ turn: i + 1, role: 'tool', text: text.padEnd(FILLER, ' .') });
  }
  const ids = await store.appendMany(turns);
  oldId = ids[3]!;
  newId = ids[n - 5]!;
}, 120_000);

afterAll(async () => {
  await store?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

describe('a query with nothing indexable', () => {
  it('finds the newest span holding it verbatim and says older spans went unread', async () => {
    const r = await store.search(RULE, { k: 10 });
    expect(r.exactPartial).toBe(true);
    expect(r.hits.find((h) => h.spanId === newId)?.via).toBe('exact');
    // Every stored span, by the exhaustive path.
    expect(store.findExact(RULE).map((h) => h.spanId)).toEqual([oldId, newId]);
  });

  it('claims no miss for what it may not have read', async () => {
    const r = await store.search(OLD_RULE, { k: 10 });
    expect(r.exactPartial).toBe(true);
    expect(r.miss).toBe(false);
    expect(store.findExact(OLD_RULE).map((h) => h.spanId)).toEqual([oldId]);
  });

  it('a quoted part with nothing indexable is bounded the same way', async () => {
    const r = await store.search(`where did the log print "${RULE}"?`, { k: 10 });
    expect(r.exactPartial).toBe(true);
  });

  it('a query with a word is answered in full and says nothing', async () => {
    const r = await store.search(`step 3: the build log of module m3 follows\n${RULE}`, { k: 10 });
    expect(r.exactPartial).toBeUndefined();
    expect(r.hits[0]?.spanId).toBe(oldId);
    expect(r.hits[0]?.via).toBe('exact');
  });
});
