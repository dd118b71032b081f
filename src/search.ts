/**
 * Search: recall first, judge second.
 *
 * 1. Candidates. The whole query verbatim and its quoted parts (the exact-phrase path,
 *    byte-exact against the raw text), BM25 over the query's content terms (normal forms:
 *    stems, folded diacritics; text and metadata), the same BM25 limited to the turns of a
 *    time the query names, and the vector path. Fused by reciprocal rank.
 *    BM25's first candidate is always judged (its support may lift it where the fusion did not).
 * 2. Support. The best fused candidates are read and each gets a `Support` record
 *    (src/support.ts): terms, values, names, who said it, when. Support reranks them: a
 *    span holding the query's claim, its names, the attributed party and the named time
 *    rises above one that only shares words.
 * 3. The miss decision (src/support.ts) from the query's specific content; a query that is
 *    not a miss returns its best evidence even when its words differ from it.
 */
import { RecordKind, type NativeLexicalIndex, type NativeSpanLog, type NativeVectorIndex } from './native.js';
import { ErrorCode, SpanguardError } from './errors.js';
import { analyzeQuery, isQuestion, parseParty, type QueryAnalysis } from './query.js';
import { decideMiss, FRAME_TURNS, settleCutQuote, spanIsToolOutput, supportOf, type MissDecision, type Support } from './support.js';
import { letLoopRun, loopRan, sliceDue } from './catchup.js';
import { askedOutsideScope } from './scope.js';
import { toSpan } from './store/spans.js';
import type { Hit, SearchOptions, SearchResult, Span } from './store/types.js';
import type { VerdictState } from './verdict.js';
import type { GuardEvent } from './events.js';
import type { MatchPolicy } from './match.js';

/** What search needs of a store: its log and indexes, the verdict, and a way to record a degradation. */
export interface SearchContext {
  log: NativeSpanLog;
  lexical: NativeLexicalIndex;
  vector: NativeVectorIndex;
  embedQuery(texts: string[]): Promise<Float32Array>;
  verdictState(): VerdictState;
  superseded: ReadonlySet<number>;
  /** Summaries with values nothing they replaced states (grounding `mark`). */
  ungrounded: ReadonlyMap<number, readonly string[]>;
  passes: number;
  readOnly: boolean;
  recordEvent(e: GuardEvent): Promise<number>;
  matchPolicy: MatchPolicy;
  /**
   * Told of each index read a search runs off this thread (on the addon's read lane or the
   * thread pool), as it starts: the store holds a close, a repair's index swap and a release until it settles (an
   * index being read cannot be released). Without it the reads are not tracked.
   */
  poolRead?: <T>(read: Promise<T>) => Promise<T>;
  /** Postings up to which a BM25 lookup runs on this thread (default SYNC_BM25_POSTINGS). */
  syncPostings?: number;
  /** Vectors up to which a vector search the read lane has not started runs on this thread (default STEAL_VECTOR_ROWS). */
  stealVectorRows?: number;
  /** How long this thread waits, without sleeping, for the read lane's vector search, in µs (default TAKE_SPIN_MICROS). */
  takeSpinMicros?: number;
}

/** Hits `ContextWindow.recall` asks for by default; audits and anchor probes check this very call. */
export const RECALL_K = 5;

/** Longest query accepted, in characters; cost is linear in it. */
export const MAX_QUERY_CHARS = 16_384;

/**
 * Words of a query that are analyzed (content terms, values, names, quoted parts): the rest of
 * a longer query is still matched verbatim by the exact-phrase path and embedded whole, but
 * adds no term to BM25 or to support. Each analyzed term costs a pattern and a test per
 * candidate, so this bound keeps a query's cost linear in its length and small.
 */
export const MAX_QUERY_WORDS = 256;
const QUERY_WORD = /[\p{L}\p{N}]+/gu;

/** The query up to the end of its MAX_QUERY_WORDS-th word (the whole query when shorter). */
export function analyzedPart(query: string): string {
  let n = 0;
  for (const m of query.matchAll(QUERY_WORD)) if (++n === MAX_QUERY_WORDS) return query.slice(0, m.index! + m[0].length);
  return query;
}

/**
 * Bytes of text the exact-phrase path reads, per kind, for a query the index cannot narrow (no
 * word character at all: a rule of box drawing, `|  |`), newest spans first. Such a query
 * would otherwise be checked against every stored text (≈ 400 MB at 10^6 spans, a second);
 * past the budget the search says so (`exactPartial`), and `findExact` still reads them all.
 */
export const EXACT_SCAN_BYTES = 4 << 20;

/**
 * Postings (the documents a BM25 query's terms hold, summed over the terms query-term
 * selection keeps) up to which the lookup runs on the JS thread rather than as a pool job.
 * The sum bounds the walk before it starts; a job costs a hand-over to a pool thread and
 * a turn of the loop back (tens to hundreds of microseconds on a busy machine), which is more
 * than a walk this short: on the 10^5-span real-turn store, most natural questions and quotes
 * stay under it; a sentence of common words at 10^6 does not, and goes to the pool.
 */
export const SYNC_BM25_POSTINGS = 1 << 16;

/**
 * Vectors in a namespace up to which a vector search the read lane has not started by the
 * time the search needs it runs on the JS thread instead (NativeVectorIndex `searchTake`): a
 * lane thread's wake can cost more than the scan of a namespace this small (about 3 ms of
 * scan at 10^6 rows, well inside a slice of the loop).
 */
export const STEAL_VECTOR_ROWS = 1 << 20;
/**
 * How long the JS thread waits, without sleeping, for a vector search the read lane is running
 * when the search needs its hits, in microseconds: a thread that sleeps on the lane's
 * completion pays its wake (tens of microseconds, more on a virtual machine) on top.
 */
export const TAKE_SPIN_MICROS = 300;

/** Weight of the vector path in the fusion (lexical: 1). */
const VECTOR_WEIGHT = 0.5;
/** Candidates read and judged per namespace. */
const JUDGE_DEPTH = 24;

type Cand = { id: number; kind: number; exact: boolean; quoted: boolean; lex: number; vec: number; time: number; score: number };

/** Reranking weights over support, on the scale of reciprocal-rank fusion (1/60 at rank 0). */
const W = { terms: 0.005, claim: 0.03, names: 0.01, speaker: 0.006, time: 0.01 };

/**
 * The speaker bonus goes to the asked party's spans; not to the environment's: what it printed
 * is read with the call that produced it (the agent's turn), which the bonus would push down.
 */
function rerankScore(c: Cand, s: Support, a: QueryAnalysis): number {
  let score = c.score;
  const nt = a.terms.length;
  if (nt > 0) score += (W.terms * s.terms.matched.length) / nt;
  if (a.claim.length > 0 && s.claim) score += W.claim;
  const nn = a.framing.length;
  if (nn > 0) score += (W.names * s.names.matched.length) / nn;
  if (s.speaker?.match && a.party?.kind !== 'tool') score += W.speaker;
  if (s.time?.match) score += W.time;
  return score;
}

/** The first raw id at or after `id`, or -1. */
function rawAtOrAfter(log: NativeSpanLog, id: number, end: number): number {
  for (let from = id; from < end; from += 256) {
    const ids = log.scanIds(from, Math.min(256, end - from), 1 << RecordKind.raw, 0);
    if (ids.length > 0) return ids[0]!;
  }
  return -1;
}

/**
 * The turn range whose raw spans carry timestamps in [from, to], by binary search over ids:
 * hosts append in time order. Null when no span falls inside.
 */
function turnsForTime(log: NativeSpanLog, from: number, to: number): [number, number] | null {
  const first = log.firstId();
  const end = log.nextId();
  const firstAtOrAfter = (t: number) => {
    let lo = first;
    let hi = end;
    while (lo < hi) {
      const mid = Math.floor((lo + hi) / 2);
      const r = rawAtOrAfter(log, mid, end);
      if (r < 0) {
        hi = mid;
        continue;
      }
      const s = log.get(r)!;
      if (s.timestamp < t) lo = r + 1;
      else hi = mid;
    }
    return rawAtOrAfter(log, lo, end);
  };
  const a = firstAtOrAfter(from);
  if (a < 0) return null;
  const sa = log.get(a)!;
  if (sa.timestamp > to) return null;
  const b = firstAtOrAfter(to + 1);
  let lastTurn = Number.MAX_SAFE_INTEGER;
  if (b >= 0) lastTurn = Math.max(sa.turnStart, log.get(b)!.turnStart - 1);
  return [sa.turnStart, lastTurn];
}

export function checkSearchArgs(query: unknown, options: SearchOptions): { k: number; kinds: ('raw' | 'summary')[] } {
  if (typeof query !== 'string') throw new SpanguardError(ErrorCode.INVALID_ARGUMENT, 'query must be a string');
  if (query.length > MAX_QUERY_CHARS)
    throw new SpanguardError(ErrorCode.INVALID_ARGUMENT, `query is ${query.length} characters; the limit is ${MAX_QUERY_CHARS}`);
  const k = options.k ?? 10;
  if (!Number.isInteger(k) || k <= 0 || k > 10_000) throw new SpanguardError(ErrorCode.INVALID_ARGUMENT, `k must be an integer in 1..10000, got ${String(k)}`);
  const kinds = options.kinds ?? ['raw'];
  for (const kind of kinds) if (kind !== 'raw' && kind !== 'summary') throw new SpanguardError(ErrorCode.UNKNOWN_KIND, `unknown kind ${String(kind)}`);
  if (options.speaker !== undefined && typeof options.speaker !== 'string' && !Array.isArray(options.speaker))
    throw new SpanguardError(ErrorCode.INVALID_ARGUMENT, 'speaker must be a string or an array of strings');
  if (options.time !== undefined && (!Array.isArray(options.time) || options.time.length !== 2 || !options.time.every((x) => typeof x === 'number' && !Number.isNaN(x))))
    throw new SpanguardError(ErrorCode.INVALID_ARGUMENT, 'time must be [fromMs, toMs]');
  return { k, kinds };
}

/**
 * Rule 1b of src/support.ts: a span holds a question's claim only where the question puts it.
 * Each name the question uses that some candidate holds must stand in the claim's span or in
 * a span within FRAME_TURNS turns of it (among the candidates, else by a lexical search over
 * that turn range); otherwise the span's claim is withdrawn and `outOfFrame` lists the names.
 * A long question holds dozens of names, each looked up per candidate (a search over a turn
 * range: up to a millisecond at 10^6 spans): the event loop runs between lookups once
 * SLICE_MS of work has gone by since it last ran (src/catchup.ts, the clock every slicer shares).
 */
export async function frameClaims(ctx: SearchContext, judged: { c: Cand; span: Span; support: Support; score: number }[], a: QueryAnalysis): Promise<void> {
  const held = a.framing.filter((n) => judged.some((j) => j.support.names.matched.includes(n)));
  if (held.length === 0) return;
  for (const j of judged) {
    if (!j.support.claim || j.c.exact) continue;
    const lo = j.span.turnStart - FRAME_TURNS;
    const hi = j.span.turnEnd + FRAME_TURNS;
    const far: string[] = [];
    for (const n of held) {
      if (j.support.names.matched.includes(n)) continue;
      if (judged.some((o) => o.support.names.matched.includes(n) && o.span.turnEnd >= lo && o.span.turnStart <= hi)) continue;
      if (sliceDue()) await letLoopRun();
      if (ctx.lexical.search(n, 1, j.c.kind, lo, hi).ids.length === 0) far.push(n);
    }
    if (far.length > 0) {
      j.support.claim = false;
      j.support.outOfFrame = far;
      j.score = rerankScore(j.c, j.support, a);
    }
  }
}

/**
 * How far (in turns) from a span holding the question's names its frame reaches, for rule 6.
 * A task's names recur through it (the candidates holding them are many, spread over the
 * task), so a short reach covers the task; a long one reaches into the task before or after
 * it (on miniswe, tasks of a median 74 turns, a reach of 25 let the previous task's `pip`
 * answer "which pip package…" of a task that never ran pip).
 */
export const ASKED_FRAME_TURNS = 10;

/**
 * Rule 6 of src/support.ts: the thing a wh-question asks for ("which pip package did the agent
 * install?") must be stated with its qualifier where the question is. The frame is the turns
 * within ASKED_FRAME_TURNS of every candidate holding the most of the question's names (the task
 * it names), or every turn searched when it names nothing. When the head noun (package) is
 * stated in the frame and none of its qualifiers (pip) is, the question asks about something
 * the transcript never mentions there: returns the qualifiers with the head ("pip package"),
 * else null. A head noun absent from the frame decides nothing: the evidence
 * may word it otherwise ("which test launcher" answered by `bin/test`).
 */
export function askedOutsideFrame(
  ctx: SearchContext,
  judged: readonly { span: Span; support: Support }[],
  a: QueryAnalysis,
  kind: number,
  turns: [number, number],
): string | null {
  if (!a.asked) return null;
  const { head, qualifiers } = a.asked;
  const held = a.framing.filter((n) => judged.some((j) => j.support.names.matched.includes(n)));
  let ranges: [number, number][] = [turns];
  if (held.length > 0) {
    const count = (j: { support: Support }) => held.filter((n) => j.support.names.matched.includes(n)).length;
    const most = Math.max(...judged.map(count));
    ranges = [];
    // Overlapping reaches merged: one index search per stretch of turns.
    const reaches = judged
      .filter((j) => count(j) === most)
      .map((j): [number, number] => [j.span.turnStart - ASKED_FRAME_TURNS, j.span.turnEnd + ASKED_FRAME_TURNS])
      .sort((x, y) => x[0] - y[0]);
    for (const r of reaches) {
      const last = ranges[ranges.length - 1];
      if (last && r[0] <= last[1] + 1) last[1] = Math.max(last[1], r[1]);
      else ranges.push(r);
    }
  }
  const inFrame = (w: string) => ranges.some(([lo, hi]) => ctx.lexical.search(w, 1, kind, lo, hi).ids.length > 0);
  if (!inFrame(head)) return null;
  // Every qualifier absent: a question qualified by one word the frame holds ("what pytest
  // summary line did…", pytest run there) is about what was discussed, however it words it.
  return qualifiers.some(inFrame) ? null : `${qualifiers.join(' ')} ${head}`;
}

/**
 * Length from which a query held verbatim is an excerpt of the span (a line quoted from it,
 * the 60–200-character quotes the guard and the benches ask) rather than a statement whose
 * values are its point: an excerpt's ends may cut a number ("laddr=('172.17" of
 * "172.17.0.2") and it still quotes the span.
 */
export const EXCERPT_CHARS = 60;

/**
 * Whether `text` holds `phrase` at least once without cutting a number at either end: a
 * phrase ending in a digit must not continue into more digits (`6` of `612`, `4` of `4.5`),
 * nor one starting with a digit be preceded by them (`12` of `312`, `5` of `4.5`). The
 * value rule of src/match.ts, applied to the verbatim path.
 */
export function heldAtValueBounds(text: string, phrase: string): boolean {
  const digitEnd = /\d$/.test(phrase);
  const digitStart = /^\d/.test(phrase);
  if (!digitEnd && !digitStart) return true;
  for (let at = text.indexOf(phrase); at >= 0; at = text.indexOf(phrase, at + 1)) {
    const after = text.slice(at + phrase.length, at + phrase.length + 2);
    const before = text.slice(Math.max(0, at - 2), at);
    if (digitEnd && /^(\d|[.,]\d)/.test(after)) continue;
    if (digitStart && /(\d|\d[.,])$/.test(before)) continue;
    return true;
  }
  return false;
}

export async function search(ctx: SearchContext, query: string, options: SearchOptions = {}): Promise<SearchResult> {
  const { k, kinds } = checkSearchArgs(query, options);
  // Called from a turn of the loop: the search's slices (its lookups, judging, the frame
  // checks) count from here, on the clock every slicer shares, so no two of them each run a
  // whole slice back to back.
  loopRan();
  const trimmedQuery = query.trim();
  if (query.trim().length === 0) return { hits: [], miss: true, missReason: 'no-candidates', verdict: ctx.verdictState(), trustExactRecall: false };
  const [tmin, tmax] = options.turns ?? [Number.NaN, Number.NaN];
  const verdictState = ctx.verdictState();
  // A question cut short is still a question (its `?` may lie past the cut).
  const part = analyzedPart(query);
  const analyzed = part !== query && isQuestion(query) && !isQuestion(part) ? `${part}?` : part;
  const speakers = options.speaker === undefined ? null : new Set((Array.isArray(options.speaker) ? options.speaker : [options.speaker]).map((s) => s.toLowerCase()));
  const [timeFrom, timeTo] = options.time ?? [Number.NEGATIVE_INFINITY, Number.POSITIVE_INFINITY];
  const filtered = speakers !== null || options.time !== undefined;
  // A question reaches deeper into each list (its words may all differ from its evidence);
  // a statement is decided by its exact or near-exact candidates near the top.
  const depth = Math.max(filtered ? 200 : isQuestion(analyzed) ? 100 : 50, 3 * k);
  // A host embedder that fails (a model server down) costs the vector candidates, not the
  // search: the exact and lexical lists still reach every stored span.
  const qv = await ctx.embedQuery([query]).catch(() => null);
  // The heavy index work runs off this thread while the event loop turns. Every namespace's
  // vector search starts here, so the signature scans overlap the query's analysis and the
  // exact-phrase lookups (which read the log, and so run on this thread) and the BM25 searches
  // after them (on this thread too when their postings are few: SYNC_BM25_POSTINGS). Each
  // settles with what the same synchronous call returns.
  const pooled = <T>(read: Promise<T>): Promise<T> => (ctx.poolRead ? ctx.poolRead(read) : read);
  // A BM25 lookup whose postings are few runs here (the same hits as the pool's).
  const syncPostings = ctx.syncPostings ?? SYNC_BM25_POSTINGS;
  const bm25Search = (q: string, kind: number, lo: number, hi: number) =>
    ctx.lexical.searchWithin(q, depth, kind, lo, hi, syncPostings) ?? pooled(ctx.lexical.searchAsync(q, depth, kind, lo, hi));
  const vecJobs = kinds.map((name) => {
    if (qv === null) return null;
    const job = ctx.vector.searchAsync(qv, depth, RecordKind[name]);
    pooled(job);
    return job;
  });
  // A rejection is taken where its job is awaited, below; one left unawaited by a failure
  // before that point is not an unhandled rejection.
  for (const job of vecJobs) job?.catch(() => {});
  const a = analyzeQuery(analyzed);
  const cands = new Map<number, Cand>();
  const touch = (id: number, kind: number): Cand => {
    let c = cands.get(id);
    if (!c) cands.set(id, (c = { id, kind, exact: false, quoted: false, lex: Infinity, vec: Infinity, time: Infinity, score: 0 }));
    return c;
  };
  const ranks = (ids: ArrayLike<number>, scores: ArrayLike<number>, set: (c: Cand, r: number) => void, kind: number) => {
    // Ranks with ties: equal scores share a rank, so id order decides nothing.
    let rank = 0;
    for (let i = 0; i < ids.length; i++) {
      if (i > 0 && scores[i] !== scores[i - 1]) rank = i;
      set(touch(ids[i]!, kind), rank);
    }
  };
  // The lookups below run on this thread one after another; a long query's analysis and its
  // verbatim lookups can each take milliseconds at 10^6 spans, so the event loop runs between
  // them once SLICE_MS of work has gone by since it last did.
  const timeTurns = a.time ? turnsForTime(ctx.log, a.time.from, a.time.to) : null;
  // A verbatim part the index could not narrow was checked against the newest texts only.
  let exactPartial = false;
  for (const [i, name] of kinds.entries()) {
    if (sliceDue()) await letLoopRun();
    const kind = RecordKind[name];
    const vecHits = vecJobs[i] ?? null;
    let verbatim = 0;
    if (trimmedQuery.length >= 3) {
      const exact = ctx.lexical.phraseWithin(ctx.log, trimmedQuery, kind, depth, EXACT_SCAN_BYTES);
      if (!exact.complete) exactPartial = true;
      for (const id of exact.ids) touch(id, kind).exact = true;
      verbatim = exact.ids.length;
    }
    // A quoted command may recur across a session: every occurrence is a candidate, and
    // the rest of the query decides among them. Not when the whole query is held verbatim:
    // its matches hold every quoted part and rank above them, and a span holding only a
    // fragment (`__main__`, ` FROM `) is no better evidence than one sharing most of its
    // words; looking such fragments up in every span of a large store costs a quote of
    // code hundreds of milliseconds.
    for (const part of verbatim > 0 ? [] : a.profile.quoted) {
      if (sliceDue()) await letLoopRun();
      const quoted = ctx.lexical.phraseWithin(ctx.log, part, kind, 4096, EXACT_SCAN_BYTES);
      if (!quoted.complete) exactPartial = true;
      for (const id of quoted.ids) touch(id, kind).quoted = true;
    }
    const bm25 = a.bm25.length > 0 ? a.bm25 : query;
    if (sliceDue()) await letLoopRun();
    const lex = await bm25Search(bm25, kind, tmin, tmax);
    ranks(lex.ids, lex.scores, (c, r) => (c.lex = Math.min(c.lex, r)), kind);
    if (timeTurns) {
      const lo = Number.isNaN(tmin) ? timeTurns[0] : Math.max(tmin, timeTurns[0]);
      const hi = Number.isNaN(tmax) ? timeTurns[1] : Math.min(tmax, timeTurns[1]);
      if (lo <= hi) {
        const t = await bm25Search(bm25, kind, lo, hi);
        ranks(t.ids, t.scores, (c, r) => (c.time = Math.min(c.time, r)), kind);
      }
    }
    if (vecHits !== null) {
      // Taken on this thread when the lane has finished it or not yet started it.
      const vec = ctx.vector.searchTake(vecHits, ctx.stealVectorRows ?? STEAL_VECTOR_ROWS, ctx.takeSpinMicros ?? TAKE_SPIN_MICROS) ?? (await vecHits);
      ranks(vec.ids, vec.distances, (c, r) => (c.vec = Math.min(c.vec, r)), kind);
    }
  }
  // Tiers first: the whole query verbatim, then a quoted part verbatim, then the rest; within
  // a tier, reciprocal-rank fusion (k = 60), rank-based so BM25 and cosine need no shared
  // scale. Among verbatim matches of a quoted command the texts are near-identical, so the
  // built-in embedder only breaks ties there.
  const rrf = (r: number) => (Number.isFinite(r) ? 1 / (60 + r) : 0);
  for (const c of cands.values()) {
    const tier = c.exact ? 2 : c.quoted ? 1 : 0;
    c.score = tier + rrf(Math.min(c.lex, c.time)) + 0.5 * rrf(c.time) + (tier > 0 ? 0.01 : VECTOR_WEIGHT) * rrf(c.vec);
  }
  const byScore = (x: { score: number }, y: { score: number }) => y.score - x.score;
  const judgeDepth = Math.max(JUDGE_DEPTH, 2 * k);
  const all = [...cands.values()];
  // The best lexical match (of the whole namespace, and of the time the question names) is
  // always judged, however low the fusion ranks it: its support (the party, the names, the
  // claim it holds) may lift it where the vectors of other turns outvoted it.
  const withLexicalBest = (cs: Cand[], n: number) => {
    const sorted = cs.sort(byScore);
    const head = sorted.slice(0, n);
    const best = [sorted.find((c) => c.lex === 0), sorted.find((c) => c.time === 0)].filter((c): c is Cand => c !== undefined && !head.includes(c));
    return [...head, ...new Set(best)];
  };
  const ranked = [
    ...withLexicalBest(
      all.filter((c) => c.kind === RecordKind.raw),
      filtered ? 4 * judgeDepth : judgeDepth,
    ),
    ...withLexicalBest(
      all.filter((c) => c.kind !== RecordKind.raw),
      judgeDepth,
    ),
  ];
  const spans = ranked.length > 0 ? ctx.log.getMany(Float64Array.from(ranked, (c) => c.id)) : [];
  type Judged = { c: Cand; span: Span; support: Support; score: number };
  const judged: Judged[] = [];
  const candidateSpeakers = new Set<string>();
  const views: { c: Cand; span: Span }[] = [];
  ranked.forEach((c, i) => {
    const raw = spans[i];
    if (!raw) return;
    const span = toSpan(raw);
    if (!Number.isNaN(tmin) && (span.turnEnd < tmin || span.turnStart > tmax)) return;
    if (speakers !== null && !speakers.has((span.speaker ?? span.role).toLowerCase()) && !speakers.has(span.role)) return;
    if (span.timestamp < timeFrom || span.timestamp > timeTo) return;
    if (span.speaker) candidateSpeakers.add(span.speaker);
    views.push({ c, span });
  });
  // Named speakers are known from the candidates themselves: no registry to keep.
  if (candidateSpeakers.size > 0 && a.question) a.party = parseParty(query, candidateSpeakers);
  // The environment as a party is judged only where tool output stands apart (role `tool`, or
  // a host's observation metadata): a host that stores a call with its output as one span has
  // no span of the environment's own, and the question is read without a party there.
  if (a.party?.kind === 'tool' && !views.some(({ span }) => spanIsToolOutput(span))) a.party = null;
  // Judging is the costliest part of a search on the JS thread (a long quote against long
  // candidates): the event loop runs between candidates once SLICE_MS has gone by.
  for (const { c, span } of views) {
    if (sliceDue()) await letLoopRun();
    // A short statement held verbatim only where it cuts a number ("start_line = 6" inside
    // "start_line = 612") is a match of bytes, not of its value: it ranks as verbatim but
    // holds no claim. A longer one is an excerpt, whatever its ends cut (EXCERPT_CHARS).
    if (c.exact && trimmedQuery.length < EXCERPT_CHARS && !heldAtValueBounds(span.text, trimmedQuery)) c.exact = false;
    const support = supportOf(a, span, c.exact, ctx.matchPolicy);
    // An ungrounded summary is never evidence for a value it invented.
    const invented = c.kind === RecordKind.summary ? ctx.ungrounded.get(span.id) : undefined;
    if (invented && support.claim) {
      const lower = new Set(invented.map((v) => v.toLowerCase()));
      const used = a.claim.filter((v) => lower.has(v) || [...lower].some((u) => u.includes(v)));
      if (used.length > 0) {
        support.claim = false;
        support.values.contradicted = true;
        support.ungrounded = used;
      }
    }
    judged.push({ c, span, support, score: rerankScore(c, support, a) });
  }
  // Rule 8 of src/support.ts: a quote cut by a span's edge is read on in the span beside it.
  for (const j of judged)
    if (j.support.quote?.kind === 'cut')
      settleCutQuote(a, j.support, j.span.text, (side) => {
        const r = ctx.log.get(j.span.id + side);
        return r && r.kind === j.c.kind ? r.text : null;
      });
  if (a.question && a.claim.length > 0 && a.framing.length > 0) await frameClaims(ctx, judged, a);
  const decide = (kind: number): MissDecision => {
    const js = judged.filter((j) => j.c.kind === kind).sort(byScore);
    return decideMiss(
      a,
      js.map((j) => j.support),
      js.some((j) => j.c.exact && !j.support.ungrounded),
      () => askedOutsideFrame(ctx, js, a, kind, [tmin, tmax]),
      () =>
        askedOutsideScope(
          ctx,
          a,
          kind,
          [tmin, tmax],
          js.map((j) => j.span),
        ),
    );
  };
  const rawDecision = decide(RecordKind.raw);
  const summaryDecision = kinds.includes('summary') ? decide(RecordKind.summary) : { miss: true };
  const trust = verdictState === 'lossless';
  const toHit = (j: Judged): Hit => ({
    spanId: j.span.id,
    kind: j.c.kind === RecordKind.raw ? 'raw' : 'summary',
    turnStart: j.span.turnStart,
    turnEnd: j.span.turnEnd,
    score: j.score,
    via: j.c.exact || (j.c.quoted && j.support.claim) ? 'exact' : Math.min(j.c.lex, j.c.time) <= j.c.vec ? 'lexical' : 'vector',
    text: j.span.text,
    role: j.span.role,
    ...(j.span.speaker ? { speaker: j.span.speaker } : {}),
    timestamp: j.span.timestamp,
    support: j.support,
    verdict: verdictState,
    trustExactRecall: trust,
    ...(j.c.kind === RecordKind.summary ? { superseded: ctx.superseded.has(j.span.id) } : {}),
  });
  // Raw spans are the evidence: a raw hit always ranks above any summary, so a broad
  // summary never stands in for the verbatim turn it was made from. A miss returns no hit
  // of its namespace: the nearest neighbour is not passed off as an answer.
  const pick = (kind: number, decision: MissDecision) => {
    if (decision.miss) return [];
    const js = judged.filter((j) => j.c.kind === kind).sort(byScore);
    // Who said it: the attributed party's spans are preferred (the speaker bonus), but the
    // first hit is the best evidence by content alone. When that was said by the other
    // party and the asked party has nothing as good, it leads, and its support says who
    // said it: a question that puts words in the wrong mouth is flagged, not answered.
    // (Not for the environment: its output is read with the agent's call that produced it.)
    if (a.party && a.party.kind !== 'tool' && js.length > 1) {
      const content = (j: Judged) => j.score - (j.support.speaker?.match ? W.speaker : 0);
      let best = 0;
      for (let i = 1; i < js.length; i++) if (content(js[i]!) > content(js[best]!)) best = i;
      if (best > 0 && js[best]!.support.speaker?.match === false) js.unshift(...js.splice(best, 1));
      // After it, the asked party's spans before the other party's: "what did the user remind
      // the assistant to do?" is answered by the user's turns, which the other party's long
      // outputs sharing its words outrank by content.
      const rest = js.slice(1);
      js.splice(1, rest.length, ...rest.filter((j) => j.support.speaker?.match), ...rest.filter((j) => !j.support.speaker?.match));
    }
    return js.slice(0, k).map(toHit);
  };
  const hits = [...pick(RecordKind.raw, rawDecision), ...pick(RecordKind.summary, summaryDecision)].slice(0, k);
  const rawMatched = !rawDecision.miss && kinds.includes('raw');
  // A partial verbatim scan read only the newest texts: it cannot say an older one lacks the query.
  const miss = (kinds.includes('raw') ? rawDecision.miss : summaryDecision.miss) && !exactPartial;
  const missInfo = miss ? (kinds.includes('raw') ? rawDecision : summaryDecision) : null;
  if (options.expect === 'raw' && !rawMatched && !summaryDecision.miss && !ctx.readOnly) {
    await ctx.recordEvent({
      type: 'degrade',
      pass: ctx.passes,
      reason: 'expected-raw-got-summary',
      detail: `query ${JSON.stringify(query.slice(0, 120))} expected a raw span and resolved only to summary ${hits[0]?.spanId}`,
      spanIds: hits.map((h) => h.spanId),
    });
    const v = ctx.verdictState();
    for (const h of hits) {
      h.verdict = v;
      h.trustExactRecall = false;
    }
    return { hits, miss: true, missReason: 'summary-only', verdict: v, trustExactRecall: false, ...(exactPartial ? { exactPartial } : {}) };
  }
  return {
    hits,
    miss,
    ...(missInfo?.reason ? { missReason: missInfo.reason } : {}),
    ...(missInfo?.detail ? { missDetail: missInfo.detail } : {}),
    verdict: verdictState,
    trustExactRecall: trust,
    ...(exactPartial ? { exactPartial } : {}),
  };
}
