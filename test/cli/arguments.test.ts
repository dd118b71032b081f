// The command line's arguments: -h is --help everywhere, a word past what a command takes is
// refused (never silently dropped), and an option error is one line.
import { describe, expect, it } from 'vitest';
import { OPTIONS } from '../../src/cli.js';
import { run } from './helpers.js';

describe('-h is --help on every command', () => {
  it('prints the same help and exits 0', () => {
    for (const cmd of Object.keys(OPTIONS)) {
      const short = run(cmd, '-h');
      expect(short.status, `${cmd}: ${short.stderr}`).toBe(0);
      expect(short.stdout, cmd).toBe(run(cmd, '--help').stdout);
    }
  });
});

describe('a word past what a command takes is refused, not ignored', () => {
  it('an unquoted query of several words: exit 2, one line, telling to quote it', () => {
    for (const cmd of ['search', 'exact']) {
      const r = run(cmd, '/no/such/store', 'rate', 'limit');
      expect(r.status, cmd).toBe(2);
      expect(r.stderr, cmd).toBe(`spanguard ${cmd}: unexpected argument "limit" (quote a query or phrase of several words)\n`);
    }
  });
  it('commands that take one argument', () => {
    for (const cmd of ['verdict', 'audit', 'verify', 'stats', 'report']) {
      const r = run(cmd, '/no/such/store', 'extra');
      expect(r.status, cmd).toBe(2);
      expect(r.stderr, cmd).toBe(`spanguard ${cmd}: unexpected argument "extra"\n`);
    }
    const r = run('replay', 'a.jsonl', 'b.jsonl', '--store', '/no/such/store');
    expect(r.stderr).toBe('spanguard replay: unexpected argument "b.jsonl"\n');
  });
});

describe('an option error is one line', () => {
  it('a missing or ambiguous value, an unknown option', () => {
    for (const args of [
      ['search', '/no/such/store', 'x', '--k', '-1'],
      ['replay', '--budget'],
      ['stats', '/no/such/store', '--frobnicate'],
    ]) {
      const r = run(...args);
      expect(r.status, args.join(' ')).toBe(2);
      expect(r.stderr.trimEnd().split('\n'), args.join(' ')).toHaveLength(1);
      expect(r.stderr, args.join(' ')).toMatch(new RegExp(`^spanguard ${args[0]}: `));
    }
  });
});
