/**
 * Shared bench machinery: timing (tinybench), figure rows with their peer ratio, correctness
 * checks that fail the run, the terminal table, JSON, the log-log growth fit and the SVG
 * growth chart. Everything a bench file needs goes through a `Ctx`, so the runner sees every
 * figure and every check in one place.
 */
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Bench } from 'tinybench';

export interface Figure {
  /** Section: log, open, retrieval, guard, memory. */
  group: string;
  /** Stable key (used by the growth fit across scales). */
  key: string;
  label: string;
  value: number;
  unit: string;
  /** Lower is better (latencies) or higher is better (throughputs); sets how the ratio reads. */
  better: 'lower' | 'higher';
  p99?: number;
  peer?: { label: string; value: number; p99?: number };
  /** ours / peer, in the figure's own unit (so <1 is faster for latencies, >1 for throughputs). */
  ratio?: number;
  /** True when this figure is a per-op cost meant for the growth chart. */
  growth?: boolean;
  note?: string;
}

export interface Check {
  name: string;
  ok: boolean;
  detail: string;
  /** A finding worth a reviewer's eye that is not a wrong answer (e.g. a fail-closed false alarm): WARN, never fails the run. */
  warnOnly?: boolean;
}

export interface Ctx {
  scale: number;
  quick: boolean;
  /** Queries per latency figure (tinybench iterations); fewer under --quick. */
  queries: number;
  tmp: (tag: string) => string;
  figures: Figure[];
  checks: Check[];
  info: Record<string, unknown>;
  log: (msg: string) => void;
}

export function makeCtx(scale: number, quick: boolean): Ctx {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), `spanguard-bench-${scale}-`));
  let n = 0;
  return {
    scale,
    quick,
    queries: quick ? 100 : 400,
    tmp: (tag) => {
      const d = path.join(root, `${tag}-${n++}`);
      fs.mkdirSync(d, { recursive: true });
      return d;
    },
    figures: [],
    checks: [],
    info: { tmpRoot: root },
    log: (msg) => process.stderr.write(`  [${new Date().toISOString().slice(11, 19)}] ${msg}\n`),
  };
}

export function cleanup(ctx: Ctx): void {
  fs.rmSync(String(ctx.info.tmpRoot), { recursive: true, force: true });
}

export function figure(ctx: Ctx, f: Omit<Figure, 'ratio'>): Figure {
  const out: Figure = { ...f };
  if (f.peer && f.peer.value > 0) out.ratio = f.value / f.peer.value;
  ctx.figures.push(out);
  return out;
}

export function check(ctx: Ctx, name: string, ok: boolean, detail: string, warnOnly = false): void {
  ctx.checks.push({ name, ok, detail, ...(warnOnly ? { warnOnly } : {}) });
  ctx.log(`${status({ ok, warnOnly })} ${name}: ${detail}`);
}

export const status = (c: { ok: boolean; warnOnly?: boolean }): string => (c.ok ? 'PASS' : c.warnOnly ? 'WARN' : 'FAIL');

export interface Latency {
  p50: number; // microseconds
  p99: number;
  mean: number;
  n: number;
}

/**
 * Latency of `fn` over `iterations` calls with tinybench (µs). `fn` usually walks a query
 * list with a cursor, so every iteration is a different query; a short warm-up first so JIT
 * and page cache are not what is measured.
 */
export async function latency(iterations: number, fn: () => unknown, warmup = Math.min(20, iterations)): Promise<Latency> {
  const bench = new Bench({ time: 0, iterations, warmupIterations: warmup, warmupTime: 0, throws: true });
  bench.add('x', fn as () => void);
  await bench.run();
  const r = bench.tasks[0]!.result;
  if (!r || !('latency' in r)) throw new Error(`tinybench: task did not complete (${r?.state})`);
  return { p50: r.latency.p50 * 1000, p99: r.latency.p99 * 1000, mean: r.latency.mean * 1000, n: r.latency.samplesCount };
}

/** Same, for async functions (tinybench awaits each call). */
export async function latencyAsync(iterations: number, fn: () => Promise<unknown>, warmup = Math.min(10, iterations)): Promise<Latency> {
  const bench = new Bench({ time: 0, iterations, warmupIterations: warmup, warmupTime: 0, throws: true });
  bench.add('x', fn);
  await bench.run();
  const r = bench.tasks[0]!.result;
  if (!r || !('latency' in r)) throw new Error(`tinybench: task did not complete (${r?.state})`);
  return { p50: r.latency.p50 * 1000, p99: r.latency.p99 * 1000, mean: r.latency.mean * 1000, n: r.latency.samplesCount };
}

/**
 * A sync(1) loop in a child started once, asked over two FIFOs with blocking reads and
 * writes: running sync(1) per call (execFileSync) forks this process each time, and a fork
 * write-protects every page of it, so the next measurement paid a copy-on-write fault for
 * each page it wrote that it had written before — the log its heap (batch scratch, the JS
 * heap's young generation), the write() floor next to nothing, since it only reads its
 * buffer. Fresh 10^4-span logs, 1,000-span batches, median of 150 per batch: a fork before each log cost its 10 batches 49 µs in all, 166 instead
 * of 146 µs the first and 3-5 µs each of the rest. Null where FIFOs cannot be made: each call
 * then forks, as before.
 */
let syncer: { req: number; resp: number } | null | undefined;
function startSyncer(): { req: number; resp: number } | null {
  try {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'spanguard-syncer-'));
    const req = path.join(dir, 'req');
    const resp = path.join(dir, 'resp');
    execFileSync('mkfifo', ['-m', '600', req, resp]);
    // The child opens req then resp, the parent the same order: each open waits for its peer.
    // It exits when this process closes req (on exit): `read` then sees end of file.
    const child = spawn('sh', ['-c', 'exec 3<"$1" 4>"$2"; while read -r _ <&3; do sync; echo ok >&4; done', 'sh', req, resp], { stdio: 'ignore' });
    child.on('error', () => undefined); // a failed spawn: reported below as no pid
    child.unref();
    if (child.pid === undefined) throw new Error('no sh');
    // Without a blocking open: a child that never opens its end would hang it forever.
    // ENXIO until the child has req open for reading; give it a second.
    let reqFd = -1;
    for (const until = Date.now() + 1000; reqFd < 0; ) {
      try {
        reqFd = fs.openSync(req, fs.constants.O_WRONLY | fs.constants.O_NONBLOCK);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'ENXIO' || Date.now() > until) throw e;
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1);
      }
    }
    const fds = { req: reqFd, resp: fs.openSync(resp, 'r') };
    fs.rmSync(dir, { recursive: true, force: true });
    return fds;
  } catch {
    return null;
  }
}
function syncAll(): void {
  if (syncer === undefined) syncer = startSyncer();
  if (syncer !== null) {
    try {
      fs.writeSync(syncer.req, 'sync\n');
      const ok = Buffer.alloc(3);
      if (fs.readSync(syncer.resp, ok, 0, 3, null) === 3 && ok.toString() === 'ok\n') return;
    } catch {
      // The child is gone: fork per call from here on.
    }
    for (const fd of [syncer.req, syncer.resp]) fs.closeSync(fd);
    syncer = null;
  }
  try {
    execFileSync('sync', { stdio: 'ignore' });
  } catch {
    // No sync(1): the figures are then only noisier.
  }
}

/**
 * Writes back every dirty page on the machine (sync(1)) before a timed write, so each path
 * starts from the same state instead of paying for the previous one's writeback (fdatasync
 * latencies doubled while earlier data drained).
 *
 * With `warm`, then writes and deletes a scratch file of `warm.bytes` there, so the page
 * cache the timed write is about to fill sits in guest memory the host has backed. This VM
 * runs virtio-balloon free page reporting: memory the guest freed a few seconds ago has been
 * handed back to the host, and touching it again costs a host page fault. A fresh process's
 * first 400 MB write() ran at 1.1-1.2 GB/s and its second at 4.9-5.6 GB/s; with a same-size
 * scratch write just before, the first ran at 5.0-5.1 GB/s.
 * That was what made the 10^6 write() floor swing between 0.3 and 1.7 GB/s, and which side
 * of a log-vs-floor comparison paid it was luck. Both sides are warmed alike.
 */
export function quiesce(warm?: { dir: string; bytes: number }): void {
  syncAll();
  // And a full collection (run.ts starts node with --expose-gc), so a major GC of the data
  // loaded before (10^5–10^6 spans of text) does not mark concurrently on the second core
  // during the measurement: 64 group appenders measured 182 / 161 / 138 k/s at 10^4 / 10^5 /
  // 10^6 without it, in the same process right after loading the data.
  (globalThis as { gc?: () => void }).gc?.();
  if (warm && warm.bytes > 0) {
    const f = path.join(warm.dir, 'warm');
    const chunk = Buffer.alloc(1 << 20);
    const fd = fs.openSync(f, 'w', 0o600);
    try {
      for (let done = 0; done < warm.bytes; done += chunk.length) fs.writeSync(fd, chunk, 0, Math.min(chunk.length, warm.bytes - done));
    } finally {
      fs.closeSync(fd);
      fs.rmSync(f);
    }
  }
}

/**
 * Wall time of one long operation (ingest, open, a whole session): these run once per scale,
 * so tinybench's repeated-sample machinery does not apply; measured with the same clock.
 */
export async function wall<T>(fn: () => Promise<T> | T): Promise<[T, number]> {
  const t0 = performance.now();
  const r = await fn();
  return [r, performance.now() - t0]; // ms
}

export function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(p * s.length))] ?? NaN;
}

export { dirBytes } from '../src/store.js';

/** Peak RSS of this process so far, bytes (getrusage ru_maxrss). */
export const peakRss = (): number => process.resourceUsage().maxRSS * 1024;

/** A seeded PRNG so queries are the same on every run: the auditor's mulberry32. */
export { prng as rng } from '../src/prng.js';

// ------------------------------------------------------------------ formatting

export function fmtValue(v: number, unit: string): string {
  if (!Number.isFinite(v)) return String(v);
  if (unit === 'µs') {
    if (v >= 1e6) return `${(v / 1e6).toFixed(2)} s`;
    if (v >= 1000) return `${(v / 1000).toFixed(2)} ms`;
    return `${v < 10 ? v.toFixed(2) : v.toFixed(1)} µs`;
  }
  if (unit === 'ms') return v >= 1000 ? `${(v / 1000).toFixed(2)} s` : `${v.toFixed(v < 10 ? 2 : 1)} ms`;
  const abs = Math.abs(v);
  const num = abs >= 1e9 ? `${(v / 1e9).toFixed(2)} G` : abs >= 1e6 ? `${(v / 1e6).toFixed(2)} M` : abs >= 1e4 ? `${(v / 1e3).toFixed(1)} k` : abs >= 100 ? v.toFixed(0) : abs >= 1 ? v.toFixed(2) : v.toFixed(3);
  return `${num.replace(/ $/, '')}${num.endsWith(' ') ? '' : ' '}${unit}`.replace(/ +/g, ' ');
}

function fmtRatio(f: Figure): string {
  if (f.ratio === undefined) return '';
  // Phrase the ratio the way it reads: "0.42× (faster)" for costs, "2.1× (more)" for rates.
  const good = f.better === 'lower' ? f.ratio <= 1 : f.ratio >= 1;
  return `${f.ratio.toFixed(f.ratio < 0.1 ? 3 : 2)}× ${good ? '✓' : '✗'}`;
}

/** The terminal table (also used verbatim in the README). */
export function table(figs: Figure[]): string {
  const rows = figs.map((f) => [
    f.group,
    f.label,
    fmtValue(f.value, f.unit) + (f.p99 !== undefined ? ` / ${fmtValue(f.p99, f.unit)}` : ''),
    f.peer ? `${f.peer.label}: ${fmtValue(f.peer.value, f.unit)}${f.peer.p99 !== undefined ? ` / ${fmtValue(f.peer.p99, f.unit)}` : ''}` : '',
    fmtRatio(f),
  ]);
  const head = ['group', 'figure', 'ours (p50 / p99)', 'peer (same run)', 'ours/peer'];
  const w = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (r: string[]) => `| ${r.map((c, i) => c.padEnd(w[i]!)).join(' | ')} |`;
  return [line(head), `|${w.map((x) => '-'.repeat(x + 2)).join('|')}|`, ...rows.map(line)].join('\n');
}

// ------------------------------------------------------------------ growth

export interface Fit {
  key: string;
  label: string;
  unit: string;
  points: { n: number; value: number }[];
  /** cost ∝ N^exponent, least squares on log-log. */
  exponent: number;
  r2: number;
}

/** Least-squares slope of log(value) against log(n). */
export function fitExponent(points: { n: number; value: number }[]): { exponent: number; r2: number } {
  const xs = points.map((p) => Math.log(p.n));
  const ys = points.map((p) => Math.log(Math.max(p.value, 1e-12)));
  const n = xs.length;
  if (n < 2) return { exponent: NaN, r2: NaN };
  const mx = xs.reduce((a, b) => a + b, 0) / n;
  const my = ys.reduce((a, b) => a + b, 0) / n;
  let sxy = 0;
  let sxx = 0;
  let syy = 0;
  for (let i = 0; i < n; i++) {
    sxy += (xs[i]! - mx) * (ys[i]! - my);
    sxx += (xs[i]! - mx) ** 2;
    syy += (ys[i]! - my) ** 2;
  }
  const slope = sxx > 0 ? sxy / sxx : NaN;
  return { exponent: slope, r2: syy > 0 ? (sxy * sxy) / (sxx * syy) : 1 };
}

const PALETTE = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e', '#8c564b', '#e377c2', '#17becf', '#7f7f7f', '#bcbd22', '#393b79', '#637939'];

/**
 * A log-log chart of cost per operation against N, one line per operation, normalised to its
 * value at the smallest N so flat lines (cost independent of session length) and rising ones
 * read at a glance; the legend gives the absolute figure at each N and the fitted exponent.
 */
export function growthSvg(fits: Fit[], title: string, subtitle = ''): string {
  const W = 1180;
  const legendBottom = 64 + 8 + 22 * fits.length;
  const tableTop = Math.max(64 + 360 + 50, legendBottom + 30);
  const H = tableTop + 20 * fits.length + 60;
  const plot = { x: 80, y: 64, w: 520, h: 360 };
  const ns = [...new Set(fits.flatMap((f) => f.points.map((p) => p.n)))].sort((a, b) => a - b);
  const minN = ns[0] ?? 1e4;
  const maxN = ns[ns.length - 1] ?? 1e6;
  const rel = fits.flatMap((f) => f.points.map((p) => p.value / f.points[0]!.value));
  const lo = Math.min(0.5, ...rel);
  const hi = Math.max(20, ...rel);
  const lx = (n: number) => plot.x + ((Math.log10(n) - Math.log10(minN)) / Math.max(1e-9, Math.log10(maxN) - Math.log10(minN))) * plot.w;
  const ly = (v: number) => plot.y + plot.h - ((Math.log10(v) - Math.log10(lo)) / (Math.log10(hi) - Math.log10(lo))) * plot.h;
  const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;');
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" font-family="sans-serif" font-size="12">`,
    `<rect width="${W}" height="${H}" fill="white"/>`,
    `<text x="${plot.x}" y="30" font-size="15" font-weight="bold">${esc(title)}</text>`,
    `<text x="${plot.x}" y="46" fill="#555">cost per operation relative to N=${minN.toExponential(0)} (log-log); dashed: N^1 (linear) reference</text>`,
  ];
  // Grid: decades on both axes.
  for (const n of ns) {
    out.push(`<line x1="${lx(n)}" y1="${plot.y}" x2="${lx(n)}" y2="${plot.y + plot.h}" stroke="#ddd"/>`);
    out.push(`<text x="${lx(n)}" y="${plot.y + plot.h + 18}" text-anchor="middle">N = ${n.toExponential(0).replace('e+', 'e')}</text>`);
  }
  for (let e = Math.floor(Math.log10(lo)); e <= Math.ceil(Math.log10(hi)); e++) for (const m of [1, 2, 5]) {
    const v = m * 10 ** e;
    if (v < lo || v > hi) continue;
    out.push(`<line x1="${plot.x}" y1="${ly(v)}" x2="${plot.x + plot.w}" y2="${ly(v)}" stroke="#ddd"/>`);
    out.push(`<text x="${plot.x - 6}" y="${ly(v) + 4}" text-anchor="end">${v}×</text>`);
  }
  out.push(`<rect x="${plot.x}" y="${plot.y}" width="${plot.w}" height="${plot.h}" fill="none" stroke="#333"/>`);
  // Linear-growth reference through (minN, 1).
  out.push(`<line x1="${lx(minN)}" y1="${ly(1)}" x2="${lx(maxN)}" y2="${ly(Math.min(hi, maxN / minN))}" stroke="#999" stroke-dasharray="6 4"/>`);
  fits.forEach((f, i) => {
    const c = PALETTE[i % PALETTE.length]!;
    const base = f.points[0]!.value;
    const pts = f.points.map((p) => `${lx(p.n).toFixed(1)},${ly(p.value / base).toFixed(1)}`);
    out.push(`<polyline points="${pts.join(' ')}" fill="none" stroke="${c}" stroke-width="2"/>`);
    for (const p of f.points) out.push(`<circle cx="${lx(p.n).toFixed(1)}" cy="${ly(p.value / base).toFixed(1)}" r="3" fill="${c}"/>`);
  });
  // Legend to the right, then the absolute numbers below the plot.
  const legendX = plot.x + plot.w + 20;
  fits.forEach((f, i) => {
    const c = PALETTE[i % PALETTE.length]!;
    const y = plot.y + 8 + i * 22;
    out.push(`<rect x="${legendX}" y="${y - 9}" width="12" height="12" fill="${c}"/>`);
    out.push(`<text x="${legendX + 18}" y="${y + 1}">N^${f.exponent.toFixed(2)}  ${esc(f.label)}</text>`);
  });
  let y = tableTop;
  out.push(`<text x="${plot.x}" y="${y}" font-weight="bold">absolute cost per operation at each N, and the fitted exponent (log-log least squares)</text>`);
  y += 20;
  if (subtitle) {
    out.push(`<text x="${plot.x}" y="${y}" fill="#555">${esc(subtitle)}</text>`);
    y += 20;
  }
  for (const f of fits) {
    const vals = f.points.map((p) => `${p.n.toExponential(0).replace('e+', 'e')}: ${fmtValue(p.value, f.unit)}`).join(' · ');
    out.push(`<text x="${plot.x}" y="${y}">${esc(`${f.label} — ${vals} — exponent ${f.exponent.toFixed(2)}`)}</text>`);
    y += 20;
  }
  out.push('</svg>');
  return out.join('\n');
}

/** Machine state, printed with every table: figures from a loaded machine are not comparable. */
export function machine(): Record<string, unknown> {
  return {
    date: new Date().toISOString(),
    node: process.version,
    cpus: os.cpus().length,
    cpuModel: os.cpus()[0]?.model,
    loadavg: os.loadavg().map((x) => +x.toFixed(2)),
    totalMemGB: +(os.totalmem() / 2 ** 30).toFixed(1),
    tmpdir: os.tmpdir(),
  };
}

/**
 * The JSON a bench run writes to bench/results (bench/results.ts renders RESULTS.md from it):
 * what ran, on which machine at its start and end, and every figure and check.
 */
export function runRecord(ctx: Ctx, run: { command: string; scale: number; sections: string[]; start: Record<string, unknown>; simd: string; t0: number }) {
  return {
    command: run.command,
    scale: run.scale,
    quick: ctx.quick,
    sections: run.sections,
    machineStart: run.start,
    machineEnd: machine(),
    simd: run.simd,
    wallSeconds: +((performance.now() - run.t0) / 1000).toFixed(1),
    peakRssMiB: +(peakRss() / 2 ** 20).toFixed(0),
    figures: ctx.figures,
    checks: ctx.checks,
    info: ctx.info,
  };
}

/** The vector recall/latency sweep as a table: the matched-recall comparison in full. */
export function sweepTable(sweep: { ours: { ef: number; recall: number; p50: number; p99: number }[]; usearch: { ef: number; recall: number; p50: number; p99: number }[] }): string {
  const efs = [...new Set([...sweep.ours, ...sweep.usearch].map((p) => p.ef))].sort((a, b) => a - b);
  const cell = (p?: { recall: number; p50: number; p99: number }) => (p ? `${p.recall.toFixed(3)} | ${fmtValue(p.p50, 'µs')} / ${fmtValue(p.p99, 'µs')}` : '— | —');
  const lines = ['| ef | ours recall@10 | ours p50 / p99 | usearch JS recall@10 | usearch JS p50 / p99 |', '|---|---|---|---|---|'];
  for (const ef of efs) lines.push(`| ${ef} | ${cell(sweep.ours.find((p) => p.ef === ef))} | ${cell(sweep.usearch.find((p) => p.ef === ef))} |`);
  return lines.join('\n');
}

export interface LoopDelay {
  /** Wall time of the operation, ms. */
  wallMs: number;
  /** The event loop's longest stall while it ran, ms (perf_hooks.monitorEventLoopDelay, 1 ms resolution). */
  maxMs: number;
  p99Ms: number;
}

/**
 * Runs `fn` with the event loop's delay monitored: what a host's timers, sockets and other
 * requests would have waited while spanguard did this work on the main thread. The monitor's
 * timer can only record a stall once the loop turns again, so it is read after a 5 ms sleep
 * that follows the operation.
 */
export async function withLoopDelay<T>(fn: () => Promise<T> | T): Promise<[T, LoopDelay]> {
  const { monitorEventLoopDelay } = await import('node:perf_hooks');
  const h = monitorEventLoopDelay({ resolution: 1 });
  h.enable();
  await new Promise((res) => setTimeout(res, 2));
  const t0 = performance.now();
  const r = await fn();
  const wallMs = performance.now() - t0;
  await new Promise((res) => setTimeout(res, 5));
  h.disable();
  return [r, { wallMs, maxMs: h.max / 1e6, p99Ms: h.percentile(99) / 1e6 }];
}

/**
 * Samples this process's resident set every `everyMs` while `fn` runs and returns the highest
 * sample: the peak of one phase (getrusage's maxRSS is the whole process's, data loading
 * included). The timer fires between the phase's awaits, so a phase that never yields is
 * sampled before and after only.
 */
export async function withRssPeak<T>(fn: () => Promise<T> | T, everyMs = 100): Promise<[T, { peak: number; before: number; atPeak: Resident }]> {
  const before = process.memoryUsage.rss();
  let peak = before;
  let atPeak = resident(true);
  let detailed = before;
  const sample = () => {
    const rss = process.memoryUsage.rss();
    if (rss <= peak) return;
    peak = rss;
    // The by-file split reads /proc/self/smaps (a few ms): taken again once the peak has
    // grown by 1% since, so the last split is within 1% of the peak it describes.
    const detail = rss > detailed * 1.01;
    if (detail) detailed = rss;
    const r = resident(detail);
    atPeak = detail ? r : { ...r, heapResidentMiB: atPeak.heapResidentMiB, files: atPeak.files };
  };
  const t = setInterval(sample, everyMs);
  try {
    const r = await fn();
    sample();
    return [r, { peak, before, atPeak }];
  } finally {
    clearInterval(t);
  }
}

/** What the resident set is made of, in MiB: anonymous memory (JS heap, native allocations) and file pages mapped (the log's segments, mapped index files). */
export interface Resident {
  rssMiB: number;
  /** Anonymous resident pages: the JS heap, array buffers and every native allocation. */
  anonMiB: number;
  /** Resident pages of mapped files. */
  fileMiB: number;
  /** The JS heap in use, and memory held by ArrayBuffers and external strings. */
  heapMiB: number;
  externalMiB: number;
  /** The V8 heap committed (used or not): near what the JS heap costs in RSS. */
  heapResidentMiB?: number;
  /** Mapped files resident, by file: the log's segments, the vectors file, index snapshots, the rest (node, libraries). */
  files?: { logMiB: number; vectorsMiB: number; indexMiB: number; otherMiB: number };
}

/** Where the mapped files' resident pages come from (/proc/self/smaps: Rss of each file mapping, by name). */
function residentFiles(): Resident['files'] {
  let smaps: string;
  try {
    smaps = fs.readFileSync('/proc/self/smaps', 'utf8');
  } catch {
    return undefined;
  }
  const out = { logMiB: 0, vectorsMiB: 0, indexMiB: 0, otherMiB: 0 };
  let name = '';
  for (const line of smaps.split('\n')) {
    const head = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \d+\s*(.*)$/.exec(line);
    if (head) {
      name = head[1]!;
      continue;
    }
    if (!line.startsWith('Rss:') || !name.startsWith('/')) continue;
    const mib = Number(/(\d+) kB/.exec(line)?.[1] ?? 0) / 1024;
    const base = path.basename(name);
    if (/^seg-\d+\.log/.test(base)) out.logMiB += mib;
    else if (base.startsWith('vectors')) out.vectorsMiB += mib;
    else if (name.includes('/index/')) out.indexMiB += mib;
    else out.otherMiB += mib;
  }
  return out;
}

/** This process's resident set by kind (/proc/self/status; file and anon are NaN where it is not available). */
export function resident(detail = false): Resident {
  const kib = (key: string, text: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? NaN) / 1024;
  let status = '';
  try {
    status = fs.readFileSync('/proc/self/status', 'utf8');
  } catch {
    // Not Linux: only the heap figures.
  }
  const m = process.memoryUsage();
  const r: Resident = {
    rssMiB: m.rss / 2 ** 20,
    anonMiB: kib('RssAnon', status),
    fileMiB: kib('RssFile', status) + kib('RssShmem', status),
    heapMiB: m.heapUsed / 2 ** 20,
    externalMiB: m.external / 2 ** 20,
  };
  if (detail) {
    r.heapResidentMiB = m.heapTotal / 2 ** 20;
    r.files = residentFiles();
  }
  return r;
}
