/**
 * `spanguard verify DIR --remote s3://bucket/prefix`: the CLI's side of the remote check. The
 * endpoint and keys come from the environment (SPANGUARD_S3_ENDPOINT, SPANGUARD_S3_ACCESS_KEY
 * and SPANGUARD_S3_SECRET_KEY, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY; AWS_REGION).
 */
import { ErrorCode, SpanguardError } from '../errors.js';
import { verifyRemote, type RemoteCheck } from './index.js';
import { S3ObjectStore } from './object-store.js';

export function parseRemote(url: string): { bucket: string; prefix: string } {
  const m = /^s3:\/\/([^/]+)\/(.+?)\/?$/.exec(url);
  if (!m) throw new SpanguardError(ErrorCode.INVALID_ARGUMENT, `--remote must be s3://<bucket>/<prefix>, got ${url}`);
  return { bucket: m[1]!, prefix: m[2]! };
}

export async function checkRemote(dir: string, url: string, env: NodeJS.ProcessEnv = process.env): Promise<RemoteCheck & { remote: string }> {
  const { bucket, prefix } = parseRemote(url);
  const accessKeyId = env.SPANGUARD_S3_ACCESS_KEY ?? env.AWS_ACCESS_KEY_ID;
  const secretAccessKey = env.SPANGUARD_S3_SECRET_KEY ?? env.AWS_SECRET_ACCESS_KEY;
  if (!accessKeyId || !secretAccessKey)
    throw new SpanguardError(ErrorCode.INVALID_ARGUMENT, '--remote needs SPANGUARD_S3_ACCESS_KEY and SPANGUARD_S3_SECRET_KEY (or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY) in the environment');
  const store = new S3ObjectStore({
    bucket,
    accessKeyId,
    secretAccessKey,
    ...(env.SPANGUARD_S3_ENDPOINT ? { endpoint: env.SPANGUARD_S3_ENDPOINT } : {}),
    ...(env.AWS_REGION ? { region: env.AWS_REGION } : {}),
  });
  try {
    return { remote: url, ...(await verifyRemote(dir, { objectStore: store, prefix })) };
  } finally {
    await store.destroy();
  }
}
