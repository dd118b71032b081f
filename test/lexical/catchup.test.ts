// catchUp against the real SpanLog: idempotent, incremental, resumes from a saved file,
// rebuilds from a rejected one, and refuses an index that is ahead of its log.
import { afterAll, describe, expect, it } from 'vitest';
import { writeFileSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { addDocs, appendToLog, openIndex, openSpanLog, realTurns, tempDir, type Doc, type LexIndex } from './helpers.js';
import type { NativeSpanLog } from '../../src/native.js';

const tmp = tempDir();
afterAll(() => tmp.cleanup());
let n = 0;
const dirFor = (tag: string) => path.join(tmp.dir, `${tag}-${n++}`);

// 600 real turns with a summary every 100 turns and an event every 50.
function transcript(from: number, count: number): Omit<Doc, 'id'>[] {
  const turns = realTurns(from + count).slice(from);
  const out: Omit<Doc, 'id'>[] = [];
  turns.forEach((t, i) => {
    out.push({ kind: 1, turnStart: t.turn, turnEnd: t.turn, text: t.text });
    if ((from + i) % 50 === 49) out.push({ kind: 3, turnStart: t.turn, turnEnd: t.turn, text: '{"event":"audit"}' });
    if ((from + i) % 100 === 99) out.push({ kind: 2, turnStart: t.turn - 99, turnEnd: t.turn, text: `summary of turns up to ${t.turn}: ran pytest, fixed separability_matrix` });
  });
  return out;
}

function answers(ix: LexIndex, log: NativeSpanLog) {
  return {
    search: ['separability_matrix nested CompoundModels', 'pytest failed passed', 'summary pytest'].flatMap((q) => [
      Array.from(ix.search(q, 10, 1, NaN, NaN).ids),
      Array.from(ix.search(q, 10, 2, NaN, NaN).ids),
      Array.from(ix.search(q, 10, 1, 100, 200).ids),
    ]),
    phrase: ['separability_matrix(', 'ran pytest, fixed', 'cd /testbed && '].flatMap((p) => [
      Array.from(ix.phrase(log, p, 1, Infinity)),
      Array.from(ix.phrase(log, p, 2, Infinity)),
    ]),
  };
}

describe('catchUp idempotent and incremental', () => {
  it('indexes raw and summary records, skips events, and reaches the log end', async () => {
    const log = openSpanLog(dirFor('log'));
    const docs = transcript(0, 600);
    await appendToLog(log, docs);
    const ix = openIndex(path.join(tmp.dir, `ix-${n++}.idx`));
    expect(ix.catchUp(log)).toBe(docs.filter((d) => d.kind !== 3).length);
    expect(ix.highWater()).toBe(log.nextId());
    const s = ix.stats();
    expect(s.rawDocs).toBe(600);
    expect(s.summaryDocs).toBe(6);
    // Ids are the log's: every hit reads back from the log as the right kind.
    for (const id of ix.search('pytest', 10, 2, NaN, NaN).ids) expect(log.get(id)?.kind).toBe(2);
    for (const id of ix.search('pytest', 10, 1, NaN, NaN).ids) expect(log.get(id)?.kind).toBe(1);
    await log.close();
  });
  it('a second catchUp does nothing; appends are picked up incrementally with the same answers as one pass', async () => {
    const log = openSpanLog(dirFor('log'));
    const ix = openIndex(path.join(tmp.dir, `ix-${n++}.idx`));
    await appendToLog(log, transcript(0, 250));
    const first = ix.catchUp(log);
    const stats = ix.stats();
    expect(ix.catchUp(log)).toBe(0);
    expect(ix.stats()).toEqual(stats);
    await appendToLog(log, transcript(250, 350));
    const second = ix.catchUp(log);
    expect(ix.catchUp(log)).toBe(0);
    const once = openIndex(path.join(tmp.dir, `ix-${n++}.idx`));
    expect(once.catchUp(log)).toBe(first + second);
    expect(answers(ix, log)).toEqual(answers(once, log));
    await log.close();
  });
  it('resumes from a saved file: only records past its high water are indexed', async () => {
    const log = openSpanLog(dirFor('log'));
    const file = path.join(tmp.dir, `ix-${n++}.idx`);
    await appendToLog(log, transcript(0, 300));
    const ix = openIndex(file);
    ix.catchUp(log);
    ix.save();
    const savedHigh = ix.highWater();
    await appendToLog(log, transcript(300, 300));
    const reopened = openIndex(file);
    expect(reopened.stats().loadedFrom).toBe('file');
    expect(reopened.highWater()).toBe(savedHigh);
    const added = reopened.catchUp(log);
    expect(added).toBe(transcript(300, 300).filter((d) => d.kind !== 3).length);
    const fresh = openIndex(path.join(tmp.dir, `ix-${n++}.idx`));
    fresh.catchUp(log);
    expect(answers(reopened, log)).toEqual(answers(fresh, log));
    await log.close();
  });
  it('a rejected file is rebuilt from the whole log', async () => {
    const log = openSpanLog(dirFor('log'));
    const file = path.join(tmp.dir, `ix-${n++}.idx`);
    await appendToLog(log, transcript(0, 200));
    const ix = openIndex(file);
    ix.catchUp(log);
    const want = answers(ix, log);
    ix.save();
    const bytes = readFileSync(file);
    bytes[bytes.length - 3]! ^= 0x10;
    writeFileSync(file, bytes);
    const again = openIndex(file);
    expect(again.stats().loadedFrom).toBe('rebuilt');
    expect(again.highWater()).toBe(0);
    expect(again.catchUp(log)).toBe(transcript(0, 200).filter((d) => d.kind !== 3).length);
    expect(answers(again, log)).toEqual(want);
    await log.close();
  });
  it('phrase verifies against the log text (a token match with different bytes is not a hit)', async () => {
    const log = openSpanLog(dirFor('log'));
    const first = await appendToLog(log, [
      { text: 'rate limit 40 req/s on the gateway' },
      { text: 'Rate-Limit: 40 req/s on the gateway' },
      { kind: 2, text: 'rate limit 40 req/s (summary)' },
    ]);
    const ix = openIndex(path.join(tmp.dir, `ix-${n++}.idx`));
    ix.catchUp(log);
    expect(Array.from(ix.phrase(log, 'rate limit 40 req/s', 1, Infinity))).toEqual([first]);
    expect(Array.from(ix.phrase(log, '40 req/s on the', 1, Infinity))).toEqual([first, first + 1]);
    expect(Array.from(ix.phrase(log, 'rate limit 40 req/s', 2, Infinity))).toEqual([first + 2]);
    await log.close();
  });
  it('an index ahead of its log is CORRUPT, and a closed log is CLOSED', async () => {
    const log = openSpanLog(dirFor('log'));
    await appendToLog(log, [{ text: 'one' }, { text: 'two' }]);
    const ix = openIndex(path.join(tmp.dir, `ix-${n++}.idx`));
    addDocs(ix, [{ id: 1, text: 'one' }, { id: 2, text: 'two' }, { id: 9, text: 'from another log' }]);
    expect(() => ix.catchUp(log)).toThrow(expect.objectContaining({ code: 'CORRUPT' }));
    await log.close();
    const other = openIndex(path.join(tmp.dir, `ix-${n++}.idx`));
    expect(() => other.catchUp(log)).toThrow(expect.objectContaining({ code: 'CLOSED' }));
  });
});
