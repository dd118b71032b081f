// `spanguard replay FILE --format auto|spanguard|claude-code|codex`: an agent's own session
// file replays as it is, with the same validation as the native format (exit 65 naming the
// line, nothing written, nothing quoted).
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { SpanStore } from '../../src/store.js';
import { tmpDir } from '../helpers/data.js';
import { expectMalformed, run } from './helpers.js';

const CLAUDE = path.resolve('test/fixtures/agent-sessions/claude-code-session.jsonl');
const CODEX = path.resolve('test/fixtures/agent-sessions/codex-rollout.jsonl');

let work: string;
beforeAll(() => {
  work = tmpDir();
});
const store = (name: string) => path.join(work, name);

describe('replay reads a Claude Code session and a Codex rollout, told apart by their first lines or named', () => {
  it('auto: the format, the turns, the lines skipped, in the JSON report and in words', () => {
    const r = run('replay', CLAUDE, '--store', store('claude'), '--budget', '300', '--json');
    expect(r.status, r.stderr).toBe(0);
    const report = JSON.parse(r.stdout);
    expect(report.input).toEqual({ format: 'claude-code', turns: 21, lines: 29, skippedLines: 9 });
    expect(report.turns).toBe(21);
    expect(report.passes).toBeGreaterThan(0);
    expect(report.verdict.state).toBe('lossless');
    const text = run('replay', CODEX, '--store', store('codex-text'), '--budget', '300');
    expect(text.status, text.stderr).toBe(0);
    expect(text.stdout).toMatch(/^replayed .*codex-rollout\.jsonl \(a Codex CLI rollout\): 16 turns from 27 lines \(11 carry no conversation and were skipped\),$/m);
    const limited = run('replay', CODEX, '--store', store('codex-limited'), '--budget', '300', '--limit', '5');
    expect(limited.stdout).toMatch(/\(a Codex CLI rollout\): the first 5 of its 16 turns from 27 lines/);
  });
  it('named: the same turns as auto', () => {
    for (const [file, format] of [
      [CLAUDE, 'claude-code'],
      [CODEX, 'codex'],
    ]) {
      const auto = run('replay', file!, '--store', store(`${format}-auto`), '--budget', '300', '--json');
      const named = run('replay', file!, '--store', store(`${format}-named`), '--budget', '300', '--format', format!, '--json');
      expect(named.status, named.stderr).toBe(0);
      expect(JSON.parse(named.stdout).input).toEqual(JSON.parse(auto.stdout).input);
      expect(JSON.parse(named.stdout).tokens).toBe(JSON.parse(auto.stdout).tokens);
    }
  });
  it('the store holds each turn verbatim, with the time the file gives it, its session and tool call id', async () => {
    const store = await SpanStore.open(path.join(work, 'claude'), { readOnly: true });
    try {
      const [first] = store.findExact('bursts to 55 req/s and gets HTTP 429');
      const span = store.get(first!.spanId)!;
      expect(span.turnStart).toBe(1);
      expect(new Date(span.timestamp).toISOString()).toBe('2025-05-26T07:27:14.079Z');
      expect(span.meta).toEqual({ session: '4f35e220-c435-4cf7-b9b9-f40426042847', uuid: '9ff29d57-8b28-4da9-8e7f-000000000002' });
      const result = store.get(store.findExact('assert 55 <= 40')[0]!.spanId)!;
      expect(result.role).toBe('tool');
      expect(result.meta).toMatchObject({ toolCallId: 'toolu_01A2', isError: true });
      const call = store.get(result.id - 1)!;
      expect((call.meta!.toolCalls as { id: string; name: string }[]).map(({ id, name }) => ({ id, name }))).toEqual([{ id: 'toolu_01A2', name: 'Bash' }]);
    } finally {
      await store.close();
    }
    // A Codex command result written in its legacy JSON form is stored as its output.
    const codex = await SpanStore.open(path.join(work, 'codex-text'), { readOnly: true });
    try {
      const [hit] = codex.findExact('ttl_seconds = 3600\nbackend');
      expect(codex.get(hit!.spanId)!.meta).toMatchObject({ toolCallId: 'call_Q1', exitCode: 0 });
    } finally {
      await codex.close();
    }
  });
  it('search --since/--until select by the times the file gives', () => {
    const inside = run('search', store('codex-text'), 'TTL must be 300 seconds', '--since', '2025-10-29', '--until', '2025-10-29', '--json');
    expect(JSON.parse(inside.stdout).hits[0].turnStart).toBe(3);
    const before = run('search', store('codex-text'), 'TTL must be 300 seconds', '--until', '2025-10-28', '--json');
    expect(JSON.parse(before.stdout).hits).toEqual([]);
  });
});

describe('--format takes auto, spanguard, claude-code or codex', () => {
  it('anything else is a usage error (exit 2), one line, nothing written', () => {
    const r = run('replay', CODEX, '--store', store('yaml'), '--format', 'yaml');
    expect(r.status).toBe(2);
    expect(r.stderr).toBe('spanguard replay: --format must be auto, spanguard, claude-code or codex, got "yaml"\n');
    expect(fs.existsSync(store('yaml'))).toBe(false);
  });
});

describe('a malformed line of an agent session exits 65 naming the line, nothing written, nothing quoted', () => {
  const withLine = (src: string, at: number, bad: string) => {
    const lines = fs.readFileSync(src, 'utf8').split('\n');
    lines.splice(at - 1, 0, bad);
    const f = path.join(tmpDir(), path.basename(src));
    fs.writeFileSync(f, lines.join('\n'));
    return f;
  };
  it('a Claude Code line whose content is not a string or blocks', () => {
    const f = withLine(CLAUDE, 6, JSON.stringify({ type: 'user', sessionId: 's', message: { role: 'user', content: { SECRET: 'x' } } }));
    const r = expectMalformed(tmpDir(), [f], /transcript .*claude-code-session\.jsonl: line 6: "message.content" must be a string or an array of blocks/);
    expect(r.stderr).not.toMatch(/SECRET/);
  });
  it('a Codex line that is not JSON, and one with a bad timestamp', () => {
    const r = expectMalformed(tmpDir(), [withLine(CODEX, 9, '{"type":"response_item", SECRET')], /codex-rollout\.jsonl: line 9: not valid JSON/);
    expect(r.stderr).not.toMatch(/SECRET/);
    const t = withLine(CODEX, 4, JSON.stringify({ timestamp: 'SECRET', type: 'response_item', payload: { type: 'message', role: 'user', content: [] } }));
    expect(expectMalformed(tmpDir(), [t], /line 4: "timestamp" must be an ISO 8601 date-time/).stderr).not.toMatch(/SECRET/);
  });
  it('a session read as the other format', () => {
    expectMalformed(tmpDir(), [CLAUDE, '--format', 'codex'], /line 1: not a Codex rollout line/);
    expectMalformed(tmpDir(), [CODEX, '--format', 'claude-code'], /line 1: not a Claude Code session line/);
  });
});
