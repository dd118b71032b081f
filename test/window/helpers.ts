// Shared helpers for the window tests: a tool-using agent session pushed through a window,
// and checks of request bodies against the providers' published shapes.
import { expect } from 'vitest';
import type { ContextWindow, PushResult, WindowTurn } from '../../src/index.js';
import { realTurns } from '../helpers/data.js';

export const SYSTEM_PROMPT = 'You are a build agent working in /repo. Never exceed 40 req/s against the upstream API.';

/**
 * The turns of an agent loop of `steps` steps after a system prompt and a task: each step
 * an assistant turn calling one tool (every third step two in parallel) and a tool turn per
 * call, texts from the bundled real transcript.
 */
export function toolSessionTurns(steps: number): WindowTurn[] {
  const real = realTurns(steps * 2 + 4).filter((t) => t.role !== 'system');
  const out: WindowTurn[] = [
    { turn: 1, role: 'system', text: SYSTEM_PROMPT },
    { turn: 2, role: 'user', text: 'Fix the failing separability test in astropy.modeling.' },
  ];
  let turn = 3;
  for (let i = 0; i < steps; i++) {
    const say = real[(2 * i) % real.length]!.text.slice(0, 600);
    const parallel = i % 3 === 2;
    const calls = Array.from({ length: parallel ? 2 : 1 }, (_, k) => ({ id: `call_${i}_${k}`, name: k === 0 ? 'bash' : 'read_file', arguments: JSON.stringify(k === 0 ? { cmd: `pytest -k step${i}` } : { path: `src/step${i}.py` }) }));
    out.push({ turn: turn++, role: 'assistant', text: say, toolCalls: calls });
    for (const c of calls) out.push({ turn: turn++, role: 'tool', text: real[(2 * i + 1) % real.length]!.text.slice(0, 1500), toolCallId: c.id });
  }
  return out;
}

/** Pushes each turn; returns the span id of each turn (by turn number) and every push result. */
export async function pushAll(window: ContextWindow, turns: WindowTurn[]): Promise<{ ids: Map<number, number>; results: PushResult[] }> {
  const ids = new Map<number, number>();
  const results: PushResult[] = [];
  for (const t of turns) {
    const r = await window.push(t);
    ids.set(t.turn, r.spanId);
    results.push(r);
  }
  return { ids, results };
}

const keysOf = (o: object): string[] => Object.keys(o).sort();
const isPlain = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/**
 * An OpenAI Chat Completions `messages` array as the API takes it: each message only its
 * role's keys, a system message only first, every assistant `tool_calls` answered by `tool`
 * messages right after it (one per id), and no `tool` message anywhere else.
 */
export function expectOpenAIRequest(messages: unknown): void {
  expect(Array.isArray(messages)).toBe(true);
  const list = messages as Record<string, unknown>[];
  let open: Set<string> | null = null;
  list.forEach((m, i) => {
    const at = `message ${i}`;
    expect(isPlain(m), at).toBe(true);
    if (m.role !== 'tool' && open) expect(open.size, `${at}: calls left unanswered`).toBe(0);
    switch (m.role) {
      case 'system':
        expect(i, `${at}: system only first`).toBe(0);
        expect(keysOf(m), at).toEqual(['content', 'role']);
        expect(typeof m.content, at).toBe('string');
        break;
      case 'user':
        expect(keysOf(m).filter((k) => k !== 'name'), at).toEqual(['content', 'role']);
        expect(typeof m.content, at).toBe('string');
        break;
      case 'assistant': {
        expect(keysOf(m).filter((k) => k !== 'name' && k !== 'tool_calls'), at).toEqual(['content', 'role']);
        open = new Set();
        if (m.tool_calls !== undefined) {
          expect(m.content === null || typeof m.content === 'string', at).toBe(true);
          expect(Array.isArray(m.tool_calls) && m.tool_calls.length > 0, at).toBe(true);
          for (const c of m.tool_calls as Record<string, unknown>[]) {
            expect(keysOf(c), at).toEqual(['function', 'id', 'type']);
            expect(c.type, at).toBe('function');
            expect(keysOf(c.function as object), at).toEqual(['arguments', 'name']);
            expect(typeof c.id === 'string' && c.id.length > 0, at).toBe(true);
            open.add(c.id as string);
          }
        } else expect(typeof m.content, at).toBe('string');
        break;
      }
      case 'tool':
        expect(keysOf(m), at).toEqual(['content', 'role', 'tool_call_id']);
        expect(typeof m.content, at).toBe('string');
        expect(open?.has(m.tool_call_id as string), `${at}: answers a call of the assistant message before it`).toBe(true);
        open!.delete(m.tool_call_id as string);
        break;
      default:
        throw new Error(`${at}: role ${String(m.role)}`);
    }
  });
}

/**
 * An Anthropic Messages request body (`system`, `messages`) against the API's JSON shape:
 * roles alternate, content a non-empty string or blocks; text blocks non-empty; `tool_use`
 * only from the assistant (id of letters, digits, _ and -; input an object); `tool_result`
 * only from the user, first in the message right after the `tool_use` it answers, and every
 * `tool_use` answered there.
 */
export function expectAnthropicRequest(request: unknown): void {
  expect(isPlain(request)).toBe(true);
  const r = request as Record<string, unknown>;
  expect(keysOf(r).filter((k) => k !== 'system')).toEqual(['messages']);
  if (r.system !== undefined) expect(typeof r.system === 'string' && r.system.length > 0).toBe(true);
  const list = r.messages as Record<string, unknown>[];
  expect(Array.isArray(list) && list.length > 0).toBe(true);
  let asked = new Set<string>();
  list.forEach((m, i) => {
    const at = `message ${i}`;
    expect(keysOf(m), at).toEqual(['content', 'role']);
    expect(['user', 'assistant'], at).toContain(m.role);
    if (i > 0) expect(m.role, `${at}: roles alternate`).not.toBe(list[i - 1]!.role);
    const answered = new Set<string>();
    if (typeof m.content === 'string') expect(m.content.length, at).toBeGreaterThan(0);
    else {
      expect(Array.isArray(m.content) && m.content.length > 0, at).toBe(true);
      let seenOther = false;
      const used = new Set<string>();
      for (const b of m.content as Record<string, unknown>[]) {
        if (b.type === 'text') {
          expect(keysOf(b), at).toEqual(['text', 'type']);
          expect(typeof b.text === 'string' && b.text.length > 0, at).toBe(true);
          seenOther = true;
        } else if (b.type === 'tool_use') {
          expect(m.role, at).toBe('assistant');
          expect(keysOf(b), at).toEqual(['id', 'input', 'name', 'type']);
          expect(b.id, at).toMatch(/^[A-Za-z0-9_-]+$/);
          expect(typeof b.name === 'string' && b.name.length > 0, at).toBe(true);
          expect(isPlain(b.input), at).toBe(true);
          used.add(b.id as string);
          seenOther = true;
        } else if (b.type === 'tool_result') {
          expect(m.role, at).toBe('user');
          expect(seenOther, `${at}: tool_result blocks come first`).toBe(false);
          expect(keysOf(b).filter((k) => k !== 'content' && k !== 'is_error'), at).toEqual(['tool_use_id', 'type']);
          if (b.content !== undefined) expect(typeof b.content, at).toBe('string');
          if (b.is_error !== undefined) expect(b.is_error, at).toBe(true);
          expect(asked.has(b.tool_use_id as string), `${at}: answers a tool_use of the message before`).toBe(true);
          answered.add(b.tool_use_id as string);
        } else throw new Error(`${at}: block type ${String(b.type)}`);
      }
      if (m.role === 'assistant') {
        asked = used;
        return;
      }
    }
    if (m.role === 'user') {
      expect([...asked].filter((id) => !answered.has(id)), `${at}: every tool_use answered`).toEqual([]);
      asked = new Set();
    } else asked = new Set();
  });
  expect(asked.size, 'the last tool_use is answered').toBe(0);
}
