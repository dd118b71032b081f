// An anchor's fact is detection's match, kept from the append that ran it: the same fact
// anchorFact gives from the span's text, for detected and host-flagged anchors alike.
import { afterEach, describe, expect, it } from 'vitest';
import { SpanStore } from '../../src/index.js';
import { anchorFact } from '../../src/anchors.js';
import { ROLE_CODES } from '../../src/native.js';
import { tmpDir } from '../helpers/data.js';

const open: SpanStore[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close().catch(() => {});
});

describe('anchorFactOf is anchorFact, kept from append', () => {
  it('detected, host-flagged and unknown-role anchors: the fact a fresh computation gives', async () => {
    const s = await SpanStore.open(tmpDir(), { durability: 'none' });
    open.push(s);
    const turns = [
      { turn: 1, role: 'user', text: 'Setup notes\nThe upstream API enforces a rate limit of 40 req/s per token.' },
      { turn: 2, role: 'assistant', text: 'done, nothing to report here at all', anchor: true },
      { turn: 3, role: 'developer', text: 'never exceed 3 retries\nsecond line' },
      { turn: 4, role: 'tool', text: 'x'.repeat(5000) + '\ntimeout = 30s\n' + 'y'.repeat(5000) },
    ];
    const ids = await s.appendMany(turns);
    for (const [i, id] of ids.entries()) {
      const span = s.get(id)!;
      if (!span.anchor) continue;
      const code = (ROLE_CODES as Record<string, number>)[turns[i]!.role] ?? 0;
      expect(s.anchorFactOf(id, span.text, code), `span ${id}`).toBe(anchorFact(span.text, code));
    }
    expect(s.anchorFactOf(ids[0]!, 'unrelated text given later', 2)).toBe(anchorFact(turns[0]!.text, 2));
  });
});
