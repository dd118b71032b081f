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
import { RecordFlag, RecordKind } from './native.js';
import { anchorFact } from './audit.js';
import { perturb } from './anchors.js';
import { answers, profileQuery, type QueryProfile } from './match.js';
import type { SpanStore } from './store.js';

export interface CompactionRequest {
  /** Ids leaving the live window: raw spans, or earlier summaries when re-summarizing. */
  evict: number[];
  /** Entries this pass replaces with its summary: summaries only. */
  rewrite?: number[];
  summary: { text: string; turnStart: number; turnEnd: number; tokens?: number };
  /** Override the store's anchor policy for this pass. */
  policy?: 'refuse' | 'spill';
}

export interface CompactionReceipt {
  pass: number;
  summaryId: number;
  /** Raw ids evicted. */
  evicted: number[];
  evictedSummaries: number[];
  /** Anchors kept verbatim in the window (policy `spill`). */
  spilled: number[];
  /** Summaries this pass superseded. */
  superseded: number[];
  /** Raw span ids refused (always empty on a returned receipt: a refusal throws under `refuse`). */
  refused: number[];
  anchorsChecked: number;
  /** Max distance between an evicted anchor and what its probe returned (0: the anchor itself). */
  divergence: number;
  hitRateBefore: number | null;
  hitRateAfter: number | null;
  eventId: number;
  /** Where the pass's time went, in µs. The guard's own work is `check + anchors + monitor + record`; `summary` is the store appending and indexing the new summary, which a pass costs with or without a guard. */
  timing: PassTiming;
}

/** Microseconds per phase of one compaction pass (wall clock, this process). */
export interface PassTiming {
  /** Rules 1 and 2: reading the named ids back and checking them by identity. */
  check: number;
  /** Rule 4: the probe of every evicted anchor against the pre-compaction index. */
  anchors: number;
  /** The hit-rate monitor: before and after over the probe set. */
  monitor: number;
  /** Appending the pass's event record(s) (rule 9). */
  record: number;
  /** Appending the summary and indexing it (lexical + vector). */
  summary: number;
}

/**
 * A probe of the hit-rate monitor. A probe hits when the raw namespace or some summary
 * answers it. The raw part is measured once, when the probe joins the set: no pass can
 * change the raw namespace (rules 1 and 5; audits check that it still returns what it
 * holds). The summary part is what a pass can change, and only by adding a summary, so
 * each pass asks just that summary, by the rule search() verifies candidates with.
 */
interface Probe {
  query: string;
  positive: boolean;
  profile: QueryProfile;
  raw: boolean;
  summary: boolean;
}

export class CompactionGuard {
  private probeSet: Probe[] = [];
  private probeCursor = 0;

  constructor(private readonly store: SpanStore) {}

  async compact(req: CompactionRequest): Promise<CompactionReceipt> {
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
    const timing: PassTiming = { check: 0, anchors: 0, monitor: 0, record: 0, summary: 0 };
    let t0 = performance.now();
    // Each phase's time is charged from the last mark; a refusal throws before it matters.
    const mark = (phase: keyof PassTiming): void => {
      const t = performance.now();
      timing[phase] += (t - t0) * 1000;
      t0 = t;
    };

    const all = [...new Set([...evict, ...rewrite])];
    const spans = store.log.getMany(Float64Array.from(all));
    const byId = new Map(all.map((id, i) => [id, spans[i]]));

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
    if (unknown.length > 0)
      throw new LosslessRetrievalBoundaryError(
        `span id(s) ${unknown.slice(0, 10).join(', ')} are not in the store: the eviction set must be a subset of the retention set`,
        unknown,
        { pass },
      );
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

    mark('check');

    // Rule 4: anchors need a probe from their own content that returns them, before eviction.
    // The exact path answers almost every probe, all of them in one native call; only the
    // anchors it does not return go on to the BM25 path, which measures the divergence.
    const anchors = evictRaw.filter((id) => (byId.get(id)!.flags & RecordFlag.anchor) !== 0);
    const unverified: number[] = [];
    let divergence = 0;
    const probed: { id: number; probe: string }[] = [];
    for (const id of anchors) {
      const s = byId.get(id)!;
      const probe = anchorFact(s.text, s.role);
      if (probe !== null) probed.push({ id, probe }); // an empty span holds no value to lose
    }
    if (probed.length > 0) {
      const exact = store.lexical.phraseHas(store.log, probed.map((p) => p.probe), Float64Array.from(probed, (p) => p.id), RecordKind.raw);
      for (let i = 0; i < probed.length; i++) {
        if (exact[i] === 1) continue;
        const { id, probe } = probed[i]!;
        const d = await this.lexicalDivergence(id, probe, byId.get(id)!.text);
        if (d === null) unverified.push(id);
        else divergence = Math.max(divergence, d);
      }
    }
    mark('anchors');
    let spilled: number[] = [];
    if (unverified.length > 0) {
      if (policy === 'refuse') {
        await store.recordEvent({ type: 'refusal', pass, anchors: unverified, divergence: 1 });
        // (A refusal throws: its timing is not reported.)
        throw new CompactionRefusedError(
          `compaction refused: anchor span(s) ${unverified.slice(0, 10).join(', ')} are not returned by the pre-compaction index for a probe of their own content`,
          unverified,
          { pass },
        );
      }
      spilled = unverified;
    }
    const spilledSet = new Set(spilled);
    const evictedRaw = evictRaw.filter((id) => !spilledSet.has(id));

    // The hit rate before this pass, over the same probes as after it.
    if (this.probeSet.length < 2 * store.options.hitRateProbes && this.probeCursor < state.anchors.length) await this.fillProbeSet(store.options.hitRateProbes);
    const before = this.probeHits();
    mark('monitor');

    // Rules 3 and 5: the summary is a new record in its own namespace.
    const summaryId = await store.appendSummary(summary.text, summary.turnStart, summary.turnEnd, summary.tokens ?? 0);
    mark('summary');
    // The pass changed the searchable state by exactly this summary (superseded summaries
    // stay searchable, marked): a probe starts to hit only if the summary answers it.
    for (const p of this.probeSet) if (!p.raw && !p.summary && answers(p.query, p.profile, summary.text, store.options.matchPolicy)) p.summary = true;
    const after = this.probeHits();
    const hr = after === null || before === null ? { hitRate: null, before: null, rise: null } : store.hitRate.observe(pass, after, this.probeSet.length, before / this.probeSet.length);
    mark('monitor');
    const eventId = await store.recordEvent({
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
      hitRateBefore: hr.before,
      hitRateAfter: hr.hitRate,
    });
    if (hr.rise) {
      await store.recordEvent({ type: 'degrade', pass, reason: 'hit-rate-rise', detail: hr.rise, spanIds: [] });
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
      hitRateBefore: hr.before,
      hitRateAfter: hr.hitRate,
      eventId,
      timing,
    };
  }

  /**
   * For an anchor the exact path did not return: null when BM25 on its probe does not
   * return it either; otherwise the distance between the anchor and the top span the probe
   * returned (0 when that is the anchor itself).
   */
  private async lexicalDivergence(id: number, probe: string, anchorText: string): Promise<number | null> {
    const store = this.store;
    const lex = store.lexical.search(probe, 10, RecordKind.raw, Number.NaN, Number.NaN);
    if (!lex.ids.includes(id)) return null;
    const top = lex.ids[0]!;
    if (top === id) return 0;
    const topText = store.log.get(top)?.text ?? '';
    const v = await store.embedQuery([anchorText, topText]);
    const dims = v.length / 2;
    let dot = 0;
    for (let i = 0; i < dims; i++) dot += v[i]! * v[dims + i]!;
    return Math.max(0, 1 - dot);
  }

  /** Probes that hit (raw or summary), or null while the set is empty. */
  private probeHits(): number | null {
    if (this.probeSet.length === 0) return null;
    let hits = 0;
    for (const p of this.probeSet) if (p.raw || p.summary) hits++;
    return hits;
  }

  /** Forgets the probe set; the next pass rebuilds and re-measures it (after a repair). */
  resetProbes(): void {
    this.probeSet = [];
    this.probeCursor = 0;
  }

  /**
   * Anchors are scanned once, in session order, until the probe set is full: each stated
   * anchor fact, and a perturbation of it that the transcript never states. A probe joining
   * the set is measured whole, by search() itself, raw and summary namespaces apart.
   */
  private async fillProbeSet(want: number): Promise<void> {
    const store = this.store;
    const anchors = store.state.anchors;
    for (; this.probeCursor < anchors.length && this.probeSet.length < 2 * want; this.probeCursor++) {
      const s = store.log.get(anchors[this.probeCursor]!);
      if (!s) continue;
      const fact = anchorFact(s.text, s.role);
      if (!fact || fact.length < 8 || this.probeSet.some((p) => p.query === fact)) continue;
      let negative: string | null = null;
      for (let v = 0; v < 8 && negative === null; v++) {
        const candidate = perturb(fact, v);
        if (candidate !== fact && store.findExact(candidate, { limit: 1 }).length === 0) negative = candidate;
      }
      if (negative === null) continue;
      for (const [query, positive] of [[fact, true], [negative, false]] as const) {
        const raw = (await store.search(query, { k: 1, kinds: ['raw'] })).hits.length > 0;
        const summary = !raw && (await store.search(query, { k: 1, kinds: ['summary'] })).hits.length > 0;
        this.probeSet.push({ query, positive, profile: profileQuery(query), raw, summary });
      }
    }
  }
}

function checkIds(name: string, ids: unknown): number[] {
  if (!Array.isArray(ids)) throw new SpanguardError(ErrorCode.INVALID_ARGUMENT, `${name} must be an array of span ids`);
  for (const id of ids)
    if (typeof id !== 'number' || !Number.isSafeInteger(id) || id < 0)
      throw new SpanguardError(ErrorCode.INVALID_ARGUMENT, `${name} contains ${String(id)}, which is not a span id`);
  if (new Set(ids).size !== ids.length) throw new SpanguardError(ErrorCode.INVALID_ARGUMENT, `${name} names an id twice`);
  return ids as number[];
}
