// The streamed bench data (bench/data.ts streamData): the spans loadData returns, in the same
// order, handed out in batches of exactly the size asked (the last one the remainder), so a
// streamed ingest appends the same batches as one over the whole array.
import { describe, expect, it } from 'vitest';
import { loadData, streamData } from '../../bench/data.js';

describe('streamData hands out loadData spans in batches of the size asked', () => {
  for (const mode of ['auto', 'gen'] as const) {
    it(`${mode}: every batch but the last holds exactly 7 spans, and together they are loadData's`, () => {
      const stream = streamData(3001, mode, 7);
      const batches = [...stream.batches()];
      expect(batches.slice(0, -1).every((b) => b.length === 7)).toBe(true);
      expect(batches.at(-1)!.length).toBe(3001 % 7 || 7);
      const whole = loadData(3001, mode);
      expect(batches.flat()).toEqual(whole.spans);
      const { real, generated, sources, chars } = stream.summary();
      expect({ real, generated, sources, chars }).toEqual({ real: whole.real, generated: whole.generated, sources: whole.sources, chars: whole.chars });
    });
  }
});
