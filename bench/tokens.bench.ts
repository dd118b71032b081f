/**
 * Token counting for turns without host counts: gpt-tokenizer's cl100k_base (ranks ship in
 * the npm package, nothing downloaded). `npm run bench:tokens` prints MB/s on real turns.
 * The counts are the ones the shared data's converter made with js-tiktoken cl100k_base: a
 * full replay of miniswe-gemini3pro-verified reports 11,214,223 tokens, as its ATTRIBUTION.md.
 */
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { Bench } from 'tinybench';
import { defaultCountTokens } from '../src/window.js';
import { packageRoot } from '../src/native.js';

const texts = zlib
  .gunzipSync(fs.readFileSync(path.join(packageRoot, 'samples', 'miniswe-slice', 'turns.jsonl.gz')))
  .toString('utf8')
  .split('\n')
  .filter(Boolean)
  .map((l) => (JSON.parse(l) as { text: string }).text);
const bytes = texts.reduce((s, t) => s + Buffer.byteLength(t), 0);
let tokens = 0;
const bench = new Bench({ iterations: 3, time: 0 });
bench.add('count cl100k tokens of 3,022 real turns', () => {
  tokens = 0;
  for (const t of texts) tokens += defaultCountTokens(t);
});
await bench.run();
const task = bench.tasks[0]!;
const mean = (task.result as { latency?: { mean: number } }).latency?.mean ?? Number.NaN;
console.log(`${texts.length} turns, ${(bytes / 1e6).toFixed(2)} MB, ${tokens} tokens: ${(bytes / 1e6 / (mean / 1000)).toFixed(1)} MB/s (${(mean / 1000).toFixed(2)} s per pass)`);
