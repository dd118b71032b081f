// `replay --questions`: an evidence turn within the transcript's turns that no line of the
// transcript holds is malformed input (exit 65 naming the questions line and the field),
// checked before anything is written. Evidence past the last turn is a prefix's question and
// is skipped, as before.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { tmpDir } from '../helpers/data.js';
import { expectMalformed, run } from './helpers.js';

const jsonl = (rows: Record<string, unknown>[]) => rows.map((r) => JSON.stringify(r)).join('\n') + '\n';

function files(questions: Record<string, unknown>[]): { work: string; turns: string; qs: string } {
  const work = tmpDir();
  const turns = path.join(work, 'turns.jsonl');
  // Turns 1, 2, 5 and 6: 3 and 4 are not in this transcript.
  fs.writeFileSync(turns, jsonl([1, 2, 5, 6].map((turn) => ({ turn, role: turn % 2 ? 'user' : 'assistant', text: `turn ${turn}: the port is ${8000 + turn}` }))));
  const qs = path.join(work, 'questions.jsonl');
  fs.writeFileSync(qs, jsonl(questions));
  return { work, turns, qs };
}

describe('evidence_turns must name turns the transcript holds', () => {
  it('a turn inside the transcript that no line holds exits 65 naming the line and field', () => {
    const { work, turns, qs } = files([
      { question: 'What port in turn 1?', answer: '8001', evidence_turns: [1] },
      { question: 'SECRET question?', answer: 'SECRET', evidence_turns: [2, 4] },
    ]);
    const r = expectMalformed(work, [turns, '--questions', qs], /questions line 2: "evidence_turns" names turn 4, which no line of the transcript holds/);
    expect(r.stderr).not.toMatch(/SECRET/);
  });
  it('turns the transcript holds are asked; evidence past its last turn is skipped and counted', () => {
    const { work, turns, qs } = files([
      { question: 'What port in turn 5?', answer: '8005', evidence_turns: [5] },
      { question: 'What port in turn 9?', answer: '8009', evidence_turns: [9] },
    ]);
    const r = run('replay', turns, '--questions', qs, '--store', path.join(work, 'store'), '--budget', '1000', '--json');
    expect(r.status, r.stderr).toBe(0);
    const report = JSON.parse(r.stdout);
    expect(report.questions.total).toBe(1);
    expect(report.questionsSkipped).toEqual({ otherSession: 0, pastLastTurn: 1 });
  });
  it('with --limit, the prefix decides: turn 5 is past a 2-turn prefix, turn 4 is not held by a 3-turn one', () => {
    const { work, turns, qs } = files([{ question: 'What port?', answer: '8001', evidence_turns: [1, 4] }]);
    const r = run('replay', turns, '--questions', qs, '--limit', '2', '--store', path.join(work, 'store'), '--budget', '1000', '--json');
    expect(r.status, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout).questionsSkipped.pastLastTurn).toBe(1);
    expectMalformed(work, [turns, '--questions', qs, '--limit', '3'], /questions line 1: "evidence_turns" names turn 4/);
  });
});

describe('a questions line is at most 64 MiB and never echoed', () => {
  it('not JSON: the line only', () => {
    const { work, turns, qs } = files([]);
    fs.writeFileSync(qs, '{"question": SECRET}\n');
    const r = expectMalformed(work, [turns, '--questions', qs], /questions file .*: questions line 1: not valid JSON/);
    expect(r.stderr).not.toMatch(/SECRET/);
  });
  it('/dev/zero as the questions file', () => {
    const { work, turns } = files([]);
    expectMalformed(work, [turns, '--questions', '/dev/zero'], /questions file \/dev\/zero: line 1 is longer than 67108864 bytes/);
  });
});
