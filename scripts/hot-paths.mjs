// The hot paths through the public API only, as one process per path, for timing two builds
// against each other from outside (e.g. `/usr/bin/time -v`, interleaved runs of each tree):
// append (20 batches of 1,000 under durability none), search (10^4 spans, then 2,000 hybrid
// searches), compact (6,000 pushes through a 2,000-token ContextWindow).
// Usage: node scripts/hot-paths.mjs <a built dist/ directory> append|search|compact
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
const [dist, which] = process.argv.slice(2);
const { SpanStore, ContextWindow } = await import(path.join(dist, 'index.js'));
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ab-'));
const words = 'build test deploy rate limit cache token index vector span log window summary anchor value port config error retry timeout'.split(' ');
const text = (i) => `turn ${i}: ${words[i % words.length]} ${words[(i * 7) % words.length]} set to ${i * 13} on port ${8000 + (i % 50)}; ${words[(i * 3) % words.length]} ok.`;
const store = await SpanStore.open(dir, { durability: 'none' });
if (which === 'append') {
  for (let b = 0; b < 20; b++) await store.appendMany(Array.from({ length: 1000 }, (_, j) => ({ turn: b * 1000 + j + 1, role: j % 2 ? 'user' : 'assistant', text: text(b * 1000 + j) })));
} else if (which === 'search') {
  await store.appendMany(Array.from({ length: 10000 }, (_, j) => ({ turn: j + 1, role: 'user', text: text(j) })));
  for (let q = 0; q < 2000; q++) await store.search(`what was the ${words[q % words.length]} set to on port ${8000 + (q % 50)}?`, { k: 10 });
} else {
  const w = new ContextWindow(store, { budgetTokens: 2000 });
  for (let t = 1; t <= 6000; t++) await w.push({ turn: t, role: t % 2 ? 'user' : 'assistant', text: text(t) });
}
await store.close();
fs.rmSync(dir, { recursive: true, force: true });
