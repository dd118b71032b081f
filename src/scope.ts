/**
 * Scope: the part of the session a question names, resolved against the store's fields.
 *
 * A question may name the part it asks about: "In the Django runserver 0 task, …" (an opening
 * clause, src/query.ts namedScope) or "On day 12, …" (a numbered period, matched against the
 * fields). A host marks such parts in its metadata — an episode, a session, a source file per
 * day — and appends a part's turns together, so a part is a run of consecutive spans sharing
 * one value of one field. Resolving the scope finds that run:
 *
 * - A named scope: the spans holding every content word of its name (in their text or their
 *   fields; BM25 over the name, the best SEED_DEPTH read) are its seeds. For each field, the
 *   value most seeds have must be had by at least SEED_DOMINANCE times as many seeds as any
 *   other value (else the name is ambiguous: several parts use it), and its run around them
 *   must hold all of them; the run must be a part of the store, not all of it, and at least
 *   MIN_PART_TURNS turns long (shorter runs are fields of single turns: a kind, a command).
 *   Of the candidates the longest run is the scope: when fields nest (a session of episodes),
 *   the wider part is the one that cannot leave out the question's evidence.
 * - A numbered period: the field whose value names it (`source_file: day-012.md` for "day
 *   12") on one of the search's candidates for the question; the scope is that value's run.
 *
 * When no seed holds the whole name, when the seeds lie in different parts, or when no field
 * marks parts at all, the scope is not resolved and nothing depends on it. The run is found by
 * galloping and binary search over ids (O(log n) reads): the store is never scanned.
 */
import { RecordKind, type NativeLexicalIndex, type NativeSpanLog } from './native.js';
import { analyzeQuery, type QueryAnalysis } from './query.js';
import { termsHeld } from './support.js';
import { toSpan } from './store/spans.js';
import type { Span } from './store/types.js';

/** A part of the session a question names: a run of spans sharing a field's value. */
export interface Scope {
  /** The field (`episode`, `source_file`) and its value on the part's spans. */
  key: string;
  value: string;
  /** First and last turn of the part. */
  turns: [number, number];
}

/** Spans of the best BM25 matches of a scope's name read to find its seeds. */
export const SEED_DEPTH = 32;

/**
 * How many times more seeds the part holding most of them must hold than any other part: a
 * name several parts share ("the Django runserver task" where two tasks run runserver) is
 * ambiguous, and an ambiguous scope is no scope.
 */
export const SEED_DOMINANCE = 2;

/**
 * Fewest turns a run of one field value must span to be a part of the session rather than a
 * field of one exchange (a turn's kind, its command): twice rule 6's frame (src/search.ts
 * ASKED_FRAME_TURNS), so a scope is never narrower than the stretch rule 6 already reads.
 */
export const MIN_PART_TURNS = 20;

interface ScopeContext {
  log: NativeSpanLog;
  lexical: NativeLexicalIndex;
}

/** A field's value as text, when it is a plain value (the fields support reads). */
const fieldValue = (span: Span, key: string): string | null => {
  const v = span.meta?.[key];
  return typeof v === 'string' || typeof v === 'number' ? String(v) : null;
};

/** The first record of `kind` at or after `id`, or -1. */
function kindAtOrAfter(log: NativeSpanLog, kind: number, id: number, end: number): number {
  for (let from = Math.max(id, log.firstId()); from < end; from += 256) {
    const ids = log.scanIds(from, Math.min(256, end - from), 1 << kind, 0);
    if (ids.length > 0) return ids[0]!;
  }
  return -1;
}

/**
 * The run of records of `kind` around `seed` whose field `key` is `value`: the ids of its
 * first and last records. Consecutive parts are assumed (a host appends a part's turns
 * together); where a value recurs after a gap, the search may take in the gap, which widens
 * the scope and never narrows it.
 */
function runAround(log: NativeSpanLog, kind: number, seed: number, key: string, value: string): { first: number; last: number; whole: boolean } {
  const start = log.firstId();
  const end = log.nextId();
  const cache = new Map<number, number>();
  // probe(x): the first record of `kind` at or after x, when it has the value; else -1.
  const probe = (x: number): number => {
    let r = cache.get(x);
    if (r === undefined) {
      const id = kindAtOrAfter(log, kind, x, end);
      const raw = id < 0 ? undefined : log.get(id);
      r = raw && fieldValue(toSpan(raw), key) === value ? id : -1;
      cache.set(x, r);
    }
    return r;
  };
  // Backward: the lowest x whose probe is in the run (probes below the run fall before it).
  let step = 1;
  let inside = seed;
  let outside = start - 1;
  while (seed - step >= start) {
    const x = seed - step;
    if (probe(x) < 0) {
      outside = x;
      break;
    }
    inside = x;
    step *= 2;
  }
  if (outside === start - 1 && inside > start) {
    if (probe(start) >= 0) inside = start;
  }
  while (inside - outside > 1) {
    const mid = Math.floor((inside + outside) / 2);
    if (probe(mid) >= 0) inside = mid;
    else outside = mid;
  }
  const first = probe(inside);
  // Forward: the highest x whose probe is in the run.
  step = 1;
  let lastIn = seed;
  let after = end;
  while (seed + step < end) {
    const x = seed + step;
    if (probe(x) < 0) {
      after = x;
      break;
    }
    lastIn = x;
    step *= 2;
  }
  if (after === end && lastIn < end - 1 && probe(end - 1) >= 0) lastIn = end - 1;
  while (after - lastIn > 1) {
    const mid = Math.floor((lastIn + after) / 2);
    if (probe(mid) >= 0) lastIn = mid;
    else after = mid;
  }
  const last = probe(lastIn);
  const firstOfKind = kindAtOrAfter(log, kind, start, end);
  const whole = first === firstOfKind && kindAtOrAfter(log, kind, last + 1, end) < 0;
  return { first, last, whole };
}

/**
 * Whether the store's first and last records of `kind` both have the value: then (parts being
 * consecutive) every record has it, and the field marks no part. Two reads, where the run's
 * search would read O(log n).
 */
function spansStore(log: NativeSpanLog, kind: number, key: string, value: string): boolean {
  const end = log.nextId();
  const first = kindAtOrAfter(log, kind, log.firstId(), end);
  let last = -1;
  for (let to = end; to > log.firstId() && last < 0; to -= 256) {
    const ids = log.scanIds(Math.max(log.firstId(), to - 256), Math.min(256, to - log.firstId()), 1 << kind, 0);
    if (ids.length > 0) last = ids[ids.length - 1]!;
  }
  if (first < 0 || last < 0) return false;
  const at = (id: number) => {
    const raw = log.get(id);
    return raw ? fieldValue(toSpan(raw), key) : null;
  };
  return at(first) === value && at(last) === value;
}

/** The turns of a run given by its first and last record ids. */
function turnsOf(log: NativeSpanLog, first: number, last: number): [number, number] {
  return [log.get(first)!.turnStart, log.get(last)!.turnEnd];
}

/**
 * The part of the session a numbered period names ("day 12"): the field whose value names it
 * (`source_file: day-012.md`), read from the search's own candidates (`candidates`, already
 * read: a question naming a day ranks that day's spans by their fields), so no span is read
 * again to find it.
 */
function periodScope(ctx: ScopeContext, a: QueryAnalysis, kind: number, candidates: readonly Span[]): Scope | null {
  const period = a.period!;
  const re = new RegExp(`(?<![\\p{L}])${period.unit}s?[^\\p{L}\\p{N}]{0,3}0*${period.n}(?!\\p{N})`, 'iu');
  for (const span of candidates) {
    for (const key of Object.keys(span.meta ?? {})) {
      const value = fieldValue(span, key);
      if (value === null || key === 'speaker' || !re.test(value.toLowerCase().replace(/(?<![\p{N}.])0+(?=\d)/gu, ''))) continue;
      const run = runAround(ctx.log, kind, span.id, key, value);
      if (run.first < 0 || run.whole) continue;
      return { key, value, turns: turnsOf(ctx.log, run.first, run.last) };
    }
  }
  return null;
}

/** The part of the session an opening clause names ("In the Django runserver 0 task, …"). */
function namedPart(ctx: ScopeContext, a: QueryAnalysis, kind: number, limits: [number, number]): Scope | null {
  const name = analyzeQuery(a.scope!.text);
  if (name.terms.length === 0) return null;
  const hits = ctx.lexical.search(name.bm25, SEED_DEPTH, kind, limits[0], limits[1]);
  const raws = hits.ids.length > 0 ? ctx.log.getMany(hits.ids) : [];
  const seeds: Span[] = [];
  for (const raw of raws) {
    if (!raw) continue;
    const span = toSpan(raw);
    if (termsHeld(name, span).missing.length === 0) seeds.push(span);
  }
  if (seeds.length === 0) return null;
  let best: Scope | null = null;
  const keys = new Set(seeds.flatMap((s) => Object.keys(s.meta ?? {})));
  keys.delete('speaker');
  for (const key of keys) {
    // The seeds grouped by this field's value: the part holding most of them must hold at
    // least SEED_DOMINANCE times as many as any other, or the name is ambiguous here.
    const byValue = new Map<string, Span[]>();
    for (const s of seeds) {
      const v = fieldValue(s, key);
      if (v !== null) byValue.set(v, [...(byValue.get(v) ?? []), s]);
    }
    const groups = [...byValue.entries()].sort((x, y) => y[1].length - x[1].length);
    if (groups.length === 0 || (groups.length > 1 && groups[0]![1].length < SEED_DOMINANCE * groups[1]![1].length)) continue;
    const [value, held] = groups[0]!;
    if (spansStore(ctx.log, kind, key, value)) continue;
    const run = runAround(ctx.log, kind, held[0]!.id, key, value);
    if (run.first < 0 || run.whole || !held.every((s) => s.id >= run.first && s.id <= run.last)) continue;
    const turns = turnsOf(ctx.log, run.first, run.last);
    if (turns[1] - turns[0] + 1 < MIN_PART_TURNS) continue;
    if (best === null || turns[1] - turns[0] > best.turns[1] - best.turns[0]) best = { key, value, turns };
  }
  return best;
}

/**
 * The part of the session the question names, resolved against the store's fields (see the
 * header), or null. `limits`: the turns the search is limited to (NaN: open). `candidates`:
 * the spans the search judged for the question, where a numbered period's field is looked for.
 */
export function resolveScope(
  ctx: ScopeContext,
  a: QueryAnalysis,
  kind: number = RecordKind.raw,
  limits: [number, number] = [Number.NaN, Number.NaN],
  candidates: readonly Span[] = [],
): Scope | null {
  if (a.scope) return namedPart(ctx, a, kind, limits);
  if (a.period) return periodScope(ctx, a, kind, candidates);
  return null;
}

/**
 * Rule 7 of src/support.ts: what a wh-question asks for, qualified ("which dask chunk size
 * did the agent test with?"), in a part of the session it names and the store resolves
 * ("In the xarray int32 stack task, …"): every qualifier must be stated in that part's spans.
 * Returns the qualifiers no span of the part states, with the part, or null (no asked-for
 * noun, a quoted part — the evidence verbatim, whose description is the asker's —, a scope not
 * resolved, or every qualifier stated there). A qualifier the index drops as a stopword
 * decides nothing. `limits`: the turns the search is limited to (NaN: open).
 */
export function askedOutsideScope(ctx: ScopeContext, a: QueryAnalysis, kind: number, limits: [number, number], candidates: readonly Span[]): string | null {
  if (!a.asked || a.profile.allQuoted.length > 0 || (!a.scope && !a.period)) return null;
  const scope = resolveScope(ctx, a, kind, limits, candidates);
  if (!scope) return null;
  const lo = Number.isNaN(limits[0]) ? scope.turns[0] : Math.max(limits[0], scope.turns[0]);
  const hi = Number.isNaN(limits[1]) ? scope.turns[1] : Math.min(limits[1], scope.turns[1]);
  if (lo > hi) return null;
  const absent = a.asked.qualifiers.filter((w) => ctx.lexical.tokenize(w).length > 0 && ctx.lexical.search(w, 1, kind, lo, hi).ids.length === 0);
  return absent.length > 0 ? `${absent.join(' ')} (of ${a.asked.qualifiers.join(' ')} ${a.asked.head}) not in ${scope.key} ${scope.value}` : null;
}
