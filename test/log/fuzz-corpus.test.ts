// Replays the committed libFuzzer corpus (fuzz/recover_fuzz.cpp) through the JS
// export: recovery is total (never throws on bytes, typed or not) and keeps its promises.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { native } from './helpers.js';

const corpusDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/recover-corpus');

describe('every fuzz corpus input recovers without throwing, within bounds, idempotently', () => {
  const files = fs.readdirSync(corpusDir).sort();
  it('the corpus is there', () => expect(files.length).toBeGreaterThan(20));
  it('replay', () => {
    const outcomes = new Set<string>();
    for (const f of files) {
      const bytes = new Uint8Array(fs.readFileSync(path.join(corpusDir, f)));
      const r = native.recoverSegment(bytes);
      outcomes.add(r.outcome);
      expect(['clean', 'torn-tail', 'corrupt'], f).toContain(r.outcome);
      expect(r.validEnd, f).toBeLessThanOrEqual(bytes.length);
      if (r.outcome === 'clean') expect(r.validEnd, f).toBe(bytes.length);
      if (r.outcome !== 'corrupt') {
        const again = native.recoverSegment(bytes.subarray(0, r.validEnd));
        expect(again, f).toMatchObject({ outcome: 'clean', records: r.records, validEnd: r.validEnd });
      }
    }
    // The corpus covers all three outcomes.
    expect([...outcomes].sort()).toEqual(['clean', 'corrupt', 'torn-tail']);
  });
});
