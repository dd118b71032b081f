/**
 * Summary grounding on a real replay (src/grounding.ts, docs/GROUNDING.md).
 *
 *   npx tsc -p tsconfig.bench.json && node build/bench-dist/bench/grounding.bench.js [--limit N] [--file F] [--budget N] [--keep-recent N] [--json]
 *
 * Replays the miniswe transcript (/work/shared/data/miniswe-gemini3pro-verified, 41,326
 * turns) through a ContextWindow with the defaults `npm start` uses (budget 32,000 tokens,
 * the last 8 turns kept, durability `none`), wrapping the summarizer: every pass, the
 * summary is checked with checkGrounding against the spans handed to the summarizer (the
 * raw spans the pass evicts, or the two summaries a re-summary merges).
 *
 *  1. False alarms: the default extractive summarizer's summaries flagged ungrounded.
 *     Target 0.
 *  2. Detection: a second replay whose summarizer shifts one number in one summary of every
 *     ten (the first run of 2+ digits outside the summarizer's framing, +1: `40` → `41`,
 *     `float16` → `float17`), the shifted text going into the window as a faulty summarizer's
 *     would. Target: every shifted summary flagged. (Its other passes are checked too: a
 *     faithful summary is never flagged, even when it re-summarizes a shifted one.)
 *  3. Cost of checkGrounding per pass over the passes of the first replay: CPU time, each
 *     pass checked again after the replay (best of 3), and CPU and wall time in the replay.
 *
 * Both with the word-context rule (the default) and with the values alone (`context: false`).
 *
 * A whole-transcript run writes bench/results/grounding.json (machine, command, figures).
 * Every shifted summary is a line of the extractive format whose quote is no longer what the
 * cited turn says, so the quote rule (docs/GROUNDING.md) flags it even where the shifted
 * number is stated elsewhere in the pass. The exit code is 1 when a faithful summary is
 * flagged (a false alarm), in either replay.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { checkGrounding, type GroundingSource } from '../src/grounding.js';
import { machine } from './lib.js';
import { SpanStore } from '../src/store.js';
import { readText, parseTranscript } from '../src/transcript.js';
import { ContextWindow, extractiveSummary, type Summarizer, type WindowTurn } from '../src/window.js';

const DEFAULT_FILE = '/work/shared/data/miniswe-gemini3pro-verified/turns.jsonl.gz';
const { values: args } = parseArgs({
  options: {
    file: { type: 'string', default: DEFAULT_FILE },
    limit: { type: 'string' },
    budget: { type: 'string', default: '32000' },
    'keep-recent': { type: 'string', default: '8' },
    json: { type: 'boolean', default: false },
  },
});

/**
 * The extractive summarizer's framing: its line prefix (anywhere: re-summaries quote it),
 * that prefix cut short at the end of a line, and its "more spans" line. Turn numbers are
 * not values: shifting one is no value shift.
 */
const FRAMING = /(?<!\S)- t\d+(?:–\d+)? [^\s:]+: |(?<!\S)- t\d*(?:–\d*)?(?: [^\s:]*:?)?\s*$|^- … \d+ more span\(s\)$/gm;

/**
 * The summary with its first run of 2+ digits outside the framing incremented, or null when
 * it has none. Written apart from grounding.ts on purpose: the attack does not borrow the
 * checker's notion of what a value is.
 */
export function shiftFirstNumber(text: string): { text: string; line: string } | null {
  const framing: [number, number][] = [...text.matchAll(FRAMING)].map((m) => [m.index!, m.index! + m[0].length]);
  for (const m of text.matchAll(/\d{2,}/g)) {
    const at = m.index!;
    if (framing.some(([a, b]) => a <= at && at < b)) continue;
    const next = (BigInt(m[0]) + 1n).toString().padStart(m[0].length, '0');
    const shifted = text.slice(0, at) + next + text.slice(at + m[0].length);
    const lineStart = shifted.lastIndexOf('\n', at) + 1;
    const lineEnd = shifted.indexOf('\n', at);
    return { text: shifted, line: shifted.slice(lineStart, lineEnd < 0 ? undefined : lineEnd) };
  }
  return null;
}

/** Where the sources state a shifted summary's line's values (what let a shift through): the source lines holding the changed number. */
function whereStated(line: string, original: string, sources: string[]): string[] {
  const a = [...line.matchAll(/\d+/g)].map((m) => m[0]);
  const b = [...original.matchAll(/\d+/g)].map((m) => m[0]);
  const changed = a.find((x, i) => x !== b[i]);
  if (changed === undefined) return [];
  const out: string[] = [];
  for (const s of sources)
    for (const m of s.matchAll(new RegExp(`(?<![\\d.])${changed}(?![\\d]|\\.\\d)`, 'g'))) {
      const ls = s.lastIndexOf('\n', m.index!) + 1;
      const le = s.indexOf('\n', m.index!);
      out.push(s.slice(Math.max(ls, m.index! - 60), Math.min(le < 0 ? s.length : le, m.index! + 60)));
      if (out.length >= 3) return out;
    }
  return out;
}

interface Alarm {
  pass: number;
  turns: string;
  ungrounded: string[];
  summary: string;
  /** A missed shift: the shifted line, and where the sources state its changed number. */
  line?: string;
  stated?: string[];
}

/** One mode of the checker: with the word-context rule (the default) or the value alone. */
interface Tally {
  /** Faithful summaries flagged. */
  falseAlarms: Alarm[];
  /** Shifted summaries flagged, and those that got through. */
  flagged: number;
  missed: Alarm[];
  /** checkGrounding per pass, in the replay: wall clock and CPU time of this process (µs). */
  costsUs: number[];
  cpuUs: number[];
}

interface RunResult {
  passes: number;
  shifted: number;
  context: Tally;
  valueOnly: Tally;
  sourceChars: number[];
  /** (summary, sources) of every pass, for the warm timing loop. */
  pairs: [string, GroundingSource[]][];
  seconds: number;
}

const tally = (): Tally => ({ falseAlarms: [], flagged: 0, missed: [], costsUs: [], cpuUs: [] });

async function run(turns: WindowTurn[], shift: boolean): Promise<RunResult> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'spanguard-grounding-'));
  const store = await SpanStore.open(dir, { durability: 'none' });
  const r: RunResult = { passes: 0, shifted: 0, context: tally(), valueOnly: tally(), sourceChars: [], pairs: [], seconds: 0 };
  let sinceShift = 0;
  const summarize: Summarizer = async (spans) => {
    const faithful = await extractiveSummary(spans);
    const sources = spans.map((s) => ({ text: s.text, turnStart: s.turnStart, turnEnd: s.turnEnd }));
    const pass = ++r.passes;
    const range = `${Math.min(...spans.map((s) => s.turnStart))}–${Math.max(...spans.map((s) => s.turnEnd))}`;
    let text = faithful;
    const shifted = shift && ++sinceShift >= 10 ? shiftFirstNumber(faithful) : null;
    if (shifted !== null) (text = shifted.text), (sinceShift = 0), r.shifted++;
    r.sourceChars.push(sources.reduce((n, s) => n + s.text.length, 0));
    if (!shift) r.pairs.push([text, sources]);
    for (const [t, context] of [[r.context, true], [r.valueOnly, false]] as const) {
      const c0 = process.cpuUsage();
      const t0 = performance.now();
      const g = checkGrounding(text, sources, { context });
      t.costsUs.push((performance.now() - t0) * 1000);
      const c = process.cpuUsage(c0);
      t.cpuUs.push(c.user + c.system);
      if (shifted !== null) {
        if (!g.grounded) t.flagged++;
        else {
          const original = faithful.split('\n')[text.split('\n').indexOf(shifted.line)] ?? '';
          t.missed.push({ pass, turns: range, ungrounded: [], summary: text, line: shifted.line, stated: whereStated(shifted.line, original, sources.map((s) => s.text)) });
        }
      } else if (!g.grounded) t.falseAlarms.push({ pass, turns: range, ungrounded: g.ungrounded, summary: text });
    }
    return text;
  };
  const window = new ContextWindow(store, { budgetTokens: Number(args.budget), keepRecentTurns: Number(args['keep-recent']), summarize });
  const t0 = performance.now();
  try {
    let last = 0;
    for (let i = 0; i < turns.length; i++) {
      await window.push(turns[i]!);
      if (!args.json && process.stderr.isTTY && performance.now() - last > 500) {
        last = performance.now();
        process.stderr.write(`\r${shift ? 'shifted' : 'default'}: ${i + 1}/${turns.length} turns, ${r.passes} passes   `);
      }
    }
  } finally {
    r.seconds = (performance.now() - t0) / 1000;
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
    if (!args.json && process.stderr.isTTY) process.stderr.write('\n');
  }
  return r;
}

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(p * s.length))] ?? NaN;
};
const stats = (xs: number[]) => ({ p50: pct(xs, 0.5), p99: pct(xs, 0.99), mean: xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length), max: Math.max(...xs) });

/**
 * Every pass's check again after the replay, each the best of 3 runs, in CPU time: the
 * checker's own cost, without the replay's garbage collections or other processes' load in
 * it (wall-clock figures on a shared machine swing with both).
 */
function warm(pairs: [string, GroundingSource[]][], context: boolean): ReturnType<typeof stats> {
  for (const [t, s] of pairs) checkGrounding(t, s, { context });
  const xs = pairs.map(([t, s]) => {
    let best = Infinity;
    for (let round = 0; round < 3; round++) {
      const c0 = process.cpuUsage();
      checkGrounding(t, s, { context });
      const c = process.cpuUsage(c0);
      best = Math.min(best, c.user + c.system);
    }
    return best;
  });
  return stats(xs);
}

async function main(): Promise<void> {
  let turns = parseTranscript(readText(args.file));
  if (args.limit !== undefined) turns = turns.slice(0, Number(args.limit));
  const plain = await run(turns, false);
  const shifted = await run(turns, true);
  const mode = (context: boolean) => {
    const p = context ? plain.context : plain.valueOnly;
    const s = context ? shifted.context : shifted.valueOnly;
    return {
      falseAlarms: p.falseAlarms.length,
      shiftedFlagged: s.flagged,
      faithfulFlaggedInShiftedReplay: s.falseAlarms.length,
      costUsInReplay: stats(p.costsUs),
      cpuUsInReplay: stats(p.cpuUs),
      cpuUsWarm: warm(plain.pairs, context),
      examples: { falseAlarms: p.falseAlarms.slice(0, 10), missed: s.missed.slice(0, 40), faithfulFlaggedInShiftedReplay: s.falseAlarms.slice(0, 10) },
    };
  };
  const out = {
    file: args.file,
    turns: turns.length,
    budgetTokens: Number(args.budget),
    keepRecentTurns: Number(args['keep-recent']),
    passes: plain.passes,
    shiftedPasses: shifted.passes,
    shifted: shifted.shifted,
    replaySeconds: { default: plain.seconds, shifted: shifted.seconds },
    sourceChars: { p50: pct(plain.sourceChars, 0.5), p99: pct(plain.sourceChars, 0.99), max: Math.max(...plain.sourceChars) },
    context: mode(true),
    valueOnly: mode(false),
  };
  // A whole-transcript run is the figure the docs cite: written with the machine and command.
  if (args.limit === undefined && args.file === DEFAULT_FILE) {
    const results = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'bench', 'results', 'grounding.json');
    const { examples: _a, ...context } = out.context;
    const { examples: _b, ...valueOnly } = out.valueOnly;
    fs.writeFileSync(results, JSON.stringify({ machine: machine(), command: 'npx tsc -p tsconfig.bench.json && node build/bench-dist/bench/grounding.bench.js', ...out, context, valueOnly }, null, 2) + '\n');
  }
  if (args.json) {
    console.log(JSON.stringify(out, null, 2));
  } else {
    const f = (n: number) => n.toFixed(0);
    console.log(`summary grounding over ${out.turns} turns of ${path.basename(path.dirname(args.file))} (budget ${out.budgetTokens}, the last ${out.keepRecentTurns} turns kept)`);
    console.log(`  ${out.passes} passes (replay ${plain.seconds.toFixed(1)} s); sources per pass p50 ${out.sourceChars.p50} chars, p99 ${out.sourceChars.p99}, max ${out.sourceChars.max}`);
    console.log(`  shifting replay: ${out.shifted} of ${out.shiftedPasses} summaries shifted (replay ${shifted.seconds.toFixed(1)} s)`);
    for (const [name, m] of [['values beside their words (default)', out.context], ['values alone (context: false)', out.valueOnly]] as const) {
      console.log(`  ${name}:`);
      console.log(`    default summarizer: ${m.falseAlarms} of ${out.passes} passes flagged (false alarms; target 0)`);
      console.log(`    shifting summarizer: ${m.shiftedFlagged} of ${out.shifted} shifted summaries flagged (target all); ${m.faithfulFlaggedInShiftedReplay} of its ${out.shiftedPasses - out.shifted} faithful passes flagged`);
      console.log(`    checkGrounding per pass: CPU time, best of 3 after the replay p50 ${f(m.cpuUsWarm.p50)} µs, p99 ${f(m.cpuUsWarm.p99)} µs (max ${f(m.cpuUsWarm.max)});`);
      console.log(`      in the replay: CPU p50 ${f(m.cpuUsInReplay.p50)} µs, p99 ${f(m.cpuUsInReplay.p99)} µs; wall p50 ${f(m.costUsInReplay.p50)} µs, p99 ${f(m.costUsInReplay.p99)} µs (max ${f(m.costUsInReplay.max)})`);
      for (const a of m.examples.falseAlarms) console.log(`    false alarm, pass ${a.pass} (turns ${a.turns}): ${JSON.stringify(a.ungrounded)}\n${a.summary.replace(/^/gm, '        ')}`);
      for (const a of m.examples.missed) console.log(`    missed shift, pass ${a.pass} (turns ${a.turns}): ${a.line}\n${(a.stated ?? []).map((x) => `        stated: ${x}`).join('\n')}`);
      for (const a of m.examples.faithfulFlaggedInShiftedReplay) console.log(`    faithful pass flagged in the shifting replay, pass ${a.pass} (turns ${a.turns}): ${JSON.stringify(a.ungrounded)}`);
    }
  }
  process.exitCode = out.context.falseAlarms === 0 && out.context.faithfulFlaggedInShiftedReplay === 0 ? 0 : 1;
}

await main();
