/** What every command shares: exit codes, colours, argument parsing, input files, opening a store. */
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { packageRoot } from '../native.js';
import { SpanStore } from '../store.js';
import { TranscriptError } from '../transcript.js';
import { HELP, type OptionSpec } from './help.js';

export const EXIT = { ok: 0, error: 1, usage: 2, corrupt: 3, disagree: 4, notLossless: 5, remote: 6, badInput: 65 } as const;
export const tty = process.stdout.isTTY === true;
export const c = (code: number, s: string) => (tty ? `\x1b[${code}m${s}\x1b[0m` : s);
export const bold = (s: string) => c(1, s);
export const stateColor = (s: string) => (s === 'lossless' ? c(32, s) : s === 'unknown' ? c(33, s) : c(31, s));

/** A bad command line, or a named file or store that does not exist: exit 2. Messages do not name the command; main() prefixes it. */
export class UsageError extends Error {}
/** Input that cannot be read as a transcript or questions file (not gzip, truncated): exit 65. */
export class InputError extends Error {}

/** The version in the package.json shipped beside dist/. */
export function packageVersion(): string {
  return (JSON.parse(fs.readFileSync(path.join(packageRoot, 'package.json'), 'utf8')) as { version: string }).version;
}
export type Parsed = { values: Record<string, string | boolean | string[] | undefined>; positionals: string[] };

/**
 * Parses a command's arguments: its options, --help (or -h), --json and at most `maxPositionals`
 * arguments. A word past those is refused rather than ignored (an unquoted query of several
 * words would otherwise be searched by its first word alone). parseArgs' own messages span
 * lines; they are joined into one.
 */
export function parse(argv: string[], options: OptionSpec, maxPositionals: number): Parsed {
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

export function intOpt(v: unknown, name: string, dflt: number): number {
  if (v === undefined) return dflt;
  const n = Number(v);
  if (!Number.isInteger(n) || n <= 0) throw new UsageError(`--${name} must be a positive integer, got ${String(v)}`);
  return n;
}

export const print = (json: boolean, value: unknown, text: () => string) => console.log(json ? JSON.stringify(value, null, 2) : text());

export function needDir(pos: string[], cmd: string): string {
  const dir = pos[0];
  if (!dir) throw new UsageError(`missing DIR\n${HELP[cmd]}`);
  return dir;
}

/**
 * A transcript or questions file named on the command line must exist and not be a
 * directory; a pipe or a device is read like a file (readLines streams it).
 */
export function checkInput(file: string, what: string): void {
  let st: fs.Stats;
  try {
    st = fs.statSync(file);
  } catch {
    throw new UsageError(`${what} ${file} does not exist`);
  }
  if (st.isDirectory()) throw new UsageError(`${what} ${file} is a directory`);
}

/** Parses a named input file; a malformed line is reported as the file's, by name and line. */
export async function readInput<T>(file: string, what: string, read: (file: string) => Promise<T>): Promise<T> {
  try {
    return await read(file);
  } catch (e) {
    if (e instanceof TranscriptError) throw new InputError(`${what} ${file}: ${e.message}`);
    throw e;
  }
}

export function needStore(dir: string): string {
  if (!fs.existsSync(dir)) throw new UsageError(`${dir} does not exist`);
  if (!fs.existsSync(path.join(dir, 'log'))) throw new UsageError(`${dir} is not a spanguard store (no log/ directory)`);
  return dir;
}

export async function openReadOnly(dir: string): Promise<SpanStore> {
  return SpanStore.open(needStore(dir), { readOnly: true });
}

/** Opens `dir` read-only for one command and always closes it. */
export async function withReadOnly<T>(dir: string, fn: (store: SpanStore) => Promise<T> | T): Promise<T> {
  const store = await openReadOnly(dir);
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}

export const clip = (s: string) => (s.length > 600 ? `${s.slice(0, 600)}… (${s.length} chars)` : s);
export const indent = (s: string) => s.replace(/^/gm, '    ');

