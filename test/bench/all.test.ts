// `npm run bench:all` (bench/all.ts) runs the steps of bench/all-steps.ts: every command whose
// JSON bench/RESULTS.md renders. Its pure parts: the options, the step selection, and the plan
// itself against the results on disk (a JSON no step writes is a figure the one command would
// not regenerate).
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { commandOf, interruptedBy, parseAllArgs, planSteps, sciTag, selectSteps } from '../../bench/all-steps.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const plan = planSteps({ cache: '/cache dir', stallSpans: 1e6 });

describe('bench:all options', () => {
  it('reads --list, --only (either form, blanks dropped), --cache and --stall-spans', () => {
    expect(parseAllArgs([])).toEqual({ list: false, only: null, cache: null, stallSpans: 1e6 });
    expect(parseAllArgs(['--list', '--only', 'quick, stalls,,', '--cache', '/c', '--stall-spans', '20000'])).toEqual({ list: true, only: ['quick', 'stalls'], cache: '/c', stallSpans: 20000 });
    expect(parseAllArgs(['--only=1e5,quality', '--cache=/d', '--stall-spans=1e5'])).toEqual({ list: false, only: ['1e5', 'quality'], cache: '/d', stallSpans: 1e5 });
  });

  it('refuses an unknown option, a missing value and a stall scale out of range', () => {
    expect(() => parseAllArgs(['--scale', '1e4'])).toThrow(/--scale: not an option/);
    expect(() => parseAllArgs(['--only'])).toThrow(/--only: a value is needed/);
    expect(() => parseAllArgs(['--cache', '--list'])).toThrow(/--cache: a value is needed/);
    expect(() => parseAllArgs(['--list=yes'])).toThrow(/takes no value/);
    for (const bad of ['1000', '2e7', '1.5e4x', '12345.5']) expect(() => parseAllArgs(['--stall-spans', bad])).toThrow(/--stall-spans/);
  });
});

describe('bench:all step selection', () => {
  it('runs every step without --only, and the named ones in the plan\'s order with it', () => {
    expect(selectSteps(plan, null).map((s) => s.name)).toEqual(plan.map((s) => s.name));
    expect(selectSteps(plan, ['results', 'stalls', 'quick', 'stalls']).map((s) => s.name)).toEqual(['quick', 'stalls', 'results']);
  });

  it('refuses a name that is no step, naming the steps there are', () => {
    expect(() => selectSteps(plan, ['quick', 'bogus'])).toThrow(/bogus is not a step; the steps: quick, 1e4/);
    expect(() => selectSteps(plan, ['x', 'y'])).toThrow(/x, y are not steps/);
    expect(() => selectSteps(plan, [])).toThrow(/no step named/);
  });

  it('prints each step as a shell command, quoting what needs it', () => {
    const stalls = plan.find((s) => s.name === 'stalls')!;
    expect(commandOf(stalls)).toBe("node --expose-gc build/bench-dist/bench/open-store.js --spans 1000000 --cache '/cache dir'");
  });
});

describe('an interrupted step stops the run; a failed one does not', () => {
  it('SIGINT or SIGTERM, as a signal or as the exit code of a process that handled it, stop it', () => {
    for (const r of [{ status: null, signal: 'SIGINT' }, { status: null, signal: 'SIGTERM' }, { status: 130, signal: null }, { status: 143, signal: null }]) expect(interruptedBy(r), JSON.stringify(r)).toBe(true);
  });
  it('an exit 1 (a failed check), an exit 0 or a crash by another signal go on to the next step', () => {
    for (const r of [{ status: 1, signal: null }, { status: 0, signal: null }, { status: null, signal: 'SIGSEGV' }, { status: 2, signal: null }]) expect(interruptedBy(r), JSON.stringify(r)).toBe(false);
  });
});

describe('the plan covers bench/RESULTS.md', () => {
  it('has unique names, and every script it runs has its source in the package', () => {
    expect(new Set(plan.map((s) => s.name)).size).toBe(plan.length);
    for (const s of plan) {
      const js = s.argv.find((a) => a.startsWith('build/bench-dist/'))!;
      expect(fs.existsSync(path.join(root, js.replace('build/bench-dist/', '').replace(/\.js$/, '.ts'))), js).toBe(true);
    }
  });

  it('the stall step and its file follow --stall-spans (the file as bench/open-store.ts names it)', () => {
    expect(sciTag(1e6)).toBe('1e6');
    expect(sciTag(20_000)).toBe('1e4');
    expect(sciTag(40_000)).toBe('1e5');
    const small = planSteps({ cache: '/c', stallSpans: 20_000 }).find((s) => s.name === 'stalls')!;
    expect(small.argv).toContain('20000');
    expect(small.writes).toEqual(['bench-1e4-open-store.json']);
  });

  it('every bench-*.json in bench/results is written by a step that runs the script its command names', () => {
    const dir = path.join(root, 'bench', 'results');
    const files = fs.readdirSync(dir).filter((f) => /^bench-.*\.json$/.test(f));
    expect(files.length).toBeGreaterThan(0);
    for (const f of files) {
      const step = plan.find((s) => s.writes.includes(f));
      expect(step, `${f}: no step of bench/all-steps.ts writes it`).toBeDefined();
      const { command } = JSON.parse(fs.readFileSync(path.join(dir, f), 'utf8')) as { command: string };
      const script = command.startsWith('npm run bench ') || command === 'npm run bench' ? 'build/bench-dist/bench/run.js' : /build\/bench-dist\/\S+\.js/.exec(command)?.[0];
      expect(step!.argv, `${f}: recorded as \`${command}\``).toContain(script);
    }
  });
});
