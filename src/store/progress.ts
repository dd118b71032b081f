/**
 * Progress of the store's long operations (SpanStoreOptions.onProgress, `StoreProgress`):
 * one call per step, made only when the host listens — the event object is built after the
 * listener is known to exist, so a store opened without one pays a property read per step.
 */
import type { StoreProgress } from './types.js';

/**
 * Tells `o.onProgress` (when set) that `operation` reached `phase`; `index`, `highWater` and
 * `nextId` are set on the event when given. A listener that throws does not stop the
 * operation it watches: its exception is dropped.
 */
export function reportProgress(
  o: { onProgress: ((p: StoreProgress) => void) | undefined },
  operation: StoreProgress['operation'],
  phase: StoreProgress['phase'],
  index?: 'lexical' | 'vector',
  highWater?: number,
  nextId?: number,
): void {
  const listener = o.onProgress;
  if (listener === undefined) return;
  const p: StoreProgress = { operation, phase };
  if (index !== undefined) p.index = index;
  if (highWater !== undefined) p.highWater = highWater;
  if (nextId !== undefined) p.nextId = nextId;
  try {
    listener(p);
  } catch {
    // The host's listener failed; the store's operation is not the listener's to stop.
  }
}
