// A turn's metadata is the JSON text of a plain object. What JSON cannot hold or what would
// exhaust the stack is a typed INVALID_ARGUMENT, and the batch it came in writes nothing.
import { describe, expect, it } from 'vitest';
import { MAX_META_DEPTH } from '../../src/meta.js';
import { expectRefused, storesClosedAfterEach } from './helpers.js';

const openStore = storesClosedAfterEach();

/** An object nested `levels` deep: the outer object is level 1. */
function nested(levels: number): Record<string, unknown> {
  let o: Record<string, unknown> = { leaf: true };
  for (let i = 1; i < levels; i++) o = { d: o };
  return o;
}

describe('meta holding a BigInt is INVALID_ARGUMENT naming the path', () => {
  it('at the top, inside an array and deep in an object', async () => {
    const s = await openStore();
    await expectRefused(s, { meta: { size: 10n } }, 'INVALID_ARGUMENT', /meta\.size is a BigInt/);
    await expectRefused(s, { meta: { sizes: [1, 2n] } }, 'INVALID_ARGUMENT', /meta\.sizes\[1\] is a BigInt/);
    await expectRefused(s, { meta: { a: { b: { c: -1n } } } }, 'INVALID_ARGUMENT', /meta\.a\.b\.c is a BigInt/);
  });
  it('through push of a ContextWindow too', async () => {
    const { ContextWindow } = await import('../../src/index.js');
    const s = await openStore();
    const w = new ContextWindow(s, { budgetTokens: 1000 });
    const next = s.log.nextId();
    await expect(w.push({ turn: 2, role: 'user', text: 'x', meta: { n: 1n } })).rejects.toMatchObject({ name: 'SpanguardError', code: 'INVALID_ARGUMENT' });
    expect(s.log.nextId()).toBe(next);
    expect(w.snapshot()).toHaveLength(0);
  });
});

describe('cyclic meta is INVALID_ARGUMENT; an object shared without a cycle is fine', () => {
  it('a self reference, a cycle through an array', async () => {
    const s = await openStore();
    const self: Record<string, unknown> = { a: 1 };
    self.me = self;
    await expectRefused(s, { meta: self }, 'INVALID_ARGUMENT', /meta\.me refers back/);
    const outer: Record<string, unknown> = {};
    outer.list = [{ up: outer }];
    await expectRefused(s, { meta: outer }, 'INVALID_ARGUMENT', /meta\.list\[0\]\.up refers back/);
  });
  it('the same object twice, side by side, is stored twice', async () => {
    const s = await openStore();
    const shared = { k: 'v' };
    const id = await s.append({ turn: 2, role: 'user', text: 'x', meta: { a: shared, b: [shared, shared] } });
    expect(s.get(id)!.meta).toEqual({ a: { k: 'v' }, b: [{ k: 'v' }, { k: 'v' }] });
  });
});

describe(`meta nests at most ${MAX_META_DEPTH} levels`, () => {
  it(`${MAX_META_DEPTH} levels are stored; ${MAX_META_DEPTH + 1} and 100,000 are INVALID_ARGUMENT, never a stack overflow`, async () => {
    const s = await openStore();
    const id = await s.append({ turn: 2, role: 'user', text: 'x', meta: nested(MAX_META_DEPTH) });
    let m = s.get(id)!.meta as Record<string, unknown>;
    for (let i = 1; i < MAX_META_DEPTH; i++) m = m.d as Record<string, unknown>;
    expect(m).toEqual({ leaf: true });
    await expectRefused(s, { meta: nested(MAX_META_DEPTH + 1) }, 'INVALID_ARGUMENT', new RegExp(`deeper than ${MAX_META_DEPTH} levels`));
    await expectRefused(s, { meta: nested(100_000) }, 'INVALID_ARGUMENT', /deeper than/);
    let arrays: unknown = [];
    for (let i = 0; i < 100_000; i++) arrays = [arrays];
    await expectRefused(s, { meta: { arrays } }, 'INVALID_ARGUMENT', /deeper than/);
  });
});

describe('meta must be a plain object', () => {
  for (const [name, meta] of [
    ['an array', [1, 2]],
    ['a string', 'tags'],
    ['a number', 5],
    ['null', null],
  ] as [string, unknown][]) {
    it(`${name} is INVALID_ARGUMENT`, async () => expectRefused(await openStore(), { meta: meta as Record<string, unknown> }, 'INVALID_ARGUMENT', /meta must be a plain object/));
  }
  it('a getter or toJSON that throws is INVALID_ARGUMENT', async () => {
    const s = await openStore();
    const getter = Object.defineProperty({}, 'boom', {
      enumerable: true,
      get() {
        throw new RangeError('no');
      },
    });
    await expectRefused(s, { meta: getter }, 'INVALID_ARGUMENT', /meta could not be read/);
    await expectRefused(s, { meta: { when: { toJSON: () => { throw new Error('no'); } } } }, 'INVALID_ARGUMENT', /meta could not be read/);
  });
  it('toJSON is applied as JSON.stringify applies it (a Date is stored as its ISO string)', async () => {
    const s = await openStore();
    const id = await s.append({ turn: 2, role: 'user', text: 'x', meta: { at: new Date(0) } });
    expect(s.get(id)!.meta).toEqual({ at: '1970-01-01T00:00:00.000Z' });
  });
});
