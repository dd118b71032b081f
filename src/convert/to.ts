/** Turns written as each provider's request messages. */
import { checkRenderTurns, isObject } from './check.js';
import type { AISDKMessage, AISDKToolResultPart, AnthropicBlock, AnthropicMessage, AnthropicRequest, OpenAIMessage, RenderTurn, ToolCall } from './types.js';

// ---------------------------------------------------------------- the shared plan

type Item =
  | { kind: 'user'; text: string; speaker?: string }
  | { kind: 'assistant'; text: string; calls: ToolCall[]; speaker?: string }
  | { kind: 'result'; callId: string; name: string; text: string; error: boolean };

/** One system text, then the conversation with every call paired to its results (or turned into text). */
function plan(turns: readonly RenderTurn[]): { system: string; items: Item[] } {
  const system: string[] = [];
  const raw: (Item | { kind: 'pending'; callId: string; text: string; error: boolean })[] = [];
  for (const t of turns) {
    const speaker = t.speaker !== undefined ? { speaker: t.speaker } : {};
    if (t.role === 'system' || t.role === 'developer') {
      if (t.text.length > 0) system.push(t.text);
    } else if (t.role === 'assistant') raw.push({ kind: 'assistant', text: t.text, calls: [...(t.toolCalls ?? [])], ...speaker });
    else if (t.role === 'tool' && t.toolCallId !== undefined) raw.push({ kind: 'pending', callId: t.toolCallId, text: t.text, error: t.toolError === true });
    else if (t.role === 'user') raw.push({ kind: 'user', text: t.text, ...speaker });
    else raw.push({ kind: 'user', text: `[${t.role}] ${t.text}`, ...speaker });
  }
  const items: Item[] = [];
  for (let i = 0; i < raw.length; i++) {
    const it = raw[i]!;
    if (it.kind === 'pending') {
      // Not right after its call: the result goes as text, so no provider sees an unasked result.
      items.push({ kind: 'user', text: orphanResult(it.callId, it.text, it.error) });
      continue;
    }
    if (it.kind !== 'assistant' || it.calls.length === 0) {
      items.push(it);
      continue;
    }
    const byId = new Map(it.calls.map((c) => [c.id, c]));
    const answered = new Set<string>();
    const results: Item[] = [];
    const orphans: Item[] = [];
    let j = i + 1;
    for (; j < raw.length && raw[j]!.kind === 'pending'; j++) {
      const r = raw[j] as { callId: string; text: string; error: boolean };
      const call = byId.get(r.callId);
      if (call && !answered.has(r.callId)) {
        answered.add(r.callId);
        results.push({ kind: 'result', callId: r.callId, name: call.name, text: r.text, error: r.error });
      } else orphans.push({ kind: 'user', text: orphanResult(r.callId, r.text, r.error) });
    }
    i = j - 1;
    const unanswered = it.calls.filter((c) => !answered.has(c.id));
    const text = [it.text, ...unanswered.map((c) => `[tool call ${c.id}: ${c.name} ${c.arguments} — its result is not in the window]`)].filter((s) => s.length > 0).join('\n');
    items.push({ ...it, text, calls: it.calls.filter((c) => answered.has(c.id)) }, ...results, ...orphans);
  }
  return { system: system.join('\n\n'), items };
}

const orphanResult = (callId: string, text: string, error: boolean): string => `[${error ? 'error ' : ''}result of tool call ${callId}] ${text}`;

// ---------------------------------------------------------------- writers

/** OpenAI `name` is a participant name without spaces or markup; other speakers are left out. */
const OPENAI_NAME = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * Turns as OpenAI Chat Completions messages: one leading `system` message (when any system
 * turn has text), `assistant` messages with `tool_calls` (`type: 'function'`), `tool`
 * messages with `tool_call_id`; an assistant turn with calls and no text has `content: null`.
 */
export function toOpenAI(turns: readonly RenderTurn[]): OpenAIMessage[] {
  const { system, items } = plan(checkRenderTurns(turns));
  const out: OpenAIMessage[] = system.length > 0 ? [{ role: 'system', content: system }] : [];
  for (const it of items) {
    const name = 'speaker' in it && it.speaker !== undefined && OPENAI_NAME.test(it.speaker) ? { name: it.speaker } : {};
    if (it.kind === 'user') out.push({ role: 'user', content: it.text, ...name });
    else if (it.kind === 'result') out.push({ role: 'tool', content: it.text, tool_call_id: it.callId });
    else if (it.calls.length === 0) out.push({ role: 'assistant', content: it.text, ...name });
    else
      out.push({
        role: 'assistant',
        content: it.text.length > 0 ? it.text : null,
        ...name,
        tool_calls: it.calls.map((c) => ({ id: c.id, type: 'function' as const, function: { name: c.name, arguments: c.arguments } })),
      });
  }
  return out;
}

/** Anthropic accepts tool ids of letters, digits, `_` and `-`: others are mapped to `_`, the same way on both sides of a pair. */
const anthropicId = (id: string): string => id.replace(/[^A-Za-z0-9_-]/g, '_');

/** Anthropic wants an object as a tool's input: arguments that are not a JSON object go as `{ arguments: <text> }`. */
function anthropicInput(args: string): Record<string, unknown> {
  try {
    const v: unknown = JSON.parse(args);
    if (isObject(v)) return v;
  } catch {
    /* below */
  }
  return { arguments: args };
}

/**
 * Turns as an Anthropic Messages request: `{ system?, messages }`, `system` the one system
 * text (absent when there is none). Consecutive turns of one role are one message (the API
 * alternates roles): a tool turn is a `tool_result` block (`tool_use_id`, `is_error` when the
 * result is an error) in the user message after the assistant's `tool_use` blocks, and comes
 * first in it. Empty texts are left out (the API refuses empty text blocks), and so is a
 * message left with nothing; a message of one text is a string.
 */
export function toAnthropic(turns: readonly RenderTurn[]): AnthropicRequest {
  const { system, items } = plan(checkRenderTurns(turns));
  const messages: AnthropicMessage[] = [];
  let role: 'user' | 'assistant' | null = null;
  let blocks: AnthropicBlock[] = [];
  const flush = (): void => {
    if (role !== null && blocks.length > 0) {
      const only = blocks[0]!;
      messages.push({ role, content: blocks.length === 1 && only.type === 'text' ? only.text : blocks });
    }
    blocks = [];
  };
  for (const it of items) {
    const r = it.kind === 'assistant' ? 'assistant' : 'user';
    if (r !== role) {
      flush();
      role = r;
    }
    if (it.kind === 'result')
      blocks.push({ type: 'tool_result', tool_use_id: anthropicId(it.callId), ...(it.text.length > 0 ? { content: it.text } : {}), ...(it.error ? { is_error: true } : {}) });
    else {
      if (it.text.length > 0) blocks.push({ type: 'text', text: it.text });
      if (it.kind === 'assistant') for (const c of it.calls) blocks.push({ type: 'tool_use', id: anthropicId(c.id), name: c.name, input: anthropicInput(c.arguments) });
    }
  }
  flush();
  return { ...(system.length > 0 ? { system } : {}), messages };
}

/** AI SDK tool input: the arguments' JSON value, or the text itself when it is not JSON. */
function aiInput(args: string): unknown {
  try {
    return JSON.parse(args) as unknown;
  } catch {
    return args;
  }
}

/**
 * Turns as AI SDK `ModelMessage`s: one leading `system` message, `assistant` messages whose
 * content is a string, or text and `tool-call` parts when it made calls, and one `tool`
 * message of `tool-result` parts (output `text`, or `error-text` for an error) for the
 * results that follow a call.
 */
export function toAISDK(turns: readonly RenderTurn[]): AISDKMessage[] {
  const { system, items } = plan(checkRenderTurns(turns));
  const out: AISDKMessage[] = system.length > 0 ? [{ role: 'system', content: system }] : [];
  for (const it of items) {
    if (it.kind === 'user') out.push({ role: 'user', content: it.text });
    else if (it.kind === 'result') {
      const part: AISDKToolResultPart = { type: 'tool-result', toolCallId: it.callId, toolName: it.name, output: { type: it.error ? 'error-text' : 'text', value: it.text } };
      const last = out[out.length - 1];
      if (last && last.role === 'tool') last.content.push(part);
      else out.push({ role: 'tool', content: [part] });
    } else if (it.calls.length === 0) out.push({ role: 'assistant', content: it.text });
    else
      out.push({
        role: 'assistant',
        content: [
          ...(it.text.length > 0 ? [{ type: 'text' as const, text: it.text }] : []),
          ...it.calls.map((c) => ({ type: 'tool-call' as const, toolCallId: c.id, toolName: c.name, input: aiInput(c.arguments) })),
        ],
      });
  }
  return out;
}

