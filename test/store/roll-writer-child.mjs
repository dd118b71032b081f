// Child of stats-race.test.ts: a writer that rolls 4 KiB segments and checkpoints (index temp
// files saved and renamed into place) in a loop until its stdin closes; prints "ready" once
// it has rolled at least one segment.
import { SpanStore } from '../../dist/index.js';

const [dir] = process.argv.slice(2);
const store = await SpanStore.open(dir, { durability: 'none', segmentBytes: 4096 });
let stop = false;
process.stdin.on('end', () => (stop = true));
process.stdin.resume();
let turn = 1;
let ready = false;
while (!stop) {
  await store.appendMany(Array.from({ length: 20 }, () => ({ turn: turn++, role: 'user', text: `turn ${turn} `.padEnd(300, 'x') })));
  await store.checkpoint();
  if (!ready) {
    ready = true;
    process.stdout.write('ready\n');
  }
  await new Promise((r) => setImmediate(r));
}
await store.close();
