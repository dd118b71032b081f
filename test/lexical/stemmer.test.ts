// Normal forms (tokenizer version 4): the Porter2 stemmer, diacritic folding and
// leading-zero numbers (native/lexical/stemmer.h), then what the index does with them: BM25 looks
// query tokens up by their normal form, which every document was also indexed under, while
// exact phrases stay byte for byte.
//
// Expected stems are the published Snowball English (Porter2) outputs; each was checked by
// hand against the algorithm's rules (the comments name the rule that decides).
import { afterAll, describe, expect, it } from 'vitest';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { addon } from '../../src/native.js';
import { addDocs, asDocs, memorySource, openIndex, openSpanLog, realTurns, rng, tempDir, type LexIndex } from './helpers.js';

const norm = (token: string): string => addon().normalizeTerm(token);
const expectForms = (table: Record<string, string>) => {
  for (const [word, form] of Object.entries(table)) expect(norm(word), word).toBe(form);
};

const tmp = tempDir();
afterAll(() => tmp.cleanup());
let n = 0;
const fresh = (): LexIndex => openIndex(path.join(tmp.dir, `stem-${n++}.idx`));
const ids = (ix: LexIndex, q: string, kind = 1) => Array.from(ix.search(q, 10, kind, NaN, NaN).ids).sort((a, b) => a - b);

describe('Porter2 sample vocabulary', () => {
  it('maps inflected forms to one stem', () => {
    expectForms({
      consign: 'consign', consigned: 'consign', consigning: 'consign', consignment: 'consign',
      consist: 'consist', consisted: 'consist', consistency: 'consist', consistent: 'consist',
      knackeries: 'knackeri', generously: 'generous', generate: 'generat', generation: 'generat',
      caresses: 'caress', ponies: 'poni', ties: 'tie', cats: 'cat', cried: 'cri',
      agreed: 'agre', feed: 'feed', plastered: 'plaster',
      hopping: 'hop', hoping: 'hope', filing: 'file', running: 'run',
      enjoying: 'enjoy', enjoyed: 'enjoy', enjoys: 'enjoy', enjoy: 'enjoy',
      enforces: 'enforc', enforce: 'enforc', happily: 'happili',
    });
  });
});

describe('Porter2 exception1', () => {
  it('special forms and invariants are whole-word lookups', () => {
    expectForms({
      skis: 'ski', skies: 'sky', dying: 'die', lying: 'lie', tying: 'tie',
      idly: 'idl', gently: 'gentl', ugly: 'ugli', early: 'earli', only: 'onli', singly: 'singl',
      sky: 'sky', news: 'news', howe: 'howe', atlas: 'atlas', cosmos: 'cosmos', bias: 'bias', andes: 'andes',
    });
  });
});

describe('Porter2 exception2', () => {
  it('words left as they are after step 1a', () => {
    expectForms({
      inning: 'inning', innings: 'inning', outing: 'outing', canning: 'canning', herring: 'herring',
      earring: 'earring', proceed: 'proceed', exceed: 'exceed', succeed: 'succeed',
    });
  });
});

describe('Porter2 y marking and regions', () => {
  it('a y after a vowel is a consonant; gener/commun/arsen fix R1', () => {
    // enjoYing: the Y is no vowel, so step 1c leaves it; say-ing keeps "say".
    expectForms({ saying: 'say', sayings: 'say', yelling: 'yell', yes: 'yes' });
    // R1 after the prefix: "generous" keeps its "ous" (step 4 needs R2 = "ly" only).
    expectForms({ community: 'communiti', arsenal: 'arsenal', generosity: 'generos' });
  });
});

describe('Porter2 steps 1a 1b 1c', () => {
  it('s deletion needs a vowel before the letter preceding the s', () => {
    expectForms({ gas: 'gas', gaps: 'gap', kiwis: 'kiwi', this: 'this', tests: 'test' });
  });
  it('eed in R1 only; ed/ing restore e after at/bl/iz and short words', () => {
    expectForms({ luxuriated: 'luxuri', luxuriating: 'luxuri', succeeded: 'succeed' });
  });
  it('y → i after a consonant that is not the first letter', () => {
    expectForms({ cry: 'cri', say: 'say', by: 'by' });
  });
});

describe('Porter2 steps 2 3 4 5', () => {
  it('step 2 suffixes in R1', () => {
    expectForms({
      relational: 'relat', conditional: 'condit', rational: 'ration', valency: 'valenc', digitizer: 'digit',
      conformably: 'conform', radically: 'radic', differently: 'differ', analogously: 'analog',
      vietnamization: 'vietnam', predication: 'predic', operator: 'oper', feudalism: 'feudal',
      decisiveness: 'decis', hopefulness: 'hope', callousness: 'callous', formality: 'formal',
      sensitivity: 'sensit', sensibility: 'sensibl', fruitfully: 'fruit', fruitlessly: 'fruitless',
    });
  });
  it('step 3 suffixes in R1 (ative in R2)', () => {
    expectForms({ electrical: 'electr', electricity: 'electr', hopeful: 'hope', goodness: 'good', triplicate: 'triplic', formative: 'format', formalize: 'formal' });
  });
  it('step 4 suffixes in R2 (ion after s or t); the longest suffix decides', () => {
    expectForms({
      revival: 'reviv', allowance: 'allow', inference: 'infer', airliner: 'airlin', gyroscopic: 'gyroscop',
      adjustable: 'adjust', defensible: 'defens', irritant: 'irrit', replacement: 'replac', adjustment: 'adjust',
      dependent: 'depend', adoption: 'adopt', communism: 'communism', activate: 'activ', angularity: 'angular',
      homologous: 'homolog', effective: 'effect', bowdlerize: 'bowdler',
      // "ement" is the longest suffix and lies outside R2: nothing is removed (no fallback to "ment").
      agreement: 'agreement',
    });
  });
  it('step 5: e and ll', () => {
    expectForms({ controll: 'control', roll: 'roll', creme: 'creme', aeroplane: 'aeroplan', resume: 'resum' });
  });
});

describe('short words and non-letter tokens', () => {
  it('words of one or two letters are unchanged', () => {
    expectForms({ a: 'a', is: 'is', as: 'as', by: 'by', us: 'us' });
  });
  it('a token with anything besides a–z is not stemmed', () => {
    expectForms({
      foo_bar: 'foo_bar', e0425: 'e0425', '3.5ms': '3.5ms', x86: 'x86', '0x1f': '0x1f', 'v2.26.2': 'v2.26.2',
      'std::vector': 'std::vector', Running: 'Running', москва: 'москва', σοφία: 'σοφία', 日本語: '日本語', '': '',
    });
  });
});

describe('diacritic folding', () => {
  it('Latin-1 letters fold to their base letters, then the word is stemmed', () => {
    expectForms({
      café: 'cafe', cafés: 'cafe', naïve: 'naiv', señor: 'senor', über: 'uber', façade: 'facad',
      straße: 'strass', æon: 'aeon', smørrebrød: 'smorrebrod', ålesund: 'alesund', crème: 'creme', þorn: 'thorn',
    });
  });
  it('Latin Extended-A letters fold too', () => {
    expectForms({ łódź: 'lodz', œuvre: 'oeuvr', gdańsk: 'gdansk', čeština: 'cestina', ĳssel: 'ijssel', ğ: 'g' });
  });
  it('a folded token that is not all letters is folded but not stemmed', () => {
    expectForms({ café_crèmes: 'cafe_cremes', 'naïve.py': 'naive.py' });
  });
  it('other scripts and symbols are left alone', () => {
    expectForms({ 'x×y': 'x×y', ǆ: 'ǆ', ελλάδα: 'ελλάδα' });
  });
});

describe('leading zeros', () => {
  it('digits-only tokens lose their leading zeros', () => {
    expectForms({ '012': '12', '007': '7', '05': '5', '0': '0', '000': '0', '100': '100', '2024': '2024', '0100': '100' });
  });
  it('other number shapes are untouched', () => {
    expectForms({ '0.5': '0.5', '012ms': '012ms', '0x0f': '0x0f', '3.50': '3.50' });
  });
});

describe('BM25 looks up normal forms', () => {
  it('enjoying finds a doc that says enjoyed, enforce one that says enforces', () => {
    const ix = fresh();
    addDocs(ix, asDocs(['we enjoyed the trip', 'the policy enforces limits', 'nothing related here']));
    expect(ids(ix, 'enjoying')).toEqual([0]);
    expect(ids(ix, 'enjoys')).toEqual([0]);
    expect(ids(ix, 'enforce')).toEqual([1]);
    expect(ids(ix, 'ENFORCING rules')).toEqual([1]);
  });
  it('cafe finds Café, and café finds cafe', () => {
    const ix = fresh();
    addDocs(ix, asDocs(['Meet at the Café at noon', 'the cafe is closed', 'a tea house']));
    expect(ids(ix, 'cafe')).toEqual([0, 1]);
    expect(ids(ix, 'CAFÉ')).toEqual([0, 1]);
  });
  it('day 12 finds the record whose metadata names day-012.md', async () => {
    const { dir, cleanup } = tempDir();
    try {
      const log = openSpanLog(dir);
      const texts = ['notes of the morning', 'notes of the evening'];
      const first = await log.append({
        kinds: Uint8Array.from([1, 1]),
        flags: new Uint8Array(2),
        roles: new Uint8Array(2).fill(2),
        turnStart: Float64Array.from([0, 1]),
        turnEnd: Float64Array.from([0, 1]),
        timestamps: new Float64Array(2).fill(1_700_000_000_000),
        tokens: new Uint32Array(2),
        texts,
        metas: [JSON.stringify({ file: 'notes/day-011.md' }), JSON.stringify({ file: 'notes/day-012.md' })],
      });
      const ix = openIndex(path.join(dir, 'lexical.idx'));
      expect(ix.catchUp(log)).toBe(2);
      expect(ids(ix, 'day 12')).toContain(first + 1);
      expect(ix.search('day 12', 1, 1, NaN, NaN).ids[0]).toBe(first + 1);
      expect(ids(ix, '012')).toEqual([first + 1]);
      await log.close();
    } finally {
      cleanup();
    }
  });
  it('document length stays the token count (normal forms are not counted)', () => {
    const ix = fresh();
    const texts = ['we enjoyed the trip to the Café', 'running 007 races', 'plain text'];
    addDocs(ix, asDocs(texts));
    const tokens = texts.reduce((s, t) => s + ix.tokenize(t).length, 0);
    expect(ix.stats().rawTokens).toBe(tokens);
  });
  it('a doc holding the stem, the word and another inflection counts each occurrence once', () => {
    const ix = fresh();
    // Doc 0 has three occurrences of the "enjoy" form, doc 1 one: doc 0 ranks first.
    addDocs(ix, asDocs(['enjoy enjoyed enjoying', 'enjoy it and more words here', 'unrelated']));
    expect(Array.from(ix.search('enjoy', 10, 1, NaN, NaN).ids)).toEqual([0, 1]);
  });
});

describe('BM25 with normal forms equals exhaustive scoring', () => {
  // The index's model, the slow way: a document holds its tokens plus each token's differing
  // normal form (its length is the token count); a query is its tokens' normal forms.
  it('top-k ids and scores for 60 real queries over 1,500 real turns', () => {
    const texts = realTurns(1500).map((t) => t.text);
    const ix = fresh();
    addDocs(ix, asDocs(texts));
    const cache = new Map<string, string>();
    const form = (t: string) => {
      let f = cache.get(t);
      if (f === undefined) cache.set(t, (f = norm(t)));
      return f;
    };
    const lens: number[] = [];
    const tfs = texts.map((text) => {
      const tokens = ix.tokenize(text);
      lens.push(tokens.length);
      const tf = new Map<string, number>();
      for (const t of tokens) {
        tf.set(t, (tf.get(t) ?? 0) + 1);
        const f = form(t);
        if (f !== t) tf.set(f, (tf.get(f) ?? 0) + 1);
      }
      return tf;
    });
    const df = new Map<string, number>();
    for (const tf of tfs) for (const t of tf.keys()) df.set(t, (df.get(t) ?? 0) + 1);
    const avgdl = lens.reduce((a, b) => a + b, 0) / texts.length;
    const rand = rng(7);
    const queries = ['enjoying the results', 'running tests failed', 'Café 012 naïve', 'the'];
    while (queries.length < 60) {
      const words = texts[Math.floor(rand() * texts.length)]!.split(/\s+/).filter(Boolean);
      const start = Math.floor(rand() * Math.max(1, words.length - 12));
      queries.push(words.slice(start, start + 2 + Math.floor(rand() * 12)).join(' '));
    }
    const ks = [1, 3, 10, 50];
    queries.forEach((q, qi) => {
      const k = ks[qi % ks.length]!;
      const terms = [...new Set(ix.tokenize(q).map(form))].filter((t) => df.has(t));
      const want: { id: number; score: number }[] = [];
      tfs.forEach((tf, id) => {
        let s = 0;
        let any = false;
        for (const t of terms) {
          const f = tf.get(t);
          if (!f) continue;
          any = true;
          const d = df.get(t)!;
          s += (Math.log(1 + (texts.length - d + 0.5) / (d + 0.5)) * f * 2.2) / (f + 1.2 * (0.25 + (0.75 * lens[id]!) / avgdl));
        }
        if (any) want.push({ id, score: s });
      });
      want.sort((a, b) => b.score - a.score || a.id - b.id);
      want.splice(k);
      const got = ix.search(q, k, 1, NaN, NaN);
      expect(got.ids.length, q).toBe(want.length);
      for (let i = 0; i < want.length; i++) {
        expect(got.scores[i], q).toBeCloseTo(want[i]!.score, 3);
        const tie = (j: number) => j >= 0 && j < want.length && Math.abs(want[i]!.score - want[j]!.score) < 1e-4;
        if (!tie(i - 1) && !tie(i + 1)) expect(got.ids[i], q).toBe(want[i]!.id);
      }
    });
  });
});

describe('phrase path is byte-exact', () => {
  const docs = asDocs(['we enjoyed the trip', 'we are enjoying the trip', 'Meet at the Café', 'file day-012.md and day 12']);
  const ix = fresh();
  addDocs(ix, docs);
  const src = memorySource(docs);
  const phrase = (p: string) => Array.from(ix.phrase(src as never, p, 1, Infinity));
  it('a phrase finds only the texts that contain it byte for byte', () => {
    expect(phrase('enjoying')).toEqual([1]);
    expect(phrase('enjoyed')).toEqual([0]);
    expect(phrase('we enjoying the')).toEqual([]);
    expect(phrase('are enjoying the trip')).toEqual([1]);
    expect(phrase('cafe')).toEqual([]);
    expect(phrase('the Café')).toEqual([2]);
    expect(phrase('day 12')).toEqual([3]);
    expect(phrase('day-12')).toEqual([]);
  });
  it('phraseHas answers the same', () => {
    const has = ix.phraseHas(src as never, ['we enjoying the', 'are enjoying the trip', 'at the cafe', 'at the Café'], Float64Array.from([0, 1, 2, 2]), 1);
    expect(Array.from(has)).toEqual([0, 1, 0, 1]);
  });
});

// CRC32C, to forge a header whose checksum is right.
function crc32c(bytes: Uint8Array): number {
  let c = 0xffffffff;
  for (const b of bytes) {
    c ^= b;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1;
  }
  return (c ^ 0xffffffff) >>> 0;
}

describe('tokenizer version 4', () => {
  it('is stored in the file; a version 3 file is rejected and rebuilt from the log with normal forms', async () => {
    const { dir, cleanup } = tempDir();
    try {
      const log = openSpanLog(dir);
      const texts = ['we enjoyed the trip', 'the cafe is closed'];
      const first = await log.append({
        kinds: Uint8Array.from([1, 1]),
        flags: new Uint8Array(2),
        roles: new Uint8Array(2).fill(2),
        turnStart: Float64Array.from([0, 1]),
        turnEnd: Float64Array.from([0, 1]),
        timestamps: new Float64Array(2).fill(1_700_000_000_000),
        tokens: new Uint32Array(2),
        texts,
        metas: [null, null],
      });
      const file = path.join(dir, 'lexical.idx');
      const ix = openIndex(file);
      ix.catchUp(log);
      expect(ix.stats().tokenizerVersion).toBe(4);
      ix.save();
      const bytes = readFileSync(file);
      expect(bytes.readUInt32LE(36)).toBe(4);
      expect(openIndex(file).stats().loadedFrom).toBe('file');
      // The same file, marked as written by tokenizer version 3 (valid header checksum).
      bytes.writeUInt32LE(3, 36);
      bytes.writeUInt32LE(crc32c(bytes.subarray(0, 60)), 60);
      writeFileSync(file, bytes);
      const reopened = openIndex(file);
      const s = reopened.stats();
      expect(s.loadedFrom).toBe('rebuilt');
      expect(String(s.loadError)).toMatch(/tokenizer version 3/);
      expect(reopened.highWater()).toBe(0);
      expect(reopened.catchUp(log)).toBe(2);
      expect(ids(reopened, 'enjoying')).toEqual([first]);
      expect(ids(reopened, 'Café')).toEqual([first + 1]);
      await log.close();
    } finally {
      cleanup();
    }
  });
});
