/**
 * ContextWindow: the model's live context under a token budget. Every turn goes to the
 * store first (the retention set), then into the window; when the window is over budget
 * the oldest turns outside the recent tail are evicted through the compaction guard and
 * replaced by a summary. `recall` is the tool an agent calls to reach evicted history.
 */
import { encode } from 'gpt-tokenizer/encoding/cl100k_base';
import { CompactionRefusedError, ErrorCode, SpanguardError } from './errors.js';
import { anchorFact } from './audit.js';
import { roleCodeOf } from './native.js';
import { RECALL_K } from './search.js';
import type { CompactionReceipt } from './guard.js';
import type { Hit, SpanStore, TurnInput } from './store.js';
import type { VerdictState } from './verdict.js';

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

export interface WindowTurn extends TurnInput {
  /** Keep this turn with the previous one (a tool result with its call). Default: true for role `tool`. */
  attachToPrevious?: boolean;
}

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

interface Entry {
  id: number;
  kind: 'raw' | 'summary';
  role: string;
  turnStart: number;
  turnEnd: number;
  tokens: number;
  anchor: boolean;
  /** Entries sharing a unit are evicted together (a tool call and its result). */
  unit: number;
  /** Pinned in the window: an anchor the guard would not let go. */
  pinned: boolean;
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

export const defaultCountTokens = (text: string): number => encode(text, { allowedSpecial: 'all' }).length;

export class ContextWindow {
  private readonly entries: Entry[] = [];
  private tokens = 0;
  private unitCounter = 0;
  private readonly o: Required<Omit<ContextWindowOptions, 'policy'>> & { policy: 'refuse' | 'spill' };
  readonly receipts: CompactionReceipt[] = [];
  private counters = { refused: 0, spilled: 0, resummarized: 0, pushedTokens: 0 };
  private readonly units = new Map<number, number[]>();
  private readonly unitBySpan = new Map<number, number>();

  constructor(
    readonly store: SpanStore,
    options: ContextWindowOptions,
  ) {
    const bad = (why: string): never => {
      throw new SpanguardError(ErrorCode.INVALID_OPTIONS, why);
    };
    if (options === null || typeof options !== 'object') bad('ContextWindow options must be an object');
    if (!Number.isSafeInteger(options.budgetTokens) || options.budgetTokens < 64) bad(`budgetTokens must be an integer >= 64, got ${String(options.budgetTokens)}`);
    if (options.keepRecentTurns !== undefined && (!Number.isSafeInteger(options.keepRecentTurns) || options.keepRecentTurns < 0))
      bad(`keepRecentTurns must be an integer >= 0, got ${String(options.keepRecentTurns)}`);
    if (options.policy !== undefined && options.policy !== 'refuse' && options.policy !== 'spill') bad(`policy must be 'refuse' or 'spill', got ${String(options.policy)}`);
    if (options.summarize !== undefined && typeof options.summarize !== 'function') bad('summarize must be a function');
    if (options.countTokens !== undefined && typeof options.countTokens !== 'function') bad('countTokens must be a function');
    if (options.lowWater !== undefined && (typeof options.lowWater !== 'number' || !(options.lowWater > 0 && options.lowWater <= 1)))
      bad(`lowWater must be a number in (0, 1], got ${String(options.lowWater)}`);
    if (options.maxSummaries !== undefined && (!Number.isSafeInteger(options.maxSummaries) || options.maxSummaries < 1))
      bad(`maxSummaries must be an integer >= 1, got ${String(options.maxSummaries)}`);
    this.o = {
      budgetTokens: options.budgetTokens,
      keepRecentTurns: options.keepRecentTurns ?? 8,
      policy: options.policy ?? store.options.policy,
      summarize: options.summarize ?? extractiveSummary,
      countTokens: options.countTokens ?? defaultCountTokens,
      lowWater: options.lowWater ?? 0.75,
      maxSummaries: options.maxSummaries ?? 4,
    };
  }

  /** Appends a turn to the store and the window; compacts when over budget. Returns the span id. */
  async push(turn: WindowTurn): Promise<number> {
    const ids = await this.pushMany([turn]);
    return ids[0]!;
  }

  /** Appends turns in one store batch, then compacts once if the window is over budget. */
  async pushMany(turns: WindowTurn[]): Promise<number[]> {
    if (!Array.isArray(turns)) throw new SpanguardError(ErrorCode.INVALID_ARGUMENT, 'pushMany expects an array of turns');
    turns.forEach((t, i) => {
      if (t === null || typeof t !== 'object') throw new SpanguardError(ErrorCode.INVALID_ARGUMENT, `turn at index ${i} is not an object`);
      if (t.attachToPrevious !== undefined && typeof t.attachToPrevious !== 'boolean')
        throw new SpanguardError(ErrorCode.INVALID_ARGUMENT, `turn at index ${i}: attachToPrevious must be a boolean`);
    });
    // Tokens are counted only for a text that is a string: the store's own checks
    // (appendMany) refuse every other malformed turn with its typed error, before a write.
    const withTokens = turns.map((t) => (t.tokens === undefined && typeof t.text === 'string' ? { ...t, tokens: this.o.countTokens(t.text) } : t));
    const ids = await this.store.appendMany(withTokens.map(({ attachToPrevious: _a, ...t }) => t));
    for (const t of withTokens) this.counters.pushedTokens += t.tokens!;
    const spans = this.store.getMany(ids);
    withTokens.forEach((t, i) => {
      const attach = t.attachToPrevious ?? t.role === 'tool';
      const last = this.entries[this.entries.length - 1];
      const unit = attach && last && last.kind === 'raw' ? last.unit : ++this.unitCounter;
      const e: Entry = {
        id: ids[i]!,
        kind: 'raw',
        role: t.role,
        turnStart: t.turn,
        turnEnd: t.turnEnd ?? t.turn,
        tokens: t.tokens!,
        anchor: spans[i]?.anchor ?? false,
        unit,
        pinned: false,
      };
      this.entries.push(e);
      const members = this.units.get(unit);
      if (members) members.push(e.id);
      else this.units.set(unit, [e.id]);
      this.unitBySpan.set(e.id, unit);
      this.tokens += e.tokens;
    });
    if (this.tokens > this.o.budgetTokens) await this.compact();
    return ids;
  }

  /** Runs passes until the window is under the low-water mark (or nothing more may go). */
  private async compact(): Promise<void> {
    const target = Math.floor(this.o.budgetTokens * this.o.lowWater);
    for (let guard = 0; guard < 8 && this.tokens > target; guard++) {
      const plan = this.plan(target);
      if (plan.length === 0) break;
      const ok = await this.runPass(plan);
      if (!ok) break;
    }
    for (;;) {
      const summaries = this.entries.filter((e) => e.kind === 'summary');
      if (summaries.length <= this.o.maxSummaries) break;
      await this.resummarize(summaries[0]!, summaries[1]!);
    }
  }

  /**
   * Oldest whole units first, enough to get under `target`. The recent tail is kept while
   * that suffices; when it does not (a huge tool output), the tail gives way too — the
   * budget is the invariant — but the newest unit always stays.
   */
  private plan(target: number): Entry[] {
    const lastTurn = this.entries[this.entries.length - 1]?.turnEnd ?? 0;
    const tailFrom = lastTurn - this.o.keepRecentTurns + 1;
    const lastUnit = this.entries[this.entries.length - 1]?.unit;
    const need = this.tokens - target;
    const units: Entry[][] = [];
    for (let i = 0; i < this.entries.length; ) {
      const e = this.entries[i]!;
      let j = i;
      const unit: Entry[] = [];
      while (j < this.entries.length && this.entries[j]!.unit === e.unit) unit.push(this.entries[j++]!);
      i = j;
      // Take the whole unit or none of it: a tool call never leaves without its result.
      if (e.kind !== 'raw' || e.unit === lastUnit) continue;
      units.push(unit.filter((u) => !u.pinned));
    }
    const chosen: Entry[] = [];
    let freed = 0;
    for (const pass of ['outside-tail', 'tail'] as const) {
      for (const unit of units) {
        if (freed >= need * 1.1) break;
        const inTail = unit.some((u) => u.turnEnd >= tailFrom);
        if ((pass === 'outside-tail') === inTail || unit.length === 0 || chosen.includes(unit[0]!)) continue;
        chosen.push(...unit);
        freed += unit.reduce((s, u) => s + u.tokens, 0);
      }
      if (freed >= need) break;
    }
    return chosen.sort((a, b) => a.id - b.id);
  }

  private async runPass(evict: Entry[]): Promise<boolean> {
    const spans = this.store.getMany(evict.map((e) => e.id));
    const input: SummarizeInput[] = evict.map((e, i) => ({
      spanId: e.id,
      kind: e.kind,
      role: e.role,
      turnStart: e.turnStart,
      turnEnd: e.turnEnd,
      text: spans[i]?.text ?? '',
      anchor: e.anchor,
    }));
    const turnStart = Math.min(...evict.map((e) => e.turnStart));
    const turnEnd = Math.max(...evict.map((e) => e.turnEnd));
    const text = await this.o.summarize(input);
    const tokens = this.o.countTokens(text);
    let receipt: CompactionReceipt;
    try {
      receipt = await this.store.compact({
        evict: evict.map((e) => e.id),
        summary: { text, turnStart, turnEnd, tokens },
        policy: this.o.policy,
      });
    } catch (err) {
      if (!(err instanceof CompactionRefusedError)) throw err;
      // Refused anchors stay verbatim in the window; the next plan goes around them.
      this.counters.refused += err.spanIds.length;
      const refused = new Set(err.spanIds);
      for (const e of this.entries) if (refused.has(e.id)) e.pinned = true;
      return evict.some((e) => !refused.has(e.id));
    }
    this.receipts.push(receipt);
    this.counters.spilled += receipt.spilled.length;
    const spilled = new Set(receipt.spilled);
    const gone = new Set(receipt.evicted);
    for (const e of this.entries) if (spilled.has(e.id)) e.pinned = true;
    this.removeAndInsertSummary(gone, { id: receipt.summaryId, turnStart, turnEnd, tokens });
    return true;
  }

  /** Re-summarization: two adjacent summaries become one coarser summary; both are superseded. */
  private async resummarize(a: Entry, b: Entry): Promise<void> {
    const spans = this.store.getMany([a.id, b.id]);
    const input: SummarizeInput[] = [a, b].map((e, i) => ({
      spanId: e.id,
      kind: 'summary',
      role: 'system',
      turnStart: e.turnStart,
      turnEnd: e.turnEnd,
      text: spans[i]?.text ?? '',
      anchor: false,
    }));
    const text = await this.o.summarize(input);
    const tokens = this.o.countTokens(text);
    const turnStart = Math.min(a.turnStart, b.turnStart);
    const turnEnd = Math.max(a.turnEnd, b.turnEnd);
    const receipt = await this.store.compact({ evict: [a.id, b.id], rewrite: [a.id, b.id], summary: { text, turnStart, turnEnd, tokens } });
    this.receipts.push(receipt);
    this.counters.resummarized++;
    this.removeAndInsertSummary(new Set([a.id, b.id]), { id: receipt.summaryId, turnStart, turnEnd, tokens });
  }

  private removeAndInsertSummary(gone: Set<number>, s: { id: number; turnStart: number; turnEnd: number; tokens: number }): void {
    let at = -1;
    for (let i = this.entries.length - 1; i >= 0; i--) {
      const e = this.entries[i]!;
      if (gone.has(e.id)) {
        this.tokens -= e.tokens;
        this.entries.splice(i, 1);
        at = i;
      }
    }
    const entry: Entry = { id: s.id, kind: 'summary', role: 'system', turnStart: s.turnStart, turnEnd: s.turnEnd, tokens: s.tokens, anchor: false, unit: ++this.unitCounter, pinned: false };
    // Summaries sit where the oldest evicted entry was, so the window stays in turn order.
    this.entries.splice(at < 0 ? 0 : at, 0, entry);
    this.tokens += s.tokens;
  }

  /** What the model should see, oldest first; summaries are marked and cite their turn ranges. */
  messages(): Message[] {
    const spans = this.store.getMany(this.entries.map((e) => e.id));
    return this.entries.map((e, i) => {
      const text = spans[i]?.text ?? '';
      if (e.kind === 'summary')
        return {
          role: 'system',
          content: `[summary of turns ${e.turnStart}–${e.turnEnd}; not authoritative for exact values — use recall] ${text}`,
          summary: { spanId: e.id, turnStart: e.turnStart, turnEnd: e.turnEnd },
          spanId: e.id,
        };
      return { role: e.role, content: text, spanId: e.id };
    });
  }

  /**
   * The agent's tool for evicted history: verbatim raw spans with provenance (a tool call
   * comes with its result), "not in transcript", or hits flagged as untrustworthy when the
   * verdict is not lossless.
   */
  async recall(query: string, options: { k?: number } = {}): Promise<RecallResult> {
    // Raw spans and summaries: a query that only a summary answers is the seed's failure,
    // and `expect: 'raw'` makes it degrade the verdict instead of passing unseen.
    const r = await this.store.search(query, { k: options.k ?? RECALL_K, kinds: ['raw', 'summary'], expect: 'raw' });
    if (r.miss || r.hits.length === 0) return { status: 'not-in-transcript', verdict: r.verdict, hits: [], text: 'not in transcript' };
    const seen = new Set(r.hits.map((h) => h.spanId));
    const extra: number[] = [];
    for (const h of r.hits) for (const id of this.unitOf(h.spanId)) if (!seen.has(id)) (seen.add(id), extra.push(id));
    const hits = [...r.hits];
    if (extra.length > 0) {
      const spans = this.store.getMany(extra);
      spans.forEach((s) => {
        if (s && s.kind === 'raw')
          hits.push({ spanId: s.id, kind: 'raw', turnStart: s.turnStart, turnEnd: s.turnEnd, score: 0, via: 'exact', text: s.text, verdict: r.verdict, trustExactRecall: r.trustExactRecall });
      });
    }
    const degraded = r.verdict !== 'lossless';
    const header = degraded ? `retrieval degraded: do not trust exact values (verdict ${r.verdict})\n` : '';
    const text =
      header +
      hits.map((h) => `[span ${h.spanId}, turns ${h.turnStart}–${h.turnEnd}, ${h.kind}, via ${h.via}]\n${h.text}`).join('\n\n');
    return { status: degraded ? 'degraded' : 'found', verdict: r.verdict, hits, text };
  }

  private unitOf(spanId: number): number[] {
    const unit = this.unitBySpan.get(spanId);
    return unit === undefined ? [] : (this.units.get(unit) ?? []);
  }

  stats(): WindowStats {
    return {
      tokens: this.tokens,
      entries: this.entries.length,
      summaries: this.entries.filter((e) => e.kind === 'summary').length,
      passes: this.receipts.length,
      ...this.counters,
    };
  }

  /** Entries currently in the window (ids, kinds, turn ranges, tokens). */
  snapshot(): { id: number; kind: 'raw' | 'summary'; turnStart: number; turnEnd: number; tokens: number; pinned: boolean }[] {
    return this.entries.map(({ id, kind, turnStart, turnEnd, tokens, pinned }) => ({ id, kind, turnStart, turnEnd, tokens, pinned }));
  }
}

/**
 * The default summarizer: deterministic and extractive (no model). It keeps each span's
 * first line and its anchor facts, so identifiers and numbers survive where they fit, and
 * it says it is not to be trusted for exact values — the store is.
 */
export const extractiveSummary: Summarizer = async (spans) => {
  const lines: string[] = [];
  const budget = 1200; // chars
  let used = 0;
  for (const s of spans) {
    const first = s.text.split('\n').find((l) => l.trim().length > 0)?.trim() ?? '';
    const fact = s.anchor ? anchorFact(s.text, roleCodeOf(s.role) ?? 0) : null;
    const parts = [first.slice(0, 120)];
    if (fact && fact !== first) parts.push(fact.slice(0, 160));
    const line = `- t${s.turnStart}${s.turnEnd !== s.turnStart ? `–${s.turnEnd}` : ''} ${s.role}: ${parts.join(' … ')}`;
    if (used + line.length > budget) {
      lines.push(`- … ${spans.length - lines.length} more span(s)`);
      break;
    }
    lines.push(line);
    used += line.length;
  }
  return lines.join('\n');
};
