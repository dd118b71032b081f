// phraseHas over a batch: the phrases' posting lists are read in stages (every cursor
// opened, every block sought, every doc decoded), and phrases without interior words are
// answered on their own in between. The answers are the same as one phrase at a time.
import { afterAll, describe, expect, it } from 'vitest';
import path from 'node:path';
import { addDocs, asDocs, memorySource, openIndex, realTurns, rng, tempDir } from './helpers.js';

const tmp = tempDir();
afterAll(() => tmp.cleanup());

describe('phraseHas batch: staged reads give the answers of one phrase at a time', () => {
  // Long posting lists (every doc says "the value of"), so seeks bisect many skip blocks;
  // a word past the 1,024-byte window in the last doc, so `z = 1 e` falls back to Phrase.
  const texts = Array.from({ length: 4000 }, (_, i) =>
    i % 97 === 5 ? `the value of limit_${i} is ${i}.5 ms and z = 1 end` : `the value of item ${i} is ${i * 3} and the rest of it`,
  );
  texts[3999] = `key=${'QmFz'.repeat(600)} = 1 end`;
  const docs = asDocs(texts);
  const ix = openIndex(path.join(tmp.dir, 'batch.idx'));
  addDocs(ix, docs);
  const src = memorySource(docs);
  const brute = (p: string) => docs.filter((d) => d.text.includes(p)).map((d) => d.id);

  it('interior-word phrases around phrases answered alone (one of them by Phrase itself)', () => {
    const rand = rng(3);
    const phrases: string[] = [];
    const ids: number[] = [];
    const want: number[] = [];
    const ask = (p: string, id: number) => {
      phrases.push(p);
      ids.push(id);
      want.push(brute(p).includes(id) ? 1 : 0);
    };
    for (let i = 0; i < 400; i++) {
      const own = Math.floor(rand() * 3999);
      const text = texts[own]!;
      const start = Math.floor(rand() * (text.length / 2));
      const p = text.slice(start, start + 12 + Math.floor(rand() * 24));
      ask(p, own);
      ask(p, Math.floor(rand() * 4000));
      // Between them, phrases with no interior word, the last one past the window.
      if (i % 5 === 0) ask('z = 1 e', 3999);
      if (i % 7 === 0) ask('= 1 e', own);
    }
    expect(want.filter((w) => w === 1).length).toBeGreaterThan(300);
    expect(want.filter((w) => w === 0).length).toBeGreaterThan(100);
    const batch = Array.from(ix.phraseHas(src as never, phrases, Float64Array.from(ids), 1));
    expect(batch).toEqual(want);
    // One at a time, the same.
    const single = phrases.map((p, j) => ix.phraseHas(src as never, [p], Float64Array.of(ids[j]!), 1)[0]);
    expect(single).toEqual(want);
  });

  it('an empty phrase throws INVALID_ARGUMENT as it would alone, wherever it stands in the batch', () => {
    expect(() => ix.phraseHas(src as never, ['the value of item 3 is', ''], Float64Array.of(3, 3), 1)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    expect(() => ix.phraseHas(src as never, ['', 'the value of item 3 is'], Float64Array.of(3, 3), 1)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
  });
});

describe('phraseHas batch on real turns: the rarest-first seeks of many facts at once', () => {
  const turns = realTurns(3000);
  const docs = asDocs(turns.map((t) => t.text));
  const ix = openIndex(path.join(tmp.dir, 'real.idx'));
  addDocs(ix, docs);
  const src = memorySource(docs);
  it('batches of 5 lines equal the brute-force membership', () => {
    const rand = rng(19);
    for (let b = 0; b < 60; b++) {
      const phrases: string[] = [];
      const ids: number[] = [];
      const want: number[] = [];
      for (let i = 0; i < 5; i++) {
        const own = Math.floor(rand() * docs.length);
        const line = docs[own]!.text.split('\n').find((l) => l.trim().length >= 12)?.trim();
        if (!line) continue;
        const id = rand() < 0.8 ? own : Math.floor(rand() * docs.length);
        phrases.push(line);
        ids.push(id);
        want.push(docs[id]!.text.includes(line) ? 1 : 0);
      }
      expect(Array.from(ix.phraseHas(src as never, phrases, Float64Array.from(ids), 1)), JSON.stringify(phrases)).toEqual(want);
    }
  });
});

describe('phraseHas batch: both the postings and the text must hold the phrase', () => {
  // The index is given one set of texts, the source another: a span whose text says the
  // phrase but whose postings do not (an index that disagrees with the log) is not
  // returned, nor one whose postings line up but whose text does not.
  const indexed = Array.from({ length: 300 }, (_, i) => `the rate limit of node ${i} is ${40 + i} req/s for the gateway`);
  const ix = openIndex(path.join(tmp.dir, 'disagree.idx'));
  addDocs(ix, asDocs(indexed));
  const texts = indexed.map((t, i) => (i % 3 === 0 ? `the rate limit of node ${i + 1} is ${40 + i} req/s for the gateway` : i % 3 === 1 ? t.replace('gateway', 'proxy') : t));
  const src = memorySource(asDocs(texts));
  it('each phrase in a batch is judged by its own span postings and text', () => {
    const phrases: string[] = [];
    const ids: number[] = [];
    const want: number[] = [];
    for (let i = 0; i < 300; i++) {
      // What the source says for span i: its postings hold it only where the texts agree
      // (node i + 1 is a word of the index, at another span).
      phrases.push(`rate limit of node ${i % 3 === 0 ? i + 1 : i} is`);
      ids.push(i);
      want.push(i % 3 === 0 ? 0 : 1);
      // What the index was given: the text holds it only where the texts agree, or where
      // only the gateway word changed and the phrase stops before it.
      phrases.push(`${40 + i} req/s for the gateway`);
      ids.push(i);
      want.push(i % 3 === 1 ? 0 : 1);
    }
    expect(Array.from(ix.phraseHas(src as never, phrases, Float64Array.from(ids), 1))).toEqual(want);
  });
});
