// The local Ceph RGW the replica tests run against: started once per test run by the first
// test file that asks for it (scripts/rgw/start.sh, under the run's TMPDIR), shared by the
// others through an env file, stopped by rgw-global.ts when the run ends. Without the Ceph
// binaries (scripts/rgw/install.sh) `rgwEnv()` is null and the tests say why they skip.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { S3ObjectStore } from '../../src/replica/index.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
export const RGW_BINARIES = ['radosgw', 'ceph-mon', 'ceph-osd', 'radosgw-admin'];

export interface RgwEnv {
  endpoint: string;
  accessKeyId: string;
  secretAccessKey: string;
  dir: string;
}

function onPath(bin: string): boolean {
  return (process.env.PATH ?? '').split(':').some((d) => d && fs.existsSync(path.join(d, bin)));
}

export const rgwMissing: string | null = RGW_BINARIES.every(onPath)
  ? null
  : `Ceph RGW binaries (${RGW_BINARIES.join(', ')}) are not installed: run scripts/rgw/install.sh to run the replica tests`;

/** The run's RGW directory: one per TMPDIR (test/global-setup.ts gives each run its own). */
export function rgwDir(): string {
  return path.join(os.tmpdir(), 'rgw');
}

function readEnv(file: string): RgwEnv {
  const kv = Object.fromEntries(
    fs
      .readFileSync(file, 'utf8')
      .split('\n')
      .filter((l) => l.includes('='))
      .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
  );
  return { endpoint: kv.SPANGUARD_S3_ENDPOINT!, accessKeyId: kv.SPANGUARD_S3_ACCESS_KEY!, secretAccessKey: kv.SPANGUARD_S3_SECRET_KEY!, dir: kv.SPANGUARD_RGW_DIR! };
}

/** Starts the run's RGW if no test file has yet (an mkdir is the lock), and returns how to reach it. */
export async function rgwEnv(): Promise<RgwEnv | null> {
  if (rgwMissing) return null;
  if (process.env.SPANGUARD_S3_ENDPOINT && process.env.SPANGUARD_S3_ACCESS_KEY && process.env.SPANGUARD_S3_SECRET_KEY)
    return { endpoint: process.env.SPANGUARD_S3_ENDPOINT, accessKeyId: process.env.SPANGUARD_S3_ACCESS_KEY, secretAccessKey: process.env.SPANGUARD_S3_SECRET_KEY, dir: '' };
  const dir = rgwDir();
  const env = path.join(dir, 'env');
  const lock = `${dir}.lock`;
  let mine = false;
  try {
    fs.mkdirSync(lock);
    mine = true;
  } catch {
    // another test file is starting it
  }
  if (mine) {
    try {
      execFileSync(path.join(ROOT, 'scripts/rgw/start.sh'), [dir], { stdio: ['ignore', 'ignore', 'pipe'] });
    } catch (e) {
      fs.writeFileSync(`${dir}.failed`, String((e as { stderr?: Buffer }).stderr ?? e));
      throw e;
    }
  }
  for (let i = 0; i < 1200 && !fs.existsSync(env); i++) {
    if (fs.existsSync(`${dir}.failed`)) throw new Error(`RGW failed to start: ${fs.readFileSync(`${dir}.failed`, 'utf8')}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return readEnv(env);
}

/** A fresh bucket on the run's RGW. */
export async function freshBucket(env: RgwEnv, tag = 'b'): Promise<S3ObjectStore> {
  const store = new S3ObjectStore({
    endpoint: env.endpoint,
    bucket: `${tag}-${randomUUID().slice(0, 12)}`,
    accessKeyId: env.accessKeyId,
    secretAccessKey: env.secretAccessKey,
  });
  await store.createBucket();
  return store;
}

export function s3Options(env: RgwEnv, bucket: string) {
  return { endpoint: env.endpoint, bucket, accessKeyId: env.accessKeyId, secretAccessKey: env.secretAccessKey };
}
