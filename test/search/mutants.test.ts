// Rules of what a query is read as (src/query.ts), of the miss decision (src/support.ts) and
// of the honest-miss match (src/match.ts) that the other search tests leave unchecked: found
// by `npm run mutate` (docs/MUTATION.md). One describe per rule, on the pure functions.
import { describe, expect, it } from 'vitest';
import { analyzeQuery, isQuestion, parseParty, parseTime } from '../../src/query.js';
import { answersText, decideMiss, fieldText, saidBy, supportOf, type Support, type SupportSpan } from '../../src/support.js';

const day = (y: number, m: number, d: number) => ({ from: Date.UTC(y, m - 1, d), to: Date.UTC(y, m - 1, d + 1) - 1 });

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

describe("query: a numbered period or a date says when, not what: its numbers leave the claim and the values' contexts", () => {
  it('"day 12" is the period, not a value to hold next to its words', () => {
    const a = analyzeQuery('On day 12, what was fixed in the fixture loader?');
    expect(a.period).toEqual({ unit: 'day', n: 12 });
    expect(a.claim).toEqual([]);
    expect(a.profile.contexts).toEqual([]);
    expect(a.profile.contextSides).toEqual([]);
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
