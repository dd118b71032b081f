/**
 * Replay: streams a transcript through a ContextWindow over a SpanStore, then asks the
 * questions and reports. This is the main job (`spanguard replay`, `npm start`).
 */
import fs from 'node:fs';
import path from 'node:path';
import { perturb } from './anchors.js';
import { dirBytes, SpanStore, type SpanStoreOptions } from './store.js';
import { ContextWindow } from './window.js';
import type { Question } from './transcript.js';
import type { WindowTurn } from './window.js';
import type { Verdict } from './verdict.js';

export interface ReplayOptions {
  budgetTokens: number;
  keepRecentTurns?: number;
  policy?: 'refuse' | 'spill';
  durability?: SpanStoreOptions['durability'];
  questions?: Question[];
  onProgress?: (p: { done: number; total: number; passes: number; verdict: string; turnsPerSecond: number }) => void;
}

export interface QuestionOutcome {
  question: string;
  evidenceTurns: number[];
  evidenceFound: boolean;
  verbatim: boolean;
  evidenceEvicted: boolean;
  status: string;
  /** The perturbed (never stated) answer came back as "not in transcript". */
  honestMiss: boolean;
  perturbed: string;
}

export interface ReplayReport {
  budgetTokens: number;
  turns: number;
  tokens: number;
  passes: number;
  refused: number;
  spilled: number;
  resummarized: number;
  anchors: number;
  audits: { run: number; passed: number };
  verdict: Verdict;
  hitRate: { min: number | null; max: number | null; perPass: { pass: number; hitRate: number }[] };
  questions: {
    total: number;
    evidenceRecall: number;
    verbatim: number;
    answeredFromEvicted: number;
    honestMisses: number;
    outcomes: QuestionOutcome[];
  } | null;
  bytesOnDisk: number;
  phases: { ingestSeconds: number; questionsSeconds: number; closeSeconds: number };
  /** Window tokens sampled over turns, and the passes' turn positions, for the HTML report. */
  series: { turn: number; windowTokens: number }[];
  passTurns: { pass: number; turn: number; evicted: number; summaryTokens: number }[];
  simd: string;
}

export async function replay(dir: string, turns: WindowTurn[], o: ReplayOptions): Promise<ReplayReport> {
  const store = await SpanStore.open(dir, { durability: o.durability ?? 'none', ...(o.policy ? { policy: o.policy } : {}) });
  try {
    const window = new ContextWindow(store, {
      budgetTokens: o.budgetTokens,
      ...(o.keepRecentTurns !== undefined ? { keepRecentTurns: o.keepRecentTurns } : {}),
      ...(o.policy ? { policy: o.policy } : {}),
    });
    const t0 = performance.now();
    const series: ReplayReport['series'] = [];
    const passTurns: ReplayReport['passTurns'] = [];
    const every = Math.max(1, Math.floor(turns.length / 600));
    let lastProgress = 0;
    for (let i = 0; i < turns.length; i++) {
      const t = turns[i]!;
      const before = window.receipts.length;
      await window.push(t);
      const st = window.stats();
      for (let r = before; r < window.receipts.length; r++) {
        const rc = window.receipts[r]!;
        passTurns.push({ pass: rc.pass, turn: t.turn, evicted: rc.evicted.length + rc.evictedSummaries.length, summaryTokens: 0 });
      }
      if (i % every === 0 || i === turns.length - 1) series.push({ turn: t.turn, windowTokens: st.tokens });
      const now = performance.now();
      if (o.onProgress && (now - lastProgress > 200 || i === turns.length - 1)) {
        lastProgress = now;
        o.onProgress({
          done: i + 1,
          total: turns.length,
          passes: st.passes,
          verdict: store.verdict().state,
          turnsPerSecond: (i + 1) / ((now - t0) / 1000),
        });
      }
    }
    const ingestSeconds = (performance.now() - t0) / 1000;
    const t1 = performance.now();
    let questions: ReplayReport['questions'] = null;
    if (o.questions && o.questions.length > 0) {
      const outcomes: QuestionOutcome[] = [];
      for (const q of o.questions) {
        const r = await window.recall(q.question, { k: 10 });
        const evidenceFound = r.hits.some((h) => h.kind === 'raw' && q.evidenceTurns.some((ev) => h.turnStart <= ev && ev <= h.turnEnd));
        const verbatim = r.hits.some((h) => h.kind === 'raw' && h.text.includes(q.answer));
        const evidenceIds = q.evidenceTurns.map((ev) => findTurnId(store, ev));
        const evidenceEvicted = evidenceIds.length > 0 && evidenceIds.every((id) => id !== undefined && store.state.evicted.has(id));
        let perturbed = '';
        for (let v = 0; v < 8; v++) {
          perturbed = perturb(q.answer, v);
          if (store.findExact(perturbed, { limit: 1 }).length === 0) break;
        }
        const miss = await window.recall(perturbed, { k: 10 });
        outcomes.push({
          question: q.question,
          evidenceTurns: q.evidenceTurns,
          evidenceFound,
          verbatim,
          evidenceEvicted,
          status: r.status,
          honestMiss: miss.status === 'not-in-transcript',
          perturbed,
        });
      }
      questions = {
        total: outcomes.length,
        evidenceRecall: outcomes.filter((x) => x.evidenceFound).length,
        verbatim: outcomes.filter((x) => x.verbatim).length,
        answeredFromEvicted: outcomes.filter((x) => x.verbatim && x.evidenceEvicted).length,
        honestMisses: outcomes.filter((x) => x.honestMiss).length,
        outcomes,
      };
    }
    const questionsSeconds = (performance.now() - t1) / 1000;
    const st = window.stats();
    const events = store.events();
    const audits = events.filter((e) => e.event.type === 'audit');
    const hr = store.hitRate.history;
    const report: ReplayReport = {
      budgetTokens: o.budgetTokens,
      turns: turns.length,
      tokens: st.pushedTokens,
      passes: st.passes,
      refused: st.refused,
      spilled: st.spilled,
      resummarized: st.resummarized,
      anchors: store.state.anchors.length,
      audits: { run: audits.length, passed: audits.filter((e) => e.event.type === 'audit' && e.event.passed).length },
      verdict: store.verdict(),
      hitRate: {
        min: hr.length ? Math.min(...hr.map((h) => h.hitRate)) : null,
        max: hr.length ? Math.max(...hr.map((h) => h.hitRate)) : null,
        perPass: hr,
      },
      questions,
      bytesOnDisk: 0,
      phases: { ingestSeconds, questionsSeconds, closeSeconds: 0 },
      series,
      passTurns,
      simd: store.stats().simd,
    };
    const t2 = performance.now();
    await store.close();
    report.phases.closeSeconds = (performance.now() - t2) / 1000;
    report.bytesOnDisk = dirBytes(dir);
    fs.writeFileSync(path.join(dir, 'replay-report.json'), JSON.stringify(report));
    return report;
  } catch (e) {
    await store.close().catch(() => {});
    throw e;
  }
}

/** Span id of the raw span covering `turn` (binary search over the id-ordered log). */
function findTurnId(store: SpanStore, turn: number): number | undefined {
  let lo = store.log.firstId();
  let hi = store.log.nextId() - 1;
  while (lo <= hi) {
    const mid = Math.floor((lo + hi) / 2);
    let probe = mid;
    let s = store.log.get(probe);
    // Summaries and events carry old or current turns; walk down to the nearest raw span.
    while (s && s.kind !== 1 && probe > lo) s = store.log.get(--probe);
    if (!s || s.kind !== 1) {
      lo = mid + 1;
      continue;
    }
    if (s.turnEnd < turn) lo = mid + 1;
    else if (s.turnStart > turn) hi = probe - 1;
    else return s.id;
  }
  return undefined;
}

