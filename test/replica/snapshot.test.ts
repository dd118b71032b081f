// Index snapshots: the index files a checkpoint or close saved are shipped beside the log and
// named in the manifest; a restore writes them and the open loads them, catching up only the
// ids past the snapshot. The log stays the source of truth: a damaged or foreign snapshot is
// rebuilt from the log, and the rebuild is recorded.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { SpanStore } from '../../src/index.js';
import { captureSnapshot } from '../../src/replica/snapshot.js';
import { restoreReplica, type ObjectStore } from '../../src/replica/index.js';
import { manifestKey, readManifest, encodeManifest, type Manifest } from '../../src/replica/manifest.js';
import { bucket, rgwMissing, storesClosedAfterEach, tmpDir, turn } from './helpers.js';

const openStore = storesClosedAfterEach();

async function manifestWith(b: ObjectStore, prefix: string, until: (m: Manifest) => boolean): Promise<Manifest> {
  for (let i = 0; i < 500; i++) {
    const got = await readManifest(b, prefix);
    if (got !== null && until(got.manifest)) return got.manifest;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`the manifest under ${prefix} never got there`);
}

/** A closed store of `n` turns under `prefix`, its snapshot shipped at the close. */
async function shipped(b: ObjectStore, prefix: string, n: number, tag = 'src'): Promise<void> {
  const a = await openStore(tmpDir(tag), b, prefix, { durability: 'replicated' });
  for (let i = 1; i <= n; i += 10) await a.appendMany(Array.from({ length: 10 }, (_, j) => turn(i + j)));
  await a.close();
}

const rebuilt = (events: { event: { type: string } }[]) =>
  events.filter((e) => e.event.type === 'index-rebuilt').map((e) => e.event) as unknown as { index: string; reason: string }[];

describe.skipIf(rgwMissing)('index snapshots are shipped and loaded by the restore', () => {
  it('the close ships the saved index files; the restored store loads them (no rebuild) and finds every turn', async () => {
    const b = await bucket();
    await shipped(b, 'snap/close', 60);
    const m = (await readManifest(b, 'snap/close'))!.manifest;
    // Everything but the events the close itself records after the turns (store, retention).
    expect(m.snapshot!.nextId).toBeGreaterThan(60);
    expect(m.snapshot!.nextId).toBeLessThanOrEqual(m.nextId);
    expect(m.snapshot?.files.map((f) => f.name).sort()).toEqual(['lexical.idx', 'vector/index.raw.flat', 'vector/index.summary.flat', 'vector/vectors.bin']);
    const dir = tmpDir('dst');
    const r = await restoreReplica(dir, { objectStore: b, prefix: 'snap/close' });
    expect(r.snapshot).toMatchObject({ state: 'written', nextId: m.snapshot!.nextId, problems: [] });
    const c = await openStore(dir, b, 'snap/close', { durability: 'replicated' });
    expect(rebuilt(c.events())).toEqual([]);
    expect(c.stats().lexical.loadedFrom).toBe('file');
    expect(c.findExact(turn(37).text).length).toBe(1);
    expect((await c.search('B-' + ((41 * 7919) % 100000))).hits[0]?.text).toBe(turn(41).text);
  });

  it('a checkpoint ships a snapshot; ids appended after it are caught up from the log at the open', async () => {
    const b = await bucket();
    const a = await openStore(tmpDir('ck'), b, 'snap/ck', { durability: 'replicated' });
    await a.appendMany(Array.from({ length: 20 }, (_, j) => turn(j + 1)));
    await a.checkpoint();
    const atCheckpoint = await manifestWith(b, 'snap/ck', (m) => m.snapshot != null);
    await a.appendMany(Array.from({ length: 20 }, (_, j) => turn(j + 21))); // replicated: in the bucket, not in the snapshot
    const dir = tmpDir('ck-dst');
    const r = await restoreReplica(dir, { objectStore: b, prefix: 'snap/ck' }); // the writer "dies" without a close
    expect(r.snapshot.state).toBe('written');
    expect(r.snapshot.nextId).toBe(atCheckpoint.snapshot!.nextId);
    expect(r.snapshot.nextId!).toBeLessThan(r.manifest.nextId);
    const c = await openStore(dir, b, 'snap/ck', { durability: 'replicated' });
    expect(rebuilt(c.events())).toEqual([]);
    expect(c.findExact(turn(35).text).length).toBe(1);
    expect((await c.search('B-' + ((33 * 7919) % 100000))).hits[0]?.text).toBe(turn(33).text);
  });
});

describe.skipIf(rgwMissing)('a snapshot that does not match is ignored: rebuilt from the log, recorded', () => {
  it('a damaged snapshot object is not written; the open rebuilds that index and records why', async () => {
    const b = await bucket();
    await shipped(b, 'snap/bad', 40);
    const m = (await readManifest(b, 'snap/bad'))!.manifest;
    const lex = m.snapshot!.files.find((f) => f.name === 'lexical.idx')!;
    const body = Buffer.from((await b.get(lex.key))!.body);
    body[body.length - 3] ^= 1;
    await b.put(lex.key, body);
    const dir = tmpDir('bad-dst');
    const r = await restoreReplica(dir, { objectStore: b, prefix: 'snap/bad' });
    expect(r.snapshot.state).toBe('partial');
    expect(r.snapshot.problems.join(' ')).toMatch(/lexical\.idx: .*CRC-32 differs/);
    const c = await openStore(dir, b, 'snap/bad', { durability: 'replicated' });
    expect(rebuilt(c.events())).toEqual([expect.objectContaining({ index: 'lexical', reason: expect.stringMatching(/lexical\.idx is missing/) })]);
    expect(c.findExact(turn(17).text).length).toBe(1);
    expect(c.verdict().state).toBe('lossless');
  });

  it("another store's snapshot named by the manifest is refused by the open's identity check: both indexes rebuilt, recorded", async () => {
    const b = await bucket();
    await shipped(b, 'snap/mine', 30, 'mine');
    await shipped(b, 'snap/other', 30, 'other');
    const mine = (await readManifest(b, 'snap/mine'))!.manifest;
    const other = (await readManifest(b, 'snap/other'))!.manifest;
    // The same turns, another store: only the store id tells them apart.
    await b.put(manifestKey('snap/mine'), encodeManifest({ ...mine, snapshot: other.snapshot }));
    const dir = tmpDir('foreign-dst');
    const r = await restoreReplica(dir, { objectStore: b, prefix: 'snap/mine' });
    expect(r.snapshot.state).toBe('written');
    const c = await openStore(dir, b, 'snap/mine', { durability: 'replicated' });
    const why = rebuilt(c.events());
    expect(why.map((e) => e.index).sort()).toEqual(['lexical', 'vector']);
    for (const e of why) expect(e.reason).toMatch(/built for store/);
    expect(c.findExact(turn(29).text).length).toBe(1);
  });
});

describe('a snapshot is the set of files the last save wrote', () => {
  it('vectors.bin is taken up to the records the identity counts, not the ones appended since; the set loads without a rebuild', async () => {
    const src = tmpDir('cap');
    const a = await SpanStore.open(src);
    await a.appendMany(Array.from({ length: 20 }, (_, j) => turn(j + 1)));
    await a.checkpoint();
    await a.appendMany(Array.from({ length: 20 }, (_, j) => turn(j + 21)));
    await a.search('B-1'); // the vector index has caught up past the checkpoint
    const indexDir = path.join(src, 'index');
    const id = JSON.parse(fs.readFileSync(path.join(indexDir, 'identity.json'), 'utf8')) as { vector: { files: { records: number } } };
    const got = captureSnapshot(indexDir)!;
    const vec = got.files.find((f) => f.name === 'vector/vectors.bin')!;
    const onDisk = fs.statSync(path.join(indexDir, 'vector', 'vectors.bin')).size;
    const dims = vec.body.readUInt32LE(12);
    expect(vec.body.length).toBe(32 + id.vector.files.records * (20 + 2 * dims)); // vectors.bin version 2: f16 vectors
    expect(onDisk).toBeGreaterThan(vec.body.length);
    // The captured set beside a copy of the log opens as the saved index, caught up from the log.
    await a.close();
    const dst = tmpDir('cap-dst');
    fs.cpSync(path.join(src, 'log'), path.join(dst, 'log'), { recursive: true });
    fs.rmSync(path.join(dst, 'log', 'LOCK'), { force: true });
    fs.mkdirSync(path.join(dst, 'index', 'vector'), { recursive: true });
    for (const f of got.files) fs.writeFileSync(path.join(dst, 'index', f.name), f.body);
    fs.writeFileSync(path.join(dst, 'index', 'identity.json'), got.identity);
    const c = await SpanStore.open(dst);
    expect(rebuilt(c.events())).toEqual([]);
    expect((await c.search('B-' + ((33 * 7919) % 100000))).hits[0]?.text).toBe(turn(33).text);
    await c.close();
  });
});
