// ContextWindow.open(store, options): the live window of a reopened store, restored from the
// log and its event trail (what passes evicted, which summaries are live, what was pinned),
// so a host resumes where it was — and goes on exactly as a session that never stopped.
import { afterEach, describe, expect, it } from 'vitest';
import { ContextWindow, SpanStore, type ContextWindowOptions, type WindowTurn } from '../../src/index.js';
import { tmpDir } from '../helpers/data.js';
import { expectOpenAIRequest, pushAll, toolSessionTurns } from './helpers.js';

const open: SpanStore[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close().catch(() => {});
});
async function openStore(dir: string): Promise<SpanStore> {
  const s = await SpanStore.open(dir, { durability: 'none' });
  open.push(s);
  return s;
}

const options: ContextWindowOptions = {
  budgetTokens: 3000,
  keepRecentTurns: 4,
  maxSummaries: 2,
  summarize: async (spans) => `${spans.length} spans, turns ${spans[0]!.turnStart}-${spans.at(-1)!.turnEnd}: ran the tests, read files.`,
};

/**
 * Makes the store's indexes return nothing while `run` pushes, so every anchor probe of those
 * passes fails: the guard refuses the anchors, or spills them into the window.
 */
async function withBlindIndexes(store: SpanStore, run: () => Promise<unknown>): Promise<void> {
  const { lexical, vector } = store;
  const blind = <T extends object>(target: T, empty: Record<string, (...a: never[]) => unknown>): T =>
    new Proxy(target, {
      get(t, prop) {
        if (typeof prop === 'string' && prop in empty) return empty[prop];
        const value = Reflect.get(t, prop) as unknown;
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(t) : value;
      },
    });
  store.lexical = blind(lexical, {
    search: () => ({ ids: new Float64Array(0), scores: new Float32Array(0) }),
    searchAsync: async () => ({ ids: new Float64Array(0), scores: new Float32Array(0) }),
    searchWithin: () => ({ ids: new Float64Array(0), scores: new Float32Array(0) }),
    phrase: () => new Float64Array(0),
    phraseWithin: () => ({ ids: new Float64Array(0), complete: true }),
    phraseHas: (_l: never, _p: never, ids: Float64Array) => new Uint8Array(ids.length),
  });
  store.vector = blind(vector, {
    search: () => ({ ids: new Float64Array(0), distances: new Float32Array(0) }),
    searchBegin: () => undefined,
    searchEnd: () => ({ ids: new Float64Array(0), distances: new Float32Array(0) }),
    searchAsync: async () => ({ ids: new Float64Array(0), distances: new Float32Array(0) }),
    searchTake: () => null,
  });
  try {
    await run();
  } finally {
    store.lexical = lexical;
    store.vector = vector;
  }
}

/** A tool-using session with a pinned turn early on. */
function sessionTurns(steps: number): WindowTurn[] {
  const turns = toolSessionTurns(steps);
  turns[10] = { ...turns[10]!, pin: true };
  return turns;
}

describe('ContextWindow.open restores the live window of a reopened store', () => {
  it('the same entries (raw, summaries in place, pinned), tokens and messages as before the close', async () => {
    const dir = tmpDir();
    const turns = sessionTurns(150);
    const first = await openStore(dir);
    const w1 = new ContextWindow(first, options);
    await pushAll(w1, turns);
    expect(w1.stats().resummarized).toBeGreaterThan(0);
    const before = { snapshot: w1.snapshot(), tokens: w1.stats().tokens, pushed: w1.stats().pushedTokens, plain: w1.messages(), openai: w1.messages({ format: 'openai' }) };
    await first.close();

    const second = await openStore(dir);
    expect(new ContextWindow(second, options).snapshot()).toEqual([]);
    const w2 = await ContextWindow.open(second, options);
    expect(w2.snapshot()).toEqual(before.snapshot);
    expect(w2.stats()).toMatchObject({ tokens: before.tokens, pushedTokens: before.pushed });
    expect(w2.messages()).toEqual(before.plain);
    expect(w2.messages({ format: 'openai' })).toEqual(before.openai);
  });
  it('a resumed session goes on as one that never stopped', async () => {
    const turns = sessionTurns(150);
    // Mid-session, between a call and its result.
    const cut = turns.findIndex((t, i) => i > 180 && t.role === 'tool' && turns[i - 1]!.role === 'assistant');

    const straight = await openStore(tmpDir());
    const ws = new ContextWindow(straight, options);
    await pushAll(ws, turns);

    const dir = tmpDir();
    const a = await openStore(dir);
    await pushAll(new ContextWindow(a, options), turns.slice(0, cut));
    await a.close();
    const b = await openStore(dir);
    const wr = await ContextWindow.open(b, options);
    await pushAll(wr, turns.slice(cut));

    const shape = (w: ContextWindow) => w.snapshot().map(({ id: _id, ...e }) => e);
    expect(shape(wr)).toEqual(shape(ws));
    expect(wr.messages({ format: 'anthropic' })).toEqual(ws.messages({ format: 'anthropic' }));
    // The result pushed after the reopen stays with its call (one unit): evicted together.
    const ids = (s: SpanStore, t: number) => s.findExact(turns[t]!.text.slice(0, 120)).find((h) => h.turnStart === turns[t]!.turn)!.spanId;
    expect(b.state.evicted.has(ids(b, cut))).toBe(b.state.evicted.has(ids(b, cut - 1)));
  });
  for (const policy of ['refuse', 'spill'] as const) {
    it(`anchors the guard kept in the window (${policy}) stay there, pinned, after a reopen`, async () => {
      const dir = tmpDir();
      const turns = sessionTurns(150);
      const first = await openStore(dir);
      const w1 = new ContextWindow(first, { ...options, policy });
      await pushAll(w1, turns.slice(0, 80));
      // After every push, the window restored from the trail is this window.
      let compared = 0;
      await withBlindIndexes(first, async () => {
        for (const t of turns.slice(80, 160)) {
          await w1.push(t);
          expect((await ContextWindow.open(first, { ...options, policy })).snapshot(), `after turn ${t.turn}`).toEqual(w1.snapshot());
          compared++;
        }
      });
      expect(compared).toBe(80);
      await pushAll(w1, turns.slice(160));
      const kept = policy === 'refuse' ? w1.stats().refused : w1.stats().spilled;
      expect(kept).toBeGreaterThan(0);
      const before = { snapshot: w1.snapshot(), openai: w1.messages({ format: 'openai' }) };
      // A kept anchor whose call or result left is rendered as text: the request stays valid.
      expectOpenAIRequest(before.openai);
      await first.close();
      const w2 = await ContextWindow.open(await openStore(dir), { ...options, policy });
      expect(w2.snapshot()).toEqual(before.snapshot);
      expect(w2.snapshot().filter((e) => e.pinned && e.kind === 'raw').length).toBeGreaterThan(1);
      expect(w2.messages({ format: 'openai' })).toEqual(before.openai);
    });
  }
  it('a clipped turn is clipped again when restored', async () => {
    const dir = tmpDir();
    const s1 = await openStore(dir);
    const w1 = new ContextWindow(s1, options);
    const huge = Array.from({ length: 2500 }, (_, i) => `row ${i}: shard-${i * 13} ok`).join('\n');
    await w1.push({ turn: 1, role: 'user', text: 'dump the shards' });
    const r = await w1.push({ turn: 2, role: 'user', text: huge });
    expect(r.overflow).not.toBeNull();
    const before = w1.snapshot();
    await s1.close();
    const w2 = await ContextWindow.open(await openStore(dir), options);
    expect(w2.snapshot()).toEqual(before);
    expect(w2.stats().tokens).toBeLessThanOrEqual(options.budgetTokens);
  });
  it('malformed options are INVALID_OPTIONS, as for the constructor', async () => {
    const s = await openStore(tmpDir());
    await expect(ContextWindow.open(s, { budgetTokens: 10 })).rejects.toMatchObject({ name: 'SpanguardError', code: 'INVALID_OPTIONS' });
  });
});
