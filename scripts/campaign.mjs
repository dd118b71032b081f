#!/usr/bin/env node
// npm run campaign — the SIGKILL crash campaign over the span log (campaign/crash_campaign.cpp).
//
// Builds the native target with CMake into build-campaign/ (-DSPANGUARD_CAMPAIGN=ON, plain
// -O2, no sanitizer), runs it, and writes bench/results/campaign.json: the command, the
// machine (CPU model, cores, kernel, load before and after), every figure the campaign
// printed, and the checks it must pass. Not part of `npm test` or CI: 10,000 trials take a
// few minutes of both cores.
//
//   npm run campaign                                   # 10,000 trials, a fresh seed
//   npm run campaign -- --trials 2000 --seed 42        # replay a seed's trial sequence
//   npm run campaign -- --time-budget 300              # stop starting trials after 300 s
//
// By hand: cmake -S . -B build-campaign -DSPANGUARD_CAMPAIGN=ON && cmake --build
// build-campaign --target crash_campaign && build-campaign/crash_campaign --help
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const buildDir = path.join(root, 'build-campaign');

const { values } = parseArgs({
  options: {
    trials: { type: 'string', default: '10000' },
    seed: { type: 'string' },
    'time-budget': { type: 'string' },
    dir: { type: 'string', default: path.join(buildDir, 'trials') },
    'reset-every': { type: 'string' },
    'open-kill': { type: 'string' },
    'max-delay-us': { type: 'string' },
    quiet: { type: 'boolean', default: false },
  },
  strict: true,
});

const run = (cmd, args) => {
  const r = spawnSync(cmd, args, { cwd: root, stdio: 'inherit' });
  if (r.error) throw r.error;
  return r.status ?? 1;
};
const must = (cmd, args) => {
  const status = run(cmd, args);
  if (status !== 0) process.exit(status);
};

// Configure once (the cache remembers the options), then build only the campaign target.
if (!fs.existsSync(path.join(buildDir, 'CMakeCache.txt'))) {
  const ninja = spawnSync('ninja', ['--version'], { stdio: 'ignore' }).status === 0;
  must('cmake', [
    '-S', root, '-B', buildDir,
    ...(ninja ? ['-G', 'Ninja'] : []),
    '-DSPANGUARD_CAMPAIGN=ON',
    '-DCMAKE_BUILD_TYPE=Release',
    `-DNODE_EXECUTABLE=${process.execPath}`,
  ]);
}
must('cmake', ['--build', buildDir, '--target', 'crash_campaign', '--parallel', '2']);

const summaryPath = path.join(buildDir, 'campaign-summary.json');
fs.rmSync(summaryPath, { force: true });
const args = ['--trials', values.trials, '--dir', values.dir, '--json', summaryPath];
if (values.seed !== undefined) args.push('--seed', values.seed);
if (values['time-budget'] !== undefined) args.push('--time-budget', values['time-budget']);
if (values['reset-every'] !== undefined) args.push('--reset-every', values['reset-every']);
if (values['open-kill'] !== undefined) args.push('--open-kill', values['open-kill']);
if (values['max-delay-us'] !== undefined) args.push('--max-delay-us', values['max-delay-us']);
if (values.quiet) args.push('--quiet');

/** The machine, as bench/lib.ts's machine() records it, with the kernel. */
function machine() {
  return {
    date: new Date().toISOString(),
    node: process.version,
    cpus: os.cpus().length,
    cpuModel: os.cpus()[0]?.model,
    kernel: `${os.type()} ${os.release()}`,
    loadavg: os.loadavg().map((x) => +x.toFixed(2)),
    totalMemGB: +(os.totalmem() / 2 ** 30).toFixed(1),
  };
}

const machineStart = machine();
const status = run(path.join(buildDir, 'crash_campaign'), args);
const machineEnd = machine();
if (!fs.existsSync(summaryPath)) {
  console.error(`campaign: no summary at ${path.relative(root, summaryPath)} (exit status ${status})`);
  process.exit(status === 0 ? 1 : status);
}
const summary = JSON.parse(fs.readFileSync(summaryPath, 'utf8'));
const modes = Object.entries(summary.modes);
const sum = (key) => modes.reduce((n, [, m]) => n + m[key], 0);
const check = (name, ok, detail) => ({ name, ok, detail });
const checks = [
  check('0 acknowledged records lost', sum('lostAcked') === 0, `${sum('lostAcked')} lost; ${sum('newlyAcked')} ids acknowledged by the killed writers, ${sum('ackedIdsChecked')} acknowledged ids checked over all trials`),
  check('0 written records lost (a kill leaves the page cache)', sum('lostWritten') + sum('lostSeen') === 0, `${sum('lostWritten')} written, ${sum('lostSeen')} found by an earlier open; ${sum('writtenIdsChecked')} written ids checked`),
  check('0 corrupt records returned', sum('corrupt') === 0, `${sum('corrupt')} corrupt of ${sum('recordsChecked')} records read back`),
  check('ids contiguous from 1', sum('gaps') === 0, `${sum('gaps')} gaps`),
  check('a batch is all or nothing', sum('tornBatchesKept') === 0, `${sum('tornBatchesKept')} logs ending inside a batch; ${sum('killsDuringLargeBatch')} kills during a batch of 256 KiB or more`),
  check('every writer and every open ran clean until killed', sum('childFailures') + sum('openFailures') === 0, `${sum('childFailures')} writer failures, ${sum('openFailures')} refused opens; ${sum('killsDuringOpen')} kills during open, ${sum('killsDuringClose')} during close`),
];
const out = {
  command: ["npm run campaign", ...(process.argv.length > 2 ? ["--", ...process.argv.slice(2)] : [])].join(' '),
  replay: `npm run campaign -- --seed ${summary.seed} --trials ${summary.trialsAsked}`,
  machineStart,
  machineEnd,
  ...summary,
  checks,
};
const resultsDir = path.join(root, 'bench', 'results');
fs.mkdirSync(resultsDir, { recursive: true });
const file = path.join(resultsDir, 'campaign.json');
fs.writeFileSync(file, JSON.stringify(out, null, 2));
console.log('');
for (const c of checks) console.log(`${c.ok ? 'PASS' : 'FAIL'}  ${c.name} — ${c.detail}`);
console.log(`load average at start ${machineStart.loadavg.join(' ')}, at end ${machineEnd.loadavg.join(' ')} on ${machineStart.cpus} cpus (${machineStart.cpuModel}, ${machineStart.kernel}). JSON: ${path.relative(root, file)}`);
process.exit(status !== 0 ? status : checks.every((c) => c.ok) ? 0 : 1);
