/** What `SpanStore.stats()` reports: counts, bytes on disk, the indexes' own figures, the guard's counts, recoveries and the index lag. */
import { addon, type NativeLexicalIndex, type NativeSpanLog, type NativeVectorIndex } from '../native.js';
import { dirBytes } from './disk.js';
import type { Resolved } from './options.js';
import type { GuardState } from './trail.js';
import type { StoreStats } from './types.js';

export function collectStats(
  dir: string,
  log: NativeSpanLog,
  lexical: NativeLexicalIndex,
  vector: NativeVectorIndex,
  options: Resolved,
  state: GuardState,
  lag: StoreStats['indexLag'],
): StoreStats {
    const ls = log.stats();
    const lex = lexical.stats();
    const raw = Number(lex.rawDocs ?? 0);
    const summary = Number(lex.summaryDocs ?? 0);
    return {
      dir: dir,
      spans: { raw, summary, event: ls.nextId - ls.firstId - raw - summary },
      nextId: ls.nextId,
      bytesOnDisk: dirBytes(dir),
      durability: options.durability,
      readOnly: options.readOnly,
      lexical: lex,
      vector: vector.stats(),
      simd: addon().simdIsa(),
      passes: state.passes,
      evicted: state.evicted.size,
      anchors: state.anchors.length,
      pinnedFacts: state.pins.length + state.anchors.length,
      recoveries: ls.recoveries,
      indexLag: lag,
    };
}
