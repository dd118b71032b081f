/**
 * The live window of a reopened store, from its event trail: every raw span no accepted pass
 * evicted, in log order, and every live summary where the first entry it replaced was; turns
 * pinned at push, and anchors the guard refused or spilled, pinned as they were.
 */
import type { GuardEvent } from '../events.js';
import { RecordKind } from '../native.js';
import type { SpanStore } from '../store.js';
import { toSpan } from '../store/spans.js';
import type { Entry } from './types.js';

const RESTORE_CHUNK = 4096;

/**
 * The window's entries in window order. `nextUnit` numbers a new unit; `onRaw` sees every raw
 * span of the log (evicted or not), in log order, as its entry.
 */
export function restoredEntries(store: SpanStore, events: readonly GuardEvent[], nextUnit: () => number, onRaw: (e: Entry) => void): Entry[] {
  // Where each summary sits: before the first entry its pass took up (a raw id evicted or
  // spilled, or an older summary's place); raw entries sit at their id.
  const placeOf = new Map<number, number>();
  const kept = new Set<number>();
  for (const e of events) {
    if (e.type === 'pass') {
      let place = Infinity;
      for (const [a] of e.evicted) place = Math.min(place, a);
      for (const id of e.spilled) place = Math.min(place, id);
      for (const s of e.evictedSummaries) place = Math.min(place, placeOf.get(s) ?? s);
      placeOf.set(e.summaryId, Number.isFinite(place) ? place : e.summaryId);
      for (const id of e.spilled) kept.add(id);
    } else if (e.type === 'refusal') for (const id of e.anchors) kept.add(id);
  }
  const evicted = store.state.evicted;
  const entries: { place: number; e: Entry }[] = [];
  let last: Entry | null = null;
  const next = store.log.nextId();
  for (let from = store.log.firstId(); from < next; from += RESTORE_CHUNK) {
    for (const r of store.log.scan(from, Math.min(RESTORE_CHUNK, next - from), 1 << RecordKind.raw)) {
      const s = toSpan(r);
      const meta = s.meta ?? {};
      const attach = typeof meta.attachToPrevious === 'boolean' ? meta.attachToPrevious : s.role === 'tool';
      const unit = attach && last ? last.unit : nextUnit();
      const e: Entry = {
        id: s.id,
        kind: 'raw',
        role: s.role,
        turnStart: s.turnStart,
        turnEnd: s.turnEnd,
        tokens: s.tokens,
        anchor: s.anchor,
        unit,
        pinned: (typeof meta.pinned === 'boolean' ? meta.pinned : s.role === 'system') || kept.has(s.id),
      };
      onRaw(e);
      last = e;
      if (!evicted.has(s.id)) entries.push({ place: s.id, e });
    }
  }
  const live = [...store.state.liveSummaries];
  store.getMany(live).forEach((s, i) => {
    if (!s) return;
    const e: Entry = { id: s.id, kind: 'summary', role: 'system', turnStart: s.turnStart, turnEnd: s.turnEnd, tokens: s.tokens, anchor: false, unit: nextUnit(), pinned: false };
    entries.push({ place: placeOf.get(live[i]!) ?? s.id, e });
  });
  // A summary goes before a spilled anchor at its own place.
  entries.sort((a, b) => a.place - b.place || (a.e.kind === b.e.kind ? a.e.id - b.e.id : a.e.kind === 'summary' ? -1 : 1));
  return entries.map(({ e }) => e);
}
