// The event trail (src/store/trail.ts): one parser of event records for every reader of the
// trail. A record that is not an event (not JSON) is reported once, as a degrade at open, and
// otherwise left out: events() and a reader's refresh() go on past it instead of throwing.
import { describe, expect, it } from 'vitest';
import { SpanStore } from '../../src/index.js';
import { RecordKind } from '../../src/native.js';
import { tmpDir } from '../helpers/data.js';

/** Appends an event record whose text is not JSON, as a damaged trail would hold. */
async function appendBadEvent(s: SpanStore): Promise<number> {
  return s.log.append({
    kinds: Uint8Array.of(RecordKind.event),
    flags: Uint8Array.of(0),
    roles: Uint8Array.of(0),
    turnStart: Float64Array.of(1),
    turnEnd: Float64Array.of(1),
    timestamps: Float64Array.of(Date.now()),
    tokens: Uint32Array.of(0),
    texts: ['{"type": "pass", '],
    metas: [null],
  });
}

describe('an event record that cannot be read is left out by every reader of the trail', () => {
  it('events() lists the readable events around it', async () => {
    const s = await SpanStore.open(tmpDir(), { durability: 'none' });
    await s.append({ turn: 1, role: 'user', text: 'the first turn' });
    await s.pin('first turn', 1);
    const bad = await appendBadEvent(s);
    await s.pin('the first', 1);
    const events = s.events();
    expect(events.map((e) => e.id)).not.toContain(bad);
    expect(events.filter((e) => e.event.type === 'pin').map((e) => (e.event as { fact: string }).fact)).toEqual(['first turn', 'the first']);
    await s.close();
  });

  it("a reader's refresh() applies the events after it", async () => {
    const dir = tmpDir();
    const w = await SpanStore.open(dir, { durability: 'none' });
    await w.append({ turn: 1, role: 'user', text: 'the first turn' });
    await w.log.flush();
    const r = await SpanStore.open(dir, { readOnly: true });
    await appendBadEvent(w);
    await w.pin('first turn', 1);
    await w.log.flush();
    await expect(r.refresh()).resolves.toBeGreaterThan(0);
    expect(r.stats().pinnedFacts).toBe(w.stats().pinnedFacts);
    await r.close();
    await w.close();
  });

  it('the open that finds it records one degrade naming the record', async () => {
    const dir = tmpDir();
    const w = await SpanStore.open(dir, { durability: 'none' });
    await w.append({ turn: 1, role: 'user', text: 'the first turn' });
    const bad = await appendBadEvent(w);
    await w.close();
    const s = await SpanStore.open(dir, { durability: 'none' });
    const degrades = s.events().filter((e) => e.event.type === 'degrade');
    expect(degrades).toHaveLength(1);
    expect((degrades[0]!.event as { detail: string }).detail).toContain(`event record ${bad} is not valid JSON`);
    expect(s.verdict().state).toBe('degraded');
    await s.close();
  });
});
