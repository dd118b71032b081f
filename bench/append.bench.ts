/**
 * Span log benchmark (issue 2): append throughput per durability mode next to the physical
 * ceiling measured in the same run (sequential write() of the same bytes, memcpy, one
 * fdatasync), get latency, sequential scan, open + recovery of a large log.
 *
 * Scales: BENCH_SCALE=design (10^4 turns / ~10^6 tokens, default) or large (10^6 turns /
 * ~10^8 tokens). Prints a table and writes bench/results/append-<scale>.json.
 *
 * Run after `npm run build` (it loads dist/native.js): compiled by the bench runner, or by
 * hand: npx tsc bench/append.bench.ts --outDir build/bench --module nodenext --target es2022
 * --moduleResolution nodenext --skipLibCheck, then node build/bench/append.bench.js (it
 * finds the package root from the working directory).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { pathToFileURL } from 'node:url';
import { Bench } from 'tinybench';

type NativeModule = typeof import('../dist/native.js');
const root = process.cwd();
const { addon } = (await import(pathToFileURL(path.join(root, 'dist/native.js')).href)) as NativeModule;
const native = addon();

const scale = process.env.BENCH_SCALE === 'large' ? 'large' : 'design';
const TURNS = scale === 'large' ? 1_000_000 : 10_000;
const TEXT_BYTES = 400; // ~100 tokens per turn: 10^4 turns ~ 10^6 tokens
const BATCH = 1000;

const tmp = (tag: string) => fs.mkdtempSync(path.join(os.tmpdir(), `spanguard-bench-${tag}-`));
const text = 'rate limit 40 req/s; '.repeat(Math.ceil(TEXT_BYTES / 21)).slice(0, TEXT_BYTES);
function cols(first: number, n: number) {
  return {
    kinds: new Uint8Array(n).fill(1),
    flags: new Uint8Array(n),
    roles: new Uint8Array(n).fill(2),
    turnStart: Float64Array.from({ length: n }, (_, i) => first + i),
    turnEnd: Float64Array.from({ length: n }, (_, i) => first + i),
    timestamps: new Float64Array(n).fill(Date.now()),
    tokens: new Uint32Array(n).fill(100),
    texts: new Array<string>(n).fill(text),
    metas: new Array<string | null>(n).fill(null),
  };
}
const open = (dir: string, durability: number) =>
  new native.SpanLog(dir, { readOnly: false, durability, segmentBytes: 64 << 20, maxTextBytes: 16 << 20 });
const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))]!;
const rows: Record<string, number | string>[] = [];
const record = (name: string, value: number, unit: string, ceiling?: number) =>
  rows.push({ name, value: +value.toFixed(2), unit, ...(ceiling ? { ratio: +(value / ceiling).toFixed(3) } : {}) });

// ---- physical ceilings, same run --------------------------------------------------------
const RECORD_BYTES = 64 + TEXT_BYTES; // header + payload, as the log writes it
const totalBytes = TURNS * RECORD_BYTES;
const chunk = Buffer.alloc(1 << 20, 7);
let t0 = performance.now();
{
  const fd = fs.openSync(path.join(tmp('write'), 'f'), 'w');
  for (let done = 0; done < totalBytes; done += chunk.length) fs.writeSync(fd, chunk, 0, Math.min(chunk.length, totalBytes - done));
  fs.closeSync(fd);
}
const writeMBs = totalBytes / (performance.now() - t0) / 1e3;
record('ceiling: sequential write() 1 MiB chunks', writeMBs, 'MB/s');
const dst = Buffer.alloc(1 << 20);
t0 = performance.now();
for (let done = 0; done < Math.max(totalBytes, 256 << 20); done += chunk.length) chunk.copy(dst);
record('ceiling: memcpy', Math.max(totalBytes, 256 << 20) / (performance.now() - t0) / 1e3, 'MB/s');
const fsyncs: number[] = [];
{
  const fd = fs.openSync(path.join(tmp('fsync'), 'f'), 'w');
  const rec = Buffer.alloc(RECORD_BYTES, 1);
  for (let i = 0; i < 200; i++) {
    fs.writeSync(fd, rec);
    const s = performance.now();
    fs.fdatasyncSync(fd);
    fsyncs.push(performance.now() - s);
  }
  fs.closeSync(fd);
}
const fsyncP50us = pct(fsyncs, 0.5) * 1000;
record('ceiling: one write+fdatasync p50', fsyncP50us, 'us');
// The group ceiling: a sync that carries 64 records (on this VM fdatasync time grows with
// the bytes it flushes, so the single-record figure would overstate the ceiling).
const fsyncs64: number[] = [];
{
  const fd = fs.openSync(path.join(tmp('fsync64'), 'f'), 'w');
  const rec = Buffer.alloc(RECORD_BYTES * 64, 1);
  for (let i = 0; i < 100; i++) {
    fs.writeSync(fd, rec);
    const s = performance.now();
    fs.fdatasyncSync(fd);
    fsyncs64.push(performance.now() - s);
  }
  fs.closeSync(fd);
}
const fsync64P50us = pct(fsyncs64, 0.5) * 1000;
record('ceiling: write of 64 records + fdatasync p50', fsync64P50us, 'us');

// ---- append, none ------------------------------------------------------------------------
const noneDir = tmp('none');
{
  const log = open(noneDir, 0);
  const batches = Array.from({ length: TURNS / BATCH }, (_, b) => cols(1 + b * BATCH, BATCH));
  t0 = performance.now();
  for (const c of batches) await log.append(c);
  const ms = performance.now() - t0;
  record(`append none, batches of ${BATCH}`, TURNS / ms * 1000, 'spans/s');
  record('append none bandwidth', log.stats().bytes / ms / 1e3, 'MB/s', writeMBs);
  await log.close();
}

// ---- append, sync: single-span appends ----------------------------------------------------
{
  const log = open(tmp('sync'), 2);
  const lat: number[] = [];
  for (let i = 0; i < 300; i++) {
    const c = cols(i + 1, 1);
    const s = performance.now();
    await log.append(c);
    lat.push(performance.now() - s);
  }
  record('append sync, 1 span, p50', pct(lat, 0.5) * 1000, 'us');
  record('append sync p50 / fdatasync p50', (pct(lat, 0.5) * 1000) / fsyncP50us, 'x');
  await log.close();
}

// ---- append, group: 64 concurrent appenders -----------------------------------------------
{
  const log = open(tmp('group'), 1);
  let turn = 1;
  let done = 0;
  const until = performance.now() + 3000;
  const lane = async () => {
    while (performance.now() < until) {
      await log.append(cols(turn, 1));
      turn++;
      done++;
    }
  };
  t0 = performance.now();
  await Promise.all(Array.from({ length: 64 }, lane));
  // Ceiling: 64 appenders each waiting on its own durability can finish at most 64 spans per
  // fdatasync of 64 records.
  record('append group, 64 appenders x 1 span', done / (performance.now() - t0) * 1000, 'durable spans/s', 64 / (fsync64P50us / 1e6));
  await log.close();
}

// ---- reads ---------------------------------------------------------------------------------
{
  t0 = performance.now();
  const log = open(noneDir, 0);
  record(`open + recovery of ${TURNS} spans`, performance.now() - t0, 'ms');
  const bench = new Bench({ time: 1000 });
  let k = 0;
  bench.add('get', () => {
    k = (k + 7919) % TURNS;
    log.get(k + 1);
  });
  await bench.run();
  const lat = (bench.tasks[0]!.result as unknown as { latency: { p50: number; p99: number } }).latency;
  record('get p50', lat.p50 * 1000, 'us');
  record('get p99', lat.p99 * 1000, 'us');
  t0 = performance.now();
  let bytes = 0;
  for (let id = 1; id <= TURNS; id += BATCH) for (const s of log.scan(id, BATCH)) bytes += s.text.length;
  record('sequential scan (text copied out)', bytes / (performance.now() - t0) / 1e3, 'MB/s');
  await log.close();
}

console.table(rows);
const out = path.join(root, 'bench/results');
fs.mkdirSync(out, { recursive: true });
fs.writeFileSync(path.join(out, `append-${scale}.json`), JSON.stringify({ scale, turns: TURNS, node: process.version, rows }, null, 2));
