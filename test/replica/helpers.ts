// Shared helpers for the replica tests: temp dirs, the RGW bucket per test, turns to append,
// and a store opened with a replica (closed after each test).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach } from 'vitest';
import { SpanStore, type SpanStoreOptions } from '../../src/index.js';
import type { ObjectStore, ReplicaOptions } from '../../src/replica/index.js';
import { rgwEnv, freshBucket, type RgwEnv } from './rgw.js';

export { rgwMissing } from './rgw.js';

export function tmpDir(tag: string): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), `spanguard-replica-${tag}-`));
}

let env: RgwEnv | null | undefined;
export async function bucket(tag = 'r'): Promise<ObjectStore> {
  env ??= await rgwEnv();
  if (env === null) throw new Error('no RGW');
  return freshBucket(env, tag);
}

export function turn(i: number, extra = ''): { turn: number; role: string; text: string; key: string } {
  return { turn: i, role: i % 2 ? 'user' : 'assistant', text: `turn ${i}: the build id for step ${i} is B-${(i * 7919) % 100000}${extra}`, key: `t${i}` };
}

/** Opens stores and closes whatever a test left open. */
export function storesClosedAfterEach(): (dir: string, objectStore: ObjectStore, prefix: string, opts?: SpanStoreOptions & { replicaOptions?: Partial<ReplicaOptions> }) => Promise<SpanStore> {
  const open: SpanStore[] = [];
  afterEach(async () => {
    for (const s of open.splice(0)) await s.close().catch(() => undefined);
  });
  return async (dir, objectStore, prefix, opts = {}) => {
    const { replicaOptions, ...rest } = opts;
    const s = await SpanStore.open(dir, { ...rest, replica: { objectStore, prefix, intervalMs: 20, retryBaseMs: 5, retryMaxMs: 50, ...replicaOptions } });
    open.push(s);
    return s;
  };
}
