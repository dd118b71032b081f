/**
 * Every figure bench/RESULTS.md shows, from one command:
 *
 *   npm run bench:all [-- --list] [-- --only quick,stalls,...] [-- --cache DIR] [-- --stall-spans N]
 *
 * Runs the steps of bench/all-steps.ts one after the other (never two at once: each step's
 * figures are the machine's alone), each as the process its JSON names as its command, then
 * rewrites RESULTS.md. Hours: the 10^5 retrieval, the 10^6 ingest and the 10^7 vector steps
 * take most of it (bench/README.md, "Every figure from one command", says how long each took).
 *
 * --list prints the steps and their commands and runs nothing; --only runs the named steps
 * (in the plan's order); --cache DIR keeps the stores and indexes the steps build under DIR
 * and reuses them on the next run (without it they are built in a temporary directory removed
 * at the end); --stall-spans N takes the stall step at N spans instead of 10^6, with a store of
 * its own (to try the step out: its JSON is then bench-<N>-open-store.json).
 *
 * A step that fails (a correctness check, a crash) does not stop the others: the run goes on,
 * prints every step's exit status and wall time at the end, and exits 1.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { packageRoot } from '../src/native.js';
import { commandOf, interruptedBy, parseAllArgs, planSteps, selectSteps, type AllOptions, type Step } from './all-steps.js';

let o: AllOptions;
let steps: Step[];
const temporaryName = path.join(os.tmpdir(), 'spanguard-bench-all-XXXXXX');
try {
  o = parseAllArgs(process.argv.slice(2));
  steps = selectSteps(planSteps({ cache: o.cache !== null ? path.resolve(o.cache) : temporaryName, stallSpans: o.stallSpans }), o.only);
} catch (e) {
  console.error(`bench:all: ${(e as Error).message}`);
  process.exit(2);
}
const temporary = o.cache === null;
const cache = o.cache !== null ? path.resolve(o.cache) : temporaryName;

if (o.list) {
  for (const s of steps) console.log(`${s.name.padEnd(18)} ${s.what}\n${' '.repeat(19)}${commandOf(s)}\n${' '.repeat(19)}writes ${s.writes.length ? s.writes.map((w) => `bench/results/${w}`).join(', ') : 'bench/RESULTS.md'}`);
  process.exit(0);
}

const dir = temporary ? fs.mkdtempSync(path.join(os.tmpdir(), 'spanguard-bench-all-')) : cache;
fs.mkdirSync(dir, { recursive: true });
const run = temporary ? selectSteps(planSteps({ cache: dir, stallSpans: o.stallSpans }), o.only) : steps;
// An interrupt from the terminal reaches the running step too (same process group): once it
// has returned, interrupted, the run stops and a temporary cache is removed. The runner itself
// ignores the signal meanwhile, so that it gets to clean up.
let interrupted = false;
process.on('SIGINT', () => {
  interrupted = true;
});
process.on('SIGTERM', () => {
  interrupted = true;
});
const done: { name: string; status: string; seconds: number }[] = [];
try {
  for (const s of run) {
    if (interrupted) break;
    console.log(`\n== bench:all ${s.name} (${done.length + 1}/${run.length}, ${new Date().toISOString()}): ${s.what}\n   ${commandOf(s)}`);
    const t0 = performance.now();
    const r = spawnSync(s.argv[0]!, s.argv.slice(1), { cwd: packageRoot, stdio: 'inherit' });
    const seconds = (performance.now() - t0) / 1000;
    const status = r.error ? `error: ${r.error.message}` : r.signal ? `killed by ${r.signal}` : `exit ${r.status}`;
    done.push({ name: s.name, status, seconds });
    if (interruptedBy(r)) interrupted = true;
    console.log(`== bench:all ${s.name}: ${status} after ${seconds.toFixed(0)} s`);
  }
} finally {
  if (temporary) fs.rmSync(dir, { recursive: true, force: true });
}
console.log(`\nbench:all — ${os.cpus().length} cpus (${os.cpus()[0]?.model ?? 'unknown'}), load average ${os.loadavg().map((x) => x.toFixed(2)).join(' ')} at the end`);
for (const d of done) console.log(`  ${d.name.padEnd(18)} ${d.status.padEnd(12)} ${d.seconds.toFixed(0).padStart(6)} s`);
const skipped = run.slice(done.length).map((s) => s.name);
if (skipped.length > 0) console.log(`  not run (interrupted): ${skipped.join(', ')}`);
console.log(`results: ${path.relative(process.cwd(), path.join(packageRoot, 'bench', 'RESULTS.md'))}`);
process.exit(done.every((d) => d.status === 'exit 0') && skipped.length === 0 ? 0 : 1);
