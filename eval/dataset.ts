/**
 * The transcripts the quality benches measure on: a dataset read into spans (a tool call and
 * its output as one span, or one span per turn) with its questions, and ingested into a store.
 */
import path from 'node:path';
import { SpanStore, type TurnInput } from '../src/store.js';
import type { MatchPolicy } from '../src/match.js';
import { packageRoot } from '../src/native.js';
import { parseQuestions, parseTranscript, readText, type Question } from '../src/transcript.js';

const DATA = process.env.SPANGUARD_DATA ?? path.resolve(packageRoot, '..', 'shared', 'data');
export const DATASETS: Record<string, string> = { miniswe: 'miniswe-gemini3pro-verified', bookminder: 'bookminder-console' };

/** Groups turns into spans: tool output joins the call that produced it (unit `exchange`). */
export function toSpans(turns: ReturnType<typeof parseTranscript>, unit: 'exchange' | 'turn'): TurnInput[] {
  const out: TurnInput[] = [];
  for (const t of turns) {
    const last = out[out.length - 1];
    if (unit === 'exchange' && t.attachToPrevious && last) {
      last.text += `\n${t.text}`;
      last.turnEnd = t.turn;
      continue;
    }
    // The call's metadata (session, episode, command) stays with the span, as a replay keeps it.
    out.push({ turn: t.turn, turnEnd: t.turn, role: t.role, text: t.text, ...(t.meta ? { meta: t.meta } : {}) });
  }
  return out;
}

export interface Dataset {
  label: string;
  unit: 'exchange' | 'turn';
  turns: number;
  spans: TurnInput[];
  questions: Question[];
}

/** A dataset name from DATASETS, or a folder path (the bundled samples/miniswe-slice). */
export function loadDataset(name: string, unit: 'exchange' | 'turn', limit?: number): Dataset {
  const folder = path.isAbsolute(name) ? name : path.join(DATA, DATASETS[name] ?? name);
  let turns = parseTranscript(readText(path.join(folder, 'turns.jsonl.gz')));
  if (limit) turns = turns.slice(0, limit);
  const lastTurn = turns[turns.length - 1]?.turn ?? 0;
  const questions = parseQuestions(readText(path.join(folder, 'questions.jsonl'))).filter((q) => q.evidenceTurns.every((t) => t <= lastTurn));
  return { label: path.isAbsolute(name) ? path.basename(folder) : name, unit, turns: turns.length, spans: toSpans(turns, unit), questions };
}

/** Ingests the dataset into a store at `dir`; a store already holding it (`--dir` reused) is only opened. */
export async function ingest(ds: Dataset, dir: string, matchPolicy?: MatchPolicy): Promise<{ store: SpanStore; ingestSeconds: number }> {
  const store = await SpanStore.open(dir, { durability: 'none', ...(matchPolicy ? { matchPolicy } : {}) });
  const t0 = performance.now();
  const have = store.stats().spans.raw; // raw spans: the store also records its own events
  if (have !== 0 && have !== ds.spans.length) throw new Error(`${dir} holds ${have} spans, not this dataset's ${ds.spans.length}`);
  if (have === 0) for (let i = 0; i < ds.spans.length; i += 4096) await store.appendMany(ds.spans.slice(i, i + 4096));
  return { store, ingestSeconds: (performance.now() - t0) / 1000 };
}
