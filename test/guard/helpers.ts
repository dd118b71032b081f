// A session of real turns with one known fact, for the guard's rule tests; every store
// opened through it is closed after each test.
import { afterEach } from 'vitest';
import { SpanStore, type SpanStoreOptions } from '../../src/index.js';
import { realTurns, tmpDir } from '../helpers/data.js';

export const FACT = 'The upstream API enforces a rate limit of 40 req/s per token.';

export const open: SpanStore[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close().catch(() => {});
});

/** `n` real turns with FACT, said by the user, at turn `factTurn`. */
export async function factSession(options: SpanStoreOptions = {}, n = 200, factTurn = 100) {
  const s = await SpanStore.open(tmpDir(), { durability: 'none', ...options });
  open.push(s);
  const turns = realTurns(n).map((t) => (t.turn === factTurn ? { ...t, role: 'user', text: FACT } : t));
  const ids = await s.appendMany(turns.map((t) => ({ turn: t.turn, role: t.role, text: t.text })));
  return { s, ids, factId: ids[factTurn - 1]! };
}
