// Shared helpers for the lexical index tests: a fresh index file per test, batch adds in the
// addon's column layout, and a slice of a real agent transcript for oracle tests.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { addon, type NativeLexicalIndex, type NativeSpanLog } from '../../src/native.js';

export interface Doc {
  id: number;
  kind?: number; // 1 raw (default), 2 summary, 3 event
  turnStart?: number;
  turnEnd?: number;
  text: string;
}

export type LexIndex = NativeLexicalIndex;

export function tempDir(): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(path.join(tmpdir(), 'spanguard-lex-'));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

export function openIndex(file: string): LexIndex {
  return new (addon().LexicalIndex)(file) as LexIndex;
}

export function addDocs(index: LexIndex, docs: Doc[]): number {
  return index.add(
    Float64Array.from(docs.map((d) => d.id)),
    Uint8Array.from(docs.map((d) => d.kind ?? 1)),
    Float64Array.from(docs.map((d) => d.turnStart ?? d.id)),
    Float64Array.from(docs.map((d) => d.turnEnd ?? d.turnStart ?? d.id)),
    docs.map((d) => d.text),
  );
}

/** The in-memory text source `phrase()` accepts besides a SpanLog. */
export function memorySource(docs: Doc[]): { ids: Float64Array; kinds: Uint8Array; texts: string[] } {
  return {
    ids: Float64Array.from(docs.map((d) => d.id)),
    kinds: Uint8Array.from(docs.map((d) => d.kind ?? 1)),
    texts: docs.map((d) => d.text),
  };
}

/** Consecutive ids from 0, as the log assigns them. */
export function asDocs(texts: string[], kind = 1): Doc[] {
  return texts.map((text, id) => ({ id, kind, text }));
}

export const MINISWE = '/work/shared/data/miniswe-gemini3pro-verified';

let turnsCache: { turn: number; role: string; text: string }[] | undefined;
/** Real turns of miniswe-gemini3pro-verified (JSONL: turn, role, text). */
export function realTurns(limit = Infinity): { turn: number; role: string; text: string }[] {
  if (!turnsCache) {
    const lines = gunzipSync(readFileSync(path.join(MINISWE, 'turns.jsonl.gz'))).toString('utf8').split('\n');
    turnsCache = [];
    for (const line of lines) {
      if (line.length > 0) turnsCache.push(JSON.parse(line));
    }
  }
  return turnsCache.slice(0, limit);
}

/** Deterministic PRNG (mulberry32) so oracle tests are reproducible: the auditor's own. */
export { prng as rng } from '../../src/prng.js';

/** Opens a span log (the real one) in `dir`, durability none: these tests are about indexing. */
export function openSpanLog(dir: string): NativeSpanLog {
  return new (addon().SpanLog)(dir, { readOnly: false, durability: 0, segmentBytes: 8 << 20, maxTextBytes: 16 << 20 });
}

/** Appends docs (their ids are ignored: the log assigns them) and returns the first id. */
export async function appendToLog(log: NativeSpanLog, docs: Omit<Doc, 'id'>[]): Promise<number> {
  const n = docs.length;
  let turn = 0;
  return log.append({
    kinds: Uint8Array.from(docs.map((d) => d.kind ?? 1)),
    flags: new Uint8Array(n),
    roles: new Uint8Array(n).fill(2),
    turnStart: Float64Array.from(docs.map((d) => (turn = d.turnStart ?? turn))),
    turnEnd: Float64Array.from(docs.map((d) => d.turnEnd ?? d.turnStart ?? turn)),
    timestamps: new Float64Array(n).fill(1_700_000_000_000),
    tokens: new Uint32Array(n),
    texts: docs.map((d) => d.text),
    metas: docs.map(() => null),
  });
}
