// Anchor detection rules and the never-stated perturbation (SPEC "anchor", "probe").
import { describe, expect, it } from 'vitest';
import { detectAnchor, perturb } from '../../src/anchors.js';

describe('anchors: quantities with units are anchors, with the verbatim line as the fact', () => {
  it.each([
    ['Set the client to a rate limit of 40 req/s for the upstream API.', '40 req/s'],
    ['Ran 173 tests in 1.479s', '1.479s'],
    ['The cache may hold 512 MiB at most', '512 MiB'],
    ['latency p99 was 3.5ms after the change', '3.5ms'],
  ])('%s', (text, value) => {
    const m = detectAnchor(text, 'assistant');
    expect(m?.rule).toBe('quantity');
    expect(m!.fact).toContain(value);
    expect(text).toContain(m!.fact);
  });
});

describe('anchors: constraints and configuration values', () => {
  it('constraint language in a user turn is an anchor', () => {
    expect(detectAnchor('You must never push to the main branch directly.', 'user')?.rule).toBe('constraint');
  });
  it('constraint language without a value in a tool output is not', () => {
    expect(detectAnchor('error: you must specify a branch', 'tool')).toBeNull();
  });
  it('configuration assignments are anchors', () => {
    expect(detectAnchor('export RATE_LIMIT=40', 'tool')?.rule).toBe('configuration');
    expect(detectAnchor('run it with --max-retries 5', 'assistant')?.rule).toBe('configuration');
  });
  it('plain prose is not an anchor, and empty text is valid and not an anchor', () => {
    expect(detectAnchor('Let me look at the file first.', 'assistant')).toBeNull();
    expect(detectAnchor('', 'tool')).toBeNull();
  });
  it('facts from long lines are cut around the match, still verbatim', () => {
    const text = `${'x'.repeat(400)} limit is 40 req/s ${'y'.repeat(400)}`;
    const m = detectAnchor(text, 'user')!;
    expect(m.fact.length).toBeLessThanOrEqual(160);
    expect(text).toContain(m.fact);
    expect(m.fact).toContain('40 req/s');
  });
});

describe('perturb: a never-stated value made from a real one', () => {
  it('changes every number and keeps the rest', () => {
    const p = perturb('rate limit of 40 req/s');
    expect(p).not.toBe('rate limit of 40 req/s');
    expect(p).toMatch(/^rate limit of \d+ req\/s$/);
  });
  it('changes an identifier when there is no number, and variants differ', () => {
    const a = perturb('call parseConfigFile first', 0);
    const b = perturb('call parseConfigFile first', 1);
    expect(a).not.toBe('call parseConfigFile first');
    expect(a).not.toBe(b);
  });
});
