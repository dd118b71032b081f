// The guard applies grounding to every pass: a summary that states a value none of the
// spans it replaces states is refused, or marked and never evidence for that value.
import { describe, expect, it } from 'vitest';
import { SpanStore, type SpanStoreOptions } from '../../src/index.js';
import { tmpDir } from '../helpers/data.js';
import { FACT, factSession } from './helpers.js';

const session = (options: SpanStoreOptions = {}) => factSession(options, 60, 10);

describe('grounding: mark (default) accepts, records, and never uses the invented value as evidence', () => {
  it('a summary stating 45 req/s for turns that said 40 is marked; a search for 45 is not answered by it', async () => {
    const { s, ids } = await session();
    const r = await s.compact({ evict: ids.slice(5, 15), summary: { text: 'Summary: the upstream API enforces a rate limit of 45 req/s per token.', turnStart: 6, turnEnd: 15 } });
    const pass = s.events().find((e) => e.event.type === 'pass' && e.event.summaryId === r.summaryId)!.event as { ungrounded?: string[] };
    expect(pass.ungrounded).toContain('45');
    expect(r.timing.grounding).toBeGreaterThanOrEqual(0);
    const q = await s.search('the upstream API enforces a rate limit of 45 req/s per token', { kinds: ['raw', 'summary'] });
    expect(q.miss).toBe(true);
    expect(q.hits.filter((h) => h.spanId === r.summaryId)).toHaveLength(0);
  });
  it('a faithful summary is not marked', async () => {
    const { s, ids } = await session();
    const r = await s.compact({ evict: ids.slice(5, 15), summary: { text: `Summary: ${FACT}`, turnStart: 6, turnEnd: 15 } });
    const pass = s.events().find((e) => e.event.type === 'pass' && e.event.summaryId === r.summaryId)!.event as { ungrounded?: string[] };
    expect(pass.ungrounded).toBeUndefined();
  });
});

describe('grounding: refuse throws UNGROUNDED_SUMMARY, records the refusal, evicts nothing', () => {
  it('the shifted value is named in the error and the event', async () => {
    const { s, ids } = await session({ grounding: 'refuse' });
    const err = await s.compact({ evict: ids.slice(5, 15), summary: { text: 'Summary: rate limit of 45 req/s per token.', turnStart: 6, turnEnd: 15 } }).catch((e) => e);
    expect(err).toMatchObject({ code: 'UNGROUNDED_SUMMARY' });
    expect(err.details.values).toContain('45');
    expect(s.stats().evicted).toBe(0);
    expect(s.events().some((e) => e.event.type === 'refusal' && e.event.reason === 'ungrounded')).toBe(true);
  });
  it('grounding is validated', async () => {
    await expect(SpanStore.open(tmpDir(), { grounding: 'lenient' as never })).rejects.toMatchObject({ code: 'INVALID_OPTIONS' });
  });
});
