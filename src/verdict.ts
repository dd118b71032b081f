/**
 * The verdict: `lossless`, `degraded` or `unknown`, computed from the event trail alone so
 * that a reopened store reaches the same verdict with the same evidence.
 *
 * Rules (SPEC "Decision boundary"):
 * - degraded (sticky): a boundary breach, a failed audit, an expect-raw retrieval that
 *   resolved only to a summary, a log/index disagreement, or a hit-rate rise of more than
 *   15% over one pass. Only a repair (indexes rebuilt from the log + a passing audit) clears it.
 * - unknown: more than `unknownAfter` compactions since the last passing audit, or a
 *   configuration that cannot claim lossless (best-effort retention, audits rarer than 1/500).
 * - lossless otherwise. Store creation counts as the baseline: a store that has compacted
 *   nothing has evicted nothing.
 */
import type { GuardEvent } from './events.js';

export type VerdictState = 'lossless' | 'degraded' | 'unknown';

/** One piece of evidence behind the verdict, pointing at the event record that holds it. */
export interface Evidence {
  eventId: number;
  type: GuardEvent['type'];
  summary: string;
  spanIds: number[];
}

export interface Verdict {
  state: VerdictState;
  /** Why the state is what it is, most important first. */
  reasons: string[];
  /** The events that decided it (breaches, the last audit, the last repair). */
  evidence: Evidence[];
  compactionsSinceAudit: number;
  lastAudit: { eventId: number; pass: number; passed: boolean; checked: number } | null;
  bestEffort: boolean;
  /** False whenever state is not lossless: exact values from retrieval must not be trusted. */
  trustExactRecall: boolean;
  passes: number;
}

export interface VerdictConfig {
  unknownAfter: number;
  auditEvery: number;
  bestEffort: boolean;
  /** Why retention is best-effort, when it is. */
  bestEffortReason?: string;
}

/** Audits rarer than this cannot support a lossless claim (seed: >= 1 per 500 compactions). */
export const MAX_AUDIT_INTERVAL = 500;

export class VerdictMonitor {
  private passes = 0;
  private passAtLastGoodAudit = 0;
  private lastAudit: Verdict['lastAudit'] = null;
  private breaches: Evidence[] = [];
  private lastRepair: Evidence | null = null;

  constructor(private readonly config: VerdictConfig) {}

  /** Feeds one event (replayed at open or appended live). */
  apply(eventId: number, e: GuardEvent): void {
    switch (e.type) {
      case 'pass':
        this.passes = Math.max(this.passes, e.pass);
        break;
      case 'boundary':
        this.breaches.push({
          eventId,
          type: e.type,
          summary: `pass ${e.pass}: ${e.reason === 'rewrite-raw' ? 'compaction attempted to rewrite indexed raw span(s)' : 'eviction set not a subset of the retention set'} ${e.spanIds.slice(0, 8).join(', ')}`,
          spanIds: e.spanIds,
        });
        break;
      case 'degrade':
        this.breaches.push({ eventId, type: e.type, summary: `pass ${e.pass}: ${e.reason}: ${e.detail}`, spanIds: e.spanIds });
        break;
      case 'audit':
        this.lastAudit = { eventId, pass: e.pass, passed: e.passed, checked: e.checked };
        if (e.passed) this.passAtLastGoodAudit = e.pass;
        else
          this.breaches.push({
            eventId,
            type: e.type,
            summary: `pass ${e.pass}: audit failed for ${e.failures.length} of ${e.checked} fact(s): ${e.failures
              .slice(0, 3)
              .map((f) => `span ${f.spanId} (${f.why})`)
              .join('; ')}`,
            spanIds: e.failures.map((f) => f.spanId),
          });
        break;
      case 'repair':
        this.lastRepair = {
          eventId,
          type: e.type,
          summary: `pass ${e.pass}: repair rebuilt ${e.rebuilt.join(', ')}; audit ${e.auditPassed ? 'passed' : 'failed'}`,
          spanIds: [],
        };
        if (e.auditPassed) this.breaches = [];
        break;
      default:
        break;
    }
  }

  get compactions(): number {
    return this.passes;
  }

  verdict(): Verdict {
    const reasons: string[] = [];
    const evidence: Evidence[] = [];
    const since = this.passes - this.passAtLastGoodAudit;
    let state: VerdictState = 'lossless';
    if (this.breaches.length > 0) {
      state = 'degraded';
      for (const b of this.breaches) {
        reasons.push(b.summary);
        evidence.push(b);
      }
    }
    if (this.config.bestEffort) {
      if (state === 'lossless') state = 'unknown';
      reasons.push(`best-effort retention: ${this.config.bestEffortReason ?? 'opened bestEffort'}; never lossless`);
    }
    if (this.config.auditEvery > MAX_AUDIT_INTERVAL) {
      if (state === 'lossless') state = 'unknown';
      reasons.push(`audits every ${this.config.auditEvery} compactions is rarer than 1 per ${MAX_AUDIT_INTERVAL}`);
    }
    if (since > this.config.unknownAfter) {
      if (state === 'lossless') state = 'unknown';
      reasons.push(
        `${since} compactions since the last passing audit (more than ${this.config.unknownAfter}); retrieval status is unknown, not lossless`,
      );
    }
    if (state === 'lossless') {
      reasons.push(
        this.passes === 0
          ? 'no compaction yet: nothing has been evicted'
          : `raw spans immutable and keyed by span id; last passing audit ${since} compaction(s) ago`,
      );
    }
    if (this.lastAudit) {
      const a = this.lastAudit;
      evidence.push({
        eventId: a.eventId,
        type: 'audit',
        summary: `last audit at pass ${a.pass}: ${a.passed ? 'passed' : 'failed'} (${a.checked} fact(s))`,
        spanIds: [],
      });
    }
    if (this.lastRepair) evidence.push(this.lastRepair);
    return {
      state,
      reasons,
      evidence,
      compactionsSinceAudit: since,
      lastAudit: this.lastAudit,
      bestEffort: this.config.bestEffort,
      trustExactRecall: state === 'lossless',
      passes: this.passes,
    };
  }
}

/**
 * Hit rate over a probe set, per pass. The seed's tell: a lossless fallback shows a stable
 * or falling hit rate as the corpus grows; a jump means distinct spans collapsed into fewer,
 * broader entries. The probe set mixes facts that were stated (should hit) with perturbed
 * facts that never were (should miss), so a store that starts answering everything shows up.
 */
export class HitRateMonitor {
  private last: number | null = null;
  readonly history: { pass: number; hitRate: number }[] = [];

  /** `riseLimit` is relative: 0.15 flags after > before * 1.15. */
  constructor(private readonly riseLimit = 0.15) {}

  /**
   * Records one pass's hit rate; returns a description of the rise when it breaches the
   * limit. `baseline` is the same probe set measured before the pass, when the set changed
   * since the last pass (comparing different probe sets says nothing).
   */
  observe(pass: number, hits: number, probes: number, baseline?: number): { hitRate: number; before: number | null; rise: string | null } {
    const hitRate = probes === 0 ? 0 : hits / probes;
    const before = baseline ?? this.last;
    this.history.push({ pass, hitRate });
    this.last = hitRate;
    if (before === null || probes === 0) return { hitRate, before, rise: null };
    const rose = before === 0 ? hitRate > this.riseLimit : hitRate > before * (1 + this.riseLimit);
    return {
      hitRate,
      before,
      rise: rose ? `hit rate rose from ${before.toFixed(3)} to ${hitRate.toFixed(3)} over one pass (limit +${Math.round(this.riseLimit * 100)}%)` : null,
    };
  }

  /** Seeds the monitor from a replayed pass event. */
  restore(pass: number, hitRate: number | null): void {
    if (hitRate === null) return;
    // A live pass was observed already: its event, applied next, is the same point.
    if (this.history.at(-1)?.pass !== pass) this.history.push({ pass, hitRate });
    this.last = hitRate;
  }
}
