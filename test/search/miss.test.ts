// The miss decision (src/support.ts): "not in transcript" only for what was never said, one
// describe per rule, over a small transcript with known facts amid real filler turns.
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SpanStore, type TurnInput } from '../../src/store.js';
import { FRAME_TURNS } from '../../src/support.js';
import { realTurns, tmpDir } from '../helpers/data.js';

const DAY = 86_400_000;
const MAY_8 = Date.UTC(2023, 4, 8, 13, 56);
const JULY_1 = Date.UTC(2023, 6, 1, 10, 0);

const FACTS: Omit<TurnInput, 'turn'>[] = [
  { role: 'user', text: "Let's configure the gateway. The upstream API enforces a rate limit of 40 req/s per token." },
  { role: 'assistant', text: 'I enjoyed reading the flake8 docs; max-line-length = 88 is set in .flake8 now.' },
  { role: 'assistant', text: 'The library holds 179 books in total, counted from Books.plist.' },
  { role: 'tool', text: 'ripgrep 14.1.1 (rev 4649aa9700)' },
  { role: 'user', text: 'We decided to use hatchling as the build backend for the package.' },
  { role: 'user', speaker: 'Caroline', text: 'I ran a charity race last weekend and realized that self-care really matters.' },
  { role: 'user', speaker: 'Melanie', text: 'We went camping at the lake with the kids.', timestamp: MAY_8 },
  { role: 'user', speaker: 'Melanie', text: 'We went camping in the mountains this time.', timestamp: JULY_1 },
  { role: 'assistant', text: 'Fixed the fixture loader so the sample books open.', meta: { source_file: 'day-012.md' } },
  { role: 'tool', text: 'TruncDate result: 2019-12-31\nTruncTime result: 21:00:00' },
  { role: 'user', text: 'Next task: the URLValidator tests fail on usernames that hold a colon.' },
  { role: 'tool', text: 'Python 3.6.8 (default, Jan 14 2019) on linux' },
];

let store: SpanStore;
let dir: string;
const turnOf = new Map<string, number>();

beforeAll(async () => {
  dir = tmpDir('spanguard-miss-');
  store = await SpanStore.open(dir, { durability: 'none' });
  const filler = realTurns(300);
  const turns: TurnInput[] = [];
  let t = 0;
  filler.forEach((f, i) => {
    turns.push({ turn: ++t, role: f.role, text: f.text, timestamp: Date.UTC(2023, 0, 1) + i * 60_000 });
    if (i % 25 === 10 && FACTS.length > turns.length / 25) {
      const fact = FACTS[Math.floor(i / 25)];
      if (fact) {
        turns.push({ ...fact, turn: ++t, timestamp: fact.timestamp ?? Date.UTC(2023, 0, 1) + i * 60_000 + 1 });
        turnOf.set(fact.text, t);
      }
    }
  });
  // Timestamps never go backwards in a host's transcript: the dated facts go last, in order.
  for (const f of FACTS.filter((x) => x.timestamp !== undefined)) {
    if (turnOf.has(f.text)) continue;
    turns.push({ ...f, turn: ++t });
    turnOf.set(f.text, t);
  }
  await store.appendMany(turns.sort((a, b) => (a.timestamp ?? 0) - (b.timestamp ?? 0)).map((x, i) => ({ ...x, turn: i + 1 })));
  // Turn numbers were reassigned in time order: look them up again by text.
  for (const f of FACTS) turnOf.set(f.text, store.findExact(f.text)[0]!.turnStart);
}, 60_000);

afterAll(async () => {
  await store?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

const turn = (i: number) => turnOf.get(FACTS[i]!.text)!;
const found = async (q: string, i: number, k = 10) => {
  const r = await store.search(q, { k });
  return { r, rank: r.hits.findIndex((h) => h.turnStart === turn(i)) };
};

describe('rule 1: a value the question states must stand in some span, next to its words', () => {
  it('a value query finds its turn even with words in between ("rate limit 40 req/s")', async () => {
    const { r, rank } = await found('rate limit 40 req/s', 0);
    expect(r.miss).toBe(false);
    expect(rank).toBeGreaterThanOrEqual(0);
    expect(r.hits[rank]!.support!.values.matched).toContain('40');
  });
  it('a perturbed value is not in transcript', async () => {
    const r = await store.search('Did the library hold 197 books in total?');
    expect(r).toMatchObject({ miss: true, missReason: 'value-not-stated', hits: [] });
    expect(r.missDetail).toContain('197');
  });
  it('the true value is found', async () => {
    const { r, rank } = await found('Did the library hold 179 books in total?', 2);
    expect(r.miss).toBe(false);
    expect(rank).toBe(0);
    expect(r.hits[0]!.support!.claim).toBe(true);
  });
  it('a date the question asks about is a value: one never printed is not in transcript, the one printed is found', async () => {
    expect(await store.search('Was the TruncDate result 2019-12-30?')).toMatchObject({ miss: true, hits: [] });
    const { r, rank } = await found('Was the TruncDate result 2019-12-31?', 9);
    expect(r.miss).toBe(false);
    expect(rank).toBe(0);
  });
  it('an identifier stated with other digits contradicts the question', async () => {
    const r = await store.search('Was ripgrep 14.2.1 installed?');
    expect(r.miss).toBe(true);
  });
});

describe("rule 1b: the claim must be held where the question's names are, within FRAME_TURNS turns", () => {
  it('the value stated near the task the question names is found', async () => {
    expect(Math.abs(turn(11) - turn(10))).toBeLessThanOrEqual(FRAME_TURNS);
    const { r, rank } = await found('In the URLValidator task, was Python 3.6.8 installed?', 11);
    expect(r.miss).toBe(false);
    expect(rank).toBe(0);
    expect(r.hits[0]!.support!.claim).toBe(true);
  });
  it('the same value, asked of a task named only far from it, is not in transcript', async () => {
    expect(Math.abs(turn(11) - turn(4))).toBeGreaterThan(FRAME_TURNS);
    const r = await store.search('In the Hatchling task, was Python 3.6.8 installed?');
    expect(r).toMatchObject({ miss: true, missReason: 'value-not-stated', hits: [] });
  });
});

describe('rule 2: every name and identifier the question uses must be held by some span', () => {
  it('a name the transcript never uses is not in transcript', async () => {
    const r = await store.search('Which Vagrant box do we test the package with?');
    expect(r).toMatchObject({ miss: true, missReason: 'name-not-stated' });
    expect(r.missDetail).toBe('vagrant');
  });
  it('a slash-joined pair in a question is held when both parts are', async () => {
    const r = await store.search('What rate/token limit did the upstream API enforce?');
    expect(r.miss).toBe(false);
  });
});

describe('rule 3: a claim attributed to a party must have been said by that party', () => {
  it('"did I say" about what the assistant said is not in transcript, and says who did', async () => {
    const r = await store.search('Did I say the library had 179 books?');
    expect(r).toMatchObject({ miss: true, missReason: 'other-party' });
    expect(r.missDetail).toMatch(/said by agent, not user/);
  });
  it('the same claim attributed to the assistant is found', async () => {
    const { r, rank } = await found('Did the assistant say the library had 179 books?', 2);
    expect(r.miss).toBe(false);
    expect(rank).toBe(0);
    expect(r.hits[0]!.support!.speaker).toEqual({ asked: 'agent', said: 'agent', match: true });
  });
  it('a named speaker is matched against the speaker field, and preferred', async () => {
    const { r, rank } = await found('What did Caroline realize after her charity race?', 5);
    expect(r.miss).toBe(false);
    expect(rank).toBe(0);
    expect(r.hits[0]!.support!.speaker).toMatchObject({ asked: 'Caroline', match: true });
    expect(r.hits[0]).toMatchObject({ speaker: 'Caroline', role: 'user' });
  });
  it('a speaker nobody by that name is not in transcript', async () => {
    const r = await store.search('What did Gertrude realize after her charity race?');
    expect(r).toMatchObject({ miss: true, missReason: 'name-not-stated' });
  });
});

describe('rule 4: a question without values or names returns its best evidence, however worded', () => {
  it('a paraphrase that shares one word with its turn is answered, not "not in transcript"', async () => {
    const { r, rank } = await found('What did we settle on for the build backend?', 4);
    expect(r.miss).toBe(false);
    expect(rank).toBeGreaterThanOrEqual(0);
    expect(r.hits[rank]!.support!.terms.missing).toContain('settle');
  });
  it('inflections match by normal form: "enjoy" finds "enjoyed"', async () => {
    const { r, rank } = await found('Which docs did the assistant enjoy reading?', 1);
    expect(r.miss).toBe(false);
    expect(rank).toBeGreaterThanOrEqual(0);
    expect(r.hits[rank]!.support!.terms.matched).toContain('enjoy');
  });
});

describe('rule 5: nothing in common with any span is a miss', () => {
  it('words the transcript never uses return no nearest neighbour', async () => {
    const r = await store.search('zebra quartz marmalade');
    expect(r).toMatchObject({ miss: true, missReason: 'nothing-in-common', hits: [] });
  });
});

describe('time: a date or a numbered day named in the question ranks and is reported', () => {
  it('"in May 2023" prefers the turn of May 2023 over the same words in July', async () => {
    const r = await store.search('Where did Melanie go camping in May 2023?');
    expect(r.miss).toBe(false);
    expect(r.hits[0]!.turnStart).toBe(turn(6));
    expect(r.hits[0]!.support!.time).toEqual({ asked: 'may 2023', match: true });
    const july = r.hits.find((h) => h.turnStart === turn(7));
    if (july) expect(july.support!.time!.match).toBe(false);
  });
  it('"on day 12" matches a `day-012.md` field', async () => {
    const { r, rank } = await found('On day 12, what was fixed in the fixture loader?', 8);
    expect(r.miss).toBe(false);
    expect(rank).toBe(0);
    expect(r.hits[0]!.support!.time).toEqual({ asked: 'day 12', match: true });
  });
  it('search filters by time range and by speaker', async () => {
    const r = await store.search('camping', { time: [MAY_8 - DAY, MAY_8 + DAY] });
    expect(r.hits.map((h) => h.turnStart)).toEqual([turn(6)]);
    const c = await store.search('charity race', { speaker: 'Melanie' });
    expect(c.hits.every((h) => h.speaker === 'Melanie')).toBe(true);
  });
});
