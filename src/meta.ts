/**
 * A span's metadata as the log stores it: the JSON text of a plain object. Everything a
 * host may pass as `meta` is checked here before a byte is written, so what JSON cannot
 * hold (a BigInt, a cycle) or what would exhaust the stack (nesting without end) is a typed
 * INVALID_ARGUMENT naming the turn and the path, never a raw TypeError or RangeError.
 */
import { ErrorCode, SpanguardError } from './errors.js';

/** Longest role name accepted (a host role without a code of its own is kept in meta.role). */
export const MAX_ROLE_CHARS = 256;

/** The deepest nesting accepted: the meta object itself is level 1. */
export const MAX_META_DEPTH = 64;

/**
 * Keys the store keeps for itself in a span's metadata: `role` holds a host role that has no
 * code of its own (docs/FORMAT.md), and is what `get` returns as the span's role. A host's
 * own `role` key would override the record's role on read, so it is refused.
 */
export const RESERVED_META_KEYS: readonly string[] = ['role'];

/**
 * Whether a turn is tool output: role `tool`, or metadata `kind` `observation` or
 * `tool_result` (the hosts that file tool output under another role). Transcripts keep such a
 * turn with the call before it; search reads it as what the environment said.
 */
export const isToolOutput = (role: string, kind: unknown): boolean => role === 'tool' || kind === 'observation' || kind === 'tool_result';

const fail = (where: string, why: string): never => {
  throw new SpanguardError(ErrorCode.INVALID_ARGUMENT, `${where}: ${why}`);
};

/** `meta.a[3].b`, each key cut to 32 characters and the whole to 200: a path, not the host's data. */
function pathText(path: readonly (string | number)[]): string {
  let out = 'meta';
  for (const k of path) {
    if (typeof k === 'number') out += `[${k}]`;
    else out += /^[A-Za-z_$][\w$]*$/.test(k) && k.length <= 32 ? `.${k}` : `[${JSON.stringify(k.length > 32 ? `${k.slice(0, 32)}…` : k)}]`;
    if (out.length > 200) return `${out.slice(0, 200)}…`;
  }
  return out;
}

/**
 * Walks a value as JSON.stringify would (own enumerable keys, `toJSON` applied) with the
 * path of keys that led to it. The recursion is bounded by MAX_META_DEPTH, so no input can
 * overflow the stack here.
 */
function check(value: unknown, key: string, depth: number, ancestors: object[], path: (string | number)[], where: string): void {
  let v = value;
  if (v !== null && (typeof v === 'object' || typeof v === 'bigint') && typeof (v as { toJSON?: unknown }).toJSON === 'function')
    v = (v as { toJSON: (k: string) => unknown }).toJSON(key);
  if (typeof v === 'bigint') fail(where, `${pathText(path)} is a BigInt, which JSON cannot hold (pass it as a string or a number)`);
  if (v === null || typeof v !== 'object') return;
  if (ancestors.includes(v)) fail(where, `${pathText(path)} refers back to an object that contains it (meta must not be cyclic)`);
  if (depth > MAX_META_DEPTH) fail(where, `meta nests deeper than ${MAX_META_DEPTH} levels (at ${pathText(path)})`);
  ancestors.push(v);
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      path.push(i);
      check(v[i], String(i), depth + 1, ancestors, path, where);
      path.pop();
    }
  } else {
    for (const k of Object.keys(v)) {
      path.push(k);
      check((v as Record<string, unknown>)[k], k, depth + 1, ancestors, path, where);
      path.pop();
    }
  }
  ancestors.pop();
}

/**
 * Checks a host's `meta` (a plain object, JSON-serializable, no reserved key, at most
 * MAX_META_DEPTH levels) and returns it; `where` names the turn in every message.
 */
export function checkMeta(meta: unknown, where: string): Record<string, unknown> {
  if (meta === null || typeof meta !== 'object' || Array.isArray(meta)) fail(where, 'meta must be a plain object');
  const m = meta as Record<string, unknown>;
  try {
    for (const k of RESERVED_META_KEYS)
      if (Object.hasOwn(m, k)) fail(where, `meta.${k} is reserved: the store keeps the turn's ${k} there (pass it as the turn's ${k})`);
    check(m, '', 1, [], [], where);
  } catch (e) {
    if (e instanceof SpanguardError) throw e;
    // A getter or toJSON of the host's that throws.
    fail(where, `meta could not be read (${e instanceof Error ? e.name : typeof e})`);
  }
  return m;
}

/** JSON text of metadata already checked by checkMeta (plus the store's own keys). */
export function metaText(meta: Record<string, unknown>, where: string): string {
  try {
    return JSON.stringify(meta);
  } catch (e) {
    // Only a host getter or toJSON that answers differently the second time gets here.
    return fail(where, `meta is not JSON-serializable (${e instanceof Error ? e.name : typeof e})`);
  }
}
