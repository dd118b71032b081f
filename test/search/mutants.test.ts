// Rules of what a query is read as (src/query.ts), of the miss decision (src/support.ts) and
// of the honest-miss match (src/match.ts) that the other search tests leave unchecked: found
// by `npm run mutate` (docs/MUTATION.md). One describe per rule, on the pure functions.
import { describe, expect, it } from 'vitest';
import { analyzeQuery, isQuestion, parseParty, parseTime } from '../../src/query.js';
import { consistent, contextHolds, contradicts, coverage, matches, matchTerms, MAX_TERM_PATTERN_CHARS, pieceAt, profileQuery } from '../../src/match.js';
import { answersText, decideMiss, FRAME_TURNS, fieldText, saidBy, supportOf, type Support, type SupportSpan } from '../../src/support.js';
import { frameClaims } from '../../src/search.js';

const day = (y: number, m: number, d: number) => ({ from: Date.UTC(y, m - 1, d), to: Date.UTC(y, m - 1, d + 1) - 1 });

// Runs first in this file: a word's normal form comes from the lexical index, read once per
// process on first use, so the test that first asks for one is the one that sees how it is read.
describe("query: a word's normal form is the lexical index's (Porter2 stem)", () => {
  it('a word of letters is stemmed as the index stems it', () => {
    expect(analyzeQuery('What about running?').terms).toEqual([{ term: 'running', norm: 'run' }]);
  });
});

describe('query: the time a question names is read as a range of UTC milliseconds', () => {
  it('an ISO date is that day', () => {
    expect(parseTime('What failed on 2023-05-08?')).toEqual({ ...day(2023, 5, 8), text: '2023-05-08' });
  });
  it('a day, a month and a year, in either order, are that day', () => {
    expect(parseTime('What happened on 8th of May, 2023?')).toEqual({ ...day(2023, 5, 8), text: '8th of may, 2023' });
    expect(parseTime('What happened on May 8, 2023?')).toEqual({ ...day(2023, 5, 8), text: 'may 8, 2023' });
    expect(parseTime('What happened on Sept 30 2023?')).toEqual({ ...day(2023, 9, 30), text: 'sept 30 2023' });
  });
  it('a month and a year are that month, to its last millisecond', () => {
    expect(parseTime('Where did we go in May 2023?')).toEqual({ from: Date.UTC(2023, 4, 1), to: Date.UTC(2023, 5, 1) - 1, text: 'may 2023' });
  });
  it('a year after in, during, of or since is that year', () => {
    expect(parseTime('What changed in 2023?')).toEqual({ from: Date.UTC(2023, 0, 1), to: Date.UTC(2024, 0, 1) - 1, text: '2023' });
    expect(parseTime('What changed in  1999?')).toEqual({ from: Date.UTC(1999, 0, 1), to: Date.UTC(2000, 0, 1) - 1, text: '1999' });
    expect(parseTime('What changed in2023?')).toBeNull();
    expect(parseTime('Which port, 2023?')).toBeNull();
  });
});

describe('query: a date is the time only when a word of time introduces it (or it opens the question); elsewhere it is a value', () => {
  it('after on, in, during, since… (the optionally between) or at the start, a date is the time', () => {
    for (const q of ['What failed on 2023-05-08?', 'What failed during the 2023-05-08 run?', '2023-05-08: what failed?', 'What failed since 8 May 2023?', 'What failed before May 8, 2023?'])
      expect(parseTime(q), q).toEqual({ ...day(2023, 5, 8), text: expect.any(String) });
    expect(parseTime('Where did we go in May 2023?')?.text).toBe('may 2023');
  });
  it('a date the question asks about is no time: its numbers stay in the claim', () => {
    expect(parseTime('Did TruncDate wrongly return 2019-12-30?')).toBeNull();
    expect(parseTime('Was the deadline moved to 8 May 2023?')).toBeNull();
    expect(parseTime('Was the release May 2023 or June?')).toBeNull();
    const a = analyzeQuery('Did TruncDate wrongly return 2019-12-30?');
    expect(a.time).toBeNull();
    expect(a.claim).toEqual(['2019-12-30']);
  });
});

describe('query: the party is the first one the question mentions, outside its quoted parts', () => {
  it('the first mention wins, whichever side it is', () => {
    expect(parseParty('Did I tell you about the rate limit?')).toEqual({ kind: 'user' });
    expect(parseParty('Did you tell me about the rate limit?')).toEqual({ kind: 'agent' });
  });
  it('a mention inside backticks, double or single quotes is what was said, not who', () => {
    expect(parseParty('Was `echo I quit` what you ran?')).toEqual({ kind: 'agent' });
    expect(parseParty('Was "I quit" what you typed?')).toEqual({ kind: 'agent' });
    expect(parseParty("Was 'I quit' what you typed?")).toEqual({ kind: 'agent' });
    expect(parseParty("Did you paste ' I agree ' into the form?")).toEqual({ kind: 'agent' });
  });
  it('an apostrophe that closes nothing quotes nothing', () => {
    expect(parseParty("What was 'the fix you made?")).toEqual({ kind: 'agent' });
  });
  it('a speaker is matched as written, case aside, punctuation and all', () => {
    expect(parseParty('What did caroline say?', new Set(['Caroline']))).toEqual({ kind: 'name', name: 'Caroline' });
    expect(parseParty('What did Dr. Who say?', new Set(['Dr. Who']))).toEqual({ kind: 'name', name: 'Dr. Who' });
  });
});

describe('query: a question ends with ? or opens with a question word, surrounding blanks aside', () => {
  it('blanks around the text do not hide the question', () => {
    expect(isQuestion('the rate limit was 40 req/s? ')).toBe(true);
    expect(isQuestion('  what was the rate limit')).toBe(true);
    expect(isQuestion('the rate limit was 40 req/s')).toBe(false);
  });
});

describe("query: a question's single-quoted parts are quoted parts; a statement's are not", () => {
  it('a single-quoted part of 6+ chars is a quoted part and part of the claim, lower-cased', () => {
    const a = analyzeQuery("What did 'Proper Git hygene' refer to?");
    expect(a.profile.quoted).toEqual(['Proper Git hygene']);
    expect(a.profile.allQuoted).toEqual(['Proper Git hygene']);
    expect(a.claim).toEqual(['proper git hygene']);
  });
  it('six chars are enough; a part quoted twice is kept once', () => {
    expect(analyzeQuery("Did 'abcdef' appear?").profile.quoted).toEqual(['abcdef']);
    const twice = analyzeQuery("Did `Proper Git hygene` mean 'Proper Git hygene'?");
    expect(twice.profile.allQuoted).toEqual(['Proper Git hygene']);
    expect(twice.profile.quoted).toEqual(['Proper Git hygene']);
  });
  it('a shorter one must only be held verbatim', () => {
    const a = analyzeQuery("Did 'or 0' appear?");
    expect(a.profile.allQuoted).toEqual(['or 0']);
    expect(a.profile.quoted).toEqual([]);
  });
  it('in a statement, single quotes are the words themselves', () => {
    const a = analyzeQuery("we agreed on 'Proper Git hygene' today");
    expect(a.profile.quoted).toEqual([]);
    expect(a.profile.allQuoted).toEqual([]);
    expect(a.claim).toEqual([]);
  });
  it('a backticked part is lower-cased in the claim', () => {
    expect(analyzeQuery('What does `Proper Git Hygiene` mean?').claim).toEqual(['proper git hygiene']);
  });
});

describe("query: a question's content terms are its words of 2+ chars, question words and repeats dropped, with their normal form", () => {
  it('single letters, question words and repeats are dropped; two-letter words stay', () => {
    expect(analyzeQuery('What did x say about the build backend build?').terms.map((t) => t.term)).toEqual(['build', 'backend']);
    expect(analyzeQuery('Is CI green?').terms.map((t) => t.term)).toEqual(['ci', 'green']);
  });
  it('a word of letters gets its normal form; a word with digits is its own', () => {
    expect(analyzeQuery('What about running float16?').terms).toEqual([
      { term: 'running', norm: 'run' },
      { term: 'float16', norm: 'float16' },
    ]);
  });
  it("possessive and contracted endings are dropped, and so is trailing punctuation; inner hyphens and apostrophes split", () => {
    expect(analyzeQuery("What did Caroline's sister say?").terms.map((t) => t.term)).toEqual(['caroline', 'sister']);
    expect(analyzeQuery("What about the users' passwords?").terms.map((t) => t.term)).toEqual(['users', 'passwords']);
    expect(analyzeQuery('Is a well-known tool used?').terms.map((t) => t.term)).toEqual(['well', 'known', 'tool']);
    expect(analyzeQuery("What did O'Sullivan say?").terms.map((t) => t.term)).toEqual(['sullivan']);
  });
  it('BM25 gets the terms, then the values they do not already hold, space-separated', () => {
    expect(analyzeQuery('What did the rate limit 40 req/s say?').bm25).toBe('rate limit 40 req req/s');
    expect(analyzeQuery('On day 0, what was set up?').bm25).toBe('day set 0');
  });
});

describe('query: a name is a capitalized word of 3+ letters inside a sentence, not a question word nor an identifier', () => {
  it('a capital inside a sentence is a name, each one once', () => {
    expect(analyzeQuery('Which Vagrant box did we use?').names).toEqual(['vagrant']);
    expect(analyzeQuery('A Vagrant box was used?').names).toEqual(['vagrant']);
    expect(analyzeQuery('Did Bob tell Bob?').names).toEqual(['bob']);
    expect(analyzeQuery('Did Ann-Marie approve it?').names).toEqual(['ann', 'marie']);
  });
  it('a capital at the start of a sentence, a line, or a quote is not a name', () => {
    expect(analyzeQuery('Caroline ran a race. Melanie went camping, right?').names).toEqual([]);
    expect(analyzeQuery('Done.  Melanie went camping?').names).toEqual([]);
    expect(analyzeQuery('Caroline ran\n  Melanie went camping?').names).toEqual([]);
    expect(analyzeQuery('Did she say "Melanie went camping"?').names).toEqual([]);
    expect(analyzeQuery('Who went camping ( Melanie or Caroline )?').names).toEqual(['caroline']);
  });
  it('two letters, a capital inside a word, a question word or an identifier is not a name', () => {
    expect(analyzeQuery('Did Jo approve it?').names).toEqual([]);
    expect(analyzeQuery('Did Bob approve it?').names).toEqual(['bob']);
    expect(analyzeQuery('Did we sell it on eBay?').names).toEqual([]);
    expect(analyzeQuery('Where did The Band play?').names).toEqual(['band']);
    const v = analyzeQuery('Why did it raise ValueError?');
    expect(v.names).toEqual([]);
    expect(v.framing).toEqual(['valueerror']);
  });
});

describe('match: contexts are dropped by their text, compiled or not', () => {
  const q = 'Was the rate limit 40 req/s with 30 retries and 40 workers?';
  it('the same contexts remain whether they were compiled before the drop or not', () => {
    const lazy = profileQuery(q);
    const eager = profileQuery(q);
    expect(eager.contexts.length).toBe(lazy.contextCount);
    expect(eager.contextSides.length).toBe(lazy.contextCount);
    lazy.dropContexts((src) => src.includes('40'), false);
    eager.dropContexts((src) => src.includes('40'), false);
    expect(lazy.contextCount).toBe(eager.contextCount);
    expect(lazy.contexts.map((r) => r.source)).toEqual(eager.contexts.map((r) => r.source));
    expect(lazy.contextSides.map((x) => x.map((r) => r.source))).toEqual(eager.contextSides.map((x) => x.map((r) => r.source)));
  });
  it('the first match only, or every match', () => {
    const first = profileQuery(q);
    const every = profileQuery(q);
    const n = first.contextCount;
    first.dropContexts((src) => src.includes('40'), false);
    every.dropContexts((src) => src.includes('40'), true);
    expect(first.contextCount).toBe(n - 1);
    expect(every.contextCount).toBe(n - 2);
    expect(every.contexts.every((r) => !r.source.includes('40'))).toBe(true);
  });
});

describe("query: a numbered period or a date says when, not what: its numbers leave the claim and the values' contexts", () => {
  it('"day 12" is the period, not a value to hold next to its words', () => {
    const a = analyzeQuery('On day 12, what was fixed in the fixture loader?');
    expect(a.period).toEqual({ unit: 'day', n: 12 });
    expect(a.claim).toEqual([]);
    expect(a.profile.contexts).toEqual([]);
    expect(a.profile.contextSides).toEqual([]);
    expect(analyzeQuery('On day 012, what was fixed in the fixture loader?').profile.contexts).toEqual([]);
    expect(analyzeQuery('On day 102, what was fixed?').claim).toEqual([]);
    expect(analyzeQuery('On day 0, what was set up?').claim).toEqual([]);
  });
  it("a period whose number stands next to no word leaves the other values' contexts alone", () => {
    const a = analyzeQuery('On day      12, was the rate limit 40 req/s?');
    expect(a.claim).toEqual(['40']);
    expect(a.profile.contexts).toHaveLength(1);
    expect(a.profile.contexts[0]!.test('rate limit of 40 req/s')).toBe(true);
  });
  it("an ISO date leaves the claim, and only the date's context goes", () => {
    const a = analyzeQuery('Was the rate limit 40 req/s in the 2023-05-08 builds?');
    expect(a.claim).toEqual(['40']);
    expect(a.profile.contexts).toHaveLength(1);
    expect(a.profile.contextSides).toHaveLength(1);
    expect(a.profile.contexts[0]!.source).toContain('40');
    expect(analyzeQuery('What failed in the 2023-05-08 builds?').profile.contexts).toEqual([]);
  });
  it("a date's context goes when it holds any one of the date's numbers", () => {
    const a = analyzeQuery('Which bug was fixed on 8 May 2023 releases?');
    expect(a.claim).toEqual([]);
    expect(a.profile.contexts).toEqual([]);
  });
  it('a digit identifier stays in the claim', () => {
    expect(analyzeQuery('Did we cast to float16 in May 2023?').claim).toEqual(['float16']);
  });
});

const span = (text: string, o: Partial<SupportSpan> = {}): SupportSpan => ({ text, role: 'assistant', timestamp: 0, meta: null, ...o });
const support = (q: string, text: string, o: Partial<SupportSpan> = {}) => supportOf(analyzeQuery(q), span(text, o));
const S = (o: Partial<Support> = {}): Support => ({ terms: { matched: ['x'], missing: [] }, values: { matched: [], missing: [], contradicted: false }, names: { matched: [], missing: [] }, claim: false, ...o });
const FACT = 'The upstream API enforces a rate limit of 40 req/s per token.';

describe("support: a span's fields are its role, speaker and plain metadata, lower-cased, numbers without leading zeros", () => {
  it('role, speaker, string and number metadata (not a second speaker, not objects or flags)', () => {
    const meta = { source_file: 'day-012.md', v: 'v1.05 100 0 007', n: 7, nested: { x: 1 }, speaker: 'Zed', flag: true };
    expect(fieldText(span('', { role: 'user', speaker: 'Caroline', meta }))).toBe('user \n caroline \n day-12.md \n v1.05 100 0 7 \n 7');
    expect(fieldText(span('', { role: 'tool' }))).toBe('tool');
  });
});

describe("support: who said a span is its side (tool output is the agent's) or, for a named party, its speaker", () => {
  it('user, assistant and tool turns; any other role is its own side', () => {
    expect(saidBy({ kind: 'user' }, span('', { role: 'user' }))).toEqual({ said: 'user', match: true });
    expect(saidBy({ kind: 'agent' }, span('', { role: 'tool' }))).toEqual({ said: 'agent', match: true });
    expect(saidBy({ kind: 'agent' }, span('', { role: 'system' }))).toEqual({ said: 'system', match: false });
    expect(saidBy({ kind: 'user' }, span('', { role: 'assistant' }))).toEqual({ said: 'agent', match: false });
  });
  it('a named party is matched against the speaker, case aside', () => {
    expect(saidBy({ kind: 'name', name: 'Caroline' }, span('', { role: 'user', speaker: 'caroline' }))).toEqual({ said: 'caroline', match: true });
    expect(saidBy({ kind: 'name', name: 'Caroline' }, span('', { role: 'user', speaker: 'Melanie' }))).toEqual({ said: 'Melanie', match: false });
  });
});

describe('support: a word is a run between separators — ASCII punctuation, white space, general punctuation; any other letter is part of it', () => {
  it('a non-ASCII letter starts or continues a word', () => {
    expect(support('Which café did Zoë visit?', 'Zoë visited the café').terms.matched).toEqual(['café', 'zoë', 'visit']);
    expect(support('Which café did Zoë visit?', 'Zoë visited the cafés').names.matched).toEqual(['zoë']);
    expect(support('Which cafe was it?', 'the écafe and xcafe').terms.matched).toEqual([]);
    expect(support('Was the élan there?', 'an élan vital').terms.matched).toEqual(['élan']);
  });
  it('dashes, quotes and no-break spaces of general punctuation separate words; _ and digits do not', () => {
    expect(support('Did the run finish?', 'run\u2014finish').terms.matched).toEqual(['run', 'finish']);
    expect(support('Did the run finish?', '\u201crun\u201d\u00a0finish').terms.matched).toEqual(['run', 'finish']);
    expect(support('Did the run finish?', 'run_finish run2').terms.matched).toEqual([]);
  });
  it('a word longer than every form, or shorter, is never read as one', () => {
    expect(support('Did the run finish?', 'runningly finishes').terms.matched).toEqual(['finish']);
    expect(support('Was it ok?', 'o k ok').terms.matched).toEqual(['ok']);
  });
});

describe('support: a term is held by its word, its normal form, or the normal form with a usual ending — never a longer word', () => {
  it('a doubled final consonant before an ending is the same word', () => {
    for (const w of ['stopped', 'stopping', 'stopper', 'stoppers', 'stoppings']) expect(support('Did the stop happen?', `it was ${w}`).terms.matched).toEqual(['stop']);
    expect(support('Did the run finish?', 'it was running').terms).toEqual({ matched: ['run'], missing: ['finish'] });
  });
  it('a normal form ending in i also takes its endings after y (studi: studying), and only then', () => {
    expect(support('Which studies were run?', 'we were studying it').terms.matched).toEqual(['studies']);
    expect(support('What was the plan?', 'the player was playing').terms.matched).toEqual([]);
  });
  it('a word with digits takes no endings', () => {
    expect(support('Is float16 or 16bit used?', 'float16s and 16bits').terms.missing).toEqual(['float16', '16bit']);
  });
  it('terms are looked for in the first 16,384 characters of a long text', () => {
    const long = `${'filler '.repeat(3000)}zebra`;
    expect(support('Did the zebra show up?', long).terms).toEqual({ matched: [], missing: ['zebra', 'show'] });
    expect(support('Did the zebra show up?', 'a zebra').terms).toEqual({ matched: ['zebra'], missing: ['show'] });
  });
});

describe("support: a question's claim — every value, held together in one window of the span, or in its fields", () => {
  it('every value must be held, bounded (40 is not 140)', () => {
    expect(support('Was it 8080?', 'the port is 9090')).toMatchObject({ claim: false, values: { matched: [], missing: ['8080'], contradicted: false } });
    expect(support('Was it 8080 or 9090?', 'port 9090')).toMatchObject({ claim: false, values: { matched: ['9090'], missing: ['8080'] } });
    expect(support('Did the library hold 40 books?', 'it held 140 books')).toMatchObject({ claim: false, values: { matched: [], missing: ['40'] } });
  });
  it('in a text of more lines than the question, the values stand on the same line', () => {
    expect(support('Was it 8080 or 9090?', 'port 8080\nport 9090')).toMatchObject({ claim: false, values: { matched: ['8080', '9090'], missing: [], contradicted: false } });
    expect(support('Was it 8080?', 'boot\nport 8080 open\ndone')).toMatchObject({ claim: true, values: { contradicted: false } });
    expect(support('Was it 8080?', 'boot\nport 9090 open\ndone')).toMatchObject({ claim: false, values: { contradicted: false } });
  });
  it('the window is anchored on a value of the claim, not on a date the question names', () => {
    expect(support('Was it 8080 on 2023-05-08?', 'deploy log\nport 8080 open').claim).toBe(true);
  });
  it("a value held only by the span's fields holds the claim with the whole text as its window", () => {
    expect(support('Was it 4521?', 'long\ntext', { meta: { ticket: 'JIRA-4521' } })).toMatchObject({ claim: true, values: { contradicted: false } });
    expect(support('Was it 4521 or 8080?', 'long\ntext', { meta: { ticket: 'JIRA-4521' } })).toMatchObject({ claim: false, values: { contradicted: false } });
  });
  it('a span holding the whole query verbatim holds the claim', () => {
    expect(supportOf(analyzeQuery('Was it 8080?'), span('nothing here'), true)).toMatchObject({ claim: true, values: { contradicted: false } });
  });
});

describe("support: a question's quoted part must be held; the rest is read next to it, on one side of each value", () => {
  it('held in another case, with the value next to one of its words near the quote', () => {
    expect(support('Did `npm run build` take 40 seconds?', '$ NPM RUN BUILD\nfinished in 40 seconds')).toMatchObject({ claim: true, values: { matched: ['40', 'npm run build'], missing: [], contradicted: false } });
  });
  it('the value far from the quote: held as a value, contradicted as a claim', () => {
    expect(support('Did `npm run build` take 40 seconds?', '$ npm run build\nok\nx\ny\ntook 40 seconds')).toMatchObject({ claim: false, values: { contradicted: true } });
  });
  it('without the quote, no claim and no contradiction', () => {
    expect(support('Did `npm run build` take 40 seconds?', 'finished in 40 seconds')).toMatchObject({ claim: false, values: { matched: ['40'], missing: ['npm run build'], contradicted: false } });
  });
});

describe('support: a statement is a claim as a whole — its quoted part and consistency, or the honest-miss match', () => {
  it('a statement with a quoted part needs the quote and nothing contradicting it, not coverage', () => {
    const s = support('yesterday afternoon somebody finally ran `npm run build --watch` successfully', '$ npm run build --watch\nwatching');
    expect(s).toMatchObject({ claim: true, values: { contradicted: false } });
  });
  it('a statement without one is matched with both sides of each value', () => {
    expect(support('the rate limit was 40 req/s', FACT)).toMatchObject({ claim: true, values: { contradicted: false } });
  });
});

describe('support: names and identifiers are held as written or plural; a slash pair in a question by both its parts', () => {
  it('an identifier is held by its plural', () => {
    expect(support('Why did it raise ValueError?', 'it raised two ValueErrors').names).toEqual({ matched: ['valueerror'], missing: [] });
  });
  it('a question\'s slash pair is held when both parts are, by their normal forms', () => {
    expect(support('What about usernames/passwords?', 'username and password').names).toEqual({ matched: ['usernames/passwords'], missing: [] });
    expect(support('What about usernames/passwords?', 'usernames only').names).toEqual({ matched: [], missing: ['usernames/passwords'] });
  });
  it('a path is not a pair; in a statement a slash pair is one identifier', () => {
    expect(support('Was django/db/models changed?', 'django db models').names).toEqual({ matched: [], missing: ['django/db/models'] });
    expect(support('we stored usernames/passwords there', 'usernames and passwords').names).toEqual({ matched: [], missing: ['usernames/passwords'] });
  });
});

describe('support: the time a question names is matched against the timestamp, a numbered period against fields and text', () => {
  const may = Date.UTC(2023, 4, 1);
  it('the month includes its first and last millisecond, and nothing before or after', () => {
    const q = 'Where did we go in May 2023?';
    expect(support(q, 'camp', { timestamp: may }).time).toEqual({ asked: 'may 2023', match: true });
    expect(support(q, 'camp', { timestamp: Date.UTC(2023, 5, 1) - 1 }).time).toEqual({ asked: 'may 2023', match: true });
    expect(support(q, 'camp', { timestamp: may - 1 }).time).toEqual({ asked: 'may 2023', match: false });
    expect(support(q, 'camp', { timestamp: Date.UTC(2023, 5, 1) }).time).toEqual({ asked: 'may 2023', match: false });
  });
  it('"day 12" is held by day-012.md or by day 12 in the text, not by today 12 or day 123', () => {
    const q = 'On day 12, what was fixed in the fixture loader?';
    expect(support(q, 'fixed the loader', { meta: { source_file: 'day-012.md' } }).time).toEqual({ asked: 'day 12', match: true });
    expect(support(q, 'on day 12 we fixed it').time).toEqual({ asked: 'day 12', match: true });
    expect(support(q, 'today 12 tests ran').time).toEqual({ asked: 'day 12', match: false });
    expect(support(q, 'day 123 fixed it').time).toEqual({ asked: 'day 12', match: false });
  });
});

describe('miss decision: what makes a miss, with its reason and detail', () => {
  const q = analyzeQuery('Did the library hold 197 books on port 8080?');
  it('a candidate holding the whole query verbatim is never a miss', () => {
    expect(decideMiss(q, [], true)).toEqual({ miss: false });
  });
  it('no candidates: a miss', () => {
    expect(decideMiss(q, [], false)).toEqual({ miss: true, reason: 'no-candidates' });
  });
  it('nothing in common names every content term; a query without content terms has nothing to lack', () => {
    const z = analyzeQuery('zebra quartz marmalade');
    expect(decideMiss(z, [S({ terms: { matched: [], missing: ['zebra'] } })], false)).toEqual({ miss: true, reason: 'nothing-in-common', detail: 'zebra, quartz, marmalade' });
    const none = analyzeQuery('What did they say?');
    expect(none.terms).toEqual([]);
    expect(decideMiss(none, [S({ terms: { matched: [], missing: [] } })], false)).toEqual({ miss: false });
  });
  it("a statement no candidate holds: contradicted if any candidate contradicts it, with the query's first 120 chars", () => {
    const st = analyzeQuery(`the rate limit was 40 req/s ${'and more words '.repeat(10)}`);
    const d = decideMiss(st, [S(), S({ values: { matched: [], missing: [], contradicted: true } })], false);
    expect(d).toEqual({ miss: true, reason: 'value-contradicted', detail: st.query.slice(0, 120) });
    expect(decideMiss(st, [S(), S()], false)).toMatchObject({ miss: true, reason: 'value-not-stated' });
  });
  it('a question without values is not a miss for want of a claim', () => {
    expect(decideMiss(analyzeQuery('What did we decide about the build backend?'), [S()], false)).toEqual({ miss: false });
  });
  it('values missing from every candidate are named; only if none is, a contradiction makes it contradicted', () => {
    const missingOne = [S({ values: { matched: ['8080'], missing: ['197'], contradicted: true } }), S({ values: { matched: [], missing: ['197', '8080'], contradicted: false } })];
    expect(decideMiss(q, missingOne, false)).toEqual({ miss: true, reason: 'value-not-stated', detail: '197' });
    const heldApart = [S({ values: { matched: ['197', '8080'], missing: [], contradicted: false } }), S({ values: { matched: [], missing: ['197', '8080'], contradicted: true } })];
    expect(decideMiss(q, heldApart, false)).toEqual({ miss: true, reason: 'value-contradicted', detail: '197, 8080' });
    const neither = [S({ values: { matched: ['197', '8080'], missing: [], contradicted: false } })];
    expect(decideMiss(q, neither, false)).toEqual({ miss: true, reason: 'value-not-stated', detail: '197, 8080' });
  });
  it('names are looked for among the 10 best candidates only, and every absent one is named', () => {
    const n = analyzeQuery('Which Vagrant box did Hashicorp ship?');
    expect(n.framing).toEqual(['vagrant', 'hashicorp']);
    const lacking = S({ names: { matched: [], missing: ['vagrant', 'hashicorp'] } });
    const eleventh = [...Array.from({ length: 10 }, () => lacking), S({ names: { matched: ['vagrant', 'hashicorp'], missing: [] } })];
    expect(decideMiss(n, eleventh, false)).toEqual({ miss: true, reason: 'name-not-stated', detail: 'vagrant, hashicorp' });
  });
});

describe('answers: one text answers a query by search\'s own rules', () => {
  it('the whole query verbatim (3+ chars, trimmed) answers it, even where the rules would not', () => {
    expect(answersText(analyzeQuery(' Did I say the port was 8080? '), 'log:Did I say the port was 8080?')).toBe(true);
    expect(answersText(analyzeQuery('abc'), 'xabcx')).toBe(true);
    expect(answersText(analyzeQuery('hi'), 'this')).toBe(false);
  });
  it('a statement is answered when held as a claim; its names do not count', () => {
    expect(answersText(analyzeQuery('then Caroline said the rate limit was 40 req/s'), FACT)).toBe(true);
    expect(answersText(analyzeQuery('the rate limit was 40 req/s'), FACT)).toBe(true);
    expect(answersText(analyzeQuery('the rate limit was 50 req/s'), FACT)).toBe(false);
  });
  it("a statement's quoted part must be held (case aside), then only not contradicted", () => {
    const q = 'yesterday afternoon somebody finally ran `NPM run build --watch` successfully';
    expect(answersText(analyzeQuery(q), '$ npm run build --watch\nWatching')).toBe(true);
    expect(answersText(analyzeQuery(q), '$ npm run build\nWatching')).toBe(false);
  });
  it('a question is answered when its support passes the miss decision, whatever its word coverage', () => {
    expect(answersText(analyzeQuery('What did we finally settle on regarding the build backend?'), 'We decided to use hatchling as the build backend for the package.')).toBe(true);
    expect(answersText(analyzeQuery('Did the library hold 197 books?'), 'The library holds 179 books in total.')).toBe(false);
  });
});

describe('match: terms are lower-cased words; an identifier also gives its parts, split on _ . / : - and camelCase', () => {
  it('words, paths, dotted, hyphenated and camelCase identifiers', () => {
    expect(matchTerms('Read django/db/models.py, parseConfigFile and utf-8!')).toEqual([
      'read', 'django/db/models.py', 'django', 'db', 'models', 'py', 'parseconfigfile', 'parse', 'config', 'file', 'and', 'utf-8', 'utf', '8',
    ]);
  });
  it('leading and trailing separators are dropped; a separator alone is no term', () => {
    expect(matchTerms('--verbose -- done-- hello')).toEqual(['verbose', 'done', 'hello']);
  });
});

describe("match: a query's profile — its terms, values, identifiers, quotes, lines and key", () => {
  it('terms of one character are dropped, and a value is a term once', () => {
    expect(profileQuery('x marks the spot').terms).toEqual(['marks', 'spot']);
    expect(profileQuery('rate limit 40').terms).toEqual(['rate', 'limit', '40']);
  });
  it('a sign not glued to a word before it is part of the value, a percent sign after it too', () => {
    const p = profileQuery('it read +76 lines, offset -123, 5+3 = 8, cpu 300%');
    expect(p.standalone).toEqual(['+76', '-123', '5', '3', '8', '300%']);
    expect(profileQuery('tag v-2 shipped').digitIds).toEqual(['v-2']);
  });
  it('an identifier without digits is 5+ chars joined by _ . / or in camelCase; a dunder or a trailing _ is not', () => {
    expect(profileQuery('set foo__bar, a.b and utf-8 in ValueError').identifiers).toEqual(['foo__bar', 'valueerror']);
    expect(profileQuery('why __init__ and abcd__ fail').identifiers).toEqual([]);
  });
  it('a word is tested as a prefix, a value bounded', () => {
    const p = profileQuery('enjoy 40 docs');
    expect(p.tests.get('enjoy')!.test('i enjoyed it')).toBe(true);
    expect(p.tests.get('40')!.test('140 docs')).toBe(false);
  });
  it('every quote however short is kept; a quote of 6+ chars is a quoted part', () => {
    const p = profileQuery('in `longer quote` set `<U9` and "ab" and "a"');
    expect(p.allQuoted).toEqual(['longer quote', '<U9', 'ab', 'a']);
    expect(p.quoted).toEqual(['longer quote']);
  });
  it('lines are counted on newlines', () => {
    expect(profileQuery('rate limit').lines).toBe(1);
    expect(profileQuery('rate\nlimit').lines).toBe(2);
  });
  it('the key is the longest value, else the longest digit identifier, else the longest term', () => {
    expect(profileQuery('port 40 or 8080 configuration').key).toBe('8080');
    expect(profileQuery('port 40 or 8080 or 123').key).toBe('8080');
    expect(profileQuery('use utf-8 or float16 configuration').key).toBe('float16');
    expect(profileQuery('the file configuration').key).toBe('configuration');
    expect(profileQuery('the').key).toBeNull();
  });
});

describe("match: a value's context is its content-word neighbours in the query, at most 4 chars away, not across a quote", () => {
  it('the word before, one function word away in the text', () => {
    const p = profileQuery('rate limit 40');
    expect(contextHolds(p, 'rate limit of 40')).toBe(true);
    expect(contextHolds(p, 'no limit but 40 here')).toBe(false);
  });
  it('a value without content-word neighbours has no context', () => {
    expect(profileQuery('at 40').contexts).toEqual([]);
    expect(contextHolds(profileQuery('at 40 items'), 'at 40 items')).toBe(true);
  });
  it('a neighbour more than 4 chars away is no context; 4 is', () => {
    expect(contextHolds(profileQuery('limit      40'), 'no limit here, just 40')).toBe(true);
    expect(contextHolds(profileQuery('limit == 40'), '40 alone')).toBe(false);
    expect(contextHolds(profileQuery('40 == items'), '40 alone')).toBe(false);
    expect(contextHolds(profileQuery('40      items'), '40 alone')).toBe(true);
    expect(contextHolds(profileQuery('cpu at 300%   load'), 'cpu at 300% idle')).toBe(false);
  });
  it('a sign before a word makes it a value only when the word is one; otherwise the word is the neighbour', () => {
    expect(contextHolds(profileQuery('set #port 8080'), 'port 8080')).toBe(true);
  });
  it('a quoted part is a segment of its own: no neighbour across it', () => {
    for (const q of ['ran `npm test` 40 times', 'ran `npm test`40 times', 'the rate 40 `npm test`']) {
      const p = profileQuery(q);
      expect(p.contexts).toHaveLength(1);
      expect(p.contexts[0]!.source).not.toContain('test');
      expect(p.contexts[0]!.source).not.toContain('npm');
    }
  });
  it('a statement holds a value next to its words on both sides, a question on one side of each value', () => {
    const p = profileQuery('the limit 40 req');
    expect(contextHolds(p, 'limit of 40')).toBe(false);
    expect(contextHolds(p, 'limit of 40', true)).toBe(true);
    expect(contextHolds(p, '40 req', true)).toBe(true);
    expect(contextHolds(p, 'just 40 here', true)).toBe(false);
    expect(contextHolds(profileQuery('limit 40 and port 8080'), 'limit of 40', true)).toBe(false);
  });
});

describe('match: coverage is the share of terms, and of values, a text holds', () => {
  it('shares, and a query without terms or values has full value coverage', () => {
    expect(coverage(profileQuery('the'), 'x')).toEqual({ terms: 0, values: 1 });
    expect(coverage(profileQuery('rate limit'), 'rate')).toEqual({ terms: 0.5, values: 1 });
    expect(coverage(profileQuery('rate limit 40'), 'rate limit 40')).toEqual({ terms: 1, values: 1 });
    expect(coverage(profileQuery('rate limit 40'), 'rate limit')).toEqual({ terms: 2 / 3, values: 0 });
    expect(coverage(profileQuery('port 40 or 8080'), 'port 40')).toEqual({ terms: 2 / 3, values: 0.5 });
  });
});

describe('match: a distinctive term missing from the window contradicts when a one-edit variant of it is in the candidate', () => {
  const c = (q: string, text: string, whole?: string) => contradicts(profileQuery(q), text, whole);
  it('a letter changed, added or removed; not a plural s, not punctuation', () => {
    expect(c('the sepauator line', 'if the separator is set')).toBe(true);
    expect(c('parseConfigFile', 'parseConfigFjle')).toBe(true);
    expect(c('parseConfigFile', 'parseConfigFil')).toBe(true);
    expect(c('parseConfigFil', 'parseConfigFile')).toBe(true);
    expect(c('parseConfigFile', 'parseConfigFileX')).toBe(true);
    expect(c('parseConfigFile', 'parseConfigsFile')).toBe(true);
    expect(c('parseConfigFile', 'parseConfigFiles')).toBe(false);
    expect(c('parseConfigFile', 'parse-ConfigFile')).toBe(false);
    expect(c('the test-summary file', 'the test_summary file')).toBe(false);
  });
  it('two edits are no variant', () => {
    expect(c('the configuration', 'the confxguratxon')).toBe(false);
    expect(c('the configuration', 'the configuraxions')).toBe(false);
  });
  it('a term held by the window, or found only as itself elsewhere, is no contradiction', () => {
    expect(c('the configuration', 'the configuration', 'the configuration and configuratiox')).toBe(false);
    expect(c('the configuration', 'nothing', 'nothing\nconfiguration')).toBe(false);
  });
  it('distinctive: 8+ chars, or 5+ with _ . / - or a digit; a standalone value is checked by the value rules', () => {
    expect(c('the line', 'the like')).toBe(false);
    expect(c('the plain text', 'the plait text')).toBe(false);
    expect(c('the database', 'the databasx')).toBe(true);
    expect(c('the res_id flag', 'the res_ix flag')).toBe(true);
    expect(c('the ab_cd flag', 'the ab_ce flag')).toBe(true);
    expect(c('the a_b flag', 'the a_c flag')).toBe(false);
    expect(c('took 3.5ms', 'took 3.6ms')).toBe(false);
  });
  it('an identifier with digits is contradicted by the same identifier with other digits', () => {
    expect(c('did utf-15 fail', 'we use utf-8 here')).toBe(true);
    expect(c('did utf-15 fail', 'the build passed')).toBe(false);
    expect(c('did utf-15 fail', 'nothing', 'nothing utf-15')).toBe(false);
    expect(c('did res12 pass', 'res passed')).toBe(false);
  });
  it('by default every distinctive term counts; digitIdsOnly checks identifiers with digits only', () => {
    expect(contradicts(profileQuery('the sepauator line'), 'the separator line', undefined, true)).toBe(false);
    expect(contradicts(profileQuery('did utf-15 fail'), 'utf-8', undefined, true)).toBe(true);
  });
});

describe('match: a candidate matches when one window — the lines around the key — holds the values and enough terms', () => {
  it('the terms and values must stand in one window, not spread over the text', () => {
    const p = profileQuery('rate limit gateway at 40');
    expect(matches(p, 'rate limit gateway at 40')).toBe(true);
    expect(matches(p, 'intro\nrate limit gateway at 40\nend')).toBe(true);
    expect(matches(p, 'rate limit gateway\nat 40')).toBe(false);
    expect(matches(p, 'at 40\nrate limit gateway')).toBe(false);
  });
  it('the window of a query of n lines reaches n-1 lines each side', () => {
    const p = profileQuery('rate limit\nat 40');
    expect(matches(p, 'a\nb\nrate limit\nat 40\nc')).toBe(true);
    expect(matches(profileQuery('rate limit\n40'), 'intro\nrate limit\n40')).toBe(true);
  });
  it('without a value, the window is anchored on the longest term', () => {
    expect(matches(profileQuery('rate limit gateway token'), 'rate limit\ngateway')).toBe(false);
  });
  it('half the terms are enough; every value is required, bounded', () => {
    expect(matches(profileQuery('rate limit gateway token'), 'rate limit')).toBe(true);
    expect(matches(profileQuery('rate limit at 40'), 'rate limit at 140')).toBe(false);
  });
  it('a policy may require fewer values', () => {
    expect(matches(profileQuery('rate limit 40 or 8080'), 'rate limit 40', { minCoverage: 0.5, minValueCoverage: 0.5 })).toBe(true);
  });
  it('a query of function words only is matched as a whole under a zero-coverage policy', () => {
    expect(matches(profileQuery('the'), 'x', { minCoverage: 0, minValueCoverage: 1 })).toBe(true);
  });
  it('a window with a contradicting variant does not match', () => {
    expect(matches(profileQuery('the parseConfigFile call'), 'intro\nthe parseConfigFjle call\nend')).toBe(false);
  });
});

describe('match: a quoted part held verbatim (case aside) pins the candidate: the rest must only be consistent next to it', () => {
  const q = (query: string, text: string) => consistent(profileQuery(query), text);
  it('every quote, however short, must be held', () => {
    expect(q('ran `npm run build` with `-w`', 'npm run build -w\ndone')).toBe(true);
    expect(q('ran `npm run build` with `-w`', 'npm run build\ndone')).toBe(false);
  });
  it('the quote is found in another case, on any line, even at the very start', () => {
    expect(q('ran `npm run build` ok', 'NPM RUN BUILD\nOK')).toBe(true);
    expect(q('ran `NPM run build`', '$ npm run build\nWatching')).toBe(true);
    expect(q('ran `Make All`', 'Make All\nOK')).toBe(true);
  });
  it("each value stands in the quote's lines, one more each side per query line", () => {
    const r = 'ran `npm run build` 40';
    expect(q(r, '$ npm run build took 40 s')).toBe(true);
    expect(q(r, 'took 40 seconds\n$ npm run build')).toBe(true);
    expect(q(r, 'intro\n$ npm run build\nfinished 40')).toBe(true);
    expect(q(r, 'took 40 seconds\nx\ny\n$ npm run build')).toBe(false);
    expect(q(r, '$ npm run build\nx\ny\ntook 40 seconds')).toBe(false);
    expect(q(r, '$ npm run build 40\n5 warnings')).toBe(true);
    expect(q('ran `npm run build` 40 and 50', '$ npm run build 40')).toBe(false);
  });
  it('the next occurrence of the quote is tried when one fails, up to 65 lines', () => {
    const r = 'ran `npm run build` 40';
    expect(q(r, '$ npm run build\nx\ny\nz\n$ npm run build took 40')).toBe(true);
    const at = (n: number) => [...Array.from({ length: n - 1 }, () => '$ npm run build\nx\ny'), '$ npm run build 40'].join('\n');
    expect(q(r, at(65))).toBe(true);
    expect(q(r, at(70))).toBe(false);
  });
});

describe("search: a claim's names may stand in a span near it that is no candidate (a lexical search over the turn range)", () => {
  const a = analyzeQuery('In the URLValidator task, was Python 3.6.8 installed?');
  const judgedAt = (turn: number) => {
    const support = supportOf(a, span('Python 3.6.8 (default) on linux'));
    return { c: { id: 1, kind: 0, exact: false, quoted: false, lex: 0, vec: Infinity, time: Infinity, score: 0 }, span: { ...span(''), id: 1, turnStart: turn, turnEnd: turn } as never, support, score: 0 };
  };
  const named = { ...judgedAt(10), support: supportOf(a, span('The URLValidator task.')) };
  const ranges: [number, number][] = [];
  const ctx = (found: boolean) => ({ lexical: { search: (_q: string, _k: number, _kind: number, lo: number, hi: number) => (ranges.push([lo, hi]), { ids: found ? [7] : [], scores: [] }) } }) as never;
  it('held in the range: the claim stands', async () => {
    const j = judgedAt(500);
    expect(j.support.claim).toBe(true);
    await frameClaims(ctx(true), [named, j], a);
    expect(j.support.claim).toBe(true);
    expect(ranges.at(-1)).toEqual([500 - FRAME_TURNS, 500 + FRAME_TURNS]);
  });
  it('nowhere in the range: the claim is withdrawn, and says which names are elsewhere', async () => {
    const j = judgedAt(500);
    await frameClaims(ctx(false), [named, j], a);
    expect(j.support).toMatchObject({ claim: false, outOfFrame: ['urlvalidator'] });
  });
  it('a candidate holding the names within the range suffices', async () => {
    const j = judgedAt(10 + FRAME_TURNS);
    await frameClaims(ctx(false), [named, j], a);
    expect(j.support.claim).toBe(true);
  });
});

// ------------------------------------------------------------------ src/match.ts, whole run
// Rules `npm run mutate:match` (docs/MUTATION.md) found unchecked, one describe per rule. Its
// surviving mutants no test can tell apart from the code, and why:
//
// - matchTerms: the split patterns without `+` (`[^…]` and `[_./:-]`) and `if (part)` forced
//   true: a run of separators then gives empty pieces, which are skipped (`if (!w)`), and
//   with the `+` no piece is empty (the word's own leading and trailing separators are
//   stripped first; a camelCase split is between two letters).
// - The pattern caches (cachedRegExp's `re === undefined` and its 8,192-entry clear, the
//   lazy tests' `re === undefined`): the same source compiles to the same test; cost only.
//   The lazy tests' `source === undefined` forced false: every caller asks for a known
//   term, or asks `has` first.
// - profileQuery: `quoted` seeded with a string (its index shifts every quote's segment
//   number alike; segments are only compared for equality); `a <= at` as `a < at` (a word
//   never starts on the quote character itself: a backtick or a double quote is neither a
//   word character nor a sign); the character before a value read as "Stryker was here!"
//   when there is none (`?? ''`: neither holds a sign).
// - patternPart's surrogate guards, where the mutant still cuts a valid pattern: a guard
//   forced true (`true`, `||`, `c >= 0xdc00` / `c >= 0xd800` forced true, `c <= 0xdfff` /
//   `c <= 0xdbff` forced true) drops one more character than needed, and the term's cut,
//   one character shorter, is still its prefix (suffix) in the text; `c < 0xdbff` differs
//   only on a high half U+DBFF, which starts no letter or digit (U+10FC00–U+10FFFF are
//   private use, never inside a word).
// - oneEditVariant: `a === b`, `Math.abs(la - lb) > 1`, the prefix loop's bounds (`true`,
//   `||`, `<=`), `c !== undefined` and `la > lb` as `>=`: the caller never passes equal
//   strings, strings whose lengths differ by 2+ fail the suffix comparison anyway, past
//   either end the `undefined` character ends the prefix loop, and alnum() is never asked
//   past the end.
// - contradicts: `missing.length === 0` forced false (the loop over no term returns false);
//   `sk !== null` forced true (a null skeleton equals no token's skeleton).
// - passes(): the substring pre-check of every value (`minValueCoverage >= 1` forced false
//   or `> 1`, `!lower.includes(v)` forced false): each value's bounded test matches that
//   very string, so coverage() rejects the same candidates; cost only.
// - consistent(): `tried.has(a)` forced false (the same window judged twice; `tried` is a
//   set, so the 64-window cap is unchanged).
// - pieceAt: `hi = starts.length - 1` as `+ 1` (the extra probe reads undefined, never <= at).
// - The literal term and context tests (LiteralTest, ContextLiteralTest: a term's pattern run
//   as indexOf with its boundaries read by hand; test/search/term-tests.test.ts holds them to
//   the patterns). Whatever turns the literal path off is cost only: the compiled pattern
//   answers the same (literalOf's length and surrogate guards forced to null, isSurrogate
//   forced true, `literal === null` forced true, the context's `literalOf(...) === null`
//   guards). Reading code points: pointBefore/pointAt's surrogate tests forced true or made
//   strict (`<` for `<=` at U+DBFF/U+DFFF, `at + 1 <= length`) differ only on lone or
//   private-use halves, which are no letter or digit either way; isNumber's and
//   letterOrNumber's ASCII cut at `<= 128` (U+0080 is neither), isNumber's ASCII branch
//   forced off (the pattern says the same), the empty-string guards (`''` is no letter, no
//   number and no separator for any caller, which stop at the text's edge first). The
//   context: a link at offset 0 (`q <= link.length`: no word can stand before it), the word
//   after at offset 0 (`startsWith` forced false or `endsWith`: the value's own boundary
//   forbids a letter or digit right after it, and the reach loop below finds a non-word
//   start), `before !== null` / `after !== null` forced true (a null side has no test to
//   run: contextTest and contextPattern skip it). cachedRegExp's clear at 8,192 entries:
//   cost only, as above.

describe(`match: a term past ${MAX_TERM_PATTERN_CHARS} chars is tested by its first ${MAX_TERM_PATTERN_CHARS} (a word before a value by its last), never cutting a surrogate pair`, () => {
  it('a long word: its head is what a text must hold', () => {
    const w = `${'a'.repeat(1000)}${'b'.repeat(500)}`;
    const p = profileQuery(`${w} done`);
    expect(coverage(p, `${w.slice(0, MAX_TERM_PATTERN_CHARS)}zzz done`).terms).toBe(1);
    expect(coverage(p, `${'a'.repeat(600)}${w.slice(-MAX_TERM_PATTERN_CHARS)} done`).terms).toBe(0.5);
  });
  it('a head cut that would split a pair stops before it', () => {
    // U+10000 (a letter, high surrogate D800) at chars 1023-1024.
    const w = `${'a'.repeat(MAX_TERM_PATTERN_CHARS - 1)}\u{10000}${'b'.repeat(100)}`;
    const p = profileQuery(`${w} done`);
    expect(coverage(p, `${w} done`).terms).toBe(1);
    expect(coverage(p, `${'a'.repeat(MAX_TERM_PATTERN_CHARS - 1)}\u{10001} done`).terms).toBe(1);
    const high = `${'a'.repeat(MAX_TERM_PATTERN_CHARS - 1)}\u{1D41A}${'b'.repeat(100)}`; // high surrogate D835
    expect(coverage(profileQuery(`${high} done`), `${high} done`).terms).toBe(1);
  });
  it('a value of exactly 1,024 chars is bounded at both ends; one past it runs on over value characters', () => {
    const v = '1'.repeat(MAX_TERM_PATTERN_CHARS);
    expect(coverage(profileQuery(`limit ${v}`), `limit ${v} ok`).values).toBe(1);
    expect(coverage(profileQuery(`limit ${v}`), `limit ${v}5 ok`).values).toBe(0);
    const longer = `${v}1`;
    expect(coverage(profileQuery(`limit ${longer}`), `limit ${longer}5 ok`).values).toBe(1);
  });
  it("a long word before a value: its tail must stand next to the value, not its head, nor nothing", () => {
    // U+1D400 (a letter; low surrogate DC00) straddles the tail's first char.
    const w = `${'b'.repeat(100)}\u{1D400}${'a'.repeat(MAX_TERM_PATTERN_CHARS - 1)}`;
    const p = profileQuery(`${w} 40`);
    expect(p.contextCount).toBe(1);
    expect(contextHolds(p, `${w} 40`.toLowerCase())).toBe(true);
    expect(contextHolds(p, `x${'a'.repeat(MAX_TERM_PATTERN_CHARS)} 40`)).toBe(true);
    expect(contextHolds(p, 'other 40')).toBe(false);
    const tail = `${'b'.repeat(100)}\u{10000}${'a'.repeat(MAX_TERM_PATTERN_CHARS - 1)}`; // low surrogate DC00 too, other high half
    expect(contextHolds(profileQuery(`${tail} 40`), `${tail} 40`)).toBe(true);
    const digit = `${'b'.repeat(100)}\u{1D7FF}${'a'.repeat(MAX_TERM_PATTERN_CHARS - 1)}`; // a digit; low surrogate DFFF
    expect(contextHolds(profileQuery(`${digit} 40`), `${digit} 40`)).toBe(true);
  });
});

describe("match: a sign opening the query is part of its value", () => {
  it('+76 at the first character', () => {
    expect(profileQuery('+76 lines').standalone).toEqual(['+76']);
  });
});

describe('match: values and digit identifiers are tested bounded, words as prefixes', () => {
  it('40 is not held by 400, float16 not by float160', () => {
    expect(coverage(profileQuery('rate 40'), 'rate 400').values).toBe(0);
    expect(coverage(profileQuery('rate 40'), 'rate 40').values).toBe(1);
    expect(coverage(profileQuery('cast to float16'), 'cast to float160').values).toBe(0);
  });
});

describe("match: a question's value needs its words on one side — a side it has, never none", () => {
  it('only a word before it', () => {
    const p = profileQuery('timeout 40');
    expect(contextHolds(p, 'timeout 40', true)).toBe(true);
    expect(contextHolds(p, 'count 40', true)).toBe(false);
  });
  it('only a word after it', () => {
    const p = profileQuery('40 workers');
    expect(contextHolds(p, 'had 40 workers', true)).toBe(true);
    expect(contextHolds(p, '40 threads', true)).toBe(false);
  });
});

describe('match: with no term to anchor a window (stop words only), the whole candidate is judged', () => {
  it('a policy that asks no coverage matches a multi-line candidate', () => {
    const p = profileQuery('the and of');
    expect(p.key).toBeNull();
    expect(matches(p, 'a\nb\nc', { minCoverage: 0, minValueCoverage: 1 })).toBe(true);
  });
});

describe('match: the windows are around the lines that hold the key, and none past the last line', () => {
  it('a candidate without the key on any line is no match, however many of the other terms it holds', () => {
    const p = profileQuery('undefined alpha beta\ngamma');
    expect(p.key).toBe('undefined');
    expect(matches(p, 'x\ny\nalpha beta gamma')).toBe(false);
    expect(matches(p, 'x\ny\nundefined alpha beta gamma')).toBe(true);
  });
});

describe('match: a statement with a quoted part needs each value next to its words on both sides; a question on one', () => {
  it('consistent() reads a statement by default', () => {
    const p = profileQuery('ran `pytest -x` with timeout 40 seconds');
    const text = 'ran `pytest -x` with timeout 40 ms';
    expect(consistent(p, text)).toBe(false);
    expect(consistent(p, text, true)).toBe(true);
  });
});

describe('match: a quote held verbatim is looked for as written; only when none is, case aside', () => {
  it('a window around a case-folded occurrence does not count while a verbatim one exists', () => {
    const p = profileQuery('the `FooBar run` and `BazQux step` printed 42 errors');
    const verbatimFirst = 'FooBar run printed 7 errors\nf1\nf2\nfoobar RUN and bazqux STEP printed 42 errors';
    expect(consistent(p, verbatimFirst)).toBe(false);
    // No quote verbatim: every case-folded occurrence is looked at.
    expect(consistent(p, verbatimFirst.replace('FooBar run', 'foobar run'))).toBe(true);
  });
});

describe('match: pieceAt — an offset at a piece\'s start is in that piece', () => {
  it('starts 0, 5, 10', () => {
    expect([0, 4, 5, 9, 10, 99].map((at) => pieceAt([0, 5, 10], at))).toEqual([0, 0, 1, 1, 2, 2]);
  });
});
