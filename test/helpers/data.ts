// Real turns from shared/data for tests that need realistic filler; a deterministic
// transcript-like generator when the data is absent (a clean clone without shared/).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { fileURLToPath } from 'node:url';
import { SpanStore, type TurnInput } from '../../src/store.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const SAMPLE = path.join(root, 'samples', 'miniswe-slice', 'turns.jsonl.gz');
const SHARED = path.join(root, '..', 'shared', 'data', 'miniswe-gemini3pro-verified', 'turns.jsonl.gz');

export interface RealTurn {
  turn: number;
  role: string;
  text: string;
  kind?: string;
}

let cache: RealTurn[] | undefined;

/** `n` real turns (cycling through the bundled sample, or the full shared transcript when n is larger). */
export function realTurns(n: number): RealTurn[] {
  if (!cache || cache.length < n) {
    const file = n > 3000 && fs.existsSync(SHARED) ? SHARED : SAMPLE;
    cache = zlib
      .gunzipSync(fs.readFileSync(file))
      .toString('utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as RealTurn);
  }
  const out: RealTurn[] = [];
  for (let i = 0; i < n; i++) {
    const t = cache[i % cache.length]!;
    out.push({ ...t, turn: i + 1 });
  }
  return out;
}

const made: string[] = [];
process.on('exit', () => {
  for (const d of made) fs.rmSync(d, { recursive: true, force: true });
});

/** A fresh directory under the OS temp dir, removed when the test process exits. */
export function tmpDir(prefix = 'spanguard-test-'): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  made.push(d);
  return d;
}

/**
 * A store of `filler` real turns with one task's turns after them (numbered on from the
 * filler), for a rule that must pick one task's turn among others: `turnOf` maps each task
 * turn's text to its turn number. The caller closes the store.
 */
export async function storeWithTask(
  prefix: string,
  task: readonly Omit<TurnInput, 'turn'>[],
  filler = 200,
): Promise<{ store: SpanStore; turnOf: Map<string, number> }> {
  const store = await SpanStore.open(tmpDir(prefix), { durability: 'none' });
  const turns: TurnInput[] = [];
  for (const f of realTurns(filler)) turns.push({ turn: turns.length + 1, role: f.role, text: f.text });
  const turnOf = new Map<string, number>();
  for (const t of task) {
    turns.push({ ...t, turn: turns.length + 1 });
    turnOf.set(t.text, turns.length);
  }
  await store.appendMany(turns);
  return { store, turnOf };
}
