/**
 * Transcript input for the command line: the JSONL of turns used in shared/data
 * (`{turn, role, text, ...}`) and OpenAI-style chat messages (`{role, content}` with tool
 * calls). The whole file is parsed and checked before anything is written, so a malformed
 * line is reported with its number and the store is left untouched.
 */
import fs from 'node:fs';
import zlib from 'node:zlib';
import type { WindowTurn } from './window.js';

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
  const out: WindowTurn[] = [];
  const lines = text.split('\n');
  let autoTurn = 0;
  let lastTurn = -1;
  for (let i = 0; i < lines.length; i++) {
    const lineNo = i + 1;
    const raw = lines[i]!.trim();
    if (raw.length === 0) continue;
    let obj: Record<string, unknown>;
    try {
      obj = JSON.parse(raw) as Record<string, unknown>;
    } catch (e) {
      throw new TranscriptError(`line ${lineNo}: not valid JSON (${(e as Error).message})`, lineNo);
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
    } else if (typeof obj.role === 'string') {
      const m = obj as OpenAiMessage;
      let body = contentText(m.content, lineNo);
      if (Array.isArray(m.tool_calls) && m.tool_calls.length > 0) body += (body ? '\n' : '') + JSON.stringify(m.tool_calls);
      turn = {
        turn: ++autoTurn,
        role: obj.role as string,
        text: body,
        attachToPrevious: obj.role === 'tool',
        ...(typeof m.tool_call_id === 'string' ? { meta: { tool_call_id: m.tool_call_id } } : {}),
      };
    } else {
      throw new TranscriptError(`line ${lineNo}: neither a turn ({turn, role, text}) nor a chat message ({role, content})`, lineNo);
    }
    if (!turn.text.isWellFormed()) throw new TranscriptError(`line ${lineNo}: text is not valid UTF-8 (lone surrogate)`, lineNo);
    if (turn.turn < lastTurn) throw new TranscriptError(`line ${lineNo}: turn ${turn.turn} goes backwards (previous ${lastTurn})`, lineNo);
    lastTurn = turn.turn;
    out.push(turn);
  }
  return out;
}

/**
 * Parses a questions file: JSONL of `{question, answer, evidence_turns, category?, session?}`
 * (other fields are ignored). `answer` is a non-empty string with at least one evidence turn,
 * or null with none; an `answerable` field, when present, must agree. Throws a
 * TranscriptError naming the first bad line and field; its message never quotes the file.
 */
export function parseQuestions(text: string): Question[] {
  const out: Question[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const lineNo = i + 1;
    const raw = lines[i]!.trim();
    if (raw.length === 0) continue;
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
    out.push({
      question: q.question as string,
      answer: answer as string | null,
      evidenceTurns,
      ...(typeof q.category === 'string' ? { category: q.category } : {}),
      ...(typeof q.session === 'string' ? { session: q.session } : {}),
    });
  }
  return out;
}
