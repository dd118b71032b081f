/**
 * ContextWindow: the model's live context under a token budget. Every turn goes to the
 * store first (the retention set), then into the window; when the window is over budget
 * the oldest turns outside the recent tail are evicted through the compaction guard and
 * replaced by a summary. `recall` is the tool an agent calls to reach evicted history.
 */
import { CompactionRefusedError, ErrorCode, SpanguardError } from './errors.js';
import { RECALL_K } from './search.js';
import { checkStructure, structureOf, toAISDK, toAnthropic, toOpenAI, type AISDKMessage, type AnthropicRequest, type OpenAIMessage, type RenderTurn } from './convert.js';
import type { CompactionReceipt } from './guard.js';
import type { GuardEvent } from './events.js';
import type { Span, SpanStore } from './store.js';
import { restoredEntries } from './window/restore.js';
import { clipMarker, clipText, defaultCountTokens, extractiveSummary, renderedText, summaryContent, toStoreTurn, WINDOW_META_KEYS } from './window/text.js';
import type { ClippedTurn, ContextWindowOptions, Entry, Message, MessageFormat, PushResult, RecallResult, SummarizeInput, WindowStats, WindowTurn } from './window/types.js';

export type * from './window/types.js';
export { defaultCountTokens, extractiveSummary } from './window/text.js';

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
    this.o = windowOptions(options, store.options.policy);
  }

  /**
   * Restores the live window of a reopened store from its event trail: every raw span no
   * accepted pass evicted, in log order, and every live summary where the first entry it
   * replaced was; turns pinned at push, and anchors the guard refused or spilled, pinned as
   * they were. A host resumes where it was, with the same options.
   */
  static async open(store: SpanStore, options: ContextWindowOptions): Promise<ContextWindow> {
    const w = new ContextWindow(store, options);
    w.restore(store.events().map((e) => e.event));
    return w;
  }

  private restore(events: GuardEvent[]): void {
    const onRaw = (e: Entry) => {
      this.addToUnit(e);
      this.counters.pushedTokens += e.tokens;
    };
    for (const e of restoredEntries(this.store, events, () => ++this.unitCounter, onRaw)) {
      this.entries.push(e);
      this.tokens += e.tokens;
    }
    if (this.tokens > this.o.budgetTokens) this.clipToBudget();
  }

  /** Appends a turn to the store and the window; compacts when over budget. */
  async push(turn: WindowTurn): Promise<PushResult> {
    return this.pushMany([turn]);
  }

  /**
   * Appends turns in one store batch, then compacts once if the window is over budget. A
   * turn the window must keep (the newest unit, a pinned turn, an anchor the guard kept)
   * that still does not fit is clipped, and the result's `overflow` says so.
   */
  async pushMany(turns: WindowTurn[]): Promise<PushResult> {
    if (!Array.isArray(turns)) throw new SpanguardError(ErrorCode.INVALID_ARGUMENT, 'pushMany expects an array of turns');
    turns.forEach((t, i) => {
      if (t === null || typeof t !== 'object') throw new SpanguardError(ErrorCode.INVALID_ARGUMENT, `turn at index ${i} is not an object`);
      for (const k of ['attachToPrevious', 'pin'] as const)
        if (t[k] !== undefined && typeof t[k] !== 'boolean') throw new SpanguardError(ErrorCode.INVALID_ARGUMENT, `turn at index ${i}: ${k} must be a boolean`);
      checkStructure(t as unknown as Record<string, unknown>, `turn at index ${i}`);
      if (t.meta !== null && typeof t.meta === 'object')
        for (const k of WINDOW_META_KEYS)
          if (Object.hasOwn(t.meta, k))
            throw new SpanguardError(ErrorCode.INVALID_ARGUMENT, `turn at index ${i}: meta.${k} is where the window keeps the turn's ${k}; pass it as the turn's field`);
    });
    // Tokens are counted only for a text that is a string: the store's own checks
    // (appendMany) refuse every other malformed turn with its typed error, before a write.
    const withTokens = turns.map((t) => (t.tokens === undefined && typeof t.text === 'string' ? { ...t, tokens: this.o.countTokens(renderedText(t)) } : t));
    const ids = await this.store.appendMany(withTokens.map(toStoreTurn));
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
        pinned: t.pin ?? t.role === 'system',
      };
      this.entries.push(e);
      this.addToUnit(e);
      this.tokens += e.tokens;
    });
    // Clipping is a function of what the window holds, not of its history: undone here,
    // done again after the passes, so a restored window clips exactly as this one.
    this.unclip();
    if (this.tokens > this.o.budgetTokens) {
      try {
        await this.compact();
      } catch (err) {
        if (err instanceof SpanguardError && err.code === ErrorCode.SUMMARIZER_FAILED)
          throw new SpanguardError(
            ErrorCode.SUMMARIZER_FAILED,
            `${err.message}; the turns are stored (span ids ${ids.join(', ')}) and in the window, so do not push them again: the next push runs the pass again`,
            { ...err.details, ids },
          );
        throw err;
      }
    }
    if (this.tokens > this.o.budgetTokens) this.clipToBudget();
    const clipped = this.entries.flatMap((e) => (e.clip ? [{ spanId: e.id, tokens: e.clip.fullTokens, shownTokens: e.tokens }] : []));
    const overflow = clipped.length > 0 || this.tokens > this.o.budgetTokens ? { budgetTokens: this.o.budgetTokens, tokens: this.tokens, clipped } : null;
    return { ids, spanId: ids[ids.length - 1]!, overflow };
  }

  private addToUnit(e: Entry): void {
    const members = this.units.get(e.unit);
    if (members) members.push(e.id);
    else this.units.set(e.unit, [e.id]);
    this.unitBySpan.set(e.id, e.unit);
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
   * budget is the invariant — but the newest unit always stays, and so does every unit
   * holding a pinned turn (a call never leaves without its results, nor they without it).
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
      if (e.kind !== 'raw' || e.unit === lastUnit || unit.some((u) => u.pinned)) continue;
      units.push(unit);
    }
    const chosen: Entry[] = [];
    let freed = 0;
    for (const pass of ['outside-tail', 'tail'] as const) {
      for (const unit of units) {
        if (freed >= need * 1.1) break;
        const inTail = unit.some((u) => u.turnEnd >= tailFrom);
        if ((pass === 'outside-tail') === inTail || chosen.includes(unit[0]!)) continue;
        chosen.push(...unit);
        freed += unit.reduce((s, u) => s + u.tokens, 0);
      }
      if (freed >= need) break;
    }
    return chosen.sort((a, b) => a.id - b.id);
  }

  /** The host's summary of `input`: a string, or SUMMARIZER_FAILED naming the summarizer (nothing applied). */
  private async summarize(input: SummarizeInput[]): Promise<{ text: string; tokens: number }> {
    const name = this.o.summarize.name || 'anonymous';
    const ids = input.map((s) => s.spanId);
    let text: unknown;
    try {
      text = await this.o.summarize(input);
    } catch (err) {
      const why = err instanceof Error ? err.message : String(err);
      throw new SpanguardError(ErrorCode.SUMMARIZER_FAILED, `summarizer ${name} threw: ${why}`, { summarizer: name, spanIds: ids, cause: err });
    }
    if (typeof text !== 'string')
      throw new SpanguardError(ErrorCode.SUMMARIZER_FAILED, `summarizer ${name} returned ${text === null ? 'null' : typeof text}, not a string`, { summarizer: name, spanIds: ids });
    return { text, tokens: this.o.countTokens(text) };
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
    const { text, tokens } = await this.summarize(input);
    let receipt: CompactionReceipt;
    try {
      receipt = await this.store.compact({
        evict: evict.map((e) => e.id),
        summary: { text, turnStart, turnEnd, tokens },
        policy: this.o.policy,
      });
    } catch (err) {
      if (!(err instanceof CompactionRefusedError)) throw err;
      // Refused anchors stay verbatim in the window; the next plan goes around their units.
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
    this.removeAndInsertSummary(gone, spilled, { id: receipt.summaryId, turnStart, turnEnd, tokens });
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
    const { text, tokens } = await this.summarize(input);
    const turnStart = Math.min(a.turnStart, b.turnStart);
    const turnEnd = Math.max(a.turnEnd, b.turnEnd);
    const receipt = await this.store.compact({ evict: [a.id, b.id], rewrite: [a.id, b.id], summary: { text, turnStart, turnEnd, tokens } });
    this.receipts.push(receipt);
    this.counters.resummarized++;
    this.removeAndInsertSummary(new Set([a.id, b.id]), new Set(), { id: receipt.summaryId, turnStart, turnEnd, tokens });
  }

  /**
   * Removes what a pass evicted and puts its summary where the first entry the pass took up
   * was (evicted, or spilled back into the window), so the window stays in turn order and
   * `ContextWindow.open` can place it from the pass event alone.
   */
  private removeAndInsertSummary(gone: Set<number>, spilled: Set<number>, s: { id: number; turnStart: number; turnEnd: number; tokens: number }): void {
    const first = this.entries.findIndex((e) => gone.has(e.id) || spilled.has(e.id));
    const at = first < 0 ? this.entries.length : first;
    for (let i = this.entries.length - 1; i >= at; i--) {
      const e = this.entries[i]!;
      if (gone.has(e.id)) {
        this.tokens -= e.tokens;
        this.entries.splice(i, 1);
      }
    }
    const entry: Entry = { id: s.id, kind: 'summary', role: 'system', turnStart: s.turnStart, turnEnd: s.turnEnd, tokens: s.tokens, anchor: false, unit: ++this.unitCounter, pinned: false };
    this.entries.splice(at, 0, entry);
    this.tokens += s.tokens;
  }

  /** Every clipped entry back to its full tokens. */
  private unclip(): void {
    for (const e of this.entries) {
      if (!e.clip) continue;
      this.tokens += e.clip.fullTokens - e.tokens;
      e.tokens = e.clip.fullTokens;
      delete e.clip;
    }
  }

  /**
   * Turns the window must keep (the newest unit, pinned turns, anchors the guard kept) are
   * clipped, largest first, until the window fits its budget: each shows the head and tail
   * of its text around a marker naming its span id; the store keeps the whole text.
   */
  private clipToBudget(): ClippedTurn[] {
    const lastUnit = this.entries[this.entries.length - 1]?.unit;
    const candidates = this.entries.filter((e) => e.kind === 'raw' && e.clip === undefined && (e.unit === lastUnit || e.pinned)).sort((a, b) => b.tokens - a.tokens || a.id - b.id);
    const out: ClippedTurn[] = [];
    for (const e of candidates) {
      const over = this.tokens - this.o.budgetTokens;
      if (over <= 0) break;
      const span = this.store.get(e.id);
      if (!span) continue;
      const full = e.tokens;
      // Tool calls are shown whole: only the text is clipped.
      const calls = structureOf(span.meta, span.role).toolCalls;
      const fixed = calls ? this.o.countTokens(renderedText({ text: '', toolCalls: calls })) : 0;
      const clip = clipText(span.text, span.id, full, Math.max(0, full - over - fixed), this.o.countTokens);
      const shown = clip.tokens + fixed;
      if (shown >= full) continue;
      e.clip = { head: clip.head, tail: clip.tail, fullTokens: full };
      e.tokens = shown;
      this.tokens -= full - shown;
      out.push({ spanId: e.id, tokens: full, shownTokens: shown });
    }
    return out;
  }

  /**
   * What the model should see, oldest first. With no format: `{ role, content, spanId,
   * summary? }[]`, summaries as `system` messages citing their turn ranges. With a format,
   * the provider's request messages (src/convert.ts): one system message holding the system
   * turns and then the live summaries, tool calls and results paired by their ids, nothing
   * else — `'openai'` → Chat Completions messages, `'anthropic'` → `{ system?, messages }`,
   * `'ai-sdk'` → `ModelMessage[]`.
   */
  messages(): Message[];
  messages(options: { format: 'openai' }): OpenAIMessage[];
  messages(options: { format: 'anthropic' }): AnthropicRequest;
  messages(options: { format: 'ai-sdk' }): AISDKMessage[];
  messages(options?: { format?: MessageFormat }): Message[] | OpenAIMessage[] | AnthropicRequest | AISDKMessage[];
  messages(options?: { format?: MessageFormat }): Message[] | OpenAIMessage[] | AnthropicRequest | AISDKMessage[] {
    if (options !== undefined && (options === null || typeof options !== 'object'))
      throw new SpanguardError(ErrorCode.INVALID_ARGUMENT, 'messages options must be an object');
    const format = options?.format;
    if (format !== undefined && format !== 'openai' && format !== 'anthropic' && format !== 'ai-sdk')
      throw new SpanguardError(ErrorCode.INVALID_ARGUMENT, `format must be 'openai', 'anthropic' or 'ai-sdk', got ${String(format)}`);
    const spans = this.store.getMany(this.entries.map((e) => e.id));
    if (format === undefined)
      return this.entries.map((e, i) => {
        const text = this.shownText(e, spans[i]);
        if (e.kind === 'summary') return { role: 'system', content: summaryContent(e, text), summary: { spanId: e.id, turnStart: e.turnStart, turnEnd: e.turnEnd }, spanId: e.id };
        return { role: e.role, content: text, spanId: e.id };
      });
    const turns: RenderTurn[] = this.entries.map((e, i) => {
      const s = spans[i];
      const text = this.shownText(e, s);
      if (e.kind === 'summary') return { role: 'system', text: summaryContent(e, text) };
      return { role: e.role, text, ...(s?.speaker !== undefined ? { speaker: s.speaker } : {}), ...structureOf(s?.meta ?? null, e.role) };
    });
    if (format === 'openai') return toOpenAI(turns);
    if (format === 'anthropic') return toAnthropic(turns);
    return toAISDK(turns);
  }

  private shownText(e: Entry, span: Span | undefined): string {
    const text = span?.text ?? '';
    if (!e.clip) return text;
    return text.slice(0, e.clip.head) + clipMarker(e.id, e.clip.fullTokens) + text.slice(text.length - e.clip.tail);
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

  /** Entries currently in the window (ids, kinds, turn ranges, tokens shown; `clippedFrom`: a clipped turn's full tokens). */
  snapshot(): { id: number; kind: 'raw' | 'summary'; turnStart: number; turnEnd: number; tokens: number; pinned: boolean; clippedFrom?: number }[] {
    return this.entries.map(({ id, kind, turnStart, turnEnd, tokens, pinned, clip }) => ({
      id,
      kind,
      turnStart,
      turnEnd,
      tokens,
      pinned,
      ...(clip ? { clippedFrom: clip.fullTokens } : {}),
    }));
  }
}

type ResolvedWindowOptions = Required<Omit<ContextWindowOptions, 'policy'>> & { policy: 'refuse' | 'spill' };

/** The window's options, checked whole (INVALID_OPTIONS) and resolved against the defaults; the policy defaults to the store's. */
function windowOptions(options: ContextWindowOptions, storePolicy: 'refuse' | 'spill'): ResolvedWindowOptions {
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
  return {
    budgetTokens: options.budgetTokens,
    keepRecentTurns: options.keepRecentTurns ?? 8,
    policy: options.policy ?? storePolicy,
    summarize: options.summarize ?? extractiveSummary,
    countTokens: options.countTokens ?? defaultCountTokens,
    lowWater: options.lowWater ?? 0.75,
    maxSummaries: options.maxSummaries ?? 4,
  };
}
