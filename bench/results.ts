/**
 * bench/RESULTS.md, written from the JSON the bench leaves in bench/results/: every run's
 * machine, command, date, figures (with their peers and ratios), sweeps, load-test windows,
 * correctness checks, and the growth fit. The runner calls it at the end of every run; by
 * hand, without running anything: node build/bench-dist/bench/results.js
 *
 * Nothing in the file is typed by hand: a figure that is not in a JSON is not in RESULTS.md.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { packageRoot } from '../src/native.js';
import { planSteps } from './all-steps.js';
import { fmtValue, type Check, type Figure, type Fit } from './lib.js';

export interface LoadWindow {
  /** Seconds from the start of the load test to the window's end. */
  t: number;
  /** The window's length, s (the last one may be shorter). */
  seconds: number;
  appends: number;
  searches: number;
  compactions: number;
  /** Event-loop delay in the window, ms. */
  eldP50: number;
  eldP99: number;
  eldMax: number;
  rssMiB: number;
  /** The JS heap in use at the window's end (the rest of the RSS is native: indexes, mapped log). */
  heapMiB?: number;
  /** Records in the store's log at the window's end (what the indexes grow with). */
  spans?: number;
  /** Mean and longest wall time of a `store.search` call that ended in the window, ms. */
  searchMs?: number;
  searchMaxMs?: number;
  /** Share of the window the event loop's thread was on a CPU, and runnable but waiting for one (Linux /proc schedstat; absent elsewhere). */
  loopCpu?: number;
  loopWaiting?: number;
}

export interface LoadInfo {
  seconds: number;
  appenders: number;
  windowSeconds: number;
  windows: LoadWindow[];
  /** Least-squares slope of appends/s over the windows, as a share of the mean per minute (null: fewer than two windows). */
  slopePerMinute: number | null;
  /** Parts of the load left out (`--load-without`). */
  without?: string[];
  /** The steady-state variant: spans in the store before the clock starts (`--load-prefill`). */
  prefill?: number;
  /** The steady-state variant: most appends started a second, all appenders together (`--load-rate`). */
  rate?: number;
}

interface Machine {
  date: string;
  node: string;
  cpus: number;
  cpuModel?: string;
  loadavg: number[];
  totalMemGB: number;
}

interface ResultFile {
  command: string;
  scale: number;
  quick: boolean;
  sections: string[];
  machineStart: Machine;
  machineEnd: Machine;
  simd: string;
  wallSeconds: number;
  peakRssMiB: number;
  figures: Figure[];
  checks: Check[];
  info: Record<string, unknown>;
}

const sci = (n: number) => n.toExponential(0).replace('e+', 'e');
const cell = (s: string) => s.replace(/\|/g, '\\|').replace(/\n/g, ' ');

function ratio(f: Figure): string {
  if (f.ratio === undefined || f.ratio === null || !Number.isFinite(f.ratio)) return '';
  const good = f.better === 'lower' ? f.ratio <= 1 : f.ratio >= 1;
  return `${f.ratio.toFixed(f.ratio < 0.1 ? 3 : 2)}× ${good ? '✓' : '✗'}`;
}

/** A figure's value as the JSON holds it: NaN and Infinity were written as null. */
const val = (v: number | null, unit: string) => (v === null ? '—' : fmtValue(v, unit));

function figureTable(figs: Figure[]): string[] {
  const out = ['| group | figure | ours (p50 / p99) | peer (same run) | ours / peer | note |', '|---|---|---|---|---|---|'];
  for (const f of figs) {
    const ours = val(f.value, f.unit) + (f.p99 !== undefined ? ` / ${val(f.p99, f.unit)}` : '');
    const peer = f.peer ? `${f.peer.label}: ${val(f.peer.value, f.unit)}${f.peer.p99 !== undefined ? ` / ${val(f.peer.p99, f.unit)}` : ''}` : '';
    out.push(`| ${f.group} | ${cell(f.label)} | ${ours} | ${cell(peer)} | ${ratio(f)} | ${cell(f.note ?? '')} |`);
  }
  return out;
}

type SweepPoint = { recall: number; p50: number; p99: number };
function sweepTables(sweep: { binary?: (SweepPoint & { pool: number })[]; ours?: (SweepPoint & { ef: number })[]; usearch?: (SweepPoint & { ef: number })[] }): string[] {
  const out: string[] = [];
  const pt = (p?: SweepPoint) => (p ? `${p.recall.toFixed(3)} | ${fmtValue(p.p50, 'µs')} / ${fmtValue(p.p99, 'µs')}` : '— | —');
  if (sweep.binary?.length) {
    out.push('', 'Vector top-10, binary strategy swept over its rerank pool (recall@10 against brute force):', '', '| rerank pool | recall@10 | p50 / p99 |', '|---|---|---|');
    for (const p of sweep.binary) out.push(`| ${p.pool} | ${pt(p)} |`);
  }
  const efs = [...new Set([...(sweep.ours ?? []), ...(sweep.usearch ?? [])].map((p) => p.ef))].sort((a, b) => a - b);
  if (efs.length) {
    out.push('', 'Vector top-10, HNSW swept over the search expansion (same vectors, same graph options):', '', '| ef | ours recall@10 | ours p50 / p99 | usearch recall@10 | usearch p50 / p99 |', '|---|---|---|---|---|');
    for (const ef of efs) out.push(`| ${ef} | ${pt(sweep.ours?.find((p) => p.ef === ef))} | ${pt(sweep.usearch?.find((p) => p.ef === ef))} |`);
  }
  return out;
}

function loadSection(l: LoadInfo): string[] {
  const out = [
    '',
    `Load test: ${l.appenders} concurrent appenders (durability \`group\`) with ${l.without?.length ? `${['searches', 'compactions'].filter((p) => !l.without!.includes(p === 'searches' ? 'searcher' : 'compactor')).join(' and ') || 'nothing else'} interleaved (run without the ${l.without.join(' and ')})` : 'searches and compactions interleaved'}${l.prefill !== undefined ? `, on a store prefilled with ${l.prefill} spans` : ''}${l.rate !== undefined ? `, appends capped at ${l.rate}/s` : ''}, ${l.seconds} s, per ${l.windowSeconds}-second window. Throughput slope: ${l.slopePerMinute === null || !Number.isFinite(l.slopePerMinute) ? 'not measured (one window)' : `${(l.slopePerMinute * 100).toFixed(1)}% of the mean per minute`} (least squares over the windows; 0 is flat, negative decays).`,
    '',
    '| window end (s) | appends/s | searches/s | search mean / max (ms) | compactions/s | event-loop delay p50 / p99 / max (ms) | loop thread on a CPU / waiting for one | RSS (MiB) | JS heap (MiB) | spans in the store |',
    '|---|---|---|---|---|---|---|---|---|---|',
  ];
  for (const w of l.windows) {
    const len = w.seconds ?? l.windowSeconds;
    const per = (x: number) => (x / len).toFixed(x / len >= 100 ? 0 : 1);
    const search = w.searchMs === undefined || w.searches === 0 ? '—' : `${w.searchMs.toFixed(1)} / ${w.searchMaxMs?.toFixed(0) ?? '—'}`;
    const cpu = w.loopCpu === undefined ? '—' : `${(w.loopCpu * 100).toFixed(0)}% / ${((w.loopWaiting ?? 0) * 100).toFixed(0)}%`;
    out.push(`| ${w.t.toFixed(0)} | ${per(w.appends)} | ${per(w.searches)} | ${search} | ${per(w.compactions)} | ${w.eldP50.toFixed(1)} / ${w.eldP99.toFixed(1)} / ${w.eldMax.toFixed(1)} | ${cpu} | ${w.rssMiB.toFixed(0)} | ${w.heapMiB?.toFixed(0) ?? '—'} | ${w.spans ?? '—'} |`);
  }
  return out;
}

/** What results/natural.json holds (eval/natural.ts NaturalRun), as far as RESULTS.md shows it. */
interface NaturalMetrics {
  system: string;
  answerable: number;
  unanswerable: number;
  recallAt1: number;
  recallAt10: number;
  mrr: number;
  /** null for a peer, which never says "not in transcript". */
  falseMiss: number | null;
  honestMiss: number | null;
  p50Ms: number;
  p99Ms: number;
}
interface NaturalFile {
  machine: { cpu: string; cores: number; node: string; platform: string };
  command: string;
  date: string;
  questionsFile: string;
  peers: string;
  seconds: number;
  transcripts: { dataset: string; session: string; turns: number; spans: number; report: { overall: NaturalMetrics[] }; hostModel?: { model: string; metrics: NaturalMetrics } }[];
}

/** The quality step's natural questions (results/natural.json): each transcript, spanguard beside its peers. */
export function naturalSection(n: NaturalFile): string[] {
  // A metric a system has no answer for (a peer never says "not in transcript") is null: a dash.
  const f = (x: number | null) => (x === null ? '—' : x.toFixed(3));
  const out = [
    '## Retrieval quality: natural questions on whole transcripts',
    '',
    `- command: \`${n.command}\` (the \`quality\` step)`,
    `- date: ${n.date} (the natural questions took ${n.seconds.toFixed(1)} s)`,
    `- machine: ${n.machine.cpu}, ${n.machine.cores} cpus, node ${n.machine.node}, ${n.machine.platform}`,
    `- questions: \`${n.questionsFile}\`; peers: ${cell(n.peers)}`,
    '- JSON: [`results/natural.json`](results/natural.json)',
    '',
    '| transcript | system | answerable / unanswerable | recall@1 | recall@10 | MRR | honest miss | false miss | search p50 / p99 |',
    '|---|---|---|---|---|---|---|---|---|',
  ];
  for (const t of n.transcripts) {
    const rows = [...t.report.overall, ...(t.hostModel ? [{ ...t.hostModel.metrics, system: `spanguard, host embedder: ${t.hostModel.model}` }] : [])];
    for (const m of rows)
      out.push(`| ${t.dataset} (${t.turns} turns) | ${cell(m.system)} | ${m.answerable} / ${m.unanswerable} | ${f(m.recallAt1)} | ${f(m.recallAt10)} | ${f(m.mrr)} | ${f(m.honestMiss)} | ${f(m.falseMiss)} | ${m.p50Ms.toFixed(2)} / ${m.p99Ms.toFixed(2)} ms |`);
  }
  out.push('');
  return out;
}

function runSection(r: ResultFile, file: string): string[] {
  const m = r.machineStart;
  const data = r.info.data as { spans: number; real: number; generated: number; tokens?: number; sources?: string[] } | undefined;
  const out = [
    `### ${sci(r.scale)} spans${r.quick ? ' (quick)' : ''} — sections ${r.sections.join(', ')}`,
    '',
    `- command: \`${r.command}\``,
    `- date: ${m.date} (run took ${r.wallSeconds} s; peak RSS ${r.peakRssMiB} MiB)`,
    `- machine: ${m.cpuModel ?? 'unknown CPU'}, ${m.cpus} cpus, ${m.totalMemGB} GiB, node ${m.node}, SIMD ${r.simd}; load average ${m.loadavg.join(' ')} at start, ${r.machineEnd.loadavg.join(' ')} at end`,
    ...(data ? [`- data: ${data.real} real + ${data.generated} generated spans${data.tokens ? `, ${data.tokens} tokens` : ''} (${(data.sources ?? []).join(', ')})`] : []),
    `- JSON: [\`results/${file}\`](results/${file})`,
    '',
    ...figureTable(r.figures),
  ];
  const sweep = r.info.vectorSweep as Parameters<typeof sweepTables>[0] | undefined;
  if (sweep) out.push(...sweepTables(sweep));
  const load = r.info.load as LoadInfo | undefined;
  if (load) out.push(...loadSection(load));
  if (r.checks.length) {
    out.push('', '| check | result | detail |', '|---|---|---|');
    for (const c of r.checks) out.push(`| ${cell(c.name)} | ${c.ok ? 'PASS' : c.warnOnly ? 'WARN' : 'FAIL'} | ${cell(c.detail)} |`);
  }
  out.push('');
  return out;
}

/** Renders every bench-*.json in `resultsDir` (and growth.json) into `outFile`. */
export function writeResults(resultsDir: string, outFile: string): void {
  const files = fs.existsSync(resultsDir) ? fs.readdirSync(resultsDir).filter((f) => /^bench-.*\.json$/.test(f)) : [];
  const runs = files
    .map((f) => ({ file: f, r: JSON.parse(fs.readFileSync(path.join(resultsDir, f), 'utf8')) as ResultFile }))
    .sort((a, b) => Number(a.r.quick) - Number(b.r.quick) || a.r.scale - b.r.scale || a.file.localeCompare(b.file));
  const out = [
    '# spanguard benchmark results',
    '',
    'Every figure here comes from one command: `npm run bench:all` (hours; `npm run bench:all -- --list` prints its steps,',
    '[README.md](README.md#every-figure-from-one-command) says how long each took). It runs each step\'s own command in turn;',
    'each writes its JSON to [`results/`](results/), and this file is written from those JSON files alone (again, without',
    'running anything: `npm run bench:results`), never edited by hand. Each run below names its own command, which',
    'regenerates that run alone, with its date and machine. What each figure measures and how: [README.md](README.md).',
    'ratio = ours / peer in the figure\'s unit: below 1 is better for a latency or a size, above 1 for a throughput;',
    '✓ marks "at least as good as the peer". Runs on a shared machine are noisy: compare ratios from the same run, and',
    'read each run\'s load average.',
    '',
    'How the peers are run: in the same process, on the same spans and the same vectors. Index builds at equal threads',
    '(our vector add and usearch\'s on 2, LanceDB\'s pool at the machine\'s 2 cores); usearch\'s queries on 1 thread. The',
    'floor for a vector query is usearch\'s exact SIMD scan (`exactSearch`), not a JS loop. Each ingest row names what',
    'each side builds (ours: signatures to scan, no graph). Hybrid search is timed on natural questions, their',
    'paraphrases and questions generated from the spans as well as on quotes (10^6: natural questions, their paraphrases,',
    'quotes, and queries up to the documented maximum size).',
    '',
    '| run | `bench:all` step | command | date (UTC) | machine | load at start | wall | checks |',
    '|---|---|---|---|---|---|---|---|',
  ];
  // The step of `npm run bench:all` that writes each file (bench/all-steps.ts), and the walls they took.
  const plan = planSteps({ cache: 'DIR', stallSpans: 1e6 });
  let stepSeconds = 0;
  // GitHub numbers a repeated heading's anchor (-1, -2, …) in the order the headings appear,
  // which is this table's order (full runs, then quick ones).
  const seen = new Map<string, number>();
  for (const { file, r } of runs) {
    const base = anchor(r);
    const k = seen.get(base) ?? 0;
    seen.set(base, k + 1);
    const link = k === 0 ? base : `${base}-${k}`;
    const failed = r.checks.filter((c) => !c.ok && !c.warnOnly).length;
    const step = plan.find((s) => s.writes.includes(file))?.name;
    if (step !== undefined) stepSeconds += r.wallSeconds;
    out.push(
      `| [${sci(r.scale)}${r.quick ? ' quick' : ''}](#${link}) | ${step ?? '— (no step writes it)'} | \`${r.command}\` | ${r.machineStart.date.slice(0, 16).replace('T', ' ')} | ${r.machineStart.cpus} × ${r.machineStart.cpuModel ?? '?'} | ${r.machineStart.loadavg[0]} | ${r.wallSeconds} s | ${r.checks.length - failed}/${r.checks.length} pass |`,
    );
  }
  out.push(
    '',
    `The steps' runs above took ${(stepSeconds / 3600).toFixed(1)} h of wall time in all, each on the machine and at the load its row names (a step that reopened a cached store or index, as its command's cache argument says, did not build it: building the 10^6 store is an ingest of 10^6 spans, the 1e6-ingest step's \`ingest via appendMany\` row). The \`quality\` step (\`npm run quality\`) is not in that sum: its natural-question figures are the last section below, with their own command, date and machine; its verbatim-question figures (results/quality-exchange.json) record no machine or date and are not rendered.`,
    '',
  );
  const full = runs.filter((x) => !x.r.quick);
  const quick = runs.filter((x) => x.r.quick);
  if (full.length) out.push('## Full runs', '', ...full.flatMap(({ file, r }) => runSection(r, file)));
  if (quick.length) out.push('## Quick runs (`--quick`: fewer iterations, shorter load test)', '', ...quick.flatMap(({ file, r }) => runSection(r, file)));
  const naturalFile = path.join(resultsDir, 'natural.json');
  if (fs.existsSync(naturalFile)) out.push(...naturalSection(JSON.parse(fs.readFileSync(naturalFile, 'utf8')) as NaturalFile));
  const growthFile = path.join(resultsDir, 'growth.json');
  if (fs.existsSync(growthFile)) {
    const g = JSON.parse(fs.readFileSync(growthFile, 'utf8')) as { scales: { scale: number; date: string }[]; fits: Fit[] };
    out.push(
      '## Growth with session size',
      '',
      `Cost per operation against N over the full runs (${g.scales.map((s) => `${sci(s.scale)} on ${s.date.slice(0, 10)}`).join(', ')}); exponent k of cost ∝ N^k, log-log least squares. Chart: [growth.svg](growth.svg).`,
      '',
      '| k | figure | per N |',
      '|---|---|---|',
      ...g.fits.map((f) => `| ${f.exponent.toFixed(2)} | ${cell(f.label)} | ${f.points.map((p) => `${sci(p.n)}: ${fmtValue(p.value, f.unit)}`).join(' · ')} |`),
      '',
    );
  }
  fs.writeFileSync(outFile, `${out.join('\n').trimEnd()}\n`);
}

function anchor(r: ResultFile): string {
  // GitHub's heading anchor for runSection's heading.
  return `${sci(r.scale)} spans${r.quick ? ' (quick)' : ''} — sections ${r.sections.join(', ')}`
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replace(/ /g, '-');
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  writeResults(path.join(packageRoot, 'bench', 'results'), path.join(packageRoot, 'bench', 'RESULTS.md'));
}
