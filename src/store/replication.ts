/** The store's side of the object-store replica (src/replica/): starting it after the open, and what an append waits for. */
import type { Durability } from '../native.js';
import { clearRestoreNote, startReplica, takeRestoreNote, type ReplicaOptions, type Shipper } from '../replica/index.js';

/**
 * Starts shipping the store's log (`started` receives the shipper at once), then records a gap a
 * restore left (`recordGap`) and only then forgets it, so a failed record leaves it for the next open.
 */
export async function openReplica(
  dir: string,
  durability: Durability | 'replicated',
  options: ReplicaOptions,
  started: (shipper: Shipper) => void,
  recordGap: (gap: string) => Promise<unknown>,
): Promise<void> {
  started(await startReplica(dir, durability, options));
  const gap = takeRestoreNote(dir);
  if (gap !== null) await recordGap(gap);
  clearRestoreNote(dir);
}

/** `replicated`: resolves once the object store holds every id below `nextId`; otherwise tells the shipper what is pending. */
export function replicate(replica: Shipper | null, durability: Durability | 'replicated', nextId: number, texts: readonly (string | null)[]): Promise<void> | undefined {
  if (replica === null) return undefined;
  if (durability !== 'replicated') {
    let bytes = 0;
    for (const t of texts) bytes += 64 + (t?.length ?? 0);
    replica.noteAppend(bytes);
    return undefined;
  }
  const p = replica.waitFor(nextId);
  p.catch(() => undefined);
  return p;
}
