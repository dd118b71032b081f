/**
 * Provider messages ⇄ turns. A turn is what the store keeps (role, text) plus the tool-call
 * structure a model request needs back: the calls an assistant turn made (`toolCalls`) and,
 * on a tool turn, the call it answers (`toolCallId`). `fromOpenAI`, `fromAnthropic` and
 * `fromAISDK` read a provider's message list into turns; `toOpenAI`, `toAnthropic` and
 * `toAISDK` write turns as that provider's request messages, and `ContextWindow.messages({
 * format })` renders the live window through the same functions.
 *
 * Every rendering is a valid request body for its provider: one system message (all system
 * turns, in order, joined by a blank line), every tool result right after the call it
 * answers with the call's id. A result whose call is not right before it, and a call whose
 * result is not right after it, become plain text with a marker (a provider refuses an
 * unanswered call and an unasked result alike).
 */
import { ErrorCode, SpanguardError } from './errors.js';
import type { WindowTurn } from './window.js';

/** One tool call an assistant turn made. `arguments` is JSON text, as OpenAI sends it. */
export interface ToolCall {
  id: string;
  name: string;
  arguments: string;
}

/** The structure a turn carries for the providers' message shapes (stored in the span's meta). */
export interface TurnStructure {
  /** Assistant turns: the tool calls it made. */
  toolCalls?: ToolCall[];
  /** Tool turns: the id of the call this turn is the result of. */
  toolCallId?: string;
  /** Tool turns: the result is an error (Anthropic `is_error`, AI SDK `error-text`). */
  toolError?: boolean;
}

/** What the renderers read from a turn. */
export interface RenderTurn extends TurnStructure {
  role: string;
  text: string;
  speaker?: string;
}

/** The meta keys where the window keeps a turn's structure. */
export const STRUCTURE_KEYS = ['toolCalls', 'toolCallId', 'toolError'] as const;

// ---------------------------------------------------------------- provider shapes

/** OpenAI Chat Completions: assignable to the `openai` package's `ChatCompletionMessageParam`. */
export type OpenAIMessage =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string; name?: string }
  | { role: 'assistant'; content: string | null; name?: string; tool_calls?: OpenAIToolCall[] }
  | { role: 'tool'; content: string; tool_call_id: string };

export interface OpenAIToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

/** Anthropic Messages: the request's `system` and `messages` (content blocks as the API's JSON). */
export interface AnthropicRequest {
  system?: string;
  messages: AnthropicMessage[];
}

export interface AnthropicMessage {
  role: 'user' | 'assistant';
  content: string | AnthropicBlock[];
}

export type AnthropicBlock =
  | { type: 'text'; text: string }
  | { type: 'tool_use'; id: string; name: string; input: Record<string, unknown> }
  | { type: 'tool_result'; tool_use_id: string; content?: string; is_error?: boolean };

/** Vercel AI SDK: assignable to `ModelMessage` from `ai`. */
export type AISDKMessage =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string }
  | { role: 'assistant'; content: string | AISDKAssistantPart[] }
  | { role: 'tool'; content: AISDKToolResultPart[] };

export type AISDKAssistantPart = { type: 'text'; text: string } | { type: 'tool-call'; toolCallId: string; toolName: string; input: unknown };

export interface AISDKToolResultPart {
  type: 'tool-result';
  toolCallId: string;
  toolName: string;
  output: { type: 'text' | 'error-text'; value: string };
}

/** Options of the `from*` converters. */
export interface FromMessagesOptions {
  /** Turn number of the first turn produced (default 1); each turn produced takes the next. */
  firstTurn?: number;
}

// ---------------------------------------------------------------- validation

const bad = (why: string): never => {
  throw new SpanguardError(ErrorCode.INVALID_ARGUMENT, why);
};

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/**
 * Checks a turn's tool-call structure (`where` names the turn in the message). Tool calls
 * belong to assistant turns, a call id and an error flag to tool turns.
 */
export function checkStructure(t: Record<string, unknown>, where: string): void {
  if (t.toolCalls !== undefined) {
    if (t.role !== 'assistant') bad(`${where}: toolCalls belong to an assistant turn, not role ${String(t.role)}`);
    if (!Array.isArray(t.toolCalls)) bad(`${where}: toolCalls must be an array`);
    const seen = new Set<string>();
    (t.toolCalls as unknown[]).forEach((c, i) => {
      if (!isObject(c)) bad(`${where}: toolCalls[${i}] is not an object`);
      const call = c as Record<string, unknown>;
      for (const k of Object.keys(call)) if (k !== 'id' && k !== 'name' && k !== 'arguments') bad(`${where}: toolCalls[${i}] has an unknown key ${JSON.stringify(k)}`);
      if (typeof call.id !== 'string' || call.id.length === 0 || call.id.length > 256) bad(`${where}: toolCalls[${i}].id must be a non-empty string of at most 256 characters`);
      if (typeof call.name !== 'string' || call.name.length === 0 || call.name.length > 256) bad(`${where}: toolCalls[${i}].name must be a non-empty string of at most 256 characters`);
      if (typeof call.arguments !== 'string') bad(`${where}: toolCalls[${i}].arguments must be a string (JSON text)`);
      if (seen.has(call.id as string)) bad(`${where}: toolCalls[${i}].id ${JSON.stringify(call.id)} appears twice`);
      seen.add(call.id as string);
    });
  }
  if (t.toolCallId !== undefined) {
    if (t.role !== 'tool') bad(`${where}: toolCallId belongs to a tool turn, not role ${String(t.role)}`);
    if (typeof t.toolCallId !== 'string' || t.toolCallId.length === 0 || t.toolCallId.length > 256)
      bad(`${where}: toolCallId must be a non-empty string of at most 256 characters`);
  }
  if (t.toolError !== undefined) {
    if (typeof t.toolError !== 'boolean') bad(`${where}: toolError must be a boolean`);
    if (t.toolCallId === undefined) bad(`${where}: toolError needs a toolCallId`);
  }
}

function checkRenderTurns(turns: unknown): readonly RenderTurn[] {
  if (!Array.isArray(turns)) bad('expected an array of turns');
  (turns as unknown[]).forEach((t, i) => {
    if (!isObject(t)) bad(`turn at index ${i} is not an object`);
    const r = t as Record<string, unknown>;
    if (typeof r.role !== 'string' || r.role.length === 0) bad(`turn at index ${i}: role must be a non-empty string`);
    if (typeof r.text !== 'string') bad(`turn at index ${i}: text must be a string`);
    if (r.speaker !== undefined && typeof r.speaker !== 'string') bad(`turn at index ${i}: speaker must be a string`);
    checkStructure(r, `turn at index ${i}`);
  });
  return turns as readonly RenderTurn[];
}

/** Reads the structure back from a span's meta (what the window stored); anything malformed is left out. */
export function structureOf(meta: Record<string, unknown> | null, role: string): TurnStructure {
  if (!meta) return {};
  const out: TurnStructure = {};
  try {
    if (meta.toolCalls !== undefined) checkStructure({ role, toolCalls: meta.toolCalls }, 'meta');
    if (Array.isArray(meta.toolCalls)) out.toolCalls = meta.toolCalls as ToolCall[];
  } catch {
    /* not the window's: rendered as text only */
  }
  if (role === 'tool' && typeof meta.toolCallId === 'string' && meta.toolCallId.length > 0) {
    out.toolCallId = meta.toolCallId;
    if (meta.toolError === true) out.toolError = true;
  }
  return out;
}

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

// ---------------------------------------------------------------- readers

function firstTurnOf(options: FromMessagesOptions | undefined): number {
  if (options === undefined) return 1;
  if (!isObject(options)) bad('options must be an object');
  const n: unknown = options.firstTurn ?? 1;
  if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 0) bad(`firstTurn must be a non-negative integer, got ${String(n)}`);
  return n as number;
}

function messagesArray(messages: unknown, what: string): Record<string, unknown>[] {
  if (!Array.isArray(messages)) bad(`${what} must be an array of messages`);
  (messages as unknown[]).forEach((m, i) => {
    if (!isObject(m)) bad(`message ${i} is not an object`);
  });
  return messages as Record<string, unknown>[];
}

/** Text of a content given as a string or as text parts (`{ type: 'text', text }`); any other part is refused: the store keeps text. */
function textOf(content: unknown, where: string, allowNull: boolean): string {
  if (typeof content === 'string') return content;
  if ((content === null || content === undefined) && allowNull) return '';
  if (!Array.isArray(content)) bad(`${where}: content must be a string or an array of text parts`);
  return (content as unknown[])
    .map((p, k) => {
      if (!isObject(p)) bad(`${where}, content part ${k} is not an object`);
      const part = p as Record<string, unknown>;
      if (part.type !== 'text') bad(`${where}, content part ${k}: type ${JSON.stringify(part.type)} is not supported (spanguard keeps text)`);
      if (typeof part.text !== 'string') bad(`${where}, content part ${k}: text must be a string`);
      return part.text as string;
    })
    .join('\n');
}

function jsonText(v: unknown, where: string): string {
  let s: string | undefined;
  try {
    s = JSON.stringify(v);
  } catch (e) {
    bad(`${where}: not JSON (${(e as Error).message})`);
  }
  if (s === undefined) bad(`${where}: not a JSON value`);
  return s!;
}

/**
 * OpenAI Chat Completions messages (`ChatCompletionMessageParam[]`) as turns, one per
 * message: `system` and `developer` → `system`; `user` (its `name` → `speaker`);
 * `assistant` with its `tool_calls` (`function` calls) → `toolCalls`; `tool` →
 * `toolCallId`. Content is a string, null (an assistant that only calls tools) or text
 * parts (joined by a newline). Other roles, parts and call types are INVALID_ARGUMENT.
 */
export function fromOpenAI(messages: readonly OpenAIMessageLike[], options?: FromMessagesOptions): WindowTurn[] {
  let turn = firstTurnOf(options);
  return messagesArray(messages, 'messages').map((m, i) => {
    const where = `message ${i}`;
    const speaker = typeof m.name === 'string' && m.name.length > 0 ? { speaker: m.name } : {};
    switch (m.role) {
      case 'system':
      case 'developer':
        return { turn: turn++, role: 'system', text: textOf(m.content, where, false) };
      case 'user':
        return { turn: turn++, role: 'user', text: textOf(m.content, where, false), ...speaker };
      case 'assistant': {
        const text = textOf(m.content, where, true);
        if (m.tool_calls === undefined || m.tool_calls === null) return { turn: turn++, role: 'assistant', text, ...speaker };
        if (!Array.isArray(m.tool_calls)) bad(`${where}: tool_calls must be an array`);
        const toolCalls = (m.tool_calls as unknown[]).map((c, k) => {
          const call = isObject(c) ? c : bad(`${where}, tool_calls[${k}] is not an object`);
          if (call.type !== undefined && call.type !== 'function') bad(`${where}, tool_calls[${k}]: type ${JSON.stringify(call.type)} is not supported (function calls only)`);
          const fn = isObject(call.function) ? call.function : bad(`${where}, tool_calls[${k}].function is not an object`);
          return { id: call.id, name: fn.name, arguments: fn.arguments } as ToolCall;
        });
        const t: WindowTurn = { turn: turn++, role: 'assistant', text, ...speaker, ...(toolCalls.length > 0 ? { toolCalls } : {}) };
        checkStructure(t as unknown as Record<string, unknown>, where);
        return t;
      }
      case 'tool': {
        const t: WindowTurn = { turn: turn++, role: 'tool', text: textOf(m.content, where, false), toolCallId: m.tool_call_id as string };
        checkStructure(t as unknown as Record<string, unknown>, where);
        if (t.toolCallId === undefined) bad(`${where}: a tool message needs tool_call_id`);
        return t;
      }
      default:
        return bad(`${where}: role ${JSON.stringify(m.role)} is not supported (system, developer, user, assistant, tool)`);
    }
  });
}

/**
 * An Anthropic Messages request (`{ system?, messages }`) as turns: `system` (a string or
 * text blocks) → one `system` turn; each user text block → a `user` turn, each
 * `tool_result` block → a `tool` turn (`toolCallId`, `toolError` from `is_error`; its
 * content a string or text blocks); each assistant text block → an `assistant` turn, with
 * the `tool_use` blocks after it as its `toolCalls` (`arguments`: the input as JSON text).
 * Other block types are INVALID_ARGUMENT.
 */
export function fromAnthropic(request: { system?: unknown; messages: readonly AnthropicMessageLike[] }, options?: FromMessagesOptions): WindowTurn[] {
  let turn = firstTurnOf(options);
  if (!isObject(request)) bad('expected { system?, messages }');
  const out: WindowTurn[] = [];
  if (request.system !== undefined) {
    const text = textOf(request.system, 'system', false);
    if (text.length > 0) out.push({ turn: turn++, role: 'system', text });
  }
  messagesArray(request.messages, 'messages').forEach((m, i) => {
    const where = `message ${i}`;
    if (m.role !== 'user' && m.role !== 'assistant') bad(`${where}: role ${JSON.stringify(m.role)} is not supported (user, assistant)`);
    const role = m.role as 'user' | 'assistant';
    if (typeof m.content === 'string') {
      out.push({ turn: turn++, role, text: m.content });
      return;
    }
    if (!Array.isArray(m.content)) bad(`${where}: content must be a string or an array of blocks`);
    let open: WindowTurn | null = null; // the assistant turn tool_use blocks join
    (m.content as unknown[]).forEach((b, k) => {
      const at = `${where}, block ${k}`;
      const block = isObject(b) ? b : bad(`${at} is not an object`);
      if (block.type === 'text') {
        if (typeof block.text !== 'string') bad(`${at}: text must be a string`);
        const t: WindowTurn = { turn: turn++, role, text: block.text as string };
        out.push(t);
        open = role === 'assistant' ? t : null;
      } else if (block.type === 'tool_use' && role === 'assistant') {
        if (!isObject(block.input)) bad(`${at}: input must be an object`);
        const call = { id: block.id, name: block.name, arguments: jsonText(block.input, `${at}: input`) } as ToolCall;
        if (open === null) {
          open = { turn: turn++, role: 'assistant', text: '' };
          out.push(open);
        }
        const o: WindowTurn = open;
        o.toolCalls = [...(o.toolCalls ?? []), call];
        checkStructure(o as unknown as Record<string, unknown>, at);
      } else if (block.type === 'tool_result' && role === 'user') {
        const t: WindowTurn = {
          turn: turn++,
          role: 'tool',
          text: block.content === undefined ? '' : textOf(block.content, at, false),
          toolCallId: block.tool_use_id as string,
          ...(block.is_error === true ? { toolError: true } : {}),
        };
        if (block.is_error !== undefined && typeof block.is_error !== 'boolean') bad(`${at}: is_error must be a boolean`);
        checkStructure(t as unknown as Record<string, unknown>, at);
        if (t.toolCallId === undefined) bad(`${at}: a tool_result needs tool_use_id`);
        out.push(t);
        open = null;
      } else bad(`${at}: a ${JSON.stringify(block.type)} block in a ${role} message is not supported (text, tool_use, tool_result)`);
    });
  });
  return out;
}

/**
 * AI SDK `ModelMessage`s as turns: `system`; `user` (a string or text parts); `assistant`
 * (a string, or text parts joined by a newline and `tool-call` parts → `toolCalls`, the
 * input as JSON text); each `tool-result` part of a `tool` message → a `tool` turn (output
 * `text`/`json` → text, `error-text`/`error-json` → text with `toolError`). Other parts and
 * outputs are INVALID_ARGUMENT.
 */
export function fromAISDK(messages: readonly AISDKMessageLike[], options?: FromMessagesOptions): WindowTurn[] {
  let turn = firstTurnOf(options);
  const out: WindowTurn[] = [];
  messagesArray(messages, 'messages').forEach((m, i) => {
    const where = `message ${i}`;
    switch (m.role) {
      case 'system':
        if (typeof m.content !== 'string') bad(`${where}: a system message's content must be a string`);
        out.push({ turn: turn++, role: 'system', text: m.content as string });
        return;
      case 'user':
        out.push({ turn: turn++, role: 'user', text: textOf(m.content, where, false) });
        return;
      case 'assistant': {
        if (typeof m.content === 'string') {
          out.push({ turn: turn++, role: 'assistant', text: m.content });
          return;
        }
        if (!Array.isArray(m.content)) bad(`${where}: content must be a string or an array of parts`);
        const texts: string[] = [];
        const toolCalls: ToolCall[] = [];
        (m.content as unknown[]).forEach((p, k) => {
          const at = `${where}, part ${k}`;
          const part = isObject(p) ? p : bad(`${at} is not an object`);
          if (part.type === 'text') texts.push(typeof part.text === 'string' ? part.text : bad(`${at}: text must be a string`));
          else if (part.type === 'tool-call')
            toolCalls.push({ id: part.toolCallId, name: part.toolName, arguments: jsonText(part.input, `${at}: input`) } as ToolCall);
          else bad(`${at}: type ${JSON.stringify(part.type)} is not supported (text, tool-call)`);
        });
        const t: WindowTurn = { turn: turn++, role: 'assistant', text: texts.join('\n'), ...(toolCalls.length > 0 ? { toolCalls } : {}) };
        checkStructure(t as unknown as Record<string, unknown>, where);
        out.push(t);
        return;
      }
      case 'tool':
        if (!Array.isArray(m.content)) bad(`${where}: content must be an array of tool-result parts`);
        (m.content as unknown[]).forEach((p, k) => {
          const at = `${where}, part ${k}`;
          const part = isObject(p) ? p : bad(`${at} is not an object`);
          if (part.type !== 'tool-result') bad(`${at}: type ${JSON.stringify(part.type)} is not supported (tool-result)`);
          const output = isObject(part.output) ? part.output : bad(`${at}: output must be an object`);
          let text: string;
          if (output.type === 'text' || output.type === 'error-text') text = typeof output.value === 'string' ? output.value : bad(`${at}: output.value must be a string`);
          else if (output.type === 'json' || output.type === 'error-json') text = jsonText(output.value, `${at}: output.value`);
          else text = bad(`${at}: output type ${JSON.stringify(output.type)} is not supported (text, json, error-text, error-json)`);
          const error = output.type === 'error-text' || output.type === 'error-json';
          const t: WindowTurn = { turn: turn++, role: 'tool', text, toolCallId: part.toolCallId as string, ...(error ? { toolError: true } : {}) };
          checkStructure(t as unknown as Record<string, unknown>, at);
          if (t.toolCallId === undefined) bad(`${at}: a tool-result needs toolCallId`);
          out.push(t);
        });
        return;
      default:
        bad(`${where}: role ${JSON.stringify(m.role)} is not supported (system, user, assistant, tool)`);
    }
  });
  return out;
}

/** What `fromOpenAI` accepts: any Chat Completions message (the `openai` package's `ChatCompletionMessageParam` included). */
export interface OpenAIMessageLike {
  role: string;
  content?: unknown;
  name?: string;
  tool_calls?: readonly unknown[] | null;
  tool_call_id?: string;
}

/** What `fromAnthropic` accepts in `messages` (the SDK's `MessageParam` included). */
export interface AnthropicMessageLike {
  role: string;
  content: unknown;
}

/** What `fromAISDK` accepts (`ModelMessage` from `ai` included). */
export interface AISDKMessageLike {
  role: string;
  content: unknown;
}

