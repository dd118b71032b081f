/** `spanguard search` and `spanguard exact`: hybrid search and verbatim phrase lookup in a store. */
import type { Hit, SearchOptions, SearchResult } from '../store.js';
import type { Support } from '../support.js';
import { verdictMeaning } from '../report.js';
import { bold, c, clip, EXIT, indent, intOpt, needDir, parse, print, UsageError, withReadOnly } from './common.js';
import { HELP, OPTIONS } from './help.js';

export async function cmdSearch(argv: string[]): Promise<number> {
  const { values: v, positionals: pos } = parse(argv, OPTIONS.search!, 2);
  if (v.help) return (console.log(HELP.search), EXIT.ok);
  const dir = needDir(pos, 'search');
  const query = pos[1];
  if (query === undefined) throw new UsageError(`missing the query\n${HELP.search}`);
  const kinds = ((v.kinds as string | undefined) ?? 'raw').split(',') as ('raw' | 'summary')[];
  if (kinds.some((k) => k !== 'raw' && k !== 'summary')) throw new UsageError(`--kinds takes raw, summary or raw,summary, got ${JSON.stringify(v.kinds)}`);
  const options: SearchOptions = { k: intOpt(v.k, 'k', 10), kinds };
  if (v.turns !== undefined) {
    const m = /^(\d+)-(\d+)$/.exec(v.turns as string);
    if (!m) throw new UsageError('--turns must look like 100-200');
    options.turns = [Number(m[1]), Number(m[2])];
  }
  const speakers = (v.speaker as string[] | undefined) ?? [];
  if (speakers.some((x) => x.trim().length === 0)) throw new UsageError('--speaker needs a name');
  if (speakers.length > 0) options.speaker = speakers.length === 1 ? speakers[0]! : speakers;
  if (v.since !== undefined || v.until !== undefined) {
    const from = v.since === undefined ? Number.NEGATIVE_INFINITY : isoTime(v.since as string, 'since', 'start');
    const to = v.until === undefined ? Number.POSITIVE_INFINITY : isoTime(v.until as string, 'until', 'end');
    if (from > to) throw new UsageError('--since is after --until');
    options.time = [from, to];
  }
  return withReadOnly(dir, async (store) => {
    const r = await store.search(query, options);
    const filters = [
      ...(options.turns ? [`turns ${options.turns[0]}–${options.turns[1]}`] : []),
      ...(speakers.length > 0 ? [`said by ${speakers.join(' or ')}`] : []),
      ...(v.since !== undefined ? [`since ${v.since as string}`] : []),
      ...(v.until !== undefined ? [`until ${v.until as string}`] : []),
    ];
    print(v.json === true, r, () => formatSearch(r, filters));
    return EXIT.ok;
  });
}

/**
 * An ISO 8601 date or date-time as ms since the epoch. A date alone is a whole UTC day: its
 * start for --since, its last millisecond for --until. A date-time without a zone is local
 * time (as JavaScript reads it).
 */
function isoTime(s: string, name: string, edge: 'start' | 'end'): number {
  const dateOnly = /^\d{4}-\d{2}-\d{2}$/.test(s);
  const ms = /^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$/.test(s) ? Date.parse(s) : Number.NaN;
  if (Number.isNaN(ms)) throw new UsageError(`--${name} must be an ISO 8601 date or date-time (2024-05-01, 2024-05-01T12:00:00Z), got ${JSON.stringify(s.slice(0, 40))}`);
  return dateOnly && edge === 'end' ? ms + 86_400_000 - 1 : ms;
}

/** `filters`: the --turns/--speaker/--since/--until in effect, named on a miss (it is a miss among those spans only). */
function formatSearch(r: SearchResult, filters: string[] = []): string {
  const out: string[] = [];
  if (r.verdict !== 'lossless') out.push(c(31, `verdict ${r.verdict}: ${verdictMeaning(r.verdict)}`));
  if (r.miss)
    out.push(
      `not in transcript${r.missReason ? ` (${r.missReason}${r.missDetail ? `: ${r.missDetail}` : ''})` : ''}` +
        (filters.length > 0 ? ` — among spans ${filters.join(', ')} only` : ''),
    );
  for (const h of r.hits) out.push(formatHit(h));
  if (!r.miss && r.hits.length === 0) out.push('no hits');
  if (r.verdict === 'lossless') out.push(c(2, `verdict lossless: ${verdictMeaning('lossless')}`));
  return out.join('\n');
}

function formatHit(h: Hit): string {
  const who = h.speaker ?? h.role;
  const when = h.timestamp !== undefined && Number.isFinite(h.timestamp) ? new Date(h.timestamp).toISOString() : undefined;
  const head = [
    `${bold(`span ${h.spanId}`)} ${h.kind} turns ${h.turnStart}–${h.turnEnd}`,
    ...(who ? [who] : []),
    ...(when ? [when] : []),
    `via ${h.via}`,
    `score ${h.score.toFixed(4)}`,
    ...(h.superseded ? ['superseded'] : []),
  ].join(' · ');
  const support = h.support ? `\n  ${supportSummary(h.support)}` : '';
  return `${head}${support}\n${indent(clip(h.text))}`;
}

/** One line: `terms 4/6 · values ✓ 40 req/s · names ✓ BookMinder · said by user`. */
export function supportSummary(s: Support): string {
  const parts: string[] = [`terms ${s.terms.matched.length}/${s.terms.matched.length + s.terms.missing.length}`];
  const held = (matched: string[], missing: string[]) =>
    [...(matched.length > 0 ? [`✓ ${matched.join(', ')}`] : []), ...(missing.length > 0 ? [`✗ ${missing.join(', ')}`] : [])].join(' ');
  if (s.values.matched.length + s.values.missing.length > 0 || s.values.contradicted)
    parts.push(`values ${held(s.values.matched, s.values.missing)}${s.values.contradicted ? `${s.values.matched.length + s.values.missing.length > 0 ? ' ' : ''}contradicted` : ''}`);
  if (s.names.matched.length + s.names.missing.length > 0) parts.push(`names ${held(s.names.matched, s.names.missing)}`);
  if (s.speaker) parts.push(`said by ${s.speaker.said}${s.speaker.match ? '' : ` ✗ asked ${s.speaker.asked}`}`);
  if (s.time) parts.push(`time ${s.time.match ? '✓' : '✗'} ${s.time.asked}`);
  if (s.values.matched.length + s.values.missing.length > 0) parts.push(s.claim ? 'holds the claim' : 'not the whole claim');
  return parts.join(' · ');
}

export async function cmdExact(argv: string[]): Promise<number> {
  const { values: v, positionals: pos } = parse(argv, OPTIONS.exact!, 2);
  if (v.help) return (console.log(HELP.exact), EXIT.ok);
  const dir = needDir(pos, 'exact');
  const phrase = pos[1];
  if (!phrase) throw new UsageError(`missing the phrase\n${HELP.exact}`);
  return withReadOnly(dir, async (store) => {
    const hits = store.findExact(phrase, { limit: intOpt(v.limit, 'limit', 1000) });
    print(v.json === true, { hits, miss: hits.length === 0, verdict: store.verdict().state }, () =>
      hits.length === 0 ? 'not in transcript' : hits.map((h) => `${bold(`span ${h.spanId}`)} turns ${h.turnStart}–${h.turnEnd}\n${indent(clip(h.text))}`).join('\n'),
    );
    return EXIT.ok;
  });
}

