// The fleet campaign at a small size (scripts/fleet.mjs): sessions over worker processes
// killed with SIGKILL, each killed session restored in another worker from the bucket. In
// `replicated` mode no acknowledged turn is lost and no id is handed out twice; in `group`
// losses are allowed but the verdict is never falsely lossless.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { rgwEnv } from './rgw.js';
import { rgwMissing } from './helpers.js';

async function fleet(args: string[]) {
  const env = (await rgwEnv())!;
  const r = spawnSync(process.execPath, ['--no-warnings', path.resolve('scripts/fleet.mjs'), ...args, '--json', '--results', 'none'], {
    encoding: 'utf8',
    timeout: 180_000,
    env: { ...process.env, SPANGUARD_S3_ENDPOINT: env.endpoint, SPANGUARD_S3_ACCESS_KEY: env.accessKeyId, SPANGUARD_S3_SECRET_KEY: env.secretAccessKey },
  });
  return { status: r.status, stderr: r.stderr, result: JSON.parse(r.stdout.trim().split('\n').pop()!) as Record<string, number | string[]> };
}

describe.skipIf(rgwMissing)('fleet: killed workers, sessions resumed from the bucket', () => {
  it('replicated: every acknowledged turn survives under its id, ids are never handed out twice', async () => {
    const { status, result, stderr } = await fleet(['--sessions', '6', '--turns', '60', '--workers', '3', '--kills', '3', '--inflight', '4']);
    expect(result.errors, stderr).toEqual([]);
    expect(result).toMatchObject({ kills: 3, acknowledged: 360, lost: 0, reusedOrMisplacedIds: 0, idsAcknowledgedTwice: 0, falselyLossless: 0 });
    expect(status).toBe(0);
  }, 200_000);

  it('group: a restored session that may lack acknowledged turns never has a lossless verdict', async () => {
    const { status, result } = await fleet(['--sessions', '6', '--turns', '80', '--workers', '3', '--kills', '3', '--durability', 'group', '--interval-ms', '50', '--inflight', '4']);
    expect(result).toMatchObject({ kills: 3, reusedOrMisplacedIds: 0, falselyLossless: 0, sessionsWithErrors: 0 });
    expect(status).toBe(0);
  }, 200_000);
});
