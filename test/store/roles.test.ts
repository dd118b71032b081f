// Roles are free strings for the host. The five known roles are stored as a code; any other
// role — including names of Object.prototype members — is stored by name in meta.role and
// comes back as given. A host's own meta.role never overrides the record's role.
import { describe, expect, it } from 'vitest';
import { SpanStore } from '../../src/index.js';
import { tmpDir } from '../helpers/data.js';
import { expectRefused, storesClosedAfterEach } from './helpers.js';

const openStore = storesClosedAfterEach();

describe('a host role named like an Object.prototype member is stored faithfully', () => {
  const names = ['__proto__', 'constructor', 'toString', 'hasOwnProperty', 'valueOf', '__defineGetter__'];
  it('get returns the role as given, and meta.role holds it', async () => {
    const s = await openStore();
    for (const [i, role] of names.entries()) {
      const id = await s.append({ turn: 2 + i, role, text: `said as ${role}` });
      expect(s.get(id)).toMatchObject({ role, meta: { role } });
    }
  });
  it('and survives a reopen', async () => {
    const dir = tmpDir();
    let s = await SpanStore.open(dir, { durability: 'none' });
    const ids = await s.appendMany(names.map((role, i) => ({ turn: i + 1, role, text: `said as ${role}` })));
    await s.close();
    s = await SpanStore.open(dir, { readOnly: true });
    expect(s.getMany(ids).map((x) => x?.role)).toEqual(names);
    await s.close();
  });
  it('the known roles keep their codes and no meta', async () => {
    const s = await openStore();
    for (const [i, role] of ['other', 'system', 'user', 'assistant', 'tool'].entries()) {
      const id = await s.append({ turn: 2 + i, role, text: 'x' });
      expect(s.get(id)).toMatchObject({ role, meta: null });
    }
  });
});

describe("a metadata 'role' key never overrides the record's role", () => {
  it('is INVALID_ARGUMENT whatever the role, and nothing is written', async () => {
    const s = await openStore();
    for (const role of ['other', 'user', 'critic'])
      await expectRefused(s, { role, meta: { role: 'admin' } }, 'INVALID_ARGUMENT', /meta\.role is reserved/);
  });
  it('other keys are stored beside the role the store keeps', async () => {
    const s = await openStore();
    const id = await s.append({ turn: 2, role: 'critic', text: 'x', meta: { source: 'review', roles: ['a'] } });
    expect(s.get(id)).toMatchObject({ role: 'critic', meta: { source: 'review', roles: ['a'], role: 'critic' } });
  });
});

describe('a role is a non-empty string of at most 256 characters', () => {
  it('256 characters are stored; 257, empty and non-strings are INVALID_ARGUMENT', async () => {
    const s = await openStore();
    const id = await s.append({ turn: 2, role: 'r'.repeat(256), text: 'x' });
    expect(s.get(id)!.role).toBe('r'.repeat(256));
    for (const role of ['r'.repeat(257), '', 7, null, undefined, 1n])
      await expectRefused(s, { role: role as string }, 'INVALID_ARGUMENT', /role must be a non-empty string of at most 256 characters/);
  });
});
