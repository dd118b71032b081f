// Child of reader.test.ts ("racing a sync writer over its zero prefill"): a read-only
// reader that refreshes in a loop until stdin closes, then prints
// "done <refreshes> <nextId> <errors> <first error>".
import { addon } from '../../dist/native.js';

const [dir] = process.argv.slice(2);
const log = new (addon().SpanLog)(dir, { readOnly: true, durability: 0, segmentBytes: 1 << 30, maxTextBytes: 1 << 20 });
let stop = false;
let refreshes = 0;
let errors = 0;
let first = '';
process.stdin.on('data', () => {});
process.stdin.on('end', () => (stop = true));
process.stdout.write('ready\n');
while (!stop) {
  try {
    log.refresh();
    refreshes++;
  } catch (e) {
    errors++;
    if (!first) first = `${e.code} ${e.message}`;
  }
  if (refreshes % 20 === 0) await new Promise((r) => setImmediate(r));
}
process.stdout.write(`done ${refreshes} ${log.nextId()} ${errors} ${first}\n`);
