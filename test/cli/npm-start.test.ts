// `npm start` replays the bundled sample: its output says what was replayed (which sample,
// how many turns, what budget), what each figure means (the hit rate above all: 0.500 is
// healthy), and ends with commands that work on the store it left, printed with its path.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';

let out: string;
let dir: string;
let explore: string[];

/** Runs a command line the report printed (`node dist/cli.js …`, single-quoted words), as a shell would. */
const runPrinted = (line: string) => spawnSync('sh', ['-c', line.trim()], { encoding: 'utf8', timeout: 60_000 });

beforeAll(() => {
  const { scripts } = JSON.parse(fs.readFileSync(path.resolve('package.json'), 'utf8')) as { scripts: Record<string, string> };
  // The script itself, as npm runs it (npm adds only its banner).
  const r = spawnSync('sh', ['-c', scripts.start!], { encoding: 'utf8', timeout: 120_000 });
  expect(r.status, r.stderr).toBe(0);
  out = r.stdout;
  dir = /^store +(\S+)$/m.exec(out)![1]!;
  explore = out.slice(out.indexOf('explore the store')).split('\n').slice(1).filter((l) => l.trim().length > 0);
}, 120_000);

describe('npm start says what it replayed', () => {
  it('which sample, how many turns, what budget', () => {
    expect(out).toMatch(/^replayed the bundled sample samples\/miniswe-slice: 3022 turns of a real SWE-bench coding-agent session \(MIT, see its ATTRIBUTION\.md\),$/m);
    expect(out).toMatch(/^ {2}through a context window of 32000 tokens that keeps the last 8 turns\./m);
    expect(out).toMatch(/^turns +3022$/m);
  });
});

describe('npm start says what each figure means', () => {
  it('passes, anchors, refused, spilled, audits and hit rate each have a line', () => {
    const meaning = out.slice(out.indexOf('what the figures mean'));
    for (const figure of ['passes', 'anchors', 'refused', 'spilled', 'audits', 'hit rate']) expect(meaning).toMatch(new RegExp(`^  ${figure} +\\S`, 'm'));
  });
  it('the hit rate: what it measures, and that 0.500 is healthy, not a 50% failure', () => {
    expect(out).toMatch(/hit rate +the share of probe searches that return a hit/);
    expect(out).toMatch(/half are altered copies it never states \(they should miss\)/);
    expect(out).toMatch(/0\.500 is the healthy value, not a 50% failure/);
    expect(out).toMatch(/^hit rate per pass +min 0\.\d{3} +max 0\.\d{3}$/m);
  });
  it('the verdict, and what it means', () => {
    expect(out).toMatch(/^verdict +lossless — /m);
    expect(out).toMatch(/^ {2}lossless means: every evicted turn is kept verbatim and indexed/m);
  });
});

describe('npm start ends with the commands that explore the store it left, with its real path', () => {
  it('search, exact, verdict, stats and report, each naming the store', () => {
    expect(fs.existsSync(path.join(dir, 'log'))).toBe(true);
    for (const cmd of ['search', 'exact', 'verdict', 'stats', 'report']) expect(explore.some((l) => l.startsWith(`  node dist/cli.js ${cmd} ${dir} `) || l === `  node dist/cli.js ${cmd} ${dir}`), cmd).toBe(true);
    expect(explore.at(-1)).toBe(`  rm -r ${dir}    # a temp directory: remove it when done`);
  });
  it('each printed command runs as printed and answers from that store', () => {
    const line = (cmd: string) => explore.find((l) => l.includes(`dist/cli.js ${cmd} `))!;
    const search = runPrinted(line('search'));
    expect(search.status, search.stderr).toBe(0);
    expect(search.stdout).toMatch(/^span \d+ raw turns/m);
    const exact = runPrinted(line('exact'));
    expect(exact.status, exact.stderr).toBe(0);
    expect(exact.stdout).not.toMatch(/not in transcript/);
    expect(runPrinted(line('verdict')).status).toBe(0);
    const stats = runPrinted(`${line('stats')} --json`);
    expect(JSON.parse(stats.stdout).spans.raw).toBe(3022);
    fs.rmSync(dir, { recursive: true, force: true });
  });
});
