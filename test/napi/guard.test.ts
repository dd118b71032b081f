// The one error guard every binding entry point runs in (native/napi/guard.h): whatever C++
// exception an engine call throws leaves as a typed spanguard error, never as a crash or an
// untyped exception escaping into Node-API. `_testing.throwInGuard(kind)` throws each kind
// inside the guard.
import { describe, expect, it } from 'vitest';
import { SpanguardError } from '../../src/errors.js';
import { addon } from '../../src/native.js';

interface GuardTesting {
  throwInGuard(kind: string): never;
  throwInGuardAsync(kind: string): Promise<never>;
}
const testing = (addon() as unknown as { _testing: GuardTesting })._testing;

const cases = [
  { kind: 'native', code: 'INVALID_ARGUMENT', message: 'a native error' },
  { kind: 'bad_alloc', code: 'IO_ERROR', message: 'out of memory' },
  { kind: 'logic', code: 'IO_ERROR', message: 'a logic error' },
  { kind: 'other', code: 'IO_ERROR', message: 'unknown native failure' },
] as const;

describe('a synchronous entry point turns every C++ exception into a typed error', () => {
  for (const c of cases) {
    it(`${c.kind} → ${c.code}`, () => {
      let caught: unknown;
      try {
        testing.throwInGuard(c.kind);
      } catch (e) {
        caught = e;
      }
      expect(caught).toBeInstanceOf(SpanguardError);
      expect(caught).toMatchObject({ code: c.code, message: c.message });
    });
  }
});

describe('a promise-returning entry point rejects with the typed error and never throws', () => {
  for (const c of cases) {
    it(`${c.kind} → rejected ${c.code}`, async () => {
      let p: Promise<never> | undefined;
      expect(() => {
        p = testing.throwInGuardAsync(c.kind);
      }).not.toThrow();
      const caught = await p!.then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(caught).toBeInstanceOf(SpanguardError);
      expect(caught).toMatchObject({ code: c.code, message: c.message });
    });
  }
});
