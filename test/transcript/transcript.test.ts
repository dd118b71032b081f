// Input formats for the CLI: shared/data turns and OpenAI chat messages; malformed lines by number.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseQuestions, parseTranscript, TranscriptError } from '../../src/transcript.js';

describe('transcript input: turns JSONL and OpenAI chat messages', () => {
  it('reads {turn, role, text} and keeps tool output with its call', () => {
    const t = parseTranscript(
      [
        JSON.stringify({ turn: 1, role: 'assistant', text: 'run ls', kind: 'action' }),
        JSON.stringify({ turn: 2, role: 'user', text: 'a b', kind: 'observation' }),
      ].join('\n'),
    );
    expect(t.map((x) => [x.turn, x.role, x.attachToPrevious])).toEqual([
      [1, 'assistant', false],
      [2, 'user', true],
    ]);
  });
  it('reads chat messages with tool calls, numbering turns', () => {
    const t = parseTranscript(
      [
        JSON.stringify({ role: 'user', content: 'hi' }),
        JSON.stringify({ role: 'assistant', content: null, tool_calls: [{ id: 'c1', function: { name: 'ls', arguments: '{}' } }] }),
        JSON.stringify({ role: 'tool', tool_call_id: 'c1', content: [{ type: 'text', text: 'file.txt' }] }),
      ].join('\n'),
    );
    expect(t.map((x) => x.turn)).toEqual([1, 2, 3]);
    expect(t[1]!.text).toContain('"name":"ls"');
    expect(t[2]!.text).toBe('file.txt');
    expect(t[2]!.attachToPrevious).toBe(true);
  });
});

describe('malformed input is reported with its line number', () => {
  it.each([
    ['{"turn":1,"role":"user","text":"ok"}\nnot json', 2],
    ['{"turn":1,"role":"user","text":"ok"}\n\n{"turn":"x","role":"user","text":"a"}', 3],
    ['{"turn":5,"role":"user","text":"ok"}\n{"turn":4,"role":"user","text":"back"}', 2],
    ['[1,2]', 1],
  ])('%j -> line %i', (text, line) => {
    try {
      parseTranscript(text);
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(TranscriptError);
      expect((e as TranscriptError).line).toBe(line);
      expect((e as Error).message).toContain(`line ${line}`);
    }
  });
});

describe('questions: answer null with no evidence is a question the transcript does not answer', () => {
  it('reads answerable and not-in-transcript lines, keeping category and session', () => {
    const qs = parseQuestions(
      [
        JSON.stringify({ session: 's1', question: 'How wide may a line be?', answer: '88', evidence_turns: [371], answerable: true, category: 'paraphrase', author_note: 'ignored' }),
        '',
        JSON.stringify({ question: 'What TCP port?', answer: null, evidence_turns: [], answerable: false, category: 'never-stated' }),
      ].join('\n'),
    );
    expect(qs).toEqual([
      { question: 'How wide may a line be?', answer: '88', evidenceTurns: [371], category: 'paraphrase', session: 's1' },
      { question: 'What TCP port?', answer: null, evidenceTurns: [], category: 'never-stated' },
    ]);
  });
  it('reads the natural-questions file whole', () => {
    const file = path.resolve('..', 'shared', 'data', 'natural-questions', 'questions.jsonl');
    if (!fs.existsSync(file)) return;
    const qs = parseQuestions(fs.readFileSync(file, 'utf8'));
    expect(qs.length).toBeGreaterThan(0);
    expect(qs.some((q) => q.answer === null)).toBe(true);
    expect(qs.every((q) => (q.answer === null) === (q.evidenceTurns.length === 0))).toBe(true);
  });
});

describe('questions: a malformed line is reported with its number and field, never its content', () => {
  const line = (o: unknown) => (typeof o === 'string' ? o : JSON.stringify(o));
  it.each([
    ['answer null with evidence', { question: 'SECRET?', answer: null, evidence_turns: [4] }, /"answer" is null but "evidence_turns" is not empty/],
    ['answer without evidence', { question: 'SECRET?', answer: 'SECRET', evidence_turns: [] }, /"answer" is given but "evidence_turns" is empty/],
    ['evidence of strings', { question: 'SECRET?', answer: 'SECRET', evidence_turns: ['4'] }, /"evidence_turns" must be an array of non-negative integers/],
    ['evidence negative', { question: 'SECRET?', answer: 'SECRET', evidence_turns: [-1] }, /"evidence_turns" must be an array of non-negative integers/],
    ['evidence missing', { question: 'SECRET?', answer: 'SECRET' }, /"evidence_turns" must be an array/],
    ['answer missing', { question: 'SECRET?', evidence_turns: [] }, /"answer" is missing/],
    ['answer a number', { question: 'SECRET?', answer: 88, evidence_turns: [1] }, /"answer" must be a non-empty string or null/],
    ['answer empty', { question: 'SECRET?', answer: '', evidence_turns: [1] }, /"answer" must be a non-empty string or null/],
    ['question empty', { question: ' ', answer: null, evidence_turns: [] }, /"question" must be a non-empty string/],
    ['answerable disagrees', { question: 'SECRET?', answer: null, evidence_turns: [], answerable: true }, /"answerable" is true but "answer" is null/],
    ['category not a string', { question: 'SECRET?', answer: null, evidence_turns: [], category: 3 }, /"category" must be a string/],
    ['not JSON', '{"question": "SECRET?", answer: SECRET}', /not valid JSON/],
    ['not an object', '["SECRET"]', /expected a JSON object/],
  ])('%s', (_what, bad, why) => {
    const text = [JSON.stringify({ question: 'ok?', answer: null, evidence_turns: [] }), line(bad)].join('\n');
    try {
      parseQuestions(text);
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(TranscriptError);
      expect((e as TranscriptError).line).toBe(2);
      expect((e as Error).message).toMatch(/^questions line 2: /);
      expect((e as Error).message).toMatch(why);
      expect((e as Error).message).not.toMatch(/SECRET/);
    }
  });
});
