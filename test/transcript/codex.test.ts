// Codex CLI rollouts as transcripts: which lines become turns, what each keeps, what is
// skipped, and malformed lines named by line and field. The fixture's shapes follow
// `RolloutItem` and `ResponseItem` in the Codex source (codex-rs/protocol): see
// test/fixtures/agent-sessions/README.md.
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { CodexReader } from '../../src/codex.js';
import { readTranscript, TranscriptError } from '../../src/transcript.js';
import type { WindowTurn } from '../../src/window.js';

const FIXTURE = path.resolve('test/fixtures/agent-sessions/codex-rollout.jsonl');
const SESSION = '019a2d7a-41c4-78b1-b7cc-a45d62a89cd5';

let turns: WindowTurn[];
beforeAll(async () => {
  turns = (await readTranscript(FIXTURE, 'codex')).turns;
});

const at = '2025-10-29T00:59:40.317Z';
const item = (payload: Record<string, unknown>) => ({ timestamp: at, type: 'response_item', payload });
/** The turns of `objs` read in order by one reader. */
const read = (...objs: Record<string, unknown>[]) => {
  const r = new CodexReader();
  return objs.flatMap((o, i) => r.line(o, i + 1));
};

describe('messages become turns under their own role, with the line timestamp and the session id', () => {
  it('the fixture: 16 turns from 27 lines, numbered 1..16', () => {
    expect(turns.map((t) => t.turn)).toEqual(Array.from({ length: 16 }, (_, i) => i + 1));
  });
  it('user, assistant and developer messages keep their role; text items are joined by newlines', () => {
    expect(turns.filter((t) => !t.toolCalls && t.role !== 'tool').map((t) => t.role)).toEqual([
      'developer',
      'user',
      'user',
      'assistant',
      'assistant',
      'assistant',
      'user',
      'assistant',
    ]);
    const [t] = read(item({ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'one' }, { type: 'input_text', text: 'two' }] }));
    expect(t!.text).toBe('one\ntwo');
  });
  it('the timestamp is the line’s; the session is the session_meta id once seen', () => {
    const ttl = turns.find((t) => t.text.startsWith('The cache TTL must be 300 seconds'))!;
    expect(ttl.timestamp).toBe(Date.parse('2025-10-29T00:59:48.317Z'));
    expect(turns.every((t) => t.meta?.session === SESSION)).toBe(true);
    const [before] = read(item({ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'no session yet' }] }));
    expect(before!.meta).toBeUndefined();
  });
});

describe('tool calls keep their ids: toolCalls on the call, toolCallId on its output', () => {
  it('a function_call is written as its name and arguments, its call_id in toolCalls', () => {
    const call = turns.find((t) => t.text.includes('cat config/cache.toml'))!;
    expect(call.role).toBe('assistant');
    expect(call.text).toBe('shell {"command":["bash","-lc","cat config/cache.toml"],"workdir":"/home/dev/cachesvc","timeout_ms":120000}');
    expect(call.toolCalls?.map(({ id, name }) => ({ id, name }))).toEqual([{ id: 'call_Q1', name: 'shell' }]);
  });
  it('custom tool calls (apply_patch) and local shell calls are calls too', () => {
    const patch = turns.find((t) => t.text.startsWith('apply_patch '))!;
    expect(patch.text).toContain('+ttl_seconds = 300\n');
    expect(patch.toolCalls?.map(({ id, name }) => ({ id, name }))).toEqual([{ id: 'call_Q2', name: 'apply_patch' }]);
    const shell = turns.find((t) => t.text.startsWith('local_shell '))!;
    expect(shell.toolCalls?.map(({ id, name }) => ({ id, name }))).toEqual([{ id: 'call_Q4', name: 'local_shell' }]);
    expect(turns.find((t) => t.text.startsWith('web_search '))!.text).toContain('redis default key expiry seconds');
  });
  it('each output is a tool turn kept with its call, its call_id in toolCallId', () => {
    const outs = turns.filter((t) => t.role === 'tool');
    expect(outs.map((t) => t.toolCallId)).toEqual(['call_Q1', 'call_Q2', 'call_Q3', 'call_Q4']);
    expect(outs.every((t) => t.attachToPrevious === true)).toBe(true);
    for (const o of outs) expect(turns[turns.indexOf(o) - 1]!.toolCalls).toEqual([expect.objectContaining({ id: o.toolCallId })]);
  });
  it('an output of content items is their text; a plain string output is kept as written', () => {
    expect(turns.find((t) => t.toolCallId === 'call_Q3')!.text).toBe('....\n4 passed in 0.42s');
    expect(turns.find((t) => t.toolCallId === 'call_Q4')!.text).toBe(' config/cache.toml | 3 ++-\n 1 file changed, 2 insertions(+), 1 deletion(-)');
  });
  it("a result in Codex's legacy JSON form is its output text, the exit code in meta.exitCode", () => {
    const out = turns.find((t) => t.toolCallId === 'call_Q1')!;
    expect(out.text).toBe('[cache]\nttl_seconds = 3600\nbackend = "redis"\n');
    expect(out.meta!.exitCode).toBe(0);
    const [plain] = read(item({ type: 'function_call_output', call_id: 'c', output: '{"output": not json' }));
    expect(plain!.text).toBe('{"output": not json');
  });
  it('newlines inside the arguments are written as such, so each word is searchable', () => {
    const [t] = read(item({ type: 'function_call', name: 'shell', call_id: 'c', arguments: '{"command":["bash","-lc","cat <<EOF\\nport = 8080\\nEOF"]}' }));
    expect(t!.text).toBe('shell {"command":["bash","-lc","cat <<EOF\nport = 8080\nEOF"]}');
  });
});

describe('lines and items that carry no conversation, or repeat it, are skipped', () => {
  const texts = () => turns.map((t) => t.text).join('\n');
  it('session_meta, turn_context, event_msg and compacted lines make no turn', () => {
    for (const type of ['session_meta', 'turn_context', 'event_msg', 'compacted', 'world_state'])
      expect(read({ timestamp: at, type, payload: { id: 'x', message: 'SKIPPED', type: 'agent_message' } }), type).toEqual([]);
    expect(texts()).not.toMatch(/Summary: TTL changed|total_token_usage|task_complete/);
    // The UI's copy of each message (event_msg) is not a second turn.
    expect(turns.filter((t) => t.text.startsWith('The cache TTL must be 300 seconds'))).toHaveLength(1);
  });
  it('reasoning, ghost_snapshot and unknown items make no turn; images leave no text', () => {
    expect(texts()).not.toMatch(/SECRET-REASONING|gAAAA|ghost_commit|8e1f2d0|iVBORw0KGgo/);
    expect(read(item({ type: 'reasoning', summary: [{ type: 'summary_text', text: 'x' }], encrypted_content: 'y' }))).toEqual([]);
    expect(read(item({ type: 'some_future_item', text: 'x' }))).toEqual([]);
    expect(read(item({ type: 'message', role: 'user', content: [{ type: 'input_image', image_url: 'data:' }] }))).toEqual([]);
  });
});

describe('a malformed Codex line is named by line and field, never quoted', () => {
  it.each([
    ['no type', { timestamp: at, payload: { type: 'message' } }, /not a Codex rollout line: "type" must be a string and "payload" an object/],
    ['a response_item payload that is a string', { timestamp: at, type: 'response_item', payload: 'SECRET' }, /not a Codex rollout line/],
    ['a line of another type without a payload', { timestamp: at, type: 'event_msg' }, /not a Codex rollout line/],
    ['a response_item payload without a type', item({ role: 'user', content: 'SECRET' }), /"payload.type" must be a string/],
    ['a message without a role', item({ type: 'message', content: [] }), /"payload.role" must be a non-empty string/],
    ['a message content that is a string', item({ type: 'message', role: 'user', content: 'SECRET' }), /"payload.content" must be an array of content items/],
    ['a text item without text', item({ type: 'message', role: 'user', content: [{ type: 'input_text' }] }), /"payload.content\[0\].text" must be a string/],
    ['a function_call without call_id', item({ type: 'function_call', name: 'shell', arguments: 'SECRET' }), /"payload.call_id" must be a non-empty string/],
    ['a function_call with object arguments', item({ type: 'function_call', name: 'shell', call_id: 'c', arguments: { SECRET: 1 } }), /"payload.arguments" must be a string/],
    ['an output without call_id', item({ type: 'function_call_output', output: 'SECRET' }), /"payload.call_id" must be a non-empty string/],
    ['an output of a number', item({ type: 'function_call_output', call_id: 'c', output: 5 }), /"payload.output" must be a string or an array of content items/],
    ['a timestamp that is not ISO 8601', { ...item({ type: 'message', role: 'user', content: [] }), timestamp: 'SECRET' }, /"timestamp" must be an ISO 8601 date-time/],
  ])('%s', (_what, obj, why) => {
    try {
      new CodexReader().line(obj as Record<string, unknown>, 4);
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(TranscriptError);
      expect((e as TranscriptError).line).toBe(4);
      expect((e as Error).message).toMatch(/^line 4: /);
      expect((e as Error).message).toMatch(why);
      expect((e as Error).message).not.toMatch(/SECRET/);
    }
  });
});
