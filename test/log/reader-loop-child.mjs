// Child of reader.test.ts ("never touches bytes a live writer may cut"): a read-only reader
// that, until stdin closes, refreshes in a tight loop, checks every new record against
// content.mjs, re-opens itself every so often and runs verify(); then prints
// "ok <nextId> <refreshes> <opens>" or "bad <message>". A SIGBUS kills it instead.
import fs from 'node:fs';
import { addon } from '../../dist/native.js';
import { diffRecord } from './content.mjs';

const [dir] = process.argv.slice(2);
const a = addon();
const open = () => new a.SpanLog(dir, { readOnly: true, durability: 0, segmentBytes: 1 << 20, maxTextBytes: 1 << 20 });
let stop = false;
process.stdin.on('data', () => {});
process.stdin.on('end', () => (stop = true));
process.stdout.write('ready\n');

let log = open();
let checked = 1;
let refreshes = 0;
let opens = 1;
const fail = (m) => {
  process.stdout.write(`bad ${m.replace(/\n/g, ' ')}\n`);
  process.exit(1);
};
while (!stop) {
  try {
    log.refresh();
    refreshes++;
    const next = log.nextId();
    if (next < checked) fail(`nextId went back from ${checked} to ${next}`);
    for (; checked < next; checked++) {
      const d = diffRecord(log.get(checked), checked, 0);
      if (d) fail(d);
    }
    if (refreshes % 50 === 0) {
      const v = log.verify();
      if (v.problems.some((p) => p.outcome === 'corrupt')) fail(`verify: ${JSON.stringify(v.problems)}`);
    }
    if (refreshes % 97 === 0) {
      await log.close();
      log = open();
      opens++;
      if (log.nextId() < checked) fail(`a fresh open saw ${log.nextId()} < ${checked}`);
    }
  } catch (e) {
    fail(`${e.code} ${e.message}`);
  }
  // Let stdin's end event in now and then.
  if (refreshes % 20 === 0) await new Promise((r) => setImmediate(r));
}
// The writer's last appends may have landed after the last refresh of the loop (stdin's end
// is only noticed at a yield): one more refresh, then report.
log.refresh();
process.stdout.write(`ok ${log.nextId()} ${refreshes} ${opens} ${fs.readdirSync(dir).length}\n`);
await log.close();
