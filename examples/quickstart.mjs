// The README's example as a file that runs: `node examples/quickstart.mjs`.
// It uses the built package (dist/); `npm install` builds it.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { SpanStore, ContextWindow } from '../dist/index.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'spanguard-quickstart-'));
const store = await SpanStore.open(dir, { durability: 'group' });
const window = new ContextWindow(store, { budgetTokens: 2_000, keepRecentTurns: 4 });

await window.push({ turn: 1, role: 'user', text: 'The upstream API allows 40 req/s; never exceed it.' });
for (let turn = 2; turn <= 400; turn++) {
  await window.push({ turn, role: turn % 2 ? 'user' : 'assistant', text: `step ${turn}: ran the build, ${turn * 3} files changed, all checks green.` });
}

const r = await window.recall('what rate limit does the upstream API allow?');
console.log('recall:', r.status, r.hits[0] && { spanId: r.hits[0].spanId, turns: [r.hits[0].turnStart, r.hits[0].turnEnd], via: r.hits[0].via, text: r.hits[0].text });
const miss = await window.recall('the staging quota is 7731 pods');
console.log('never stated:', miss.status);
console.log('window:', window.stats());
const v = store.verdict();
console.log('verdict:', v.state, '-', v.reasons[0]);
await store.close();
fs.rmSync(dir, { recursive: true, force: true });
