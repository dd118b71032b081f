/**
 * Transcript input for the command line: the JSONL of turns used in shared/data
 * (`{turn, role, text, ...}`) and OpenAI-style chat messages (`{role, content}` with tool
 * calls). The whole file is parsed and checked before anything is written, so a malformed
 * line is reported with its number and the store is left untouched.
 */
import fs from 'node:fs';
import { Readable, pipeline } from 'node:stream';
import zlib from 'node:zlib';
import { MAX_ROLE_CHARS } from './meta.js';
import type { WindowTurn } from './window.js';

/** Longest line of a transcript or questions file, in bytes (after gunzip): longer is malformed input. */
export const MAX_LINE_BYTES = 64 * 1024 * 1024;

/** Largest turn text a replay accepts, in UTF-8 bytes: the store's default `maxTextBytes`. */
export const MAX_TURN_TEXT_BYTES = 16 * 1024 * 1024;

/**
 * A malformed line (or a file that is not gzip although it says so). The message names the
 * line, the field and at most a character offset, never the file's contents.
 */
export class TranscriptError extends Error {
  constructor(
    message: string,
    readonly line: number,
  ) {
    super(message);
    this.name = 'TranscriptError';
  }
}

/**
 * Why JSON.parse refused a line, without the excerpt of the line its message quotes: only
 * the character offset, when it gives one.
 */
function jsonProblem(e: unknown): string {
  const at = /position (\d+)/.exec(e instanceof Error ? e.message : '');
  return at ? `not valid JSON (at character ${at[1]})` : 'not valid JSON';
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
  throw new TranscriptError(`line ${line}: "content" must be a string, an array of parts or null`, line);
}

/** Parses a whole transcript; throws TranscriptError naming the first bad line. */
export function parseTranscript(text: string): WindowTurn[] {
  const parser = new TranscriptParser();
  text.split('\n').forEach((line, i) => parser.line(line, i + 1));
  return parser.turns;
}

/** Reads and parses a transcript file (gzip or plain, streamed: see readLines). */
export async function readTranscript(file: string): Promise<WindowTurn[]> {
  const parser = new TranscriptParser();
  for await (const { text, line } of readLines(file)) parser.line(text, line);
  return parser.turns;
}

/** Transcript lines, one at a time, checked as the store will check them, so a replay never stops halfway. */
class TranscriptParser {
  readonly turns: WindowTurn[] = [];
  private autoTurn = 0;
  private lastTurn = -1;

  line(text: string, lineNo: number): void {
    const raw = text.trim();
    if (raw.length === 0) return;
    const turn = parseTurn(raw, lineNo, () => ++this.autoTurn);
    if (turn.turn < this.lastTurn) throw new TranscriptError(`line ${lineNo}: turn ${turn.turn} goes backwards (previous ${this.lastTurn})`, lineNo);
    this.lastTurn = turn.turn;
    this.turns.push(turn);
  }
}

function parseTurn(raw: string, lineNo: number, nextAutoTurn: () => number): WindowTurn {
  let obj: Record<string, unknown>;
  try {
    obj = JSON.parse(raw) as Record<string, unknown>;
  } catch (e) {
    throw new TranscriptError(`line ${lineNo}: ${jsonProblem(e)}`, lineNo);
  }
  if (obj === null || typeof obj !== 'object' || Array.isArray(obj)) throw new TranscriptError(`line ${lineNo}: expected a JSON object`, lineNo);
  let turn: WindowTurn;
  if (typeof obj.text === 'string' || typeof obj.turn === 'number') {
    if (typeof obj.text !== 'string') throw new TranscriptError(`line ${lineNo}: "text" must be a string`, lineNo);
    if (typeof obj.turn !== 'number' || !Number.isSafeInteger(obj.turn) || obj.turn < 0)
      throw new TranscriptError(`line ${lineNo}: "turn" must be a non-negative integer`, lineNo);
    if (typeof obj.role !== 'string' || obj.role.length === 0) throw new TranscriptError(`line ${lineNo}: "role" must be a non-empty string`, lineNo);
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
      attachToPrevious: obj.role === 'tool' || kind === 'observation' || kind === 'tool_result',
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
    throw new TranscriptError(`line ${lineNo}: neither a turn ({turn, role, text}) nor a chat message ({role, content})`, lineNo);
  }
  if (!turn.text.isWellFormed()) throw new TranscriptError(`line ${lineNo}: text is not valid UTF-8 (lone surrogate)`, lineNo);
  if (turn.role.length > MAX_ROLE_CHARS) throw new TranscriptError(`line ${lineNo}: "role" is longer than ${MAX_ROLE_CHARS} characters`, lineNo);
  if (turn.tokens !== undefined && !(Number.isInteger(turn.tokens) && turn.tokens >= 0 && turn.tokens <= 0xffffffff))
    throw new TranscriptError(`line ${lineNo}: "tokens" must be a non-negative integer`, lineNo);
  // Checked by length first: a UTF-8 byte is at least one UTF-16 unit and at most three.
  if (turn.text.length * 3 > MAX_TURN_TEXT_BYTES && Buffer.byteLength(turn.text) > MAX_TURN_TEXT_BYTES)
    throw new TranscriptError(`line ${lineNo}: text is ${Buffer.byteLength(turn.text)} bytes; a turn holds at most ${MAX_TURN_TEXT_BYTES} (16 MiB)`, lineNo);
  return turn;
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
