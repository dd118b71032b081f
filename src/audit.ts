/**
 * Audits: pinned facts (host-pinned, and auto-pinned from anchors) and a sample of evicted
 * spans from across the whole session are run against the store. A fact passes only if
 * its expected raw span comes back from retrieval and contains the fact verbatim.
 *
 * The check goes through the agent's own retrieval path — the search `ContextWindow.recall`
 * makes, with its k and its miss decision (`agentFinds`) — and re-reads the span from the
 * log and compares bytes, so an index that lost, re-keyed or replaced a raw entry fails the
 * audit, and so does a ranking or miss rule that would hide the fact from the agent.
 */
import { RecordKind } from './native.js';
import { prng } from './prng.js';
import { anchorFact, distinctiveLine } from './anchors.js';
import type { EngineContext } from './store/context.js';
import { RECALL_K } from './search.js';
import { ScanSlicer } from './catchup.js';

/** Facts in the first slice of an audit's phrase memberships (the cost of one is not measured yet). */
const FIRST_PHRASE_SLICE = 64;

export interface PinnedFact {
  fact: string;
  spanId: number;
  source: 'host' | 'anchor' | 'evicted-sample';
}

export interface AuditReport {
  /** Every fact checked came back, and at least one was checked: an audit that checks nothing does not pass. */
  passed: boolean;
  checked: number;
  /** Facts checked that belong to evicted spans: only an audit with at least one vouches for evicted turns. */
  checkedEvicted: number;
  failures: { fact: string; spanId: number; why: string }[];
  sampledEvicted: number;
  /** Event id of the recorded audit (absent until recorded). */
  eventId?: number;
}

export class Auditor {
  constructor(private readonly store: EngineContext) {}

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
      // Few evicted spans in a large id space: the stratified draw can miss them all. Pick
      // among the evicted ids themselves, evenly spaced, so an audit always checks some.
      if (pickEvicted.length < want) {
        const all = [...state.evicted.ids()];
        const have = new Set(pickEvicted);
        for (let i = 0; i < all.length && pickEvicted.length < want; i++) {
          const id = all[Math.floor((i * all.length) / want) % all.length]!;
          if (!have.has(id)) (have.add(id), pickEvicted.push(id));
        }
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
  async check(full: boolean): Promise<AuditReport> {
    const { facts, sampledEvicted } = this.sample(full, this.store.state.passes * 2654435761);
    const results = await this.checkFacts(facts);
    const failures: AuditReport['failures'] = [];
    let checkedEvicted = 0;
    facts.forEach((f, i) => {
      const why = results[i];
      if (why) failures.push({ fact: f.fact.slice(0, 200), spanId: f.spanId, why });
      else if (this.store.state.evicted.has(f.spanId)) checkedEvicted++;
    });
    return { passed: facts.length > 0 && failures.length === 0, checked: facts.length, checkedEvicted, failures, sampledEvicted };
  }

  /**
   * Per fact, null when it comes back verbatim from its span through the agent's path,
   * otherwise why not.
   */
  async checkFacts(facts: readonly { fact: string; spanId: number }[]): Promise<(string | null)[]> {
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
    const found = await agentFinds(this.store, ask.map((i) => facts[i]!));
    ask.forEach((i, j) => {
      if (!found[j]!.found) out[i] = 'retrieval did not return the span';
    });
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
      checkedEvicted: report.checkedEvicted,
    });
    return report;
  }

  async run(full: boolean): Promise<AuditReport> {
    return this.record(await this.check(full));
  }
}

export interface AgentFind {
  /** The agent's recall returns the span (or, for a fact stated in more spans than it returns, only spans stating it verbatim). */
  found: boolean;
  /**
   * The first hit's span id and whether it states the fact verbatim (divergence is measured
   * against it). When the span itself is among the fact's exact-phrase answers, every hit
   * the agent gets states the fact (topHolds) and topId is the span: which stating span
   * ranks first changes neither the verdict nor the divergence (0 either way).
   */
  topId: number | null;
  topHolds: boolean;
}

/**
 * Does the agent's own retrieval — `search(fact, { k: RECALL_K, kinds: ['raw'] })`, the call
 * `ContextWindow.recall` makes — return this span for this fact?
 *
 * Provably equal shortcuts: search ranks every span holding the whole query verbatim above
 * every other candidate (the exact tier) and never calls such a query a miss. So when the
 * span is one of the fact's exact-phrase answers, search returns it (at most RECALL_K
 * answers) or RECALL_K spans that all state it (more): the agent gets the fact back either
 * way. That membership is asked for every fact in one crossing (`phraseHas`: the postings
 * seeked to the span, its text verified), not per fact. A span that is not among them (lost
 * or re-keyed by the index, or a fact under 3 chars) takes the long way: the fact's first
 * RECALL_K + 1 exact answers (more than RECALL_K: every hit states it), else the real search.
 */
export async function agentFinds(store: EngineContext, facts: readonly { fact: string; spanId: number }[]): Promise<AgentFind[]> {
  // Search reads the query trimmed, so the hits are judged by the trimmed fact too. (Plain
  // loops and arrays: a pass asks this for every anchor it evicts.)
  const n = facts.length;
  const trimmed = new Array<string>(n);
  const phrased: number[] = [];
  const phrases: string[] = [];
  const ids: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = facts[i]!.fact.trim();
    trimmed[i] = t;
    if (t.length < 3) continue;
    phrased.push(i);
    phrases.push(t);
    ids.push(facts[i]!.spanId);
  }
  const held = new Uint8Array(n);
  // Each membership seeks the phrase's postings and reads the span from the log (its CRC
  // checked): tens of µs a fact, so a full audit's hundreds of facts in one crossing held the
  // event loop for 30-75 ms at 10^6 spans. They are asked in slices of about SLICE_MS, the
  // loop let run between them (src/catchup.ts ScanSlicer); up to FIRST_PHRASE_SLICE facts
  // (a pass's probes) stay one call.
  const slicer = new ScanSlicer(FIRST_PHRASE_SLICE, 1);
  if (phrased.length > 0) {
    const spanIds = new Float64Array(ids);
    await slicer.run(0, phrased.length, (at, count) => {
      // Read at every slice: a repair may replace the index between two of them.
      const has = store.lexical.phraseHas(store.log, phrases.slice(at, at + count), spanIds.subarray(at, at + count), RecordKind.raw);
      for (let j = 0; j < count; j++) if (has[j] === 1) held[phrased[at + j]!] = 1;
    });
  }
  const out: AgentFind[] = [];
  for (let i = 0; i < n; i++) {
    const { spanId } = facts[i]!;
    const fact = trimmed[i]!;
    if (held[i] === 1) {
      out.push({ found: true, topId: spanId, topHolds: true });
      continue;
    }
    // The long way is a phrase walk per fact (and a search): the loop is let run between them.
    await slicer.pause();
    if (fact.length >= 3) {
      const ids = store.lexical.phrase(store.log, fact, RecordKind.raw, RECALL_K + 1);
      if (ids.length <= RECALL_K && ids.includes(spanId)) {
        out.push({ found: true, topId: spanId, topHolds: true });
        continue;
      }
      // More than RECALL_K spans state it: search's first RECALL_K hits all come from that
      // exact tier, so every hit states the fact and the agent gets it back.
      if (ids.length > RECALL_K) {
        out.push({ found: true, topId: ids[0]!, topHolds: true });
        continue;
      }
    }
    const r = await store.search(fact, { k: RECALL_K, kinds: ['raw'] });
    const top = r.hits[0];
    const holds = (h: { text: string }) => h.text.includes(fact);
    const found = !r.miss && (r.hits.some((h) => h.spanId === spanId && holds(h)) || (r.hits.length === RECALL_K && r.hits.every(holds)));
    out.push({ found, topId: top?.spanId ?? null, topHolds: top ? holds(top) : false });
  }
  return out;
}
