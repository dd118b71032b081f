// Child of lock.test.ts. `try`: open as writer, print "opened" or "error <code>", exit.
// `hold`: open as writer, print "held", and wait to be killed.
import { addon } from '../../dist/native.js';

const [dir, action] = process.argv.slice(2);
const a = addon();
try {
  const log = new a.SpanLog(dir, { readOnly: false, durability: 2, segmentBytes: 1 << 20, maxTextBytes: 1 << 20 });
  if (action === 'hold') {
    process.stdout.write('held\n');
    setInterval(() => log.nextId(), 1000);
  } else {
    process.stdout.write('opened\n');
    await log.close();
  }
} catch (e) {
  process.stdout.write(`error ${e.code} ${e.name}\n`);
}
