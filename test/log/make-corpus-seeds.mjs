// Writes seed segments for the recovery fuzzer (fuzz/recover_fuzz.cpp) into the
// directory given as argv[2]: small real segments (single and multi-record batches, with
// and without the close checkpoint) and a few damaged variants.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { addon } from '../../dist/native.js';

const out = process.argv[2];
fs.mkdirSync(out, { recursive: true });
const a = addon();
const cols = (first, texts, kind = 1) => ({
  kinds: new Uint8Array(texts.length).fill(kind),
  flags: new Uint8Array(texts.length).fill(1),
  roles: new Uint8Array(texts.length).fill(3),
  turnStart: Float64Array.from(texts, (_, i) => first + i),
  turnEnd: Float64Array.from(texts, (_, i) => first + i + 1),
  timestamps: new Float64Array(texts.length).fill(1700000000000),
  tokens: new Uint32Array(texts.length).fill(4),
  texts,
  metas: texts.map((t, i) => (i % 2 ? null : '{"m":1}')),
});
let n = 0;
const save = (name, bytes) => fs.writeFileSync(path.join(out, `${String(n++).padStart(2, '0')}-${name}`), bytes);
for (const checkpoint of [false, true]) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sg-seed-'));
  const log = new a.SpanLog(dir, { readOnly: false, durability: 2, segmentBytes: 1 << 20, maxTextBytes: 1 << 20 });
  await log.append(cols(1, ['a']));
  await log.append(cols(2, ['', 'hé✓']));
  await log.append(cols(4, ['summary'], 2));
  const file = path.join(dir, fs.readdirSync(dir).find((f) => f.startsWith('seg-')));
  if (checkpoint) await log.close();
  const bytes = fs.readFileSync(file);
  if (!checkpoint) await log.close();
  save(checkpoint ? 'clean-checkpoint' : 'clean', bytes);
  if (!checkpoint) {
    save('header-only', bytes.subarray(0, 64));
    save('torn-mid', bytes.subarray(0, bytes.length - 13));
    save('zero-tail', Buffer.concat([bytes, Buffer.alloc(64)]));
    const flipped = Buffer.from(bytes);
    flipped[64 + 70] ^= 4;
    save('flip-first-payload', flipped);
  }
}
