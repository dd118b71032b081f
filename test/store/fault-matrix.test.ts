// The fault matrix: (file, damage) → outcome, on a store of a few hundred turns with known
// facts, compacted through a budgeted window. Every file under index/ is derived from the
// log: whatever happens to it, the store opens, rebuilds what it cannot trust from the log,
// records an `index-rebuilt` event saying why, and answers as before — a rebuild loses
// nothing, so the verdict stays what it was. Damage to the log itself is a CorruptionError
// naming the file and offset, or a verdict that is not `lossless` with its reason: never a
// `lossless` verdict over lost data.
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { ContextWindow, CorruptionError, SpanStore } from '../../src/index.js';
import { tmpDir } from '../helpers/data.js';

const FACTS = [
  { turn: 40, text: 'The upstream API enforces a rate limit of 40 req/s per token.', phrase: 'rate limit of 40 req/s', query: 'what rate limit does the upstream API enforce?' },
  { turn: 120, text: 'Deploy target is the staging cluster eu-west-3b with 12 replicas.', phrase: 'eu-west-3b with 12 replicas', query: 'which cluster is the deploy target?' },
  { turn: 210, text: 'The database password rotates every 90 days; the vault path is secret/db/prod-7.', phrase: 'secret/db/prod-7', query: 'what is the vault path of the database password?' },
];
const TURNS = 300;
const SEGMENT_BYTES = 16 * 1024;

/** A closed store of TURNS turns (FACTS among them) pushed through a 2,000-token window: several compaction passes, summaries, audits. */
async function buildStore(tag: string): Promise<string> {
  const dir = tmpDir(`fault-${tag}-`);
  const s = await SpanStore.open(dir, { durability: 'none', segmentBytes: SEGMENT_BYTES });
  const w = new ContextWindow(s, { budgetTokens: 2_000 });
  for (let turn = 1; turn <= TURNS; turn++) {
    const fact = FACTS.find((f) => f.turn === turn);
    const text = fact && tag === 'mine' ? fact.text : `${tag} step ${turn}: ran the build in module m${turn % 17}, ${turn * 3} files changed, commit c${(turn * 7919) % 100000}.`;
    await w.push({ turn, role: turn % 2 ? 'user' : 'assistant', text });
  }
  await s.close();
  return dir;
}

let mine: string;
let other: string;
/** What the undamaged store answers and says. */
let baseline: { verdict: string; exact: number[][]; top: number[] };

async function answers(s: SpanStore): Promise<{ exact: number[][]; top: number[] }> {
  const exact = FACTS.map((f) => s.findExact(f.phrase).map((h) => h.turnStart));
  const top: number[] = [];
  for (const f of FACTS) {
    const r = await s.search(f.query);
    top.push(r.miss ? -1 : r.hits[0]!.turnStart);
  }
  return { exact, top };
}

beforeAll(async () => {
  mine = await buildStore('mine');
  other = await buildStore('other');
  const s = await SpanStore.open(copy(mine), { durability: 'none' });
  baseline = { verdict: s.verdict().state, ...(await answers(s)) };
  await s.close();
}, 120_000);

function copy(from: string): string {
  const to = tmpDir('fault-row-');
  fs.cpSync(from, to, { recursive: true });
  return to;
}

const flip = (file: string, at: (size: number) => number) => {
  const b = fs.readFileSync(file);
  const i = at(b.length);
  b[i] = b[i]! ^ 0x10;
  fs.writeFileSync(file, b);
};

/** Each damage, applied to `rel` in the store copy `dir`. */
const DAMAGE: Record<string, (dir: string, rel: string) => void> = {
  'delete': (dir, rel) => fs.rmSync(path.join(dir, rel)),
  'truncate to 0': (dir, rel) => fs.truncateSync(path.join(dir, rel), 0),
  'truncate to half': (dir, rel) => fs.truncateSync(path.join(dir, rel), Math.floor(fs.statSync(path.join(dir, rel)).size / 2)),
  'flip a bit in the header': (dir, rel) => flip(path.join(dir, rel), () => 5),
  'flip a bit in the body': (dir, rel) => flip(path.join(dir, rel), (n) => Math.floor(n * 0.6)),
  'garbage of the same size': (dir, rel) => {
    const n = fs.statSync(path.join(dir, rel)).size;
    fs.writeFileSync(path.join(dir, rel), Buffer.from(Array.from({ length: n }, (_, i) => (i * 131 + 7) & 0xff)));
  },
  "another store's file": (dir, rel) => fs.copyFileSync(path.join(other, rel), path.join(dir, rel)),
};

/** Every derived file, and the index its damage must rebuild (identity.json names both). */
const DERIVED: [string, 'lexical' | 'vector' | 'either'][] = [
  ['index/lexical.idx', 'lexical'],
  ['index/identity.json', 'either'],
  ['index/vector/vectors.bin', 'vector'],
  ['index/vector/index.raw.flat', 'vector'],
  ['index/vector/index.summary.flat', 'vector'],
];

describe('every derived file × every damage: opens, rebuilds from the log, records why, answers as before', () => {
  it('the store under test compacts, holds summaries in the vector index, and is lossless', async () => {
    const s = await SpanStore.open(copy(mine), { durability: 'none', readOnly: true });
    expect(s.stats().passes).toBeGreaterThan(5);
    expect(Number(s.stats().vector.countSummary)).toBeGreaterThan(0);
    expect(baseline.verdict).toBe('lossless');
    expect(baseline.exact).toEqual(FACTS.map((f) => [f.turn]));
    expect(baseline.top).toEqual(FACTS.map((f) => f.turn));
    await s.close();
  });

  for (const [rel, index] of DERIVED) {
    for (const [damage, apply] of Object.entries(DAMAGE)) {
      it(`${rel}: ${damage}`, async () => {
        const dir = copy(mine);
        apply(dir, rel);
        const s = await SpanStore.open(dir, { durability: 'none' });
        const rebuilt = s.events().filter((e) => e.event.type === 'index-rebuilt').map((e) => e.event as { index: string; reason: string });
        expect(rebuilt.length, 'an index-rebuilt event').toBeGreaterThan(0);
        for (const r of rebuilt) expect(r.reason.length).toBeGreaterThan(10);
        if (index !== 'either') expect(rebuilt.map((r) => r.index)).toEqual([index]);
        expect(await answers(s)).toEqual({ exact: baseline.exact, top: baseline.top });
        expect(await s.verifyIndexes()).toEqual([]);
        expect(s.verdict().state).toBe(baseline.verdict);
        await s.close();
        // The rebuilt files were saved with a fresh identity: the next open trusts them.
        const again = await SpanStore.open(dir, { durability: 'none' });
        expect(again.events().filter((e) => e.event.type === 'index-rebuilt')).toHaveLength(rebuilt.length);
        await again.close();
      });
    }
  }
});

/** The log's segments, in id order. */
const segments = (dir: string) => fs.readdirSync(path.join(dir, 'log')).filter((f) => f.startsWith('seg-')).sort();

describe('log damage: a CorruptionError naming the file and offset, or a verdict that is not lossless — never lossless over lost data', () => {
  const LOG_ROWS: [string, (dir: string) => string][] = [
    ['flip a bit in a segment header', (dir) => (flip(path.join(dir, 'log', segments(dir)[1]!), () => 5), segments(dir)[1]!)],
    ['flip a bit in a record in the middle of a segment', (dir) => (flip(path.join(dir, 'log', segments(dir)[1]!), (n) => Math.floor(n / 2)), segments(dir)[1]!)],
    ['delete a middle segment', (dir) => {
      const [, gone, next] = segments(dir);
      fs.rmSync(path.join(dir, 'log', gone!));
      return next!; // the gap is seen at the segment after it
    }],
    // The log's extent (docs/FORMAT.md, "Extent") tells a missing first or last segment.
    ['delete the first segment', (dir) => {
      const [gone, next] = segments(dir);
      fs.rmSync(path.join(dir, 'log', gone!));
      return next!;
    }],
    ['delete the last segment', (dir) => {
      const all = segments(dir);
      fs.rmSync(path.join(dir, 'log', all.at(-1)!));
      return all.at(-2)!;
    }],
    ['cut the last segment at a record boundary below its end', (dir) => {
      const last = segments(dir).at(-1)!;
      const file = path.join(dir, 'log', last);
      const b = fs.readFileSync(file);
      // The second record's offset: the first record's size from its payload length.
      const second = 64 + ((64 + b.readUInt32LE(64 + 4) + 7) & ~7);
      expect(second).toBeLessThan(b.length);
      fs.truncateSync(file, second);
      return last;
    }],
    ['delete EXTENT', (dir) => {
      fs.rmSync(path.join(dir, 'log', 'EXTENT'));
      return segments(dir)[0]!;
    }],
    ['flip a bit in both of EXTENT\'s slots', (dir) => {
      flip(path.join(dir, 'log', 'EXTENT'), () => 20);
      flip(path.join(dir, 'log', 'EXTENT'), () => 4096 + 20);
      return 'EXTENT';
    }],
    ["another store's first segment in place of this one's", (dir) => {
      const first = segments(dir)[0]!;
      fs.copyFileSync(path.join(other, 'log', first), path.join(dir, 'log', first));
      return first;
    }],
  ];

  it('the store under test has at least three segments', () => {
    expect(segments(mine).length).toBeGreaterThanOrEqual(3);
  });

  for (const [damage, apply] of LOG_ROWS) {
    it(damage, async () => {
      const dir = copy(mine);
      const file = apply(dir);
      const opened = await SpanStore.open(dir, { durability: 'none' }).then(
        (s) => s,
        (e: unknown) => e,
      );
      if (opened instanceof SpanStore) {
        const v = opened.verdict();
        await opened.close();
        expect(v.state).not.toBe('lossless');
        expect(v.reasons.length).toBeGreaterThan(0);
        return;
      }
      expect(opened).toBeInstanceOf(CorruptionError);
      const e = opened as CorruptionError;
      expect(e.details.file).toBe(path.join(dir, 'log', file));
      expect(e.details.offset).toEqual(expect.any(Number));
      // A failed open took nothing with it: the store opens read-only... and fails the same way.
      await expect(SpanStore.open(dir, { durability: 'none' })).rejects.toBeInstanceOf(CorruptionError);
    });
  }
});
