/**
 * An OpenAI Agents SDK `Session` backed by a spanguard store: `run(agent, input, { session })`
 * stores every item the run produces as a turn of the log and gets back, as history, the
 * items of a budgeted ContextWindow — recent items verbatim, older ones as summaries — while
 * every item stays retrievable through `recallTool()`.
 *
 * `popItem` and `clearSession` ask the session to forget. The log is append-only: they take
 * items out of the history the model sees and record that in the log; nothing is deleted,
 * and recall still finds what was withdrawn.
 */
import path from 'node:path';
import { tool, type AgentInputItem, type FunctionTool, type Session } from '@openai/agents';
import { LiveTranscript, asText, type ItemTurn, type LiveEntry } from './live.js';
import { ErrorCode, SpanguardError } from '../errors.js';
import type { SpanStore } from '../store.js';
import type { ContextWindow, ContextWindowOptions } from '../window.js';

export interface SpanguardSessionOptions extends ContextWindowOptions {
  /** What getSessionId() returns (default: `spanguard:` and the store's absolute path). */
  sessionId?: string;
}

type Item = Record<string, unknown> & { type?: string };

/** The text of a message's content: its text parts, other parts by kind. */
function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return asText(content);
  return content
    .map((p: Record<string, unknown>) => {
      if (typeof p?.text === 'string') return p.text;
      if (typeof p?.refusal === 'string') return p.refusal;
      if (typeof p?.type === 'string') return `[${p.type}${typeof p.filename === 'string' ? ` ${p.filename}` : ''}]`;
      return asText(p);
    })
    .join('\n');
}

/** How an Agents SDK item is stored: its role, its indexed text, and what it keeps company with. */
export function itemTurn(item: AgentInputItem, previous: AgentInputItem | undefined): ItemTurn {
  const it = item as unknown as Item;
  const type = it.type ?? 'message';
  switch (type) {
    case 'message':
      return { role: String(it.role ?? 'user'), text: contentText(it.content), item };
    case 'function_call':
      // Parallel calls form one unit with their results, so none leaves without the others.
      return { role: 'assistant', text: `${String(it.name)}(${String(it.arguments ?? '')})`, item, attachToPrevious: (previous as Item | undefined)?.type === 'function_call' };
    case 'function_call_result': {
      const out = it.output as unknown;
      const text = typeof out === 'string' ? out : out && typeof out === 'object' && 'text' in out ? String((out as { text: unknown }).text) : contentText(out);
      return { role: 'tool', text, item, attachToPrevious: true };
    }
    case 'reasoning':
      return { role: 'reasoning', text: contentText(it.content), item, attachToPrevious: false };
    default:
      // Hosted tool calls, computer and shell actions, compaction items: kept whole, indexed as JSON.
      return { role: type.slice(0, 256), text: asText(it), item, attachToPrevious: /_(result|output)$/.test(type) };
  }
}

/** A live entry as the item the runner gets back: the item verbatim, or a summary as a system message. */
function toItem(e: LiveEntry): AgentInputItem {
  if (e.kind === 'summary') return { type: 'message', role: 'system', content: e.text } as AgentInputItem;
  return structuredClone(e.item) as AgentInputItem;
}

/**
 * Drops tool results whose call is not in the history (its call left the window while a
 * refused anchor kept the result): the Responses API refuses an output without its call.
 */
function withoutOrphanResults(items: AgentInputItem[]): AgentInputItem[] {
  const calls = new Set(items.filter((i) => (i as Item).type === 'function_call').map((i) => (i as Item).callId));
  return items.filter((i) => (i as Item).type !== 'function_call_result' || calls.has((i as Item).callId));
}

export class SpanguardSession implements Session {
  readonly live: LiveTranscript;
  private readonly id: string;
  private last: AgentInputItem | undefined;

  constructor(
    readonly store: SpanStore,
    options: SpanguardSessionOptions,
    /** @internal what `open` restored */
    live?: LiveTranscript,
  ) {
    const { sessionId, ...windowOptions } = options ?? ({} as SpanguardSessionOptions);
    if (sessionId !== undefined && (typeof sessionId !== 'string' || sessionId.length === 0)) throw new SpanguardError(ErrorCode.INVALID_OPTIONS, 'sessionId must be a non-empty string');
    this.live = live ?? new LiveTranscript(store, windowOptions);
    this.id = sessionId ?? `spanguard:${path.resolve(store.dir)}`;
  }

  /** The session of a reopened store, resumed: its live window and withdrawals as they were. */
  static async open(store: SpanStore, options: SpanguardSessionOptions): Promise<SpanguardSession> {
    const { sessionId: _id, ...windowOptions } = options ?? ({} as SpanguardSessionOptions);
    return new SpanguardSession(store, options, await LiveTranscript.open(store, windowOptions));
  }

  /** The ContextWindow the history comes from (its stats, receipts and recall). */
  get window(): ContextWindow {
    return this.live.window;
  }

  async getSessionId(): Promise<string> {
    return this.id;
  }

  /** The live window's items, oldest first (the most recent `limit` when given). */
  async getItems(limit?: number): Promise<AgentInputItem[]> {
    const items = withoutOrphanResults(this.live.live().map(toItem));
    if (limit === undefined) return items;
    return limit <= 0 ? [] : items.slice(-limit);
  }

  /** Stores each item as a turn and compacts the window when it goes over budget. */
  async addItems(items: AgentInputItem[]): Promise<void> {
    if (!Array.isArray(items)) throw new SpanguardError(ErrorCode.INVALID_ARGUMENT, 'addItems expects an array of items');
    const turns = items.map((item, i) => {
      if (item === null || typeof item !== 'object') throw new SpanguardError(ErrorCode.INVALID_ARGUMENT, `item at index ${i} is not an object`);
      return itemTurn(item, i === 0 ? this.last : items[i - 1]);
    });
    await this.live.add(turns);
    if (items.length > 0) this.last = items[items.length - 1];
  }

  /**
   * Takes the most recent item out of the history and returns it. The log keeps it (and
   * records the withdrawal): recall still finds it.
   */
  async popItem(): Promise<AgentInputItem | undefined> {
    const entries = this.live.live();
    const last = entries[entries.length - 1];
    if (!last) return undefined;
    await this.live.hide([last.spanId], 'popItem');
    this.last = undefined;
    return toItem(last);
  }

  /** Empties the history the model sees; the log keeps every item and records the clear. */
  async clearSession(): Promise<void> {
    await this.live.hide(
      this.live.live().map((e) => e.spanId),
      'clearSession',
    );
    this.last = undefined;
  }

  /**
   * The agent's tool for what left the window: verbatim turns with their span ids, or "not
   * in transcript"; flagged when the verdict does not vouch for recall.
   */
  recallTool(): FunctionTool {
    return recallTool(this.live);
  }
}

/** A `recall` function tool over a session's store. */
function recallTool(live: LiveTranscript): FunctionTool {
  return tool({
    name: 'recall',
    description:
      'Finds what was said earlier in this conversation, verbatim, even after it left your context: a value, a constraint, a decision, a file name. Returns the turns that state it, or "not in transcript" when it was never stated.',
    parameters: {
      type: 'object',
      properties: { query: { type: 'string', description: 'what to look for, in the words it was likely said in' } },
      required: ['query'],
      additionalProperties: false,
    },
    strict: true,
    execute: async (input) => (await live.recall(String((input as { query: unknown }).query))).text,
  }) as FunctionTool;
}
