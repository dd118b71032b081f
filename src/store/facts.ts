/**
 * Anchor facts: the fact each anchor span pins (src/anchors.ts `anchorFact`), kept from the
 * append that detected it, and on disk across a reopen (docs/FORMAT.md, "Anchor facts").
 *
 * A compaction pass probes every anchor it evicts by its fact. Detection over the span's text
 * costs microseconds per anchor, paid at append already: a live store keeps the facts, and a
 * reopened one reads where each lies in its span's text from `index/anchor-facts.json`, used
 * only when it names this store, this log's history (the digest of its last record) and these
 * detection rules. Anything else — another store's file, a log that lost its tail since and
 * may hold other turns under those ids, other rules, a damaged file — is ignored, and each fact
 * is found again from the text on first use.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { anchorFact, DETECTION_RULES } from '../anchors.js';
import type { NativeSpanLog } from '../native.js';
import { identityOf } from './identity.js';

/** Anchor facts kept (~160 chars each: a few MiB at most). */
export const FACT_CACHE = 16384;
export const FACTS_FILE = 'anchor-facts.json';
export const FACTS_VERSION = 1;

/** The file's fingerprint of the detection rules. */
export const rulesDigest = (): string => createHash('sha256').update(DETECTION_RULES).digest('hex').slice(0, 16);

export interface FactsFile {
  version: number;
  rules: string;
  storeId: string;
  highWater: number;
  lastDigest: string | null;
  ids: number[];
  /** UTF-16 offsets of each fact in its span's text; start −1: the span pins no fact. */
  starts: number[];
  ends: number[];
}

/** A fact as a string (known in this process) or, read from the file, as where it lies in the span's text. */
interface Entry {
  fact: string | null | undefined;
  start: number;
  end: number;
}

export class FactCache {
  private entries = new Map<number, Entry>();

  /** The fact anchor span `id` (of this text and role) pins: kept, or found now and kept. */
  of(id: number, text: string, role: number): string | null {
    const e = this.entries.get(id);
    if (e !== undefined) {
      if (e.fact !== undefined) return e.fact;
      // Read from the file: the span's text is the one it was found in (the log's identity
      // matched), so the offsets cut the same fact. One past the text would be damage.
      if (e.start < 0) return (e.fact = null);
      if (e.end <= text.length) return (e.fact = text.slice(e.start, e.end));
    }
    const fact = anchorFact(text, role);
    this.remember(id, fact, text);
    return fact;
  }

  /** Keeps `fact` (a substring of `text`, or null) as the fact of anchor `id`. */
  remember(id: number, fact: string | null, text: string): void {
    const start = fact === null ? -1 : text.indexOf(fact);
    this.put(id, { fact, start, end: start < 0 ? -1 : start + fact!.length });
  }

  private put(id: number, e: Entry): void {
    this.entries.delete(id);
    this.entries.set(id, e);
    if (this.entries.size > FACT_CACHE) this.entries.delete(this.entries.keys().next().value!);
  }

  /** Writes the kept facts' places beside the indexes (close, checkpoint); a store without an id writes nothing. */
  save(indexDir: string, storeId: string | null, log: NativeSpanLog): void {
    if (storeId === null) return;
    const ids: number[] = [];
    const starts: number[] = [];
    const ends: number[] = [];
    for (const [id, e] of this.entries) {
      ids.push(id);
      starts.push(e.start);
      ends.push(e.end);
    }
    writeFacts(indexDir, { version: FACTS_VERSION, rules: rulesDigest(), storeId, ...identityOf(log, log.nextId()), ids, starts, ends });
  }

  /**
   * Takes the facts of `index/anchor-facts.json` when the file is this store's, of this log's
   * history and these rules; otherwise keeps nothing from it. Returns how many it took.
   */
  load(indexDir: string, storeId: string | null, log: NativeSpanLog): number {
    const f = readFacts(indexDir);
    if (f === null || storeId === null || f.storeId !== storeId || f.rules !== rulesDigest()) return 0;
    if (!Number.isSafeInteger(f.highWater) || f.highWater > log.nextId()) return 0;
    // The record before the file's high water is the one it was written after: the same
    // history up to there (a log that lost its tail and took other turns differs there).
    if (identityOf(log, f.highWater).lastDigest !== f.lastDigest) return 0;
    let taken = 0;
    for (let i = 0; i < f.ids.length; i++) {
      const id = f.ids[i]!;
      const start = f.starts[i]!;
      const end = f.ends[i]!;
      if (!Number.isSafeInteger(id) || id >= f.highWater || !Number.isSafeInteger(start) || !Number.isSafeInteger(end)) continue;
      if (start >= 0 ? end < start : start !== -1) continue;
      if (this.entries.has(id)) continue;
      this.put(id, { fact: undefined, start, end });
      taken++;
    }
    return taken;
  }
}

export function readFacts(indexDir: string): FactsFile | null {
  try {
    const raw = JSON.parse(fs.readFileSync(path.join(indexDir, FACTS_FILE), 'utf8')) as Partial<FactsFile>;
    if (raw.version !== FACTS_VERSION || typeof raw.rules !== 'string' || typeof raw.storeId !== 'string') return null;
    if (!Array.isArray(raw.ids) || !Array.isArray(raw.starts) || !Array.isArray(raw.ends)) return null;
    if (raw.starts.length !== raw.ids.length || raw.ends.length !== raw.ids.length) return null;
    return raw as FactsFile;
  } catch {
    return null;
  }
}

/** Written by temporary file and rename, not fsynced: a cache checked at open (a torn or stale file is ignored). */
export function writeFacts(indexDir: string, f: FactsFile): void {
  const file = path.join(indexDir, FACTS_FILE);
  const tmp = `${file}.tmp`;
  fs.writeFileSync(tmp, JSON.stringify(f), { mode: 0o600 });
  fs.renameSync(tmp, file);
}
