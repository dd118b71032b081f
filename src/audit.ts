/**
 * Audits: pinned facts (host-pinned, and auto-pinned from anchors) and a sample of evicted
 * spans from across the whole session are run against the store. A fact passes only if
 * its expected raw span comes back from retrieval and contains the fact verbatim.
 *
 * The check goes through the exact-phrase path of the lexical index (the same index the
 * agent's queries use), then re-reads the span from the log and compares bytes, so an
 * index that lost, re-keyed or replaced a raw entry fails the audit.
 */
import { detectAnchor, lineAround } from './anchors.js';
import { RecordKind, ROLE_NAMES } from './native.js';
import type { SpanStore } from './store.js';

export interface PinnedFact {
  fact: string;
  spanId: number;
  source: 'host' | 'anchor' | 'evicted-sample';
}

export interface AuditReport {
  passed: boolean;
  checked: number;
  failures: { fact: string; spanId: number; why: string }[];
  sampledEvicted: number;
  /** Event id of the recorded audit (absent until recorded). */
  eventId?: number;
}

/** Deterministic PRNG (mulberry32) so an audit's sample is reproducible from its pass number. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The fact an anchor pins: what detection matched, or its first non-empty line for host-flagged anchors. */
export function anchorFact(text: string, role: number): string | null {
  const m = detectAnchor(text, ROLE_NAMES[role] ?? 'other');
  if (m) return m.fact;
  return distinctiveLine(text);
}

/** The longest line of at most 160 chars (verbatim), or null for a span with no text. */
export function distinctiveLine(text: string): string | null {
  let best: string | null = null;
  let at = 0;
  while (at <= text.length) {
    let end = text.indexOf('\n', at);
    if (end < 0) end = text.length;
    const trimmed = text.slice(at, end).trim();
    if (trimmed.length >= 8 && (!best || trimmed.length > best.length)) {
      best = trimmed.length > 160 ? lineAround(text, at + text.slice(at, end).indexOf(trimmed), trimmed.length) : trimmed;
    }
    at = end + 1;
  }
  return best;
}

export class Auditor {
  constructor(private readonly store: SpanStore) {}

  /** The facts an audit checks: every host pin, then anchors and evicted spans sampled across the session. */
  sample(full: boolean, seed: number): { facts: PinnedFact[]; sampledEvicted: number } {
    const { state, options } = this.store;
    const facts: PinnedFact[] = state.pins.map((p) => ({ ...p, source: 'host' as const }));
    const budget = full ? Math.max(options.auditSample * 16, 512) : options.auditSample;
    const rand = prng(seed);
    const anchors = state.anchors;
    const pickAnchors: number[] = [];
    if (anchors.length <= budget) pickAnchors.push(...anchors);
    else {
      // Stratified: one anchor from each of `budget` equal slices of the session, so old
      // evicted history is checked as often as recent history.
      for (let i = 0; i < budget; i++) {
        const lo = Math.floor((i * anchors.length) / budget);
        const hi = Math.floor(((i + 1) * anchors.length) / budget);
        pickAnchors.push(anchors[lo + Math.floor(rand() * Math.max(1, hi - lo))]!);
      }
    }
    // Evicted spans: stratified over the id space up to the end of the log.
    const next = this.store.log.nextId();
    const pickEvicted: number[] = [];
    if (state.evicted.size > 0) {
      const want = Math.min(state.evicted.size, Math.ceil(budget / 2));
      for (let i = 0, tries = 0; pickEvicted.length < want && tries < want * 64; tries++, i++) {
        const slice = i % want;
        const lo = Math.floor((slice * next) / want);
        const hi = Math.floor(((slice + 1) * next) / want);
        const id = lo + Math.floor(rand() * Math.max(1, hi - lo));
        if (state.evicted.has(id)) pickEvicted.push(id);
      }
    }
    const ids = [...pickAnchors, ...pickEvicted];
    const spans = this.store.log.getMany(Float64Array.from(ids));
    ids.forEach((id, i) => {
      const s = spans[i];
      if (!s || s.kind !== RecordKind.raw) {
        facts.push({ fact: '', spanId: id, source: i < pickAnchors.length ? 'anchor' : 'evicted-sample' });
        return;
      }
      const fact = i < pickAnchors.length ? anchorFact(s.text, s.role) : distinctiveLine(s.text);
      if (fact) facts.push({ fact, spanId: id, source: i < pickAnchors.length ? 'anchor' : 'evicted-sample' });
    });
    return { facts, sampledEvicted: pickEvicted.length };
  }

  /** Checks facts against the store without recording anything. */
  check(full: boolean): AuditReport {
    const { facts, sampledEvicted } = this.sample(full, this.store.state.passes * 2654435761);
    const results = this.checkFacts(facts);
    const failures: AuditReport['failures'] = [];
    facts.forEach((f, i) => {
      const why = results[i];
      if (why) failures.push({ fact: f.fact.slice(0, 200), spanId: f.spanId, why });
    });
    return { passed: failures.length === 0, checked: facts.length, failures, sampledEvicted };
  }

  /**
   * Per fact, null when it comes back verbatim from its span, otherwise why not. The
   * retrieval question — does the exact-phrase index return this span for this fact? — is
   * asked for all facts in one native call that seeks each fact's postings to its span, so
   * a fact that a thousand other spans also contain costs no more than a rare one.
   */
  checkFacts(facts: readonly { fact: string; spanId: number }[]): (string | null)[] {
    const out: (string | null)[] = new Array<string | null>(facts.length).fill(null);
    const spans = this.store.log.getMany(Float64Array.from(facts, (f) => f.spanId));
    const ask: number[] = [];
    facts.forEach((f, i) => {
      const s = spans[i];
      if (!s) out[i] = 'span missing from the log';
      else if (s.kind !== RecordKind.raw) out[i] = 'span is not raw';
      else if (!f.fact) out[i] = 'no fact to check';
      else if (!s.text.includes(f.fact)) out[i] = 'fact not verbatim in the span';
      else ask.push(i);
    });
    if (ask.length > 0) {
      const returned = this.store.lexical.phraseHas(
        this.store.log,
        ask.map((i) => facts[i]!.fact),
        Float64Array.from(ask, (i) => facts[i]!.spanId),
        RecordKind.raw,
      );
      ask.forEach((i, j) => {
        if (returned[j] !== 1) out[i] = 'retrieval did not return the span';
      });
    }
    return out;
  }

  async record(report: AuditReport): Promise<AuditReport> {
    report.eventId = await this.store.recordEvent({
      type: 'audit',
      pass: this.store.state.passes,
      checked: report.checked,
      passed: report.passed,
      failures: report.failures.slice(0, 50),
      sampledEvicted: report.sampledEvicted,
    });
    return report;
  }

  async run(full: boolean): Promise<AuditReport> {
    return this.record(this.check(full));
  }
}
