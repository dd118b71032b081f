// The verbatim path matches bytes; a value is more than its bytes. A query held verbatim only
// where it cuts a number ("start_line = 6" inside "start_line = 612") states a value the
// transcript never stated: it is a miss, while the same bytes held at a number's edge count,
// and so does an excerpt of EXCERPT_CHARS or more, whatever its ends cut.
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXCERPT_CHARS, heldAtValueBounds } from '../../src/search.js';
import { SpanStore, type TurnInput } from '../../src/store.js';
import { realTurns, tmpDir } from '../helpers/data.js';

let store: SpanStore;
let dir: string;
let stated = -1;

beforeAll(async () => {
  dir = tmpDir('spanguard-verbatim-bounds-');
  store = await SpanStore.open(dir, { durability: 'none' });
  const turns: TurnInput[] = realTurns(80).map((t, i) => ({ turn: i + 1, role: t.role, text: t.text }));
  turns.push({ turn: turns.length + 1, role: 'assistant', text: 'Reading the file with start_line = 612 and the limit 4.5 ms now, at port 8080.' });
  const out = await store.appendMany(turns);
  stated = out[out.length - 1]!;
}, 60_000);

afterAll(async () => {
  await store?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

describe('a verbatim match that cuts a number holds no claim', () => {
  it('a value cut at its end ("= 6" of "= 612", "4" of "4.5") is not stated', async () => {
    for (const q of ['start_line = 6', 'start_line = 61', 'the limit 4']) {
      const r = await store.search(q, { k: 10 });
      expect(r.miss, q).toBe(true);
    }
  });

  it('a value cut at its start ("12 and" of "612 and") is not stated', async () => {
    const r = await store.search('12 and the limit 4.5', { k: 10 });
    expect(r.miss).toBe(true);
  });

  it('the whole value, verbatim, is found', async () => {
    for (const q of ['start_line = 612', 'the limit 4.5 ms', '612 and the limit']) {
      const r = await store.search(q, { k: 10 });
      expect(r.miss, q).toBe(false);
      expect(r.hits[0]?.spanId, q).toBe(stated);
    }
  });

  it('an excerpt of EXCERPT_CHARS or more is found even when its end cuts a number; a shorter one is not', async () => {
    const excerpt = 'Reading the file with start_line = 612 and the limit 4.5 ms now, at port 80';
    const short = 'the limit 4.5 ms now, at port 80';
    expect(excerpt.length).toBeGreaterThanOrEqual(EXCERPT_CHARS);
    expect(short.length).toBeLessThan(EXCERPT_CHARS);
    const r = await store.search(excerpt, { k: 10 });
    expect(r.miss).toBe(false);
    expect(r.hits[0]?.spanId).toBe(stated);
    expect((await store.search(short, { k: 10 })).miss).toBe(true);
  });

  it('heldAtValueBounds: any one bounded occurrence is enough; words at the edges are not numbers', () => {
    expect(heldAtValueBounds('x = 612; x = 6.', 'x = 6')).toBe(true);
    expect(heldAtValueBounds('x = 612; x = 6.5', 'x = 6')).toBe(false);
    expect(heldAtValueBounds('v1,5 and 15', '5')).toBe(false);
    expect(heldAtValueBounds('pre_start_line', 'start_line')).toBe(true);
  });
});
