/**
 * LangGraph.js / LangChain: a chat message history backed by a spanguard store. A graph's
 * messages go in with `addMessages` (each a turn of the log, the message verbatim in its
 * span's metadata) and come back from `getMessages` as a budgeted ContextWindow — recent
 * messages verbatim, older ones as summaries — while `recallTool()` finds anything that
 * left, verbatim.
 *
 * Why a message history and not a LangGraph `BaseStore`: a `BaseStore` is a mutable
 * key-value store (`put` overwrites an item, `delete` removes it, `search` reads the latest
 * values), which an append-only log can only imitate by hiding what it keeps. A message
 * history is an append-only list of messages, which is what the log is; its one forgetting
 * call, `clear()`, withdraws the messages from the history the model sees and records that,
 * and deletes nothing.
 */
import { BaseListChatMessageHistory } from '@langchain/core/chat_history';
import { SystemMessage, mapChatMessagesToStoredMessages, mapStoredMessagesToChatMessages, type BaseMessage, type StoredMessage } from '@langchain/core/messages';
import { tool, type StructuredToolInterface } from '@langchain/core/tools';
import { z } from 'zod';
import { LiveTranscript, asText, type ItemTurn } from './live.js';
import { ErrorCode, SpanguardError } from '../errors.js';
import type { SpanStore } from '../store.js';
import type { ContextWindow, ContextWindowOptions } from '../window.js';

const ROLES: Record<string, string> = { human: 'user', ai: 'assistant', system: 'system', tool: 'tool', developer: 'system' };

/** How a LangChain message is stored: its role, its indexed text (content, tool calls), and the message as LangChain stores it. */
export function messageTurn(m: BaseMessage): ItemTurn {
  const type = m.getType();
  const content = typeof m.content === 'string' ? m.content : m.content.map((p) => (typeof p === 'string' ? p : 'text' in p && typeof p.text === 'string' ? p.text : `[${String(p.type)}]`)).join('\n');
  const calls = 'tool_calls' in m && Array.isArray(m.tool_calls) ? (m.tool_calls as { name: string; args: unknown }[]).map((c) => `${c.name}(${asText(c.args)})`) : [];
  const [stored] = mapChatMessagesToStoredMessages([m]);
  return { role: ROLES[type] ?? type, text: [content, ...calls].filter((s) => s.length > 0).join('\n'), item: stored, attachToPrevious: type === 'tool' };
}

export class SpanguardChatMessageHistory extends BaseListChatMessageHistory {
  lc_namespace = ['spanguard', 'langgraph'];
  readonly live: LiveTranscript;

  constructor(store: SpanStore, options: ContextWindowOptions, /** @internal what `open` restored */ live?: LiveTranscript) {
    super();
    this.live = live ?? new LiveTranscript(store, options);
  }

  /** The history of a reopened store, resumed: its live window and cleared messages as they were. */
  static async open(store: SpanStore, options: ContextWindowOptions): Promise<SpanguardChatMessageHistory> {
    return new SpanguardChatMessageHistory(store, options, await LiveTranscript.open(store, options));
  }

  /** The ContextWindow the history comes from (its stats, receipts and recall). */
  get window(): ContextWindow {
    return this.live.window;
  }

  /**
   * The live window's messages, oldest first: summaries as system messages, then the
   * window's messages, less any tool message whose call is not among them and any tool
   * call whose result is not (providers refuse either alone).
   */
  async getMessages(): Promise<BaseMessage[]> {
    const out: BaseMessage[] = [];
    for (const e of this.live.live()) out.push(e.kind === 'summary' ? new SystemMessage(e.text) : mapStoredMessagesToChatMessages([e.item as StoredMessage])[0]!);
    const called = new Set<string>();
    const answered = new Set<string>();
    for (const m of out) {
      if (m.getType() === 'ai') for (const c of (m as unknown as { tool_calls?: { id?: string }[] }).tool_calls ?? []) if (c.id) called.add(c.id);
      if (m.getType() === 'tool') answered.add((m as unknown as { tool_call_id: string }).tool_call_id);
    }
    const kept: BaseMessage[] = [];
    for (const m of out) {
      if (m.getType() === 'tool' && !called.has((m as unknown as { tool_call_id: string }).tool_call_id)) continue;
      const ai = m as unknown as { tool_calls?: { id?: string }[] };
      if (m.getType() === 'ai' && ai.tool_calls?.some((c) => !c.id || !answered.has(c.id))) {
        ai.tool_calls = ai.tool_calls.filter((c) => c.id && answered.has(c.id));
        if (ai.tool_calls.length === 0 && (m.content === '' || (Array.isArray(m.content) && m.content.length === 0))) continue;
      }
      kept.push(m);
    }
    return kept;
  }

  async addMessage(message: BaseMessage): Promise<void> {
    await this.addMessages([message]);
  }

  /** Stores each message as a turn (one store batch) and compacts the window when over budget. */
  override async addMessages(messages: BaseMessage[]): Promise<void> {
    if (!Array.isArray(messages)) throw new SpanguardError(ErrorCode.INVALID_ARGUMENT, 'addMessages expects an array of messages');
    const turns = messages.map((m, i) => {
      if (m === null || typeof m !== 'object' || typeof (m as BaseMessage).getType !== 'function') throw new SpanguardError(ErrorCode.INVALID_ARGUMENT, `message at index ${i} is not a LangChain message`);
      return messageTurn(m);
    });
    await this.live.add(turns);
  }

  /** Empties the history the model sees; the log keeps every message and records the clear. */
  override async clear(): Promise<void> {
    await this.live.hide(
      this.live.live().map((e) => e.spanId),
      'clear',
    );
  }

  /** A `recall` tool (LangChain `tool()`, zod schema) for a graph's tool node. */
  recallTool(): StructuredToolInterface {
    return tool(async ({ query }: { query: string }) => (await this.live.recall(query)).text, {
      name: 'recall',
      description:
        'Finds what was said earlier in this conversation, verbatim, even after it left your context: a value, a constraint, a decision, a file name. Returns the turns that state it, or "not in transcript" when it was never stated.',
      schema: z.object({ query: z.string().min(1).describe('what to look for, in the words it was likely said in') }),
    }) as unknown as StructuredToolInterface;
  }
}
