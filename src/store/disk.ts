/** The store's size on disk. */
import fs from 'node:fs';
import path from 'node:path';
import { ErrorCode, SpanguardError } from '../errors.js';

/**
 * Bytes of every file under `dir`. A writer in another process renames and creates files
 * while this runs (a segment roll, an index's temp file saved and renamed into place): an
 * entry gone between the listing and its stat counts for nothing, as if listed a moment later.
 */
export function dirBytes(dir: string): number {
  let entries: fs.Dirent[];
  try {
    entries = fs.readdirSync(dir, { withFileTypes: true });
  } catch (e) {
    throw new SpanguardError(ErrorCode.IO_ERROR, `cannot list ${dir}: ${(e as Error).message}`, { file: dir });
  }
  return entries.reduce((total, entry) => total + entryBytes(path.join(dir, entry.name), entry), 0);
}

function entryBytes(p: string, entry: fs.Dirent): number {
  if (entry.isFile()) return fs.statSync(p, { throwIfNoEntry: false })?.size ?? 0;
  if (!entry.isDirectory()) return 0;
  let entries: fs.Dirent[];
  try {
    entries = fs.readdirSync(p, { withFileTypes: true });
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return 0;
    throw new SpanguardError(ErrorCode.IO_ERROR, `cannot list ${p}: ${(e as Error).message}`, { file: p });
  }
  return entries.reduce((total, e) => total + entryBytes(path.join(p, e.name), e), 0);
}

