/** `spanguard replay`: a transcript replayed through a context window with the guard, and its report. */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { packageRoot } from '../native.js';
import { readQuestions, readTranscript, TRANSCRIPT_FORMATS, type Question, type Transcript, type TranscriptFormat } from '../transcript.js';
import { replay, type QuestionOutcome, type ReplayReport } from '../replay.js';
import { verdictMeaning } from '../report.js';
import { bold, checkInput, EXIT, InputError, intOpt, parse, print, readInput, stateColor, UsageError } from './common.js';
import { writeReport } from './inspect.js';
import { HELP, OPTIONS } from './help.js';

export async function cmdReplay(argv: string[]): Promise<number> {
  const { values: v, positionals: pos } = parse(argv, OPTIONS.replay!, 1);
  if (v.help) return (console.log(HELP.replay), EXIT.ok);
  let file = pos[0];
  let questionsFile = v.questions as string | undefined;
  let dir = v.store as string | undefined;
  if (v.sample) {
    const sample = path.join(packageRoot, 'samples', 'miniswe-slice');
    file = path.join(sample, 'turns.jsonl.gz');
    questionsFile ??= path.join(sample, 'questions.jsonl');
    dir ??= fs.mkdtempSync(path.join(os.tmpdir(), 'spanguard-sample-'));
  }
  if (!file) throw new UsageError(`missing the transcript file\n${HELP.replay}`);
  if (!dir) throw new UsageError('--store DIR is required');
  if (fs.existsSync(path.join(dir, 'log')) && fs.readdirSync(path.join(dir, 'log')).some((f) => f !== 'LOCK'))
    throw new UsageError(`${dir} already holds a store; replay into a new directory`);
  const policy = v.policy as string | undefined;
  if (policy !== undefined && policy !== 'refuse' && policy !== 'spill') throw new UsageError('--policy must be refuse or spill');
  const format = (v.format as string | undefined) ?? 'auto';
  if (format !== 'auto' && !(TRANSCRIPT_FORMATS as readonly string[]).includes(format))
    throw new UsageError(`--format must be auto, ${TRANSCRIPT_FORMATS.slice(0, -1).join(', ')} or ${TRANSCRIPT_FORMATS.at(-1)}, got ${JSON.stringify(format.slice(0, 40))}`);
  const durability = v.durability as string | undefined;
  if (durability !== undefined && !['sync', 'group', 'none'].includes(durability)) throw new UsageError('--durability must be sync, group or none');
  const json = v.json === true;
  const phaseStart = performance.now();
  const budgetTokens = intOpt(v.budget, 'budget', 32_000);
  const keepRecentTurns = intOpt(v['keep-recent'], 'keep-recent', 8);
  const limit = v.limit === undefined ? undefined : intOpt(v.limit, 'limit', 1);
  checkInput(file, 'transcript');
  if (questionsFile) checkInput(questionsFile, 'questions file');
  const transcript = await readInput(file, 'transcript', (f) => readTranscript(f, format as TranscriptFormat | 'auto'));
  let turns = transcript.turns;
  const input = { format: transcript.format, turns: turns.length, lines: transcript.lines, skippedLines: transcript.skippedLines };
  if (limit !== undefined) turns = turns.slice(0, limit);
  const picked = questionsFile ? pickQuestions(await readInput(questionsFile, 'questions file', readQuestions), turns, questionsFile) : undefined;
  const questions = picked?.questions;
  const parseSeconds = (performance.now() - phaseStart) / 1000;
  const progress = process.stderr.isTTY && !json;
  const report = await replay(dir, turns, {
    budgetTokens,
    keepRecentTurns,
    ...(policy ? { policy: policy as 'refuse' | 'spill' } : {}),
    ...(durability ? { durability: durability as 'sync' | 'group' | 'none' } : {}),
    ...(questions ? { questions } : {}),
    ...(progress
      ? {
          onProgress: (p) => {
            const width = 28;
            const filled = Math.round((p.done / p.total) * width);
            process.stderr.write(
              `\r[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${p.done}/${p.total} turns  ${Math.round(p.turnsPerSecond)} turns/s  passes ${p.passes}  verdict ${p.verdict}   `,
            );
            if (p.done === p.total) process.stderr.write('\n');
          },
        }
      : {}),
  });
  if (v.html) await writeReport(dir, v.html as string);
  const skipped = picked?.skipped;
  print(
    json,
    { ...report, series: undefined, passTurns: undefined, phases: { parseSeconds, ...report.phases }, ...(skipped ? { questionsSkipped: skipped } : {}), store: dir, input },
    () =>
      formatReplay(
        report,
        { dir: dir!, file: file!, input, sample: v.sample === true, keepRecentTurns, createdDir: v.sample === true && v.store === undefined },
        parseSeconds,
        skipped,
      ),
  );
  return EXIT.ok;
}

/**
 * The questions that apply to this transcript: those about its session (when both name
 * one) whose evidence lies within its turns. A question without evidence (not in
 * transcript) applies to any prefix of its session: a prefix states less, never more.
 * An evidence turn within the transcript's turns that no line of it holds is malformed
 * input (the question could never be scored against it), named by line and field.
 */
function pickQuestions(
  all: (Question & { line: number })[],
  turns: { turn: number; turnEnd?: number; meta?: Record<string, unknown> }[],
  file: string,
): { questions: Question[]; skipped: { otherSession: number; pastLastTurn: number } } {
  const lastTurn = turns[turns.length - 1]?.turn ?? 0;
  const sessions = new Set<string>();
  for (const t of turns) if (typeof t.meta?.session === 'string') sessions.add(t.meta.session);
  // Turns never go backwards (parseTranscript), so the first turn ending at or after an
  // evidence turn is the only one that can hold it.
  const holds = (ev: number) => {
    let lo = 0;
    let hi = turns.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((turns[mid]!.turnEnd ?? turns[mid]!.turn) < ev) lo = mid + 1;
      else hi = mid;
    }
    return lo < turns.length && turns[lo]!.turn <= ev;
  };
  const skipped = { otherSession: 0, pastLastTurn: 0 };
  const questions: Question[] = [];
  for (const { line, ...q } of all) {
    if (q.session !== undefined && sessions.size > 0 && !sessions.has(q.session)) {
      skipped.otherSession++;
      continue;
    }
    if (!q.evidenceTurns.every((t) => t <= lastTurn)) {
      skipped.pastLastTurn++;
      continue;
    }
    const missing = q.evidenceTurns.find((t) => !holds(t));
    if (missing !== undefined)
      throw new InputError(`questions file ${file}: questions line ${line}: "evidence_turns" names turn ${missing}, which no line of the transcript holds`);
    questions.push(q);
  }
  return { questions, skipped };
}

/** Where a replay came from and went to, for the report's opening and closing lines. */
interface ReplaySource {
  dir: string;
  file: string;
  /** The transcript as read: its format, its turns (before --limit), its lines and the lines that made no turn. */
  input: Pick<Transcript, 'format' | 'lines' | 'skippedLines'> & { turns: number };
  /** The bundled sample (`--sample`, `npm start`). */
  sample: boolean;
  keepRecentTurns: number;
  /** The store directory is a temp directory the command made. */
  createdDir: boolean;
}

/** How the report names each transcript format. */
const FORMAT_NAMES: Record<TranscriptFormat, string> = {
  spanguard: 'spanguard format',
  'claude-code': 'a Claude Code session',
  codex: 'a Codex CLI rollout',
};

/** Quotes one word for a POSIX shell (single quotes: nothing inside is expanded). */
const shellQuote = (s: string) => (/^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`);

function formatReplay(r: ReplayReport, src: ReplaySource, parseSeconds: number, skipped?: { otherSession: number; pastLastTurn: number }): string {
  const pct = (a: number, b: number) => (b ? `${((100 * a) / b).toFixed(1)}%` : 'n/a');
  const dir = src.dir;
  const what = src.sample
    ? `the bundled sample samples/miniswe-slice: ${r.turns} turns of a real SWE-bench coding-agent session (MIT, see its ATTRIBUTION.md)`
    : `${src.file} (${FORMAT_NAMES[src.input.format]}): ${r.turns < src.input.turns ? `the first ${r.turns} of its ${src.input.turns} turns` : `${r.turns} turns`}` +
      (src.input.skippedLines > 0 ? ` from ${src.input.lines} lines (${src.input.skippedLines} carry no conversation and were skipped)` : '');
  const lines = [
    bold('spanguard replay report'),
    `replayed ${what},`,
    `  through a context window of ${r.budgetTokens} tokens that keeps the last ${src.keepRecentTurns} turns. Each time the`,
    `  window overflowed, its oldest turns were summarized and evicted (a compaction pass); every`,
    `  turn stays verbatim in the store, and the guard checked each pass before accepting it.`,
    '',
    `store              ${dir}`,
    `turns              ${r.turns}`,
    `tokens             ${r.tokens}`,
    `passes             ${r.passes} (re-summarized ${r.resummarized})`,
    `refused / spilled  ${r.refused} / ${r.spilled}`,
    `anchors            ${r.anchors}`,
    `audits run/passed  ${r.audits.run} / ${r.audits.passed}`,
    `verdict            ${stateColor(r.verdict.state)} — ${r.verdict.reasons[0] ?? ''}`,
    `  ${r.verdict.state} means: ${verdictMeaning(r.verdict.state)}`,
    `hit rate per pass  min ${r.hitRate.min?.toFixed(3) ?? 'n/a'}  max ${r.hitRate.max?.toFixed(3) ?? 'n/a'}`,
  ];
  if (r.questions) {
    const q = r.questions;
    const a = q.answerable;
    const n = q.notInTranscript;
    const v = q.neverStatedVariants;
    lines.push(`questions          ${q.total} asked: ${a.total} answerable, ${n.total} not in transcript`);
    if (skipped && (skipped.otherSession > 0 || skipped.pastLastTurn > 0))
      lines.push(`  skipped          ${skipped.otherSession} about another session, ${skipped.pastLastTurn} with evidence past the last turn`);
    if (a.total > 0) {
      lines.push(
        `  evidence found   ${a.evidenceFound}/${a.total} answerable (${pct(a.evidenceFound, a.total)})`,
        `  verbatim answers ${a.verbatim}/${a.total} (${pct(a.verbatim, a.total)}), from an evicted turn ${a.verbatimFromEvicted}`,
        `  false misses     ${a.falseMisses}/${a.total} answerable came back "not in transcript"`,
        ...examples(q.outcomes.filter((o) => o.falseMiss), (o) => `said not in transcript for a question that was answered in turn ${o.evidenceTurns.join(', ')}`),
        `  never-stated variants ${v.missed}/${v.total} of the answers, changed so the transcript never states them, came back "not in transcript"`,
      );
    }
    if (n.total > 0)
      lines.push(
        `  not in transcript: ${n.honestMisses} of ${n.total} answered as not in transcript (honest misses)`,
        ...examples(
          q.outcomes.filter((o) => o.answer === null && !o.honestMiss),
          (o) => `answered from turn ${turnList(o.hitTurns)} a question the transcript does not answer`,
        ),
      );
  }
  lines.push(
    `bytes on disk      ${r.bytesOnDisk} (${(r.bytesOnDisk / 1048576).toFixed(1)} MiB)`,
    `SIMD               ${r.simd}`,
    `time               parse ${parseSeconds.toFixed(1)}s, ingest+compaction ${r.phases.ingestSeconds.toFixed(1)}s, questions ${r.phases.questionsSeconds.toFixed(1)}s, close ${r.phases.closeSeconds.toFixed(1)}s`,
    '',
    bold('what the figures mean'),
    `  passes      compaction passes the window ran; re-summarized: passes that folded older summaries into a new one`,
    `  anchors     turns holding an exact fact (a number with a unit, a limit, a setting); an anchor is evicted`,
    `              only if a search for its own content finds it again`,
    `  refused     anchors whose eviction the guard turned down (not found again), kept verbatim in the window;`,
    `  spilled     the same under --policy spill. 0 / 0: every evicted anchor was found again`,
    `  audits      checks that pinned facts and a sample of evicted turns come back by their own content`,
    `  hit rate    the share of probe searches that return a hit. Half the probes are facts the transcript`,
    `              states (they should hit), half are altered copies it never states (they should miss), so`,
    `              0.500 is the healthy value, not a 50% failure. A rise of more than 15% over one pass marks`,
    `              the store degraded: searches started finding what was never said`,
    '',
    bold('explore the store'),
    ...exploreCommands(r, dir),
  );
  if (src.createdDir) lines.push(`  rm -r ${shellQuote(dir)}    # a temp directory: remove it when done`);
  return lines.join('\n');
}

/**
 * How to run this command line from here: `npx spanguard` where spanguard is installed as a
 * package (npx finds its bin); in a clone of the repository, where npx cannot, `node dist/cli.js`
 * (the path relative to the working directory).
 */
function cliCommand(): string {
  if (packageRoot.split(path.sep).includes('node_modules')) return 'npx spanguard';
  const rel = path.relative(process.cwd(), path.join(packageRoot, 'dist', 'cli.js'));
  return `node ${shellQuote(rel.startsWith('..') ? path.join(packageRoot, 'dist', 'cli.js') : rel)}`;
}

/** Commands to look into the store a replay left, with its real path; a search for the shortest answerable question when there is one. */
function exploreCommands(r: ReplayReport, dir: string): string[] {
  const d = shellQuote(dir);
  const sg = cliCommand();
  const q = r.questions?.outcomes.filter((o) => o.answer !== null).sort((a, b) => a.question.length - b.question.length)[0];
  return [
    `  ${sg} search ${d} ${shellQuote(q?.question ?? 'what you want to find')}`,
    ...(q?.answer ? [`  ${sg} exact ${d} ${shellQuote(q.answer.trim())}`] : []),
    `  ${sg} verdict ${d} --explain`,
    `  ${sg} stats ${d}`,
    `  ${sg} report ${d} --html replay.html`,
  ];
}

/** The first three turn ranges, and how many more. */
const turnList = (ranges: [number, number][]) =>
  ranges.length === 0
    ? '?'
    : ranges
        .slice(0, 3)
        .map(([a, b]) => (a === b ? `${a}` : `${a}–${b}`))
        .join(', ') + (ranges.length > 3 ? ` (+${ranges.length - 3} more)` : '');

/** Up to five outcomes, each as `what: "question"` (the question clipped), and how many more. */
function examples(list: QuestionOutcome[], what: (o: QuestionOutcome) => string): string[] {
  const out = list.slice(0, 5).map((o) => `    ${what(o)}: ${JSON.stringify(o.question.length > 100 ? `${o.question.slice(0, 100)}…` : o.question)}`);
  if (list.length > 5) out.push(`    … and ${list.length - 5} more (--json lists every outcome)`);
  return out;
}

/** An existing store directory, or a usage error (opening a store for writing would create one). */
