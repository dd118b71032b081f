// A fleet worker (scripts/fleet.mjs): runs the sessions the coordinator hands it, each a
// store replicated to the shared bucket, appending one turn at a time; acknowledges turns to
// the coordinator only once `append` resolved. A session handed over from a killed worker is
// first restored from the bucket into this worker's own directory.
import fs from 'node:fs';
import path from 'node:path';
import { SpanStore, restoreReplica, S3ObjectStore } from '../dist/index.js';

const s3 = JSON.parse(process.env.FLEET_S3);
const objectStore = new S3ObjectStore(s3);
const acks = new Map(); // session -> { pairs: [turn, id, ...], at: when the first of them was acknowledged, store }

function flush() {
  for (const [session, a] of acks) {
    if (a.pairs.length === 0) continue;
    // Where the replica stood when these acks left: the coordinator bounds what a kill may lose with it.
    let longestShipMs = 0;
    try {
      longestShipMs = a.store.replicaStatus()?.ships.longestMs ?? 0;
    } catch {
      // a store that failed: its acks still go out
    }
    process.send({ type: 'acks', session, pairs: a.pairs.splice(0), at: a.at, longestShipMs });
  }
}
setInterval(flush, 20).unref();

export function turnText(session, turn) {
  return `session ${session} turn ${turn}: ran step ${turn} of the plan; build id B-${(session * 100003 + turn * 7919) % 1000003}, exit code ${turn % 7}`;
}

async function run({ session, prefix, dir, restore, fromTurn, turns, durability, intervalMs, inflight }) {
  const replica = { objectStore, prefix, intervalMs, retryBaseMs: 20, retryMaxMs: 1000 };
  if (restore) {
    fs.rmSync(dir, { recursive: true, force: true });
    try {
      await restoreReplica(dir, replica);
    } catch (e) {
      // Killed before its open claimed the first manifest: the session never shipped, so
      // nothing of it can be in the bucket (under `replicated` nothing was acknowledged
      // either); it starts again from an empty store.
      if (!(e?.code === 'REPLICA_MISMATCH' && e.details?.empty === true)) throw e;
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }
  const store = await SpanStore.open(dir, { durability, replica });
  const mine = { pairs: [], at: 0, store };
  acks.set(session, mine);
  // `inflight` appends at a time, called in turn order (ids rise with turns); each turn is
  // acknowledged once its own append resolved. In `replicated` the appends made while a
  // manifest PUT is in flight ride the next one together.
  let next = fromTurn;
  await Promise.all(
    Array.from({ length: Math.max(1, inflight ?? 1) }, async () => {
      while (next <= turns) {
        const t = next++;
        const id = await store.append({ turn: t, role: t % 2 ? 'user' : 'assistant', text: turnText(session, t), key: `t${t}` });
        if (mine.pairs.length === 0) mine.at = Date.now();
        mine.pairs.push(t, id);
      }
    }),
  );
  const verdict = store.verdict().state;
  flush();
  acks.delete(session);
  const ships = store.replicaStatus()?.ships;
  await store.close();
  process.send({ type: 'done', session, verdict, ships, turns: turns - fromTurn + 1 });
}

process.on('message', (msg) => {
  if (msg.type === 'run')
    run(msg).catch((e) => {
      flush();
      process.send({ type: 'error', session: msg.session, code: e.code ?? 'ERROR', message: String(e.message ?? e) });
    });
  if (msg.type === 'exit') {
    flush();
    setTimeout(() => process.exit(0), 50);
  }
});
process.send({ type: 'ready' });
void path;
