/**
 * Object-storage replica (docs/replication.md), against a local Ceph RGW (scripts/rgw/start.sh,
 * started here unless SPANGUARD_S3_ENDPOINT / _ACCESS_KEY / _SECRET_KEY name a running one):
 *
 * - restore: a store of N spans (default 10^5, ~400-character turns from bench/data.ts) shipped
 *   in `group` mode, then restored into another directory from the bucket alone and opened
 *   (the index snapshot its close shipped loaded and caught up, event trail replayed); wall time of download + checks +
 *   open, and the verdict, an exact phrase and the snapshot's use (no index rebuilt) checked against the source.
 * - overhead: 64 concurrent appenders in `group` mode for a fixed number of appends, with and
 *   without background shipping, alternated (A B A B ...), appends per second compared.
 * - replicated: sequential single appends in `replicated` mode, p50 / p99, beside the p50 of
 *   one PutObject of a manifest-sized body against the same RGW, plain and conditional
 *   (If-Match: what a manifest commit is), and the time each append adds to its own commit.
 *
 * npm run bench:replica -- [--spans 100000] [--appends 20000] [--rounds 3]
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { SpanStore, restoreReplica, S3ObjectStore } from '../src/index.js';
import type { ObjectStore } from '../src/replica/index.js';
import { packageRoot } from '../src/native.js';
import { loadData } from './data.js';
import { pct } from './lib.js';

function arg(name: string, dflt: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
}

interface Env {
  endpoint: string;
  accessKeyId: string;
  secretAccessKey: string;
  stop: () => void;
}

function rgw(): Env {
  const e = process.env;
  if (e.SPANGUARD_S3_ENDPOINT && e.SPANGUARD_S3_ACCESS_KEY && e.SPANGUARD_S3_SECRET_KEY)
    return { endpoint: e.SPANGUARD_S3_ENDPOINT, accessKeyId: e.SPANGUARD_S3_ACCESS_KEY, secretAccessKey: e.SPANGUARD_S3_SECRET_KEY, stop: () => undefined };
  const root = packageRoot;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'spanguard-bench-rgw-'));
  const out = execFileSync(path.join(root, 'scripts/rgw/start.sh'), [dir], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  const kv = Object.fromEntries(out.split('\n').filter((l) => l.includes('=')).map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));
  return {
    endpoint: kv.SPANGUARD_S3_ENDPOINT!,
    accessKeyId: kv.SPANGUARD_S3_ACCESS_KEY!,
    secretAccessKey: kv.SPANGUARD_S3_SECRET_KEY!,
    stop: () => execFileSync(path.join(root, 'scripts/rgw/stop.sh'), [dir], { stdio: 'ignore' }),
  };
}

async function bucket(env: Env): Promise<S3ObjectStore> {
  const b = new S3ObjectStore({ endpoint: env.endpoint, bucket: `bench-${randomUUID().slice(0, 12)}`, accessKeyId: env.accessKeyId, secretAccessKey: env.secretAccessKey });
  await b.createBucket();
  return b;
}

const tmp = (tag: string) => fs.mkdtempSync(path.join(os.tmpdir(), `spanguard-bench-replica-${tag}-`));

async function benchRestore(env: Env, n: number): Promise<Record<string, number | string | boolean>> {
  const data = loadData(n);
  const b = await bucket(env);
  const src = tmp('src');
  const store = await SpanStore.open(src, { durability: 'group', replica: { objectStore: b, prefix: 'restore' } });
  const t0 = performance.now();
  for (let i = 0; i < n; i += 1000)
    await store.appendMany(data.spans.slice(i, i + 1000).map((s) => ({ turn: s.turn, role: s.role, text: s.text })));
  const appendMs = performance.now() - t0;
  const ids = store.stats().nextId;
  const probe = data.spans[Math.floor(n / 2)]!.text.slice(0, 60);
  const verdict = store.verdict();
  await store.close();
  const dst = tmp('dst');
  const r0 = performance.now();
  const r = await restoreReplica(dst, { objectStore: b, prefix: 'restore' });
  const downloadMs = performance.now() - r0;
  const o0 = performance.now();
  const restored = await SpanStore.open(dst, { durability: 'group', replica: { objectStore: b, prefix: 'restore' } });
  const openMs = performance.now() - o0;
  const totalMs = performance.now() - r0;
  // The source's close records its store events after `ids` was read: every id it had, and
  // exactly what the bucket holds, is in the restored log. The index snapshot shipped at the
  // close was loaded, not rebuilt: no index-rebuilt event.
  const checks = { ids: restored.stats().nextId === r.manifest.nextId && r.manifest.nextId >= ids, verdict: JSON.stringify(restored.verdict()) === JSON.stringify(verdict), exact: restored.findExact(probe).length > 0, loaded: r.snapshot.state === 'written' && !restored.events().some((e) => e.event.type === 'index-rebuilt') };
  const same = checks.ids && checks.verdict && checks.exact && checks.loaded;
  if (!same) console.error('restore differs:', JSON.stringify(checks), restored.stats().nextId, ids, JSON.stringify(restored.verdict()), JSON.stringify(verdict));
  await restored.close();
  fs.rmSync(src, { recursive: true, force: true });
  fs.rmSync(dst, { recursive: true, force: true });
  return { spans: n, logMiB: +(r.bytes / 1048576).toFixed(1), snapshot: r.snapshot.state, snapshotMiB: +(r.snapshot.bytes / 1048576).toFixed(1), objects: r.objects, appendMs: Math.round(appendMs), downloadMs: Math.round(downloadMs), openMs: Math.round(openMs), totalMs: Math.round(totalMs), intact: same };
}

async function groupRate(env: Env | null, appends: number, texts: string[]): Promise<number> {
  const dir = tmp('grp');
  const store = await SpanStore.open(dir, {
    durability: 'group',
    ...(env ? { replica: { objectStore: await bucket(env), prefix: 'overhead' } } : {}),
  });
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: 64 }, async () => {
      for (let i = next++; i < appends; i = next++) await store.append({ turn: i + 1, role: 'assistant', text: texts[i % texts.length]! });
    }),
  );
  const rate = appends / ((performance.now() - t0) / 1000);
  await store.close();
  fs.rmSync(dir, { recursive: true, force: true });
  return rate;
}

async function benchReplicated(env: Env, n: number, texts: string[]): Promise<Record<string, number>> {
  const b = await bucket(env);
  // The manifest PUTs each append waits for, timed where the shipper makes them: the append's
  // time less its own commit's round trip is what the library adds (read, encode, scheduling,
  // and a local fdatasync that outlasts the PUT).
  let commits: { start: number; end: number }[] = [];
  const timed: ObjectStore = {
    get: (k) => b.get(k),
    delete: (k) => b.delete(k),
    list: (p) => b.list(p),
    put: async (k, body, c) => {
      if (!k.endsWith('/manifest.json')) return b.put(k, body, c);
      const start = performance.now();
      const r = await b.put(k, body, c);
      commits.push({ start, end: performance.now() });
      return r;
    },
  };
  const dir = tmp('repl');
  const store = await SpanStore.open(dir, { durability: 'replicated', replica: { objectStore: timed, prefix: 'replicated' } });
  const lat: number[] = [];
  const own: number[] = [];
  const put: number[] = [];
  const cput: number[] = [];
  let putsPerAppend = 0;
  // Interleaved, one append then one PutObject of the manifest's current size, plain and
  // conditional (If-Match, as every manifest commit is), so all see the same load on a shared machine.
  let manifestBytes = 0;
  let etag = (await b.put('rtt/conditional', Buffer.alloc(1))).etag;
  for (let i = 0; i < n; i++) {
    commits = [];
    const t0 = performance.now();
    await store.append({ turn: i + 1, role: 'assistant', text: texts[i % texts.length]! });
    const ms = performance.now() - t0;
    lat.push(ms);
    putsPerAppend += commits.length;
    const last = commits.at(-1);
    if (last) own.push(ms - (last.end - last.start));
    if (i % 50 === 0) manifestBytes = (await b.get('replicated/manifest.json'))!.body.length;
    const t1 = performance.now();
    await b.put('rtt/probe', Buffer.alloc(manifestBytes, 'x'));
    put.push(performance.now() - t1);
    const t2 = performance.now();
    etag = (await b.put('rtt/conditional', Buffer.alloc(manifestBytes, 'y'), { ifMatch: etag })).etag;
    cput.push(performance.now() - t2);
  }
  await store.close();
  fs.rmSync(dir, { recursive: true, force: true });
  const r = (a: number[], q: number) => +pct(a, q).toFixed(2);
  return {
    appends: n,
    p50: r(lat, 0.5),
    p99: r(lat, 0.99),
    putP50: r(put, 0.5),
    putP99: r(put, 0.99),
    conditionalPutP50: r(cput, 0.5),
    conditionalPutP99: r(cput, 0.99),
    addedP50: r(own, 0.5),
    addedP90: r(own, 0.9),
    manifestPutsPerAppend: +(putsPerAppend / n).toFixed(2),
    manifestBytes,
  };
}

async function main(): Promise<void> {
  const spans = arg('spans', 100_000);
  const appends = arg('appends', 20_000);
  const rounds = arg('rounds', 3);
  const only = process.argv.includes('--only') ? process.argv[process.argv.indexOf('--only') + 1]!.split(',') : ['restore', 'overhead', 'replicated'];
  const env = rgw();
  try {
    const out: Record<string, unknown> = { endpoint: env.endpoint };
    const texts = loadData(2000).spans.map((s) => s.text);
    if (only.includes('restore')) {
      out.restore = await benchRestore(env, spans);
      console.log('restore', JSON.stringify(out.restore));
    }
    if (only.includes('overhead')) {
      const without: number[] = [];
      const withShip: number[] = [];
      for (let r = 0; r < rounds; r++) {
        without.push(await groupRate(null, appends, texts));
        withShip.push(await groupRate(env, appends, texts));
      }
      const a = pct(without, 0.5);
      const w = pct(withShip, 0.5);
      out.overhead = { appenders: 64, appends, rounds, withoutPerSec: Math.round(a), withPerSec: Math.round(w), ratio: +(w / a).toFixed(3), without: without.map(Math.round), with: withShip.map(Math.round) };
      console.log('overhead', JSON.stringify(out.overhead));
    }
    if (only.includes('replicated')) {
      out.replicated = await benchReplicated(env, arg('replicated', 300), texts);
      console.log('replicated', JSON.stringify(out.replicated));
    }
    const file = path.join(packageRoot, 'bench', 'results', `replica-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, `${JSON.stringify(out, null, 2)}\n`);
    console.log(`wrote ${path.relative(process.cwd(), file)}`);
  } finally {
    env.stop();
  }
}

await main();
