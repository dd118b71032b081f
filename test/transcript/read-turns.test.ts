// readTurns: the library's streaming reader of transcript files — the turns replay reads,
// one at a time, with a malformed line a typed error after the turns before it.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { readTurns, SpanguardError, TranscriptError, type TranscriptInfo } from '../../src/index.js';
import { readTranscript } from '../../src/transcript.js';
import { tmpDir } from '../helpers/data.js';

const FIXTURES = path.join(import.meta.dirname, '..', 'fixtures', 'agent-sessions');

describe('readTurns yields what replay reads, a turn at a time', () => {
  for (const f of ['claude-code-session.jsonl', 'codex-rollout.jsonl']) {
    it(`${f}: the same turns and info as readTranscript`, async () => {
      const file = path.join(FIXTURES, f);
      const info: TranscriptInfo = { format: 'spanguard', lines: 0, skippedLines: 0 };
      const turns = [];
      for await (const t of readTurns(file, 'auto', info)) turns.push(t);
      const whole = await readTranscript(file);
      expect(turns).toEqual(whole.turns);
      expect(info).toEqual({ format: whole.format, lines: whole.lines, skippedLines: whole.skippedLines });
    });
  }

  it('a malformed line after 50,000 good ones: the 50,000 turns come first, then a typed error naming the line', async () => {
    const file = path.join(tmpDir(), 'long.jsonl');
    const good = Array.from({ length: 50_000 }, (_, i) => JSON.stringify({ turn: i + 1, role: 'user', text: `line ${i + 1}` }));
    fs.writeFileSync(file, `${good.join('\n')}\n{"turn": 50001, "role": \n`);
    let n = 0;
    const err = await (async () => {
      for await (const t of readTurns(file)) {
        n++;
        expect(t.turn).toBe(n);
      }
    })().catch((e: unknown) => e);
    expect(n).toBe(50_000);
    expect(err).toBeInstanceOf(TranscriptError);
    expect(err).toBeInstanceOf(SpanguardError);
    expect(err).toMatchObject({ code: 'INVALID_ARGUMENT', details: { line: 50_001 }, line: 50_001 });
    expect((err as Error).message).toMatch(/^line 50001: /);
  });
});
