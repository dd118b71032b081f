/**
 * Bench data: N transcript spans of ~100 tokens (~400 characters) each.
 *
 * Real turns first: every `*.jsonl.gz` with a `text` field under ../shared/data/ (or
 * $SPANGUARD_DATA), in file order, each turn cut at whitespace into ~400-character pieces —
 * the issue's "~100 tokens per turn", so 10^4 spans ≈ 10^6 tokens. When the real pieces run
 * out (about 1.3·10^5 here) or there is no data directory, a deterministic generator writes
 * transcript-like turns (prose, shell commands, tool output with numbers, paths,
 * identifiers, config values). `--data gen` forces the generator for every span.
 */
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { packageRoot } from '../src/native.js';
import { rng } from './lib.js';

export interface BenchSpan {
  turn: number;
  role: 'user' | 'assistant' | 'tool';
  text: string;
}

export interface BenchData {
  spans: BenchSpan[];
  real: number;
  generated: number;
  sources: string[];
  chars: number;
}

const PIECE = 400;

function cut(text: string, out: string[]): void {
  let s = 0;
  while (s < text.length) {
    let e = Math.min(text.length, s + PIECE);
    if (e < text.length && text.length - e > PIECE / 4) {
      const ws = text.lastIndexOf(' ', e);
      if (ws > s + PIECE * 0.75) e = ws + 1;
    } else e = text.length;
    out.push(text.slice(s, e));
    s = e;
  }
}

function realFiles(): string[] {
  const dir = process.env.SPANGUARD_DATA ?? path.resolve(packageRoot, '..', 'shared', 'data');
  if (!fs.existsSync(dir)) return [];
  const files: string[] = [];
  for (const d of fs.readdirSync(dir).sort()) {
    const sub = path.join(dir, d);
    if (!fs.statSync(sub).isDirectory()) continue;
    for (const f of fs.readdirSync(sub).sort()) if (f.endsWith('.jsonl.gz')) files.push(path.join(sub, f));
  }
  // miniswe first: the larger, more varied set (500 different repositories).
  return files.sort((a, b) => Number(b.includes('miniswe')) - Number(a.includes('miniswe')));
}

export function loadData(n: number, mode: 'auto' | 'gen' = 'auto'): BenchData {
  const spans: BenchSpan[] = [];
  const stream = streamData(n, mode);
  for (const batch of stream.batches()) for (const s of batch) spans.push(s);
  const { real, generated, sources, chars } = stream.summary();
  return { spans, real, generated, sources, chars };
}

/**
 * The same spans as loadData, in the same order, handed out in batches of `batch` and never
 * held all at once: what the 10^6 ingest reads, so the bench's own copy of the data (~700 MiB
 * of JS strings and objects at 10^6) does not sit in the resident set it measures. The
 * summary counts the batches handed out so far (all of them once `batches()` is done).
 */
export function streamData(n: number, mode: 'auto' | 'gen' = 'auto', batch = 5000): { batches(): Generator<BenchSpan[]>; summary(): Omit<BenchData, 'spans'> } {
  const sources: string[] = [];
  let real = 0;
  let total = 0;
  let chars = 0;
  function* batches(): Generator<BenchSpan[]> {
    let out: BenchSpan[] = [];
    const push = (s: BenchSpan) => {
      out.push(s);
      total++;
      chars += s.text.length;
    };
    if (mode === 'auto') {
      for (const file of realFiles()) {
        if (total >= n) break;
        sources.push(path.relative(path.resolve(packageRoot, '..'), file));
        // Line by line out of the decompressed bytes (a newline byte never occurs inside a
        // UTF-8 character), not one string of the whole file split into an array of lines.
        const bytes = zlib.gunzipSync(fs.readFileSync(file));
        for (let at = 0; at < bytes.length && total < n; ) {
          let nl = bytes.indexOf(10, at);
          if (nl < 0) nl = bytes.length;
          const line = bytes.toString('utf8', at, nl);
          at = nl + 1;
          if (!line) continue;
          const t = JSON.parse(line) as { text?: string; role?: string };
          if (typeof t.text !== 'string' || t.text.length === 0) continue;
          const role = t.role === 'user' ? 'user' : t.role === 'tool' ? 'tool' : 'assistant';
          const pieces: string[] = [];
          cut(t.text, pieces);
          for (const p of pieces) {
            if (total < n && p.isWellFormed()) {
              push({ turn: total + 1, role, text: p });
              real++;
              if (out.length === batch) {
                yield out;
                out = [];
              }
            }
          }
        }
      }
    }
    if (total < n) sources.push('generator');
    const gen = generator(0x5eed + real);
    while (total < n) {
      push({ turn: total + 1, ...gen() });
      if (out.length === batch) {
        yield out;
        out = [];
      }
    }
    if (out.length > 0) yield out;
  }
  return { batches, summary: () => ({ real, generated: total - real, sources: [...sources], chars }) };
}

// ------------------------------------------------------------------ generator

const WORDS =
  'the a of to in and is for that this with on as it be by we from are at or an was not but should will test file function value error call return check config update run build module output request limit server client cache index query result missing case handle fix change add remove line path type list string number default before after because when then so now first next also only still'.split(
    ' ',
  );
const IDENTS = ['parseConfig', 'load_settings', 'RateLimiter', 'retry_after', 'maxConnections', 'user_id', 'SpanStore', 'flush_interval', 'HttpClient', 'token_budget', 'compactWindow', 'embed_batch'];
const DIRS = ['src', 'lib', 'tests', 'pkg', 'internal', 'app', 'core', 'utils', 'api', 'cmd'];
const EXTS = ['.py', '.ts', '.go', '.rs', '.json', '.yaml', '.md'];
const UNITS = ['req/s', 'ms', 'MiB', 'GB', 's', '%', 'tokens', 'rows', 'KB/s', 'threads'];
const ERRORS = ['ECONNRESET', 'ENOENT', 'E0382', 'TypeError', 'KeyError', 'HTTP 429', 'SIGSEGV', 'AssertionError'];

/** Deterministic transcript-like turns; every random choice comes from one seeded PRNG. */
export function generator(seed: number): () => Omit<BenchSpan, 'turn'> {
  const r = rng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
  const int = (lo: number, hi: number) => lo + Math.floor(r() * (hi - lo + 1));
  const word = () => (r() < 0.15 ? `${pick(WORDS)}${int(2, 999)}` : r() < 0.1 ? pick(IDENTS) : pick(WORDS));
  const hex = () => int(0, 0xffffff).toString(16).padStart(6, '0');
  const file = () => `${pick(DIRS)}/${pick(DIRS)}/${pick(IDENTS).replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`).replace(/^_/, '')}_${int(1, 99)}${pick(EXTS)}`;
  const sentence = () => {
    const n = int(8, 18);
    const w = Array.from({ length: n }, word);
    w[0] = w[0]!.charAt(0).toUpperCase() + w[0]!.slice(1);
    return `${w.join(' ')}.`;
  };
  const fill = (parts: string[], target: number, more: () => string) => {
    while (parts.join('\n').length < target) parts.push(more());
    return parts.join('\n').slice(0, target + 40);
  };
  return () => {
    const kind = r();
    const target = int(300, 480);
    if (kind < 0.3) return { role: 'assistant', text: fill([], target, sentence) };
    if (kind < 0.4)
      return {
        role: 'user',
        text: fill([`Please ${pick(WORDS)} ${pick(IDENTS)} in ${file()}: the ${pick(WORDS)} must stay at most ${int(1, 500)} ${pick(UNITS)}.`], target, sentence),
      };
    if (kind < 0.6)
      return {
        role: 'assistant',
        text: fill([`$ ${pick(['grep -rn', 'cat', 'pytest -q', 'sed -n 1,80p', 'ls -la', 'git diff'])} ${file()}`], target, () =>
          r() < 0.5 ? sentence() : `${pick(IDENTS)} = ${int(0, 100000)}  # ${pick(WORDS)} ${pick(WORDS)}`,
        ),
      };
    if (kind < 0.85)
      return {
        role: 'tool',
        text: fill([], target, () => {
          const x = r();
          if (x < 0.3) return `${file()}:${int(1, 2000)}: ${pick(IDENTS)}(${pick(WORDS)}, ${int(0, 4096)})`;
          if (x < 0.5) return `${int(1, 400)} passed, ${int(0, 9)} failed, ${int(0, 20)} skipped in ${(r() * 90).toFixed(2)}s`;
          if (x < 0.65) return `${pick(ERRORS)}: ${pick(WORDS)} ${pick(WORDS)} at ${file()} line ${int(1, 900)} (0x${hex()})`;
          if (x < 0.8) return `${pick(IDENTS)}: ${int(1, 9999)} ${pick(UNITS)}, p99 ${(r() * 50).toFixed(1)} ms, commit ${hex()}${hex()}`;
          return `${pick(WORDS)}_${pick(WORDS)}: ${r() < 0.5 ? int(0, 65535) : `"${pick(WORDS)}-${int(1, 99)}"`}`;
        }),
      };
    return {
      role: 'tool',
      text: fill([`{"${pick(IDENTS)}": ${int(0, 1000)}, "path": "/${file()}", "version": "v${int(0, 9)}.${int(0, 40)}.${int(0, 20)}"}`], target, () =>
        `  "${pick(IDENTS)}": ${r() < 0.5 ? int(0, 99999) : `"${pick(WORDS)} ${pick(WORDS)}"`},`,
      ),
    };
  };
}

// ------------------------------------------------------------------ question sets

/** Words too common to carry a generated question. */
const STOP = new Set('the a an of to in and is for that this with on as it be by we from are at or was were not but should will can has have had you your our its into than then there their them they these those what which when where who how why also only just more most some such any all each other out about over under after before while'.split(' '));
const TEMPLATES: ((w: string[]) => string)[] = [
  (w) => `what did we find out about ${w.join(' ')} earlier in the session?`,
  (w) => `where was ${w[0]} mentioned together with ${w.slice(1).join(' and ')}?`,
  (w) => `can you remind me what happened with ${w.join(', ')} back then`,
  (w) => `which step dealt with ${w.join(' ')} and why did it matter`,
  (w) => `did anyone say anything about ${w.join(' or ')}?`,
];

/**
 * `n` quotes of 60–200 characters cut from texts of at least 220 characters (seeded), each
 * starting at a word when a space lies within its first 20 characters: what an agent quotes
 * back from its transcript.
 */
export function wordQuotes(texts: readonly string[], n: number, r: () => number = rng(7)): string[] {
  const out: string[] = [];
  const long = texts.filter((t) => t.length >= 220);
  while (out.length < n && long.length > 0) {
    const t = long[Math.floor(r() * long.length)]!;
    const len = 60 + Math.floor(r() * 141);
    let s = Math.floor(r() * (t.length - len));
    const ws = t.indexOf(' ', s);
    if (ws >= 0 && ws < s + 20) s = ws + 1;
    const q = t.slice(s, s + len).trim();
    if (q.length >= 60) out.push(q);
  }
  return out;
}

/**
 * Questions shaped like an agent's or a person's (5–20 words), generated from the spans: 2–5
 * content words of one span (letters, digits, _ ; not stop words), shuffled, set in a
 * template. Not substrings: the words come out of order, among words the span lacks.
 */
export function generatedQuestions(texts: string[], n: number, r: () => number): string[] {
  const out: string[] = [];
  for (let guard = 0; out.length < n && guard < n * 50; guard++) {
    const words = [...new Set((texts[Math.floor(r() * texts.length)]!.match(/[\p{L}\p{N}_]{3,}/gu) ?? []).map((w) => w.toLowerCase()).filter((w) => !STOP.has(w)))];
    if (words.length < 4) continue;
    const k = 2 + Math.floor(r() * 4);
    const pick: string[] = [];
    while (pick.length < k) {
      const w = words.splice(Math.floor(r() * words.length), 1)[0];
      if (w === undefined) break;
      pick.push(w);
    }
    const q = TEMPLATES[Math.floor(r() * TEMPLATES.length)]!(pick);
    const len = q.split(/\s+/).length;
    if (len >= 5 && len <= 20) out.push(q);
  }
  return out;
}

/** The natural-questions file (shared/data/natural-questions), questions of 5–20 words. */
export function naturalQuestions(): { question: string; category: string }[] {
  const file = path.join(process.env.SPANGUARD_DATA ?? path.resolve(packageRoot, '..', 'shared', 'data'), 'natural-questions', 'questions.jsonl');
  if (!fs.existsSync(file)) return [];
  return fs
    .readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { question: string; category: string })
    .filter((x) => {
      const w = x.question.split(/\s+/).filter(Boolean).length;
      return w >= 5 && w <= 20;
    });
}

// ------------------------------------------------------------------ topical generator

/**
 * A generated corpus with the structure real text has: sessions are about something. The
 * uniform generator above draws every word from one small vocabulary, so any two of its
 * spans are about equally far apart: the adversarial case for any index that groups rows
 * (a coarse partition, a graph). Here each span is about one of TOPIC_COUNT topics, each
 * with its own vocabulary of TOPIC_VOCAB made-up phrases of 1–3 words (random letters, so
 * two topics share no word by design):
 *   - about 30% of a span's words are common function words (Zipf over COMMON), shared by
 *     every topic;
 *   - of the rest, 90% come from the span's topic, 10% from a second topic drawn for the
 *     span (the way a session strays into a neighbouring subject);
 *   - a topic's phrases are drawn Zipf (exponent TOPIC_ZIPF) over its vocabulary, half of
 *     them from the top of it (what every span of the topic shares), half from one of
 *     SUBTOPICS offsets into it (what the spans of one subtopic share besides);
 *   - topics and subtopics are drawn uniformly.
 * Through the built-in embedder (256 dims, feature hashing), two spans of one subtopic lie
 * at a median cosine similarity of about 0.5, of one topic 0.3, of two topics 0.05 (standard
 * deviation 0.067: the hashing's noise floor at 256 dims). A weaker topic signal (a flatter
 * Zipf, 40% function words) left same-topic pairs inside the noise of 10⁶ others, which is no
 * structure at the top-10. Deterministic: everything comes from the seed.
 */
export const TOPIC_COUNT = 2000;
const TOPIC_VOCAB = 200;
const SUBTOPICS = 8;
/** Zipf exponent of a topic's words: its most frequent phrase is about 38% of its words in a span. */
const TOPIC_ZIPF = 1.5;
const COMMON =
  'the a of to in and is for that this with on as it be by we from are at or was not but should will can has have you our its into than then there their them they these what which when where how why also only just more some any all each other out about over after before while'.split(
    ' ',
  );
const LETTERS = [...'abcdefghijklmnopqrstuvwxyz'];

/** Cumulative Zipf (s = 1) weights over n ranks, normalized to 1. */
function zipfCdf(n: number, exponent = 1): Float64Array {
  const c = new Float64Array(n);
  let s = 0;
  for (let k = 0; k < n; k++) c[k] = s += (k + 1) ** -exponent;
  for (let k = 0; k < n; k++) c[k]! /= s;
  return c;
}
const ZIPF_TOPIC = zipfCdf(TOPIC_VOCAB, TOPIC_ZIPF);
const ZIPF_COMMON = zipfCdf(COMMON.length);

function zipfRank(cdf: Float64Array, u: number): number {
  let lo = 0;
  let hi = cdf.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (cdf[mid]! < u) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

const vocabs = new Map<number, string[]>();
/** Topic t's vocabulary: TOPIC_VOCAB made-up words of 2–4 syllables, from a hash of (t, rank). */
function topicVocab(t: number): string[] {
  let v = vocabs.get(t);
  if (v) return v;
  const r = rng(0x70b1c000 + t * 7919);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
  const word = () => {
    let w = '';
    const n = 4 + Math.floor(r() * 6);
    for (let i = 0; i < n; i++) w += pick(LETTERS);
    return w;
  };
  v = Array.from({ length: TOPIC_VOCAB }, () => Array.from({ length: 1 + Math.floor(r() * 3) }, word).join(' '));
  vocabs.set(t, v);
  return v;
}

/** A word of topic t, subtopic sub: Zipf over the topic's vocabulary from the subtopic's offset. */
function topicWord(t: number, sub: number, u: number): string {
  const v = topicVocab(t);
  if (u < 0.5) return v[zipfRank(ZIPF_TOPIC, 2 * u)]!;
  return v[(zipfRank(ZIPF_TOPIC, 2 * u - 1) + sub * Math.floor(TOPIC_VOCAB / SUBTOPICS)) % TOPIC_VOCAB]!;
}

/** Deterministic topical spans (300–520 characters of sentences); see TOPIC_COUNT. */
export function topicGenerator(seed: number): () => { topic: number; sub: number; text: string } {
  const r = rng(seed);
  const int = (lo: number, hi: number) => lo + Math.floor(r() * (hi - lo + 1));
  return () => {
    const t = int(0, TOPIC_COUNT - 1);
    const sub = int(0, SUBTOPICS - 1);
    const t2 = int(0, TOPIC_COUNT - 1);
    const sub2 = int(0, SUBTOPICS - 1);
    const word = () => {
      if (r() < 0.3) return COMMON[zipfRank(ZIPF_COMMON, r())]!;
      return r() < 0.9 ? topicWord(t, sub, r()) : topicWord(t2, sub2, r());
    };
    const target = int(300, 480);
    let text = '';
    while (text.length < target) {
      const w = Array.from({ length: int(8, 18) }, word);
      w[0] = w[0]!.charAt(0).toUpperCase() + w[0]!.slice(1);
      text += `${text ? ' ' : ''}${w.join(' ')}.`;
    }
    return { topic: t, sub, text: text.slice(0, target + 40) };
  };
}

/**
 * Questions about the topical corpus, shaped like natural ones (5–20 words): 2–5 distinct
 * words of one topic and subtopic (drawn as the spans draw them) set in a template of common
 * words. Not substrings of any span: the topic words come without the span's order or
 * neighbours.
 */
export function topicQuestions(n: number, seed: number): string[] {
  const r = rng(seed);
  const out: string[] = [];
  while (out.length < n) {
    const t = Math.floor(r() * TOPIC_COUNT);
    const sub = Math.floor(r() * SUBTOPICS);
    const k = 2 + Math.floor(r() * 4);
    const words = new Set<string>();
    for (let guard = 0; words.size < k && guard < 50; guard++) words.add(topicWord(t, sub, r()));
    out.push(TEMPLATES[Math.floor(r() * TEMPLATES.length)]!([...words]));
  }
  return out;
}
