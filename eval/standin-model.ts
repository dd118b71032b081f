/**
 * A stand-in for a host's embedding model, for measuring what the hybrid gains when the
 * host plugs one in (`SpanStore.open(dir, { embedder, dims })`). Nothing may be downloaded
 * here, so it is a model fitted on the transcript itself: random indexing, a distributional
 * model in which a word's vector is the sum of the random signatures of the words around
 * it, so words used in the same contexts ("wide" / "length", "notebook" / "laptop") get
 * similar vectors. A text's vector is the idf-weighted sum of its words' context vectors.
 *
 * It is not a transformer and says nothing about how much a real model gains; it shows the
 * plumbing (batched calls, dims, rebuild without re-embedding) and the direction.
 */
const STOP = new Set(
  'the and for that this with you are was were have has had not but from they his her she him our out can all any what when where which who how why did does its into than then them there these those would could should will been being about your just also more most some such only other over very'.split(
    ' ',
  ),
);

const words = (text: string) => (text.toLowerCase().match(/[a-z][a-z0-9_]{2,}/g) ?? []).filter((w) => !STOP.has(w));

function hash32(s: string, seed: number): number {
  let h = seed ^ 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

export interface StandInModel {
  dims: number;
  embed(texts: string[]): Promise<Float32Array[]>;
  /** Calls made and texts embedded: a host model is called in batches. */
  calls: { batches: number; texts: number };
}

/** Fits the stand-in on `corpus` (the texts the store will hold). */
export function fitStandInModel(corpus: readonly string[], dims = 256, window = 4, nonzeros = 8): StandInModel {
  const index = new Map<string, Int32Array>(); // word -> nonzero slots, sign in the high bit
  const sig = (w: string) => {
    let s = index.get(w);
    if (!s) {
      s = new Int32Array(nonzeros);
      for (let i = 0; i < nonzeros; i++) {
        const h = hash32(w, i + 1);
        s[i] = (h % dims) | (h & 0x80000000 ? 0x40000000 : 0);
      }
      index.set(w, s);
    }
    return s;
  };
  const context = new Map<string, Float32Array>();
  const df = new Map<string, number>();
  for (const text of corpus) {
    const ws = words(text.length > 20_000 ? text.slice(0, 20_000) : text);
    for (const w of new Set(ws)) df.set(w, (df.get(w) ?? 0) + 1);
    for (let i = 0; i < ws.length; i++) {
      let v = context.get(ws[i]!);
      if (!v) context.set(ws[i]!, (v = new Float32Array(dims)));
      for (let j = Math.max(0, i - window); j <= Math.min(ws.length - 1, i + window); j++) {
        if (j === i) continue;
        for (const slot of sig(ws[j]!)) v[slot & 0xffff]! += slot & 0x40000000 ? -1 : 1;
      }
    }
  }
  const n = corpus.length;
  for (const v of context.values()) {
    let norm = 0;
    for (const x of v) norm += x * x;
    norm = Math.sqrt(norm) || 1;
    for (let i = 0; i < dims; i++) v[i]! /= norm;
  }
  const calls = { batches: 0, texts: 0 };
  const embedOne = (text: string) => {
    const out = new Float32Array(dims);
    for (const w of words(text.length > 20_000 ? text.slice(0, 20_000) : text)) {
      const idf = Math.log(1 + n / (1 + (df.get(w) ?? 0)));
      const v = context.get(w);
      if (v) for (let i = 0; i < dims; i++) out[i]! += idf * v[i]!;
      else for (const slot of sig(w)) out[slot & 0xffff]! += (slot & 0x40000000 ? -1 : 1) * idf;
    }
    let norm = 0;
    for (const x of out) norm += x * x;
    if (norm === 0) out[0] = 1;
    else {
      norm = Math.sqrt(norm);
      for (let i = 0; i < dims; i++) out[i]! /= norm;
    }
    return out;
  };
  return {
    dims,
    calls,
    async embed(texts: string[]) {
      calls.batches++;
      calls.texts += texts.length;
      return texts.map(embedOne);
    },
  };
}
