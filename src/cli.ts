#!/usr/bin/env node
/**
 * The `spanguard` command line. Every command has `--help`; `--json` prints machine-readable
 * output; colours only on a TTY. Exit codes:
 *   0 ok · 1 error · 2 usage · 3 verify: log corruption · 4 verify: log/index disagreement
 *   5 verdict/audit: not lossless · 65 malformed input (a line number is printed)
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { SpanStore } from './store.js';
import { SpanguardError } from './errors.js';
import { packageRoot, RecordKind } from './native.js';
import { parseQuestions, parseTranscript, readText, TranscriptError, type Question } from './transcript.js';
import { replay, type QuestionOutcome, type ReplayReport } from './replay.js';
import { renderHtml, verdictMeaning } from './report.js';
import type { Hit, SearchOptions, SearchResult } from './store.js';
import type { Support } from './support.js';

const EXIT = { ok: 0, error: 1, usage: 2, corrupt: 3, disagree: 4, notLossless: 5, badInput: 65 } as const;
const tty = process.stdout.isTTY === true;
const c = (code: number, s: string) => (tty ? `\x1b[${code}m${s}\x1b[0m` : s);
const bold = (s: string) => c(1, s);
const stateColor = (s: string) => (s === 'lossless' ? c(32, s) : s === 'unknown' ? c(33, s) : c(31, s));

class UsageError extends Error {}

const HELP: Record<string, string> = {
  main: `spanguard — lossless retrieval guard for long agent transcripts

Usage: spanguard <command> [options]

Commands:
  replay <turns.jsonl[.gz]> --store DIR --budget N [--questions Q.jsonl]
                         stream a transcript through a budgeted context window
  replay --sample        replay the bundled sample (what \`npm start\` runs)
  search DIR "query"     hybrid search (exact + BM25 + vector): who said it, when,
                         what of the query each hit holds, or "not in transcript" and why
  exact DIR "phrase"     every raw span containing the phrase verbatim
  verdict DIR [--explain] the verdict, its reasons and evidence
  audit DIR              run an audit now (takes the writer lock)
  verify DIR             CRC scan of the whole log and log/index agreement
  stats DIR              counts, sizes, SIMD
  report DIR --html out.html  a self-contained HTML report with charts

Every command takes --help and --json. Exit codes: 0 ok, 1 error, 2 usage,
3 log corruption, 4 log/index disagreement, 5 not lossless, 65 malformed input.`,
  replay: `Usage: spanguard replay <turns.jsonl[.gz]> --store DIR --budget N [options]
       spanguard replay --sample [--store DIR]

Streams a transcript through a ContextWindow over a SpanStore and prints a report.
Input: JSONL of {turn, role, text} (shared/data format) or OpenAI chat messages {role, content}.
The whole file is checked first: a malformed line exits 65 with its line number, nothing written.

Options:
  --store DIR          store directory (must not already hold a store unless --append)
  --budget N           window budget in tokens (default 32000)
  --questions FILE     JSONL of {question, answer, evidence_turns, category?, session?} to ask
                       after the replay through ContextWindow.recall. answer null with
                       evidence_turns [] is a question the transcript does not answer: it
                       counts as an honest miss when recall says "not in transcript".
                       Questions naming another session than the transcript's are skipped.
  --keep-recent N      turns never evicted at the end of the window (default 8)
  --policy P           refuse | spill (default refuse)
  --durability D       sync | group | none (default none: a replay re-reads a transcript that
                       already exists; the log is flushed and fsynced at close)
  --limit N            replay only the first N turns
  --html FILE          also write the HTML report
  --sample             use the bundled sample (samples/miniswe-slice) and a fresh temp store
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
  exact: `Usage: spanguard exact DIR "phrase" [--limit N] [--json]`,
  verdict: `Usage: spanguard verdict DIR [--explain] [--json]
Exits 5 when the verdict is not lossless.`,
  audit: `Usage: spanguard audit DIR [--full] [--json]
Runs an audit now and records it. Needs the writer lock. Exits 5 when it fails.`,
  verify: `Usage: spanguard verify DIR [--json]
CRC-checks every record of every segment and checks that the indexes agree with the log.
Exit 0: clean · 3: log corruption (file and byte offset printed) · 4: log/index disagreement.`,
  stats: `Usage: spanguard stats DIR [--json]`,
  report: `Usage: spanguard report DIR --html out.html [--json]`,
};

type OptionSpec = Record<string, { type: 'string' | 'boolean'; multiple?: boolean }>;
type Parsed = { values: Record<string, string | boolean | string[] | undefined>; positionals: string[] };

function parse(argv: string[], options: OptionSpec): Parsed {
  try {
    const r = parseArgs({ args: argv, options: { help: { type: 'boolean' }, json: { type: 'boolean' }, ...options }, allowPositionals: true, strict: true });
    return { values: r.values as Parsed['values'], positionals: r.positionals };
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
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
  if (!dir) throw new UsageError(`${cmd}: missing DIR\n${HELP[cmd]}`);
  return dir;
}

async function cmdReplay(argv: string[]): Promise<number> {
  const { values: v, positionals: pos } = parse(argv, {
    store: { type: 'string' },
    budget: { type: 'string' },
    questions: { type: 'string' },
    'keep-recent': { type: 'string' },
    policy: { type: 'string' },
    durability: { type: 'string' },
    limit: { type: 'string' },
    html: { type: 'string' },
    sample: { type: 'boolean' },
  });
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
  if (!file) throw new UsageError(`replay: missing the transcript file\n${HELP.replay}`);
  if (!dir) throw new UsageError('replay: --store DIR is required');
  if (fs.existsSync(path.join(dir, 'log')) && fs.readdirSync(path.join(dir, 'log')).some((f) => f !== 'LOCK'))
    throw new UsageError(`replay: ${dir} already holds a store; replay into a new directory`);
  const policy = v.policy as string | undefined;
  if (policy !== undefined && policy !== 'refuse' && policy !== 'spill') throw new UsageError('--policy must be refuse or spill');
  const durability = v.durability as string | undefined;
  if (durability !== undefined && !['sync', 'group', 'none'].includes(durability)) throw new UsageError('--durability must be sync, group or none');
  const json = v.json === true;
  const phaseStart = performance.now();
  let turns = parseTranscript(readText(file));
  if (v.limit !== undefined) turns = turns.slice(0, intOpt(v.limit, 'limit', turns.length));
  const picked = questionsFile ? pickQuestions(parseQuestions(readText(questionsFile)), turns) : undefined;
  const questions = picked?.questions;
  const parseSeconds = (performance.now() - phaseStart) / 1000;
  const progress = process.stderr.isTTY && !json;
  const report = await replay(dir, turns, {
    budgetTokens: intOpt(v.budget, 'budget', 32_000),
    keepRecentTurns: intOpt(v['keep-recent'], 'keep-recent', 8),
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
  print(json, { ...report, series: undefined, passTurns: undefined, phases: { parseSeconds, ...report.phases }, ...(skipped ? { questionsSkipped: skipped } : {}), store: dir }, () =>
    formatReplay(report, dir!, parseSeconds, skipped),
  );
  return EXIT.ok;
}

/**
 * The questions that apply to this transcript: those about its session (when both name
 * one) whose evidence lies within its turns. A question without evidence (not in
 * transcript) applies to any prefix of its session: a prefix states less, never more.
 */
function pickQuestions(all: Question[], turns: { turn: number; meta?: Record<string, unknown> }[]): { questions: Question[]; skipped: { otherSession: number; pastLastTurn: number } } {
  const lastTurn = turns[turns.length - 1]?.turn ?? 0;
  const sessions = new Set<string>();
  for (const t of turns) if (typeof t.meta?.session === 'string') sessions.add(t.meta.session);
  const skipped = { otherSession: 0, pastLastTurn: 0 };
  const questions = all.filter((q) => {
    if (q.session !== undefined && sessions.size > 0 && !sessions.has(q.session)) return (skipped.otherSession++, false);
    if (!q.evidenceTurns.every((t) => t <= lastTurn)) return (skipped.pastLastTurn++, false);
    return true;
  });
  return { questions, skipped };
}

function formatReplay(r: ReplayReport, dir: string, parseSeconds: number, skipped?: { otherSession: number; pastLastTurn: number }): string {
  const pct = (a: number, b: number) => (b ? `${((100 * a) / b).toFixed(1)}%` : 'n/a');
  const lines = [
    bold('spanguard replay report'),
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
  );
  return lines.join('\n');
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

async function openReadOnly(dir: string): Promise<SpanStore> {
  if (!fs.existsSync(path.join(dir, 'log'))) throw new UsageError(`${dir} is not a spanguard store (no log/ directory)`);
  return SpanStore.open(dir, { readOnly: true });
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
  const { values: v, positionals: pos } = parse(argv, {
    k: { type: 'string' },
    kinds: { type: 'string' },
    turns: { type: 'string' },
    speaker: { type: 'string', multiple: true },
    since: { type: 'string' },
    until: { type: 'string' },
  });
  if (v.help) return (console.log(HELP.search), EXIT.ok);
  const dir = needDir(pos, 'search');
  const query = pos[1];
  if (query === undefined) throw new UsageError(`search: missing the query\n${HELP.search}`);
  const kinds = ((v.kinds as string | undefined) ?? 'raw').split(',') as ('raw' | 'summary')[];
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
  const { values: v, positionals: pos } = parse(argv, { limit: { type: 'string' } });
  if (v.help) return (console.log(HELP.exact), EXIT.ok);
  const dir = needDir(pos, 'exact');
  const phrase = pos[1];
  if (!phrase) throw new UsageError(`exact: missing the phrase\n${HELP.exact}`);
  return withReadOnly(dir, async (store) => {
    const hits = store.findExact(phrase, { limit: intOpt(v.limit, 'limit', 1000) });
    print(v.json === true, { hits, miss: hits.length === 0, verdict: store.verdict().state }, () =>
      hits.length === 0 ? 'not in transcript' : hits.map((h) => `${bold(`span ${h.spanId}`)} turns ${h.turnStart}–${h.turnEnd}\n${indent(clip(h.text))}`).join('\n'),
    );
    return EXIT.ok;
  });
}

async function cmdVerdict(argv: string[]): Promise<number> {
  const { values: v, positionals: pos } = parse(argv, { explain: { type: 'boolean' } });
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
  const { values: v, positionals: pos } = parse(argv, { full: { type: 'boolean' } });
  if (v.help) return (console.log(HELP.audit), EXIT.ok);
  const dir = needDir(pos, 'audit');
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
  const { values: v, positionals: pos } = parse(argv, {});
  if (v.help) return (console.log(HELP.verify), EXIT.ok);
  const dir = needDir(pos, 'verify');
  let store: SpanStore;
  try {
    store = await openReadOnly(dir);
  } catch (e) {
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
    const lex = store.lexical.stats();
    const vec = store.vector.stats();
    const disagreements: string[] = [];
    if (Number(lex.rawDocs) !== counts.raw) disagreements.push(`lexical index holds ${lex.rawDocs} raw spans, the log ${counts.raw}`);
    if (Number(lex.summaryDocs) !== counts.summary) disagreements.push(`lexical index holds ${lex.summaryDocs} summaries, the log ${counts.summary}`);
    // Empty texts embed to nothing and are not in the vector index, so it may hold fewer.
    if (Number(vec.spansRaw) > counts.raw) disagreements.push(`vector index holds ${vec.spansRaw} raw spans, the log ${counts.raw}`);
    if (store.vector.highWater() > next || store.lexical.highWater() > next)
      disagreements.push(`an index claims ids past the end of the log (next id ${next})`);
    const ok = log.ok && disagreements.length === 0;
    print(v.json === true, { ok, log, counts, disagreements }, () =>
      [
        `log: ${log.ok ? c(32, 'ok') : c(31, 'CORRUPT')} — ${log.records} records, ${log.bytes} bytes CRC-checked`,
        ...log.problems.map((p) => `  ${p.outcome} at ${p.file} offset ${p.offset}: ${p.message}`),
        `indexes: ${disagreements.length === 0 ? c(32, 'agree with the log') : c(31, 'DISAGREE')}`,
        ...disagreements.map((d) => `  ${d}`),
      ].join('\n'),
    );
    return !log.ok ? EXIT.corrupt : disagreements.length > 0 ? EXIT.disagree : EXIT.ok;
  } finally {
    await store.close();
  }
}

async function cmdStats(argv: string[]): Promise<number> {
  const { values: v, positionals: pos } = parse(argv, {});
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
  const { values: v, positionals: pos } = parse(argv, { html: { type: 'string' } });
  if (v.help) return (console.log(HELP.report), EXIT.ok);
  const dir = needDir(pos, 'report');
  if (!v.html) throw new UsageError(`report: --html out.html is required\n${HELP.report}`);
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
};

export async function main(argv: string[]): Promise<number> {
  const [cmd, ...rest] = argv;
  if (!cmd || cmd === '--help' || cmd === '-h' || cmd === 'help') return (console.log(HELP.main), cmd ? EXIT.ok : EXIT.usage);
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
    if (e instanceof TranscriptError) {
      console.error(`spanguard ${cmd}: malformed input: ${e.message}`);
      return EXIT.badInput;
    }
    if (e instanceof SpanguardError) {
      console.error(`spanguard ${cmd}: ${e.code}: ${e.message}`);
      return e.code === 'CORRUPT' ? EXIT.corrupt : EXIT.error;
    }
    console.error(`spanguard ${cmd}: ${(e as Error).stack ?? String(e)}`);
    return EXIT.error;
  }
}

const invokedDirectly = process.argv[1] && fs.realpathSync(process.argv[1]) === fs.realpathSync(new URL(import.meta.url).pathname);
if (invokedDirectly) {
  main(process.argv.slice(2)).then((code) => {
    process.exitCode = code;
  });
}
