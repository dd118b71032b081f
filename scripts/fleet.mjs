#!/usr/bin/env node
// Fleet campaign: N sessions spread over M worker processes appending concurrently, each a
// store replicated to one bucket of a local Ceph RGW (scripts/rgw/start.sh, unless
// SPANGUARD_S3_ENDPOINT / _ACCESS_KEY / _SECRET_KEY name a running one). Workers are killed
// with SIGKILL at random moments; each session of a killed worker resumes in another worker
// from the bucket alone (restore, then the same keyed turns again from its last acknowledged
// one). At the end every session is restored once more and checked:
//   - every turn the worker acknowledged is there, under the id it was acknowledged with
//     (lost turns: 0 in `replicated`; otherwise counted, and only turns past the bucket's
//     last commit before the kill — within the recovery-point bound — may be missing);
//   - ids continue without reuse: each turn is stored once, ids rise with turns, and no id is
//     acknowledged for two turns (below `replicated`, ids past the last commit may be, with
//     the turns they held: both are counted);
//   - the verdict is not lossless where a turn is missing.
// Usage: npm run fleet -- [--sessions 100] [--turns 10000] [--workers 4] [--kills 20]
//          [--durability replicated|group|sync|none] [--interval-ms 200] [--inflight 16] [--seed 1] [--json]
//          [--results <file>|none]
// The figures, with the machine and the command, go to bench/results/fleet-<time>.json
// (or --results <file>; `none`: not written).
// --inflight: appends each session keeps in flight (called in turn order, each acknowledged
// when its own append resolves): an agent's burst of turns. 1 is one turn at a time.
import { execFileSync, fork } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { SpanStore, restoreReplica, S3ObjectStore } from '../dist/index.js';

function machine() {
  return { date: new Date().toISOString(), node: process.version, cpus: os.cpus().length, cpuModel: os.cpus()[0]?.model, loadavg: os.loadavg().map((x) => +x.toFixed(2)), totalMemGB: +(os.totalmem() / 2 ** 30).toFixed(1) };
}
const machineStart = machine();

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { values: a } = parseArgs({
  options: {
    sessions: { type: 'string', default: '100' },
    turns: { type: 'string', default: '10000' },
    workers: { type: 'string', default: '4' },
    kills: { type: 'string', default: '20' },
    durability: { type: 'string', default: 'replicated' },
    'interval-ms': { type: 'string', default: '200' },
    inflight: { type: 'string', default: '16' },
    seed: { type: 'string', default: '1' },
    json: { type: 'boolean', default: false },
    // Where the figures go, with the machine and the command: a file, or `none`.
    results: { type: 'string' },
  },
});
const N = Number(a.sessions);
const T = Number(a.turns);
const M = Number(a.workers);
const K = Number(a.kills);
const durability = a.durability;
let seed = Number(a.seed);
const rand = () => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff);
const log = (...x) => !a.json && console.error(...x);

function rgw() {
  const e = process.env;
  if (e.SPANGUARD_S3_ENDPOINT && e.SPANGUARD_S3_ACCESS_KEY && e.SPANGUARD_S3_SECRET_KEY)
    return { endpoint: e.SPANGUARD_S3_ENDPOINT, accessKeyId: e.SPANGUARD_S3_ACCESS_KEY, secretAccessKey: e.SPANGUARD_S3_SECRET_KEY, stop() {} };
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'spanguard-fleet-rgw-'));
  const out = execFileSync(path.join(ROOT, 'scripts/rgw/start.sh'), [dir], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  const kv = Object.fromEntries(out.split('\n').filter((l) => l.includes('=')).map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));
  return {
    endpoint: kv.SPANGUARD_S3_ENDPOINT,
    accessKeyId: kv.SPANGUARD_S3_ACCESS_KEY,
    secretAccessKey: kv.SPANGUARD_S3_SECRET_KEY,
    stop: () => execFileSync(path.join(ROOT, 'scripts/rgw/stop.sh'), [dir], { stdio: 'ignore' }),
  };
}

const env = rgw();
const s3 = { endpoint: env.endpoint, bucket: `fleet-${randomUUID().slice(0, 12)}`, accessKeyId: env.accessKeyId, secretAccessKey: env.secretAccessKey };
const objectStore = new S3ObjectStore(s3);
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'spanguard-fleet-'));
const t0 = performance.now();

const sessions = Array.from({ length: N }, (_, id) => ({ id, prefix: `fleet/s${id}`, acked: new Map(), ackedAt: new Map(), byId: new Map(), killedAt: [], lastAcked: 0, worker: null, done: false, moves: 0, errors: [], reacked: 0, longestShipMs: 0, ships: [] }));
const workers = new Map();
let nextWorker = 0;
let kills = 0;
let ackedTotal = 0;
let finish;
const finished = new Promise((r) => (finish = r));

function spawnWorker() {
  const wid = nextWorker++;
  const dir = path.join(work, `w${wid}`);
  fs.mkdirSync(dir, { recursive: true });
  const proc = fork(path.join(ROOT, 'scripts/fleet-worker.mjs'), [], { env: { ...process.env, FLEET_S3: JSON.stringify(s3) }, execArgv: ['--no-warnings'] });
  const w = { wid, dir, proc, sessions: new Set(), dead: false, ready: new Promise((r) => proc.once('message', r)) };
  proc.on('message', (m) => onMessage(w, m));
  proc.on('exit', () => {
    w.dead = true;
  });
  workers.set(wid, w);
  return w;
}

function onMessage(w, m) {
  const s = sessions[m.session];
  if (!s || w.dead || s.worker !== w) return;
  if (m.type === 'acks') {
    s.longestShipMs = Math.max(s.longestShipMs, m.longestShipMs ?? 0);
    for (let i = 0; i < m.pairs.length; i += 2) {
      const [turn, id] = [m.pairs[i], m.pairs[i + 1]];
      const had = s.acked.get(turn);
      if (had !== undefined && had !== id) s.errors.push(`turn ${turn} acknowledged as id ${had}, then as id ${id}`);
      if (had === undefined) ackedTotal++;
      // An id acknowledged for another turn before: handed out again after a failover.
      const other = s.byId.get(id);
      if (other !== undefined && other !== turn) s.reacked++;
      s.byId.set(id, turn);
      s.acked.set(turn, id);
      // The worker's clock (Date.now(), as the kill's): when the first ack of this batch was made.
      s.ackedAt.set(turn, m.at);
      s.lastAcked = Math.max(s.lastAcked, turn);
    }
    maybeKill();
  } else if (m.type === 'done') {
    s.done = true;
    s.verdictAtClose = m.verdict;
    if (m.ships) s.ships.push({ ...m.ships, turns: m.turns });
    w.sessions.delete(s.id);
    if (sessions.every((x) => x.done)) finish();
  } else if (m.type === 'error') {
    s.errors.push(`${m.code}: ${m.message}`);
    s.done = true;
    w.sessions.delete(s.id);
    if (sessions.every((x) => x.done)) finish();
  }
}

async function assign(s, w, restore) {
  s.worker = w;
  w.sessions.add(s.id);
  await w.ready;
  w.proc.send({ type: 'run', session: s.id, prefix: s.prefix, dir: path.join(w.dir, `s${s.id}-${s.moves}`), restore, fromTurn: firstUnacked(s), turns: T, durability, intervalMs: Number(a['interval-ms']), inflight: Number(a.inflight) });
}

/** Where a moved session resumes: its first turn not acknowledged (with appends in flight, later ones may be). */
function firstUnacked(s) {
  let t = 1;
  while (s.acked.has(t)) t++;
  return t;
}

function maybeKill() {
  if (kills >= K) return;
  // Kills spread over the run: the k-th once k/(K+1) of all turns are acknowledged.
  if (ackedTotal < ((kills + 1) / (K + 1)) * N * T) return;
  const live = [...workers.values()].filter((w) => !w.dead && w.sessions.size > 0);
  if (live.length === 0) return;
  const victim = live[Math.floor(rand() * live.length)];
  victim.dead = true;
  victim.proc.kill('SIGKILL');
  kills++;
  const moved = [...victim.sessions].map((id) => sessions[id]);
  log(`kill ${kills}/${K}: worker ${victim.wid} (${moved.length} sessions) at ${ackedTotal} acknowledged turns`);
  spawnWorker();
  const others = [...workers.values()].filter((w) => !w.dead);
  moved.forEach((s, i) => {
    s.moves++;
    s.killedAt.push(Date.now());
    void assign(s, others[(i + victim.wid + 1) % others.length], true);
  });
}

for (let i = 0; i < M; i++) spawnWorker();
await objectStore.createBucket();
sessions.forEach((s, i) => void assign(s, [...workers.values()][i % M], false));
await finished;
const runMs = performance.now() - t0;
for (const w of workers.values()) if (!w.dead) w.proc.send({ type: 'exit' });

// Check every session from the bucket alone.
let lost = 0;
let reused = 0;
let falselyLossless = 0;
let failed = 0;
let maxLostAgeMs = 0;
// Below `replicated` a kill may lose the turns acknowledged since the bucket's last commit:
// at most intervalMs plus two ship steps old (a turn acknowledged just after a ship read the
// log waits for that ship, the interval, and the next ship) while the bucket answers.
let lostBeyondBound = 0;
let maxBoundMs = 0;
const c0 = performance.now();
for (const s of sessions) {
  const dir = path.join(work, 'check', `s${s.id}`);
  await restoreReplica(dir, { objectStore, prefix: s.prefix });
  const store = await SpanStore.open(dir, { durability: 'group' });
  const byKey = new Map();
  const next = store.stats().nextId;
  for (let id = 1; id < next; id++) {
    const sp = store.get(id);
    const key = sp?.kind === 'raw' ? sp.meta?.key : undefined;
    if (key === undefined) continue;
    if (byKey.has(key)) {
      reused++;
      s.errors.push(`turn ${key} stored twice (ids ${byKey.get(key)} and ${id})`);
    }
    byKey.set(key, id);
  }
  let missing = 0;
  for (const [turn, id] of s.acked) {
    const got = byKey.get(`t${turn}`);
    if (got === undefined) {
      missing++;
      // How long before the kill that lost it the turn was acknowledged.
      const at = s.ackedAt.get(turn);
      const kill = s.killedAt.find((k) => k >= at);
      const bound = Number(a['interval-ms']) + 2 * s.longestShipMs;
      maxBoundMs = Math.max(maxBoundMs, bound);
      if (kill !== undefined) maxLostAgeMs = Math.max(maxLostAgeMs, kill - at);
      if (kill === undefined || kill - at > bound) lostBeyondBound++;
      continue;
    }
    else if (got !== id) {
      reused++;
      s.errors.push(`turn ${turn}: acknowledged id ${id}, stored as id ${got}`);
    }
  }
  let prev = 0;
  for (let t = 1; t <= T; t++) {
    const id = byKey.get(`t${t}`);
    if (id === undefined) continue;
    if (id <= prev) s.errors.push(`turn ${t} has id ${id}, not above the previous turn's ${prev}`);
    prev = id;
  }
  const verdict = store.verdict().state;
  if (missing > 0 && verdict === 'lossless') falselyLossless++;
  lost += missing;
  if (s.errors.length > 0) failed++;
  await store.close();
  fs.rmSync(dir, { recursive: true, force: true });
}
const checkMs = performance.now() - c0;
const shipTotals = sessions.flatMap((s) => s.ships).reduce((t, x) => ({ commits: t.commits + x.commits, ships: t.ships + x.ships, emptyShips: t.emptyShips + x.emptyShips, turns: t.turns + x.turns }), { commits: 0, ships: 0, emptyShips: 0, turns: 0 });
const result = {
  sessions: N,
  turnsPerSession: T,
  workers: M,
  durability,
  kills,
  moves: sessions.reduce((n, s) => n + s.moves, 0),
  acknowledged: ackedTotal,
  lost,
  maxLostAgeMs: Math.round(maxLostAgeMs),
  lostBeyondBound,
  recoveryBoundMs: maxBoundMs,
  longestShipMs: Math.max(0, ...sessions.map((s) => s.longestShipMs)),
  intervalMs: Number(a['interval-ms']),
  inflight: Number(a.inflight),
  reusedOrMisplacedIds: reused,
  idsAcknowledgedTwice: sessions.reduce((n, s) => n + s.reacked, 0),
  falselyLossless,
  sessionsWithErrors: failed,
  errors: sessions.flatMap((s) => s.errors.map((e) => `session ${s.id}: ${e}`)).slice(0, 20),
  runSeconds: +(runMs / 1000).toFixed(1),
  checkSeconds: +(checkMs / 1000).toFixed(1),
  turnsPerSecond: Math.round(ackedTotal / (runMs / 1000)),
  // Sessions that finished in a worker that was not killed: their shippers' counters.
  manifestCommits: shipTotals.commits,
  turnsPerCommit: shipTotals.commits > 0 ? +(shipTotals.turns / shipTotals.commits).toFixed(1) : null,
  emptyShips: shipTotals.emptyShips,
};
console.log(a.json ? JSON.stringify(result) : JSON.stringify(result, null, 2));
if (a.results !== 'none') {
  const file = a.results ?? path.join(ROOT, 'bench', 'results', `fleet-${machineStart.date.replace(/[:.]/g, '-')}.json`);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const command = `npm run fleet -- ${process.argv.slice(2).filter((x) => x !== '--json').join(' ')}`.trim();
  fs.writeFileSync(file, `${JSON.stringify({ command, machineStart, machineEnd: machine(), ...result }, null, 2)}\n`);
  log(`wrote ${path.relative(process.cwd(), file)}`);
}
await objectStore.destroy();
fs.rmSync(work, { recursive: true, force: true });
env.stop();
const reacked = sessions.reduce((n, s) => n + s.reacked, 0);
// Below `replicated`, turns past the bucket's last commit (and their ids) may be lost at a kill.
const ok = durability !== 'replicated' || (lost === 0 && reacked === 0);
process.exit(ok && reused === 0 && falselyLossless === 0 && failed === 0 && kills >= Math.min(K, 1) ? 0 : 1);
