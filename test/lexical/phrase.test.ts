// Exact phrase: candidates from the index, verified byte for byte against the raw text.
import { afterAll, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { addDocs, asDocs, memorySource, MINISWE, openIndex, realTurns, rng, tempDir, type Doc, type LexIndex } from './helpers.js';

const tmp = tempDir();
afterAll(() => tmp.cleanup());
let n = 0;
function indexOf(docs: Doc[]): { ix: LexIndex; src: ReturnType<typeof memorySource> } {
  const ix = openIndex(path.join(tmp.dir, `phrase-${n++}.idx`));
  addDocs(ix, docs);
  return { ix, src: memorySource(docs) };
}
const phrase = (ix: LexIndex, src: unknown, p: string, kind = 1, limit = Infinity) =>
  Array.from(ix.phrase(src as never, p, kind, limit));

describe('phrase verified against raw text', () => {
  const docs = asDocs([
    'the rate limit is 40 req/s for the gateway', // 0
    'The Rate Limit is 40 REQ/S for the gateway', // 1: same tokens, different case
    'the rate-limit is 40 req/s for the gateway', // 2: different punctuation
    'the rate limit, is 40 req/s for the gateway', // 3
    'limit rate the is 40 req/s', // 4: same tokens, other order
    'the  rate limit is 40 req/s', // 5: two spaces
  ]);
  it('only byte-exact occurrences are hits (case, punctuation and spacing matter)', () => {
    const { ix, src } = indexOf(docs);
    expect(phrase(ix, src, 'the rate limit is 40')).toEqual([0]);
    expect(phrase(ix, src, 'The Rate Limit')).toEqual([1]);
    expect(phrase(ix, src, 'rate-limit is')).toEqual([2]);
    expect(phrase(ix, src, 'the  rate')).toEqual([5]);
    expect(phrase(ix, src, 'rate limit is 40 req/s')).toEqual([0, 5]);
  });
  it('matches inside words (verbatim substring semantics)', () => {
    const { ix, src } = indexOf(asDocs(['call fooBarBaz(x) now', 'call foo bar baz now', 'reqs 40 req/second']));
    expect(phrase(ix, src, 'oBarB')).toEqual([0]);
    expect(phrase(ix, src, 'BarBaz(x) no')).toEqual([0]);
    expect(phrase(ix, src, 'll fooBar')).toEqual([0]);
    expect(phrase(ix, src, '40 req/s')).toEqual([2]);
    expect(phrase(ix, src, 'o b')).toEqual([1]);
  });
  it('a phrase whose words are all very frequent still works', () => {
    const texts = Array.from({ length: 300 }, (_, i) => (i === 123 ? 'it is the of and to a in' : 'the of and to a in is it'));
    const { ix, src } = indexOf(asDocs(texts));
    expect(phrase(ix, src, 'is the of and')).toEqual([123]);
    expect(phrase(ix, src, ' of and ')).toHaveLength(300);
  });
  it('a phrase with no word characters is answered by an exact scan', () => {
    const { ix, src } = indexOf(asDocs(['a === b', 'a == b', '====', 'x']));
    const before = ix.stats().phraseFallbackScans as number;
    expect(phrase(ix, src, '===')).toEqual([0, 2]);
    expect(phrase(ix, src, ' == ')).toEqual([1]);
    expect(ix.stats().phraseFallbackScans).toBe(before + 2);
  });
  it('respects the limit and the namespace', () => {
    const docs2: Doc[] = [
      { id: 0, kind: 1, text: 'shared phrase here' },
      { id: 1, kind: 2, text: 'shared phrase here' },
      { id: 2, kind: 1, text: 'shared phrase here too' },
    ];
    const { ix, src } = indexOf(docs2);
    expect(phrase(ix, src, 'shared phrase here', 1)).toEqual([0, 2]);
    expect(phrase(ix, src, 'shared phrase here', 2)).toEqual([1]);
    expect(phrase(ix, src, 'shared phrase here', 1, 1)).toEqual([0]);
  });
  it('finds words longer than the 96-byte token cap', () => {
    const blob = 'QmFzZTY0'.repeat(40);
    const { ix, src } = indexOf(asDocs(['key=' + blob + ' end', 'other']));
    expect(phrase(ix, src, blob.slice(150, 200))).toEqual([0]);
    expect(phrase(ix, src, 'key=' + blob.slice(0, 120))).toEqual([0]);
  });
});

describe('phrase oracle on real turns', () => {
  const turns = realTurns(3000);
  const docs = asDocs(turns.map((t) => t.text));
  const { ix, src } = indexOf(docs);
  const brute = (p: string) => docs.filter((d) => d.text.includes(p)).map((d) => d.id);
  it('equals a brute-force substring scan for 400 random substrings (any offsets, mid-word cuts)', () => {
    const rand = rng(42);
    for (let i = 0; i < 400; i++) {
      const text = docs[Math.floor(rand() * docs.length)]!.text;
      if (text.length < 4) continue;
      const len = 2 + Math.floor(rand() * Math.min(80, text.length - 2));
      const start = Math.floor(rand() * (text.length - len));
      const p = text.slice(start, start + len);
      if (p.trim().length === 0 && p.length < 2) continue;
      expect(phrase(ix, src, p), JSON.stringify(p)).toEqual(brute(p));
    }
  });
  it('phraseHas(p, id) is membership in phrase(p), for spans that hold it and spans that do not', () => {
    const rand = rng(7);
    const phrases: string[] = [];
    const ids: number[] = [];
    const want: number[] = [];
    for (let i = 0; i < 300; i++) {
      const own = Math.floor(rand() * docs.length);
      const text = docs[own]!.text;
      if (text.length < 4) continue;
      const len = 2 + Math.floor(rand() * Math.min(80, text.length - 2));
      const start = Math.floor(rand() * (text.length - len));
      const p = text.slice(start, start + len);
      const holders = new Set(brute(p));
      // The span it came from, and a random one (almost always without the phrase).
      for (const id of [own, Math.floor(rand() * docs.length)]) {
        phrases.push(p);
        ids.push(id);
        want.push(holders.has(id) ? 1 : 0);
      }
    }
    expect(want.filter((w) => w === 0).length).toBeGreaterThan(100);
    expect(Array.from(ix.phraseHas(src as never, phrases, Float64Array.from(ids), 1))).toEqual(want);
    // Another namespace, or an id the index does not hold: not returned.
    expect(Array.from(ix.phraseHas(src as never, [phrases[0]!, phrases[0]!], Float64Array.of(ids[0]!, 1e9), 2))).toEqual([0, 0]);
    expect(Array.from(ix.phraseHas(src as never, [phrases[0]!], Float64Array.of(1e9), 1))).toEqual([0]);
  });
  it('returns nothing for perturbed values that were never stated', () => {
    const rand = rng(9);
    let checked = 0;
    for (let i = 0; i < 200 && checked < 50; i++) {
      const text = docs[Math.floor(rand() * docs.length)]!.text;
      const m = /\d+\.\d+s/.exec(text.slice(Math.floor(rand() * text.length)));
      if (!m) continue;
      const perturbed = m[0].replace(/\d(?=[^\d]*$)/, (d) => String((Number(d) + 3) % 10)) + ' zq';
      expect(phrase(ix, src, perturbed)).toEqual(brute(perturbed));
      checked++;
    }
  });
  it('returns the evidence turn for every benchmark answer whose turn is in the slice', () => {
    const questions = readFileSync(path.join(MINISWE, 'questions.jsonl'), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
    const byTurn = new Map(turns.map((t, id) => [t.turn, id]));
    let checked = 0;
    for (const q of questions) {
      const ev = byTurn.get(q.evidence_turns[0]);
      if (ev === undefined) continue;
      const got = phrase(ix, src, q.answer);
      expect(got).toContain(ev);
      expect(got).toEqual(brute(q.answer));
      checked++;
    }
    expect(checked).toBeGreaterThan(5);
  });
});

describe('phrase pruning by partial end words (sorted prefix/suffix term ranges)', () => {
  // "in" is in every doc, so it is a common driver and the end words' affix ranges filter.
  const filler = (i: number) => `step ${i} in stage ${i % 7} in loop`;
  const special = [
    'the ratelimit in modules was hit', // suffix "limit" + prefix "module"
    'a rateLimit in module_x call', // camelCase whole token "ratelimit", snake "module_x"
    'plain limit in module here',
    'limits in module (no match: limits)',
    'limit in mod (no match: mod)',
    'x' + 'Q'.repeat(120) + 'limit in module' + 'Z'.repeat(120) + ' long words past the 96-byte cap',
    'on behalf of the team at the gate',
    'format them at thesis',
  ];
  const texts: string[] = [];
  for (let i = 0; i < 1200; i++) texts.push(i % 150 < special.length ? special[i % 150]! : filler(i));
  let docs = asDocs(texts);
  const ix = openIndex(path.join(tmp.dir, `phrase-affix.idx`));
  addDocs(ix, docs);
  const brute = (p: string) => docs.filter((d) => d.text.includes(p)).map((d) => d.id);
  const cases = [
    'limit in module', 'mit in modu', 'limit in module_', 'ratelimit in modules', 'Limit in module_x',
    'in module', 'limit in', 'at the', 'on be', 'at thes', 'mat them', 'in stage 3 in', 'p 7 in st', 'limit in mod ',
  ];
  it('equals a brute-force substring scan', () => {
    for (const p of cases) expect(phrase(ix, src(), p), p).toEqual(brute(p));
    expect(phrase(ix, src(), 'limit in module').length).toBeGreaterThan(20);
  });
  function src() {
    return memorySource(docs);
  }
  it('finds terms added after the sorted arrays were built (tail scan, then merge)', () => {
    expect(phrase(ix, src(), 'zlimit in modulez')).toEqual([]);
    const more = asDocs(['quotazlimit in modulezed now', 'at theatre in time']).map((d, j) => ({ ...d, id: docs.length + j }));
    addDocs(ix, more);
    docs = docs.concat(more);
    for (const p of ['zlimit in modulez', 'limit in module', 'at thea', 'at the']) expect(phrase(ix, src(), p), p).toEqual(brute(p));
    // Many new terms: past 1/8 of the dictionary, the tail is merged into the sorted arrays.
    const bulk = asDocs(Array.from({ length: 600 }, (_, j) => `w${j}alimit in module${j}b and on bex${j}`)).map((d, j) => ({ ...d, id: docs.length + j }));
    addDocs(ix, bulk);
    docs = docs.concat(bulk);
    for (const p of ['alimit in module3', '7alimit in module', 'on bex59', 'limit in module', 'at the']) {
      expect(phrase(ix, src(), p), p).toEqual(brute(p));
    }
    expect(phrase(ix, src(), 'w599alimit in module599b')).toEqual([docs.length - 1]);
  });
});

describe('phrase of common words: interior words checked one at a time', () => {
  // 5,000 docs, each the same 12 words in a shuffled order: every word is in every doc, and
  // a phrase of several of them is held in order by few docs.
  const words = ['alpha', 'bravo', 'charlie', 'delta', 'echo', 'foxtrot', 'golf', 'hotel', 'india', 'juliet', 'kilo', 'lima'];
  const rand = rng(5);
  const texts = Array.from({ length: 5000 }, (_, i) => {
    const w = [...words];
    for (let j = w.length - 1; j > 0; j--) {
      const k = Math.floor(rand() * (j + 1));
      [w[j], w[k]] = [w[k]!, w[j]!];
    }
    return i === 3210 ? `start ${words.join(' ')} end` : w.join(' ');
  });
  const docs = asDocs(texts);
  const { ix, src } = indexOf(docs);
  const brute = (p: string) => docs.filter((d) => d.text.includes(p)).map((d) => d.id);

  it('equals a brute-force substring scan (whole words, cut words, limits)', () => {
    for (let i = 0; i < 150; i++) {
      const text = texts[Math.floor(rand() * texts.length)]!;
      const start = Math.floor(rand() * (text.length - 12));
      const p = text.slice(start, start + 8 + Math.floor(rand() * Math.min(60, text.length - start - 8)));
      expect(phrase(ix, src, p), JSON.stringify(p)).toEqual(brute(p));
      const limit = 1 + Math.floor(rand() * 5);
      expect(phrase(ix, src, p, 1, limit), JSON.stringify(p)).toEqual(brute(p).slice(0, limit));
    }
    const whole = ` ${words.join(' ')} `;
    expect(phrase(ix, src, whole)).toEqual(brute(whole));
    expect(phrase(ix, src, whole)).toContain(3210);
  });

  it('decodes the commoner words only where the rarer ones line up: well under every posting and position of the words', () => {
    const whole = ` ${words.join(' ')} `;
    const postings = ix.stats().phrasePostingsDecoded as number;
    const positions = ix.stats().phrasePositionsDecoded as number;
    expect(phrase(ix, src, whole)).toEqual(brute(whole));
    // 12 words × 5,000 docs: 60,000 postings and as many positions in their lists. The two
    // rarest words are read at every doc (2 × 5,000 positions); the third word lines up in
    // 1 doc of 12, and the positions of the postings passed on the way are never decoded.
    const all = words.length * texts.length;
    expect((ix.stats().phrasePostingsDecoded as number) - postings).toBeLessThan(all / 2);
    expect((ix.stats().phrasePositionsDecoded as number) - positions).toBeLessThan(2.5 * texts.length);
  });
});

describe('phrase of many interior words: only the rarest are walked, the text decides the rest', () => {
  // 2,000 docs of the same 14 words in the same order: every interior word lines up at every
  // doc. Every 7th doc has its 11th word changed, which only the text (or that word's list)
  // tells apart.
  const words = ['alpha', 'bravo', 'charlie', 'delta', 'echo', 'foxtrot', 'golf', 'hotel', 'india', 'juliet', 'kilo', 'lima', 'mike', 'november'];
  const texts = Array.from({ length: 2000 }, (_, i) => (i % 7 === 3 ? words.map((w, j) => (j === 10 ? 'kiwi' : w)) : words).join(' '));
  const docs = asDocs(texts);
  const { ix, src } = indexOf(docs);
  const brute = (p: string) => docs.filter((d) => d.text.includes(p)).map((d) => d.id);

  it('answers as a brute-force scan, with postings decoded for four words per doc, not twelve', () => {
    const whole = ` ${words.slice(1, 13).join(' ')} `;
    const postings = ix.stats().phrasePostingsDecoded as number;
    const hits = phrase(ix, src, whole);
    expect(hits).toEqual(brute(whole));
    expect(hits).not.toContain(3);
    // 12 interior words × 2,000 docs are in the lists; the four rarest (all as common here)
    // are read at each doc, the other eight left to the text.
    expect((ix.stats().phrasePostingsDecoded as number) - postings).toBeLessThanOrEqual(4 * texts.length);
    expect(phrase(ix, src, whole, 1, 5)).toEqual(brute(whole).slice(0, 5));
  });
});

describe('phraseWithin: a phrase with no word character reads the newest texts within a byte budget', () => {
  // 200 texts of 100 bytes (ASCII); a rule of separators in every 10th.
  const rule = '='.repeat(20);
  const texts = Array.from({ length: 200 }, (_, i) => (i % 10 === 4 ? `| ${rule} |` : `line ${i} of the log`).padEnd(100, '.'));
  const docs = asDocs(texts);
  const { ix, src } = indexOf(docs);
  const brute = (p: string) => docs.filter((d) => d.text.includes(p)).map((d) => d.id);
  const within = (p: string, limit: number, bytes: number) => {
    const r = ix.phraseWithin(src as never, p, 1, limit, bytes);
    return { ids: Array.from(r.ids), complete: r.complete };
  };

  it('stops after the budget, newest first, and says the answer is not complete', () => {
    const p = `| ${rule}`;
    const cut = ix.stats().phraseScansCut as number;
    // 1,000 bytes: the newest 10 texts (190..199), of which 194 holds it.
    expect(within(p, Infinity, 1000)).toEqual({ ids: [194], complete: false });
    // 2,500 bytes: the newest 25 texts (175..199): 184 and 194.
    expect(within(p, Infinity, 2500)).toEqual({ ids: [184, 194], complete: false });
    expect(ix.stats().phraseScansCut).toBe(cut + 2);
    // The limit keeps the newest matches; reaching it is not a cut (the caller asked for no more).
    expect(within(p, 1, 5000)).toEqual({ ids: [194], complete: true });
  });

  it('with a budget as large as the texts, or Infinity, answers as phrase does', () => {
    const p = `${rule} |`;
    expect(within(p, Infinity, 200 * 100)).toEqual({ ids: brute(p), complete: true });
    expect(within(p, Infinity, Infinity)).toEqual({ ids: brute(p), complete: true });
    expect(within(p, 3, Infinity)).toEqual({ ids: brute(p).slice(0, 3), complete: true });
  });

  it('a phrase with a word is answered in full whatever the budget', () => {
    expect(within('line 17 of', Infinity, 0)).toEqual({ ids: [17], complete: true });
  });

  it('rejects a budget that is not a non-negative integer', () => {
    expect(() => ix.phraseWithin(src as never, '===', 1, 10, -1)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    expect(() => ix.phraseWithin(src as never, '===', 1, 10, 1.5)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
  });
});

describe('phraseHas of a phrase with no interior word: the span decides, not the dictionary', () => {
  // 3,000 docs, each with its own term ending in "x" and its own number starting with "1":
  // the affix ranges of `x = 1` hold 3,000 terms each. Some docs say it exactly.
  const texts = Array.from({ length: 3000 }, (_, i) =>
    i % 500 === 7 ? `set idx${i}x = 1${i}.001 * u.m then ZSTATE = 3. Date: 2025-06-23` : `set idx${i}x == 1${i}.5 and ZSTATE=3 max-line-length = ${i}`,
  );
  texts[2999] = 'key=' + 'QmFz'.repeat(600) + ' = 1 end'; // a word past the 1,024-byte window
  const docs = asDocs(texts);
  const { ix, src } = indexOf(docs);
  const brute = (p: string) => docs.filter((d) => d.text.includes(p)).map((d) => d.id);
  const shapes = [
    'x = 1', '7x = 17', 'x == 1', '= 1', 'q2', '.001 * u.m', '1.001 * u', 'E = 3. Da', 'Date: 2025-06-2', '06-23',
    'max-line-length = 8', 'h = 1', '2999x', 'QmFzQmFz = 1', 'z = 1 e', ' = ', 'x = 19',
  ];

  it('equals membership in the brute-force answer, for the spans that hold it and for others', () => {
    const rand = rng(11);
    const phrases: string[] = [];
    const ids: number[] = [];
    const want: number[] = [];
    for (const p of shapes) {
      const holders = brute(p);
      for (const id of [...holders.slice(0, 4), ...Array.from({ length: 4 }, () => Math.floor(rand() * docs.length)), 2999]) {
        phrases.push(p);
        ids.push(id);
        want.push(holders.includes(id) ? 1 : 0);
      }
      expect(phrase(ix, src, p), p).toEqual(holders);
    }
    expect(want.filter((w) => w === 1).length).toBeGreaterThan(30);
    expect(Array.from(ix.phraseHas(src as never, phrases, Float64Array.from(ids), 1))).toEqual(want);
  });

  it('seeks only the words the occurrence touches: a few postings, not the affix ranges of every term', () => {
    const before = ix.stats().phrasePostingsDecoded as number;
    const has = ix.phraseHas(src as never, ['x = 1', 'Date: 2025-06-23', 'ZSTATE = 3.'], Float64Array.of(1007, 2507, 7), 1);
    expect(Array.from(has)).toEqual([1, 1, 1]);
    // Each word seek bisects the skips and decodes at most one block of 64 postings; the
    // affix ranges of "x" and "1" alone hold 6,000 postings.
    expect((ix.stats().phrasePostingsDecoded as number) - before).toBeLessThan(6 * 65);
  });
});
