// Shared helpers for the command-line tests: the CLI run as a user runs it, and a check that
// a refused replay left no store behind.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'vitest';

export const CLI = path.resolve('dist/cli.js');

export const run = (...args: string[]) => spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', timeout: 60_000 });

/** `replay` of `file` into a new store under `work`: exits 65 with one line naming `line`, no stack trace, nothing written. */
export function expectMalformed(work: string, args: string[], line: RegExp): ReturnType<typeof run> {
  const store = path.join(work, `store-${Math.random().toString(36).slice(2)}`);
  for (const json of [false, true]) {
    const r = run('replay', ...args, '--store', store, '--budget', '1000', ...(json ? ['--json'] : []));
    expect(r.status, r.stderr).toBe(65);
    expect(r.stderr).toMatch(/^spanguard replay: malformed input: /);
    expect(r.stderr).toMatch(line);
    expect(r.stderr).not.toMatch(/\n\s+at /);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stdout).toBe('');
    expect(fs.existsSync(path.join(store, 'log'))).toBe(false);
    if (json) return r;
  }
  throw new Error('unreachable');
}
