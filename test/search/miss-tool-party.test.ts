// Rule 3 of src/support.ts with the environment as the party: a question that puts a value in
// the mouth of the environment ("did the environment report Python 3.8.12?") is held only by
// tool output — role `tool`, or a turn whose metadata says it is an observation or a tool
// result — never by the task statement or the agent's words that quote the same value. An
// agent that restates the version is not an environment that printed it.
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SpanStore, type TurnInput } from '../../src/store.js';
import { parseParty } from '../../src/query.js';
import { realTurns, storeWithTask, tmpDir } from '../helpers/data.js';

const TASK: Omit<TurnInput, 'turn'>[] = [
  { role: 'user', text: 'The proxy authentication bug shows up only on Python 3.8.12.', meta: { kind: 'task' } },
  { role: 'assistant', text: 'The issue is reported for Python 3.8.12; let me check which interpreter this environment runs.', meta: { kind: 'action' } },
  { role: 'user', text: '<returncode>0</returncode>\n<output>\nPython 3.9.20\n</output>', meta: { kind: 'observation' } },
  { role: 'assistant', text: 'Checking the urllib3 release as well.' },
  { role: 'tool', text: 'urllib3 1.26.20' },
];

let store: SpanStore;
let turnOf: Map<string, number>;

beforeAll(async () => {
  ({ store, turnOf } = await storeWithTask('spanguard-miss-tool-party-', TASK));
}, 60_000);

afterAll(async () => {
  await store?.close();
});

describe('rule 3, the environment as the party: a value the environment is asked to have printed is held by tool output only', () => {
  it('reads the environment, the output, the terminal as the subject of a report, not as a qualifier', () => {
    expect(parseParty('Did the environment report Python 3.8.12?')).toEqual({ kind: 'tool' });
    expect(parseParty('What did the terminal show after the install?')).toEqual({ kind: 'tool' });
    expect(parseParty('Which Python version did the environment report when the agent checked?')).toEqual({ kind: 'tool' });
    // "the shell helper", "the output format": the word qualifies a noun; nobody is quoted.
    expect(parseParty('Which title did the assistant copy via the shell helper?')).toEqual({ kind: 'agent' });
    expect(parseParty('Which title was copied via the shell helper?')).toBeNull();
    expect(parseParty('What does the output format look like?')).toBeNull();
    // A place or a thing talked about, not a party.
    expect(parseParty('What Python version was installed in the environment?')).toBeNull();
    expect(parseParty('What does Melanie do to protect the environment?')).toBeNull();
  });
  it('a version that only the task statement and the agent state is not what the environment reported', async () => {
    const r = await store.search('Did the environment report Python 3.8.12?');
    expect(r).toMatchObject({ miss: true, missReason: 'other-party', hits: [] });
    expect(r.missDetail).toContain('not tool');
  });
  it('the version the environment did print (an observation filed under the user role) is answered', async () => {
    const r = await store.search('Did the environment report Python 3.9.20?');
    expect(r.miss).toBe(false);
    expect(r.hits[0]!.turnStart).toBe(turnOf.get(TASK[2]!.text));
    expect(r.hits[0]!.support!.speaker).toEqual({ asked: 'tool', said: 'tool', match: true });
  });
  it('a tool-role turn is tool output too', async () => {
    const r = await store.search('Did the environment report urllib3 1.26.20?');
    expect(r.miss).toBe(false);
    expect(r.hits[0]!.turnStart).toBe(turnOf.get(TASK[4]!.text));
  });
  it('a store that keeps each call with its output in one span has no environment to tell apart: no party, no miss', async () => {
    const d = tmpDir('spanguard-miss-tool-party-merged-');
    const merged = await SpanStore.open(d, { durability: 'none' });
    try {
      const turns: TurnInput[] = realTurns(200).map((f, i) => ({ turn: i + 1, role: f.role, text: f.text }));
      turns.push({ turn: turns.length + 1, role: 'user', text: TASK[0]!.text });
      turns.push({ turn: turns.length + 1, turnEnd: turns.length + 2, role: 'assistant', text: 'python --version\nPython 3.9.20' });
      await merged.appendMany(turns);
      const r = await merged.search('Did the environment report Python 3.9.20?');
      expect(r.miss).toBe(false);
      expect(r.hits[0]!.turnStart).toBe(202);
      expect(r.hits[0]!.support!.speaker).toBeUndefined();
    } finally {
      await merged.close();
      fs.rmSync(d, { recursive: true, force: true });
    }
  });
  it('the same value asked of the agent is held by the agent', async () => {
    const r = await store.search('Did the agent mention Python 3.8.12?');
    expect(r.miss).toBe(false);
    expect(r.hits.map((h) => h.turnStart)).toContain(turnOf.get(TASK[1]!.text));
  });
});
