// The miss rules for what a question asks for (src/support.ts, rules 1c and 6), one describe
// per rule, over two tasks far apart amid real filler turns. Task A never mentions pip; task B
// installs a package with pip. The turns right around task A are plain build steps, so what
// task A's stretch of conversation holds is known.
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SpanStore, type TurnInput } from '../../src/store.js';
import { ASKED_FRAME_TURNS } from '../../src/search.js';
import { askedFor, claimCompounds } from '../../src/query.js';
import { realTurns, tmpDir } from '../helpers/data.js';

const TASK_A: Omit<TurnInput, 'turn'>[] = [
  { role: 'user', text: 'Next task: the Frobnicator crashes on empty input.' },
  { role: 'assistant', text: 'I will reproduce the Frobnicator crash first, with one extra empty file.' },
  { role: 'tool', text: 'conda install numpy-stubs\nInstalled package numpy-stubs 1.2' },
  { role: 'assistant', text: 'The Frobnicator now handles empty input; the tests pass.' },
];
const TASK_B: Omit<TurnInput, 'turn'>[] = [
  { role: 'user', text: 'Next task: the Quuxifier drops the last record.' },
  { role: 'tool', text: 'pip install pytest-httpbin\nSuccessfully installed package pytest-httpbin-2.0.0' },
  { role: 'assistant', text: 'The Quuxifier keeps the last record now; added pytest_mock to the test requirements.' },
];

let store: SpanStore;
let dir: string;
const turnOf = new Map<string, number>();

beforeAll(async () => {
  dir = tmpDir('spanguard-miss-asked-');
  store = await SpanStore.open(dir, { durability: 'none' });
  const turns: TurnInput[] = [];
  const add = (t: Omit<TurnInput, 'turn'>) => {
    turns.push({ ...t, turn: turns.length + 1 });
    turnOf.set(t.text, turns.length);
  };
  const steps = (n: number) => {
    for (let i = 0; i < n; i++) add({ role: 'assistant', text: `step ${turns.length}: ran the build, ${turns.length * 3} files changed.` });
  };
  const filler = realTurns(300);
  for (const f of filler.slice(0, 150)) add({ role: f.role, text: f.text });
  steps(2 * ASKED_FRAME_TURNS);
  for (const t of TASK_A) add(t);
  steps(2 * ASKED_FRAME_TURNS);
  for (const f of filler.slice(150)) add({ role: f.role, text: f.text });
  for (const t of TASK_B) add(t);
  await store.appendMany(turns);
}, 60_000);

afterAll(async () => {
  await store?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

describe('rule 6: what a question asks for, qualified, must be stated with its qualifier where the question is', () => {
  it('reads the qualified noun a wh-question asks for, and nothing else', () => {
    expect(askedFor('In the Frobnicator task, which pip package did the agent install?')).toEqual({ head: 'package', qualifiers: ['pip'] });
    expect(askedFor('Which MySQL timezone tables did the agent load?')).toEqual({ head: 'tables', qualifiers: ['mysql', 'timezone'] });
    // One noun, a noun with its complement, an adverb: nothing to hold the question to.
    expect(askedFor('Which browser did the agent open?')).toBeNull();
    expect(askedFor('On which line of runserver.py is the message written?')).toBeNull();
    expect(askedFor('What monthly price did the banner advertise?')).toBeNull();
  });
  it('a package asked for as a pip package, where the task installed one only with conda, is not in transcript', async () => {
    const r = await store.search('In the Frobnicator task, which pip package did the agent install?');
    expect(r).toMatchObject({ miss: true, missReason: 'qualifier-not-stated', missDetail: 'pip package', hits: [] });
  });
  it('the same question of the task that did use pip is answered', async () => {
    const r = await store.search('In the Quuxifier task, which pip package did the agent install?');
    expect(r.miss).toBe(false);
    expect(r.hits.map((h) => h.turnStart)).toContain(turnOf.get(TASK_B[1]!.text));
  });
  it('a question with one qualifier the task does state is about what was discussed there, however it words the rest', async () => {
    const r = await store.search('In the Frobnicator task, which conda pip package did the agent install?');
    expect(r.miss).toBe(false);
    expect(r.hits.map((h) => h.turnStart)).toContain(turnOf.get(TASK_A[2]!.text));
  });
  it('a head noun the task never states decides nothing: the evidence may word it otherwise', async () => {
    const r = await store.search('In the Frobnicator task, which pip launcher did the agent run?');
    expect(r.miss).toBe(false);
  });
  it('without a name to place it, the question is held to the whole transcript', async () => {
    expect(await store.search('Which pip package did the agent install?')).toMatchObject({ miss: false });
    expect(await store.search('Which zypper package did the agent install?')).toMatchObject({
      miss: true,
      missReason: 'qualifier-not-stated',
      missDetail: 'zypper package',
    });
  });
});

describe('rule 6a: an adjective that selects among things of the kind (extra, new, first) is no qualifier the evidence must state', () => {
  it('reads "extra", "new", "first" out of the asked-for phrase, and keeps what names a kind', () => {
    expect(askedFor('Which extra pip package did the agent install?')).toEqual({ head: 'package', qualifiers: ['pip'] });
    expect(askedFor('What new slash command did we create?')).toEqual({ head: 'command', qualifiers: ['slash'] });
    expect(askedFor('What exact value did the cleanup keep?')).toBeNull();
  });
  it('"which extra pip package", where the task says extra but never pip, is not in transcript', async () => {
    // Task A says "one extra empty file": were "extra" a qualifier, its presence would hold the question.
    const r = await store.search('In the Frobnicator task, which extra pip package did the agent install?');
    expect(r).toMatchObject({ miss: true, missReason: 'qualifier-not-stated', missDetail: 'pip package', hits: [] });
  });
  it('the same question of the task that installed with pip is answered, though it never says extra', async () => {
    const r = await store.search('In the Quuxifier task, which extra pip package did the agent install?');
    expect(r.miss).toBe(false);
    expect(r.hits.map((h) => h.turnStart)).toContain(turnOf.get(TASK_B[1]!.text));
  });
});

describe('rule 1c: a hyphenated compound a yes/no question asserts is part of its claim', () => {
  it('reads the compounds of a yes/no question, outside its framing clause and its quotes', () => {
    expect(claimCompounds('In the proxy-auth task, did the agent install pytest-asyncio?')).toEqual(['pytest-asyncio']);
    expect(claimCompounds('Did the tests run on `ubuntu-latest`?')).toEqual([]);
    expect(claimCompounds("Why did the never-opened user's fixture vanish?")).toEqual([]);
  });
  it('a compound never stated is not in transcript, though each of its parts is', async () => {
    const r = await store.search('Did the agent install pytest-numpy?');
    expect(r).toMatchObject({ miss: true, missReason: 'value-not-stated', hits: [] });
    expect(r.missDetail).toContain('pytest-numpy');
  });
  it('the compound stated is found, in any of its spellings', async () => {
    for (const [q, turn] of [
      ['Did the agent install pytest-httpbin?', 1],
      ['Did the agent add pytest-mock to the requirements?', 2],
    ] as const) {
      const r = await store.search(q);
      expect(r.miss).toBe(false);
      expect(r.hits[0]!.turnStart).toBe(turnOf.get(TASK_B[turn]!.text));
      expect(r.hits[0]!.support!.claim).toBe(true);
      expect(r.hits[0]!.support!.values.matched).toEqual([q.match(/pytest-\w+/)![0]]);
    }
  });
});

describe('rule 6 holds a question with nothing specific in it only: a value or a quote is its claim', () => {
  it('"which pip package did `conda install numpy-stubs` install?" is judged by its quote, not by the words around it', async () => {
    const r = await store.search('In the Frobnicator task, which pip package did `conda install numpy-stubs` install?');
    expect(r.miss).toBe(false);
    expect(r.hits[0]!.turnStart).toBe(turnOf.get(TASK_A[2]!.text));
  });
});
