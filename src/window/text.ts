/** What the window shows of a turn: its rendered text, a summary's framing, a clipped turn's head and tail, and the default summarizer and token counter. */
import { encode } from 'gpt-tokenizer/encoding/cl100k_base';
import { anchorFact } from '../anchors.js';
import { roleCodeOf } from '../native.js';
import type { TurnInput } from '../store/types.js';
import type { Summarizer, WindowTurn } from './types.js';

/** Meta keys where the window keeps what it needs to render and restore a turn. */
export const WINDOW_META_KEYS = ['toolCalls', 'toolCallId', 'toolError', 'pinned', 'attachToPrevious'] as const;

export const defaultCountTokens = (text: string): number => encode(text, { allowedSpecial: 'all' }).length;

export const summaryContent = (e: { turnStart: number; turnEnd: number }, text: string): string =>
  `[summary of turns ${e.turnStart}–${e.turnEnd}; not authoritative for exact values — use recall] ${text}`;

/** What a turn costs in the window: its text and the tool calls it made. */
export function renderedText(t: { text: string; toolCalls?: { name: string; arguments: string }[] }): string {
  return [t.text, ...(t.toolCalls ?? []).map((c) => `${c.name} ${c.arguments}`)].join('\n');
}

/** A window turn as the store takes it: the window's fields go into meta (restored by `ContextWindow.open`). */
export function toStoreTurn(t: WindowTurn): TurnInput {
  const { attachToPrevious, pin, toolCalls, toolCallId, toolError, ...rest } = t;
  const extra: Record<string, unknown> = {};
  if (toolCalls !== undefined) extra.toolCalls = toolCalls.map((c) => ({ id: c.id, name: c.name, arguments: c.arguments }));
  if (toolCallId !== undefined) extra.toolCallId = toolCallId;
  if (toolError !== undefined) extra.toolError = toolError;
  // Only what differs from the role's default, so a restored window reads the same choice.
  if (pin !== undefined && pin !== (t.role === 'system')) extra.pinned = pin;
  if (attachToPrevious !== undefined && attachToPrevious !== (t.role === 'tool')) extra.attachToPrevious = attachToPrevious;
  if (Object.keys(extra).length === 0) return rest;
  if (rest.meta === undefined) return { ...rest, meta: extra };
  try {
    // A meta that is not a plain object is left for the store to refuse with its typed error.
    if (rest.meta !== null && typeof rest.meta === 'object' && !Array.isArray(rest.meta)) return { ...rest, meta: { ...rest.meta, ...extra } };
  } catch {
    /* a getter that throws: the store's check names it */
  }
  return rest;
}

/** Where a clipped turn's middle was: the span that holds it whole. */
export const clipMarker = (spanId: number, fullTokens: number): string =>
  `\n[… clipped to fit the window: this turn has ${fullTokens} tokens; span ${spanId} in the store holds its full text …]\n`;

const isHigh = (c: number): boolean => c >= 0xd800 && c <= 0xdbff;

/** The longest prefix (or suffix) of `text` of at most `max` tokens, in characters, never splitting a surrogate pair. */
function longest(text: string, max: number, count: (t: string) => number, fromEnd: boolean): number {
  if (max <= 0 || text.length === 0) return 0;
  const part = (n: number): string => (fromEnd ? text.slice(text.length - n) : text.slice(0, n));
  let lo = 0;
  let hi = Math.min(text.length, max * 4);
  while (hi < text.length && count(part(hi)) <= max) {
    lo = hi;
    hi = Math.min(text.length, hi * 2);
  }
  if (count(part(hi)) <= max) return hi;
  while (hi - lo > 1) {
    const mid = (lo + hi) >>> 1;
    if (count(part(mid)) <= max) lo = mid;
    else hi = mid;
  }
  if (fromEnd) return lo > 0 && lo < text.length && isHigh(text.charCodeAt(text.length - lo - 1)) ? lo - 1 : lo;
  return lo > 0 && isHigh(text.charCodeAt(lo - 1)) ? lo - 1 : lo;
}

/** Head and tail of `text` around the marker, within `allowed` tokens when the marker alone fits. */
export function clipText(text: string, spanId: number, fullTokens: number, allowed: number, count: (t: string) => number): { head: number; tail: number; tokens: number } {
  const marker = clipMarker(spanId, fullTokens);
  let room = allowed - count(marker);
  for (let attempt = 0; attempt < 8 && room > 0; attempt++) {
    const head = longest(text, Math.ceil(room / 2), count, false);
    const tail = longest(text.slice(head), Math.floor(room / 2), count, true);
    const tokens = count(text.slice(0, head) + marker + text.slice(text.length - tail));
    if (tokens <= allowed) return { head, tail, tokens };
    room -= tokens - allowed;
  }
  return { head: 0, tail: 0, tokens: count(marker) };
}

/**
 * The default summarizer: deterministic and extractive (no model). It keeps each span's
 * first line and its anchor facts, so identifiers and numbers survive where they fit, and
 * it says it is not to be trusted for exact values — the store is.
 */
export const extractiveSummary: Summarizer = async (spans) => {
  const lines: string[] = [];
  const budget = 1200; // chars
  let used = 0;
  for (const s of spans) {
    const first = s.text.split('\n').find((l) => l.trim().length > 0)?.trim() ?? '';
    const fact = s.anchor ? anchorFact(s.text, roleCodeOf(s.role) ?? 0) : null;
    const parts = [first.slice(0, 120)];
    if (fact && fact !== first) parts.push(fact.slice(0, 160));
    const line = `- t${s.turnStart}${s.turnEnd !== s.turnStart ? `–${s.turnEnd}` : ''} ${s.role}: ${parts.join(' … ')}`;
    if (used + line.length > budget) {
      lines.push(`- … ${spans.length - lines.length} more span(s)`);
      break;
    }
    lines.push(line);
    used += line.length;
  }
  return lines.join('\n');
};
