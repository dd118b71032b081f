/** The request's ids checked, and the seed's acceptance rule for the anchors a pass evicts. */
import { ErrorCode, SpanguardError } from '../errors.js';


export function checkIds(name: string, ids: unknown): number[] {
  if (!Array.isArray(ids)) throw new SpanguardError(ErrorCode.INVALID_ARGUMENT, `${name} must be an array of span ids`);
  for (const id of ids)
    // (Number.isSafeInteger is false for anything but a number.)
    if (!Number.isSafeInteger(id) || (id as number) < 0)
      throw new SpanguardError(ErrorCode.INVALID_ARGUMENT, `${name} contains ${String(id)}, which is not a span id`);
  if (new Set(ids).size !== ids.length) throw new SpanguardError(ErrorCode.INVALID_ARGUMENT, `${name} names an id twice`);
  return ids as number[];
}

/**
 * The divergence of one anchor's probe: null when the agent's retrieval did not return the
 * anchor; 0 when what it returned first is the anchor itself or states the probe verbatim
 * (the agent gets the fact back); otherwise the measured distance to that first hit.
 */
export async function probeDivergence(
  find: { found: boolean; topId: number | null; topHolds: boolean },
  anchorId: number,
  measure: (topId: number) => Promise<number>,
): Promise<number | null> {
  const known = knownDivergence(find, anchorId);
  return known !== undefined ? known : measure(find.topId!);
}

/**
 * `probeDivergence` where it needs no measure (null or 0), without a wait; undefined when
 * the first hit is another span that does not state the probe, whose distance is measured.
 */
export function knownDivergence(find: { found: boolean; topId: number | null; topHolds: boolean }, anchorId: number): number | null | undefined {
  if (!find.found) return null;
  if (find.topId === null || find.topId === anchorId || find.topHolds) return 0;
  return undefined;
}

/** One evicted anchor's probe: whether the agent's retrieval returned it, and the divergence (null when not returned). */
export interface AnchorProbe {
  id: number;
  found: boolean;
  divergence: number | null;
}

/**
 * The seed's acceptance rule for a pass's anchors: each must be returned by a probe of its
 * own content (else unverified), and what that probe returned first must lie within
 * `maxDivergence` of it (else diverged). `divergence` is the largest measured.
 */
export function judgeAnchors(probes: readonly AnchorProbe[], maxDivergence: number): { unverified: number[]; diverged: number[]; divergence: number } {
  const unverified: number[] = [];
  const diverged: number[] = [];
  let divergence = 0;
  for (const p of probes) {
    if (!p.found || p.divergence === null) {
      unverified.push(p.id);
      continue;
    }
    divergence = Math.max(divergence, p.divergence);
    if (p.divergence > maxDivergence) diverged.push(p.id);
  }
  return { unverified, diverged, divergence };
}
