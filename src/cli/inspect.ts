/** `spanguard verdict`, `audit`, `verify`, `stats` and `report`: what a store says about itself. */
import fs from 'node:fs';
import path from 'node:path';
import { SpanguardError } from '../errors.js';
import type { ReplayReport } from '../replay.js';
import { SpanStore } from '../store.js';
import { RecordKind } from '../native.js';
import { renderHtml } from '../report.js';
import { bold, c, EXIT, needDir, needStore, openReadOnly, parse, print, stateColor, UsageError, withReadOnly } from './common.js';
import { HELP, OPTIONS } from './help.js';
import { checkRemote } from '../replica/cli.js';

export async function cmdVerdict(argv: string[]): Promise<number> {
  const { values: v, positionals: pos } = parse(argv, OPTIONS.verdict!, 1);
  if (v.help) return (console.log(HELP.verdict), EXIT.ok);
  const dir = needDir(pos, 'verdict');
  return withReadOnly(dir, async (store) => {
    const verdict = store.verdict();
    const events = v.explain ? store.events() : [];
    print(v.json === true, v.explain ? { ...verdict, events } : verdict, () => {
      const out = [`verdict: ${stateColor(verdict.state)}  (passes ${verdict.passes}, ${verdict.compactionsSinceAudit} since the last passing audit)`];
      for (const r of verdict.reasons) out.push(`  - ${r}`);
      if (v.explain) {
        out.push('', bold('evidence'));
        for (const e of verdict.evidence) out.push(`  event ${e.eventId} (${e.type}): ${e.summary}`);
        out.push('', bold('event trail'));
        const interesting = events.filter((e) => e.event.type !== 'pass' && e.event.type !== 'pin');
        const passes = events.length - interesting.length;
        out.push(`  ${passes} accepted pass/pin event(s) not listed`);
        for (const e of interesting.slice(-50)) out.push(`  event ${e.id}: ${JSON.stringify(e.event).slice(0, 240)}`);
      }
      return out.join('\n');
    });
    return verdict.state === 'lossless' ? EXIT.ok : EXIT.notLossless;
  });
}

export async function cmdAudit(argv: string[]): Promise<number> {
  const { values: v, positionals: pos } = parse(argv, OPTIONS.audit!, 1);
  if (v.help) return (console.log(HELP.audit), EXIT.ok);
  const dir = needStore(needDir(pos, 'audit'));
  const store = await SpanStore.open(dir, {});
  try {
    const report = await store.audit({ full: v.full === true });
    const verdict = store.verdict();
    print(v.json === true, { audit: report, verdict }, () =>
      [
        `audit: ${report.passed ? c(32, 'passed') : c(31, 'FAILED')} — ${report.checked} fact(s) checked, ${report.sampledEvicted} evicted span(s) sampled`,
        ...report.failures.slice(0, 20).map((f) => `  span ${f.spanId}: ${f.why}: ${JSON.stringify(f.fact.slice(0, 80))}`),
        `verdict: ${stateColor(verdict.state)}`,
      ].join('\n'),
    );
    return report.passed && verdict.state === 'lossless' ? EXIT.ok : EXIT.notLossless;
  } finally {
    await store.close();
  }
}

export async function cmdVerify(argv: string[]): Promise<number> {
  const { values: v, positionals: pos } = parse(argv, OPTIONS.verify!, 1);
  if (v.help) return (console.log(HELP.verify), EXIT.ok);
  const dir = needDir(pos, 'verify');
  let store: SpanStore;
  try {
    store = await openReadOnly(dir);
  } catch (e) {
    // A store opens over any damage to its derived files (they are rebuilt from the log), so
    // a CorruptionError at open is the log's.
    if (e instanceof SpanguardError && e.code === 'CORRUPT') {
      print(v.json === true, { ok: false, corrupt: true, message: e.message, ...e.details }, () => `${c(31, 'CORRUPT')}: ${e.message}`);
      return EXIT.corrupt;
    }
    throw e;
  }
  try {
    const log = store.log.verify();
    // Ids only: counting needs no text copied out of the log.
    const first = store.log.firstId();
    const next = store.log.nextId();
    const counts = {
      raw: store.log.scanIds(first, next - first, 1 << RecordKind.raw, 0).length,
      summary: store.log.scanIds(first, next - first, 1 << RecordKind.summary, 0).length,
    };
    // Every index file was checked as the store opened: lexical.idx (header and body CRC,
    // structure), vectors.bin (header and every record's CRC), each snapshot (header and
    // payload CRC), identity.json (the store, log history and file contents the indexes
    // were built from). What failed, a reader rebuilt in memory and reports here.
    const indexFiles = store.derivedProblems;
    // Id by id: every raw and summary span of the log in both indexes, nothing else.
    const disagreements = await store.verifyIndexes();
    const indexOk = indexFiles.length === 0 && disagreements.length === 0;
    const remote = typeof v.remote === 'string' ? await checkRemote(dir, v.remote) : undefined;
    const ok = log.ok && indexOk && (remote?.ok ?? true);
    print(v.json === true, { ok, log, counts, indexFiles, disagreements, ...(remote ? { remote: { ...remote, localNextId: next } } : {}) }, () =>
      [
        `log: ${log.ok ? c(32, 'ok') : c(31, 'CORRUPT')} — ${log.records} records, ${log.bytes} bytes CRC-checked`,
        ...log.problems.map((p) => `  ${p.outcome} at ${p.file} offset ${p.offset}: ${p.message}`),
        `index files: ${indexFiles.length === 0 ? c(32, 'ok') : c(31, 'DAMAGED')} — lexical.idx, vectors.bin, snapshots and identity.json checked`,
        ...indexFiles.map((p) => `  ${p.index}: ${p.reason}`),
        `indexes: ${disagreements.length === 0 ? c(32, 'agree with the log') : c(31, 'DISAGREE')}`,
        ...disagreements.map((d) => `  ${d}`),
        ...(remote
          ? [
              `remote ${remote.remote}: ${remote.ok ? c(32, 'ok') : c(31, 'DIFFERS')} — ${remote.objects} objects checked, shipped through id ${remote.shippedThroughId}, local next id ${next}`,
              ...remote.problems.map((p) => `  ${p}`),
            ]
          : []),
      ].join('\n'),
    );
    return !log.ok ? EXIT.corrupt : !indexOk ? EXIT.disagree : remote && !remote.ok ? EXIT.remote : EXIT.ok;
  } finally {
    await store.close();
  }
}

export async function cmdStats(argv: string[]): Promise<number> {
  const { values: v, positionals: pos } = parse(argv, OPTIONS.stats!, 1);
  if (v.help) return (console.log(HELP.stats), EXIT.ok);
  return withReadOnly(needDir(pos, 'stats'), async (store) => {
    const s = store.stats();
    print(v.json === true, s, () =>
      [
        `spans       raw ${s.spans.raw}, summary ${s.spans.summary}, event ${s.spans.event}`,
        `next id     ${s.nextId}`,
        `on disk     ${s.bytesOnDisk} bytes (${(s.bytesOnDisk / 1048576).toFixed(1)} MiB)`,
        `passes      ${s.passes}, evicted ${s.evicted}, anchors ${s.anchors}`,
        `SIMD        ${s.simd}`,
        `lexical     ${JSON.stringify(s.lexical)}`,
        `vector      ${JSON.stringify(s.vector)}`,
      ].join('\n'),
    );
    return EXIT.ok;
  });
}

export async function writeReport(dir: string, out: string): Promise<void> {
  return withReadOnly(dir, async (store) => {
    const file = path.join(dir, 'replay-report.json');
    const replayReport = fs.existsSync(file) ? (JSON.parse(fs.readFileSync(file, 'utf8')) as ReplayReport) : null;
    const html = renderHtml({ dir, stats: store.stats(), verdict: store.verdict(), events: store.events(), replay: replayReport });
    fs.writeFileSync(out, html);
  });
}

export async function cmdReport(argv: string[]): Promise<number> {
  const { values: v, positionals: pos } = parse(argv, OPTIONS.report!, 1);
  if (v.help) return (console.log(HELP.report), EXIT.ok);
  const dir = needDir(pos, 'report');
  if (!v.html) throw new UsageError(`--html out.html is required\n${HELP.report}`);
  await writeReport(dir, v.html as string);
  print(v.json === true, { html: v.html }, () => `wrote ${v.html}`);
  return EXIT.ok;
}

