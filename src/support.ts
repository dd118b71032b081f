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
 *    A yes/no question's hyphenated compounds are part of its claim too (rule 1c): "did the
 *    agent install pytest-asyncio?" is not held by a turn that installs pytest-httpbin and
 *    imports asyncio (src/query.ts, claimCompounds). So is what a yes/no question says a call
 *    evaluates to, when the value is a literal of code without digits (rule 1d): "does Min()
 *    evaluate to -oo?" is held by `Min() = -oo` or "Min() returns -oo", not by `Max() = -oo`
 *    nor by a line that names Min() and -oo apart (src/query.ts, claimRelation).
 * 2. The framing. Every identifier (a path, a dotted, snake_case or camelCase name) and every
 *    name (a capitalized word inside a sentence) must be held by one of the best-supported
 *    candidates. "Which Vagrant box…" when no span says Vagrant is a miss.
 * 3. The party. When the query attributes a claim to a party ("did I say 179 books?"), a
 *    candidate that holds the claim must have been said by that party; when only the other
 *    party's turns hold it, the answer is a miss and the hits' support says who said it. The
 *    environment is a party too ("did the environment report Python 3.8.12?"): tool output
 *    alone (spanIsToolOutput), so a version that only the task statement and the agent's words
 *    state was never reported by it.
 * 4. Nothing else. A query without values, identifiers or names ("what did we decide about
 *    the build backend?") is not a miss while any candidate shares a word with it: its other
 *    words may all differ from its evidence. Low word coverage alone never makes a miss
 *    (rule 6 reads what a question asks for, never how many of its words a span holds).
 * 5. Nothing in common. When no candidate holds even one of the query's content terms
 *    (verbatim or by normal form), the nearest vectors are not evidence: a miss.
 * 6. What is asked for. A wh-question with nothing specific in it (no value, no quoted part:
 *    those are its claim, rule 1) that asks for a qualified noun ("which pip package did
 *    the agent install?") asks about something stated with that qualifier: when the head noun
 *    (package) is stated where the question is — within ASKED_FRAME_TURNS turns of the
 *    candidates that hold its names, or anywhere when it names nothing — and none of its
 *    qualifiers (pip) there, it is a miss (src/search.ts, askedOutsideFrame). A head noun not
 *    stated there decides nothing: the evidence may word it otherwise. An adjective that
 *    selects among things of the kind ("which extra pip package") is no qualifier (rule 6a,
 *    src/query.ts SELECTING): the evidence (`pip install …`) need not repeat it.
 * 7. Where it is asked. A question that names a part of the session ("In the xarray int32
 *    stack task, …", "On day 12, …") asks about what was said there: when the store's fields
 *    resolve that part (src/scope.ts: a run of spans sharing an `episode`, a `source_file`…),
 *    every qualifier of what it asks for (rule 6's noun: "which dask chunk size") must be
 *    stated in the part's spans, or it is a miss — though another part says it ("chunk" in
 *    another task). A value in the question does not exempt it ("which Python 3.8.12 docker
 *    image": the task states 3.8.12 and never docker); a quoted part does (the evidence
 *    itself). A part not resolved — no field marks parts, or its name is ambiguous — changes
 *    nothing.
 * 8. The quote. A query of QUOTE_MIN_WORDS words or more that one candidate holds word for
 *    word at one place but for a changed word (at most one in QUOTE_WORDS_PER_CHANGE: a
 *    number shifted, a letter of an identifier, a word misspelled into another) is an
 *    excerpt of that span, misquoted: a miss (`value-contradicted`), whatever a looser
 *    candidate holds by coverage ("- DO NOT MODIFY: Tests, configvration files
 *    (pyproject.toml, setup.cfg, etc.)" is not held by a span that only names
 *    pyproject.toml and setup.cfg), unless some candidate holds it word for word. A question
 *    is read without its opening question word, and after the rules above: its claim decides
 *    first; its differing word is a changed one only when it is a value or a one-letter
 *    variant of the span's (its other words are the asker's). A quote held up to a span's edge is read on in the span beside it
 *    (settleCutQuote); words in src/quote.ts.
 */
import { consistent, contextHolds, contradicts, matches, type MatchPolicy, DEFAULT_MATCH_POLICY, type QueryProfile } from './match.js';
import { normalForm, type Party, type QueryAnalysis } from './query.js';
import { isToolOutput } from './meta.js';
import { quoteHold, quoteWords, type QuoteHold } from './quote.js';

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
  /**
   * Present when this span holds the query's words nearly in full at one place (rule 8,
   * src/quote.ts): word for word (`words`), word for word but for a few changed words
   * (`changed`: `asked` → `stated`; `claim` is then false), or word for word up to the span's
   * start or end, the rest not found in the span beside it (`cut`: changes nothing).
   */
  quote?: QuoteHold;
}

/** The fields of a span that count for support besides its text. */
export interface SupportSpan {
  text: string;
  role: string;
  speaker?: string;
  timestamp: number;
  meta: Record<string, unknown> | null;
}

const TERM_SCAN_CHARS = 16_384;
/** A hyphenated compound a yes/no question claims (claimCompounds): held in any spelling its test allows. */
const COMPOUND = /^\p{L}+(?:-\p{L}+)+$/u;
/**
 * The endings a word may carry beyond its normal form (`enjoy` + `ed`, `configur` +
 * `ation`), so that a stem does not hold every longer word that begins like it (`redi`
 * must not hold `redirect`).
 */
const SUFFIX_LIST = ['e', 's', 'es', 'ed', 'd', 'ing', 'ings', 'er', 'ers', 'est', 'ly', 'y', 'ies', 'ied', 'ion', 'ions', 'ation', 'ations', 'al', 'ally', 'ment', 'ments', 'ness', 'ity', 'ities', 'ive', 'able', 'ably', 'ise', 'ize', 'ised', 'ized', 'ising', 'izing', 'ful', 'less'];

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

/** Whether a span is tool output (src/meta.ts isToolOutput: its role or its metadata `kind`). */
export const spanIsToolOutput = (span: Pick<SupportSpan, 'role' | 'meta'>) => isToolOutput(span.role, span.meta?.kind);

export function partyLabel(p: Party): string {
  return p.kind === 'name' ? p.name : p.kind;
}

export function saidBy(p: Party, span: SupportSpan): { said: string; match: boolean } {
  if (p.kind === 'name') {
    const said = span.speaker ?? span.role;
    return { said, match: said.toLowerCase() === p.name.toLowerCase() };
  }
  if (p.kind === 'tool') {
    const tool = spanIsToolOutput(span);
    return { said: tool ? 'tool' : (span.speaker ?? side(span.role)), match: tool };
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
/**
 * A query's word forms in one table: each form maps to the entries it holds — the content
 * terms (0 … terms-1), then the names and identifiers (as written or plural). Built once per
 * query, so one pass over a span's words answers all of them.
 */
interface QueryForms {
  /**
   * Each form's entries as bits (entry e: bit e), for entries below MASK_ENTRIES; a form of
   * a later entry (a query of more than 30 terms and names) is in `later` as well.
   */
  byForm: Map<string, number>;
  later: Map<string, number[]> | null;
  /** First characters of the forms (ASCII by table, others by set): a word starting otherwise is skipped unread. */
  firstAscii: Uint8Array;
  firstOther: Set<number>;
  shortest: number;
  longest: number;
}
/** Entries a form's bit mask holds (the bits of a small integer, which V8 keeps unboxed). */
const MASK_ENTRIES = 30;
const perQuery = new WeakMap<QueryAnalysis, QueryForms>();
function queryForms(a: QueryAnalysis): QueryForms {
  let q = perQuery.get(a);
  if (!q) {
    // One integer per form rather than an array of entries: the table is built for every
    // search (hundreds of forms for a question), so its entries are not allocated one by one.
    const byForm = new Map<string, number>();
    let later: Map<string, number[]> | null = null;
    const firstAscii = new Uint8Array(128);
    const firstOther = new Set<number>();
    let shortest = Number.POSITIVE_INFINITY;
    let longest = 0;
    const add = (forms: readonly string[], entry: number) => {
      const bit = entry < MASK_ENTRIES ? 1 << entry : 0;
      for (const f of forms) {
        if (f.length === 0) continue;
        const had = byForm.get(f);
        if (had === undefined) {
          const c = f.charCodeAt(0);
          if (c < 128) firstAscii[c] = 1;
          else firstOther.add(c);
          if (f.length < shortest) shortest = f.length;
          if (f.length > longest) longest = f.length;
        }
        byForm.set(f, (had ?? 0) | bit);
        if (bit === 0) {
          later ??= new Map();
          const e = later.get(f);
          if (!e) later.set(f, [entry]);
          else if (!e.includes(entry)) e.push(entry);
        }
      }
    };
    for (let i = 0; i < a.terms.length; i++) add(formsOf(a.terms[i]!.norm, a.terms[i]!.term), i);
    for (let j = 0; j < a.framing.length; j++) add(pluralsOf(a.framing[j]!), a.terms.length + j);
    perQuery.set(a, (q = { byForm, later, firstAscii, firstOther, shortest, longest }));
  }
  return q;
}

/**
 * Marks in `held` which of the query's terms and names the lower-cased `hay` holds as whole
 * words: one pass over its words (runs between separators); a word is read only when its
 * first character and length fit some form. No array of words is built (most candidates are
 * long tool output).
 */
function scanWords(q: QueryForms, hay: string, held: Uint8Array): void {
  const n = hay.length;
  let mask = 0;
  let i = 0;
  while (i < n) {
    while (i < n && isSep(hay.charCodeAt(i))) i++;
    if (i >= n) break;
    const start = i;
    const c0 = hay.charCodeAt(i);
    while (i < n && !isSep(hay.charCodeAt(i))) i++;
    const len = i - start;
    if (len < q.shortest || len > q.longest || !(c0 < 128 ? q.firstAscii[c0] === 1 : q.firstOther.has(c0))) continue;
    const word = hay.slice(start, i);
    const m = q.byForm.get(word);
    if (m === undefined) continue;
    mask |= m;
    const e = q.later?.get(word);
    if (e) for (const x of e) held[x] = 1;
  }
  for (let x = 0; mask !== 0; x++, mask >>>= 1) if (mask & 1) held[x] = 1;
}
/**
 * Word boundaries: ASCII characters other than letters, digits and `_`, white space and
 * general punctuation (U+2000–U+206F). A non-ASCII letter is a word character. ASCII by
 * table: the scans read every character of their candidates' first TERM_SCAN_CHARS.
 */
const SEP_ASCII = Uint8Array.from({ length: 128 }, (_, c) => (c <= 0x2f || (c >= 0x3a && c <= 0x40) || (c >= 0x5b && c <= 0x5e) || c === 0x60 || c >= 0x7b ? 1 : 0));
const isSep = (c: number) => (c < 128 ? SEP_ASCII[c] === 1 : (c >= 0x2000 && c <= 0x206f) || c === 0xa0 || c === 0x1680 || c === 0x3000 || c === 0xfeff);

/** A set of word forms and the shortest of them that every other one begins with. */
interface FormSet {
  forms: ReadonlySet<string>;
  bases: readonly string[];
  longest: number;
}
const formSets = new WeakMap<readonly string[], FormSet>();
function formSet(forms: readonly string[]): FormSet {
  let f = formSets.get(forms);
  if (!f) {
    const bases = forms.filter((x) => x.length > 0 && !forms.some((y) => y !== x && y.length > 0 && x.startsWith(y)));
    formSets.set(forms, (f = { forms: new Set(forms), bases, longest: Math.max(0, ...forms.map((x) => x.length)) }));
  }
  return f;
}

/**
 * Whether the lower-cased `hay` has a whole word (a run of word characters) equal to one of
 * `forms`. Each occurrence of a base form that starts a word is extended to the word's end
 * and looked up: the text is never split into words (most candidates are long tool output,
 * and a question has a handful of terms).
 */
function holdsAny(forms: readonly string[], hay: string): boolean {
  const { forms: set, bases, longest } = formSet(forms);
  for (const base of bases) {
    for (let at = hay.indexOf(base); at >= 0; at = hay.indexOf(base, at + 1)) {
      if (at > 0 && !isSep(hay.charCodeAt(at - 1))) continue;
      let end = at + base.length;
      while (end < hay.length && end - at <= longest && !isSep(hay.charCodeAt(end))) end++;
      if (end - at <= longest && set.has(hay.slice(at, end))) return true;
    }
  }
  return false;
}

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

/** The query's content terms the lower-cased `hay` holds, and the table of every entry held (scanWords). */
function heldIn(a: QueryAnalysis, ...parts: string[]): { matched: string[]; missing: string[]; held: Uint8Array } {
  const matched: string[] = [];
  const missing: string[] = [];
  const held = new Uint8Array(a.terms.length + a.framing.length);
  const q = queryForms(a);
  for (const part of parts) scanWords(q, part, held);
  for (let i = 0; i < a.terms.length; i++) (held[i] ? matched : missing).push(a.terms[i]!.term);
  return { matched, missing, held };
}

/**
 * The query's content terms a span holds (verbatim or by normal form, in its text's first
 * TERM_SCAN_CHARS or its fields) and those it lacks: supportOf's `terms`, without the rest of
 * the record (src/scope.ts reads it of the spans that may name a scope).
 */
export function termsHeld(a: QueryAnalysis, span: SupportSpan): { matched: string[]; missing: string[] } {
  const text = span.text.length > TERM_SCAN_CHARS ? span.text.slice(0, TERM_SCAN_CHARS) : span.text;
  const { matched, missing } = heldIn(a, text.toLowerCase(), fieldText(span));
  return { matched, missing };
}

/** The support of one span for one query. `exact`: the span holds the whole query verbatim. */
/**
 * Whether a question's claim is empty of anything a window must hold: no value, no value
 * context, no identifier with digits — every span holds it, so no window is built.
 */
const emptyClaim = (a: QueryAnalysis) => a.claim.every((v) => !a.profile.tests.has(v)) && a.profile.contextCount === 0 && a.profile.digitIds.length === 0;

/** The pattern of a numbered period ("day 12" holds `day-012.md`), built once per query. */
const periodTests = new WeakMap<QueryAnalysis, RegExp>();
function periodTest(a: QueryAnalysis, period: { unit: string; n: number }): RegExp {
  let re = periodTests.get(a);
  if (!re) periodTests.set(a, (re = new RegExp(`(?<![\\p{L}])${period.unit}s?[^\\p{L}\\p{N}]{0,3}0*${period.n}(?!\\p{N})`, 'u')));
  return re;
}

export function supportOf(a: QueryAnalysis, span: SupportSpan, exact = false, policy: MatchPolicy = DEFAULT_MATCH_POLICY): Support {
  // The whole text lower-cased only when a rule reads all of it (a claim, a quoted part):
  // tool output can be megabytes, and most questions only need its first TERM_SCAN_CHARS.
  let lowerCache: string | undefined;
  const lower = () => (lowerCache ??= span.text.toLowerCase());
  const fields = fieldText(span);
  // Terms and names are looked for in the first TERM_SCAN_CHARS of a long text (a tool
  // output of megabytes): they rank and explain; the claim is checked over the whole text.
  const head = span.text.length > TERM_SCAN_CHARS ? span.text.slice(0, TERM_SCAN_CHARS).toLowerCase() : lower();
  // Read word by word in its two parts (no word spans the line between them); joined only
  // for a rule that tests patterns across it (a value, a name).
  const { matched, missing, held } = heldIn(a, head, fields);
  let hayCache: string | undefined;
  const hay = () => (hayCache ??= `${head}\n${fields}`);
  const p = a.profile;
  const quotedHeld = p.quoted.every((q) => span.text.includes(q) || lower().includes(q.toLowerCase()));
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
  else if (emptyClaim(a)) claim = true;
  else {
    const r = claimHeld(p, a.claim, a.question, lower(), fields, span.text);
    claim = r.held;
    contradicted = r.contradicted;
  }
  // Rule 8: a query this span holds word for word but for a changed word misquotes it (one
  // it holds up to its start or end is read on across that edge by search: settleCutQuote).
  let quote: QuoteHold | null = null;
  if (!exact) {
    // Read in the text's first TERM_SCAN_CHARS, as the terms are: a question with nothing
    // specific in it never lower-cases megabytes of tool output for this rule.
    const words = quoteWordsOf(a);
    if (words) quote = quoteHold(words, span.text, head, a.question);
    // A question's claim is read by rules 1–7 first: its support is left as they judge it.
    if (quote?.kind === 'changed' && !a.question) {
      claim = false;
      contradicted = true;
    }
  }
  const vMatched: string[] = [];
  const vMissing: string[] = [];
  for (const v of a.claim) {
    // A value's pattern is compiled only for a span that holds its text at all.
    // A claimed compound is held in any of its spellings (`pytest_asyncio`): its test decides.
    const has = (hay().includes(v) || COMPOUND.test(v) || a.relations.includes(v)) && (p.tests.has(v) ? p.tests.get(v)!.test(hay()) : true);
    (has ? vMatched : vMissing).push(v);
  }
  const nMatched: string[] = [];
  const nMissing: string[] = [];
  a.framing.forEach((n, j) => (held[a.terms.length + j] || framingHeld(a, n, hay()) ? nMatched : nMissing).push(n));
  const s: Support = {
    terms: { matched, missing },
    values: { matched: vMatched, missing: vMissing, contradicted },
    names: { matched: nMatched, missing: nMissing },
    claim,
  };
  if (quote) s.quote = quote;
  if (a.party) s.speaker = { asked: partyLabel(a.party), ...saidBy(a.party, span) };
  if (a.time) s.time = { asked: a.time.text, match: span.timestamp >= a.time.from && span.timestamp <= a.time.to };
  else if (a.period) {
    const re = periodTest(a, a.period);
    s.time = { asked: `${a.period.unit} ${a.period.n}`, match: re.test(fields) || re.test(lower()) };
  }
  return s;
}

/**
 * Rule 8 across a span's edge: a span that holds the query word for word up to its start (or
 * end) holds a part of it; the rest is read in the span before (or after) it, joined to it.
 * Held word for word there, the quote is held (`words`); a word changed there makes it a
 * misquote (`changed`: no claim). Neither found there, the span's support stays as it was. `neighbour(-1)` is the text of the span before, `neighbour(1)`
 * of the one after (null when there is none of the same kind).
 */
export function settleCutQuote(a: QueryAnalysis, s: Support, text: string, neighbour: (side: -1 | 1) => string | null): void {
  const words = quoteWordsOf(a);
  if (!words || s.quote?.kind !== 'cut') return;
  const joined = `${neighbour(-1) ?? ''}\n${text}\n${neighbour(1) ?? ''}`;
  const across = quoteHold(words, joined, undefined, a.question);
  if (across?.kind === 'words') s.quote = across;
  // Changed only where the span beside it goes on with the quote: some word beyond the edge
  // held there too. One word beyond the edge, and that one other, is the asker's own
  // ("Was the TruncDate result…" of a span that starts at `TruncDate`), not a changed word.
  else if (across?.kind === 'changed' && across.asked.length < (s.quote.outside ?? 0)) {
    s.quote = across;
    if (!a.question) {
      s.claim = false;
      s.values.contradicted = true;
    }
  }
}

/** The statement's words for rule 8 (quoteWords), once per query; null when it is too short. */
const statementWords = new WeakMap<QueryAnalysis, string[] | null>();
function quoteWordsOf(a: QueryAnalysis): string[] | null {
  let w = statementWords.get(a);
  if (w === undefined) statementWords.set(a, (w = quoteWords(a.query.trim(), a.question)));
  return w;
}

const plurals = new Map<string, string[]>();
/** A name and its plurals, built once per name. */
function pluralsOf(n: string): string[] {
  let p = plurals.get(n);
  if (!p) {
    if (plurals.size > 8192) plurals.clear();
    plurals.set(n, (p = [n, `${n}s`, `${n}es`]));
  }
  return p;
}

/**
 * A name is held as written, or with a plural or possessive ending: `Vagrant` by vagrant(s),
 * never by a longer word that shares its letters (found by supportOf's scan of the words;
 * this function is asked only when that fails). An identifier (a path, a dotted name) is
 * held bounded, as the value tests of match.ts hold it. A pair joined by a slash in a
 * question (`Avg/Sum`, `usernames/passwords`) names two things and is held when both are.
 */
function framingHeld(a: QueryAnalysis, n: string, hay: string): boolean {
  if (hay.includes(n) && a.profile.tests.has(n) && a.profile.tests.get(n)!.test(hay)) return true;
  if (a.question && /^[\p{L}\p{N}]+\/[\p{L}\p{N}]+$/u.test(n))
    return n.split('/').every((part) => holdsAny(formsOf(/^\p{L}+$/u.test(part) ? normalForm(part) : part, part), hay));
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

export type MissReason =
  | 'value-not-stated'
  | 'value-contradicted'
  | 'name-not-stated'
  | 'qualifier-not-stated'
  | 'not-in-scope'
  | 'other-party'
  | 'nothing-in-common'
  | 'no-candidates';

export interface MissDecision {
  miss: boolean;
  reason?: MissReason;
  /** What was looked for and not found (values, names), or the party that did say it. */
  detail?: string;
}

/**
 * The miss decision over every candidate's support (the rules of this file's header).
 * `exact`: some candidate holds the whole query verbatim. `askedOutsideFrame` (rule 6) is
 * asked only when every other rule has passed: it searches the index around the candidates.
 */
export function decideMiss(
  a: QueryAnalysis,
  supports: readonly Support[],
  exact: boolean,
  askedOutsideFrame?: () => string | null,
  askedOutsideScope?: () => string | null,
): MissDecision {
  // `supports` arrive best first (search's rerank order).
  if (exact) return { miss: false };
  if (supports.length === 0) return { miss: true, reason: 'no-candidates' };
  // Rule 5: not one of the query's content terms in any candidate — the nearest vectors of
  // words the transcript never uses are not evidence.
  if (a.terms.length > 0 && supports.every((s) => s.terms.matched.length === 0))
    return { miss: true, reason: 'nothing-in-common', detail: a.terms.map((t) => t.term).join(', ') };
  // Rule 8: a statement some candidate holds word for word but for a changed word quotes that
  // place and misquotes it — unless another holds it word for word — whatever looser
  // candidates hold by coverage. (A question: after the rules that read its claim.)
  const misquote = misquoted(supports);
  if (!a.question && misquote) return misquote;
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
  // Rule 6: what the question asks for, qualified, stated without its qualifier where it asks.
  // Only for a question with nothing specific in it: a value or a quoted part is the claim
  // the question is held to ("what pytest summary line did `pytest -v` print?").
  const outside = a.asked && !specific && askedOutsideFrame ? askedOutsideFrame() : null;
  if (outside !== null) return { miss: true, reason: 'qualifier-not-stated', detail: outside };
  // Rule 7: in the part of the session the question names, every qualifier of what it asks
  // for must be stated; a value in the question does not exempt it (its value may be stated
  // there while the thing asked about never is), a quoted part does (src/scope.ts).
  const unscoped = a.asked && askedOutsideScope ? askedOutsideScope() : null;
  if (unscoped !== null) return { miss: true, reason: 'not-in-scope', detail: unscoped };
  if (specific && a.party && !supports.some((s) => s.claim && s.speaker?.match)) {
    const by = supports.find((s) => s.claim)?.speaker?.said;
    return { miss: true, reason: 'other-party', detail: `said by ${by ?? 'another party'}, not ${partyLabel(a.party)}` };
  }
  if (misquote) return misquote;
  return { miss: false };
}

/** Rule 8's decision: the first candidate that misquotes the query, unless another holds it word for word. */
function misquoted(supports: readonly Support[]): MissDecision | null {
  if (supports.some((s) => s.quote?.kind === 'words')) return null;
  const mis = supports.find((s) => s.quote?.kind === 'changed');
  if (!mis) return null;
  return { miss: true, reason: 'value-contradicted', detail: mis.quote!.asked.map((w, i) => `${w} (stated: ${mis.quote!.stated[i]})`).join(', ') };
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
    // Rule 8: a text that misquotes the statement does not answer it (one that holds a part
    // of it up to its edge is judged as before: a summary has no span beside it).
    const words = quoteWordsOf(a);
    if (words && quoteHold(words, text, lower, a.question)?.kind === 'changed') return false;
    return p.quoted.length > 0 ? consistent(p, text) : matches(p, text, policy, lower);
  }
  const support = supportOf(a, { text, role: 'system', timestamp: 0, meta: null }, exact, policy);
  return !decideMiss(a, [support], exact).miss;
}
