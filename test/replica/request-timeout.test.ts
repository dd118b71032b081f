// S3ObjectStore: a request the server never answers fails after requestTimeoutMs as a
// transient ObjectStoreError (the shipper retries it), and its socket is let go.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ObjectStoreError, S3ObjectStore } from '../../src/replica/index.js';

let server: http.Server;
let endpoint = '';
const hung: http.ServerResponse[] = [];

beforeAll(async () => {
  // Reads the request, never answers.
  server = http.createServer((req, res) => {
    req.resume();
    hung.push(res);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  for (const r of hung) r.destroy();
  await new Promise((r) => server.close(r));
});

describe('a request the server does not answer', () => {
  it('rejects after requestTimeoutMs as a transient ObjectStoreError saying it timed out', async () => {
    const s = new S3ObjectStore({ endpoint, bucket: 'b', accessKeyId: 'k', secretAccessKey: 's', requestTimeoutMs: 300 });
    try {
      const t0 = performance.now();
      const err = await s.put('p/manifest.json', Buffer.from('{}'), { ifMatch: 'x' }).catch((e: unknown) => e);
      const ms = performance.now() - t0;
      expect(err).toBeInstanceOf(ObjectStoreError);
      expect(err).toMatchObject({ kind: 'transient', message: 'request timed out after 300 ms' });
      expect(ms).toBeGreaterThanOrEqual(250);
      expect(ms).toBeLessThan(5000);
      const got = await s.get('p/manifest.json').catch((e: unknown) => e);
      expect(got).toMatchObject({ kind: 'transient', message: 'request timed out after 300 ms' });
    } finally {
      await s.destroy();
    }
  });
});
