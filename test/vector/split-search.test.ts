// A partitioned search reads its lists in two passes (the lead words of every probed row, then
// the tail words of a shortlist) and, once it probes many rows, on two threads, the caller's
// and a helper of the index's own (native/vector/helper_thread.h), answering exactly as one
// thread does (docs/VECTOR_FORMAT.md, "Partitions").
import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { NativeVectorIndex } from '../../src/native.js';
import { clustered, native, nearQueries, row, seq, tmpDir } from './helpers.js';

const RAW = 1;
const dims = 16;
/** Above the 65,536 probed rows from which a search is split. */
const N = 80_000;
const base = { dims, scalar: 'f16' as const, exactBelow: 0, ann: 'binary' as const, partitionAbove: 4096, rerankMin: 128 };

let built: { dir: string; m: Float32Array } | null = null;
/** One partitioned index of N clustered rows, saved, shared by the tests (read-only opens). */
function index(): { dir: string; m: Float32Array } {
  if (built) return built;
  const dir = tmpDir('split');
  const m = clustered(N, dims, 60, 23);
  const ix = new native.VectorIndex(dir, base);
  ix.add(seq(N), new Uint8Array(N).fill(RAW), m);
  ix.save();
  expect(Number(ix.stats().listsRaw)).toBeGreaterThan(1);
  ix.close();
  built = { dir, m };
  return built;
}

const open = (o: Record<string, number>): NativeVectorIndex => new native.VectorIndex(index().dir, { ...base, readOnly: true, ...o });

/** Every answer of `a` and `b` to the same queries, side by side. */
function answers(ix: NativeVectorIndex, qs: Float32Array, count: number) {
  const out: { ids: number[]; distances: number[] }[] = [];
  for (let q = 0; q < count; q++) {
    const h = ix.search(row(qs, q, dims), 10, RAW);
    out.push({ ids: Array.from(h.ids), distances: Array.from(h.distances) });
  }
  return out;
}

describe('split search: from 65,536 probed rows the lists are scanned on two threads, with the answers of one', () => {
  // Every list probed (probeShare 1), a pool smaller than the rows probed: the cut of the
  // pool falls inside both halves, ties at it included.
  for (const probeRerank of [10, 64, 1000, 1e7]) {
    it(`pool ${probeRerank}: the same ids and distances as searchThreads 1, and every search was split`, () => {
      const qs = nearQueries(index().m, dims, 40, 0.2, 31);
      const one = open({ probeMin: 1, probeShare: 1, probeRerank, searchThreads: 1 });
      const two = open({ probeMin: 1, probeShare: 1, probeRerank, searchThreads: 2 });
      expect(two.stats().searchThreads).toBe(2);
      const a = answers(one, qs, 40);
      const b = answers(two, qs, 40);
      expect(b).toEqual(a);
      expect(Number(one.stats().probedSplit)).toBe(0);
      expect(Number(two.stats().probedSplit)).toBe(40);
      one.close();
      two.close();
    });
  }

  it('the scratch a search keeps for its probed rows counts in stats().memoryBytes', () => {
    const ix = open({ probeMin: 1, probeShare: 1 });
    const before = Number(ix.stats().memoryBytes);
    ix.search(row(nearQueries(index().m, dims, 1, 0.2, 47), 0, dims), 10, RAW);
    const s = ix.stats();
    // Per probed row at least its distance (2 B), row (4 B), tail pointer and shortlist key (8 B each).
    expect(Number(s.memoryBytes) - before).toBeGreaterThanOrEqual(22 * Number(s.probedRows));
    ix.close();
  });

  it('a search probing fewer rows stays on the calling thread', () => {
    const qs = nearQueries(index().m, dims, 10, 0.2, 37);
    const ix = open({ probeMin: 1, probeShare: 0.5 });
    answers(ix, qs, 10);
    const s = ix.stats();
    expect(Number(s.probedRows) / Number(s.probedQueries)).toBeLessThan(65_536);
    expect(Number(s.probedSplit)).toBe(0);
    ix.close();
  });

  it('searchThreads outside 1..2 is refused with a typed error', () => {
    for (const searchThreads of [0, 3, 1.5]) {
      expect(() => new native.VectorIndex(tmpDir('split-opt'), { ...base, searchThreads })).toThrow(
        expect.objectContaining({ code: 'INVALID_ARGUMENT' }) as Error,
      );
    }
  });
});

describe('split search: the first pass keeps at least 4 x probeRerank rows (or every probed row) for the second', () => {
  for (const searchThreads of [1, 2]) {
    it(`searchThreads ${searchThreads}: each search's shortlist, whatever its pool`, () => {
      const qs = nearQueries(index().m, dims, 12, 0.2, 41);
      for (const probeRerank of [10, 300, 5000, 1e7]) {
        const ix = open({ probeMin: 1, probeShare: 1, probeRerank, searchThreads });
        for (let q = 0; q < 12; q++) {
          const before = ix.stats();
          ix.search(row(qs, q, dims), 10, RAW);
          const after = ix.stats();
          const probed = Number(after.probedRows) - Number(before.probedRows);
          const shortlisted = Number(after.probedShortlisted) - Number(before.probedShortlisted);
          expect(shortlisted).toBeGreaterThanOrEqual(Math.min(probed, 4 * probeRerank));
          expect(shortlisted).toBeLessThanOrEqual(probed);
        }
        ix.close();
      }
    });
  }
});

/** Thread ids of this process's helper scan threads (named spanguard-scan). */
function scanThreads(): string[] {
  return fs.readdirSync('/proc/self/task').filter((t) => {
    try {
      return fs.readFileSync(`/proc/self/task/${t}/comm`, 'utf8').trim() === 'spanguard-scan';
    } catch {
      return false; // ended meanwhile
    }
  });
}
const allowed = (status: string) => /Cpus_allowed_list:\s*(\S+)/.exec(status)?.[1];

describe('split search: the helper thread may use every CPU the process may, whichever thread started it', () => {
  it.runIf(process.platform === 'linux')('started by a search on the read lane, whose threads leave out the JS thread’s core', async () => {
    const before = new Set(scanThreads());
    const ix = open({ probeMin: 1, probeShare: 1, searchThreads: 2 });
    await ix.searchAsync(row(nearQueries(index().m, dims, 1, 0.2, 43), 0, dims), 10, RAW);
    expect(Number(ix.stats().probedSplit)).toBe(1);
    const mine = scanThreads().filter((t) => !before.has(t));
    expect(mine).toHaveLength(1);
    const processCpus = allowed(fs.readFileSync('/proc/self/status', 'utf8'));
    expect(processCpus).toBeDefined();
    expect(allowed(fs.readFileSync(`/proc/self/task/${mine[0]}/status`, 'utf8'))).toBe(processCpus);
    ix.close();
    expect(scanThreads().filter((t) => !before.has(t))).toHaveLength(0); // stopped at close
  });
});
