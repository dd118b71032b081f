/**
 * Support: what of a query one span holds, and the miss decision built on it.
 *
 * Search finds candidates first (BM25 + vectors + exact phrases, src/search.ts) and judges
 * them second. Each candidate gets a `Support` record — which content terms it holds
 * (verbatim or by normal form), which values, names and identifiers, who said it, when —
 * and "not in transcript" is decided from the query's specific content only:
 *
 * 1. The claim. The query's numbers, identifiers with digits and quoted parts must stand
 *    together in one window of some candidate (its text, or its fields: speaker, role,
 *    source, metadata), each value next to the words it stands next to in the query, and
 *    nothing in that candidate may contradict them (a one-edit variant of a distinctive
 *    term, an identifier with other digits). "Did we set the timeout to 45 s?" when every
 *    candidate says 30 s is a miss.
 *    The claim must also be held where the question's names are (rule 1b): a span that holds
 *    "Python 3.6.8" in another task than the one the question names ("In the URLValidator
 *    task, …") does not hold it — the names must be in that span or within FRAME_TURNS turns.
 * 2. The framing. Every identifier (a path, a dotted, snake_case or camelCase name) and every
 *    name (a capitalized word inside a sentence) must be held by one of the best-supported
 *    candidates. "Which Vagrant box…" when no span says Vagrant is a miss.
 * 3. The party. When the query attributes a claim to a party ("did I say 179 books?"), a
 *    candidate that holds the claim must have been said by that party; when only the other
 *    party's turns hold it, the answer is a miss and the hits' support says who said it.
 * 4. Nothing else. A query without values, identifiers or names ("what did we decide about
 *    the build backend?") is not a miss while any candidate shares a word with it: its other
 *    words may all differ from its evidence. Low word coverage alone never makes a miss.
 * 5. Nothing in common. When no candidate holds even one of the query's content terms
 *    (verbatim or by normal form), the nearest vectors are not evidence: a miss.
 */
import { consistent, contextHolds, contradicts, matches, type MatchPolicy, DEFAULT_MATCH_POLICY, type QueryProfile } from './match.js';
import { normalForm, type Party, type QueryAnalysis } from './query.js';

export interface Support {
  /** The query's content terms this span holds, verbatim or by normal form, and those it lacks. */
  terms: { matched: string[]; missing: string[] };
  /** Numbers, identifiers with digits, quoted parts: held (in one window), missing, or contradicted by this span. */
  values: { matched: string[]; missing: string[]; contradicted: boolean };
  /** Names and identifiers without digits. */
  names: { matched: string[]; missing: string[] };
  /** Present when the query attributes what it asks to a party. */
  speaker?: { asked: string; said: string; match: boolean };
  /** Present when the query names a time (a date, a month, a year). */
  time?: { asked: string; match: boolean };
  /** This span holds the whole claim (every value, together, uncontradicted). */
  claim: boolean;
  /**
   * Present when this span holds the claim's values but not where the question puts them: the
   * question's names (held elsewhere in the transcript) are neither in this span nor in any
   * span within FRAME_TURNS turns of it. `claim` is then false.
   */
  outOfFrame?: string[];
  /** A summary accepted ungrounded: the query's values it states that nothing it replaced stated (it is not evidence for them). */
  ungrounded?: string[];
}

/** The fields of a span that count for support besides its text. */
export interface SupportSpan {
  text: string;
  role: string;
  speaker?: string;
  timestamp: number;
  meta: Record<string, unknown> | null;
}

const L = '\\p{L}\\p{N}_';
const TERM_SCAN_CHARS = 16_384;
/**
 * The endings a word may carry beyond its normal form (`enjoy` + `ed`, `configur` +
 * `ation`), so that a stem does not hold every longer word that begins like it (`redi`
 * must not hold `redirect`).
 */
const SUFFIX_LIST = ['e', 's', 'es', 'ed', 'd', 'ing', 'ings', 'er', 'ers', 'est', 'ly', 'y', 'ies', 'ied', 'ion', 'ions', 'ation', 'ations', 'al', 'ally', 'ment', 'ments', 'ness', 'ity', 'ities', 'ive', 'able', 'ably', 'ise', 'ize', 'ised', 'ized', 'ising', 'izing', 'ful', 'less'];
const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');

/** Field text, lower-cased, numbers without leading zeros (`day-012.md` holds day 12). */
export function fieldText(span: SupportSpan): string {
  const parts: string[] = [span.role];
  if (span.speaker) parts.push(span.speaker);
  if (span.meta) for (const [k, v] of Object.entries(span.meta)) if (k !== 'speaker' && (typeof v === 'string' || typeof v === 'number')) parts.push(String(v));
  return parts
    .join(' \n ')
    .toLowerCase()
    .replace(/(?<![\p{N}.])0+(?=\d)/gu, '');
}

/** The side a role speaks for: the agent's tool output counts as the agent's. */
const side = (role: string) => (role === 'user' ? 'user' : role === 'assistant' || role === 'tool' ? 'agent' : role);

export function partyLabel(p: Party): string {
  return p.kind === 'name' ? p.name : p.kind;
}

export function saidBy(p: Party, span: SupportSpan): { said: string; match: boolean } {
  if (p.kind === 'name') {
    const said = span.speaker ?? span.role;
    return { said, match: said.toLowerCase() === p.name.toLowerCase() };
  }
  const said = side(span.role);
  return { said: span.speaker ?? said, match: said === p.kind };
}

/**
 * The forms of a term that hold it, built once per term: the term itself, its normal form
 * with each usual ending (`enjoy` → enjoy, enjoyed, enjoying…; `happi` → happy, happiness),
 * so that a stem never holds a longer word that merely begins like it (`redi` / `redirect`).
 */
const formsCache = new Map<string, string[]>();
function formsOf(norm: string, term: string): string[] {
  const key = `${norm}\u0000${term}`;
  let forms = formsCache.get(key);
  if (!forms) {
    if (formsCache.size > 8192) formsCache.clear();
    const set = new Set([term, norm]);
    if (/^\p{L}+$/u.test(norm)) {
      const bases = norm.endsWith('i') && norm.length > 2 ? [norm, `${norm.slice(0, -1)}y`] : [norm];
      for (const base of bases) for (const sfx of SUFFIX_LIST) set.add(base + sfx);
      // Doubled final consonant before an ending: run → running, stop → stopped.
      const last = norm[norm.length - 1]!;
      if (!/[aeiouy]/.test(last)) for (const sfx of ['ed', 'ing', 'er', 'ers', 'ings']) set.add(norm + last + sfx);
    }
    forms = [...set];
    formsCache.set(key, forms);
  }
  return forms;
}
const perQuery = new WeakMap<QueryAnalysis, string[][]>();
/** Each term's forms, built once per query. */
function formsOfQuery(a: QueryAnalysis): string[][] {
  let f = perQuery.get(a);
  if (!f) perQuery.set(a, (f = a.terms.map((x) => formsOf(x.norm, x.term))));
  return f;
}
/** The words of a text (letters, digits and `_`), lower-cased input: one pass, then set lookups. */
// ASCII separators only: a non-ASCII letter is a word character, and the pattern runs
// without Unicode property tables (several times faster on long tool output).
const wordsOf = (lowerHay: string) => new Set(lowerHay.split(/[\x00-\x2f\x3a-\x40\x5b-\x5e\x60\x7b-\x7f\s\u2000-\u206f]+/));
const holdsAny = (forms: readonly string[], words: ReadonlySet<string>) => forms.some((f) => words.has(f));

/**
 * Whether the claim's values stand together in one window of `text` (the lines around an
 * occurrence of the key value, as many as the query has), the fields counting as part of
 * every window, and nothing in that window contradicts the query.
 */
function claimHeld(profile: QueryProfile, claim: string[], question: boolean, lowerText: string, fields: string, text: string): { held: boolean; contradicted: boolean } {
  const values = claim.filter((v) => profile.tests.has(v));
  const holds = (win: string) =>
    values.every((v) => profile.tests.get(v)!.test(win)) && contextHolds(profile, win, question);
  const lines = lowerText.split('\n');
  const key = profile.key !== null && values.includes(profile.key) ? profile.key : (values[0] ?? null);
  const tryWindow = (win: string) => {
    const w = `${win}\n${fields}`;
    if (!holds(w)) return null;
    // A question's words are the asker's: only an identifier stated with other digits
    // (`utf-15` asked, `utf-8` stated) contradicts it, not a one-edit neighbour of a word.
    return !contradicts(profile, w, text, question);
  };
  if (key === null || lines.length <= profile.lines) {
    const r = tryWindow(lowerText);
    return { held: r === true, contradicted: r === false };
  }
  const keyTest = profile.tests.get(key)!;
  const reach = profile.lines - 1;
  let contradicted = false;
  for (let i = 0; i < lines.length; i++) {
    if (!keyTest.test(lines[i]!)) continue;
    const r = tryWindow(lines.slice(Math.max(0, i - reach), Math.min(lines.length, i + reach + 1)).join('\n'));
    if (r === true) return { held: true, contradicted: false };
    if (r === false) contradicted = true;
  }
  // The key value only in the fields (day 12 in `day-012.md`): the text as one window.
  if (!contradicted && keyTest.test(fields)) {
    const r = tryWindow(lowerText);
    if (r !== null) return { held: r, contradicted: !r };
  }
  return { held: false, contradicted };
}

/** The support of one span for one query. `exact`: the span holds the whole query verbatim. */
export function supportOf(a: QueryAnalysis, span: SupportSpan, exact = false, policy: MatchPolicy = DEFAULT_MATCH_POLICY): Support {
  const lowerText = span.text.toLowerCase();
  const fields = fieldText(span);
  // Terms and names are looked for in the first TERM_SCAN_CHARS of a long text (a tool
  // output of megabytes): they rank and explain; the claim is checked over the whole text.
  const hay = `${lowerText.length > TERM_SCAN_CHARS ? lowerText.slice(0, TERM_SCAN_CHARS) : lowerText}\n${fields}`;
  const matched: string[] = [];
  const missing: string[] = [];
  const forms = formsOfQuery(a);
  const words = wordsOf(hay);
  for (let i = 0; i < a.terms.length; i++) (holdsAny(forms[i]!, words) ? matched : missing).push(a.terms[i]!.term);
  const p = a.profile;
  const quotedHeld = p.quoted.every((q) => span.text.includes(q) || lowerText.includes(q.toLowerCase()));
  let claim: boolean;
  let contradicted = false;
  if (exact) claim = true;
  else if (!a.question) {
    // A statement ("rate limit 40 req/s", a line quoted from memory) is a claim as a whole:
    // held when one window of the span holds its values next to their words and enough of
    // its terms, with nothing contradicting it (match.ts).
    claim = quotedHeld && (p.quoted.length > 0 ? consistent(p, span.text) : matches(p, span.text, policy));
  } else if (p.quoted.length > 0 && quotedHeld) {
    claim = consistent(p, span.text, true);
    contradicted = !claim;
  } else if (!quotedHeld) claim = false;
  else {
    const r = claimHeld(p, a.claim, a.question, lowerText, fields, span.text);
    claim = r.held;
    contradicted = r.contradicted;
  }
  const vMatched: string[] = [];
  const vMissing: string[] = [];
  for (const v of a.claim) {
    const t = p.tests.get(v);
    const has = hay.includes(v) && (t ? t.test(hay) : true);
    (has ? vMatched : vMissing).push(v);
  }
  const nMatched: string[] = [];
  const nMissing: string[] = [];
  for (const n of a.framing) (framingHeld(a, n, hay, words) ? nMatched : nMissing).push(n);
  const s: Support = {
    terms: { matched, missing },
    values: { matched: vMatched, missing: vMissing, contradicted },
    names: { matched: nMatched, missing: nMissing },
    claim,
  };
  if (a.party) s.speaker = { asked: partyLabel(a.party), ...saidBy(a.party, span) };
  if (a.time) s.time = { asked: a.time.text, match: span.timestamp >= a.time.from && span.timestamp <= a.time.to };
  else if (a.period) {
    const re = new RegExp(`(?<![\\p{L}])${a.period.unit}s?[^\\p{L}\\p{N}]{0,3}0*${a.period.n}(?!\\p{N})`, 'u');
    s.time = { asked: `${a.period.unit} ${a.period.n}`, match: re.test(fields) || re.test(lowerText) };
  }
  return s;
}

/**
 * A name is held as written, or with a plural or possessive ending: `Vagrant` by vagrant(s),
 * never by a longer word that shares its letters. An identifier (a path, a dotted name) is
 * held bounded, as the value tests of match.ts hold it. A pair joined by a slash in a
 * question (`Avg/Sum`, `usernames/passwords`) names two things and is held when both are.
 */
function framingHeld(a: QueryAnalysis, n: string, hay: string, words: ReadonlySet<string>): boolean {
  if (words.has(n) || words.has(`${n}s`) || words.has(`${n}es`)) return true;
  const v = a.profile.tests.get(n);
  if (v && hay.includes(n) && v.test(hay)) return true;
  if (a.question && /^[\p{L}\p{N}]+\/[\p{L}\p{N}]+$/u.test(n))
    return n.split('/').every((part) => holdsAny(formsOf(/^\p{L}+$/u.test(part) ? normalForm(part) : part, part), words));
  return false;
}

/**
 * How far (in turns) a question's names may stand from the span that holds its claim: the
 * same stretch of conversation — a task, a session — rather than the same turn, since a task
 * is named once ("In the URLValidator task, did the environment have Python 3.6.8?") and its
 * values are printed turns later.
 */
export const FRAME_TURNS = 100;

/** Candidates, best first, among which every name of the query must be held (rule 2). */
const FRAMING_DEPTH = 10;

export type MissReason = 'value-not-stated' | 'value-contradicted' | 'name-not-stated' | 'other-party' | 'nothing-in-common' | 'no-candidates';

export interface MissDecision {
  miss: boolean;
  reason?: MissReason;
  /** What was looked for and not found (values, names), or the party that did say it. */
  detail?: string;
}

/**
 * The miss decision over every candidate's support (rules 1–4 of this file's header).
 * `exact`: some candidate holds the whole query verbatim.
 */
export function decideMiss(a: QueryAnalysis, supports: readonly Support[], exact: boolean): MissDecision {
  // `supports` arrive best first (search's rerank order).
  if (exact) return { miss: false };
  if (supports.length === 0) return { miss: true, reason: 'no-candidates' };
  // Rule 5: not one of the query's content terms in any candidate — the nearest vectors of
  // words the transcript never uses are not evidence.
  if (a.terms.length > 0 && supports.every((s) => s.terms.matched.length === 0))
    return { miss: true, reason: 'nothing-in-common', detail: a.terms.map((t) => t.term).join(', ') };
  // A statement is its own claim (see supportOf): held by some candidate, or a miss.
  if (!a.question && !supports.some((s) => s.claim)) return { miss: true, reason: supports.some((s) => s.values.contradicted) ? 'value-contradicted' : 'value-not-stated', detail: a.query.slice(0, 120) };
  const specific = a.claim.length > 0;
  if (specific && !supports.some((s) => s.claim)) {
    const everywhere = a.claim.filter((v) => supports.every((s) => s.values.missing.includes(v)));
    if (everywhere.length === 0 && supports.some((s) => s.values.contradicted))
      return { miss: true, reason: 'value-contradicted', detail: a.claim.join(', ') };
    return { miss: true, reason: 'value-not-stated', detail: (everywhere.length > 0 ? everywhere : a.claim).join(', ') };
  }
  // Names are looked for among the best-supported candidates (they arrive ranked): a name
  // held only by a span far down the list, about something else, does not hold the question.
  const top = supports.slice(0, FRAMING_DEPTH);
  const absent = a.framing.filter((n) => top.every((s) => s.names.missing.includes(n)));
  if (absent.length > 0) return { miss: true, reason: 'name-not-stated', detail: absent.join(', ') };
  if (specific && a.party && !supports.some((s) => s.claim && s.speaker?.match)) {
    const by = supports.find((s) => s.claim)?.speaker?.said;
    return { miss: true, reason: 'other-party', detail: `said by ${by ?? 'another party'}, not ${partyLabel(a.party)}` };
  }
  return { miss: false };
}

/**
 * Whether one text answers the query by search's own rules, as the only candidate: it holds
 * the whole query verbatim, or its support passes the miss decision. The hit-rate monitor
 * asks it of each new summary, so the monitor and search agree on what an answer is.
 */
export function answersText(a: QueryAnalysis, text: string, policy: MatchPolicy = DEFAULT_MATCH_POLICY, lowered?: string): boolean {
  const trimmed = a.query.trim();
  const exact = trimmed.length >= 3 && text.includes(trimmed);
  if (exact) return true;
  // A statement is answered exactly when it is held as a claim (supportOf's statement
  // rule, decideMiss's first test): asked directly, without building the rest of the record.
  if (!a.question) {
    const p = a.profile;
    const lower = lowered ?? text.toLowerCase();
    if (!p.quoted.every((q) => text.includes(q) || lower.includes(q.toLowerCase()))) return false;
    return p.quoted.length > 0 ? consistent(p, text) : matches(p, text, policy, lower);
  }
  const support = supportOf(a, { text, role: 'system', timestamp: 0, meta: null }, exact, policy);
  return !decideMiss(a, [support], exact).miss;
}
