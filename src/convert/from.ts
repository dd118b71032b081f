/** Provider message lists read into turns. */
import type { WindowTurn } from '../window/types.js';
import { bad, checkStructure, isObject } from './check.js';
import type { AISDKMessageLike, AnthropicMessageLike, FromMessagesOptions, OpenAIMessageLike, ToolCall } from './types.js';

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

