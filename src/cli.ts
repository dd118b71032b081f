#!/usr/bin/env node
/**
 * The `spanguard` command line. Every command has `--help`; `--json` prints machine-readable
 * output; colours only on a TTY; `--version` prints the package version. Exit codes:
 *   0 ok · 1 error · 2 usage (a bad option, or a file or store argument that does not exist)
 *   3 verify: log corruption · 4 verify: a damaged index file or log/index disagreement
 *   5 verdict/audit: not lossless · 6 verify --remote: the bucket and the local log differ
 *   65 malformed input (a line number is printed)
 * Errors print one line, prefixed `spanguard <command>:`; a stack trace only for an internal
 * error under SPANGUARD_DEBUG=1.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { SpanStore } from './store.js';
import { SpanguardError } from './errors.js';
import { packageRoot, RecordKind } from './native.js';
import { readQuestions, readTranscript, TRANSCRIPT_FORMATS, TranscriptError, type Question, type Transcript, type TranscriptFormat } from './transcript.js';
import { replay, type QuestionOutcome, type ReplayReport } from './replay.js';
import { renderHtml, verdictMeaning } from './report.js';
import type { Hit, SearchOptions, SearchResult } from './store.js';
import type { Support } from './support.js';
import { checkRemote } from './replica/cli.js';

const EXIT = { ok: 0, error: 1, usage: 2, corrupt: 3, disagree: 4, notLossless: 5, remote: 6, badInput: 65 } as const;
const tty = process.stdout.isTTY === true;
const c = (code: number, s: string) => (tty ? `\x1b[${code}m${s}\x1b[0m` : s);
const bold = (s: string) => c(1, s);
const stateColor = (s: string) => (s === 'lossless' ? c(32, s) : s === 'unknown' ? c(33, s) : c(31, s));

/** A bad command line, or a named file or store that does not exist: exit 2. Messages do not name the command; main() prefixes it. */
class UsageError extends Error {}
/** Input that cannot be read as a transcript or questions file (not gzip, truncated): exit 65. */
class InputError extends Error {}

/** The version in the package.json shipped beside dist/. */
function packageVersion(): string {
  return (JSON.parse(fs.readFileSync(path.join(packageRoot, 'package.json'), 'utf8')) as { version: string }).version;
}

export const HELP: Record<string, string> = {
  main: `spanguard — lossless retrieval guard for long agent transcripts

Usage: spanguard <command> [options]
       spanguard --version

Commands:
  replay <transcript.jsonl[.gz]> --store DIR [--budget N] [--format F] [--questions Q.jsonl]
                         stream a transcript (spanguard turns, chat messages, a Claude
                         Code session or a Codex rollout) through a budgeted context window
  replay --sample        replay the bundled sample (what \`npm start\` runs)
  search DIR "query"     hybrid search (exact + BM25 + vector): who said it, when,
                         what of the query each hit holds, or "not in transcript" and why
  exact DIR "phrase"     every raw span containing the phrase verbatim
  verdict DIR [--explain] the verdict, its reasons and evidence
  audit DIR [--full]     run an audit now (takes the writer lock)
  verify DIR             checksums of every log and index file, log/index agreement
  stats DIR              counts, sizes, SIMD
  report DIR --html out.html  a self-contained HTML report with charts
  mcp --store DIR        serve the store to an agent host over MCP (stdio)

Every command takes --help (-h) and --json. Exit codes: 0 ok, 1 error, 2 usage (also a
file or store named that does not exist), 3 log corruption, 4 a damaged index file or
log/index disagreement, 5 not lossless, 65 malformed input.`,
  replay: `Usage: spanguard replay <transcript.jsonl[.gz]> --store DIR [options]
       spanguard replay --sample [options]

Streams a transcript through a ContextWindow over a SpanStore and prints a report.
The file (plain or gzip; a pipe or a device too) is read a line at a time and checked whole
first: a malformed line — not JSON, not of the format, a line over 64 MiB, a text over
16 MiB, a cut or garbled .gz — exits 65 with its line number, nothing written. Messages
never quote the file.

Options:
  --format F           auto (default) | spanguard | claude-code | codex. auto tells them
                       apart by the first lines. spanguard: JSONL of {turn, role, text}
                       or OpenAI chat messages {role, content}; claude-code: a Claude Code
                       session (~/.claude/projects/*/<session>.jsonl); codex: a Codex CLI
                       rollout (~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl). What each
                       keeps and skips: docs/importers.md
  --store DIR          directory to create the store in (must not already hold one);
                       with --sample, a fresh temp directory when omitted
  --budget N           window budget in tokens (default 32000)
  --questions FILE     JSONL of {question, answer, evidence_turns, category?, session?} to ask
                       after the replay through ContextWindow.recall. answer null with
                       evidence_turns [] is a question the transcript does not answer: it
                       counts as an honest miss when recall says "not in transcript".
                       Questions naming another session than the transcript's are skipped,
                       as are those with evidence past its last turn; an evidence turn
                       within its turns that no line holds exits 65.
  --keep-recent N      turns never evicted at the end of the window (default 8)
  --policy P           refuse | spill (default refuse)
  --durability D       sync | group | none (default none: a replay re-reads a transcript that
                       already exists; the log is flushed and fsynced at close)
  --limit N            replay only the first N turns
  --html FILE          also write the HTML report
  --sample             replay the bundled sample (samples/miniswe-slice) and ask its questions
  --json               print the report as JSON`,
  search: `Usage: spanguard search DIR "query" [options]

Each hit: span id, kind, turns, speaker (or role), time (ISO 8601), via, score, then what of
the query it holds: terms matched/asked, values (numbers, identifiers with digits, quoted
parts: ✓ held, ✗ missing, contradicted), names, who said it, the time asked about.
A miss prints: not in transcript (<reason>: <what was looked for>).

Options:
  --k N                hits to return (default 10)
  --kinds raw,summary  namespaces to search (default raw)
  --turns A-B          only spans overlapping turns A..B
  --speaker NAME       only spans said by NAME (a speaker or a role); repeat for several
  --since ISO-DATE     only spans at or after this time (2024-05-01 or 2024-05-01T12:00:00Z)
  --until ISO-DATE     only spans at or before this time (a date alone: through its end, UTC)
  --json               the whole result: hits with their support, miss, missReason, missDetail`,
  exact: `Usage: spanguard exact DIR "phrase" [--limit N] [--json]
Every raw span that contains the phrase verbatim, or "not in transcript".

Options:
  --limit N            at most N spans (default 1000)`,
  verdict: `Usage: spanguard verdict DIR [--explain] [--json]
Exits 5 when the verdict is not lossless.`,
  audit: `Usage: spanguard audit DIR [--full] [--json]
Runs an audit now and records it. Needs the writer lock. Exits 5 when it fails.

Options:
  --full               check 16 times the usual sample of anchors and evicted spans (at least 512)`,
  verify: `Usage: spanguard verify DIR [--remote s3://BUCKET/PREFIX] [--json]
Checks every checksum of every file: each record of every log segment; the lexical index
(header and body CRC, structure); vectors.bin (header and every record's CRC); the vector
snapshots (header and payload CRC); identity.json (which store, log history and file
contents the indexes were built from). Then checks, id by id, that the indexes hold exactly
the log's spans. Read-only: nothing is repaired (a writer's next open rebuilds a damaged index
from the log and records it).
Exit 0: everything checks · 3: log corruption (file and byte offset printed) · 4: an index
file damaged, missing or not this store's, or the indexes disagree with the log.
--remote: also compares the local log with the replica's manifest and every object it names
(size, CRC32C, the local bytes); endpoint and keys from SPANGUARD_S3_ENDPOINT,
SPANGUARD_S3_ACCESS_KEY, SPANGUARD_S3_SECRET_KEY. Exit 6 when they differ.`,
  stats: `Usage: spanguard stats DIR [--json]
Span counts, next id, bytes on disk, passes, evictions, anchors, the SIMD level, index sizes.`,
  report: `Usage: spanguard report DIR --html out.html [--json]
Writes one self-contained HTML page: window tokens against the budget, hit rate and
evictions per pass, the verdict timeline.`,
};

type OptionSpec = Record<string, { type: 'string' | 'boolean'; multiple?: boolean }>;

/** The options each command takes besides --help and --json (every command takes those two). */
export const OPTIONS: Record<string, OptionSpec> = {
  replay: {
    store: { type: 'string' },
    format: { type: 'string' },
    budget: { type: 'string' },
    questions: { type: 'string' },
    'keep-recent': { type: 'string' },
    policy: { type: 'string' },
    durability: { type: 'string' },
    limit: { type: 'string' },
    html: { type: 'string' },
    sample: { type: 'boolean' },
  },
  search: {
    k: { type: 'string' },
    kinds: { type: 'string' },
    turns: { type: 'string' },
    speaker: { type: 'string', multiple: true },
    since: { type: 'string' },
    until: { type: 'string' },
  },
  exact: { limit: { type: 'string' } },
  verdict: { explain: { type: 'boolean' } },
  audit: { full: { type: 'boolean' } },
  verify: { remote: { type: 'string' } },
  stats: {},
  report: { html: { type: 'string' } },
};
type Parsed = { values: Record<string, string | boolean | string[] | undefined>; positionals: string[] };

/**
 * Parses a command's arguments: its options, --help (or -h), --json and at most `maxPositionals`
 * arguments. A word past those is refused rather than ignored (an unquoted query of several
 * words would otherwise be searched by its first word alone). parseArgs' own messages span
 * lines; they are joined into one.
 */
function parse(argv: string[], options: OptionSpec, maxPositionals: number): Parsed {
  let r: ReturnType<typeof parseArgs>;
  try {
    r = parseArgs({ args: argv, options: { help: { type: 'boolean', short: 'h' }, json: { type: 'boolean' }, ...options }, allowPositionals: true, strict: true });
  } catch (e) {
    throw new UsageError((e as Error).message.replace(/\s*\n\s*/g, ' '));
  }
  const values = r.values as Parsed['values'];
  if (!values.help && r.positionals.length > maxPositionals) {
    const extra = r.positionals[maxPositionals]!;
    throw new UsageError(
      `unexpected argument ${JSON.stringify(extra.length > 60 ? `${extra.slice(0, 60)}…` : extra)}` +
        (maxPositionals === 2 ? ' (quote a query or phrase of several words)' : ''),
    );
  }
  return { values, positionals: r.positionals };
}

function intOpt(v: unknown, name: string, dflt: number): number {
  if (v === undefined) return dflt;
  const n = Number(v);
  if (!Number.isInteger(n) || n <= 0) throw new UsageError(`--${name} must be a positive integer, got ${String(v)}`);
  return n;
}

const print = (json: boolean, value: unknown, text: () => string) => console.log(json ? JSON.stringify(value, null, 2) : text());

function needDir(pos: string[], cmd: string): string {
  const dir = pos[0];
  if (!dir) throw new UsageError(`missing DIR\n${HELP[cmd]}`);
  return dir;
}

/**
 * A transcript or questions file named on the command line must exist and not be a
 * directory; a pipe or a device is read like a file (readLines streams it).
 */
function checkInput(file: string, what: string): void {
  let st: fs.Stats;
  try {
    st = fs.statSync(file);
  } catch {
    throw new UsageError(`${what} ${file} does not exist`);
  }
  if (st.isDirectory()) throw new UsageError(`${what} ${file} is a directory`);
}

/** Parses a named input file; a malformed line is reported as the file's, by name and line. */
async function readInput<T>(file: string, what: string, read: (file: string) => Promise<T>): Promise<T> {
  try {
    return await read(file);
  } catch (e) {
    if (e instanceof TranscriptError) throw new InputError(`${what} ${file}: ${e.message}`);
    throw e;
  }
}

async function cmdReplay(argv: string[]): Promise<number> {
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
function needStore(dir: string): string {
  if (!fs.existsSync(dir)) throw new UsageError(`${dir} does not exist`);
  if (!fs.existsSync(path.join(dir, 'log'))) throw new UsageError(`${dir} is not a spanguard store (no log/ directory)`);
  return dir;
}

async function openReadOnly(dir: string): Promise<SpanStore> {
  return SpanStore.open(needStore(dir), { readOnly: true });
}

/** Opens `dir` read-only for one command and always closes it. */
async function withReadOnly<T>(dir: string, fn: (store: SpanStore) => Promise<T> | T): Promise<T> {
  const store = await openReadOnly(dir);
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}

async function cmdSearch(argv: string[]): Promise<number> {
  const { values: v, positionals: pos } = parse(argv, OPTIONS.search!, 2);
  if (v.help) return (console.log(HELP.search), EXIT.ok);
  const dir = needDir(pos, 'search');
  const query = pos[1];
  if (query === undefined) throw new UsageError(`missing the query\n${HELP.search}`);
  const kinds = ((v.kinds as string | undefined) ?? 'raw').split(',') as ('raw' | 'summary')[];
  if (kinds.some((k) => k !== 'raw' && k !== 'summary')) throw new UsageError(`--kinds takes raw, summary or raw,summary, got ${JSON.stringify(v.kinds)}`);
  const options: SearchOptions = { k: intOpt(v.k, 'k', 10), kinds };
  if (v.turns !== undefined) {
    const m = /^(\d+)-(\d+)$/.exec(v.turns as string);
    if (!m) throw new UsageError('--turns must look like 100-200');
    options.turns = [Number(m[1]), Number(m[2])];
  }
  const speakers = (v.speaker as string[] | undefined) ?? [];
  if (speakers.some((x) => x.trim().length === 0)) throw new UsageError('--speaker needs a name');
  if (speakers.length > 0) options.speaker = speakers.length === 1 ? speakers[0]! : speakers;
  if (v.since !== undefined || v.until !== undefined) {
    const from = v.since === undefined ? Number.NEGATIVE_INFINITY : isoTime(v.since as string, 'since', 'start');
    const to = v.until === undefined ? Number.POSITIVE_INFINITY : isoTime(v.until as string, 'until', 'end');
    if (from > to) throw new UsageError('--since is after --until');
    options.time = [from, to];
  }
  return withReadOnly(dir, async (store) => {
    const r = await store.search(query, options);
    const filters = [
      ...(options.turns ? [`turns ${options.turns[0]}–${options.turns[1]}`] : []),
      ...(speakers.length > 0 ? [`said by ${speakers.join(' or ')}`] : []),
      ...(v.since !== undefined ? [`since ${v.since as string}`] : []),
      ...(v.until !== undefined ? [`until ${v.until as string}`] : []),
    ];
    print(v.json === true, r, () => formatSearch(r, filters));
    return EXIT.ok;
  });
}

/**
 * An ISO 8601 date or date-time as ms since the epoch. A date alone is a whole UTC day: its
 * start for --since, its last millisecond for --until. A date-time without a zone is local
 * time (as JavaScript reads it).
 */
function isoTime(s: string, name: string, edge: 'start' | 'end'): number {
  const dateOnly = /^\d{4}-\d{2}-\d{2}$/.test(s);
  const ms = /^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$/.test(s) ? Date.parse(s) : Number.NaN;
  if (Number.isNaN(ms)) throw new UsageError(`--${name} must be an ISO 8601 date or date-time (2024-05-01, 2024-05-01T12:00:00Z), got ${JSON.stringify(s.slice(0, 40))}`);
  return dateOnly && edge === 'end' ? ms + 86_400_000 - 1 : ms;
}

/** `filters`: the --turns/--speaker/--since/--until in effect, named on a miss (it is a miss among those spans only). */
function formatSearch(r: SearchResult, filters: string[] = []): string {
  const out: string[] = [];
  if (r.verdict !== 'lossless') out.push(c(31, `verdict ${r.verdict}: ${verdictMeaning(r.verdict)}`));
  if (r.miss)
    out.push(
      `not in transcript${r.missReason ? ` (${r.missReason}${r.missDetail ? `: ${r.missDetail}` : ''})` : ''}` +
        (filters.length > 0 ? ` — among spans ${filters.join(', ')} only` : ''),
    );
  for (const h of r.hits) out.push(formatHit(h));
  if (!r.miss && r.hits.length === 0) out.push('no hits');
  if (r.verdict === 'lossless') out.push(c(2, `verdict lossless: ${verdictMeaning('lossless')}`));
  return out.join('\n');
}

function formatHit(h: Hit): string {
  const who = h.speaker ?? h.role;
  const when = h.timestamp !== undefined && Number.isFinite(h.timestamp) ? new Date(h.timestamp).toISOString() : undefined;
  const head = [
    `${bold(`span ${h.spanId}`)} ${h.kind} turns ${h.turnStart}–${h.turnEnd}`,
    ...(who ? [who] : []),
    ...(when ? [when] : []),
    `via ${h.via}`,
    `score ${h.score.toFixed(4)}`,
    ...(h.superseded ? ['superseded'] : []),
  ].join(' · ');
  const support = h.support ? `\n  ${supportSummary(h.support)}` : '';
  return `${head}${support}\n${indent(clip(h.text))}`;
}

/** One line: `terms 4/6 · values ✓ 40 req/s · names ✓ BookMinder · said by user`. */
export function supportSummary(s: Support): string {
  const parts: string[] = [`terms ${s.terms.matched.length}/${s.terms.matched.length + s.terms.missing.length}`];
  const held = (matched: string[], missing: string[]) =>
    [...(matched.length > 0 ? [`✓ ${matched.join(', ')}`] : []), ...(missing.length > 0 ? [`✗ ${missing.join(', ')}`] : [])].join(' ');
  if (s.values.matched.length + s.values.missing.length > 0 || s.values.contradicted)
    parts.push(`values ${held(s.values.matched, s.values.missing)}${s.values.contradicted ? `${s.values.matched.length + s.values.missing.length > 0 ? ' ' : ''}contradicted` : ''}`);
  if (s.names.matched.length + s.names.missing.length > 0) parts.push(`names ${held(s.names.matched, s.names.missing)}`);
  if (s.speaker) parts.push(`said by ${s.speaker.said}${s.speaker.match ? '' : ` ✗ asked ${s.speaker.asked}`}`);
  if (s.time) parts.push(`time ${s.time.match ? '✓' : '✗'} ${s.time.asked}`);
  if (s.values.matched.length + s.values.missing.length > 0) parts.push(s.claim ? 'holds the claim' : 'not the whole claim');
  return parts.join(' · ');
}

async function cmdExact(argv: string[]): Promise<number> {
  const { values: v, positionals: pos } = parse(argv, OPTIONS.exact!, 2);
  if (v.help) return (console.log(HELP.exact), EXIT.ok);
  const dir = needDir(pos, 'exact');
  const phrase = pos[1];
  if (!phrase) throw new UsageError(`missing the phrase\n${HELP.exact}`);
  return withReadOnly(dir, async (store) => {
    const hits = store.findExact(phrase, { limit: intOpt(v.limit, 'limit', 1000) });
    print(v.json === true, { hits, miss: hits.length === 0, verdict: store.verdict().state }, () =>
      hits.length === 0 ? 'not in transcript' : hits.map((h) => `${bold(`span ${h.spanId}`)} turns ${h.turnStart}–${h.turnEnd}\n${indent(clip(h.text))}`).join('\n'),
    );
    return EXIT.ok;
  });
}

async function cmdVerdict(argv: string[]): Promise<number> {
  const { values: v, positionals: pos } = parse(argv, OPTIONS.verdict!, 1);
  if (v.help) return (console.log(HELP.verdict), EXIT.ok);
  const dir = needDir(pos, 'verdict');
  return withReadOnly(dir, async (store) => {
    const verdict = store.verdict();
    const events = v.explain ? store.events() : [];
    print(v.json === true, v.explain ? { ...verdict, events } : verdict, () => {
      const out = [`verdict: ${stateColor(verdict.state)}  (passes ${verdict.passes}, ${verdict.compactionsSinceAudit} since the last passing audit)`];
      for (const r of verdict.reasons) out.push(`  - ${r}`);
      if (v.explain) {
        out.push('', bold('evidence'));
        for (const e of verdict.evidence) out.push(`  event ${e.eventId} (${e.type}): ${e.summary}`);
        out.push('', bold('event trail'));
        const interesting = events.filter((e) => e.event.type !== 'pass' && e.event.type !== 'pin');
        const passes = events.length - interesting.length;
        out.push(`  ${passes} accepted pass/pin event(s) not listed`);
        for (const e of interesting.slice(-50)) out.push(`  event ${e.id}: ${JSON.stringify(e.event).slice(0, 240)}`);
      }
      return out.join('\n');
    });
    return verdict.state === 'lossless' ? EXIT.ok : EXIT.notLossless;
  });
}

async function cmdAudit(argv: string[]): Promise<number> {
  const { values: v, positionals: pos } = parse(argv, OPTIONS.audit!, 1);
  if (v.help) return (console.log(HELP.audit), EXIT.ok);
  const dir = needStore(needDir(pos, 'audit'));
  const store = await SpanStore.open(dir, {});
  try {
    const report = await store.audit({ full: v.full === true });
    const verdict = store.verdict();
    print(v.json === true, { audit: report, verdict }, () =>
      [
        `audit: ${report.passed ? c(32, 'passed') : c(31, 'FAILED')} — ${report.checked} fact(s) checked, ${report.sampledEvicted} evicted span(s) sampled`,
        ...report.failures.slice(0, 20).map((f) => `  span ${f.spanId}: ${f.why}: ${JSON.stringify(f.fact.slice(0, 80))}`),
        `verdict: ${stateColor(verdict.state)}`,
      ].join('\n'),
    );
    return report.passed && verdict.state === 'lossless' ? EXIT.ok : EXIT.notLossless;
  } finally {
    await store.close();
  }
}

async function cmdVerify(argv: string[]): Promise<number> {
  const { values: v, positionals: pos } = parse(argv, OPTIONS.verify!, 1);
  if (v.help) return (console.log(HELP.verify), EXIT.ok);
  const dir = needDir(pos, 'verify');
  let store: SpanStore;
  try {
    store = await openReadOnly(dir);
  } catch (e) {
    // A store opens over any damage to its derived files (they are rebuilt from the log), so
    // a CorruptionError at open is the log's.
    if (e instanceof SpanguardError && e.code === 'CORRUPT') {
      print(v.json === true, { ok: false, corrupt: true, message: e.message, ...e.details }, () => `${c(31, 'CORRUPT')}: ${e.message}`);
      return EXIT.corrupt;
    }
    throw e;
  }
  try {
    const log = store.log.verify();
    // Ids only: counting needs no text copied out of the log.
    const first = store.log.firstId();
    const next = store.log.nextId();
    const counts = {
      raw: store.log.scanIds(first, next - first, 1 << RecordKind.raw, 0).length,
      summary: store.log.scanIds(first, next - first, 1 << RecordKind.summary, 0).length,
    };
    // Every index file was checked as the store opened: lexical.idx (header and body CRC,
    // structure), vectors.bin (header and every record's CRC), each snapshot (header and
    // payload CRC), identity.json (the store, log history and file contents the indexes
    // were built from). What failed, a reader rebuilt in memory and reports here.
    const indexFiles = store.derivedProblems;
    // Id by id: every raw and summary span of the log in both indexes, nothing else.
    const disagreements = await store.verifyIndexes();
    const indexOk = indexFiles.length === 0 && disagreements.length === 0;
    const remote = typeof v.remote === 'string' ? await checkRemote(dir, v.remote) : undefined;
    const ok = log.ok && indexOk && (remote?.ok ?? true);
    print(v.json === true, { ok, log, counts, indexFiles, disagreements, ...(remote ? { remote: { ...remote, localNextId: next } } : {}) }, () =>
      [
        `log: ${log.ok ? c(32, 'ok') : c(31, 'CORRUPT')} — ${log.records} records, ${log.bytes} bytes CRC-checked`,
        ...log.problems.map((p) => `  ${p.outcome} at ${p.file} offset ${p.offset}: ${p.message}`),
        `index files: ${indexFiles.length === 0 ? c(32, 'ok') : c(31, 'DAMAGED')} — lexical.idx, vectors.bin, snapshots and identity.json checked`,
        ...indexFiles.map((p) => `  ${p.index}: ${p.reason}`),
        `indexes: ${disagreements.length === 0 ? c(32, 'agree with the log') : c(31, 'DISAGREE')}`,
        ...disagreements.map((d) => `  ${d}`),
        ...(remote
          ? [
              `remote ${remote.remote}: ${remote.ok ? c(32, 'ok') : c(31, 'DIFFERS')} — ${remote.objects} objects checked, shipped through id ${remote.shippedThroughId}, local next id ${next}`,
              ...remote.problems.map((p) => `  ${p}`),
            ]
          : []),
      ].join('\n'),
    );
    return !log.ok ? EXIT.corrupt : !indexOk ? EXIT.disagree : remote && !remote.ok ? EXIT.remote : EXIT.ok;
  } finally {
    await store.close();
  }
}

async function cmdStats(argv: string[]): Promise<number> {
  const { values: v, positionals: pos } = parse(argv, OPTIONS.stats!, 1);
  if (v.help) return (console.log(HELP.stats), EXIT.ok);
  return withReadOnly(needDir(pos, 'stats'), async (store) => {
    const s = store.stats();
    print(v.json === true, s, () =>
      [
        `spans       raw ${s.spans.raw}, summary ${s.spans.summary}, event ${s.spans.event}`,
        `next id     ${s.nextId}`,
        `on disk     ${s.bytesOnDisk} bytes (${(s.bytesOnDisk / 1048576).toFixed(1)} MiB)`,
        `passes      ${s.passes}, evicted ${s.evicted}, anchors ${s.anchors}`,
        `SIMD        ${s.simd}`,
        `lexical     ${JSON.stringify(s.lexical)}`,
        `vector      ${JSON.stringify(s.vector)}`,
      ].join('\n'),
    );
    return EXIT.ok;
  });
}

async function writeReport(dir: string, out: string): Promise<void> {
  return withReadOnly(dir, async (store) => {
    const file = path.join(dir, 'replay-report.json');
    const replayReport = fs.existsSync(file) ? (JSON.parse(fs.readFileSync(file, 'utf8')) as ReplayReport) : null;
    const html = renderHtml({ dir, stats: store.stats(), verdict: store.verdict(), events: store.events(), replay: replayReport });
    fs.writeFileSync(out, html);
  });
}

async function cmdReport(argv: string[]): Promise<number> {
  const { values: v, positionals: pos } = parse(argv, OPTIONS.report!, 1);
  if (v.help) return (console.log(HELP.report), EXIT.ok);
  const dir = needDir(pos, 'report');
  if (!v.html) throw new UsageError(`--html out.html is required\n${HELP.report}`);
  await writeReport(dir, v.html as string);
  print(v.json === true, { html: v.html }, () => `wrote ${v.html}`);
  return EXIT.ok;
}

const clip = (s: string) => (s.length > 600 ? `${s.slice(0, 600)}… (${s.length} chars)` : s);
const indent = (s: string) => s.replace(/^/gm, '    ');

const COMMANDS: Record<string, (argv: string[]) => Promise<number>> = {
  replay: cmdReplay,
  search: cmdSearch,
  exact: cmdExact,
  verdict: cmdVerdict,
  audit: cmdAudit,
  verify: cmdVerify,
  stats: cmdStats,
  report: cmdReport,
  // Loaded on use: the MCP server's module imports the optional MCP SDK.
  mcp: async (argv) => (await import('./mcp.js')).runMcpCommand(argv),
};

export async function main(argv: string[]): Promise<number> {
  const [cmd, ...rest] = argv;
  if (!cmd || cmd === '--help' || cmd === '-h' || cmd === 'help') return (console.log(HELP.main), cmd ? EXIT.ok : EXIT.usage);
  if (cmd === '--version' || cmd === '-v') return (console.log(packageVersion()), EXIT.ok);
  const run = COMMANDS[cmd];
  if (!run) {
    console.error(`spanguard: unknown command "${cmd}"\n\n${HELP.main}`);
    return EXIT.usage;
  }
  try {
    return await run(rest);
  } catch (e) {
    if (e instanceof UsageError) {
      console.error(`spanguard ${cmd}: ${e.message}`);
      return EXIT.usage;
    }
    if (e instanceof TranscriptError || e instanceof InputError) {
      console.error(`spanguard ${cmd}: malformed input: ${e.message}`);
      return EXIT.badInput;
    }
    if (e instanceof SpanguardError) {
      console.error(`spanguard ${cmd}: ${e.code}: ${e.message}`);
      return e.code === 'CORRUPT' ? EXIT.corrupt : EXIT.error;
    }
    // A system error (a file that cannot be read or written, a directory where a file was
    // meant): Node's message names the call and the path.
    const sys = e as NodeJS.ErrnoException;
    if (typeof sys?.code === 'string' && typeof sys.syscall === 'string') {
      console.error(`spanguard ${cmd}: ${sys.message}`);
      return EXIT.error;
    }
    const debug = process.env.SPANGUARD_DEBUG === '1';
    console.error(`spanguard ${cmd}: internal error: ${debug ? ((e as Error)?.stack ?? String(e)) : ((e as Error)?.message ?? String(e))}`);
    if (!debug) console.error('  (SPANGUARD_DEBUG=1 prints the stack trace; please include it when reporting this)');
    return EXIT.error;
  }
}

const invokedDirectly = process.argv[1] && fs.realpathSync(process.argv[1]) === fs.realpathSync(new URL(import.meta.url).pathname);
if (invokedDirectly) {
  main(process.argv.slice(2)).then((code) => {
    process.exitCode = code;
  });
}
