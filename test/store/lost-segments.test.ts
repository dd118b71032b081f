// A store never opens cleanly over lost log data: with its indexes gone too (nothing left
// to disagree with the log), a missing first or last segment is a CorruptionError naming
// the file and offset — not a store that says "not in transcript" for stated facts and
// hands the lost ids out again.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { CorruptionError, SpanStore } from '../../src/index.js';
import { tmpDir } from '../helpers/data.js';

async function storeOf(n: number): Promise<{ dir: string; segments: string[] }> {
  const dir = tmpDir();
  const s = await SpanStore.open(dir, { durability: 'sync', segmentBytes: 8192 });
  for (let i = 1; i <= n; i++) await s.append({ turn: i, role: 'user', text: `turn ${i} sets the rate limit of ${i * 3} req/s for shard ${i}` });
  await s.close();
  const log = path.join(dir, 'log');
  return { dir, segments: fs.readdirSync(log).filter((f) => f.startsWith('seg-')).sort().map((f) => path.join(log, f)) };
}

describe('a lost segment with the indexes gone is corruption, for writers and readers', () => {
  for (const which of ['first', 'last'] as const) {
    it(`the ${which} segment and index/ deleted: open rejects with CorruptionError naming a segment`, async () => {
      const { dir, segments } = await storeOf(300);
      expect(segments.length).toBeGreaterThan(2);
      fs.rmSync(which === 'first' ? segments[0]! : segments.at(-1)!);
      fs.rmSync(path.join(dir, 'index'), { recursive: true });
      for (const readOnly of [false, true]) {
        const err = await SpanStore.open(dir, { readOnly }).catch((e: unknown) => e);
        expect(err).toBeInstanceOf(CorruptionError);
        expect((err as CorruptionError).details).toMatchObject({ file: which === 'first' ? segments[1] : segments.at(-2) });
      }
    });
  }
});
