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
  /** null: the transcript does not answer the question; "not in transcript" is the right response. */
  answer: string | null;
  evidenceTurns: number[];
  category?: string;
  /** What `ContextWindow.recall` said: found, not-in-transcript, or degraded (hits under a verdict other than lossless). */
  status: string;
  /** The turns of the raw hits recall returned (empty on a miss). */
  hitTurns: [number, number][];
  /** Answerable: a raw hit covers an evidence turn. */
  evidenceFound: boolean;
  /** Answerable: a raw hit holds the answer verbatim. */
  verbatim: boolean;
  /** Answerable: every evidence turn had been evicted from the live window. */
  evidenceEvicted: boolean;
  /** Answerable, and recall said "not in transcript": the transcript answers it in `evidenceTurns`. */
  falseMiss: boolean;
  /** Answer null, and recall said "not in transcript". */
  honestMiss: boolean;
  /** Answerable: a variant of the answer the transcript never states (perturbed digits or letters), and whether recall missed it. */
  perturbed: string | null;
  perturbedMissed: boolean | null;
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
    /** Every question asked. */
    total: number;
    /** Questions with an answer and its evidence turns. */
    answerable: {
      total: number;
      /** A raw hit of recall covers an evidence turn. */
      evidenceFound: number;
      /** A raw hit holds the answer verbatim. */
      verbatim: number;
      /** Verbatim, and every evidence turn had been evicted. */
      verbatimFromEvicted: number;
      /** Recall said "not in transcript" although the evidence turns answer it. */
      falseMisses: number;
    };
    /** Questions with answer null: the transcript does not answer them. */
    notInTranscript: {
      total: number;
      /** Recall said "not in transcript". */
      honestMisses: number;
    };
    /** One never-stated variant of each answerable question's answer, asked as a query. */
    neverStatedVariants: {
      total: number;
      /** Recall said "not in transcript". */
      missed: number;
    };
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
      for (const q of o.questions) outcomes.push(await ask(store, window, q));
      const answerable = outcomes.filter((x) => x.answer !== null);
      const unanswerable = outcomes.filter((x) => x.answer === null);
      questions = {
        total: outcomes.length,
        answerable: {
          total: answerable.length,
          evidenceFound: answerable.filter((x) => x.evidenceFound).length,
          verbatim: answerable.filter((x) => x.verbatim).length,
          verbatimFromEvicted: answerable.filter((x) => x.verbatim && x.evidenceEvicted).length,
          falseMisses: answerable.filter((x) => x.falseMiss).length,
        },
        notInTranscript: { total: unanswerable.length, honestMisses: unanswerable.filter((x) => x.honestMiss).length },
        neverStatedVariants: { total: answerable.filter((x) => x.perturbed !== null).length, missed: answerable.filter((x) => x.perturbedMissed === true).length },
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
        min: store.hitRate.lowest,
        max: store.hitRate.highest,
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

/**
 * Asks one question through `recall`, as the agent would. An answerable question is scored
 * on its evidence turns and answer, then a variant of its answer that the transcript never
 * states is asked as well: it must come back "not in transcript". A question with answer
 * null must come back "not in transcript" itself.
 */
async function ask(store: SpanStore, window: ContextWindow, q: Question): Promise<QuestionOutcome> {
  const r = await window.recall(q.question, { k: 10 });
  const raw = r.hits.filter((h) => h.kind === 'raw');
  const base = {
    question: q.question,
    answer: q.answer,
    evidenceTurns: q.evidenceTurns,
    ...(q.category !== undefined ? { category: q.category } : {}),
    status: r.status,
    hitTurns: raw.map((h) => [h.turnStart, h.turnEnd] as [number, number]),
  };
  const missed = r.status === 'not-in-transcript';
  if (q.answer === null)
    return { ...base, evidenceFound: false, verbatim: false, evidenceEvicted: false, falseMiss: false, honestMiss: missed, perturbed: null, perturbedMissed: null };
  const answer = q.answer;
  const evidenceFound = raw.some((h) => q.evidenceTurns.some((ev) => h.turnStart <= ev && ev <= h.turnEnd));
  const verbatim = raw.some((h) => h.text.includes(answer));
  const evidenceIds = q.evidenceTurns.map((ev) => findTurnId(store, ev));
  const evidenceEvicted = evidenceIds.length > 0 && evidenceIds.every((id) => id !== undefined && store.state.evicted.has(id));
  let perturbed = '';
  for (let v = 0; v < 8; v++) {
    perturbed = perturb(answer, v);
    if (store.findExact(perturbed, { limit: 1 }).length === 0) break;
  }
  const variant = await window.recall(perturbed, { k: 10 });
  return {
    ...base,
    evidenceFound,
    verbatim,
    evidenceEvicted,
    falseMiss: missed,
    honestMiss: false,
    perturbed,
    perturbedMissed: variant.status === 'not-in-transcript',
  };
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

