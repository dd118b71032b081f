/**
 * The compaction guard: every pass is checked by identity before anything is recorded.
 *
 * 1. Raw entries are immutable: a pass that names a raw span in `rewrite` is a boundary
 *    breach (LosslessRetrievalBoundaryError, recorded, verdict degraded).
 * 2. Eviction set ⊆ retention set: each evicted raw id must be held by the log and covered
 *    by both indexes; unknown ids and ids already out of the window are refused.
 * 3. Re-summarization adds a summary and supersedes older ones; raw spans are untouched.
 * 4. Anchors leave the window only if a probe made from their own content returns them from
 *    the pre-compaction index; otherwise the pass is refused, or (policy `spill`) the
 *    anchors stay in the window verbatim and the rest is evicted.
 * 5. The summary goes to its own namespace; nothing raw is re-indexed from summary text.
 */
import { CompactionRefusedError, ErrorCode, LosslessRetrievalBoundaryError, SpanguardError } from './errors.js';
import { toRanges } from './events.js';
import { type NativeSpan, RecordFlag, RecordKind } from './native.js';
import { agentFinds } from './audit.js';
import { prng } from './prng.js';
import { distinctiveValue, perturb, perturbsToValue, valuePhrases } from './anchors.js';
import { answersText } from './support.js';
import { checkGrounding } from './grounding.js';
import { analyzeQuery } from './query.js';
import { letLoopRun, sliceDue } from './catchup.js';
import type { EngineContext } from './store/context.js';
import type { CompactionReceipt, CompactionRequest, PassTiming } from './guard/types.js';
import type { PassEvent } from './events.js';
import { type AnchorProbe, checkIds, judgeAnchors, knownDivergence, probeDivergence } from './guard/anchors.js';
import { HIT_RATE_RISE, holdsRequired, LOCAL_PROBES, MIN_LOCAL_PAIRS, type Probe, requiredDigits, requiredParts } from './guard/probes.js';

export type { CompactionReceipt, CompactionRequest, PassTiming } from './guard/types.js';
export { judgeAnchors, probeDivergence, type AnchorProbe } from './guard/anchors.js';

/**
 * The reason a pass that threw is recorded with: a summary range that does not match what it
 * replaces, a failure of the disk under the pass's append (the request was sound: the same
 * pass may succeed again), or a request the guard cannot take.
 */
function refusalReason(code: ErrorCode): 'summary-range' | 'io-error' | 'invalid-request' {
  if (code === ErrorCode.SUMMARY_RANGE) return 'summary-range';
  if (code === ErrorCode.IO_ERROR || code === ErrorCode.FSYNC_FAILED) return 'io-error';
  return 'invalid-request';
}

export class CompactionGuard {
  private probeSet: Probe[] = [];
  /** Per anchor id: its stated fact, a never-stated perturbation and the digit runs every answer to that one holds (null: no usable pair). */
  private readonly pairs = new Map<number, { fact: string; negative: string; digits: readonly string[] | null } | null>();
  /** Turn of each anchor id looked up by the binary search of localProbes. */
  private readonly anchorTurns = new Map<number, number>();
  /** Anchors in the store when the set was last drawn: it is drawn again when they double. */
  private anchorsAtDraw = 0;
  /** The queries of probeSet, kept with it (every pass asks whether a local probe is already in the set). */
  private probeQueries = new Set<string>();

  constructor(private readonly store: EngineContext) {}

  /**
   * One pass. Every refusal — a malformed request, an unknown id, a summary range that does
   * not match what it evicts, an anchor that cannot be verified — is recorded as an event
   * before it throws, so the trail explains every pass that did not happen.
   */
  async compact(req: CompactionRequest): Promise<CompactionReceipt> {
    try {
      return await this.compactChecked(req);
    } catch (e) {
      // Boundary breaches and anchor refusals record themselves; every other refusal here.
      if (e instanceof SpanguardError && !(e instanceof LosslessRetrievalBoundaryError) && !(e instanceof CompactionRefusedError) && e.code !== ErrorCode.CLOSED && e.code !== ErrorCode.READ_ONLY) {
        const spanIds = Array.isArray((e.details as { spanIds?: unknown })?.spanIds) ? ((e.details as { spanIds: number[] }).spanIds) : typeof (e.details as { spanId?: unknown })?.spanId === 'number' ? [(e.details as { spanId: number }).spanId] : [];
        await this.store.recordEvent({
          type: 'refusal',
          pass: this.store.state.passes + 1,
          anchors: [],
          divergence: 0,
          reason: refusalReason(e.code),
          detail: `${e.code}: ${e.message.slice(0, 300)}`,
          spanIds: spanIds.slice(0, 64),
        });
      }
      throw e;
    }
  }

  private async compactChecked(req: CompactionRequest): Promise<CompactionReceipt> {
    const store = this.store;
    const { state } = store;
    if (req === null || typeof req !== 'object') throw new SpanguardError(ErrorCode.INVALID_ARGUMENT, 'compact expects { evict, rewrite, summary }');
    const evict = checkIds('evict', req.evict);
    const rewrite = checkIds('rewrite', req.rewrite ?? []);
    const summary = req.summary;
    if (!summary || typeof summary.text !== 'string')
      throw new SpanguardError(ErrorCode.INVALID_ARGUMENT, 'compact needs summary: { text, turnStart, turnEnd }');
    if (!Number.isSafeInteger(summary.turnStart) || !Number.isSafeInteger(summary.turnEnd) || summary.turnStart < 0 || summary.turnEnd < summary.turnStart)
      throw new SpanguardError(ErrorCode.INVALID_TURN, `summary turn range ${summary.turnStart}..${summary.turnEnd} is not a valid range`);
    const policy = req.policy ?? store.options.policy;
    const pass = state.passes + 1;
    const timing: PassTiming = { check: 0, anchors: 0, monitor: 0, record: 0, summary: 0, grounding: 0 };
    let t0 = performance.now();
    // Each phase's time is charged from the last mark; a refusal throws before it matters.
    const mark = (phase: keyof PassTiming): void => {
      const t = performance.now();
      timing[phase] += (t - t0) * 1000;
      t0 = t;
    };

    // (A pass that re-summarizes nothing names each id once already: checkIds.)
    const all = rewrite.length === 0 ? evict : [...new Set([...evict, ...rewrite])];
    const spans = store.log.getMany(new Float64Array(all));
    const byId = new Map<number, NativeSpan | undefined>();
    for (let i = 0; i < all.length; i++) byId.set(all[i]!, spans[i]);

    // Rule 1: raw entries are immutable. Checked first: it is the breach that matters most.
    const rawRewrites = rewrite.filter((id) => byId.get(id)?.kind === RecordKind.raw);
    if (rawRewrites.length > 0) {
      await store.recordEvent({ type: 'boundary', pass, reason: 'rewrite-raw', spanIds: rawRewrites });
      throw new LosslessRetrievalBoundaryError(
        `compaction attempted to rewrite indexed raw span(s) ${rawRewrites.join(', ')}; raw spans are immutable (eviction set is not a subset of the retention set). The pass was halted and the verdict is degraded.`,
        rawRewrites,
        { pass },
      );
    }
    const unknown = all.filter((id) => !byId.get(id));
    if (unknown.length > 0) {
      await store.recordEvent({ type: 'refusal', pass, anchors: [], divergence: 0, reason: 'invalid-request', detail: `unknown span id(s) ${unknown.slice(0, 10).join(', ')}`, spanIds: unknown.slice(0, 64) });
      throw new LosslessRetrievalBoundaryError(
        `span id(s) ${unknown.slice(0, 10).join(', ')} are not in the store: the eviction set must be a subset of the retention set`,
        unknown,
        { pass },
      );
    }
    for (const id of all) {
      const s = byId.get(id)!;
      if (s.kind === RecordKind.event) throw new SpanguardError(ErrorCode.INVALID_ARGUMENT, `span ${id} is an event record, not a window entry`, { spanId: id });
    }
    for (const id of rewrite) {
      if (state.superseded.has(id))
        throw new SpanguardError(ErrorCode.INVALID_ARGUMENT, `summary ${id} was already superseded by an earlier pass`, { spanId: id });
    }

    // Rule 2: every evicted raw id is retained (indexed raw) and still in the window.
    const evictRaw: number[] = [];
    const evictSummaries: number[] = [];
    const lexHigh = store.lexical.highWater();
    const vecHigh = store.vector.highWater();
    const unretained: number[] = [];
    for (const id of evict) {
      const s = byId.get(id)!;
      if (s.kind === RecordKind.summary) {
        if (!state.liveSummaries.has(id))
          throw new SpanguardError(ErrorCode.INVALID_ARGUMENT, `summary ${id} is not in the live window (already evicted or superseded)`, { spanId: id });
        evictSummaries.push(id);
        continue;
      }
      if (state.evicted.has(id))
        throw new SpanguardError(ErrorCode.INVALID_ARGUMENT, `raw span ${id} is already out of the window (evicted by an earlier pass)`, { spanId: id });
      if (id >= lexHigh || id >= vecHigh) unretained.push(id);
      evictRaw.push(id);
    }
    if (unretained.length > 0) {
      await store.recordEvent({ type: 'boundary', pass, reason: 'evict-unretained', spanIds: unretained });
      throw new LosslessRetrievalBoundaryError(
        `raw span(s) ${unretained.slice(0, 10).join(', ')} would leave the window without an index entry: eviction set is not a subset of the retention set`,
        unretained,
        { pass },
      );
    }

    // The summary must cover exactly what it replaces: the hull of the evicted raw spans'
    // and the re-summarized summaries' turn ranges. A summary that claims turns 9000–9999
    // for evicted turns 1–10 would be found for questions about turns it never saw.
    const covered = (rewrite.length === 0 ? evict : [...evict, ...rewrite]).map((id) => byId.get(id)!);
    if (covered.length > 0) {
      let lo = covered[0]!.turnStart;
      let hi = covered[0]!.turnEnd;
      for (const x of covered) {
        if (x.turnStart < lo) lo = x.turnStart;
        if (x.turnEnd > hi) hi = x.turnEnd;
      }
      if (summary.turnStart !== lo || summary.turnEnd !== hi)
        throw new SpanguardError(
          ErrorCode.SUMMARY_RANGE,
          `summary claims turns ${summary.turnStart}..${summary.turnEnd} but replaces turns ${lo}..${hi}: a summary covers exactly what it evicts`,
          { turnStart: summary.turnStart, turnEnd: summary.turnEnd, evictedStart: lo, evictedEnd: hi },
        );
    }

    mark('check');

    // Rule 4: anchors need a probe from their own content that the agent's own retrieval
    // (the search ContextWindow.recall makes) returns them for, before eviction; and what the
    // probe returned first must lie within maxDivergence of the anchor.
    const anchors = evictRaw.filter((id) => (byId.get(id)!.flags & RecordFlag.anchor) !== 0);
    const probed: { id: number; probe: string }[] = [];
    for (const id of anchors) {
      const s = byId.get(id)!;
      // Its turn, read already: the monitor's range bound reads it for the next pass (the
      // anchor before that pass's first evicted id is often this pass's last).
      this.anchorTurns.set(id, s.turnStart);
      const probe = store.anchorFactOf(id, s.text, s.role);
      if (probe !== null) probed.push({ id, probe }); // an empty span holds no value to lose
    }
    const finds = await agentFinds(store, probed.map((p) => ({ fact: p.probe, spanId: p.id })));
    const measured: AnchorProbe[] = [];
    for (let i = 0; i < probed.length; i++) {
      const f = finds[i]!;
      const { id } = probed[i]!;
      // Most anchors come back first themselves: no wait for a measure that is not needed.
      const known = knownDivergence(f, id);
      const d = known !== undefined ? known : await probeDivergence(f, id, (topId) => this.distance(byId.get(id)!.text, topId));
      measured.push({ id, found: f.found, divergence: d });
    }
    const { unverified, diverged, divergence } = judgeAnchors(measured, store.options.maxDivergence);
    mark('anchors');

    // Grounding: every value the summary states is stated by what it replaces (the evicted
    // raw spans and the summaries it re-summarizes). Refused, or accepted with the summary
    // marked ungrounded for those values (never evidence for them), and recorded either way.
    const grounding = checkGrounding(summary.text, covered);
    if (!grounding.grounded && store.options.grounding === 'refuse') {
      await store.recordEvent({ type: 'refusal', pass, anchors: [], divergence: 0, reason: 'ungrounded', detail: `summary states ${grounding.ungrounded.slice(0, 10).join(', ')}, which nothing it replaces states`, spanIds: [] });
      throw new SpanguardError(ErrorCode.UNGROUNDED_SUMMARY, `compaction refused: the summary states ${grounding.ungrounded.slice(0, 10).join(', ')}, which none of the spans it replaces states`, { values: grounding.ungrounded });
    }
    mark('grounding');
    let spilled: number[] = [];
    const refused = [...unverified, ...diverged];
    if (refused.length > 0) {
      if (policy === 'refuse') {
        await store.recordEvent({ type: 'refusal', pass, anchors: refused, divergence, reason: unverified.length > 0 ? 'anchor-not-retrievable' : 'divergence' });
        // (A refusal throws: its timing is not reported.)
        throw new CompactionRefusedError(
          unverified.length > 0
            ? `compaction refused: anchor span(s) ${unverified.slice(0, 10).join(', ')} are not returned by the agent's retrieval for a probe of their own content`
            : `compaction refused: for anchor span(s) ${diverged.slice(0, 10).join(', ')} the probe returned a span at divergence ${divergence.toFixed(3)} > maxDivergence ${store.options.maxDivergence}`,
          refused,
          { pass },
        );
      }
      spilled = refused;
    }
    const spilledSet = new Set(spilled);
    const evictedRaw = evictRaw.filter((id) => !spilledSet.has(id));

    // The hit rate before this pass, over the same probes as after it. The set is drawn
    // across the whole session and drawn again as the session grows.
    if (this.probeSet.length === 0 || state.anchors.length >= 2 * Math.max(1, this.anchorsAtDraw)) await this.drawProbeSet(store.options.hitRateProbes);
    // And this pass's own evicted anchors, whose facts the new summary speaks for: each
    // stated fact (a raw hit: rule 4 just verified it) and a never-stated perturbation of it
    // (a miss unless the summary states it). A summary that writes plausible wrong values
    // for the turns it replaces moves these, however large the session-wide set.
    const local = this.localProbes(summary.turnStart, summary.turnEnd, new Set(evictedRaw), new Map(probed.map((p) => [p.id, p.probe])), evictRaw);
    // The pass changes the searchable state by exactly this summary (superseded summaries
    // stay searchable, marked): a probe starts to hit only if the summary answers it. Each
    // probe's answer is counted here and kept on it once the summary is in the log.
    const lowered = summary.text.toLowerCase();
    const global = this.answers(this.probeSet, summary.text, lowered);
    const own = this.answers(local, summary.text, lowered);
    const total = this.probeSet.length + local.length;
    // Before: the hits, with a perturbation a later turn states counted on both sides.
    const hitRateBefore = total === 0 ? null : (global.before + own.before) / total;
    const hitRateAfter = total === 0 ? null : (global.after + own.after) / total;
    // The pass's own probes are a probe set too: a summary that blurs a share of the facts
    // it speaks for moves them by that share, undiluted by the rest of the session.
    const localBefore = local.length === 0 ? null : own.before / local.length;
    const localAfter = local.length === 0 ? null : own.after / local.length;
    const localRise =
      localBefore !== null && localAfter !== null && local.length >= 2 * MIN_LOCAL_PAIRS && localAfter > localBefore * (1 + HIT_RATE_RISE)
        ? `hit rate over the ${local.length} probes of the turns this summary speaks for rose from ${localBefore.toFixed(3)} to ${localAfter.toFixed(3)} (limit +${Math.round(HIT_RATE_RISE * 100)}%)`
        : null;
    mark('monitor');

    // Rules 3 and 5: the summary is a new record in its own namespace, and the pass's event
    // is written in the same append (its bytes built once, here): the summary takes the
    // log's next id, which the event names, and either both are in the log or neither.
    const summaryId = store.log.nextId();
    const event: PassEvent = {
      type: 'pass',
      pass,
      evicted: toRanges(evictedRaw),
      evictedSummaries: evictSummaries,
      spilled,
      superseded: rewrite,
      summaryId,
      turnStart: summary.turnStart,
      turnEnd: summary.turnEnd,
      anchorsChecked: anchors.length,
      divergence,
      hitRateBefore,
      hitRateAfter,
      ...(grounding.grounded ? {} : { ungrounded: grounding.ungrounded.slice(0, 64) }),
      localHitRateBefore: localBefore,
      localHitRateAfter: localAfter,
    };
    const eventText = JSON.stringify(event);
    mark('record');
    const eventId = await store.appendSummary(summary.text, summary.turnStart, summary.turnEnd, summary.tokens ?? 0, { summaryId, text: eventText });
    mark('summary');
    // The summary is in the log: its answers are kept on the probes, the rates observed.
    this.keep(global);
    this.keep(own);
    const hr = total === 0 ? { rise: null } : store.hitRate.observe(pass, global.after + own.after, total, hitRateBefore!);
    await store.applyRecorded(eventId, event);
    if (hr.rise || localRise) {
      await store.recordEvent({ type: 'degrade', pass, reason: 'hit-rate-rise', detail: [hr.rise, localRise].filter(Boolean).join('; '), spanIds: [summaryId] });
    }
    mark('record');
    return {
      pass,
      summaryId,
      evicted: evictedRaw,
      evictedSummaries: evictSummaries,
      spilled,
      superseded: rewrite,
      refused: [],
      anchorsChecked: anchors.length,
      divergence,
      hitRateBefore,
      hitRateAfter,
      eventId,
      timing,
    };
  }

  /**
   * What a new summary does to a probe set: the hits before it and after it, and which probes
   * it changes — `answered`, those it answers (a summary hit from now on), and `restated`,
   * perturbations it answers that a turn appended since the probe was made states ("found 3
   * actions" printed by a later run): the summary restates a true turn, a raw hit before this
   * pass as much as after it, counted on both sides. A summary lacking what search's rule
   * requires of every answer cannot answer (requiredParts): ruled out before any analysis —
   * by its digits first (requiredDigits: every answer holds them), the parts built on first
   * need — and the rest asked by that rule itself.
   */
  private answers(probes: readonly Probe[], text: string, lowered: string): { before: number; after: number; answered: Probe[]; restated: Probe[] } {
    const policy = this.store.options.matchPolicy;
    let hits = 0;
    const answered: Probe[] = [];
    const restated: Probe[] = [];
    for (const p of probes) {
      if (p.raw || p.summary) {
        hits++;
        continue;
      }
      if (p.digits !== null && !p.digits.every((d) => lowered.includes(d))) continue;
      if (!holdsRequired((p.required ??= requiredParts(p.query, policy)), text, lowered)) continue;
      if (!answersText((p.analysis ??= analyzeQuery(p.query)), text, policy, lowered)) continue;
      if (!p.positive && !this.neverStated(p.query)) restated.push(p);
      else answered.push(p);
    }
    return { before: hits + restated.length, after: hits + restated.length + answered.length, answered, restated };
  }

  /** Keeps a summary's answers on its probes (see {@link answers}). */
  private keep(a: { answered: readonly Probe[]; restated: readonly Probe[] }): void {
    for (const p of a.restated) p.raw = true;
    for (const p of a.answered) p.summary = true;
  }

  /** Cosine distance between an anchor's text and the span its probe returned first. */
  private async distance(anchorText: string, topId: number): Promise<number> {
    const topText = this.store.log.get(topId)?.text ?? '';
    const v = await this.store.embedQuery([anchorText, topText]);
    const dims = v.length / 2;
    let dot = 0;
    for (let i = 0; i < dims; i++) dot += v[i]! * v[dims + i]!;
    return Math.max(0, 1 - dot);
  }

  /**
   * Probes for the anchors the new summary speaks for (at most LOCAL_PROBES, evenly spaced
   * over them): the raw anchors this pass evicts, or, for a re-summary, the evicted raw
   * anchors of its turn range (those under the summaries it folds). Each gives its stated fact (a raw hit: the raw
   * namespace never changes, rule 4 verified it at eviction and audits check it since) and
   * its first perturbation when the transcript never states it.
   */
  private localProbes(turnStart: number, turnEnd: number, evictedNow: ReadonlySet<number>, facts: ReadonlyMap<number, string> = new Map(), evictedIds?: readonly number[]): Probe[] {
    const store = this.store;
    const anchors = store.state.anchors;
    // An anchor's turn, read once (a get copies the whole text out of the log).
    const turnOf = (i: number) => {
      const id = anchors[i]!;
      let t = this.anchorTurns.get(id);
      if (t === undefined) this.anchorTurns.set(id, (t = store.log.get(id)?.turnStart ?? -1));
      return t;
    };
    // Anchors are in id order, and turns never go backwards: binary search the range.
    const lowerBound = (turn: number) => {
      let lo = 0;
      let hi = anchors.length;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (turnOf(mid) < turn) lo = mid + 1;
        else hi = mid;
      }
      return lo;
    };
    // A pass that evicts raw spans bounds the range by id without reading an anchor: turns
    // never go backwards, so an anchor with an id at or past the first evicted one is at or
    // past turnStart, and one at or before the last evicted one is at or before turnEnd.
    // One turn read at each edge confirms the bound; otherwise (turns shared across the
    // edge) the bisection decides. (No raw id, a re-summary: the bounds are the ends of the
    // anchor list, kept only when that one read shows every anchor outside the range.)
    let a = -1;
    let b = -1;
    if (evictedIds !== undefined) {
      const i = firstAtLeast(anchors, Math.min(...evictedIds));
      if (i === 0 || turnOf(i - 1) < turnStart) a = i;
      const j = firstAtLeast(anchors, Math.max(...evictedIds) + 1);
      if (j === anchors.length || turnOf(j) > turnEnd) b = j;
    }
    if (a < 0) a = lowerBound(turnStart);
    if (b < 0) b = lowerBound(turnEnd + 1);
    const out: Probe[] = [];
    const global = this.probeQueries;
    // The anchors the summary speaks for: evicted by this pass or under the summaries it
    // folds, not those of the range still in the window.
    const spoken: number[] = [];
    for (let i = a; i < b; i++) if (evictedNow.has(anchors[i]!) || store.state.evicted.has(anchors[i]!)) spoken.push(anchors[i]!);
    const n = spoken.length;
    const step = Math.max(1, n / LOCAL_PROBES);
    for (let x = 0; x < n && out.length < 2 * LOCAL_PROBES; x += step) {
      const id = spoken[Math.floor(x)]!;
      // Each anchor's probe pair is built once (a re-summary asks about the same anchors again).
      let pair = this.pairs.get(id);
      if (pair === undefined) {
        pair = null;
        // Rule 4 already read this pass's anchors and their facts.
        let fact = facts.get(id)?.trim();
        if (fact === undefined) {
          const s = store.log.get(id);
          fact = s ? store.anchorFactOf(id, s.text, s.role)?.trim() : undefined;
        }
        // (A fact whose perturbation cannot be a distinctive value makes no pair: none is built.)
        if (fact && fact.length >= 8 && perturbsToValue(fact)) {
          const negative = perturb(fact, 0);
          // Whether the perturbation is stated somewhere is asked only if a summary answers
          // it (see the monitor): most never come near one.
          if (negative !== fact && distinctiveValue(negative)) pair = { fact, negative, digits: requiredDigits(negative, store.options.matchPolicy) };
        }
        this.pairs.set(id, pair);
      }
      if (pair === null || global.has(pair.fact)) continue;
      // The stated fact hits raw and stays a hit; only the never-stated one can move.
      out.push({ query: pair.fact, positive: true, digits: null, raw: true, summary: false });
      out.push({ query: pair.negative, positive: false, digits: pair.digits, raw: false, summary: false });
    }
    return out;
  }

  /** A perturbation is a never-stated probe when no span states it, nor (near-true) each of its value phrases. */
  private neverStated(perturbed: string): boolean {
    const store = this.store;
    // Values are what a summary gets wrong: a probe perturbs a distinctive number or an
    // identifier with digits. A fact with only single bare digits, or none (a letter
    // changed in a word), makes a weak probe that a true restatement can match.
    if (!distinctiveValue(perturbed)) return false;
    if (store.findExact(perturbed, { limit: 1 }).length > 0) return false;
    const phrases = valuePhrases(perturbed);
    return phrases === null || !phrases.every((p) => store.findExact(p, { limit: 1 }).length > 0);
  }

  /** Forgets the probe set; the next pass draws and measures a new one (after a repair). */
  resetProbes(): void {
    this.probeSet = [];
    this.probeQueries = new Set();
    this.anchorsAtDraw = 0;
  }

  /**
   * Draws `want` anchors stratified over the whole session (one from each of `want` equal
   * slices of the anchor list, seeded by their count so a reopened store draws the same),
   * each giving its stated fact and a perturbation the transcript never states.
   */
  private async drawProbeSet(want: number): Promise<void> {
    const store = this.store;
    const anchors = store.state.anchors;
    const count = anchors.length;
    this.anchorsAtDraw = count;
    // Each try looks up to eight perturbations of its fact up verbatim, phrase lookups of
    // milliseconds each on a large store under appends: 16 probes' draw held the event loop
    // for hundreds of milliseconds, so the loop runs between lookups once a slice has gone
    // by. The set is drawn into arrays of its own and swapped in whole.
    const set: Probe[] = [];
    const queries = new Set<string>();
    const done = () => {
      this.probeSet = set;
      this.probeQueries = queries;
    };
    if (count === 0) return done();
    const rand = prng(count * 2654435761);
    const seen = new Set<string>();
    for (let slice = 0; slice < want; slice++) {
      const lo = Math.floor((slice * count) / want);
      const hi = Math.max(lo + 1, Math.floor(((slice + 1) * count) / want));
      if (lo >= count) break;
      // A few tries per slice: an anchor whose fact is too short or has no never-stated variant is skipped.
      for (let attempt = 0; attempt < 4; attempt++) {
        const id = anchors[Math.min(count - 1, lo + Math.floor(rand() * (hi - lo)))]!;
        const s = store.log.get(id);
        if (!s) continue;
        const fact = store.anchorFactOf(id, s.text, s.role)?.trim();
        if (!fact || fact.length < 8 || seen.has(fact) || !perturbsToValue(fact)) continue;
        let negative: string | null = null;
        for (let v = 0; v < 8 && negative === null; v++) {
          if (sliceDue()) await letLoopRun();
          const candidate = perturb(fact, v);
          if (candidate !== fact && this.neverStated(candidate)) negative = candidate;
        }
        if (negative === null) continue;
        seen.add(fact);
        // Raw hits without a search, provably: the stated fact is verbatim in its span, so
        // search's exact tier returns it (never a miss); the perturbation is stated nowhere,
        // not even near-true (neverStated). Summaries count from the draw on: each pass asks
        // its own new summary, which is what a pass can change.
        set.push({ query: fact, positive: true, digits: null, raw: true, summary: false });
        set.push({ query: negative, positive: false, digits: requiredDigits(negative, store.options.matchPolicy), raw: false, summary: false });
        queries.add(fact).add(negative);
        break;
      }
    }
    done();
  }
}

/** The first index of ascending `ids` holding an id ≥ `id` (ids.length when none). */
function firstAtLeast(ids: readonly number[], id: number): number {
  let lo = 0;
  let hi = ids.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (ids[mid]! < id) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
