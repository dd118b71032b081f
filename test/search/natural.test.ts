// Natural questions over the bundled miniswe slice (samples/miniswe-slice/natural-questions.jsonl:
// the natural questions of the shared set whose evidence, or whose episode, lies inside the
// slice), one span per turn as a ContextWindow host appends them. The full sets run in
// `npm run quality`; this slice keeps the rules honest in `npm test`.
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SpanStore, type TurnInput } from '../../src/store.js';
import { parseTranscript } from '../../src/transcript.js';
import { tmpDir } from '../helpers/data.js';

const SLICE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'samples', 'miniswe-slice');

interface Q {
  question: string;
  answerable: boolean;
  evidence_turns: number[];
  category: string;
}

let store: SpanStore;
let dir: string;
let spans: TurnInput[];
const questions: Q[] = fs
  .readFileSync(path.join(SLICE, 'natural-questions.jsonl'), 'utf8')
  .split('\n')
  .filter(Boolean)
  .map((l) => JSON.parse(l) as Q);
const results: { q: Q; rank: number; miss: boolean; speakerMismatch: boolean }[] = [];

beforeAll(async () => {
  dir = tmpDir('spanguard-natural-');
  store = await SpanStore.open(dir, { durability: 'none' });
  spans = parseTranscript(zlib.gunzipSync(fs.readFileSync(path.join(SLICE, 'turns.jsonl.gz'))).toString('utf8')).map((t) => ({
    turn: t.turn,
    role: t.role,
    text: t.text,
    ...(t.meta ? { meta: t.meta } : {}),
  }));
  await store.appendMany(spans);
  for (const q of questions) {
    const r = await store.search(q.question, { k: 10 });
    const rank = r.hits.findIndex((h) => q.evidence_turns.some((e) => h.turnStart <= e && e <= h.turnEnd));
    results.push({ q, rank, miss: r.miss, speakerMismatch: r.hits[0]?.support?.speaker?.match === false });
  }
}, 120_000);

afterAll(async () => {
  await store?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

/** Plain BM25 over the same turns: SQLite FTS5, porter stemming, OR of the question's words. */
function fts5Recall(): number {
  const db = new Database(':memory:');
  db.exec("CREATE VIRTUAL TABLE t USING fts5(text, fields, tokenize='porter unicode61')");
  const ins = db.prepare('INSERT INTO t(rowid, text, fields) VALUES (?, ?, ?)');
  db.transaction(() => {
    for (const s of spans) ins.run(s.turn, s.text, [s.role, ...Object.values(s.meta ?? {}).map(String)].join(' '));
  })();
  const q = db.prepare('SELECT rowid FROM t WHERE t MATCH ? ORDER BY bm25(t) LIMIT 10');
  const answerable = questions.filter((x) => x.answerable);
  let found = 0;
  for (const x of answerable) {
    const words = x.question.split(/[^\p{L}\p{N}]+/u).filter(Boolean);
    const rows = q.all(words.map((w) => `"${w}"`).join(' OR ')) as { rowid: number }[];
    if (rows.some((r) => x.evidence_turns.includes(r.rowid))) found++;
  }
  db.close();
  return found / answerable.length;
}

describe('recall first: natural questions find their evidence at least as often as plain BM25', () => {
  it('recall@10 on the answerable questions >= FTS5 (porter) on the same turns', () => {
    const answerable = results.filter((r) => r.q.answerable);
    expect(answerable.length).toBeGreaterThanOrEqual(6);
    const recall = answerable.filter((r) => r.rank >= 0).length / answerable.length;
    expect(recall).toBeGreaterThanOrEqual(fts5Recall());
    expect(recall).toBeGreaterThanOrEqual(0.5);
  });
});

describe('"not in transcript" only for what was never said', () => {
  it('no answerable question is answered "not in transcript"', () => {
    const falseMisses = results.filter((r) => r.q.answerable && r.miss).map((r) => r.q.question);
    expect(falseMisses).toEqual([]);
  });
  it('perturbed values come back as misses', () => {
    const perturbed = results.filter((r) => r.q.category === 'perturbed');
    expect(perturbed.length).toBeGreaterThanOrEqual(3);
    expect(perturbed.filter((r) => r.miss).length).toBeGreaterThanOrEqual(perturbed.length - 1);
  });
});
