/**
 * What every transcript reader shares: the error that names a malformed line, a line parsed
 * as a JSON object, an ISO 8601 timestamp read as milliseconds, and the checks a turn must
 * pass before a replay writes anything (the store's own limits, so a replay never stops
 * halfway). No message quotes the file's contents: only the line, the field and at most a
 * character offset.
 */
import { ErrorCode, SpanguardError } from './errors.js';
import { MAX_ROLE_CHARS } from './meta.js';
import type { WindowTurn } from './window.js';

/** Largest turn text a replay accepts, in UTF-8 bytes: the store's default `maxTextBytes`. */
export const MAX_TURN_TEXT_BYTES = 16 * 1024 * 1024;

/**
 * A malformed line (or a file that is not gzip although it says so). The message names the
 * line, the field and at most a character offset, never the file's contents.
 */
export class TranscriptError extends SpanguardError {
  constructor(
    message: string,
    readonly line: number,
  ) {
    super(ErrorCode.INVALID_ARGUMENT, message, { line });
    this.name = 'TranscriptError';
  }
}

/** A TranscriptError for `line`: `line N: why`. */
export const badLine = (line: number, why: string): TranscriptError => new TranscriptError(`line ${line}: ${why}`, line);

/**
 * Why JSON.parse refused a line, without the excerpt of the line its message quotes: only
 * the character offset, when it gives one.
 */
export function jsonProblem(e: unknown): string {
  const at = /position (\d+)/.exec(e instanceof Error ? e.message : '');
  return at ? `not valid JSON (at character ${at[1]})` : 'not valid JSON';
}

/** One line (already trimmed, not empty) parsed as a JSON object, or a TranscriptError naming it. */
export function parseObjectLine(raw: string, line: number): Record<string, unknown> {
  let obj: unknown;
  try {
    obj = JSON.parse(raw);
  } catch (e) {
    throw badLine(line, jsonProblem(e));
  }
  if (obj === null || typeof obj !== 'object' || Array.isArray(obj)) throw badLine(line, 'expected a JSON object');
  return obj as Record<string, unknown>;
}

/** A plain JSON object (not an array, not null). */
export const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

const ISO_DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?$/;

/**
 * The `field` of a line as milliseconds since the epoch: absent is undefined (the store
 * stamps the time of the append); anything but an ISO 8601 date-time at or after 1970 is
 * malformed, since the store keeps integer milliseconds >= 0.
 */
export function isoTimestamp(value: unknown, field: string, line: number): number | undefined {
  if (value === undefined || value === null) return undefined;
  const ms = typeof value === 'string' && ISO_DATE_TIME.test(value) ? Date.parse(value) : Number.NaN;
  if (!Number.isFinite(ms)) throw badLine(line, `"${field}" must be an ISO 8601 date-time (2025-05-26T07:27:40.079Z)`);
  if (ms < 0) throw badLine(line, `"${field}" is before 1970, which the store cannot hold`);
  return ms;
}

/**
 * Checks a turn as the store will check it (valid UTF-8, a role of at most 256 characters,
 * integer tokens, a text of at most 16 MiB), so a replay that starts never stops halfway.
 */
export function checkTurn(turn: WindowTurn, line: number): WindowTurn {
  if (!turn.text.isWellFormed()) throw badLine(line, 'text is not valid UTF-8 (lone surrogate)');
  if (turn.role.length > MAX_ROLE_CHARS) throw badLine(line, `"role" is longer than ${MAX_ROLE_CHARS} characters`);
  if (turn.tokens !== undefined && !(Number.isInteger(turn.tokens) && turn.tokens >= 0 && turn.tokens <= 0xffffffff))
    throw badLine(line, '"tokens" must be a non-negative integer');
  // Checked by length first: a UTF-8 byte is at least one UTF-16 unit and at most three.
  if (turn.text.length * 3 > MAX_TURN_TEXT_BYTES && Buffer.byteLength(turn.text) > MAX_TURN_TEXT_BYTES)
    throw badLine(line, `text is ${Buffer.byteLength(turn.text)} bytes; a turn holds at most ${MAX_TURN_TEXT_BYTES} (16 MiB)`);
  return turn;
}

/** Reads one transcript format: a line parsed as a JSON object becomes zero or more turns. */
export interface TurnReader {
  line(obj: Record<string, unknown>, line: number): WindowTurn[];
}

/**
 * JSON text with the `\n`, `\r` and `\t` escapes inside its strings written as the
 * characters they stand for, so that a tool call's arguments (a file's new content, a
 * multi-line command) are searchable word by word: escaped, `\nport = 8080` would index as
 * `nport`. An escaped backslash stays escaped, so the text remains unambiguous.
 */
export function readableJson(json: string): string {
  return json.replace(/\\([\\nrt])/g, (m: string, c: string) => (c === 'n' ? '\n' : c === 't' ? '\t' : c === 'r' ? '\r' : m));
}
