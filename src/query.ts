/**
 * What a query asks, read once before any candidate is fetched: its content terms (question
 * words dropped, each with its normal form), its specific content (values, identifiers,
 * quoted strings, names), the party it attributes a statement to, and the time it names.
 * Search ranks by the terms and decides "not in transcript" from the specifics only
 * (src/support.ts): a question whose words differ from its evidence is not a miss.
 */
import { addon } from './native.js';
import { defineCompound, defineQuotedValue, defineRelation, profileQuery, type QueryProfile } from './match.js';

/**
 * Words that carry no content in a question: function words, question words, and the
 * verbs and fillers that frame a question ("what did the assistant say about …"). Applied
 * to the BM25 query and to support; the exact-phrase path never drops anything.
 */
export const QUESTION_STOP = new Set(
  (
    'a about above after again against all also am an and any are as at be been before being below between both but by can could ' +
    'did do does doing done down during each either else ever few for from further had has have having he her here hers herself him ' +
    'himself his how i if in into is it its itself just least let like may me might more most much must my myself no nor not now of ' +
    'off on once only or other ought our ours ourselves out over own per same shall she should so some such than that the their theirs ' +
    'them themselves then there these they this those through thus to too under until up upon us very was we were what whatever when ' +
    'whenever where whether which while who whom whose why will with within without would yes yet you your yours yourself ' +
    // question framing: asking about something said, not content of it
    'actually already anything back call called came come comes get gets getting go goes going got happen happened kind know mean ' +
    'said say says tell told asked ask mention mentioned state stated describe described exactly really something thing things ' +
    'time turn session use used using want wanted way one ones'
  ).split(' '),
);

/**
 * A party a question attributes a statement to. `user` and `agent` are roles; `tool` is what
 * the environment printed (tool output: "did the environment report…"); anything else is a
 * speaker name.
 */
export type Party = { kind: 'user' } | { kind: 'agent' } | { kind: 'tool' } | { kind: 'name'; name: string };

export interface TimeRange {
  /** Inclusive, milliseconds since the epoch (UTC). */
  from: number;
  to: number;
  /** As the question wrote it ("May 2023"). */
  text: string;
}

export interface QueryAnalysis {
  query: string;
  /** The honest-miss profile of match.ts: values, identifiers, quoted parts, contexts. */
  profile: QueryProfile;
  /** Content terms (lower-cased, question words dropped), each with its normal form. */
  terms: { term: string; norm: string }[];
  /** Capitalized words that are not at the start of a sentence, nor `I`: names of people, products, tools. */
  names: string[];
  /** Numbers, digit identifiers and quoted parts: the claim a candidate must hold together. */
  claim: string[];
  /** Identifiers without digits and names: each must be held by some candidate. */
  framing: string[];
  party: Party | null;
  time: TimeRange | null;
  /** "day 12", "session 3": a numbered period named in the question, matched against fields. */
  period: { unit: string; n: number } | null;
  /** A question rather than a statement quoted from the transcript (see isQuestion). */
  question: boolean;
  /** The query handed to BM25: content terms and values, without question words. */
  bm25: string;
  /**
   * What a wh-question asks for, when it names it with a qualified noun ("which pip package
   * did…", "what nginx config did…"): the head noun and the words that qualify it. See
   * askedFor.
   */
  asked: AskedFor | null;
  /** Claim keys that are relations (claimRelation: `min() = -oo`), held by their test alone. */
  relations: string[];
  /**
   * The part of the session a question's opening clause names ("In the Django runserver 0
   * task, …"): the words that name it, resolved against the store's fields by src/scope.ts.
   * Null when the question opens with no such clause.
   */
  scope: NamedScope | null;
}

/** A part of the session named by a question's opening clause. */
export interface NamedScope {
  /** The words naming it, around the noun: "Django runserver 0", "Django about TruncDate ignoring tzinfo". */
  text: string;
  /** The noun that says what kind of part it is: task, episode, session… */
  noun: string;
}

/**
 * Nouns for a part of a session a question can open with ("In the <name> task, …"): a unit of
 * work or of conversation that a host's metadata marks (an episode, a session, a chapter, the
 * file a stretch of turns was read from). Which field marks it is not read from the noun: the
 * store's fields resolve the name (src/scope.ts).
 */
const PART_NOUNS = 'task|episode|session|conversation|chat|thread|chapter|file|run|job|issue|ticket|project|phase|stage|sprint|iteration';
const NAMED_SCOPE = new RegExp(`^\\s*(?:in|during|for|within|throughout)\\s+(?:the\\s+)?([^,?\\n]*?)\\s*\\b(${PART_NOUNS})\\b([^,?\\n]*),`, 'iu');

/**
 * The part of the session a question's opening clause names: "In the <words> task, …",
 * "During the <words> session where <words>, …". The words before and after the noun name it;
 * a clause with no word besides the noun ("In the task, …") names nothing.
 */
export function namedScope(query: string): NamedScope | null {
  const m = NAMED_SCOPE.exec(query);
  if (!m) return null;
  const text = `${m[1]!} ${m[3]!}`.replace(/\s+/gu, ' ').trim();
  return /[\p{L}\p{N}]/u.test(text) ? { text, noun: m[2]!.toLowerCase() } : null;
}

/** The noun phrase a wh-question asks for: its head noun and the content words before it. */
export interface AskedFor {
  head: string;
  qualifiers: string[];
}

const AUXILIARY = 'did|does|do|was|were|is|are|has|have|had|can|could|should|would|will';
/** `which`/`what`, then up to four words, then the question's auxiliary verb. */
/** A question opening with an auxiliary: a yes/no question (claimCompounds). */
const YES_NO = new RegExp(`^(?:${AUXILIARY})\\b`, 'iu');
/** A word of the asked-for phrase: letters and digits, with inner dots (a version: `3.8.12`, never a qualifier). */
const ASKED_FOR = new RegExp(`\\b(?:which|what)\\s+((?:[\\p{L}\\p{N}][\\p{L}\\p{N}'’]*(?:\\.[\\p{L}\\p{N}]+)*\\s+){2,4}?)(?:${AUXILIARY})\\b`, 'iu');

/**
 * The noun phrase a wh-question asks for, when it has a qualifier: "which extra pip package
 * did the agent install" asks for a package, qualified by pip; "which MySQL timezone tables"
 * for tables, qualified by mysql and timezone. Null when the phrase is a single noun, or holds
 * a function word ("which line of runserver.py is": a noun with its complement, not a
 * qualified noun). Qualifiers that say how rather than what are left out: question words,
 * adverbs and adjectives in -ly ("monthly price", "the exact release"), values (numbers and
 * identifiers, which the claim already holds to), words with punctuation in them, and the
 * adjectives that pick one thing among things of the kind (SELECTING: "extra", "new",
 * "first", "exact"): they restrict which one, not what kind, so the evidence need not repeat
 * them ("which extra pip package" is answered by a `pip install` line that never says extra).
 */
export function askedFor(query: string): AskedFor | null {
  const m = ASKED_FOR.exec(query);
  if (!m) return null;
  const words = m[1]!
    .trim()
    .split(/\s+/u)
    .map((w) => w.toLowerCase());
  if (words.some((w) => STOP_WORDS.has(w))) return null;
  const head = words[words.length - 1]!;
  if (!/^\p{L}{2,}$/u.test(head)) return null;
  const qualifiers = words.slice(0, -1).filter((w) => /^\p{L}{2,}$/u.test(w) && !QUESTION_STOP.has(w) && !w.endsWith('ly') && !SELECTING.has(w));
  return qualifiers.length > 0 ? { head, qualifiers } : null;
}

/**
 * Adjectives that select among things of one kind rather than name a kind: order and time
 * (first, last, next, previous, new, old, latest, initial, final, original, current),
 * identity and difference (same, other, different, extra, additional, own), exactness and
 * scope (exact, actual, specific, particular, main, whole, entire, full, certain, various).
 * A closed class of English, not words of any transcript: a qualifier from it is never what
 * the evidence must state (rule 6).
 */
const SELECTING = new Set(
  'first second third last next previous prior earlier later new newer newest old older oldest latest initial final original current same other another different extra additional own exact actual specific particular main whole entire full certain various usual'.split(' '),
);

/** Function words: a phrase that holds one is not a plain qualified noun. */
const STOP_WORDS = new Set('a an the of in on at to for from by with about into over under this that these those its it their our my your his her'.split(' '));

/** The lexical index's normal form of a folded token (Porter2 stem, diacritics folded, leading zeros dropped). */
export function normalForm(term: string): string {
  // The index's own function (native/lexical/stemmer.h), so a query's forms are the ones it filed.
  return addon().normalizeTerm(term);
}

const MONTHS = ['january', 'february', 'march', 'april', 'may', 'june', 'july', 'august', 'september', 'october', 'november', 'december'];
const MONTH_RE = '(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)';
const monthIndex = (m: string) => MONTHS.findIndex((x) => x.startsWith(m.toLowerCase().slice(0, 3)));

/**
 * A date is the question's time when a word of time introduces it ("on 2023-05-08", "in May
 * 2023", "during the 8 May 2023 run") or it opens the question; elsewhere it is a value the
 * question asks about ("did TruncDate return 2019-12-30?"), part of its claim.
 */
const WHEN = '(?<=(?:^\\s*|\\b(?:on|in|at|during|since|before|after|until|till|by|from|of|between|around|through)\\s+(?:the\\s+)?))';

const ISO_DATE = new RegExp(`${WHEN}\\b(\\d{4})-(\\d{2})-(\\d{2})\\b`);
const DAY_MONTH_YEAR = new RegExp(`${WHEN}\\b(\\d{1,2})(?:st|nd|rd|th)?\\s+(?:of\\s+)?${MONTH_RE}\\.?,?\\s+(\\d{4})\\b`);
const MONTH_DAY_YEAR = new RegExp(`${WHEN}\\b${MONTH_RE}\\.?\\s+(\\d{1,2})(?:st|nd|rd|th)?,?\\s+(\\d{4})\\b`);
const MONTH_YEAR = new RegExp(`${WHEN}\\b${MONTH_RE}\\.?,?\\s+(?:of\\s+)?(\\d{4})\\b`);

/**
 * The time a question names: an ISO date (2023-05-08), a day with a month and year (8 May
 * 2023, May 8, 2023), a month and year (May 2023), or a year (in 2023). Relative dates
 * ("yesterday", "last week") are not resolved: they need the time of asking, which a
 * transcript question does not carry.
 */
export function parseTime(query: string): TimeRange | null {
  const q = query.toLowerCase();
  let m = ISO_DATE.exec(q);
  if (m) {
    const from = Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!);
    return { from, to: from + 86_400_000 - 1, text: m[0] };
  }
  m = DAY_MONTH_YEAR.exec(q);
  if (m) {
    const from = Date.UTC(+m[3]!, monthIndex(m[2]!), +m[1]!);
    return { from, to: from + 86_400_000 - 1, text: m[0] };
  }
  m = MONTH_DAY_YEAR.exec(q);
  if (m) {
    const from = Date.UTC(+m[3]!, monthIndex(m[1]!), +m[2]!);
    return { from, to: from + 86_400_000 - 1, text: m[0] };
  }
  m = MONTH_YEAR.exec(q);
  if (m) {
    const y = +m[2]!;
    const mi = monthIndex(m[1]!);
    return { from: Date.UTC(y, mi, 1), to: Date.UTC(y, mi + 1, 1) - 1, text: m[0] };
  }
  m = /\b(?:in|during|of|since)\s+((?:19|20)\d{2})\b/.exec(q);
  if (m) return { from: Date.UTC(+m[1]!, 0, 1), to: Date.UTC(+m[1]! + 1, 0, 1) - 1, text: m[1]! };
  return null;
}

const PERIOD = /\b(day|session|week|episode|sprint|chapter|iteration)\s+#?(\d{1,4})\b/i;

/**
 * The party a question attributes a statement to, by its first mention: "I", "me", "my",
 * "the user" are the user; "you", "the assistant", "the agent", "the model" the agent side
 * (its tool output included); "the environment", "the output", "the terminal", "the shell",
 * "the console" as the subject of what was printed ("did the environment report…", "what
 * did the terminal show?") are the tool output alone (TOOL_PARTY); a name given in
 * `speakers` is that speaker.
 */
export function parseParty(text: string, speakers: ReadonlySet<string> = new Set()): Party | null {
  // Quoted parts are what was said or run (`tree -I …`, "did you…"), not who the question asks about.
  const query = text.replace(/`[^`]*`|"[^"\n]*"|(?<![\p{L}\p{N}])['‘][^'’\n]*['’](?![\p{L}\p{N}])/gu, (m) => ' '.repeat(m.length));
  let best: { at: number; party: Party } | null = null;
  const consider = (re: RegExp, party: Party) => {
    const m = re.exec(query);
    if (m && (best === null || m.index < best.at)) best = { at: m.index, party };
  };
  consider(/(?<![-\p{L}\p{N}])(?:I|me|my|myself)(?![-\p{L}\p{N}])|\bthe user\b/u, { kind: 'user' });
  consider(/\b(?:you|your)\b|\bthe (?:assistant|agent|model|bot|AI)\b/i, { kind: 'agent' });
  consider(TOOL_PARTY, { kind: 'tool' });
  for (const s of speakers) {
    const esc = s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    consider(new RegExp(`(?<![\\p{L}\\p{N}])${esc}(?![\\p{L}\\p{N}])`, 'iu'), { kind: 'name', name: s });
  }
  return best === null ? null : (best as { party: Party }).party;
}

/**
 * The environment as the subject of a report: "the environment", "the (tool|command)
 * output", "the terminal", "the shell", "the console", followed by a verb of reporting or
 * having ("did the environment report…", "what did the terminal show?"). Not "the shell
 * helper" (a qualifier), "installed in the environment" or "protect the environment" (a place
 * or a thing talked about): none of these says who printed what.
 */
const TOOL_PARTY =
  /\bthe (?:environment|(?:tool |command )?output|terminal|shell|console)\s+(?:report|print|show|say|said|return|display|list|give|gave|turn|output|produc|emit|log|indicat|ha[sdv])/i;

const WORD = /[\p{L}\p{N}][\p{L}\p{N}_'’-]*/gu;

/** A question (not a statement quoted from the transcript): ends with `?` or opens with a question word. */
export function isQuestion(query: string): boolean {
  const q = query.trim();
  return q.endsWith('?') || /^(?:who|whom|whose|what|which|when|where|why|how|did|do|does|is|are|was|were|has|have|had|can|could|should|would|will|in what|on what|at what)\b/i.test(q);
}

/**
 * The hyphenated compounds a yes/no question puts to the transcript ("did the agent install
 * pytest-asyncio…?", "do the tests run on ubuntu-latest?"): the question asserts that thing and
 * asks for confirmation, so the compound is part of its claim, held as written (see
 * defineCompound) or a miss. The question's framing clause ("In the proxy-auth task, …") and
 * its quoted parts are not the claim: their words are the asker's. A wh-question's compounds
 * describe what it asks about in the asker's words ("the never-opened user's fixture") and
 * are not claims.
 */
export function claimCompounds(query: string): string[] {
  const body = query
    .replace(/^\s*(?:in|on|at|during|for|after|before|when)\b[^,?]*,\s*/iu, '')
    .replace(/`[^`]*`|"[^"\n]*"|(?<![\p{L}\p{N}])['‘][^'’\n]*['’](?![\p{L}\p{N}])/gu, ' ');
  if (!YES_NO.test(body)) return [];
  const out: string[] = [];
  for (const m of body.matchAll(/(?<![\p{L}\p{N}_./-])\p{L}+(?:-\p{L}+)+(?![\p{L}\p{N}_./-])/gu)) {
    const w = m[0].toLowerCase();
    if (!out.includes(w)) out.push(w);
  }
  return out;
}

/**
 * Literal values of code that carry no digit: a question that says an expression evaluates
 * to one of them states a value as specific as a number.
 */
const LITERAL = new Set('none null nil undefined true false nan inf infinity'.split(' '));
const RELATION = new RegExp(
  `^(?:${AUXILIARY})\\s+[\`'"]?([\\p{L}_][\\p{L}\\p{N}_.]*\\([^()\\n]*\\))[\`'"]?\\s+(?:(?:still|now|then|really|actually|correctly|always)\\s+)?(?:evaluates?|evaluated|returns?|returned|gives?|gave|yields?|yielded|equals?|equaled|becomes?|became|produces?|produced|print|prints|printed|output|outputs|be)(?:\\s+to)?\\s+[\`'"]?([+-]?[\\p{L}_][\\p{L}\\p{N}_]*)(?![\\p{L}\\p{N}_(.])`,
  'iu',
);

/**
 * What a yes/no question says a call evaluates to, when the value is a literal of code
 * without digits ("does Min() evaluate to -oo?", "did parse() return None?"): the call and the
 * value, lower-cased, as `min() = -oo`. A value with digits is already a value of the claim;
 * a value that is a plain word ("does f() return a list?") is no literal and claims nothing.
 */
export function claimRelation(query: string): { key: string; expr: string; value: string } | null {
  const body = query
    .replace(/^\s*(?:in|on|at|during|for|after|before|when)\b[^,?]*,\s*/iu, '')
    .trim();
  const m = RELATION.exec(body);
  if (!m) return null;
  const value = m[2]!.toLowerCase();
  if (!/^[+-]/.test(value) && !LITERAL.has(value)) return null;
  if (/^[+-]?\d/.test(value)) return null;
  const expr = m[1]!.toLowerCase();
  return { key: `${expr} = ${value}`, expr, value };
}

/** Single-quoted parts of a question ('or 0', 'Proper Git hygene'): apostrophes inside words are not quotes. */
const SINGLE_QUOTED = /(?<![\p{L}\p{N}])['‘]([^'’\n]{2,}?)['’](?![\p{L}\p{N}])/gu;

export function analyzeQuery(query: string, speakers: ReadonlySet<string> = new Set()): QueryAnalysis {
  const profile = profileQuery(query);
  const question = isQuestion(query);
  const shortQuoted: string[] = [];
  if (question) {
    for (const m of query.matchAll(SINGLE_QUOTED)) {
      const part = m[1]!;
      if (!profile.allQuoted.includes(part)) profile.allQuoted.push(part);
      if (part.length >= 6 && !profile.quoted.includes(part)) profile.quoted.push(part);
      // A value inside the quote is not next to the words outside it ("the 'or 0' fallback"
      // is not "0 fallback"): the quote stands verbatim in its evidence, its surroundings need
      // not. A short quote with a value is then its own claim, held verbatim (`or 0`, not a 0).
      if (!/\d/.test(part)) continue;
      if (part.length < 6) shortQuoted.push(part.toLowerCase());
      const around = [query.slice(0, m.index).match(/([\p{L}\p{N}_]+)[^\p{L}\p{N}_]*$/u)?.[1], query.slice(m.index! + m[0].length).match(/^[^\p{L}\p{N}_]*([\p{L}\p{N}_]+)/u)?.[1]];
      for (const w of around) if (w) profile.dropContexts((source) => source.includes(w.toLowerCase()), true);
    }
  }
  const terms: { term: string; norm: string }[] = [];
  const seen = new Set<string>();
  const names: string[] = [];
  // Sentence starts: a capital there says nothing about a name.
  const sentenceStart = (at: number) => /(?:^|[.?!:;]\s+|\n\s*|["'(`]\s*)$/.test(query.slice(Math.max(0, at - 4), at)) || at === 0;
  for (const m of query.matchAll(WORD)) {
    const raw = m[0].replace(/['’](?:s|d|ll|m|re|ve|t)$/iu, '').replace(/['’-]+$/u, '');
    for (const part of raw.split(/[-'’]/u)) {
      const t = part.toLowerCase();
      if (t.length < 2 || QUESTION_STOP.has(t) || seen.has(t)) continue;
      seen.add(t);
      terms.push({ term: t, norm: /^\p{L}+$/u.test(t) ? normalForm(t) : t });
    }
    // Names: a capital inside a sentence (BookMinder, Vagrant, Caroline), not "I", not a
    // word already taken as a value or identifier.
    let at = m.index!;
    for (const part of raw.split(/(?<=[-'’])/u)) {
      const word = part.replace(/[-'’]+$/u, '');
      if (/^\p{Lu}/u.test(word) && word !== 'I' && word.length >= 3 && !sentenceStart(at) && !/\d/.test(word)) {
        const lower = word.toLowerCase();
        if (!QUESTION_STOP.has(lower) && !profile.identifiers.includes(lower) && !names.includes(lower)) names.push(lower);
      }
      at += part.length;
    }
  }
  const periodMatch = PERIOD.exec(query);
  const period = periodMatch ? { unit: periodMatch[1]!.toLowerCase(), n: Number(periodMatch[2]) } : null;
  // A numbered period ("day 12") says when, not what: it ranks and is reported as time
  // support, but it is not part of the claim a miss is decided on.
  const periodValue = periodMatch ? periodMatch[2]!.replace(/^0+(?=\d)/, '') : null;
  if (periodValue !== null) profile.dropContexts((source) => source.includes(periodValue), false);
  // Likewise the numbers of a date the question names: they are matched against timestamps.
  const time = parseTime(query);
  const timeValues = new Set(time ? (time.text.match(/\d+/g) ?? []).map((d) => d.replace(/^0+(?=\d)/, '')) : []);
  if (time) {
    const iso = /^\d{4}-\d{2}-\d{2}$/.test(time.text);
    profile.dropContexts((source) => [...timeValues].some((v) => source.includes(v)), true);
    if (iso) timeValues.add(time.text);
  }
  // A question's period and date are matched against the span's fields and timestamp, never
  // required in its text (a quoted part is held with the question's standalone values).
  if (question) profile.standalone = profile.standalone.filter((v) => v !== periodValue && !timeValues.has(v));
  const claim = [...profile.standalone.filter((v) => v !== periodValue && !timeValues.has(v)), ...profile.digitIds.filter((v) => !timeValues.has(v)), ...profile.quoted.map((q) => q.toLowerCase())];
  for (const q of shortQuoted) {
    if (claim.includes(q)) continue;
    defineQuotedValue(profile, q);
    claim.push(q);
  }
  for (const c of question ? claimCompounds(query) : []) {
    if (claim.includes(c)) continue;
    defineCompound(profile, c);
    claim.push(c);
  }
  const relation = question ? claimRelation(query) : null;
  const relations: string[] = [];
  if (relation && !claim.includes(relation.key)) {
    defineRelation(profile, relation.key, relation.expr, relation.value);
    claim.push(relation.key);
    relations.push(relation.key);
  }
  const framing = [...profile.identifiers, ...names.filter((n) => !profile.identifiers.includes(n))];
  const bm25Terms = [...terms.map((t) => t.term), ...profile.values.filter((v) => !seen.has(v))];
  return {
    query,
    profile,
    terms,
    names,
    claim,
    framing,
    party: question ? parseParty(query, speakers) : null,
    time,
    period,
    question,
    bm25: bm25Terms.join(' '),
    asked: question ? askedFor(query) : null,
    relations,
    scope: question ? namedScope(query) : null,
  };
}
