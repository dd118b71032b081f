// Retrieval quality on real data (SPEC "Retrieval contract"),
// on the bundled slice of the miniswe transcript (3,022 turns, 39 questions). The same code
// as eval/quality.ts, which runs it on the whole datasets.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ingest, loadDataset, measure, neverStatedProbes, type Dataset, type Measures, type Probe } from '../../eval/quality.js';
import type { SpanStore } from '../../src/store.js';
import { tmpDir } from '../helpers/data.js';

const SLICE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'samples', 'miniswe-slice');
const PROBES = 250;

let ds: Dataset;
let store: SpanStore;
let dir: string;
let m: Measures;
let probes: Probe[];

beforeAll(async () => {
  ds = loadDataset(SLICE, 'exchange');
  dir = tmpDir('spanguard-quality-');
  store = (await ingest(ds, dir)).store;
  m = await measure(store, ds, PROBES);
  probes = neverStatedProbes(store, PROBES).probes;
}, 120_000);

afterAll(async () => {
  await store?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

describe('Every hit carries provenance: span id, kind, turn range, score, how it matched, the verdict', () => {
  it('hits of a question carry all fields, and the raw text is the log verbatim', async () => {
    const r = await store.search(ds.questions[0]!.question, { k: 10 });
    expect(r.hits.length).toBeGreaterThan(0);
    for (const h of r.hits) {
      expect(h).toMatchObject({ kind: 'raw', verdict: 'lossless' });
      expect(Number.isInteger(h.spanId)).toBe(true);
      expect(h.turnStart).toBeLessThanOrEqual(h.turnEnd);
      expect(h.score).toBeGreaterThan(0);
      expect(['exact', 'lexical', 'vector']).toContain(h.via);
      expect(h.text).toBe(store.get(h.spanId)!.text);
    }
  });
});

describe('Exact or near-exact queries must return the raw span verbatim', () => {
  it(`findExact on each answer returns the evidence turn: 100% of ${39} questions`, () => {
    expect(ds.questions.length).toBe(39);
    expect(m.exactRecall).toBe(1);
  });
  it('search with the question text: recall@10 >= 0.95 of the evidence turn', () => {
    expect(m.recallAt10).toBeGreaterThanOrEqual(0.95);
    expect(m.recallAt1).toBeGreaterThanOrEqual(0.6);
  });
  it('the same questions in plain words (no quotes, no episode framing) still find the evidence: recall@10 >= 0.9', () => {
    expect(m.naturalRecallAt10).toBeGreaterThanOrEqual(0.9);
  });
  it(`>= 99% of the true anchor facts behind ${PROBES} probes are found, verbatim`, () => {
    expect(m.honestMisses.probes).toBeGreaterThanOrEqual(200);
    expect(m.honestMisses.trueRate).toBeGreaterThanOrEqual(0.99);
  });
});

describe('An honest miss: when nothing in the raw store matches, the answer is "not in transcript"', () => {
  it(`>= 99% of ${PROBES} perturbed never-stated values come back as misses`, () => {
    expect(m.honestMisses.probes).toBeGreaterThanOrEqual(200);
    expect(m.honestMisses.rate, JSON.stringify(m.falseHits.slice(0, 3), null, 1)).toBeGreaterThanOrEqual(0.99);
  });
  it('the probes are never stated (findExact finds none) and their values really differ from the facts', () => {
    expect(probes.length).toBe(m.honestMisses.probes);
    for (const p of probes) {
      expect(store.findExact(p.never, { limit: 1 })).toHaveLength(0);
      expect(p.never.toLowerCase()).not.toBe(p.fact.toLowerCase());
    }
  });
  it('a miss returns no raw hit as the answer; the nearest neighbour is not passed off as a match', async () => {
    const misses = [];
    for (const p of probes.slice(0, 40)) {
      const r = await store.search(p.never, { k: 10 });
      if (r.miss) misses.push(r);
    }
    expect(misses.length).toBeGreaterThan(35);
    for (const r of misses) expect(r.hits.filter((h) => h.kind === 'raw')).toHaveLength(0);
  });
});
