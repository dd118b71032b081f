// store.pin(fact, spanId) records a fact its span states verbatim, and nothing else: a fact
// the span does not contain is INVALID_ARGUMENT with nothing recorded (it would fail every
// audit from then on and degrade the store for good).
import { describe, expect, it } from 'vitest';
import { storesClosedAfterEach } from './helpers.js';

const openStore = storesClosedAfterEach();

describe('pin checks that the fact is in its span', () => {
  it('a fact the span does not contain verbatim is INVALID_ARGUMENT; nothing is recorded and the verdict is untouched', async () => {
    const s = await openStore();
    const id = await s.append({ turn: 2, role: 'user', text: 'The upstream API allows 40 req/s; never exceed it.' });
    const next = s.log.nextId();
    for (const fact of ['41 req/s', '40 REQ/S', 'allows  40', 'never exceed it!'])
      await expect(s.pin(fact, id)).rejects.toMatchObject({ name: 'SpanguardError', code: 'INVALID_ARGUMENT', details: { spanId: id }, message: expect.stringMatching(/does not contain the fact verbatim/) });
    expect(s.log.nextId()).toBe(next);
    expect(s.state.pins).toEqual([]);
    expect(s.events().filter((e) => e.event.type === 'pin')).toEqual([]);
    expect((await s.audit()).passed).toBe(true);
  });
  it('a fact the span states is recorded and passes the audit', async () => {
    const s = await openStore();
    const id = await s.append({ turn: 2, role: 'user', text: 'The upstream API allows 40 req/s; never exceed it.' });
    await s.pin('allows 40 req/s', id);
    expect(s.state.pins).toEqual([{ fact: 'allows 40 req/s', spanId: id }]);
    const report = await s.audit();
    expect(report.passed).toBe(true);
    expect(s.verdict().state).toBe('lossless');
  });
  it('an unknown span is still UNKNOWN_SPAN', async () => {
    const s = await openStore();
    await expect(s.pin('x', 99)).rejects.toMatchObject({ code: 'UNKNOWN_SPAN' });
  });
});
