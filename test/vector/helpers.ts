// Shared helpers for the vector tests: temp dirs, seeded data, brute-force truth.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll } from 'vitest';
import { addon, type NativeVectorIndex } from '../../src/native.js';

export const native = addon();

const made: string[] = [];
// Registered once per test file (each file imports this module afresh).
afterAll(() => {
  for (const dir of made.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

export function tmpDir(tag: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `spanguard-vec-${tag}-`));
  made.push(dir);
  return dir;
}

export type Scalar = 'f32' | 'f16' | 'i8';

export type Ann = 'binary' | 'hnsw';

/** A raw VectorIndex; `ann` defaults to 'hnsw' here (the tests written for the graph), tests of the binary strategy say so. */
export function openIndex(
  dir: string,
  opts: { dims: number; scalar?: Scalar; exactBelow?: number; expansionSearch?: number; ann?: Ann; rerankMin?: number; rerankShare?: number },
): NativeVectorIndex {
  return new native.VectorIndex(dir, { scalar: 'f32', exactBelow: 0, ann: 'hnsw', ...opts });
}

/** The snapshot file of one namespace for an index of strategy `ann`. */
export function snapshotFile(dir: string, ann: Ann, kind: 'raw' | 'summary' = 'raw'): string {
  return `${dir}/index.${kind}.${ann === 'hnsw' ? 'usearch' : 'flat'}`;
}

/** Deterministic PRNG (LCG) so failures reproduce. */
export function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 4294967296;
  };
}

export function gaussian(rand: () => number): () => number {
  return () => Math.sqrt(-2 * Math.log(rand() || 1e-12)) * Math.cos(2 * Math.PI * rand());
}

/** n unit vectors around `clusters` centres: the shape real embeddings have. */
export function clustered(n: number, dims: number, clusters: number, seed = 1): Float32Array {
  const g = gaussian(rng(seed));
  const centres = Array.from({ length: clusters }, () => Float32Array.from({ length: dims }, g));
  const out = new Float32Array(n * dims);
  for (let i = 0; i < n; i++) {
    const c = centres[i % clusters]!;
    let norm = 0;
    for (let d = 0; d < dims; d++) {
      const x = c[d]! + g() * 0.7;
      out[i * dims + d] = x;
      norm += x * x;
    }
    norm = Math.sqrt(norm);
    for (let d = 0; d < dims; d++) out[i * dims + d]! /= norm;
  }
  return out;
}

export function row(m: Float32Array, i: number, dims: number): Float32Array {
  return m.slice(i * dims, (i + 1) * dims);
}

/** Brute-force top-k ids by cosine distance (vectors are unit length). */
export function bruteTopK(m: Float32Array, ids: ArrayLike<number>, q: Float32Array, k: number): number[] {
  const dims = q.length;
  const n = m.length / dims;
  let qn = 0;
  for (let d = 0; d < dims; d++) qn += q[d]! * q[d]!;
  qn = Math.sqrt(qn);
  const scored: [number, number][] = [];
  for (let i = 0; i < n; i++) {
    let dot = 0;
    for (let d = 0; d < dims; d++) dot += q[d]! * m[i * dims + d]!;
    scored.push([1 - dot / qn, ids[i]!]);
  }
  scored.sort((a, b) => a[0] - b[0]);
  return scored.slice(0, k).map((s) => s[1]);
}

export function seq(n: number, from = 0): Float64Array {
  return Float64Array.from({ length: n }, (_, i) => from + i);
}

export function dot(a: Float32Array, ai: number, b: Float32Array, bi: number, dims: number): number {
  let s = 0;
  for (let d = 0; d < dims; d++) s += a[ai * dims + d]! * b[bi * dims + d]!;
  return s;
}

/** Queries near the data (a data row plus noise, renormalized): what real queries look like. */
export function nearQueries(m: Float32Array, dims: number, count: number, noise: number, seed: number): Float32Array {
  const rand = rng(seed);
  const g = gaussian(rand);
  const n = m.length / dims;
  const out = new Float32Array(count * dims);
  for (let q = 0; q < count; q++) {
    const i = Math.floor(rand() * n);
    let norm = 0;
    for (let d = 0; d < dims; d++) {
      const x = m[i * dims + d]! + g() * noise;
      out[q * dims + d] = x;
      norm += x * x;
    }
    norm = Math.sqrt(norm);
    for (let d = 0; d < dims; d++) out[q * dims + d]! /= norm;
  }
  return out;
}

/** recall@10 of `ix` against brute force over `count` rows of `queries`: hits / (10 · count). */
export function recallAt10(
  ix: Pick<NativeVectorIndex, 'search'>,
  m: Float32Array,
  ids: Float64Array,
  queries: Float32Array,
  count: number,
  dims: number,
  kind: number,
): number {
  let hits = 0;
  for (let q = 0; q < count; q++) {
    const qv = row(queries, q, dims);
    const truth = new Set(bruteTopK(m, ids, qv, 10));
    for (const id of ix.search(qv, 10, kind).ids) hits += truth.has(id) ? 1 : 0;
  }
  return hits / (10 * count);
}

/**
 * A binary index of `n` clustered `dims`-dim vectors (16 clusters, seed 7) under ids 1..n, raw,
 * searched by signatures from the first row (exactBelow 0): what the overlap and take tests search.
 */
export function filledBinary(tag: string, dims: number, n = 3000): { ix: ReturnType<typeof openIndex>; m: Float32Array } {
  const m = clustered(n, dims, 16, 7);
  const ix = openIndex(tmpDir(tag), { dims, ann: 'binary', exactBelow: 0 });
  ix.add(seq(n, 1), new Uint8Array(n).fill(1), m);
  return { ix, m };
}

/** Hits as plain arrays, for toEqual. */
export const plainHits = (h: { ids: Float64Array; distances: Float32Array }) => ({ ids: Array.from(h.ids), distances: Array.from(h.distances) });
