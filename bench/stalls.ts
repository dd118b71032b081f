/**
 * Where the event loop's late turns come from: every call into a store's index, log and
 * embedder methods is timed on the JS thread (the methods are shadowed on those objects for
 * the run: the addon's classes define theirs read-only), garbage collections are observed, and a 1-ms timer chain finds the turns the loop
 * ran late. Each late turn's length is then split among the calls (and collections) that
 * started inside it; what is left is JavaScript between native calls (search's fusion and
 * rerank, the guard, the bench itself).
 *
 * Reported (the load bench's `stalls` info and its log): per operation, its share of the
 * late turns' time, its calls, the longest single call and how many ran past 8 and 16 ms.
 */
import fs from 'node:fs';
import { PerformanceObserver } from 'node:perf_hooks';

/** A turn is late when the 1-ms timer fires this much after it was due. */
export const LATE_MS = 10;
/** Calls shorter than this are counted, not kept one by one. */
const KEEP_MS = 0.5;

interface Call {
  name: string;
  start: number;
  ms: number;
}

export interface StallRow {
  /** `LexicalIndex.catchUp`, `gc`, `js (between native calls)`, … */
  op: string;
  /** Share of the late turns' time, 0–1. */
  share: number;
  /** Milliseconds of late turns attributed to it. */
  lateMs: number;
  calls: number;
  /** The longest single call, ms. */
  maxMs: number;
  over8: number;
  over16: number;
}

export interface StallReport {
  lateTurns: number;
  lateMs: number;
  rows: StallRow[];
  /**
   * The loop thread's own CPU time in each gap between two ticks of the 1-ms timer (Linux
   * schedstat of the main thread), when the kernel has it: a turn late by the machine's
   * other processes holding the cores spends little of its lateness on the CPU, one late by
   * the process's own work spends all of it there. p99 and max over the gaps, ms, and the
   * gaps whose CPU time alone passed LATE_MS.
   */
  cpu?: { p99: number; max: number; over: number; gaps: number };
}

/** Starts timing the methods of `targets` (by class name); `stop()` restores them and returns the attribution. */
export function attributeStalls(targets: Record<string, object>): { stop: () => StallReport } {
  const kept: Call[] = [];
  const totals = new Map<string, { calls: number; maxMs: number; over8: number; over16: number }>();
  const note = (name: string, start: number, ms: number) => {
    let t = totals.get(name);
    if (t === undefined) totals.set(name, (t = { calls: 0, maxMs: 0, over8: 0, over16: 0 }));
    t.calls++;
    if (ms > t.maxMs) t.maxMs = ms;
    if (ms > 8) t.over8++;
    if (ms > 16) t.over16++;
    if (ms >= KEEP_MS) kept.push({ name, start, ms });
  };
  const restore: (() => void)[] = [];
  const wrap = (cls: string, methods: string[]) => {
    const target = targets[cls] as Record<string, unknown> | undefined;
    if (target === undefined) return;
    for (const m of methods) {
      const fn = target[m];
      if (typeof fn !== 'function') continue;
      const name = `${cls}.${m}`;
      Object.defineProperty(target, m, {
        configurable: true,
        writable: true,
        value: function (this: unknown, ...args: unknown[]) {
          const t0 = performance.now();
          try {
            return fn.apply(this, args);
          } finally {
            note(name, t0, performance.now() - t0);
          }
        },
      });
      restore.push(() => delete target[m]);
    }
  };
  // An async method is timed for what it runs on this thread: its arguments and, for a
  // catch-up, the copy of its slice out of the log.
  wrap('LexicalIndex', ['catchUp', 'catchUpAsync', 'add', 'search', 'searchAsync', 'searchWithin', 'phrase', 'phraseWithin', 'phraseHas', 'highWater', 'ids', 'stats', 'saveAsync']);
  wrap('VectorIndex', ['catchUp', 'catchUpAsync', 'add', 'search', 'searchAsync', 'searchBegin', 'searchEnd', 'highWater', 'ids', 'stats', 'saveAsync', 'close']);
  wrap('Embedder', ['embed']);
  wrap('SpanLog', ['append', 'get', 'getMany', 'scan', 'flush', 'releaseResident']);

  const gc = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) note('gc', e.startTime, e.duration);
  });
  gc.observe({ entryTypes: ['gc'] });

  const late: { from: number; to: number }[] = [];
  let due = performance.now() + 1;
  let last = performance.now();
  let timer: NodeJS.Timeout | null = null;
  // The main thread's CPU time (ns), from the kernel's scheduler statistics; NaN without them.
  const schedstat = `/proc/self/task/${process.pid}/schedstat`;
  const cpuNs = (): number => {
    try {
      return Number(fs.readFileSync(schedstat, 'utf8').split(' ')[0]);
    } catch {
      return Number.NaN;
    }
  };
  const cpuGaps: number[] = [];
  let lastCpu = cpuNs();
  const tick = () => {
    const now = performance.now();
    if (now - due > LATE_MS) late.push({ from: last, to: now });
    const c = cpuNs();
    if (Number.isFinite(c) && Number.isFinite(lastCpu)) cpuGaps.push((c - lastCpu) / 1e6);
    lastCpu = c;
    last = now;
    due = now + 1;
    timer = setTimeout(tick, 1);
  };
  timer = setTimeout(tick, 1);

  return {
    stop(): StallReport {
      if (timer !== null) clearTimeout(timer);
      gc.disconnect();
      for (const r of restore) r();
      kept.sort((x, y) => x.start - y.start);
      const lateBy = new Map<string, number>();
      let lateMs = 0;
      let at = 0;
      for (const turn of late) {
        const ms = turn.to - turn.from;
        lateMs += ms;
        while (at < kept.length && kept[at]!.start < turn.from) at++;
        let native = 0;
        for (let i = at; i < kept.length && kept[i]!.start < turn.to; i++) {
          const c = kept[i]!;
          // A call that runs past the turn's end counts only inside it.
          const part = Math.min(c.ms, turn.to - c.start);
          // A collection inside a native call (rare) is not counted twice.
          lateBy.set(c.name, (lateBy.get(c.name) ?? 0) + part);
          native += part;
        }
        const js = Math.max(0, ms - native);
        lateBy.set('js (between native calls)', (lateBy.get('js (between native calls)') ?? 0) + js);
      }
      const rows: StallRow[] = [...lateBy].map(([op, ms]) => {
        const t = totals.get(op);
        return { op, share: lateMs > 0 ? ms / lateMs : 0, lateMs: ms, calls: t?.calls ?? 0, maxMs: t?.maxMs ?? 0, over8: t?.over8 ?? 0, over16: t?.over16 ?? 0 };
      });
      rows.sort((x, y) => y.lateMs - x.lateMs);
      let cpu: StallReport['cpu'];
      if (cpuGaps.length > 0) {
        const sorted = Float64Array.from(cpuGaps).sort();
        cpu = { p99: sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * 0.99))]!, max: sorted.at(-1)!, over: cpuGaps.filter((g) => g > LATE_MS).length, gaps: cpuGaps.length };
      }
      return { lateTurns: late.length, lateMs, rows, ...(cpu ? { cpu } : {}) };
    },
  };
}
