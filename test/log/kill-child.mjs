// Child of kill9.test.ts (and durability.test.ts, mode `none`): appends forever in `sync`
// or `group` mode (or `sync-large`:
// `sync` with batches of 600-1,199 spans, ~270-540 KB, which the log encodes on two
// threads and writes chunk by chunk) and prints
// "ack <firstId> <n>" only after the append resolved (i.e. once durable). stdout to a pipe
// is synchronous in Node on Linux, so a printed ack is in the pipe before the next write.
import { addon } from '../../dist/native.js';
import { columnsFor } from './content.mjs';

const [dir, mode, seedText, segText] = process.argv.slice(2);
const seed = Number(seedText);
let state = (seed * 2654435761) >>> 0 || 1;
const rand = (n) => {
  state ^= state << 13; state >>>= 0;
  state ^= state >>> 17;
  state ^= state << 5; state >>>= 0;
  return state % n;
};

const a = addon();
const log = new a.SpanLog(dir, {
  readOnly: false,
  durability: mode === 'group' ? 1 : mode === 'none' ? 0 : 2,
  segmentBytes: Number(segText),
  maxTextBytes: 1 << 20,
});
process.stdout.write(`ready ${log.nextId()}\n`);

async function appender() {
  for (;;) {
    const n = mode === 'sync-large' ? 600 + rand(600) : 1 + rand(6);
    const first = log.nextId();
    const got = await log.append(columnsFor(first, n, 0));
    if (got !== first) {
      process.stdout.write(`bad ${got} ${first}\n`);
      process.exit(3);
    }
    process.stdout.write(`ack ${first} ${n}\n`);
  }
}

const lanes = mode === 'group' ? 8 : 1;
for (let i = 0; i < lanes; i++) {
  appender().catch((e) => {
    process.stdout.write(`error ${e.code} ${e.message}\n`);
    process.exit(4);
  });
}
