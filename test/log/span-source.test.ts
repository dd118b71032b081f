// The C++ read interface the indexes catch up from (native/log/span_source.h): a SpanLog
// unwraps to a SpanSource; anything else is INVALID_ARGUMENT, a closed log is CLOSED.
import { describe, expect, it } from 'vitest';
import { columns, durabilities, openLog, rowsFor, testing, tmpDir } from './helpers.js';

describe('UnwrapSpanSource hands indexes the log, and nothing else', () => {
  it('reads what append wrote, without the internal batch flag', async () => {
    const log = openLog(tmpDir('source'), { durability: durabilities.none });
    const rows = rowsFor(0, 5);
    await log.append(columns(rows));
    for (let id = 1; id <= 5; id++) {
      expect(testing.readViaSource(log, id)).toEqual({
        id,
        kind: 1,
        flags: rows[id - 1]!.flags ?? 0,
        text: rows[id - 1]!.text,
        firstId: 1,
        nextId: 6,
      });
    }
    expect(testing.readViaSource(log, 6)).toBeUndefined();
    await log.close();
    expect(() => testing.readViaSource(log, 1)).toThrowError(expect.objectContaining({ code: 'CLOSED' }));
  });

  it('refuses objects that are not SpanLogs', () => {
    for (const v of [undefined, null, 1, 'log', {}, { nextId: () => 1 }, new Uint8Array(4)]) {
      expect(() => testing.readViaSource(v, 1)).toThrowError(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    }
  });
});
