/**
 * Catch-up in slices off the JS thread: an index is brought up to the end of the log by
 * jobs that each index at most a budget of text bytes (NativeLexicalIndex /
 * NativeVectorIndex `catchUpAsync(log, …, limit, maxBytes)`). A job's records are copied out
 * of the log on the JS thread (the log is read nowhere else); the indexing runs on the addon's
 * write lane (native/napi/background.h ThreadLane: threads of its own, so an append's indexing
 * never waits in the libuv pool's queue behind a search's lookups),
 * in steps of about a millisecond under the index's lock, so a search meanwhile waits at
 * most one step and sees the index as it stands between records. The event loop only pays
 * for the copy.
 *
 * The budget adapts to what the copy costs: it starts small and is scaled after every job
 * so that the copy takes about {@link COPY_MS} (a cold log's pages fault in as they are
 * read), up to {@link MAX_SLICE_BYTES} (what one job holds in memory, and what a close
 * waits for). A job always indexes at least one record, so a backlog always moves. The two
 * indexes' jobs run side by side on the lane; after a long backlog their copies are taken in
 * separate turns of the event loop.
 */
import type { NativeEmbedder, NativeLexicalIndex, NativeSpanLog, NativeVectorIndex } from './native.js';

/** The time the JS thread's share of a job (copying its records out of the log) aims at, in milliseconds. */
export const COPY_MS = 2;
/** The time the JS thread's work between two turns of the event loop aims at (log scans), in milliseconds. */
export const SLICE_MS = 8;
/** Fewest bytes of text one job is given (it always indexes at least one record). */
export const MIN_SLICE_BYTES = 4 << 10;
/**
 * Most bytes of text one job is given. A copy that takes about COPY_MS on an idle machine
 * takes ten times that when the cores are busy and the copy's fresh pages fault in under
 * contention: at 4 MiB, copies of 20-50 ms were seen in a 10^6-span rebuild; at 1 MiB the
 * same spike stays near the loop's budget, and a job still indexes thousands of records.
 */
export const MAX_SLICE_BYTES = 1 << 20;
/**
 * A round whose lexical backlog is longer than this many ids copies the vector index's slice in
 * a turn of the loop of its own. A shorter one (a burst of appends: at most a few hundred
 * records, a copy of well under a millisecond) starts both jobs in one turn, so a burst's
 * indexing starts beside its fdatasync instead of a turn after it.
 */
export const SEPARATE_COPIES_ABOVE = 1024;
/** The first job of an index whose copy cost is not measured yet. */
const FIRST_SLICE_BYTES = 256 << 10;

/** Where a catch-up stands, reported after every job (SpanStoreOptions.onCatchUp). */
export interface CatchUpProgress {
  /** The index the job advanced. */
  index: 'lexical' | 'vector';
  /** One past the highest id the index covers now. */
  highWater: number;
  /** The log's next id when the job ended: the catch-up is done when every index reaches it. */
  nextId: number;
}

/** Lets the event loop run: timers, I/O callbacks and immediates queued before it. */
export function yieldToLoop(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * Lets the event loop run a whole turn, timers included. A setImmediate queued from an I/O
 * callback (a write-lane job settling) runs in the same turn's check phase, before the
 * timers: two stretches of work either side of yieldToLoop() then run with no timer between
 * them. The second immediate, queued from the first, runs only after the next timers phase.
 */
export function yieldTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(() => setImmediate(resolve)));
}

/**
 * One index's job size, in bytes of text and metadata (what both the copy and the indexing
 * grow with: one long tool output costs what hundreds of short turns do), learnt from the
 * jobs run so far.
 */
export class SliceSizer {
  private bytes = FIRST_SLICE_BYTES;

  get current(): number {
    return this.bytes;
  }

  /**
   * Scales the budget so the next job's copy takes about COPY_MS, given that the last took
   * `ms`; `full`: it used its whole budget (the backlog went on past it). A short tail that
   * ran fast says little about the rate; one that ran slow still shrinks the budget.
   */
  observe(ms: number, full: boolean): void {
    if (!full && ms <= COPY_MS) return;
    const scale = Math.min(4, Math.max(0.25, COPY_MS / Math.max(ms, 0.05)));
    this.bytes = Math.min(MAX_SLICE_BYTES, Math.max(MIN_SLICE_BYTES, Math.round(this.bytes * scale)));
  }
}

/** What a catch-up works on. `vector` null: only the lexical index (a reader's vector index stays as saved). */
export interface CatchUpTarget {
  log: NativeSpanLog;
  lexical: NativeLexicalIndex;
  vector: NativeVectorIndex | null;
  embedder: NativeEmbedder;
}

/** How a catch-up is held back and watched by its owner. */
export interface CatchUpControl {
  /** Checked before every round: true ends the catch-up (a close). */
  stop?: () => boolean;
  /** Awaited before every round when not null: an index save in flight (an index being saved cannot change). */
  gate?: () => Promise<void> | null;
  /** Told of every round of write-lane jobs as it starts (a save waits for it: an index being caught up cannot be saved). */
  round?: (jobs: Promise<unknown>) => void;
}

/**
 * Runs rounds of write-lane jobs until both indexes reach the log's next id (read afresh after
 * every round, so appends made meanwhile are caught up too), or `stop()` says to stop. A
 * round starts one job per index that is behind; the two run side by side. Throws what a
 * job rejects with (the lexical index's failure first); the indexes keep every job indexed
 * before it.
 */
export async function catchUpInSlices(
  target: () => CatchUpTarget,
  sizers: { lexical: SliceSizer; vector: SliceSizer },
  onProgress: ((p: CatchUpProgress) => void) | undefined,
  control: CatchUpControl = {},
): Promise<void> {
  for (;;) {
    const saving = control.gate?.() ?? null;
    if (saving !== null) {
      await saving.catch(() => {});
      continue;
    }
    // The target is read each round: a repair or a rebuild may replace an index meanwhile.
    const { log, lexical, vector, embedder } = target();
    const next = log.nextId();
    // An index stands at its high water, or at the log's first id when that is higher (an
    // empty index of a log whose ids start at 1).
    const first = log.firstId();
    const lexFrom = Math.max(lexical.highWater(), first);
    const vecFrom = vector === null ? next : Math.max(vector.highWater(), first);
    if (lexFrom >= next && vecFrom >= next) return;
    if (control.stop?.()) return;
    const jobs: Promise<{ index: 'lexical' | 'vector'; moved: boolean }>[] = [];
    const start = (index: 'lexical' | 'vector', from: number, call: (bytes: number) => Promise<number>, highWater: () => number) => {
      const sizer = sizers[index];
      const t0 = performance.now();
      let job: Promise<number>;
      try {
        job = call(sizer.current);
      } catch (e) {
        job = Promise.reject(e);
      }
      // The call returned once the records were copied: that much ran on this thread.
      const copyMs = performance.now() - t0;
      jobs.push(
        job.then(() => {
          const after = highWater();
          sizer.observe(copyMs, after < log.nextId());
          onProgress?.({ index, highWater: after, nextId: log.nextId() });
          return { index, moved: after > from };
        }),
      );
    };
    // Each job's copy runs on this thread: after a long lexical backlog, the second one in a
    // turn of the loop of its own, so a turn carries one large copy, not two. The round is
    // announced before that turn (a save or a repair waits for it from then on, and cannot take
    // the index between the two starts).
    const round = (async () => {
      if (lexFrom < next) start('lexical', lexFrom, (bytes) => lexical.catchUpAsync(log, Infinity, bytes), () => lexical.highWater());
      if (vecFrom < next) {
        if (jobs.length > 0 && next - lexFrom > SEPARATE_COPIES_ABOVE) await yieldTurn();
        start('vector', vecFrom, (bytes) => vector!.catchUpAsync(log, embedder, Infinity, bytes), () => vector!.highWater());
      }
      return Promise.allSettled(jobs);
    })();
    control.round?.(round);
    const settled = await round;
    for (const r of settled) if (r.status === 'rejected') throw r.reason;
    // A round that moved no index (nothing left it can read) ends the catch-up rather than
    // spinning; the caller's next catch-up tries again.
    if (!settled.some((r) => r.status === 'fulfilled' && r.value.moved)) return;
  }
}

/**
 * When a slicer last let the loop run, shared by every slicer: one pass often follows
 * another in the same turn (a repair's audit samples its facts, checks them, then the
 * agreement check scans the log), and a slicer with a clock of its own let each of them
 * run SLICE_MS before its first pause: 25-30 ms with no turn of the loop. A slicer that
 * starts long after the last pause lets the loop run at its first one: one turn more.
 */
let loopRanAt = performance.now();

/**
 * Notes that the event loop has just run: a slicer's pause, or the start of work the loop
 * itself called (a search begins in a turn of its own).
 */
export function loopRan(): void {
  loopRanAt = performance.now();
}

/** Whether SLICE_MS of work has gone by since the loop last ran (the shared clock above). */
export function sliceDue(): boolean {
  return performance.now() - loopRanAt >= SLICE_MS;
}

/**
 * Lets the loop run once (yieldToLoop: its immediates and I/O callbacks) and notes it: the
 * short pause of a search, whose caller waits for the answer.
 */
export async function letLoopRun(): Promise<void> {
  await yieldToLoop();
  loopRanAt = performance.now();
}

/** Fewest ids one slice of a log scan reads. */
const MIN_SCAN_IDS = 256;
/** Most ids one slice of a log scan reads. */
const MAX_SCAN_IDS = 1 << 20;

/**
 * A full pass over the log's ids (the open's replay: the anchors, the event trail) in slices
 * of ids that let the event loop run: at 10^6 spans one scan reads every record header of
 * hundreds of MB of mapped segments (page faults on a cold log) — seconds in one call. The
 * slice adapts to what a read costs: about {@link SLICE_MS} per call, the loop let run once
 * that much work has gone by.
 */
export class ScanSlicer {
  /**
   * `ids`: the first slice, in ids (the cost of a read is not measured yet); `minIds`: the
   * fewest one slice reads (a read whose unit costs far more than a record header's, such
   * as a phrase lookup, needs a lower floor than a scan).
   */
  constructor(
    private ids = 8192,
    private readonly minIds = MIN_SCAN_IDS,
  ) {}

  /**
   * Calls `read(from, count)` over [from, to) in slices, in order; between slices, once
   * SLICE_MS of work has gone by since the loop last ran, lets it run.
   */
  async run(from: number, to: number, read: (from: number, count: number) => void): Promise<void> {
    for (let at = from; at < to; ) {
      const count = Math.min(this.ids, to - at);
      const t0 = performance.now();
      read(at, count);
      const ms = performance.now() - t0;
      at += count;
      if (count === this.ids) {
        const scale = Math.min(4, Math.max(0.25, SLICE_MS / Math.max(ms, 0.05)));
        this.ids = Math.min(MAX_SCAN_IDS, Math.max(this.minIds, Math.round(this.ids * scale)));
      }
      await this.pause();
    }
  }

  /** Lets the loop run, timers included (yieldTurn), when SLICE_MS of work has gone by since it last ran. */
  async pause(): Promise<void> {
    if (!sliceDue()) return;
    await yieldTurn();
    loopRan();
  }
}
