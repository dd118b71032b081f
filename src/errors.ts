/**
 * Every error spanguard throws is a {@link SpanguardError} with a stable `code`. Native
 * failures are built through {@link makeError}, which the addon receives at load time, so
 * errors thrown inside C++ arrive as the same classes.
 */

/** Stable error codes. Never renamed; new ones may be added. */
export const ErrorCode = {
  INVALID_ARGUMENT: 'INVALID_ARGUMENT',
  INVALID_OPTIONS: 'INVALID_OPTIONS',
  INVALID_UTF8: 'INVALID_UTF8',
  TEXT_TOO_LARGE: 'TEXT_TOO_LARGE',
  INVALID_TURN: 'INVALID_TURN',
  TURN_ORDER: 'TURN_ORDER',
  UNKNOWN_KIND: 'UNKNOWN_KIND',
  UNKNOWN_SPAN: 'UNKNOWN_SPAN',
  LOCKED: 'LOCKED',
  READ_ONLY: 'READ_ONLY',
  CLOSED: 'CLOSED',
  IO_ERROR: 'IO_ERROR',
  FSYNC_FAILED: 'FSYNC_FAILED',
  CORRUPT: 'CORRUPT',
  DIMENSION_MISMATCH: 'DIMENSION_MISMATCH',
  NON_FINITE_VECTOR: 'NON_FINITE_VECTOR',
  EMBEDDER_FAILED: 'EMBEDDER_FAILED',
  RETENTION_TOO_SHORT: 'RETENTION_TOO_SHORT',
  LOSSLESS_BOUNDARY: 'LOSSLESS_BOUNDARY',
  COMPACTION_REFUSED: 'COMPACTION_REFUSED',
  SUMMARY_RANGE: 'SUMMARY_RANGE',
  UNGROUNDED_SUMMARY: 'UNGROUNDED_SUMMARY',
  MISSING_PEER_DEPENDENCY: 'MISSING_PEER_DEPENDENCY',
  SUMMARIZER_FAILED: 'SUMMARIZER_FAILED',
  /** Another writer claimed the replicated store (a newer owner epoch): this one is read-only. */
  REPLICA_FENCED: 'REPLICA_FENCED',
  /** The object store did not take the records in time (they are stored locally and shipped later). */
  REPLICA_UNAVAILABLE: 'REPLICA_UNAVAILABLE',
  /** The bucket and the local log describe different histories (another log, or ids this log lacks). */
  REPLICA_MISMATCH: 'REPLICA_MISMATCH',
} as const;
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

/** Base class: `code` is stable, `details` carries what the error is about (ids, file, offset). */
export class SpanguardError extends Error {
  readonly code: ErrorCode;
  readonly details: Record<string, unknown>;
  constructor(code: ErrorCode, message: string, details: Record<string, unknown> = {}) {
    super(message);
    this.name = 'SpanguardError';
    this.code = code;
    this.details = details;
  }
}

/** Another writer holds the store's LOCK file (this process or another). */
export class LockedError extends SpanguardError {
  constructor(message: string, details: Record<string, unknown> = {}) {
    super(ErrorCode.LOCKED, message, details);
    this.name = 'LockedError';
  }
}

/** On-disk bytes failed a check that is not a torn tail: names the file and byte offset. */
export class CorruptionError extends SpanguardError {
  constructor(message: string, details: Record<string, unknown> = {}) {
    super(ErrorCode.CORRUPT, message, details);
    this.name = 'CorruptionError';
  }
}

/**
 * A compaction pass crossed the lossless-retrieval boundary: it tried to rewrite, replace or
 * re-key an indexed raw span, or its eviction set is not a subset of the retention set.
 * `spanIds` names the offending ids.
 */
export class LosslessRetrievalBoundaryError extends SpanguardError {
  readonly spanIds: number[];
  constructor(message: string, spanIds: number[], details: Record<string, unknown> = {}) {
    super(ErrorCode.LOSSLESS_BOUNDARY, message, { ...details, spanIds });
    this.name = 'LosslessRetrievalBoundaryError';
    this.spanIds = spanIds;
  }
}

/** A pass would evict anchors that the pre-compaction index cannot verifiably return. */
export class CompactionRefusedError extends SpanguardError {
  readonly spanIds: number[];
  constructor(message: string, spanIds: number[], details: Record<string, unknown> = {}) {
    super(ErrorCode.COMPACTION_REFUSED, message, { ...details, spanIds });
    this.name = 'CompactionRefusedError';
    this.spanIds = spanIds;
  }
}

/** Factory handed to the addon: maps a native code to its class. */
export function makeError(code: string, message: string): Error {
  const known = (Object.values(ErrorCode) as string[]).includes(code) ? (code as ErrorCode) : ErrorCode.IO_ERROR;
  const details: Record<string, unknown> = {};
  // Native messages that concern a file end with "[file=<path> offset=<n>]".
  const where = /\[file=(.*) offset=(\d+)\]$/.exec(message);
  if (where) {
    details.file = where[1];
    details.offset = Number(where[2]);
  }
  if (known === ErrorCode.LOCKED) return new LockedError(message, details);
  if (known === ErrorCode.CORRUPT) return new CorruptionError(message, details);
  return new SpanguardError(known, message, details);
}
