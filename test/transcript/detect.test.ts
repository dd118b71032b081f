// `auto` tells the transcript formats apart by their first lines; a named format reads the
// file as that format whatever it holds.
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { DETECT_LINES, detectFormat, readTranscript, TranscriptError } from '../../src/transcript.js';
import { tmpDir } from '../helpers/data.js';

const CLAUDE = path.resolve('test/fixtures/agent-sessions/claude-code-session.jsonl');
const CODEX = path.resolve('test/fixtures/agent-sessions/codex-rollout.jsonl');
const file = (text: string | Buffer, name = 't.jsonl') => {
  const f = path.join(tmpDir(), name);
  fs.writeFileSync(f, text);
  return f;
};
const jsonl = (rows: unknown[]) => rows.map((r) => JSON.stringify(r)).join('\n') + '\n';

async function malformed(p: Promise<unknown>, line: number, why: RegExp): Promise<TranscriptError> {
  try {
    await p;
  } catch (e) {
    expect(e).toBeInstanceOf(TranscriptError);
    expect((e as TranscriptError).line).toBe(line);
    expect((e as Error).message).toMatch(why);
    return e as TranscriptError;
  }
  throw new Error('expected a TranscriptError');
}

describe('auto reads each format as what its first lines show', () => {
  it('a Claude Code session, a Codex rollout, spanguard turns and chat messages', async () => {
    expect((await readTranscript(CLAUDE)).format).toBe('claude-code');
    expect((await readTranscript(CODEX)).format).toBe('codex');
    expect((await readTranscript(file(jsonl([{ turn: 1, role: 'user', text: 'hi' }])))).format).toBe('spanguard');
    expect((await readTranscript(file(jsonl([{ role: 'user', content: 'hi' }])))).format).toBe('spanguard');
  });
  it('reads the same turns as the named format, gzip too', async () => {
    for (const [f, format] of [
      [CLAUDE, 'claude-code'],
      [CODEX, 'codex'],
    ] as const) {
      const named = await readTranscript(f, format);
      expect((await readTranscript(f)).turns).toEqual(named.turns);
      expect((await readTranscript(file(zlib.gzipSync(fs.readFileSync(f)), 't.jsonl.gz'))).turns).toEqual(named.turns);
    }
  });
  it('each line kind', () => {
    expect(detectFormat({ timestamp: 'x', type: 'session_meta', payload: { id: 'x' } })).toBe('codex');
    expect(detectFormat({ timestamp: 'x', type: 'event_msg', payload: {} })).toBe('codex');
    expect(detectFormat({ type: 'summary', summary: 'x', leafUuid: 'u' })).toBe('claude-code');
    expect(detectFormat({ type: 'file-history-snapshot', messageId: 'u', snapshot: {} })).toBe('claude-code');
    expect(detectFormat({ type: 'user', message: { role: 'user', content: 'x' } })).toBe('claude-code');
    expect(detectFormat({ text: 'x', turn: 1, role: 'user' })).toBe('spanguard');
    expect(detectFormat({ role: 'tool', content: 'x', tool_call_id: 'c' })).toBe('spanguard');
    // A Codex line type without its payload, and a line of none of them, do not tell.
    expect(detectFormat({ type: 'session_meta' })).toBeUndefined();
    expect(detectFormat({ type: 'something', data: 1 })).toBeUndefined();
    expect(detectFormat({ hello: 'world' })).toBeUndefined();
  });
  it('lines that do not tell are held until one does, then read in that format', async () => {
    const f = file(jsonl([{ type: 'custom-title', title: 'x' }, { type: 'tag', tag: 'x' }, { type: 'user', sessionId: 's', message: { role: 'user', content: 'first words' } }]));
    const t = await readTranscript(f);
    expect(t.format).toBe('claude-code');
    expect(t.turns.map((x) => x.text)).toEqual(['first words']);
  });
  it(`a file whose first ${DETECT_LINES} lines never tell is malformed at its first line`, async () => {
    const rows = Array.from({ length: DETECT_LINES + 2 }, (_, i) => ({ SECRET: i }));
    const e = await malformed(readTranscript(file('\n' + jsonl(rows))), 2, /no known transcript format in the first 16 line\(s\).*name it with --format/);
    expect(e.message).not.toMatch(/SECRET/);
    await malformed(readTranscript(file(jsonl([{ SECRET: 1 }]))), 1, /no known transcript format in the first 1 line\(s\)/);
  });
  it('a line that is not JSON is named before any format is known', async () => {
    await malformed(readTranscript(file('{"hello": 1}\nSECRET not json\n')), 2, /^line 2: not valid JSON/);
  });
  it('an empty file is an empty transcript', async () => {
    expect(await readTranscript(file(''))).toEqual({ format: 'spanguard', turns: [], lines: 0, skippedLines: 0 });
  });
});

describe('a named format reads every line as that format', () => {
  it('a Claude Code session read as codex is malformed at line 1', async () => {
    await malformed(readTranscript(CLAUDE, 'codex'), 1, /^line 1: not a Codex rollout line/);
  });
  it('a Codex rollout read as claude-code is malformed at line 1', async () => {
    await malformed(readTranscript(CODEX, 'claude-code'), 1, /^line 1: not a Claude Code session line/);
  });
  it('a Codex rollout read as spanguard is malformed at line 1', async () => {
    await malformed(readTranscript(CODEX, 'spanguard'), 1, /neither a turn/);
  });
});
