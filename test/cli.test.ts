// The command line, driven as a user would: spawned processes, real files.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { realTurns, tmpDir } from './helpers/data.js';

const CLI = path.resolve('dist/cli.js');
const run = (...args: string[]) => spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8' });

let dir: string;
let transcript: string;
let replayOut: ReturnType<typeof run>;

beforeAll(() => {
  const work = tmpDir('spanguard-cli-');
  transcript = path.join(work, 'turns.jsonl');
  fs.writeFileSync(transcript, realTurns(400).map((t) => JSON.stringify({ turn: t.turn, role: t.role, text: t.text, kind: t.kind })).join('\n') + '\n');
  dir = path.join(work, 'store');
  replayOut = run('replay', transcript, '--store', dir, '--budget', '4000', '--json');
});

describe('spanguard replay streams a transcript and reports', () => {
  it('exits 0 with a JSON report', () => {
    expect(replayOut.stderr).toBe('');
    expect(replayOut.status).toBe(0);
    const r = JSON.parse(replayOut.stdout);
    expect(r.turns).toBe(400);
    expect(r.passes).toBeGreaterThan(0);
    expect(r.verdict.state).toBe('lossless');
  });
  it('--help works on every command', () => {
    for (const cmd of ['replay', 'search', 'exact', 'verdict', 'audit', 'verify', 'stats', 'report']) {
      const r = run(cmd, '--help');
      expect(r.status, cmd).toBe(0);
      expect(r.stdout, cmd).toMatch(/Usage: spanguard/);
    }
  });
});

describe('spanguard search, exact, verdict, verify, stats, report on the result', () => {
  it('exact finds a phrase of turn 2 verbatim', () => {
    const line = realTurns(2)[1]!.text.split('\n').find((l) => l.trim().length > 20)!.trim();
    const r = run('exact', dir, line, '--json');
    expect(r.status).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out.hits.some((h: { turnStart: number }) => h.turnStart === 2)).toBe(true);
  });
  it('search answers with provenance, and misses honestly', () => {
    const hit = JSON.parse(run('search', dir, realTurns(2)[1]!.text.slice(0, 200), '--json').stdout);
    expect(hit.miss).toBe(false);
    expect(hit.hits[0]).toHaveProperty('spanId');
    expect(hit.hits[0]).toHaveProperty('via');
    const miss = run('search', dir, 'the staging cluster quota is 7731 pods per namespace');
    expect(miss.stdout).toMatch(/not in transcript/);
  });
  it('verdict --explain exits 0 for lossless and lists evidence', () => {
    const r = run('verdict', dir, '--explain');
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/verdict: lossless/);
    expect(r.stdout).toMatch(/event trail/);
  });
  it('verify exits 0 on a clean store; stats prints counts; report writes HTML', () => {
    expect(run('verify', dir).status).toBe(0);
    expect(JSON.parse(run('stats', dir, '--json').stdout).spans.raw).toBe(400);
    const html = path.join(dir, '..', 'report.html');
    expect(run('report', dir, '--html', html).status).toBe(0);
    expect(fs.readFileSync(html, 'utf8')).toMatch(/<svg/);
  });
});

describe('a corrupted store makes verify fail with the file and offset', () => {
  it('exits 3 and names the segment and byte offset', () => {
    const copy = tmpDir('spanguard-corrupt-');
    fs.cpSync(dir, copy, { recursive: true });
    const seg = fs.readdirSync(path.join(copy, 'log')).filter((f) => f !== 'LOCK').sort()[0]!;
    const file = path.join(copy, 'log', seg);
    const bytes = fs.readFileSync(file);
    const at = Math.floor(bytes.length / 3);
    bytes[at] = bytes[at]! ^ 0x40;
    fs.writeFileSync(file, bytes);
    const r = run('verify', copy);
    expect(r.status).toBe(3);
    expect(r.stdout + r.stderr).toContain(seg);
    expect(r.stdout + r.stderr).toMatch(/offset[ =]\d+/);
  });
});

describe('malformed input lines are reported with their numbers, nothing written', () => {
  it('exits 65 naming the line, and leaves no store behind', () => {
    const work = tmpDir('spanguard-bad-');
    const bad = path.join(work, 'bad.jsonl');
    fs.writeFileSync(bad, '{"turn":1,"role":"user","text":"ok"}\n{"turn":2,"role":"user","text":"ok"}\n{"turn":3,"role":\n');
    const store = path.join(work, 'store');
    const r = run('replay', bad, '--store', store, '--budget', '1000');
    expect(r.status).toBe(65);
    expect(r.stderr).toMatch(/line 3/);
    expect(fs.existsSync(path.join(store, 'log'))).toBe(false);
  });
  it('unknown commands and bad options are usage errors (exit 2)', () => {
    expect(run('frobnicate').status).toBe(2);
    expect(run('search').status).toBe(2);
    expect(run('replay', transcript, '--store', tmpDir(), '--budget', 'many').status).toBe(2);
  });
});
