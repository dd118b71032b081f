// A store for the MCP tests: a session whose early facts have left a budgeted window, so
// recall can only find them in the log.
import { ContextWindow, SpanStore } from '../../src/index.js';
import { realTurns, tmpDir } from '../helpers/data.js';

export const PLANTED = 'The staging database password rotates every 17 days; the on-call alias is ops-kestrel-42.';
export const NEVER = 'does the staging database password rotate every 19 days?';

/** Writes a 600-turn session (the planted fact at turn 1) through a 2,000-token window; returns the closed store's directory and the planted span's id. */
export async function plantedStore(): Promise<{ dir: string; plantedId: number; passes: number }> {
  const dir = tmpDir();
  const store = await SpanStore.open(dir, { durability: 'none' });
  const window = new ContextWindow(store, { budgetTokens: 2_000 });
  const { spanId: plantedId } = await window.push({ turn: 1, role: 'user', text: PLANTED });
  const filler = realTurns(600).slice(1);
  for (let i = 0; i < filler.length; i += 50) await window.pushMany(filler.slice(i, i + 50).map((t) => ({ turn: t.turn, role: t.role, text: t.text })));
  if (window.snapshot().some((e) => e.id === plantedId)) throw new Error('the planted fact is still in the window');
  const passes = window.stats().passes;
  await store.close();
  return { dir, plantedId, passes };
}
