/**
 * Catch-up in slices: an index is brought up to the end of the log by native calls that
 * each index at most a budget of text bytes (NativeLexicalIndex / NativeVectorIndex
 * `catchUp(log, …, limit, maxBytes)`), with the event loop let run between slices (one setImmediate), so a long backlog
 * — a reopen after many unindexed appends, a rebuild from the log, a repair — never holds the
 * host's event loop for more than about one slice.
 *
 * The budget adapts to what a slice costs: it starts small and is scaled after every call so
 * that one call takes about {@link SLICE_MS} (indexing costs differ by index and by machine).
 * A slice always indexes at least one record, so a backlog always moves.
 */
import type { NativeEmbedder, NativeLexicalIndex, NativeSpanLog, NativeVectorIndex } from './native.js';

/** The time one slice aims at, in milliseconds. */
export const SLICE_MS = 8;
/** Fewest bytes of text one slice is given (it always indexes at least one record). */
export const MIN_SLICE_BYTES = 4 << 10;
/** Most bytes of text one slice is given. */
export const MAX_SLICE_BYTES = 64 << 20;
/** The first slice of an index whose cost is not measured yet. */
const FIRST_SLICE_BYTES = 32 << 10;

/** Where a catch-up stands, reported after every slice (SpanStoreOptions.onCatchUp). */
export interface CatchUpProgress {
  /** The index the slice advanced. */
  index: 'lexical' | 'vector';
  /** One past the highest id the index covers now. */
  highWater: number;
  /** The log's next id when the slice ended: the catch-up is done when every index reaches it. */
  nextId: number;
}

/** Lets the event loop run: timers, I/O callbacks and immediates queued before it. */
export function yieldToLoop(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * One index's slice, in bytes of text and metadata (what indexing costs grow with: one long
 * tool output costs what hundreds of short turns do), learnt from the calls made so far.
 */
export class SliceSizer {
  private bytes = FIRST_SLICE_BYTES;

  get current(): number {
    return this.bytes;
  }

  /**
   * Scales the budget so the next slice takes about SLICE_MS, given that the last took `ms`;
   * `full`: it used its whole budget (the backlog went on past it). A short tail that ran
   * fast says little about the rate; one that ran slow still shrinks the budget.
   */
  observe(ms: number, full: boolean): void {
    if (!full && ms <= SLICE_MS) return;
    const scale = Math.min(4, Math.max(0.25, SLICE_MS / Math.max(ms, 0.05)));
    this.bytes = Math.min(MAX_SLICE_BYTES, Math.max(MIN_SLICE_BYTES, Math.round(this.bytes * scale)));
  }
}

/** What a sliced catch-up works on. `vector` null: only the lexical index (a reader's vector index stays as saved). */
export interface CatchUpTarget {
  log: NativeSpanLog;
  lexical: NativeLexicalIndex;
  vector: NativeVectorIndex | null;
  embedder: NativeEmbedder;
}

/**
 * Runs slices until both indexes reach the log's next id (read afresh after every slice, so
 * appends made meanwhile are caught up too), or `stop()` says to stop. Before each slice it
 * waits for `gate()` (an index save in flight). Throws what a native catch-up throws; the
 * indexes keep every slice indexed before it.
 */
export async function catchUpInSlices(
  target: () => CatchUpTarget,
  sizers: { lexical: SliceSizer; vector: SliceSizer },
  onProgress: ((p: CatchUpProgress) => void) | undefined,
  stop: () => boolean = () => false,
  gate: () => Promise<void> | null = () => null,
): Promise<void> {
  let ranSince = performance.now();
  for (;;) {
    // An index being saved on the thread pool cannot change until the save settles.
    const saving = gate();
    if (saving !== null) {
      await saving.catch(() => {});
      ranSince = performance.now();
      continue;
    }
    // The target is read each round: a repair or a rebuild may replace an index meanwhile.
    const { log, lexical, vector, embedder } = target();
    const next = log.nextId();
    // An index stands at its high water, or at the log's first id when that is higher (an
    // empty index of a log whose ids start at 1).
    const first = log.firstId();
    const lexBehind = Math.max(lexical.highWater(), first) < next;
    const vecBehind = vector !== null && Math.max(vector.highWater(), first) < next;
    if (!lexBehind && !vecBehind) return;
    if (stop()) return;
    // The lexical index first: it answers exact recall, the verdict's ground.
    const index = lexBehind ? 'lexical' : 'vector';
    const sizer = sizers[index];
    const before = lexBehind ? lexical.highWater() : vector!.highWater();
    const t0 = performance.now();
    if (lexBehind) lexical.catchUp(log, Infinity, sizer.current);
    else vector!.catchUp(log, embedder, Infinity, sizer.current);
    const after = lexBehind ? lexical.highWater() : vector!.highWater();
    // A slice that did not move the index (nothing left it can read) ends the catch-up
    // rather than spinning; the caller's next catch-up tries again.
    if (after <= Math.max(before, first)) return;
    sizer.observe(performance.now() - t0, after < log.nextId());
    onProgress?.({ index, highWater: after, nextId: log.nextId() });
    // The loop runs once SLICE_MS of work has gone by since it last ran: a small catch-up
    // (an append's: one lexical and one vector call) finishes without a hop.
    if (performance.now() - ranSince >= SLICE_MS) {
      await yieldToLoop();
      ranSince = performance.now();
    }
  }
}

/** Fewest ids one slice of a log scan reads. */
const MIN_SCAN_IDS = 256;
/** Most ids one slice of a log scan reads. */
const MAX_SCAN_IDS = 1 << 20;

/**
 * A full pass over the log's ids (the open's replay: the anchors, the event trail) in slices
 * of ids that let the event loop run: at 10^6 spans one scan reads every record header of
 * hundreds of MB of mapped segments (page faults on a cold log) — seconds in one call. The
 * slice adapts like {@link SliceSizer}: about {@link SLICE_MS} per call, the loop let run
 * once that much work has gone by.
 */
export class ScanSlicer {
  private ranSince = performance.now();

  /** `ids`: the first slice, in ids (the cost of a read is not measured yet). */
  constructor(private ids = 8192) {}

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
        this.ids = Math.min(MAX_SCAN_IDS, Math.max(MIN_SCAN_IDS, Math.round(this.ids * scale)));
      }
      await this.pause();
    }
  }

  /** Lets the loop run when SLICE_MS of work has gone by since it last ran. */
  async pause(): Promise<void> {
    if (performance.now() - this.ranSince < SLICE_MS) return;
    await yieldToLoop();
    this.ranSince = performance.now();
  }
}
