/**
 * The verdict: `lossless`, `degraded` or `unknown`, computed from the event trail alone so
 * that a reopened store reaches the same verdict with the same evidence.
 *
 * Rules (SPEC "Decision boundary"):
 * - degraded (sticky): a boundary breach, a failed audit, an expect-raw retrieval that
 *   resolved only to a summary, a log/index disagreement, or a hit-rate rise of more than
 *   15% over one pass. Only a repair (indexes rebuilt from the log + a passing audit) clears it.
 * - unknown: turns were evicted and no audit has yet confirmed a fact from an evicted span;
 *   more than `unknownAfter` compactions since the last such audit; or a configuration that
 *   cannot claim lossless (best-effort retention, declared now or ever before; audits rarer
 *   than 1/500).
 * - lossless otherwise. Creating a store is not an audit: a store that has evicted nothing
 *   has nothing to vouch for, and once anything is evicted only a passing audit that checked
 *   at least one fact from an evicted span vouches for it. An audit that checked nothing
 *   does not pass (and does not fail).
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
  lastAudit: { eventId: number; pass: number; passed: boolean; checked: number; checkedEvicted: number } | null;
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
  /** Pass of the last audit that passed and confirmed at least one fact from an evicted span; null before any. */
  private passAtLastGoodAudit: number | null = null;
  /** The first pass that evicted a raw span; null while nothing has been evicted. */
  private firstEviction: number | null = null;
  /** Best-effort retention declared by an earlier open (retention events): it is never forgotten. */
  private bestEffortPast: string | null = null;
  private lastAudit: Verdict['lastAudit'] = null;
  /** Detected anchors the host asked not to protect (they were protected anyway). */
  private vetoes = 0;
  private breaches: Evidence[] = [];
  private lastRepair: Evidence | null = null;

  constructor(private readonly config: VerdictConfig) {}

  /** Feeds one event (replayed at open or appended live). */
  apply(eventId: number, e: GuardEvent): void {
    switch (e.type) {
      case 'pass':
        this.passes = Math.max(this.passes, e.pass);
        if (this.firstEviction === null && e.evicted.length > 0) this.firstEviction = e.pass;
        break;
      case 'anchor-veto':
        this.vetoes += e.spanIds.length;
        break;
      case 'retention':
        if (e.bestEffort && this.bestEffortPast === null)
          this.bestEffortPast = `declared best-effort retention at pass ${e.pass} (raw TTL ${e.rawTtlSeconds ?? 'none'}s, horizon ${e.horizonSeconds}s)`;
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
        this.lastAudit = { eventId, pass: e.pass, passed: e.passed, checked: e.checked, checkedEvicted: e.checkedEvicted ?? 0 };
        // Only an audit that passed and checked a fact from an evicted span vouches.
        if (e.passed && e.checked > 0 && (e.checkedEvicted ?? 0) > 0) this.passAtLastGoodAudit = e.pass;
        else if (e.failures.length === 0) break; // checked nothing (or nothing evicted): neither vouches nor fails
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

  /** Turns were evicted and no audit has vouched for them yet: the store should audit now. */
  get needsFirstAudit(): boolean {
    return this.firstEviction !== null && this.passAtLastGoodAudit === null;
  }

  /**
   * The state alone, by the same rules as {@link verdict} without building its reasons: what
   * the store compares after every event it records (a verdict event is written only when
   * the state changes).
   */
  state(): VerdictState {
    return this.assess(null);
  }

  verdict(): Verdict {
    const reasons: string[] = [];
    const evidence: Evidence[] = [];
    const state = this.assess(reasons, evidence);
    if (this.lastAudit) {
      const a = this.lastAudit;
      evidence.push({
        eventId: a.eventId,
        type: 'audit',
        summary: `last audit at pass ${a.pass}: ${a.passed ? 'passed' : a.checked === 0 ? 'checked nothing' : 'failed'} (${a.checked} fact(s), ${a.checkedEvicted} from evicted spans)`,
        spanIds: [],
      });
    }
    if (this.lastRepair) evidence.push(this.lastRepair);
    return {
      state,
      reasons,
      evidence,
      compactionsSinceAudit: this.since(),
      lastAudit: this.lastAudit,
      bestEffort: this.config.bestEffort || this.bestEffortPast !== null,
      trustExactRecall: state === 'lossless',
      passes: this.passes,
    };
  }

  /** Compactions since the last audit that vouched (or since the first eviction, before any). */
  private since(): number {
    return this.passes - (this.passAtLastGoodAudit ?? this.firstEviction ?? this.passes);
  }

  /**
   * The rules, in one place for {@link state} and {@link verdict}: the state, and (when
   * `reasons` is given) why, with the breaches' evidence. Every reason string is built only
   * for a caller that reads it.
   */
  private assess(reasons: string[] | null, evidence?: Evidence[]): VerdictState {
    const since = this.since();
    let state: VerdictState = 'lossless';
    if (this.breaches.length > 0) {
      state = 'degraded';
      if (reasons)
        for (const b of this.breaches) {
          reasons.push(b.summary);
          evidence?.push(b);
        }
    }
    if (this.config.bestEffort) {
      if (state === 'lossless') state = 'unknown';
      reasons?.push(`best-effort retention: ${this.config.bestEffortReason ?? 'opened bestEffort'}; never lossless`);
    } else if (this.bestEffortPast !== null) {
      if (state === 'lossless') state = 'unknown';
      reasons?.push(`${this.bestEffortPast}; turns evicted since may have expired, and a longer retention now cannot show they did not: never lossless`);
    }
    if (this.config.auditEvery > MAX_AUDIT_INTERVAL) {
      if (state === 'lossless') state = 'unknown';
      reasons?.push(`audits every ${this.config.auditEvery} compactions is rarer than 1 per ${MAX_AUDIT_INTERVAL}`);
    }
    if (this.firstEviction !== null && this.passAtLastGoodAudit === null) {
      if (state === 'lossless') state = 'unknown';
      reasons?.push(`turns were evicted (first at pass ${this.firstEviction}) and no audit has yet confirmed a fact from an evicted span; creating a store is not an audit`);
    } else if (since > this.config.unknownAfter) {
      if (state === 'lossless') state = 'unknown';
      reasons?.push(`${since} compactions since the last passing audit (more than ${this.config.unknownAfter}); retrieval status is unknown, not lossless`);
    }
    if (reasons === null) return state;
    if (state === 'lossless') {
      reasons.push(
        this.firstEviction === null
          ? 'nothing has been evicted: every turn is still in the window or the log'
          : `raw spans immutable and keyed by span id; last passing audit ${since} compaction(s) ago`,
      );
    }
    if (this.vetoes > 0)
      reasons.push(`the host appended ${this.vetoes} span(s) with anchor: false that detection flags; they are protected as anchors anyway`);
    return state;
  }
}

/** Passes whose hit rate HitRateMonitor.history keeps (the newest). */
export const HIT_RATE_HISTORY = 1024;

/**
 * Hit rate over a probe set, per pass. The seed's tell: a lossless fallback shows a stable
 * or falling hit rate as the corpus grows; a jump means distinct spans collapsed into fewer,
 * broader entries. The probe set mixes facts that were stated (should hit) with perturbed
 * facts that never were (should miss), so a store that starts answering everything shows up.
 */
export class HitRateMonitor {
  private last: number | null = null;
  /**
   * The last HIT_RATE_HISTORY passes' hit rates, oldest first: one point a pass, the oldest
   * dropped past the bound (a session of a million passes must not hold a million points).
   * The verdict reads only the last point; `lowest`/`highest` keep the extremes of every pass.
   */
  readonly history: { pass: number; hitRate: number }[] = [];
  /** The lowest and highest hit rate of every pass observed or restored, the dropped ones included (null before any). */
  lowest: number | null = null;
  highest: number | null = null;

  /** `riseLimit` is relative: 0.15 flags after > before * 1.15. */
  constructor(private readonly riseLimit = 0.15) {}

  private record(pass: number, hitRate: number): void {
    this.history.push({ pass, hitRate });
    if (this.history.length > HIT_RATE_HISTORY) this.history.shift();
    this.lowest = this.lowest === null ? hitRate : Math.min(this.lowest, hitRate);
    this.highest = this.highest === null ? hitRate : Math.max(this.highest, hitRate);
  }

  /**
   * Records one pass's hit rate; returns a description of the rise when it breaches the
   * limit. `baseline` is the same probe set measured before the pass, when the set changed
   * since the last pass (comparing different probe sets says nothing).
   */
  observe(pass: number, hits: number, probes: number, baseline?: number): { hitRate: number; before: number | null; rise: string | null } {
    const hitRate = probes === 0 ? 0 : hits / probes;
    const before = baseline ?? this.last;
    this.record(pass, hitRate);
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
    if (this.history.at(-1)?.pass !== pass) this.record(pass, hitRate);
    this.last = hitRate;
  }
}
