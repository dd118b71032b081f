// `spanguard replay` reads its transcript a line at a time: a line over 64 MiB, a turn the
// store would refuse, a cut or garbled .gz are malformed input (exit 65, the line named),
// checked before anything is written, and no message echoes the file's bytes.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { MAX_LINE_BYTES, MAX_TURN_TEXT_BYTES } from '../../src/transcript.js';
import { tmpDir } from '../helpers/data.js';
import { CLI, expectMalformed, run } from './helpers.js';

const line = (o: Record<string, unknown>) => JSON.stringify(o) + '\n';
const GOOD = line({ turn: 1, role: 'user', text: 'the first turn' });

describe('a transcript line is at most 64 MiB', () => {
  it('the documented figure', () => expect(MAX_LINE_BYTES).toBe(64 * 1024 * 1024));
  it('a line one byte over exits 65 naming it', () => {
    const work = tmpDir();
    const file = path.join(work, 'long.jsonl');
    const head = '{"turn":2,"role":"user","text":"';
    fs.writeFileSync(file, GOOD + head + 'a'.repeat(MAX_LINE_BYTES + 1 - head.length - 2) + '"}\n');
    expectMalformed(work, [file], /line 2 is longer than 67108864 bytes \(64 MiB\)/);
  });
  it('/dev/zero ends at once: line 1 is too long', () => {
    const t0 = Date.now();
    expectMalformed(tmpDir(), ['/dev/zero'], /transcript \/dev\/zero: line 1 is longer than/);
    expect(Date.now() - t0).toBeLessThan(30_000);
  });
  it('a pipe is read like a file', () => {
    const work = tmpDir();
    const file = path.join(work, 'turns.jsonl');
    fs.writeFileSync(file, GOOD);
    // A shell pipe (Node's own child stdin is a socket, which /dev/stdin cannot open).
    const r = spawnSync('sh', ['-c', `cat "$1" | "$2" "$3" replay /dev/stdin --store "$4" --budget 1000 --json`, 'sh', file, process.execPath, CLI, path.join(work, 'store')], { encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout).turns).toBe(1);
  });
  it('a directory is a usage error (exit 2)', () => {
    const r = run('replay', tmpDir(), '--store', path.join(tmpDir(), 'store'));
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/is a directory/);
  });
});

describe('a malformed line is named without echoing the file', () => {
  it('not JSON: the line and at most a character offset', () => {
    const work = tmpDir();
    const file = path.join(work, 'bad.jsonl');
    fs.writeFileSync(file, GOOD + 'SECRET-TOKEN-0xDEADBEEF not json\n');
    const r = expectMalformed(work, [file], /line 2: not valid JSON/);
    expect(r.stderr).not.toMatch(/SECRET|DEADBEEF/);
    fs.writeFileSync(file, GOOD + '{"turn": 2, SECRET-TOKEN}\n');
    const r2 = expectMalformed(work, [file], /line 2: not valid JSON \(at character 12\)/);
    expect(r2.stderr).not.toMatch(/SECRET/);
  });
  it('binary bytes (no gzip magic) in a .gz file', () => {
    const work = tmpDir();
    const file = path.join(work, 'garbage.jsonl.gz');
    fs.writeFileSync(file, Buffer.from('SECRET\u0001\u00ff\u0000binary', 'latin1'));
    const r = expectMalformed(work, [file], /line 1: not valid JSON/);
    expect(r.stderr).not.toMatch(/SECRET|binary/);
  });
});

describe('a cut or garbled .gz is malformed input (exit 65), never a stack trace', () => {
  const gz = zlib.gzipSync(Buffer.from(GOOD + line({ turn: 2, role: 'assistant', text: 'x'.repeat(5000) }) + line({ turn: 3, role: 'user', text: 'end' })));
  for (const [name, bytes, where] of [
    ['cut in its header', gz.subarray(0, 5), /line 1: not readable as gzip/],
    ['cut in its data', gz.subarray(0, Math.floor(gz.length / 2)), /line \d: not readable as gzip \(unexpected end of file\)/],
    ['cut before its trailer', gz.subarray(0, gz.length - 4), /not readable as gzip/],
    ['gzip magic, then garbage', Buffer.concat([Buffer.from([0x1f, 0x8b]), Buffer.from('SECRET garbage bytes')]), /line 1: not readable as gzip/],
    ['a flipped byte in its data', Buffer.from(gz.map((b, i) => (i === 40 ? b ^ 0xff : b))), /not readable as gzip/],
  ] as [string, Buffer, RegExp][]) {
    it(name, () => {
      const work = tmpDir();
      const file = path.join(work, 'turns.jsonl.gz');
      fs.writeFileSync(file, bytes);
      const r = expectMalformed(work, [file], where);
      expect(r.stderr).not.toMatch(/SECRET/);
    });
  }
  it('the whole .gz replays', () => {
    const work = tmpDir();
    const file = path.join(work, 'turns.jsonl.gz');
    fs.writeFileSync(file, gz);
    const r = run('replay', file, '--store', path.join(work, 'store'), '--budget', '1000', '--json');
    expect(r.status, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout).turns).toBe(3);
  });
});

describe('a turn the store would refuse is malformed input before anything is written', () => {
  it(`text over ${MAX_TURN_TEXT_BYTES} bytes (the store's maxTextBytes) names its line`, () => {
    const work = tmpDir();
    const file = path.join(work, 'big.jsonl');
    fs.writeFileSync(file, GOOD + line({ turn: 2, role: 'user', text: 'é'.repeat(MAX_TURN_TEXT_BYTES / 2 + 1) }));
    expectMalformed(work, [file], /line 2: text is 16777218 bytes; a turn holds at most 16777216/);
  });
  it('a role over 256 characters, fractional tokens', () => {
    const work = tmpDir();
    const file = path.join(work, 'bad.jsonl');
    fs.writeFileSync(file, GOOD + line({ turn: 2, role: 'r'.repeat(257), text: 'x' }));
    expectMalformed(work, [file], /line 2: "role" is longer than 256 characters/);
    fs.writeFileSync(file, GOOD + GOOD + line({ turn: 3, role: 'user', text: 'x', tokens: 1.5 }));
    expectMalformed(work, [file], /line 3: "tokens" must be a non-negative integer/);
  });
});
