// Deterministic record content by span id, shared by child processes (plain .mjs) and the
// tests: a record read back must equal recordFor(id, seed) exactly, which is how the crash
// tests check "byte for byte" without the parent having seen the child's data.

/** @returns {{kind:number,flags:number,role:number,turnStart:number,turnEnd:number,timestamp:number,tokens:number,text:string,meta:string|null}} */
export function recordFor(id, seed) {
  const kind = id % 11 === 0 ? 2 : id % 13 === 0 ? 3 : 1;
  const len = (id * 131 + seed * 17) % 700;
  const text = `span ${id} seed ${seed}: limit ${(id * 7) % 1000} req/s — é✓😀 ` + 'abcdefghij'.repeat(len / 10 | 0).slice(0, len);
  return {
    kind,
    flags: id % 5 === 0 ? 1 : 0,
    role: id % 4,
    // Raw spans carry turn = id, so turn order holds whatever ids a recovery leaves; a
    // summary covers an older range.
    turnStart: kind === 2 ? Math.max(0, id - 10) : id,
    turnEnd: id,
    timestamp: 1_700_000_000_000 + id * 1000,
    tokens: len + 7,
    text,
    meta: id % 3 === 0 ? JSON.stringify({ id, seed, tag: 'm'.repeat(id % 50) }) : null,
  };
}

export function columnsFor(firstId, n, seed) {
  const c = {
    kinds: new Uint8Array(n),
    flags: new Uint8Array(n),
    roles: new Uint8Array(n),
    turnStart: new Float64Array(n),
    turnEnd: new Float64Array(n),
    timestamps: new Float64Array(n),
    tokens: new Uint32Array(n),
    texts: [],
    metas: [],
  };
  for (let i = 0; i < n; i++) {
    const r = recordFor(firstId + i, seed);
    c.kinds[i] = r.kind;
    c.flags[i] = r.flags;
    c.roles[i] = r.role;
    c.turnStart[i] = r.turnStart;
    c.turnEnd[i] = r.turnEnd;
    c.timestamps[i] = r.timestamp;
    c.tokens[i] = r.tokens;
    c.texts.push(r.text);
    c.metas.push(r.meta);
  }
  return c;
}

/** Returns null when the span equals recordFor(id, seed), else a description of the difference. */
export function diffRecord(span, id, seed) {
  if (!span) return `span ${id} missing`;
  const want = { id, ...recordFor(id, seed) };
  const got = JSON.stringify(span);
  const exp = JSON.stringify(want);
  return got === exp ? null : `span ${id} differs:\n got  ${got.slice(0, 300)}\n want ${exp.slice(0, 300)}`;
}
