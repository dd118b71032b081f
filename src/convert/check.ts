/** Validation of a turn's tool-call structure and of the turns a renderer is given. */
import { ErrorCode, SpanguardError } from '../errors.js';
import type { RenderTurn, ToolCall, TurnStructure } from './types.js';

export const bad = (why: string): never => {
  throw new SpanguardError(ErrorCode.INVALID_ARGUMENT, why);
};

export const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/**
 * Checks a turn's tool-call structure (`where` names the turn in the message). Tool calls
 * belong to assistant turns, a call id and an error flag to tool turns.
 */
export function checkStructure(t: Record<string, unknown>, where: string): void {
  if (t.toolCalls !== undefined) {
    if (t.role !== 'assistant') bad(`${where}: toolCalls belong to an assistant turn, not role ${String(t.role)}`);
    if (!Array.isArray(t.toolCalls)) bad(`${where}: toolCalls must be an array`);
    const seen = new Set<string>();
    (t.toolCalls as unknown[]).forEach((c, i) => {
      if (!isObject(c)) bad(`${where}: toolCalls[${i}] is not an object`);
      const call = c as Record<string, unknown>;
      for (const k of Object.keys(call)) if (k !== 'id' && k !== 'name' && k !== 'arguments') bad(`${where}: toolCalls[${i}] has an unknown key ${JSON.stringify(k)}`);
      if (typeof call.id !== 'string' || call.id.length === 0 || call.id.length > 256) bad(`${where}: toolCalls[${i}].id must be a non-empty string of at most 256 characters`);
      if (typeof call.name !== 'string' || call.name.length === 0 || call.name.length > 256) bad(`${where}: toolCalls[${i}].name must be a non-empty string of at most 256 characters`);
      if (typeof call.arguments !== 'string') bad(`${where}: toolCalls[${i}].arguments must be a string (JSON text)`);
      if (seen.has(call.id as string)) bad(`${where}: toolCalls[${i}].id ${JSON.stringify(call.id)} appears twice`);
      seen.add(call.id as string);
    });
  }
  if (t.toolCallId !== undefined) {
    if (t.role !== 'tool') bad(`${where}: toolCallId belongs to a tool turn, not role ${String(t.role)}`);
    if (typeof t.toolCallId !== 'string' || t.toolCallId.length === 0 || t.toolCallId.length > 256)
      bad(`${where}: toolCallId must be a non-empty string of at most 256 characters`);
  }
  if (t.toolError !== undefined) {
    if (typeof t.toolError !== 'boolean') bad(`${where}: toolError must be a boolean`);
    if (t.toolCallId === undefined) bad(`${where}: toolError needs a toolCallId`);
  }
}

export function checkRenderTurns(turns: unknown): readonly RenderTurn[] {
  if (!Array.isArray(turns)) bad('expected an array of turns');
  (turns as unknown[]).forEach((t, i) => {
    if (!isObject(t)) bad(`turn at index ${i} is not an object`);
    const r = t as Record<string, unknown>;
    if (typeof r.role !== 'string' || r.role.length === 0) bad(`turn at index ${i}: role must be a non-empty string`);
    if (typeof r.text !== 'string') bad(`turn at index ${i}: text must be a string`);
    if (r.speaker !== undefined && typeof r.speaker !== 'string') bad(`turn at index ${i}: speaker must be a string`);
    checkStructure(r, `turn at index ${i}`);
  });
  return turns as readonly RenderTurn[];
}

/** Reads the structure back from a span's meta (what the window stored); anything malformed is left out. */
export function structureOf(meta: Record<string, unknown> | null, role: string): TurnStructure {
  if (!meta) return {};
  const out: TurnStructure = {};
  try {
    if (meta.toolCalls !== undefined) checkStructure({ role, toolCalls: meta.toolCalls }, 'meta');
    if (Array.isArray(meta.toolCalls)) out.toolCalls = meta.toolCalls as ToolCall[];
  } catch {
    /* not the window's: rendered as text only */
  }
  if (role === 'tool' && typeof meta.toolCallId === 'string' && meta.toolCallId.length > 0) {
    out.toolCallId = meta.toolCallId;
    if (meta.toolError === true) out.toolError = true;
  }
  return out;
}

