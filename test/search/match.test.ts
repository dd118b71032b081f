// The honest-miss match (src/match.ts): whether a candidate text really answers a query. One
// describe per rule of the module's header, each on the pure functions, with a candidate the
// rule alone turns away and one it lets through.
import { describe, expect, it } from 'vitest';
import { consistent, DEFAULT_MATCH_POLICY, matches, profileQuery } from '../../src/match.js';

const match = (query: string, text: string) => matches(profileQuery(query), text);

describe('match rule 1: every value and identifier of the query is in the candidate, bounded', () => {
  // Values with no words beside them (rule 2 has nothing to check) and nothing spelt one edit
  // away (rule 5 neither): what turns these candidates away is the value itself.
  it('a number is matched only as that number, not inside a longer one', () => {
    expect(match('we agreed the retry limit ... 40', 'we agreed the retry limit ... 40')).toBe(true);
    expect(match('we agreed the retry limit ... 40', 'we agreed the retry limit ... 140')).toBe(false);
  });
  it('an identifier with digits is a value: float16 is not bf16', () => {
    expect(match('we store the weights ... float16', 'we store the weights ... float16')).toBe(true);
    expect(match('we store the weights ... float16', 'we store the weights ... bf16')).toBe(false);
  });
  it('an identifier of 5+ chars without digits is required like a value', () => {
    expect(match('the handler raised ValueError while parsing the config', 'the handler raised ValueError while parsing the config')).toBe(true);
    expect(match('the handler raised ValueError while parsing the config', 'the handler raised KeyError while parsing the config')).toBe(false);
  });
});

describe('match rule 2: a value stands next to the words it stands next to in the query', () => {
  it('verbosity=4 is not held by a text where verbosity is 2 and a 4 stands elsewhere', () => {
    expect(match('run it with verbosity=4 please', 'then run it with verbosity=4 please')).toBe(true);
    expect(match('run it with verbosity=4 please', 'then run it with verbosity=2 please, for 4 runs')).toBe(false);
  });
});

describe('match rule 3: the candidate covers at least minCoverage of the query terms', () => {
  const query = 'deployment pipeline promotes canary builds through staging before production rollout';
  it('a candidate with most of the terms matches', () => {
    expect(match(query, 'our deployment pipeline promotes canary builds through staging before the production rollout')).toBe(true);
  });
  it('a candidate with a few of them does not', () => {
    expect(match(query, 'the deployment was slow today')).toBe(false);
  });
  it('the threshold is the policy’s', () => {
    const text = 'deployment pipeline promotes canary builds';
    const profile = profileQuery(query);
    expect(matches(profile, text, { ...DEFAULT_MATCH_POLICY, minCoverage: 0.3 })).toBe(true);
    expect(matches(profile, text, { ...DEFAULT_MATCH_POLICY, minCoverage: 0.9 })).toBe(false);
  });
});

describe('match rule 4: the rules hold within one window of lines around the key term', () => {
  const query = 'deprecation warning emitted by setuptools';
  it('the words on the line of the key term match', () => {
    const log = ['running build', 'copying files', 'deprecation warning emitted by setuptools', 'writing wheel', 'done'].join('\n');
    expect(match(query, log)).toBe(true);
  });
  it('the same words scattered over a long output do not', () => {
    const log = ['deprecation of the old api', 'copying files', 'a warning about paths', 'writing wheel', 'tags emitted', 'cleanup', 'setuptools 68 used'].join('\n');
    expect(match(query, log)).toBe(false);
  });
});

describe('match rule 5: a one-edit variant of a distinctive term, or an identifier with other digits, contradicts', () => {
  it('a distinctive term missing from the candidate but spelt one edit away there is a contradiction', () => {
    const profile = profileQuery('the function parseConfigFile failed on startup because the config was missing');
    const text = 'the function parseConfigFjle failed on startup because the config was missing';
    // Coverage alone would let it through: the other words are all there.
    expect(matches(profile, text, { minCoverage: 0.5, minValueCoverage: 0 })).toBe(false);
    expect(matches(profile, 'the function failed on startup because the config was missing', { minCoverage: 0.5, minValueCoverage: 0 })).toBe(true);
  });
  it('an identifier with digits stated with other digits is a contradiction', () => {
    const profile = profileQuery('the file was decoded as utf-15 by the reader module');
    expect(matches(profile, 'the file was decoded as utf-8 by the reader module', { minCoverage: 0.5, minValueCoverage: 0 })).toBe(false);
    expect(matches(profile, 'the file was decoded by the reader module', { minCoverage: 0.5, minValueCoverage: 0 })).toBe(true);
  });
});

describe('match rule 6: a candidate holding the quoted part verbatim need only be consistent with the rest', () => {
  const query = 'In the episode about the flaky suite, I ran `pytest -k test_roundtrip` and the count ... 3';
  it('the quote and its value answer, the framing need not be covered', () => {
    expect(consistent(profileQuery(query), '$ pytest -k test_roundtrip\nfailed: 3', true)).toBe(true);
  });
  it('the quote without the standalone value of the query is not consistent', () => {
    expect(consistent(profileQuery(query), '$ pytest -k test_roundtrip\nfailed: 5', true)).toBe(false);
  });
  it('every quote of the query, however short, must be verbatim in the candidate', () => {
    const q = 'the column `_dtype_info` came out as `<U9` there';
    expect(consistent(profileQuery(q), 'column _dtype_info came out as <U9 there', true)).toBe(true);
    expect(consistent(profileQuery(q), 'column _dtype_info came out as float there', true)).toBe(false);
  });
});
