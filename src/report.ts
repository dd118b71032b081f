/**
 * `spanguard report DIR --html out.html`: one self-contained page (inline SVG, no scripts,
 * no network) with the window's tokens over turns, the compaction passes, the hit rate per
 * pass and the verdict timeline with its reasons.
 */
import type { GuardEvent } from './events.js';
import type { ReplayReport } from './replay.js';
import type { StoreStats } from './store.js';
import type { Verdict } from './verdict.js';

/**
 * What each verdict state says, in words the CLI and the HTML report share. `lossless` is a
 * statement about retrieval of evicted turns, never about whether an answer is right.
 */
export const VERDICT_MEANING: Record<string, string> = {
  lossless:
    'every evicted turn is kept verbatim and indexed, no check has failed, and the last passing audit ' +
    '(pinned facts and a sample of evicted turns, each looked up by its own content) is recent enough. ' +
    'It says evicted turns can be found again by their content, not that a hit answers a question or that an answer is right.',
  unknown:
    'too many compactions since the last passing audit, or retention is best-effort: ' +
    'it is not established that every evicted turn can still be found by its content.',
  degraded:
    'a check failed (spanguard verdict DIR --explain): an evicted turn may not be found by its content, ' +
    'so a "not in transcript" may be wrong and hits may leave out the turn that holds the answer.',
};

export const verdictMeaning = (state: string): string => VERDICT_MEANING[state] ?? 'unrecognized verdict state';

const esc = (s: string): string => s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

interface Series {
  points: [number, number][];
  color: string;
  label: string;
}

function lineChart(title: string, series: Series[], opts: { yMin?: number; yMax?: number; xLabel: string; yLabel: string; markers?: number[]; hline?: { y: number; label: string } }): string {
  const W = 860;
  const H = 240;
  const L = 64;
  const B = 36;
  const all = series.flatMap((s) => s.points);
  if (all.length === 0) return `<section><h2>${esc(title)}</h2><p class="muted">no data</p></section>`;
  const xs = all.map((p) => p[0]);
  const ys = all.map((p) => p[1]);
  const x0 = Math.min(...xs);
  const x1 = Math.max(...xs, x0 + 1);
  const y0 = opts.yMin ?? Math.min(0, ...ys);
  const y1 = opts.yMax ?? Math.max(...ys, opts.hline?.y ?? 0, y0 + 1) * 1.05;
  const sx = (x: number) => L + ((x - x0) / (x1 - x0)) * (W - L - 12);
  const sy = (y: number) => H - B - ((y - y0) / (y1 - y0)) * (H - B - 12);
  const ticks = [0, 0.25, 0.5, 0.75, 1].map((f) => y0 + f * (y1 - y0));
  const xticks = [0, 0.25, 0.5, 0.75, 1].map((f) => x0 + f * (x1 - x0));
  const fmt = (v: number) => (Math.abs(v) >= 1000 ? `${Math.round(v / 100) / 10}k` : Math.abs(v) < 10 && v % 1 ? v.toFixed(2) : String(Math.round(v)));
  let svg = `<svg viewBox="0 0 ${W} ${H}" width="${W}" height="${H}" role="img" aria-label="${esc(title)}">`;
  for (const t of ticks) svg += `<line x1="${L}" x2="${W - 12}" y1="${sy(t)}" y2="${sy(t)}" stroke="#e5e7eb"/><text x="${L - 6}" y="${sy(t) + 4}" text-anchor="end" font-size="11" fill="#6b7280">${fmt(t)}</text>`;
  xticks.forEach((t, i) => {
    const anchor = i === 0 ? 'start' : i === xticks.length - 1 ? 'end' : 'middle';
    svg += `<text x="${sx(t)}" y="${H - B + 16}" text-anchor="${anchor}" font-size="11" fill="#6b7280">${fmt(t)}</text>`;
  });
  for (const m of opts.markers ?? []) svg += `<line x1="${sx(m)}" x2="${sx(m)}" y1="12" y2="${H - B}" stroke="#fca5a5" stroke-width="1"/>`;
  if (opts.hline) {
    svg += `<line x1="${L}" x2="${W - 12}" y1="${sy(opts.hline.y)}" y2="${sy(opts.hline.y)}" stroke="#dc2626" stroke-dasharray="6 4"/>`;
    svg += `<text x="${W - 14}" y="${sy(opts.hline.y) - 4}" text-anchor="end" font-size="11" fill="#dc2626">${esc(opts.hline.label)}</text>`;
  }
  for (const s of series) {
    const d = s.points.map((p, i) => `${i ? 'L' : 'M'}${sx(p[0]).toFixed(1)},${sy(p[1]).toFixed(1)}`).join('');
    svg += `<path d="${d}" fill="none" stroke="${s.color}" stroke-width="1.6"/>`;
  }
  svg += `<text x="${(W + L) / 2}" y="${H - 4}" text-anchor="middle" font-size="12" fill="#374151">${esc(opts.xLabel)}</text>`;
  svg += `<text x="14" y="${H / 2}" transform="rotate(-90 14 ${H / 2})" text-anchor="middle" font-size="12" fill="#374151">${esc(opts.yLabel)}</text></svg>`;
  const legend = series.map((s) => `<span><i style="background:${s.color}"></i>${esc(s.label)}</span>`).join(' ');
  return `<section><h2>${esc(title)}</h2>${svg}<div class="legend">${legend}</div></section>`;
}

/**
 * The question rows of the summary table. A replay-report.json written before questions
 * could be "not in transcript" has the older flat counts: shown under their own labels.
 */
function questionRows(q: NonNullable<ReplayReport['questions']>): [string, string][] {
  if (!q.answerable) {
    const old = q as unknown as { total: number; evidenceRecall?: number; verbatim?: number; answeredFromEvicted?: number; honestMisses?: number };
    return [
      ['questions: evidence found', `${old.evidenceRecall ?? '?'} / ${old.total}`],
      ['questions: answered verbatim', `${old.verbatim ?? '?'} / ${old.total}`],
      ['questions: verbatim from an evicted turn', `${old.answeredFromEvicted ?? '?'} / ${old.total}`],
      ['never-stated variants of the answers: "not in transcript"', `${old.honestMisses ?? '?'} / ${old.total}`],
    ];
  }
  const a = q.answerable;
  const n = q.notInTranscript;
  return [
    ['questions asked', `${q.total} (${a.total} answerable, ${n.total} not in transcript)`],
    ['answerable: evidence turn found', `${a.evidenceFound} / ${a.total}`],
    ['answerable: answer verbatim in a hit', `${a.verbatim} / ${a.total} (${a.verbatimFromEvicted} from an evicted turn)`],
    ['answerable: false misses ("not in transcript")', `${a.falseMisses} / ${a.total}`],
    ['not in transcript: honest misses', `${n.honestMisses} / ${n.total}`],
    ['never-stated variants of the answers: "not in transcript"', `${q.neverStatedVariants.missed} / ${q.neverStatedVariants.total}`],
  ];
}

const STATE_COLOR: Record<string, string> = { lossless: '#16a34a', unknown: '#d97706', degraded: '#dc2626' };

export function renderHtml(input: {
  dir: string;
  stats: StoreStats;
  verdict: Verdict;
  events: { id: number; event: GuardEvent }[];
  replay: ReplayReport | null;
}): string {
  const { stats, verdict, events, replay } = input;
  const passes = events.filter((e) => e.event.type === 'pass').map((e) => e.event as Extract<GuardEvent, { type: 'pass' }>);
  const hr: [number, number][] = passes.filter((p) => p.hitRateAfter !== null).map((p) => [p.pass, p.hitRateAfter!]);
  const evicted: [number, number][] = [];
  let cum = 0;
  for (const p of passes) {
    for (const [a, b] of p.evicted) cum += b - a + 1;
    evicted.push([p.pass, cum]);
  }
  const transitions = events.filter((e) => e.event.type === 'verdict').map((e) => ({ id: e.id, ...(e.event as Extract<GuardEvent, { type: 'verdict' }>) }));
  const breaches = events.filter((e) => ['boundary', 'degrade', 'refusal'].includes(e.event.type) || (e.event.type === 'audit' && !e.event.passed));
  const totalPasses = Math.max(1, passes.length);
  // Verdict timeline: one band per state interval over passes.
  let timeline = '<svg viewBox="0 0 860 40" width="860" height="40">';
  let from = 0;
  let state = 'lossless';
  const bands: { a: number; b: number; s: string }[] = [];
  for (const t of transitions) {
    bands.push({ a: from, b: t.pass, s: state });
    from = t.pass;
    state = t.to;
  }
  bands.push({ a: from, b: totalPasses, s: state });
  for (const band of bands) {
    const x = 64 + (band.a / totalPasses) * 784;
    const w = Math.max(2, ((band.b - band.a) / totalPasses) * 784);
    timeline += `<rect x="${x}" y="6" width="${w}" height="22" fill="${STATE_COLOR[band.s] ?? '#6b7280'}"><title>${esc(band.s)} from pass ${band.a} to ${band.b}</title></rect>`;
  }
  timeline += '<text x="4" y="22" font-size="11" fill="#374151">verdict</text></svg>';

  const rows = (pairs: [string, string | number][]) => pairs.map(([k, v]) => `<tr><th>${esc(k)}</th><td>${esc(String(v))}</td></tr>`).join('');
  const q = replay?.questions;
  const summary: [string, string | number][] = [
    ['store', input.dir],
    ['verdict', verdict.state],
    ['spans (raw / summary / event)', `${stats.spans.raw} / ${stats.spans.summary} / ${stats.spans.event}`],
    ['compaction passes', stats.passes],
    ['raw spans evicted', stats.evicted],
    ['anchors', stats.anchors],
    ['bytes on disk', stats.bytesOnDisk],
    ['SIMD', stats.simd],
  ];
  if (replay) {
    summary.push(['turns replayed', replay.turns], ['tokens', replay.tokens], ['refused / spilled', `${replay.refused} / ${replay.spilled}`]);
    summary.push(['audits run / passed', `${replay.audits.run} / ${replay.audits.passed}`]);
    summary.push(['ingest seconds', replay.phases.ingestSeconds.toFixed(1)]);
  }
  if (q) summary.push(...questionRows(q));
  const windowChart = replay
    ? lineChart(
        'Live window tokens over turns',
        [{ points: replay.series.map((s) => [s.turn, s.windowTokens]), color: '#2563eb', label: 'window tokens' }],
        { xLabel: 'turn', yLabel: 'tokens', yMin: 0, hline: { y: replay.budgetTokens, label: `budget ${replay.budgetTokens}` } },
      )
    : '<section><h2>Live window tokens over turns</h2><p class="muted">run <code>spanguard replay</code> into this store to record the window series</p></section>';
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>spanguard report — ${esc(input.dir)}</title>
<style>
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px auto;max-width:900px;color:#111827}
h1{font-size:22px;margin:0 0 4px} h2{font-size:16px;margin:24px 0 6px}
.state{display:inline-block;padding:2px 10px;border-radius:12px;color:#fff;font-weight:600}
table{border-collapse:collapse} th{text-align:left;font-weight:500;color:#374151;padding:2px 16px 2px 0} td{padding:2px 0}
.legend span{margin-right:14px;font-size:12px} .legend i{display:inline-block;width:10px;height:10px;margin-right:4px;border-radius:2px}
.muted{color:#6b7280} li{margin:2px 0} code{background:#f3f4f6;padding:0 3px;border-radius:3px}
</style></head><body>
<h1>spanguard report</h1>
<p>Verdict: <span class="state" style="background:${STATE_COLOR[verdict.state]}">${esc(verdict.state)}</span>
 ${verdict.state === 'lossless' ? esc(verdictMeaning(verdict.state)) : `<b>${esc(verdictMeaning(verdict.state))}</b>`}</p>
<ul>${verdict.reasons.map((r) => `<li>${esc(r)}</li>`).join('')}</ul>
<table>${rows(summary)}</table>
${windowChart}
${lineChart('Hit rate per pass (probe set: stated facts + never-stated perturbations)', [{ points: hr, color: '#7c3aed', label: 'hit rate' }], { xLabel: 'pass', yLabel: 'hit rate', yMin: 0, yMax: 1, markers: breaches.map((b) => (b.event as { pass: number }).pass) })}
${lineChart('Compaction passes: raw spans evicted (cumulative)', [{ points: evicted, color: '#0891b2', label: 'evicted raw spans' }], { xLabel: 'pass', yLabel: 'spans', yMin: 0 })}
<section><h2>Verdict timeline</h2>${timeline}
<ul>${transitions.map((t) => `<li>pass ${t.pass}: ${esc(t.from)} → <b>${esc(t.to)}</b> — ${esc(t.reasons[0] ?? '')} <span class="muted">(event ${t.id})</span></li>`).join('') || '<li class="muted">no verdict changes</li>'}</ul></section>
<section><h2>Breaches, refusals and failed audits</h2><ul>${
    breaches
      .slice(0, 200)
      .map((b) => `<li>event ${b.id}: <code>${esc(b.event.type)}</code> ${esc(JSON.stringify(b.event).slice(0, 300))}</li>`)
      .join('') || '<li class="muted">none</li>'
  }</ul></section>
</body></html>
`;
}
