// bench/RESULTS.md is written from the bench's JSON alone (bench/results.ts): every figure,
// the run's command, date and machine, the load test's windows, and nothing typed by hand.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { writeResults } from '../../bench/results.js';
import { tmpDir } from '../helpers/data.js';

const machine = (date: string, load: number) => ({ date, node: 'v20.0.0', cpus: 2, cpuModel: 'Test CPU 9000', loadavg: [load, 1, 1], totalMemGB: 8 });

function run(over: Record<string, unknown> = {}) {
  return {
    command: 'npm run bench -- --scale 1e5',
    scale: 100000,
    quick: false,
    sections: ['retrieval', 'load'],
    machineStart: machine('2030-01-02T03:04:05.000Z', 1.5),
    machineEnd: machine('2030-01-02T03:14:05.000Z', 2.5),
    simd: 'haswell',
    wallSeconds: 600,
    peakRssMiB: 512,
    figures: [
      { group: 'retrieval', key: 'bm25.3w', label: 'BM25 top-10, 3-word queries', value: 24.9, p99: 80.2, unit: 'µs', better: 'lower', peer: { label: 'FTS5 bm25()', value: 830, p99: 2100 }, ratio: 24.9 / 830, note: 'target p50 ≤ 1/3' },
      { group: 'load', key: 'load.slope', label: 'append throughput slope', value: null, unit: '%/min', better: 'higher', peer: { label: 'a peer that was NaN', value: null }, ratio: null },
    ],
    checks: [{ name: 'phrase hits equal the brute-force includes() scan', ok: true, detail: '100/100' }],
    info: {
      data: { spans: 100000, real: 90000, generated: 10000, tokens: 8900000, sources: ['shared/data/x.jsonl.gz', 'generator'] },
      load: {
        seconds: 12,
        appenders: 256,
        windowSeconds: 5,
        slopePerMinute: -0.25,
        windows: [
          { t: 5, seconds: 5, appends: 5000, searches: 50, compactions: 10, eldP50: 1.5, eldP99: 12.25, eldMax: 40, rssMiB: 300 },
          { t: 10, seconds: 5, appends: 4000, searches: 40, compactions: 8, eldP50: 2, eldP99: 15, eldMax: 44, rssMiB: 310 },
          { t: 12, seconds: 2, appends: 1000, searches: 10, compactions: 2, eldP50: 2, eldP99: 16, eldMax: 45, rssMiB: 312, searchMs: 7.25, searchMaxMs: 31, loopCpu: 0.42, loopWaiting: 0.35 },
        ],
      },
    },
    ...over,
  };
}

function render(files: Record<string, unknown>): string {
  const dir = tmpDir('spanguard-results-');
  for (const [name, body] of Object.entries(files)) fs.writeFileSync(path.join(dir, name), JSON.stringify(body));
  const out = path.join(dir, 'RESULTS.md');
  writeResults(dir, out);
  return fs.readFileSync(out, 'utf8');
}

describe('every run on disk is rendered with its command, date and machine', () => {
  it('names the command, the start date, the CPU and the load average of each run, full and quick', () => {
    const md = render({ 'bench-1e5.json': run(), 'bench-1e4-quick.json': run({ scale: 10000, quick: true, command: 'npm run bench -- --quick' }) });
    expect(md).toContain('`npm run bench -- --scale 1e5`');
    expect(md).toContain('`npm run bench -- --quick`');
    expect(md).toContain('2030-01-02T03:04:05.000Z');
    expect(md).toContain('Test CPU 9000, 2 cpus, 8 GiB, node v20.0.0, SIMD haswell; load average 1.5 1 1 at start, 2.5 1 1 at end');
    expect(md).toContain('90000 real + 10000 generated spans, 8900000 tokens');
    expect(md.indexOf('## Full runs')).toBeLessThan(md.indexOf('## Quick runs'));
    expect(md).toContain('### 1e4 spans (quick)');
  });

  it('files other than bench-*.json are not runs', () => {
    const md = render({ 'bench-1e5.json': run(), 'notes.json': run({ command: 'not a run' }) });
    expect(md).not.toContain('not a run');
  });
});

describe('every figure appears with its peer and ratio; a missing value is a dash, not a crash', () => {
  it('prints value, p99, peer, ratio and note from the JSON', () => {
    const md = render({ 'bench-1e5.json': run() });
    expect(md).toContain('| retrieval | BM25 top-10, 3-word queries | 24.9 µs / 80.2 µs | FTS5 bm25(): 830.0 µs / 2.10 ms | 0.030× ✓ | target p50 ≤ 1/3 |');
    expect(md).toContain('| phrase hits equal the brute-force includes() scan | PASS | 100/100 |');
  });

  it('a NaN figure (null in the JSON) and its peer render as —, with no ratio', () => {
    const md = render({ 'bench-1e5.json': run() });
    expect(md).toContain('| load | append throughput slope | — | a peer that was NaN: — |  |  |');
  });
});

describe('the load test is shown window by window, each rate over its own window length', () => {
  it('a short last window is a rate over its 2 seconds, not over 5', () => {
    const md = render({ 'bench-1e5.json': run() });
    expect(md).toContain('| 5 | 1000 | 10.0 | — | 2.0 | 1.5 / 12.3 / 40.0 | — | 300 |');
    expect(md).toContain('| 12 | 500 | 5.0 | 7.3 / 31 | 1.0 | 2.0 / 16.0 / 45.0 | 42% / 35% | 312 |');
    expect(md).toContain('Throughput slope: -25.0% of the mean per minute');
  });

  it('a window says what one search cost in it and how much of it the loop thread was on a CPU or waiting for one', () => {
    const md = render({ 'bench-1e5.json': run() });
    expect(md).toContain('| search mean / max (ms) |');
    expect(md).toContain('| loop thread on a CPU / waiting for one |');
    expect(md).toContain('| 7.3 / 31 |');
    expect(md).toContain('| 42% / 35% |');
  });

  it('a run without the searcher says so', () => {
    const r = run();
    (r.info.load as { without?: string[] }).without = ['searcher'];
    const md = render({ 'bench-1e5.json': r });
    expect(md).toContain('with compactions interleaved (run without the searcher)');
  });
});

describe('the file names the one command that regenerates every figure in it', () => {
  it('the header names npm run bench:all, and how a peer is run', () => {
    const md = render({ 'bench-1e5.json': run() });
    const header = md.slice(0, md.indexOf('| run |'));
    expect(header).toContain('`npm run bench:all`');
    expect(header).toContain('`npm run bench:all -- --list`');
    expect(header).toMatch(/equal threads/);
    expect(header).toMatch(/exact SIMD scan \(`exactSearch`\), not a JS loop/);
  });

  it('each run names the bench:all step that writes its file, and the steps\' walls are summed', () => {
    const md = render({ 'bench-1e5-retrieval.json': run({ wallSeconds: 5400 }), 'bench-1e4-quick.json': run({ scale: 10000, quick: true, wallSeconds: 1800 }), 'bench-1e5.json': run({ wallSeconds: 900 }) });
    expect(md).toContain('| [1e5](#1e5-spans--sections-retrieval-load) | 1e5 | `npm run bench -- --scale 1e5`');
    // Two headings alike (files in name order): GitHub's anchor of the second is numbered.
    expect(md).toContain('| [1e5](#1e5-spans--sections-retrieval-load-1) | — (no step writes it) |');
    expect(md).toMatch(/\| \[1e4 quick\]\([^)]*\) \| quick \|/);
    expect(md).toContain("The steps' runs above took 2.0 h of wall time in all");
  });
});

describe('the quality step\'s natural questions are rendered with their command, date and machine', () => {
  const metrics = (system: string, r1: number) => ({ system, answerable: 33, unanswerable: 30, recallAt1: r1, recallAt10: 0.6, mrr: 0.25, falseMiss: 0, honestMiss: 0.9, p50Ms: 4.25, p99Ms: 83.5 });
  const natural = {
    machine: { cpu: 'Test CPU 9000', cores: 2, node: 'v20.0.0', platform: 'linux 6' },
    command: 'npm run quality --',
    date: '2030-01-02T05:06:07.000Z',
    questionsFile: '../shared/data/natural-questions/questions.jsonl',
    peers: 'FTS5 | MiniSearch',
    seconds: 53.6,
    transcripts: [{ dataset: 'miniswe', session: 'm', turns: 41326, spans: 41326, report: { overall: [metrics('spanguard', 0.0606), { ...metrics('fts5 unicode61', 0.0909), falseMiss: null, honestMiss: null }] }, hostModel: { model: 'stand-in', metrics: metrics('spanguard', 0.152) } }],
  };

  it('each system of each transcript is a row; the host-embedder run is named', () => {
    const md = render({ 'bench-1e5.json': run(), 'natural.json': natural });
    const at = md.indexOf('## Retrieval quality: natural questions on whole transcripts');
    expect(at).toBeGreaterThan(0);
    const sec = md.slice(at);
    expect(sec).toContain('- command: `npm run quality --` (the `quality` step)');
    expect(sec).toContain('- date: 2030-01-02T05:06:07.000Z (the natural questions took 53.6 s)');
    expect(sec).toContain('- machine: Test CPU 9000, 2 cpus, node v20.0.0, linux 6');
    expect(sec).toContain('peers: FTS5 \\| MiniSearch');
    expect(sec).toContain('| miniswe (41326 turns) | spanguard | 33 / 30 | 0.061 | 0.600 | 0.250 | 0.900 | 0.000 | 4.25 / 83.50 ms |');
    // A peer never says "not in transcript": its miss rates are null in the JSON, a dash here.
    expect(sec).toContain('| miniswe (41326 turns) | fts5 unicode61 | 33 / 30 | 0.091 | 0.600 | 0.250 | — | — | 4.25 / 83.50 ms |');
    expect(sec).toContain('| miniswe (41326 turns) | spanguard, host embedder: stand-in | 33 / 30 | 0.152 |');
  });

  it('no natural.json, no section', () => {
    expect(render({ 'bench-1e5.json': run() })).not.toContain('## Retrieval quality');
  });
});
