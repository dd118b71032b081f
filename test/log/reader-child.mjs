// Child of reader.test.ts: a read-only reader in another process. On each "refresh" line
// from stdin it calls refresh(), checks every new record against content.mjs, and prints
// "seen <nextId>" (or "bad <message>").
import readline from 'node:readline';
import { addon } from '../../dist/native.js';
import { diffRecord } from './content.mjs';

const [dir] = process.argv.slice(2);
const a = addon();
const log = new a.SpanLog(dir, { readOnly: true, durability: 0, segmentBytes: 1 << 20, maxTextBytes: 1 << 20 });
let checked = 1;
const report = () => {
  const next = log.nextId();
  for (; checked < next; checked++) {
    const d = diffRecord(log.get(checked), checked, 0);
    if (d) {
      process.stdout.write(`bad ${d.replace(/\n/g, ' ')}\n`);
      return;
    }
  }
  process.stdout.write(`seen ${next} ${log.stats().segments}\n`);
};
report();
const rl = readline.createInterface({ input: process.stdin });
rl.on('line', (line) => {
  try {
    if (line === 'refresh') log.refresh();
    report();
  } catch (e) {
    process.stdout.write(`error ${e.code} ${e.message}\n`);
  }
});
rl.on('close', () => log.close());
