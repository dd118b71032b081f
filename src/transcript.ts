/**
 * Transcript input for the command line, read a line at a time: the JSONL of turns used in
 * shared/data (`{turn, role, text, ...}`) and OpenAI-style chat messages (`{role, content}`
 * with tool calls) — the `spanguard` format — and the session files of two coding agents,
 * Claude Code (src/claude-code.ts) and Codex CLI (src/codex.ts). `auto` tells them apart by
 * their first lines. The whole file is parsed and checked before anything is written, so a
 * malformed line is reported with its number and the store is left untouched.
 */
import fs from 'node:fs';
import { Readable, pipeline } from 'node:stream';
import zlib from 'node:zlib';
import { ClaudeCodeReader } from './claude-code.js';
import { CodexReader } from './codex.js';
import { isToolOutput } from './meta.js';
import { badLine, checkTurn, isObject, parseObjectLine, TranscriptError, type TurnReader } from './transcript-line.js';
import type { WindowTurn } from './window.js';

export { MAX_TURN_TEXT_BYTES, TranscriptError } from './transcript-line.js';

/** Longest line of a transcript or questions file, in bytes (after gunzip): longer is malformed input. */
export const MAX_LINE_BYTES = 64 * 1024 * 1024;

/** The transcript formats `replay --format` reads. */
export const TRANSCRIPT_FORMATS = ['spanguard', 'claude-code', 'codex'] as const;
export type TranscriptFormat = (typeof TRANSCRIPT_FORMATS)[number];

/** How many non-empty lines `auto` looks at for one that only one format writes. */
export const DETECT_LINES = 16;

const CODEX_LINE_TYPES = new Set(['session_meta', 'response_item', 'event_msg', 'turn_context', 'compacted']);

/**
 * The format a line belongs to, when it tells: a Codex rollout line is `{type, payload}` with
 * a rollout type; a Claude Code line has a string `type` and a session field (`sessionId`,
 * `uuid`, `leafUuid`, `messageId`) or a `message` object; a spanguard line has no `type` and
 * a `text`, a `turn` or a `role`.
 */
export function detectFormat(obj: Record<string, unknown>): TranscriptFormat | undefined {
  if (typeof obj.type === 'string') {
    if (CODEX_LINE_TYPES.has(obj.type) && isObject(obj.payload)) return 'codex';
    if (['sessionId', 'uuid', 'leafUuid', 'messageId'].some((k) => typeof obj[k] === 'string') || isObject(obj.message)) return 'claude-code';
    return undefined;
  }
  if (typeof obj.text === 'string' || typeof obj.turn === 'number' || typeof obj.role === 'string') return 'spanguard';
  return undefined;
}

function readerFor(format: TranscriptFormat): TurnReader {
  if (format === 'claude-code') return new ClaudeCodeReader();
  if (format === 'codex') return new CodexReader();
  return new SpanguardReader();
}

export function readText(file: string): string {
  const buf = fs.readFileSync(file);
  const gz = buf.length >= 2 && buf[0] === 0x1f && buf[1] === 0x8b;
  return (gz ? zlib.gunzipSync(buf) : buf).toString('utf8');
}

interface OpenAiMessage {
  role?: unknown;
  content?: unknown;
  tool_calls?: unknown;
  tool_call_id?: unknown;
  name?: unknown;
}

function contentText(content: unknown, line: number): string {
  if (content === null || content === undefined) return '';
  if (typeof content === 'string') return content;
  if (Array.isArray(content))
    return content
      .map((part) => {
        if (typeof part === 'string') return part;
        if (part && typeof part === 'object' && typeof (part as { text?: unknown }).text === 'string') return (part as { text: string }).text;
        return '';
      })
      .join('');
  throw badLine(line, '"content" must be a string, an array of parts or null');
}

/** Parses a whole transcript in the spanguard format; throws TranscriptError naming the first bad line. */
export function parseTranscript(text: string): WindowTurn[] {
  const reader = new SpanguardReader();
  const turns: WindowTurn[] = [];
  text.split('\n').forEach((line, i) => {
    const raw = line.trim();
    if (raw.length > 0) turns.push(...reader.line(parseObjectLine(raw, i + 1), i + 1));
  });
  return turns;
}

/** A transcript read whole, the format it was read as, and how many of its lines made no turn. */
export interface Transcript {
  format: TranscriptFormat;
  turns: WindowTurn[];
  /** Non-empty lines read. */
  lines: number;
  /** Non-empty lines that made no turn: lines of the format that carry no conversation (docs/importers.md). */
  skippedLines: number;
}

/**
 * Reads a transcript file (gzip or plain, streamed a line at a time: see readLines) in
 * `format`, or in the format its first lines show (`auto`, the default). `auto` decides on
 * the first of the first DETECT_LINES non-empty lines that only one format writes; a file
 * whose lines never tell is malformed at its first line. An empty file is an empty
 * `spanguard` transcript.
 */
export async function readTranscript(file: string, format: TranscriptFormat | 'auto' = 'auto'): Promise<Transcript> {
  const turns: WindowTurn[] = [];
  const info: TranscriptInfo = { format: 'spanguard', lines: 0, skippedLines: 0 };
  for await (const t of readTurns(file, format, info)) turns.push(t);
  return { ...info, turns };
}

/** What readTurns learned of a file: its format and how many lines carried no conversation. */
export interface TranscriptInfo {
  format: TranscriptFormat;
  lines: number;
  skippedLines: number;
}

/**
 * The turns of a transcript file — spanguard JSONL or chat messages, a Claude Code session, a
 * Codex CLI rollout; gzip or plain — one at a time, in constant memory (a line at a time; `auto`
 * holds at most its first DETECT_LINES lines). Each turn is ready for `ContextWindow.push`.
 * A malformed line is a `TranscriptError` (code `INVALID_ARGUMENT`, `details.line`) naming the
 * line and field, never the file's contents; the turns before it have been yielded. `info`,
 * when given, is filled in as the file is read.
 */
export async function* readTurns(file: string, format: TranscriptFormat | 'auto' = 'auto', info: TranscriptInfo = { format: 'spanguard', lines: 0, skippedLines: 0 }): AsyncGenerator<WindowTurn> {
  let reader = format === 'auto' ? undefined : readerFor(format);
  if (format !== 'auto') info.format = format;
  const take = (r: TurnReader, obj: Record<string, unknown>, line: number) => {
    const made = r.line(obj, line);
    if (made.length === 0) info.skippedLines++;
    return made;
  };
  const held: { obj: Record<string, unknown>; line: number }[] = [];
  for await (const { text, line } of readLines(file)) {
    const raw = text.trim();
    if (raw.length === 0) continue;
    info.lines++;
    const obj = parseObjectLine(raw, line);
    if (reader) {
      yield* take(reader, obj, line);
      continue;
    }
    held.push({ obj, line });
    const chosen = detectFormat(obj);
    if (chosen === undefined && held.length < DETECT_LINES) continue;
    if (chosen === undefined) break;
    info.format = chosen;
    reader = readerFor(chosen);
    for (const h of held) yield* take(reader, h.obj, h.line);
    held.length = 0;
  }
  if (!reader && held.length > 0)
    throw badLine(
      held[0]!.line,
      `no known transcript format in the first ${held.length} line(s) (spanguard turns or chat messages, a Claude Code session, a Codex rollout); name it with --format`,
    );
}

/** The spanguard format's lines, checked as the store will check them, so a replay never stops halfway. */
class SpanguardReader implements TurnReader {
  private autoTurn = 0;
  private lastTurn = -1;

  line(obj: Record<string, unknown>, lineNo: number): WindowTurn[] {
    const turn = parseTurn(obj, lineNo, () => ++this.autoTurn);
    if (turn.turn < this.lastTurn) throw badLine(lineNo, `turn ${turn.turn} goes backwards (previous ${this.lastTurn})`);
    this.lastTurn = turn.turn;
    return [turn];
  }
}

function parseTurn(obj: Record<string, unknown>, lineNo: number, nextAutoTurn: () => number): WindowTurn {
  let turn: WindowTurn;
  if (typeof obj.text === 'string' || typeof obj.turn === 'number') {
    if (typeof obj.text !== 'string') throw badLine(lineNo, '"text" must be a string');
    if (typeof obj.turn !== 'number' || !Number.isSafeInteger(obj.turn) || obj.turn < 0) throw badLine(lineNo, '"turn" must be a non-negative integer');
    if (typeof obj.role !== 'string' || obj.role.length === 0) throw badLine(lineNo, '"role" must be a non-empty string');
    const kind = typeof obj.kind === 'string' ? obj.kind : undefined;
    // Every other scalar field of the line (session, episode, kind, command, ...) is kept as
    // the span's metadata, which the lexical index makes searchable.
    const meta: Record<string, string | number | boolean> = {};
    for (const [k, v] of Object.entries(obj)) {
      if (k === 'turn' || k === 'role' || k === 'text' || k === 'tokens') continue;
      if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') meta[k] = v;
    }
    turn = {
      turn: obj.turn,
      role: obj.role,
      text: obj.text,
      // Tool output stays with the call that produced it.
      attachToPrevious: isToolOutput(obj.role, kind),
      ...(typeof obj.tokens === 'number' ? { tokens: obj.tokens } : {}),
      ...(Object.keys(meta).length > 0 ? { meta } : {}),
    };
  } else if (typeof obj.role === 'string' && obj.role.length > 0) {
    const m = obj as OpenAiMessage;
    let body = contentText(m.content, lineNo);
    if (Array.isArray(m.tool_calls) && m.tool_calls.length > 0) body += (body ? '\n' : '') + JSON.stringify(m.tool_calls);
    turn = {
      turn: nextAutoTurn(),
      role: obj.role as string,
      text: body,
      attachToPrevious: obj.role === 'tool',
      ...(typeof m.tool_call_id === 'string' ? { meta: { tool_call_id: m.tool_call_id } } : {}),
    };
  } else {
    throw badLine(lineNo, 'neither a turn ({turn, role, text}) nor a chat message ({role, content})');
  }
  return checkTurn(turn, lineNo);
}

/**
 * One line of a questions file. `answer: null` with no evidence turns is a question the
 * transcript does not answer: the right response is "not in transcript". A string answer
 * comes with the turns that state it.
 */
export interface Question {
  question: string;
  answer: string | null;
  evidenceTurns: number[];
  category?: string;
  /** The `session` the question is about, when the line names one. */
  session?: string;
}

/**
 * Parses a questions file: JSONL of `{question, answer, evidence_turns, category?, session?}`
 * (other fields are ignored). `answer` is a non-empty string with at least one evidence turn,
 * or null with none; an `answerable` field, when present, must agree. Throws a
 * TranscriptError naming the first bad line and field; its message never quotes the file.
 */
export function parseQuestions(text: string): Question[] {
  const out: Question[] = [];
  text.split('\n').forEach((line, i) => {
    const q = parseQuestion(line, i + 1);
    if (q) out.push(q);
  });
  return out;
}

/** Reads and parses a questions file (gzip or plain, streamed: see readLines); each question with its line. */
export async function readQuestions(file: string): Promise<(Question & { line: number })[]> {
  const out: (Question & { line: number })[] = [];
  for await (const { text, line } of readLines(file)) {
    const q = parseQuestion(text, line);
    if (q) out.push({ ...q, line });
  }
  return out;
}

function parseQuestion(line: string, lineNo: number): Question | null {
  const raw = line.trim();
  if (raw.length === 0) return null;
  const bad = (why: string): never => {
    throw new TranscriptError(`questions line ${lineNo}: ${why}`, lineNo);
  };
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    // JSON.parse's message quotes the line: say only where it broke.
    bad('not valid JSON');
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) bad('expected a JSON object');
  const q = parsed as Record<string, unknown>;
  if (typeof q.question !== 'string' || q.question.trim().length === 0) bad('"question" must be a non-empty string');
  if (!('answer' in q)) bad('"answer" is missing (a string, or null for a question the transcript does not answer)');
  const answer = q.answer;
  if (answer !== null && (typeof answer !== 'string' || answer.length === 0)) bad('"answer" must be a non-empty string or null');
  const ev = q.evidence_turns;
  if (!Array.isArray(ev) || !ev.every((t) => typeof t === 'number' && Number.isSafeInteger(t) && t >= 0))
    bad('"evidence_turns" must be an array of non-negative integers');
  const evidenceTurns = ev as number[];
  if (answer === null && evidenceTurns.length > 0) bad('"answer" is null but "evidence_turns" is not empty');
  if (answer !== null && evidenceTurns.length === 0) bad('"answer" is given but "evidence_turns" is empty');
  if (typeof q.answerable === 'boolean' && q.answerable !== (answer !== null))
    bad(`"answerable" is ${String(q.answerable)} but "answer" is ${answer === null ? 'null' : 'given'}`);
  if (q.category !== undefined && typeof q.category !== 'string') bad('"category" must be a string');
  if (q.session !== undefined && typeof q.session !== 'string') bad('"session" must be a string');
  return {
    question: q.question as string,
    answer: answer as string | null,
    evidenceTurns,
    ...(typeof q.category === 'string' ? { category: q.category } : {}),
    ...(typeof q.session === 'string' ? { session: q.session } : {}),
  };
}

/**
 * The lines of a transcript or questions file, streamed: gzip when the file starts with the
 * gzip magic bytes, else plain UTF-8. Any readable file works, a pipe or a device too. A
 * line longer than MAX_LINE_BYTES is a TranscriptError naming it, raised once that many
 * bytes have come without a newline (so `/dev/zero` ends at once); a .gz that is cut short
 * or not gzip is a TranscriptError naming the line it broke in.
 */
export async function* readLines(file: string): AsyncGenerator<{ text: string; line: number }> {
  const source = fs.createReadStream(file);
  let line = 1;
  let parts: Buffer[] = [];
  let bytes = 0;
  const tooLong = () => new TranscriptError(`line ${line} is longer than ${MAX_LINE_BYTES} bytes (64 MiB)`, line);
  try {
    for await (const chunk of decoded(source)) {
      let at = 0;
      for (let nl = chunk.indexOf(10, at); nl >= 0; nl = chunk.indexOf(10, at)) {
        if (bytes + nl - at > MAX_LINE_BYTES) throw tooLong();
        parts.push(chunk.subarray(at, nl));
        const text = Buffer.concat(parts).toString('utf8');
        parts = [];
        bytes = 0;
        yield { text, line: line++ };
        at = nl + 1;
      }
      bytes += chunk.length - at;
      if (bytes > MAX_LINE_BYTES) throw tooLong();
      if (at < chunk.length) parts.push(chunk.subarray(at));
    }
  } catch (e) {
    const code = (e as { code?: unknown }).code;
    // zlib's codes: a .gz that is not gzip, or is cut short.
    if (typeof code === 'string' && code.startsWith('Z_')) throw new TranscriptError(`line ${line}: not readable as gzip (${(e as Error).message})`, line);
    throw e;
  } finally {
    source.destroy();
  }
  if (parts.length > 0) yield { text: Buffer.concat(parts).toString('utf8'), line };
}

/** The file's bytes, gunzipped when they start with the gzip magic bytes (1f 8b). */
async function* decoded(source: Readable): AsyncGenerator<Buffer> {
  const it = source[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  const head: Buffer[] = [];
  let n = 0;
  while (n < 2) {
    const r = await it.next();
    if (r.done) break;
    head.push(r.value);
    n += r.value.length;
  }
  const first = Buffer.concat(head);
  const rest = async function* () {
    if (first.length > 0) yield first;
    for (let r = await it.next(); !r.done; r = await it.next()) yield r.value;
  };
  if (!(first.length >= 2 && first[0] === 0x1f && first[1] === 0x8b)) {
    yield* rest();
    return;
  }
  const gunzip = zlib.createGunzip();
  const out = pipeline(Readable.from(rest()), gunzip, () => {});
  for await (const chunk of out) yield chunk as Buffer;
}
