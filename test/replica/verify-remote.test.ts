// `spanguard verify DIR --remote s3://bucket/prefix` compares the local log, the manifest and
// the objects: exit 0 when they agree, 6 naming the object when one differs.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { SpanStore } from '../../src/index.js';
import { readManifest } from '../../src/replica/manifest.js';
import type { S3ObjectStore } from '../../src/replica/index.js';
import { rgwEnv } from './rgw.js';
import { bucket, rgwMissing, tmpDir, turn } from './helpers.js';

const CLI = path.resolve('dist/cli.js');

describe.skipIf(rgwMissing)('verify --remote', () => {
  it('agrees on a shipped store, and exits 6 naming a damaged object', async () => {
    const env = (await rgwEnv())!;
    const b = (await bucket('cli')) as S3ObjectStore;
    const dir = tmpDir('cli');
    const s = await SpanStore.open(dir, { segmentBytes: 8192, durability: 'replicated', replica: { objectStore: b, prefix: 'p/q' } });
    for (let i = 1; i <= 40; i++) await s.append(turn(i, ' output'.repeat(40)));
    await s.close();
    const run = () =>
      spawnSync(process.execPath, [CLI, 'verify', dir, '--remote', `s3://${b.bucket}/p/q`, '--json'], {
        encoding: 'utf8',
        env: { ...process.env, SPANGUARD_S3_ENDPOINT: env.endpoint, SPANGUARD_S3_ACCESS_KEY: env.accessKeyId, SPANGUARD_S3_SECRET_KEY: env.secretAccessKey },
      });
    const ok = run();
    expect(ok.status, ok.stderr).toBe(0);
    const report = JSON.parse(ok.stdout) as { remote: { ok: boolean; objects: number; shippedThroughId: number; localNextId: number } };
    expect(report.remote.ok).toBe(true);
    expect(report.remote.objects).toBeGreaterThan(1);
    expect(report.remote.shippedThroughId).toBe(report.remote.localNextId - 1);
    const { manifest: m } = (await readManifest(b, 'p/q'))!;
    const victim = m.segments[0]!;
    const body = Buffer.from((await b.get(victim.key))!.body);
    body[100] ^= 4;
    await b.put(victim.key, body);
    const bad = run();
    expect(bad.status).toBe(6);
    expect(JSON.parse(bad.stdout).remote.problems.join('\n')).toContain(victim.key);
  });
});
