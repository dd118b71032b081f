/**
 * Vercel AI SDK middleware: `wrapLanguageModel({ model, middleware })` with a spanguard
 * conversation, and every call's prompt is compacted through a ContextWindow — the host
 * keeps sending its whole message list, each new message becomes a turn of the log (the
 * message verbatim in its span's metadata), and the model gets the host's leading system
 * prompt, the window's summaries and the window's messages. `recall` (an AI SDK `tool()`)
 * brings back anything that left the window, verbatim.
 *
 * One conversation per middleware: each call's prompt must continue the one before (the
 * host appends to its list, as `generateText` does across steps and a chat loop does across
 * turns). A prompt that does not is refused with INVALID_ARGUMENT before anything is
 * stored: its messages would be stored twice, or in the wrong order.
 *
 * The host's list need not grow without end: `prune(messages)` drops from it what the log
 * already holds (the window and recall have it), keeping the continuity the next call is
 * checked against. The AI SDK converts and validates the whole list at every step, so an
 * unpruned list costs the host time in proportion to its length at every call.
 */
import { tool, type LanguageModelMiddleware, type Tool } from 'ai';
import { z } from 'zod';
import { LiveTranscript, asText, plainJson, type ItemTurn, type LiveEntry } from './live.js';
import { ErrorCode, SpanguardError } from '../errors.js';
import type { SpanStore } from '../store.js';
import type { ContextWindow, ContextWindowOptions } from '../window.js';

/** The prompt a middleware sees (the provider's V3 prompt, named through `ai`'s own middleware type). */
type LanguageModelV3Prompt = Parameters<NonNullable<LanguageModelMiddleware['transformParams']>>[0]['params']['prompt'];
type LanguageModelV3Message = LanguageModelV3Prompt[number];
type Part = Record<string, unknown> & { type: string };

/** The text of a tool result's output (text as is, JSON as JSON). */
function outputText(output: unknown): string {
  const o = output as { type?: string; value?: unknown; reason?: string } | undefined;
  if (!o || typeof o !== 'object') return asText(output);
  if (o.type === 'execution-denied') return `execution denied${o.reason ? `: ${o.reason}` : ''}`;
  if (o.type === 'content' && Array.isArray(o.value)) return o.value.map((p: Part) => (typeof p.text === 'string' ? p.text : `[${p.type}]`)).join('\n');
  return asText(o.value);
}

/** How a prompt message is stored: its role, its indexed text (text, tool calls and results, other parts by kind). */
export function messageTurn(m: LanguageModelV3Message): ItemTurn {
  const item = plainJson(m);
  if (typeof m.content === 'string') return { role: m.role, text: m.content, item };
  const parts = (m.content as unknown as Part[]).map((p) => {
    switch (p.type) {
      case 'text':
      case 'reasoning':
        return String(p.text);
      case 'tool-call':
        return `${String(p.toolName)}(${asText(p.input)})`;
      case 'tool-result':
        return outputText(p.output);
      case 'file':
        return `[file ${String(p.filename ?? p.mediaType ?? '')}]`;
      default:
        return `[${p.type}]`;
    }
  });
  return { role: m.role, text: parts.join('\n'), item };
}

/** A fingerprint of a message: its JSON (binary data as base64), compared where the prompt must continue. */
const fingerprint = (m: LanguageModelV3Message) => JSON.stringify(plainJson(m));

/**
 * The live window as prompt messages: summaries first (as system messages, where every
 * provider accepts them), then the window's messages in order, less any tool call without
 * its result and any result without its call (a refused anchor can keep one of the two in
 * the window while the other leaves; providers refuse either alone).
 */
export function livePrompt(entries: LiveEntry[]): LanguageModelV3Message[] {
  const summaries: LanguageModelV3Message[] = [];
  const raw: LanguageModelV3Message[] = [];
  for (const e of entries) {
    if (e.kind === 'summary') summaries.push({ role: 'system', content: e.text });
    else raw.push(structuredClone(e.item) as LanguageModelV3Message);
  }
  const calls = new Set<unknown>();
  const results = new Set<unknown>();
  for (const m of raw)
    if (Array.isArray(m.content))
      for (const p of m.content as unknown as Part[]) {
        if (p.type === 'tool-call') calls.add(p.toolCallId);
        if (p.type === 'tool-result') results.add(p.toolCallId);
      }
  const kept: LanguageModelV3Message[] = [];
  for (const m of raw) {
    if (!Array.isArray(m.content)) {
      kept.push(m);
      continue;
    }
    const content = (m.content as unknown as Part[]).filter((p) => (p.type === 'tool-call' ? results.has(p.toolCallId) : p.type === 'tool-result' ? calls.has(p.toolCallId) : true));
    if (content.length > 0) kept.push({ ...m, content } as unknown as LanguageModelV3Message);
  }
  return [...summaries, ...kept];
}

export interface SpanguardConversation {
  /** Pass to `wrapLanguageModel({ model, middleware })`. */
  middleware: LanguageModelMiddleware;
  /** The `recall` tool: pass it in `tools` (`{ recall: conversation.recall }`). */
  recall: Tool<{ query: string }, string>;
  /** The window the prompts are compacted through (its stats, receipts and recall). */
  window: ContextWindow;
  /**
   * The host's message list less the messages the log already holds, but the last of them
   * (the next prompt is checked against it); leading system messages stay. Pass the list
   * the next call will continue; the result replaces it.
   */
  prune<M extends { role: string }>(messages: M[]): M[];
}

/**
 * A conversation over `store`: middleware that stores each new prompt message and hands
 * the model the window instead of the whole list, and the `recall` tool. The budget counts
 * the window's messages; the host's leading system messages are sent as they are, outside it.
 */
export function spanguardConversation(store: SpanStore, options: ContextWindowOptions): SpanguardConversation {
  const live = new LiveTranscript(store, options);
  /** Prompt messages (after the leading system ones) stored so far, counted from the conversation's start. */
  let pushed = 0;
  /** Of those, how many the host has pruned from the front of its list. */
  let base = 0;
  let lastPrint: string | undefined;
  let queue: Promise<unknown> = Promise.resolve();

  const transform = async (prompt: LanguageModelV3Prompt): Promise<LanguageModelV3Prompt> => {
    if (!Array.isArray(prompt)) throw new SpanguardError(ErrorCode.INVALID_ARGUMENT, 'the prompt must be an array of messages');
    let lead = 0;
    while (lead < prompt.length && prompt[lead]!.role === 'system') lead++;
    const rest = prompt.slice(lead);
    const held = pushed - base; // stored messages the prompt still carries
    if (pushed > 0 && (rest.length < held || fingerprint(rest[held - 1]!) !== lastPrint))
      throw new SpanguardError(
        ErrorCode.INVALID_ARGUMENT,
        `the prompt does not continue this conversation (message ${held} after the system prompt should be the last one stored; ${rest.length < held ? `the prompt has ${rest.length}` : 'it differs'}): use one spanguardConversation per conversation, and prune() the list it continues`,
      );
    const fresh = rest.slice(held);
    if (fresh.length > 0) {
      await live.add(fresh.map(messageTurn));
      pushed += fresh.length;
      lastPrint = fingerprint(rest[rest.length - 1]!);
    }
    return [...prompt.slice(0, lead), ...livePrompt(live.live())];
  };

  const middleware: LanguageModelMiddleware = {
    specificationVersion: 'v3',
    // Calls run one at a time: each must see the messages the one before stored.
    transformParams: async ({ params }) => {
      const next = queue.then(() => transform(params.prompt));
      queue = next.catch(() => {});
      return { ...params, prompt: await next };
    },
  };

  const recall = tool({
    description:
      'Finds what was said earlier in this conversation, verbatim, even after it left your context: a value, a constraint, a decision, a file name. Returns the turns that state it, or "not in transcript" when it was never stated.',
    inputSchema: z.object({ query: z.string().min(1).describe('what to look for, in the words it was likely said in') }),
    execute: async ({ query }) => (await live.recall(query)).text,
  });

  const prune = <M extends { role: string }>(messages: M[]): M[] => {
    if (!Array.isArray(messages)) throw new SpanguardError(ErrorCode.INVALID_ARGUMENT, 'prune expects the message list');
    let lead = 0;
    while (lead < messages.length && messages[lead]!.role === 'system') lead++;
    const drop = pushed - base - 1; // prompt messages that may go: all stored but the last
    if (drop <= 0) return messages.slice();
    // The SDK joins consecutive tool messages into one prompt message: walk prompt indexes.
    let index = -1;
    let cut = messages.length;
    for (let i = lead; i < messages.length; i++) {
      if (!(messages[i]!.role === 'tool' && i > lead && messages[i - 1]!.role === 'tool')) index++;
      if (index === drop) {
        cut = i;
        break;
      }
    }
    if (cut === messages.length) throw new SpanguardError(ErrorCode.INVALID_ARGUMENT, `prune: the list holds fewer messages than this conversation stored from it (${drop + 1})`);
    base += drop;
    return [...messages.slice(0, lead), ...messages.slice(cut)];
  };

  return { middleware, recall, window: live.window, prune };
}
