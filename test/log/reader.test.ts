// Readers in other processes open read-only (no lock) and see records appended after they
// opened, across segment rolls, through refresh().
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { durabilities, openLog, tmpDir } from './helpers.js';
// @ts-expect-error plain .mjs shared with the child processes
import { columnsFor, diffRecord } from './content.mjs';

const child = path.join(path.dirname(fileURLToPath(import.meta.url)), 'reader-child.mjs');
const loopChild = path.join(path.dirname(fileURLToPath(import.meta.url)), 'reader-loop-child.mjs');

function startReader(dir: string) {
  const p = spawn(process.execPath, [child, dir], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines: string[] = [];
  const waiters: ((l: string) => void)[] = [];
  let buf = '';
  p.stdout.setEncoding('utf8');
  p.stdout.on('data', (d: string) => {
    buf += d;
    let nl: number;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      const w = waiters.shift();
      if (w) w(line);
      else lines.push(line);
    }
  });
  const next = () => new Promise<string>((r) => (lines.length ? r(lines.shift()!) : waiters.push(r)));
  return {
    next,
    refresh: async () => {
      p.stdin.write('refresh\n');
      return next();
    },
    stop: () => p.stdin.end(),
  };
}

describe('a reader in another process sees appends after refresh()', () => {
  it('sees records appended after it opened, across segment rolls, byte for byte', async () => {
    const dir = tmpDir('reader');
    const log = openLog(dir, { durability: durabilities.none, segmentBytes: 8192 });
    await log.append(columnsFor(1, 5, 0));
    const reader = startReader(dir);
    expect(await reader.next()).toBe('seen 6 1');
    let next = 6;
    for (let round = 0; round < 8; round++) {
      const n = 3 + round * 4;
      await log.append(columnsFor(next, n, 0));
      next += n;
      // `none` mode: still visible to other processes through the page cache.
      const seen = await reader.refresh();
      expect(seen.startsWith(`seen ${next} `), seen).toBe(true);
    }
    expect(log.stats().segments).toBeGreaterThan(2);
    const segs = log.stats().segments;
    expect(await reader.refresh()).toBe(`seen ${next} ${segs}`);
    reader.stop();
    await log.close();
  });

  it('a reader opened on an empty directory picks up the log once a writer creates it', async () => {
    const dir = tmpDir('reader-empty');
    const reader = openLog(dir, { readOnly: true });
    expect(reader.nextId()).toBe(1);
    expect(reader.refresh()).toBe(1);
    const log = openLog(dir);
    await log.append(columnsFor(1, 4, 0));
    expect(reader.refresh()).toBe(5);
    for (let id = 1; id < 5; id++) expect(diffRecord(reader.get(id), id, 0)).toBeNull();
    await expect(reader.append(columnsFor(5, 1, 0))).rejects.toMatchObject({ code: 'READ_ONLY' });
    await reader.close();
    await log.close();
  });
});

describe('a reader never touches bytes a live writer may cut (the zero prefill, at rolls and at close)', () => {
  it('refreshing, re-opening and verifying in a loop while a group writer rolls, closes and re-opens: no crash, every record exact', async () => {
    const dir = tmpDir('reader-loop');
    let log = openLog(dir, { durability: durabilities.group, segmentBytes: 64 << 10 });
    await log.append(columnsFor(1, 3, 0));
    const p = spawn(process.execPath, [loopChild, dir], { stdio: ['pipe', 'pipe', 'inherit'] });
    let out = '';
    p.stdout.setEncoding('utf8');
    p.stdout.on('data', (d: string) => (out += d));
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) => p.on('exit', (code, signal) => r({ code, signal })));
    while (!out.includes('ready')) await new Promise((r) => setTimeout(r, 5));
    let next = 4;
    let closes = 0;
    const until = Date.now() + 2500;
    for (let round = 0; Date.now() < until && !out.includes('bad'); round++) {
      // A burst of concurrent appenders: one fdatasync, and the writer keeps zeros past it.
      const burst = Array.from({ length: 8 }, (_, i) => columnsFor(next + 2 * i, 2, 0));
      next += 16;
      await Promise.all(burst.map((c) => log.append(c)));
      if (round % 25 === 24) {
        await log.close(); // cuts the prefill off the file the reader is scanning
        closes++;
        log = openLog(dir, { durability: durabilities.group, segmentBytes: 64 << 10 });
      }
    }
    p.stdin.end();
    const { code, signal } = await exited;
    expect(signal, out).toBeNull();
    expect(code, out).toBe(0);
    expect(out).toMatch(/^ready\nok \d+ \d+ \d+/);
    const [, seen, refreshes] = out.split('\n')[1]!.split(' ').map(Number);
    expect(seen).toBe(next);
    expect(refreshes).toBeGreaterThan(100);
    expect(closes).toBeGreaterThan(2);
    expect(log.stats().segments).toBeGreaterThan(10);
    await log.close();
  });
});

