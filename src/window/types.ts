/** The context window's public shapes, and the entry it keeps per span. */
import type { TurnStructure } from '../convert/types.js';
import type { Hit, TurnInput } from '../store/types.js';
import type { VerdictState } from '../verdict.js';

/** A span as the summarizer sees it. */
export interface SummarizeInput {
  spanId: number;
  kind: 'raw' | 'summary';
  role: string;
  turnStart: number;
  turnEnd: number;
  text: string;
  anchor: boolean;
}

/** Host summarizer (an LLM call, typically). Its output is never trusted for exact values. */
export type Summarizer = (spans: SummarizeInput[]) => Promise<string>;

export interface WindowTurn extends TurnInput, TurnStructure {
  /** Keep this turn with the previous one (a tool result with its call). Default: true for role `tool`. */
  attachToPrevious?: boolean;
  /** Never evicted, never summarized. Default: true for role `system` (the system prompt). */
  pin?: boolean;
}


/** A turn the window must keep that did not fit: shown clipped, its full text in the store. */
export interface ClippedTurn {
  spanId: number;
  /** The turn's full tokens. */
  tokens: number;
  /** Tokens shown in the window: its head and tail around a marker naming the span. */
  shownTokens: number;
}

/** The window could not hold everything it must keep within its budget. */
export interface WindowOverflow {
  budgetTokens: number;
  /** The window's tokens after clipping (above the budget when pinned turns alone exceed it). */
  tokens: number;
  /** The turns the window shows clipped. */
  clipped: ClippedTurn[];
}

export interface PushResult {
  /** Span ids of the turns pushed, in order. */
  ids: number[];
  /** The last of `ids` (for `push`, the turn's id). */
  spanId: number;
  /** null when the window fits its budget without clipping anything. */
  overflow: WindowOverflow | null;
}

export type MessageFormat = 'openai' | 'anthropic' | 'ai-sdk';

export interface ContextWindowOptions {
  /** Token budget of the live window. */
  budgetTokens: number;
  /** Turns at the end of the window that are never evicted (default 8). */
  keepRecentTurns?: number;
  /** Anchor handling when a probe cannot verify one (default: the store's policy). */
  policy?: 'refuse' | 'spill';
  /** Default: the deterministic extractive summarizer. */
  summarize?: Summarizer;
  /** Token counter for turns without host counts (default: cl100k_base via gpt-tokenizer). */
  countTokens?: (text: string) => number;
  /** After a pass the window is brought down to this share of the budget (default 0.75), so passes are not one per turn. */
  lowWater?: number;
  /** When more summaries than this sit in the window, the two oldest are re-summarized into one (default 4). */
  maxSummaries?: number;
}

/** @internal One span in the window. */
export interface Entry {
  id: number;
  kind: 'raw' | 'summary';
  role: string;
  turnStart: number;
  turnEnd: number;
  tokens: number;
  anchor: boolean;
  /** Entries sharing a unit are evicted together (a tool call and its result). */
  unit: number;
  /** Pinned in the window: a turn the host pinned, or an anchor the guard would not let go. */
  pinned: boolean;
  /** Shown clipped: the first `head` and last `tail` characters of its text, and a marker. */
  clip?: { head: number; tail: number; fullTokens: number };
}

export interface Message {
  role: string;
  content: string;
  /** Present for summaries: the turns it stands for. */
  summary?: { spanId: number; turnStart: number; turnEnd: number };
  spanId: number;
}

export interface RecallResult {
  /** found: verbatim raw spans; not-in-transcript: an honest miss; degraded: hits exist but the verdict forbids trusting exact values. */
  status: 'found' | 'not-in-transcript' | 'degraded';
  verdict: VerdictState;
  hits: Hit[];
  /** What to hand the model. */
  text: string;
}

export interface WindowStats {
  tokens: number;
  /** Tokens of every turn pushed so far (host counts or counted), evicted or not. */
  pushedTokens: number;
  entries: number;
  summaries: number;
  passes: number;
  refused: number;
  spilled: number;
  resummarized: number;
}
