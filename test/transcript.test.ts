// Input formats for the CLI: shared/data turns and OpenAI chat messages; malformed lines by number.
import { describe, expect, it } from 'vitest';
import { parseTranscript, TranscriptError } from '../src/transcript.js';

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
