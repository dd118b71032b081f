/**
 * Load test: a store under durability `group` with 256 concurrent appenders (each appends one
 * turn, awaits it durable, appends the next), one searcher and one compactor running beside
 * them on the same event loop, for a set duration (`--duration`, seconds: 300 by default, 20
 * under --quick).
 *
 *  - appenders: turns of the bench data in order (cycled), turn numbers from one counter, so
 *    turns never go backwards across the 256;
 *  - searcher: `store.search(q, {k: 10})` back to back, alternating natural questions (the
 *    natural-questions file) and 60–200-character quotes of the data;
 *  - compactor: every 10 consecutive durable raw turns past the last evicted one leave in one
 *    `compact()` with the project's extractive summary, back to back (policy `spill`); when
 *    it is more than 4,096 turns behind the appenders it skips to the newest 2,048 (the
 *    turns skipped stay live: `totals.turnsLeftLive`), so what the bench itself holds stays
 *    bounded.
 *
 * Reported per 5-second window: appends, searches and compactions done in it, the mean and
 * longest wall time of a search, the event loop's delay (perf_hooks.monitorEventLoopDelay, 1 ms
 * resolution, reset each window) p50 / p99 / max, the share of the window the loop's thread
 * was on a CPU and waiting for one, and at the window's end the process RSS, the JS heap in
 * use and the store's record count (the store grows by every append: its indexes are most of
 * the RSS growth). `without` (run.ts --load-without) leaves the searcher or the compactor
 * out. Figures: the mean append throughput, the
 * least-squares slope of the windows' throughput (share of the mean per minute: flat is 0,
 * decay is negative), the first and last window, event-loop delay over the whole run, and
 * peak RSS (sampled every 100 ms during the run; getrusage's maximum would include the
 * sections run before). With `stalls` (run.ts --stalls) the late turns are attributed to the
 * calls that ran in them (bench/stalls.ts).
 */
import fs from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { SpanStore, extractiveSummary } from '../src/index.js';
import { naturalQuestions, type BenchData } from './data.js';
import { check, figure, rng, type Ctx } from './lib.js';
import type { LoadInfo, LoadWindow } from './results.js';
import { attributeStalls, LATE_MS } from './stalls.js';

export const APPENDERS = 256;
const WINDOW_S = 5;
/** The most turns the compactor lets pile up past its next eviction before it skips ahead. */
const MAX_BEHIND = 4096;

/**
 * The trend of append throughput over the windows: the least-squares slope of appends/s
 * (each window's count over its own length, so a short last window is not read as decay)
 * against the window's end time, as a share of the mean rate per minute. 0 is flat, -0.1
 * loses a tenth of the mean rate each minute. NaN with fewer than two windows.
 */
export function throughputSlope(windows: Pick<LoadWindow, 't' | 'seconds' | 'appends'>[]): number {
  const n = windows.length;
  if (n < 2) return NaN;
  const xs = windows.map((w) => w.t);
  const ys = windows.map((w) => w.appends / w.seconds);
  const mx = xs.reduce((a, b) => a + b, 0) / n;
  const my = ys.reduce((a, b) => a + b, 0) / n;
  let sxy = 0;
  let sxx = 0;
  for (let i = 0; i < n; i++) {
    sxy += (xs[i]! - mx) * (ys[i]! - my);
    sxx += (xs[i]! - mx) ** 2;
  }
  return sxx > 0 && my > 0 ? (sxy / sxx) * 60 / my : NaN;
}

/** A part of the load the run may leave out (`--load-without`), to see what each costs the appenders. */
export type LoadPart = 'searcher' | 'compactor';

/**
 * The steady-state variant (`--load-prefill N --load-rate R`): the store holds N spans
 * before the clock starts (the bench data's turns in order, cycled, appended in batches and
 * indexed), and the appenders together start at most R appends a second. The growing run
 * (the default) measures a store that grows ~300× under it, each search over more spans;
 * this one measures whether the same work at a fixed rate on a store of about one size
 * stays flat over the minutes.
 */
export interface LoadShape {
  prefill?: number;
  rate?: number;
}

/**
 * Where the event loop's thread was since the last call, as shares of the wall time: on a
 * CPU (`cpu`), and runnable but waiting for one (`waiting`: the machine's other processes had
 * the cores), from the kernel's scheduler statistics of the main thread's task (the task id
 * is the process id); undefined where /proc does not have them. The rest the loop was idle,
 * waiting for the thread pool or the disk.
 */
function loopSchedClock(): () => { cpu: number; waiting: number } | undefined {
  const file = `/proc/self/task/${process.pid}/schedstat`;
  const read = (): [number, number] | undefined => {
    try {
      const [run, wait] = fs.readFileSync(file, 'utf8').split(' ').map(Number);
      return Number.isFinite(run) && Number.isFinite(wait) ? [run!, wait!] : undefined;
    } catch {
      return undefined;
    }
  };
  let last = read();
  let at = performance.now();
  return () => {
    const now = read();
    const t = performance.now();
    const ns = (t - at) * 1e6;
    const out = now === undefined || last === undefined || ns <= 0 ? undefined : { cpu: (now[0] - last[0]) / ns, waiting: (now[1] - last[1]) / ns };
    last = now;
    at = t;
    return out;
  };
}

export async function runLoad(ctx: Ctx, data: BenchData, seconds: number, stalls = false, without: readonly LoadPart[] = [], shape: LoadShape = {}): Promise<void> {
  const dir = ctx.tmp('load');
  const store = await SpanStore.open(dir, { durability: 'group', policy: 'spill' });
  const spans = data.spans.slice(0, Math.min(data.spans.length, 10_000));
  const r = rng(7);
  const quotes: string[] = [];
  while (quotes.length < 200) {
    const t = spans[Math.floor(r() * spans.length)]!.text;
    if (t.length < 80) continue;
    const len = Math.min(t.length - 1, 60 + Math.floor(r() * 140));
    const at = Math.floor(r() * (t.length - len));
    quotes.push(t.slice(at, at + len));
  }
  const natural = naturalQuestions().map((x) => x.question);
  const queries = natural.length ? quotes.flatMap((q, i) => [q, natural[i % natural.length]!]) : quotes;

  let stop = false;
  let nextTurn = 1;
  let cursor = 0;
  let appends = 0;
  let searches = 0;
  let searchMs = 0;
  let searchMaxMs = 0;
  let compactions = 0;
  const errors: string[] = [];
  const durable = new Map<number, number>(); // turn → span id, once durable
  let evictFrom = 1; // the first turn not yet evicted
  // Turns the compactor let go of because it fell further behind than MAX_BEHIND: they stay
  // in the live window. Without the cap the map of durable turns grew by every append the
  // compactor did not reach (~50× its rate here): hundreds of MB over 5 minutes, the GC
  // walking it on every major collection — the bench's own growth, not the store's.
  let skipped = 0;

  if (shape.prefill !== undefined && shape.prefill > 0) {
    const t = performance.now();
    for (let done = 0; done < shape.prefill; ) {
      const n = Math.min(2000, shape.prefill - done);
      await store.appendMany(
        Array.from({ length: n }, () => {
          const s = spans[cursor++ % spans.length]!;
          return { turn: nextTurn++, role: s.role, text: s.text, tokens: 100 };
        }),
      );
      done += n;
    }
    await store.catchUp();
    // The compactor starts at the first turn the appenders add.
    evictFrom = nextTurn;
    ctx.log(`load: prefilled ${shape.prefill} spans in ${((performance.now() - t) / 1000).toFixed(1)} s`);
  }
  // At most `rate` appends started a second, together (the steady-state variant).
  let paced = 0;
  let paceFrom = 0;
  const pace = async () => {
    if (shape.rate === undefined) return;
    const due = paceFrom + (paced++ * 1000) / shape.rate;
    const wait = due - performance.now();
    if (wait >= 1) await new Promise((res) => setTimeout(res, wait));
  };

  const appender = async () => {
    while (!stop) {
      await pace();
      if (stop) break;
      const s = spans[cursor++ % spans.length]!;
      const turn = nextTurn++;
      try {
        const id = await store.append({ turn, role: s.role, text: s.text, tokens: 100 });
        durable.set(turn, id);
        appends++;
      } catch (e) {
        if (errors.length < 5) errors.push(`append: ${(e as Error).message}`);
      }
    }
  };
  const searcher = async () => {
    let i = 0;
    while (!stop) {
      try {
        const t = performance.now();
        await store.search(queries[i++ % queries.length]!, { k: 10 });
        const ms = performance.now() - t;
        searchMs += ms;
        searchMaxMs = Math.max(searchMaxMs, ms);
        searches++;
      } catch (e) {
        if (errors.length < 5) errors.push(`search: ${(e as Error).message}`);
      }
      await new Promise((res) => setImmediate(res));
    }
  };
  const compactor = async () => {
    while (!stop) {
      if (nextTurn - evictFrom > MAX_BEHIND) {
        // Fall back to the newest stretch: what a host compacting less often than it appends does.
        const to = nextTurn - MAX_BEHIND / 2;
        for (let t = evictFrom; t < to; t++) durable.delete(t);
        skipped += to - evictFrom;
        evictFrom = to;
      }
      const turns: number[] = [];
      for (let t = evictFrom; t < evictFrom + 10 && durable.has(t); t++) turns.push(t);
      if (turns.length < 10) {
        await new Promise((res) => setTimeout(res, 5));
        continue;
      }
      const ids = turns.map((t) => durable.get(t)!);
      try {
        const got = store.getMany(ids);
        const text = await extractiveSummary(got.flatMap((sp) => (sp ? [{ spanId: sp.id, kind: 'raw' as const, role: sp.role, turnStart: sp.turnStart, turnEnd: sp.turnEnd, text: sp.text, anchor: sp.anchor }] : [])));
        await store.compact({ evict: ids, summary: { text, turnStart: turns[0]!, turnEnd: turns[9]! } });
        compactions++;
      } catch (e) {
        if (errors.length < 5) errors.push(`compact: ${(e as Error).message}`);
      }
      for (const t of turns) durable.delete(t);
      evictFrom += 10;
      await new Promise((res) => setImmediate(res));
    }
  };

  const whole = monitorEventLoopDelay({ resolution: 1 });
  const win = monitorEventLoopDelay({ resolution: 1 });
  const windows: LoadWindow[] = [];
  let rssPeak = process.memoryUsage.rss();
  const rssTimer = setInterval(() => {
    rssPeak = Math.max(rssPeak, process.memoryUsage.rss());
  }, 100);
  const attribution = stalls ? attributeStalls({ LexicalIndex: store.lexical, VectorIndex: store.vector, Embedder: store.embedderNative, SpanLog: store.log }) : null;
  whole.enable();
  win.enable();
  const t0 = performance.now();
  paceFrom = t0;
  let last = { appends: 0, searches: 0, searchMs: 0, compactions: 0, t: 0 };
  const loopSched = loopSchedClock();
  const ms = (ns: number) => ns / 1e6;
  const closeWindow = () => {
    const on = loopSched();
    const cpuShares = on === undefined ? {} : { loopCpu: on.cpu, loopWaiting: on.waiting };
    const rss = process.memoryUsage.rss();
    rssPeak = Math.max(rssPeak, rss);
    const t = (performance.now() - t0) / 1000;
    windows.push({
      t,
      seconds: t - last.t,
      appends: appends - last.appends,
      searches: searches - last.searches,
      searchMs: searches > last.searches ? (searchMs - last.searchMs) / (searches - last.searches) : 0,
      searchMaxMs,
      compactions: compactions - last.compactions,
      eldP50: ms(win.percentile(50)),
      eldP99: ms(win.percentile(99)),
      eldMax: ms(win.max),
      rssMiB: rss / 2 ** 20,
      heapMiB: process.memoryUsage().heapUsed / 2 ** 20,
      spans: store.log.nextId() - store.log.firstId(),
      ...cpuShares,
    });
    last = { appends, searches, searchMs, compactions, t };
    searchMaxMs = 0;
    win.reset();
    const w = windows.at(-1)!;
    const cpu = w.loopCpu === undefined ? '' : `, loop thread on a CPU ${(w.loopCpu * 100).toFixed(0)}%, waiting for one ${(w.loopWaiting! * 100).toFixed(0)}%`;
    const sm = w.searches > 0 ? `, search ${w.searchMs!.toFixed(1)} ms mean` : '';
    ctx.log(`load: ${t.toFixed(0)} s, ${w.spans} spans, ${(w.appends / w.seconds).toFixed(0)} appends/s, event-loop delay p99 ${w.eldP99.toFixed(1)} ms${sm}${cpu}`);
  };
  const windowTimer = setInterval(closeWindow, WINDOW_S * 1000);
  const stopTimer = setTimeout(() => (stop = true), seconds * 1000);
  await Promise.all([...Array.from({ length: APPENDERS }, appender), ...(without.includes('searcher') ? [] : [searcher()]), ...(without.includes('compactor') ? [] : [compactor()])]);
  const elapsed = (performance.now() - t0) / 1000;
  clearTimeout(stopTimer);
  clearInterval(windowTimer);
  // The last stretch (the appends in flight when the time ran out) as a window of its own
  // length, when it is long enough to be a rate.
  if (elapsed - last.t >= 1) closeWindow();
  clearInterval(rssTimer);
  whole.disable();
  win.disable();
  const stallReport = attribution?.stop();
  if (stallReport !== undefined) {
    ctx.log(`load: ${stallReport.lateTurns} turns ran more than ${LATE_MS} ms late (${stallReport.lateMs.toFixed(0)} ms); spent in:`);
    const c = stallReport.cpu;
    if (c !== undefined)
      ctx.log(`load: the loop thread's own CPU time between two ticks of the 1-ms timer: p99 ${c.p99.toFixed(1)} ms, max ${c.max.toFixed(1)} ms; ${c.over} of ${c.gaps} gaps over ${LATE_MS} ms on the CPU alone`);
    for (const r of stallReport.rows.slice(0, 16))
      ctx.log(`  ${r.op}: ${(r.share * 100).toFixed(1)}% (${r.lateMs.toFixed(0)} ms); ${r.calls} calls, longest ${r.maxMs.toFixed(1)} ms, ${r.over8} over 8 ms, ${r.over16} over 16 ms`);
  }
  const verdict = store.verdict();
  await store.close();

  const rates = windows.map((w) => w.appends / w.seconds);
  const mean = rates.reduce((a, b) => a + b, 0) / Math.max(1, rates.length);
  // The slope needs two windows; with one it is reported as not measured (null in the JSON).
  const perMinute = throughputSlope(windows);
  const info: LoadInfo = {
    seconds,
    appenders: APPENDERS,
    windowSeconds: WINDOW_S,
    windows,
    slopePerMinute: perMinute,
    ...(without.length > 0 ? { without: [...without] } : {}),
    ...(shape.prefill !== undefined ? { prefill: shape.prefill } : {}),
    ...(shape.rate !== undefined ? { rate: shape.rate } : {}),
  };
  ctx.info.load = { ...info, ...(stallReport ? { stalls: stallReport } : {}), errors, verdict: verdict.state, totals: { appends, searches, compactions, seconds: elapsed, turnsLeftLive: skipped } };
  const first = rates[0] ?? NaN;
  const lastRate = rates.at(-1) ?? NaN;
  const steady = [shape.prefill !== undefined ? `store prefilled with ${shape.prefill} spans` : '', shape.rate !== undefined ? `at most ${shape.rate} appends/s` : ''].filter((x) => x !== '');
  const parts = `${APPENDERS} group appenders${without.includes('searcher') ? '' : ' + searches'}${without.includes('compactor') ? '' : ' + compactions'}${steady.length > 0 ? ` (${steady.join(', ')})` : ''}`;
  figure(ctx, { group: 'load', key: 'load.appends', label: `${parts}: durable appends/s (mean of ${rates.length} windows)`, value: mean, unit: 'spans/s', better: 'higher', note: `first window ${first.toFixed(0)}/s, last ${lastRate.toFixed(0)}/s; ${searches} searches, ${compactions} compactions in ${elapsed.toFixed(0)} s` });
  if (Number.isFinite(perMinute)) figure(ctx, { group: 'load', key: 'load.slope', label: 'append throughput slope over the windows (share of the mean per minute)', value: perMinute * 100, unit: '%/min', better: 'higher', note: 'target: flat (0); negative is decay' });
  if (searches > 0) {
    const searched = windows.filter((w) => w.searches > 0);
    const at = (w: LoadWindow | undefined) => (w ? `${w.searchMs!.toFixed(1)} ms at ${w.spans} spans` : 'n/a');
    figure(ctx, { group: 'load', key: 'load.searches', label: 'searches/s beside the appenders', value: searches / elapsed, unit: 'q/s', better: 'higher' });
    // What one search costs as the store grows: the searcher runs one search per turn of the
    // loop, so every append cycle (a few turns) waits for it.
    figure(ctx, { group: 'load', key: 'load.search.ms', label: 'one store.search under load, wall time (mean over the run)', value: searchMs / searches, unit: 'ms', better: 'lower', note: `first window ${at(searched[0])}, last ${at(searched.at(-1))}; longest ${Math.max(...windows.map((w) => w.searchMaxMs ?? 0)).toFixed(0)} ms` });
  }
  const sched = windows.filter((w) => w.loopCpu !== undefined);
  if (sched.length > 0) {
    const share = (f: (w: LoadWindow) => number) => (sched.reduce((a, w) => a + f(w) * w.seconds, 0) / sched.reduce((a, w) => a + w.seconds, 0)) * 100;
    figure(ctx, { group: 'load', key: 'load.loopcpu', label: "the event loop's thread: share of the run on a CPU", value: share((w) => w.loopCpu!), unit: '%', better: 'higher', note: `runnable but waiting for a CPU ${share((w) => w.loopWaiting!).toFixed(0)}% of the run (the machine's other processes had the cores: every wall-clock figure here was measured under that); the rest idle, waiting for the pool or the disk` });
  }
  figure(ctx, { group: 'load', key: 'load.eld', label: 'event-loop delay under load, p50 / p99 (whole run)', value: ms(whole.percentile(50)), p99: ms(whole.percentile(99)), unit: 'ms', better: 'lower', note: `max ${ms(whole.max).toFixed(1)} ms; target p99 ≤ 20 ms` });
  const cpuGaps = stallReport?.cpu;
  if (cpuGaps !== undefined)
    figure(ctx, { group: 'load', key: 'load.eld.cpu', label: "the loop thread's own CPU time between two ticks of a 1-ms timer, p99 (--stalls)", value: cpuGaps.p99, unit: 'ms', better: 'lower', note: `max ${cpuGaps.max.toFixed(1)} ms; ${cpuGaps.over} of ${cpuGaps.gaps} gaps over ${LATE_MS} ms on the CPU alone: the delay the process's own work makes, without the wait for a core the machine's other processes cause` });
  figure(ctx, { group: 'load', key: 'load.eld.max', label: 'event-loop delay under load, max', value: ms(whole.max), unit: 'ms', better: 'lower' });
  figure(ctx, { group: 'load', key: 'load.rss', label: 'peak RSS during the load test (sampled every 100 ms)', value: rssPeak / 2 ** 20, unit: 'MiB', better: 'lower' });
  const ran = (part: LoadPart, n: number) => without.includes(part) || n > 0;
  check(ctx, 'load test: appends, searches and compactions all ran without an error', errors.length === 0 && appends > 0 && ran('searcher', searches) && ran('compactor', compactions), `${appends} appends, ${searches} searches, ${compactions} compactions${errors.length ? `; errors: ${errors.join('; ')}` : ''}`);
}
