// Claude Code session files as transcripts: which lines become turns, what each keeps, what is
// skipped, and malformed lines named by line and field. The fixture's shapes follow the
// community JSON schema of the format (CLI 2.1.1) and the Anthropic Messages API's content
// blocks: see test/fixtures/agent-sessions/README.md.
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { ClaudeCodeReader } from '../../src/claude-code.js';
import { readTranscript, TranscriptError } from '../../src/transcript.js';
import type { WindowTurn } from '../../src/window.js';

const FIXTURE = path.resolve('test/fixtures/agent-sessions/claude-code-session.jsonl');
const SESSION = '4f35e220-c435-4cf7-b9b9-f40426042847';
const lines = fs
  .readFileSync(FIXTURE, 'utf8')
  .split('\n')
  .filter(Boolean)
  .map((l) => JSON.parse(l) as Record<string, unknown>);

let turns: WindowTurn[];
beforeAll(async () => {
  const t = await readTranscript(FIXTURE, 'claude-code');
  turns = t.turns;
});

/** The turns one line makes, from a fresh reader. */
const read = (obj: Record<string, unknown>, line = 1) => new ClaudeCodeReader().line(obj, line);
const user = (content: unknown, extra: Record<string, unknown> = {}) => ({
  type: 'user',
  uuid: '9ff29d57-8b28-4da9-8e7f-000000000001',
  sessionId: SESSION,
  timestamp: '2025-05-26T07:27:40.079Z',
  message: { role: 'user', content },
  ...extra,
});

describe('user and assistant lines become turns numbered from 1, with the timestamp, session and uuid of their line', () => {
  it('the fixture: 21 turns from 29 lines, numbered 1..21 in file order', () => {
    expect(turns.map((t) => t.turn)).toEqual(Array.from({ length: 21 }, (_, i) => i + 1));
  });
  it('a string content is the turn text; the role is the line type', () => {
    const first = turns[0]!;
    expect(first.role).toBe('user');
    expect(first.text).toBe(lines[3]!.message && (lines[3]!.message as { content: string }).content);
    expect(first.timestamp).toBe(Date.parse('2025-05-26T07:27:14.079Z'));
    expect(first.meta).toEqual({ session: SESSION, uuid: '9ff29d57-8b28-4da9-8e7f-000000000002' });
  });
  it('text blocks are joined by newlines', () => {
    const [t] = read(user([{ type: 'text', text: 'first part' }, { type: 'text', text: 'second part' }]));
    expect(t!.text).toBe('first part\nsecond part');
  });
  it('every turn carries its line timestamp, in file order', () => {
    const stamps = turns.map((t) => t.timestamp!);
    expect(stamps.every((s) => Number.isInteger(s) && s > Date.parse('2025-05-26T00:00:00Z'))).toBe(true);
    expect([...stamps].sort((a, b) => a - b)).toEqual(stamps);
  });
  it('a line without a timestamp leaves it to the store (the time of the append)', () => {
    const [t] = read(user('no time', { timestamp: undefined }));
    expect(t!.timestamp).toBeUndefined();
  });
});

describe('tool calls keep their ids: toolCalls on the assistant turn, toolCallId on each result', () => {
  it('a tool_use is written as its name and input, its id and name in toolCalls', () => {
    const call = turns.find((t) => t.text.startsWith('Read '))!;
    expect(call.role).toBe('assistant');
    expect(call.text).toBe('Read {"file_path":"/home/dev/ratelimiter/src/limiter.py"}');
    expect(call.toolCalls?.map(({ id, name }) => ({ id, name }))).toEqual([{ id: 'toolu_01A1', name: 'Read' }]);
  });
  it('text and tool calls of one line are one turn; parallel calls are listed in order', () => {
    const both = turns.find((t) => t.toolCalls?.length === 2)!;
    expect(both.text).toBe('Bash {"command":"pytest tests/test_limiter.py -q"}\nBash {"command":"git diff --stat"}');
    const mixed = turns.find((t) => t.text.startsWith('The default rate is 55'))!;
    expect(mixed.text).toMatch(/allows\. Let me run the tests before changing it\.\nBash \{"command":"pytest/);
  });
  it('each tool_result is a tool turn kept with its call, its id in toolCallId', () => {
    const results = turns.filter((t) => t.role === 'tool');
    expect(results.map((t) => t.toolCallId)).toEqual(['toolu_01A1', 'toolu_01A2', 'toolu_01A3', 'toolu_01A4', 'toolu_01A5', 'toolu_01A6', 'toolu_01A7']);
    expect(results.every((t) => t.attachToPrevious === true)).toBe(true);
    expect(turns.filter((t) => t.role !== 'tool').every((t) => t.attachToPrevious === false)).toBe(true);
  });
  it('a result that is an array of blocks is the text of its text blocks; a failed tool is meta.isError', () => {
    expect(turns.find((t) => t.toolCallId === 'toolu_01A3')!.text).toBe('The file /home/dev/ratelimiter/src/limiter.py has been updated.');
    expect(turns.find((t) => t.toolCallId === 'toolu_01A2')!.meta!.isError).toBe(true);
    expect(turns.find((t) => t.toolCallId === 'toolu_01A1')!.meta!.isError).toBeUndefined();
  });
  it('results come before the text of the same user line, so they follow the call they answer', () => {
    const out = read(
      user([
        { type: 'tool_result', tool_use_id: 'toolu_01B1', content: 'exit 0' },
        { type: 'text', text: 'now deploy it' },
      ]),
    );
    expect(out.map((t) => [t.turn, t.role, t.text])).toEqual([
      [1, 'tool', 'exit 0'],
      [2, 'user', 'now deploy it'],
    ]);
  });
  it('newlines and tabs inside a tool input are written as such, so each word is searchable', () => {
    const [t] = read({
      type: 'assistant',
      message: { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_01C1', name: 'Write', input: { content: 'port = 8080\n\tdebug = false\\n' } }] },
    });
    expect(t!.text).toBe('Write {"content":"port = 8080\n\tdebug = false\\\\n"}');
  });
});

describe('lines and blocks that carry no conversation are skipped', () => {
  const texts = () => turns.map((t) => t.text).join('\n');
  it('summary, file-history-snapshot, system and queue-operation lines make no turn', () => {
    for (const type of ['summary', 'file-history-snapshot', 'system', 'queue-operation', 'progress'])
      expect(read({ type, content: 'SKIPPED', summary: 'SKIPPED', sessionId: SESSION }), type).toEqual([]);
    expect(texts()).not.toMatch(/Rate limiter token bucket fix|Set model to sonnet|Conversation compacted|thanks/);
  });
  it('isMeta lines (text the CLI injects) and isCompactSummary lines (its own summary) make no turn', () => {
    expect(read(user('<command-name>/init</command-name>', { isMeta: true }))).toEqual([]);
    expect(read(user('This session is being continued from a previous conversation.', { isCompactSummary: true }))).toEqual([]);
    expect(texts()).not.toMatch(/command-name|being continued/);
  });
  it('thinking blocks are dropped; a line of thinking only makes no turn', () => {
    expect(texts()).not.toContain('SECRET-THINKING');
    expect(read({ type: 'assistant', message: { role: 'assistant', content: [{ type: 'thinking', thinking: 'hmm', signature: 'x' }] } })).toEqual([]);
    expect(read({ type: 'assistant', message: { role: 'assistant', content: [{ type: 'redacted_thinking', data: 'x' }] } })).toEqual([]);
  });
  it('image blocks are dropped, the text beside them kept', () => {
    const t = turns.find((x) => x.text.startsWith('Here is the dashboard'))!;
    expect(t.text).toBe('Here is the dashboard after deploying:');
    expect(texts()).not.toContain('iVBORw0KGgo');
  });
  it('a line left with no text makes no turn', () => {
    expect(read(user(''))).toEqual([]);
    expect(read(user([]))).toEqual([]);
  });
});

describe("a sub-agent's lines (isSidechain) are kept and marked", () => {
  it('meta.sidechain is true on them only', () => {
    const side = turns.filter((t) => t.meta?.sidechain === true);
    expect(side.map((t) => t.role)).toEqual(['user', 'assistant']);
    expect(side[0]!.text).toBe('Find other callers of the billing API');
    expect(turns.filter((t) => t.meta?.sidechain !== undefined)).toHaveLength(2);
  });
});

describe('a malformed Claude Code line is named by line and field, never quoted', () => {
  it.each([
    ['no type', { message: { role: 'user', content: 'SECRET' } }, /not a Claude Code session line: "type" must be a string/],
    ['a Codex rollout line', { timestamp: '2025-10-29T00:59:40.317Z', type: 'event_msg', payload: { message: 'SECRET' } }, /not a Claude Code session line: a "payload" and no "message"/],
    ['message not an object', { type: 'user', message: 'SECRET' }, /"message" must be an object/],
    ['content a number', user(42), /"message.content" must be a string or an array of blocks/],
    ['a block without a type', user([{ text: 'SECRET' }]), /"message.content\[0\]" must be a block with a "type"/],
    ['a text block without text', user([{ type: 'text', value: 'SECRET' }]), /"message.content\[0\].text" must be a string/],
    ['a tool_use without an id', user([{ type: 'tool_use', name: 'Bash', input: { command: 'SECRET' } }]), /"message.content\[0\].id" must be a non-empty string/],
    ['a tool_use without a name', user([{ type: 'tool_use', id: 'toolu_1', input: {} }]), /"message.content\[0\].name" must be a non-empty string/],
    ['a tool_result without its id', user([{ type: 'tool_result', content: 'SECRET' }]), /"message.content\[0\].tool_use_id" must be a non-empty string/],
    ['a tool_result content of a number', user([{ type: 'tool_result', tool_use_id: 'toolu_1', content: 7 }]), /"message.content\[0\].content" must be a string or an array of blocks/],
    ['a timestamp that is not ISO 8601', user('x', { timestamp: 'SECRET yesterday' }), /"timestamp" must be an ISO 8601 date-time/],
    ['a timestamp before 1970', user('x', { timestamp: '1969-12-31T23:59:59Z' }), /"timestamp" is before 1970/],
    ['a lone surrogate', user('SECRET \ud800'), /text is not valid UTF-8/],
  ])('%s', (_what, obj, why) => {
    try {
      read(obj as Record<string, unknown>, 7);
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(TranscriptError);
      expect((e as TranscriptError).line).toBe(7);
      expect((e as Error).message).toMatch(/^line 7: /);
      expect((e as Error).message).toMatch(why);
      expect((e as Error).message).not.toMatch(/SECRET/);
    }
  });
});
