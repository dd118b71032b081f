// Rule 7 of src/support.ts (src/scope.ts): in a part of the session a question names and the
// store's fields resolve, every qualifier of what it asks for must be stated in that part.
// Three tasks, each marked by an `episode` field, amid real filler turns of a fourth: task A
// (the Frobnicator) uses dask but never says chunk; task B (the Quuxifier) tests a dask chunk
// size; both are longer than MIN_PART_TURNS. A second store holds the same turns per day
// (`source_file: day-001.md`…) and a third whose only field marks exchanges of two turns.
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SpanStore, type TurnInput } from '../../src/store.js';
import { analyzeQuery, askedFor, namedScope } from '../../src/query.js';
import { MIN_PART_TURNS, resolveScope } from '../../src/scope.js';
import { RecordKind } from '../../src/native.js';
import { realTurns, tmpDir } from '../helpers/data.js';

const TASK_A: Omit<TurnInput, 'turn'>[] = [
  { role: 'user', text: 'Next task: the Frobnicator crashes on empty input arrays.' },
  { role: 'assistant', text: 'I will reproduce the Frobnicator crash with a dask array of zero length.' },
  { role: 'tool', text: 'Python 3.8.12\ndask 2023.1.0' },
  { role: 'assistant', text: 'The Frobnicator now handles empty input; the tests pass.' },
];
const TASK_B: Omit<TurnInput, 'turn'>[] = [
  { role: 'user', text: 'Next task: the Quuxifier drops the last record of a dask array.' },
  { role: 'tool', text: 'docker pull python:3.8.12-slim\nStatus: Downloaded newer image for python:3.8.12-slim' },
  { role: 'assistant', text: 'Tested the Quuxifier with a dask chunk size of 64 rows; the last record is kept now.' },
];

const dirs: string[] = [];
const stores: SpanStore[] = [];
const turnOf = new Map<string, number>();
let byEpisode: SpanStore;
let byDay: SpanStore;
let unmarked: SpanStore;
let rangeOf: Record<string, [number, number]> = {};

/** The transcript: filler (part `setup`), task A, filler (part `docs`), task B; `mark` gives each turn's fields from its part and its place in it. */
function transcript(mark: (part: string, i: number) => Record<string, string> | undefined): TurnInput[] {
  const turns: TurnInput[] = [];
  const ranges: Record<string, [number, number]> = {};
  const add = (part: string, t: Omit<TurnInput, 'turn'>) => {
    const meta = mark(part, ranges[part] ? turns.length + 1 - ranges[part][0] : 0);
    turns.push({ ...t, turn: turns.length + 1, ...(meta ? { meta } : {}) });
    turnOf.set(t.text, turns.length);
    const r = (ranges[part] ??= [turns.length, turns.length]);
    r[1] = turns.length;
  };
  const steps = (part: string, n: number) => {
    for (let i = 0; i < n; i++) add(part, { role: 'assistant', text: `step ${turns.length}: ran the build, ${turns.length * 3} files changed.` });
  };
  const filler = realTurns(200);
  for (const f of filler.slice(0, 100)) add('setup', { role: f.role, text: f.text });
  for (const t of TASK_A) add('frob', t);
  steps('frob', MIN_PART_TURNS);
  for (const f of filler.slice(100)) add('docs', { role: f.role, text: f.text });
  for (const t of TASK_B) add('quux', t);
  steps('quux', MIN_PART_TURNS);
  rangeOf = ranges;
  return turns;
}

const DAYS: Record<string, string> = { setup: 'day-001.md', frob: 'day-002.md', docs: 'day-003.md', quux: 'day-004.md' };

async function open(turns: TurnInput[]): Promise<SpanStore> {
  const dir = tmpDir('spanguard-miss-scope-');
  dirs.push(dir);
  const s = await SpanStore.open(dir, { durability: 'none' });
  stores.push(s);
  await s.appendMany(turns);
  return s;
}

beforeAll(async () => {
  byEpisode = await open(transcript((part) => ({ session: 'all', episode: `acme__${part}-1` })));
  byDay = await open(transcript((part) => ({ session: 'all', source_file: DAYS[part]! })));
  // Fields of single exchanges only (two turns each): no part of the session.
  unmarked = await open(transcript((part, i) => ({ exchange: `${part}-${Math.floor(i / 2)}` })));
}, 60_000);

afterAll(async () => {
  for (const s of stores) await s.close();
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

describe('rule 7: in the part of the session a question names, what it asks for must be stated with every qualifier', () => {
  it('reads the part an opening clause names, and what the question asks for (a version in the phrase is no qualifier)', () => {
    expect(namedScope('In the xarray int32 stack task, which dask chunk size did the agent test with?')).toEqual({ text: 'xarray int32 stack', noun: 'task' });
    expect(namedScope('In the Django task about runserver, which file?')).toEqual({ text: 'Django about runserver', noun: 'task' });
    expect(namedScope('In the end, which file did the agent patch?')).toBeNull();
    expect(askedFor('Which Python 3.8.12 docker image did the agent pull?')).toEqual({ head: 'image', qualifiers: ['python', 'docker'] });
  });
  it('resolves the named part to the run of turns its field marks, a day to its file among the candidates, and an unmarked store to nothing', async () => {
    const q = 'In the Frobnicator crash task, which dask chunk size did the agent test with?';
    const ctx = (s: SpanStore) => ({ log: s.log, lexical: s.lexical });
    expect(resolveScope(ctx(byEpisode), analyzeQuery(q))).toEqual({ key: 'episode', value: 'acme__frob-1', turns: rangeOf.frob });
    const day4 = 'On day 4, which dask chunk size did the agent test with?';
    const candidates = (await byDay.search(day4)).hits.map((h) => byDay.get(h.spanId)!);
    expect(resolveScope(ctx(byDay), analyzeQuery(day4), RecordKind.raw, [Number.NaN, Number.NaN], candidates)).toEqual({
      key: 'source_file',
      value: 'day-004.md',
      turns: rangeOf.quux,
    });
    expect(resolveScope(ctx(unmarked), analyzeQuery(q))).toBeNull();
  });
  it('a qualifier stated in another task only (chunk) is not in transcript for the task named', async () => {
    const r = await byEpisode.search('In the Frobnicator crash task, which dask chunk size did the agent test with?');
    expect(r).toMatchObject({ miss: true, missReason: 'not-in-scope', hits: [] });
    expect(r.missDetail).toContain('chunk');
    expect(r.missDetail).toContain('acme__frob-1');
  });
  it('the same question of the task that tested one is answered', async () => {
    const r = await byEpisode.search('In the Quuxifier task, which dask chunk size did the agent test with?');
    expect(r.miss).toBe(false);
    expect(r.hits.map((h) => h.turnStart)).toContain(turnOf.get(TASK_B[2]!.text));
  });
  it('a value the task does state does not hold the question: its docker image was pulled in another task', async () => {
    const r = await byEpisode.search('In the Frobnicator crash task, which Python 3.8.12 docker image did the agent pull?');
    expect(r).toMatchObject({ miss: true, missReason: 'not-in-scope', hits: [] });
    expect(r.missDetail).toContain('docker');
    expect((await byEpisode.search('In the Quuxifier task, which Python 3.8.12 docker image did the agent pull?')).miss).toBe(false);
  });
  it('a day named as a numbered period is a part too', async () => {
    expect(await byDay.search('On day 2, which dask chunk size did the agent test with?')).toMatchObject({ miss: true, missReason: 'not-in-scope' });
    expect((await byDay.search('On day 4, which dask chunk size did the agent test with?')).miss).toBe(false);
  });
  it('where no field marks a part (a field of two-turn exchanges is none), nothing changes: the question is held to the whole transcript', async () => {
    expect((await unmarked.search('In the Frobnicator crash task, which dask chunk size did the agent test with?')).miss).toBe(false);
  });
  it('a name two parts share (both tasks work on a dask array) is ambiguous: nothing changes', async () => {
    const q = 'In the dask array task, which dask chunk size did the agent test with?';
    expect(resolveScope({ log: byEpisode.log, lexical: byEpisode.lexical }, analyzeQuery(q))).toBeNull();
    expect((await byEpisode.search(q)).miss).toBe(false);
  });
  it('a quoted part is the evidence itself: its description need not be stated in the part', async () => {
    const r = await byEpisode.search('In the Frobnicator crash task, which dask chunk size did `dask 2023.1.0` report?');
    expect(r.miss).toBe(false);
  });
});
